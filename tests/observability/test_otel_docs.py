"""The OpenTelemetry guide's console recipe runs as written (no network, no key), in a child interpreter (it sets
the global providers, once per process), prints the spans the guide names, and prints a failure when one happens:
the same recipe with its scripted provider breaking the protocol shows the error and an ERROR span."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "opentelemetry.md"


def recipe() -> str:
    [code] = [b for b in re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
              if "ConsoleSpanExporter()" in b]  # fmt: skip
    return code


def run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def span_names(out: str) -> list[str]:
    return re.findall(r'^    "name": "([^"]+)",$', out, flags=re.M)


def test_the_console_recipe_prints_the_runs_spans(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    done = run(recipe(), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("It declares the project and its extras.\ndone: stop\n")
    assert span_names(done.stdout) == [
        "chat deepseek-chat",
        "execute_tool read_file",
        "chat deepseek-chat",
        "invoke_agent file-agent",
    ]
    assert '"gen_ai.provider.name": "deepseek"' in done.stdout
    assert "gen_ai.client.operation.time_to_first_chunk" in done.stdout
    assert '"status_code": "ERROR"' not in done.stdout


def test_the_console_recipe_prints_a_failure(tmp_path: Path) -> None:
    """The second answer without its block-start: the machine refuses the delta, and the recipe says so."""
    opening = '[{"type": "block-start", "index": 0, "blockType": "text"},\n             {"type": "text-delta"'
    code = recipe()
    assert opening in code
    done = run(code.replace(opening, '[{"type": "text-delta"'), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "\nerror: BLOCK_NOT_OPEN: text-delta for block 0, but no block is open (state READY)"
    ), done.stdout[:500]
    assert "\ndone: error\n" in done.stdout
    assert '"status_code": "ERROR"' in done.stdout and '"error.type": "BLOCK_NOT_OPEN"' in done.stdout

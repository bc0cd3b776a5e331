"""The OpenTelemetry guide's console recipe runs as written, against the scripted server on 127.0.0.1 instead of
DeepSeek's API, in a child interpreter (it sets the global providers, once per process), and prints the spans
the guide names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..sse_server import SSE, SSEServer, chat_delta, openai_events

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "opentelemetry.md"


def ending(reason: str) -> list[dict[str, Any]]:
    """The finish reason, then the usage chunk."""
    return [
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]},
        {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 8}},
    ]


def test_the_console_recipe_prints_the_runs_spans(tmp_path: Path) -> None:
    [recipe] = [b for b in re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
                if "ConsoleSpanExporter()" in b]  # fmt: skip
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "pyproject.toml"}'}}  # fmt: skip
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    with SSEServer() as server:
        server.script(
            SSE(openai_events([chat_delta(tool_calls=[call]), *ending("tool_calls")])),
            SSE(openai_events([chat_delta(content="It declares a project named demo."), *ending("stop")])),
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run(
            [sys.executable, "-c", recipe.replace("https://api.deepseek.com", server.url)],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("It declares a project named demo.")
    names = re.findall(r'^    "name": "([^"]+)",$', done.stdout, flags=re.M)
    assert names == ["chat deepseek-chat", "execute_tool read_file", "chat deepseek-chat", "invoke_agent file-agent"]
    assert '"gen_ai.provider.name": "deepseek"' in done.stdout
    assert "gen_ai.client.operation.time_to_first_chunk" in done.stdout
    assert json.loads(server.requests[1].body)["messages"][-1]["role"] == "tool"

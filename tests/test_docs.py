"""The README stays true: its example runs, its diagram is the machine's, its demo works."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import streamfsm as sf

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def fenced(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.DOTALL)


def test_readme_example_runs() -> None:
    example = next(block for block in fenced("python") if "sf.assemble(chunks)" in block)
    exec(compile(example, "README.md", "exec"), {})


def test_readme_diagram_is_the_machines() -> None:
    (diagram,) = fenced("mermaid")
    assert diagram == sf.diagram()


def test_readme_lists_every_code() -> None:
    for code in sf.ErrorCode:
        assert f"`{code.value}`" in README, code


def test_public_names_have_docstrings() -> None:
    """Read from the source: the compiled machine (mypyc) keeps no docstrings at run time."""
    documented: dict[str, bool] = {}
    for path in (ROOT / "streamfsm").rglob("*.py"):  # the provider subpackage too
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                # An @overload stub has no docstring; the implementation after it does.
                documented[node.name] = documented.get(node.name, False) or ast.get_docstring(node) is not None
    for name in sf.__all__:
        obj = getattr(sf, name)
        if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj):
            assert documented.get(name), name


def test_the_compiled_machine_is_not_stale() -> None:
    """A compiled machine module older than its source would shadow it: rebuild with pip install -e ."""
    import importlib

    from .builders import MACHINE_MODULES

    modules = [importlib.import_module(f"streamfsm.{name}") for name in MACHINE_MODULES]
    # The modules compiled together share one library (``<hash>__mypyc``); each module's own file only loads it, and
    # is left as it was when its source changes.
    shared = [m.__file__ for name, m in sys.modules.items() if name.endswith("__mypyc") and m.__file__]
    for name, module in zip(MACHINE_MODULES, modules, strict=True):
        if module.__file__ is None or module.__file__.endswith(".py"):
            continue  # running the source itself (STREAMFSM_PURE=1)
        built = max(Path(f).stat().st_mtime for f in [module.__file__, *shared])
        source = ROOT / "streamfsm" / f"{name}.py"
        assert built >= source.stat().st_mtime, f"rebuild {name}: pip install -e ."


def test_demo_runs_without_network() -> None:
    """The Set up section's demo (``streamfsm demo``; ``python -m streamfsm demo`` is the same command)."""
    assert "&& .venv/bin/streamfsm demo\n" in README
    done = subprocess.run(
        [sys.executable, "-m", "streamfsm", "demo", "--fast"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("streamfsm demo: the seed example through the agent loop")
    assert 'Let me check the project files.\n  → tool call call-123: bash({"command":"ls streamfsm"})' in done.stdout
    assert "  ← result: __init__.py, __main__.py," in done.stdout  # the tool ran
    assert "done: stop; 280 prompt + 70 completion tokens; 1 tool call(s)" in done.stdout
    assert "rejected: BLOCK_NOT_OPEN at chunk 4" in done.stdout and "done: error" in done.stdout
    assert done.stderr == ""

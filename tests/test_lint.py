"""ruff and mypy --strict over the package (skipped, with the reason, when the tools are not installed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (pip install '.[test]')")
    return path


def test_ruff() -> None:
    done = subprocess.run([tool("ruff"), "check", "."], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict() -> None:
    done = subprocess.run(
        [tool("mypy"), "--strict", "streamfsm"], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr

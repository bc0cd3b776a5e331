"""Running the ``streamfsm`` command as the tests do: in this process, in a child process, on a terminal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from streamfsm import _cli


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``streamfsm ARGV`` in this process: exit status, standard output, standard error."""
    status = _cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def command(
    *argv: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m streamfsm._cli ARGV`` in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "streamfsm._cli", *argv],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(**(env or {})),
    )


def console_script() -> str:
    """The ``streamfsm`` script installed beside this interpreter (``pip install -e .`` installs it)."""
    script = shutil.which("streamfsm", path=str(Path(sys.executable).parent))
    assert script is not None, "the console script is not installed (pip install -e .)"
    return script


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child run as a user runs it: buffered output, no colour settings of ours."""
    drop = ("NO_COLOR", "FORCE_COLOR", "PYTHONUNBUFFERED")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def jsonl(chunks: list[Any]) -> bytes:
    return b"".join(orjson.dumps(c) + b"\n" for c in chunks)


def reports(out: str) -> list[dict[str, Any]]:
    """The stream objects of ``check --json`` output without their ``kind`` (its file and summary objects left out), or
    the objects ``assemble`` printed (which have no ``kind``)."""
    objects = [orjson.loads(line) for line in out.splitlines()]
    return [{k: v for k, v in o.items() if k != "kind"} for o in objects if o.get("kind", "stream") == "stream"]


def on_a_terminal(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str]:
    """Run the command with standard output and error on a pseudo-terminal: its status, and what it wrote there."""
    pty = pytest.importorskip("pty")
    main, child = pty.openpty()
    done = subprocess.Popen(
        [sys.executable, "-m", "streamfsm._cli", *argv],
        stdout=child,
        stderr=child,
        stdin=subprocess.DEVNULL,
        env=child_env(COLUMNS="160", TERM="xterm", **(env or {})),
        cwd=cwd,
    )
    os.close(child)
    chunks: list[bytes] = []
    try:
        while data := os.read(main, 65536):
            chunks.append(data)
    except OSError:  # EIO: the child has closed the terminal
        pass
    os.close(main)
    return done.wait(timeout=120), b"".join(chunks).decode()


#: Run first in the child: the modules named in HIDDEN (and their submodules) cannot be imported.
BLOCKER = """
import sys

class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hidden())
"""


def without(hidden: set[str], code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child interpreter in which the top-level modules ``hidden`` are not installed."""
    program = f"HIDDEN = {sorted(hidden)!r}\n{BLOCKER}\n{textwrap.dedent(code)}"
    root = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=root, env=child_env(), timeout=120
    )

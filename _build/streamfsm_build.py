"""The build backend (PEP 517, in-tree: ``backend-path`` in ``pyproject.toml``): setuptools' own, asking for mypyc only
when the build will compile.

Whether the build compiles the machine is decided here, once, by :func:`plan`: not with ``STREAMFSM_PURE=1``, nor
without a working C compiler (a tiny C file that includes ``Python.h`` is compiled first, with the compiler setuptools
would use). ``get_requires_for_build_wheel`` (and ``_editable``) add mypy (which carries mypyc) and the typed
dependencies its type check follows only for a build that compiles: a pure build installs setuptools alone. The
rest is ``setuptools.build_meta``. ``setup.py`` asks :func:`plan` again when it builds, compiles the modules of
:data:`COMPILED` or not, and records what it built and why in ``streamfsm/_built.py`` (which ``streamfsm --version``
reads).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import tempfile
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the hooks this module does not change)

#: The modules mypyc compiles: the only list of them.
COMPILED = [
    "streamfsm/_machine.py",
    "streamfsm/_handlers.py",
    "streamfsm/_stream.py",
    "streamfsm/_table.py",
    "streamfsm/_blocks.py",
    "streamfsm/_messages.py",
    "streamfsm/_construct.py",
    "streamfsm/_arguments.py",
    "streamfsm/_assemble.py",
    "streamfsm/_line_memo.py",
]

#: What a compiling build needs: mypy carries mypyc, pinned to the version the build was tested with; it
#: type-checks the package as it compiles, so it needs the typed dependencies too (those the compiled modules'
#: imports reach: ``_sources.py`` reads ``.zst`` files with zstandard, typed; ``_parser.py`` reads JSON lines with
#: msgspec where it is installed).
MYPYC_REQUIRES = [
    "mypy==2.4.1",
    "pydantic>=2.6",
    "orjson>=3.9",
    "jsonschema>=4.18",
    "types-jsonschema",
    "httpx>=0.27",
    "zstandard>=0.22",
    "msgspec>=0.18",
]

#: What a build that falls back to the pure machine prints (``{reason}``: why).
WARNING = (
    "streamfsm: WARNING: {reason}; building the pure-Python machine (same behaviour, about half the speed). "
    "Install a compiler and the Python headers to compile it, or set STREAMFSM_PURE=1 to choose this build.\n"
)


def compiler_problem() -> str | None:
    """Why no extension can be built here (``None``: the compiler setuptools would use compiles a C file that
    includes ``Python.h``), in one line, whole."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    with tempfile.TemporaryDirectory() as scratch:
        source = os.path.join(scratch, "probe.c")
        with open(source, "w", encoding="ascii") as handle:
            handle.write("#include <Python.h>\nint streamfsm_probe(void) { return 0; }\n")
        try:
            compiler = new_compiler()
            customize_compiler(compiler)
            compiler.compile([source], output_dir=scratch, include_dirs=[sysconfig.get_paths()["include"]])
        except Exception as exc:  # CompileError, no gcc or cl.exe: any reason is the same answer
            return " ".join(str(exc).split()) or type(exc).__name__
    return None


def plan() -> tuple[bool, str]:
    """``(compile, why)``: whether this build compiles the machine, and why (``streamfsm --version`` says it)."""
    if os.environ.get("STREAMFSM_PURE", "") == "1":
        return False, "STREAMFSM_PURE=1 was set at build time"
    problem = compiler_problem()
    if problem is not None:
        return False, f"no working C compiler ({problem})"
    return True, "a C compiler worked"


def warn(reason: str) -> None:
    """Say that the build falls back to the pure machine, and why: on standard error (pip shows it with ``-v``),
    and on the terminal the build was started from, when there is one (pip shows a build's output only with
    ``-v``)."""
    text = WARNING.format(reason=reason)
    sys.stderr.write(text)
    sys.stderr.flush()
    if os.name == "posix" and not sys.stderr.isatty():
        try:
            with open("/dev/tty", "w", encoding="utf-8") as tty:
                tty.write(f"\n{text}")  # after pip's spinner, on a line of its own
        except OSError:  # no controlling terminal (CI, a service): standard error is all there is
            pass


def _with_mypyc(base: list[str]) -> list[str]:
    return [*base, *MYPYC_REQUIRES] if plan()[0] else base


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements, and mypyc's when the build will compile."""
    return _with_mypyc(_setuptools.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements, and mypyc's when the build will compile."""
    return _with_mypyc(_setuptools.get_requires_for_build_editable(config_settings))

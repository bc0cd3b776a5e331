"""What ``streamfsm --version`` says of the installed package: its version, and which machine runs (the modules
compiled with mypyc, or the same modules as plain Python) and why.

The build (``setup.py``) records what it made and why in ``streamfsm/_built.py``; which machine runs is read from
where ``streamfsm._machine`` is found (an extension module, or its ``.py``), without importing it.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec

__all__ = ["machine", "version_line"]


def machine() -> str:
    """Which machine this install runs, and why: ``compiled with mypyc (...)`` or ``pure Python (...)``."""
    spec = find_spec("streamfsm._machine")
    compiled = spec is not None and spec.origin is not None and not spec.origin.endswith(".py")
    try:
        built = import_module("streamfsm._built")
    except ImportError:
        built = None
    if compiled:
        return "compiled with mypyc"
    if built is None:
        return "pure Python (not built by setup.py: run from a source tree)"
    if built.COMPILED:
        return "pure Python (the build compiled it, but the compiled modules are not found beside the sources)"
    return f"pure Python ({built.WHY})"


def version_line() -> str:
    """``streamfsm VERSION; machine: ...``, what ``streamfsm --version`` prints."""
    from . import __version__

    return f"streamfsm {__version__}; machine: {machine()}"

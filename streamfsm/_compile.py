"""What the machine's classes tell mypyc when it compiles them, and nothing when they run as Python.

Not compiled itself (``setup.py`` lists the compiled modules): run as Python, ``mypyc_attr`` is a decorator that
changes nothing, so the package needs no ``mypy_extensions`` at run time; mypyc, which reads the import below,
sees ``mypy_extensions.mypyc_attr`` and compiles the class as it says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["mypyc_attr"]

if TYPE_CHECKING:
    from mypy_extensions import mypyc_attr
else:

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Any:
        """The identity decorator: the class as it is."""
        return lambda cls: cls

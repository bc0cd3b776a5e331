"""What an optional part of streamfsm needs that is not installed, said one way everywhere: the extra that brings
it, its packages (as the installed package's metadata names them) and how to install them.

streamfsm is installed from a clone of its repository or from a wheel built there (``docs/install.md``), so the
message names both ways: the packages themselves into the environment, or streamfsm again with the extra.
"""

from __future__ import annotations

import shlex
from importlib import import_module

__all__ = ["missing", "require"]


def packages(extra: str) -> list[str]:
    """The requirements ``extra`` adds, as the installed metadata gives them (``httpx>=0.27``); none when streamfsm
    runs from a source tree without metadata. Another extra it names (``streamfsm[http]``) is left out."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        declared = requires("streamfsm") or []
    except PackageNotFoundError:
        return []
    marker = f'extra == "{extra}"'
    return [
        r.split(";", 1)[0].strip()
        for r in declared
        if r.split(";", 1)[-1].strip() == marker and not r.startswith("streamfsm")
    ]


def missing(what: str, extra: str) -> str:
    """The message for ``what`` (``OpenAICompatibleAdapter``, ``streamfsm.otel``...) used without ``extra``."""
    needed = " ".join(shlex.quote(p) for p in packages(extra))
    clone = f"pip install '.[{extra}]' in a clone of streamfsm"
    how = f"pip install {needed} (or {clone}; see docs/install.md)" if needed else f"{clone} (see docs/install.md)"
    return f"{what} needs the '{extra}' extra: {how}"


def require(module: str, extra: str, what: str) -> None:
    """Import ``module``, or raise ``ImportError`` saying that ``what`` needs ``extra``, and how to install it."""
    try:
        import_module(module)
    except ImportError as exc:
        raise ImportError(missing(what, extra)) from exc

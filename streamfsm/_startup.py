"""The command's start-up guard: a Ctrl-C before ``streamfsm._cli.main`` runs is exit 130 with one line too.

The command's entry modules call :func:`guard_if_the_program` first thing: ``python -m streamfsm``'s ``__main__``,
and ``_cli`` (which the ``streamfsm`` script and ``python -m streamfsm._cli`` start with). Nothing heavy is
loaded before: the package ``streamfsm`` imports its modules when one of its names is first used, and this
module imports nothing but ``sys`` and the C core of ``signal`` (``signal`` itself builds its enums first, which
takes longer than all the rest of the way here).

While the command's modules import, a Ctrl-C is noted, and answered once they are done (:func:`imported`): an
exception raised in the middle of an extension module's initialisation can crash the interpreter (orjson's does,
when an import of its own fails: ijl/orjson#310). After them, until ``main`` takes over (:func:`release`), it is
answered at once.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing here
if TYPE_CHECKING:
    import signal as _signal
else:
    try:
        import _signal
    except ImportError:  # pragma: no cover - not CPython
        import signal as _signal

__all__ = ["guard", "guard_if_the_program", "imported", "interrupted", "release"]

_importing = True
_noted = False


def interrupted(signum: int, frame: object) -> None:
    """The start-up's SIGINT handler: noted while the command's modules import, else one line and exit 130."""
    global _noted
    if _importing:
        _noted = True
        return
    sys.stderr.write("streamfsm: interrupted\n")
    raise SystemExit(130)


def guard() -> None:
    """Take Ctrl-C for the start-up: only in place of Python's own handler, never of one the program chose (nor
    when SIGINT is ignored), and only in the main thread (signals are not another thread's to take)."""
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        try:  # noqa: SIM105 (contextlib is not imported yet)
            _signal.signal(_signal.SIGINT, interrupted)
        except ValueError:
            pass


def guard_if_the_program() -> None:
    """:func:`guard`, called from a module's body, if that module starts the program: it runs as the main module
    (``python -m streamfsm``, ``python -m streamfsm._cli``), or the main module imports it (the ``streamfsm``
    script imports ``_cli``). Imported by anything else (a test, a library), it leaves the process's Ctrl-C alone.
    """
    frame = sys._getframe(1)
    if frame.f_globals.get("__name__") != "__main__":
        importer = frame.f_back  # the import machinery's frames, then the importer's
        while importer is not None and importer.f_code.co_filename.startswith("<frozen importlib"):
            importer = importer.f_back
        if importer is None or importer.f_globals.get("__name__") != "__main__":
            return
    guard()


def imported() -> None:
    """The command's modules are imported: a Ctrl-C noted meanwhile is answered now, and any later one at once."""
    global _importing
    _importing = False
    if _noted:
        interrupted(_signal.SIGINT, None)


def release() -> None:
    """``main`` takes over: from here on Ctrl-C is Python's ``KeyboardInterrupt`` again, which ``main`` answers."""
    if _signal.getsignal(_signal.SIGINT) is interrupted:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)

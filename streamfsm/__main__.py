"""``python -m streamfsm``: the ``streamfsm`` command, as ``python -m pip`` is pip (``python -m streamfsm demo``
runs the demo). Ctrl-C is taken first (``_startup``), before the command's modules load."""

# ruff: noqa: E402  (the start-up guard comes before the import it guards)

from . import _startup

_startup.guard_if_the_program()

from ._cli import main

if __name__ == "__main__":
    raise SystemExit(main())

"""Build hook: compile the machine (``streamfsm/_machine.py`` and the modules of ``COMPILED``) to a C extension with
mypyc, or build it as plain Python.

The per-chunk path is plain Python written for mypyc: compiled, it costs about half as much (see
``python -m benchmarks``). Whether to compile is decided by ``plan()`` of the build backend
(``_build/streamfsm_build.py``): ``STREAMFSM_PURE=1`` skips compilation; so does a build with no working C compiler
(or no Python headers), found by compiling a tiny C file, with one warning line. Either way the package runs the
same modules as Python, with the same behaviour, and the wheel is a pure one (``py3-none-any``). What was built, and
why, is written to ``streamfsm/_built.py``: ``streamfsm --version`` says it.
"""

import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_build"))

from streamfsm_build import COMPILED, plan, warn

#: The setup commands that build the package's modules; the others (``egg_info``, ``dist_info``, ``sdist``: what a
#: build frontend asks for before it builds) need no compiled modules, and are spared the probe and mypyc.
BUILDS = frozenset({"build", "build_ext", "install", "develop", "editable_wheel"})

#: Where the build records what it built (a module of the package, not kept in git).
RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "streamfsm", "_built.py")


def record(compiled: bool, why: str) -> None:
    """Write ``streamfsm/_built.py``: the machine this build made (compiled or pure) and why."""
    with open(RECORD, "w", encoding="utf-8") as handle:
        handle.write(
            '"""What the build made of the machine, and why (written by setup.py; ``streamfsm --version``)."""\n'
            f"\nCOMPILED = {compiled!r}\nWHY = {why!r}\n"
        )


def ext_modules() -> list:
    """The compiled modules, or none for a pure build."""
    if not any(arg in BUILDS or arg.startswith("bdist") for arg in sys.argv[1:]):
        return []
    compiled, why = plan()
    if compiled:
        try:
            from mypyc.build import mypycify
        except ImportError:  # a build without the backend's requirements (--no-build-isolation, no mypy)
            compiled, why = False, "mypyc (mypy) was not installed where the build ran"
    if not compiled:
        if os.environ.get("STREAMFSM_PURE", "") != "1":
            warn(why)
        record(False, why)
        return []
    record(True, f"compiled with mypyc ({why})")
    # One group: the modules share one library, named for the package (not for a hash of the sources).
    return mypycify(COMPILED, opt_level="3", group_name="streamfsm")


setup(ext_modules=ext_modules())

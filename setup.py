"""Build hook: compile the machine (``streamfsm/_machine.py``) to a C extension with mypyc.

The per-chunk path is plain Python written for mypyc: compiled, it costs about half as much
(see ``python -m benchmarks``). ``STREAMFSM_PURE=1`` skips compilation; so does a build with no working
C compiler (or no Python headers), found by compiling a tiny C file before any time goes to mypyc, with
one warning line. Either way the package runs the same modules as Python, with the same behaviour, and
the wheel is a pure one (``py3-none-any``).
"""

import os
import sys
import sysconfig
import tempfile

from setuptools import setup

#: The modules mypyc compiles: the only list of them.
COMPILED = [
    "streamfsm/_machine.py",
    "streamfsm/_handlers.py",
    "streamfsm/_stream.py",
    "streamfsm/_table.py",
    "streamfsm/_blocks.py",
    "streamfsm/_messages.py",
    "streamfsm/_construct.py",
]


def compiler_problem() -> str | None:
    """Why no extension can be built here (``None``: the compiler setuptools would use compiles a C file that
    includes ``Python.h``)."""
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
            reason = " ".join(str(exc).split()) or type(exc).__name__
            return reason[:200]
    return None


#: The setup commands that build the package's modules; the others (``egg_info``, ``dist_info``, ``sdist``: what a
#: build frontend asks for before it builds) need no compiled modules, and are spared the probe and mypyc.
BUILDS = frozenset({"build", "build_ext", "install", "develop", "editable_wheel"})


def ext_modules() -> list:
    """The compiled modules, or none for a pure build."""
    if os.environ.get("STREAMFSM_PURE", "") == "1":
        return []
    if not any(arg in BUILDS or arg.startswith("bdist") for arg in sys.argv[1:]):
        return []
    problem = compiler_problem()
    if problem is not None:
        sys.stderr.write(
            f"streamfsm: WARNING: no working C compiler ({problem}); building the pure-Python machine "
            "(same behaviour, about half the speed). Install a compiler and the Python headers to compile it, "
            "or set STREAMFSM_PURE=1 to choose this build.\n"
        )
        return []
    from mypyc.build import mypycify

    # One group: the modules share one library, named for the package (not for a hash of the sources).
    return mypycify(COMPILED, opt_level="3", group_name="streamfsm")


setup(ext_modules=ext_modules())

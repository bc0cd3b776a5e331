"""Build hook: compile the machine (``streamfsm/_machine.py``) to a C extension with mypyc.

The per-chunk path is plain Python written for mypyc: compiled, it costs about half as much
(see ``python -m benchmarks``). ``STREAMFSM_PURE=1`` skips compilation; the package then runs the
same module as Python, with the same behaviour.
"""

import os

from setuptools import setup

ext_modules = []
if os.environ.get("STREAMFSM_PURE", "") != "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(
        [
            "streamfsm/_machine.py",
            "streamfsm/_handlers.py",
            "streamfsm/_stream.py",
            "streamfsm/_table.py",
            "streamfsm/_blocks.py",
            "streamfsm/_messages.py",
            "streamfsm/_construct.py",
        ],
        opt_level="3",
    )

setup(ext_modules=ext_modules)

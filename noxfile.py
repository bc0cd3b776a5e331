"""The test suite against the installed package, on each supported Python: ``nox`` (all), ``nox -s tests-3.12``.

Each session installs the package from this checkout into its own virtualenv (not editable: built as a user's
``pip install`` builds it, the machine compiled with mypyc when a C compiler is there, pure Python otherwise;
``STREAMFSM_PURE=1 nox`` forces pure) with the ``test`` extra, and runs pytest with ``--import-mode=append``, so
that ``import streamfsm`` finds the installed package, not the checkout's folder; ``tests/conftest.py`` refuses to
run if it does not. Arguments after ``--`` go to pytest (``nox -s tests-3.13 -- tests/test_package.py -x``).
"""

from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session(python=["3.11", "3.12", "3.13"])
def tests(session: nox.Session) -> None:
    """pytest against the package installed from this checkout."""
    session.install(".[test]")
    session.run(
        "pytest",
        "--import-mode=append",
        *(session.posargs or ["tests"]),
        env={"STREAMFSM_TEST_INSTALLED": "1"},
    )

"""What every test may ask for: the seed stream, the local SSE server, the S3 server, and the service markers."""

from __future__ import annotations

import copy
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .data import SEED_CHUNKS
from .s3_server import s3, s3_endpoint  # noqa: F401  (fixtures offered to every test)
from .sse_server import SSEServer

# A test run started in the background of a non-interactive shell (`pytest &` in a script) ignores SIGINT, and so
# would every command a test starts: the tests of Ctrl-C need it delivered. Python's own handler here means the
# default in each child (a handler does not survive exec; an ignored signal does).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def seed_chunks() -> list[dict[str, Any]]:
    """A fresh deep copy of the seed example stream, safe to mutate."""
    return copy.deepcopy(SEED_CHUNKS)


@pytest.fixture
def server() -> Iterator[SSEServer]:
    """A scripted SSE server on 127.0.0.1 (tests/sse_server.py) for one test; its handler's errors fail the test."""
    with SSEServer() as running:
        yield running


# -- tests that start a service of their own: run unless the option that skips them is given --------------------

#: Marker -> what its tests start. Each marker gets an option ``--no-MARKER`` that skips its tests, and only that:
#: without it they run, and fail if what they need is not installed (never a silent skip).
SERVICE_MARKERS: dict[str, str] = {
    "cloud": "moto's S3-compatible server on 127.0.0.1 (needs the cloud extra and moto)",
    "cluster": "a Dask LocalCluster with process workers (needs the dask extra)",
    "install": "builds the sdist and the pure wheel and installs them in fresh virtualenvs (needs build and twine)",
    "litellm": "LiteLLM's proxy with mock models (installed from the package index into a virtualenv of its own under "
    "~/.cache/streamfsm-tests on first use)",
}
#: Marker -> what its tests do: they run unless ``--no-MARKER`` (or ``--quick``) is given, as the service markers.
SLOW_MARKERS: dict[str, str] = {
    "slow": "takes seconds on its own (a fuzz run, a measure of memory, a type check of the package, a built site)",
}
#: ``--quick``: the contributor's loop, every marker's tests skipped (CI runs them all).
MARKERS = {**SERVICE_MARKERS, **SLOW_MARKERS}


def pytest_addoption(parser: pytest.Parser) -> None:
    for marker, what in SERVICE_MARKERS.items():
        parser.addoption(f"--no-{marker}", action="store_true", help=f"skip the tests marked {marker}: {what}")
    for marker, what in SLOW_MARKERS.items():
        parser.addoption(f"--no-{marker}", action="store_true", help=f"skip the tests marked {marker}: it {what}")
    parser.addoption(
        "--quick",
        action="store_true",
        help="the contributor's loop: skip the tests of every marker (" + ", ".join(f"--no-{m}" for m in MARKERS) + ")",
    )


def pytest_configure(config: pytest.Config) -> None:
    for marker, what in SERVICE_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: starts {what}; skipped only with --no-{marker} or --quick")
    for marker, what in SLOW_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: {what}; skipped only with --no-{marker} or --quick")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--quick"):  # left out of the run (deselected), not listed as skipped one by one
        marked = [any(marker in item.keywords for marker in MARKERS) for item in items]
        config.hook.pytest_deselected(items=[item for item, left in zip(items, marked, strict=True) if left])
        items[:] = [item for item, left in zip(items, marked, strict=True) if not left]
        return
    for marker in MARKERS:
        if config.getoption(f"--no-{marker}"):
            skip = pytest.mark.skip(reason=f"--no-{marker} given")
            for item in items:
                if marker in item.keywords:
                    item.add_marker(skip)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under ``nox`` (``STREAMFSM_TEST_INSTALLED=1``) the tests are of the installed package: never the checkout's."""
    import os

    if os.environ.get("STREAMFSM_TEST_INSTALLED") == "1":
        import streamfsm

        package = Path(streamfsm.__file__).resolve().parent
        checkout = Path(__file__).resolve().parent.parent
        if package.parent == checkout:
            raise pytest.UsageError(f"STREAMFSM_TEST_INSTALLED=1, but streamfsm is imported from {package}")

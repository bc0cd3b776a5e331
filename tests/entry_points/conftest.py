"""Shared fixtures of the entry-point tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from streamfsm import _parser


@pytest.fixture(autouse=True)
def _restore_parser() -> Iterator[None]:
    """A test that switches the parser of JSON lines (``_parser.use``) leaves the install's own behind it."""
    default = _parser.PARSER
    yield
    _parser.use(default)

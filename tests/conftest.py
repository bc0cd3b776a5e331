"""Shared test data: the seed articles' example stream and the recordings in tests/fixtures."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

#: The recordings the tests replay, kept in the repository with their licenses (see fixtures/README.md).
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SESSIONS = FIXTURES / "harness-sessions"
PROVIDER_STREAMS = FIXTURES / "provider-streams"
MORE_PROVIDER_STREAMS = FIXTURES / "more-provider-streams"

#: The example stream of the seed articles (the Chinese article's text; the others differ only in words).
SEED_CHUNKS: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "runoob"},
    {"type": "text-delta", "index": 0, "text": " 教程"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "runoob 教程"}},
    {"type": "block-start", "index": 1, "blockType": "tool-call"},
    {
        "type": "tool-call-delta",
        "index": 1,
        "id": "call-123",
        "name": "bash",
        "argumentsDelta": '{"command":"echo runoob"}',
    },
    {
        "type": "block-end",
        "index": 1,
        "block": {
            "type": "tool-call",
            "id": "call-123",
            "name": "bash",
            "arguments": '{"command":"echo runoob"}',
        },
    },
    {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 50}},
    {"type": "finish", "reason": {"kind": "stop"}},
]


@pytest.fixture
def seed_chunks() -> list[dict[str, Any]]:
    """A fresh deep copy of the seed example stream, safe to mutate."""
    return copy.deepcopy(SEED_CHUNKS)


# -- the cloud tests: a real S3-compatible server (moto's) on 127.0.0.1 ---------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-cloud",
        action="store_true",
        help="skip the tests marked cloud (the cloud extra, and moto's S3 server on 127.0.0.1); without this "
        "option they run, and fail if moto or the extra is missing",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cloud: needs the cloud extra (fsspec, s3fs, zstandard) and, for S3, moto's server, which it starts on "
        "127.0.0.1; skipped only with --no-cloud",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--no-cloud"):
        skip = pytest.mark.skip(reason="--no-cloud was given")
        for item in items:
            if item.get_closest_marker("cloud") is not None:
                item.add_marker(skip)

"""Shared test data: the seed articles' example stream and the recordings in tests/fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

#: The recordings the tests replay, kept in the repository with their licenses (see fixtures/README.md).
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SESSIONS = FIXTURES / "harness-sessions"
PROVIDER_STREAMS = FIXTURES / "provider-streams"
MORE_PROVIDER_STREAMS = FIXTURES / "more-provider-streams"
#: Non-streamed response bodies, one JSON object a file, by wire API (see fixtures/README.md).
BODIES = FIXTURES / "bodies"

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


def recording(path: Path) -> list[dict[str, Any]]:
    """The events of a recording kept as JSON lines, one object a line (blank lines skipped)."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]

"""What the provider tests share: recordings read as a provider sent them, a list given as an async iterable, and
text cut into random pieces."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

from streamfsm._providers.http import read_sse


def openai_recording(path: Path) -> list[dict[str, Any]]:
    """The chat.completion.chunk objects of a recording: one per line, or SSE up to ``[DONE]``."""
    if path.suffix == ".jsonl":
        return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    out = []
    for event in read_sse(path.read_bytes()):
        if event.data == "[DONE]":
            break
        out.append(orjson.loads(event.data))
    return out


def anthropic_recording(path: Path) -> list[dict[str, Any]]:
    """The events of a recorded Messages API stream."""
    return [orjson.loads(event.data) for event in read_sse(path.read_bytes())]


async def async_items(items: Iterable[Any]) -> AsyncIterator[Any]:
    """``items`` as an async iterable: what an async SDK gives a converter."""
    for item in items:
        yield item


def split(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at up to six random places (pieces may be empty)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]

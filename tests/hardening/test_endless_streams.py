"""Memory stays bounded on a hostile stream (issue 7): an endless stream is stopped by its ``Limits``.

Each stream below never ends: endless one-byte tool-argument deltas, endless text deltas, endless
blocks. With a small ``Limits`` the machine refuses it with ``LIMIT_EXCEEDED`` at exactly the chunk
that passes the limit, pulls nothing past that chunk (JSON lines: past that chunk's batch), and its peak
memory (tracemalloc, everything allocated while it runs) stays under a bound proportional to the limit:
twice the bytes a block may hold, or a fixed size a completed block, plus a constant. Fed one chunk at
a time, many at a time (``assemble``) and as JSON lines (``assemble_jsonl``).
"""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

import streamfsm as sf

#: What the machine may hold besides the bound: the error, its message, frames, small dicts.
SLACK = 64 * 1024
#: Parts a block holds before they are joined into one (the machine's _FLUSH).
FLUSH = 4096


def endless_arguments() -> Iterator[dict[str, Any]]:
    """A tool call whose arguments never end: '[' then '1', one byte a delta."""
    yield {"type": "block-start", "index": 0, "blockType": "tool-call"}
    yield {"type": "tool-call-delta", "index": 0, "id": "call-1", "name": "f", "argumentsDelta": "["}
    while True:
        yield {"type": "tool-call-delta", "index": 0, "id": "call-1", "argumentsDelta": "1"}


def endless_text(piece: str) -> Callable[[], Iterator[dict[str, Any]]]:
    def stream() -> Iterator[dict[str, Any]]:
        yield {"type": "block-start", "index": 0, "blockType": "text"}
        while True:
            yield {"type": "text-delta", "index": 0, "text": piece}

    return stream


def endless_text_blocks() -> Iterator[dict[str, Any]]:
    """Empty text blocks, one after another."""
    for i in itertools.count():
        yield {"type": "block-start", "index": i, "blockType": "text"}
        yield {"type": "block-end", "index": i, "block": {"type": "text", "text": ""}}


def endless_tool_calls() -> Iterator[dict[str, Any]]:
    """Small tool calls, each with its own id (the machine remembers every id of a stream)."""
    for i in itertools.count():
        call = {"type": "tool-call", "id": f"call-{i}", "name": "f", "arguments": f'{{"n": {i}}}'}
        yield {"type": "block-start", "index": i, "blockType": "tool-call"}
        yield {
            "type": "tool-call-delta",
            "index": i,
            "id": call["id"],
            "name": "f",
            "argumentsDelta": call["arguments"],
        }
        yield {"type": "block-end", "index": i, "block": call}


@dataclass(frozen=True)
class Hostile:
    stream: Callable[[], Iterator[dict[str, Any]]]
    limits: sf.Limits
    #: The position of the chunk that passes the limit.
    index: int
    #: The most the machine may allocate at its peak (bytes), JSON lines' read-ahead aside.
    bound: int


HOSTILE = {
    # Block bytes: after the delta at position k the block holds k bytes, so k = limit + 1 passes it.
    "endless 1-byte argument deltas, max_block_bytes=50k": Hostile(
        endless_arguments, sf.Limits(max_block_bytes=50_000), 50_001, 2 * 50_000 + SLACK
    ),
    "endless 2-byte 'é' deltas, max_block_bytes=40k": Hostile(
        endless_text("é"), sf.Limits(max_block_bytes=40_000), 20_001, 2 * 40_000 + SLACK
    ),
    # Chunks: the chunk at position max_chunks is one too many; the text so far is 2 bytes a delta.
    "endless 2-byte text deltas, max_chunks=100k": Hostile(
        endless_text("ab"), sf.Limits(max_chunks=100_000), 100_000, 2 * (2 * 100_000) + SLACK
    ),
    # Blocks: the block-start of block max_blocks is refused; each completed block is kept (the output).
    "endless empty text blocks, max_blocks=5k": Hostile(
        endless_text_blocks, sf.Limits(max_blocks=5_000), 2 * 5_000, 512 * 5_000 + SLACK
    ),
    "endless tool calls, max_blocks=2k": Hostile(
        endless_tool_calls, sf.Limits(max_blocks=2_000), 3 * 2_000, 1024 * 2_000 + SLACK
    ),
}
#: The cases also fed as JSON lines (the slowest way under tracemalloc).
AS_LINES = {"endless 1-byte argument deltas, max_block_bytes=50k", "endless tool calls, max_blocks=2k"}


class Counted:
    """The hostile stream, counting what is pulled from it, as chunk dicts or as JSON lines."""

    def __init__(self, hostile: Hostile, *, lines: bool = False) -> None:
        self.source = hostile.stream()
        self.lines = lines
        self.pulled = 0
        self.longest = 0

    def __iter__(self) -> Iterator[Any]:
        for chunk in self.source:
            self.pulled += 1
            if self.lines:
                # bytes(...) of a fresh bytearray: a compact line, as a reader would give (orjson.dumps
                # over-allocates the bytes it returns, which would measure orjson, not the machine).
                line = bytes(bytearray(orjson.dumps(chunk)))
                self.longest = max(self.longest, len(line))
                yield line
            else:
                yield chunk


def feed_each(chunks: Counted, limits: sf.Limits) -> None:
    asm = sf.StreamAssembler(limits=limits)
    for chunk in chunks:
        asm.feed(chunk)


# Bound here, not in the lambdas: the package imports its modules on first use, and an import under
# tracemalloc (asyncio, the machine) would count in whichever case ran first.
assemble, assemble_jsonl = sf.assemble, sf.assemble_jsonl
ENTRY: dict[str, tuple[Callable[[Counted, sf.Limits], Any], bool]] = {
    "feed": (feed_each, False),
    "assemble": (lambda chunks, limits: assemble(chunks, limits=limits), False),
    "assemble_jsonl": (lambda lines, limits: assemble_jsonl(lines, limits=limits), True),
}


CASES = [
    pytest.param(hostile, entry, id=f"{name} | {entry}")
    for name, hostile in HOSTILE.items()
    for entry, (_, lines) in ENTRY.items()
    if not lines or name in AS_LINES
]


@pytest.mark.parametrize(("hostile", "entry"), CASES)
def test_an_endless_stream_is_stopped_at_its_limit_in_bounded_memory(hostile: Hostile, entry: str) -> None:
    run, lines = ENTRY[entry]
    source = Counted(hostile, lines=lines)
    tracemalloc.start()
    try:
        with pytest.raises(sf.LlmError) as info:
            run(source, hostile.limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (info.value.code, info.value.chunk_index) == ("LIMIT_EXCEEDED", hostile.index), info.value.message
    assert source.pulled == hostile.index + 1  # nothing is pulled past the refused chunk (nor its line)
    # From lines, the deltas' strings are orjson's own objects, not the interpreter's one-character
    # singletons: a block holds up to FLUSH of them (64 bytes each, with the list's pointer) before they are
    # joined. Plus the line in hand: its bytes object (33 bytes besides the text, rounded up to 16) and dict.
    bound = hostile.bound + (FLUSH * 64 + source.longest + 33 + 15 + 1024 if lines else 0)
    assert peak <= bound, f"peak {peak:,} bytes > bound {bound:,}"

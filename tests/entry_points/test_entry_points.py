"""The entry points of SPEC §5: each on its own, and every one giving the same answer.

The second part of this module is the public API one name at a time (entry points, snapshots, JSON lines, session
logs, upstream closing). The first: every entry point gives the same answer, limits hold at the exact chunk, and
the hot path takes what it should.

The machine routes each chunk by one lookup to the handler of its type; the delta handler starts with an
expectation of the hot block's next delta, met without its rules (the module docstring of
``streamfsm/_handlers.py``). The entry
points reach it in different ways: ``feed`` chunk by chunk (as ``validate`` and ``aassemble`` do), ``feed_many``
(as ``assemble`` does), ``feed_lines`` (as ``assemble_jsonl`` does: JSON lines, one at a time). This module
replays many streams — valid, broken, hostile, what only HARNESS accepts, their mutations, the recordings —
through every entry point, which must give identical outcomes, positions, messages, states, notes, snapshots
and results (``builders.agree``). It checks that every limit is met at the exact chunk on every entry point,
that a rejected chunk leaves no trace but the failure, and that the expectation (the hot path) does take the deltas
of a typical stream: a machine that ran every chunk through its rules would pass everything else, at their cost.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import itertools
from collections import UserDict
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm._table import accepts

from ..builders import (
    FEEDS,
    HARNESS,
    STRICT,
    agree,
    end_block,
    end_image,
    end_reasoning,
    end_text,
    end_tool,
    finish,
    reasoning_delta,
    source_machine,
    start,
    text_delta,
    tool_delta,
    usage,
)
from ..data import SEED_CHUNKS, SESSIONS

FLUSH = 4096  # the machine's _FLUSH: the units (a character, plus one a delta) a hot block takes between counts
BATCH = 4096  # as many lines as a batch of the earlier feed_lines (the cases keep their sizes)


# -- streams ---------------------------------------------------------------------------------------


def mutations(chunks: list[dict[str, Any]]) -> Iterator[list[Any]]:
    """Single mutations of a stream: drop, duplicate, swap neighbours, cut, and field corruptions."""
    n = len(chunks)
    for i in range(n):
        yield chunks[:i] + chunks[i + 1 :]
        yield chunks[: i + 1] + chunks[i:]
        yield chunks[:i]
        if i + 1 < n:
            yield [*chunks[:i], chunks[i + 1], chunks[i], *chunks[i + 2 :]]
        for key in chunks[i]:
            bads: tuple[Any, ...] = (None, True, -1, 1, 2.0, "", "x", [], {}, 2**53)
            for bad in bads:
                changed = copy.deepcopy(chunks)
                changed[i][key] = bad
                yield changed
            dropped = copy.deepcopy(chunks)
            del dropped[i][key]
            yield dropped
        for key in ("block", "usage", "reason"):
            inner = chunks[i].get(key)
            if isinstance(inner, dict):
                for field in inner:
                    for bad in (None, 1, "", "tool-call", {"kind": "stop"}):
                        changed = copy.deepcopy(chunks)
                        changed[i][key][field] = bad
                        yield changed
        garbage_values: tuple[Any, ...] = (None, [], "text-delta", 7, sf.InvalidLine("{", "cut"))
        for garbage in garbage_values:
            yield [*chunks[:i], garbage, *chunks[i:]]


def harness_variant(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The seed stream with its two blocks interleaved (valid under HARNESS only)."""
    c = copy.deepcopy(chunks)
    return [c[0], c[1], c[4], c[2], c[5], c[3], c[6], c[7], c[8]]


#: Streams with what SPEC §4 lets HARNESS accept, each valid under HARNESS (image blocks under both).
HARNESS_STREAMS: dict[str, list[dict[str, Any]]] = {
    "an image block between two text blocks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "see"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "see"}},
        {"type": "block-start", "index": 1, "blockType": "image"},
        {"type": "block-end", "index": 1, "block": {"type": "image", "attachment": {"id": "a", "w": 64}}},
        {"type": "block-start", "index": 2, "blockType": "text"},
        {"type": "text-delta", "index": 2, "text": "it"},
        {"type": "block-end", "index": 2, "block": {"type": "text", "text": "it"}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ],
    "a block of an unknown type beside a text block, a finish of an unknown kind": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "block-start", "index": 1, "blockType": "video"},
        {"type": "text-delta", "index": 0, "text": "a"},
        {"type": "block-end", "index": 1, "block": {"type": "video", "frames": [1, 2]}},
        {"type": "text-delta", "index": 0, "text": "b"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "ab"}},
        {"type": "finish", "reason": {"kind": "paused", "until": 3}},
    ],
    "empty ids and names, several deltas": [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "", "name": "", "argumentsDelta": '{"a"'},
        {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": ": 1"},
        {"type": "tool-call-delta", "index": 0, "id": "", "name": "", "argumentsDelta": "}"},
        {"type": "block-end", "index": 0,
         "block": {"type": "tool-call", "id": "", "name": "", "arguments": '{"a": 1}'}},
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 1, "id": "", "argumentsDelta": "{}"},
        {"type": "tool-call-delta", "index": 1, "id": "", "argumentsDelta": ""},
        {"type": "block-end", "index": 1, "block": {"type": "tool-call", "id": "", "name": "g", "arguments": "{}"}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ],
    "an id two blocks share, raw arguments, tool-calls without a call": [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "c", "name": "f", "argumentsDelta": "not"},
        {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": " json"},
        {"type": "block-end", "index": 0,
         "block": {"type": "tool-call", "id": "c", "name": "f", "arguments": "not json"}},
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 1, "id": "c", "name": "g", "argumentsDelta": "[1,"},
        {"type": "tool-call-delta", "index": 1, "id": "c", "argumentsDelta": "2]"},
        {"type": "tool-call-delta", "index": 1, "id": "c", "name": "g", "argumentsDelta": ""},
        {"type": "block-end", "index": 1, "block": {"type": "tool-call", "id": "c", "name": "g", "arguments": "[1,2]"}},
        {"type": "block-start", "index": 2, "blockType": "tool-call"},
        {"type": "block-end", "index": 2, "block": {"type": "tool-call", "id": "c", "name": "h", "arguments": "{}"}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ],
    "cut off with an image block and one of an unknown type open": [
        {"type": "block-start", "index": 0, "blockType": "image"},
        {"type": "block-start", "index": 1, "blockType": "x-custom"},
        {"type": "block-start", "index": 2, "blockType": "text"},
        {"type": "text-delta", "index": 2, "text": "cut"},
        {"type": "finish", "reason": {"kind": "max-tokens"}},
    ],
    "tool-calls without a call and without usage": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "no call"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "no call"}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ],
}  # fmt: skip


def tool_call(index: int, cid: str, name: str, pieces: list[str], *, name_later: bool = False) -> list[dict[str, Any]]:
    """A tool-call block: its deltas (the name on the first, or on the second too) and its block-end."""
    deltas = [
        tool_delta(index, cid, p, name=name if k == 0 or (name_later and k == 1) else None)
        for k, p in enumerate(pieces)
    ]
    return [start(index, "tool-call"), *deltas, end_tool(index, cid, name, "".join(pieces) or "{}")]


def text(index: int, pieces: list[str], kind: str = "text") -> list[dict[str, Any]]:
    delta, end = (text_delta, end_text) if kind == "text" else (reasoning_delta, end_reasoning)
    return [start(index, kind), *(delta(index, p) for p in pieces), end(index, "".join(pieces))]


def interleaved() -> list[dict[str, Any]]:
    """Three blocks open at once (HARNESS): deltas while several are open, then while one is left."""
    return [
        start(0, "reasoning"), reasoning_delta(0, "think"),
        start(1, "tool-call"), tool_delta(1, "c1", '{"a"', name="f"),
        start(2, "text"), text_delta(2, "hel"), reasoning_delta(0, "ing"), tool_delta(1, "c1", ": 1"),
        end_reasoning(0, "thinking"), text_delta(2, "lo"), tool_delta(1, "c1", "}"),
        end_text(2, "hello"), tool_delta(1, "c1", " "), end_tool(1, "c1", "f", '{"a": 1} '),
        finish("tool-calls"),
    ]  # fmt: skip


BIG = ["x" * (k % 7) for k in range(10_000)]  # 30k characters in 10,000 deltas, some of them empty


class Text(str):
    """A ``str`` subclass: a valid value still, which no fast test vouches for."""


MAX_COUNT = 2**53 - 1  # the greatest token count (SPEC: a count is an integer from 0 to 2^53 - 1)
ALL_USAGE = {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 6, "cacheReadTokens": 1,
             "cacheWriteTokens": 2, "reasoningTokens": 3}}  # fmt: skip
FAILED = {"type": "finish", "reason": {"kind": "error", "failure": {"message": "overloaded", "code": "SERVER"}}}

#: Valid streams, each with its policy and limits: every chunk type, every kind of block, blocks at and past
#: the limits, big blocks, and mappings that are not dicts.
STREAMS: dict[str, tuple[list[Any], sf.Policy, sf.Limits]] = {
    "seed": (copy.deepcopy(SEED_CHUNKS), STRICT, sf.Limits()),
    "seed under HARNESS": (copy.deepcopy(SEED_CHUNKS), HARNESS, sf.Limits()),
    "reasoning, text, two tool calls": (
        [*text(0, ["Let", " me", " look"], "reasoning"), *text(1, ["ok", ""]),
         *tool_call(2, "c1", "read", ['{"path"', ': "a"}']),
         *tool_call(3, "c2", "bash", ["{", "}", " "], name_later=True),
         ALL_USAGE, finish("tool-calls")],
        STRICT, sf.Limits(),
    ),
    "blocks without deltas": (
        [*text(0, []), *text(1, [], "reasoning"), *tool_call(2, "c1", "f", []), usage(), finish("stop")],
        STRICT, sf.Limits(),
    ),
    "blocks without deltas, over a quarter of the byte limit": (
        [start(0, "text"), end_text(0, "x" * 30),
         start(1, "tool-call"), end_tool(1, "c", "f", '{"a": "' + "y" * 30 + '"}'), usage(), finish("stop")],
        STRICT, sf.Limits(max_block_bytes=100),
    ),
    "interleaved blocks": (interleaved(), HARNESS, sf.Limits()),
    "cut off by max-tokens": ([*text(0, ["a", "b"])[:-1], usage(), finish("max-tokens")], STRICT, sf.Limits()),
    "cut off by an error": ([*text(0, ["a", "b"])[:-1], FAILED], STRICT, sf.Limits()),
    "with a replay state": ([*text(0, ["a"]), usage(), finish("stop", replayState={"k": [1]})], STRICT,
                            sf.Limits()),
    "usage at the bounds of its counts": (
        [*text(0, ["a"]), usage(0, 2**53 - 1, cacheReadTokens=0, cacheWriteTokens=2**53 - 1, reasoningTokens=0),
         finish("stop")],
        STRICT, sf.Limits(),
    ),
    "usage at the other bounds": ([*text(0, ["a"]), usage(2**53 - 1, 0), finish("stop")], STRICT, sf.Limits()),
    "one-character deltas across caps": ([*text(0, ["a"] * 5_000), usage(), finish("stop")], STRICT, sf.Limits()),
    "two blocks open up to a quarter of the byte limit": (
        [start(0, "text"), start(1, "text"), *(text_delta(0, "a") for _ in range(50)), text_delta(1, "b"),
         text_delta(0, "a"), end_text(0, "a" * 51), end_text(1, "b"), finish("stop")],
        HARNESS, sf.Limits(max_block_bytes=400),
    ),
    "blocks without deltas, a quarter of the byte limit": (
        [start(0, "text"), end_text(0, "x" * 25),
         start(1, "tool-call"), end_tool(1, "c", "f", '{"a": "' + "y" * 16 + '"}'), usage(), finish("stop")],
        STRICT, sf.Limits(max_block_bytes=100),
    ),
    "usage counts at their bound": (
        [*text(0, ["a"]), usage(MAX_COUNT, MAX_COUNT, cacheReadTokens=MAX_COUNT, cacheWriteTokens=0,
                                reasoningTokens=MAX_COUNT), finish("stop")],
        STRICT, sf.Limits(),
    ),
    "a usage that is a mapping, with every count": (
        [*text(0, ["a"]), {"type": "usage", "usage": MappingProxyType(ALL_USAGE["usage"])}, finish("stop")],
        STRICT, sf.Limits(),
    ),
    "str subclasses and extra keys among the values": (
        [start(0, Text("text")), text_delta(0, "a"), end_text(0, "a"), start(1, Text("tool-call")),
         {**tool_delta(1, Text("c"), "{", name=Text("f")), "extra": 1}, {**tool_delta(1, "c", "}"), "extra": 1},
         end_tool(1, "c", "f", "{}"), usage(), finish("tool-calls")],
        STRICT, sf.Limits(),
    ),
    "mappings that are not dicts among the chunks": (
        [MappingProxyType(start(0, "text")), text_delta(0, "a"), UserDict(text_delta(0, "b")), text_delta(0, "c"),
         {**end_text(0, "abc"), "block": UserDict(end_text(0, "abc")["block"])},
         MappingProxyType(start(1, "tool-call")), tool_delta(1, "c", "{", name="f"),
         tool_delta(1, "c", "}"), UserDict(end_tool(1, "c", "f", "{}")), usage(), finish("tool-calls")],
        STRICT, sf.Limits(),
    ),
    "a big text block": ([*text(0, BIG), usage(), finish("stop")], STRICT, sf.Limits()),
    "a big tool call": ([*tool_call(0, "c", "f", ['{"a": "', *BIG, '"}']), usage(), finish("tool-calls")],
                        STRICT, sf.Limits()),
    "a big block past a quarter of its byte limit": (
        [*text(0, BIG), usage(), finish("stop")], STRICT, sf.Limits(max_block_bytes=80_000)
    ),
    "a big block with small caps": (
        [*text(0, BIG[:3000]), *text(1, ["z"] * 50), usage(), finish("stop")], STRICT,
        sf.Limits(max_block_bytes=20_000),
    ),
    # 40 bytes: a cap of 10 units, passed by the 6th two-byte delta; the 20th brings exactly 40 bytes (and
    # the tool call's last delta too).
    "exact bytes up to the byte limit": (
        [*text(0, ["é"] * 20), *tool_call(1, "c", "f", ['{"a": "', "é" * 15 + "x", '"}']), usage(),
         finish("tool-calls")],
        STRICT, sf.Limits(max_block_bytes=40),
    ),
    # Under 4 bytes the cap in units is 0: the first delta already switches to exact bytes.
    "a byte limit under 4": (
        [*text(0, ["a", "b", "c"]), *text(1, ["é", "z"], "reasoning"), usage(), finish("stop")],
        STRICT, sf.Limits(max_block_bytes=3),
    ),
    "an image block between text blocks": (
        [*text(0, ["a", "b"]), start(1, "image"), end_image(1, {"id": "att"}), *text(2, ["c", "d"]), usage(),
         finish("stop")],
        STRICT, sf.Limits(),
    ),
    "HARNESS: a block of an unknown type, a finish of an unknown kind": (
        [*text(0, ["a", "b"]), start(1, "video"), end_block(1, {"type": "video", "t": [1]}), *text(2, ["c", "d"]),
         finish("paused")],
        HARNESS, sf.Limits(),
    ),
    "HARNESS: empty ids and names": (
        [start(0, "tool-call"), tool_delta(0, "", '{"a": 1}', name=""), end_tool(0, "", "", '{"a": 1}'),
         start(1, "tool-call"), tool_delta(1, "c", "{"), tool_delta(1, "c", "", name=""), tool_delta(1, "c", "}"),
         end_tool(1, "c", "", "{}"), start(2, "tool-call"), end_tool(2, "", "f", "{}"), usage(), finish("tool-calls")],
        HARNESS, sf.Limits(),
    ),
    "HARNESS: an id two blocks share, raw arguments, tool-calls without a call": (
        [*tool_call(0, "c", "f", ["{", "}"]), *tool_call(1, "c", "g", ["not json"]),
         *tool_call(2, "d", "g", ["[", "]"]), start(3, "tool-call"), end_tool(3, "c", "h", "{}"), usage(),
         finish("stop")],
        HARNESS, sf.Limits(),
    ),
    "HARNESS: tool-calls without a call": ([*text(0, ["a"]), finish("tool-calls")], HARNESS, sf.Limits()),
}  # fmt: skip


def recordings() -> list[list[Any]]:
    return [s.chunks for path in sorted(SESSIONS.glob("*.jsonl")) for s in sf.read_session(path)]


# -- every entry point gives the same answer -------------------------------------------------------


@pytest.mark.parametrize(("chunks", "policy", "limits"), STREAMS.values(), ids=STREAMS.keys())
def test_valid_streams_agree(chunks: list[Any], policy: sf.Policy, limits: sf.Limits) -> None:
    seen = agree(chunks, policy, limits)
    assert seen["verdict"] == ("ok",)
    assert seen["chunk_count"] == len(chunks)


@pytest.mark.parametrize("policy", list(sf.Policy))
def test_seed_mutations_agree(policy: sf.Policy) -> None:
    streams = [*mutations(SEED_CHUNKS), *mutations(harness_variant(SEED_CHUNKS))]
    assert len(streams) > 500
    verdicts = {agree(s, policy)["verdict"][0] for s in streams}
    assert verdicts == {"ok", "error"}


@pytest.mark.parametrize("policy", list(sf.Policy))
@pytest.mark.parametrize("name", HARNESS_STREAMS.keys())
def test_harness_allowances_and_their_mutations_agree(policy: sf.Policy, name: str) -> None:
    chunks = HARNESS_STREAMS[name]
    assert agree(chunks, HARNESS)["verdict"] == ("ok",)
    for stream in [chunks, *mutations(chunks)]:
        agree(stream, policy)


@pytest.mark.parametrize("policy", list(sf.Policy))
@pytest.mark.parametrize(
    "limits",
    [
        sf.Limits(max_chunks=5),
        sf.Limits(max_blocks=1),
        sf.Limits(max_block_bytes=8),
        sf.Limits(max_block_bytes=24),
        sf.Limits(max_stream_bytes=30),
    ],
    ids=["chunks", "blocks", "bytes-8", "bytes-24", "stream-bytes-30"],
)
def test_limits_agree(policy: sf.Policy, limits: sf.Limits) -> None:
    streams = [SEED_CHUNKS, harness_variant(SEED_CHUNKS), *itertools.islice(mutations(SEED_CHUNKS), 200)]
    streams += [s for chunks in HARNESS_STREAMS.values() for s in itertools.islice(mutations(chunks), 40)]
    codes = {agree(s, policy, limits)["verdict"][1:2] for s in streams}
    assert ("LIMIT_EXCEEDED",) in codes


@pytest.mark.parametrize("policy", list(sf.Policy))
def test_recordings_agree(policy: sf.Policy) -> None:
    streams = recordings()
    assert len(streams) == 283
    for chunks in streams:
        agree(chunks, policy)


@pytest.mark.parametrize(
    "piece", ["é", "😀", "a", "\ud800", ""], ids=["2 bytes", "4 bytes", "1 byte", "surrogate", "empty"]
)
@pytest.mark.parametrize("kind", ["text", "tool-call"])
def test_exact_bytes_past_a_quarter_of_the_limit(piece: str, kind: str) -> None:
    """Past a quarter of ``max_block_bytes`` a block's UTF-8 bytes are counted exactly: ``LIMIT_EXCEEDED`` comes
    at the delta that passes 1,000 bytes, as counted here, on every entry point."""
    limit = 1_000
    size = len(piece.encode("utf-8", "surrogatepass"))
    if kind == "text":
        deltas = [{"type": "text-delta", "index": 0, "text": piece} for _ in range(2_000)]
    else:
        deltas = [{"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": piece} for _ in range(2_000)]
    stream = [{"type": "block-start", "index": 0, "blockType": kind}, *deltas]
    passes = next((k for k in range(1, 2_001) if k * size > limit), None)
    # No finish: a stream that stays within the limit ends STREAM_TRUNCATED after its last delta.
    want = ("LIMIT_EXCEEDED", passes) if passes is not None else ("STREAM_TRUNCATED", len(stream))
    got = agree(stream, STRICT, sf.Limits(max_block_bytes=limit))["verdict"]
    assert got[1:3] == want, got


def test_exact_bytes_past_a_quarter_of_the_default_limit() -> None:
    """With the default limits (64 MiB) a block switches to exact bytes past 16 MiB units, on every entry point."""
    assert sf.Limits().max_block_bytes == 64 * 1024 * 1024
    big = "x" * 9_000_000  # two of them pass 16,777,216 units
    text = big + big + "é"
    stream: list[dict[str, Any]] = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": big},
        {"type": "text-delta", "index": 0, "text": big},  # the switch: 18,000,000 bytes so far
        {"type": "text-delta", "index": 0, "text": "é"},  # exact: 18,000,002 bytes
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    for name, feed in FEEDS.items():
        asm = sf.StreamAssembler()
        feed(asm, stream)
        assert asm.close().text == text, name
    assert sf.assemble_jsonl([orjson.dumps(c) for c in stream]).text == text


# -- a rejected chunk leaves no trace --------------------------------------------------------------


@pytest.mark.parametrize("feed", ["feed", "feed_many"])
@pytest.mark.parametrize("policy", list(sf.Policy))
def test_a_rejected_chunk_leaves_no_trace(policy: sf.Policy, feed: str) -> None:
    """The chunk a machine refuses changes nothing but the failure: the snapshot is the one before it (in state
    FAILED, the chunk counted), the notes are the same, and the error carries the state the chunk met and what
    that state accepted."""
    streams = [*mutations(SEED_CHUNKS), *mutations(harness_variant(SEED_CHUNKS))]
    streams += [s for chunks in HARNESS_STREAMS.values() for s in mutations(chunks)]
    limits = sf.Limits(max_block_bytes=24)
    refused = 0
    for chunks, lim in itertools.product(streams, (None, limits)):
        asm = sf.StreamAssembler(policy, lim)
        for position, chunk in enumerate(chunks):
            before = asm.snapshot().model_dump()
            notes = list(asm.notes)
            try:
                FEEDS[feed](asm, [chunk])
            except sf.LlmError as err:
                refused += 1
                assert (err.chunk_index, err.state, err.expected) == (
                    position, before["state"], accepts(before["state"], policy)
                )  # fmt: skip
                assert asm.snapshot().model_dump() == {**before, "state": "FAILED", "chunk_count": position + 1}
                assert asm.notes == notes
                assert asm.error is err and asm.chunk_count == position + 1
                break
    assert refused > 1_000


# -- every limit is met at the exact chunk, on every entry point -----------------------------------

#: A stream and policy: its last chunk is at position max_chunks.
AT_THE_LIMIT: dict[str, tuple[list[dict[str, Any]], sf.Policy]] = {
    "a text delta": ([start(0, "text"), text_delta(0, "a"), text_delta(0, "b")], STRICT),
    "a tool delta": (
        [start(0, "tool-call"), tool_delta(0, "c", "{", name="f"), tool_delta(0, "c", "}", name="f")],
        STRICT,
    ),
    "the first tool delta": ([start(0, "tool-call"), tool_delta(0, "c", "{", name="f")], STRICT),
    "a delta with two blocks open": ([start(0, "text"), start(1, "reasoning"), reasoning_delta(1, "r")], HARNESS),
    "a block-start": ([*text(0, ["a"]), start(1, "text")], STRICT),
    "a block-end": ([start(0, "text"), text_delta(0, "a"), end_text(0, "a")], STRICT),
    "a usage": ([*text(0, ["a"]), usage()], STRICT),
    "a finish": ([*text(0, ["a"]), usage(), finish("stop")], STRICT),
    "a finish with a failure": ([*text(0, ["a"]), FAILED], STRICT),
}


@pytest.mark.parametrize(("chunks", "policy"), AT_THE_LIMIT.values(), ids=AT_THE_LIMIT.keys())
def test_the_chunk_at_max_chunks_is_refused_on_every_entry_point(
    chunks: list[dict[str, Any]], policy: sf.Policy
) -> None:
    n = len(chunks) - 1
    seen = agree(chunks, policy, sf.Limits(max_chunks=n + 1))  # one chunk more and it would be refused
    assert seen["chunk_count"] == n + 1
    assert seen["verdict"][:3] in (("ok",), ("error", "STREAM_TRUNCATED", n + 1))
    seen = agree(chunks, policy, sf.Limits(max_chunks=n))
    _, code, index, message, *_ = seen["verdict"]
    assert (code, index) == ("LIMIT_EXCEEDED", n)
    assert message.startswith(f"limit exceeded: more than {n} chunks (state ")
    assert seen["chunk_count"] == n + 1


#: A limit and a stream whose last chunk reaches it exactly (accepted) — and the same one byte over (refused).
AT_THE_EDGE: dict[str, tuple[sf.Limits, Callable[[int], list[dict[str, Any]]]]] = {
    "a text block with no deltas": (
        sf.Limits(max_block_bytes=40), lambda n: [start(0, "text"), end_text(0, "é" * (n // 2))],
    ),
    "a tool call with no deltas": (
        sf.Limits(max_block_bytes=40),
        lambda n: [start(0, "tool-call"), end_tool(0, "c", "f", '{"a": "' + "x" * (n - 9) + '"}')],
    ),
    "a text block of deltas": (
        sf.Limits(max_block_bytes=40), lambda n: [start(0, "text"), *(text_delta(0, "ab") for _ in range(n // 2))],
    ),
    "a stream of two text blocks": (
        sf.Limits(max_stream_bytes=40),
        lambda n: [*text(0, ["ab"] * 10), start(1, "text"), *(text_delta(1, "ab") for _ in range((n - 20) // 2))],
    ),
}  # fmt: skip


@pytest.mark.parametrize(("limits", "stream"), AT_THE_EDGE.values(), ids=AT_THE_EDGE.keys())
def test_a_block_or_a_stream_of_exactly_its_byte_limit_is_accepted(
    limits: sf.Limits, stream: Callable[[int], list[dict[str, Any]]]
) -> None:
    n = min(limits.max_block_bytes, limits.max_stream_bytes)
    exact = stream(n)
    assert agree(exact, STRICT, limits)["verdict"][1:3] == ("STREAM_TRUNCATED", len(exact))  # every chunk accepted
    over = stream(n + 2)
    assert agree(over, STRICT, limits)["verdict"][1:3] == ("LIMIT_EXCEEDED", len(over) - 1)


#: A tool call's block-end with a field of the wrong type, after deltas that did not name the tool, or none.
ILL_TYPED_END: dict[str, list[dict[str, Any]]] = {
    "name, no deltas": [start(0, "tool-call"), end_tool(0, "c", 5, "{}")],
    "id, no deltas": [start(0, "tool-call"), end_tool(0, 5, "f", "{}")],
    "arguments, no deltas": [start(0, "tool-call"), end_tool(0, "c", "f", {"a": 1})],
    "empty id, no deltas": [start(0, "tool-call"), end_tool(0, "", "f", "{}")],
    "empty name, no deltas": [start(0, "tool-call"), end_tool(0, "c", "", "{}")],
    "name, unnamed deltas": [start(0, "tool-call"), tool_delta(0, "c", "{}"), end_tool(0, "c", 5, "{}")],
    "arguments, unnamed deltas": [start(0, "tool-call"), tool_delta(0, "c", "{}"), end_tool(0, "c", "f", None)],
    "empty name, unnamed deltas": [start(0, "tool-call"), tool_delta(0, "c", "{}"), end_tool(0, "c", "", "{}")],
    "block type": [start(0, "text"), {"type": "block-end", "index": 0, "block": {"type": 1, "text": ""}}],
    "text": [start(0, "text"), end_text(0, 5)],
}


@pytest.mark.parametrize("chunks", ILL_TYPED_END.values(), ids=ILL_TYPED_END.keys())
def test_an_ill_typed_block_end_is_refused_on_every_entry_point(chunks: list[dict[str, Any]]) -> None:
    assert agree(chunks, STRICT)["verdict"][1:3] == ("INVALID_CHUNK", len(chunks) - 1)


# -- JSON lines: batches ---------------------------------------------------------------------------


def as_lines(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(c) for c in chunks]


LINES: dict[str, list[Any]] = {
    "more lines than a batch": as_lines([*text(0, ["ab"] * (BATCH + 500)), usage(), finish("stop")]),
    "blank lines inside a batch": [
        b"", *as_lines(text(0, ["a", "b"])), b" \t\r", "\n", *as_lines([usage()]), b"\r\n", *as_lines([finish("stop")]),
    ],
    "a blank line at the end of a batch": [*as_lines(text(0, ["x"] * (BATCH - 3))), b"",
                                           *as_lines([usage(), finish("stop")])],
    "memoryviews and bytearrays": [memoryview(line) if k % 2 else bytearray(line) for k, line in enumerate(
        as_lines([*text(0, ["a", "b"]), usage(), finish("stop")]))],
    "str lines": [line.decode() for line in as_lines([*text(0, ["é", "ü"]), usage(), finish("stop")])],
    "blank memoryviews and bytearrays": [memoryview(b" \r\n"), *as_lines(text(0, ["a"])), bytearray(b"\t"),
                                         memoryview(b""), *as_lines([usage(), finish("stop")]), bytearray(b" ")],
}  # fmt: skip


def raw(line: Any) -> bytes:
    return line.encode() if isinstance(line, str) else bytes(line)


@pytest.mark.parametrize("lines", LINES.values(), ids=LINES.keys())
def test_json_lines_in_batches(lines: list[Any]) -> None:
    filled = [line for line in lines if raw(line).strip(b" \t\r\n")]
    parsed = [orjson.loads(raw(line)) for line in filled]
    expected = sf.assemble(parsed)
    assert sf.assemble_jsonl(lines) == expected
    assert list(sf.validate_jsonl(lines)) == parsed
    asm = sf.StreamAssembler()
    assert [asm.feed_line(line) for line in lines] == [orjson.loads(raw(x)) if x in filled else None for x in lines]
    assert asm.close() == expected


def test_accepted_chunks_leaves_the_end_of_input_to_the_caller() -> None:
    """``accepted_chunks(lines)`` takes the end of the lines for a pause (more may be fed); with ``end=True`` it is
    the end of input, and a stream cut before its finish is ``STREAM_TRUNCATED``."""
    lines = as_lines(text(0, ["a"]))
    asm = sf.StreamAssembler()
    assert list(asm.accepted_chunks(lines)) == [orjson.loads(line) for line in lines]
    assert list(asm.accepted_chunks(as_lines([usage(), finish("stop")]))) == [usage(), finish("stop")]
    assert asm.close().blocks[0].text == "a"  # type: ignore[union-attr]
    with pytest.raises(sf.LlmError) as info:
        list(sf.StreamAssembler().accepted_chunks(lines, end=True))
    assert (info.value.code, info.value.chunk_index) == ("STREAM_TRUNCATED", len(lines))


@pytest.mark.parametrize(
    "line",
    ["\x1c", "\u2028", "\xa0", b"\x0b", b"\x0c", b"\x1c", "X", b"X", " X\t"],
    ids=["U+001C", "U+2028", "NBSP", "VT", "FF", "FS", "X", "b'X'", "X among blanks"],
)
def test_only_json_whitespace_makes_a_blank_line(line: str | bytes) -> None:
    """A line of other whitespace is not skipped: it is a line that is not JSON, at its position."""
    for feed in ("feed_line", "feed_lines"):
        asm = sf.StreamAssembler()
        asm.feed(start(0, "text"))
        with pytest.raises(sf.LlmError) as info:
            getattr(asm, feed)(line if feed == "feed_line" else [line])
        assert (info.value.code, info.value.chunk_index) == ("INVALID_CHUNK", 1)


def test_json_lines_are_read_as_they_come_and_none_past_a_refused_one() -> None:
    pulled = 0

    def endless() -> Iterator[bytes]:
        nonlocal pulled
        yield orjson.dumps(start(0, "text"))
        while True:
            pulled += 1
            yield b"{not json" if pulled == 10 else orjson.dumps(text_delta(0, "a"))

    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl(endless())
    assert (info.value.code, info.value.chunk_index) == ("INVALID_CHUNK", 10)
    assert pulled == 10  # the refused line is the last one read


# -- the hot path takes the deltas of a typical stream ---------------------------------------------


M = source_machine()


class Recorder(M.StreamAssembler):  # type: ignore[misc,name-defined]
    """The assembler, noting the position of every chunk that runs its type's rules or is checked whole (the hot
    path: every other)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cold: list[int] = []
        self.whole: list[int] = []  # the chunks checked whole (``_shaped``): the handlers' fast tests declined them

    def _saw(self, n: int) -> None:
        if not self.cold or self.cold[-1] != n:
            self.cold.append(n)

    def _route_in_full(self, chunk: object, n: int) -> Any:  # not a dict, or no route: checked whole first
        self._saw(n)
        return super()._route_in_full(chunk, n)

    def _shaped(self, chunk: object, n: int) -> Any:
        self.whole.append(n)
        return super()._shaped(chunk, n)

    def _on_block_start(self, c: Any, route: Any, n: int) -> bool:
        self._saw(n)
        return bool(super()._on_block_start(c, route, n))

    def _delta(self, c: Any, t: str, n: int) -> None:  # a delta the expectation did not meet
        self._saw(n)
        super()._delta(c, t, n)

    def _on_block_end(self, c: Any, route: Any, n: int) -> bool:
        self._saw(n)
        return bool(super()._on_block_end(c, route, n))

    def _on_usage(self, c: Any, route: Any, n: int) -> bool:
        self._saw(n)
        return bool(super()._on_usage(c, route, n))

    def _on_finish(self, c: Any, route: Any, n: int) -> bool:
        self._saw(n)
        return bool(super()._on_finish(c, route, n))


DELTAS = ("text-delta", "reasoning-delta", "tool-call-delta")


def handled(chunks: Sequence[Mapping[str, Any]]) -> list[int]:
    """The positions of the chunks of a valid stream that reach their handler, by the machine's design: every
    chunk but a delta (a dict) for the one open block, once a tool call's first delta has given the block its id,
    and naming the tool as the block's earlier deltas did, if at all. (Blocks here stay under the units a hot
    block takes between counts.)"""
    blocks: dict[int, dict[str, Any]] = {}
    positions = []
    hot_index = None  # the hot block: the one started last, or the last one a delta went to
    for k, chunk in enumerate(chunks):
        t = chunk["type"]
        if t == "block-start":
            blocks[chunk["index"]] = {"id": False, "name": None}
            hot_index = chunk["index"]
        elif t == "block-end":
            del blocks[chunk["index"]]
            if hot_index in (None, chunk["index"]):
                hot_index = next(iter(blocks)) if len(blocks) == 1 else None
        elif t not in DELTAS:
            hot_index = None
        if t not in DELTAS:
            positions.append(k)
            continue
        block = blocks[chunk["index"]]
        hot = type(chunk) is dict and chunk["index"] == hot_index
        hot_index = chunk["index"]
        if t == "tool-call-delta":
            hot = hot and block["id"] and ("name" not in chunk or chunk["name"] == block["name"])
            block["id"] = True
            if block["name"] is None:
                block["name"] = chunk.get("name")
        if not hot:
            positions.append(k)
    return positions


PLAIN_KINDS = ("stop", "tool-calls", "max-tokens")


def plain_json(value: Any) -> bool:
    """Whether ``value`` is JSON data of exact types: dicts, lists, ``str``, ``int``, ``float``, ``bool``, None."""
    if type(value) is dict:
        return all(type(k) is str and plain_json(v) for k, v in value.items())
    if type(value) is list:
        return all(plain_json(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


def checked_whole(chunks: Sequence[Any]) -> list[int]:
    """The positions of the chunks of a valid stream that the machine checks whole (``_shape.check``), by its
    design: a chunk that is not JSON data of exact types (a mapping, a ``str`` subclass, anywhere in it), a block
    type only HARNESS knows, the end of a block that takes no deltas (an image), a finish with a failure, a replay
    state or a kind with no plain reason. Every other chunk is vouched for by its handler's fast tests.
    """
    positions = []
    for k, chunk in enumerate(chunks):
        if not plain_json(chunk):
            positions.append(k)
            continue
        t = chunk["type"]
        if t == "block-start":
            whole = chunk["blockType"] not in ("text", "reasoning", "tool-call", "image")
        elif t == "block-end":
            whole = chunk["block"]["type"] not in ("text", "reasoning", "tool-call")
        elif t == "finish":
            whole = chunk["reason"]["kind"] not in PLAIN_KINDS or "replayState" in chunk
        else:
            whole = False
        if whole:
            positions.append(k)
    return positions


def recorded(chunks: list[Any], policy: sf.Policy, limits: sf.Limits, entry: str) -> Recorder:
    asm = Recorder(policy, limits)
    if entry == "feed_lines":
        asm.feed_lines(orjson.dumps(c, default=dict) for c in chunks)  # a mapping as the JSON object it is
    else:
        FEEDS[entry](asm, chunks)
    asm.close()
    return asm


TYPICAL = [
    "seed", "seed under HARNESS", "reasoning, text, two tool calls", "blocks without deltas", "interleaved blocks",
    "cut off by max-tokens", "cut off by an error", "with a replay state", "an image block between text blocks",
    "mappings that are not dicts among the chunks", "HARNESS: empty ids and names",
    "HARNESS: an id two blocks share, raw arguments, tool-calls without a call", "usage counts at their bound",
    "a usage that is a mapping, with every count", "str subclasses and extra keys among the values",
]  # fmt: skip


@pytest.mark.parametrize("entry", [*FEEDS, "feed_lines"])
@pytest.mark.parametrize("name", TYPICAL)
def test_the_hot_path_takes_the_deltas_of_a_typical_stream(name: str, entry: str) -> None:
    """Only block boundaries, usage, finish, a tool call's first delta (and one that first names the tool), a
    delta for an open block other than the hot one (the block started last, or the last a delta went to), and a
    mapping that is not a dict reach the handlers; and only what their fast tests cannot vouch for is checked whole
    (``checked_whole``)."""
    chunks, policy, limits = STREAMS[name]
    asm = recorded(chunks, policy, limits, entry)
    fed = [orjson.loads(orjson.dumps(c, default=dict)) for c in chunks] if entry == "feed_lines" else chunks
    want = handled(fed)
    assert asm.cold == want
    assert asm.whole == checked_whole(fed)
    # Whichever path read it, a chunk gives what its plain form gives.
    assert asm.close() == sf.assemble([orjson.loads(orjson.dumps(c, default=dict)) for c in chunks], policy=policy)
    assert len(want) < len(chunks) or not any(c["type"] in DELTAS for c in chunks)


@pytest.mark.parametrize("entry", [*FEEDS, "feed_lines"])
@pytest.mark.parametrize("name", ["usage counts at their bound", "a usage that is a mapping, with every count"])
def test_a_usage_gives_every_count_whichever_path_reads_it(name: str, entry: str) -> None:
    """The usage handler's fast tests (a plain dict, counts up to 2^53 - 1) and the whole check (anything else)
    read the same counts."""
    chunks, policy, limits = STREAMS[name]
    counts = dict(next(c for c in chunks if c["type"] == "usage")["usage"])
    asm = recorded(chunks, policy, limits, entry)
    result = asm.close()
    assert result.usage is not None
    assert result.usage.model_dump(by_alias=True, exclude_none=True) == counts


@pytest.mark.parametrize("lines_first", [False, True], ids=["literal keys", "after a JSON line"])
@pytest.mark.parametrize("keys", ["orjson", "json"])
def test_the_hot_path_finds_a_field_by_its_value_whatever_object_its_key_is(keys: str, lines_first: bool) -> None:
    """The hot path looks fields up with interned constants, or, once fed JSON lines, with orjson's own key objects
    (a lookup by identity is the cheap one). Keys of another origin (the stdlib's ``json``, orjson's in a machine
    fed dicts) are equal and not identical: the same deltas take the hot path, and the stream is the same."""
    load = orjson.loads if keys == "orjson" else __import__("json").loads
    for name in TYPICAL:
        chunks, policy, limits = STREAMS[name]
        plain = [orjson.loads(orjson.dumps(c, default=dict)) for c in chunks]  # plain JSON data, mappings as dicts
        asm = Recorder(policy, limits)
        if lines_first:
            # A blank line: no chunk, no position; the machine now looks up with orjson's key objects.
            assert asm.feed_line(b" ") is None
        for chunk in plain:
            asm.feed(load(orjson.dumps(chunk)))
        assert asm.cold == handled(plain), name
        assert asm.whole == checked_whole(plain), name
        assert asm.close() == sf.assemble(plain, policy=policy, limits=limits), name


def test_the_hot_path_takes_the_recorded_deltas() -> None:
    """The recordings valid under HARNESS (278 of 283): their deltas take the hot path as designed."""
    streams = []
    for chunks in recordings():
        try:
            sf.assemble(chunks, policy=HARNESS)
        except sf.LlmError:
            continue
        streams.append(chunks)
    assert len(streams) == 278
    hot = deltas = 0
    for chunks in streams:
        for entry in FEEDS:
            asm = recorded(chunks, HARNESS, sf.Limits(), entry)
            assert asm.cold == handled(chunks)
            assert asm.whole == checked_whole(chunks)
        hot += len(chunks) - len(asm.cold)
        deltas += sum(c["type"] in DELTAS for c in chunks)
    # The others are a tool call's first delta (many recorded calls come in one delta) or a delta for an open
    # block other than the hot one (the recorded blocks interleave in runs: 135 such deltas). Before the hot
    # block followed the deltas, every delta while several blocks were open went to its handler: 4,554 of 9,660.
    assert (hot, deltas) == (9_508, 9_660)


@pytest.mark.parametrize("name", ["one-character deltas across caps", "a big text block", "a big tool call"])
def test_a_big_block_reaches_its_handler_once_a_flush(name: str) -> None:
    """A block takes ``FLUSH`` units (a character, plus one a delta) on the hot path between two deltas its
    handler takes: a block of ``u`` units sends at most ``u // FLUSH`` of its deltas there, beside its first. (Past
    a quarter of ``max_block_bytes``, 16 MiB units by default, the handler counts every delta's bytes exactly.)"""
    chunks, policy, limits = STREAMS[name]
    for entry in FEEDS:
        asm = recorded(chunks, policy, limits, entry)
        per_block: dict[int, tuple[int, int]] = {}  # units, deltas handled
        for k, chunk in enumerate(chunks):
            if chunk["type"] in DELTAS:
                value = chunk["argumentsDelta" if chunk["type"] == "tool-call-delta" else "text"]
                units, cold = per_block.get(chunk["index"], (0, 0))
                per_block[chunk["index"]] = (units + len(value) + 1, cold + (k in asm.cold))
        for units, cold in per_block.values():
            assert cold <= units // FLUSH + 1, (entry, units, cold)


# ====================================================================================================================
# The public API of SPEC §5: entry points, snapshots, JSON lines, session logs, upstream closing.
# ====================================================================================================================


Chunks = list[dict[str, Any]]


def test_seed_example_assembles_to_its_text_and_tool_call(seed_chunks: Chunks) -> None:
    result = sf.assemble(seed_chunks)
    assert result.text == "runoob 教程"
    (call,) = result.tool_calls
    assert (call.id, call.name, call.arguments) == ("call-123", "bash", '{"command":"echo runoob"}')
    assert call.parsed_arguments == {"command": "echo runoob"}
    assert result.usage == sf.Usage(input_tokens=100, output_tokens=50)
    assert result.finish == sf.FinishReason(kind="stop")
    assert result.interrupted == []
    assert result.to_wire() == {
        "blocks": [
            {"type": "text", "text": "runoob 教程"},
            {"type": "tool-call", "id": "call-123", "name": "bash", "arguments": '{"command":"echo runoob"}'},
        ],
        "usage": {"inputTokens": 100, "outputTokens": 50},
        "finish": {"kind": "stop"},
    }


def test_call_id_is_a_typed_factory() -> None:
    cid = sf.CallId("call-1")
    assert cid == "call-1" and type(cid) is str


def test_models_use_snake_case_and_camel_case_aliases() -> None:
    usage = sf.Usage.model_validate({"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 3})
    assert usage.cache_read_tokens == 3 and usage.total_tokens == 3
    assert usage.to_wire() == {"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 3}
    failure = sf.LlmFailure(message="m", code="AUTH", status=401, provider_retry_after_ms=5)
    assert failure.to_wire() == {"message": "m", "code": "AUTH", "status": 401, "providerRetryAfterMs": 5}


def test_the_models_of_what_harness_keeps() -> None:
    """SPEC §1/§4/§5: ``ImageBlock``; a finish reason keeps fields of its own; ``raw_arguments`` and ``notes``."""
    assert "ImageBlock" in sf.__all__ and sf.ImageBlock in sf.Block.__args__
    image = sf.ImageBlock(attachment={"id": "att-1", "size": [64, 48]})
    assert (image.type, image.to_wire()) == (
        "image",
        {"type": "image", "attachment": {"id": "att-1", "size": [64, 48]}},
    )
    assert sf.ImageBlock.model_validate(image.to_wire()) == image
    paused = sf.FinishReason.model_validate({"kind": "paused", "resumeAt": 3})
    assert (paused.kind, paused.failure, paused.model_extra) == ("paused", None, {"resumeAt": 3})
    assert paused.to_wire() == {"kind": "paused", "resumeAt": 3}
    asm = sf.StreamAssembler(sf.Policy.STRICT, None, raw_arguments=True)
    assert asm.notes == [] and asm.policy is sf.Policy.STRICT
    with pytest.raises(TypeError):
        sf.StreamAssembler(sf.Policy.STRICT, None, True)  # type: ignore[call-arg]


def test_parsed_arguments_of_a_block_built_by_hand() -> None:
    """Built by hand, arguments that are not a JSON object raise ValueError saying why (nothing is guessed)."""
    assert sf.ToolCallBlock(id=sf.CallId("c"), name="f", arguments='{"a": [1]}').parsed_arguments == {"a": [1]}
    for arguments, why in (('{"a": "b', "not a JSON object"), ("[1]", "got list"), ("", "not a JSON object")):
        block = sf.ToolCallBlock(id=sf.CallId("c"), name="f", arguments=arguments)
        with pytest.raises(ValueError, match=why) as info:
            _ = block.parsed_arguments
        assert "'c'" in str(info.value)


def test_llm_error_fields_and_failure() -> None:
    err = sf.LlmError("slow down", "RATE_LIMIT", status=429, retry_after_ms=1500, request_id="r1")
    assert err.code is sf.ErrorCode.RATE_LIMIT and err.retryable
    assert (err.message, err.status, err.retry_after_ms, err.request_id, err.chunk_index) == (
        "slow down", 429, 1500, "r1", None,
    )  # fmt: skip
    assert err.failure.to_wire() == {
        "message": "slow down", "code": "RATE_LIMIT", "status": 429,
        "providerRetryAfterMs": 1500, "requestId": "r1",
    }  # fmt: skip
    assert sf.LlmError("x", "CONTENT_FILTER").code == "CONTENT_FILTER"  # an adapter's own code is kept
    assert "RATE_LIMIT" in str(err)


def test_llm_error_pickles() -> None:
    import pickle

    err = sf.LlmError("bad", sf.ErrorCode.INVALID_CHUNK, chunk_index=4)
    again = pickle.loads(pickle.dumps(err))
    assert (again.code, again.message, again.chunk_index) == (err.code, err.message, 4)


def test_feed_state_and_close(seed_chunks: Chunks) -> None:
    asm = sf.StreamAssembler()
    assert asm.state == "READY" and asm.policy is sf.Policy.STRICT
    for chunk in seed_chunks:
        asm.feed(chunk)
    assert asm.state == "FINISHED" and asm.chunk_count == len(seed_chunks)
    result = asm.close()
    assert asm.close() is result  # idempotent


def test_close_before_finish_is_truncated(seed_chunks: Chunks) -> None:
    asm = sf.StreamAssembler()
    for chunk in seed_chunks[:3]:
        asm.feed(chunk)
    with pytest.raises(sf.LlmError) as info:
        asm.close()
    assert info.value.code == "STREAM_TRUNCATED" and info.value.chunk_index == 3
    assert "block 0 (text) still open" in info.value.message
    with pytest.raises(sf.LlmError) as again:
        asm.feed(seed_chunks[3])
    assert again.value.code == "STREAM_TRUNCATED"


def test_snapshot_shows_completed_open_and_partial_arguments() -> None:
    asm = sf.StreamAssembler()
    for chunk in [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "Hel"},
        {"type": "text-delta", "index": 0, "text": "lo"},
    ]:
        asm.feed(chunk)
    snap = asm.snapshot()
    assert snap.state == "IN_BLOCK" and snap.chunk_count == 3 and snap.blocks == []
    (open_block,) = snap.open
    assert (open_block.index, open_block.block_type, open_block.text) == (0, "text", "Hello")
    for chunk in [
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello"}},
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 1, "id": "c1", "name": "read", "argumentsDelta": '{"path": "src/'},
        {"type": "tool-call-delta", "index": 1, "id": "c1", "argumentsDelta": 'a.py", "lines": [1, 2'},
    ]:
        asm.feed(chunk)
    snap = asm.snapshot()
    assert snap.blocks == [sf.TextBlock(text="Hello")]
    (tool,) = snap.open
    assert (tool.id, tool.name, tool.arguments) == ("c1", "read", '{"path": "src/a.py", "lines": [1, 2')
    assert tool.partial_arguments == {"path": "src/a.py", "lines": [1, 2]}
    assert snap.usage is None and snap.finish is None


def test_interrupted_blocks_of_a_cut_off_stream() -> None:
    result = sf.assemble(
        [
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "c1", "name": "w", "argumentsDelta": '{"a": "b'},
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}},
            {"type": "finish", "reason": {"kind": "max-tokens"}},
        ]
    )
    assert result.blocks == [] and result.finish.kind == "max-tokens"
    (cut,) = result.interrupted
    assert isinstance(cut, sf.ToolCallBlock)
    assert (cut.id, cut.name, cut.arguments) == ("c1", "w", '{"a": "b')
    assert cut.parsed_arguments == {"a": "b"}  # parsed as far as it goes


def test_validate_passes_chunks_through(seed_chunks: Chunks) -> None:
    assert list(sf.validate(seed_chunks)) == seed_chunks
    with pytest.raises(sf.LlmError) as info:
        list(sf.validate(seed_chunks[:-1]))
    assert info.value.code == "STREAM_TRUNCATED"


def test_validate_closes_a_sync_upstream_on_error(seed_chunks: Chunks) -> None:
    closed = []

    def upstream() -> Iterator[dict[str, Any]]:
        try:
            yield from seed_chunks[:2]
            yield {"type": "bogus"}
            yield from seed_chunks[2:]
        finally:
            closed.append(True)

    with pytest.raises(sf.LlmError):
        list(sf.validate(upstream()))
    assert closed == [True]


class Upstream:
    """An async upstream that records whether it was closed."""

    def __init__(self, chunks: Chunks, *, hang_after: int | None = None) -> None:
        self.chunks = chunks
        self.hang_after = hang_after
        self.closed = False

    async def gen(self) -> AsyncIterator[dict[str, Any]]:
        try:
            for i, chunk in enumerate(self.chunks):
                if i == self.hang_after:
                    await asyncio.sleep(3600)
                await asyncio.sleep(0)
                yield chunk
        finally:
            self.closed = True


def test_aassemble_and_avalidate(seed_chunks: Chunks) -> None:
    async def main() -> None:
        up = Upstream(seed_chunks)
        result = await sf.aassemble(up.gen())
        assert result == sf.assemble(seed_chunks) and up.closed
        up = Upstream(seed_chunks)
        assert [c async for c in sf.avalidate(up.gen())] == seed_chunks and up.closed

    asyncio.run(main())


def test_avalidate_closes_upstream_on_error(seed_chunks: Chunks) -> None:
    async def main() -> None:
        bad = [*seed_chunks[:4], {"type": "text-delta", "index": 9, "text": "x"}, *seed_chunks[4:]]
        up = Upstream(bad)
        got = []
        with pytest.raises(sf.LlmError) as info:
            async for chunk in sf.avalidate(up.gen()):
                got.append(chunk)
        assert info.value.code == "BLOCK_NOT_OPEN" and info.value.chunk_index == 4
        assert got == bad[:4] and up.closed
        up = Upstream(bad)
        with pytest.raises(sf.LlmError):
            await sf.aassemble(up.gen())
        assert up.closed

    asyncio.run(main())


def test_avalidate_closes_upstream_on_early_exit(seed_chunks: Chunks) -> None:
    async def main() -> None:
        up = Upstream(seed_chunks)
        stream = sf.avalidate(up.gen())
        async for _ in stream:
            break
        await stream.aclose()
        assert up.closed

    asyncio.run(main())


def test_avalidate_never_swallows_cancellation(seed_chunks: Chunks) -> None:
    async def main() -> None:
        up = Upstream(seed_chunks, hang_after=3)

        async def consume() -> None:
            async for _ in sf.avalidate(up.gen()):
                pass

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert up.closed
        up2 = Upstream(seed_chunks, hang_after=3)
        task2 = asyncio.create_task(sf.aassemble(up2.gen()))
        await asyncio.sleep(0.01)
        task2.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task2
        assert up2.closed
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(main())
    gc.collect()


def test_a_foreign_exception_is_wrapped_one_way() -> None:
    """``LlmError.wrap``, the one rule every wrapping site follows: ``UNKNOWN``, ``"{where}: {type}: {text}"``,
    the original as the cause; an ``LlmError`` is itself."""
    dropped = ConnectionError("dropped")
    wrapped = sf.LlmError.wrap(dropped, "the upstream failed after 2 chunk(s)")
    assert wrapped.code == "UNKNOWN"
    assert wrapped.message == "the upstream failed after 2 chunk(s): ConnectionError: dropped"
    assert wrapped.__cause__ is dropped and wrapped.__suppress_context__
    assert wrapped.chunk_index is None and wrapped.status is None
    limited = sf.LlmError("slow down", "RATE_LIMIT")
    assert sf.LlmError.wrap(limited, "anything") is limited and limited.__cause__ is None
    assert sf.LlmError.wrap(KeyError("k"), "x").message == "x: KeyError: 'k'"


def test_upstream_exceptions_become_coded_errors(seed_chunks: Chunks) -> None:
    """The upstream's own LlmError passes through; any other exception is UNKNOWN, raised from it.

    (Every entry point, timeouts and cancellation: ``tests/entry_points/test_upstream_failures.py``.)
    """
    dropped = ConnectionError("dropped")
    limited = sf.LlmError("slow down", "RATE_LIMIT")

    async def broken(error: Exception) -> AsyncIterator[dict[str, Any]]:
        yield seed_chunks[0]
        raise error

    async def main() -> None:
        with pytest.raises(sf.LlmError) as info:
            await sf.aassemble(broken(dropped))
        assert info.value.code == "UNKNOWN" and info.value.__cause__ is dropped
        assert info.value.message == "the upstream failed after 1 chunk(s): ConnectionError: dropped"
        with pytest.raises(sf.LlmError) as info:
            await sf.aassemble(broken(limited))
        assert info.value is limited

    asyncio.run(main())


def jsonl(chunks: Chunks) -> bytes:
    return b"\n".join(orjson.dumps(c) for c in chunks) + b"\n"


def test_jsonl_bytes_str_and_lines(seed_chunks: Chunks) -> None:
    expected = sf.assemble(seed_chunks)
    data = jsonl(seed_chunks)
    assert sf.assemble_jsonl(data) == expected
    assert sf.assemble_jsonl(data.decode()) == expected
    assert sf.assemble_jsonl(data.splitlines()) == expected
    assert sf.assemble_jsonl(b"\n\n" + data.replace(b"\n", b"\r\n\n")) == expected  # blank lines skipped
    assert list(sf.validate_jsonl(data)) == seed_chunks


def test_jsonl_from_a_file(tmp_path: Path, seed_chunks: Chunks) -> None:
    path = tmp_path / "stream.jsonl"
    path.write_bytes(jsonl(seed_chunks))
    with path.open("rb") as binary:
        assert sf.assemble_jsonl(binary).text == "runoob 教程"
    with path.open(encoding="utf-8") as text:
        assert sf.assemble_jsonl(text).text == "runoob 教程"


def test_jsonl_line_that_is_not_json_is_invalid_chunk_at_its_position(seed_chunks: Chunks) -> None:
    lines = jsonl(seed_chunks).splitlines()
    lines.insert(2, b'{"type": "text-delta", "index": 0, "text": "oops')
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl(lines)
    assert info.value.code == "INVALID_CHUNK" and info.value.chunk_index == 2
    assert "not JSON" in info.value.message
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl([*jsonl(seed_chunks).splitlines(), b"\xff\xfe not utf-8"])
    assert info.value.code == "CHUNK_AFTER_FINISH" and info.value.chunk_index == len(seed_chunks)
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl(b"[1, 2]\n")
    assert info.value.code == "INVALID_CHUNK" and info.value.chunk_index == 0


def test_jsonl_keeps_unicode_line_separators_inside_strings(seed_chunks: Chunks) -> None:
    seed_chunks[1]["text"] = "run\u2028"
    seed_chunks[3]["block"]["text"] = "run\u2028 教程"
    seed_chunks[2]["text"] = " 教程"
    assert sf.assemble_jsonl(jsonl(seed_chunks).decode()).text == "run\u2028 教程"


def test_read_session(tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    records: list[Any] = [{"type": "session", "version": 0}]
    for step, chunks in enumerate([SEED_CHUNKS, SEED_CHUNKS[:2]], start=1):
        records += [{"type": "assistant/chunk", "data": {"turn": 1, "step": step, "chunk": c}} for c in chunks]
        records.append({"type": "step/end", "data": {}})
    log.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
    first, second = sf.read_session(log)
    assert first.chunks == SEED_CHUNKS and first.finished and first.lines == list(range(2, 11))
    assert (first.number, second.number, second.step) == (0, 1, 2)
    assert second.chunks == SEED_CHUNKS[:2] and not second.finished
    assert sf.assemble(first.chunks).text == "runoob 教程"


def test_read_session_keeps_a_broken_line_in_place(tmp_path: Path) -> None:
    log = tmp_path / "broken.jsonl"
    good = [orjson.dumps({"type": "assistant/chunk", "data": {"chunk": c}}) for c in SEED_CHUNKS]
    log.write_bytes(b"\n".join([*good[:3], b'{"type": "assistant/chunk", "da', *good[3:]]) + b"\n")
    (stream,) = sf.read_session(log)
    with pytest.raises(sf.LlmError) as info:
        sf.assemble(stream.chunks)
    assert info.value.code == "INVALID_CHUNK" and info.value.chunk_index == 3
    assert stream.lines[3] == 4

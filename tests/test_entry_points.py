"""Every entry point gives the same answer, limits hold at the exact chunk, and the hot path takes what it should.

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

import copy
import itertools
from collections import UserDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm._table import accepts

from .builders import (
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
from .conftest import SEED_CHUNKS, SESSIONS

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
    "mappings that are not dicts among the chunks": (
        [MappingProxyType(start(0, "text")), text_delta(0, "a"), UserDict(text_delta(0, "b")), text_delta(0, "c"),
         end_text(0, "abc"), MappingProxyType(start(1, "tool-call")), tool_delta(1, "c", "{", name="f"),
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

    def _saw(self, n: int) -> None:
        if not self.cold or self.cold[-1] != n:
            self.cold.append(n)

    def _route_in_full(self, chunk: object, n: int) -> Any:  # not a dict, or no route: checked whole first
        self._saw(n)
        return super()._route_in_full(chunk, n)

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


def recorded(chunks: list[Any], policy: sf.Policy, limits: sf.Limits, entry: str) -> Recorder:
    asm = Recorder(policy, limits)
    if entry == "feed_lines":
        asm.feed_lines(orjson.dumps(dict(c)) for c in chunks)
    else:
        FEEDS[entry](asm, chunks)
    asm.close()
    return asm


TYPICAL = [
    "seed", "seed under HARNESS", "reasoning, text, two tool calls", "blocks without deltas", "interleaved blocks",
    "cut off by max-tokens", "cut off by an error", "with a replay state", "an image block between text blocks",
    "mappings that are not dicts among the chunks", "HARNESS: empty ids and names",
    "HARNESS: an id two blocks share, raw arguments, tool-calls without a call",
]  # fmt: skip


@pytest.mark.parametrize("entry", [*FEEDS, "feed_lines"])
@pytest.mark.parametrize("name", TYPICAL)
def test_the_hot_path_takes_the_deltas_of_a_typical_stream(name: str, entry: str) -> None:
    """Only block boundaries, usage, finish, a tool call's first delta (and one that first names the tool), a
    delta for an open block other than the hot one (the block started last, or the last a delta went to), and a
    mapping that is not a dict reach the handlers."""
    chunks, policy, limits = STREAMS[name]
    asm = recorded(chunks, policy, limits, entry)
    want = handled([dict(c) for c in chunks] if entry == "feed_lines" else chunks)
    assert asm.cold == want
    assert len(want) < len(chunks) or not any(c["type"] in DELTAS for c in chunks)


@pytest.mark.parametrize("lines_first", [False, True], ids=["literal keys", "after a JSON line"])
@pytest.mark.parametrize("keys", ["orjson", "json"])
def test_the_hot_path_finds_a_field_by_its_value_whatever_object_its_key_is(keys: str, lines_first: bool) -> None:
    """The hot path looks fields up with interned constants, or, once fed JSON lines, with orjson's own key objects
    (a lookup by identity is the cheap one). Keys of another origin (the stdlib's ``json``, orjson's in a machine
    fed dicts) are equal and not identical: the same deltas take the hot path, and the stream is the same."""
    load = orjson.loads if keys == "orjson" else __import__("json").loads
    for name in TYPICAL:
        chunks, policy, limits = STREAMS[name]
        plain = [dict(c) for c in chunks]
        asm = Recorder(policy, limits)
        if lines_first:
            # A blank line: no chunk, no position; the machine now looks up with orjson's key objects.
            assert asm.feed_line(b" ") is None
        for chunk in plain:
            asm.feed(load(orjson.dumps(chunk)))
        assert asm.cold == handled(plain), name
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

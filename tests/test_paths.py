"""The hot and quick paths are optimisations only: with them switched off, every outcome is the same.

The precise path (``StreamAssembler._precise``) checks every rule in order of precedence. The hot path
(deltas for the one open block, in ``feed`` and inlined in ``feed_many``) and the quick path (one method
per chunk type) accept a valid chunk faster and decline at the first doubt. This module replays many
streams — valid, broken and hostile — both ways (``_fast`` off: precise path only) and requires identical
results, codes, positions and messages, and identical notes (what HARNESS accepted that STRICT would not).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

import streamfsm as sf

from .conftest import SEED_CHUNKS, SESSIONS

Outcome = tuple[Any, ...]


def _wire(block: Any) -> dict[str, Any]:
    return block if isinstance(block, dict) else block.to_wire()  # a block kept as it came is a dict


def _notes(asm: sf.StreamAssembler) -> list[tuple[str, int | None, int, str]]:
    return [(str(err.code), err.chunk_index, count, err.message) for err, count in asm.notes]


def outcome(chunks: list[Any], policy: sf.Policy, limits: sf.Limits | None = None, *, fast: bool = True) -> Outcome:
    asm = sf.StreamAssembler(policy, limits)
    asm._fast = fast
    try:
        for chunk in chunks:  # one feed at a time, then all at once below: both entry points
            asm.feed(chunk)
        result = asm.close()
    except sf.LlmError as exc:
        return ("error", str(exc.code), exc.chunk_index, exc.message, _notes(asm))
    return ("ok", result.to_wire(), [_wire(b) for b in result.interrupted], result.replay_state, _notes(asm))


def outcome_many(chunks: list[Any], policy: sf.Policy, limits: sf.Limits | None = None) -> Outcome:
    asm = sf.StreamAssembler(policy, limits)
    try:
        asm.feed_many(chunks)
        result = asm.close()
    except sf.LlmError as exc:
        return ("error", str(exc.code), exc.chunk_index, exc.message, _notes(asm))
    return ("ok", result.to_wire(), [_wire(b) for b in result.interrupted], result.replay_state, _notes(asm))


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


def check_same(streams: list[list[Any]], policy: sf.Policy, **kw: Any) -> None:
    fast = [outcome(s, policy, **kw) for s in streams]
    fast_many = [outcome_many(s, policy, **kw) for s in streams]
    assert fast == fast_many
    slow = [outcome(s, policy, **kw, fast=False) for s in streams]
    for stream, a, b in zip(streams, fast, slow, strict=True):
        assert a == b, stream


@pytest.mark.parametrize("policy", list(sf.Policy))
def test_seed_mutations_agree(policy: sf.Policy) -> None:
    streams = [*mutations(SEED_CHUNKS), *mutations(harness_variant(SEED_CHUNKS))]
    assert len(streams) > 500
    check_same(streams, policy)


@pytest.mark.parametrize("policy", list(sf.Policy))
@pytest.mark.parametrize("name", HARNESS_STREAMS.keys())
def test_harness_allowances_and_their_mutations_agree(policy: sf.Policy, name: str) -> None:
    chunks = HARNESS_STREAMS[name]
    assert outcome(chunks, sf.Policy.HARNESS)[0] == "ok"
    check_same([chunks, *mutations(chunks)], policy)


@pytest.mark.parametrize("policy", list(sf.Policy))
@pytest.mark.parametrize(
    "limits",
    [
        sf.Limits(max_chunks=5),
        sf.Limits(max_blocks=1),
        sf.Limits(max_block_bytes=8),
        sf.Limits(max_block_bytes=24),
    ],
    ids=["chunks", "blocks", "bytes-8", "bytes-24"],
)
def test_limits_agree(policy: sf.Policy, limits: sf.Limits) -> None:
    streams = [SEED_CHUNKS, harness_variant(SEED_CHUNKS), *itertools.islice(mutations(SEED_CHUNKS), 200)]
    streams += [s for chunks in HARNESS_STREAMS.values() for s in itertools.islice(mutations(chunks), 40)]
    check_same(streams, policy, limits=limits)


@pytest.mark.parametrize(
    "piece", ["é", "😀", "a", "\ud800", ""], ids=["2 bytes", "4 bytes", "1 byte", "surrogate", "empty"]
)
@pytest.mark.parametrize("kind", ["text", "tool-call"])
def test_exact_bytes_past_a_quarter_of_the_limit(piece: str, kind: str) -> None:
    """Past a quarter of ``max_block_bytes`` a block's UTF-8 bytes are counted exactly, on the quick path
    too: ``LIMIT_EXCEEDED`` comes at the delta that passes 1,000 bytes, as counted here, on every path."""
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
    for fast in (True, False):
        got = outcome(stream, sf.Policy.STRICT, limits=sf.Limits(max_block_bytes=limit), fast=fast)
        assert got[:3] == ("error", *want), got
    check_same([stream], sf.Policy.STRICT, limits=sf.Limits(max_block_bytes=limit))


@pytest.mark.skipif(not SESSIONS.is_dir(), reason=f"the recordings folder {SESSIONS} is absent")
@pytest.mark.parametrize("policy", list(sf.Policy))
def test_recordings_agree(policy: sf.Policy) -> None:
    streams = [s.chunks for path in sorted(SESSIONS.glob("*.jsonl")) for s in sf.read_session(path)]
    assert len(streams) == 283
    check_same(streams, policy)


def test_switching_off_the_fast_paths_keeps_every_chunk_off_them() -> None:
    """With ``_fast`` off no block ever becomes hot, so neither the hot nor the quick path runs."""
    asm = sf.StreamAssembler()
    asm._fast = False
    for chunk in SEED_CHUNKS:
        asm.feed(chunk)
        assert asm._hot is None
    fast = sf.StreamAssembler()
    fast.feed(SEED_CHUNKS[0])
    assert fast._hot is not None
    assert asm.close() == sf.assemble(SEED_CHUNKS)


def test_exact_bytes_past_a_quarter_of_the_default_limit() -> None:
    """With the default limits (64 MiB) a block switches to exact bytes past 16 MiB units, on every path."""
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
    for fast in (True, False):
        asm = sf.StreamAssembler()
        asm._fast = fast
        asm.feed_many(stream)
        assert asm.close().text == text

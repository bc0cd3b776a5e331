"""The hot and quick paths are optimisations only: with them switched off, every outcome is the same.

The precise path (``StreamAssembler._precise``) checks every rule in order of precedence. The hot path
(deltas for the one open block, in ``feed`` and inlined in ``feed_many``) and the quick path (one method
per chunk type) accept a valid chunk faster and decline at the first doubt. This module replays many
streams — valid, broken and hostile — both ways (``_fast`` off: precise path only) and requires identical
results, codes, positions and messages.
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


def outcome(chunks: list[Any], policy: sf.Policy, limits: sf.Limits | None = None, *, fast: bool = True) -> Outcome:
    asm = sf.StreamAssembler(policy, limits)
    asm._fast = fast
    try:
        for chunk in chunks:  # one feed at a time, then all at once below: both entry points
            asm.feed(chunk)
        result = asm.close()
    except sf.LlmError as exc:
        return ("error", str(exc.code), exc.chunk_index, exc.message)
    return ("ok", result.to_wire(), [b.to_wire() for b in result.interrupted], result.replay_state)


def outcome_many(chunks: list[Any], policy: sf.Policy, limits: sf.Limits | None = None) -> Outcome:
    asm = sf.StreamAssembler(policy, limits)
    try:
        asm.feed_many(chunks)
        result = asm.close()
    except sf.LlmError as exc:
        return ("error", str(exc.code), exc.chunk_index, exc.message)
    return ("ok", result.to_wire(), [b.to_wire() for b in result.interrupted], result.replay_state)


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
    stream = [
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

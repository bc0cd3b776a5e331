"""Assemblers are independent: 10,000 streams at once, in one event loop or over threads, give the
results they give one at a time."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import streamfsm as sf

from ..data import SEED_CHUNKS

STREAMS = 10_000


def variants() -> list[list[Any]]:
    """Valid and broken streams: the seed, and the seed with one chunk dropped, duplicated or broken."""
    out: list[list[Any]] = [copy.deepcopy(SEED_CHUNKS)]
    for i in range(len(SEED_CHUNKS)):
        out.append(SEED_CHUNKS[:i] + SEED_CHUNKS[i + 1 :])
        out.append([*SEED_CHUNKS[: i + 1], SEED_CHUNKS[i], *SEED_CHUNKS[i + 1 :]])
        broken = copy.deepcopy(SEED_CHUNKS)
        broken[i]["type"] = "nonsense"
        out.append(broken)
    return out


VARIANTS = variants()


def stream(k: int) -> list[Any]:
    chunks = copy.deepcopy(VARIANTS[k % len(VARIANTS)])
    for chunk in chunks:  # make every stream's content its own
        if chunk.get("type") == "text-delta":
            chunk["text"] = f"{chunk['text']}-{k}"
        elif chunk.get("type") == "block-end" and chunk["block"].get("type") == "text":
            chunk["block"]["text"] = "".join(f"{c['text']}-{k}" for c in SEED_CHUNKS if c["type"] == "text-delta")
    return chunks


def outcome(run: Any) -> Any:
    try:
        return run().to_wire()
    except sf.LlmError as exc:
        return (str(exc.code), exc.chunk_index)


def one_at_a_time(streams: list[list[Any]]) -> list[Any]:
    return [outcome(lambda s=s: sf.assemble(s)) for s in streams]


@pytest.mark.slow
def test_many_streams_in_one_event_loop() -> None:
    streams = [stream(k) for k in range(STREAMS)]
    expected = one_at_a_time(streams)

    async def upstream(chunks: list[Any]) -> AsyncIterator[Any]:
        for chunk in chunks:
            await asyncio.sleep(0)  # every stream yields to the others between chunks
            yield chunk

    async def one(chunks: list[Any]) -> Any:
        try:
            return (await sf.aassemble(upstream(chunks))).to_wire()
        except sf.LlmError as exc:
            return (str(exc.code), exc.chunk_index)

    async def main() -> list[Any]:
        results = await asyncio.gather(*(one(s) for s in streams))
        assert asyncio.all_tasks() == {asyncio.current_task()}  # nothing left behind
        return list(results)

    assert asyncio.run(main()) == expected
    assert len({str(r) for r in expected}) > len(VARIANTS)  # the streams really differ


def test_many_streams_over_threads() -> None:
    streams = [stream(k) for k in range(STREAMS)]
    expected = one_at_a_time(streams)
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda s: outcome(lambda: sf.assemble(s)), streams, chunksize=64))
    assert got == expected


def test_assemblers_fed_in_turns_do_not_share_state() -> None:
    """Feeding 100 assemblers one chunk each in turn is the same as feeding each alone."""
    streams = [stream(k) for k in range(100)]
    expected = one_at_a_time(streams)
    assemblers = [sf.StreamAssembler() for _ in streams]
    errors: dict[int, Any] = {}
    for position in range(max(len(s) for s in streams)):
        for k, (asm, chunks) in enumerate(zip(assemblers, streams, strict=True)):
            if position < len(chunks) and k not in errors:
                try:
                    asm.feed(chunks[position])
                except sf.LlmError as exc:
                    errors[k] = (str(exc.code), exc.chunk_index)
    got = [errors[k] if k in errors else outcome(asm.close) for k, asm in enumerate(assemblers)]
    assert got == expected

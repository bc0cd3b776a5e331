"""The public API of SPEC §5: entry points, snapshots, JSON lines, session logs, upstream closing."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf

from ..data import SEED_CHUNKS

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

    (Every entry point, timeouts and cancellation: ``test_upstream.py``.)
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

"""The flat chunk stream of seed 001: its five chunk types on the wire, and the validator's rules and codes.

Every case is data: a stream of wire dicts (camelCase, as the seed writes them) and what must come of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import streamfsm as sf
from streamfsm import ErrorCode

E = ErrorCode
Wire = dict[str, Any]


# -- builders ------------------------------------------------------------------------------------


def text(content: str = "Hello") -> Wire:
    """A ``text`` chunk."""
    return {"type": "text", "content": content}


def call(call_id: str, index: int, name: str = "file_edit", arguments: str = '{"path":"src/index.ts"}') -> Wire:
    """A ``tool_call`` chunk."""
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments, "index": index}


def result(result_id: str, call_id: str, value: Any = None, *, is_error: bool = False) -> Wire:
    """A ``tool_result`` chunk."""
    return {"type": "tool_result", "id": result_id, "toolCallId": call_id, "result": value, "isError": is_error}


def error(*, recoverable: bool, retry_after: int | None = None, code: str = "RATE_LIMIT") -> Wire:
    """An ``error`` chunk."""
    chunk: Wire = {
        "type": "error",
        "error": {"message": "Rate limit exceeded", "code": code},
        "recoverable": recoverable,
    }
    if retry_after is not None:
        chunk["retryAfter"] = retry_after
    return chunk


def done(reason: str = "stop", usage: Wire | None = None) -> Wire:
    """A ``done`` chunk."""
    chunk: Wire = {"type": "done", "reason": reason}
    if usage is not None:
        chunk["usage"] = usage
    return chunk


#: The seed's own example: two parallel file reads, then the answer.
SEED = [
    text("2つのファイルを確認します"),
    call("call_1", 0),
    call("call_2", 1),
    result("result_1", "call_1", {"content": "export const name = ..."}),
    result("result_2", "call_2", {"error": True, "message": "Permission denied: /etc/passwd"}, is_error=True),
    text("上記2ファイルの内容..."),
    done("stop", {"promptTokens": 100, "completionTokens": 50, "totalTokens": 150}),
]


# -- the chunk types on the wire ------------------------------------------------------------------

WIRE = [
    pytest.param(sf.TextChunk(content="Hello"), {"type": "text", "content": "Hello"}, id="text"),
    pytest.param(
        sf.ToolCallChunk(id="call_abc123", name="file_edit", arguments='{"action":"read"}', index=0),
        {"type": "tool_call", "id": "call_abc123", "name": "file_edit", "arguments": '{"action":"read"}', "index": 0},
        id="tool_call",
    ),
    pytest.param(
        sf.ToolResultChunk(id="result_xyz789", tool_call_id="call_abc123", result={"content": "x"}, is_error=False),
        {
            "type": "tool_result",
            "id": "result_xyz789",
            "toolCallId": "call_abc123",
            "result": {"content": "x"},
            "isError": False,
        },
        id="tool_result",
    ),
    pytest.param(
        sf.ToolResultChunk(id="r", tool_call_id="c", result={"value": None}),
        {"type": "tool_result", "id": "r", "toolCallId": "c", "result": {"value": None}, "isError": False},
        id="tool_result keeps nulls in the result",
    ),
    pytest.param(
        sf.ToolResultChunk(id="r", tool_call_id="c", result=None),
        {"type": "tool_result", "id": "r", "toolCallId": "c", "result": None, "isError": False},
        id="tool_result whose result is null",
    ),
    pytest.param(
        sf.ErrorChunk(
            error=sf.LlmError("Rate limit exceeded", E.RATE_LIMIT, status=429, retry_after_ms=5000),
            recoverable=True,
            retry_after=5000,
        ),
        {
            "type": "error",
            "error": {"message": "Rate limit exceeded", "code": "RATE_LIMIT", "status": 429, "retryAfterMs": 5000},
            "recoverable": True,
            "retryAfter": 5000,
        },
        id="recoverable error",
    ),
    pytest.param(
        sf.ErrorChunk(error=sf.LlmError("Invalid API key", E.AUTH), recoverable=False),
        {"type": "error", "error": {"message": "Invalid API key", "code": "AUTH"}, "recoverable": False},
        id="non-recoverable error",
    ),
    pytest.param(
        sf.ErrorChunk(error=sf.LlmError("no block", E.BLOCK_NOT_OPEN, chunk_index=4), recoverable=False),
        {
            "type": "error",
            "error": {"message": "no block", "code": "BLOCK_NOT_OPEN", "chunkIndex": 4},
            "recoverable": False,
        },
        id="protocol error keeps its chunk index",
    ),
    pytest.param(sf.DoneChunk(reason="cancel"), {"type": "done", "reason": "cancel"}, id="done without usage"),
    pytest.param(
        sf.DoneChunk(reason="stop", usage=sf.TokenUsage(prompt_tokens=3, completion_tokens=4, total_tokens=7)),
        {"type": "done", "reason": "stop", "usage": {"promptTokens": 3, "completionTokens": 4, "totalTokens": 7}},
        id="done with usage",
    ),
]


@pytest.mark.parametrize(("chunk", "expected"), WIRE)
def test_to_wire_uses_the_seeds_names(chunk: Any, expected: Wire) -> None:
    assert chunk.to_wire() == expected
    assert list(chunk.to_wire()) == list(expected)  # key order as the seed writes them


@pytest.mark.parametrize(("chunk", "expected"), WIRE)
def test_wire_dicts_parse_back(chunk: Any, expected: Wire) -> None:
    parsed = sf.parse_flat(expected)
    assert type(parsed) is type(chunk)
    assert parsed.to_wire() == expected
    assert sf.parse_flat(chunk) is chunk


def test_error_chunk_holds_the_error_itself() -> None:
    err = sf.LlmError("slow down", E.RATE_LIMIT, retry_after_ms=2000, request_id="req-1")
    chunk = sf.ErrorChunk(error=err, recoverable=True, retry_after=2000)
    assert chunk.error is err
    back = sf.parse_flat(chunk.to_wire())
    assert isinstance(back, sf.ErrorChunk)
    assert (back.error.code, back.error.message, back.error.retry_after_ms, back.error.request_id) == (
        E.RATE_LIMIT,
        "slow down",
        2000,
        "req-1",
    )


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (sf.Usage(input_tokens=100, output_tokens=50), (100, 50, 150)),
        (sf.Usage(input_tokens=10, output_tokens=5, cache_read_tokens=90, cache_write_tokens=3), (103, 5, 108)),
        (sf.Usage(input_tokens=10, output_tokens=30, reasoning_tokens=20), (10, 30, 40)),
    ],
)
def test_token_usage_from_the_block_protocols_disjoint_counts(usage: sf.Usage, expected: tuple[int, int, int]) -> None:
    token_usage = sf.TokenUsage.from_usage(usage)
    assert (token_usage.prompt_tokens, token_usage.completion_tokens, token_usage.total_tokens) == expected


def test_token_usage_adds_up() -> None:
    one = sf.TokenUsage(prompt_tokens=1, completion_tokens=2, total_tokens=3)
    assert (one + one).to_wire() == {"promptTokens": 2, "completionTokens": 4, "totalTokens": 6}


def test_extra_keys_are_ignored_as_in_the_block_protocol() -> None:
    assert sf.parse_flat({**text("x"), "extra": 1}).to_wire() == text("x")


@pytest.mark.parametrize(
    ("chunk", "words"),
    [
        pytest.param(["text"], "mapping", id="not a mapping"),
        pytest.param({"type": "delta"}, "unknown flat chunk type", id="unknown type"),
        pytest.param({"content": "x"}, "unknown flat chunk type", id="no type"),
        pytest.param({"type": "text"}, "content", id="missing content"),
        pytest.param({"type": "text", "content": 5}, "content", id="content not a string"),
        pytest.param({**call("c", 0), "index": True}, "index", id="index is a bool"),
        pytest.param({**call("c", 0), "index": "0"}, "index", id="index is a string"),
        pytest.param({**call("c", 0), "index": -1}, "index", id="negative index"),
        pytest.param({**call("c", 0), "id": ""}, "id", id="empty id"),
        pytest.param({**result("r", "c"), "isError": "false"}, "isError", id="isError not a bool"),
        pytest.param({**error(recoverable=True), "retryAfter": 1.5}, "retryAfter", id="retryAfter not an int"),
        pytest.param({**error(recoverable=True), "error": {"message": "x"}}, "code", id="error without code"),
        pytest.param({**error(recoverable=True), "error": "boom"}, "error", id="error not an object"),
        pytest.param(done("finished"), "reason", id="unknown done reason"),
        pytest.param(done("stop", {"promptTokens": 1}), "usage", id="usage missing counts"),
    ],
)
def test_malformed_chunks_are_invalid_chunk(chunk: object, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        sf.FlatValidator().feed(chunk)
    assert caught.value.code is E.INVALID_CHUNK
    assert caught.value.chunk_index == 0
    assert words in caught.value.message


# -- streams the validator accepts ---------------------------------------------------------------

VALID = [
    pytest.param(SEED, id="the seed's two file reads"),
    pytest.param([text("Hello"), text(", "), text("world"), text("!"), done()], id="text in pieces"),
    pytest.param([done("stop")], id="done alone"),
    pytest.param(
        [text("partial"), call("call_1", 0), error(recoverable=True, retry_after=1000), call("call_1", 0), done()],
        id="a retry voids the attempt: indexes and ids start again",
    ),
    pytest.param(
        [call("c1", 0), result("r1", "c1"), call("c1", 0), result("r2", "c1"), done()],
        id="an answered id may come back in a later turn",
    ),
    pytest.param(
        [call("c1", 0), call("c2", 1), result("r2", "c2"), result("r1", "c1"), text("ok"), call("c3", 0), done()],
        id="results in completion order; the next turn counts from 0",
    ),
    pytest.param([text("x"), error(recoverable=False, code="AUTH"), done("error")], id="fatal error then done(error)"),
    pytest.param([error(recoverable=True, retry_after=2000), done("cancel")], id="cancelled while waiting to retry"),
    pytest.param([call("c1", 0), done("tool_use")], id="a call left unanswered"),
]


@pytest.mark.parametrize("stream", VALID)
def test_valid_streams_pass_through(stream: list[Wire]) -> None:
    out = list(sf.validate_flat(stream))
    assert [chunk.to_wire() for chunk in out] == stream


@pytest.mark.parametrize("stream", VALID)
def test_objects_validate_as_their_wire_dicts_do(stream: list[Wire]) -> None:
    objects = [sf.parse_flat(chunk) for chunk in stream]
    assert list(sf.validate_flat(objects)) == objects


# -- streams it rejects: code and position --------------------------------------------------------

INVALID = [
    pytest.param([done(), text()], E.CHUNK_AFTER_DONE, 1, id="text after done"),
    pytest.param([done(), done()], E.CHUNK_AFTER_DONE, 1, id="two dones"),
    pytest.param([done(), {"type": "bogus"}], E.CHUNK_AFTER_DONE, 1, id="after done beats invalid"),
    pytest.param([text(), {"type": "bogus"}], E.INVALID_CHUNK, 1, id="unknown type"),
    pytest.param([error(recoverable=False), text()], E.CHUNK_AFTER_ERROR, 1, id="text after a fatal error"),
    pytest.param(
        [call("c1", 0), error(recoverable=False), result("r1", "c1")],
        E.CHUNK_AFTER_ERROR,
        2,
        id="result after a fatal error",
    ),
    pytest.param(
        [error(recoverable=False), error(recoverable=True)], E.CHUNK_AFTER_ERROR, 1, id="error after a fatal error"
    ),
    pytest.param([error(recoverable=False), done("stop")], E.DONE_REASON_MISMATCH, 1, id="fatal error then done(stop)"),
    pytest.param(
        [error(recoverable=False), done("cancel")], E.DONE_REASON_MISMATCH, 1, id="fatal error then done(cancel)"
    ),
    pytest.param([error(recoverable=False), {"type": "done"}], E.INVALID_CHUNK, 1, id="shape before the fatal rule"),
    pytest.param([call("c1", 1)], E.INDEX_OUT_OF_ORDER, 0, id="first call has index 1"),
    pytest.param([call("c1", 0), call("c2", 0)], E.INDEX_OUT_OF_ORDER, 1, id="index repeated"),
    pytest.param([call("c1", 0), call("c2", 2)], E.INDEX_OUT_OF_ORDER, 1, id="index skipped"),
    pytest.param(
        [call("c1", 0), result("r1", "c1"), call("c2", 1)], E.INDEX_OUT_OF_ORDER, 2, id="a new turn counts from 0"
    ),
    pytest.param(
        [call("c1", 0), error(recoverable=True), call("c2", 1)],
        E.INDEX_OUT_OF_ORDER,
        2,
        id="a retried turn counts from 0",
    ),
    pytest.param([call("c1", 0), call("c1", 1)], E.TOOL_CALL_CONFLICT, 1, id="one id twice in a turn"),
    pytest.param(
        [call("c1", 0), call("c2", 1), result("r2", "c2"), call("c1", 0)],
        E.TOOL_CALL_CONFLICT,
        3,
        id="id reused while unanswered",
    ),
    pytest.param([call("c1", 1), call("c1", 1)], E.INDEX_OUT_OF_ORDER, 0, id="index before conflict"),
    pytest.param([call("c1", 0, arguments="{")], E.TOOL_ARGUMENTS_INVALID, 0, id="arguments not JSON"),
    pytest.param([call("c1", 0, arguments="[1]")], E.TOOL_ARGUMENTS_INVALID, 0, id="arguments not an object"),
    pytest.param([call("c1", 0, arguments='{"x": NaN}')], E.TOOL_ARGUMENTS_INVALID, 0, id="NaN is not JSON"),
    pytest.param([result("r1", "c1")], E.TOOL_RESULT_UNMATCHED, 0, id="result for no call"),
    pytest.param([call("c1", 0), result("r1", "c2")], E.TOOL_RESULT_UNMATCHED, 1, id="result for another id"),
    pytest.param(
        [call("c1", 0), error(recoverable=True), result("r1", "c1")],
        E.TOOL_RESULT_UNMATCHED,
        2,
        id="result for a voided call",
    ),
    pytest.param(
        [call("c1", 0), result("r1", "c1"), result("r2", "c1")], E.TOOL_RESULT_DUPLICATE, 2, id="call answered twice"
    ),
    pytest.param(
        [call("c1", 0), call("c2", 1), result("r1", "c1"), result("r1", "c2")],
        E.TOOL_RESULT_DUPLICATE,
        3,
        id="result id used twice",
    ),
    pytest.param([text()], E.STREAM_TRUNCATED, 1, id="no done"),
    pytest.param([], E.STREAM_TRUNCATED, 0, id="empty"),
    pytest.param([call("c1", 0), error(recoverable=False)], E.STREAM_TRUNCATED, 2, id="fatal error without done"),
]


@pytest.mark.parametrize(("stream", "code", "position"), INVALID)
def test_broken_rule_is_rejected(stream: list[Wire], code: ErrorCode, position: int) -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(sf.validate_flat(stream))
    assert caught.value.code is code
    assert caught.value.chunk_index == position
    assert caught.value.message


@pytest.mark.parametrize(("stream", "code", "position"), INVALID)
def test_a_failed_validator_stays_failed(stream: list[Wire], code: ErrorCode, position: int) -> None:
    validator = sf.FlatValidator()
    with pytest.raises(sf.LlmError):
        for chunk in stream:
            validator.feed(chunk)
        validator.close()
    with pytest.raises(sf.LlmError) as caught:
        validator.feed(done())
    assert (caught.value.code, caught.value.chunk_index) == (code, position)
    with pytest.raises(sf.LlmError) as caught:
        validator.close()
    assert (caught.value.code, caught.value.chunk_index) == (code, position)


def test_validator_state() -> None:
    validator = sf.FlatValidator()
    for chunk in [call("c1", 0), call("c2", 1), result("r1", "c1")]:
        validator.feed(chunk)
    assert validator.unanswered == ["c2"]
    assert validator.chunk_count == 3 and validator.done is None
    assert validator.feed(done("tool_use")) is validator.close()


# -- async ----------------------------------------------------------------------------------------


def test_avalidate_flat_closes_the_upstream_on_error() -> None:
    closed = []

    async def upstream() -> AsyncIterator[Wire]:
        try:
            yield text()
            yield result("r1", "nobody")
            yield done()
        finally:
            closed.append(True)

    async def main() -> list[Any]:
        seen = []
        with pytest.raises(sf.LlmError) as caught:
            async for chunk in sf.avalidate_flat(upstream()):
                seen.append(chunk)
        assert caught.value.code is E.TOOL_RESULT_UNMATCHED
        return seen

    assert [c.type for c in asyncio.run(main())] == ["text"]
    assert closed == [True]


def test_avalidate_flat_needs_done() -> None:
    async def upstream() -> AsyncIterator[Wire]:
        yield text()

    async def main() -> None:
        with pytest.raises(sf.LlmError) as caught:
            async for _ in sf.avalidate_flat(upstream()):
                pass
        assert caught.value.code is E.STREAM_TRUNCATED

    asyncio.run(main())

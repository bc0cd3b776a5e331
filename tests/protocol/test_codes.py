"""SPEC §3: every protocol code, at its exact ``chunk_index``, and every step of their precedence.

Each case is a stream whose *last* chunk is the first one rejected (for ``STREAM_TRUNCATED``: the end
of input), with the code and position the contract demands. Precedence cases build one chunk that
breaks two or more rules at once; the earlier check in SPEC §3's order decides the code. What STRICT
refuses and HARNESS accepts (SPEC §4) is noted under HARNESS with the code and position STRICT gives
(:data:`NOTED`).
"""

from __future__ import annotations

import asyncio
import copy
import enum
import math
import pickle
from collections.abc import AsyncIterator
from types import MappingProxyType
from typing import Any

import pytest

import streamfsm as sf
from streamfsm import ErrorCode, LlmError, Policy

from ..builders import (
    BOTH,
    FAILURE,
    HARNESS,
    STOP,
    STRICT,
    TEXT,
    Chunk,
    E,
    U,
    end_block,
    end_image,
    end_reasoning,
    end_text,
    end_tool,
    finish,
    notes_of,
    reasoning_delta,
    reject,
    start,
    text_delta,
    tool_block,
    tool_delta,
    usage,
)
from ..data import SEED_CHUNKS

# -- running a stream ---------------------------------------------------------------------------


def expand(cases: list[tuple[Any, ...]]) -> list[Any]:
    """(id, policies, code, chunk_index, chunks) -> one pytest.param per policy."""
    params = []
    for case_id, policies, code, index, chunks in cases:
        for policy in policies:
            params.append(pytest.param(policy, code, index, chunks, id=f"{code}: {case_id} [{policy}]"))
    return params


# -- ErrorCode and LlmError ---------------------------------------------------------------------

PROTOCOL_CODES = [
    "CHUNK_AFTER_FINISH",
    "INVALID_CHUNK",
    "BLOCKS_INTERLEAVED",
    "CHUNK_AFTER_USAGE",
    "INDEX_OUT_OF_ORDER",
    "BLOCK_NOT_OPEN",
    "BLOCK_TYPE_MISMATCH",
    "TOOL_CALL_CONFLICT",
    "BLOCK_CONTENT_MISMATCH",
    "TOOL_ARGUMENTS_INVALID",
    "USAGE_DUPLICATE",
    "BLOCK_NOT_CLOSED",
    "USAGE_MISSING",
    "FINISH_REASON_MISMATCH",
    "STREAM_TRUNCATED",
    "LIMIT_EXCEEDED",
]
ADAPTER_CODES = [
    "PROVIDER_HTTP_ERROR",
    "AUTH",
    "RATE_LIMIT",
    "SERVER",
    "INVALID_REQUEST",
    "CONTEXT_WINDOW_EXCEEDED",
    "QUOTA",
    "TIMEOUT",
    "TRANSPORT",
    "STREAM_CLOSED",
    "ABORTED",
    "EMPTY_RESPONSE",
    "MALFORMED_RESPONSE",
    "UNSUPPORTED_OPTION",
    "UNSUPPORTED_REASONING_EFFORT",
    "INVALID_MODEL_REASONING",
    "UNKNOWN",
    "BUDGET_EXCEEDED",
]
#: The agent loop's flat stream (seed 001; tests/agent/test_flat_stream.py).
FLAT_CODES = [
    "CHUNK_AFTER_DONE",
    "CHUNK_AFTER_ERROR",
    "DONE_REASON_MISMATCH",
    "TOOL_RESULT_UNMATCHED",
    "TOOL_RESULT_DUPLICATE",
]


def test_error_code_is_a_str_enum_of_every_code() -> None:
    assert issubclass(ErrorCode, enum.StrEnum)
    assert {c.value for c in ErrorCode} == {*PROTOCOL_CODES, *FLAT_CODES, *ADAPTER_CODES}
    for name in (*PROTOCOL_CODES, *FLAT_CODES, *ADAPTER_CODES):
        member = ErrorCode[name]
        assert member == name
        assert isinstance(member, str)
        assert str(member) == name
        assert ErrorCode(name) is member
    assert sf.ErrorCode.BLOCK_NOT_CLOSED == "BLOCK_NOT_CLOSED"


def test_llm_error_attributes_of_a_protocol_error() -> None:
    err = reject([start(0, "text"), STOP])
    assert isinstance(err, Exception)
    assert err.code == "BLOCK_NOT_CLOSED"
    assert err.code is ErrorCode.BLOCK_NOT_CLOSED
    assert err.chunk_index == 1
    assert isinstance(err.message, str) and err.message
    assert (err.status, err.retry_after_ms, err.request_id) == (None, None, None)
    assert err.failure.code == "BLOCK_NOT_CLOSED"
    assert err.failure.message


def test_llm_error_attributes_of_an_adapter_error() -> None:
    err = LlmError("slow down", "RATE_LIMIT", status=429, retry_after_ms=1500, request_id="req-9")
    assert (err.code, err.message) == ("RATE_LIMIT", "slow down")
    assert (err.status, err.retry_after_ms, err.request_id) == (429, 1500, "req-9")
    assert err.chunk_index is None
    failure = err.failure
    assert (failure.message, failure.code, failure.status, failure.request_id) == (
        "slow down",
        "RATE_LIMIT",
        429,
        "req-9",
    )
    assert failure.provider_retry_after_ms == 1500


def test_llm_error_survives_pickling() -> None:
    err = reject([start(0, "text"), text_delta(1, "x")])
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.code, copy.message, copy.chunk_index) == (err.code, err.message, err.chunk_index)


# -- every protocol code at its exact chunk_index -------------------------------------------------

CODES = expand(
    [
        # CHUNK_AFTER_FINISH: anything after finish
        ("a second finish", BOTH, E.CHUNK_AFTER_FINISH, 2, [U, STOP, STOP]),
        ("usage after finish", BOTH, E.CHUNK_AFTER_FINISH, 1, [finish("error", FAILURE), U]),
        ("block-start after finish", BOTH, E.CHUNK_AFTER_FINISH, 5, [*TEXT, U, STOP, start(1, "text")]),
        ("delta after finish", BOTH, E.CHUNK_AFTER_FINISH, 2, [U, finish("max-tokens"), text_delta(0, "x")]),
        ("block-end after finish", BOTH, E.CHUNK_AFTER_FINISH, 5, [*TEXT, U, STOP, end_text(0, "hi")]),
        ("after the seed", BOTH, E.CHUNK_AFTER_FINISH, 9, [*SEED_CHUNKS, STOP]),
        # INVALID_CHUNK (the full table is below)
        ("not a mapping", BOTH, E.INVALID_CHUNK, 0, [None]),
        (
            "missing field inside a block",
            BOTH,
            E.INVALID_CHUNK,
            1,
            [start(0, "text"), {"type": "text-delta", "index": 0}],
        ),
        ("unknown type after usage", BOTH, E.INVALID_CHUNK, 1, [U, {"type": "ping"}]),
        ("strict: unknown block type", (STRICT,), E.INVALID_CHUNK, 0, [start(0, "video")]),
        (
            "strict: unknown block type on block-end",
            (STRICT,),
            E.INVALID_CHUNK,
            1,
            [start(0, "text"), end_block(0, {"type": "video"})],
        ),
        ("strict: unknown finish kind", (STRICT,), E.INVALID_CHUNK, 1, [U, finish("paused")]),
        (
            "image attachment not an object",
            BOTH,
            E.INVALID_CHUNK,
            1,
            [start(0, "image"), end_block(0, {"type": "image", "attachment": ["a"]})],
        ),
        (
            "image attachment missing",
            BOTH,
            E.INVALID_CHUNK,
            1,
            [start(0, "image"), end_block(0, {"type": "image", "url": "x"})],
        ),
        (
            "harness: an unknown block that is not JSON data",
            (HARNESS,),
            E.INVALID_CHUNK,
            1,
            [start(0, "video"), end_block(0, {"type": "video", "frames": [1, math.nan]})],
        ),
        (
            "harness: an unknown finish that is not JSON data",
            (HARNESS,),
            E.INVALID_CHUNK,
            0,
            [{"type": "finish", "reason": {"kind": "paused", "until": math.inf}}],
        ),
        # BLOCKS_INTERLEAVED (STRICT only)
        ("start while a block is open", (STRICT,), E.BLOCKS_INTERLEAVED, 1, [start(0, "text"), start(1, "reasoning")]),
        (
            "start after a delta",
            (STRICT,),
            E.BLOCKS_INTERLEAVED,
            5,
            [*TEXT, start(1, "reasoning"), reasoning_delta(1, "r"), start(2, "tool-call")],
        ),
        # CHUNK_AFTER_USAGE
        ("block-start after usage", BOTH, E.CHUNK_AFTER_USAGE, 4, [*TEXT, U, start(1, "text")]),
        ("block-start right after usage", BOTH, E.CHUNK_AFTER_USAGE, 1, [U, start(0, "text")]),
        (
            "text-delta after usage",
            BOTH,
            E.CHUNK_AFTER_USAGE,
            3,
            [start(0, "text"), text_delta(0, "a"), U, text_delta(0, "b")],
        ),
        (
            "reasoning-delta after usage",
            BOTH,
            E.CHUNK_AFTER_USAGE,
            2,
            [start(0, "reasoning"), U, reasoning_delta(0, "b")],
        ),
        (
            "tool-call-delta after usage",
            BOTH,
            E.CHUNK_AFTER_USAGE,
            3,
            [start(0, "tool-call"), tool_delta(0, "c", "{", name="f"), U, tool_delta(0, "c", "}")],
        ),
        (
            "block-end after usage",
            BOTH,
            E.CHUNK_AFTER_USAGE,
            3,
            [start(0, "text"), text_delta(0, "a"), U, end_text(0, "a")],
        ),
        # INDEX_OUT_OF_ORDER
        ("first block with index 1", BOTH, E.INDEX_OUT_OF_ORDER, 0, [start(1, "text")]),
        ("index 0 again", BOTH, E.INDEX_OUT_OF_ORDER, 3, [*TEXT, start(0, "text")]),
        ("index 1 skipped", BOTH, E.INDEX_OUT_OF_ORDER, 3, [*TEXT, start(2, "text")]),
        ("index 2^53-1", BOTH, E.INDEX_OUT_OF_ORDER, 0, [start(2**53 - 1, "text")]),
        (
            "harness: a repeated index while open",
            (HARNESS,),
            E.INDEX_OUT_OF_ORDER,
            1,
            [start(0, "text"), start(0, "text")],
        ),
        # BLOCK_NOT_OPEN
        ("delta with no block", BOTH, E.BLOCK_NOT_OPEN, 0, [text_delta(0, "x")]),
        ("reasoning-delta with no block", BOTH, E.BLOCK_NOT_OPEN, 0, [reasoning_delta(0, "x")]),
        ("tool-call-delta with no block", BOTH, E.BLOCK_NOT_OPEN, 0, [tool_delta(0, "c", "{}")]),
        ("block-end with no block", BOTH, E.BLOCK_NOT_OPEN, 0, [end_text(0, "")]),
        ("delta for a closed block", BOTH, E.BLOCK_NOT_OPEN, 3, [*TEXT, text_delta(0, "more")]),
        ("block-end for a closed block", BOTH, E.BLOCK_NOT_OPEN, 3, [*TEXT, end_text(0, "hi")]),
        (
            "delta for another index",
            BOTH,
            E.BLOCK_NOT_OPEN,
            2,
            [start(0, "text"), text_delta(0, "a"), text_delta(1, "b")],
        ),
        ("block-end for another index", BOTH, E.BLOCK_NOT_OPEN, 1, [start(0, "text"), end_text(1, "")]),
        ("delta for a block not started yet", BOTH, E.BLOCK_NOT_OPEN, 3, [*TEXT, text_delta(1, "b")]),
        # BLOCK_TYPE_MISMATCH
        (
            "reasoning-delta for a text block",
            BOTH,
            E.BLOCK_TYPE_MISMATCH,
            2,
            [start(0, "text"), text_delta(0, "a"), reasoning_delta(0, "b")],
        ),
        (
            "tool-call-delta for a text block",
            BOTH,
            E.BLOCK_TYPE_MISMATCH,
            1,
            [start(0, "text"), tool_delta(0, "c", "{}")],
        ),
        (
            "text-delta for a reasoning block",
            BOTH,
            E.BLOCK_TYPE_MISMATCH,
            1,
            [start(0, "reasoning"), text_delta(0, "a")],
        ),
        (
            "text-delta for a tool call",
            BOTH,
            E.BLOCK_TYPE_MISMATCH,
            2,
            [start(0, "tool-call"), tool_delta(0, "c", "{"), text_delta(0, "}")],
        ),
        ("reasoning end for a text block", BOTH, E.BLOCK_TYPE_MISMATCH, 1, [start(0, "text"), end_reasoning(0, "")]),
        (
            "tool-call end for a reasoning block",
            BOTH,
            E.BLOCK_TYPE_MISMATCH,
            1,
            [start(0, "reasoning"), end_tool(0, "c", "f", "{}")],
        ),
        (
            "text end for a tool call",
            BOTH,
            E.BLOCK_TYPE_MISMATCH,
            2,
            [start(0, "tool-call"), tool_delta(0, "c", "{}"), end_text(0, "{}")],
        ),
        ("text-delta for an image block", BOTH, E.BLOCK_TYPE_MISMATCH, 1, [start(0, "image"), text_delta(0, "x")]),
        (
            "tool-call-delta for an image block",
            BOTH,
            E.BLOCK_TYPE_MISMATCH,
            1,
            [start(0, "image"), tool_delta(0, "c", "")],
        ),
        ("image end for a text block", BOTH, E.BLOCK_TYPE_MISMATCH, 2, [*TEXT[:2], end_image(0, {})]),
        ("text end for an image block", BOTH, E.BLOCK_TYPE_MISMATCH, 1, [start(0, "image"), end_text(0, "")]),
        (
            "harness: a delta for a block of an unknown type",
            (HARNESS,),
            E.BLOCK_TYPE_MISMATCH,
            1,
            [start(0, "video"), reasoning_delta(0, "x")],
        ),
        (
            "harness: a block-end of another unknown type",
            (HARNESS,),
            E.BLOCK_TYPE_MISMATCH,
            1,
            [start(0, "video"), end_block(0, {"type": "audio"})],
        ),
        (
            "harness: an unknown block-end for a text block",
            (HARNESS,),
            E.BLOCK_TYPE_MISMATCH,
            2,
            [*TEXT[:2], end_block(0, {"type": "video", "text": "hi"})],
        ),
        (
            "harness: an image end for a block of an unknown type",
            (HARNESS,),
            E.BLOCK_TYPE_MISMATCH,
            1,
            [start(0, "video"), end_image(0, {})],
        ),
        # TOOL_CALL_CONFLICT
        (
            "first delta reuses a finished block's id",
            (STRICT,),
            E.TOOL_CALL_CONFLICT,
            4,
            [*tool_block(0, "c1"), start(1, "tool-call"), tool_delta(1, "c1", "{}")],
        ),
        (
            "first delta reuses a no-delta block's id",
            (STRICT,),
            E.TOOL_CALL_CONFLICT,
            3,
            [start(0, "tool-call"), end_tool(0, "c1", "f", "{}"), start(1, "tool-call"), tool_delta(1, "c1", "{}")],
        ),
        (
            "later delta with another id",
            BOTH,
            E.TOOL_CALL_CONFLICT,
            3,
            [start(0, "tool-call"), tool_delta(0, "c1", "{"), tool_delta(0, "c1", ""), tool_delta(0, "c2", "}")],
        ),
        (
            "later delta with another name",
            BOTH,
            E.TOOL_CALL_CONFLICT,
            2,
            [start(0, "tool-call"), tool_delta(0, "c1", "{", name="a"), tool_delta(0, "c1", "}", name="b")],
        ),
        (
            "name first on a later delta, then another",
            BOTH,
            E.TOOL_CALL_CONFLICT,
            3,
            [
                start(0, "tool-call"),
                tool_delta(0, "c1", "{"),
                tool_delta(0, "c1", "", name="a"),
                tool_delta(0, "c1", "}", name="b"),
            ],
        ),
        (
            "no-delta block-end reuses an id",
            (STRICT,),
            E.TOOL_CALL_CONFLICT,
            4,
            [*tool_block(0, "c1"), start(1, "tool-call"), end_tool(1, "c1", "f", "{}")],
        ),
        (
            "no-delta block-end reuses a no-delta block's id",
            (STRICT,),
            E.TOOL_CALL_CONFLICT,
            3,
            [start(0, "tool-call"), end_tool(0, "c1", "f", "{}"), start(1, "tool-call"), end_tool(1, "c1", "g", "{}")],
        ),
        (
            "harness: two open blocks share an id, then a delta changes it",
            (HARNESS,),
            E.TOOL_CALL_CONFLICT,
            4,
            [
                start(0, "tool-call"),
                tool_delta(0, "c1", "{"),
                start(1, "tool-call"),
                tool_delta(1, "c1", "{"),
                tool_delta(1, "c2", "}"),
            ],
        ),
        (
            "harness: an empty id, then another",
            (HARNESS,),
            E.TOOL_CALL_CONFLICT,
            2,
            [start(0, "tool-call"), tool_delta(0, "", "{"), tool_delta(0, "c1", "}")],
        ),
        (
            "harness: an empty name, then another",
            (HARNESS,),
            E.TOOL_CALL_CONFLICT,
            2,
            [start(0, "tool-call"), tool_delta(0, "c1", "{", name=""), tool_delta(0, "c1", "}", name="f")],
        ),
        # BLOCK_CONTENT_MISMATCH
        (
            "text differs",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            3,
            [start(0, "text"), text_delta(0, "a"), text_delta(0, "b"), end_text(0, "ab ")],
        ),
        (
            "reasoning differs",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            2,
            [start(0, "reasoning"), reasoning_delta(0, "a"), end_reasoning(0, "b")],
        ),
        (
            "text after an empty delta",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            2,
            [start(0, "text"), text_delta(0, ""), end_text(0, "x")],
        ),
        (
            "tool id differs",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            2,
            [start(0, "tool-call"), tool_delta(0, "c1", "{}"), end_tool(0, "c2", "f", "{}")],
        ),
        (
            "tool name differs from a delta's",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            2,
            [start(0, "tool-call"), tool_delta(0, "c1", "{}", name="f"), end_tool(0, "c1", "g", "{}")],
        ),
        (
            "tool arguments differ",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            3,
            [start(0, "tool-call"), tool_delta(0, "c1", "{"), tool_delta(0, "c1", "}"), end_tool(0, "c1", "f", "{ }")],
        ),
        (
            "tool arguments after an empty delta",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            2,
            [start(0, "tool-call"), tool_delta(0, "c1", ""), end_tool(0, "c1", "f", "{}")],
        ),
        (
            "harness: empty-id deltas, a block-end with an id",
            (HARNESS,),
            E.BLOCK_CONTENT_MISMATCH,
            2,
            [start(0, "tool-call"), tool_delta(0, "", "{}"), end_tool(0, "c1", "f", "{}")],
        ),
        (
            "harness: raw arguments that differ from the deltas",
            (HARNESS,),
            E.BLOCK_CONTENT_MISMATCH,
            2,
            [start(0, "tool-call"), tool_delta(0, "c1", "not json"), end_tool(0, "c1", "f", "not JSON")],
        ),
        # TOOL_ARGUMENTS_INVALID
        (
            "deltas assemble an array",
            (STRICT,),
            E.TOOL_ARGUMENTS_INVALID,
            3,
            [start(0, "tool-call"), tool_delta(0, "c", "["), tool_delta(0, "c", "]"), end_tool(0, "c", "f", "[]")],
        ),
        (
            "no-delta block with NaN",
            (STRICT,),
            E.TOOL_ARGUMENTS_INVALID,
            1,
            [start(0, "tool-call"), end_tool(0, "c", "f", '{"x": NaN}')],
        ),
        (
            "cut-off JSON",
            (STRICT,),
            E.TOOL_ARGUMENTS_INVALID,
            2,
            [start(0, "tool-call"), tool_delta(0, "c", '{"a":'), end_tool(0, "c", "f", '{"a":')],
        ),
        (
            "empty arguments",
            (STRICT,),
            E.TOOL_ARGUMENTS_INVALID,
            2,
            [start(0, "tool-call"), tool_delta(0, "c", ""), end_tool(0, "c", "f", "")],
        ),
        (
            "second tool call",
            (STRICT,),
            E.TOOL_ARGUMENTS_INVALID,
            4,
            [*tool_block(0, "c1"), start(1, "tool-call"), end_tool(1, "c2", "f", "null")],
        ),
        # USAGE_DUPLICATE
        ("two usages", BOTH, E.USAGE_DUPLICATE, 1, [U, U]),
        ("two usages after a block", BOTH, E.USAGE_DUPLICATE, 4, [*TEXT, U, usage(1, 1)]),
        ("two usages while a block is open", BOTH, E.USAGE_DUPLICATE, 3, [start(0, "text"), text_delta(0, "a"), U, U]),
        # BLOCK_NOT_CLOSED
        ("stop with an open block", BOTH, E.BLOCK_NOT_CLOSED, 3, [start(0, "text"), text_delta(0, "a"), U, STOP]),
        ("stop right after block-start", BOTH, E.BLOCK_NOT_CLOSED, 2, [start(0, "text"), U, STOP]),
        (
            "tool-calls with an open tool call",
            BOTH,
            E.BLOCK_NOT_CLOSED,
            5,
            [*tool_block(0, "c1"), start(1, "tool-call"), U, finish("tool-calls")],
        ),
        (
            "harness: stop with two open blocks",
            (HARNESS,),
            E.BLOCK_NOT_CLOSED,
            3,
            [start(0, "reasoning"), start(1, "tool-call"), U, STOP],
        ),
        ("stop with an image block open", BOTH, E.BLOCK_NOT_CLOSED, 2, [start(0, "image"), U, STOP]),
        (
            "harness: an unknown finish kind with a block open",
            (HARNESS,),
            E.BLOCK_NOT_CLOSED,
            2,
            [*TEXT[:2], finish("paused")],
        ),
        (
            "harness: an unknown finish kind with a block of an unknown type open",
            (HARNESS,),
            E.BLOCK_NOT_CLOSED,
            2,
            [start(0, "video"), U, finish("paused")],
        ),
        # USAGE_MISSING (STRICT only)
        ("stop without usage", (STRICT,), E.USAGE_MISSING, 0, [STOP]),
        ("stop after a block, without usage", (STRICT,), E.USAGE_MISSING, 3, [*TEXT, STOP]),
        ("tool-calls without usage", (STRICT,), E.USAGE_MISSING, 3, [*tool_block(0, "c"), finish("tool-calls")]),
        ("max-tokens without usage", (STRICT,), E.USAGE_MISSING, 0, [finish("max-tokens")]),
        (
            "max-tokens with an open block, without usage",
            (STRICT,),
            E.USAGE_MISSING,
            2,
            [start(0, "text"), text_delta(0, "a"), finish("max-tokens")],
        ),
        # FINISH_REASON_MISMATCH
        ("tool-calls with no block", (STRICT,), E.FINISH_REASON_MISMATCH, 1, [U, finish("tool-calls")]),
        (
            "tool-calls with a text block only",
            (STRICT,),
            E.FINISH_REASON_MISMATCH,
            4,
            [*TEXT, U, finish("tool-calls")],
        ),
        # STREAM_TRUNCATED: chunk_index is the number of chunks received
        ("no chunks", BOTH, E.STREAM_TRUNCATED, 0, []),
        ("the seed without finish", BOTH, E.STREAM_TRUNCATED, 8, SEED_CHUNKS[:-1]),
        ("inside a block", BOTH, E.STREAM_TRUNCATED, 2, [start(0, "text"), text_delta(0, "a")]),
        ("after usage", BOTH, E.STREAM_TRUNCATED, 4, [*TEXT, U]),
        ("harness: two blocks open", (HARNESS,), E.STREAM_TRUNCATED, 2, [start(0, "text"), start(1, "text")]),
        ("an image block open", BOTH, E.STREAM_TRUNCATED, 1, [start(0, "image")]),
        ("harness: a block of an unknown type open", (HARNESS,), E.STREAM_TRUNCATED, 1, [start(0, "video")]),
    ]
)


@pytest.mark.parametrize(("policy", "code", "index", "chunks"), CODES)
def test_code_and_chunk_index(policy: Policy, code: ErrorCode, index: int, chunks: list[Chunk]) -> None:
    err = reject(chunks, policy)
    assert (err.code, err.chunk_index) == (code, index), str(err)
    assert isinstance(err.code, ErrorCode)


@pytest.mark.parametrize(("policy", "code", "index", "chunks"), CODES)
def test_every_later_call_raises_the_same_code(
    policy: Policy, code: ErrorCode, index: int, chunks: list[Chunk]
) -> None:
    asm = sf.StreamAssembler(policy=policy)
    with pytest.raises(LlmError):
        for chunk in chunks:
            asm.feed(chunk)
        asm.close()
    for later in (U, STOP, start(0, "text"), text_delta(0, "x"), None, {"type": "nonsense"}):
        with pytest.raises(LlmError) as info:
            asm.feed(later)  # type: ignore[arg-type]
        assert info.value.code == code
    for _ in range(2):
        with pytest.raises(LlmError) as info:
            asm.close()
        assert info.value.code == code


def test_truncated_through_every_entry_point() -> None:
    chunks = SEED_CHUNKS[:-1]

    async def agen() -> AsyncIterator[Chunk]:
        for chunk in chunks:
            yield chunk

    calls = (
        lambda: sf.assemble(chunks),
        lambda: list(sf.validate(chunks)),
        lambda: asyncio.run(sf.aassemble(agen())),
    )
    for call in calls:
        with pytest.raises(LlmError) as info:
            call()
        assert (info.value.code, info.value.chunk_index) == (E.STREAM_TRUNCATED, 8)


def test_validate_yields_every_chunk_before_the_rejected_one() -> None:
    chunks = [*TEXT, U, start(1, "text"), STOP]
    seen = []
    with pytest.raises(LlmError) as info:
        for chunk in sf.validate(chunks):
            seen.append(chunk)
    assert seen == chunks[:4]
    assert (info.value.code, info.value.chunk_index) == (E.CHUNK_AFTER_USAGE, 4)


# -- INVALID_CHUNK: every missing or ill-typed field ----------------------------------------------

MISSING = object()

#: A valid chunk of each type, after a prefix where it is accepted (deltas after a first delta, so
#: that the hot path, for a delta to the one open block, is exercised too).
BASES: dict[str, tuple[list[Chunk], Chunk]] = {
    "block-start": ([], start(0, "text")),
    "text-delta": ([start(0, "text"), text_delta(0, "a")], text_delta(0, "b")),
    "reasoning-delta": ([start(0, "reasoning"), reasoning_delta(0, "a")], reasoning_delta(0, "b")),
    "tool-call-delta": (
        [start(0, "tool-call"), tool_delta(0, "call-1", '{"a":', name="f")],
        tool_delta(0, "call-1", "1}", name="f"),
    ),
    "block-end text": ([start(0, "text"), text_delta(0, "a")], end_text(0, "a")),
    "block-end reasoning": ([start(0, "reasoning")], end_reasoning(0, "r")),
    "block-end tool-call": ([start(0, "tool-call")], end_tool(0, "call-1", "f", "{}")),
    "block-start image": ([*TEXT], start(1, "image")),
    "block-end image": ([start(0, "image")], end_image(0, {"id": "att-1", "size": [64, 48], "alt": None})),
    "usage": ([], usage(1, 2, cacheReadTokens=3, cacheWriteTokens=4, reasoningTokens=5)),
    "finish stop": ([U], finish("stop", replayState={"cursor": [1, "a", None, True, 2.5]})),
    "finish error": (
        [],
        finish(
            "error",
            {"message": "m", "code": "c", "status": 503, "providerRetryAfterMs": 10, "requestId": "r"},
        ),
    ),
    "finish aborted": ([], finish("aborted", {"message": "m", "code": "c"})),
}


def mutate(chunk: Chunk, path: str, value: Any) -> Chunk:
    result = copy.deepcopy(chunk)
    *parents, leaf = path.split(".")
    target = result
    for key in parents:
        target = target[key]
    if value is MISSING:
        del target[leaf]
    else:
        target[leaf] = value
    return result


BIG = 2**53
#: (base, dotted field path, bad value or MISSING)
INVALID_FIELDS: list[tuple[str, str, Any]] = [
    ("block-start", "type", MISSING),
    ("block-start", "type", None),
    ("block-start", "type", 1),
    ("block-start", "type", "block_start"),
    ("block-start", "type", "Block-Start"),
    ("block-start", "type", "text-start"),
    ("block-start", "index", MISSING),
    ("block-start", "index", None),
    ("block-start", "index", False),
    ("block-start", "index", True),
    ("block-start", "index", -1),
    ("block-start", "index", 0.0),
    ("block-start", "index", BIG),
    ("block-start", "index", "0"),
    ("block-start", "blockType", MISSING),
    ("block-start", "blockType", None),
    ("block-start", "blockType", ["text"]),
    ("block-start image", "blockType", 7),
    *(
        (base, field, value)
        for base in ("text-delta", "reasoning-delta")
        for field, value in (
            ("index", MISSING),
            ("index", True),
            ("index", -1),
            ("index", 0.0),
            ("index", BIG),
            ("index", None),
            ("text", MISSING),
            ("text", None),
            ("text", 1),
            ("text", b"b"),
            ("text", ["b"]),
        )
    ),
    ("tool-call-delta", "index", MISSING),
    ("tool-call-delta", "index", True),
    ("tool-call-delta", "index", 0.0),
    ("tool-call-delta", "index", BIG),
    ("tool-call-delta", "id", MISSING),
    ("tool-call-delta", "id", None),
    ("tool-call-delta", "id", 7),
    ("tool-call-delta", "name", None),
    ("tool-call-delta", "name", 3),
    ("tool-call-delta", "argumentsDelta", MISSING),
    ("tool-call-delta", "argumentsDelta", None),
    ("tool-call-delta", "argumentsDelta", {"a": 1}),
    ("block-end text", "index", MISSING),
    ("block-end text", "index", True),
    ("block-end text", "index", -1),
    ("block-end text", "index", 0.0),
    ("block-end text", "index", BIG),
    ("block-end text", "block", MISSING),
    ("block-end text", "block", None),
    ("block-end text", "block", "a"),
    ("block-end text", "block", [{"type": "text", "text": "a"}]),
    ("block-end text", "block.type", MISSING),
    ("block-end text", "block.type", None),
    ("block-end text", "block.text", MISSING),
    ("block-end text", "block.text", None),
    ("block-end text", "block.text", 1),
    ("block-end reasoning", "block.text", MISSING),
    ("block-end reasoning", "block.text", None),
    ("block-end tool-call", "block.id", MISSING),
    ("block-end tool-call", "block.id", None),
    ("block-end tool-call", "block.name", MISSING),
    ("block-end tool-call", "block.name", None),
    ("block-end tool-call", "block.arguments", MISSING),
    ("block-end tool-call", "block.arguments", None),
    ("block-end tool-call", "block.arguments", {}),
    ("block-end image", "block.attachment", MISSING),
    ("block-end image", "block.attachment", None),
    ("block-end image", "block.attachment", "att-1"),
    ("block-end image", "block.attachment", [{"id": "att-1"}]),
    ("block-end image", "block.attachment", {"size": [64, math.nan]}),
    ("block-end image", "block.attachment", {"id": b"att-1"}),
    ("block-end image", "block.attachment", {1: "non-string key"}),
    ("block-end image", "block.attachment", {"at": object()}),
    ("block-end image", "block.attachment", {"set": {1, 2}}),
    ("usage", "usage", MISSING),
    ("usage", "usage", None),
    ("usage", "usage", [1, 2]),
    *(
        ("usage", f"usage.{field}", value)
        for field in ("inputTokens", "outputTokens")
        for value in (MISSING, None, True, -1, 1.0, 1.5, BIG, "1")
    ),
    *(
        ("usage", f"usage.{field}", value)
        for field in ("cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
        for value in (None, False, -1, 2.0, BIG, "3")
    ),
    ("finish stop", "reason", MISSING),
    ("finish stop", "reason", None),
    ("finish stop", "reason", "stop"),
    ("finish stop", "reason.kind", MISSING),
    ("finish stop", "reason.kind", None),
    ("finish stop", "reason.kind", 1),
    ("finish stop", "replayState", math.nan),
    ("finish stop", "replayState", math.inf),
    ("finish stop", "replayState", {"deep": [1, {"x": -math.inf}]}),
    ("finish stop", "replayState", {1: "non-string key"}),
    ("finish stop", "replayState", object()),
    ("finish stop", "replayState", {"b": b"bytes"}),
    ("finish stop", "replayState", {1, 2}),
    ("finish error", "reason.failure", MISSING),
    ("finish error", "reason.failure", None),
    ("finish error", "reason.failure", "boom"),
    ("finish error", "reason.failure.message", MISSING),
    ("finish error", "reason.failure.message", ""),
    ("finish error", "reason.failure.message", None),
    ("finish error", "reason.failure.code", MISSING),
    ("finish error", "reason.failure.code", ""),
    ("finish error", "reason.failure.code", None),
    ("finish error", "reason.failure.code", 500),
    ("finish error", "reason.failure.status", None),
    ("finish error", "reason.failure.status", 99),
    ("finish error", "reason.failure.status", 600),
    ("finish error", "reason.failure.status", 0),
    ("finish error", "reason.failure.status", True),
    ("finish error", "reason.failure.status", 503.0),
    ("finish error", "reason.failure.status", "503"),
    ("finish error", "reason.failure.providerRetryAfterMs", None),
    ("finish error", "reason.failure.providerRetryAfterMs", -1),
    ("finish error", "reason.failure.providerRetryAfterMs", 1.5),
    ("finish error", "reason.failure.providerRetryAfterMs", BIG),
    ("finish error", "reason.failure.providerRetryAfterMs", True),
    ("finish error", "reason.failure.requestId", None),
    ("finish error", "reason.failure.requestId", 5),
    ("finish aborted", "reason.failure", MISSING),
    ("finish aborted", "reason.failure", None),
    ("finish aborted", "reason.failure.message", MISSING),
    ("finish aborted", "reason.failure.code", ""),
]


#: SPEC §4: fields that are INVALID_CHUNK under STRICT only. (base, path, value, HARNESS's code for that chunk,
#: or None when HARNESS accepts it: it then notes STRICT's INVALID_CHUNK at the chunk's position.)
STRICT_ONLY_FIELDS: list[tuple[str, str, Any, ErrorCode | None]] = [
    ("block-start", "blockType", "Text", None),
    ("block-start", "blockType", "tool_call", None),
    ("block-start", "blockType", "", None),
    ("block-start image", "blockType", "video", None),
    ("tool-call-delta", "id", "", E.TOOL_CALL_CONFLICT),  # the block's id is call-1
    ("tool-call-delta", "name", "", E.TOOL_CALL_CONFLICT),  # an earlier delta named it f
    ("block-end text", "block.type", "video", E.BLOCK_TYPE_MISMATCH),
    ("block-end tool-call", "block.id", "", None),
    ("block-end tool-call", "block.name", "", None),
    ("finish stop", "reason.kind", "length", None),
    ("finish stop", "reason.kind", "STOP", None),
    ("finish stop", "reason.kind", "tool_calls", None),
    ("finish stop", "reason.kind", "end_turn", None),
    ("finish stop", "reason.kind", "", None),
]


def _param_id(value: Any) -> str:
    if value is MISSING:
        return "missing"
    if isinstance(value, str):
        return repr(value)
    text = repr(value)
    return text if len(text) <= 30 else type(value).__name__


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize("base", sorted(BASES))
def test_the_base_chunks_are_valid(base: str, policy: Policy) -> None:
    prefix, chunk = BASES[base]
    asm = sf.StreamAssembler(policy=policy)
    for c in [*prefix, chunk]:
        asm.feed(c)


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize(
    ("base", "path", "value"),
    [pytest.param(b, p, v, id=f"{b}: {p} = {_param_id(v)}") for b, p, v in INVALID_FIELDS],
)
def test_invalid_field(base: str, path: str, value: Any, policy: Policy) -> None:
    prefix, chunk = BASES[base]
    err = reject([*prefix, mutate(chunk, path, value)], policy)
    assert (err.code, err.chunk_index) == (E.INVALID_CHUNK, len(prefix)), str(err)
    leaf = path.rsplit(".", 1)[-1]
    assert leaf in err.message, f"the message does not name {leaf!r}: {err.message}"


@pytest.mark.parametrize(
    ("base", "path", "value", "harness"),
    [pytest.param(b, p, v, h, id=f"{b}: {p} = {_param_id(v)}") for b, p, v, h in STRICT_ONLY_FIELDS],
)
def test_invalid_field_under_strict_only(base: str, path: str, value: Any, harness: ErrorCode | None) -> None:
    prefix, chunk = BASES[base]
    chunks = [*prefix, mutate(chunk, path, value)]
    err = reject(chunks, STRICT)
    assert (err.code, err.chunk_index) == (E.INVALID_CHUNK, len(prefix)), str(err)
    assert path.rsplit(".", 1)[-1] in err.message, err.message
    if harness is not None:
        err = reject(chunks, HARNESS)
        assert (err.code, err.chunk_index) == (harness, len(prefix)), str(err)
        return
    asm = sf.StreamAssembler(policy=HARNESS)
    for c in chunks:
        asm.feed(c)
    assert (E.INVALID_CHUNK, len(prefix), 1) in notes_of(asm)


NOT_MAPPINGS = [None, [], [("type", "finish")], "block-start", b"{}", 42, 1.5, True, ("type", "usage"), {"type"}]


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize("chunk", NOT_MAPPINGS, ids=repr)
def test_a_chunk_that_is_not_a_mapping(chunk: Any, policy: Policy) -> None:
    for prefix in ([], [start(0, "text"), text_delta(0, "a")], [U]):
        err = reject([*prefix, chunk], policy)
        assert (err.code, err.chunk_index) == (E.INVALID_CHUNK, len(prefix)), str(err)


@pytest.mark.parametrize("policy", BOTH)
def test_an_empty_mapping_names_the_missing_type(policy: Policy) -> None:
    err = reject([{}], policy)
    assert (err.code, err.chunk_index) == (E.INVALID_CHUNK, 0)
    assert "type" in err.message


#: Values at the edges of what SPEC §1 allows: the shape is valid (any error is a later rule's).
EDGE_VALID = [
    pytest.param([usage(0, 0, cacheReadTokens=0, cacheWriteTokens=0, reasoningTokens=0), STOP], id="zero tokens"),
    pytest.param([usage(BIG - 1, BIG - 1, reasoningTokens=BIG - 1), STOP], id="2^53-1 tokens"),
    pytest.param([finish("error", {**FAILURE, "status": 100})], id="status 100"),
    pytest.param([finish("error", {**FAILURE, "status": 599})], id="status 599"),
    pytest.param(
        [finish("aborted", {**FAILURE, "providerRetryAfterMs": 0, "requestId": ""})], id="retry 0, empty requestId"
    ),
    pytest.param([finish("error", {**FAILURE, "providerRetryAfterMs": BIG - 1})], id="retry 2^53-1"),
    pytest.param([U, finish("stop", replayState=None)], id="replayState null"),
    pytest.param([U, finish("stop", replayState="opaque")], id="replayState string"),
    pytest.param([U, finish("stop", replayState=[1, 2.5, {"a": [None, False]}])], id="replayState nested"),
    pytest.param([U, finish("stop", replayState=2**64)], id="replayState big int"),
    pytest.param([U, {"type": "finish", "reason": {"kind": "stop", "extra": 1}, "x": []}], id="extra keys in reason"),
    pytest.param([start(0, "text"), text_delta(0, ""), end_text(0, ""), U, STOP], id="empty text"),
    pytest.param(
        [start(0, "tool-call"), tool_delta(0, "c", ""), tool_delta(0, "c", "{}"), end_tool(0, "c", "f", "{}"), U, STOP],
        id="empty argumentsDelta",
    ),
    pytest.param([MappingProxyType(start(0, "text")), end_text(0, ""), U, STOP], id="a read-only mapping"),
]


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize("chunks", EDGE_VALID)
def test_edge_values_are_valid(chunks: list[Chunk], policy: Policy) -> None:
    asm = sf.StreamAssembler(policy=policy)
    for chunk in chunks:
        asm.feed(chunk)
    asm.close()


# -- precedence: one chunk, several broken rules; the earliest check decides -----------------------

OPEN_TEXT = [start(0, "text"), text_delta(0, "hi")]  # block 0 open, one delta
OPEN_TOOL = [start(0, "tool-call"), tool_delta(0, "c1", "{", name="f")]  # block 0 open, id c1, name f

PRECEDENCE = expand(
    [
        # 1. CHUNK_AFTER_FINISH before everything, the chunk's shape included
        ("not a mapping after finish", BOTH, E.CHUNK_AFTER_FINISH, 2, [U, STOP, None]),
        ("unknown type after finish", BOTH, E.CHUNK_AFTER_FINISH, 2, [U, STOP, {"type": "ping"}]),
        ("empty mapping after finish", BOTH, E.CHUNK_AFTER_FINISH, 1, [finish("error", FAILURE), {}]),
        ("negative index after finish", BOTH, E.CHUNK_AFTER_FINISH, 2, [U, STOP, start(-1, "text")]),
        ("bad finish after finish", BOTH, E.CHUNK_AFTER_FINISH, 2, [U, STOP, finish("error")]),
        ("stray delta after finish", BOTH, E.CHUNK_AFTER_FINISH, 2, [U, STOP, text_delta(5, "x")]),
        ("second usage after finish", BOTH, E.CHUNK_AFTER_FINISH, 2, [U, STOP, U]),
        (
            "after a cut-off finish",
            BOTH,
            E.CHUNK_AFTER_FINISH,
            4,
            [*OPEN_TEXT, U, finish("max-tokens"), text_delta(0, "x")],
        ),
        # 2. INVALID_CHUNK before every rule of a chunk type
        ("bad block type while a block is open", (STRICT,), E.INVALID_CHUNK, 2, [*OPEN_TEXT, start(1, "video")]),
        ("bad index after usage", BOTH, E.INVALID_CHUNK, 4, [*TEXT, U, start(-1, "text")]),
        ("bad block type out of order", (STRICT,), E.INVALID_CHUNK, 0, [start(5, "video")]),
        ("bad block type out of order: harness", (HARNESS,), E.INDEX_OUT_OF_ORDER, 0, [start(5, "video")]),
        ("missing text for a non-open block", BOTH, E.INVALID_CHUNK, 0, [{"type": "text-delta", "index": 7}]),
        (
            "empty id on a delta for a text block",
            (STRICT,),
            E.INVALID_CHUNK,
            2,
            [*OPEN_TEXT, tool_delta(0, "", "{}")],
        ),
        (
            "empty id on a delta for a text block: harness",
            (HARNESS,),
            E.BLOCK_TYPE_MISMATCH,
            2,
            [*OPEN_TEXT, tool_delta(0, "", "{}")],
        ),
        (
            "empty name with another id",
            (STRICT,),
            E.INVALID_CHUNK,
            2,
            [*OPEN_TOOL, tool_delta(0, "c2", "}", name="")],
        ),
        (
            "empty name with another id: harness",
            (HARNESS,),
            E.TOOL_CALL_CONFLICT,
            2,
            [*OPEN_TOOL, tool_delta(0, "c2", "}", name="")],
        ),
        (
            "bad attachment for a text block",
            BOTH,
            E.INVALID_CHUNK,
            2,
            [*OPEN_TEXT, end_block(0, {"type": "image", "attachment": "x"})],
        ),
        (
            "bad attachment after usage",
            BOTH,
            E.INVALID_CHUNK,
            2,
            [start(0, "image"), U, end_block(0, {"type": "image", "attachment": 1})],
        ),
        (
            "block-end missing text, content differs",
            BOTH,
            E.INVALID_CHUNK,
            2,
            [*OPEN_TEXT, {"type": "block-end", "index": 0, "block": {"type": "text"}}],
        ),
        ("arguments not a string", BOTH, E.INVALID_CHUNK, 1, [start(0, "tool-call"), end_tool(0, "c", "f", {"a": 1})]),
        ("second usage with negative tokens", BOTH, E.INVALID_CHUNK, 1, [U, usage(-1, 0)]),
        ("unknown finish kind with a block open", (STRICT,), E.INVALID_CHUNK, 2, [*OPEN_TEXT, finish("length")]),
        (
            "unknown finish kind with a block open: harness",
            (HARNESS,),
            E.BLOCK_NOT_CLOSED,
            2,
            [*OPEN_TEXT, finish("length")],
        ),
        ("stop, no usage, NaN replayState", (STRICT,), E.INVALID_CHUNK, 0, [finish("stop", replayState=math.nan)]),
        (
            "tool-calls with no tool call, bad replayState",
            BOTH,
            E.INVALID_CHUNK,
            1,
            [U, finish("tool-calls", replayState=object())],
        ),
        ("error without failure, block open", BOTH, E.INVALID_CHUNK, 2, [*OPEN_TEXT, finish("error")]),
        # 3. block-start: BLOCKS_INTERLEAVED -> CHUNK_AFTER_USAGE -> INDEX_OUT_OF_ORDER
        ("interleaved after usage", (STRICT,), E.BLOCKS_INTERLEAVED, 3, [*OPEN_TEXT, U, start(1, "text")]),
        ("interleaved after usage: harness", (HARNESS,), E.CHUNK_AFTER_USAGE, 3, [*OPEN_TEXT, U, start(1, "text")]),
        ("interleaved and out of order", (STRICT,), E.BLOCKS_INTERLEAVED, 2, [*OPEN_TEXT, start(0, "text")]),
        ("interleaved and out of order: harness", (HARNESS,), E.INDEX_OUT_OF_ORDER, 2, [*OPEN_TEXT, start(0, "text")]),
        (
            "interleaved, after usage, out of order",
            (STRICT,),
            E.BLOCKS_INTERLEAVED,
            3,
            [*OPEN_TEXT, U, start(7, "text")],
        ),
        (
            "interleaved, after usage, out of order: harness",
            (HARNESS,),
            E.CHUNK_AFTER_USAGE,
            3,
            [*OPEN_TEXT, U, start(7, "text")],
        ),
        ("after usage and out of order", BOTH, E.CHUNK_AFTER_USAGE, 4, [*TEXT, U, start(0, "text")]),
        ("harness: an unknown block type after usage", (HARNESS,), E.CHUNK_AFTER_USAGE, 1, [U, start(0, "video")]),
        (
            "harness: an unknown block type, interleaved and out of order",
            (HARNESS,),
            E.INDEX_OUT_OF_ORDER,
            2,
            [*OPEN_TEXT, start(2, "video")],
        ),
        (
            "harness: an unknown block-end after usage",
            (HARNESS,),
            E.CHUNK_AFTER_USAGE,
            2,
            [start(0, "video"), U, end_block(0, {"type": "audio"})],
        ),
        (
            "harness: a delta for a closed block of an unknown type",
            (HARNESS,),
            E.BLOCK_NOT_OPEN,
            2,
            [start(0, "video"), end_block(0, {"type": "video"}), text_delta(0, "x")],
        ),
        # 3. delta and block-end: CHUNK_AFTER_USAGE -> BLOCK_NOT_OPEN -> BLOCK_TYPE_MISMATCH
        ("delta after usage for a non-open index", BOTH, E.CHUNK_AFTER_USAGE, 3, [*OPEN_TEXT, U, text_delta(1, "x")]),
        ("delta after usage with no block at all", BOTH, E.CHUNK_AFTER_USAGE, 1, [U, text_delta(0, "x")]),
        ("image block-end after usage", BOTH, E.CHUNK_AFTER_USAGE, 2, [start(0, "image"), U, end_image(0, {})]),
        ("block-end after usage for a closed block", BOTH, E.CHUNK_AFTER_USAGE, 4, [*TEXT, U, end_text(0, "hi")]),
        ("delta after usage of the wrong type", BOTH, E.CHUNK_AFTER_USAGE, 3, [*OPEN_TEXT, U, reasoning_delta(0, "x")]),
        (
            "block-end after usage of the wrong type",
            BOTH,
            E.CHUNK_AFTER_USAGE,
            3,
            [*OPEN_TEXT, U, end_reasoning(0, "hi")],
        ),
        (
            "tool delta after usage with another id",
            BOTH,
            E.CHUNK_AFTER_USAGE,
            3,
            [*OPEN_TOOL, U, tool_delta(0, "c2", "}")],
        ),
        (
            "block-end after usage with other content",
            BOTH,
            E.CHUNK_AFTER_USAGE,
            3,
            [*OPEN_TEXT, U, end_text(0, "other")],
        ),
        ("non-open index and wrong type", BOTH, E.BLOCK_NOT_OPEN, 2, [*OPEN_TEXT, reasoning_delta(1, "x")]),
        ("closed block and wrong type", BOTH, E.BLOCK_NOT_OPEN, 3, [*TEXT, reasoning_delta(0, "x")]),
        ("block-end for a closed block, wrong type", BOTH, E.BLOCK_NOT_OPEN, 3, [*TEXT, end_reasoning(0, "x")]),
        (
            "non-open index and a reused id",
            BOTH,
            E.BLOCK_NOT_OPEN,
            3,
            [*tool_block(0, "c1"), tool_delta(1, "c1", "{}")],
        ),
        (
            "block-end for a non-open index with bad arguments",
            BOTH,
            E.BLOCK_NOT_OPEN,
            2,
            [*OPEN_TOOL, end_tool(1, "c1", "f", "{")],
        ),
        # ... then for a tool-call-delta: TOOL_CALL_CONFLICT
        (
            "wrong type and a reused id",
            BOTH,
            E.BLOCK_TYPE_MISMATCH,
            4,
            [*tool_block(0, "c1"), start(1, "text"), tool_delta(1, "c1", "{}")],
        ),
        # ... then for a block-end: BLOCK_CONTENT_MISMATCH -> TOOL_CALL_CONFLICT -> TOOL_ARGUMENTS_INVALID
        ("wrong type and other content", BOTH, E.BLOCK_TYPE_MISMATCH, 2, [*OPEN_TEXT, end_reasoning(0, "other")]),
        ("wrong type and bad arguments", BOTH, E.BLOCK_TYPE_MISMATCH, 2, [*OPEN_TEXT, end_tool(0, "c", "f", "[")]),
        (
            "wrong type and a reused id (block-end)",
            BOTH,
            E.BLOCK_TYPE_MISMATCH,
            4,
            [*tool_block(0, "c1"), start(1, "text"), end_tool(1, "c1", "f", "{}")],
        ),
        (
            "other arguments that are also invalid",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            3,
            [start(0, "tool-call"), tool_delta(0, "c1", "{}"), tool_delta(0, "c1", ""), end_tool(0, "c1", "f", "[")],
        ),
        (
            "other id, invalid arguments",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            2,
            [start(0, "tool-call"), tool_delta(0, "c1", "["), end_tool(0, "c2", "f", "[")],
        ),
        (
            "other id that is a reused one",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            5,
            [*tool_block(0, "c1"), start(1, "tool-call"), tool_delta(1, "c2", "{}"), end_tool(1, "c1", "f", "{}")],
        ),
        (
            "other name, invalid arguments",
            BOTH,
            E.BLOCK_CONTENT_MISMATCH,
            2,
            [start(0, "tool-call"), tool_delta(0, "c1", "1", name="f"), end_tool(0, "c1", "g", "1")],
        ),
        (
            "no-delta block reusing an id with invalid arguments",
            (STRICT,),
            E.TOOL_CALL_CONFLICT,
            4,
            [*tool_block(0, "c1"), start(1, "tool-call"), end_tool(1, "c1", "f", "NaN")],
        ),
        # usage: USAGE_DUPLICATE (not CHUNK_AFTER_USAGE)
        ("a second usage is a duplicate", BOTH, E.USAGE_DUPLICATE, 1, [U, usage(0, 0)]),
        # finish: BLOCK_NOT_CLOSED -> USAGE_MISSING -> FINISH_REASON_MISMATCH
        ("stop with an open block and no usage", (STRICT,), E.BLOCK_NOT_CLOSED, 2, [*OPEN_TEXT, STOP]),
        ("stop with an open block and no usage: harness", (HARNESS,), E.BLOCK_NOT_CLOSED, 2, [*OPEN_TEXT, STOP]),
        (
            "tool-calls with an open block and no tool call",
            BOTH,
            E.BLOCK_NOT_CLOSED,
            3,
            [*OPEN_TEXT, U, finish("tool-calls")],
        ),
        (
            "tool-calls: open block, no usage, no tool call",
            BOTH,
            E.BLOCK_NOT_CLOSED,
            2,
            [*OPEN_TEXT, finish("tool-calls")],
        ),
        (
            "tool-calls with an open tool call and no usage",
            BOTH,
            E.BLOCK_NOT_CLOSED,
            2,
            [*OPEN_TOOL, finish("tool-calls")],
        ),
        ("tool-calls with no usage and no tool call", (STRICT,), E.USAGE_MISSING, 3, [*TEXT, finish("tool-calls")]),
        (
            "max-tokens cuts a block off, but no usage",
            (STRICT,),
            E.USAGE_MISSING,
            2,
            [*OPEN_TEXT, finish("max-tokens")],
        ),
    ]
)


@pytest.mark.parametrize(("policy", "code", "index", "chunks"), PRECEDENCE)
def test_precedence(policy: Policy, code: ErrorCode, index: int, chunks: list[Any]) -> None:
    err = reject(chunks, policy)
    assert (err.code, err.chunk_index) == (code, index), str(err)


# -- SPEC §4: what STRICT refuses and HARNESS accepts is noted, with STRICT's code and position ------

#: (id, the code STRICT refuses the last chunk with, its position, the stream).
NOTED = [
    ("a block starts while another is open", E.BLOCKS_INTERLEAVED, 1, [start(0, "text"), start(1, "reasoning")]),
    ("an image block starts while another is open", E.BLOCKS_INTERLEAVED, 2, [*OPEN_TEXT, start(1, "image")]),
    ("an unknown block type", E.INVALID_CHUNK, 0, [start(0, "video")]),
    ("an unknown block type while a block is open", E.INVALID_CHUNK, 2, [*OPEN_TEXT, start(1, "video")]),
    ("an unknown finish kind", E.INVALID_CHUNK, 1, [U, finish("paused")]),
    ("an unknown finish kind, no usage", E.INVALID_CHUNK, 3, [*TEXT, finish("length")]),
    ("an empty id on a first delta", E.INVALID_CHUNK, 1, [start(0, "tool-call"), tool_delta(0, "", "{")]),
    ("an empty name on a first delta", E.INVALID_CHUNK, 1, [start(0, "tool-call"), tool_delta(0, "c", "{", name="")]),
    ("an empty name on a later delta", E.INVALID_CHUNK, 2, [*OPEN_TOOL[:1], tool_delta(0, "c1", "{"),
                                                               tool_delta(0, "c1", "}", name="")]),
    ("an empty id on a no-delta block-end", E.INVALID_CHUNK, 1, [start(0, "tool-call"), end_tool(0, "", "f", "{}")]),
    ("an empty name on a no-delta block-end", E.INVALID_CHUNK, 1, [start(0, "tool-call"), end_tool(0, "c", "", "{}")]),
    ("first delta reuses a finished block's id", E.TOOL_CALL_CONFLICT, 4,
     [*tool_block(0, "c1"), start(1, "tool-call"), tool_delta(1, "c1", "{}")]),
    ("first delta reuses a no-delta block's id", E.TOOL_CALL_CONFLICT, 3,
     [start(0, "tool-call"), end_tool(0, "c1", "f", "{}"), start(1, "tool-call"), tool_delta(1, "c1", "{}")]),
    ("no-delta block-end reuses an id", E.TOOL_CALL_CONFLICT, 4,
     [*tool_block(0, "c1"), start(1, "tool-call"), end_tool(1, "c1", "f", "{}")]),
    ("no-delta block-end reuses a no-delta block's id", E.TOOL_CALL_CONFLICT, 3,
     [start(0, "tool-call"), end_tool(0, "c1", "f", "{}"), start(1, "tool-call"), end_tool(1, "c1", "g", "{}")]),
    ("no-delta block reusing an id with invalid arguments", E.TOOL_CALL_CONFLICT, 4,
     [*tool_block(0, "c1"), start(1, "tool-call"), end_tool(1, "c1", "f", "NaN")]),
    ("deltas assemble an array", E.TOOL_ARGUMENTS_INVALID, 3,
     [start(0, "tool-call"), tool_delta(0, "c", "["), tool_delta(0, "c", "]"), end_tool(0, "c", "f", "[]")]),
    ("no-delta block with NaN", E.TOOL_ARGUMENTS_INVALID, 1,
     [start(0, "tool-call"), end_tool(0, "c", "f", '{"x": NaN}')]),
    ("cut-off JSON", E.TOOL_ARGUMENTS_INVALID, 2,
     [start(0, "tool-call"), tool_delta(0, "c", '{"a":'), end_tool(0, "c", "f", '{"a":')]),
    ("empty arguments", E.TOOL_ARGUMENTS_INVALID, 2,
     [start(0, "tool-call"), tool_delta(0, "c", ""), end_tool(0, "c", "f", "")]),
    ("stop without usage", E.USAGE_MISSING, 0, [STOP]),
    ("max-tokens with an open block, without usage", E.USAGE_MISSING, 2, [*OPEN_TEXT, finish("max-tokens")]),
    ("tool-calls with no usage and no tool call", E.USAGE_MISSING, 3, [*TEXT, finish("tool-calls")]),
    ("tool-calls with no block", E.FINISH_REASON_MISMATCH, 1, [U, finish("tool-calls")]),
    ("tool-calls with a text block only", E.FINISH_REASON_MISMATCH, 4, [*TEXT, U, finish("tool-calls")]),
]  # fmt: skip


@pytest.mark.parametrize(("code", "index", "chunks"), [pytest.param(*c[1:], id=c[0]) for c in NOTED])
def test_harness_accepts_and_notes_what_strict_refuses(code: ErrorCode, index: int, chunks: list[Chunk]) -> None:
    err = reject(chunks, STRICT, check_index=True)
    assert (err.code, err.chunk_index) == (code, index), str(err)
    asm = sf.StreamAssembler(policy=HARNESS)
    for chunk in chunks:
        asm.feed(chunk)
    notes = notes_of(asm)
    assert (code, index, 1) in notes, notes
    # Nothing before the chunk STRICT refuses is noted (STRICT accepted it all); its other codes, if any, at it.
    assert {position for _, position, _ in notes} == {index}, notes
    # A note is the error STRICT raises at that chunk: its code, message, position, state and what the state accepts.
    (noted,) = [error for error, _ in asm.notes if error.code == code]
    assert isinstance(noted, LlmError)
    assert (noted.message, noted.chunk_index, noted.state, noted.expected) == (
        err.message, err.chunk_index, err.state, err.expected,
    )  # fmt: skip


@pytest.mark.parametrize(("code", "index", "chunks"), [pytest.param(*c[1:], id=c[0]) for c in NOTED if c[2] > 0])
def test_a_chunk_refused_for_a_limit_leaves_no_note(code: ErrorCode, index: int, chunks: list[Chunk]) -> None:
    asm = sf.StreamAssembler(policy=HARNESS, limits=sf.Limits(max_chunks=index))
    for chunk in chunks[:-1]:
        asm.feed(chunk)
    with pytest.raises(LlmError) as info:
        asm.feed(chunks[-1])
    assert (info.value.code, info.value.chunk_index) == (E.LIMIT_EXCEEDED, index)
    assert asm.notes == []


def test_strict_notes_nothing() -> None:
    for _, _, index, chunks in NOTED:
        asm = sf.StreamAssembler(policy=STRICT)
        for chunk in chunks[:index]:
            asm.feed(chunk)
        with pytest.raises(LlmError):
            asm.feed(chunks[index])
        assert asm.notes == []


# -- LIMIT_EXCEEDED, and that it comes last ---------------------------------------------------------

LIMITS = [
    pytest.param(sf.Limits(max_chunks=3), SEED_CHUNKS[:4], 3, id="max_chunks=3: the 4th chunk"),
    pytest.param(sf.Limits(max_chunks=1), [U, STOP], 1, id="max_chunks=1: the finish"),
    pytest.param(sf.Limits(max_chunks=8), SEED_CHUNKS, 8, id="max_chunks=8: the seed's finish"),
    pytest.param(sf.Limits(max_blocks=1), SEED_CHUNKS[:5], 4, id="max_blocks=1: the seed's second block-start"),
    pytest.param(sf.Limits(max_blocks=2), [*TEXT, *tool_block(1, "c"), start(2, "text")], 6, id="max_blocks=2"),
    pytest.param(sf.Limits(max_block_bytes=12), SEED_CHUNKS[:3], 2, id="max_block_bytes=12: 'runoob 教程' is 13 bytes"),
    pytest.param(
        sf.Limits(max_block_bytes=24), SEED_CHUNKS[:6], 5, id="max_block_bytes=24: the seed's 25-byte arguments"
    ),
    pytest.param(
        sf.Limits(max_block_bytes=6),
        [start(0, "text"), text_delta(0, "教"), text_delta(0, "程"), text_delta(0, ""), text_delta(0, "a")],
        4,
        id="max_block_bytes=6: UTF-8 bytes, not characters",
    ),
    pytest.param(
        sf.Limits(max_block_bytes=7),
        [start(0, "reasoning"), reasoning_delta(0, "😀"), reasoning_delta(0, "😀")],
        2,
        id="max_block_bytes=7: two 4-byte characters",
    ),
    pytest.param(
        sf.Limits(max_block_bytes=5),
        [start(0, "text"), end_text(0, "abcdef")],
        1,
        id="max_block_bytes=5: a no-delta block's text",
    ),
    pytest.param(
        sf.Limits(max_block_bytes=5),
        [start(0, "tool-call"), end_tool(0, "c", "f", '{"a":1}')],
        1,
        id="max_block_bytes=5: a no-delta tool call's arguments",
    ),
    pytest.param(
        sf.Limits(max_block_bytes=4),
        [*TEXT, start(1, "text"), text_delta(1, "abcd"), end_text(1, "abcd"), start(2, "text"), text_delta(2, "abcde")],
        7,
        id="max_block_bytes is per block",
    ),
    pytest.param(
        sf.Limits(max_block_bytes=20),
        [start(0, "image"), end_image(0, {"id": "x" * 20})],
        1,
        id="max_block_bytes=20: an image block",
    ),
    pytest.param(sf.Limits(max_blocks=1), [*TEXT, start(1, "image")], 3, id="max_blocks=1: an image block"),
]


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize(("limits", "chunks", "index"), LIMITS)
def test_limit_exceeded(limits: sf.Limits, chunks: list[Chunk], index: int, policy: Policy) -> None:
    err = reject(chunks, policy, limits)
    assert (err.code, err.chunk_index) == (E.LIMIT_EXCEEDED, index), str(err)


@pytest.mark.parametrize(
    "limits",
    [
        sf.Limits(max_chunks=9),
        sf.Limits(max_blocks=2),
        sf.Limits(max_block_bytes=25),
        sf.Limits(max_chunks=9, max_blocks=2, max_block_bytes=25),
    ],
    ids=repr,
)
def test_a_stream_at_its_limits_is_accepted(limits: sf.Limits) -> None:
    assert sf.assemble(SEED_CHUNKS, limits=limits).text == "runoob 教程"


def test_input_ending_at_max_chunks_is_truncated_not_over_the_limit() -> None:
    err = reject([start(0, "text"), text_delta(0, "a")], STRICT, sf.Limits(max_chunks=2))
    assert (err.code, err.chunk_index) == (E.STREAM_TRUNCATED, 2)


def test_limit_exceeded_through_assemble_and_later_calls() -> None:
    asm = sf.StreamAssembler(limits=sf.Limits(max_chunks=2))
    asm.feed(start(0, "text"))
    asm.feed(text_delta(0, "a"))
    with pytest.raises(LlmError) as info:
        asm.feed(text_delta(0, "b"))
    assert (info.value.code, info.value.chunk_index) == (E.LIMIT_EXCEEDED, 2)
    for later in (end_text(0, "ab"), None):
        with pytest.raises(LlmError) as info:
            asm.feed(later)  # type: ignore[arg-type]
        assert info.value.code == E.LIMIT_EXCEEDED
    with pytest.raises(LlmError) as info:
        asm.close()
    assert info.value.code == E.LIMIT_EXCEEDED


def _past_max_chunks() -> list[Any]:
    """Every code case and precedence case again, with ``max_chunks`` passed by the offending chunk."""
    params = []
    for param in [*CODES, *PRECEDENCE]:
        policy, code, index, chunks = param.values
        if code is E.STREAM_TRUNCATED or index == 0:
            continue
        params.append(pytest.param(policy, code, index, chunks, id=param.id))
    return params


@pytest.mark.parametrize(("policy", "code", "index", "chunks"), _past_max_chunks())
def test_limit_exceeded_comes_after_every_other_code(
    policy: Policy, code: ErrorCode, index: int, chunks: list[Any]
) -> None:
    err = reject(chunks, policy, sf.Limits(max_chunks=index))
    assert (err.code, err.chunk_index) == (code, index), str(err)


LIMIT_LAST = [
    pytest.param(
        (STRICT,),
        sf.Limits(max_blocks=1),
        [*OPEN_TEXT, start(1, "text")],
        E.BLOCKS_INTERLEAVED,
        2,
        id="max_blocks passed by an interleaving block-start",
    ),
    pytest.param(
        BOTH,
        sf.Limits(max_blocks=1),
        [*TEXT, start(2, "text")],
        E.INDEX_OUT_OF_ORDER,
        3,
        id="max_blocks passed out of order",
    ),
    pytest.param(
        BOTH,
        sf.Limits(max_blocks=1),
        [*TEXT, U, start(1, "text")],
        E.CHUNK_AFTER_USAGE,
        4,
        id="max_blocks passed after usage",
    ),
    pytest.param(
        BOTH,
        sf.Limits(max_block_bytes=3),
        [*OPEN_TOOL, tool_delta(0, "c2", "abcdef")],
        E.TOOL_CALL_CONFLICT,
        2,
        id="max_block_bytes passed by a delta with another id",
    ),
    pytest.param(
        BOTH,
        sf.Limits(max_block_bytes=3),
        [*OPEN_TEXT, U, text_delta(0, "abcdef")],
        E.CHUNK_AFTER_USAGE,
        3,
        id="max_block_bytes passed by a delta after usage",
    ),
    pytest.param(
        (STRICT,),
        sf.Limits(max_block_bytes=3),
        [start(0, "tool-call"), end_tool(0, "c", "f", '["long", "array"]')],
        E.TOOL_ARGUMENTS_INVALID,
        1,
        id="max_block_bytes passed by invalid no-delta arguments",
    ),
    pytest.param(
        (HARNESS,),
        sf.Limits(max_block_bytes=3),
        [start(0, "tool-call"), end_tool(0, "c", "f", '["long", "array"]')],
        E.LIMIT_EXCEEDED,
        1,
        id="harness: max_block_bytes passed by raw no-delta arguments",
    ),
    pytest.param(
        (STRICT,),
        sf.Limits(max_block_bytes=3),
        [*tool_block(0, "c1", "f", "{}"), start(1, "tool-call"), end_tool(1, "c1", "f", '{"long": 1}')],
        E.TOOL_CALL_CONFLICT,
        4,
        id="max_block_bytes passed by a no-delta block reusing an id",
    ),
    pytest.param(
        (HARNESS,),
        sf.Limits(max_block_bytes=3),
        [*tool_block(0, "c1", "f", "{}"), start(1, "tool-call"), end_tool(1, "c1", "f", '{"long": 1}')],
        E.LIMIT_EXCEEDED,
        4,
        id="harness: max_block_bytes passed by a no-delta block reusing an id",
    ),
    pytest.param(
        BOTH,
        sf.Limits(max_block_bytes=3),
        [start(0, "text"), end_image(0, {"id": "a long attachment id"})],
        E.BLOCK_TYPE_MISMATCH,
        1,
        id="max_block_bytes passed by an image block-end for a text block",
    ),
    pytest.param(
        BOTH,
        sf.Limits(max_block_bytes=3),
        [start(0, "text"), end_reasoning(0, "long text")],
        E.BLOCK_TYPE_MISMATCH,
        1,
        id="max_block_bytes passed by a block-end of the wrong type",
    ),
]


@pytest.mark.parametrize(("policies", "limits", "chunks", "code", "index"), LIMIT_LAST)
def test_limit_exceeded_is_decided_last(
    policies: tuple[Policy, ...], limits: sf.Limits, chunks: list[Chunk], code: ErrorCode, index: int
) -> None:
    for policy in policies:
        err = reject(chunks, policy, limits)
        assert (err.code, err.chunk_index) == (code, index), str(err)


# -- messages say what came, what was expected, and the state ------------------------------------

#: (policy, stream whose last chunk is rejected, code, words the message must contain)
MESSAGES = [
    pytest.param(
        STRICT, [U, STOP, text_delta(0, "x")], E.CHUNK_AFTER_FINISH, ["text-delta", "finish"], id="after finish"
    ),
    pytest.param(
        STRICT,
        [start(0, "text"), start(1, "reasoning")],
        E.BLOCKS_INTERLEAVED,
        ["block-start", "1", "0"],
        id="interleaved",
    ),
    pytest.param(
        STRICT, [*TEXT, U, start(1, "text")], E.CHUNK_AFTER_USAGE, ["block-start", "usage", "finish"], id="after usage"
    ),
    pytest.param(STRICT, [*TEXT, start(7, "text")], E.INDEX_OUT_OF_ORDER, ["7", "1"], id="index order"),
    pytest.param(STRICT, [start(0, "text"), text_delta(3, "x")], E.BLOCK_NOT_OPEN, ["text-delta", "3"], id="not open"),
    pytest.param(
        STRICT,
        [start(0, "text"), reasoning_delta(0, "x")],
        E.BLOCK_TYPE_MISMATCH,
        ["reasoning", "text"],
        id="type mismatch",
    ),
    pytest.param(
        STRICT,
        [start(0, "tool-call"), tool_delta(0, "call-a", "{"), tool_delta(0, "call-b", "}")],
        E.TOOL_CALL_CONFLICT,
        ["call-a", "call-b"],
        id="tool conflict",
    ),
    pytest.param(
        STRICT,
        [start(0, "text"), text_delta(0, "assembled"), end_text(0, "carried")],
        E.BLOCK_CONTENT_MISMATCH,
        ["assembled", "carried"],
        id="content mismatch",
    ),
    pytest.param(
        STRICT,
        [start(0, "tool-call"), end_tool(0, "call-z", "f", "[1]")],
        E.TOOL_ARGUMENTS_INVALID,
        ["call-z", "object"],
        id="arguments invalid",
    ),
    pytest.param(STRICT, [U, U], E.USAGE_DUPLICATE, ["usage"], id="usage duplicate"),
    pytest.param(STRICT, [start(0, "reasoning"), U, STOP], E.BLOCK_NOT_CLOSED, ["stop", "0"], id="not closed"),
    pytest.param(STRICT, [STOP], E.USAGE_MISSING, ["stop", "usage"], id="usage missing"),
    pytest.param(
        STRICT, [U, finish("tool-calls")], E.FINISH_REASON_MISMATCH, ["tool-calls", "tool-call"], id="reason mismatch"
    ),
    pytest.param(STRICT, [start(0, "text"), text_delta(0, "a")], E.STREAM_TRUNCATED, ["2", "finish"], id="truncated"),
    pytest.param(
        STRICT,
        [start(0, "text"), {"type": "text-delta", "index": 0, "text": 5}],
        E.INVALID_CHUNK,
        ["text", "int"],
        id="invalid chunk",
    ),
]


@pytest.mark.parametrize(("policy", "chunks", "code", "words"), MESSAGES)
def test_message_says_what_came_and_what_was_expected(
    policy: Policy, chunks: list[Chunk], code: ErrorCode, words: list[str]
) -> None:
    err = reject(chunks, policy)
    assert err.code == code
    # the first error for a chunk is not reported as a repeat of an earlier failure
    assert "already failed" not in err.message, err.message
    for word in words:
        assert word in err.message, f"{word!r} not in {err.message!r}"


@pytest.mark.parametrize(("policy", "chunks", "code", "words"), MESSAGES)
def test_message_names_the_state(policy: Policy, chunks: list[Chunk], code: ErrorCode, words: list[str]) -> None:
    asm = sf.StreamAssembler(policy=policy)
    for chunk in chunks[:-1]:
        asm.feed(chunk)
    state = asm.state
    with pytest.raises(LlmError) as info:
        if code is E.STREAM_TRUNCATED:
            asm.feed(chunks[-1])
            state = asm.state
            asm.close()
        else:
            asm.feed(chunks[-1])
    assert info.value.code == code
    assert state in info.value.message, f"state {state!r} not in {info.value.message!r}"


@pytest.mark.parametrize(("policy", "code", "index", "chunks"), [*CODES, *PRECEDENCE])
def test_the_first_error_is_not_reported_as_a_repeat(
    policy: Policy, code: ErrorCode, index: int, chunks: list[Any]
) -> None:
    # SPEC §3: only *later* calls raise again; the chunk that breaks a rule gets its own message.
    err = reject(chunks, policy)
    assert "already failed" not in err.message, err.message


@pytest.mark.parametrize(
    ("limits", "chunks"),
    [
        pytest.param(
            sf.Limits(max_block_bytes=3), [start(0, "tool-call"), tool_delta(0, "c", "abcdef")], id="first delta"
        ),
        pytest.param(
            sf.Limits(max_block_bytes=3),
            [start(0, "tool-call"), tool_delta(0, "c", "{", name="f"), tool_delta(0, "c", "abcdef", name="f")],
            id="named later delta",
        ),
    ],
)
def test_a_limit_on_a_tool_delta_is_not_reported_as_a_repeat(limits: sf.Limits, chunks: list[Chunk]) -> None:
    err = reject(chunks, STRICT, limits)
    assert (err.code, err.chunk_index) == (E.LIMIT_EXCEEDED, len(chunks) - 1)
    assert "already failed" not in err.message, err.message


def test_limit_message_names_the_limit() -> None:
    err = reject(SEED_CHUNKS[:4], STRICT, sf.Limits(max_chunks=3))
    assert "3" in err.message
    err = reject(SEED_CHUNKS[:3], STRICT, sf.Limits(max_block_bytes=12))
    assert "12" in err.message

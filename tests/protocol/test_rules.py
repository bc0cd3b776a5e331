"""SPEC §2, rule by rule: streams that keep a rule are assembled, streams that break it are rejected.

Every case is data: a stream of chunk dicts (SPEC §1) and what the contract says must come of it,
under ``Policy.STRICT`` and ``Policy.HARNESS`` alike unless the case says otherwise (SPEC §4: HARNESS
does not hold rule 3's no-interleaving, rule 5's one-block-per-id and JSON-object arguments, rule 6's
required usage, nor rule 8; what it accepts of those it keeps, and notes what STRICT would have refused).
The exhaustive table of codes and their precedence lives in ``tests/protocol/test_codes.py``; this module is about
the rules themselves and about what an accepted stream assembles to (SPEC §5).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
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
    Chunk,
    U,
    accept,
    accept_noted,
    agree,
    aiter_chunks,
    end_image,
    end_reasoning,
    end_text,
    end_tool,
    finish,
    reasoning_block,
    reasoning_delta,
    reject,
    start,
    text_block,
    text_delta,
    tool_block,
    tool_delta,
    usage,
)
from ..data import SEED_CHUNKS

# -- comparing a result with its wire form ------------------------------------------------------


def wire_view(result: sf.StreamResult) -> dict[str, Any]:
    """``to_wire()`` with optional usage/failure fields that are None dropped (SPEC §5: "left out (or None)")."""
    wire = result.to_wire()
    assert set(wire) == {"blocks", "usage", "finish"}
    usage_wire = wire["usage"]
    if usage_wire is not None:
        usage_wire = {k: v for k, v in usage_wire.items() if v is not None}
    finish_wire = {k: v for k, v in wire["finish"].items() if v is not None}
    if "failure" in finish_wire:
        finish_wire["failure"] = {k: v for k, v in finish_wire["failure"].items() if v is not None}
    return {"blocks": wire["blocks"], "usage": usage_wire, "finish": finish_wire}


# -- accepted streams and what they assemble to ------------------------------------------------

#: (stream, the `blocks` of to_wire()), each valid under both policies.
VALID = [
    pytest.param(
        SEED_CHUNKS,
        [
            {"type": "text", "text": "runoob 教程"},
            {"type": "tool-call", "id": "call-123", "name": "bash", "arguments": '{"command":"echo runoob"}'},
        ],
        id="seed example",
    ),
    pytest.param([U, STOP], [], id="stop with no blocks"),
    pytest.param([U, finish("max-tokens")], [], id="max-tokens with no blocks"),
    pytest.param([finish("error", FAILURE)], [], id="error with no blocks and no usage"),
    pytest.param([finish("aborted", FAILURE)], [], id="aborted with no blocks and no usage"),
    pytest.param(
        [start(0, "text"), end_text(0, "taken from block-end"), U, STOP],
        [{"type": "text", "text": "taken from block-end"}],
        id="rule 4: a text block with no deltas takes its content from block-end",
    ),
    pytest.param(
        [start(0, "reasoning"), end_reasoning(0, "think"), U, STOP],
        [{"type": "reasoning", "text": "think"}],
        id="rule 4: a reasoning block with no deltas takes its content from block-end",
    ),
    pytest.param(
        [start(0, "tool-call"), end_tool(0, "c1", "ls", '{"path": "/"}'), U, finish("tool-calls")],
        [{"type": "tool-call", "id": "c1", "name": "ls", "arguments": '{"path": "/"}'}],
        id="rule 4: a tool call with no deltas takes id, name and arguments from block-end",
    ),
    pytest.param(
        [start(0, "text"), end_text(0, ""), U, STOP],
        [{"type": "text", "text": ""}],
        id="rule 4: an empty block with no deltas",
    ),
    pytest.param(
        [start(0, "text"), text_delta(0, ""), text_delta(0, "a"), text_delta(0, ""), end_text(0, "a"), U, STOP],
        [{"type": "text", "text": "a"}],
        id="rule 4: empty text deltas add nothing",
    ),
    pytest.param(
        [start(0, "text"), text_delta(0, ""), end_text(0, ""), U, STOP],
        [{"type": "text", "text": ""}],
        id="rule 4: a block whose only delta is empty ends empty",
    ),
    pytest.param(
        [start(0, "reasoning"), reasoning_delta(0, ""), reasoning_delta(0, "x"), end_reasoning(0, "x"), U, STOP],
        [{"type": "reasoning", "text": "x"}],
        id="rule 4: empty reasoning deltas add nothing",
    ),
    pytest.param(
        [
            start(0, "tool-call"),
            tool_delta(0, "c1", "", name="ls"),
            tool_delta(0, "c1", '{"pa'),
            tool_delta(0, "c1", ""),
            tool_delta(0, "c1", 'th": "/tm'),
            tool_delta(0, "c1", 'p"}'),
            end_tool(0, "c1", "ls", '{"path": "/tmp"}'),
            U,
            finish("tool-calls"),
        ],
        [{"type": "tool-call", "id": "c1", "name": "ls", "arguments": '{"path": "/tmp"}'}],
        id="rule 4: tool arguments split mid-token, with empty deltas",
    ),
    pytest.param(
        [
            start(0, "tool-call"),
            tool_delta(0, "c1", '{"a":'),
            tool_delta(0, "c1", "1}"),
            end_tool(0, "c1", "named-at-end", '{"a":1}'),
            U,
            finish("tool-calls"),
        ],
        [{"type": "tool-call", "id": "c1", "name": "named-at-end", "arguments": '{"a":1}'}],
        id="rule 4: a tool-call name given only on block-end",
    ),
    pytest.param(
        [
            start(0, "tool-call"),
            tool_delta(0, "c1", '{"a":'),
            tool_delta(0, "c1", "1", name="late"),
            tool_delta(0, "c1", "}"),
            end_tool(0, "c1", "late", '{"a":1}'),
            U,
            finish("tool-calls"),
        ],
        [{"type": "tool-call", "id": "c1", "name": "late", "arguments": '{"a":1}'}],
        id="rule 5: the name first given on a later delta",
    ),
    pytest.param(
        [
            start(0, "tool-call"),
            tool_delta(0, "c1", '{"a":', name="same"),
            tool_delta(0, "c1", "1", name="same"),
            tool_delta(0, "c1", "}", name="same"),
            end_tool(0, "c1", "same", '{"a":1}'),
            U,
            finish("tool-calls"),
        ],
        [{"type": "tool-call", "id": "c1", "name": "same", "arguments": '{"a":1}'}],
        id="rule 5: every delta repeats the same name",
    ),
    pytest.param(
        [
            *reasoning_block(0, "Let me ", "look."),
            *text_block(1, "Listing ", "files."),
            *tool_block(2, "c1", "ls", '{"path":', ' "/"}'),
            *tool_block(3, "c2", "cat", '{"file": "a"}'),
            U,
            finish("tool-calls"),
        ],
        [
            {"type": "reasoning", "text": "Let me look."},
            {"type": "text", "text": "Listing files."},
            {"type": "tool-call", "id": "c1", "name": "ls", "arguments": '{"path": "/"}'},
            {"type": "tool-call", "id": "c2", "name": "cat", "arguments": '{"file": "a"}'},
        ],
        id="rule 2: blocks 0, 1, 2, 3 in order, two tool calls",
    ),
    pytest.param(
        [
            {"type": "block-start", "index": 0, "blockType": "text", "extra": 1},
            {"type": "text-delta", "index": 0, "text": "hi", "id": "", "name": None, "meta": {"x": 1}},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi", "extra": True}, "x": 0},
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}, "extra": "y"},
            {"type": "finish", "reason": {"kind": "stop"}, "extra": None},
        ],
        [{"type": "text", "text": "hi"}],
        id="extra keys are ignored, and never reach the assembled blocks",
    ),
    pytest.param(
        [*text_block(0, "naïve ", "😀", " 教程"), U, STOP],
        [{"type": "text", "text": "naïve 😀 教程"}],
        id="non-ASCII text",
    ),
    pytest.param(
        [*text_block(0, "a cat:"), start(1, "image"), end_image(1, {"id": "att-1", "mediaType": "image/png"}), U, STOP],
        [
            {"type": "text", "text": "a cat:"},
            {"type": "image", "attachment": {"id": "att-1", "mediaType": "image/png"}},
        ],
        id="§1: an image block (no deltas) keeps its attachment",
    ),
]


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize(("chunks", "blocks"), VALID)
def test_valid_stream_assembles_its_blocks(chunks: list[Chunk], blocks: list[Chunk], policy: Policy) -> None:
    result = accept(chunks, policy)
    assert result.to_wire()["blocks"] == blocks
    assert result.interrupted == []


@pytest.mark.parametrize("policy", BOTH)
def test_seed_result_attributes(policy: Policy) -> None:
    result = accept(SEED_CHUNKS, policy)
    assert result.text == "runoob 教程"
    assert result.reasoning == ""
    assert [type(b) for b in result.blocks] == [sf.TextBlock, sf.ToolCallBlock]
    (call,) = result.tool_calls
    assert (call.id, call.name, call.arguments) == ("call-123", "bash", '{"command":"echo runoob"}')
    assert call.parsed_arguments == {"command": "echo runoob"}
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (100, 50)
    assert result.usage.cache_read_tokens is None
    assert result.usage.cache_write_tokens is None
    assert result.usage.reasoning_tokens is None
    assert result.finish.kind == "stop"
    assert result.finish.failure is None


def test_text_and_reasoning_join_their_blocks_in_index_order() -> None:
    chunks = [
        *reasoning_block(0, "first "),
        *text_block(1, "Hello", ", "),
        *tool_block(2, "c1", "f", "{}"),
        *reasoning_block(3, "second"),
        *text_block(4, "world"),
        U,
        STOP,
    ]
    result = accept(chunks)
    assert result.text == "Hello, world"
    assert result.reasoning == "first second"
    assert [b.type for b in result.blocks] == ["reasoning", "text", "tool-call", "reasoning", "text"]  # type: ignore[union-attr]


def test_text_and_reasoning_are_empty_without_blocks() -> None:
    result = accept([U, STOP])
    assert (result.text, result.reasoning, result.tool_calls, result.blocks) == ("", "", [], [])


def test_tool_calls_and_their_parsed_arguments() -> None:
    chunks = [
        *text_block(0, "calling"),
        *tool_block(1, "c1", "ls", '{"path": "/", "all": true, "depth": 2}'),
        start(2, "tool-call"),
        end_tool(2, "c2", "noop", "{}"),
        *tool_block(3, "c3", "nested", '{"a": {"b": [1, 2.5, null, "x"]}}'),
        U,
        finish("tool-calls"),
    ]
    result = accept(chunks)
    assert [(c.id, c.name) for c in result.tool_calls] == [("c1", "ls"), ("c2", "noop"), ("c3", "nested")]
    assert [c.parsed_arguments for c in result.tool_calls] == [
        {"path": "/", "all": True, "depth": 2},
        {},
        {"a": {"b": [1, 2.5, None, "x"]}},
    ]
    # arguments stay the raw JSON text that came, not a re-serialisation
    assert result.tool_calls[0].arguments == '{"path": "/", "all": true, "depth": 2}'


def test_usage_attributes_with_every_optional_count() -> None:
    full = usage(7, 3, cacheReadTokens=0, cacheWriteTokens=4, reasoningTokens=2)
    result = accept([full, STOP])
    assert result.usage is not None
    u = result.usage
    assert (u.input_tokens, u.output_tokens) == (7, 3)
    assert (u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens) == (0, 4, 2)


def test_finish_failure_attributes() -> None:
    failure = {"message": "rate limited", "code": "RATE_LIMIT", "status": 429, "providerRetryAfterMs": 1500}
    result = accept([finish("error", failure)])
    assert result.finish.kind == "error"
    assert result.finish.failure is not None
    assert (result.finish.failure.message, result.finish.failure.code) == ("rate limited", "RATE_LIMIT")
    assert result.finish.failure.status == 429
    assert result.usage is None


# -- to_wire() (SPEC §5) ----------------------------------------------------------------------

WIRE = [
    pytest.param(
        SEED_CHUNKS,
        STRICT,
        {
            "blocks": [
                {"type": "text", "text": "runoob 教程"},
                {"type": "tool-call", "id": "call-123", "name": "bash", "arguments": '{"command":"echo runoob"}'},
            ],
            "usage": {"inputTokens": 100, "outputTokens": 50},
            "finish": {"kind": "stop"},
        },
        id="seed example: optional usage fields left out",
    ),
    pytest.param(
        [usage(1, 2, cacheReadTokens=3, cacheWriteTokens=0, reasoningTokens=5), STOP],
        STRICT,
        {
            "blocks": [],
            "usage": {
                "inputTokens": 1,
                "outputTokens": 2,
                "cacheReadTokens": 3,
                "cacheWriteTokens": 0,
                "reasoningTokens": 5,
            },
            "finish": {"kind": "stop"},
        },
        id="every optional usage field sent (a zero is sent, not left out)",
    ),
    pytest.param(
        [usage(1, 2, reasoningTokens=9), STOP],
        STRICT,
        {
            "blocks": [],
            "usage": {"inputTokens": 1, "outputTokens": 2, "reasoningTokens": 9},
            "finish": {"kind": "stop"},
        },
        id="one optional usage field sent",
    ),
    pytest.param(
        [*text_block(0, "a"), STOP],
        HARNESS,
        {"blocks": [{"type": "text", "text": "a"}], "usage": None, "finish": {"kind": "stop"}},
        id="no usage: usage is None",
    ),
    pytest.param(
        [finish("error", {"message": "boom", "code": "SERVER"})],
        STRICT,
        {"blocks": [], "usage": None, "finish": {"kind": "error", "failure": {"message": "boom", "code": "SERVER"}}},
        id="error finish: optional failure fields left out",
    ),
    pytest.param(
        [
            usage(3, 4),
            finish(
                "aborted",
                {
                    "message": "cancelled",
                    "code": "ABORTED",
                    "status": 499,
                    "providerRetryAfterMs": 0,
                    "requestId": "req-1",
                },
            ),
        ],
        STRICT,
        {
            "blocks": [],
            "usage": {"inputTokens": 3, "outputTokens": 4},
            "finish": {
                "kind": "aborted",
                "failure": {
                    "message": "cancelled",
                    "code": "ABORTED",
                    "status": 499,
                    "providerRetryAfterMs": 0,
                    "requestId": "req-1",
                },
            },
        },
        id="aborted finish: every failure field sent",
    ),
    pytest.param(
        [start(0, "text"), text_delta(0, "cut"), U, finish("max-tokens")],
        STRICT,
        {"blocks": [], "usage": {"inputTokens": 10, "outputTokens": 5}, "finish": {"kind": "max-tokens"}},
        id="interrupted blocks are not among the blocks",
    ),
    pytest.param(
        [
            start(0, "tool-call"),
            {
                "type": "block-end",
                "index": 0,
                "block": {"type": "tool-call", "id": "c", "name": "f", "arguments": "{}", "extra": 1},
            },
            U,
            finish("tool-calls"),
        ],
        STRICT,
        {
            "blocks": [{"type": "tool-call", "id": "c", "name": "f", "arguments": "{}"}],
            "usage": {"inputTokens": 10, "outputTokens": 5},
            "finish": {"kind": "tool-calls"},
        },
        id="a block-end's extra keys are not in the block",
    ),
]


@pytest.mark.parametrize(("chunks", "policy", "wire"), WIRE)
def test_to_wire(chunks: list[Chunk], policy: Policy, wire: dict[str, Any]) -> None:
    result = accept(chunks, policy)
    assert wire_view(result) == wire
    json.dumps(result.to_wire())  # plain JSON data


def test_to_wire_blocks_have_exactly_the_block_end_keys() -> None:
    result = accept(SEED_CHUNKS)
    for block in result.to_wire()["blocks"]:
        expected = {"type", "text"} if block["type"] != "tool-call" else {"type", "id", "name", "arguments"}
        assert set(block) == expected


# -- rule 1: pairs, and interrupted blocks ------------------------------------------------------


def attrs(block: Any, expected: dict[str, Any]) -> dict[str, Any]:
    return {key: getattr(block, key) for key in expected}


#: (policy, stream, interrupted blocks as attributes, completed blocks' types)
INTERRUPTED = [
    pytest.param(
        BOTH,
        [start(0, "text"), text_delta(0, "Hel"), text_delta(0, "lo"), U, finish("max-tokens")],
        [{"type": "text", "text": "Hello"}],
        [],
        id="max-tokens cuts a text block off (usage while the block is open)",
    ),
    pytest.param(
        BOTH,
        [start(0, "reasoning"), reasoning_delta(0, "hmm"), finish("error", FAILURE)],
        [{"type": "reasoning", "text": "hmm"}],
        [],
        id="error cuts a reasoning block off, no usage",
    ),
    pytest.param(
        BOTH,
        [start(0, "reasoning"), reasoning_delta(0, "hmm"), U, finish("error", FAILURE)],
        [{"type": "reasoning", "text": "hmm"}],
        [],
        id="error cuts a block off, usage while it was open",
    ),
    pytest.param(
        BOTH,
        [
            *text_block(0, "calling"),
            start(1, "tool-call"),
            tool_delta(1, "c1", '{"cmd": "l', name="sh"),
            finish("aborted", FAILURE),
        ],
        [{"type": "tool-call", "id": "c1", "name": "sh", "arguments": '{"cmd": "l'}],
        ["text"],
        id="aborted cuts a tool call off after a completed text block",
    ),
    pytest.param(
        BOTH,
        [start(0, "text"), finish("aborted", FAILURE)],
        [{"type": "text", "text": ""}],
        [],
        id="a block with no deltas yet is interrupted empty",
    ),
    pytest.param(
        BOTH,
        [start(0, "tool-call"), U, finish("max-tokens")],
        [{"type": "tool-call", "arguments": ""}],
        [],
        id="a tool call with no deltas yet is interrupted with no arguments",
    ),
    pytest.param(
        BOTH,
        [start(0, "text"), text_delta(0, ""), text_delta(0, "x"), U, finish("max-tokens")],
        [{"type": "text", "text": "x"}],
        [],
        id="empty deltas in an interrupted block",
    ),
    pytest.param(
        (HARNESS,),
        [
            start(0, "reasoning"),
            reasoning_delta(0, "thinking"),
            start(1, "tool-call"),
            tool_delta(1, "c1", '{"q":', name="search"),
            start(2, "text"),
            text_delta(2, "done"),
            end_text(2, "done"),
            finish("aborted", FAILURE),
        ],
        [
            {"type": "reasoning", "text": "thinking"},
            {"type": "tool-call", "id": "c1", "name": "search", "arguments": '{"q":'},
        ],
        ["text"],
        id="HARNESS: several open blocks interrupted, in index order",
    ),
]


@pytest.mark.parametrize(("policies", "chunks", "interrupted", "completed"), INTERRUPTED)
def test_cut_off_finish_reports_open_blocks_as_interrupted(
    policies: tuple[Policy, ...],
    chunks: list[Chunk],
    interrupted: list[dict[str, Any]],
    completed: list[str],
) -> None:
    for policy in policies:
        result = accept(chunks, policy)
        assert [attrs(b, e) for b, e in zip(result.interrupted, interrupted, strict=False)] == interrupted
        assert len(result.interrupted) == len(interrupted)
        assert [b.type for b in result.blocks] == completed  # type: ignore[union-attr]
        assert [b["type"] for b in result.to_wire()["blocks"]] == completed
        assert len(result.tool_calls) == completed.count("tool-call")


def test_interrupted_text_is_not_in_result_text() -> None:
    chunks = [*text_block(0, "whole. "), start(1, "text"), text_delta(1, "half"), U, finish("max-tokens")]
    result = accept(chunks)
    assert result.text == "whole. "
    assert [b.text for b in result.interrupted] == ["half"]  # type: ignore[union-attr]


@pytest.mark.parametrize("policy", BOTH)
def test_interrupted_is_empty_when_every_block_ended(policy: Policy) -> None:
    for kind in ("stop", "max-tokens"):
        assert accept([*text_block(0, "a"), U, finish(kind)], policy).interrupted == []
    assert accept([*text_block(0, "a"), finish("error", FAILURE)], policy).interrupted == []


# -- every rule, broken -------------------------------------------------------------------------

#: (rule, policies, stream whose last chunk breaks it, code)
BROKEN = [
    # 1. pairs
    pytest.param(BOTH, [start(0, "text"), U, STOP], ErrorCode.BLOCK_NOT_CLOSED, id="1: open block at stop"),
    pytest.param(
        BOTH,
        [*tool_block(0, "c", "f", "{}"), start(1, "text"), U, finish("tool-calls")],
        ErrorCode.BLOCK_NOT_CLOSED,
        id="1: open block at tool-calls",
    ),
    pytest.param(
        BOTH,
        [start(0, "text"), text_delta(0, "x")],
        ErrorCode.STREAM_TRUNCATED,
        id="1/7: input ends inside a block",
    ),
    # 2. index order
    pytest.param(BOTH, [start(1, "text")], ErrorCode.INDEX_OUT_OF_ORDER, id="2: first block has index 1"),
    pytest.param(BOTH, [*text_block(0, "a"), start(0, "text")], ErrorCode.INDEX_OUT_OF_ORDER, id="2: index 0 twice"),
    pytest.param(BOTH, [*text_block(0, "a"), start(2, "text")], ErrorCode.INDEX_OUT_OF_ORDER, id="2: index 1 skipped"),
    pytest.param(
        BOTH,
        [*text_block(0, "a"), *text_block(1, "b"), start(1, "text")],
        ErrorCode.INDEX_OUT_OF_ORDER,
        id="2: an index goes back",
    ),
    # 3. deltas address their block
    pytest.param(BOTH, [text_delta(0, "x")], ErrorCode.BLOCK_NOT_OPEN, id="3: delta before any block-start"),
    pytest.param(
        BOTH, [start(0, "text"), text_delta(1, "x")], ErrorCode.BLOCK_NOT_OPEN, id="3: delta for another index"
    ),
    pytest.param(
        BOTH, [*text_block(0, "a"), text_delta(0, "x")], ErrorCode.BLOCK_NOT_OPEN, id="3: delta after block-end"
    ),
    pytest.param(BOTH, [*text_block(0, "a"), end_text(0, "a")], ErrorCode.BLOCK_NOT_OPEN, id="3: block-end twice"),
    pytest.param(
        BOTH, [start(0, "text"), reasoning_delta(0, "x")], ErrorCode.BLOCK_TYPE_MISMATCH, id="3: delta of another type"
    ),
    pytest.param(
        BOTH,
        [start(0, "reasoning"), end_text(0, "")],
        ErrorCode.BLOCK_TYPE_MISMATCH,
        id="3: block-end of another type",
    ),
    pytest.param(
        (STRICT,),
        [start(0, "reasoning"), start(1, "text")],
        ErrorCode.BLOCKS_INTERLEAVED,
        id="3: STRICT: a block starts while another is open",
    ),
    # 4. the complete block
    pytest.param(
        BOTH,
        [start(0, "text"), text_delta(0, "a"), text_delta(0, "b"), end_text(0, "a")],
        ErrorCode.BLOCK_CONTENT_MISMATCH,
        id="4: block-end text differs from the deltas",
    ),
    pytest.param(
        BOTH,
        [start(0, "text"), text_delta(0, ""), end_text(0, "x")],
        ErrorCode.BLOCK_CONTENT_MISMATCH,
        id="4: a block with one empty delta must end empty",
    ),
    pytest.param(
        BOTH,
        [start(0, "tool-call"), tool_delta(0, "c1", "", name="f"), end_tool(0, "c1", "f", "{}")],
        ErrorCode.BLOCK_CONTENT_MISMATCH,
        id="4: a tool call with one empty arguments delta must end with empty arguments",
    ),
    pytest.param(
        BOTH,
        [start(0, "tool-call"), tool_delta(0, "c1", "{}"), end_tool(0, "c2", "f", "{}")],
        ErrorCode.BLOCK_CONTENT_MISMATCH,
        id="4: tool-call id differs from the deltas'",
    ),
    pytest.param(
        BOTH,
        [start(0, "tool-call"), tool_delta(0, "c1", "{}", name="f"), end_tool(0, "c1", "g", "{}")],
        ErrorCode.BLOCK_CONTENT_MISMATCH,
        id="4: tool-call name differs from the one a delta gave",
    ),
    pytest.param(
        BOTH,
        [start(0, "tool-call"), tool_delta(0, "c1", '{"a":1}'), end_tool(0, "c1", "f", '{"a": 1}')],
        ErrorCode.BLOCK_CONTENT_MISMATCH,
        id="4: tool arguments differ from the deltas (even only in whitespace)",
    ),
    # 5. tool calls
    pytest.param(
        BOTH,
        [start(0, "tool-call"), tool_delta(0, "c1", "{"), tool_delta(0, "c2", "}")],
        ErrorCode.TOOL_CALL_CONFLICT,
        id="5: a later delta changes the id",
    ),
    pytest.param(
        BOTH,
        [start(0, "tool-call"), tool_delta(0, "c1", "{", name="a"), tool_delta(0, "c1", "}", name="b")],
        ErrorCode.TOOL_CALL_CONFLICT,
        id="5: a later delta changes the name",
    ),
    pytest.param(
        BOTH,
        [
            start(0, "tool-call"),
            tool_delta(0, "c1", "{"),
            tool_delta(0, "c1", "", name="a"),
            tool_delta(0, "c1", "}", name="b"),
        ],
        ErrorCode.TOOL_CALL_CONFLICT,
        id="5: a name first given on a later delta, then changed",
    ),
    pytest.param(
        (STRICT,),
        [*tool_block(0, "c1", "f", "{}"), start(1, "tool-call"), tool_delta(1, "c1", "{}")],
        ErrorCode.TOOL_CALL_CONFLICT,
        id="5: STRICT: an id reused by a later block's delta",
    ),
    pytest.param(
        (STRICT,),
        [*tool_block(0, "c1", "f", "{}"), start(1, "tool-call"), end_tool(1, "c1", "f", "{}")],
        ErrorCode.TOOL_CALL_CONFLICT,
        id="5: STRICT: an id reused by a later block with no deltas",
    ),
    pytest.param(
        (STRICT,),
        [start(0, "tool-call"), end_tool(0, "c1", "f", "{}"), start(1, "tool-call"), tool_delta(1, "c1", "{}")],
        ErrorCode.TOOL_CALL_CONFLICT,
        id="5: STRICT: an id of a no-delta block reused by a later block's delta",
    ),
    pytest.param(
        (STRICT,),
        [*tool_block(0, "c1", "f", "[1]")],
        ErrorCode.TOOL_ARGUMENTS_INVALID,
        id="5: STRICT: arguments that are not an object",
    ),
    # 6. usage before finish
    pytest.param(BOTH, [U, U], ErrorCode.USAGE_DUPLICATE, id="6: two usages"),
    pytest.param(
        BOTH, [*text_block(0, "a"), U, start(1, "text")], ErrorCode.CHUNK_AFTER_USAGE, id="6: block after usage"
    ),
    pytest.param(
        BOTH, [start(0, "text"), U, text_delta(0, "x")], ErrorCode.CHUNK_AFTER_USAGE, id="6: delta after usage"
    ),
    pytest.param(
        BOTH, [start(0, "text"), U, end_text(0, "")], ErrorCode.CHUNK_AFTER_USAGE, id="6: block-end after usage"
    ),
    pytest.param((STRICT,), [STOP], ErrorCode.USAGE_MISSING, id="6: STRICT: stop without usage"),
    pytest.param(
        (STRICT,),
        [*tool_block(0, "c", "f", "{}"), finish("tool-calls")],
        ErrorCode.USAGE_MISSING,
        id="6: STRICT: tool-calls without usage",
    ),
    pytest.param(
        (STRICT,),
        [start(0, "text"), text_delta(0, "x"), finish("max-tokens")],
        ErrorCode.USAGE_MISSING,
        id="6: STRICT: max-tokens without usage",
    ),
    # 7. finish last
    pytest.param(BOTH, [U, STOP, STOP], ErrorCode.CHUNK_AFTER_FINISH, id="7: a second finish"),
    pytest.param(BOTH, [U, STOP, start(0, "text")], ErrorCode.CHUNK_AFTER_FINISH, id="7: a block after finish"),
    pytest.param(BOTH, [finish("error", FAILURE), U], ErrorCode.CHUNK_AFTER_FINISH, id="7: usage after finish"),
    pytest.param(BOTH, [], ErrorCode.STREAM_TRUNCATED, id="7: no chunks at all"),
    pytest.param(BOTH, SEED_CHUNKS[:-1], ErrorCode.STREAM_TRUNCATED, id="7: the seed without its finish"),
    # 8. finish reason
    pytest.param(
        (STRICT,),
        [U, finish("tool-calls")],
        ErrorCode.FINISH_REASON_MISMATCH,
        id="8: STRICT: tool-calls with no blocks",
    ),
    pytest.param(
        (STRICT,),
        [*text_block(0, "a"), U, finish("tool-calls")],
        ErrorCode.FINISH_REASON_MISMATCH,
        id="8: STRICT: tool-calls with only a text block",
    ),
]


@pytest.mark.parametrize(("policies", "chunks", "code"), BROKEN)
def test_broken_rule_is_rejected(policies: tuple[Policy, ...], chunks: list[Chunk], code: ErrorCode) -> None:
    for policy in policies:
        err = reject(chunks, policy, check_index=True)
        assert err.code == code, f"{policy}: {err}"


#: SPEC §4: the STRICT-only cases of rules 5 and 8 above, each stream completed. (stream, the position STRICT
#: refuses it at, its code there, the ``blocks`` of HARNESS's ``to_wire()``.)
KEPT_BY_HARNESS = [
    pytest.param(
        [*tool_block(0, "c1", "f", "{}"), start(1, "tool-call"), tool_delta(1, "c1", '{"a":1}'),
         end_tool(1, "c1", "f", '{"a":1}'), U, finish("tool-calls")],
        4, ErrorCode.TOOL_CALL_CONFLICT,
        [{"type": "tool-call", "id": "c1", "name": "f", "arguments": "{}"},
         {"type": "tool-call", "id": "c1", "name": "f", "arguments": '{"a":1}'}],
        id="5: an id reused by a later block's delta",
    ),
    pytest.param(
        [*tool_block(0, "c1", "f", "{}"), start(1, "tool-call"), end_tool(1, "c1", "g", "{}"), U, finish("tool-calls")],
        4, ErrorCode.TOOL_CALL_CONFLICT,
        [{"type": "tool-call", "id": "c1", "name": "f", "arguments": "{}"},
         {"type": "tool-call", "id": "c1", "name": "g", "arguments": "{}"}],
        id="5: an id reused by a later block with no deltas",
    ),
    pytest.param(
        [start(0, "tool-call"), end_tool(0, "c1", "f", "{}"), start(1, "tool-call"), tool_delta(1, "c1", "{}"),
         end_tool(1, "c1", "f", "{}"), U, STOP],
        3, ErrorCode.TOOL_CALL_CONFLICT,
        [{"type": "tool-call", "id": "c1", "name": "f", "arguments": "{}"}] * 2,
        id="5: an id of a no-delta block reused by a later block's delta",
    ),
    pytest.param(
        [*tool_block(0, "c1", "f", "[1]"), U, finish("tool-calls")],
        2, ErrorCode.TOOL_ARGUMENTS_INVALID,
        [{"type": "tool-call", "id": "c1", "name": "f", "arguments": "[1]"}],
        id="5: arguments that are not an object, kept raw",
    ),
    pytest.param([U, finish("tool-calls")], 1, ErrorCode.FINISH_REASON_MISMATCH, [], id="8: tool-calls with no blocks"),
    pytest.param(
        [*text_block(0, "a"), U, finish("tool-calls")],
        4, ErrorCode.FINISH_REASON_MISMATCH,
        [{"type": "text", "text": "a"}],
        id="8: tool-calls with only a text block",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("chunks", "position", "code", "blocks"), KEPT_BY_HARNESS)
def test_harness_keeps_what_strict_refuses_and_notes_it(
    chunks: list[Chunk], position: int, code: ErrorCode, blocks: list[Chunk]
) -> None:
    err = reject(chunks[: position + 1], STRICT, check_index=True)
    assert err.code == code
    result, notes = accept_noted(chunks, HARNESS)
    assert result.to_wire()["blocks"] == blocks
    assert result.finish.kind == chunks[-1]["reason"]["kind"]
    # The first chunk STRICT refuses is the note's: its code, at its position (nothing before it is noted).
    assert notes[0][:2] == (code, position), notes
    assert all(index is not None and index >= position for _, index, _ in notes)


# -- rule 5: tool arguments are a JSON object (RFC 8259) ----------------------------------------

VALID_ARGUMENTS = [
    "{}",
    '{"a": 1}',
    ' \n\t{"a": [true, false, null]}\r\n ',
    '{"big": 123456789012345678901234567890}',
    '{"near the top of a double": 1.7e308}',
    '{"neg": -0.5e-3, "s": "\\u00e9\\n\\"", "e": ""}',
    '{"pair": "\\ud83d\\ude00"}',
    '{"a": {"b": {"c": {}}}}',
    '{"dup": 1, "dup": 2}',
]

INVALID_ARGUMENTS = [
    "",
    " ",
    "{",
    '{"a": 1',
    '{"a": 1}}',
    '{"a": 1} {"b": 2}',
    "[]",
    "[{}]",
    '"text"',
    "1",
    "true",
    "null",
    "NaN",
    '{"a": NaN}',
    '{"a": Infinity}',
    '{"a": -Infinity}',
    "{'a': 1}",
    "{a: 1}",
    '{"a": 1,}',
    '{"a": 01}',
    '{"a": .5}',
    '{"a": "\x01"}',
    '{"a": undefined}',
    "// comment\n{}",
    '{"huge": 1e400}',  # a number no double holds is refused, never read as infinity (docs/guides/limits.md)
]


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize("arguments", VALID_ARGUMENTS)
def test_arguments_that_are_a_json_object(arguments: str, policy: Policy) -> None:
    with_deltas = tool_block(0, "c1", "f", *arguments)  # one delta a character
    without = [start(0, "tool-call"), end_tool(0, "c1", "f", arguments)]
    for blocks in (with_deltas, without):
        result = accept([*blocks, U, finish("tool-calls")], policy)
        (call,) = result.tool_calls
        assert call.arguments == arguments
        # Integers keep every digit (orjson alone would turn those past 64 bits into floats).
        assert call.parsed_arguments == json.loads(arguments)


@pytest.mark.parametrize("policy", BOTH)
def test_arguments_with_an_unpaired_surrogate_escape_are_json(policy: Policy) -> None:
    # RFC 8259 §7 and §8.2: the grammar allows an escape such as "\udead" that encodes no character;
    # such a text is JSON (its strings are merely not valid Unicode), so it is a JSON object here.
    arguments = '{"lone": "\\udead"}'
    for blocks in (
        tool_block(0, "c1", "f", arguments),
        [start(0, "tool-call"), end_tool(0, "c1", "f", arguments)],
    ):
        (call,) = accept([*blocks, U, finish("tool-calls")], policy).tool_calls
        assert call.arguments == arguments
        assert call.parsed_arguments.keys() == {"lone"}


@pytest.mark.parametrize("arguments", INVALID_ARGUMENTS)
def test_arguments_that_are_not_a_json_object(arguments: str) -> None:
    with_deltas = tool_block(0, "c1", "f", *(arguments or [""]))
    without = [start(0, "tool-call"), end_tool(0, "c1", "f", arguments)]
    for blocks in (with_deltas, without):
        err = reject(blocks, STRICT, check_index=True)
        assert err.code == ErrorCode.TOOL_ARGUMENTS_INVALID


@pytest.mark.parametrize(
    ("policy", "raw_arguments"),
    [(HARNESS, False), (HARNESS, True), (STRICT, True)],
    ids=["harness", "harness, raw", "strict, raw"],
)
@pytest.mark.parametrize("arguments", INVALID_ARGUMENTS)
def test_arguments_that_are_not_a_json_object_are_kept_raw(arguments: str, policy: Policy, raw_arguments: bool) -> None:
    """SPEC §4 (and ``raw_arguments=True`` under STRICT): kept as they came; ``parsed_arguments`` says why not."""
    with_deltas = tool_block(0, "c1", "f", *(arguments or [""]))
    without = [start(0, "tool-call"), end_tool(0, "c1", "f", arguments)]
    for blocks in (with_deltas, without):
        result, notes = accept_noted([*blocks, U, finish("tool-calls")], policy, raw_arguments=raw_arguments)
        (call,) = result.tool_calls
        assert (call.id, call.name, call.arguments) == ("c1", "f", arguments)
        assert result.to_wire()["blocks"] == [{"type": "tool-call", "id": "c1", "name": "f", "arguments": arguments}]
        with pytest.raises(ValueError, match="not a JSON object") as info:
            _ = call.parsed_arguments
        assert "'c1'" in str(info.value)
        assert notes == [(ErrorCode.TOOL_ARGUMENTS_INVALID, len(blocks) - 1, 1)]


# -- rule 6: usage is optional before error and aborted ----------------------------------------


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize("kind", ["error", "aborted"])
def test_usage_is_optional_before_error_and_aborted(kind: str, policy: Policy) -> None:
    without = accept([*text_block(0, "a"), finish(kind, FAILURE)], policy)
    assert without.usage is None
    with_usage = accept([*text_block(0, "a"), usage(4, 2), finish(kind, FAILURE)], policy)
    assert with_usage.usage is not None and with_usage.usage.input_tokens == 4


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize("kind", ["stop", "max-tokens", "error", "aborted"])
def test_usage_before_any_block_then_finish(kind: str, policy: Policy) -> None:
    failure = FAILURE if kind in ("error", "aborted") else None
    result = accept([usage(1, 1), finish(kind, failure)], policy)
    assert result.blocks == [] and result.usage is not None


@pytest.mark.parametrize("policy", BOTH)
def test_no_block_may_start_after_usage(policy: Policy) -> None:
    err = reject([usage(1, 1), start(0, "tool-call")], policy, check_index=True)
    assert (err.code, err.chunk_index) == (ErrorCode.CHUNK_AFTER_USAGE, 1)


@pytest.mark.parametrize("policy", BOTH)
def test_usage_while_a_block_is_open_then_only_finish(policy: Policy) -> None:
    head = [start(0, "text"), text_delta(0, "par"), usage(8, 3)]
    result = accept([*head, finish("max-tokens")], policy)
    assert result.usage is not None and (result.usage.input_tokens, result.usage.output_tokens) == (8, 3)
    assert [b.text for b in result.interrupted] == ["par"]  # type: ignore[union-attr]
    assert reject([*head, STOP], policy, check_index=True).code == ErrorCode.BLOCK_NOT_CLOSED
    assert reject([*head, text_delta(0, "t")], policy, check_index=True).code == ErrorCode.CHUNK_AFTER_USAGE


# -- the stream-wide byte limit, met exactly (the chunk past it: test_messages.py, hardening/test_input_bounds.py) ---

AT_THE_STREAM_LIMIT = {
    # 30 bytes: deltas counted as they come, then a block without deltas counted at its end.
    "deltas then a block without deltas": (
        STRICT, [*text_block(0, "a" * 10, "a" * 10), start(1, "text"), end_text(1, "b" * 10), U, STOP],
    ),
    # 30 bytes in deltas to two open blocks, the hot block changing at every delta.
    "deltas to two open blocks": (
        HARNESS,
        [start(0, "text"), start(1, "text"), *[text_delta(i % 2, "x" * 5) for i in range(6)],
         end_text(0, "x" * 15), end_text(1, "x" * 15), U, STOP],
    ),
}  # fmt: skip


@pytest.mark.parametrize(("policy", "chunks"), AT_THE_STREAM_LIMIT.values(), ids=AT_THE_STREAM_LIMIT.keys())
def test_a_stream_of_exactly_its_byte_limit_is_accepted(policy: Policy, chunks: list[Chunk]) -> None:
    assert agree(chunks, policy, sf.Limits(max_stream_bytes=30))["verdict"][0] == "ok"
    assert agree(chunks, policy, sf.Limits(max_stream_bytes=29))["verdict"][0] != "ok"


def _first_past(chunks: list[Chunk], limit: int) -> int | None:
    """Where the stream's bytes first pass ``limit``, counted as the rule counts them: a delta's text at the delta,
    the text of a block with no deltas at its block-end."""
    total, with_deltas = 0, set()
    for i, c in enumerate(chunks):
        if c["type"] == "text-delta":
            with_deltas.add(c["index"])
            total += len(c["text"].encode())
        elif c["type"] == "block-end" and c["index"] not in with_deltas:
            total += len(c["block"]["text"].encode())
        if total > limit:
            return i
    return None


@pytest.mark.parametrize("first", ["", "x" * 7, "x" * 30, "é" * 15])
def test_a_block_ending_while_another_is_hot_passes_the_stream_limit_where_the_bytes_do(first: str) -> None:
    """Block 1 is hot, its deltas (four bytes a character: the most a unit of its size may hold) not yet counted,
    when block 0 ends; at every limit around the total, the stream fails where its exact bytes first pass it,
    whatever was counted when."""
    face = "\U0001f600"
    chunks = [
        start(0, "text"), start(1, "text"), text_delta(1, face * 5), text_delta(1, face * 5), end_text(0, first),
        text_delta(1, "é"), end_text(1, face * 10 + "é"), U, STOP,
    ]  # fmt: skip
    total = len(first.encode()) + len((face * 10 + "é").encode())
    for limit in range(1, total + 2):
        verdict = agree(chunks, HARNESS, sf.Limits(max_stream_bytes=limit))["verdict"]
        at = _first_past(chunks, limit)
        if at is None:
            assert verdict[0] == "ok", limit
        else:
            assert verdict[:3] == ("error", str(ErrorCode.LIMIT_EXCEEDED), at), (limit, verdict)
            assert f"the stream would hold {_total_at(chunks, at)} bytes, more than {limit}" in verdict[3], verdict


def _total_at(chunks: list[Chunk], at: int) -> int:
    """The stream's exact bytes with chunk ``at`` (as ``_first_past`` counts them)."""
    return next(t for t in range(10_000) if _first_past(chunks[: at + 1], t) is None)


# -- rule 8: the finish reason ------------------------------------------------------------------


@pytest.mark.parametrize("policy", BOTH)
def test_stop_allows_no_tool_call_and_also_some(policy: Policy) -> None:
    assert accept([*text_block(0, "a"), U, STOP], policy).finish.kind == "stop"
    assert accept([*tool_block(0, "c", "f", "{}"), U, STOP], policy).tool_calls[0].id == "c"


@pytest.mark.parametrize("policy", BOTH)
def test_tool_calls_needs_a_completed_tool_call(policy: Policy) -> None:
    assert accept([*tool_block(0, "c", "f", "{}"), U, finish("tool-calls")], policy).finish.kind == "tool-calls"
    no_delta = [start(0, "tool-call"), end_tool(0, "c", "f", "{}"), U, finish("tool-calls")]
    assert accept(no_delta, policy).tool_calls[0].name == "f"


# -- the entry points agree --------------------------------------------------------------------


def _gen(chunks: list[Chunk]) -> Iterator[Chunk]:
    yield from chunks


def test_entry_points_assemble_the_same_result() -> None:
    expected = accept(SEED_CHUNKS)
    assert sf.assemble(_gen(SEED_CHUNKS)) == expected
    assert sf.assemble(tuple(SEED_CHUNKS)) == expected
    assert asyncio.run(sf.aassemble(aiter_chunks(SEED_CHUNKS))) == expected
    assert list(sf.validate(SEED_CHUNKS)) == SEED_CHUNKS


def test_entry_points_raise_the_same_error() -> None:
    chunks = [start(0, "text"), text_delta(1, "x")]
    for run in (
        lambda: sf.assemble(chunks),
        lambda: asyncio.run(sf.aassemble(aiter_chunks(chunks))),
        lambda: list(sf.validate(chunks)),
    ):
        with pytest.raises(LlmError) as info:
            run()
        assert (info.value.code, info.value.chunk_index) == (ErrorCode.BLOCK_NOT_OPEN, 1)

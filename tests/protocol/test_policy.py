"""SPEC §4: what ``Policy.HARNESS`` allows that ``Policy.STRICT`` (the default) rejects, and nothing else.

The second part of this module: image blocks under both policies, and each thing HARNESS keeps that STRICT
refuses, with the notes of what STRICT would have refused (SPEC §1 and §4).

HARNESS is what DeepSeek Harness accepts: blocks may interleave (each delta and block-end addresses its
block by index); ``usage`` is optional; a block of a type the protocol does not know is accepted when it
has no deltas, and a finish of a kind it does not know when no block is open, both kept as they came; a
tool call's id and name may be empty, its id may be another block's, and its arguments need not be a
JSON object (kept raw); ``tool-calls`` may come without a tool call. It keeps the corruption checks
upstream lacks (content equals deltas, index order, nothing but finish after usage, one id and name per
tool-call block). ``BLOCKS_INTERLEAVED``, ``USAGE_MISSING`` and ``FINISH_REASON_MISMATCH`` are never
raised under it; what STRICT would have refused is noted (:attr:`StreamAssembler.notes`). A policy may
be given as its string value.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import math
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import ErrorCode, LlmError, Policy
from streamfsm._table import READY, accepts, as_policy

from ..builders import (
    BOTH,
    FAILURE,
    HARNESS,
    STOP,
    STRICT,
    TEXT,
    Chunk,
    E,
    Note,
    U,
    accept_noted,
    agree,
    aiter_chunks,
    end_block,
    end_image,
    end_reasoning,
    end_text,
    end_tool,
    finish,
    notes_of,
    reasoning_delta,
    start,
    text_block,
    text_delta,
    tool_block,
    tool_delta,
    usage,
)
from ..data import SEED_CHUNKS


def outcome(chunks: list[Chunk], policy: Policy | str) -> sf.StreamResult | LlmError:
    """The result of a stream, or the error it raised (with the position it was raised at checked)."""
    asm = sf.StreamAssembler(policy=policy)
    for position, chunk in enumerate(chunks):
        try:
            asm.feed(chunk)
        except LlmError as err:
            assert err.chunk_index == position
            return err
    try:
        return asm.close()
    except LlmError as err:
        return err


def error(chunks: list[Chunk], policy: Policy | str) -> LlmError:
    got = outcome(chunks, policy)
    assert isinstance(got, LlmError), f"accepted under {policy}: {got!r}"
    return got


def result(chunks: list[Chunk], policy: Policy | str) -> sf.StreamResult:
    got = outcome(chunks, policy)
    assert isinstance(got, sf.StreamResult), f"rejected under {policy}: {got}"
    return got


# -- the default, and policies as strings -------------------------------------------------------

INTERLEAVED = [start(0, "reasoning"), start(1, "text"), end_text(1, ""), end_reasoning(0, ""), U, STOP]
NO_USAGE = [*TEXT, STOP]


def test_strict_is_the_default() -> None:
    asm = sf.StreamAssembler()
    asm.feed(INTERLEAVED[0])
    with pytest.raises(LlmError) as info:
        asm.feed(INTERLEAVED[1])
    assert info.value.code == E.BLOCKS_INTERLEAVED
    with pytest.raises(LlmError) as info:
        sf.assemble(NO_USAGE)
    assert info.value.code == E.USAGE_MISSING


def test_policy_values_are_the_strings() -> None:
    assert Policy.STRICT == "strict"  # type: ignore[comparison-overlap]
    assert Policy.HARNESS == "harness"  # type: ignore[comparison-overlap]
    assert Policy("strict") is Policy.STRICT
    assert Policy("harness") is Policy.HARNESS


async def _avalidate_all(chunks: list[Chunk], policy: Policy | str) -> list[Chunk]:
    return [chunk async for chunk in sf.avalidate(aiter_chunks(chunks), policy=policy)]


Run = Callable[[list[Chunk], Any], Any]
ENTRY_POINTS: list[tuple[str, Run]] = [
    ("StreamAssembler", lambda chunks, policy: outcome(chunks, policy)),
    ("assemble", lambda chunks, policy: sf.assemble(chunks, policy=policy)),
    ("aassemble", lambda chunks, policy: asyncio.run(sf.aassemble(aiter_chunks(chunks), policy=policy))),
    ("validate", lambda chunks, policy: list(sf.validate(chunks, policy=policy))),
    ("avalidate", lambda chunks, policy: asyncio.run(_avalidate_all(chunks, policy))),
]


@pytest.mark.parametrize(("name", "run"), ENTRY_POINTS, ids=[name for name, _ in ENTRY_POINTS])
@pytest.mark.parametrize("policy", ["strict", Policy.STRICT])
def test_strict_as_string_or_enum(name: str, run: Run, policy: Policy | str) -> None:
    for chunks, code in ((INTERLEAVED, E.BLOCKS_INTERLEAVED), (NO_USAGE, E.USAGE_MISSING)):
        try:
            got = run(chunks, policy)
        except LlmError as err:
            got = err
        assert isinstance(got, LlmError), f"{name} accepted under {policy!r}"
        assert got.code == code


@pytest.mark.parametrize(("name", "run"), ENTRY_POINTS, ids=[name for name, _ in ENTRY_POINTS])
@pytest.mark.parametrize("policy", ["harness", Policy.HARNESS])
def test_harness_as_string_or_enum(name: str, run: Run, policy: Policy | str) -> None:
    for chunks in (INTERLEAVED, NO_USAGE):
        got = run(chunks, policy)
        assert not isinstance(got, LlmError), f"{name} rejected under {policy!r}: {got}"
        if isinstance(got, list):
            assert got == chunks


def test_assembler_reports_its_policy_given_as_a_string() -> None:
    assert sf.StreamAssembler(policy="harness").policy is Policy.HARNESS
    assert sf.StreamAssembler(policy="strict").policy is Policy.STRICT


# -- difference 1: interleaving -------------------------------------------------------------------

#: (stream, position of the first block-start while another block is open, HARNESS's blocks)
INTERLEAVING = [
    pytest.param(
        [
            start(0, "reasoning"),
            reasoning_delta(0, "I should "),
            start(1, "tool-call"),
            tool_delta(1, "call-1", '{"q": ', name="search"),
            reasoning_delta(0, "search."),
            tool_delta(1, "call-1", '"x"}'),
            end_tool(1, "call-1", "search", '{"q": "x"}'),
            end_reasoning(0, "I should search."),
            U,
            finish("tool-calls"),
        ],
        2,
        [
            {"type": "reasoning", "text": "I should search."},
            {"type": "tool-call", "id": "call-1", "name": "search", "arguments": '{"q": "x"}'},
        ],
        id="a reasoning block beside a tool call",
    ),
    pytest.param(
        [
            start(0, "text"),
            text_delta(0, "a"),
            start(1, "text"),
            text_delta(1, "b"),
            end_text(0, "a"),
            end_text(1, "b"),
            U,
            STOP,
        ],
        2,
        [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        id="two text blocks, ended in start order",
    ),
    pytest.param(
        [
            start(0, "text"),
            start(1, "text"),
            text_delta(1, "b"),
            text_delta(0, "a"),
            end_text(1, "b"),
            end_text(0, "a"),
            U,
            STOP,
        ],
        1,
        [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        id="block 1 ends before block 0: blocks stay in index order",
    ),
    pytest.param(
        [
            start(0, "reasoning"),
            start(1, "tool-call"),
            start(2, "tool-call"),
            tool_delta(2, "c2", "{}", name="g"),
            tool_delta(1, "c1", "{}", name="f"),
            reasoning_delta(0, "r"),
            end_tool(2, "c2", "g", "{}"),
            end_reasoning(0, "r"),
            end_tool(1, "c1", "f", "{}"),
            U,
            finish("tool-calls"),
        ],
        1,
        [
            {"type": "reasoning", "text": "r"},
            {"type": "tool-call", "id": "c1", "name": "f", "arguments": "{}"},
            {"type": "tool-call", "id": "c2", "name": "g", "arguments": "{}"},
        ],
        id="three blocks open at once",
    ),
    pytest.param(
        [start(0, "text"), start(1, "reasoning"), end_reasoning(1, "r"), end_text(0, "t"), U, STOP],
        1,
        [{"type": "text", "text": "t"}, {"type": "reasoning", "text": "r"}],
        id="interleaved blocks with no deltas take their content from block-end",
    ),
    pytest.param(
        [
            *TEXT,
            start(1, "text"),
            start(2, "text"),
            end_text(2, "c"),
            end_text(1, "b"),
            start(3, "text"),
            end_text(3, "d"),
            U,
            STOP,
        ],
        4,
        [
            {"type": "text", "text": "hi"},
            {"type": "text", "text": "b"},
            {"type": "text", "text": "c"},
            {"type": "text", "text": "d"},
        ],
        id="interleaving after a plain block, then a plain block again",
    ),
]


@pytest.mark.parametrize(("chunks", "position", "blocks"), INTERLEAVING)
def test_strict_rejects_interleaving(chunks: list[Chunk], position: int, blocks: list[Chunk]) -> None:
    err = error(chunks, STRICT)
    assert (err.code, err.chunk_index) == (E.BLOCKS_INTERLEAVED, position)


@pytest.mark.parametrize(("chunks", "position", "blocks"), INTERLEAVING)
def test_harness_assembles_interleaved_blocks(chunks: list[Chunk], position: int, blocks: list[Chunk]) -> None:
    got = result(chunks, HARNESS)
    assert got.to_wire()["blocks"] == blocks
    assert got.interrupted == []


def test_harness_text_joins_interleaved_blocks_in_index_order() -> None:
    chunks = [start(0, "text"), start(1, "text"), text_delta(1, "world"), text_delta(0, "hello "), end_text(1, "world")]
    got = result([*chunks, end_text(0, "hello "), U, STOP], HARNESS)
    assert got.text == "hello world"


# -- difference 2: usage is optional ----------------------------------------------------------------

#: (stream without usage; its finish needs usage under STRICT)
NO_USAGE_CASES = [
    pytest.param([STOP], id="stop, no blocks"),
    pytest.param([*TEXT, STOP], id="stop after a text block"),
    pytest.param(
        [start(0, "tool-call"), tool_delta(0, "c", "{}", name="f"), end_tool(0, "c", "f", "{}"), finish("tool-calls")],
        id="tool-calls",
    ),
    pytest.param([finish("max-tokens")], id="max-tokens, no blocks"),
    pytest.param([start(0, "text"), text_delta(0, "cut"), finish("max-tokens")], id="max-tokens cutting a block off"),
]


@pytest.mark.parametrize("chunks", NO_USAGE_CASES)
def test_strict_requires_usage(chunks: list[Chunk]) -> None:
    err = error(chunks, STRICT)
    assert (err.code, err.chunk_index) == (E.USAGE_MISSING, len(chunks) - 1)


@pytest.mark.parametrize("chunks", NO_USAGE_CASES)
def test_harness_makes_usage_optional(chunks: list[Chunk]) -> None:
    got = result(chunks, HARNESS)
    assert got.usage is None
    assert got.to_wire()["usage"] is None
    assert got.finish.kind == chunks[-1]["reason"]["kind"]


def test_harness_max_tokens_without_usage_reports_the_interrupted_block() -> None:
    got = result([start(0, "text"), text_delta(0, "cut"), finish("max-tokens")], HARNESS)
    assert [(b.type, b.text) for b in got.interrupted] == [("text", "cut")]  # type: ignore[union-attr]


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize("kind", ["error", "aborted"])
def test_usage_is_optional_before_error_and_aborted_under_both(kind: str, policy: Policy) -> None:
    assert result([*TEXT, finish(kind, FAILURE)], policy).usage is None


# -- every other rule holds under HARNESS too -------------------------------------------------------

#: (stream whose last chunk is rejected, code): the same under both policies.
SAME_UNDER_BOTH = [
    pytest.param([start(1, "text")], E.INDEX_OUT_OF_ORDER, id="first index 1"),
    pytest.param([*TEXT, *TEXT], E.INDEX_OUT_OF_ORDER, id="index 0 twice"),
    pytest.param([text_delta(0, "x")], E.BLOCK_NOT_OPEN, id="delta with no block"),
    pytest.param([*TEXT, text_delta(0, "x")], E.BLOCK_NOT_OPEN, id="delta for a closed block"),
    pytest.param([start(0, "text"), end_reasoning(0, "")], E.BLOCK_TYPE_MISMATCH, id="block-end of another type"),
    pytest.param(
        [start(0, "text"), text_delta(0, "a"), end_text(0, "b")], E.BLOCK_CONTENT_MISMATCH, id="content mismatch"
    ),
    pytest.param([U, U], E.USAGE_DUPLICATE, id="two usages"),
    pytest.param([*TEXT, U, start(1, "text")], E.CHUNK_AFTER_USAGE, id="block after usage"),
    pytest.param([start(0, "text"), U, STOP], E.BLOCK_NOT_CLOSED, id="open block at stop"),
    pytest.param([U, STOP, U], E.CHUNK_AFTER_FINISH, id="chunk after finish"),
    pytest.param([{"type": "block-start", "index": 0}], E.INVALID_CHUNK, id="missing blockType"),
    pytest.param([start(0, "text")], E.STREAM_TRUNCATED, id="no finish"),
    pytest.param([start(0, "image"), text_delta(0, "x")], E.BLOCK_TYPE_MISMATCH, id="a delta for an image block"),
    pytest.param([start(0, "image"), U, STOP], E.BLOCK_NOT_CLOSED, id="an image block open at stop"),
    pytest.param(
        [start(0, "image"), end_block(0, {"type": "image", "attachment": "att-1"})],
        E.INVALID_CHUNK,
        id="an attachment that is not an object",
    ),
    pytest.param(
        [start(0, "tool-call"), tool_delta(0, "c", "{"), tool_delta(0, "d", "}")],
        E.TOOL_CALL_CONFLICT,
        id="a delta changes its block's id",
    ),
    pytest.param(
        [start(0, "tool-call"), tool_delta(0, "c", "x"), end_tool(0, "c", "f", "y")],
        E.BLOCK_CONTENT_MISMATCH,
        id="arguments differ from the deltas",
    ),
    pytest.param([*TEXT, {"type": "finish", "reason": {}}], E.INVALID_CHUNK, id="a finish without a kind"),
    pytest.param([*TEXT, {"type": "finish", "reason": {"kind": 3}}], E.INVALID_CHUNK, id="a kind that is not a string"),
]


@pytest.mark.parametrize(("chunks", "code"), SAME_UNDER_BOTH)
def test_same_code_under_both_policies(chunks: list[Chunk], code: ErrorCode) -> None:
    strict, harness = error(chunks, STRICT), error(chunks, HARNESS)
    assert (strict.code, strict.chunk_index) == (harness.code, harness.chunk_index) == (code, strict.chunk_index)


#: Rules that apply to interleaved blocks under HARNESS (STRICT stops earlier, at the interleaving).
HARNESS_RULES = [
    pytest.param([start(0, "text"), start(2, "text")], E.INDEX_OUT_OF_ORDER, id="interleaved start skips an index"),
    pytest.param(
        [start(0, "text"), start(0, "reasoning")], E.INDEX_OUT_OF_ORDER, id="interleaved start repeats an index"
    ),
    pytest.param(
        [start(0, "text"), start(1, "text"), end_text(0, ""), text_delta(0, "x")],
        E.BLOCK_NOT_OPEN,
        id="delta for the closed one of two",
    ),
    pytest.param(
        [start(0, "text"), start(1, "text"), text_delta(2, "x")],
        E.BLOCK_NOT_OPEN,
        id="delta for an index never started",
    ),
    pytest.param(
        [start(0, "text"), start(1, "reasoning"), text_delta(1, "x")],
        E.BLOCK_TYPE_MISMATCH,
        id="delta typed for the other open block",
    ),
    pytest.param(
        [start(0, "text"), start(1, "reasoning"), end_text(1, "")],
        E.BLOCK_TYPE_MISMATCH,
        id="block-end typed for the other open block",
    ),
    pytest.param(
        [start(0, "text"), start(1, "text"), text_delta(0, "a"), text_delta(1, "b"), end_text(0, "b")],
        E.BLOCK_CONTENT_MISMATCH,
        id="block-end carries the other block's text",
    ),
    pytest.param(
        [
            start(0, "tool-call"),
            start(1, "tool-call"),
            tool_delta(0, "c", "{"),
            tool_delta(1, "c", "{"),
            tool_delta(1, "d", "}"),
        ],
        E.TOOL_CALL_CONFLICT,
        id="two open tool calls with one id, then one changes it",
    ),
    pytest.param(
        [start(0, "text"), start(1, "image"), text_delta(1, "x")],
        E.BLOCK_TYPE_MISMATCH,
        id="a delta for the open image block",
    ),
    pytest.param(
        [start(0, "text"), start(1, "image"), end_image(0, {})],
        E.BLOCK_TYPE_MISMATCH,
        id="an image block-end for the other open block",
    ),
    pytest.param(
        [start(0, "image"), start(1, "text"), end_text(1, ""), finish("paused")],
        E.BLOCK_NOT_CLOSED,
        id="an unknown finish kind with one of two open",
    ),
    pytest.param(
        [start(0, "text"), start(1, "text"), U, start(2, "text")], E.CHUNK_AFTER_USAGE, id="a third block after usage"
    ),
    pytest.param(
        [start(0, "text"), start(1, "text"), U, end_text(0, "")], E.CHUNK_AFTER_USAGE, id="block-end after usage"
    ),
    pytest.param(
        [start(0, "text"), start(1, "text"), end_text(1, ""), U, STOP],
        E.BLOCK_NOT_CLOSED,
        id="stop with one of two open",
    ),
    pytest.param(
        [start(0, "tool-call"), start(1, "text"), finish("tool-calls")],
        E.BLOCK_NOT_CLOSED,
        id="tool-calls with two open",
    ),
    pytest.param(
        [start(0, "text"), start(1, "text"), end_text(1, "")], E.STREAM_TRUNCATED, id="input ends with a block open"
    ),
]


@pytest.mark.parametrize(("chunks", "code"), HARNESS_RULES)
def test_rules_for_interleaved_blocks(chunks: list[Chunk], code: ErrorCode) -> None:
    err = error(chunks, HARNESS)
    expected_index = len(chunks) if code is E.STREAM_TRUNCATED else len(chunks) - 1
    assert (err.code, err.chunk_index) == (code, expected_index)
    strict = error(chunks, STRICT)
    assert (strict.code, strict.chunk_index) == (E.BLOCKS_INTERLEAVED, 1)


def test_harness_interrupts_every_open_block_at_a_cut_off_finish() -> None:
    chunks = [
        start(0, "reasoning"),
        reasoning_delta(0, "thinking"),
        start(1, "tool-call"),
        tool_delta(1, "c1", '{"a"', name="f"),
        start(2, "text"),
        end_text(2, "done"),
        finish("aborted", FAILURE),
    ]
    got = result(chunks, HARNESS)
    assert [b.type for b in got.blocks] == ["text"]  # type: ignore[union-attr]
    assert [b.type for b in got.interrupted] == ["reasoning", "tool-call"]  # type: ignore[union-attr]
    reasoning, call = got.interrupted
    assert reasoning.text == "thinking"  # type: ignore[union-attr]
    assert (call.id, call.name, call.arguments) == ("c1", "f", '{"a"')  # type: ignore[union-attr]


# -- the other differences: what HARNESS keeps as it came, and notes ---------------------------------

#: (stream valid under HARNESS only, (code, position) STRICT refuses it with, HARNESS's to_wire(),
#: HARNESS's notes as (code, position, count); a count of None is not checked here: how a block-end that repeats
#: what its block-start or deltas were noted for counts is the business of the second part of this module).
KEPT = [
    pytest.param(
        [*TEXT, start(1, "video"), end_block(1, {"type": "video", "frames": [{"t": 0}], "codec": None}), U, STOP],
        (E.INVALID_CHUNK, 3),
        {"blocks": [{"type": "text", "text": "hi"}, {"type": "video", "frames": [{"t": 0}], "codec": None}],
         "usage": {"inputTokens": 10, "outputTokens": 5}, "finish": {"kind": "stop"}},
        [(E.INVALID_CHUNK, 3, None)],
        id="a block of an unknown type, kept as the dict its block-end carried",
    ),
    pytest.param(
        [*TEXT, U, {"type": "finish", "reason": {"kind": "paused", "resumeAt": 3, "why": {"a": [1]}}}],
        (E.INVALID_CHUNK, 4),
        {"blocks": [{"type": "text", "text": "hi"}], "usage": {"inputTokens": 10, "outputTokens": 5},
         "finish": {"kind": "paused", "resumeAt": 3, "why": {"a": [1]}}},
        [(E.INVALID_CHUNK, 4, 1)],
        id="a finish of an unknown kind, kept with its fields",
    ),
    pytest.param(
        [start(0, "tool-call"), tool_delta(0, "", "{}", name=""), end_tool(0, "", "", "{}"), U, finish("tool-calls")],
        (E.INVALID_CHUNK, 1),
        {"blocks": [{"type": "tool-call", "id": "", "name": "", "arguments": "{}"}],
         "usage": {"inputTokens": 10, "outputTokens": 5}, "finish": {"kind": "tool-calls"}},
        [(E.INVALID_CHUNK, 1, None)],
        id="an empty id and name",
    ),
    pytest.param(
        [*tool_block(0, "c"), *tool_block(1, "c", "g"), U, finish("tool-calls")],
        (E.TOOL_CALL_CONFLICT, 4),
        {"blocks": [{"type": "tool-call", "id": "c", "name": "f", "arguments": "{}"},
                    {"type": "tool-call", "id": "c", "name": "g", "arguments": "{}"}],
         "usage": {"inputTokens": 10, "outputTokens": 5}, "finish": {"kind": "tool-calls"}},
        [(E.TOOL_CALL_CONFLICT, 4, 1)],
        id="two blocks with one id",
    ),
    pytest.param(
        [*tool_block(0, "c", "f", "not json"), finish("tool-calls")],
        (E.TOOL_ARGUMENTS_INVALID, 2),
        {"blocks": [{"type": "tool-call", "id": "c", "name": "f", "arguments": "not json"}], "usage": None,
         "finish": {"kind": "tool-calls"}},
        [(E.TOOL_ARGUMENTS_INVALID, 2, 1), (E.USAGE_MISSING, 3, 1)],
        id="raw arguments, and no usage",
    ),
    pytest.param(
        [*TEXT, finish("tool-calls")],
        (E.USAGE_MISSING, 3),
        {"blocks": [{"type": "text", "text": "hi"}], "usage": None, "finish": {"kind": "tool-calls"}},
        [(E.USAGE_MISSING, 3, 1), (E.FINISH_REASON_MISMATCH, 3, 1)],
        id="tool-calls without a tool call, and no usage",
    ),
    pytest.param(
        [start(0, "text"), start(1, "image"), end_image(1, {"id": "a"}), text_delta(0, "x"), end_text(0, "x"),
         start(2, "text"), start(3, "text"), end_text(3, ""), end_text(2, ""), U, STOP],
        (E.BLOCKS_INTERLEAVED, 1),
        {"blocks": [{"type": "text", "text": "x"}, {"type": "image", "attachment": {"id": "a"}},
                    {"type": "text", "text": ""}, {"type": "text", "text": ""}],
         "usage": {"inputTokens": 10, "outputTokens": 5}, "finish": {"kind": "stop"}},
        [(E.BLOCKS_INTERLEAVED, 1, 2)],
        id="interleaved twice, an image block among them",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("chunks", "strict", "wire", "notes"), KEPT)
def test_harness_keeps_what_strict_refuses(
    chunks: list[Chunk], strict: tuple[ErrorCode, int], wire: dict[str, Any], notes: list[Any]
) -> None:
    err = error(chunks, STRICT)
    assert (err.code, err.chunk_index) == strict
    got, noted = accept_noted(chunks, HARNESS)
    assert got.to_wire() == wire
    assert [note[:2] for note in noted] == [note[:2] for note in notes]
    assert [n for (_, _, n), (_, _, want) in zip(noted, notes, strict=True) if want is not None] == [
        want for _, _, want in notes if want is not None
    ]
    assert noted[0][:2] == strict  # the first note is where STRICT stops
    for name, run in ENTRY_POINTS[1:]:
        assert not isinstance(run(chunks, HARNESS), LlmError), name


def test_strict_keeps_image_blocks_and_notes_nothing() -> None:
    chunks = [start(0, "image"), end_image(0, {"id": "att-1"}), *TEXT_AT_1, U, STOP]
    for policy in BOTH:
        got, notes = accept_noted(chunks, policy)
        assert [b.type for b in got.blocks] == ["image", "text"]  # type: ignore[union-attr]
        assert notes == []


TEXT_AT_1 = [start(1, "text"), text_delta(1, "hi"), end_text(1, "hi")]


# -- properties: HARNESS accepts all STRICT accepts, and refuses only with the codes both share ----------

KINDS = ("text", "reasoning", "tool-call")
#: Codes STRICT raises for what HARNESS accepts (SPEC §4); under HARNESS a chunk breaking only those is noted.
STRICT_ONLY = (
    E.BLOCKS_INTERLEAVED,
    E.USAGE_MISSING,
    E.FINISH_REASON_MISMATCH,
    E.INVALID_CHUNK,
    E.TOOL_CALL_CONFLICT,
    E.TOOL_ARGUMENTS_INVALID,
)


@st.composite
def interleaved_streams(draw: st.DrawFn) -> tuple[list[Chunk], list[Chunk], int | None, bool]:
    """A stream valid under HARNESS: blocks whose events are merged in a random order.

    Returns the chunks, the expected wire blocks, the position of the first block-start while
    another block is open (None if the blocks never interleave), and whether usage was sent.
    """
    n = draw(st.integers(0, 4))
    events: list[list[Chunk]] = []
    blocks: list[Chunk] = []
    for i in range(n):
        kind = draw(st.sampled_from(KINDS))
        if kind == "tool-call":
            arguments = json.dumps({"k": draw(st.integers(0, 9)), "s": draw(st.text(max_size=3))})
        else:
            arguments = draw(st.text(max_size=6))
        cuts = sorted(draw(st.lists(st.integers(0, len(arguments)), max_size=3)))
        bounds = [0, *cuts, len(arguments)]
        with_deltas = draw(st.booleans())
        parts = [arguments[a:b] for a, b in itertools.pairwise(bounds)] if with_deltas else []
        if kind == "text":
            deltas = [text_delta(i, p) for p in parts]
            end, block = end_text(i, arguments), {"type": "text", "text": arguments}
        elif kind == "reasoning":
            deltas = [reasoning_delta(i, p) for p in parts]
            end, block = end_reasoning(i, arguments), {"type": "reasoning", "text": arguments}
        else:
            deltas = [tool_delta(i, f"call-{i}", p, name="fn" if j == 0 else None) for j, p in enumerate(parts)]
            end = end_tool(i, f"call-{i}", "fn", arguments)
            block = {"type": "tool-call", "id": f"call-{i}", "name": "fn", "arguments": arguments}
        events.append([start(i, kind), *deltas, end])
        blocks.append(block)
    chunks: list[Chunk] = []
    cursor = [0] * n
    open_now: set[int] = set()
    first_interleave: int | None = None
    while any(cursor[i] < len(events[i]) for i in range(n)):
        # block i may move if it has started, or if every block before it has started
        movable = [
            i
            for i in range(n)
            if cursor[i] < len(events[i]) and (cursor[i] > 0 or all(cursor[j] > 0 for j in range(i)))
        ]
        i = draw(st.sampled_from(movable))
        chunk = events[i][cursor[i]]
        if chunk["type"] == "block-start":
            if open_now and first_interleave is None:
                first_interleave = len(chunks)
            open_now.add(i)
        elif chunk["type"] == "block-end":
            open_now.discard(i)
        chunks.append(chunk)
        cursor[i] += 1
    with_usage = draw(st.booleans())
    if with_usage:
        chunks.append(usage())
    chunks.append(finish("tool-calls" if any(b["type"] == "tool-call" for b in blocks) else "stop"))
    return chunks, blocks, first_interleave, with_usage


@settings(max_examples=300, deadline=None)
@given(interleaved_streams())
def test_interleaved_streams_under_both_policies(case: tuple[list[Chunk], list[Chunk], int | None, bool]) -> None:
    chunks, blocks, first_interleave, with_usage = case
    assert result(chunks, HARNESS).to_wire()["blocks"] == blocks
    strict = outcome(chunks, STRICT)
    if first_interleave is not None:
        assert isinstance(strict, LlmError)
        assert (strict.code, strict.chunk_index) == (E.BLOCKS_INTERLEAVED, first_interleave)
    elif not with_usage:
        assert isinstance(strict, LlmError)
        assert (strict.code, strict.chunk_index) == (E.USAGE_MISSING, len(chunks) - 1)
    else:
        assert isinstance(strict, sf.StreamResult)
        assert strict == result(chunks, HARNESS)


def _random_chunk() -> st.SearchStrategy[Chunk]:
    index = st.integers(0, 2)
    small = st.sampled_from(["", "a", "b"])
    args = st.sampled_from(["", "{", "}", "{}"])
    call_id = st.sampled_from(["x", "y", ""])
    name = st.sampled_from([None, "f", "g", ""])
    return st.one_of(
        st.builds(start, index, st.sampled_from([*KINDS, "image", "video"])),
        st.builds(text_delta, index, small),
        st.builds(reasoning_delta, index, small),
        st.builds(tool_delta, index, call_id, args, name),
        st.builds(end_text, index, small),
        st.builds(end_reasoning, index, small),
        st.builds(end_tool, index, call_id, st.sampled_from(["f", "g", ""]), args),
        st.builds(end_image, index, st.sampled_from([{}, {"id": "a"}])),
        st.builds(end_block, index, st.sampled_from([{"type": "video"}, {"type": "video", "t": 1}, {"type": "audio"}])),
        st.just(usage()),
        st.sampled_from([finish(k) for k in ("stop", "tool-calls", "max-tokens", "paused")]),
        st.just(finish("error", FAILURE)),
    )


@settings(max_examples=500, deadline=None)
@given(st.lists(_random_chunk(), max_size=10))
def test_harness_is_strict_minus_its_allowances(chunks: list[Chunk]) -> None:
    strict, harness = outcome(chunks, STRICT), outcome(chunks, HARNESS)
    if isinstance(harness, LlmError):
        assert harness.code not in (E.BLOCKS_INTERLEAVED, E.USAGE_MISSING, E.FINISH_REASON_MISMATCH)
    if isinstance(strict, sf.StreamResult):
        # every stream STRICT accepts, HARNESS accepts with the same result, and notes nothing
        assert strict == harness
        assert accept_noted(chunks, HARNESS)[1] == []
        return
    if isinstance(harness, sf.StreamResult):
        # STRICT rejected it for a rule HARNESS does not hold
        assert strict.code in STRICT_ONLY
        return
    # both rejected: STRICT no later than HARNESS; at the same chunk, the same code unless STRICT's own
    assert strict.chunk_index is not None and harness.chunk_index is not None
    assert strict.chunk_index <= harness.chunk_index
    if strict.chunk_index == harness.chunk_index and strict.code != harness.code:
        assert strict.code in STRICT_ONLY
    if strict.chunk_index < harness.chunk_index:
        assert strict.code in STRICT_ONLY


@settings(max_examples=300, deadline=None)
@given(st.lists(_random_chunk(), max_size=10))
def test_harness_notes_where_strict_stops(chunks: list[Chunk]) -> None:
    """Where STRICT refuses a chunk that HARNESS accepts, HARNESS notes STRICT's code at that chunk, first."""
    strict = outcome(chunks, STRICT)
    if not isinstance(strict, LlmError) or strict.code is E.STREAM_TRUNCATED:
        return
    position = strict.chunk_index
    assert position is not None
    asm = sf.StreamAssembler(HARNESS)
    for chunk in chunks[: position + 1]:
        try:
            asm.feed(chunk)
        except LlmError:
            assert asm.notes == [] or all(e.chunk_index is not None and e.chunk_index < position for e, _ in asm.notes)
            return
    notes = notes_of(asm)
    assert (strict.code, position) in [(code, index) for code, index, _ in notes], (strict, notes)
    assert {index for _, index, _ in notes} == {position}, notes


def test_seed_is_the_same_under_both() -> None:
    assert result(SEED_CHUNKS, STRICT) == result(SEED_CHUNKS, HARNESS)


# ====================================================================================================================
# SPEC §1 and §4 as issue #12 redefined them: image blocks (both policies), and what ``Policy.HARNESS`` keeps that
# ``Policy.STRICT`` refuses — blocks of unknown types, finishes of unknown kinds, empty tool-call ids and names, raw
# arguments, ``tool-calls`` without a call — with the notes of what STRICT would have refused.
#
# Each case runs through ``StreamAssembler.feed``, ``assemble`` and ``assemble_jsonl`` (where the stream is
# plain JSON), which must agree.
# ====================================================================================================================


ATTACHMENT: dict[str, Any] = {"id": "att-1", "mediaType": "image/png", "size": {"width": 64, "height": 48}, "alt": None}
VIDEO: dict[str, Any] = {"type": "video", "frames": [{"t": 0, "uri": "v://1"}], "codec": None, "meta": {"fps": 24.5}}

# -- running a stream every way ----------------------------------------------------------------------


def fed(
    chunks: list[Any], policy: Policy, limits: sf.Limits | None = None, *, raw_arguments: bool = False
) -> tuple[sf.StreamResult | LlmError, list[Note]]:
    """Feed the chunks one by one, then close: the result or the first error, and the notes left."""
    asm = sf.StreamAssembler(policy, limits, raw_arguments=raw_arguments)
    try:
        for chunk in chunks:
            asm.feed(chunk)
        return asm.close(), notes_of(asm)
    except LlmError as err:
        return err, notes_of(asm)


def _jsonl(chunks: list[Any], policy: Policy, limits: sf.Limits | None) -> sf.StreamResult:
    return sf.assemble_jsonl(b"\n".join(orjson.dumps(c) for c in chunks), policy=policy, limits=limits)


RUNS: dict[str, Callable[[list[Any], Policy, sf.Limits | None], sf.StreamResult]] = {
    "assemble": lambda chunks, policy, limits: sf.assemble(chunks, policy=policy, limits=limits),
    "assemble_jsonl": _jsonl,
}


def every_way(chunks: list[Any], policy: Policy, limits: sf.Limits | None = None) -> sf.StreamResult | LlmError:
    """The outcome of ``feed``, checked to be that of ``assemble`` and ``assemble_jsonl`` too."""
    got, _ = fed(chunks, policy, limits)
    for name, run in RUNS.items():
        try:
            other: sf.StreamResult | LlmError = run(copy.deepcopy(chunks), policy, limits)
        except LlmError as err:
            other = err
        if isinstance(got, LlmError):
            assert isinstance(other, LlmError), name
            assert (other.code, other.chunk_index, other.message) == (got.code, got.chunk_index, got.message), name
        else:
            assert isinstance(other, sf.StreamResult), f"{name}: {other}"
            assert other.to_wire() == got.to_wire(), name
            assert other.interrupted == got.interrupted, name
    return got


def accepted(chunks: list[Any], policy: Policy, limits: sf.Limits | None = None) -> sf.StreamResult:
    got = every_way(chunks, policy, limits)
    assert isinstance(got, sf.StreamResult), f"refused under {policy}: {got}"
    return got


def refused(chunks: list[Any], policy: Policy, limits: sf.Limits | None = None) -> tuple[ErrorCode, int | None]:
    got = every_way(chunks, policy, limits)
    assert isinstance(got, LlmError), f"accepted under {policy}"
    return ErrorCode(got.code), got.chunk_index


# -- image blocks: SPEC §1, both policies --------------------------------------------------------------


IMAGE = [*TEXT, start(1, "image"), end_image(1, ATTACHMENT), U, STOP]


@pytest.mark.parametrize("policy", BOTH)
def test_an_image_block_is_accepted_as_an_image_block(policy: Policy) -> None:
    result = accepted(IMAGE, policy)
    text, image = result.blocks
    assert isinstance(text, sf.TextBlock) and isinstance(image, sf.ImageBlock)
    assert (image.type, image.attachment) == ("image", ATTACHMENT)
    assert result.to_wire()["blocks"] == [
        {"type": "text", "text": "hi"},
        {"type": "image", "attachment": ATTACHMENT},  # None inside the attachment is kept: it is what came
    ]
    assert (result.text, result.tool_calls) == ("hi", [])
    assert fed(IMAGE, policy)[1] == []  # core vocabulary: nothing to note


@pytest.mark.parametrize("policy", BOTH)
def test_an_image_block_keeps_its_attachment_only(policy: Policy) -> None:
    """The block-end's other keys are ignored (SPEC §1: extra keys are ignored), as for every core block."""
    chunks = [start(0, "image"), end_block(0, {"type": "image", "attachment": {"id": "a"}, "x": 1}), U, STOP]
    assert accepted(chunks, policy).to_wire()["blocks"] == [{"type": "image", "attachment": {"id": "a"}}]


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize(
    ("delta", "what"),
    [
        (text_delta(1, "x"), "text-delta"),
        (tool_delta(1, "c", "{}"), "tool-call-delta"),
        ({"type": "reasoning-delta", "index": 1, "text": "x"}, "reasoning-delta"),
    ],
    ids=["text", "tool-call", "reasoning"],
)
def test_a_delta_to_an_image_block_is_a_type_mismatch(delta: Chunk, what: str, policy: Policy) -> None:
    code, index = refused([*TEXT, start(1, "image"), delta], policy)
    assert (code, index) == (E.BLOCK_TYPE_MISMATCH, 4)


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize(
    "attachment",
    [None, "att-1", ["att-1"], 7, True, {"w": math.nan}, {"w": math.inf}, {1: "int key"}, {"b": b"bytes"}],
    ids=["null", "string", "list", "int", "bool", "NaN", "inf", "int key", "bytes"],
)
def test_an_attachment_that_is_not_a_json_object_is_invalid(attachment: Any, policy: Policy) -> None:
    chunks = [start(0, "image"), end_block(0, {"type": "image", "attachment": attachment})]
    got, notes = fed(chunks, policy)
    assert isinstance(got, LlmError) and (got.code, got.chunk_index) == (E.INVALID_CHUNK, 1)
    assert "attachment" in got.message and notes == []


@pytest.mark.parametrize("policy", BOTH)
def test_an_image_block_without_its_attachment_is_invalid(policy: Policy) -> None:
    assert refused([start(0, "image"), end_block(0, {"type": "image"}), U, STOP], policy) == (E.INVALID_CHUNK, 1)


@pytest.mark.parametrize("policy", BOTH)
def test_an_image_block_end_for_another_block_and_the_other_way(policy: Policy) -> None:
    assert refused([start(0, "text"), end_image(0, {})], policy) == (E.BLOCK_TYPE_MISMATCH, 1)
    assert refused([start(0, "image"), end_text(0, "")], policy) == (E.BLOCK_TYPE_MISMATCH, 1)
    assert refused([start(0, "image"), end_tool(0, "c", "f", "{}")], policy) == (E.BLOCK_TYPE_MISMATCH, 1)


@pytest.mark.parametrize("policy", BOTH)
def test_an_image_block_counts_against_max_block_bytes(policy: Policy) -> None:
    """The attachment is bounded like any block's content; a big one is LIMIT_EXCEEDED, a small one fits."""
    limits = sf.Limits(max_block_bytes=100)
    assert accepted([start(0, "image"), end_image(0, {"id": "x" * 40}), U, STOP], policy, limits).blocks
    assert refused([start(0, "image"), end_image(0, {"id": "x" * 100}), U, STOP], policy, limits) == (
        E.LIMIT_EXCEEDED,
        1,
    )
    many = sf.Limits(max_blocks=1)
    assert refused([start(0, "image"), end_image(0, {}), start(1, "image")], policy, many) == (E.LIMIT_EXCEEDED, 2)


@pytest.mark.parametrize("policy", BOTH)
def test_an_image_block_open_at_stop_or_at_the_end(policy: Policy) -> None:
    assert refused([start(0, "image"), U, STOP], policy) == (E.BLOCK_NOT_CLOSED, 2)
    assert refused([start(0, "image")], policy) == (E.STREAM_TRUNCATED, 1)
    assert refused([start(0, "image"), U, end_image(0, {})], policy) == (E.CHUNK_AFTER_USAGE, 2)


@pytest.mark.parametrize("policy", BOTH)
@pytest.mark.parametrize("kind", ["max-tokens", "error", "aborted"])
def test_an_image_block_cut_off_is_interrupted_with_nothing_but_its_type(kind: str, policy: Policy) -> None:
    """SPEC §2.1: a cut-off finish reports open blocks as interrupted; an image block has no content before
    its block-end, so it is reported by its type alone (a plain dict: there is no attachment to build one)."""
    failure = FAILURE if kind in ("error", "aborted") else None
    result = accepted([*TEXT, start(1, "image"), U, finish(kind, failure)], policy)
    assert result.interrupted == [{"type": "image"}]
    assert [b.type for b in result.blocks] == ["text"]  # type: ignore[union-attr]
    assert result.to_wire()["blocks"] == [{"type": "text", "text": "hi"}]


# -- blocks of unknown types: SPEC §4 ----------------------------------------------------------------


UNKNOWN = [*TEXT, start(1, "video"), end_block(1, VIDEO), U, STOP]


def test_harness_keeps_a_block_of_an_unknown_type_as_the_dict_that_came() -> None:
    result = accepted(UNKNOWN, HARNESS)
    text, video = result.blocks
    assert isinstance(text, sf.TextBlock)
    assert type(video) is dict and video == VIDEO
    assert result.to_wire()["blocks"] == [{"type": "text", "text": "hi"}, VIDEO]  # every key, null included
    assert (result.text, result.reasoning, result.tool_calls) == ("hi", "", [])
    assert [note[:2] for note in fed(UNKNOWN, HARNESS)[1]] == [(E.INVALID_CHUNK, 3)]


def test_strict_refuses_a_block_of_an_unknown_type() -> None:
    assert refused(UNKNOWN, STRICT) == (E.INVALID_CHUNK, 3)
    assert refused([start(0, "text"), end_block(0, VIDEO)], STRICT) == (E.INVALID_CHUNK, 1)


@pytest.mark.parametrize("block_type", ["video", "Text", "tool_call", "", "x" * 100, "日本語", " "])
def test_any_string_is_a_block_type_harness_keeps(block_type: str) -> None:
    block = {"type": block_type, "n": 1}
    result = accepted([start(0, block_type), end_block(0, block), STOP], HARNESS)
    assert result.blocks == [block] and result.to_wire()["blocks"] == [block]


@pytest.mark.parametrize(
    "delta",
    [text_delta(0, "x"), {"type": "reasoning-delta", "index": 0, "text": "x"}, tool_delta(0, "c", "{}")],
    ids=["text", "reasoning", "tool-call"],
)
def test_a_delta_to_a_block_of_an_unknown_type_is_a_type_mismatch(delta: Chunk) -> None:
    assert refused([start(0, "video"), delta], HARNESS) == (E.BLOCK_TYPE_MISMATCH, 1)
    assert refused([start(0, "video"), tool_delta(0, "", ""), end_block(0, VIDEO)], HARNESS) == (
        E.BLOCK_TYPE_MISMATCH,
        1,
    )


def test_a_block_end_of_another_type_than_its_block_start_is_a_type_mismatch() -> None:
    for chunks in (
        [start(0, "video"), end_block(0, {"type": "audio"})],
        [start(0, "video"), end_block(0, {"type": "Video"})],
        [start(0, "video"), end_image(0, {})],
        [start(0, "video"), end_text(0, "")],
        [start(0, "image"), end_block(0, {"type": "video"})],
        [start(0, "text"), text_delta(0, "a"), end_block(0, {"type": "video", "text": "a"})],
    ):
        assert refused(chunks, HARNESS) == (E.BLOCK_TYPE_MISMATCH, len(chunks) - 1), chunks


def test_a_block_of_an_unknown_type_must_be_json_data() -> None:
    for bad in (math.nan, -math.inf, b"x", object(), {1: "int key"}, {"deep": [{"x": math.nan}]}):
        got, notes = fed([start(0, "video"), end_block(0, {"type": "video", "v": bad})], HARNESS)
        assert isinstance(got, LlmError) and (got.code, got.chunk_index) == (E.INVALID_CHUNK, 1), bad
        assert notes == [(E.INVALID_CHUNK, 0, 1)]  # the block-start was accepted and noted; the end was not


def test_a_block_of_an_unknown_type_counts_against_the_limits() -> None:
    limits = sf.Limits(max_block_bytes=40)
    assert accepted([start(0, "video"), end_block(0, {"type": "video", "u": "x" * 10}), STOP], HARNESS, limits)
    big = [start(0, "video"), end_block(0, {"type": "video", "u": "x" * 40}), STOP]
    assert refused(big, HARNESS, limits) == (E.LIMIT_EXCEEDED, 1)
    assert refused([*TEXT, start(1, "video")], HARNESS, sf.Limits(max_blocks=1)) == (E.LIMIT_EXCEEDED, 3)


def test_blocks_of_unknown_types_interleave_and_are_cut_off_by_their_type() -> None:
    chunks = [
        start(0, "video"),
        start(1, "text"),
        start(2, "audio"),
        text_delta(1, "a"),
        end_block(0, {"type": "video", "n": 0}),
        end_text(1, "a"),
        finish("aborted", FAILURE),
    ]
    result = accepted(chunks, HARNESS)
    assert result.to_wire()["blocks"] == [{"type": "video", "n": 0}, {"type": "text", "text": "a"}]
    assert result.interrupted == [{"type": "audio"}]
    assert refused(chunks, STRICT) == (E.INVALID_CHUNK, 0)


def test_an_unknown_block_is_a_copy_of_what_came() -> None:
    block = copy.deepcopy(VIDEO)
    result = accepted([start(0, "video"), end_block(0, block), STOP], HARNESS)
    block["frames"][0]["t"] = 99
    block["meta"]["fps"] = 1
    assert result.blocks == [VIDEO]


# -- finishes of unknown kinds: SPEC §4 ----------------------------------------------------------------


PAUSED = {"kind": "paused", "resumeAt": 1700000000, "why": {"quota": [1, 2.5, "x"]}}


def test_harness_keeps_a_finish_of_an_unknown_kind_with_its_fields() -> None:
    chunks = [*TEXT, U, {"type": "finish", "reason": copy.deepcopy(PAUSED)}]
    result = accepted(chunks, HARNESS)
    assert result.finish.kind == "paused" and result.finish.failure is None
    assert result.finish.model_extra == {"resumeAt": 1700000000, "why": {"quota": [1, 2.5, "x"]}}
    assert result.to_wire()["finish"] == PAUSED
    assert fed(chunks, HARNESS)[1] == [(E.INVALID_CHUNK, 4, 1)]
    assert refused(chunks, STRICT) == (E.INVALID_CHUNK, 4)


@pytest.mark.parametrize("kind", ["length", "content-filter", "STOP", "tool_calls", "end_turn", "", "日本語"])
def test_any_string_is_a_finish_kind_harness_keeps(kind: str) -> None:
    result = accepted([*TEXT, {"type": "finish", "reason": {"kind": kind}}], HARNESS)
    assert result.to_wire()["finish"] == {"kind": kind}
    assert result.usage is None  # usage is optional; an unknown kind needs none, so nothing more is noted
    assert fed([*TEXT, finish(kind)], HARNESS)[1] == [(E.INVALID_CHUNK, 3, 1)]


def test_a_finish_of_an_unknown_kind_with_a_block_open_is_not_closed() -> None:
    for chunks in (
        [start(0, "text"), text_delta(0, "a"), finish("paused")],
        [start(0, "image"), U, finish("paused")],
        [start(0, "video"), finish("length")],
    ):
        got, notes = fed(chunks, HARNESS)
        assert isinstance(got, LlmError) and (got.code, got.chunk_index) == (E.BLOCK_NOT_CLOSED, len(chunks) - 1)
        assert all(code is not E.INVALID_CHUNK or index == 0 for code, index, _ in notes), notes


def test_a_finish_of_an_unknown_kind_ends_the_stream() -> None:
    got = refused([U, finish("paused"), STOP], HARNESS)
    assert got == (E.CHUNK_AFTER_FINISH, 2)


def test_a_finish_of_an_unknown_kind_must_be_json_data() -> None:
    for bad in (math.nan, b"x", object(), {1: "x"}, [math.inf]):
        got, notes = fed([{"type": "finish", "reason": {"kind": "paused", "x": bad}}], HARNESS)
        assert isinstance(got, LlmError) and (got.code, got.chunk_index) == (E.INVALID_CHUNK, 0), bad
        assert notes == []


def test_a_finish_of_an_unknown_kind_keeps_its_null_fields() -> None:
    """Fixed (machine): ``FinishReason.to_wire()`` drops the fields of an unknown kind whose value is null
    (``exclude_none``): ``{"kind": "paused", "until": null}`` comes back as ``{"kind": "paused"}`` — not the
    finish as it came (SPEC §4; the extras are in ``model_extra``)."""
    reason = {"kind": "paused", "until": None, "why": "quota"}
    result = accepted([U, {"type": "finish", "reason": copy.deepcopy(reason)}], HARNESS)
    assert result.finish.model_extra == {"until": None, "why": "quota"}
    assert result.to_wire()["finish"] == reason


@pytest.mark.parametrize(
    "failure",
    [
        5,
        "boom",
        {"message": "m"},
        {"message": "m", "code": "c", "extra": 1},
        {"message": "m", "code": "c", "status": "x"},
    ],
    ids=["int", "string", "no code", "an extra key", "a status that is no int"],
)
def test_a_finish_of_an_unknown_kind_with_any_failure_field_raises_nothing_but_llm_error(failure: Any) -> None:
    """Fixed (machine): a finish of an unknown kind is kept as it came (SPEC §4), but a ``failure`` field in it that
    is not an ``LlmFailure`` makes ``feed`` raise pydantic's ``ValidationError`` (``FinishReason.model_validate``
    in ``_on_finish``), after the chunk was noted: an exception that is not an ``LlmError`` escapes the machine."""
    reason = {"kind": "paused", "failure": failure}
    runs: list[Callable[[], sf.StreamResult | LlmError]] = [
        lambda: fed([{"type": "finish", "reason": copy.deepcopy(reason)}], HARNESS)[0],
        lambda: sf.assemble([{"type": "finish", "reason": copy.deepcopy(reason)}], policy=HARNESS),
    ]
    for run in runs:
        try:
            got = run()
        except LlmError:
            continue
        assert isinstance(got, sf.StreamResult | LlmError)
        if isinstance(got, sf.StreamResult):
            assert got.to_wire()["finish"] == reason  # kept as it came


# -- empty tool-call ids and names: SPEC §4 ---------------------------------------------------------------


EMPTY = [
    start(0, "tool-call"),
    tool_delta(0, "", '{"a":', name=""),
    tool_delta(0, "", " 1}"),
    end_tool(0, "", "", '{"a": 1}'),
    start(1, "tool-call"),
    end_tool(1, "", "g", "{}"),
    U,
    finish("tool-calls"),
]


def test_harness_accepts_empty_ids_and_names_and_two_blocks_with_the_id_empty() -> None:
    result = accepted(EMPTY, HARNESS)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("", "", '{"a": 1}'), ("", "g", "{}")]
    assert [c.parsed_arguments for c in result.tool_calls] == [{"a": 1}, {}]
    assert result.to_wire()["blocks"] == [
        {"type": "tool-call", "id": "", "name": "", "arguments": '{"a": 1}'},
        {"type": "tool-call", "id": "", "name": "g", "arguments": "{}"},
    ]
    notes = fed(EMPTY, HARNESS)[1]
    assert [(code, index) for code, index, _ in notes] == [(E.INVALID_CHUNK, 1), (E.TOOL_CALL_CONFLICT, 5)]


def test_strict_refuses_empty_ids_and_names() -> None:
    assert refused(EMPTY, STRICT) == (E.INVALID_CHUNK, 1)
    assert refused([start(0, "tool-call"), tool_delta(0, "c", "{}", name="")], STRICT) == (E.INVALID_CHUNK, 1)
    assert refused([start(0, "tool-call"), end_tool(0, "", "f", "{}")], STRICT) == (E.INVALID_CHUNK, 1)
    assert refused([start(0, "tool-call"), end_tool(0, "c", "", "{}")], STRICT) == (E.INVALID_CHUNK, 1)


def test_one_block_keeps_one_id_and_one_name_even_empty() -> None:
    """The corruption check upstream lacks: every delta of a tool-call block carries its id, and a name repeats."""
    assert refused([start(0, "tool-call"), tool_delta(0, "", "{"), tool_delta(0, "c", "}")], HARNESS) == (
        E.TOOL_CALL_CONFLICT,
        2,
    )
    assert refused([start(0, "tool-call"), tool_delta(0, "c", "{"), tool_delta(0, "", "}")], HARNESS) == (
        E.TOOL_CALL_CONFLICT,
        2,
    )
    named = [start(0, "tool-call"), tool_delta(0, "c", "{", name=""), tool_delta(0, "c", "}", name="f")]
    assert refused(named, HARNESS) == (E.TOOL_CALL_CONFLICT, 2)
    ended = [start(0, "tool-call"), tool_delta(0, "", "{}", name=""), end_tool(0, "", "f", "{}")]
    assert refused(ended, HARNESS) == (E.BLOCK_CONTENT_MISMATCH, 2)
    other = [start(0, "tool-call"), tool_delta(0, "", "{}"), end_tool(0, "c", "f", "{}")]
    assert refused(other, HARNESS) == (E.BLOCK_CONTENT_MISMATCH, 2)


def test_ids_may_repeat_across_blocks_under_harness_only() -> None:
    chunks = [*tool_block(0, "c"), start(1, "tool-call"), start(2, "tool-call"), tool_delta(1, "c", "{}"),
              tool_delta(2, "c", "{}"), end_tool(2, "c", "h", "{}"), end_tool(1, "c", "g", "{}"), U,
              finish("tool-calls")]  # fmt: skip
    result = accepted(chunks, HARNESS)
    assert [(c.id, c.name) for c in result.tool_calls] == [("c", "f"), ("c", "g"), ("c", "h")]
    assert [(code, index) for code, index, _ in fed(chunks, HARNESS)[1]] == [
        (E.BLOCKS_INTERLEAVED, 4),
        (E.TOOL_CALL_CONFLICT, 5),
    ]
    assert refused(chunks, STRICT) == (E.BLOCKS_INTERLEAVED, 4)
    plain = [*tool_block(0, "c"), *tool_block(1, "c"), U, finish("tool-calls")]
    assert refused(plain, STRICT) == (E.TOOL_CALL_CONFLICT, 4)


def test_an_empty_name_on_a_block_end_after_unnamed_deltas_is_noted() -> None:
    """Fixed (machine): STRICT refuses a block-end whose name is empty (INVALID_CHUNK). HARNESS accepts it, but
    notes it only when the block had no deltas (``_on_block_end`` calls ``_note_call`` for no-delta blocks only),
    so a tool call whose deltas never named it and whose block-end carries ``name: ""`` leaves no note."""
    chunks = [start(0, "tool-call"), tool_delta(0, "c", "{}"), end_tool(0, "c", "", "{}"), U, finish("tool-calls")]
    assert refused(chunks, STRICT) == (E.INVALID_CHUNK, 2)
    assert accepted(chunks, HARNESS).tool_calls[0].name == ""
    assert fed(chunks, HARNESS)[1] == [(E.INVALID_CHUNK, 2, 1)]


# -- raw arguments: SPEC §4, and raw_arguments=True ---------------------------------------------------------


#: (arguments that are not a JSON object, what the ValueError of ``parsed_arguments`` says about them)
RAW = [
    pytest.param("", "", id="empty"),
    pytest.param("not json", "", id="not json"),
    pytest.param('{"a": 1', "", id="cut off"),
    pytest.param("[1, 2]", "got list", id="an array"),
    pytest.param('"text"', "got str", id="a string"),
    pytest.param("null", "got NoneType", id="null"),
    pytest.param('{"a": NaN}', "column 7", id="NaN"),  # where the text stops being JSON
]


@pytest.mark.parametrize(("arguments", "why"), RAW)
@pytest.mark.parametrize(
    ("policy", "raw_arguments"), [(HARNESS, False), (STRICT, True)], ids=["harness", "strict, raw_arguments"]
)
def test_raw_arguments_are_kept_and_say_why_they_are_no_object(
    arguments: str, why: str, policy: Policy, raw_arguments: bool
) -> None:
    chunks = [*tool_block(0, "c1", "read", arguments), U, finish("tool-calls")]
    got, notes = fed(chunks, policy, raw_arguments=raw_arguments)
    assert isinstance(got, sf.StreamResult), got
    (call,) = got.tool_calls
    assert call.arguments == arguments
    assert got.to_wire()["blocks"] == [{"type": "tool-call", "id": "c1", "name": "read", "arguments": arguments}]
    with pytest.raises(ValueError, match="are not a JSON object") as info:
        _ = call.parsed_arguments
    message = str(info.value)
    assert "'c1'" in message and "read" in message and why in message and message.split(": ", 1)[1]
    assert notes == [(E.TOOL_ARGUMENTS_INVALID, 2, 1)]
    if policy is HARNESS:
        assert accepted(chunks, HARNESS).tool_calls[0].arguments == arguments


@pytest.mark.parametrize(("arguments", "why"), RAW)
def test_strict_refuses_raw_arguments_unless_asked_to_keep_them(arguments: str, why: str) -> None:
    chunks = [*tool_block(0, "c1", "read", arguments), U, finish("tool-calls")]
    assert refused(chunks, STRICT) == (E.TOOL_ARGUMENTS_INVALID, 2)


def test_raw_arguments_change_no_other_rule_of_strict() -> None:
    """``raw_arguments=True`` keeps arguments raw; every other rule STRICT holds, it still holds."""
    for chunks, code in (
        ([start(0, "text"), start(1, "text")], E.BLOCKS_INTERLEAVED),
        ([*tool_block(0, "c", "f", "x"), finish("tool-calls")], E.USAGE_MISSING),
        ([*TEXT, U, finish("tool-calls")], E.FINISH_REASON_MISMATCH),
        ([*tool_block(0, "c", "f", "x"), *tool_block(1, "c", "f", "y")], E.TOOL_CALL_CONFLICT),
        ([start(0, "video")], E.INVALID_CHUNK),
        ([start(0, "tool-call"), tool_delta(0, "c", "x"), end_tool(0, "c", "f", "y")], E.BLOCK_CONTENT_MISMATCH),
    ):
        got, _ = fed(chunks, STRICT, raw_arguments=True)
        assert isinstance(got, LlmError) and got.code == code, (chunks, got)


def test_an_interrupted_tool_call_keeps_its_partial_parse() -> None:
    """Cut off, the arguments so far are parsed as far as they go by the machine (SPEC §5 ``interrupted``)."""
    chunks = [start(0, "tool-call"), tool_delta(0, "c", '{"path": "src/a', name="read"), finish("max-tokens")]
    (cut,) = accepted(chunks, HARNESS).interrupted
    assert isinstance(cut, sf.ToolCallBlock)
    assert (cut.arguments, cut.parsed_arguments) == ('{"path": "src/a', {"path": "src/a"})


# -- tool-calls without a tool call: SPEC §4 ------------------------------------------------------------------


@pytest.mark.parametrize(
    "chunks",
    [
        [U, finish("tool-calls")],
        [*TEXT, U, finish("tool-calls")],
        [*text_block(0, "a"), start(1, "image"), end_image(1, {}), finish("tool-calls")],
    ],
    ids=["no block", "a text block", "a text and an image block, no usage"],
)
def test_tool_calls_may_come_without_a_tool_call_under_harness(chunks: list[Chunk]) -> None:
    result = accepted(chunks, HARNESS)
    assert result.finish.kind == "tool-calls" and result.tool_calls == []
    position = len(chunks) - 1
    assert (E.FINISH_REASON_MISMATCH, position, 1) in fed(chunks, HARNESS)[1]
    assert refused(chunks, STRICT)[1] == position


# -- notes: what STRICT would have refused ------------------------------------------------------------------------


def test_each_code_is_noted_once_at_its_first_chunk() -> None:
    chunks = [
        start(0, "text"),  # 0
        start(1, "video"),  # 1: INVALID_CHUNK (unknown type), BLOCKS_INTERLEAVED
        start(2, "tool-call"),  # 2: BLOCKS_INTERLEAVED
        tool_delta(2, "", "[1]"),  # 3: INVALID_CHUNK (empty id)
        end_block(1, {"type": "video"}),  # 4
        end_tool(2, "", "f", "[1]"),  # 5: TOOL_ARGUMENTS_INVALID
        end_text(0, ""),  # 6
        start(3, "tool-call"),  # 7
        end_tool(3, "", "g", "{}"),  # 8: INVALID_CHUNK (empty id), TOOL_CALL_CONFLICT (block 2's id)
        finish("tool-calls"),  # 9: USAGE_MISSING
    ]
    got, notes = fed(chunks, HARNESS)
    assert isinstance(got, sf.StreamResult)
    assert [note[:2] for note in notes] == [
        (E.INVALID_CHUNK, 1),
        (E.BLOCKS_INTERLEAVED, 1),
        (E.TOOL_ARGUMENTS_INVALID, 5),
        (E.TOOL_CALL_CONFLICT, 8),
        (E.USAGE_MISSING, 9),
    ]
    counts = {code: count for code, _, count in notes}
    assert (counts[E.BLOCKS_INTERLEAVED], counts[E.TOOL_ARGUMENTS_INVALID], counts[E.USAGE_MISSING]) == (2, 1, 1)
    assert refused(chunks, STRICT) == (E.INVALID_CHUNK, 1)


def test_a_note_is_the_error_strict_would_raise() -> None:
    asm = sf.StreamAssembler(HARNESS)
    for chunk in [*tool_block(0, "c", "f", "[]"), finish("tool-calls")]:
        asm.feed(chunk)
    (invalid, one), (missing, also_one) = asm.notes
    assert (one, also_one) == (1, 1)
    assert isinstance(invalid, LlmError) and isinstance(missing, LlmError)
    assert (invalid.code, invalid.chunk_index, missing.code, missing.chunk_index) == (
        E.TOOL_ARGUMENTS_INVALID, 2, E.USAGE_MISSING, 3,
    )  # fmt: skip
    assert "'c'" in invalid.message and "not a JSON object" in invalid.message
    assert asm.notes == asm.notes and asm.notes is not asm.notes  # a fresh list each time


def test_the_interleaving_note_has_the_words_strict_raises_though_read_when_the_blocks_have_changed() -> None:
    """The note keeps what its words are made of at its chunk (the blocks open then), and writes them when read."""
    opened = [start(0, "text"), start(1, "tool-call"), start(2, "reasoning")]
    with pytest.raises(LlmError) as raised:
        sf.assemble(opened, policy=STRICT)
    asm = sf.StreamAssembler(HARNESS)
    for chunk in [*opened, text_delta(0, "a"), end_text(0, "a"), start(3, "text"), end_text(3, "")]:
        asm.feed(chunk)
    (note, count), *_ = asm.notes
    strict = raised.value
    assert (note.code, note.chunk_index, note.state, note.expected) == (
        strict.code, strict.chunk_index, strict.state, strict.expected,
    )  # fmt: skip
    assert note.message == strict.message
    assert "block 0 (text) is open" in note.message  # not the blocks open when it was read
    assert count == 3  # the block-starts of blocks 1, 2 and 3 each found a block open


@pytest.mark.parametrize(
    "chunks",
    [
        [start(0, "text"), U, start(1, "video")],  # CHUNK_AFTER_USAGE: neither interleaving nor type noted
        [start(0, "text"), start(2, "video")],  # INDEX_OUT_OF_ORDER
        [start(0, "tool-call"), tool_delta(0, "c", "{"), tool_delta(0, "", "}")],  # TOOL_CALL_CONFLICT
        [start(0, "tool-call"), tool_delta(0, "c", "{"), end_tool(0, "", "", "{")],  # BLOCK_CONTENT_MISMATCH
        [start(0, "text"), finish("tool-calls")],  # BLOCK_NOT_CLOSED: neither usage nor reason noted
        [start(0, "text"), finish("paused")],  # BLOCK_NOT_CLOSED: the unknown kind is not noted
        [start(0, "tool-call"), tool_delta(0, "", "x" * 50)],  # LIMIT_EXCEEDED (max_block_bytes=40)
        [start(0, "tool-call"), end_tool(0, "c", "f", "x" * 50)],  # LIMIT_EXCEEDED: raw, not noted
    ],
    ids=["after usage", "out of order", "another id", "another content", "tool-calls open", "unknown kind open",
         "a delta past the limit", "raw arguments past the limit"],
)  # fmt: skip
def test_a_rejected_chunk_leaves_no_note(chunks: list[Chunk]) -> None:
    got, notes = fed(chunks, HARNESS, sf.Limits(max_block_bytes=40))
    assert isinstance(got, LlmError) and got.chunk_index == len(chunks) - 1
    assert [n for n in notes if n[1] == len(chunks) - 1] == []


def test_a_rejected_chunk_takes_back_the_count_it_added() -> None:
    """A rule is decided where STRICT holds it, before the limits: a chunk that noted it and then failed a limit
    takes its count back (a note it made is dropped, one it counted again counts one less)."""
    first = [*tool_block(0, "c"), start(1, "tool-call")]
    noted = [*first, end_tool(1, "c", "g", "{}"), start(2, "tool-call")]  # block 0's id again: noted
    past = tool_delta(2, "c", "x" * 50)  # block 0's id again, then past max_block_bytes=40
    got, notes = fed([*noted, past], HARNESS, sf.Limits(max_block_bytes=40))
    assert isinstance(got, LlmError) and (got.code, got.chunk_index) == (E.LIMIT_EXCEEDED, len(noted))
    assert notes == [(E.TOOL_CALL_CONFLICT, len(first), 1)]
    got, notes = fed([*first, tool_delta(1, "c", "x" * 50)], HARNESS, sf.Limits(max_block_bytes=40))
    assert isinstance(got, LlmError) and (got.code, got.chunk_index) == (E.LIMIT_EXCEEDED, len(first))
    assert notes == []


def test_notes_stay_after_a_later_error_and_strict_notes_nothing() -> None:
    got, notes = fed([start(0, "video"), end_block(0, {"type": "video"}), text_delta(0, "x")], HARNESS)
    assert isinstance(got, LlmError) and got.code is E.BLOCK_NOT_OPEN
    assert [note[:2] for note in notes] == [(E.INVALID_CHUNK, 0)]
    for chunks in (IMAGE, [*text_block(0, "a"), U, STOP], [*tool_block(0, "c"), U, finish("tool-calls")]):
        assert fed(chunks, STRICT) == (fed(chunks, STRICT)[0], [])
        assert fed(chunks, HARNESS)[1] == []


def test_notes_are_the_same_on_every_entry_point_and_count_a_tool_call_once() -> None:
    """Fixed (machine): the hot path took a later delta that repeated its block's empty id, or the id another
    block has, without noting it, while the precise path noted every such delta; and one chunk with an empty id
    and an empty name was counted twice. Now each of a tool call's empty id, empty name and id another block has
    is noted once, at the chunk that first said it (one chunk that says an empty id and an empty name: one
    count), on every entry point."""
    chunks = [
        start(0, "tool-call"),
        tool_delta(0, "", "{", name="f"),  # 1: an empty id
        tool_delta(0, "", '"a": 1'),  # 2: the same again: the same tool call, not counted again
        tool_delta(0, "", "}"),  # 3: and again
        end_tool(0, "", "f", '{"a": 1}'),
        *tool_block(1, "c", "f", "{", "}"),
        start(2, "tool-call"),
        tool_delta(2, "c", "{"),  # 10: block 1's id
        tool_delta(2, "c", "}"),  # 11: block 1's id again: not counted again
        end_tool(2, "c", "f", "{}"),
        U,
        finish("tool-calls"),
    ]
    seen = agree(chunks, HARNESS)
    assert seen["verdict"] == ("ok",)
    assert [(code, index, count) for code, index, count, _ in seen["notes"]] == [
        ("INVALID_CHUNK", 1, 1),
        ("TOOL_CALL_CONFLICT", 10, 1),
    ]
    one_chunk = [start(0, "tool-call"), end_tool(0, "", "", "{}"), U, finish("tool-calls")]
    assert fed(one_chunk, HARNESS)[1] == [(E.INVALID_CHUNK, 1, 1)]
    both_in_one_delta = [start(0, "tool-call"), tool_delta(0, "", "{", name=""), tool_delta(0, "", "}", name=""),
                         end_tool(0, "", "", "{}"), U, finish("tool-calls")]  # fmt: skip
    assert [n[:3] for n in agree(both_in_one_delta, HARNESS)["notes"]] == [("INVALID_CHUNK", 1, 1)]
    # The id said empty by one chunk, the name by a later one: two chunks, counted once each.
    one_after_the_other = [start(0, "tool-call"), tool_delta(0, "", "{"), tool_delta(0, "", "}", name=""),
                           end_tool(0, "", "", "{}"), U, finish("tool-calls")]  # fmt: skip
    assert [n[:3] for n in agree(one_after_the_other, HARNESS)["notes"]] == [("INVALID_CHUNK", 1, 2)]


def test_a_count_is_how_many_chunks_did_the_same() -> None:
    chunks = [
        start(0, "text"),
        start(1, "image"),  # interleaved (1)
        end_image(1, {}),
        start(2, "video"),  # interleaved (2), and an unknown type
        end_block(2, {"type": "video"}),
        end_text(0, ""),
        *tool_block(3, "c", "f", "[]"),  # arguments that are no object (1)
        *tool_block(4, "d", "f", "x"),  # (2)
        start(5, "tool-call"),
        end_tool(5, "c", "g", "{}"),  # block 3's id, no deltas (1)
        start(6, "tool-call"),
        end_tool(6, "d", "g", "{}"),  # block 4's id, no deltas (2)
        finish("stop"),
    ]
    got, notes = fed(chunks, HARNESS)
    assert isinstance(got, sf.StreamResult)
    counts = {code: count for code, _, count in notes}
    assert counts[E.BLOCKS_INTERLEAVED] == 2
    assert counts[E.TOOL_ARGUMENTS_INVALID] == 2
    assert counts[E.TOOL_CALL_CONFLICT] == 2
    assert counts[E.USAGE_MISSING] == 1
    assert [(code, index) for code, index, _ in notes] == [
        (E.BLOCKS_INTERLEAVED, 1),
        (E.INVALID_CHUNK, 3),
        (E.TOOL_ARGUMENTS_INVALID, 8),
        (E.TOOL_CALL_CONFLICT, 13),
        (E.USAGE_MISSING, 16),
    ]


# -- snapshots and interrupted blocks ---------------------------------------------------------------------------


@pytest.mark.parametrize(("policy", "block_type"), [(STRICT, "image"), (HARNESS, "image"), (HARNESS, "video")])
def test_a_snapshot_shows_an_open_block_that_takes_no_deltas(policy: Policy, block_type: str) -> None:
    asm = sf.StreamAssembler(policy)
    for chunk in [*TEXT, start(1, block_type)]:
        asm.feed(chunk)
    snap = asm.snapshot()
    assert (snap.state, snap.chunk_count) == ("IN_BLOCK", 4)
    assert snap.blocks == [sf.TextBlock(text="hi")]
    (open_block,) = snap.open
    assert (open_block.index, open_block.block_type, open_block.text, open_block.id, open_block.arguments) == (
        1, block_type, "", None, "",
    )  # fmt: skip
    ended = end_image(1, ATTACHMENT) if block_type == "image" else end_block(1, VIDEO)
    asm.feed(ended)
    snap = asm.snapshot()
    assert snap.open == []
    assert snap.blocks[1] == (sf.ImageBlock(attachment=ATTACHMENT) if block_type == "image" else VIDEO)


def test_a_snapshot_of_harness_blocks_interleaved() -> None:
    asm = sf.StreamAssembler(HARNESS)
    asm.feed_many([start(0, "video"), start(1, "image"), start(2, "text"), text_delta(2, "so far")])
    assert [(b.index, b.block_type, b.text) for b in asm.snapshot().open] == [
        (0, "video", ""), (1, "image", ""), (2, "text", "so far"),
    ]  # fmt: skip


def test_max_tokens_interrupts_an_image_block_and_one_of_an_unknown_type() -> None:
    chunks = [
        start(0, "image"),
        start(1, "video"),
        start(2, "tool-call"),
        tool_delta(2, "", '{"q": "x', name=""),
        start(3, "text"),
        text_delta(3, "cut"),
        finish("max-tokens"),
    ]
    result = accepted(chunks, HARNESS)
    image, video, call, text = result.interrupted
    assert (image, video) == ({"type": "image"}, {"type": "video"})
    assert isinstance(call, sf.ToolCallBlock) and (call.id, call.name, call.arguments) == ("", "", '{"q": "x')
    assert isinstance(text, sf.TextBlock) and text.text == "cut"
    assert result.blocks == [] and result.to_wire()["blocks"] == []
    strict = [start(0, "image"), U, finish("max-tokens")]
    assert accepted(strict, STRICT).interrupted == [{"type": "image"}]


# -- what is kept is the machine's own -------------------------------------------------------------------------


def test_to_wire_of_a_block_of_an_unknown_type_is_a_copy() -> None:
    """Fixed (machine): ``StreamResult.to_wire()`` hands out the very dict a block of an unknown type is kept in
    (``b if isinstance(b, dict) else b.to_wire()``), so changing the wire form changes the result; every other
    block's wire form is a new dict (an image block's attachment included)."""
    result = accepted([start(0, "video"), end_block(0, copy.deepcopy(VIDEO)), start(1, "image"),
                       end_image(1, copy.deepcopy(ATTACHMENT)), STOP], HARNESS)  # fmt: skip
    wire = result.to_wire()
    wire["blocks"][1]["attachment"]["id"] = "changed"
    assert result.blocks[1] == sf.ImageBlock(attachment=ATTACHMENT)
    wire["blocks"][0]["frames"].append({"t": 1})
    wire["blocks"][0]["codec"] = "changed"
    assert result.blocks[0] == VIDEO
    assert result.to_wire()["blocks"][0] == VIDEO


def test_messages_cut_a_long_block_type_or_finish_kind() -> None:
    """Fixed (machine): messages quote values cut at 40 characters (``_short``), and notes cut an unknown block type
    so (``_printable_kind``); but ``_Open.describe`` writes a block's type whole, and the BLOCK_NOT_CLOSED message
    a finish kind whole: a block type of 5,000 characters makes a BLOCK_TYPE_MISMATCH message of over 10,000
    (raw newlines included), and STREAM_TRUNCATED's and BLOCK_NOT_CLOSED's likewise."""
    long = "v" * 5_000 + "\n"
    cases = [
        [start(0, long), text_delta(0, "x")],
        [start(0, long)],
        [start(0, "text"), {"type": "finish", "reason": {"kind": long}}],
        [start(0, "text"), end_block(0, {"type": long})],
    ]
    for chunks in cases:
        got, _ = fed(chunks, HARNESS)
        assert isinstance(got, LlmError)
        assert len(got.message) < 400 and "\n" not in got.message, (got.code, len(got.message))


# -- the seed's rules that HARNESS still holds, with the new vocabulary ---------------------------------------------


@pytest.mark.parametrize(
    ("chunks", "code"),
    [
        ([start(0, "image"), end_image(0, {}), start(0, "video")], E.INDEX_OUT_OF_ORDER),
        ([start(0, "video"), U, end_block(0, {"type": "video"})], E.CHUNK_AFTER_USAGE),
        ([start(0, "video"), end_block(0, {"type": "video"}), end_block(0, {"type": "video"})], E.BLOCK_NOT_OPEN),
        ([U, finish("paused"), U], E.CHUNK_AFTER_FINISH),
        ([start(0, "video"), end_block(0, {"type": "video"})], E.STREAM_TRUNCATED),
        ([{"type": "finish", "reason": {"kind": 5}}], E.INVALID_CHUNK),
        ([start(0, 5)], E.INVALID_CHUNK),
        ([start(0, "video"), end_block(0, {"type": None})], E.INVALID_CHUNK),
        ([start(0, "tool-call"), tool_delta(0, None, "{}")], E.INVALID_CHUNK),
        ([start(0, "tool-call"), end_tool(0, "c", None, "{}")], E.INVALID_CHUNK),
    ],
    ids=["index order", "after usage", "ended twice", "after an unknown finish", "no finish", "a kind of 5",
         "a block type of 5", "a block-end type of null", "an id of null", "a name of null"],
)  # fmt: skip
def test_harness_still_holds_every_rule_it_keeps(chunks: list[Chunk], code: ErrorCode) -> None:
    got = refused(chunks, HARNESS)
    assert got == (code, len(chunks) if code is E.STREAM_TRUNCATED else len(chunks) - 1)


def test_usage_is_optional_and_noted_under_harness() -> None:
    for kind in ("stop", "max-tokens"):
        chunks = [*TEXT, finish(kind)]
        assert accepted(chunks, HARNESS).usage is None
        assert fed(chunks, HARNESS)[1] == [(E.USAGE_MISSING, 3, 1)]
    for kind in ("error", "aborted"):  # optional under STRICT too: nothing to note
        assert fed([*TEXT, finish(kind, FAILURE)], HARNESS)[1] == []
    assert fed([*TEXT, usage(), STOP], HARNESS)[1] == []


@pytest.mark.parametrize(
    ("given", "policy"),
    [
        (Policy.STRICT, Policy.STRICT),
        ("harness", Policy.HARNESS),
        ("HARNESS", Policy.HARNESS),
        ("Strict", Policy.STRICT),
    ],
)
def test_a_policy_is_a_member_its_value_or_its_name_in_any_case(given: Policy | str, policy: Policy) -> None:
    assert as_policy(given) is policy
    assert sf.StreamAssembler(given).policy is policy
    assert accepts(READY, given) == accepts(READY, policy)


@pytest.mark.parametrize("given", ["lenient", "", 1, None])
def test_anything_else_is_no_policy(given: object) -> None:
    with pytest.raises(ValueError, match="is not a policy: one of strict, harness"):
        as_policy(given)  # type: ignore[arg-type]

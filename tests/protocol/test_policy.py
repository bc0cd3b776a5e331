"""SPEC §4: what ``Policy.HARNESS`` allows that ``Policy.STRICT`` (the default) rejects, and nothing else.

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
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    accept_noted,
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
#: what its block-start or deltas were noted for counts is test_harness.py's business).
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

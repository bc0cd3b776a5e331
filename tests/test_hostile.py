"""Hostile values: nothing but LlmError escapes, and what is accepted cannot be changed afterwards."""

from __future__ import annotations

import copy
import json
import math
import sys
import types
from collections import UserDict
from typing import Any

import pytest

import streamfsm as sf

from .builders import STRICT, accept, end_text, end_tool, finish, start, text_delta, tool_delta, usage
from .conftest import SEED_CHUNKS


class Hostile:
    """A value whose comparisons, hash and repr all raise."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__")

    def __ne__(self, other: object) -> bool:
        raise RuntimeError("__ne__")

    def __hash__(self) -> int:
        raise RuntimeError("__hash__")

    def __repr__(self) -> str:
        raise RuntimeError("__repr__")

    def __len__(self) -> int:
        raise RuntimeError("__len__")


class Liar(str):
    """A str subclass that claims to equal everything."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


class Exploding(dict[str, Any]):
    """A dict subclass whose item access raises."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("__getitem__")

    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("get")


def fed(chunks: list[Any], policy: sf.Policy = STRICT) -> tuple[str, int | None] | sf.StreamResult:
    try:
        return sf.assemble(chunks, policy=policy)
    except sf.LlmError as exc:
        return (str(exc.code), exc.chunk_index)


def with_chunk_at(position: int, chunk: Any) -> list[Any]:
    chunks = copy.deepcopy(SEED_CHUNKS)
    chunks[position] = chunk
    return chunks


HOSTILE_CHUNKS = {
    "None": None,
    "list": [],
    "str": "text-delta",
    "int": 7,
    "object": object(),
    "Hostile": Hostile(),
    "hostile type": {"type": Hostile(), "index": 0, "text": "x"},
    "hostile index": {"type": "text-delta", "index": Hostile(), "text": "runoob"},
    "hostile text": {"type": "text-delta", "index": 0, "text": Hostile()},
    "lying type": {"type": Liar("nonsense"), "index": 0, "text": "runoob"},
    "lying text": {"type": "text-delta", "index": 0, "text": Liar("runoob")},
    "exploding dict": Exploding(type="text-delta", index=0, text="runoob"),
    "bool index": {"type": "text-delta", "index": False, "text": "runoob"},
    "float index": {"type": "text-delta", "index": 0.0, "text": "runoob"},
    "huge index": {"type": "text-delta", "index": 2**64, "text": "runoob"},
    "bytes text": {"type": "text-delta", "index": 0, "text": b"runoob"},
    "list text": {"type": "text-delta", "index": 0, "text": ["runoob"]},
}


@pytest.mark.parametrize("chunk", HOSTILE_CHUNKS.values(), ids=HOSTILE_CHUNKS.keys())
def test_hostile_chunk_in_place_of_a_delta(chunk: Any) -> None:
    outcome = fed(with_chunk_at(1, chunk))
    if isinstance(outcome, sf.StreamResult):
        # A str subclass is a str (its characters count, not what its __eq__ claims), and a dict
        # subclass is read for what it holds: both are the seed's own delta.
        assert isinstance(chunk, Exploding) or isinstance(chunk["text"], Liar)
        assert outcome == sf.assemble(SEED_CHUNKS)
        return
    code, position = outcome
    assert position == 1
    assert code in {"INVALID_CHUNK", "BLOCK_CONTENT_MISMATCH"}


@pytest.mark.parametrize("chunk", HOSTILE_CHUNKS.values(), ids=HOSTILE_CHUNKS.keys())
@pytest.mark.parametrize("position", range(len(SEED_CHUNKS) + 1))
def test_hostile_chunk_anywhere_raises_only_llm_error(chunk: Any, position: int) -> None:
    chunks = [*SEED_CHUNKS[:position], chunk, *SEED_CHUNKS[position:]]
    for policy in sf.Policy:
        outcome = fed(chunks, policy)
        if not isinstance(outcome, sf.StreamResult):
            assert outcome[1] is not None and 0 <= outcome[1] <= len(chunks)


def test_a_lying_str_subclass_cannot_change_the_assembled_text() -> None:
    """What a delta's characters are decides, not what its __eq__ claims."""
    lying = [start(0, "text"), text_delta(0, Liar("abc")), end_text(0, "xyz"), usage(), finish("stop")]
    assert fed(lying) == ("BLOCK_CONTENT_MISMATCH", 2)
    honest = [start(0, "text"), text_delta(0, Liar("abc")), end_text(0, "abc"), usage(), finish("stop")]
    result = sf.assemble(honest)
    (block,) = result.blocks
    assert isinstance(block, sf.TextBlock) and type(block.text) is str and result.text == "abc"


def test_mappings_that_are_not_dicts_are_read_like_dicts() -> None:
    chunks = [types.MappingProxyType(c) for c in SEED_CHUNKS]
    assert sf.assemble(chunks) == sf.assemble(SEED_CHUNKS)
    user = [UserDict(c) for c in SEED_CHUNKS]
    assert sf.assemble(user) == sf.assemble(SEED_CHUNKS)


@pytest.mark.parametrize(
    "arguments",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' + "[" * 5_000 + "]" * 5_000 + "}",
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": -Infinity}',
        '{"a": 1e999999}',
        '{"a": "\ud800"}',
        "{" * 50_000,
    ],
    ids=["deep list", "deep object", "NaN", "Infinity", "-Infinity", "overflowing float", "raw surrogate", "open"],
)
def test_hostile_arguments_are_refused_not_crashed(arguments: str) -> None:
    chunks = [start(0, "tool-call"), end_tool(0, "c1", "f", arguments), usage(), finish("tool-calls")]
    outcome = fed(chunks)
    if isinstance(outcome, sf.StreamResult):
        # Only an overflowing float literal is JSON (RFC 8259 §6 lets a parser read it as infinity).
        assert arguments == '{"a": 1e999999}'
        assert math.isinf(outcome.tool_calls[0].parsed_arguments["a"])
    else:
        assert outcome == ("TOOL_ARGUMENTS_INVALID", 1)


@pytest.mark.parametrize("long", [False, True], ids=["orjson (short)", "standard parser (over 16 kB)"])
@pytest.mark.parametrize("depth", [900, 1024, 1025, 5_000])
def test_nesting_is_bounded_on_every_interpreter(depth: int, long: bool) -> None:
    """1,024 levels at most, on both parsers and whatever the interpreter's own limit (3.13 parses 5,000 levels).

    On Python 3.11 the standard parser follows the interpreter's recursion limit and refuses from about 1,000
    levels: there only the bound itself is checked."""
    arguments = '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}" + (" " * 20_000 if long else "")
    chunks = [start(0, "tool-call"), end_tool(0, "c1", "f", arguments), usage(), finish("tool-calls")]
    outcome = fed(chunks)
    if depth > 1024:
        assert outcome == ("TOOL_ARGUMENTS_INVALID", 1)
    elif depth <= 900 or not long or sys.version_info >= (3, 12):
        assert isinstance(outcome, sf.StreamResult), outcome


def test_brackets_in_strings_are_not_nesting() -> None:
    value = {"a": "[{" * 3_000, "b": ["]]]", "\\", '"[[['], "c": [[[]]]}
    arguments = json.dumps(value) + " " * 20_000  # the standard parser's path, past the cheap bracket count
    result = sf.assemble([start(0, "tool-call"), end_tool(0, "c1", "f", arguments), usage(), finish("tool-calls")])
    assert result.tool_calls[0].parsed_arguments == value


@pytest.mark.parametrize(
    "arguments",
    [
        '{"a":[' + "[]," * 1_100 + '"' + '\\"' * 25_000,  # an unterminated string of escaped quotes
        '{"a": [' + "[1]," * 20_000 + "[1]]}",  # over 16 kB: the standard parser, then a depth check that passes
    ],
    ids=["unterminated string after many brackets", "many brackets, shallow"],
)
def test_many_brackets_are_not_nesting(arguments: str) -> None:
    """The depth bound is checked on the parsed value, in one pass: many brackets cost no more than their count."""
    chunks = [start(0, "tool-call"), end_tool(0, "c1", "f", arguments), usage(), finish("tool-calls")]
    outcome = fed(chunks)
    if arguments.endswith('"'):
        assert outcome == ("TOOL_ARGUMENTS_INVALID", 1)
    else:
        assert isinstance(outcome, sf.StreamResult)
        assert len(outcome.tool_calls[0].parsed_arguments["a"]) == 20_001


def test_lone_surrogates_in_text_are_text() -> None:
    chunks = [start(0, "text"), text_delta(0, "a\ud800"), end_text(0, "a\ud800"), usage(), finish("stop")]
    assert sf.assemble(chunks).text == "a\ud800"


@pytest.mark.parametrize(
    "line", [b"\xff\xfe", b'{"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}\xc3}']
)
def test_invalid_utf8_lines(line: bytes) -> None:
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl(b'{"type": "block-start", "index": 0, "blockType": "text"}\n' + line + b"\n")
    assert (info.value.code, info.value.chunk_index) == ("INVALID_CHUNK", 1)


def test_chunks_mutated_after_feed_do_not_change_the_result() -> None:
    chunks = copy.deepcopy(SEED_CHUNKS)
    chunks[-1] = finish("stop", replayState={"cursor": [1, 2]})
    asm = sf.StreamAssembler()
    for chunk in chunks:
        asm.feed(chunk)
    result = asm.close()
    expected = result.to_wire()
    chunks[1]["text"] = "changed"
    chunks[3]["block"]["text"] = "changed"
    chunks[6]["block"]["arguments"] = '{"changed": true}'
    chunks[7]["usage"]["inputTokens"] = 999
    chunks[-1]["replayState"]["cursor"].append(3)
    assert result.to_wire() == expected
    assert result.replay_state == {"cursor": [1, 2]}
    assert result.tool_calls[0].parsed_arguments == {"command": "echo runoob"}


def test_tool_delta_with_hostile_id_and_name() -> None:
    for bad in (Hostile(), Liar("call-1"), None, 1):
        for field in ("id", "name"):
            delta = tool_delta(0, "call-1", "{}", name="f")
            delta[field] = bad
            chunks = [
                start(0, "tool-call"),
                tool_delta(0, "call-1", "", name="f"),
                delta,
                end_tool(0, "call-1", "f", "{}"),
                usage(),
                finish("tool-calls"),
            ]
            outcome = fed(chunks)
            if isinstance(outcome, sf.StreamResult):
                assert isinstance(bad, Liar)  # a str subclass is a str; its content is what counts
            else:
                assert outcome[1] == 2 and outcome[0] in {"INVALID_CHUNK", "TOOL_CALL_CONFLICT"}


def test_accept_helper_still_works() -> None:
    assert accept(SEED_CHUNKS).text == "runoob 教程"


def outcome_of(chunks: list[Any], policy: sf.Policy, *, fast: bool) -> Any:
    asm = sf.StreamAssembler(policy)
    asm._fast = fast
    try:
        for chunk in chunks:
            asm.feed(chunk)
        return asm.close().to_wire()
    except sf.LlmError as exc:
        return (str(exc.code), exc.chunk_index, exc.message)


@pytest.mark.parametrize("chunk", HOSTILE_CHUNKS.values(), ids=HOSTILE_CHUNKS.keys())
def test_hostile_chunks_get_the_same_answer_from_every_path(chunk: Any) -> None:
    """The hot and quick paths decline what they cannot vouch for; the precise path then decides."""
    for position in range(len(SEED_CHUNKS) + 1):
        chunks = [*SEED_CHUNKS[:position], chunk, *SEED_CHUNKS[position:]]
        for policy in sf.Policy:
            assert outcome_of(chunks, policy, fast=True) == outcome_of(chunks, policy, fast=False)
        replaced = with_chunk_at(min(position, len(SEED_CHUNKS) - 1), chunk)
        assert outcome_of(replaced, STRICT, fast=True) == outcome_of(replaced, STRICT, fast=False)

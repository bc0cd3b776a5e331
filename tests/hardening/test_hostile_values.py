"""Hostile values: nothing but LlmError escapes, and what is accepted cannot be changed afterwards.

Under ``Policy.HARNESS`` hostile tool arguments are kept raw (SPEC §4), and what is kept as it came (an
image's attachment, a block of an unknown type, a finish of an unknown kind) is checked to be JSON data:
nested at most 512 levels, each shared object checked once, cycles refused.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
import types
from collections import UserDict
from typing import Any

import pytest

import streamfsm as sf

from ..builders import (
    FEEDS,
    HARNESS,
    STRICT,
    accept,
    agree,
    end_block,
    end_image,
    end_text,
    end_tool,
    finish,
    start,
    text_delta,
    tool_delta,
    usage,
)
from ..data import SEED_CHUNKS


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
    # An overflowing float literal is JSON text, but no double holds it: refused, never read as infinity
    # (RFC 8259 §6 lets an implementation set the range of its numbers).
    assert fed(chunks) == ("TOOL_ARGUMENTS_INVALID", 1)


@pytest.mark.parametrize(
    "arguments",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' + "[" * 5_000 + "]" * 5_000 + "}",
        '{"a": NaN}',
        '{"a": -Infinity}',
        '{"a": "\ud800"}',
        "{" * 50_000,
    ],
    ids=["deep list", "deep object", "NaN", "-Infinity", "raw surrogate", "open"],
)
def test_hostile_arguments_are_kept_raw_under_harness(arguments: str) -> None:
    chunks = [start(0, "tool-call"), end_tool(0, "c1", "f", arguments), usage(), finish("tool-calls")]
    for feed in FEEDS.values():
        asm = sf.StreamAssembler(HARNESS)
        feed(asm, chunks)
        (call,) = asm.close().tool_calls
        assert call.arguments == arguments
        with pytest.raises(ValueError, match="not a JSON object"):
            _ = call.parsed_arguments
        ((note, count),) = asm.notes
        assert (note.code, note.chunk_index, count) == ("TOOL_ARGUMENTS_INVALID", 1, 1)
        assert len(note.message) < 400  # the arguments are quoted cut short


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


def test_lone_surrogates_in_cut_off_tool_arguments_can_be_seen() -> None:
    """BUG (``_models.partial_object``): the partial object of arguments that hold a lone surrogate is read with
    pydantic_core's ``from_json``, which raises ``TypeError`` for such a ``str`` (only ``ValueError`` is caught):
    ``snapshot()`` of the open call raises it, and so does ``close()`` (``assemble``) of a stream cut off by
    max-tokens while the call is open: an exception that is not an ``LlmError`` escapes."""
    chunks = [start(0, "tool-call"), tool_delta(0, "c", '{"a": "\ud800', name="f"), usage(), finish("max-tokens")]
    asm = sf.StreamAssembler()
    asm.feed_many(chunks[:2])
    (seen,) = asm.snapshot().open
    assert seen.arguments == '{"a": "\ud800'
    (cut,) = sf.assemble(chunks).interrupted
    assert isinstance(cut, sf.ToolCallBlock) and cut.arguments == '{"a": "\ud800'


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


def nested(depth: int) -> Any:
    """JSON data of arrays and objects nested ``depth`` levels (the outermost included)."""
    value: Any = 1
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def shared(levels: int) -> list[Any]:
    """``v = [v, v]``, ``levels`` deep: 2^levels paths to its leaf, ``levels`` distinct objects."""
    value: list[Any] = [1]
    for _ in range(levels):
        value = [value, value]
    return value


def cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["again"] = [loop]
    return loop


#: Where a value kept as it came sits in a stream: (a stream with the value in one such place, the position
#: of the chunk that holds it).
KEPT_AT: dict[str, tuple[Any, int]] = {
    "an image's attachment": (lambda v: [start(0, "image"), end_image(0, {"a": v}), usage(), finish("stop")], 1),
    "a block of an unknown type": (
        lambda v: [start(0, "video"), end_block(0, {"type": "video", "a": v}), finish("stop")],
        1,
    ),
    "a finish of an unknown kind": (lambda v: [{"type": "finish", "reason": {"kind": "paused", "a": v}}], 0),
    "a replay state": (lambda v: [usage(), finish("stop", replayState={"a": v})], 1),
}


@pytest.mark.parametrize("where", KEPT_AT.keys())
@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (nested(511), True),
        (nested(512), False),
        (nested(5_000), False),
        (cycle(), False),
        ({"x": [1, {"y": math.nan}]}, False),
        ({"x": [1, {2: "y"}]}, False),
        ([b"bytes"], False),
        ([object()], False),
        ((1, (2, 3)), True),
    ],
    ids=["511 levels", "512 levels", "5,000 levels", "a cycle", "NaN", "an int key", "bytes", "an object", "tuples"],
)  # fmt: skip
def test_what_is_kept_as_it_came_is_json_data_nested_512_levels_at_most(where: str, value: Any, ok: bool) -> None:
    """Wrapped in the chunk's own object (the attachment, the block, the reason, the replay state's ``{"a": ...}``),
    511 levels of ``value`` are 512: accepted; one more is ``INVALID_CHUNK``."""
    make, position = KEPT_AT[where]
    chunks = make(value)
    seen = agree(chunks, HARNESS)
    if ok:
        assert (seen["verdict"], seen["chunk_count"]) == (("ok",), len(chunks))
    else:
        assert seen["verdict"][1:3] == ("INVALID_CHUNK", position)


#: Run in a child process held to 2 GiB of address space: a machine that expanded the shared objects would
#: need 2^40 of them (it would be killed, or fail to allocate), not take the whole test run down with it.
SHARED_CHILD = """
import json, resource, sys
try:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
except (ValueError, OSError):
    pass
import streamfsm as sf
value = [1]
for _ in range(40):
    value = [value, value]
where = sys.argv[1]
if where == "an image's attachment":
    chunks = [{"type": "block-start", "index": 0, "blockType": "image"},
              {"type": "block-end", "index": 0, "block": {"type": "image", "attachment": {"a": value}}}]
elif where == "a block of an unknown type":
    chunks = [{"type": "block-start", "index": 0, "blockType": "video"},
              {"type": "block-end", "index": 0, "block": {"type": "video", "a": value}}]
elif where == "a finish of an unknown kind":
    chunks = [{"type": "finish", "reason": {"kind": "paused", "a": value}}]
else:
    chunks = [{"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
              {"type": "finish", "reason": {"kind": "stop"}, "replayState": {"a": value}}]
for many in (False, True):
    asm = sf.StreamAssembler("harness")
    try:
        if many:
            asm.feed_many(chunks)
        else:
            for chunk in chunks:
                asm.feed(chunk)
        print("accepted", asm.chunk_count)
    except sf.LlmError as exc:
        print(exc.code, exc.chunk_index)
"""


@pytest.mark.parametrize("where", KEPT_AT.keys())
def test_what_is_kept_as_it_came_may_share_objects(where: str) -> None:
    """``v = [v, v]`` 40 levels deep: 41 objects, 2^40 paths. The JSON-data check visits each object once, and
    nothing else may expand it: the value is accepted, or refused with a code (LIMIT_EXCEEDED: written out, it
    is terabytes), through ``feed`` and ``feed_many`` alike; the process neither crashes nor runs out of memory
    (bounded, generously, at 60 s and 2 GiB)."""
    done = subprocess.run(
        [sys.executable, "-c", SHARED_CHILD, where], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"the child process ended with {done.returncode}: {done.stderr[-500:]}"
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1], lines
    assert lines[0].startswith(("accepted", "LIMIT_EXCEEDED")), lines


def test_hostile_values_in_what_is_kept_raise_only_llm_error() -> None:
    for where, (make, _) in KEPT_AT.items():
        for bad in (Hostile(), Exploding(a=1), HOSTILE_CHUNKS["hostile type"], float("inf")):
            try:
                sf.assemble(make(bad), policy=HARNESS)
            except sf.LlmError as exc:
                assert exc.code == "INVALID_CHUNK", (where, exc)


def test_what_is_kept_as_it_came_cannot_be_changed_afterwards() -> None:
    attachment: dict[str, Any] = {"id": "att-1", "size": [64, 48]}
    block: dict[str, Any] = {"type": "video", "frames": [{"t": 0}]}
    reason: dict[str, Any] = {"kind": "paused", "why": {"a": [1]}}
    chunks = [start(0, "image"), end_image(0, attachment), start(1, "video"), end_block(1, block),
              {"type": "finish", "reason": reason}]  # fmt: skip
    result = sf.assemble(chunks, policy=HARNESS)
    expected = copy.deepcopy(result.to_wire())
    attachment["size"].append(1)
    block["frames"][0]["t"] = 9
    reason["why"]["a"].append(2)
    assert result.to_wire() == expected


def test_accept_helper_still_works() -> None:
    assert accept(SEED_CHUNKS).text == "runoob 教程"


#: A stream that is valid under HARNESS only, to put hostile chunks in (a block of an unknown type, an
#: empty tool-call id, raw arguments, a finish of an unknown kind).
HARNESS_ONLY = [
    start(0, "video"),
    end_block(0, {"type": "video", "t": [1]}),
    start(1, "tool-call"),
    tool_delta(1, "", "not json", name="f"),
    end_tool(1, "", "f", "not json"),
    {"type": "finish", "reason": {"kind": "paused"}},
]


@pytest.mark.parametrize("chunk", HOSTILE_CHUNKS.values(), ids=HOSTILE_CHUNKS.keys())
def test_hostile_chunks_in_a_harness_stream_get_the_same_answer_from_every_entry_point(chunk: Any) -> None:
    """Result or error (code, position, message, state), notes and snapshot: the same through ``feed``,
    ``feed_many``, ``assemble``, ``validate`` and ``aassemble``."""
    for position in range(len(HARNESS_ONLY) + 1):
        chunks = [*HARNESS_ONLY[:position], chunk, *HARNESS_ONLY[position:]]
        seen = agree(chunks, HARNESS)
        assert seen["verdict"][0] == "error" or isinstance(chunk, Exploding) or isinstance(chunk.get("text"), Liar)


@pytest.mark.parametrize("chunk", HOSTILE_CHUNKS.values(), ids=HOSTILE_CHUNKS.keys())
def test_hostile_chunks_get_the_same_answer_from_every_entry_point(chunk: Any) -> None:
    """The hot path declines what it cannot vouch for (a chunk that is no dict, a field of another type); the
    chunk's handler then decides, whichever entry point brought the chunk."""
    for position in range(len(SEED_CHUNKS) + 1):
        chunks = [*SEED_CHUNKS[:position], chunk, *SEED_CHUNKS[position:]]
        for policy in sf.Policy:
            agree(chunks, policy)
        agree(with_chunk_at(min(position, len(SEED_CHUNKS) - 1), chunk), STRICT)

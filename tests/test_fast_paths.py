"""Which path takes which chunk: the hot and quick paths take every plain valid chunk they are meant to.

``test_paths.py`` proves the fast paths change no outcome; this module proves they are taken (a fast
path that declined everything would pass there, at the precise path's cost). The design, from the
machine's module docstring:

* **hot**: a delta for the one open block, once a tool call's id is known, while the block stays
  within its ``cap`` (4,096 units — a character, plus one a delta — past the last delta the hot path
  did not take, and at most a quarter of ``max_block_bytes``) and the stream within ``max_chunks``;
* **quick**: any other plain (``dict``) valid chunk, but a ``finish`` with a failure or a
  ``replayState``, and the delta that takes a block past a quarter of ``max_block_bytes`` in units
  (that one switches the block to exact UTF-8 bytes on the precise path; the quick path counts the
  bytes of its later deltas);
* **precise**: everything else, and every chunk that breaks a rule; and what only ``Policy.HARNESS`` accepts
  (SPEC §4) and is noted (:attr:`StreamAssembler.notes`): a block that takes no deltas (an image block, in both
  policies, or one of an unknown type), an empty tool-call id or name that is not the block's own already, a
  first delta with an id another block has, a no-delta tool call with such an id, arguments that are not a
  JSON object, a finish of an unknown kind or a ``tool-calls`` finish with no tool call.

The path of each chunk is read from a recording subclass of the source module's assembler (the
compiled module cannot be subclassed; the source is the same code).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from collections import UserDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm import _machine

from .builders import (
    end_block,
    end_image,
    end_reasoning,
    end_text,
    end_tool,
    finish,
    reasoning_delta,
    start,
    text_delta,
    tool_delta,
    usage,
)
from .conftest import SEED_CHUNKS, SESSIONS

FLUSH = 4096  # the machine's _FLUSH: parts between flushes, and units between two caps


def source_machine() -> ModuleType:
    """The machine module as Python: itself when it runs as source, else its source file loaded apart."""
    if _machine.__file__ is not None and _machine.__file__.endswith(".py"):
        return _machine
    name = "streamfsm._machine_source"
    if name not in sys.modules:
        assert _machine.__file__ is not None
        spec = importlib.util.spec_from_file_location(name, Path(_machine.__file__).with_name("_machine.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


M = source_machine()


class Recorder(M.StreamAssembler):  # type: ignore[misc,name-defined]
    """The assembler, noting the position of every chunk that reaches the quick or the precise path."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.other: list[int] = []
        self.precise: list[int] = []

    def _feed_other(self, chunk: object) -> None:
        self.other.append(self._count)
        super()._feed_other(chunk)

    def _precise(self, chunk: object) -> None:
        self.precise.append(self._count)
        super()._precise(chunk)

    def paths(self, n: int) -> list[str]:
        return ["precise" if i in self.precise else "quick" if i in self.other else "hot" for i in range(n)]


@dataclass
class _Block:
    kind: str
    cap: int
    size: int = 0
    deltas: int = 0
    has_id: bool = False
    exact: bool = False
    name: str | None = None


def _object_or_none(arguments: str) -> dict[str, Any] | None:
    """The JSON object tool arguments hold, or None (RFC 8259: no NaN or Infinity)."""

    def no_constant(name: str) -> Any:
        raise ValueError(name)

    try:
        value = json.loads(arguments, parse_constant=no_constant)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@dataclass
class Model:
    """The paths the design assigns to the chunks of a valid stream (see the module docstring)."""

    limits: sf.Limits = field(default_factory=sf.Limits)
    open: dict[int, _Block] = field(default_factory=dict)
    #: Tool-call ids, each with the first block that had it; and how many tool calls have ended.
    owners: dict[str, int] = field(default_factory=dict)
    tool_calls: int = 0

    def path(self, chunk: Mapping[str, Any]) -> str:
        t = chunk["type"]
        fast_cap = self.limits.max_block_bytes // 4
        if type(chunk) is not dict:  # a Mapping that is not a dict: read on the precise path only
            self.precise_only(chunk)
            return "precise"
        if t == "tool-call-delta" and self.noted_delta(chunk):  # SPEC §4, noted: the precise path
            self.precise_only(chunk)
            return "precise"
        if t in ("text-delta", "reasoning-delta", "tool-call-delta"):
            block = self.open[chunk["index"]]
            value = chunk["argumentsDelta" if t == "tool-call-delta" else "text"]
            size = block.size + len(value) + 1
            hot = len(self.open) == 1 and (block.kind != "tool-call" or block.has_id)
            if t == "tool-call-delta" and not block.has_id:
                self.owners.setdefault(chunk["id"], chunk["index"])
            block.has_id = True
            block.deltas += 1
            if not block.exact and hot and size <= block.cap:
                block.size = size
                return "hot"
            if not block.exact and size <= fast_cap:
                block.size, block.cap = size, min(fast_cap, size + FLUSH)
                return "quick"
            if block.exact:
                return "quick"  # bytes counted exactly, one delta at a time
            block.exact = True
            return "precise"  # the switch: the block's bytes so far are counted once
        if t == "block-start":
            self.open[chunk["index"]] = _Block(chunk["blockType"], cap=min(fast_cap, FLUSH))
            if chunk["blockType"] not in ("text", "reasoning", "tool-call"):  # a block that takes no deltas
                return "precise"
        elif t == "block-end":
            block = self.open.pop(chunk["index"])
            wire = chunk["block"]
            if block.kind not in ("text", "reasoning", "tool-call"):  # kept as it came: the precise path
                return "precise"
            content = wire["arguments"] if block.kind == "tool-call" else wire["text"]
            if block.kind == "tool-call":
                self.tool_calls += 1
                reused = self.owners.setdefault(wire["id"], chunk["index"]) != chunk["index"]
                parsed = _object_or_none(content)
                if not wire["id"] or not wire["name"] or parsed is None or (reused and not block.deltas):
                    return "precise"  # noted (SPEC §4)
            if not block.deltas and len(content) > fast_cap:  # a big block with no deltas: bytes counted exactly
                return "precise"
        elif t == "finish":
            kind = chunk["reason"]["kind"]
            if kind in ("error", "aborted") or "replayState" in chunk:
                return "precise"
            if kind not in ("stop", "tool-calls", "max-tokens") or (kind == "tool-calls" and not self.tool_calls):
                return "precise"  # noted (SPEC §4)
        return "quick"

    def noted_delta(self, chunk: Mapping[str, Any]) -> bool:
        """A tool-call delta HARNESS notes and the quick path declines: a first delta with an empty id or name
        or an id another block has, or a later delta that first names the tool with an empty name.

        (A later delta that repeats its block's empty id, or the id another block has, is left out of the
        streams here: whether a fast path may take such a delta is the notes' business, in test_paths.py.)
        """
        block = self.open[chunk["index"]]
        cid, name = chunk["id"], chunk.get("name")
        if not block.has_id:
            return not cid or name == "" or self.owners.get(cid, chunk["index"]) != chunk["index"]
        return name == "" and block.name != ""

    def precise_only(self, chunk: Mapping[str, Any]) -> None:
        """What a chunk the precise path took does to the blocks (the precise path keeps sizes as the others)."""
        t = chunk["type"]
        if t == "block-start":
            self.open[chunk["index"]] = _Block(chunk["blockType"], cap=min(self.limits.max_block_bytes // 4, FLUSH))
        elif t == "block-end":
            block = self.open.pop(chunk["index"])
            if block.kind == "tool-call":
                self.tool_calls += 1
                self.owners.setdefault(chunk["block"]["id"], chunk["index"])
        elif t in ("text-delta", "reasoning-delta", "tool-call-delta"):
            block = self.open[chunk["index"]]
            value = chunk["argumentsDelta" if t == "tool-call-delta" else "text"]
            block.size += len(value) + 1
            block.cap = min(self.limits.max_block_bytes // 4, block.size + FLUSH)
            if t == "tool-call-delta" and not block.has_id:
                self.owners.setdefault(chunk["id"], chunk["index"])
                block.name = chunk.get("name")
            elif t == "tool-call-delta" and "name" in chunk:
                block.name = chunk["name"]
            block.has_id, block.deltas = True, block.deltas + 1

    def paths(self, chunks: Sequence[Mapping[str, Any]]) -> list[str]:
        return [self.path(c) for c in chunks]


# -- the streams ---------------------------------------------------------------------------------


def tool_call(index: int, cid: str, name: str, pieces: list[str], *, name_later: bool = False) -> list[dict[str, Any]]:
    """A tool-call block: its deltas (the name on the first, or on the second too) and its block-end."""
    deltas = [
        tool_delta(index, cid, p, name=name if k == 0 or (name_later and k == 1) else None)
        for k, p in enumerate(pieces)
    ]
    return [start(index, "tool-call"), *deltas, end_tool(index, cid, name, "".join(pieces) or "{}")]


def text(index: int, pieces: list[str], kind: str = "text") -> list[dict[str, Any]]:
    delta, end = (text_delta, end_text) if kind == "text" else (reasoning_delta, end_reasoning)
    return [start(index, kind), *(delta(index, p) for p in pieces), end(index, "".join(pieces))]


def interleaved() -> list[dict[str, Any]]:
    """Three blocks open at once (HARNESS): deltas while several are open, then while one is left."""
    return [
        start(0, "reasoning"), reasoning_delta(0, "think"),
        start(1, "tool-call"), tool_delta(1, "c1", '{"a"', name="f"),
        start(2, "text"), text_delta(2, "hel"), reasoning_delta(0, "ing"), tool_delta(1, "c1", ": 1"),
        end_reasoning(0, "thinking"), text_delta(2, "lo"), tool_delta(1, "c1", "}"),
        end_text(2, "hello"), tool_delta(1, "c1", " "), end_tool(1, "c1", "f", '{"a": 1} '),
        finish("tool-calls"),
    ]  # fmt: skip


BIG = ["x" * (k % 7) for k in range(10_000)]  # 30k characters in 10,000 deltas, some of them empty
ALL_USAGE = {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 6, "cacheReadTokens": 1,
             "cacheWriteTokens": 2, "reasoningTokens": 3}}  # fmt: skip
FAILED = {"type": "finish", "reason": {"kind": "error", "failure": {"message": "overloaded", "code": "SERVER"}}}

STREAMS: dict[str, tuple[Sequence[Mapping[str, Any]], sf.Policy, sf.Limits]] = {
    "seed": (copy.deepcopy(SEED_CHUNKS), sf.Policy.STRICT, sf.Limits()),
    "seed under HARNESS": (copy.deepcopy(SEED_CHUNKS), sf.Policy.HARNESS, sf.Limits()),
    "reasoning, text, two tool calls": (
        [*text(0, ["Let", " me", " look"], "reasoning"), *text(1, ["ok", ""]),
         *tool_call(2, "c1", "read", ['{"path"', ': "a"}']),
         *tool_call(3, "c2", "bash", ["{", "}", " "], name_later=True),
         ALL_USAGE, finish("tool-calls")],
        sf.Policy.STRICT, sf.Limits(),
    ),
    "blocks without deltas": (
        [*text(0, []), *text(1, [], "reasoning"), *tool_call(2, "c1", "f", []), usage(), finish("stop")],
        sf.Policy.STRICT, sf.Limits(),
    ),
    "blocks without deltas, over a quarter of the byte limit": (
        [start(0, "text"), end_text(0, "x" * 30),
         start(1, "tool-call"), end_tool(1, "c", "f", '{"a": "' + "y" * 30 + '"}'), usage(), finish("stop")],
        sf.Policy.STRICT, sf.Limits(max_block_bytes=100),
    ),
    "interleaved blocks": (interleaved(), sf.Policy.HARNESS, sf.Limits()),
    "cut off by max-tokens": ([*text(0, ["a", "b"])[:-1], usage(), finish("max-tokens")], sf.Policy.STRICT,
                              sf.Limits()),
    "cut off by an error": ([*text(0, ["a", "b"])[:-1], FAILED], sf.Policy.STRICT, sf.Limits()),
    "with a replay state": ([*text(0, ["a"]), usage(), finish("stop", replayState={"k": [1]})], sf.Policy.STRICT,
                            sf.Limits()),
    "usage at the bounds of its counts": (
        [*text(0, ["a"]), usage(0, 2**53 - 1, cacheReadTokens=0, cacheWriteTokens=2**53 - 1, reasoningTokens=0),
         finish("stop")],
        sf.Policy.STRICT, sf.Limits(),
    ),
    "usage at the other bounds": (
        [*text(0, ["a"]), usage(2**53 - 1, 0), finish("stop")], sf.Policy.STRICT, sf.Limits(),
    ),
    "one-character deltas across caps": (
        [*text(0, ["a"] * 5_000), usage(), finish("stop")], sf.Policy.STRICT, sf.Limits(),
    ),
    "two blocks open up to a quarter of the byte limit": (
        [start(0, "text"), start(1, "text"), *(text_delta(0, "a") for _ in range(50)), text_delta(1, "b"),
         text_delta(0, "a"), end_text(0, "a" * 51), end_text(1, "b"), finish("stop")],
        sf.Policy.HARNESS, sf.Limits(max_block_bytes=400),
    ),
    "blocks without deltas, a quarter of the byte limit": (
        [start(0, "text"), end_text(0, "x" * 25),
         start(1, "tool-call"), end_tool(1, "c", "f", '{"a": "' + "y" * 16 + '"}'), usage(), finish("stop")],
        sf.Policy.STRICT, sf.Limits(max_block_bytes=100),
    ),
    "mappings that are not dicts among the chunks": (
        [MappingProxyType(start(0, "text")), text_delta(0, "a"), UserDict(text_delta(0, "b")), text_delta(0, "c"),
         end_text(0, "abc"), MappingProxyType(start(1, "tool-call")), tool_delta(1, "c", "{", name="f"),
         tool_delta(1, "c", "}"), UserDict(end_tool(1, "c", "f", "{}")), usage(), finish("tool-calls")],
        sf.Policy.STRICT, sf.Limits(),
    ),
    "a big text block": ([*text(0, BIG), usage(), finish("stop")], sf.Policy.STRICT, sf.Limits()),
    "a big tool call": ([*tool_call(0, "c", "f", ['{"a": "', *BIG, '"}']), usage(), finish("tool-calls")],
                        sf.Policy.STRICT, sf.Limits()),
    "a big block past a quarter of its byte limit": (
        [*text(0, BIG), usage(), finish("stop")], sf.Policy.STRICT, sf.Limits(max_block_bytes=80_000)
    ),
    "a big block with small caps": (
        [*text(0, BIG[:3000]), *text(1, ["z"] * 50), usage(), finish("stop")], sf.Policy.STRICT,
        sf.Limits(max_block_bytes=20_000),
    ),
    # 40 bytes: a cap of 10 units, passed by the 6th two-byte delta; the 20th brings exactly 40 bytes (and
    # the tool call's last delta too).
    "exact bytes up to the byte limit": (
        [*text(0, ["é"] * 20), *tool_call(1, "c", "f", ['{"a": "', "é" * 15 + "x", '"}']), usage(),
         finish("tool-calls")],
        sf.Policy.STRICT, sf.Limits(max_block_bytes=40),
    ),
    # Under 4 bytes the cap in units is 0: the first delta already switches to exact bytes.
    "a byte limit under 4": (
        [*text(0, ["a", "b", "c"]), *text(1, ["é", "z"], "reasoning"), usage(), finish("stop")],
        sf.Policy.STRICT, sf.Limits(max_block_bytes=3),
    ),
    "an image block between text blocks": (
        [*text(0, ["a", "b"]), start(1, "image"), end_image(1, {"id": "att"}), *text(2, ["c", "d"]), usage(),
         finish("stop")],
        sf.Policy.STRICT, sf.Limits(),
    ),
    "HARNESS: a block of an unknown type, a finish of an unknown kind": (
        [*text(0, ["a", "b"]), start(1, "video"), end_block(1, {"type": "video", "t": [1]}), *text(2, ["c", "d"]),
         finish("paused")],
        sf.Policy.HARNESS, sf.Limits(),
    ),
    "HARNESS: empty ids and names": (
        [start(0, "tool-call"), tool_delta(0, "", '{"a": 1}', name=""), end_tool(0, "", "", '{"a": 1}'),
         start(1, "tool-call"), tool_delta(1, "c", "{"), tool_delta(1, "c", "", name=""), tool_delta(1, "c", "}"),
         end_tool(1, "c", "", "{}"), start(2, "tool-call"), end_tool(2, "", "f", "{}"), usage(), finish("tool-calls")],
        sf.Policy.HARNESS, sf.Limits(),
    ),
    "HARNESS: an id two blocks share, raw arguments, tool-calls without a call": (
        [*tool_call(0, "c", "f", ["{", "}"]), *tool_call(1, "c", "g", ["not json"]),
         *tool_call(2, "d", "g", ["[", "]"]), start(3, "tool-call"), end_tool(3, "c", "h", "{}"), usage(),
         finish("stop")],
        sf.Policy.HARNESS, sf.Limits(),
    ),
    "HARNESS: tool-calls without a call": ([*text(0, ["a"]), finish("tool-calls")], sf.Policy.HARNESS, sf.Limits()),
}  # fmt: skip


def recordings() -> Iterator[Any]:
    if SESSIONS.is_dir():
        for path in sorted(SESSIONS.glob("*.jsonl")):
            for stream in sf.read_session(path):
                try:
                    sf.assemble(stream.chunks, policy=sf.Policy.HARNESS)
                except sf.LlmError:
                    continue
                yield pytest.param(stream.chunks, id=f"{path.stem}#{stream.number}")


def feed_each(asm: Recorder, chunks: Sequence[Mapping[str, Any]]) -> None:
    for chunk in chunks:
        asm.feed(chunk)


#: How each entry point feeds a recorder.
ENTRY: dict[str, Callable[[Recorder, Sequence[Mapping[str, Any]]], None]] = {
    "feed": lambda asm, chunks: feed_each(asm, chunks),
    "feed_many": lambda asm, chunks: asm.feed_many(iter(chunks)),
    "feed_lines": lambda asm, chunks: asm.feed_lines(orjson.dumps(dict(c)) for c in chunks),
}


def check_paths(chunks: Sequence[Mapping[str, Any]], policy: sf.Policy, limits: sf.Limits, entry: str) -> None:
    if entry == "feed_lines":  # every line is parsed into a dict
        chunks = [dict(c) for c in chunks]
    asm = Recorder(policy, limits)
    ENTRY[entry](asm, chunks)
    assert asm.paths(len(chunks)) == Model(limits).paths(chunks)
    assert asm.close().to_wire() == sf.assemble(chunks, policy=policy, limits=limits).to_wire()


@pytest.mark.parametrize("entry", ENTRY.keys())
@pytest.mark.parametrize(("chunks", "policy", "limits"), STREAMS.values(), ids=STREAMS.keys())
def test_each_valid_chunk_takes_its_path(
    chunks: Sequence[Mapping[str, Any]], policy: sf.Policy, limits: sf.Limits, entry: str
) -> None:
    check_paths(chunks, policy, limits, entry)


@pytest.mark.parametrize("chunks", list(recordings()))
def test_each_recorded_chunk_takes_its_path(chunks: list[dict[str, Any]]) -> None:
    check_paths(chunks, sf.Policy.HARNESS, sf.Limits(), "feed_many")


def test_the_model_sees_every_path() -> None:
    """The streams above exercise every path, and caps both ways."""
    seen = {p for chunks, _, limits in STREAMS.values() for p in Model(limits).paths(chunks)}
    assert seen == {"hot", "quick", "precise"}


# -- every path keeps to the limits ----------------------------------------------------------------

#: A stream, policy, and the path its last chunk would take: that chunk is at position max_chunks.
AT_THE_LIMIT: dict[str, tuple[list[dict[str, Any]], sf.Policy]] = {
    "a text delta (hot)": ([start(0, "text"), text_delta(0, "a"), text_delta(0, "b")], sf.Policy.STRICT),
    "a tool delta (hot)": (
        [start(0, "tool-call"), tool_delta(0, "c", "{", name="f"), tool_delta(0, "c", "}", name="f")],
        sf.Policy.STRICT,
    ),
    "the first tool delta (quick)": ([start(0, "tool-call"), tool_delta(0, "c", "{", name="f")], sf.Policy.STRICT),
    "a delta with two blocks open (quick)": (
        [start(0, "text"), start(1, "reasoning"), reasoning_delta(1, "r")],
        sf.Policy.HARNESS,
    ),
    "a block-start (quick)": ([*text(0, ["a"]), start(1, "text")], sf.Policy.STRICT),
    "a block-end (quick)": ([start(0, "text"), text_delta(0, "a"), end_text(0, "a")], sf.Policy.STRICT),
    "a usage (quick)": ([*text(0, ["a"]), usage()], sf.Policy.STRICT),
    "a finish (quick)": ([*text(0, ["a"]), usage(), finish("stop")], sf.Policy.STRICT),
    "a finish with a failure (precise)": ([*text(0, ["a"]), FAILED], sf.Policy.STRICT),
}


@pytest.mark.parametrize("entry", ENTRY.keys())
@pytest.mark.parametrize(("chunks", "policy"), AT_THE_LIMIT.values(), ids=AT_THE_LIMIT.keys())
def test_the_chunk_at_max_chunks_is_refused_on_every_path(
    chunks: list[dict[str, Any]], policy: sf.Policy, entry: str
) -> None:
    n = len(chunks) - 1
    asm = Recorder(policy, sf.Limits(max_chunks=n + 1))
    ENTRY[entry](asm, chunks)  # one chunk more and it would be refused: all accepted
    assert asm.chunk_count == n + 1
    asm = Recorder(policy, sf.Limits(max_chunks=n))
    with pytest.raises(sf.LlmError) as info:
        ENTRY[entry](asm, chunks)
    assert (info.value.code, info.value.chunk_index) == ("LIMIT_EXCEEDED", n)
    assert info.value.message.startswith(f"limit exceeded: more than {n} chunks (state ")
    assert asm.chunk_count == n + 1 and n in asm.precise  # the precise path decided it


# -- JSON lines: batches ---------------------------------------------------------------------------

BATCH = 4096  # the machine's _LINE_BATCH


def as_lines(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(c) for c in chunks]


LINES: dict[str, list[Any]] = {
    "more lines than a batch": as_lines([*text(0, ["ab"] * (BATCH + 500)), usage(), finish("stop")]),
    "blank lines inside a batch": [
        b"", *as_lines(text(0, ["a", "b"])), b" \t\r", "\n", *as_lines([usage()]), b"\r\n", *as_lines([finish("stop")]),
    ],
    "a blank line at the end of a batch": [*as_lines(text(0, ["x"] * (BATCH - 3))), b"",
                                           *as_lines([usage(), finish("stop")])],
    "memoryviews and bytearrays": [memoryview(line) if k % 2 else bytearray(line) for k, line in enumerate(
        as_lines([*text(0, ["a", "b"]), usage(), finish("stop")]))],
    "str lines": [line.decode() for line in as_lines([*text(0, ["é", "ü"]), usage(), finish("stop")])],
}  # fmt: skip


def raw(line: Any) -> bytes:
    return line.encode() if isinstance(line, str) else bytes(line)


@pytest.mark.parametrize("lines", LINES.values(), ids=LINES.keys())
def test_json_lines_in_batches(lines: list[Any]) -> None:
    filled = [line for line in lines if raw(line).strip(b" \t\r\n")]
    parsed = [orjson.loads(raw(line)) for line in filled]
    expected = sf.assemble(parsed)
    assert sf.assemble_jsonl(lines) == expected
    assert list(sf.validate_jsonl(lines)) == parsed
    asm = sf.StreamAssembler()
    assert [asm.feed_line(line) for line in lines] == [orjson.loads(raw(x)) if x in filled else None for x in lines]
    assert asm.close() == expected


@pytest.mark.parametrize(
    "line",
    ["\x1c", "\u2028", "\xa0", b"\x0b", b"\x0c", b"\x1c", "X", b"X", " X\t"],
    ids=["U+001C", "U+2028", "NBSP", "VT", "FF", "FS", "X", "b'X'", "X among blanks"],
)
def test_only_json_whitespace_makes_a_blank_line(line: str | bytes) -> None:
    """A line of other whitespace is not skipped: it is a line that is not JSON, at its position."""
    for feed in ("feed_line", "feed_lines"):
        asm = sf.StreamAssembler()
        asm.feed(start(0, "text"))
        with pytest.raises(sf.LlmError) as info:
            getattr(asm, feed)(line if feed == "feed_line" else [line])
        assert (info.value.code, info.value.chunk_index) == ("INVALID_CHUNK", 1)


def test_json_lines_are_read_one_batch_ahead_at_most() -> None:
    pulled = 0

    def endless() -> Iterator[bytes]:
        nonlocal pulled
        yield orjson.dumps(start(0, "text"))
        while True:
            pulled += 1
            yield b"{not json" if pulled == 10 else orjson.dumps(text_delta(0, "a"))

    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl(endless())
    assert (info.value.code, info.value.chunk_index) == ("INVALID_CHUNK", 10)
    assert pulled == BATCH - 1  # the first batch: the block-start and 4,095 more lines


#: A limit and a stream whose last chunk reaches it exactly (accepted) — and the same one byte over (refused).
AT_THE_EDGE: dict[str, tuple[sf.Limits, Callable[[int], list[dict[str, Any]]]]] = {
    "a text block with no deltas": (
        sf.Limits(max_block_bytes=40), lambda n: [start(0, "text"), end_text(0, "é" * (n // 2))],
    ),
    "a tool call with no deltas": (
        sf.Limits(max_block_bytes=40),
        lambda n: [start(0, "tool-call"), end_tool(0, "c", "f", '{"a": "' + "x" * (n - 9) + '"}')],
    ),
    "a text block of deltas": (
        sf.Limits(max_block_bytes=40), lambda n: [start(0, "text"), *(text_delta(0, "ab") for _ in range(n // 2))],
    ),
}  # fmt: skip


@pytest.mark.parametrize(("limits", "stream"), AT_THE_EDGE.values(), ids=AT_THE_EDGE.keys())
@pytest.mark.parametrize("fast", [True, False], ids=["fast paths", "precise path"])
def test_a_block_of_exactly_max_block_bytes_is_accepted(
    limits: sf.Limits, stream: Callable[[int], list[dict[str, Any]]], fast: bool
) -> None:
    n = limits.max_block_bytes
    asm = sf.StreamAssembler(limits=limits)
    asm._fast = fast
    asm.feed_many(stream(n))
    over = stream(n + 2)
    asm = sf.StreamAssembler(limits=limits)
    asm._fast = fast
    with pytest.raises(sf.LlmError) as info:
        asm.feed_many(over)
    assert (info.value.code, info.value.chunk_index) == ("LIMIT_EXCEEDED", len(over) - 1)


#: A tool call's block-end with a field of the wrong type, after deltas that did not name the tool, or none.
ILL_TYPED_END: dict[str, list[dict[str, Any]]] = {
    "name, no deltas": [start(0, "tool-call"), end_tool(0, "c", 5, "{}")],
    "id, no deltas": [start(0, "tool-call"), end_tool(0, 5, "f", "{}")],
    "arguments, no deltas": [start(0, "tool-call"), end_tool(0, "c", "f", {"a": 1})],
    "empty id, no deltas": [start(0, "tool-call"), end_tool(0, "", "f", "{}")],
    "empty name, no deltas": [start(0, "tool-call"), end_tool(0, "c", "", "{}")],
    "name, unnamed deltas": [start(0, "tool-call"), tool_delta(0, "c", "{}"), end_tool(0, "c", 5, "{}")],
    "arguments, unnamed deltas": [start(0, "tool-call"), tool_delta(0, "c", "{}"), end_tool(0, "c", "f", None)],
    "block type": [start(0, "text"), {"type": "block-end", "index": 0, "block": {"type": 1, "text": ""}}],
    "text": [start(0, "text"), end_text(0, 5)],
}


@pytest.mark.parametrize("chunks", ILL_TYPED_END.values(), ids=ILL_TYPED_END.keys())
@pytest.mark.parametrize("entry", ENTRY.keys())
def test_the_quick_path_accepts_no_ill_typed_block_end(chunks: list[dict[str, Any]], entry: str) -> None:
    asm = Recorder(sf.Policy.STRICT, sf.Limits())
    with pytest.raises(sf.LlmError) as info:
        ENTRY[entry](asm, chunks)
    assert (info.value.code, info.value.chunk_index) == ("INVALID_CHUNK", len(chunks) - 1)

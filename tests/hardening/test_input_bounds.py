"""Bounds on hostile input (issue #16): a stream-wide byte limit, linear work on blank lines and shared replay
data, the documented nesting depth, and numbers that are kept exact or refused, never turned into infinity."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import _json

from ..builders import source_machine
from ..data import SEED_CHUNKS

Chunk = dict[str, Any]
TAIL: list[Chunk] = [
    {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
    {"type": "finish", "reason": {"kind": "stop"}},
]


def text_block(index: int, pieces: list[str], kind: str = "text") -> list[Chunk]:
    return [
        {"type": "block-start", "index": index, "blockType": kind},
        *({"type": f"{kind}-delta", "index": index, "text": p} for p in pieces),
        {"type": "block-end", "index": index, "block": {"type": kind, "text": "".join(pieces)}},
    ]


def utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def passing_chunk(chunks: list[Chunk], limit: int) -> int | None:
    """The chunk whose content takes the stream past ``limit`` UTF-8 bytes, computed apart from the machine: a tool
    call's id and name count at the chunk that first says each."""
    total = 0
    said: set[tuple[int, str]] = set()  # (block, "id" or "name") once a chunk said it

    def strings(index: int, carrier: Chunk) -> int:
        size = 0
        for field in ("id", "name"):
            if field in carrier and (index, field) not in said:
                said.add((index, field))
                size += utf8(carrier[field])
        return size

    for i, c in enumerate(chunks):
        if c["type"] in ("text-delta", "reasoning-delta"):
            total += utf8(c["text"])
        elif c["type"] == "tool-call-delta":
            total += utf8(c["argumentsDelta"]) + strings(c["index"], c)
        elif c["type"] == "block-end":
            block = c["block"]
            if block["type"] == "image":
                total += len(orjson.dumps(block))
            elif not any(
                d["type"].endswith("-delta") and d["index"] == c["index"] for d in chunks[:i]
            ):  # a block without deltas counts at its end
                total += utf8(block.get("text", block.get("arguments", "")))
            if block["type"] == "tool-call":
                total += strings(c["index"], block)
        if total > limit:
            return i
    return None


def outcome(chunks: list[Chunk], limits: sf.Limits, policy: str, path: str) -> int | None:
    asm = sf.StreamAssembler(policy, limits)
    try:
        if path == "feed":
            for c in chunks:
                asm.feed(c)
        elif path == "feed_many":
            asm.feed_many(chunks)
        else:
            asm.feed_lines(orjson.dumps(c) for c in chunks)
        asm.close()
    except sf.LlmError as err:
        assert err.code == sf.ErrorCode.LIMIT_EXCEEDED, err
        assert "the stream would hold" in err.message
        return err.chunk_index
    return None


# -- the stream-wide byte limit ---------------------------------------------------------------------------


def test_many_blocks_each_within_its_limit_pass_the_stream_limit() -> None:
    """The finding: 120 blocks of 8 MiB passed; per-block limits bound each block, not the stream."""
    limits = sf.Limits(max_block_bytes=1000, max_stream_bytes=5000)
    chunks = [c for b in range(10) for c in text_block(b, ["x" * 100] * 9, "reasoning")] + TAIL
    for path in ("feed", "feed_many", "lines"):
        assert outcome(chunks, limits, "strict", path) == passing_chunk(chunks, 5000) == 61


def test_the_default_stream_limit() -> None:
    assert sf.Limits().max_stream_bytes == 256 * 1024 * 1024


_piece = st.sampled_from(["a", "é", "😀", "abc", "x" * 700, "é" * 300, ""])


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[Chunk], bool]:
    interleave = draw(st.booleans())
    count = draw(st.integers(1, 4))
    blocks = [draw(st.lists(_piece, max_size=40)) for _ in range(count)]
    chunks: list[Chunk] = []
    if interleave:
        chunks += [{"type": "block-start", "index": b, "blockType": "text"} for b in range(count)]
        # Runs of deltas, block after block: one delta a block (every delta changes the hot block), or longer
        # runs (the hot block takes a run, and the next block's first delta counts it first).
        # A block ends after its last run, or (drawn) all at the end: a block that ends while another is hot
        # shrinks the room the hot one's cap was counted against.
        run = draw(st.integers(1, 12))
        early = draw(st.booleans())
        ended: set[int] = set()
        for k in range(0, max(len(p) for p in blocks), run):
            for b, pieces in enumerate(blocks):
                chunks += [{"type": "text-delta", "index": b, "text": piece} for piece in pieces[k : k + run]]
                if early and len(pieces) <= k + run and b not in ended:
                    ended.add(b)
                    chunks.append({"type": "block-end", "index": b, "block": {"type": "text", "text": "".join(pieces)}})
        chunks += [
            {"type": "block-end", "index": b, "block": {"type": "text", "text": "".join(p)}}
            for b, p in enumerate(blocks)
            if b not in ended
        ]
    else:
        for b, pieces in enumerate(blocks):
            chunks += text_block(b, pieces)
    n = count
    if draw(st.booleans()):
        chunks += [
            {"type": "block-start", "index": n, "blockType": "image"},
            {"type": "block-end", "index": n, "block": {"type": "image", "attachment": {"id": "é" * 50}}},
        ]
        n += 1
    for _ in range(draw(st.integers(0, 3))):  # tool calls: their ids and names count with the content
        cid, name = draw(_piece) + str(n), draw(_piece) + "f"
        deltas = ['{"a":"', *draw(st.lists(_piece, max_size=4)), '"}'] if draw(st.booleans()) else []
        named = draw(st.integers(0, len(deltas)))  # the delta that names the tool (none: the block-end does)
        chunks.append({"type": "block-start", "index": n, "blockType": "tool-call"})
        for k, piece in enumerate(deltas):
            delta = {"type": "tool-call-delta", "index": n, "id": cid, "argumentsDelta": piece}
            chunks.append({**delta, "name": name} if k == named else delta)
        block = {"type": "tool-call", "id": cid, "name": name, "arguments": "".join(deltas) or "{}"}
        chunks.append({"type": "block-end", "index": n, "block": block})
        n += 1
    return chunks + TAIL, interleave


@settings(max_examples=300, deadline=None)
@given(streams(), st.integers(1, 20_000))
def test_limit_exceeded_at_exactly_the_chunk_that_passes_the_stream_limit(
    stream: tuple[list[Chunk], bool], limit: int
) -> None:
    chunks, interleave = stream
    limits = sf.Limits(max_stream_bytes=limit)
    expected = passing_chunk(chunks, limit)
    for path in ("feed", "feed_many", "lines"):
        assert outcome(chunks, limits, "harness" if interleave else "strict", path) == expected, path


MiB = 1 << 20


def big_calls(count: int = 100) -> Iterator[Chunk]:
    """``count`` tool calls, each with an id and a name of 1 MiB and arguments ``{}``, made as they are taken."""
    for n in range(count):
        cid, name = str(n).ljust(MiB, "i"), str(n).ljust(MiB, "n")
        yield {"type": "block-start", "index": n, "blockType": "tool-call"}
        if n % 2:  # with a delta that says them, and without one: the block-end says them
            yield {"type": "tool-call-delta", "index": n, "id": cid, "name": name, "argumentsDelta": "{}"}
        yield {
            "type": "block-end",
            "index": n,
            "block": {"type": "tool-call", "id": cid, "name": name, "arguments": "{}"},
        }
    yield {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}}
    yield {"type": "finish", "reason": {"kind": "tool-calls"}}


def chat_calls(count: int = 100, parallel: bool = False) -> Iterator[dict[str, Any]]:
    """The same calls over chat completions; ``parallel``: the first call's arguments never complete, so the calls
    after it are held back by the converter."""
    for n in range(count):
        arguments = '{"a":' if parallel and n == 0 else "{}"
        call = {
            "index": n,
            "id": str(n).ljust(MiB, "i"),
            "function": {"name": str(n).ljust(MiB, "n"), "arguments": arguments},
        }
        yield {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
    yield {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}


def peak_of(run: Any) -> tuple[sf.LlmError, float]:
    tracemalloc.start()
    try:
        with pytest.raises(sf.LlmError) as caught:
            run()
        return caught.value, tracemalloc.get_traced_memory()[1] / MiB
    finally:
        tracemalloc.stop()


def test_tool_call_ids_and_names_count_against_the_stream() -> None:
    """100 calls with an id and a name of 1 MiB each passed max_stream_bytes=1 MiB and peaked at 205 MiB: the machine
    kept every id and name (validating too). Now they count with the content, checked or converted alike."""
    limits = sf.Limits(max_stream_bytes=MiB)
    runs = {
        "validate": lambda: list(sf.validate(big_calls(), limits=limits)),
        "assemble": lambda: sf.assemble(big_calls(), limits=limits),
        "chat, validated": lambda: list(sf.validate(sf.from_openai_chunks(chat_calls(), limits=limits), limits=limits)),
        "chat, held back": lambda: list(sf.from_openai_chunks(chat_calls(parallel=True), limits=limits)),
    }
    for what, run in runs.items():
        err, peak = peak_of(run)
        assert err.code == sf.ErrorCode.LIMIT_EXCEEDED, (what, err)
        assert peak < 12, (what, peak)  # a call's two strings (and the event's copies), never all of them
    assert "the stream would hold 2097154 bytes" in peak_of(runs["validate"])[0].message
    assert "Limits.max_stream_bytes" in peak_of(runs["chat, held back"])[0].message


def test_an_id_or_a_name_past_the_block_limit_is_refused() -> None:
    limits = sf.Limits(max_block_bytes=100)
    for field in ("id", "name"):
        block = {"type": "tool-call", "id": "c", "name": "f", "arguments": "{}", field: "é" * 51}
        with pytest.raises(sf.LlmError) as caught:
            sf.assemble(
                [
                    {"type": "block-start", "index": 0, "blockType": "tool-call"},
                    {"type": "block-end", "index": 0, "block": block},
                    *TAIL,
                ],
                limits=limits,
            )
        assert caught.value.code == sf.ErrorCode.LIMIT_EXCEEDED and caught.value.chunk_index == 1
        assert f"the {field} of block 0 (tool-call) would hold 102 bytes, more than 100" in caught.value.message


# -- linear work ---------------------------------------------------------------------------------------


def test_a_run_of_blank_lines_is_skipped_in_one_go() -> None:
    """The finding: each blank line restarted the batch (a refusal and a copy of the rest of the batch)."""

    class Counting(source_machine().StreamAssembler):  # type: ignore[misc]
        runs = 0

        def feed_many(self, chunks: Any) -> None:
            type(self).runs += 1
            super().feed_many(chunks)

    lines = [orjson.dumps(c) for c in SEED_CHUNKS]
    data = [*lines[:4], *([b"\n", b" \r\n", b"\t\n"] * 3000), *lines[4:]]
    asm = Counting()
    asm.feed_lines(data)
    assert asm.close().text == "runoob 教程"
    assert Counting.runs <= 2 + len(data) // 4096  # a run a batch, and one after the blank lines: not one a line
    # The same result through the compiled machine, with every position right.
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl([*data[:-1], b"{", data[-1]])
    assert info.value.chunk_index == len(SEED_CHUNKS) - 1


class CountingDict(dict[str, Any]):
    """A dict that counts how often it is walked."""

    walks = 0

    def items(self) -> Any:
        CountingDict.walks += 1
        return super().items()


def test_replay_state_of_shared_references_is_checked_once_per_object() -> None:
    """The finding: ``v = [v, v]`` 22 levels deep was walked 2^22 times."""
    value: Any = CountingDict(leaf=1)
    for _ in range(40):
        value = [value, value]
    CountingDict.walks = 0
    assert _json.is_json_value(value)
    assert CountingDict.walks == 1
    result = sf.assemble(
        [
            {
                "type": "finish",
                "reason": {"kind": "error", "failure": {"message": "m", "code": "c"}},
                "replayState": value,
            }
        ]
    )
    assert result.replay_state is not None


def test_replay_state_nests_to_the_documented_depth() -> None:
    def nested(levels: int) -> Any:
        value: Any = 1
        for _ in range(levels):
            value = [value]
        return value

    finish: Chunk = {"type": "finish", "reason": {"kind": "error", "failure": {"message": "m", "code": "c"}}}
    for levels in (332, 511, 512):
        assert sf.assemble([{**finish, "replayState": nested(levels)}]).replay_state is not None
    with pytest.raises(sf.LlmError) as info:
        sf.assemble([{**finish, "replayState": nested(513)}])
    assert info.value.code == sf.ErrorCode.INVALID_CHUNK and "replayState" in info.value.message
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(sf.LlmError):
        sf.assemble([{**finish, "replayState": cycle}])


# -- numbers in tool arguments --------------------------------------------------------------------------


def call(arguments: str) -> list[Chunk]:
    return [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {
            "type": "block-end",
            "index": 0,
            "block": {"type": "tool-call", "id": "c", "name": "f", "arguments": arguments},
        },
        *TAIL,
    ]


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1.5e400", "12345678901234567890e999"])
def test_a_number_past_a_double_is_refused_never_infinity(number: str) -> None:
    arguments = f'{{"a": {number}, "pad": "{"x" * 20_000}"}}'  # past 16 kB: the standard parser's path too
    for text in (f'{{"a": {number}}}', arguments):
        with pytest.raises(sf.LlmError) as info:
            sf.assemble(call(text))
        assert info.value.code == sf.ErrorCode.TOOL_ARGUMENTS_INVALID
        assert "infinity" in info.value.message or "range of a double" in info.value.message
        # HARNESS keeps it raw, and parsed_arguments says why it cannot give it.
        (block,) = sf.assemble(call(text), policy="harness").tool_calls
        assert block.arguments == text
        with pytest.raises(ValueError, match="not a JSON object"):
            _ = block.parsed_arguments


@pytest.mark.parametrize("digits", [19, 400, 4300, 4301, 5000, 100_000])
def test_big_integers_are_kept_exact(digits: int) -> None:
    number = "9" * digits
    (block,) = sf.assemble(call(f'{{"n": -{number}, "m": {number}}}')).tool_calls
    assert block.parsed_arguments["n"] == -(10**digits - 1)
    assert block.parsed_arguments["m"] == 10**digits - 1


def test_an_integer_past_the_digit_bound_is_refused_with_why() -> None:
    with pytest.raises(sf.LlmError) as info:
        sf.assemble(call('{"n": ' + "7" * 100_001 + "}"))
    assert info.value.code == sf.ErrorCode.TOOL_ARGUMENTS_INVALID
    assert "100001 digits" in info.value.message


def _lines(chunks: list[Chunk]) -> Iterator[bytes]:
    return (orjson.dumps(c) for c in chunks)


def test_a_tool_calls_id_or_name_may_hold_exactly_the_block_limit() -> None:
    """Each of a call's id and name is held to ``max_block_bytes`` on its own: exactly the limit passes, a byte
    more is refused, naming which."""
    limits = sf.Limits(max_block_bytes=8)

    def call(cid: str, name: str) -> list[Chunk]:
        block = {"type": "tool-call", "id": cid, "name": name, "arguments": "{}"}
        return [
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "block-end", "index": 0, "block": block},
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ]

    assert sf.assemble(call("é" * 4, "f"), limits=limits).tool_calls[0].id == "é" * 4  # 8 bytes
    assert sf.assemble(call("c", "n" * 8), limits=limits).tool_calls[0].name == "n" * 8
    for cid, name, what in (("é" * 4 + "x", "f", "id"), ("c", "n" * 9, "name")):
        with pytest.raises(sf.LlmError) as info:
            sf.assemble(call(cid, name), limits=limits)
        assert info.value.code == "LIMIT_EXCEEDED" and info.value.chunk_index == 1
        assert f"the {what} of block 0 (tool-call) would hold 9 bytes, more than 8" in info.value.message

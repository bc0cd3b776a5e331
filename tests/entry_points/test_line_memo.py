"""A line of bytes that repeats the last delta's shape is parsed in its text alone (``_line_memo.LineMemo``): the
chunk it gives is the chunk a parse of the whole line gives, the same values in the same order of keys, with either
parser; a line it cannot read so is parsed whole. The JSON-lines paths so give the verdicts, chunk for chunk and
word for word, that ``feed_line`` gives a line at a time (a whole parse by orjson each, no memo)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import _parser
from streamfsm._line_memo import LineMemo
from streamfsm._table import DELTAS

from ..builders import PARSERS, validated
from ..data import SESSIONS


def loads_of(parser: str) -> Callable[[Any], Any]:
    _parser.use(parser)
    return _parser.loads


def items(chunk: Any) -> Any:
    """A chunk's keys and values in their order (dicts that are equal may differ in it)."""
    return list(chunk.items()) if isinstance(chunk, dict) else chunk


TOOL_DELTA = {"type": "tool-call-delta", "index": 2, "id": 'call_é"1', "name": "ls", "argumentsDelta": '{"a'}
TEXT_DELTA = {"type": "text-delta", "index": 0, "text": "hello"}


def learned(chunk: dict[str, Any]) -> tuple[LineMemo, bytes]:
    """A memo that learned ``chunk``, and the JSON of ``chunk`` up to its last value (what it starts a line with)."""
    memo = LineMemo()
    memo.learn(dict(chunk), orjson.dumps(chunk))
    last = list(chunk)[-1]
    written = orjson.dumps({**chunk, last: ""})
    return memo, written[:-3]


# -- what a line of the learned shape reads as --------------------------------------------------------------

#: The rest of a line after its prefix, before its closing brace: strings as writers write them, and what is no
#: string (another value, two values, a cut string, whitespace that is not JSON's).
RESTS = [
    b'"plain"',
    b'""',
    b'"esc\\"aped \\\\ \\n \\t \\u00e9 \\ud83d\\ude00 \\/"',
    '"raw é 😀 \u2028"'.encode(),
    b' "spaced" ',
    b'\r\n\t"ws"\t',
    b'"\\ud800"',  # a lone surrogate, escaped
    b'"\xed\xa0\x80"',  # a lone surrogate, as bytes: no UTF-8
    b'"\xff"',
    b'"ctl\x01"',
    b'"tab\tin"',
    b'"cut',
    b'"a","x":1',
    b'"a","argumentsDelta":"b"',
    b'"a"}{"b":"c"',
    b"5",
    b"null",
    b'["a"]',
    b'{"a":"b"}',
    b"",
    b" ",
    b'"a"\x0c',
    b'"a" "b"',
]


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("chunk", [TOOL_DELTA, TEXT_DELTA], ids=["tool", "text"])
@pytest.mark.parametrize("rest", RESTS, ids=[repr(r[:16]) for r in RESTS])
def test_a_line_of_the_shape_reads_as_a_whole_parse_does(parser: str, chunk: dict[str, Any], rest: bytes) -> None:
    loads = loads_of(parser)
    memo, prefix = learned(chunk)
    line = prefix + rest + b"}"
    got = memo.chunk(line, loads)
    try:
        whole = loads(line)
    except Exception:
        assert got is None  # no JSON: parsed whole, refused there
        return
    if got is not None:
        assert items(got) == items(whole)
        return
    try:  # read whole: only where the rest is not one JSON string to the parser
        alone = loads(rest)
    except Exception:
        return
    assert type(alone) is not str


def test_the_usual_lines_are_read_by_the_memo() -> None:
    for parser in PARSERS:
        loads = loads_of(parser)
        memo, prefix = learned(TOOL_DELTA)
        for rest in (b'"plain"', b'"esc\\"aped"', '"é 😀"'.encode(), b'""'):
            line = prefix + rest + b"}"
            assert memo.chunk(line, loads) is not None
            assert items(memo.chunk(line, loads)) == items(loads(line))


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"tool-call-delta","index":3,"id":"call_\\u00e9\\"1","name":"ls","argumentsDelta":"x"}',  # index
        b'{"type":"tool-call-delta","index":2,"id":"call_\\u00e9\\"1","name":"ls","argumentsDelta":"x"}',  # escaped
        b'{"type": "tool-call-delta","index":2}',
        b'{"type":"text-delta","index":0,"text":"a"} ',  # JSON whitespace after it: read whole
        b'{"type":"text-delta","index":0,"text":"a"}\r',
    ],
)
def test_a_line_of_another_shape_is_read_whole(line: bytes) -> None:
    memo, _ = learned(TOOL_DELTA if b"tool" in line else TEXT_DELTA)
    assert memo.chunk(line, orjson.loads) is None


def test_a_line_written_by_json_dumps_with_spaces_is_read_whole_and_alike() -> None:
    memo, _ = learned(TEXT_DELTA)
    line = json.dumps({**TEXT_DELTA, "text": "b"}).encode()
    assert memo.chunk(line, orjson.loads) is None


# -- what is learned -------------------------------------------------------------------------------------------


NO_SHAPE = {
    "a value that is no scalar": b'{"type":"text-delta","index":0,"extra":{"n":1},"text":"a"}',
    "its last value no str": b'{"type":"text-delta","text":"a","index":0}',
    "a float": b'{"type":"text-delta","index":0.0,"text":"a"}',
    "a bool": b'{"type":"text-delta","index":true,"text":"a"}',
    "a null": b'{"type":"text-delta","index":null,"text":"a"}',
    "its text escaped otherwise": b'{"type":"text-delta","index":0,"text":"\\u0061"}',
    "its text a lone surrogate": b'{"type":"text-delta","index":0,"text":"\\udc80"}',
    "a space before the brace": b'{"type":"text-delta","index":0,"text":"a" }',
    "no object": b'"a"',
}


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("line", NO_SHAPE.values(), ids=NO_SHAPE.keys())
def test_a_chunk_of_no_shape_to_keep_is_not_learned_and_forgets_the_last(parser: str, line: bytes) -> None:
    loads = loads_of(parser)
    memo, prefix = learned(TEXT_DELTA)
    chunk = json.loads(line)  # as a parser would give it (the stdlib reads a lone surrogate too)
    memo.learn(chunk if isinstance(chunk, dict) else {}, line)
    assert memo.chunk(prefix + b'"b"}', loads) is None
    assert memo.chunk(line, loads) is None


@pytest.mark.parametrize("parser", PARSERS)
def test_a_shape_is_the_line_as_written(parser: str) -> None:
    """The prefix is the learned line's own bytes: spaces, keys in any order, ints past 64 bits as the parser
    reads them, a key said twice."""
    loads = loads_of(parser)
    for first, then in [
        (b'{"type": "text-delta", "index": 0, "text": "a"}', b'{"type": "text-delta", "index": 0, "text": "b\\n"}'),
        (b'{"index":0,"type":"text-delta","text":"a"}', b'{"index":0,"type":"text-delta","text":"\\"b"}'),
        (
            b'{"type":"text-delta","index":18446744073709551616,"text":"a"}',
            b'{"type":"text-delta","index":18446744073709551616,"text":"b"}',
        ),
        (
            b'{"type":"text-delta","index":0,"text":"a","text":"c"}',
            b'{"type":"text-delta","index":0,"text":"a","text":"b"}',
        ),
    ]:
        memo = LineMemo()
        chunk = loads(first)
        memo.learn(chunk, first)
        got = memo.chunk(then, loads)
        if all(type(v) in (str, int) for v in chunk.values()):
            assert got is not None, first
            assert items(got) == items(loads(then))
        else:  # a float: orjson's reading of an int past 64 bits
            assert got is None


def test_the_memo_keeps_its_own_copy_and_gives_a_new_chunk_each_line() -> None:
    chunk = dict(TEXT_DELTA)
    memo = LineMemo()
    memo.learn(chunk, orjson.dumps(chunk))
    chunk["index"] = 7  # the caller's to change: the memo kept its own
    line = orjson.dumps({**TEXT_DELTA, "text": "b"})
    first = memo.chunk(line, orjson.loads)
    assert first == {**TEXT_DELTA, "text": "b"}
    assert first is not None
    first["index"] = 9
    first["more"] = 1
    assert memo.chunk(line, orjson.loads) == {**TEXT_DELTA, "text": "b"}


def test_a_line_of_text_is_read_whole() -> None:
    """``str`` lines are parsed whole (the memo reads bytes); they give the same chunks."""
    lines = [json.dumps({**TEXT_DELTA, "text": t}, separators=(",", ":")) for t in ("a", "b", "c")]
    a = sf.StreamAssembler()
    a.feed({"type": "block-start", "index": 0, "blockType": "text"})
    assert list(a.accepted_chunks(lines)) == [{**TEXT_DELTA, "text": t} for t in ("a", "b", "c")]


# -- the paths: the verdicts feed_line gives -------------------------------------------------------------------


def reference(blob: bytes, policy: str) -> tuple[list[Any], tuple[str, int | None, str] | None]:
    """A line at a time by ``feed_line`` (orjson, whole): the chunks accepted, and the error or None."""
    a = sf.StreamAssembler(policy)
    chunks: list[Any] = []
    try:
        for line in sf.iter_lines(blob):
            chunk = a.feed_line(line)
            if chunk is not None:
                chunks.append(items(chunk))
        a.end()
    except sf.LlmError as err:
        return chunks, (err.code.value, err.chunk_index, str(err))
    return chunks, None


def read(blob: bytes, policy: str, parser: str) -> tuple[list[Any], tuple[str, int | None, str] | None]:
    """What ``validate_jsonl`` makes of ``blob`` with ``parser`` (see ``validated``), each chunk's keys in order."""
    _parser.use(parser)
    chunks, error = validated(blob, policy)
    return [items(chunk) for chunk in chunks], error


def assert_as_feed_line(blob: bytes, policy: str) -> None:
    expected = reference(blob, policy)
    for parser in PARSERS:
        assert read(blob, policy, parser) == expected, parser


@pytest.mark.parametrize("policy", ["strict", "harness"])
def test_the_session_logs_read_as_feed_line_reads_them(policy: str) -> None:
    count = 0
    for path in sorted(SESSIONS.glob("*.jsonl"))[:30]:
        for recording in sf.read_session(path):
            assert_as_feed_line(b"\n".join(orjson.dumps(c) for c in recording.chunks), policy)
            count += 1
    assert count > 30


texts = st.text(max_size=6) | st.sampled_from(['"', "\\", "\n", "\u2028", "é", "😀", "\x00", "\x7f"])
rests = st.sampled_from(RESTS) | texts.map(lambda t: orjson.dumps(t)) | texts.map(lambda t: json.dumps(t).encode())


@st.composite
def delta_runs(draw: st.DrawFn, interleaved: bool) -> bytes:
    """A stream of a text block and a tool call (interleaved) or of one of them, whose deltas repeat their shape,
    some with their text in another form (escaped, spaced, no string, cut), some written otherwise; cut off by
    the finish (``max-tokens``) after the usage."""
    text, tool = {"type": "text-delta", "index": 0, "text": ""}, {**TOOL_DELTA, "index": 1}
    kinds = [text, tool] if interleaved else [draw(st.sampled_from([text, {**tool, "index": 0}]))]
    out = [
        orjson.dumps({"type": "block-start", "index": i, "blockType": "tool-call" if "id" in k else "text"})
        for i, k in enumerate(kinds)
    ]
    for _ in range(draw(st.integers(1, 12))):
        chunk = draw(st.sampled_from(kinds))
        how = draw(st.sampled_from(["as is", "as is", "rest", "spaced", "no name"]))
        if how == "rest":
            prefix = orjson.dumps({**chunk, list(chunk)[-1]: ""})[:-3]
            out.append(prefix + draw(rests) + b"}")
            continue
        if how == "no name" and "name" in chunk:
            chunk = {k: v for k, v in chunk.items() if k != "name"}
        line = orjson.dumps({**chunk, list(chunk)[-1]: draw(texts)})
        out.append(json.dumps(orjson.loads(line)).encode() if how == "spaced" else line)
    out.append(orjson.dumps({"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}}))
    out.append(orjson.dumps({"type": "finish", "reason": {"kind": "max-tokens"}}))
    return b"\n".join(out)


@settings(max_examples=300, deadline=None)
@given(blob=delta_runs(interleaved=False), policy=st.sampled_from(["strict", "harness"]))
def test_any_run_of_deltas_reads_as_feed_line_reads_it(blob: bytes, policy: str) -> None:
    assert_as_feed_line(blob, policy)


@settings(max_examples=200, deadline=None)
@given(blob=delta_runs(interleaved=True))
def test_any_run_of_interleaved_deltas_reads_as_feed_line_reads_it(blob: bytes) -> None:
    assert_as_feed_line(blob, "harness")


def test_most_recorded_delta_lines_are_read_in_their_text_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session logs' streams valid under HARNESS, as JSON lines: the delta lines parsed whole are the first of
    a run (a block's first delta, or one for another block than the last delta's)."""
    blobs = []
    for path in sorted(SESSIONS.glob("*.jsonl")):
        for recording in sf.read_session(path):
            chunks = list(recording.chunks)
            try:
                sf.assemble(chunks, policy="harness")
            except sf.LlmError:
                continue
            blobs.append([orjson.dumps(c) for c in chunks])
    assert len(blobs) == 278
    whole: list[Any] = []
    loads = _parser.loads

    def counting(line: Any) -> Any:
        whole.append(line)
        return loads(line)

    monkeypatch.setattr(_parser, "loads", counting)
    for lines in blobs:
        for _ in sf.validate_jsonl(b"\n".join(lines), policy="harness"):
            pass
    every = {line for lines in blobs for line in lines}
    deltas = sum(orjson.loads(line)["type"] in DELTAS for lines in blobs for line in lines)
    parsed_whole = sum(line in every and orjson.loads(line)["type"] in DELTAS for line in whole)
    assert (deltas - parsed_whole, deltas) == (9_267, 9_660)

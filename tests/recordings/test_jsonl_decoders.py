"""JSON lines read by msgspec (the ``fast`` extra) come to what orjson's reading comes to: the same chunks yielded,
in the same order, and the same verdict (the same error, at the same chunk, with the same message)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import LlmError, _decode, _lines
from streamfsm._machine import checker

pytest.importorskip("msgspec")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSIONS = sorted((FIXTURES / "harness-sessions").glob("*.jsonl"))

Outcome = tuple[str, tuple[Any, ...] | None]


def _outcome(chunks: Iterator[Any]) -> Outcome:
    """What a reading came to: every chunk yielded (``repr``: an int and the float equal to it differ), the error."""
    seen: list[Any] = []
    try:
        for chunk in chunks:
            seen.append(chunk)
    except LlmError as err:
        return _repr(seen), (err.code, err.chunk_index, err.message)
    return _repr(seen), None


def _repr(chunks: list[Any]) -> str:
    """``repr``, with room for the deepest nesting orjson reads (1,024 levels)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))
    try:
        return repr(chunks)
    finally:
        sys.setrecursionlimit(limit)


def by_orjson(blob: bytes, policy: str) -> Outcome:
    return _outcome(checker(policy).accepted_chunks(_lines.iter_lines(blob), True))


def by_msgspec(blob: bytes, policy: str) -> Outcome:
    """msgspec's reading (whether or not validate_jsonl would take it: Hypothesis raises the recursion limit)."""
    return _outcome(checker(policy)._accepted_decoded(_decode.decoded_slices(blob), _decode.KEYS, True))


def assert_same(blob: bytes, policy: str = "harness") -> Outcome:
    expected = by_orjson(blob, policy)
    assert _decode.usable(blob) or sys.getrecursionlimit() > 1024
    assert by_msgspec(blob, policy) == expected
    assert _outcome(sf.validate_jsonl(blob, policy=policy)) == expected  # validate_jsonl takes msgspec's path
    try:
        sf.assemble_jsonl(blob, policy=policy)
    except LlmError as err:
        assert expected[1] == (err.code, err.chunk_index, err.message)
    else:
        assert expected[1] is None
    return expected


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_the_session_logs_read_alike(path: Path) -> None:
    """Every stream of every session log, as JSON lines of chunks (valid or not), under both policies."""
    for record in sf.read_session(path):
        blob = b"".join(orjson.dumps(c) + b"\n" for c in record.chunks)
        for policy in ("harness", "strict"):
            assert_same(blob, policy)


def test_a_session_log_read_in_many_slices_reads_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices far smaller than a stream: a broken line refuses its slice alone, and the rest goes by msgspec."""
    record = next(r for path in SESSIONS for r in sf.read_session(path) if len(r.chunks) > 20)
    monkeypatch.setattr(_lines, "_BATCH_SIZE", 300)
    lines = [orjson.dumps(c) for c in record.chunks]
    assert_same(b"\n".join(lines) + b"\n")
    assert_same(b"\n".join([*lines[:5], b"{not json", *lines[5:]]))


VALID = [
    b'{"type":"block-start","index":0,"blockType":"text"}',
    b'{"type":"text-delta","index":0,"text":"hi"}',
    b'{"type":"block-end","index":0,"block":{"type":"text","text":"hi"}}',
    b'{"type":"usage","usage":{"inputTokens":3,"outputTokens":1}}',
    b'{"type":"finish","reason":{"kind":"stop"}}',
]


def with_line(line: bytes, at: int = 1) -> bytes:
    return b"\n".join([*VALID[:at], line, *VALID[at:]])


@pytest.mark.parametrize(
    "value",
    [
        b"18446744073709551615",  # 2**64 - 1: an int to both
        b"18446744073709551616",  # 2**64: a float to orjson
        b"-9223372036854775808",
        b"-9223372036854775809",
        b"123456789012345678901234567890",
        b"1e400",
        b'"\\ud800"',
        b'"1234567890123456789012"',  # 19 digits in a string: orjson reads the slice, at no cost but speed
    ],
)
def test_numbers_and_strings_orjson_reads_its_own_way(value: bytes) -> None:
    assert_same(with_line(b'{"type":"text-delta","index":0,"text":"hi","x":' + value + b"}"))
    assert_same(with_line(b'{"type":"usage","usage":{"inputTokens":' + value + b',"outputTokens":1}}', 3))


@pytest.mark.parametrize(
    "lines",
    [
        # two objects on one line
        [b'{"type":"text-delta","index":0,"text":"a"} {"type":"text-delta","index":0,"text":"b"}'],
        [b'{"type":"text-delta","index":0,"text":"a"}{"type":"text-delta","index":0,"text":"b"}'],
        [b'{"type":"text-delta","index":0,', b'"text":"a"}'],  # one object, two lines
        [b'{"type":"text-delta","index":0,"text":"a"', b"}"],
        [b'{"type":"text-delta","index":0,"text":"a"}', b"", b'{"x":1} {}'],  # as many values as lines, one blank
        [b'{"type":"text-delta","index":0,"x":{}', b'{"text":"a"}}'],
        [b"1 2", b"3"],
        [b'{"type":"text-delta","index":0,"text":"a"} '],
        [b' {"type":"text-delta","index":0,"text":"a"}\r'],
    ],
)
def test_lines_that_are_not_one_value_each(lines: list[bytes]) -> None:
    """msgspec's decode_lines reads values, not lines: orjson's verdict on each line stands."""
    for end in (b"\n", b"\r\n"):
        assert_same(end.join([*VALID[:2], *lines, *VALID[2:]]) + end)
        assert_same(end.join([*VALID[:2], *lines]))


@pytest.mark.parametrize("depth", [900, 1023, 1024, 1025, 3000])
def test_nesting_at_and_past_orjsons_depth(depth: int) -> None:
    nested = b"[" * depth + b"]" * depth
    assert_same(with_line(b'{"type":"text-delta","index":0,"text":"hi","x":' + nested + b"}"))


@pytest.mark.parametrize("blank", [b"", b" ", b"\t", b"\r", b" \t\r ", b"\x0c", b"\xef\xbb\xbf", b"\x00"])
def test_blank_lines_and_whitespace_json_does_not_know(blank: bytes) -> None:
    assert_same(with_line(blank, 2))
    assert_same(b"\xef\xbb\xbf" + with_line(blank, 2))


def test_a_raised_recursion_limit_reads_by_orjson() -> None:
    """Before Python 3.12 msgspec nests as deep as the recursion limit: past orjson's depth, orjson reads."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        assert _decode.usable(b"{}") is (sys.version_info >= (3, 12) and _decode._DEPTH_BOUNDED)
    finally:
        sys.setrecursionlimit(limit)
    assert _decode.usable(b"{}")
    assert not _decode.usable("{}")  # text is read by orjson


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """A line of a stream: a chunk of the typical turn, one with a value of any JSON kind, or bytes of any kind."""
    kind = draw(st.sampled_from(["chunk", "value", "bytes", "number", "pieces"]))
    if kind == "chunk":
        return draw(st.sampled_from(VALID))
    if kind == "pieces":  # values and pieces of values, side by side: msgspec would read them across lines
        pieces = st.sampled_from([b"{", b"}", b"{}", b'"a":', b"1", b",", b" ", b'"text":"a"', b'{"a":1}', *VALID])
        return b"".join(draw(st.lists(pieces, max_size=5)))
    if kind == "value":
        value = json.dumps(draw(JSON_VALUES)).encode()  # the standard library writes an int of any size
        return b'{"type":"text-delta","index":0,"text":"a","x":' + value + b"}"
    if kind == "number":
        number = repr(draw(st.integers(-(2**70), 2**70) | st.floats(allow_nan=False))).encode()
        return b'{"type":"text-delta","index":0,"text":"a","n":' + number + b"}"
    return draw(st.binary(max_size=12))


@settings(max_examples=300, deadline=None)
@given(st.lists(lines(), max_size=12), st.sampled_from([b"\n", b"\r\n", b"\n\n"]), st.integers(8, 400))
def test_any_lines_read_alike(middle: list[bytes], end: bytes, batch: int) -> None:
    original = _lines._BATCH_SIZE
    _lines._BATCH_SIZE = batch
    try:
        assert_same(end.join([*VALID[:2], *middle, *VALID[2:]]) + end)
    finally:
        _lines._BATCH_SIZE = original


def test_a_session_log_is_decoded_by_msgspec_in_slices() -> None:
    """The slices of valid JSON lines are msgspec's to decode: none goes to orjson."""
    blob = b"".join(orjson.dumps(c) + b"\n" for path in SESSIONS for r in sf.read_session(path) for c in r.chunks)
    slices = list(_decode.decoded_slices(blob))
    assert len(slices) > 1
    assert all(chunks is not None and lines is None for chunks, lines in slices)
    assert [c for chunks, _ in slices for c in chunks or ()] == [orjson.loads(line) for line in blob.splitlines()]

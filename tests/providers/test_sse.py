"""The bounded SSE parser (streamfsm/_providers/sse.py): the WHATWG event-stream rules, any split, the bound."""

from __future__ import annotations

import re
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm._providers.http import read_sse
from streamfsm._providers.sse import DEFAULT_MAX_EVENT_BYTES, SSEEvent, SSEParser, parse_sse

E = sf.ErrorCode


def events(body: bytes, *, complete: bool = False, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> list[Any]:
    parser = SSEParser(max_event_bytes)
    return [(e.event, e.data, e.id, e.retry) for e in [*parser.feed(body), *parser.end(complete=complete)]]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"data: a\n\n", [("message", "a", "", None)]),
        (b"data:a\r\n\r\n", [("message", "a", "", None)]),
        (b"data: a\r\rdata: b\r\r", [("message", "a", "", None), ("message", "b", "", None)]),
        (b"data:  two spaces\n\n", [("message", " two spaces", "", None)]),
        (b"data: a\ndata: b\ndata\n\n", [("message", "a\nb\n", "", None)]),
        (b"event: ping\ndata: {}\nid: 7\nretry: 1500\n\n", [("ping", "{}", "7", 1500)]),
        (b"id: 1\ndata: a\n\ndata: b\n\n", [("message", "a", "1", None), ("message", "b", "1", None)]),
        (b"id: 1\ndata: a\n\nid: x\x00y\ndata: b\n\n", [("message", "a", "1", None), ("message", "b", "1", None)]),
        (b"retry: 12x\nretry: -1\nretry: +5\ndata: a\n\n", [("message", "a", "", None)]),
        (b"retry: " + b"9" * 5000 + b"\ndata: a\n\n", [("message", "a", "", None)]),
        (b": comment\n:\ndata: a\n: between\n\n", [("message", "a", "", None)]),
        (b"event: only\n\nid: 3\n\nretry: 5\n\n", []),  # no data: nothing dispatched
        (b"unknown: field\ndata: a\n\n", [("message", "a", "", None)]),
        (b"\xef\xbb\xbfdata: bom\n\n", [("message", "bom", "", None)]),
        (b"data: \xef\xbb\xbfkept\n\n", [("message", "\ufeffkept", "", None)]),  # only at the start
        (b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n", []),  # a second mark is part of the field name
        (b"data: caf\xc3\xa9 \xff\n\n", [("message", "café \ufffd", "", None)]),
        (b"data: a\n\ndata: cut", [("message", "a", "", None)]),  # an event without its blank line is dropped
        (b"event: x\ndata: a\n\ndata: b\n\n", [("x", "a", "", None), ("message", "b", "", None)]),
    ],
)
def test_the_standard_rules(body: bytes, expected: list[Any]) -> None:
    assert events(body) == expected


def test_the_end_of_a_recording_ends_its_last_event() -> None:
    assert events(b"data: a\n\ndata: cut", complete=True) == [("message", "a", "", None), ("message", "cut", "", None)]
    assert [e.data for e in read_sse(b"data: 1\r\n\r\ndata: 2")] == ["1", "2"]


def test_each_event_knows_its_first_line() -> None:
    parsed = parse_sse(b": hello\n\nevent: a\ndata: 1\n\n\n\ndata: 2\r\ndata: 3\r\n\r\n")
    assert [(e.data, e.line) for e in parsed] == [("1", 3), ("2\n3", 8)]


def test_a_crlf_split_between_two_feeds_is_one_line_end() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n\r") == [SSEEvent("a", line=1)]
    assert parser.feed(b"\ndata: b\n\n") == [SSEEvent("b", line=3)]


# --- Any split, against a reference written from the standard -----------------------------------------


def reference(body: bytes) -> list[Any]:
    """The standard's algorithm over the whole body, as plainly as it reads."""
    text = body.decode("utf-8", "replace")
    text = text.removeprefix("\ufeff")
    lines = re.split(r"\r\n|\r|\n", text)
    lines.pop()  # what follows the last line end is no complete line (and the event it is in is dropped)
    out, data, kind, last_id, retry = [], [], "", "", None
    for line in lines:
        if line == "":
            if data:
                out.append((kind or "message", "\n".join(data), last_id, retry))
            data, kind = [], ""
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        value = value[1:] if colon and value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and re.fullmatch(r"[0-9]{1,15}", value):
            retry = int(value)
    return out


LINE = st.one_of(
    st.sampled_from(["data: x", "data:", "data", "data:  y", "event: e", "id: 1", "id", "retry: 30", "retry: x"]),
    st.sampled_from([": c", ":", "", "", "", "foo: bar", "data: é", 'data: {"a": 1}', "\ufeffdata: z"]),
    st.text(alphabet="data:evnt idry\x00\r\né", max_size=12),
)
ENDING = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    pairs = draw(st.lists(st.tuples(LINE, ENDING), max_size=30))
    text = "".join(line + end for line, end in pairs)
    prefix = draw(st.sampled_from(["", "\ufeff"]))
    suffix = draw(st.sampled_from(["", "data: tail"]))
    body = (prefix + text + suffix).encode()
    if draw(st.booleans()):
        body += draw(st.binary(max_size=8))  # invalid UTF-8 too
    return body


@settings(max_examples=400, deadline=None)
@given(body=bodies(), data=st.data())
def test_any_split_gives_what_the_standard_gives(body: bytes, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=10)))
    parser = SSEParser()
    got = []
    for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True):
        got += parser.feed(body[start:end])
    got += parser.end()
    # A split inside a UTF-8 sequence cannot change a line: lines end only at CR and LF, both ASCII.
    assert [(e.event, e.data, e.id, e.retry) for e in got] == reference(body)


# --- The bound -------------------------------------------------------------------------------------


def test_the_bound_counts_the_bytes_of_an_events_lines() -> None:
    body = b"event: e\ndata: 123\n\n"  # 8 + 9 bytes of lines, line ends not counted
    assert events(body, max_event_bytes=17) == [("e", "123", "", None)]
    with pytest.raises(sf.LlmError) as caught:
        events(body, max_event_bytes=16)
    assert caught.value.code == E.LIMIT_EXCEEDED and "16 bytes (max_event_bytes)" in caught.value.message


def test_comments_and_blank_lines_do_not_count() -> None:
    body = b": " + b"c" * 30 + b"\n" + b"data: 12\n\n" * 100 + b"\n" * 1000
    assert len(events(body, max_event_bytes=32)) == 100


def test_a_long_line_fed_one_byte_at_a_time_is_cut_at_the_bound_with_its_bytes_held_once() -> None:
    parser = SSEParser(256 * 1024)
    tracemalloc.start()
    try:
        with pytest.raises(sf.LlmError) as caught:
            for _ in range(300 * 1024):
                parser.feed(b"x")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.code == E.LIMIT_EXCEEDED
    assert peak < 1024 * 1024  # one bytearray, not a list of 256k one-byte strings (about 9 MB)


def test_a_line_is_refused_before_it_is_held() -> None:
    parser = SSEParser(1000)
    with pytest.raises(sf.LlmError):
        parser.feed(b"data: " + b"x" * 10_000_000)
    assert len(parser._partial) == 0  # nothing of the refused feed was kept


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_event_bytes"):
        SSEParser(0)

"""Blank lines of JSON lines are skipped before they are parsed: none costs the parser a refusal.

A line the parser (``_parser.loads``: msgspec's or orjson's) refuses costs an exception and a second look
(``feed_line``), about 20,000 instructions; a blank line is skipped by a test of its first byte or character
(``python -m benchmarks.blank_lines``: a blank byte costs under 10 times a valid one). The cost is asserted here
as the work done, not as a time: no blank line reaches the parser, and the stream and its positions are those of
the same lines without them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import _parser

from ..builders import validated
from ..data import SEED_CHUNKS

BLANK_RUNS = {
    "empty": [b""] * 5,
    "whitespace": [b" ", b"\r", b"\t", b" \t\r"],
    "CRLF": [b"\r"] * 5,
    "text": ["", " ", "\r", "\t "],
}


class CountingLoads:
    """The parser of JSON lines, counting the lines it is given."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.loads = _parser.loads

    def __call__(self, line: Any) -> Any:
        self.seen.append(line)
        return self.loads(line)


@pytest.mark.parametrize("run", BLANK_RUNS.values(), ids=BLANK_RUNS.keys())
def test_no_blank_line_is_parsed(run: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    text = isinstance(run[0], str)
    lines = [orjson.dumps(c).decode() if text else orjson.dumps(c) for c in SEED_CHUNKS]
    padded = [x for line in lines for x in (*run, line, *run)]
    counting = CountingLoads()
    monkeypatch.setattr(_parser, "loads", counting)
    result = sf.assemble_jsonl(iter(padded))
    # Each valid line parsed once, in order: whole, or a repeated delta its text alone (``LineMemo``); the tool
    # calls' arguments are parsed too (others).
    parsed = 0
    for x in counting.seen:
        if parsed < len(lines) and (x == lines[parsed] or (not text and lines[parsed].endswith(x + b"}"))):
            parsed += 1
    assert parsed == len(lines)
    assert not [x for x in counting.seen if x in run]  # not one blank line
    monkeypatch.undo()
    assert result == sf.assemble(SEED_CHUNKS)


def test_a_blank_line_takes_no_position_and_a_bad_one_after_blanks_is_found() -> None:
    lines = [orjson.dumps(c) for c in SEED_CHUNKS]

    def source() -> Iterator[bytes]:
        for k, line in enumerate(lines):
            yield from (b"", b" \r", b"\t")
            yield b"{not json" if k == 3 else line

    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl(source())
    assert (info.value.code, info.value.chunk_index) == ("INVALID_CHUNK", 3)
    # A line that starts with whitespace and is not blank is refused at its position, as before.
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl([*lines[:2], b" x", *lines[2:]])
    assert (info.value.code, info.value.chunk_index) == ("INVALID_CHUNK", 2)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\n \t\n", b"\n\r\n"]),
        min_size=len(SEED_CHUNKS) - 1,
        max_size=len(SEED_CHUNKS) - 1,
    ),
    st.sampled_from([b"", b"\n", b"\r\n", b"\n\n", b" "]),
    st.integers(0, len(SEED_CHUNKS)),
)
def test_a_blob_of_bytes_reads_as_its_lines_do(seps: list[bytes], end: bytes, cut: int) -> None:
    """``validate_jsonl`` splits a stream's worth of bytes that starts as JSON at once (no file name, no byte order
    mark to look for): the chunks and the verdict are those of the same lines given one by one."""
    lines = [orjson.dumps(c) for c in SEED_CHUNKS[:cut]] + [b'{"type":"usage"'] * (cut < len(SEED_CHUNKS))
    blob = b"".join(line + sep for line, sep in zip(lines, [*seps, b""], strict=False)) + end
    assert validated(blob, "harness") == validated(iter(blob.split(b"\n")), "harness")
    assert validated(b"\xef\xbb\xbf" + blob, "harness") == validated(
        blob, "harness"
    )  # a byte order mark: read by the lines' own rule

"""A session log's packed row is expanded member by member as the machine takes them, never whole.

A row of one-character members used to cost 41x its line to check (a dict per member, all made at once). A row line
longer than ``SCAN_BYTES`` is now read in place (``scan_row``): memory holds the line and the member in hand. The
reading in place must say exactly what parsing the line whole says: the same chunks, the same reasons for a malformed
row, and orjson's own error for a line that is not JSON.
"""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import _reader
from streamfsm._chunk_rows import SCAN_BYTES, MalformedRow, expand_row, scan_row

from ..data import SESSIONS
from ..recordings.test_reader import MALFORMED

ROW_TYPES = ("text-chunks", "reasoning-chunks", "tool-call-chunks")


def expanded(record: Any) -> tuple[Any, list[dict[str, Any]]] | str:
    """What a row says: its data (arrays as lists) and its chunks, or why it is malformed."""
    try:
        data, chunks = expand_row(record)
    except MalformedRow as exc:
        return str(exc)
    return {k: list(v) if k in ("dt", "texts", "args") else v for k, v in data.items()}, list(chunks)


def same_as_whole(raw: bytes) -> None:
    """``raw``, a row line of a valid JSON object, read in place says what it says parsed whole."""
    record = scan_row(raw)
    assert record is not None, raw[:200]
    assert expanded(record) == expanded(orjson.loads(raw))


def fixture_rows() -> list[bytes]:
    rows = []
    for path in sorted(SESSIONS.glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            if line.startswith(b"{") and orjson.loads(line).get("type") in ROW_TYPES:
                rows.append(line)
    return rows


def test_every_recorded_row_reads_the_same_in_place() -> None:
    rows = fixture_rows()
    assert len(rows) > 200
    for raw in rows:
        same_as_whole(raw)
        # Spelled otherwise: spaces everywhere JSON allows them, keys in another order, an escaped key.
        record = orjson.loads(raw)
        spaced = json.dumps(dict(reversed(record.items())), indent=1, ensure_ascii=False).replace("\n", " \r\t")
        same_as_whole(spaced.encode().replace(b'"data"', b'"d\\u0061ta"') + b"\r\n")


@pytest.mark.parametrize(("label", "row", "reason"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_row_gives_the_same_reason_in_place(label: str, row: dict[str, Any], reason: str) -> None:
    raw = json.dumps(row).encode()  # NaN and Infinity: not JSON, parsed whole (orjson refuses them)
    record = scan_row(raw)
    if record is None:
        assert "NaN" in raw.decode() or "Infinity" in raw.decode()
        return
    said = expanded(record)
    assert isinstance(said, str)
    assert reason in said
    assert said == expanded(orjson.loads(raw))


def test_a_duplicate_key_is_the_last_one_as_orjson_reads_it() -> None:
    raw = (
        b'{"type":"x","type":"text-chunks","seq0":0,"time0":1,'
        b'"data":{"texts":["z"],"turn":1,"step":1,"index":0,"dt":[],"texts":["a","b"],"dt":[2]}}'
    )
    same_as_whole(raw)
    assert [c["text"] for c in expanded(scan_row(raw))[1]] == ["a", "b"]  # type: ignore[index, arg-type]


NOT_READ_IN_PLACE = [
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}} x',
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a",]}}',
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["\\q"]}}',
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["\xff"]}}',
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["\x01"]}}',
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[01],"texts":["a","b"]}}',
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]}',
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["\\ud800"]}}',
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[NaN]}}',
    b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"] "b"}}',
]


@pytest.mark.parametrize("raw", NOT_READ_IN_PLACE)
def test_a_line_that_is_not_json_is_left_to_the_whole_parse(raw: bytes) -> None:
    """Whatever ``scan_row`` reads, orjson would have read: anything else is left to it, which says why not."""
    assert scan_row(raw) is None
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)


def test_a_row_of_another_shape_or_no_row_is_left_to_the_whole_parse() -> None:
    deeper = b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[["a"]]}}'
    assert scan_row(deeper) is None
    assert expanded(orjson.loads(deeper)) == "texts must be a non-empty string array"
    assert scan_row(b'{"type":"assistant/chunk","seq":1,"data":{"turn":1,"chunk":{"type":"text-delta"}}}') is None
    assert scan_row(b'{"type":"user/message","data":{"texts":["a"]}}') is None
    assert scan_row(b"[1]") is None


members = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=4)
numbers = st.one_of(st.integers(-(2**60), 2**60), st.floats(allow_nan=False, allow_infinity=False), st.booleans())


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(ROW_TYPES),
    texts=st.lists(st.one_of(members, numbers), max_size=6),
    dt=st.lists(numbers, max_size=6),
    cut=st.integers(0, 400),
    junk=st.sampled_from([b"", b" ", b",", b"]", b"}", b'"', b"\\", b"\xc3", b"1"]),
)
def test_read_in_place_or_left_to_the_whole_parse_it_says_the_same(
    kind: str, texts: list[Any], dt: list[Any], cut: int, junk: bytes
) -> None:
    payload = "args" if kind == "tool-call-chunks" else "texts"
    data: dict[str, Any] = {"turn": 1, "step": 2, "index": 0, "dt": dt, payload: texts}
    if kind == "tool-call-chunks":
        data["id"] = "c"
    raw = orjson.dumps({"type": kind, "seq0": 3, "time0": 4, "data": data})
    broken = raw[:cut] + junk + raw[cut:]  # a byte inserted somewhere: still JSON, or not
    for line in (raw, broken):
        record = scan_row(line)
        try:
            whole = orjson.loads(line)
        except orjson.JSONDecodeError:
            assert record is None
            continue
        if record is not None:
            assert expanded(record) == expanded(whole)


# -- in a log, through the reader and the command -------------------------------------------------------------


def log_of_one_row(path: Path, members: list[str], kind: str = "text-chunks", *, whole: bool = True) -> Path:
    """A session log of one stream: a block whose deltas are one packed row, its end, usage and finish (without
    ``whole``, the stream stops after the row)."""
    n = len(members)
    tool = kind == "tool-call-chunks"
    data: dict[str, Any] = {"turn": 0, "step": 0, "index": 0}
    if tool:
        data |= {"id": "c1", "name": "f"}
    data |= {"dt": [1] * (n - 1), ("args" if tool else "texts"): members}
    text = "".join(members)
    block = (
        {"type": "tool-call", "id": "c1", "name": "f", "arguments": text} if tool else {"type": "text", "text": text}
    )
    chunks = [
        {"type": "block-start", "index": 0, "blockType": "tool-call" if tool else "text"},
        None,
        {"type": "block-end", "index": 0, "block": block},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "tool-calls" if tool else "stop"}},
    ]
    if not whole:
        del chunks[2:]
    with path.open("wb") as out:
        out.write(orjson.dumps({"type": "session", "version": 1, "id": "s"}) + b"\n")
        for seq, chunk in enumerate(chunks):
            if chunk is None:
                record: dict[str, Any] = {"type": kind, "seq0": seq, "time0": 1000, "data": data}
            else:
                record = {
                    "type": "assistant/chunk",
                    "seq": seq,
                    "time": 1000,
                    "data": {"turn": 0, "step": 0, "chunk": chunk},
                }
            out.write(orjson.dumps(record) + b"\n")
    return path


def test_a_long_row_in_a_log_reads_as_it_does_parsed_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    members = [f"m{i % 97}" for i in range(20_000)]
    path = log_of_one_row(tmp_path / "log.jsonl", members)
    assert path.stat().st_size > SCAN_BYTES
    (stream,) = sf.read_session(str(path))
    monkeypatch.setattr(_reader, "SCAN_BYTES", math.inf)  # every line parsed whole
    (whole,) = sf.read_session(str(path))
    assert stream.chunks == whole.chunks and stream.members == whole.members
    assert [c["text"] for c in stream.chunks[1:-3]] == members
    assert stream.where(20_000) == f"{path}:3 (member 20000 of the text-chunks row)"


def test_a_long_malformed_row_is_invalid_chunk_at_its_line(tmp_path: Path) -> None:
    path = log_of_one_row(tmp_path / "log.jsonl", ["ab"] * 20_000)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"dt":[1,', b'"dt":[1,1,', 1)
    path.write_bytes(b"".join(lines))
    report = sf.check_file(str(path), policy="harness")
    (bad,) = report.streams
    assert (bad.code, bad.line) == ("INVALID_CHUNK", 3)
    assert "dt length 20000 does not match 20000 members" in (bad.message or "")


def peak(path: Path) -> int:
    """Peak bytes tracemalloc saw while ``sf.check_file`` checked ``path`` (as ``check -j 1`` does a file)."""
    tracemalloc.start()
    try:
        (report,) = sf.check_file(str(path), policy="harness").streams
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        assert report.code == "STREAM_TRUNCATED", report


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "member"), [("text-chunks", "a"), ("tool-call-chunks", "12345678")], ids=["one-char-text", "args"]
)
def test_checking_a_huge_row_holds_no_more_than_half_its_line_besides(tmp_path: Path, kind: str, member: str) -> None:
    """The README's target for a stream, 1.5x its bytes: a row of 100,000 one-character members cost 41x before.

    The stream ends with the row (``STREAM_TRUNCATED``): what is measured is the row, not the parse of a
    ``block-end`` line after it (orjson reserves several times a line it parses, most of it never touched). The
    small file's row is long enough for the machine's constant (an open block holds up to 4,096 parts).
    """
    tiny = log_of_one_row(tmp_path / "tiny.jsonl", [member] * 4_100, kind, whole=False)
    big = log_of_one_row(tmp_path / "big.jsonl", [member] * 100_000, kind, whole=False)
    peak(tiny)  # imports and caches out of the way
    over = peak(big) - peak(tiny)
    assert over <= 1.5 * big.stat().st_size, (over, big.stat().st_size)


def test_long_members_among_short_ones_read_in_place_as_whole() -> None:
    """Runs of short members are parsed 512 at a time, a run longer than 64 KiB one member at a time."""
    members = ["x" * 70_000, *(f"s{i}" for i in range(1_500)), "y\\n\u00e9" * 30_000, "z", "w" * 65_000, "é"]
    data = {"turn": 1, "step": 1, "index": 0, "dt": list(range(len(members) - 1)), "texts": members}
    raw = orjson.dumps({"type": "text-chunks", "seq0": 0, "time0": 1, "data": data})
    assert len(raw) > SCAN_BYTES
    same_as_whole(raw)
    same_as_whole(raw.replace(b",", b" ,\t"))

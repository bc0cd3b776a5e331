"""The one reader of recordings: packed rows, positions, sources, and one rule for lines, blank lines and the BOM.

Then what it reads: every recorded DeepSeek Harness stream, read in full, with the outcome SPEC §4 states; and
recordings from any storage (fsspec URLs, ``.gz`` and ``.zst`` files, globs), S3 through a real S3-compatible
server on 127.0.0.1 (``tests/s3_server.py``).
"""

from __future__ import annotations

import gzip
import io
import itertools
import math
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import _cli, _sources, _walk
from streamfsm._check import check_file
from streamfsm._chunk_rows import MalformedRow, expand_row

from ..cli_support import jsonl, reports, run
from ..data import PROVIDER_STREAMS, SEED_CHUNKS, SESSIONS
from ..s3_server import Bucket

MAX_SAFE = 2**53 - 1


def event(chunk: dict[str, Any], seq: int = 0, turn: int = 1, step: int = 1) -> dict[str, Any]:
    data: dict[str, Any] = {"turn": turn, "step": step, "chunk": chunk}
    return {"type": "assistant/chunk", "seq": seq, "time": 1000 + seq, "data": data}


def text_row(texts: list[str], index: int = 0, kind: str = "text-chunks", **data: Any) -> dict[str, Any]:
    body = {"turn": 1, "step": 1, "index": index, "dt": [1] * (len(texts) - 1), "texts": texts, **data}
    return {"type": kind, "seq0": 0, "time0": 1000, "data": body}


def call_row(args: list[str], *, name: str | None = "bash", index: int = 0, cid: str = "c1") -> dict[str, Any]:
    body: dict[str, Any] = {"turn": 1, "step": 1, "index": index, "id": cid}
    if name is not None:
        body["name"] = name
    body |= {"dt": [0] * (len(args) - 1), "args": args}
    return {"type": "tool-call-chunks", "seq0": 5, "time0": 7, "data": body}


def log(*records: Any) -> bytes:
    header = {"type": "session", "version": 0, "id": "s"}
    return b"".join(orjson.dumps(r) + b"\n" for r in (header, *records))


# -- packed rows --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "delta"),
    [
        (text_row(["a", "b", "c"]), "text-delta"),
        (text_row(["a", "b", "c"], kind="reasoning-chunks"), "reasoning-delta"),
    ],
)
def test_a_text_row_expands_to_its_deltas_in_order(row: dict[str, Any], delta: str) -> None:
    _, chunks = expand_row(row)
    assert list(chunks) == [{"type": delta, "index": 0, "text": t} for t in "abc"]


def test_a_tool_call_row_expands_with_its_id_and_name_on_every_member() -> None:
    _, named = expand_row(call_row(['{"a"', ":", "1}"]))
    assert list(named) == [
        {"type": "tool-call-delta", "index": 0, "id": "c1", "name": "bash", "argumentsDelta": piece}
        for piece in ['{"a"', ":", "1}"]
    ]
    _, unnamed = expand_row(call_row(["{", "}"], name=None))
    assert all("name" not in chunk for chunk in unnamed)


def test_a_snapshot_row_without_timing_is_read() -> None:
    """Upstream's snapshot fixtures strip seq0/time0 (as they strip every event's seq/time)."""
    row = {"type": "text-chunks", "data": {"turn": 1, "step": 1, "index": 0, "dt": [3], "texts": ["a", "b"]}}
    assert [c["text"] for c in expand_row(row)[1]] == ["a", "b"]


def test_integral_floats_are_safe_integers_as_in_javascript() -> None:
    row = text_row(["a", "b"])
    row["seq0"], row["time0"], row["data"]["dt"] = 0.0, 5.0, [1.0]
    assert len(list(expand_row(row)[1])) == 2


def _data(**change: Any) -> dict[str, Any]:
    return {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a"], **change}


#: upstream's chunk-rows.spec.ts "throws on ..." cases, with the reason its decoder gives.
MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("a non-object data", {"type": "text-chunks", "seq0": 0, "time0": 1, "data": "x"}, "data must be an object"),
    (
        "an envelope with extra keys",
        {"type": "text-chunks", "seq0": 0, "time0": 1, "data": _data(), "extra": 1},
        "envelope must be exactly",
    ),
    ("only seq0", {"type": "text-chunks", "seq0": 0, "data": _data()}, "envelope must be exactly"),
    ("a negative seq0", {"type": "text-chunks", "seq0": -1, "time0": 1, "data": _data()}, "seq0 must be"),
    ("a non-finite time0", {"type": "text-chunks", "seq0": 0, "time0": math.inf, "data": _data()}, "time0 must be"),
    ("a fractional time0", {"type": "text-chunks", "seq0": 0, "time0": 1.5, "data": _data()}, "time0 must be"),
    ("a boolean seq0", {"type": "text-chunks", "seq0": True, "time0": 1, "data": _data()}, "seq0 must be"),
    (
        "a data shape mismatch",
        {"type": "text-chunks", "seq0": 0, "time0": 1, "data": {**_data(), "args": ["a"]}},
        "data must be exactly {turn, step, index, dt, texts}",
    ),
    (
        "a non-string member",
        {"type": "text-chunks", "seq0": 0, "time0": 1, "data": _data(texts=[7])},
        "texts must be a non-empty string array",
    ),
    (
        "an empty member list",
        {"type": "text-chunks", "seq0": 0, "time0": 1, "data": _data(texts=[])},
        "texts must be a non-empty string array",
    ),
    (
        "a dt arity mismatch",
        {"type": "text-chunks", "seq0": 0, "time0": 1, "data": _data(dt=[1, 2], texts=["a", "b"])},
        "dt length 2 does not match 2 members",
    ),
    (
        "a non-finite dt gap",
        {"type": "text-chunks", "seq0": 0, "time0": 1, "data": _data(dt=[math.nan], texts=["a", "b"])},
        "dt must be an array of safe integers",
    ),
    (
        "a fractional dt gap",
        {"type": "text-chunks", "seq0": 0, "time0": 1, "data": _data(dt=[0.5], texts=["a", "b"])},
        "dt must be an array of safe integers",
    ),
    (
        "a member seq leaving safe range",
        {"type": "text-chunks", "seq0": MAX_SAFE, "time0": 1, "data": _data(dt=[0, 0], texts=["a", "b", "c"])},
        "member seqs must stay safe integers",
    ),
    (
        "a member time leaving safe range",
        {"type": "text-chunks", "seq0": 0, "time0": MAX_SAFE, "data": _data(dt=[1], texts=["a", "b"])},
        "member times must stay safe integers",
    ),
    (
        "a non-numeric turn",
        {"type": "text-chunks", "seq0": 0, "time0": 1, "data": _data(turn="x")},
        "turn/step/index must be numbers",
    ),
    (
        "a tool-call row without id",
        {
            "type": "tool-call-chunks",
            "seq0": 0,
            "time0": 1,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "args": ["a"]},
        },
        "data must be exactly {turn, step, index, id, name?, dt, args}",
    ),
    (
        "a tool-call row with non-string id",
        {
            "type": "tool-call-chunks",
            "seq0": 0,
            "time0": 1,
            "data": {"turn": 1, "step": 1, "index": 0, "id": 7, "dt": [], "args": ["a"]},
        },
        "id (and name when present) must be strings",
    ),
    (
        "a tool-call row with non-string name",
        {
            "type": "tool-call-chunks",
            "seq0": 0,
            "time0": 1,
            "data": {"turn": 1, "step": 1, "index": 0, "id": "c", "name": 7, "dt": [], "args": ["a"]},
        },
        "id (and name when present) must be strings",
    ),
]


@pytest.mark.parametrize(("label", "row", "reason"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_row_is_refused_with_upstreams_reason(label: str, row: dict[str, Any], reason: str) -> None:
    with pytest.raises(MalformedRow, match=re.escape(reason)):
        expand_row(row)


@pytest.mark.parametrize(("label", "row", "reason"), [m for m in MALFORMED if "finite" not in m[0]], ids=lambda v: v)
def test_a_malformed_row_in_a_log_is_invalid_chunk_at_its_line(label: str, row: Any, reason: str) -> None:
    data = log(event({"type": "block-start", "index": 0, "blockType": "text"}, 1), row)
    for policy in sf.Policy:
        (stream,) = sf.read_session(data)
        assert stream.lines == [2, 3] and stream.members == [0, 0]
        with pytest.raises(sf.LlmError) as info:
            sf.assemble(stream.chunks, policy=policy)
        assert info.value.code == sf.ErrorCode.INVALID_CHUNK and info.value.chunk_index == 1
        assert f"malformed {row['type']} storage row" in info.value.message
        assert reason.split(" {")[0] in info.value.message


def test_each_expanded_chunk_knows_its_line_and_member() -> None:
    data = log(
        event({"type": "block-start", "index": 0, "blockType": "text"}, 0, turn=3, step=2),
        text_row(["he", "ll", "o"]),
        event({"type": "block-end", "index": 0, "block": {"type": "text", "text": "hello"}}, 4),
        event({"type": "block-start", "index": 1, "blockType": "tool-call"}, 5),
        call_row(["{", '"x":1', "}"], index=1),
        event(
            {
                "type": "block-end",
                "index": 1,
                "block": {"type": "tool-call", "id": "c1", "name": "bash", "arguments": '{"x":1}'},
            },
            9,
        ),
        event({"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}}, 10),
        event({"type": "finish", "reason": {"kind": "tool-calls"}}, 11),
    )
    (stream,) = sf.read_session(data, name="s.jsonl")
    assert (stream.turn, stream.step) == (3, 2)
    assert stream.lines == [2, 3, 3, 3, 4, 5, 6, 6, 6, 7, 8, 9]
    assert stream.members == [0, 1, 2, 3, 0, 0, 1, 2, 3, 0, 0, 0]
    assert stream.where(2) == "s.jsonl:3 (member 2 of the text-chunks row)"
    assert stream.where(8) == "s.jsonl:6 (member 3 of the tool-call-chunks row)"
    assert stream.where(0) == "s.jsonl:2"
    result = sf.assemble(stream.chunks)
    assert result.text == "hello" and result.tool_calls[0].parsed_arguments == {"x": 1}


def test_the_command_names_a_chunk_of_a_packed_row_by_its_member(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(
        log(
            event({"type": "block-start", "index": 0, "blockType": "text"}),
            text_row(["a", "b", "c"], index=1),  # a row for a block that is not open
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "streamfsm._cli", "check", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert f"{path}:3 (member 1 of the text-chunks row): BLOCK_NOT_OPEN" in done.stdout


# -- packing, as upstream packs: the reader gives back exactly what was packed -------------------------


def pack(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """upstream's packChunkRuns: runs of three or more same-block deltas (consecutive seq) become one row."""
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []

    def key(e: dict[str, Any]) -> tuple[Any, ...] | None:
        c = e["data"]["chunk"]
        if c["type"] not in ("text-delta", "reasoning-delta", "tool-call-delta"):
            return None
        return (c["type"], c["index"], c.get("id"), "name" in c, c.get("name"), e["data"]["turn"], e["data"]["step"])

    def flush() -> None:
        if len(run) >= 3:
            first, c0 = run[0], run[0]["data"]["chunk"]
            data: dict[str, Any] = {"turn": first["data"]["turn"], "step": first["data"]["step"], "index": c0["index"]}
            if c0["type"] == "tool-call-delta":
                data["id"] = c0["id"]
                if "name" in c0:
                    data["name"] = c0["name"]
            data["dt"] = [b["time"] - a["time"] for a, b in itertools.pairwise(run)]
            if c0["type"] == "tool-call-delta":
                data["args"] = [e["data"]["chunk"]["argumentsDelta"] for e in run]
                kind = "tool-call-chunks"
            else:
                data["texts"] = [e["data"]["chunk"]["text"] for e in run]
                kind = "text-chunks" if c0["type"] == "text-delta" else "reasoning-chunks"
            out.append({"type": kind, "seq0": first["seq"], "time0": first["time"], "data": data})
        else:
            out.extend(run)
        run.clear()

    for e in events:
        k = key(e)
        if k is None:
            flush()
            out.append(e)
        elif run and key(run[-1]) == k and e["seq"] == run[-1]["seq"] + 1:
            run.append(e)
        else:
            flush()
            run.append(e)
    flush()
    return out


_delta = st.one_of(
    st.builds(lambda i, t: {"type": "text-delta", "index": i, "text": t}, st.integers(0, 2), st.text(max_size=3)),
    st.builds(lambda i, t: {"type": "reasoning-delta", "index": i, "text": t}, st.integers(0, 2), st.text(max_size=3)),
    st.builds(
        lambda i, c, a: {"type": "tool-call-delta", "index": i, "id": c, "argumentsDelta": a},
        st.integers(0, 2),
        st.sampled_from(["c1", "c2"]),
        st.text(max_size=3),
    ),
    st.builds(
        lambda i, c, n, a: {"type": "tool-call-delta", "index": i, "id": c, "name": n, "argumentsDelta": a},
        st.integers(0, 2),
        st.sampled_from(["c1", "c2"]),
        st.sampled_from(["read", "write"]),
        st.text(max_size=3),
    ),
)
_boundary = st.sampled_from(
    [{"type": "block-start", "index": 0, "blockType": "text"}, {"type": "finish", "reason": {"kind": "stop"}}]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(_delta, _delta, _delta, _boundary), st.integers(-5, 50)), max_size=40))
def test_what_upstream_packs_reads_back_as_the_original_chunks(items: list[tuple[dict[str, Any], int]]) -> None:
    events: list[dict[str, Any]] = []
    time = 0
    for seq, (chunk, gap) in enumerate(items):
        time += gap
        data: dict[str, Any] = {"turn": 1, "step": 1, "chunk": chunk}
        events.append({"type": "assistant/chunk", "seq": seq, "time": time, "data": data})
    streams = list(sf.read_session(log(*pack(events))))
    assert [c for s in streams for c in s.chunks] == [e["data"]["chunk"] for e in events]


# -- sources, and one rule for lines, blank lines and the BOM ---------------------------------------


def seed_jsonl() -> bytes:
    return b"".join(orjson.dumps(c) + b"\n" for c in SEED_CHUNKS)


def sources(data: bytes, tmp_path: Path) -> list[Any]:
    path = tmp_path / "rec.jsonl"
    path.write_bytes(data)
    return [
        str(path),
        path,
        data,
        bytearray(data),
        memoryview(data),
        io.BytesIO(data),
        io.StringIO(data.decode("utf-8")),
        open(path, "rb"),  # closed by the reader's end of input
        open(path, encoding="utf-8", newline=""),
    ]


def test_every_kind_of_source_reads_the_same(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + seed_jsonl().replace(b"\n", b"\r\n", 3) + b"\n \t\r\n"
    for source in sources(data, tmp_path):
        (stream,) = sf.read_recordings(source)
        assert stream.format == "jsonl"
        assert stream.chunks == SEED_CHUNKS, type(source)
        assert stream.lines == list(range(1, 10))
        assert sf.assemble(stream.chunks).text == "runoob 教程"
    for source in sources(data, tmp_path)[2:]:  # the library's JSON lines: bytes, str, files
        assert sf.assemble_jsonl(source).text == "runoob 教程", type(source)
    assert sf.assemble_jsonl(data.decode("utf-8")).text == "runoob 教程"


def test_a_bom_is_content_anywhere_but_at_the_start() -> None:
    data = seed_jsonl()
    lines = data.split(b"\n")
    lines[2] = b"\xef\xbb\xbf" + lines[2]
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl(b"\n".join(lines))
    assert info.value.code == sf.ErrorCode.INVALID_CHUNK and info.value.chunk_index == 2
    (stream,) = sf.read_recordings(b"\n".join(lines))
    assert isinstance(stream.chunks[2], sf.InvalidLine)


def test_a_session_log_is_read_from_standard_input_without_a_temporary_file(tmp_path: Path) -> None:
    path = SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "streamfsm._cli", "check", "--policy", "harness", "--json", "-"],
        input=path.read_bytes(),
        capture_output=True,
        timeout=60,
        env={"TMPDIR": str(tmp_path / "missing"), "PATH": ""},  # no temporary folder to write to
    )
    assert done.returncode == 0, done.stderr
    reports = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [r["ok"] for r in reports if r["kind"] == "stream"] == [True, True]


@pytest.mark.parametrize(
    ("first", "fmt"),
    [
        ({"type": "session", "version": 0}, "harness-session"),
        (event({"type": "block-start", "index": 0, "blockType": "text"}), "harness-session"),
        (text_row(["a"]), "harness-session"),
        ({"type": "block/start", "index": 0}, "jsonl"),  # a broken chunk is not a session event
        ({"type": "block-start", "index": 0, "blockType": "text"}, "jsonl"),
        ({"object": "chat.completion.chunk", "choices": []}, "openai-sse"),
        ({"type": "message_start", "message": {}}, "anthropic-sse"),
    ],
)
def test_the_format_is_told_from_the_first_line(first: dict[str, Any], fmt: str) -> None:
    assert sf.detect_format(b"\n" + orjson.dumps(first) + b"\n") == fmt


def test_provider_recordings_are_read_by_the_same_reader() -> None:
    path = PROVIDER_STREAMS / "anthropic-messages" / "basic_response.sse"
    fmt, streams = sf.open_recordings(path)
    (stream,) = streams
    assert fmt == stream.format == "anthropic-sse"
    assert stream.failure is None and sf.assemble(stream.chunks).text
    with open(path, "rb") as handle:
        (again,) = sf.read_recordings(handle)
    assert again.chunks == stream.chunks and again.lines == stream.lines


def test_an_unknown_format_name_and_an_unreadable_path_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        sf.read_recordings(b"", "xml")
    with pytest.raises(FileNotFoundError):
        sf.open_recordings(tmp_path / "missing.jsonl")


# -- the lines of a blob in memory, a batch at a time (validate_jsonl) ----------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \r\n\ufeff", max_size=60), st.integers(1, 12), st.booleans())
def test_line_batches_are_the_lines_of_the_blob(text: str, size: int, as_bytes: bool) -> None:
    """Every batch size gives the lines of one split at LF: the BOM at the start dropped, no empty last line; and
    so does iter_lines, whether the blob is within one batch or not."""
    from streamfsm import _lines

    blob: Any = text.encode() if as_bytes else text
    bom: Any = _lines.BOM if as_bytes else "\ufeff"
    body = blob[len(bom) :] if blob.startswith(bom) else blob
    expected = body.split(b"\n" if as_bytes else "\n") if body else []
    if expected and not expected[-1]:
        expected.pop()
    original = _lines._BATCH_SIZE
    _lines._BATCH_SIZE = size
    try:
        batches = list(_lines.line_batches(blob))
        # iter_lines: a blob within a batch in one split, a longer one by the batches; bytes of any kind alike
        kinds = [blob, bytearray(blob), memoryview(blob)] if as_bytes else [blob]
        whole = [list(_lines.iter_lines(b)) for b in kinds]
    finally:
        _lines._BATCH_SIZE = original
    assert [line for batch in batches for line in batch] == expected
    assert all(batches)
    assert all(lines == expected for lines in whole)


@pytest.mark.parametrize("blank", [b"", b"  ", b"\r"])
def test_validate_jsonl_of_a_blob_skips_blank_lines_and_refuses_a_broken_one(blank: bytes) -> None:
    lines = [orjson.dumps(c) for c in SEED_CHUNKS]
    blob = b"\n".join([lines[0], blank, *lines[1:]])
    assert list(sf.validate_jsonl(blob)) == SEED_CHUNKS
    broken = b"\n".join([*lines[:2], b"{not json", *lines[2:]])
    seen: list[Any] = []
    with pytest.raises(sf.LlmError) as info:
        seen.extend(sf.validate_jsonl(broken))
    assert (info.value.code, info.value.chunk_index, seen) == (sf.ErrorCode.INVALID_CHUNK, 2, SEED_CHUNKS[:2])


# ====================================================================================================================
# Every recorded DeepSeek Harness stream, read in full (packed rows expanded), gives the outcome SPEC §4 states.
# ====================================================================================================================


#: The streams SPEC §4 names as rejected under Policy.HARNESS: (file, stream number) -> (code, line).
HARNESS_REJECTS = {
    ("acp-agent--snapshots--cancel.jsonl", 0): (sf.ErrorCode.STREAM_TRUNCATED, 12),
    ("test-support--acp-snapshot--fixtures--suite--plain-turn.jsonl", 0): (sf.ErrorCode.BLOCK_NOT_OPEN, 3),
    # Defects of upstream's fixtures: a block-end that differs from what its deltas assembled.
    ("acp-agent--snapshots--persistent-pwsh-tool-turn.jsonl", 0): (sf.ErrorCode.BLOCK_CONTENT_MISMATCH, 15),
    ("web--snapshots--goal-multi-turn-actions.jsonl", 2): (sf.ErrorCode.BLOCK_CONTENT_MISMATCH, 52),
    ("web--snapshots--goal-multi-turn-actions.jsonl", 11): (sf.ErrorCode.BLOCK_CONTENT_MISMATCH, 178),
}


def session_files() -> list[Path]:
    return sorted(SESSIONS.glob("*.jsonl"))


def outcome(stream: sf.RecordedStream, policy: sf.Policy) -> str:
    try:
        sf.assemble(stream.chunks, policy=policy)
    except sf.LlmError as exc:
        return str(exc.code)
    return "ok"


def test_the_recordings_are_in_the_repository() -> None:
    assert len(session_files()) == 121
    assert (SESSIONS / "LICENSE").is_file()


@pytest.mark.parametrize("path", session_files(), ids=lambda p: p.stem)
def test_session_under_harness(path: Path) -> None:
    for stream in sf.read_session(path):  # some logs record no model stream at all
        expected = HARNESS_REJECTS.get((path.name, stream.number))
        if expected is None:
            assert outcome(stream, sf.Policy.HARNESS) == "ok", stream.number
            continue
        code, line = expected
        with pytest.raises(sf.LlmError) as info:
            sf.assemble(stream.chunks, policy=sf.Policy.HARNESS)
        assert info.value.code == code
        at = min(info.value.chunk_index or 0, len(stream.chunks) - 1)
        assert stream.lines[at] == line


def test_totals_match_spec() -> None:
    """283 streams of 11,611 chunks, every one read; HARNESS accepts all but the five SPEC §4 names."""
    strict: Counter[str] = Counter()
    harness: Counter[str] = Counter()
    chunks = packed = 0
    for path in session_files():
        for stream in sf.read_session(path):
            chunks += len(stream.chunks)
            packed += sum(1 for m in stream.members or () if m)
            strict[outcome(stream, sf.Policy.STRICT)] += 1
            harness[outcome(stream, sf.Policy.HARNESS)] += 1
    assert sum(strict.values()) == sum(harness.values()) == 283
    assert chunks == 11_611
    assert packed == 11_611 - 1_609  # every chunk not on an assistant/chunk line came from a packed row
    assert harness == Counter({"ok": 278, "BLOCK_CONTENT_MISMATCH": 3, "STREAM_TRUNCATED": 1, "BLOCK_NOT_OPEN": 1})
    assert strict == Counter(
        {
            "ok": 142,
            "BLOCKS_INTERLEAVED": 136,
            "USAGE_MISSING": 2,
            "STREAM_TRUNCATED": 1,
            "BLOCK_NOT_OPEN": 1,
            "BLOCK_CONTENT_MISMATCH": 1,
        }
    )


def test_a_mismatch_inside_a_packed_row_is_named_by_line_and_member() -> None:
    path = SESSIONS / "web--snapshots--goal-multi-turn-actions.jsonl"
    streams = list(sf.read_session(path))
    stream = streams[2]
    with pytest.raises(sf.LlmError) as info:
        sf.assemble(stream.chunks, policy=sf.Policy.HARNESS)
    assert "they first differ at character 107" in info.value.message
    # The deltas before the block-end came from packed rows: each knows its line and member.
    deltas = [i for i, m in enumerate(stream.members or ()) if m]
    assert deltas
    first = deltas[0]
    assert stream.where(first).startswith(f"{path}:{stream.lines[first]} (member 1 of the reasoning-chunks row)")


def test_recorded_content_is_assembled() -> None:
    """The block-end of a recording carries the block: the result holds exactly those blocks."""
    path = SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl"
    first, second = sf.read_session(path)
    result = sf.assemble(first.chunks, policy="harness")
    assert result.finish.kind == "tool-calls"
    (call,) = result.tool_calls
    assert call.name == "bash"
    assert call.parsed_arguments["command"] == "echo TERMINAL_OK"
    assert result.reasoning.startswith("The user wants me to run")
    assert result.usage is not None and result.usage.reasoning_tokens == 18
    assert sf.assemble(second.chunks, policy="harness").text == "DONE"
    assert (first.turn, first.step, second.step) == (1, 1, 2)


def test_packed_deltas_assemble_what_their_block_end_carries() -> None:
    """A packed row's members are the deltas, in order: joined, they are the block-end's text."""
    path = SESSIONS / "acp-agent--snapshots--packed-chunks.jsonl"
    streams = list(sf.read_session(path))
    assert any(stream.members and any(stream.members) for stream in streams)
    for stream in streams:
        result = sf.assemble(stream.chunks, policy="harness")
        deltas: dict[int, list[str]] = {}
        for chunk in stream.chunks:
            if chunk["type"] in ("text-delta", "reasoning-delta"):
                deltas.setdefault(chunk["index"], []).append(chunk["text"])
            elif chunk["type"] == "tool-call-delta":
                deltas.setdefault(chunk["index"], []).append(chunk["argumentsDelta"])
        for index, parts in deltas.items():
            block = result.blocks[index]
            if isinstance(block, sf.ToolCallBlock):
                assert "".join(parts) == block.arguments
            else:
                assert isinstance(block, sf.TextBlock | sf.ReasoningBlock) and "".join(parts) == block.text


# ====================================================================================================================
# Recordings from any storage (``streamfsm/_sources.py``): fsspec URLs, ``.gz`` and ``.zst`` files, globs.
#
# The S3 tests talk over HTTP to a real S3-compatible server on 127.0.0.1 (moto's server mode, tests/s3_server.py), with
# s3fs configured as a user configures it: the endpoint in ``AWS_ENDPOINT_URL``, credentials in the usual ``AWS_*``
# variables (fake ones). They are marked ``cloud``: ``pytest --no-cloud`` skips them, and nothing else does (with
# moto or the ``cloud`` extra missing they fail).
# ====================================================================================================================


SESSION = SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl"
PROVIDER_SSE = PROVIDER_STREAMS / "anthropic-messages" / "tool_use_response.sse"

cloud = pytest.mark.cloud


# -- helpers ------------------------------------------------------------------------------------------------


def gz(data: bytes) -> bytes:
    return gzip.compress(data)


def zst(data: bytes, frames: int = 1) -> bytes:
    """``data`` as zstd (with the checksum the zstd command writes), in ``frames`` frames one after another."""
    import zstandard

    step = -(-len(data) // frames)
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    return b"".join(compressor.compress(data[i : i + step]) for i in range(0, len(data), step))


COMPRESS = {".gz": gz, ".zst": zst}


def checked(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], str]:
    """``streamfsm check --json ARGV``: exit status, the reports, standard error."""
    status, out, err = run(capsys, "check", "--json", *argv)
    return status, reports(out), err


def renamed(found: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    """Reports with ``path`` (and the ``name`` made of it) set to one name: to compare two copies of a file."""
    return [{**r, "path": path, "name": r["name"].replace(r["path"], path, 1)} for r in found]


def local_reports(capsys: pytest.CaptureFixture[str], path: Path, *options: str) -> list[dict[str, Any]]:
    status, found, err = checked(capsys, *options, str(path))
    assert err == ""
    assert found, status
    return found


# -- reading from S3 -----------------------------------------------------------------------------------------------


@cloud
def test_a_session_log_is_read_from_s3_as_from_disk(s3: Bucket) -> None:
    url = s3.put("sessions/bash-tool-turn.jsonl", SESSION.read_bytes())
    remote, local = list(sf.read_recordings(url)), list(sf.read_recordings(SESSION))
    assert len(remote) == len(local) == 2
    for a, b in zip(remote, local, strict=True):
        assert (a.path, b.path) == (url, str(SESSION))
        assert (a.chunks, a.lines, a.format) == (b.chunks, b.lines, b.format)
    report = check_file(url, policy="harness")
    assert report.error is None and [s.ok for s in report.streams] == [True, True]
    assert [s.name for s in report.streams] == [f"{url}#0", f"{url}#1"]


@cloud
def test_a_provider_sse_recording_is_read_from_s3(capsys: pytest.CaptureFixture[str], s3: Bucket) -> None:
    url = s3.put("providers/tool_use_response.sse", PROVIDER_SSE.read_bytes())
    status, remote, err = checked(capsys, url)
    assert (status, err) == (0, "")
    assert remote[0]["format"] == "anthropic-sse" and remote[0]["tool_calls"]
    assert renamed(remote, "x") == renamed(local_reports(capsys, PROVIDER_SSE), "x")


#: A stream without its finish: STREAM_TRUNCATED, exit 1.
CUT_OFF = jsonl(SEED_CHUNKS[:-1])


def plain_text(out: str, name: str, instead: str) -> str:
    """The command's text output with one file's name replaced and the time taken left out."""
    return re.sub(r" in \d+\.\d+ s:", " in - s:", out.replace(name, instead))


@cloud
@pytest.mark.parametrize("json", [False, True])
def test_the_command_reports_an_s3_file_as_the_local_file(
    capsys: pytest.CaptureFixture[str], s3: Bucket, tmp_path: Path, json: bool
) -> None:
    """Same lines, same summary, same exit status: only the name differs."""
    output = ["--json"] if json else ["-v", "--no-progress"]
    for name, data, options, expected in (
        ("session.jsonl", SESSION.read_bytes(), ["--policy", "harness"], 0),
        ("cut-off.jsonl", CUT_OFF, [], 1),
    ):
        disk = tmp_path / name
        disk.write_bytes(data)
        url = s3.put(f"cmd/{name}", data)
        remote = run(capsys, "check", *output, *options, url)
        local = run(capsys, "check", *output, *options, str(disk))
        assert remote[0] == local[0] == expected
        assert remote[2] == local[2] == ""
        assert plain_text(remote[1], url, "NAME") == plain_text(local[1], str(disk), "NAME")
        assert url in remote[1]


@cloud
def test_assemble_reads_an_s3_url(capsys: pytest.CaptureFixture[str], s3: Bucket) -> None:
    url = s3.put("one/seed.jsonl.gz", gz(jsonl(SEED_CHUNKS)))
    status, out, err = run(capsys, "assemble", "--compact", url)
    assert (status, err) == (0, "")
    assert out == _cli.json_text(sf.assemble(SEED_CHUNKS).to_wire(interrupted=True)) + "\n"


@cloud
def test_a_missing_object_or_bucket_is_a_file_that_cannot_be_read(
    capsys: pytest.CaptureFixture[str], s3: Bucket
) -> None:
    good = s3.put("here/good.jsonl", jsonl(SEED_CHUNKS))
    missing, no_bucket = s3.url("here/missing.jsonl"), f"s3://{s3.name}-none/x.jsonl"
    no_object = s3.url("here/no-such-thing")  # no suffix: asked whether it is a folder, then opened
    status, found, err = checked(capsys, missing, good, no_bucket, no_object)
    assert status == _cli.EXIT_USAGE
    assert [r["path"] for r in found] == [good] and found[0]["ok"]
    lines = err.splitlines()
    assert lines[0] == f"streamfsm: {missing}: cannot read: No such file or directory"
    assert lines[1].startswith(f"streamfsm: {no_bucket}: cannot read: No such file or directory")
    assert "bucket" in lines[1]
    assert lines[2] == f"streamfsm: {no_object}: cannot read: No such file or directory"
    assert len(lines) == 3
    assert run(capsys, "assemble", missing)[:2] == (_cli.EXIT_USAGE, "")
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        list(sf.read_recordings(missing))
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        list(sf.read_recordings(no_bucket))


#: Objects under one prefix: recordings at every depth, compressed ones, hidden ones, and a file that is not one.
LAYOUT: dict[str, bytes] = {
    "sessions/2026-11-01/a.jsonl": jsonl(SEED_CHUNKS),
    "sessions/2026-11-01/deep/er/b.jsonl": CUT_OFF,
    "sessions/2026-11-01/.hidden/c.jsonl": jsonl(SEED_CHUNKS),
    "sessions/2026-11-01/.d.jsonl": jsonl(SEED_CHUNKS),
    "sessions/2026-11-02/e.jsonl.gz": gz(jsonl(SEED_CHUNKS)),
    "sessions/2026-11-02/f.sse": PROVIDER_SSE.read_bytes(),
    "sessions/2026-11-02/notes.txt": b"not a recording",
    "sessions/2026-12-01/g.ndjson": jsonl(SEED_CHUNKS),
    "elsewhere/h.jsonl": jsonl(SEED_CHUNKS),
}
#: What a glob or a walk of LAYOUT finds, by pattern (relative to the root the layout is put under).
FOUND: dict[str, list[str]] = {
    "sessions/2026-11-*/**/*.jsonl": ["sessions/2026-11-01/a.jsonl", "sessions/2026-11-01/deep/er/b.jsonl"],
    "sessions/2026-11-*/**/*.jsonl*": [
        "sessions/2026-11-01/a.jsonl",
        "sessions/2026-11-01/deep/er/b.jsonl",
        "sessions/2026-11-02/e.jsonl.gz",
    ],
    "sessions/*/.d.jsonl": ["sessions/2026-11-01/.d.jsonl"],  # a hidden name the pattern names
    # Folders matched are walked.
    "sessions/2026-1?-0[2-9]": ["sessions/2026-11-02/e.jsonl.gz", "sessions/2026-11-02/f.sse"],
    # A folder and what is in it both match: each file once.
    "sessions/2026-11-01/**": ["sessions/2026-11-01/a.jsonl", "sessions/2026-11-01/deep/er/b.jsonl"],
    # Walks.
    "sessions": [
        "sessions/2026-11-01/a.jsonl",
        "sessions/2026-11-01/deep/er/b.jsonl",
        "sessions/2026-11-02/e.jsonl.gz",
        "sessions/2026-11-02/f.sse",
        "sessions/2026-12-01/g.ndjson",
    ],
    "sessions/2026-11-01/": ["sessions/2026-11-01/a.jsonl", "sessions/2026-11-01/deep/er/b.jsonl"],
}


def expanded(argument: str) -> list[str]:
    found = _walk.named_files([argument])
    assert all(i.error is None and i.skipped is None for i in found), found
    return [i.path for i in found]


@cloud
def test_a_remote_glob_and_a_remote_folder(capsys: pytest.CaptureFixture[str], s3: Bucket) -> None:
    for key, data in LAYOUT.items():
        s3.put(key, data)
    root = f"s3://{s3.name}/"
    for pattern, files in FOUND.items():
        assert expanded(root + pattern) == [root + f for f in files], pattern
    sizes = {i.path: i.size for i in _walk.named_files([root + "sessions"])}
    assert sizes[root + "sessions/2026-11-02/f.sse"] == len(LAYOUT["sessions/2026-11-02/f.sse"])
    # Through the command: every file checked, by the names above.
    status, found, err = checked(capsys, root + "sessions/2026-11-*/**/*.jsonl*", root + "sessions/2026-12-01")
    assert (status, err) == (1, "")  # b.jsonl is cut off
    assert [(r["path"], r["ok"]) for r in found] == [
        (root + "sessions/2026-11-01/a.jsonl", True),
        (root + "sessions/2026-11-01/deep/er/b.jsonl", False),
        (root + "sessions/2026-11-02/e.jsonl.gz", True),
        (root + "sessions/2026-12-01/g.ndjson", True),
    ]
    # A pattern that matches nothing, a folder with no recordings: inputs that cannot be read, never silence.
    s3.put("empty/notes.txt", b"not a recording")
    status, found, err = checked(capsys, root + "sessions/2027-*/*.jsonl", root + "empty", root + "elsewhere")
    assert status == _cli.EXIT_USAGE
    assert [r["path"] for r in found] == [root + "elsewhere/h.jsonl"]
    assert err.splitlines() == [
        f"streamfsm: {root}sessions/2027-*/*.jsonl: cannot read: no file matches this pattern",
        f"streamfsm: {root}empty: no recordings (*.jsonl, *.ndjson, *.sse, also .gz or .zst) here",
    ]


def test_a_local_glob_and_a_local_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for key, data in LAYOUT.items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(data)
    root = f"{tmp_path}/"
    for pattern, files in FOUND.items():
        assert expanded(root + pattern) == [os.path.normpath(root + f) for f in files], pattern
    status, found, err = checked(capsys, root + "sessions/2026-11-*/**/*.jsonl*", root + "sessions/2027-*")
    assert status == _cli.EXIT_USAGE
    assert [(r["path"], r["ok"]) for r in found] == [
        (root + "sessions/2026-11-01/a.jsonl", True),
        (root + "sessions/2026-11-01/deep/er/b.jsonl", False),
        (root + "sessions/2026-11-02/e.jsonl.gz", True),
    ]
    assert err == f"streamfsm: {root}sessions/2027-*: cannot read: no file matches this pattern\n"


def test_a_local_name_with_pattern_characters_is_that_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    named = tmp_path / "take[1]?.jsonl"
    named.write_bytes(jsonl(SEED_CHUNKS))
    (tmp_path / "take1x.jsonl").write_bytes(CUT_OFF)  # what the name matches as a pattern
    status, found, _ = checked(capsys, str(named))
    assert status == 0 and [r["path"] for r in found] == [str(named)]


def test_a_fifo_a_pattern_matches_is_skipped_as_in_a_folder(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "live.jsonl")
    (tmp_path / "good.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    found = _walk.named_files([f"{tmp_path}/*.jsonl"])
    assert [(i.path, i.skipped) for i in found] == [
        (f"{tmp_path}/good.jsonl", None),
        (f"{tmp_path}/live.jsonl", "skipped: a FIFO, not a regular file"),
    ]


# -- compressed files --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".gz", pytest.param(".zst", marks=cloud)])
@pytest.mark.parametrize("source", [SESSION, PROVIDER_SSE], ids=["session", "sse"])
def test_a_compressed_file_reads_as_the_plain_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str, source: Path
) -> None:
    path = tmp_path / (source.name + suffix)
    path.write_bytes(COMPRESS[suffix](source.read_bytes()))
    assert renamed(local_reports(capsys, path), "x") == renamed(local_reports(capsys, source), "x")
    assert [r.chunks for r in sf.read_recordings(path)] == [r.chunks for r in sf.read_recordings(source)]


@cloud
@pytest.mark.parametrize("suffix", [".gz", ".zst", ".gz.zst"])
def test_a_compressed_object_on_s3(capsys: pytest.CaptureFixture[str], s3: Bucket, suffix: str) -> None:
    data = SESSION.read_bytes()
    for layer in suffix.split(".")[1:]:  # .gz.zst: gzip first, zstd around it
        data = COMPRESS["." + layer](data)
    url = s3.put(f"packed/session.jsonl{suffix}", data)
    status, found, err = checked(capsys, "--policy", "harness", url)
    assert (status, err) == (0, "")
    assert renamed(found, "x") == renamed(local_reports(capsys, SESSION, "--policy", "harness"), "x")


@cloud
def test_zstd_frames_one_after_another_are_one_file(tmp_path: Path) -> None:
    data = SESSION.read_bytes()
    for frames in (1, 2, 7, 300):  # 300: frames far smaller than what is read at a time
        path = tmp_path / f"{frames}.jsonl.zst"
        path.write_bytes(zst(data, frames))
        with _sources.open_binary(path) as handle:
            assert handle.read() == data, frames
    empty = tmp_path / "empty.jsonl.zst"
    empty.write_bytes(b"")
    with _sources.open_binary(empty) as handle:
        assert handle.read() == b""


def _flipped(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes(b ^ 0x5A for b in data[middle : middle + 16]) + data[middle + 16 :]


#: Broken compressed files, and the start of what ``check`` says of each.
BROKEN: dict[str, tuple[str, Any, str]] = {
    "gz-cut-off": (".gz", lambda d: gz(d)[: len(gz(d)) // 2], "gzip data ends early (a cut-off file?)"),
    "gz-corrupt": (".gz", lambda d: _flipped(gz(d)), "corrupt gzip data: "),
    "not-gz": (".gz", lambda d: d, "corrupt gzip data: Not a gzipped file"),
    "zst-cut-off": (".zst", lambda d: zst(d)[: len(zst(d)) // 2], "zstd data ends inside a frame (a cut-off file?)"),
    "zst-corrupt": (".zst", lambda d: _flipped(zst(d)), "corrupt zstd data: "),
    "not-zst": (".zst", lambda d: d, "corrupt zstd data: "),
}


@pytest.mark.parametrize(
    "case", [k if k.startswith(("gz", "not-gz")) else pytest.param(k, marks=cloud) for k in BROKEN]
)
def test_a_broken_compressed_file_cannot_be_read(capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str) -> None:
    suffix, make, said = BROKEN[case]
    broken = tmp_path / f"broken.jsonl{suffix}"
    broken.write_bytes(make(SESSION.read_bytes()))
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl(SEED_CHUNKS))
    status, found, err = checked(capsys, "--policy", "harness", str(broken), str(good))
    assert status == _cli.EXIT_USAGE
    assert [r["path"] for r in found] == [str(good)]  # the others are still checked
    assert err.startswith(f"streamfsm: {broken}: cannot read: {said}") and err.count("\n") == 1, err
    with pytest.raises(OSError, match=re.escape(said)):
        list(sf.read_recordings(broken))


def test_a_bomb_of_one_endless_line_is_refused_at_the_bound_on_a_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """129 MiB of one line in 130 KB of gzip: refused after MAX_LINE_BYTES (128 MiB) of it, as /dev/zero is."""
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as out:
        block = b"x" * (1 << 20)
        for _ in range(129):
            out.write(block)
    assert bomb.stat().st_size < 1 << 20
    status, found, err = checked(capsys, str(bomb))
    assert (status, found) == (_cli.EXIT_USAGE, [])
    assert err == f"streamfsm: {bomb}: cannot read: line 1 is longer than 128 MiB (a line with no end?)\n"


# -- other storage -----------------------------------------------------------------------------------------------


@cloud
def test_memory_urls(capsys: pytest.CaptureFixture[str]) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"streamfsm-{uuid.uuid4().hex[:12]}"
    fs.pipe(f"/{root}/a/x.jsonl", jsonl(SEED_CHUNKS))
    fs.pipe(f"/{root}/a/y.jsonl.gz", gz(jsonl(SEED_CHUNKS)))
    fs.pipe(f"/{root}/b/z.ndjson", CUT_OFF)
    try:
        url = f"memory://{root}"
        status, found, err = checked(capsys, f"{url}/a/x.jsonl", url, f"{url}/*/*.jsonl*")
        assert (status, err) == (1, "")
        assert [r["path"] for r in found] == [
            f"{url}/a/x.jsonl",  # as written, not memory:///...
            f"{url}/a/x.jsonl",
            f"{url}/a/y.jsonl.gz",
            f"{url}/b/z.ndjson",
            f"{url}/a/x.jsonl",
            f"{url}/a/y.jsonl.gz",
        ]
        assert [r["ok"] for r in found] == [True, True, True, False, True, True]
        assert [r.chunks for r in sf.read_recordings(f"{url}/a/y.jsonl.gz")] == [SEED_CHUNKS]
        chained = f"simplecache::{url}/a/y.jsonl.gz"  # fsspec's chains: a local copy, then the same reading
        assert [r.chunks for r in sf.read_recordings(chained)] == [SEED_CHUNKS]
    finally:
        fs.rm(f"/{root}", recursive=True)


@cloud
def test_an_http_url(capsys: pytest.CaptureFixture[str], s3: Bucket) -> None:
    """fsspec's HTTP file system, against the same server (a public object's plain URL)."""
    s3.put("web/seed.jsonl.gz", gz(jsonl(SEED_CHUNKS)))
    s3.fs.chmod(f"{s3.name}/web/seed.jsonl.gz", "public-read")
    url = f"{s3.endpoint}/{s3.name}/web/seed.jsonl.gz"
    status, found, err = checked(capsys, url, f"{s3.endpoint}/{s3.name}/web/missing.jsonl")
    assert status == _cli.EXIT_USAGE
    assert [(r["path"], r["ok"]) for r in found] == [(url, True)]
    assert err == f"streamfsm: {s3.endpoint}/{s3.name}/web/missing.jsonl: cannot read: No such file or directory\n"


@cloud
def test_storage_that_is_not_installed_or_not_known(capsys: pytest.CaptureFixture[str]) -> None:
    status, found, err = checked(capsys, "bogus://bucket/x.jsonl", "gs://bucket/x.jsonl")
    assert (status, found) == (_cli.EXIT_USAGE, [])
    lines = err.splitlines()
    assert lines[0] == "streamfsm: bogus://bucket/x.jsonl: cannot read: bogus:// is not a kind of storage fsspec knows"
    assert lines[1].startswith("streamfsm: gs://bucket/x.jsonl: cannot read: ") and "gcsfs" in lines[1]


def test_without_the_cloud_extra_a_url_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for module in ("fsspec", "fsspec.core", "zstandard"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed: importing it fails
    packed = tmp_path / "a.jsonl.zst"
    packed.write_bytes(b"zstd, it says")
    status, found, err = checked(capsys, "s3://bucket/x.jsonl", "gs://bucket/folder", str(packed))
    assert (status, found) == (_cli.EXIT_USAGE, [])
    install = (
        "needs the 'cloud' extra: pip install 'fsspec>=2024.2' 's3fs>=2024.2' boto3 'zstandard>=0.22' "
        "(or pip install '.[cloud]' in a clone of streamfsm; see docs/install.md)"
    )
    assert err.splitlines() == [
        f"streamfsm: s3://bucket/x.jsonl: cannot read: reading s3:// URLs {install}",
        f"streamfsm: gs://bucket/folder: cannot read: reading gs:// URLs {install}",
        f"streamfsm: {packed}: cannot read: reading .zst files {install}",
    ]
    with pytest.raises(OSError, match=re.escape(f"reading s3:// URLs {install}")):
        list(sf.read_recordings("s3://bucket/x.jsonl"))
    # Local files, .gz included, need nothing of it.
    plain = tmp_path / "seed.jsonl.gz"
    plain.write_bytes(gz(jsonl(SEED_CHUNKS)))
    assert [r.chunks for r in sf.read_recordings(plain)] == [SEED_CHUNKS]


def test_what_is_a_url() -> None:
    for url in (
        "s3://b/k",
        "gs://b",
        "az://c/p",
        "https://h/x.jsonl",
        "memory://x",
        "file:///data/x.jsonl",
        "simplecache::s3://b/k",
    ):
        assert _sources.is_url(url), url
    for path in ("a.jsonl", "/data/x.jsonl", "C://x", "./s3://x", "-", "sessions/2026-11-*/**/*.jsonl"):
        assert not _sources.is_url(path), path


def test_opening_a_local_file_is_open_as_before(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"{}\n")
    with _sources.open_binary(path) as handle:
        assert isinstance(handle, io.BufferedReader) and isinstance(handle.raw, io.FileIO)
        assert handle.name == str(path)
    packed = tmp_path / "x.jsonl.gz"
    packed.write_bytes(gz(b"{}\n" * 3))
    with _sources.open_binary(packed) as handle:
        assert handle.name == str(packed)
        assert handle.readline() == b"{}\n" and handle.read() == b"{}\n{}\n"
    assert handle.closed and handle.raw.closed


#: Run in a child process: read a URL's lines as the reader does, then print the process's peak resident memory.
PEAK = """
import subprocess
import sys
from streamfsm._lines import bounded_lines
from streamfsm._sources import open_binary
with open_binary(sys.argv[1]) as handle:
    lines = sum(1 for _ in bounded_lines(handle))
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(lines, int(peak.split()[1]) * 1024)
"""


@cloud
def test_an_object_is_streamed_not_read_whole(s3: Bucket) -> None:
    """A 48 MiB object is read with at most 4 x REMOTE_BLOCK_BYTES (8 MiB) more memory than a 1 KB one."""
    text = os.urandom(24 << 20).hex().encode()
    lines = [text[at : at + 1023] + b"\n" for at in range(0, len(text), 1023)]
    big = s3.put("big/random.jsonl", b"".join(lines))
    small = s3.put("big/small.jsonl", jsonl(SEED_CHUNKS))
    peaks = {}
    for url, count in ((small, len(SEED_CHUNKS)), (big, len(lines))):
        done = subprocess.run([sys.executable, "-c", PEAK, url], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        read, peaks[url] = map(int, done.stdout.split())
        assert read == count
    assert peaks[big] - peaks[small] < 4 * _sources.REMOTE_BLOCK_BYTES, peaks

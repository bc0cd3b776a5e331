"""The one reader of recordings: packed rows, positions, sources, and one rule for lines, blank lines and the BOM."""

from __future__ import annotations

import io
import itertools
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm._chunk_rows import MalformedRow, expand_row

from .conftest import PROVIDER_STREAMS, SEED_CHUNKS, SESSIONS

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
    """Every batch size gives the lines of one split at LF: the BOM at the start dropped, no empty last line."""
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
    finally:
        _lines._BATCH_SIZE = original
    assert [line for batch in batches for line in batch] == expected
    assert all(batches)


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

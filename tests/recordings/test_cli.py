"""The ``streamfsm`` command, run as a user runs it: over the recordings in tests/fixtures and broken files made here.

Four parts: the command and its output; ``check`` and ``assemble`` over every wire API's recordings; the command
against hostile names, files, text and moments; ``check`` as a user meets it (``--json``, exit codes, the line
pointed at, the progress bar).
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import _cli, _cli_report, _progress
from streamfsm._about import version_line
from streamfsm._check import UNSAFE, printable
from streamfsm._lines import MAX_LINE_BYTES, LineTooLong, bounded_lines
from streamfsm._providers import recorded

from ..cli_support import child_env, command, console_script, jsonl, on_a_terminal, reports, run
from ..data import FIXTURES, MORE_PROVIDER_STREAMS, PROVIDER_STREAMS, SEED_CHUNKS, SESSIONS
from ..sse_server import SSE, SSEServer, openai_events

ROOT = Path(__file__).resolve().parents[2]

#: The keys of every ``--json`` report, good or bad, in order.
JSON_KEYS = [
    "path",
    "stream",
    "name",
    "format",
    "policy",
    "ok",
    "code",
    "message",
    "chunk_index",
    "line",
    "state",
    "expected",
    "chunk",
    "chunks",
    "lines",
    "blocks",
    "tool_calls",
    "usage",
    "finish",
    "interrupted",
    "kept",
    "turn",
    "step",
    "member",
    "notes",
]


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS))
    return path


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    """The seed stream with a text-delta after its block ended: chunk 4, line 5."""
    chunks = copy.deepcopy(SEED_CHUNKS)
    chunks.insert(4, {"type": "text-delta", "index": 0, "text": "!"})
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl(chunks))
    return path


# -- check: one stream --------------------------------------------------------------------------------


def test_a_good_stream_is_one_line(capsys: pytest.CaptureFixture[str], good: Path) -> None:
    status, out, err = run(capsys, "check", "-v", str(good))
    assert status == 0, err
    first = out.splitlines()[0]
    assert first == (f"{good}: ok; 2 blocks (text, tool-call); tool calls: bash; usage 100 in / 50 out; finish stop")
    assert "checked 1 stream in 1 file (policy strict)" in out
    assert err == ""


def test_a_protocol_violation_is_pointed_at_like_a_compiler(capsys: pytest.CaptureFixture[str], bad: Path) -> None:
    status, out, _ = run(capsys, "check", str(bad))
    assert status == 1
    head, chunk, note = out.splitlines()[:3]
    assert head.startswith(f"{bad}:5: BLOCK_NOT_OPEN text-delta for block 0, but no block is open (state READY)")
    assert chunk == '     5 | {"type":"text-delta","index":0,"text":"!"}'
    assert note.strip() == "= chunk 4 of 10; state READY accepts block-start, usage, finish (policy strict)"
    assert "invalid  BLOCK_NOT_OPEN        1      1" in out


def test_a_file_that_is_not_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("this is not JSON\n")
    status, out, _ = run(capsys, "check", str(path))
    assert status == 1
    assert out.startswith(f"{path}:1: INVALID_CHUNK invalid chunk: line is not JSON")
    assert "1 | this is not JSON" in out


def test_a_line_that_is_not_json_in_the_middle(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "torn.jsonl"
    lines = jsonl(SEED_CHUNKS).splitlines()
    lines[2] = lines[2][:20]  # a torn line; blank lines around it take no position
    path.write_bytes(b"\n".join([lines[0], b"", lines[1], lines[2], *lines[3:]]) + b"\n")
    status, out, _ = run(capsys, "check", "--json", str(path))
    assert status == 1
    (report,) = reports(out)
    assert (report["code"], report["chunk_index"], report["line"]) == ("INVALID_CHUNK", 2, 4)


def test_an_empty_file_is_a_truncated_stream(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    status, out, _ = run(capsys, "check", str(path))
    assert status == 1
    assert out.startswith(f"{path}: STREAM_TRUNCATED the input ended after 0 chunk(s) without a finish")
    assert "the input ended after 0 chunks; state READY accepts block-start, usage, finish" in out


def test_valid_streams_are_counted_not_printed_unless_asked(capsys: pytest.CaptureFixture[str], good: Path) -> None:
    """A corpus that is all valid prints the summary alone; ``-v`` prints each valid stream's line, and each file
    that records no stream; ``-q`` after it undoes it; an invalid stream is printed either way."""
    empty = SESSIONS / "acp-agent--goal-snapshots--goal-wrapup.jsonl"  # a session log with no model turn
    status, out, err = run(capsys, "check", "--policy", "harness", str(good), str(empty))
    assert (status, err) == (_cli.EXIT_OK, "")
    assert out.startswith("checked 1 stream in 2 files (policy harness)") and ": ok;" not in out
    assert "no streams recorded" not in out and "  no streams  " in out
    status, shown, _ = run(capsys, "check", "-v", "--policy", "harness", str(good), str(empty))
    assert shown.splitlines()[:3] == [
        f"{good}: ok; 2 blocks (text, tool-call); tool calls: bash; usage 100 in / 50 out; finish stop",
        f"{empty}: no streams recorded",
        "",
    ]
    assert ": ok;" not in run(capsys, "check", "-v", "-q", str(good))[1]
    status, out, _ = run(capsys, "check", str(good), str(SESSIONS))
    assert status == _cli.EXIT_INVALID and ": ok;" not in out
    invalid = int(re.findall(r"ok, (\d+) invalid", out)[0])
    assert len(re.findall(r"^ +=", out, re.M)) == invalid > 0  # each problem, no more


def test_a_missing_file_is_a_usage_error_and_the_others_are_still_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, good: Path
) -> None:
    missing = tmp_path / "missing.jsonl"
    status, out, err = run(capsys, "check", "-v", str(missing), str(good))
    assert status == 2
    assert err == f"streamfsm: {missing}: cannot read: No such file or directory\n"
    assert f"{good}: ok;" in out
    assert "1 ok, 0 invalid, 1 unreadable" in out


def test_a_truncated_stream_points_at_its_last_chunk(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS[:6]))
    status, out, _ = run(capsys, "check", str(path))
    assert status == 1
    head, chunk, note = out.splitlines()[:3]
    assert head.startswith(f"{path}:6: STREAM_TRUNCATED the input ended after 6 chunk(s) without a finish")
    assert chunk.startswith('     6 | {"type":"tool-call-delta","index":1,"id":"call-123"')
    assert "the input ended after 6 chunks; state IN_BLOCK accepts" in note


def test_a_long_chunk_is_shortened(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    chunks = copy.deepcopy(SEED_CHUNKS)
    chunks[3]["block"]["text"] = "x" * 5000  # the block-end no longer matches the deltas
    path = tmp_path / "long.jsonl"
    path.write_bytes(jsonl(chunks))
    status, out, _ = run(capsys, "check", str(path))
    assert status == 1
    chunk_line = out.splitlines()[1]
    assert len(chunk_line) <= _cli_report.DEFAULT_WIDTH and chunk_line.endswith("\u2026")
    status, out, _ = run(capsys, "check", "--json", str(path))
    assert len(reports(out)[0]["chunk"]) == 200


def test_standard_input(good: Path, bad: Path) -> None:
    done = command("check", "-", stdin=bad.read_bytes())
    assert done.returncode == 1
    assert done.stdout.startswith("-:5: BLOCK_NOT_OPEN")
    done = command("check", "--json", "-", stdin=good.read_bytes())
    assert done.returncode == 0, done.stderr
    (report,) = reports(done.stdout)
    assert (report["path"], report["ok"], report["blocks"]) == ("-", True, ["text", "tool-call"])


def test_a_session_log_on_standard_input() -> None:
    path = SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl"
    from_file = command("check", "--json", "--policy", "harness", str(path))
    from_stdin = command("check", "--json", "--policy", "harness", "-", stdin=path.read_bytes())
    assert from_stdin.returncode == from_file.returncode == 0
    strip = [{**r, "path": None, "name": None} for r in reports(from_file.stdout)]
    assert [{**r, "path": None, "name": None} for r in reports(from_stdin.stdout)] == strip
    assert len(strip) > 1 and reports(from_stdin.stdout)[1]["name"] == "-#1"


def test_a_folder_is_walked_for_recordings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "b" / "deep").mkdir(parents=True)
    (tmp_path / ".hidden").mkdir()
    for name in ("a.jsonl", "b/c.ndjson", "b/deep/d.jsonl", ".hidden/e.jsonl", ".f.jsonl"):
        (tmp_path / name).write_bytes(jsonl(SEED_CHUNKS))
    (tmp_path / "LICENSE").write_text("not a recording")
    (tmp_path / "b" / "notes.txt").write_text("not a recording")
    status, out, _ = run(capsys, "check", "--json", str(tmp_path))
    assert status == 0
    assert [r["path"] for r in reports(out)] == [
        str(tmp_path / "a.jsonl"),
        str(tmp_path / "b" / "c.ndjson"),
        str(tmp_path / "b" / "deep" / "d.jsonl"),
    ]


def test_a_folder_without_recordings_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(capsys, "check", str(tmp_path))
    assert status == 2
    assert f"{tmp_path}: no recordings" in err


def test_usage_errors(capsys: pytest.CaptureFixture[str], good: Path) -> None:
    assert run(capsys, "check", "-", "-")[0] == 2
    assert run(capsys, "assemble", str(good.parent))[0] == 2
    assert run(capsys, "assemble", str(good), "--stream", "1")[0] == 2
    assert run(capsys)[0] == 2
    for argv in (["check"], ["check", str(good), "--policy", "lenient"], ["check", str(good), "--bogus"]):
        with pytest.raises(SystemExit) as info:
            _cli.main(argv)
        assert info.value.code == 2
    capsys.readouterr()


# -- odd inputs ---------------------------------------------------------------------------------------


def test_control_characters_are_shown_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Text from a recording never drives the terminal: escape sequences are shown, not sent."""
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b"\x1b]0;t\x07\x1b[2J\x00\x9b\n")  # within the 16 characters a line not JSON is shown by
    call = {"id": "c1", "name": "ls\x1b[2J"}
    tool = tmp_path / "tool.jsonl"
    tool.write_bytes(
        jsonl(
            [
                {"type": "block-start", "index": 0, "blockType": "tool-call"},
                {"type": "tool-call-delta", "index": 0, **call, "argumentsDelta": "{}"},
                {"type": "block-end", "index": 0, "block": {"type": "tool-call", **call, "arguments": "{}"}},
                {"type": "finish", "reason": {"kind": "error", "failure": {"message": "m\x1b[1m", "code": "E\x07"}}},
            ]
        )
    )
    status, out, _ = run(capsys, "check", "-v", str(torn), str(tool))
    assert status == 1
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
    assert "1 | \\x1b]0;t\\x07\\x1b[2J\\x00\\x9b" in out
    assert "tool calls: ls\\x1b[2J;" in out and "(E\\x07: m\\x1b[1m)" in out


@pytest.mark.parametrize(
    "recording",
    [
        None,  # the seed stream as JSON lines
        "provider-streams/openai-chat/openai-python-4cc50a61.sse",
        "provider-streams/anthropic-messages/basic_response.sse",
        "harness-sessions/acp-agent--snapshots--bash-tool-turn.jsonl",
    ],
)
def test_a_byte_order_mark_is_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, recording: str | None
) -> None:
    """Windows editors start a UTF-8 file with one; the SSE standard skips it, and so does the command."""
    source = FIXTURES / recording if recording else None
    path = tmp_path / (source.name if source else "seed.jsonl")
    path.write_bytes(b"\xef\xbb\xbf" + (source.read_bytes() if source else jsonl(SEED_CHUNKS)))
    status, out, _ = run(capsys, "check", "--json", "--policy", "harness", str(path))
    found = reports(out)
    assert status == 0 and found and all(r["ok"] for r in found), out
    assert found[0]["lines"][0] >= 1


def test_crlf_line_ends(capsys: pytest.CaptureFixture[str], tmp_path: Path, bad: Path) -> None:
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(bad.read_bytes().replace(b"\n", b"\r\n"))
    status, out, _ = run(capsys, "check", "--json", str(path))
    (report,) = reports(out)
    assert (status, report["code"], report["line"]) == (1, "BLOCK_NOT_OPEN", 5)
    assert report["chunk"] == '{"type":"text-delta","index":0,"text":"!"}'


def test_a_session_log_through_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    """``streamfsm check <(zcat log.gz)``: a named pipe is read once, so its streams must come from that read."""
    data = (SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl").read_bytes()
    read, write = os.pipe()
    try:
        os.write(write, data)  # smaller than a pipe's buffer
        os.close(write)
        status, out, _ = run(capsys, "check", "--json", "--policy", "harness", f"/dev/fd/{read}")
    finally:
        os.close(read)
    assert status == 0
    assert [(r["name"], r["ok"]) for r in reports(out)] == [(f"/dev/fd/{read}#0", True), (f"/dev/fd/{read}#1", True)]


def test_a_folder_of_mixed_formats(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shutil.copy(SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl", tmp_path / "a session.jsonl")
    shutil.copy(PROVIDER_STREAMS / "openai-chat" / "groq-tool-call.jsonl", tmp_path / "b openai.jsonl")
    shutil.copy(PROVIDER_STREAMS / "openai-chat" / "openai-python-4cc50a61.sse", tmp_path / "c openai.sse")
    shutil.copy(PROVIDER_STREAMS / "anthropic-messages" / "basic_response.sse", tmp_path / "d anthropic.sse")
    (tmp_path / "e chunks.ndjson").write_bytes(jsonl(SEED_CHUNKS))
    status, out, err = run(capsys, "check", "--json", "--policy", "harness", str(tmp_path))
    assert status == 0, err
    assert [(Path(r["path"]).name, r["format"]) for r in reports(out)] == [
        ("a session.jsonl", "harness-session"),
        ("a session.jsonl", "harness-session"),
        ("b openai.jsonl", "openai-sse"),
        ("c openai.sse", "openai-sse"),
        ("d anthropic.sse", "anthropic-sse"),
        ("e chunks.ndjson", "jsonl"),
    ]


def test_links_that_loop(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A linked folder is not followed (no endless walk); a file link that loops cannot be read."""
    (tmp_path / "good.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    (tmp_path / "again").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    status, out, err = run(capsys, "check", "--json", str(tmp_path))
    assert status == 2
    assert [r["path"] for r in reports(out)] == [str(tmp_path / "good.jsonl")]
    assert err == f"streamfsm: {tmp_path / 'loop.jsonl'}: cannot read: Too many levels of symbolic links\n"


def test_a_folder_that_cannot_be_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A subfolder the walk cannot open is an unreadable input, not silently skipped (root reads all: faked)."""
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "hidden.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    (tmp_path / "good.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    scandir = os.scandir

    def guarded(path: Any = ".") -> Any:
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", guarded)
    status, out, err = run(capsys, "check", "--json", str(tmp_path))
    assert status == 2
    assert [r["path"] for r in reports(out)] == [str(tmp_path / "good.jsonl")]
    assert err == f"streamfsm: {tmp_path / 'locked'}: cannot read: Permission denied\n"
    status, _, err = run(capsys, "check", str(tmp_path / "locked"))
    assert status == 2
    assert err == f"streamfsm: {tmp_path / 'locked'}: cannot read: Permission denied\n"


# -- check: the recordings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "outcomes"),
    [
        (
            "harness",
            Counter({"ok": 278, "BLOCK_CONTENT_MISMATCH": 3, "STREAM_TRUNCATED": 1, "BLOCK_NOT_OPEN": 1}),
        ),
        (
            "strict",
            Counter(
                {
                    "ok": 142,
                    "BLOCKS_INTERLEAVED": 136,
                    "USAGE_MISSING": 2,
                    "STREAM_TRUNCATED": 1,
                    "BLOCK_NOT_OPEN": 1,
                    "BLOCK_CONTENT_MISMATCH": 1,
                }
            ),
        ),
    ],
)
def test_the_session_logs_give_the_numbers_of_spec_4(
    capsys: pytest.CaptureFixture[str], policy: str, outcomes: Counter[str]
) -> None:
    status, out, err = run(capsys, "check", "--json", "--policy", policy, str(SESSIONS))
    assert status == 1, err
    found = reports(out)
    assert len(found) == 283
    assert {r["format"] for r in found} == {"harness-session"}  # told apart by --format auto
    assert Counter(r["code"] or "ok" for r in found) == outcomes
    if policy == "harness":
        rejected = {Path(r["path"]).name: r["code"] for r in found if not r["ok"]}
        assert rejected == {
            "acp-agent--snapshots--cancel.jsonl": "STREAM_TRUNCATED",
            "test-support--acp-snapshot--fixtures--suite--plain-turn.jsonl": "BLOCK_NOT_OPEN",
            "acp-agent--snapshots--persistent-pwsh-tool-turn.jsonl": "BLOCK_CONTENT_MISMATCH",
            "web--snapshots--goal-multi-turn-actions.jsonl": "BLOCK_CONTENT_MISMATCH",
        }


def test_the_summary_table(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "check", "--quiet", "--policy", "harness", str(SESSIONS))
    assert status == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{SESSIONS}/acp-agent--snapshots--cancel.jsonl:12: STREAM_TRUNCATED")
    at = next(i for i, line in enumerate(lines) if line.startswith("checked "))
    assert lines[at].startswith("checked 283 streams in 121 files (policy harness) in ")
    assert lines[at].endswith(" s: 278 ok, 5 invalid")
    assert [line.split() for line in lines[at + 2 :]] == [
        ["outcome", "code", "streams", "files"],
        ["ok", "278", "102"],
        ["invalid", "BLOCK_CONTENT_MISMATCH", "3", "2"],
        ["invalid", "BLOCK_NOT_OPEN", "1", "1"],
        ["invalid", "STREAM_TRUNCATED", "1", "1"],
        ["no", "streams", "-", "17"],
    ]


def test_json_reports_agree_with_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "check", "--json", "--policy", "strict", str(SESSIONS))
    found = iter(reports(out))
    for path in sorted(SESSIONS.glob("*.jsonl")):
        for stream in sf.read_session(path):
            report = next(found)
            assert list(report) == JSON_KEYS
            assert (report["path"], report["stream"], report["name"]) == (
                str(path),
                stream.number,
                f"{path}#{stream.number}",
            )
            assert report["lines"] == [stream.lines[0], stream.lines[-1]]
            try:
                result = sf.assemble(stream.chunks, policy="strict")
            except sf.LlmError as err:
                assert (report["ok"], report["code"], report["chunk_index"]) == (False, err.code, err.chunk_index)
                assert report["message"] == err.message
                at = min(err.chunk_index or 0, len(stream.chunks) - 1)
                assert report["line"] == stream.lines[at]
                assert report["state"] in ("READY", "IN_BLOCK", "USAGE", "FINISHED")
                assert report["expected"] and report["blocks"] is None
            else:
                wire = result.to_wire()
                assert report["ok"] and report["code"] is None
                assert report["blocks"] == [b["type"] for b in wire["blocks"]]
                assert report["tool_calls"] == [{"id": b.id, "name": b.name} for b in result.tool_calls]
                assert (report["usage"], report["finish"]) == (wire["usage"], wire["finish"])
    assert next(found, None) is None


def test_in_parallel_the_same_as_one_at_a_time(capsys: pytest.CaptureFixture[str]) -> None:
    _, serial, _ = run(capsys, "check", "--json", "-j", "1", str(SESSIONS))
    status, parallel, err = run(capsys, "check", "--json", "-j", "2", str(SESSIONS))
    assert status == 1, err
    assert parallel == serial


def test_the_provider_recordings(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "check", "--json", str(PROVIDER_STREAMS))
    assert status == 0, out + err
    found = {Path(r["path"]).name: r for r in reports(out)}
    assert len(found) == 13
    for name, report in found.items():
        folder = Path(report["path"]).parent.name
        assert report["format"] == ("openai-sse" if folder == "openai-chat" else "anthropic-sse"), name
        assert report["ok"] and report["line"] is None
        assert report["lines"][0] >= 1
    assert found["tool_use_response.sse"]["tool_calls"] == [
        {"id": "toolu_01NRLabsLyVHZPKxbKvkfSMn", "name": "get_weather"}
    ]
    assert found["deepseek-reasoning.jsonl"]["blocks"] == ["reasoning", "text"]
    assert found["incomplete_partial_json_response.sse"]["finish"] == {"kind": "max-tokens"}


def test_broken_provider_recordings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    openai = (PROVIDER_STREAMS / "openai-chat" / "openai-python-e2aad469.sse").read_bytes()
    anthropic = (PROVIDER_STREAMS / "anthropic-messages" / "basic_response.sse").read_bytes()
    cases = {
        "no-done.sse": (openai.replace(b"data: [DONE]", b""), "STREAM_CLOSED", "without [DONE]"),
        "no-stop.sse": (anthropic[: anthropic.index(b"event: message_stop")], "STREAM_CLOSED", "without message_stop"),
        "torn.sse": (anthropic.replace(b'"text":" there"', b'"text": there'), "MALFORMED_RESPONSE", "not JSON"),
    }
    for name, (body, _, _) in cases.items():
        (tmp_path / name).write_bytes(body)
    status, out, _ = run(capsys, "check", "--json", str(tmp_path))
    assert status == 1
    found = {Path(r["path"]).name: r for r in reports(out)}
    for name, (_, code, words) in cases.items():
        report = found[name]
        assert (report["code"], report["chunk_index"], report["state"]) == (code, None, None), name
        assert words in report["message"]
        assert report["line"] is not None
    torn = found["torn.sse"]
    lines = cases["torn.sse"][0].decode().splitlines()
    assert lines[torn["line"] - 1] == "event: content_block_delta"
    assert '"text": there' in lines[torn["line"]] and torn["chunk"] is not None


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_an_sse_error_points_at_its_event(capsys: pytest.CaptureFixture[str], tmp_path: Path, newline: bytes) -> None:
    """Whatever ends the lines, with comments, ids and no blank line at the end: the line the event starts at."""
    body = (PROVIDER_STREAMS / "anthropic-messages" / "basic_response.sse").read_bytes().rstrip(b"\n")
    body = b": a comment\n\nid: 1\n\n\n" + body.replace(b'"text":" there"', b'"text": there')
    lines = body.split(b"\n")
    torn = next(n for n, line in enumerate(lines, start=1) if b'"text": there' in line) - 1
    assert lines[torn - 1] == b"event: content_block_delta"
    path = tmp_path / "torn.sse"
    path.write_bytes(body.replace(b"\n", newline))
    status, out, _ = run(capsys, "check", "--json", str(path))
    (report,) = reports(out)
    assert (status, report["code"], report["line"]) == (1, "MALFORMED_RESPONSE", torn)
    assert report["chunk"].startswith('{"type":"content_block_delta"')


def test_an_sse_body_of_no_known_provider(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "other.sse"
    path.write_bytes(b'data: {"hello": 1}\n\n')
    status, _, err = run(capsys, "check", str(path))
    assert status == 2
    assert "cannot tell the format" in err and "--format" in err


def test_a_format_given(capsys: pytest.CaptureFixture[str]) -> None:
    path = PROVIDER_STREAMS / "openai-chat" / "openai-text.jsonl"
    assert run(capsys, "check", "--format", "openai-sse", str(path))[0] == 0
    status, out, _ = run(capsys, "check", "--json", "--format", "jsonl", str(path))
    assert status == 1
    assert reports(out)[0]["code"] == "INVALID_CHUNK"


# -- assemble, diagram, demo -------------------------------------------------------------------------


def test_assemble_prints_to_wire(capsys: pytest.CaptureFixture[str], good: Path, bad: Path) -> None:
    status, out, _ = run(capsys, "assemble", str(good))
    assert status == 0
    assert orjson.loads(out) == sf.assemble(SEED_CHUNKS).to_wire(interrupted=True)
    assert out.startswith("{\n  ")
    status, out, err = run(capsys, "assemble", "--compact", str(bad))
    assert (status, out) == (1, "")
    assert err.startswith(f"{bad}:5: BLOCK_NOT_OPEN")


def test_assemble_a_session_log(capsys: pytest.CaptureFixture[str]) -> None:
    path = SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl"
    streams = list(sf.read_session(path))
    expected = [sf.assemble(s.chunks, policy="harness").to_wire(interrupted=True) for s in streams]
    status, out, _ = run(capsys, "assemble", "--compact", "--policy", "harness", str(path))
    assert status == 0
    assert reports(out) == expected
    status, out, _ = run(capsys, "assemble", "--policy", "harness", "--stream", "1", str(path))
    assert status == 0
    assert orjson.loads(out) == expected[1]


def test_assemble_a_provider_recording(capsys: pytest.CaptureFixture[str]) -> None:
    path = PROVIDER_STREAMS / "openai-chat" / "deepseek-tool-call.jsonl"
    events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    status, out, _ = run(capsys, "assemble", str(path))
    assert status == 0
    assert orjson.loads(out) == sf.assemble(sf.from_openai_chunks(events)).to_wire(interrupted=True)


@pytest.mark.parametrize("policy", [None, "strict", "harness"])
def test_diagram_is_the_machines(capsys: pytest.CaptureFixture[str], policy: str | None) -> None:
    status, out, _ = run(capsys, "diagram", *(["--policy", policy] if policy else []))
    assert status == 0
    assert out == sf.diagram(policy)


def test_demo_runs_without_network() -> None:
    done = command("demo", "--fast")
    assert done.returncode == 0, done.stderr
    assert "done: stop" in done.stdout and "rejected: BLOCK_NOT_OPEN at chunk 4" in done.stdout


def test_demo_talks_to_an_openai_compatible_endpoint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ..sse_server import SSE, SSEServer, openai_events

    def turn(delta: dict[str, Any], finish: str) -> list[dict[str, Any]]:
        usage = {"prompt_tokens": 40, "completion_tokens": 9}
        return [
            {"choices": [{"index": 0, "delta": delta}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
        ]

    listing = {
        "tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]
    }
    with SSEServer() as server:
        server.script(
            SSE(openai_events(turn(listing, "tool_calls"))), SSE(openai_events(turn({"content": "A package."}, "stop")))
        )
        monkeypatch.setenv("STREAMFSM_API_KEY", "sk-demo")
        status, out, _ = run(capsys, "demo", "--base-url", server.url, "--model", "deepseek-chat")
        assert status == 0
        first, second = (request.json() for request in server.requests)
    assert "→ tool call call_1: bash" in out and "A package." in out and "done: stop" in out
    assert server.requests[0].headers["authorization"] == "Bearer sk-demo"
    assert first["model"] == "deepseek-chat" and first["tools"][0]["function"]["name"] == "bash"
    # The project the demo's tool sees is the package, installed or in a checkout: the same listing either way.
    assert second["messages"][-1]["role"] == "tool" and second["messages"][-1]["content"] == "streamfsm"


def test_the_demos_tool_sees_the_package_wherever_it_is_installed() -> None:
    """Nothing of the repository's layout: ``ls`` is the package, ``ls streamfsm`` its files, and nothing beside it
    (in an install, the rest of site-packages) is listed."""
    from streamfsm._demo import bash

    def call(command: str) -> str:
        return str(bash(command))

    assert call("ls") == "streamfsm" == call("ls .")
    listing = call("ls streamfsm").splitlines()
    assert {"__init__.py", "py.typed", "_providers"} <= set(listing) and "__pycache__" not in listing
    assert "sse.py" in call("ls streamfsm/_providers").splitlines()
    for outside in ("ls ..", "ls /", "ls streamfsm/../..", "ls tests", "cat README.md"):
        with pytest.raises(sf.ToolError):
            call(outside)


def test_demo_without_a_key_says_what_it_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("STREAMFSM_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    status, _, err = run(capsys, "demo", "--base-url", "http://127.0.0.1:9", "--model", "m")
    assert status == 2 and "STREAMFSM_API_KEY" in err


def test_the_demo_options_are_the_demo_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    """One parser: the demo's options are declared on its subcommand, and anything else is a usage error."""
    args = _cli.build_parser().parse_args(["demo", "--fast", "--base-url", "http://h", "--model", "m"])
    assert (args.command, args.fast, args.base_url, args.model) == ("demo", True, "http://h", "m")
    with pytest.raises(SystemExit) as info:
        _cli.main(["demo", "--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0 and all(option in out for option in ("--fast", "--base-url URL", "--model NAME"))
    for argv in (["demo", "--nope"], ["demo", "extra"], ["check", "--fast", "x.jsonl"]):
        with pytest.raises(SystemExit) as info:
            _cli.main(argv)
        assert info.value.code == _cli.EXIT_USAGE, argv
        assert "unrecognized arguments" in capsys.readouterr().err


def test_python_m_streamfsm_is_the_command(bad: Path) -> None:
    """``python -m streamfsm`` runs the command, as ``python -m pip`` is pip (it used to run the demo)."""

    def module(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "streamfsm", *argv], capture_output=True, text=True, timeout=120, env=child_env()
        )

    checked = module("check", str(bad))
    assert checked.returncode == _cli.EXIT_INVALID and checked.stderr == ""
    assert checked.stdout == command("check", str(bad)).stdout
    assert checked.stdout.startswith(f"{bad}:5: BLOCK_NOT_OPEN ")
    version = module("--version")
    assert (version.returncode, version.stdout) == (0, f"{version_line()}\n")
    bare = module()
    assert bare.returncode == _cli.EXIT_USAGE and bare.stdout == "" and "COMMAND" in bare.stderr
    demo = module("demo", "--fast")
    assert demo.returncode == 0 and "rejected: BLOCK_NOT_OPEN at chunk 4" in demo.stdout


def test_the_version_says_which_machine_runs_and_why() -> None:
    """``--version``: the version, then the machine: compiled, or pure and why (the build's record, or none when the
    package runs from its source tree). The record a build writes is tested in tests/test_install.py."""
    import streamfsm._machine as machine

    line = version_line()
    assert line.startswith(f"streamfsm {sf.__version__}; machine: ")
    if machine.__file__ is not None and machine.__file__.endswith(".py"):
        assert line.split("; machine: ")[1].startswith("pure Python (")
    else:
        assert line.endswith("; machine: compiled with mypyc")


def test_the_console_script() -> None:
    script = console_script()
    done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout == f"{version_line()}\n"
    done = subprocess.run([script, "diagram"], capture_output=True, text=True, timeout=60)
    assert done.stdout == sf.diagram()


# -- colours and the terminal ------------------------------------------------------------------------


def test_colours_only_when_wanted(bad: Path) -> None:
    assert "\x1b[" not in command("check", str(bad)).stdout  # not a terminal
    assert "\x1b[31;1mBLOCK_NOT_OPEN\x1b[0m" in command("check", "--color", "always", str(bad)).stdout
    assert "\x1b[" not in command("check", "--color", "always", str(bad), env={"NO_COLOR": "1"}).stdout


def colours(text: str) -> list[str]:
    """The ANSI colour codes (not bold or dim) in ``text``."""
    codes = re.findall(r"\x1b\[([0-9;]*)m", text)
    return [c for c in codes if any(30 <= int(n) <= 37 or 90 <= int(n) <= 97 for n in c.split(";") if n)]


def test_on_a_terminal_colours_a_table_and_a_progress_bar() -> None:
    pytest.importorskip("rich")
    argv = ("check", "--quiet", "--policy", "harness", str(SESSIONS))
    status, shown = on_a_terminal(*argv)
    assert status == 1
    assert "checked 283 streams in 121 files (policy harness)" in shown
    assert "STREAM_TRUNCATED" in shown and "\u2500" in shown  # the rich table's rule
    assert "checking" in shown  # the progress bar, on standard error
    assert colours(shown)
    for plain in (on_a_terminal(*argv, env={"NO_COLOR": "1"})[1], on_a_terminal(*argv, "--color", "never")[1]):
        assert "checked 283 streams" in plain and "checking" in plain
        assert not colours(plain)


def test_the_progress_bar_shows_paths_as_they_are(tmp_path: Path) -> None:
    """Square brackets in a path are rich's markup: shown as text, they must not style or break the bar."""
    pytest.importorskip("rich")
    (tmp_path / "x[").mkdir()
    for name in ("x[/y].jsonl", "a [red]copy.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(jsonl(SEED_CHUNKS))
    status, shown = on_a_terminal("check", "--quiet", ".", cwd=tmp_path)
    assert status == 0, shown
    assert "checked 3 streams in 3 files" in shown and "Traceback" not in shown


def test_the_plain_summary() -> None:
    summary = _cli_report.Summary("strict", files=3, streams=4, ok=2, ok_files=1, unreadable=1, seconds=0.5)
    summary.codes.update({"BLOCK_NOT_OPEN": 2})
    summary.code_files.update({"BLOCK_NOT_OPEN": 1})
    text = _cli_report.format_summary(summary, _cli_report.Style(False))
    assert text.splitlines() == [
        "checked 4 streams in 3 files (policy strict) in 0.50 s: 2 ok, 2 invalid, 1 unreadable",
        "",
        "  outcome     code            streams  files",
        "  ok                                2      1",
        "  invalid     BLOCK_NOT_OPEN        2      1",
        "  unreadable                        -      1",
    ]


# -- the process: a closed pipe, Ctrl-C ---------------------------------------------------------------


@pytest.mark.parametrize(
    "argv", [["check", "GOOD"], ["check", "--json", "GOOD"], ["assemble", "GOOD"], ["diagram"], ["check", "BIG"]]
)
def test_a_closed_pipe_is_exit_141_without_a_word(tmp_path: Path, good: Path, argv: list[str]) -> None:
    """``streamfsm check ... | head``: the reader is gone before the command writes (or flushes at exit)."""
    big = tmp_path / "big"
    big.mkdir()
    for n in range(300):
        (big / f"{n:03}.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    paths = {"GOOD": str(good), "BIG": str(big)}
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "streamfsm._cli", *(paths.get(a, a) for a in argv)],
            stdout=write,
            stderr=subprocess.PIPE,
            env=child_env(),
            timeout=120,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (_cli.EXIT_BROKEN_PIPE, b"")


def test_ctrl_c_is_exit_130(tmp_path: Path) -> None:
    """Interrupted while it reads standard input: one line on standard error, no traceback."""
    wchan = Path(f"/proc/{os.getpid()}/wchan")
    if not wchan.exists():
        pytest.skip("needs /proc/PID/wchan to see the command waiting for its input")
    child = subprocess.Popen(
        [sys.executable, "-m", "streamfsm._cli", "check", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    try:
        wait_until_blocked(child.pid, "pipe")  # it waits for its input, i.e. runs the command
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert (child.returncode, out, err) == (_cli.EXIT_INTERRUPTED, b"", b"streamfsm: interrupted\n")


def test_ctrl_c_while_workers_check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for n in range(4):
        (tmp_path / f"{n}.jsonl").write_bytes(jsonl(SEED_CHUNKS))

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_cli, "_print_file", interrupt)
    status, out, err = run(capsys, "check", "-j", "2", str(tmp_path))
    assert (status, out, err) == (_cli.EXIT_INTERRUPTED, "", "streamfsm: interrupted\n")


# -- the README and the docs --------------------------------------------------------------------------


def readme_examples() -> list[tuple[str, str]]:
    """``(command, shown output)`` of each text block of the README and the docs that starts with ``$ streamfsm``."""
    from ..test_docs import fenced

    blocks = [re.fullmatch(r"\$ (streamfsm [^\n]*)\n(.*)", block, flags=re.DOTALL) for block in fenced("text")]
    return list(dict.fromkeys((m[1], m[2]) for m in blocks if m))


def shown_as_pattern(shown: str) -> str:
    """The shown output as a regex: ``...`` stands for any lines, a time for any time."""
    parts = []
    for line in shown.splitlines():
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            pieces = re.split(r"in [0-9]+\.[0-9]+ s", line)
            parts.append(r"in [0-9]+\.[0-9]+ s".join(re.escape(p) for p in pieces) + r"\n")
    return "".join(parts)


def test_readme_examples_are_what_the_command_prints(tmp_path: Path) -> None:
    examples = readme_examples()
    assert {cmd for cmd, _ in examples} == {
        "streamfsm check broken.jsonl",
        "streamfsm check --json broken.jsonl",
        "streamfsm check -v --policy harness tests/fixtures/harness-sessions",
        "streamfsm assemble --compact tests/fixtures/inference-servers/llama-server-cut-call.sse",
    }
    broken = copy.deepcopy(SEED_CHUNKS)
    (tmp_path / "broken.jsonl").write_bytes(
        jsonl([*broken[:4], {"type": "text-delta", "index": 0, "text": "!"}, *broken[4:]])
    )
    for cmd, shown in examples:
        argv = cmd.split()[1:]
        cwd = ROOT if "tests/fixtures/" in cmd else tmp_path
        done = subprocess.run(
            [sys.executable, "-m", "streamfsm._cli", *argv], capture_output=True, text=True, cwd=cwd, timeout=120
        )
        assert done.returncode == (0 if argv[0] == "assemble" else 1), done.stderr
        assert re.fullmatch(shown_as_pattern(shown), done.stdout), (cmd, done.stdout[-2000:])


# ====================================================================================================================
# ``streamfsm check`` and ``assemble`` over every wire API's recordings: six formats, told apart by ``auto``, from
# files and from standard input, as JSON lines of events or as SSE bodies; and what a turn kept for replay.
# ====================================================================================================================


ANTHROPIC_BLOCKS = FIXTURES / "anthropic-blocks"

#: Every provider recording kept in tests/fixtures (their licenses beside them).
RECORDINGS = sorted(
    path
    for folder in (PROVIDER_STREAMS, MORE_PROVIDER_STREAMS, ANTHROPIC_BLOCKS)
    for path in folder.rglob("*")
    if path.suffix in (".jsonl", ".sse")
)

#: The format of each folder's recordings.
FORMAT_OF = {
    "openai-chat": "openai-sse",
    "anthropic-messages": "anthropic-sse",
    "anthropic-blocks": "anthropic-sse",
    "openai-responses": "openai-responses",
    "gemini": "gemini",
    "bedrock": "bedrock",
    "cohere": "cohere",
}

#: The converter of each provider format.
CONVERTERS: dict[str, Callable[[Iterable[Any]], Iterator[Any]]] = {
    "openai-sse": sf.from_openai_chunks,
    "anthropic-sse": sf.from_anthropic_events,
    "openai-responses": sf.from_openai_responses_events,
    "gemini": sf.from_gemini_chunks,
    "bedrock": sf.from_bedrock_events,
    "cohere": sf.from_cohere_events,
}

#: The recording that is not a good turn, and the code it gives: a failed response (the provider's own error event).
NOT_ONE_GOOD_TURN = {
    "openai-error.1.jsonl": "QUOTA",
}

#: The recordings of several turns (an agent loop's conversation), and how many each holds: one stream per turn.
SEVERAL_TURNS = {
    "anthropic-tool-search-bm25.1.jsonl": 2,
}

#: The formats this issue added, each with a recording of it.
NEW_FORMATS = {
    "openai-responses": MORE_PROVIDER_STREAMS / "openai-responses" / "lmstudio-tool-call.1.jsonl",
    "gemini": MORE_PROVIDER_STREAMS / "gemini" / "google-tool-call.jsonl",
    "bedrock": MORE_PROVIDER_STREAMS / "bedrock" / "amazon-bedrock-reasoning.jsonl",
    "cohere": MORE_PROVIDER_STREAMS / "cohere" / "cohere-tool-call.jsonl",
}


def run_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, data: bytes, *argv: str
) -> tuple[int, str, str]:
    """``streamfsm ARGV`` in this process, with ``data`` on standard input."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    return run(capsys, *argv)


def fmt_of(path: Path) -> str:
    return FORMAT_OF[path.parent.name]


def events_of(path: Path) -> list[dict[str, Any]]:
    """A recording's provider events, read here without the reader (JSON lines, or the data of an SSE body)."""
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        return [orjson.loads(line) for line in data.splitlines() if line.strip()]
    events = []
    for line in data.decode().splitlines():
        if line.startswith("data:"):
            value = line.removeprefix("data:").strip()
            if value != "[DONE]":
                events.append(orjson.loads(value))
    return events


def sse_body(events: list[dict[str, Any]], fmt: str, newline: bytes = b"\n") -> bytes:
    """``events`` as the wire API's SSE body: Gemini sends ``data:`` lines only, the others name each event."""
    out = []
    for event in events:
        named = fmt != "gemini" and isinstance(event.get("type"), str)
        lines = ([b"event: " + event["type"].encode()] if named else []) + [b"data: " + orjson.dumps(event)]
        out.append(newline.join(lines) + newline + newline)
    return b"".join(out)


def library_report(path: Path) -> sf.StreamResult:
    """What the library assembles from a recording's events, through its wire API's converter."""
    return sf.assemble(CONVERTERS[fmt_of(path)](events_of(path)), policy=sf.Policy.STRICT)


def library_turns(path: Path) -> list[sf.StreamResult]:
    """What the library assembles from each turn of a recording (``sf.read_turns``)."""
    turns = sf.read_turns(CONVERTERS[fmt_of(path)], events_of(path))
    return [sf.assemble(turn, policy=sf.Policy.STRICT) for turn in turns]


def test_the_recordings_are_all_here() -> None:
    assert {path.parent.name for path in RECORDINGS} == set(FORMAT_OF)
    assert len(RECORDINGS) == 42
    assert set(NOT_ONE_GOOD_TURN) <= {path.name for path in RECORDINGS}


# -- every recording, every way in --------------------------------------------------------------------


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recording_checks_from_a_file_and_from_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, path: Path
) -> None:
    argv = ("check", "--json", "--format", "auto", "--policy", "strict")
    status, out, err = run(capsys, *argv, str(path))
    found = reports(out)
    assert len(found) == SEVERAL_TURNS.get(path.name, 1)
    assert all(report["format"] == fmt_of(path) for report in found)
    if path.name in NOT_ONE_GOOD_TURN:
        ((report),) = found
        assert (status, report["ok"], report["code"]) == (1, False, NOT_ONE_GOOD_TURN[path.name])
        assert report["line"] is not None and report["kept"] is None
    else:
        assert (status, err) == (0, "")
        for number, (report, result) in enumerate(zip(found, library_turns(path), strict=True)):
            assert report["ok"] and report["policy"] == "strict" and report["stream"] == number
            wire = result.to_wire()
            assert report["blocks"] == [block["type"] for block in wire["blocks"]]
            assert report["tool_calls"] == [{"id": call.id, "name": call.name} for call in result.tool_calls]
            assert (report["usage"], report["finish"]) == (wire["usage"], wire["finish"])
            assert report["kept"] == [item.type for item in result.kept]
    stdin_status, stdin_out, _ = run_stdin(capsys, monkeypatch, path.read_bytes(), *argv, "-")
    assert stdin_status == status
    unnamed = [{**report, "path": None, "name": None} for report in reports(stdin_out)]
    assert unnamed == [{**report, "path": None, "name": None} for report in found]


def test_every_folder_checks_at_once_and_only_the_bad_turn_fails(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "check", "--json", str(PROVIDER_STREAMS), str(MORE_PROVIDER_STREAMS), str(ANTHROPIC_BLOCKS)
    )
    found = reports(out)
    assert status == 1 and len(found) == len(RECORDINGS) + sum(n - 1 for n in SEVERAL_TURNS.values())
    assert {Path(r["path"]).name: r["code"] for r in found if not r["ok"]} == NOT_ONE_GOOD_TURN


@pytest.mark.parametrize("fmt", sorted(NEW_FORMATS))
def test_an_sse_body_checks_as_its_events_do(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fmt: str
) -> None:
    """Every recording of the new wire APIs, written as its SSE body (CRLF for Gemini, as it sends them)."""
    for recording in sorted(NEW_FORMATS[fmt].parent.glob("*.jsonl")):
        if recording.name in NOT_ONE_GOOD_TURN:
            continue
        body = sse_body(events_of(recording), fmt, b"\r\n" if fmt == "gemini" else b"\n")
        path = tmp_path / f"{recording.stem}.sse"
        path.write_bytes(body)
        _, lines_out, _ = run(capsys, "check", "--json", str(recording))
        status, sse_out, err = run(capsys, "check", "--json", str(path))
        stdin_status, stdin_out, _ = run_stdin(capsys, monkeypatch, body, "check", "--json", "-")
        assert status == stdin_status == 0, err
        (expected,), (got,), (piped,) = reports(lines_out), reports(sse_out), reports(stdin_out)
        same = ("format", "ok", "blocks", "tool_calls", "usage", "finish", "kept", "chunks")
        assert {k: got[k] for k in same} == {k: expected[k] for k in same} == {k: piped[k] for k in same}
        # The chunks' lines are the lines their events start at: event (if named) and data, then a blank line.
        per_event = 2 if fmt in ("gemini", "bedrock") else 3
        assert (got["lines"][0] - 1) % per_event == 0


def test_a_real_pipe_into_the_command() -> None:
    body = sse_body(events_of(NEW_FORMATS["gemini"]), "gemini", b"\r\n")
    done = subprocess.run(
        [sys.executable, "-m", "streamfsm._cli", "check", "-v", "-"], input=body, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith("-: ok; 1 block (tool-call); tool calls: weather;")


def test_reading_an_sse_body_needs_no_extra() -> None:
    """The recordings reader parses SSE with the adapters' own parser: neither httpx nor httpx-sse is imported."""
    body = sse_body(events_of(NEW_FORMATS["openai-responses"]), "openai-responses")
    code = (
        "import sys, streamfsm as sf\n"
        f"(stream,) = sf.read_recordings({body!r})\n"
        "assert stream.failure is None and sf.assemble(stream.chunks).tool_calls\n"
        "print(sorted(m for m in sys.modules if m.startswith('httpx')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


# -- telling the formats apart ------------------------------------------------------------------------


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_auto_tells_every_recording_by_its_first_event(path: Path) -> None:
    assert sf.detect_format(path) == fmt_of(path)
    first = path.read_bytes().lstrip().split(b"\n", 1)[0]
    if path.suffix == ".jsonl":
        assert sf.detect_format(first + b"\n") == fmt_of(path)


@pytest.mark.parametrize(
    ("first", "fmt"),
    [
        ({"type": "response.created", "sequence_number": 0, "response": {}}, "openai-responses"),
        ({"type": "response.output_text.delta", "delta": "x"}, "openai-responses"),
        ({"candidates": [{"content": {"parts": [{"text": "x"}]}}]}, "gemini"),
        ({"usageMetadata": {"promptTokenCount": 1}}, "gemini"),
        ({"modelVersion": "gemini-2.5-flash", "responseId": "r"}, "gemini"),
        ({"promptFeedback": {"blockReason": "SAFETY"}}, "gemini"),
        ({"messageStart": {"role": "assistant"}}, "bedrock"),
        ({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "x"}}}, "bedrock"),
        ({"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1}}}, "bedrock"),
        ({"throttlingException": {"message": "slow down"}}, "bedrock"),
        ({"type": "message-start", "id": "c", "delta": {"message": {"role": "assistant"}}}, "cohere"),
        ({"type": "content-delta", "index": 0, "delta": {}}, "cohere"),
        ({"type": "tool-plan-delta", "delta": {}}, "cohere"),
        ({"type": "message_start", "message": {}}, "anthropic-sse"),
        ({"object": "chat.completion.chunk", "choices": []}, "openai-sse"),
        # Chunks of the block protocol, and objects of no wire API, stay JSON lines of chunks.
        ({"type": "tool-call-delta", "index": 0, "id": "a", "argumentsDelta": "{}"}, "jsonl"),
        ({"type": "block-start", "index": 0, "blockType": "text"}, "jsonl"),
        ({"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}}, "jsonl"),
        ({"hello": 1}, "jsonl"),
        ({"somethingException": "not an object"}, "jsonl"),
        ({"type": "text-delta", "candidates": []}, "jsonl"),
    ],
)
def test_the_first_event_names_its_wire_api(first: dict[str, Any], fmt: str) -> None:
    line = orjson.dumps(first)
    assert sf.detect_format(b"\n" + line + b"\n") == fmt
    if fmt != "jsonl":  # the same event in an SSE body (its event name first when it has a type)
        named = b"event: " + first["type"].encode() + b"\n" if "type" in first else b""
        assert sf.detect_format(b": a comment\n\n" + named + b"data: " + line + b"\n\n") == fmt


def test_an_sse_body_told_by_its_event_names_alone() -> None:
    assert sf.detect_format(b"event: response.created\ndata: {}\n\n") == "openai-responses"
    assert sf.detect_format(b"event: message-start\ndata: {}\n\n") == "cohere"
    with pytest.raises(sf.UnknownFormat, match="openai-responses or gemini or bedrock or cohere"):
        sf.detect_format(b'data: {"hello": 1}\n\n')


@pytest.mark.parametrize("fmt", sorted(NEW_FORMATS))
def test_a_wire_api_format_given(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    path = NEW_FORMATS[fmt]
    status, out, _ = run(capsys, "check", "--json", "--format", fmt, str(path))
    assert status == 0 and reports(out)[0]["format"] == fmt
    # Another wire API's converter refuses the events with a code, where they are.
    other = "cohere" if fmt != "cohere" else "bedrock"
    status, out, _ = run(capsys, "check", "--json", "--format", other, str(path))
    (report,) = reports(out)
    assert (status, report["ok"], report["format"]) == (1, False, other)
    assert report["code"] in ("MALFORMED_RESPONSE", "STREAM_CLOSED") and report["line"] is not None


def test_the_help_lists_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _cli.main(["check", "--help"])
    out = capsys.readouterr().out
    for fmt in sf.FORMATS:
        assert fmt in out


# -- where SSE bodies end -----------------------------------------------------------------------------


def responses_events() -> list[dict[str, Any]]:
    return events_of(NEW_FORMATS["openai-responses"])


def test_an_sse_body_is_over_at_the_finish_as_for_the_adapters(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No end marker of its own: the Responses body is over at ``response.completed`` (a ``[DONE]`` after it, as
    some servers send, is not read), and a body cut before it is ``STREAM_CLOSED``."""
    events = responses_events()
    assert events[-1]["type"] == "response.completed"
    done = tmp_path / "done.sse"
    done.write_bytes(sse_body(events, "openai-responses") + b"data: [DONE]\n\n")
    cut = tmp_path / "cut.sse"
    cut.write_bytes(sse_body(events[:-1], "openai-responses"))
    status, out, _ = run(capsys, "check", "--json", str(done), str(cut))
    good, closed = reports(out)
    assert status == 1 and good["ok"] and good["finish"] == {"kind": "tool-calls"}
    assert (closed["code"], closed["state"]) == ("STREAM_CLOSED", None)
    assert "response.completed" in closed["message"]


def test_gemini_is_over_when_its_body_ends(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    events = events_of(MORE_PROVIDER_STREAMS / "gemini" / "google-text.jsonl")
    without = [
        {**e, "candidates": [{k: v for k, v in c.items() if k != "finishReason"} for c in e.get("candidates", [])]}
        for e in events
    ]
    path = tmp_path / "cut.sse"
    path.write_bytes(sse_body(without, "gemini"))
    status, out, _ = run(capsys, "check", "--json", str(path))
    (report,) = reports(out)
    assert (status, report["code"]) == (1, "STREAM_CLOSED")
    assert "finishReason" in report["message"]


def test_an_event_after_the_end_of_a_json_lines_recording(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    events = responses_events()
    path = tmp_path / "twice.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in [*events, events[-1]]))
    status, out, _ = run(capsys, "check", "--json", str(path))
    (report,) = reports(out)
    assert (status, report["code"], report["line"]) == (1, "MALFORMED_RESPONSE", len(events) + 1)


def test_a_torn_event_is_pointed_at(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    body = sse_body(responses_events(), "openai-responses").replace(b'"delta":"', b'"delta":', 1)
    lines = body.split(b"\n")
    torn = next(n for n, line in enumerate(lines, start=1) if b'"delta":' in line and line.startswith(b"data:"))
    path = tmp_path / "torn.sse"
    path.write_bytes(body)
    status, out, _ = run(capsys, "check", "--json", str(path))
    (report,) = reports(out)
    assert (status, report["code"]) == (1, "MALFORMED_RESPONSE")
    assert report["line"] == torn - 1  # the event's first line: its event name
    assert lines[torn - 2].startswith(b"event: response.")


def test_one_event_is_bounded(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An SSE event holds at most what one line may (``MAX_LINE_BYTES``), its data lines together."""
    monkeypatch.setattr(recorded, "MAX_LINE_BYTES", 1_000)
    path = tmp_path / "big.sse"
    path.write_bytes(b"event: response.created\n" + b"data: " + b"x" * 600 + b"\n" + b"data: " + b"x" * 600 + b"\n\n")
    status, out, _ = run(capsys, "check", "--json", "--format", "openai-responses", str(path))
    (report,) = reports(out)
    assert (status, report["code"]) == (1, "LIMIT_EXCEEDED")


# -- what was kept for replay -------------------------------------------------------------------------


def test_check_says_what_was_kept(capsys: pytest.CaptureFixture[str]) -> None:
    path = MORE_PROVIDER_STREAMS / "anthropic-messages" / "anthropic-web-search-tool.1.jsonl"
    result = library_report(path)
    assert result.kept
    status, out, _ = run(capsys, "check", "-v", str(path))
    assert status == 0
    line = out.splitlines()[0]
    assert line.endswith(f"; {sf.describe_kept(result.kept)}")
    assert f"{len(result.kept)} provider blocks kept for replay: server_tool_use" in line
    status, out, _ = run(capsys, "check", "--json", str(path))
    assert reports(out)[0]["kept"] == [item.type for item in result.kept]


def test_a_turn_that_kept_nothing_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    path = MORE_PROVIDER_STREAMS / "cohere" / "cohere-text.jsonl"
    status, out, _ = run(capsys, "check", str(path))
    assert status == 0 and "kept for replay" not in out
    _, out, _ = run(capsys, "check", "--json", str(path))
    assert reports(out)[0]["kept"] == []
    status, out, err = run(capsys, "assemble", str(path))
    assert (status, err) == (0, "")


def test_the_kept_line_counts_repeated_types(capsys: pytest.CaptureFixture[str]) -> None:
    path = MORE_PROVIDER_STREAMS / "openai-responses" / "openai-web-search-tool.1.jsonl"
    status, out, _ = run(capsys, "check", "-v", str(path))
    assert status == 0
    assert "25 provider blocks kept for replay: reasoning (7), web_search_call (6), url_citation (12)" in out


def test_assemble_says_what_was_kept_on_standard_error(capsys: pytest.CaptureFixture[str]) -> None:
    path = ANTHROPIC_BLOCKS / "anthropic-advisor-stop-reasons.jsonl"
    result = library_report(path)
    status, out, err = run(capsys, "assemble", "--compact", str(path))
    assert status == 0
    assert orjson.loads(out) == result.to_wire(interrupted=True)  # standard output stays the JSON
    assert err == f"{path}: 4 provider blocks kept for replay: server_tool_use (2), advisor_tool_result (2)\n"
    assert err.split(": ", 1)[1].rstrip("\n") == sf.describe_kept(result.kept)


def test_describe_kept_takes_items_or_their_types() -> None:
    items = [sf.KeptBlock(type="citations", at=0, data={}), sf.KeptBlock(type="compaction", at=1, data={})]
    assert sf.describe_kept(items) == sf.describe_kept(["citations", "compaction"])
    assert sf.describe_kept(items) == "2 provider blocks kept for replay: citations, compaction"
    assert sf.describe_kept([]) == ""
    assert sf.kept_blocks({"kept": [{"type": "fallback", "at": 0, "data": {"from": "a", "to": "b"}}]}) == [
        sf.KeptBlock(type="fallback", at=0, data={"from": "a", "to": "b"})
    ]


# ====================================================================================================================
# The command against hostile names, files, text and moments (issue 16, findings 16 to 19), run as a user runs it.
#
# - 16: a file name that is not UTF-8 is shown escaped (``\xff``), in text and in ``--json``, never a traceback;
# - 17: devices, FIFOs and sockets met in a walked folder are skipped with a note; a device named on the command
#   line is read up to the bound on a line (``MAX_LINE_BYTES``), never until a ``MemoryError``;
# - 18: a file with no recognisable stream is invalid (exit 1), never "no streams recorded";
# - 19: what a recording or a model sends cannot drive the terminal (C0, C1, bidirectional controls), in ``check``,
#   ``assemble`` and ``demo``; Ctrl-C is exit 130 with one line, wherever the command's code is.
# ====================================================================================================================


#: The address space a child may take (a bound on its memory): the longest line, twice, and room to start.
CHILD_MEMORY = 2 * MAX_LINE_BYTES + 768 * 1024 * 1024

#: Characters that must never reach a terminal as they are (escape sequences, C1 CSI, bidi overrides).
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil\u2066\u200f\r"


def limited() -> None:
    """In the child, before it starts: its address space bounded by :data:`CHILD_MEMORY`."""
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


def streamfsm(
    *argv: str, stdin: Any = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """``python -m streamfsm._cli ARGV`` in a child process with bounded memory; output as bytes."""
    return subprocess.run(
        [sys.executable, "-m", "streamfsm._cli", *argv],
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        env=child_env(**(env or {})),
        preexec_fn=limited,
    )


def raw_unsafe(text: str) -> set[str]:
    """The characters of ``UNSAFE`` in ``text`` (line ends aside), as they are."""
    return {c for c in text if ord(c) in UNSAFE and c != "\n"}


# -- 16: names that are not UTF-8 --------------------------------------------------------------------------------

#: A file name with two bytes that are not UTF-8 and an escape sequence that would retitle the terminal.
NOT_UTF8 = os.fsdecode(b"bad\xff\xfe\x1b]0;x\x07.jsonl")
NOT_UTF8_SHOWN = "bad\\xff\\xfe\\x1b]0;x\\x07.jsonl"
#: The same in JSON: JSON escapes the controls itself (``\u001b``, the same string); the bytes that are not
#: UTF-8, which UTF-8 JSON cannot hold, are the text ``printable`` shows for them.
NOT_UTF8_IN_JSON = "bad\\xff\\xfe\x1b]0;x\x07.jsonl"


@pytest.mark.parametrize("encoding", [None, "utf-8"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_name_that_is_not_utf8_is_shown_escaped(tmp_path: Path, encoding: str | None, as_json: bool) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / NOT_UTF8).write_bytes(jsonl(SEED_CHUNKS))
    env = {"PYTHONIOENCODING": encoding} if encoding else {}
    for target in (str(folder), str(folder / NOT_UTF8)):  # walked, and named
        done = streamfsm("check", *(["--json"] if as_json else ["-v"]), target, env=env)
        assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode(errors="replace")
        out = done.stdout.decode("utf-8")  # strict: nothing undecodable was written
        assert not raw_unsafe(out)
        if as_json:
            report = orjson.loads(out.splitlines()[0])
            assert report["path"] == report["name"] == f"{folder}/{NOT_UTF8_IN_JSON}"
        else:
            assert out.startswith(f"{folder}/{NOT_UTF8_SHOWN}: ok; 2 blocks")


def test_a_missing_name_that_is_not_utf8_is_complained_about_escaped(tmp_path: Path) -> None:
    done = streamfsm("check", str(tmp_path / NOT_UTF8), env={"PYTHONIOENCODING": "utf-8"})
    assert done.returncode == _cli.EXIT_USAGE
    assert done.stderr.decode() == f"streamfsm: {tmp_path}/{NOT_UTF8_SHOWN}: cannot read: No such file or directory\n"


def test_json_text_keeps_the_json_and_escapes_the_rest() -> None:
    value = {"text": HOSTILE, "path": NOT_UTF8, "n": [1, 2.5, None]}
    for indent in (False, True):
        text = _cli_report.json_text(value, indent=indent)
        assert not raw_unsafe(text)
        back = orjson.loads(text)
        assert back["text"] == HOSTILE  # escaping C1 and bidi changes nothing of the JSON's meaning
        assert back["path"] == NOT_UTF8_IN_JSON
        assert back["n"] == [1, 2.5, None]
    assert _cli_report.json_text({"a": [1]}, indent=True) == '{\n  "a": [\n    1\n  ]\n}'


# -- 17: special files -------------------------------------------------------------------------------------------


def test_special_files_in_a_folder_are_skipped_with_a_note(tmp_path: Path) -> None:
    """A FIFO used to hang the walk; a link to /dev/zero was read until a MemoryError."""
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "good.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    os.mkfifo(folder / "b.jsonl")
    (folder / "z.jsonl").symlink_to("/dev/zero")
    server = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(folder)  # a socket's path must be short: bind it by its name
    try:
        server.bind("s.jsonl")
    finally:
        os.chdir(cwd)
    try:
        done = streamfsm("check", "-v", str(folder), timeout=60)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith(f"{folder}/good.jsonl: ok;")
    assert "checked 1 stream in 1 file" in done.stdout.decode()
    assert done.stderr.decode().splitlines() == [
        f"streamfsm: {folder}/b.jsonl: skipped: a FIFO, not a regular file",
        f"streamfsm: {folder}/s.jsonl: skipped: a socket, not a regular file",
        f"streamfsm: {folder}/z.jsonl: skipped: a link to a character device, not a regular file",
    ]


def test_a_folder_of_special_files_only_holds_no_recordings(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "b.jsonl")
    done = streamfsm("check", str(tmp_path), timeout=60)
    assert done.returncode == _cli.EXIT_USAGE
    assert done.stderr.decode().splitlines() == [
        f"streamfsm: {tmp_path}/b.jsonl: skipped: a FIFO, not a regular file",
        f"streamfsm: {tmp_path}: no recordings (*.jsonl, *.ndjson, *.sse, also .gz or .zst) here",
    ]


@pytest.mark.parametrize("how", ["device", "link", "stdin", "assemble"])
def test_a_device_named_is_read_up_to_the_bound_on_a_line(tmp_path: Path, how: str) -> None:
    """``/dev/zero`` is one line that never ends: read up to MAX_LINE_BYTES (128 MiB), then a clear error."""
    link = tmp_path / "z.jsonl"
    link.symlink_to("/dev/zero")
    if how == "stdin":
        with open("/dev/zero", "rb") as zero:
            done, name = streamfsm("check", "-", stdin=zero), "-"
    else:
        name = "/dev/zero" if how in ("device", "assemble") else str(link)
        done = streamfsm("assemble" if how == "assemble" else "check", name)
    assert done.returncode == _cli.EXIT_USAGE
    error = done.stderr.decode()
    assert error == f"streamfsm: {name}: cannot read: line 1 is longer than 128 MiB (a line with no end?)\n"


def test_a_fifo_named_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as pipe:  # waits for the command to open it
            for chunk in SEED_CHUNKS:
                pipe.write(orjson.dumps(chunk) + b"\n")
                pipe.flush()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    done = streamfsm("check", "-v", str(fifo), timeout=60)
    writer.join(10)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith(f"{fifo}: ok; 2 blocks")


def test_bounded_lines() -> None:
    source = io.BytesIO(b"abc\n" + b"x" * 7 + b"\n" + b"y" * 8 + b"\nzz")
    lines = bounded_lines(source, limit=8)
    assert [next(lines), next(lines)] == [b"abc\n", b"x" * 7 + b"\n"]  # 8 bytes with the line end: the bound
    with pytest.raises(LineTooLong, match=r"^line 3 is longer than 8 bytes \(a line with no end\?\)$"):
        next(lines)
    assert list(bounded_lines(io.StringIO("a\nb"), limit=4)) == ["a\n", "b"]
    with pytest.raises(LineTooLong, match=r"^line 2 is longer than 4 bytes"):
        list(bounded_lines(io.StringIO("a\nbcdef"), limit=4))
    assert list(bounded_lines([b"no read\n", b"x"])) == [b"no read\n", b"x"]


class Trickle(io.BytesIO):
    """A binary file whose ``read1`` gives fewer bytes than asked, as a pipe does."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        super().__init__(data)
        self.sizes = sizes

    def read1(self, size: int | None = -1) -> bytes:
        want = -1 if size is None else size
        return super().read1(min(want, self.sizes.pop(0) if self.sizes else want))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\r", b"\r\n", b"\xff"]), max_size=60).map(b"".join),
    st.integers(1, 30),
    st.lists(st.integers(1, 12), max_size=40),
)
def test_bounded_lines_are_the_lines_iterating_gives(data: bytes, limit: int, sizes: list[int]) -> None:
    """The lines iterating the file gives, or LineTooLong at the first longer than the bound (numbered from 1)."""
    lines = list(io.BytesIO(data))
    too_long = next((n for n, line in enumerate(lines, 1) if len(line) > limit), None)
    got: list[bytes] = []
    try:
        for line in bounded_lines(Trickle(data, sizes), limit=limit):
            got.append(line)
    except LineTooLong as exc:
        assert too_long is not None and str(exc).startswith(f"line {too_long} is longer than {limit} bytes")
        assert got == lines[: too_long - 1]
    else:
        assert too_long is None and got == lines


# -- 18: no recognisable stream is no pass -----------------------------------------------------------------------


def test_lines_like_session_events_without_a_header_are_invalid(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Told to be a session log by its first line (an ``x/y`` event with seq and data), it records no stream."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'\n{"type":"block/start","seq":1,"data":{}}\n{"type":"block/end","seq":2,"data":{}}\n')
    status, out, err = run(capsys, "check", str(path))
    assert (status, err) == (_cli.EXIT_INVALID, "")
    assert out.splitlines()[:2] == [
        f"{path}:2: STREAM_TRUNCATED no stream recorded, and no session header (a session log starts with its "
        'header, {"type":"session",...}): not a session log (--format jsonl reads its lines as chunks)',
        '     2 | {"type":"block/start","seq":1,"data":{}}',
    ]
    status, out, _ = run(capsys, "check", "--json", str(path))
    report, summary = (orjson.loads(line) for line in out.splitlines())
    assert (report["kind"], summary["kind"], summary["invalid"]) == ("stream", "summary", 1)
    assert (status, report["ok"], report["code"], report["format"]) == (1, False, "STREAM_TRUNCATED", "harness-session")


def test_the_broken_file_of_the_issue_is_invalid(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A broken JSON-lines file whose first type is block/start: JSON lines, an invalid chunk."""
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b'{"type":"block/start","index":0,"blockType":"text"}\n{"type":"finish"}\n')
    status, out, _ = run(capsys, "check", str(path))
    assert status == _cli.EXIT_INVALID
    assert f"{path}:1: INVALID_CHUNK" in out and "no streams" not in out


def test_chunks_read_as_a_session_log_are_invalid(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS))
    status, out, _ = run(capsys, "check", "--format", "harness-session", str(path))
    assert status == _cli.EXIT_INVALID
    assert out.startswith(f"{path}:1: STREAM_TRUNCATED no stream recorded, and no session header")
    stdin = subprocess.run(
        [sys.executable, "-m", "streamfsm._cli", "check", "--format", "harness-session", "-"],
        input=jsonl(SEED_CHUNKS),
        capture_output=True,
        timeout=120,
        env=child_env(),
    )
    assert stdin.returncode == _cli.EXIT_INVALID
    assert stdin.stdout.decode().startswith("-:1: STREAM_TRUNCATED no stream recorded, and no session header")


@pytest.mark.parametrize("content", [b"", b"\n \n\t\r\n"])
@pytest.mark.parametrize("fmt", ["auto", "jsonl", "harness-session"])
def test_an_empty_or_blank_file_is_a_truncated_stream_in_every_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, fmt: str
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    status, out, _ = run(capsys, "check", "--json", "--format", fmt, str(path))
    report, summary = (orjson.loads(line) for line in out.splitlines())
    assert (report["kind"], summary["kind"], summary["exit"]) == ("stream", "summary", status)
    assert (status, report["ok"], report["code"]) == (_cli.EXIT_INVALID, False, "STREAM_TRUNCATED")
    if fmt == "harness-session":
        assert report["message"].startswith("no stream recorded, and no line with content")
    else:
        assert report["message"].startswith("the input ended after 0 chunk(s) without a finish")


def test_session_logs_with_their_header_and_no_model_turn_still_record_no_streams(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "check", "-v", "--policy", "harness", str(SESSIONS))
    assert len(re.findall(r": no streams recorded$", out, re.MULTILINE)) == 17
    assert re.search(r"^  no streams +- +17$", out, re.MULTILINE)
    empty = next(
        Path(line.split(": no streams recorded")[0])
        for line in out.splitlines()
        if line.endswith("no streams recorded")
    )
    assert run(capsys, "check", str(empty))[0] == _cli.EXIT_OK
    with open(empty, "rb") as log:
        done = streamfsm("check", "-v", "-", stdin=log)
    assert (done.returncode, done.stdout.decode().splitlines()[0]) == (0, "-: no streams recorded")


# -- 19: text that could drive the terminal ----------------------------------------------------------------------


def test_printable_escapes_controls_c1_and_bidi() -> None:
    assert printable("a\x1b[2J\x9b\u202eb\u2066\u200e\u061c\u2028\n\t") == (
        "a\\x1b[2J\\x9b\\u202eb\\u2066\\u200e\\u061c\\u2028\\n\\t"
    )
    assert printable("one\ntwo\tthree\r\x1b", lines=True) == "one\ntwo\tthree\\r\\x1b"
    assert printable(os.fsdecode(b"\xff") + "\ud800") == "\\xff\\ud800"
    assert printable("é 教程 ✓") == "é 教程 ✓"


def hostile_stream() -> list[dict[str, Any]]:
    text = f"hello {HOSTILE} world"
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


@pytest.mark.parametrize("compact", [False, True])
def test_assemble_escapes_what_could_drive_the_terminal(tmp_path: Path, compact: bool) -> None:
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(jsonl(hostile_stream()))
    done = streamfsm("assemble", *(["--compact"] if compact else []), str(path))
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert not raw_unsafe(out), raw_unsafe(out)
    assert "\\u009b31m\\u202eevil\\u2066\\u200f" in out
    assert orjson.loads(out)["blocks"][0]["text"] == f"hello {HOSTILE} world"  # the same JSON


def test_check_escapes_what_could_drive_the_terminal(tmp_path: Path) -> None:
    chunks = hostile_stream()
    chunks.insert(3, {"type": "text-delta", "index": 0, "text": HOSTILE})  # after its block ended
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(jsonl(chunks))
    for argv in (["check"], ["check", "--json"], ["check", "--policy", "harness"]):
        done = streamfsm(*argv, str(path))
        out = done.stdout.decode()
        assert done.returncode == _cli.EXIT_INVALID
        assert not raw_unsafe(out), (argv, raw_unsafe(out))
    harness = [
        {"type": "block-start", "index": 0, "blockType": f"odd{HOSTILE}"},
        {"type": "block-end", "index": 0, "block": {"type": f"odd{HOSTILE}"}},
        {"type": "finish", "reason": {"kind": f"odd{HOSTILE}"}},
    ]
    path.write_bytes(jsonl(harness))
    done = streamfsm("check", "--policy", "harness", str(path))
    assert not raw_unsafe(done.stdout.decode())


def test_the_demo_escapes_what_the_endpoint_sends(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model could retitle (OSC 0), clear (CSI 2J), recolour (C1 CSI) or reorder (U+202E) the user's terminal."""

    def turn(delta: dict[str, Any], finish: str) -> list[dict[str, Any]]:
        usage = {"prompt_tokens": 40, "completion_tokens": 9}
        return [
            {"choices": [{"index": 0, "delta": delta}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
        ]

    call = {
        "index": 0,
        "id": f"call{HOSTILE}",
        "function": {"name": "bash", "arguments": f'{{"command": "ls {HOSTILE}"}}'},
    }
    with SSEServer() as server:
        server.script(
            SSE(openai_events(turn({"tool_calls": [call]}, "tool_calls"))),
            SSE(openai_events(turn({"content": f"line one{HOSTILE}\nline two"}, "stop"))),
        )
        monkeypatch.setenv("STREAMFSM_API_KEY", "sk-demo")
        status, out, err = run(capsys, "demo", "--base-url", server.url, "--model", f"m{HOSTILE}")
    assert status == 0, err
    assert not raw_unsafe(out), raw_unsafe(out)
    assert "line one\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil\\u2066\\u200f\\r\nline two" in out
    assert "→ tool call call\\x1b]0;pwned" in out and "streamfsm demo: m\\x1b]0;pwned" in out


# -- 19: Ctrl-C at any moment ------------------------------------------------------------------------------------


#: A probe the children load at their start (as ``sitecustomize``, which ``site`` imports before the program runs):
#: it watches every import. It writes ``guarded`` to standard error at the first import once the command's start-up
#: guard (``streamfsm._startup``) has SIGINT; with ``PROBE_SIGINT_AT=<module>`` it sends SIGINT to its own process
#: as that module is imported; with ``PROBE_LOG=<file>`` it writes there each import and whether the guard had SIGINT.
PROBE = """
import os, sys, _signal
_at, _log, _marked = os.environ.get("PROBE_SIGINT_AT"), os.environ.get("PROBE_LOG"), [False]
class _Probe:
    def find_spec(self, name, path=None, target=None):
        guarded = getattr(_signal.getsignal(_signal.SIGINT), "__module__", None) == "streamfsm._startup"
        if guarded and not _marked[0]:
            _marked[0] = True
            os.write(2, b"guarded\\n")
        if _log:
            with open(_log, "a") as log:
                log.write(f"{name} {int(guarded)}\\n")
        if name == _at:
            os.kill(os.getpid(), _signal.SIGINT)
        return None
sys.meta_path.insert(0, _Probe())
"""

#: What loads before the guard has SIGINT: the interpreter's ``runpy`` (for ``-m``), the package (whose
#: ``__init__`` imports nothing: its names load on first use), and the entry modules up to ``_startup``.
ENTRY = {"runpy", "_signal", "streamfsm", "streamfsm.__main__", "streamfsm._cli", "streamfsm._startup"}

INTERRUPTED = b"streamfsm: interrupted\n"


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a probed child: the probe first on its path, and its bytecode written (to a folder of its
    own) as an installed package's is, so that a child does not compile the command's modules at each start."""
    folder = tmp_path_factory.mktemp("probe")
    (folder / "sitecustomize.py").write_text(PROBE)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    env = child_env(PYTHONPATH=path, PYTHONPYCACHEPREFIX=str(folder / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for argv in STARTS.values():  # once, to write the bytecode
        subprocess.run([*argv(), "--version"], stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=120)
    return env


#: The command as a user starts it: ``python -m streamfsm``, and the ``streamfsm`` script.
STARTS = {
    "python -m streamfsm": lambda: [sys.executable, "-m", "streamfsm"],
    "the streamfsm script": lambda: [console_script()],
}


def imports(argv: list[str], env: dict[str, str], tmp_path: Path) -> list[tuple[str, bool]]:
    """The modules the command imports as it checks an empty standard input, in order, each with whether the
    start-up guard had SIGINT then."""
    log = tmp_path / "imports.txt"
    done = subprocess.run(
        [*argv, "check", "-"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**env, "PROBE_LOG": str(log)},
        timeout=120,
    )
    assert done.returncode == _cli.EXIT_INVALID, done.stderr  # an empty stream: truncated
    return [(name, guarded == "1") for name, guarded in (line.split() for line in log.read_text().splitlines())]


@pytest.mark.slow
@pytest.mark.parametrize("start", STARTS.values(), ids=STARTS.keys())
def test_ctrl_c_at_every_moment_of_start_up(start: Any, probed: dict[str, str], tmp_path: Path) -> None:
    """A SIGINT sent as the command imports each of its modules (its own, pydantic's, orjson's, ...): exit 130,
    one line, no traceback, and no crash. Only the entry modules load before the guard has SIGINT.

    A Ctrl-C while the command's modules import is answered once they are done: an exception raised inside an
    extension module's initialisation crashed the interpreter (orjson's, importing ``datetime``: SIGSEGV), and
    before the package imported its modules on first use, a Ctrl-C in the first ~0.3 s gave Python's traceback.
    """
    argv = start()
    seen = imports(argv, probed, tmp_path)
    first = next(k for k, (_, guarded) in enumerate(seen) if guarded)  # (main hands SIGINT back to Python later)
    before, after = [name for name, _ in seen[:first]], [name for name, _ in seen[first:]]
    assert set(before) <= ENTRY, before
    names = set(after)
    for heavy in ("orjson", "datetime", "pydantic", "pydantic_core._pydantic_core", "streamfsm._machine", "argparse"):
        assert heavy in names, heavy  # each loads once the guard is there
    # Every module from the guard on is a moment to interrupt; a sample of them, the heavy ones included.
    extensions = {"orjson", "datetime", "uuid", "pydantic_core._pydantic_core"} & names  # (orjson imports the others)
    moments = {*after[:3], *after[::10], *after[-3:], *extensions}
    for module in sorted(moments):
        done = subprocess.run(
            [*argv, "check", "-"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env={**probed, "PROBE_SIGINT_AT": module},
            timeout=120,
        )
        assert (done.returncode, done.stderr) == (_cli.EXIT_INTERRUPTED, b"guarded\n" + INTERRUPTED), module


@pytest.mark.parametrize("start", STARTS.values(), ids=STARTS.keys())
def test_ctrl_c_at_any_moment_of_start_up(start: Any, probed: dict[str, str]) -> None:
    """SIGINT at 0, 0.02, 0.05, 0.1, 0.2 and 0.5 s after the start of ``check -`` on a pipe that never ends, and
    once it waits on it: from the moment the start-up guard has SIGINT (the probe says ``guarded``), exit 130 with
    one line and no traceback.

    Before that moment nothing of the command runs, and Python answers as it does for any program: the
    interpreter's own start (killed by SIGINT before it takes signals; a traceback from its ``site`` import) and
    the loading of the entry modules (a fraction of a millisecond: ``test_ctrl_c_at_every_moment_of_start_up``
    shows nothing else loads before the guard). Every start that reached the guard is checked strictly.
    """
    for delay in (0, 0.02, 0.05, 0.1, 0.2, 0.5, None):
        child = subprocess.Popen(
            [*start(), "check", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=probed
        )
        try:
            if delay is None:
                wait_until_blocked(child.pid, "pipe")  # reading standard input: the command runs
            else:
                time.sleep(delay)
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=60)
        finally:
            child.kill()
        if b"Error processing line" in err.partition(b"guarded")[0] and b"KeyboardInterrupt" in err:
            # The interrupt landed in the interpreter's ``site`` as it read a .pth file (the editable install's):
            # site reports it and goes on, so the command runs, on the pipe communicate() closed: an empty input.
            assert (child.returncode, out[:21]) == (1, b"-: STREAM_TRUNCATED t"), (delay, err)
        elif b"guarded" in err or delay is None:
            assert (child.returncode, out, err) == (_cli.EXIT_INTERRUPTED, b"", b"guarded\n" + INTERRUPTED), delay
        else:  # before the guard: the interpreter's answer, killed by SIGINT or its own traceback
            assert child.returncode in (-signal.SIGINT, 1) and out == b"", (delay, child.returncode, err)


def wait_until_blocked(pid: int, where: str = "partner", seconds: float = 60) -> None:
    """Until the process waits in the kernel where ``where`` says (``/proc/PID/wchan``): ``partner`` in ``open()``
    for a FIFO's writer, ``pipe`` in a read of an empty pipe. The command's code runs, and would wait for ever."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if where in Path(f"/proc/{pid}/wchan").read_text():
            return
        time.sleep(0.02)
    raise AssertionError(f"the command never waited ({where})")


def test_ctrl_c_while_a_named_fifo_waits_for_its_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "never.jsonl"
    os.mkfifo(fifo)
    child = subprocess.Popen(
        [sys.executable, "-m", "streamfsm._cli", "check", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    try:
        wait_until_blocked(child.pid)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert (child.returncode, out, err) == (_cli.EXIT_INTERRUPTED, b"", b"streamfsm: interrupted\n")


@pytest.mark.parametrize("argv", [["-m", "streamfsm", "demo"], ["-m", "streamfsm._cli", "demo"]])
def test_ctrl_c_in_the_demo(argv: list[str]) -> None:
    """The demo pauses between chunks; interrupted there it says so in one line (it printed a traceback)."""
    child = subprocess.Popen(
        [sys.executable, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(PYTHONUNBUFFERED="1"),
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().startswith(b"streamfsm demo:")  # it runs
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert (child.returncode, err) == (_cli.EXIT_INTERRUPTED, b"streamfsm: interrupted\n")


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (Linux: ``/proc/PID/task/*/children``), children first."""
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            found.extend(int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
    return found + [below for child in found for below in descendants(child)]


def all_ignore_sigint(pids: list[int]) -> bool:
    """Whether each of ``pids`` ignores SIGINT (its bit in ``SigIgn`` of ``/proc/PID/status``); a process gone
    counts as ignoring it."""
    for pid in pids:
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{pid}/status").read_text()
            ignored = int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
            if not ignored & (1 << (signal.SIGINT - 1)):
                return False
    return bool(pids)


def test_ctrl_c_from_the_terminal_while_workers_check(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the whole process group: the workers leave it to the command (no tracebacks).

    A worker is held reading a FIFO (named on the command line, it is read) until the Ctrl-C is sent: the run cannot
    have ended before, however fast or slow the machine."""
    line = orjson.dumps({"type": "text-delta", "index": 0, "text": "x" * 40}) + b"\n"
    files = tmp_path / "files"
    files.mkdir()
    for n in range(8):
        (files / f"{n:02}.jsonl").write_bytes(line * 1_000)
    fifo = tmp_path / "held.jsonl"
    os.mkfifo(fifo)
    child = subprocess.Popen(
        [sys.executable, "-m", "streamfsm._cli", "check", "-j", "2", str(fifo), str(files)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=child_env(),
        start_new_session=True,
    )
    writer = -1
    try:
        deadline = time.monotonic() + 60
        while writer < 0 and time.monotonic() < deadline:
            try:  # succeeds once a reader has the FIFO open: a worker is checking it
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.02)
        assert writer >= 0, "no worker opened the FIFO"
        os.write(writer, line)
        # Every process below the command leaves Ctrl-C to it: a worker still starting would not yet.
        while not all_ignore_sigint(descendants(child.pid)) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(child.pid, signal.SIGINT)
        _, err = child.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):  # the whole group: a worker left behind would wait for ever
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        if writer >= 0:
            os.close(writer)
    assert (child.returncode, err) == (_cli.EXIT_INTERRUPTED, b"streamfsm: interrupted\n")


# ====================================================================================================================
# ``streamfsm check`` as a user meets it: ``--json``'s objects, the exit codes in ``check --help``, errors that point
# at the line as written (a column of that line; the line echoed from the file's own bytes), and the progress bar,
# which holds what is printed between its redraws and writes it above the bar in one go.
# ====================================================================================================================


#: A session log with its header and no model turn: it records no stream.
NO_TURN = SESSIONS / "acp-agent--goal-snapshots--goal-round-driver.jsonl"


def objects(out: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in out.splitlines()]


# -- --json -------------------------------------------------------------------------------------------


def test_json_gives_an_object_per_stream_per_file_without_one_and_a_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = copy.deepcopy(SEED_CHUNKS)
    bad.insert(4, {"type": "text-delta", "index": 0, "text": "!"})
    (tmp_path / "a-good.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    (tmp_path / "b-bad.jsonl").write_bytes(jsonl(bad))
    shutil.copy(NO_TURN, tmp_path / "c-no-turn.jsonl")
    (tmp_path / "d-unknown.sse").write_bytes(b'data: {"what": 1}\n\n')
    status, out, err = run(capsys, "check", "--json", "--policy", "harness", str(tmp_path))
    found = objects(out)
    assert [(o["kind"], Path(str(o.get("path", ""))).name) for o in found] == [
        ("stream", "a-good.jsonl"),
        ("stream", "b-bad.jsonl"),
        ("file", "c-no-turn.jsonl"),
        ("file", "d-unknown.sse"),
        ("summary", ""),
    ]
    assert found[2] == {
        "kind": "file",
        "path": str(tmp_path / "c-no-turn.jsonl"),
        "format": "harness-session",
        "streams": 0,
        "error": None,
    }
    assert found[3]["format"] is None and str(found[3]["error"]).startswith("cannot tell the format")
    assert found[4] == {
        "kind": "summary",
        "policy": "harness",
        "files": 4,
        "streams": 2,
        "ok": 1,
        "invalid": 1,
        "codes": {"BLOCK_NOT_OPEN": {"streams": 1, "files": 1}},
        "ok_files": 1,
        "empty_files": 1,
        "unreadable_files": 1,
        "exit": _cli.EXIT_USAGE,
    }
    assert status == _cli.EXIT_USAGE
    assert "d-unknown.sse: cannot tell the format" in err  # said on standard error too, as without --json


def test_the_summary_object_is_the_same_for_the_same_files(capsys: pytest.CaptureFixture[str]) -> None:
    """No time in it: a run in worker processes prints what a run in this process prints, byte for byte."""
    _, serial, _ = run(capsys, "check", "--json", "--policy", "harness", "-j", "1", str(SESSIONS))
    _, parallel, _ = run(capsys, "check", "--json", "--policy", "harness", "-j", "2", str(SESSIONS))
    assert serial == parallel
    summary = objects(serial)[-1]
    assert (summary["kind"], summary["files"], summary["streams"], summary["empty_files"]) == ("summary", 121, 283, 17)


# -- --help ---------------------------------------------------------------------------------------------


def test_check_help_lists_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _cli.main(["check", "--help"])
    out = capsys.readouterr().out
    listed = dict(re.findall(r"^  (\d+) +(\S.*)$", out.split("exit status:", 1)[1], re.MULTILINE))
    assert listed.keys() == {"0", "1", "2", "130", "141"}
    assert listed["1"] == "at least one stream is invalid"
    assert '"kind": "summary"' in out  # --json says what it prints


# -- errors point at the line as written ----------------------------------------------------------------


def test_a_line_cut_short_is_pointed_at_as_a_column_of_that_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS[:2]) + b'{"type":"text-delta","index":0,\n')
    status, out, _ = run(capsys, "check", "--color", "never", str(path))
    assert status == _cli.EXIT_INVALID
    first, echo = out.splitlines()[:2]
    assert first.startswith(f"{path}:3: INVALID_CHUNK invalid chunk: line is not JSON (unexpected end of data at the")
    assert "at the end of the line, column 32)" in first and "line 2" not in first
    assert echo == '     3 | {"type":"text-de\u2026'  # a line that is not JSON: its start only (no file is echoed)


def test_the_echo_is_the_line_as_written_not_the_chunk_reserialised(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    written = '{ "type" : "text-delta",  "index": 1, "text" : "caf\\u00e9" }'
    path = tmp_path / "spaced.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS[:1]) + written.encode() + b"\r\n")
    status, out, _ = run(capsys, "check", "--color", "never", str(path))
    assert status == _cli.EXIT_INVALID
    assert out.splitlines()[1] == f"     2 | {written}"
    _, out, _ = run(capsys, "check", "--json", str(path))
    assert objects(out)[0]["chunk"] == written


def test_a_session_logs_echo_is_its_event_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    lines = [
        b'{"type":"session","seq":0,"data":{}}',
        b'{"type":"assistant/chunk","seq":1,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,'
        b'"blockType":"text"}}}',
        b'{"type":"assistant/chunk", "seq":2, "data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":3,'
        b'"text":"x"}}}',
        b'{"type":"tool/result","seq":3,"data":{}}',
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    status, out, _ = run(capsys, "check", "--json", "--format", "harness-session", str(path))
    assert status == _cli.EXIT_INVALID
    assert objects(out)[0]["chunk"] == lines[2].decode()


def test_a_long_lines_echo_is_its_start(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The reader keeps at most the start of the line it is on: a report quotes that much, marked as cut."""
    line = b'{"type":"text-delta","index":2,"text":"' + b"x" * 100_000 + b'"}'
    path = tmp_path / "long.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS[:1]) + line + b"\n")
    _, out, _ = run(capsys, "check", "--json", str(path))
    chunk = str(objects(out)[0]["chunk"])
    assert chunk.startswith(line[:150].decode()) and chunk.endswith("\u2026") and len(chunk) <= 201


# -- the progress bar -------------------------------------------------------------------------------------


def test_the_progress_bar_writes_the_lines_in_batches_above_it(tmp_path: Path) -> None:
    """Every file's line, in order, none lost; the bar redrawn far less often than once a file; gone at the end."""
    files = 300
    for i in range(files):
        (tmp_path / f"{i:03d}.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    (tmp_path / "150-unknown.sse").write_bytes(b'data: {"what": 1}\n\n')
    started = time.monotonic()
    status, shown = on_a_terminal("check", "-v", "--color", "never", ".", cwd=tmp_path)
    took = time.monotonic() - started
    assert status == _cli.EXIT_USAGE
    redraws = shown.count("checking ")
    # Drawn at the first file, then at most once a REDRAW (a tenth of a second): on a machine of any speed.
    assert 1 <= redraws <= min(files, took / _progress.REDRAW + 2)
    # Each redraw takes the bar off with spaces over it (no erase sequence: any console clears it so).
    drawn = re.findall(r"(checking [^\r\n]*)\r( *)\r", shown)
    assert len(drawn) == redraws and all(len(spaces) == len(bar) for bar, spaces in drawn)
    text = re.sub(r"checking [^\r\n]*\r *\r", "\n", shown)
    lines = [line for line in text.replace("\r\n", "\n").split("\n") if line]
    named = [line.split(":", 1)[0] for line in lines if ".jsonl: ok;" in line or "unknown.sse" in line]
    expected = [f"./{i:03d}.jsonl" for i in range(files)]
    expected.insert(150, "streamfsm")  # the complaint (standard error), where the file came
    assert named == expected
    assert "checked 300 streams in 301 files" in shown

"""The ``streamfsm`` command, run as a user runs it: over the recordings in tests/fixtures and broken files made
here."""

from __future__ import annotations

import copy
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm import _cli, _cli_report

from .conftest import FIXTURES, PROVIDER_STREAMS, SEED_CHUNKS, SESSIONS

ROOT = Path(__file__).resolve().parents[1]

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


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``streamfsm ARGV`` in this process: exit status, standard output, standard error."""
    status = _cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def command(
    *argv: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m streamfsm._cli ARGV`` in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "streamfsm._cli", *argv],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(**(env or {})),
    )


def console_script() -> str:
    """The ``streamfsm`` script installed beside this interpreter (``pip install -e .`` installs it)."""
    script = shutil.which("streamfsm", path=str(Path(sys.executable).parent))
    assert script is not None, "the console script is not installed (pip install -e .)"
    return script


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child run as a user runs it: buffered output, no colour settings of ours."""
    drop = ("NO_COLOR", "FORCE_COLOR", "PYTHONUNBUFFERED")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def jsonl(chunks: list[Any]) -> bytes:
    return b"".join(orjson.dumps(c) + b"\n" for c in chunks)


def reports(out: str) -> list[dict[str, Any]]:
    """The stream objects of ``check --json`` output without their ``kind`` (its file and summary objects left out), or
    the objects ``assemble`` printed (which have no ``kind``)."""
    objects = [orjson.loads(line) for line in out.splitlines()]
    return [{k: v for k, v in o.items() if k != "kind"} for o in objects if o.get("kind", "stream") == "stream"]


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
    status, out, err = run(capsys, "check", str(good))
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


def test_a_missing_file_is_a_usage_error_and_the_others_are_still_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, good: Path
) -> None:
    missing = tmp_path / "missing.jsonl"
    status, out, err = run(capsys, "check", str(missing), str(good))
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
    status, out, _ = run(capsys, "check", str(torn), str(tool))
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
    assert orjson.loads(out) == sf.assemble(SEED_CHUNKS).to_wire()
    assert out.startswith("{\n  ")
    status, out, err = run(capsys, "assemble", "--compact", str(bad))
    assert (status, out) == (1, "")
    assert err.startswith(f"{bad}:5: BLOCK_NOT_OPEN")


def test_assemble_a_session_log(capsys: pytest.CaptureFixture[str]) -> None:
    path = SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl"
    streams = list(sf.read_session(path))
    expected = [sf.assemble(s.chunks, policy="harness").to_wire() for s in streams]
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
    assert orjson.loads(out) == sf.assemble(sf.from_openai_chunks(events)).to_wire()


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
    from .sse_server import SSE, SSEServer, openai_events

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
    assert (version.returncode, version.stdout) == (0, f"streamfsm {sf.__version__}\n")
    bare = module()
    assert bare.returncode == _cli.EXIT_USAGE and bare.stdout == "" and "COMMAND" in bare.stderr
    demo = module("demo", "--fast")
    assert demo.returncode == 0 and "rejected: BLOCK_NOT_OPEN at chunk 4" in demo.stdout


def test_the_console_script() -> None:
    script = console_script()
    done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout == f"streamfsm {sf.__version__}\n"
    done = subprocess.run([script, "diagram"], capture_output=True, text=True, timeout=60)
    assert done.stdout == sf.diagram()


# -- colours and the terminal ------------------------------------------------------------------------


def test_colours_only_when_wanted(bad: Path) -> None:
    assert "\x1b[" not in command("check", str(bad)).stdout  # not a terminal
    assert "\x1b[31;1mBLOCK_NOT_OPEN\x1b[0m" in command("check", "--color", "always", str(bad)).stdout
    assert "\x1b[" not in command("check", "--color", "always", str(bad), env={"NO_COLOR": "1"}).stdout


def on_a_terminal(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str]:
    """Run the command with standard output and error on a pseudo-terminal: its status, and what it wrote there."""
    pty = pytest.importorskip("pty")
    main, child = pty.openpty()
    done = subprocess.Popen(
        [sys.executable, "-m", "streamfsm._cli", *argv],
        stdout=child,
        stderr=child,
        stdin=subprocess.DEVNULL,
        env=child_env(COLUMNS="160", TERM="xterm", **(env or {})),
        cwd=cwd,
    )
    os.close(child)
    chunks: list[bytes] = []
    try:
        while data := os.read(main, 65536):
            chunks.append(data)
    except OSError:  # EIO: the child has closed the terminal
        pass
    os.close(main)
    return done.wait(timeout=120), b"".join(chunks).decode()


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
        for _ in range(600):  # until it waits for its input, i.e. runs the command
            if "pipe_read" in Path(f"/proc/{child.pid}/wchan").read_text():
                break
            time.sleep(0.05)
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
    from .test_docs import fenced

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
        "streamfsm check --policy harness tests/fixtures/harness-sessions",
    }
    broken = copy.deepcopy(SEED_CHUNKS)
    (tmp_path / "broken.jsonl").write_bytes(
        jsonl([*broken[:4], {"type": "text-delta", "index": 0, "text": "!"}, *broken[4:]])
    )
    for cmd, shown in examples:
        argv = cmd.split()[1:]
        cwd = ROOT if "tests/fixtures/harness-sessions" in argv else tmp_path
        done = subprocess.run(
            [sys.executable, "-m", "streamfsm._cli", *argv], capture_output=True, text=True, cwd=cwd, timeout=120
        )
        assert done.returncode == 1, done.stderr
        assert re.fullmatch(shown_as_pattern(shown), done.stdout), (cmd, done.stdout[-2000:])

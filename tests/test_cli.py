"""The ``streamfsm`` command, run as a user runs it: over the recordings in ../shared and broken files made here."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm import _cli

from .conftest import PROVIDER_STREAMS, SEED_CHUNKS, SESSIONS

ROOT = Path(__file__).resolve().parents[1]
needs_sessions = pytest.mark.skipif(not SESSIONS.is_dir(), reason=f"the recordings folder {SESSIONS} is absent")
needs_provider_streams = pytest.mark.skipif(
    not PROVIDER_STREAMS.is_dir(), reason=f"the provider recordings folder {PROVIDER_STREAMS} is absent"
)

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
    "turn",
    "step",
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
        env={**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, **(env or {})},
    )


def jsonl(chunks: list[Any]) -> bytes:
    return b"".join(orjson.dumps(c) + b"\n" for c in chunks)


def reports(out: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in out.splitlines()]


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
    assert len(chunk_line) <= _cli.DEFAULT_WIDTH and chunk_line.endswith("\u2026")
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


@needs_sessions
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


# -- check: the recordings ----------------------------------------------------------------------------


@needs_sessions
@pytest.mark.parametrize(
    ("policy", "outcomes"),
    [
        ("harness", Counter({"ok": 281, "STREAM_TRUNCATED": 1, "BLOCK_NOT_OPEN": 1})),
        (
            "strict",
            Counter(
                {"ok": 143, "BLOCKS_INTERLEAVED": 136, "USAGE_MISSING": 2, "STREAM_TRUNCATED": 1, "BLOCK_NOT_OPEN": 1}
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
    assert Counter(r["code"] or "ok" for r in found) == outcomes
    if policy == "harness":
        rejected = {Path(r["path"]).name: r["code"] for r in found if not r["ok"]}
        assert rejected == {
            "acp-agent--snapshots--cancel.jsonl": "STREAM_TRUNCATED",
            "test-support--acp-snapshot--fixtures--suite--plain-turn.jsonl": "BLOCK_NOT_OPEN",
        }


@needs_sessions
def test_the_summary_table(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "check", "--quiet", "--policy", "harness", str(SESSIONS))
    assert status == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{SESSIONS}/acp-agent--snapshots--cancel.jsonl:12: STREAM_TRUNCATED")
    at = next(i for i, line in enumerate(lines) if line.startswith("checked "))
    assert lines[at].startswith("checked 283 streams in 121 files (policy harness) in ")
    assert lines[at].endswith(" s: 281 ok, 2 invalid")
    assert [line.split() for line in lines[at + 2 :]] == [
        ["outcome", "code", "streams", "files"],
        ["ok", "281", "102"],
        ["invalid", "BLOCK_NOT_OPEN", "1", "1"],
        ["invalid", "STREAM_TRUNCATED", "1", "1"],
        ["no", "streams", "-", "17"],
    ]


@needs_sessions
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


@needs_sessions
def test_in_parallel_the_same_as_one_at_a_time(capsys: pytest.CaptureFixture[str]) -> None:
    _, serial, _ = run(capsys, "check", "--json", "-j", "1", str(SESSIONS))
    status, parallel, err = run(capsys, "check", "--json", "-j", "2", str(SESSIONS))
    assert status == 1, err
    assert parallel == serial


@needs_provider_streams
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


@needs_provider_streams
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


def test_an_sse_body_of_no_known_provider(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "other.sse"
    path.write_bytes(b'data: {"hello": 1}\n\n')
    status, _, err = run(capsys, "check", str(path))
    assert status == 2
    assert "cannot tell the format" in err and "--format" in err


@needs_provider_streams
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


@needs_sessions
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


@needs_provider_streams
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
    from streamfsm.__main__ import main as demo

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
            SSE(openai_events(turn(listing, "tool_calls"))), SSE(openai_events(turn({"content": "A README."}, "stop")))
        )
        monkeypatch.setenv("STREAMFSM_API_KEY", "sk-demo")
        assert demo(["--base-url", server.url, "--model", "deepseek-chat"]) == 0
        first, second = (request.json() for request in server.requests)
    out = capsys.readouterr().out
    assert "→ tool call call_1: bash" in out and "A README." in out and "done: stop" in out
    assert server.requests[0].headers["authorization"] == "Bearer sk-demo"
    assert first["model"] == "deepseek-chat" and first["tools"][0]["function"]["name"] == "bash"
    assert second["messages"][-1]["role"] == "tool" and "README.md" in second["messages"][-1]["content"]


def test_demo_without_a_key_says_what_it_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from streamfsm.__main__ import main as demo

    for name in ("STREAMFSM_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert demo(["--base-url", "http://127.0.0.1:9", "--model", "m"]) == 2
    assert "STREAMFSM_API_KEY" in capsys.readouterr().err


def test_the_console_script() -> None:
    script = shutil.which("streamfsm", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the console script is not installed (pip install -e .)")
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


def on_a_terminal(*argv: str, no_color: bool) -> str:
    """Run the command with standard output and error on a pseudo-terminal; what it wrote there."""
    pty = pytest.importorskip("pty")
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update({"COLUMNS": "160", "TERM": "xterm", **({"NO_COLOR": "1"} if no_color else {})})
    main, child = pty.openpty()
    done = subprocess.Popen(
        [sys.executable, "-m", "streamfsm._cli", *argv], stdout=child, stderr=child, stdin=subprocess.DEVNULL, env=env
    )
    os.close(child)
    chunks: list[bytes] = []
    try:
        while data := os.read(main, 65536):
            chunks.append(data)
    except OSError:  # EIO: the child has closed the terminal
        pass
    os.close(main)
    assert done.wait(timeout=120) == 1
    return b"".join(chunks).decode()


def colours(text: str) -> list[str]:
    """The ANSI colour codes (not bold or dim) in ``text``."""
    codes = re.findall(r"\x1b\[([0-9;]*)m", text)
    return [c for c in codes if any(30 <= int(n) <= 37 or 90 <= int(n) <= 97 for n in c.split(";") if n)]


@needs_sessions
def test_on_a_terminal_colours_a_table_and_a_progress_bar() -> None:
    pytest.importorskip("rich")
    shown = on_a_terminal("check", "--quiet", "--policy", "harness", str(SESSIONS), no_color=False)
    assert "checked 283 streams in 121 files (policy harness)" in shown
    assert "STREAM_TRUNCATED" in shown and "\u2500" in shown  # the rich table's rule
    assert "checking" in shown  # the progress bar, on standard error
    assert colours(shown)
    plain = on_a_terminal("check", "--quiet", "--policy", "harness", str(SESSIONS), no_color=True)
    assert "checked 283 streams" in plain
    assert not colours(plain)


def test_the_plain_summary() -> None:
    summary = _cli.Summary("strict", files=3, streams=4, ok=2, ok_files=1, unreadable=1, seconds=0.5)
    summary.codes.update({"BLOCK_NOT_OPEN": 2})
    summary.code_files.update({"BLOCK_NOT_OPEN": 1})
    text = _cli.format_summary(summary, _cli.Style(False))
    assert text.splitlines() == [
        "checked 4 streams in 3 files (policy strict) in 0.50 s: 2 ok, 2 invalid, 1 unreadable",
        "",
        "  outcome     code            streams  files",
        "  ok                                2      1",
        "  invalid     BLOCK_NOT_OPEN        2      1",
        "  unreadable                        -      1",
    ]


# -- the README -----------------------------------------------------------------------------------------


def readme_examples() -> list[tuple[str, str]]:
    """``(command, shown output)`` of each README text block that starts with ``$ streamfsm``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```text\n\$ (streamfsm [^\n]*)\n(.*?)```", readme, flags=re.DOTALL)
    return [(cmd, shown) for cmd, shown in blocks]


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
    assert len(examples) == 2
    broken = copy.deepcopy(SEED_CHUNKS)
    (tmp_path / "broken.jsonl").write_bytes(
        jsonl([*broken[:4], {"type": "text-delta", "index": 0, "text": "!"}, *broken[4:]])
    )
    for cmd, shown in examples:
        argv = cmd.split()[1:]
        if "../shared/fixtures/harness-sessions" in argv:
            if SESSIONS.resolve() != (ROOT / ".." / "shared" / "fixtures" / "harness-sessions").resolve():
                continue  # the README names ../shared as it lies next to the repository
            cwd = ROOT
        else:
            cwd = tmp_path
        done = subprocess.run(
            [sys.executable, "-m", "streamfsm._cli", *argv], capture_output=True, text=True, cwd=cwd, timeout=120
        )
        assert done.returncode == 1, done.stderr
        assert re.fullmatch(shown_as_pattern(shown), done.stdout), (cmd, done.stdout[-2000:])

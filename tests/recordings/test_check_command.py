"""``streamfsm check`` as a user meets it: ``--json``'s objects, the exit codes in ``check --help``, errors that point
at the line as written (a column of that line; the line echoed from the file's own bytes), and the progress bar,
which holds what is printed between its redraws and writes it above the bar in one go."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import orjson
import pytest

from streamfsm import _cli

from ..cli_support import jsonl, on_a_terminal, run
from ..data import SEED_CHUNKS, SESSIONS

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
    status, shown = on_a_terminal("check", "--color", "never", ".", cwd=tmp_path)
    assert status == _cli.EXIT_USAGE
    redraws = shown.count("checking ")
    assert 1 <= redraws < files // 3  # drawn at the first file, then at most ten times a second
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

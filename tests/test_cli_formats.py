"""``streamfsm check`` and ``assemble`` over every wire API's recordings: six formats, told apart by ``auto``,
from files and from standard input, as JSON lines of events or as SSE bodies; and what a turn kept for replay."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm import _cli
from streamfsm._providers import recorded

from .conftest import FIXTURES, MORE_PROVIDER_STREAMS, PROVIDER_STREAMS

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


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``streamfsm ARGV`` in this process: exit status, standard output, standard error."""
    status = _cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, data: bytes, *argv: str
) -> tuple[int, str, str]:
    """``streamfsm ARGV`` in this process, with ``data`` on standard input."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    return run(capsys, *argv)


def reports(out: str) -> list[dict[str, Any]]:
    """The stream objects of ``check --json`` output without their ``kind`` (its file and summary objects left out), or
    the objects ``assemble`` printed (which have no ``kind``)."""
    objects = [orjson.loads(line) for line in out.splitlines()]
    return [{k: v for k, v in o.items() if k != "kind"} for o in objects if o.get("kind", "stream") == "stream"]


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
    assert len(RECORDINGS) == 40
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
        [sys.executable, "-m", "streamfsm._cli", "check", "-"], input=body, capture_output=True, timeout=120
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
def test_a_format_given(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
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
    status, out, _ = run(capsys, "check", str(path))
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
    status, out, _ = run(capsys, "check", str(path))
    assert status == 0
    assert "25 provider blocks kept for replay: reasoning (7), web_search_call (6), url_citation (12)" in out


def test_assemble_says_what_was_kept_on_standard_error(capsys: pytest.CaptureFixture[str]) -> None:
    path = ANTHROPIC_BLOCKS / "anthropic-advisor-stop-reasons.jsonl"
    result = library_report(path)
    status, out, err = run(capsys, "assemble", "--compact", str(path))
    assert status == 0
    assert orjson.loads(out) == result.to_wire()  # standard output stays the JSON
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

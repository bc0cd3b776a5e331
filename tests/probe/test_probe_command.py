"""``streamfsm probe``: the table, ``--json``, ``--junit-xml``, ``--cases``, the exit status; and the endpoints that
cannot be probed at all, each told in one line, without a traceback."""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

import streamfsm as sf

from ..cli_support import run
from ..sse_server import SSE, Raw, Recorded, Reply, SSEServer, chunked, head, wait_for
from .scripted import ScriptedModel, serve


def probe(capsys: pytest.CaptureFixture[str], server: SSEServer | str, *options: str) -> tuple[int, str, str]:
    url = server if isinstance(server, str) else server.url
    return run(capsys, "probe", "--base-url", url, "--model", "scripted", "--no-progress", *options)


def test_the_table_shows_a_row_per_case_and_the_summary(server: SSEServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.answer = serve(ScriptedModel(), "conforming")
    status, out, err = probe(capsys, server, "--color", "never")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"probing {server.url} (openai-chat, model scripted)"
    assert lines[1].split() == ["case", "verdict", "first", "chunk", "chunks", "duration"]
    rows = {line.split()[0]: line.split()[1] for line in lines[2:] if line and not line.startswith(" ")}
    assert rows.pop("11") == "case"  # the summary line: "11 case runs: 10 pass, 1 skipped (... s)"
    assert rows == {case.name: "skipped" if case.name == "reasoning" else "pass" for case in sf.PROBE_CASES}
    assert "    the model did not reason (no reasoning in either answer)" in lines
    assert lines[-1].startswith("11 case runs: 10 pass, 1 skipped (")


def test_json_is_one_object_per_case_run_then_the_summary(
    server: SSEServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.answer = serve(ScriptedModel(), "arguments-duplicated")
    status, out, _ = probe(capsys, server, "--json", "--case", "text", "--case", "tool-forced")
    objects = [orjson.loads(line) for line in out.splitlines()]
    assert status == 1
    assert [(o["kind"], o.get("case"), o.get("verdict")) for o in objects] == [
        ("case", "text", "pass"),
        ("case", "tool-forced", "invalid"),
        ("summary", None, None),
    ]
    broken = objects[1]
    assert broken["code"] == "TOOL_ARGUMENTS_INVALID" and broken["chunk"] == 7 and broken["differences"] == []
    assert broken["chunks"] == 8 and broken["firstChunkMs"] > 0 and broken["durationMs"] > 0
    summary = objects[-1]
    assert (summary["pass"], summary["invalid"], summary["ok"], summary["runs"]) == (1, 1, False, 2)


def test_diverging_fields_are_listed(server: SSEServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.answer = serve(ScriptedModel(), "arguments-empty")
    status, out, _ = probe(capsys, server, "--json", "--case", "tool-forced")
    case = orjson.loads(out.splitlines()[0])
    assert status == 1 and case["verdict"] == "diverges" and case["code"] is None
    assert case["differences"] == [
        {"field": "tool_calls[0].arguments", "streamed": {}, "nonStreamed": {"city": "Paris"}, "content": True}
    ]


def test_junit_xml_for_ci(server: SSEServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    server.answer = serve(ScriptedModel(), "markup-in-content")
    target = tmp_path / "probe.xml"
    status, _, _ = probe(capsys, server, "--junit-xml", str(target), "--case", "text", "--case", "tool-forced")
    suite = ET.parse(target).getroot().find("testsuite")
    assert status == 1 and suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases["text"]) == []
    failure = cases["tool-forced"].find("failure")
    assert failure is not None and failure.get("type") == "diverges"
    assert failure.text is not None and 'tool_calls: streamed [], non-streamed ["get_weather"]' in failure.text


def test_cases_from_a_file_are_added(server: SSEServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    server.answer = serve(ScriptedModel(), "conforming")
    mine = tmp_path / "cases.json"
    weather = {
        "name": "weather-tokyo",
        "messages": "Weather in Tokyo?",
        "tools": ["get_weather"],
        "tool_choice": "required",
    }
    mine.write_bytes(orjson.dumps([weather]))
    status, out, _ = probe(capsys, server, "--json", "--cases", str(mine), "--case", "weather-tokyo", "--repeat", "2")
    objects = [orjson.loads(line) for line in out.splitlines()]
    assert status == 0
    assert [(o.get("case"), o.get("run"), o.get("verdict")) for o in objects[:-1]] == [
        ("weather-tokyo", 1, "pass"),
        ("weather-tokyo", 2, "pass"),
    ]
    assert server.requests[0].json()["tool_choice"] == "required"
    assert server.requests[0].json()["temperature"] == 0


@pytest.mark.parametrize(("given", "sent"), [("none", None), ("0.7", 0.7)])
def test_temperature_for_every_case(
    server: SSEServer, capsys: pytest.CaptureFixture[str], given: str, sent: float | None
) -> None:
    server.answer = serve(ScriptedModel(), "conforming")
    status, _, _ = probe(capsys, server, "--case", "text", "--temperature", given)
    assert status == 0 and [r.json().get("temperature") for r in server.requests] == [sent, sent]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"[1, 2]", "case 0 is not an object"),
        (b"[]", "expected a non-empty list of cases"),
        (b'[{"name": "x"}]', "case 0: messages: Field required"),
        (b'[{"name": "x", "messages": "hi", "tools": ["nope"]}]', "unknown tool 'nope'"),
        (b"{", "cannot read the cases"),
    ],
)
def test_a_bad_cases_file_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, says: str
) -> None:
    mine = tmp_path / "cases.json"
    mine.write_bytes(content)
    status, out, err = probe(capsys, "http://127.0.0.1:9", "--cases", str(mine))
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("streamfsm: error: ") and says in err


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


HTML = b"<!doctype html><html><body><h1>502 Bad Gateway</h1></body></html>"


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (None, "connection failed"),
        (Reply(401, {"error": {"message": "Incorrect API key provided"}}), "HTTP 401: Incorrect API key provided"),
        (Reply(404, {"error": {"message": "The model `scripted` does not exist"}}), "does not exist"),
        (Reply(502, HTML, {"content-type": "text/html"}), "HTTP 502"),
        (Reply(200, HTML, {"content-type": "text/html"}), "not an event stream: Content-Type 'text/html'"),
        (Reply(200, {"choices": []}), "not an event stream: Content-Type 'application/json'"),
        (SSE(["data: {}"], delay=5.0), "the deadline of 0.5 s passed"),
    ],
    ids=["unreachable", "401", "unknown-model", "html-502", "html-200", "not-sse", "hanging"],
)
def test_an_endpoint_that_cannot_be_probed_is_one_line(
    server: SSEServer, capsys: pytest.CaptureFixture[str], answer: SSE | Reply | None, says: str
) -> None:
    url = _closed_port() if answer is None else server.url
    if answer is not None:
        server.script(answer)
    status, out, err = probe(capsys, url, "--deadline", "0.5", "--color", "never")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"streamfsm: error: {url} cannot be probed as openai-chat with model 'scripted': ")
    assert says in err
    assert len(server.requests) <= 1  # stopped at the first request


def test_a_body_cut_mid_stream_is_invalid(server: SSEServer, capsys: pytest.CaptureFixture[str]) -> None:
    conforming = serve(ScriptedModel(), "conforming")

    def cut(request: object) -> SSE | Reply | Raw:
        answer = conforming(request)  # type: ignore[arg-type]
        if isinstance(answer, SSE):
            events = [(e + "\n\n").encode() for e in answer.events[:4]]
            return Raw(
                [head(200, {"content-type": "text/event-stream", "transfer-encoding": "chunked"}), *chunked(events)]
            )
        return answer

    server.answer = cut
    status, out, _ = probe(capsys, server, "--json", "--case", "text")
    case = orjson.loads(out.splitlines()[0])
    assert status == 1 and (case["verdict"], case["code"]) == ("invalid", "STREAM_CLOSED")


def test_on_a_terminal_the_rows_are_coloured_and_a_progress_bar_runs(server: SSEServer) -> None:
    from ..cli_support import on_a_terminal

    server.answer = serve(ScriptedModel(), "arguments-duplicated")
    status, screen = on_a_terminal("probe", "--base-url", server.url, "--model", "scripted", "--api-key-env", "NONE")
    assert status == 1
    assert "probing \x1b[2m\u2500" in screen and "/11 0:0" in screen  # the bar, its label first
    assert "\x1b[32mpass" in screen and "\x1b[31;1minvalid" in screen
    assert "\x1b[1;31m11 case runs: 7 pass, 1 skipped, 3 invalid (" in screen


def test_a_server_that_hangs_after_the_first_case_gets_an_error_verdict(
    server: SSEServer, capsys: pytest.CaptureFixture[str]
) -> None:
    conforming = serve(ScriptedModel(), "conforming")
    server.answer = lambda request: conforming(request) if len(server.requests) <= 2 else SSE(["data: {}"], 3.0)
    status, out, _ = probe(capsys, server, "--json", "--case", "text", "--case", "usage", "--deadline", "0.5")
    objects = [orjson.loads(line) for line in out.splitlines()]
    assert status == 1
    assert [(o.get("case"), o.get("verdict"), o.get("code")) for o in objects[:-1]] == [
        ("text", "pass", None),
        ("usage", "error", "TIMEOUT"),
    ]
    assert objects[1]["message"] == "the deadline of 0.5 s passed"


def test_a_server_that_fails_after_a_client_went_away_fails_the_abort_case(
    server: SSEServer, capsys: pytest.CaptureFixture[str]
) -> None:
    conforming = serve(ScriptedModel(), "conforming", delay=0.002)
    gone = Reply(500, {"error": {"message": "worker crashed"}})

    def answer(request: Recorded) -> SSE | Reply:
        if len(server.requests) > 1:  # the request after the one the client closed
            wait_for(lambda: bool(server.disconnects))
        return gone if server.disconnects else conforming(request)

    server.answer = answer
    status, out, _ = probe(capsys, server, "--json", "--case", "abort")
    case = orjson.loads(out.splitlines()[0])
    assert status == 1 and (case["verdict"], case["status"]) == ("error", 500)
    assert (
        case["message"].startswith("after a stream closed at chunk 3: HTTP 500") and "worker crashed" in case["message"]
    )

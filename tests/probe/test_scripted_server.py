"""The probe against a scripted local server: a conforming script passes every case, and each streaming bug servers
are reported to have is caught with the right verdict, naming the broken rule or the differing field."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

import streamfsm as sf
from streamfsm._providers.http import read_sse

from ..sse_server import SSEServer
from .scripted import ScriptedModel, serve

ALL_PASS = {case.name: "pass" for case in sf.PROBE_CASES}
TOOL_CASES = ("tool-forced", "tools-auto", "tools-parallel")


@pytest.fixture
def scripted() -> Iterator[SSEServer]:
    with SSEServer() as server:
        yield server


def run_probe(server: SSEServer, script: str, **options: object) -> sf.ProbeReport:
    model = options.pop("model", None) or ScriptedModel(reasons=True)
    assert isinstance(model, ScriptedModel)
    server.answer = serve(model, script)
    return asyncio.run(sf.probe(server.url, "scripted", **options))  # type: ignore[arg-type]


def test_a_conforming_server_passes_every_case(scripted: SSEServer, tmp_path: Path) -> None:
    report = run_probe(scripted, "conforming", record=tmp_path)
    assert report.verdicts() == ALL_PASS
    assert report.ok
    assert [r.json()["stream"] for r in scripted.requests[:2]] == [True, False]
    assert scripted.requests[0].json()["stream_options"] == {"include_usage": True}
    assert "stream_options" not in scripted.requests[1].json()
    assert all(run.chunks > 0 and run.first_chunk is not None for run in report.runs)
    cut = next(run for run in report.runs if run.case == "max-tokens")
    assert cut.content == "same"  # a cut answer is compared like any other: both are cut at the same word


def test_id_and_name_only_on_the_first_delta_is_not_flagged(scripted: SSEServer, tmp_path: Path) -> None:
    """OpenAI's spec allows a tool call's later deltas without ``id`` and ``name``; strict clients that reject it
    are wrong, and the probe must not flag it."""
    report = run_probe(scripted, "conforming", record=tmp_path)
    assert report.verdicts()["tools-parallel"] == "pass"
    events = [orjson.loads(e.data) for e in read_sse((tmp_path / "tools-parallel.sse").read_bytes())[:-1]]
    calls = [call for e in events for choice in e["choices"] for call in choice["delta"].get("tool_calls", [])]
    assert [("id" in call, "name" in call["function"]) for call in calls].count((True, True)) == 2
    assert sum(1 for call in calls if "id" not in call and "name" not in call["function"]) > 4


def test_the_recorded_bodies_replay_with_streamfsm_check(
    scripted: SSEServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ..cli_support import run

    run_probe(scripted, "conforming", record=tmp_path)
    streamed = sorted(p.name for p in tmp_path.glob("*.sse"))
    assert "text.sse" in streamed and "concurrent.3.sse" in streamed and "abort.sse" in streamed
    assert (tmp_path / "text.json").is_file()  # the non-streamed answer, as it came
    status, out, _ = run(capsys, "check", "--json", str(tmp_path))
    summary = orjson.loads(out.splitlines()[-1])
    assert status == 0 and summary["invalid"] == 0 and summary["ok"] == len(streamed)


@pytest.mark.parametrize(
    ("script", "expected", "code", "field"),
    [
        # vLLM (Kimi K2 on /v1/responses): the first fragment shares the delta with the name, and is dropped.
        ("first-fragment-dropped", dict.fromkeys(TOOL_CASES, "invalid"), "TOOL_ARGUMENTS_INVALID", None),
        # vLLM xlam: the end-of-stream flush sends the arguments again: {..}{..}.
        ("arguments-duplicated", dict.fromkeys(TOOL_CASES, "invalid"), "TOOL_ARGUMENTS_INVALID", None),
        # vLLM step3, Jamba, InternLM2: no arguments unless each token came in its own delta.
        ("arguments-empty", dict.fromkeys(TOOL_CASES, "diverges"), None, "tool_calls[0].arguments"),
        # vLLM Qwen3, OLMo3: the call's markup leaks into the text; the non-streamed answer has the call.
        ("markup-in-content", dict.fromkeys(TOOL_CASES, "diverges"), None, "tool_calls"),
        # SGLang: two calls to one function share an index, so their arguments merge.
        ("shared-index", {"tools-parallel": "invalid"}, "TOOL_ARGUMENTS_INVALID", None),
    ],
)
def test_each_reported_bug_is_caught(
    scripted: SSEServer, script: str, expected: dict[str, str], code: str | None, field: str | None
) -> None:
    report = run_probe(scripted, script)
    assert report.verdicts() == {**ALL_PASS, **expected}
    assert not report.ok
    for run in report.runs:
        if run.case not in expected:
            continue
        if code is not None:
            assert (run.code, run.differences) == (code, ())
            assert run.chunk is not None and run.message and "arguments" in run.message
        else:
            assert run.code is None and field in [d.field for d in run.differences]


@pytest.mark.parametrize(
    ("api", "paths"),
    [
        ("anthropic", {"/v1/messages"}),
        ("openai-responses", {"/responses"}),
        (
            "gemini",
            {"/v1beta/models/scripted:streamGenerateContent?alt=sse", "/v1beta/models/scripted:generateContent"},
        ),
    ],
)
def test_a_conforming_server_passes_every_case_on_the_other_apis(
    scripted: SSEServer, api: str, paths: set[str]
) -> None:
    report = run_probe(scripted, "conforming", api=api)
    assert report.verdicts() == ALL_PASS
    assert next(run for run in report.runs if run.case == "reasoning").content == "same"
    assert {r.path for r in scripted.requests} == paths


@pytest.mark.parametrize(
    ("api", "script", "expected"),
    [
        # vLLM's Anthropic endpoint: partial_json without its opening {".
        ("anthropic", "partial-json-unopened", dict.fromkeys(TOOL_CASES, "invalid")),
        # vLLM, Kimi K2 on /v1/responses: the first fragment shares the delta with the name, and is dropped.
        ("openai-responses", "first-fragment-dropped", dict.fromkeys(TOOL_CASES, "invalid")),
    ],
)
def test_each_reported_bug_is_caught_on_the_other_apis(
    scripted: SSEServer, api: str, script: str, expected: dict[str, str]
) -> None:
    report = run_probe(scripted, script, api=api, cases=[c for c in sf.PROBE_CASES if c.name != "reasoning"])
    assert report.verdicts() == {**{k: v for k, v in ALL_PASS.items() if k != "reasoning"}, **expected}
    for run in report.runs:
        if run.case in expected:
            assert run.code == "TOOL_ARGUMENTS_INVALID" and run.message and "Paris" in run.message


def test_the_leaked_markup_is_shown_as_the_text_that_differs(scripted: SSEServer) -> None:
    report = run_probe(scripted, "markup-in-content", cases=[c for c in sf.PROBE_CASES if c.name == "tool-forced"])
    (run,) = report.runs
    fields = {d.field: d for d in run.differences}
    assert set(fields) == {"tool_calls", "finish", "text"}
    assert (fields["tool_calls"].streamed, fields["tool_calls"].non_streamed) == ([], ["get_weather"])
    assert (fields["finish"].streamed, fields["finish"].non_streamed) == ("stop", "tool-calls")
    assert str(fields["text"].streamed).startswith("<tool_call>") and fields["text"].content


def test_a_model_that_answers_differently_each_time_is_content_unknown_not_diverging(scripted: SSEServer) -> None:
    report = run_probe(scripted, "conforming", model=ScriptedModel(varies=True))
    text = next(run for run in report.runs if run.case == "text")
    assert (text.verdict, text.content, text.differences) == ("pass", "unknown", ())
    assert text.message is not None and "unknown" in text.message
    assert report.ok


def test_structure_is_still_compared_when_content_is_unknown(scripted: SSEServer) -> None:
    report = run_probe(scripted, "markup-in-content", model=ScriptedModel(varies=True))
    forced = next(run for run in report.runs if run.case == "tool-forced")
    assert forced.verdict == "diverges"
    assert forced.content == "unknown"
    assert {d.field for d in forced.differences} == {"tool_calls", "finish"}


def test_reasoning_is_skipped_and_said_so_where_the_model_does_not_reason(scripted: SSEServer) -> None:
    report = run_probe(scripted, "conforming", model=ScriptedModel(reasons=False))
    reasoning = next(run for run in report.runs if run.case == "reasoning")
    assert reasoning.verdict == "skipped"
    assert reasoning.message == "the model did not reason (no reasoning in either answer)"
    assert report.ok


def test_repeat_runs_each_case_again(scripted: SSEServer) -> None:
    cases = [c for c in sf.PROBE_CASES if c.name in ("text", "abort")]
    report = run_probe(scripted, "conforming", cases=cases, repeat=2)
    assert [(run.case, run.run) for run in report.runs] == [("text", 1), ("text", 2), ("abort", 1), ("abort", 2)]


def test_the_abort_case_closes_the_stream_and_the_next_request_streams_whole(scripted: SSEServer) -> None:
    report = run_probe(scripted, "conforming", cases=[c for c in sf.PROBE_CASES if c.name == "abort"])
    (run,) = report.runs
    assert run.verdict == "pass" and run.message == "closed after 3 chunk(s); the next request streamed whole"
    assert len(scripted.requests) == 2 and all(r.json()["stream"] for r in scripted.requests)


def test_concurrent_streams_run_at_once(scripted: SSEServer) -> None:
    seen: list[int] = []
    conforming = serve(ScriptedModel(), "conforming", delay=0.02)

    def answer(request: object) -> object:
        seen.append(scripted.active)
        return conforming(request)  # type: ignore[arg-type]

    scripted.answer = answer  # type: ignore[assignment]
    case = sf.ProbeCase.from_data({"name": "many", "messages": "Say hello.", "mode": "concurrent", "streams": 6})
    report = asyncio.run(sf.probe(scripted.url, "scripted", cases=[case]))
    assert report.verdicts() == {"many": "pass"} and len(scripted.requests) == 6
    assert max(seen) > 1  # some were answered while others were

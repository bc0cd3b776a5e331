"""What a run tells the outside: the seed's ``llm/stream/*`` hooks, ``StreamMetrics`` per turn and per run, and the
``llm_request``/``llm_response`` log records with their fields in ``extra``.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import streamfsm as sf
from streamfsm import ErrorCode

from ..agent_support import Fail, Tick, Turn, answer, calls, collect, make_loop, run

E = ErrorCode


def two_turns_with_a_retry() -> list[Any]:
    """Turn 1 fails once (rate limit), then calls a tool; turn 2 answers."""
    first = Turn().text("checking").call("c1", "probe", {"x": 1}).end("tool-calls", input_tokens=100, output_tokens=20)
    return [
        Fail(sf.LlmError("busy", E.RATE_LIMIT), after=[Tick(0.5)]),
        [Tick(0.25), *first[:3], Tick(1.0), *first[3:]],
        [Tick(0.75), *answer("done", output_tokens=7)],
    ]


def probe(x: int) -> int:
    """A tool."""
    return x


# -- hooks -----------------------------------------------------------------------------------------


def test_hooks_see_every_request_chunk_and_end() -> None:
    starts: list[sf.GenerateOptions] = []
    chunks: list[Any] = []
    ends: list[sf.DoneChunk] = []
    hooks = sf.Hooks(stream_start=starts.append, chunk=chunks.append, stream_end=ends.append)
    loop, adapter, _ = make_loop(two_turns_with_a_retry(), [probe], hooks=hooks)
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    # stream_start: every request (attempt), with the options sent.
    assert starts == adapter.requests and len(starts) == 3
    # chunk: exactly what the consumer got, the same objects.
    assert len(chunks) == len(out) and all(a is b for a, b in zip(chunks, out, strict=True))
    # stream_end: one per request, with that request's end and usage.
    assert [e.reason for e in ends] == ["error", "tool_use", "stop"]
    assert [e.usage.total_tokens if e.usage else None for e in ends] == [None, 120, 17]


def test_async_hooks_and_the_seeds_event_names() -> None:
    seen: list[str] = []
    hooks = sf.Hooks()

    @hooks.on("llm/stream/start")
    async def on_start(request: sf.GenerateOptions) -> None:
        seen.append(f"start model={request.model}")

    @hooks.on("llm/stream/chunk")
    def on_chunk(chunk: Any) -> None:
        seen.append(f"chunk type={chunk.type}")

    hooks.on("llm/stream/end", lambda done: seen.append(f"end reason={done.reason}"))
    loop, _, _ = make_loop([answer("hi")], hooks=hooks)
    run(collect(loop.run("go")))
    assert seen == ["start model=scripted-model", "chunk type=text", "end reason=stop", "chunk type=done"]


def test_a_hook_that_raises_is_logged_and_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    def broken(_: Any) -> None:
        raise RuntimeError("hook bug")

    loop, _, _ = make_loop([answer("hi")], hooks=sf.Hooks(chunk=broken, stream_start=broken))
    with caplog.at_level(logging.ERROR, logger="streamfsm.agent"):
        out = run(collect(loop.run("go")))
    assert out[-1].reason == "stop"
    failures = [r for r in caplog.records if r.msg == "hook_error"]
    assert [r.__dict__["hook"] for r in failures] == ["stream_start", "chunk", "chunk"]
    assert all(r.exc_info is not None and "hook bug" in str(r.exc_info[1]) for r in failures)


def test_unknown_hook_events_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown hook event"):
        sf.Hooks().on("llm/stream/middle", print)


# -- metrics ---------------------------------------------------------------------------------------


def test_metrics_per_turn_and_per_run() -> None:
    loop, _, _ = make_loop(two_turns_with_a_retry(), [probe], retry=sf.RetryPolicy(jitter=False))
    agent_run = loop.run("go")
    run(collect(agent_run))
    first, second = agent_run.turns
    # Turn 1: the failed attempt took 0.5 s, the back-off 1 s, then the first chunk came 0.25 s later.
    assert first.ttfb == 1.75
    assert first.total_duration == 2.75
    assert (first.chunk_count, first.tool_call_count, first.retry_count) == (9, 1, 1)
    assert first.token_usage == sf.TokenUsage(prompt_tokens=100, completion_tokens=20, total_tokens=120)
    assert (second.ttfb, second.total_duration, second.chunk_count, second.tool_call_count) == (0.75, 0.75, 5, 0)
    assert second.retry_count == 0
    total = agent_run.metrics
    assert (total.ttfb, total.total_duration) == (1.75, 3.5)
    assert (total.chunk_count, total.tool_call_count, total.retry_count) == (14, 1, 1)
    assert total.token_usage == sf.TokenUsage(prompt_tokens=110, completion_tokens=27, total_tokens=137)
    assert total.to_wire() == {
        "ttfb": 1.75,
        "totalDuration": 3.5,
        "chunkCount": 14,
        "toolCallCount": 1,
        "retryCount": 1,
        "tokenUsage": {"promptTokens": 110, "completionTokens": 27, "totalTokens": 137},
    }
    # The run's done carries the run's usage.
    assert agent_run.done is not None and agent_run.done.usage == total.token_usage


def test_the_runs_metrics_count_the_turn_still_open_and_each_turn_once() -> None:
    seen: list[tuple[Any, ...]] = []
    runs: list[sf.AgentRun] = []

    def on_chunk(chunk: Any) -> None:
        (agent_run,) = runs
        m = agent_run.metrics
        seen.append((chunk.type, len(agent_run.turns), m.chunk_count, m.retry_count, m.tool_call_count, m.token_usage))

    loop, _, _ = make_loop(
        two_turns_with_a_retry(), [probe], hooks=sf.Hooks(chunk=on_chunk), retry=sf.RetryPolicy(jitter=False)
    )
    runs.append(loop.run("go"))
    run(collect(runs[0]))
    turn_1 = sf.TokenUsage(prompt_tokens=100, completion_tokens=20, total_tokens=120)
    both = sf.TokenUsage(prompt_tokens=110, completion_tokens=27, total_tokens=137)
    error, text, call, result, answer_text, done = seen
    # Turn 1 still open: its retry and the chunks come so far are the run's already.
    assert error == ("error", 0, 0, 1, 0, None)
    assert text[:2] == ("text", 0) and 2 <= text[2] <= 9 and text[3:] == (1, 0, None)
    assert call[:2] == ("tool_call", 0) and 3 <= call[2] <= 9 and call[3:] == (1, 0, None)
    # Turn 1 closed: rolled up once.
    assert result == ("tool_result", 1, 9, 1, 1, turn_1)
    assert answer_text[:2] == ("text", 1) and 11 <= answer_text[2] <= 14 and answer_text[3:] == (1, 1, turn_1)
    assert done == ("done", 2, 14, 1, 1, both)
    assert runs[0].metrics.chunk_count == sum(t.chunk_count for t in runs[0].turns) == 14


def test_the_run_starts_when_its_first_chunk_is_asked_for() -> None:
    response: list[Any] = [Tick(0.5), *answer("hi")]
    loop, _, clock = make_loop([response])
    agent_run = loop.run("go")
    clock.now += 60  # made, then left waiting: not part of the run
    run(collect(agent_run))
    assert (agent_run.metrics.ttfb, agent_run.metrics.total_duration) == (0.5, 0.5)


def test_metrics_of_a_run_that_got_nothing() -> None:
    loop, _, _ = make_loop([Fail(sf.LlmError("no", E.AUTH))])
    agent_run = loop.run("go")
    run(collect(agent_run))
    assert agent_run.metrics.to_wire() == {
        "ttfb": None,
        "totalDuration": 0.0,
        "chunkCount": 0,
        "toolCallCount": 0,
        "retryCount": 0,
        "tokenUsage": None,
    }
    assert len(agent_run.turns) == 1


# -- logging ---------------------------------------------------------------------------------------


def records(caplog: pytest.LogCaptureFixture, msg: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "streamfsm.agent" and r.msg == msg]


def test_structured_log_records(caplog: pytest.LogCaptureFixture) -> None:
    loop, _, _ = make_loop(two_turns_with_a_retry(), [probe], retry=sf.RetryPolicy(jitter=False))
    with caplog.at_level(logging.DEBUG, logger="streamfsm.agent"):
        run(collect(loop.run("go")))
    requests = records(caplog, "llm_request")
    assert [
        (r.levelname, r.__dict__["model"], r.__dict__["message_count"], r.__dict__["tool_count"]) for r in requests
    ] == [
        ("INFO", "scripted-model", 1, 1),
        ("INFO", "scripted-model", 1, 1),
        ("INFO", "scripted-model", 3, 1),
    ]
    assert [(r.__dict__["turn"], r.__dict__["attempt"], r.__dict__["stream"]) for r in requests] == [
        (1, 1, True),
        (1, 2, True),
        (2, 1, True),
    ]
    responses = records(caplog, "llm_response")
    assert [(r.__dict__["duration"], r.__dict__["tokens"], r.__dict__["reason"]) for r in responses] == [
        (0.5, None, "error"),
        (1.25, 120, "tool_use"),
        (0.75, 17, "stop"),
    ]
    assert responses[0].__dict__["code"] == "RATE_LIMIT"
    (retry,) = records(caplog, "llm_retry")
    assert retry.levelname == "WARNING"
    assert (retry.__dict__["code"], retry.__dict__["retry"], retry.__dict__["delay_ms"]) == ("RATE_LIMIT", 1, 1000)


def test_errors_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    def fails() -> None:
        raise OSError("disk gone")

    loop, _, _ = make_loop([calls(("c1", "fails", {})), Fail(sf.LlmError("bad key", E.AUTH))], [fails])
    with caplog.at_level(logging.INFO, logger="streamfsm.agent"):
        run(collect(loop.run("go")))
    (tool_error,) = records(caplog, "tool_error")
    assert tool_error.levelname == "WARNING" and tool_error.exc_info is not None
    assert (tool_error.__dict__["tool"], tool_error.__dict__["tool_call_id"]) == ("fails", "c1")
    assert tool_error.__dict__["error"] == "OSError: disk gone"
    (fatal,) = records(caplog, "llm_error")
    assert fatal.levelname == "ERROR" and fatal.__dict__["code"] == "AUTH"


def test_a_logger_of_ones_own() -> None:
    logger = logging.getLogger("my.agent")
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Collect()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        loop, _, _ = make_loop([answer("hi")], logger=logger)
        run(collect(loop.run("go")))
    finally:
        logger.removeHandler(handler)
    assert seen == ["llm_request", "llm_response"]

"""Stopping a run: an abort signal, task cancellation, leaving early, timeouts and budgets.

Each stops the upstream stream and the running tools and ends the run with ``done(cancel)``; what stopped it is
``run.error`` (``ABORTED``, ``TIMEOUT``, ``BUDGET_EXCEEDED``). Every test also checks that no task is left behind.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import streamfsm as sf
from streamfsm import ErrorCode

from ..agent_support import Fail, Hang, Turn, answer, calls, kinds, make_loop, run, wire

E = ErrorCode


async def no_task_left() -> None:
    """Only the test's own task is still there (give cancelled ones a step to go)."""
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def consume(agent_run: sf.AgentRun, on_chunk: Callable[[Any], Any] | None = None) -> list[Any]:
    """Every chunk (validated), calling ``on_chunk`` on each as it comes."""
    validator = sf.FlatValidator()
    out = []
    async for chunk in agent_run:
        out.append(validator.feed(chunk))
        if on_chunk is not None:
            on_chunk(chunk)
    validator.close()
    return out


def run_clean(agent_run: sf.AgentRun, on_chunk: Callable[[Any], Any] | None = None) -> list[Any]:
    """Run to the end (every chunk validated, ``on_chunk`` called on each), then check no task is left behind."""

    async def main() -> list[Any]:
        out = await consume(agent_run, on_chunk)
        await no_task_left()
        return out

    out: list[Any] = run(main())
    return out


# -- the abort signal ----------------------------------------------------------------------------


def test_abort_mid_stream_cancels_the_upstream_and_ends_with_cancel() -> None:
    controller = sf.AbortController()
    loop, adapter, _ = make_loop([Hang(before=Turn().text("Hello").chunks[:2])])
    agent_run = loop.run("hi", signal=controller.signal)
    out = run_clean(agent_run, lambda c: controller.abort("user pressed stop"))
    assert wire(out) == [{"type": "text", "content": "Hello"}, {"type": "done", "reason": "cancel"}]
    assert agent_run.error is not None and agent_run.error.code is E.ABORTED
    assert "user pressed stop" in agent_run.error.message
    assert (adapter.cancelled, adapter.closed) == (1, 1)
    # The adapter got the run's own signal, and saw it abort.
    signal = adapter.requests[0].signal
    assert signal is not None and signal.aborted
    assert agent_run.messages == [sf.UserMessage(content="hi")]


def test_abort_from_another_thread() -> None:
    controller = sf.AbortController()
    loop, adapter, _ = make_loop([Hang(before=Turn().text("Hello").chunks[:2])])
    agent_run = loop.run("hi", signal=controller.signal)

    def abort_elsewhere(chunk: Any) -> None:
        thread = threading.Thread(target=controller.abort, args=("from a thread",))
        thread.start()
        thread.join()

    out = run_clean(agent_run, abort_elsewhere)
    assert kinds(out) == ["text", "done"] and out[-1].reason == "cancel"
    assert adapter.closed == 1


def test_an_aborted_signal_stops_the_run_before_any_request() -> None:
    controller = sf.AbortController()
    controller.abort("never mind")
    loop, adapter, _ = make_loop([answer("never")])
    agent_run = loop.run("hi", signal=controller.signal)
    assert wire(run_clean(agent_run)) == [{"type": "done", "reason": "cancel"}]
    assert adapter.requests == [] and agent_run.error is not None and agent_run.error.code is E.ABORTED


def test_abort_mid_tool_cancels_running_tools_and_answers_their_calls() -> None:
    controller = sf.AbortController()
    log: list[str] = []

    async def quick() -> str:
        return "quick result"

    async def forever() -> str:
        try:
            log.append("started")
            controller.abort("enough")
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
        return "never"

    loop, adapter, _ = make_loop([calls(("c1", "quick", {}), ("c2", "forever", {})), answer("never")], [quick, forever])
    agent_run = loop.run("hi", signal=controller.signal)
    out = run_clean(agent_run)
    assert kinds(out) == ["tool_call", "tool_call", "tool_result", "tool_result", "done"]
    results = {c.tool_call_id: c for c in out if isinstance(c, sf.ToolResultChunk)}
    assert results["c1"].result == "quick result" and not results["c1"].is_error
    assert results["c2"].is_error and results["c2"].result["message"] == "cancelled: aborted: enough"
    assert out[-1].reason == "cancel" and log == ["started", "cancelled"]
    assert len(adapter.requests) == 1
    # The conversation stays whole: every call of the kept turn has its result.
    assert [m.role for m in agent_run.messages] == ["user", "assistant", "tool", "tool"]


def test_abort_mid_sync_tool_tells_its_thread() -> None:
    controller = sf.AbortController()
    reasons: list[str | None] = []
    noticed = threading.Event()

    def polling() -> str:
        signal = sf.tool_signal()
        assert signal is not None
        controller.abort("stop now")
        while not signal.aborted:
            time.sleep(0.002)
        reasons.append(signal.reason)
        noticed.set()
        return "ignored"

    loop, _, _ = make_loop([calls(("c1", "polling", {}))], [polling])
    agent_run = loop.run("hi", signal=controller.signal)
    out = run_clean(agent_run)
    assert kinds(out) == ["tool_call", "tool_result", "done"] and out[-1].reason == "cancel"
    assert out[1].result["message"] == "cancelled: aborted: stop now"
    assert noticed.wait(2) and reasons == ["the tool call was cancelled"]


def test_abort_during_the_back_off_sleep() -> None:
    controller = sf.AbortController()
    loop, adapter, _ = make_loop([Fail(sf.LlmError("busy", E.RATE_LIMIT)), answer("never")])
    sleeping = asyncio.Event()

    async def long_sleep(seconds: float) -> None:
        sleeping.set()
        await asyncio.Event().wait()

    loop.sleep = long_sleep
    agent_run = loop.run("hi", signal=controller.signal)

    async def main() -> list[Any]:
        async def abort_when_asleep() -> None:
            await sleeping.wait()
            controller.abort("no more waiting")

        aborter = asyncio.create_task(abort_when_asleep())
        out = await consume(agent_run)
        await aborter
        await no_task_left()
        return out

    out = run(main())
    assert kinds(out) == ["error", "done"] and out[0].recoverable and out[-1].reason == "cancel"
    assert len(adapter.requests) == 1


def test_the_options_templates_signal_is_the_runs_by_default() -> None:
    controller = sf.AbortController()
    loop, adapter, _ = make_loop(
        [Hang(before=Turn().text("Hello").chunks[:2])],
        model=None,
        options=sf.GenerateOptions(model="m", signal=controller.signal),
    )
    out = run_clean(loop.run("hi"), lambda c: controller.abort("from the template"))
    assert kinds(out) == ["text", "done"] and out[-1].reason == "cancel"
    assert adapter.cancelled == 1


def test_a_stop_drops_what_the_failed_adapter_raised_without_asyncio_logging_it() -> None:
    # The adapter has failed by the time the consumer, given the text, aborts: the error is moot, never logged.
    controller = sf.AbortController()
    loop, _, _ = make_loop([Fail(sf.LlmError("busy", E.RATE_LIMIT), after=Turn().text("Hello").chunks[:2])])
    reported: list[str] = []

    async def main() -> list[Any]:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: reported.append(context["message"]))
        out = await consume(loop.run("hi", signal=controller.signal), lambda c: controller.abort())
        gc.collect()  # a task that failed unread is reported when it is collected
        await no_task_left()
        return out

    assert kinds(run(main())) == ["text", "done"]
    assert reported == []


def test_abort_after_the_run_is_over_changes_nothing() -> None:
    controller = sf.AbortController()
    loop, _, _ = make_loop([answer("hi")])
    agent_run = loop.run("hi", signal=controller.signal)
    run_clean(agent_run)
    controller.abort()
    assert agent_run.done is not None and agent_run.done.reason == "stop" and agent_run.error is None


# -- task cancellation and leaving early -----------------------------------------------------------


def recording_hooks() -> tuple[sf.Hooks, list[Any], list[Any]]:
    chunks: list[Any] = []
    ends: list[Any] = []
    return sf.Hooks(chunk=chunks.append, stream_end=ends.append), chunks, ends


@pytest.mark.parametrize("where", ["mid-stream", "mid-tool"])
def test_task_cancellation_stops_the_run_and_propagates(where: str) -> None:
    tool_cancelled: list[bool] = []

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            tool_cancelled.append(True)
            raise

    hooks, hooked, ends = recording_hooks()
    script = [Hang(before=Turn().text("Hello").chunks[:2])] if where == "mid-stream" else [calls(("c1", "forever", {}))]
    loop, adapter, _ = make_loop(script, [forever], hooks=hooks)
    agent_run = loop.run("hi")

    async def main() -> list[Any]:
        seen: list[Any] = []

        async def consumer() -> None:
            async for chunk in agent_run:
                seen.append(chunk)

        task = asyncio.create_task(consumer())
        while not seen:
            await asyncio.sleep(0)
        for _ in range(5):
            await asyncio.sleep(0)  # let it reach the hang, or the tool
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await no_task_left()
        return seen

    seen = run(main())
    assert agent_run.done is not None and agent_run.done.reason == "cancel"
    assert agent_run.error is not None and agent_run.error.code is E.ABORTED
    # The hooks saw the whole flat stream, the final done included, though the consumer could not.
    assert hooked[: len(seen)] == seen and hooked[-1] is agent_run.done
    assert list(sf.validate_flat(hooked)) == hooked  # and it is a valid flat stream
    assert adapter.closed == len(adapter.requests)
    if where == "mid-stream":
        assert adapter.cancelled == 1 and [e.reason for e in ends] == ["cancel"]
    else:
        assert tool_cancelled == [True] and [e.reason for e in ends] == ["tool_use"]
        assert hooked[-2].is_error and [m.role for m in agent_run.messages] == ["user", "assistant", "tool"]


@pytest.mark.parametrize("how", ["aclose", "async with"])
def test_leaving_early_closes_the_upstream(how: str) -> None:
    hooks, hooked, _ = recording_hooks()
    loop, adapter, _ = make_loop([Hang(before=Turn().text("Hello").chunks[:2])], hooks=hooks)

    async def main() -> None:
        agent_run = loop.run("hi")
        if how == "aclose":
            async for _ in agent_run:
                break
            await agent_run.aclose()
        else:
            async with loop.run("hi") as agent_run:
                async for _ in agent_run:
                    break
        assert agent_run.done is not None and agent_run.done.reason == "cancel"
        await no_task_left()

    run(main())
    assert adapter.cancelled == 1 and adapter.closed == 1
    assert [c.type for c in sf.validate_flat(hooked)] == ["text", "done"]


# -- timeouts --------------------------------------------------------------------------------------


def test_a_turn_timeout_stops_a_response_that_hangs() -> None:
    loop, adapter, _ = make_loop([Hang(before=Turn().text("Hel").chunks[:2])], limits=sf.AgentLimits(turn_timeout=0.3))
    agent_run = loop.run("hi")
    out = run_clean(agent_run)
    assert kinds(out) == ["text", "done"] and out[-1].reason == "cancel"
    assert agent_run.error is not None and agent_run.error.code is E.TIMEOUT
    assert agent_run.error.message == "turn 1 timed out after 0.3 s"
    assert adapter.cancelled == 1


def test_the_turn_timeout_covers_each_turn_afresh() -> None:
    async def quick() -> int:
        await asyncio.sleep(0.6)  # tools are not part of a turn's time
        return 1

    loop, _, _ = make_loop([calls(("c1", "quick", {})), answer("ok")], [quick], limits=sf.AgentLimits(turn_timeout=0.5))
    out = run_clean(loop.run("hi"))
    assert out[-1].reason == "stop"


def test_the_turn_timeout_covers_the_back_off() -> None:
    loop, adapter, _ = make_loop(
        [Fail(sf.LlmError("busy", E.RATE_LIMIT)), answer("never")], limits=sf.AgentLimits(turn_timeout=0.3)
    )

    async def long_sleep(seconds: float) -> None:
        await asyncio.Event().wait()

    loop.sleep = long_sleep
    agent_run = loop.run("hi")
    out = run_clean(agent_run)
    assert kinds(out) == ["error", "done"] and out[0].recoverable and out[-1].reason == "cancel"
    assert agent_run.error is not None and agent_run.error.message == "turn 1 timed out after 0.3 s"
    assert len(adapter.requests) == 1


def test_a_run_timeout_stops_a_slow_tool() -> None:
    async def slow() -> str:
        await asyncio.sleep(10)
        return "late"

    loop, _, _ = make_loop(
        [calls(("c1", "slow", {})), answer("never")],
        [slow],
        limits=sf.AgentLimits(run_timeout=0.3, tool_timeout=None),
    )
    agent_run = loop.run("hi")
    out = run_clean(agent_run)
    assert kinds(out) == ["tool_call", "tool_result", "done"]
    assert out[1].result["message"] == "cancelled: the run timed out after 0.3 s"
    assert agent_run.error is not None and agent_run.error.code is E.TIMEOUT


# -- budgets ---------------------------------------------------------------------------------------


def test_a_text_budget_cuts_the_text_at_the_limit_and_stops() -> None:
    loop, adapter, _ = make_loop(
        [Hang(before=Turn().text("Hello", ", ", "world").chunks[:4])], limits=sf.AgentLimits(max_text_chars=8)
    )
    agent_run = loop.run("hi")
    out = run_clean(agent_run)
    assert wire(out) == [
        {"type": "text", "content": "Hello"},
        {"type": "text", "content": ", "},
        {"type": "text", "content": "w"},
        {"type": "done", "reason": "cancel"},
    ]
    assert agent_run.error is not None and agent_run.error.code is E.BUDGET_EXCEEDED
    assert adapter.cancelled == 1


@pytest.mark.parametrize(("limit", "stops"), [(13, False), (12, True)])
def test_the_text_budget_counts_the_whole_run(limit: int, stops: bool) -> None:
    def f() -> int:
        return 1

    loop, _, _ = make_loop(
        [calls(("c1", "f", {}), text="first:"), answer("second:")], [f], limits=sf.AgentLimits(max_text_chars=limit)
    )
    agent_run = loop.run("hi")
    out = run_clean(agent_run)
    assert "".join(c.content for c in out if isinstance(c, sf.TextChunk)) == "first:second:"[:limit]
    assert out[-1].reason == ("cancel" if stops else "stop")


def test_an_output_token_budget_stops_after_the_response_that_passes_it() -> None:
    ran: list[int] = []

    def f() -> int:
        ran.append(1)
        return 1

    loop, _, _ = make_loop(
        [Turn().call("c1", "f", {}).end("tool-calls", output_tokens=50), answer("never")],
        [f],
        limits=sf.AgentLimits(max_output_tokens=40),
    )
    agent_run = loop.run("hi")
    out = run_clean(agent_run)
    assert kinds(out) == ["tool_call", "tool_result", "done"]
    assert out[1].is_error and out[1].result["message"] == "not run: the run used 50 output tokens; its budget is 40"
    assert out[-1].reason == "cancel" and out[-1].usage is not None and out[-1].usage.completion_tokens == 50
    assert agent_run.error is not None and agent_run.error.code is E.BUDGET_EXCEEDED
    assert ran == []


def test_the_text_budget_counts_reasoning_and_stops_at_the_delta_that_passes_it() -> None:
    # Reasoning is not in the flat stream, but it is streamed and held: 120 blocks of 8 MiB used to pass a
    # budget of 1,000 characters. The run stops at the delta that passes it, not at the end of the response
    # (the response here never ends: the turn timeout is only a guard).
    loop, adapter, _ = make_loop(
        [Hang(before=Turn().reasoning("a" * 600).reasoning("b" * 600).reasoning("c" * 600).chunks)],
        limits=sf.AgentLimits(max_text_chars=1000, turn_timeout=10),
    )
    agent_run = loop.run("hi")
    out = run_clean(agent_run)
    assert wire(out) == [{"type": "done", "reason": "cancel"}]
    assert agent_run.error is not None and agent_run.error.code is E.BUDGET_EXCEEDED
    assert agent_run.error.message == "the run's text and reasoning passed its budget of 1000 characters"
    assert adapter.cancelled == 1


def test_reasoning_and_text_share_the_budget() -> None:
    loop, _, _ = make_loop(
        [Hang(before=Turn().reasoning("r" * 600).text("t" * 300, "u" * 300).chunks)],
        limits=sf.AgentLimits(max_text_chars=1000, turn_timeout=10),
    )
    agent_run = loop.run("hi")
    out = run_clean(agent_run)
    assert wire(out) == [
        {"type": "text", "content": "t" * 300},
        {"type": "text", "content": "u" * 100},
        {"type": "done", "reason": "cancel"},
    ]
    assert agent_run.error is not None and agent_run.error.code is E.BUDGET_EXCEEDED


def test_a_reasoning_block_without_deltas_counts_at_its_end() -> None:
    whole = [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "x" * 20}},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "text-delta", "index": 1, "text": "never shown"},
    ]
    loop, _, _ = make_loop([Hang(before=whole)], limits=sf.AgentLimits(max_text_chars=10, turn_timeout=10))
    agent_run = loop.run("hi")
    assert wire(run_clean(agent_run)) == [{"type": "done", "reason": "cancel"}]
    assert agent_run.error is not None and agent_run.error.code is E.BUDGET_EXCEEDED

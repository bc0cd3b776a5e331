"""Usage after an abort: a cancelled or timed-out call reports the usage it received, or None (unknown), never 0 —
in :class:`StreamMetrics`, in the ``done`` chunk, in the ``stream_end`` hook and in the ``chat`` span.
"""

from __future__ import annotations

import asyncio
from typing import Any

import streamfsm as sf

from ..agent_support import Hang, Turn, answer, calls, make_loop, run, usage
from .otel_support import Recorded

E = sf.ErrorCode
RECEIVED = sf.TokenUsage(prompt_tokens=7, completion_tokens=3, total_tokens=10)


def hanging_after_usage() -> Hang:
    """A response that sends a text block and its usage, then hangs before its finish."""
    return Hang(before=[*Turn().text("Hello").chunks, usage(7, 3)])


async def consume(agent_run: sf.AgentRun) -> list[Any]:
    """Every chunk of the run."""
    out = []
    async for chunk in agent_run:
        out.append(chunk)
    return out


def ends(hooks: sf.Hooks) -> list[sf.DoneChunk]:
    """What the ``stream_end`` hooks saw."""
    seen: list[sf.DoneChunk] = []
    hooks.on("stream_end", seen.append)
    return seen


def test_a_timed_out_call_reports_the_usage_it_received(otel: Recorded) -> None:
    hooks = sf.Hooks()
    seen = ends(hooks)
    loop, _, _ = make_loop([hanging_after_usage()], limits=sf.AgentLimits(turn_timeout=1.0), hooks=hooks)
    agent_run = loop.run("hi")
    out = run(consume(agent_run))
    assert agent_run.error is not None and agent_run.error.code is E.TIMEOUT
    assert out[-1].to_wire() == {
        "type": "done",
        "reason": "cancel",
        "usage": {"promptTokens": 7, "completionTokens": 3, "totalTokens": 10},
    }
    assert agent_run.metrics.token_usage == RECEIVED
    assert [turn.token_usage for turn in agent_run.turns] == [RECEIVED]
    assert seen == [sf.DoneChunk(reason="cancel", usage=RECEIVED)]
    [chat] = otel.spans("chat")
    assert chat.attributes is not None
    assert (chat.attributes["gen_ai.usage.input_tokens"], chat.attributes["gen_ai.usage.output_tokens"]) == (7, 3)
    assert chat.attributes["streamfsm.cancel.code"] == "TIMEOUT"
    inputs = otel.histogram("gen_ai.client.token.usage", {"gen_ai.token.type": "input"})
    assert inputs is not None and (inputs.count, inputs.sum) == (1, 7)


def test_a_call_aborted_after_its_usage_came_reports_it() -> None:
    controller = sf.AbortController()
    loop, _, _ = make_loop([hanging_after_usage()])

    async def main() -> sf.AgentRun:
        agent_run = loop.run("hi", signal=controller.signal)
        asyncio.get_running_loop().call_later(1.0, controller.abort, "the user pressed stop")
        await consume(agent_run)
        return agent_run

    agent_run = run(main())
    assert agent_run.error is not None and agent_run.error.code is E.ABORTED
    assert agent_run.done == sf.DoneChunk(reason="cancel", usage=RECEIVED)
    assert agent_run.metrics.token_usage == RECEIVED


def test_a_call_cancelled_before_its_usage_reports_none_never_zero(otel: Recorded) -> None:
    controller = sf.AbortController()
    hooks = sf.Hooks()
    seen = ends(hooks)
    loop, _, _ = make_loop([Hang(before=Turn().text("Hello").chunks[:2])], hooks=hooks)

    async def main() -> sf.AgentRun:
        agent_run = loop.run("hi", signal=controller.signal)
        async for _ in agent_run:
            controller.abort("stop")
        return agent_run

    agent_run = run(main())
    assert agent_run.done is not None and agent_run.done.to_wire() == {"type": "done", "reason": "cancel"}
    assert agent_run.metrics.token_usage is None
    assert agent_run.metrics.to_wire()["tokenUsage"] is None
    assert [turn.token_usage for turn in agent_run.turns] == [None]
    assert seen == [sf.DoneChunk(reason="cancel", usage=None)]
    [chat] = otel.spans("chat")
    assert not any(key.startswith("gen_ai.usage.") for key in chat.attributes or {})
    assert otel.points("gen_ai.client.token.usage") == []  # unknown usage: not reported at all


def test_a_run_cancelled_mid_turn_reports_the_turns_that_reported_theirs() -> None:
    controller = sf.AbortController()
    loop, _, _ = make_loop(
        [calls(("c1", "echo", {"x": 1})), Hang(before=Turn().text("Hello").chunks[:2])], [lambda x: x]
    )

    async def main() -> sf.AgentRun:
        agent_run = loop.run("hi", signal=controller.signal)
        async for chunk in agent_run:
            if chunk.type == "text":
                controller.abort("stop")
        return agent_run

    agent_run = run(main())
    first_turn = sf.TokenUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    assert agent_run.done == sf.DoneChunk(reason="cancel", usage=first_turn)
    assert [turn.token_usage for turn in agent_run.turns] == [first_turn, None]


def test_a_completed_run_is_unchanged() -> None:
    loop, _, _ = make_loop([answer("hi", output_tokens=4)])
    agent_run = loop.run("hi")
    run(consume(agent_run))
    assert agent_run.done == sf.DoneChunk(
        reason="stop", usage=sf.TokenUsage(prompt_tokens=10, completion_tokens=4, total_tokens=14)
    )

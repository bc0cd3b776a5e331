"""Failures and retries in the agent loop: back-off through the injected clock (with full jitter, seeded), errors
that reach the consumer unchanged, failed attempts whose output is discarded, and adapters that break the protocol.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

import streamfsm as sf
from streamfsm import ErrorCode

from ..agent_support import (
    Fail,
    ScriptedAdapter,
    Turn,
    answer,
    calls,
    collect,
    finish,
    kinds,
    make_loop,
    run,
    usage,
    wire,
)

E = ErrorCode


# -- the policy ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "delays"),
    [
        pytest.param(sf.RetryPolicy(), [1000, 2000, 4000], id="the seed's defaults"),
        pytest.param(sf.RetryPolicy(max_retries=6, delay_ms=10_000), [10_000, 20_000, 30_000, 30_000], id="capped"),
        pytest.param(sf.RetryPolicy(delay_ms=500, multiplier=3), [500, 1500, 4500], id="multiplier"),
        pytest.param(sf.RetryPolicy(delay_ms=0), [0, 0, 0], id="no delay"),
    ],
)
def test_backoff_is_exponential_and_capped(policy: sf.RetryPolicy, delays: list[int]) -> None:
    assert [policy.backoff_ms(n) for n in range(1, len(delays) + 1)] == delays


def test_backoff_does_not_overflow() -> None:
    assert sf.RetryPolicy(max_retries=100_000).backoff_ms(100_000) == 30_000
    assert sf.RetryPolicy(max_retries=100_000, delay_ms=0).backoff_ms(100_000) == 0


RATE_LIMIT = sf.LlmError("Rate limit exceeded", E.RATE_LIMIT, status=429)


@pytest.mark.parametrize(
    ("error", "retry", "delay"),
    [
        pytest.param(RATE_LIMIT, 1, 1000, id="first retry"),
        pytest.param(RATE_LIMIT, 3, 4000, id="last retry"),
        pytest.param(RATE_LIMIT, 4, None, id="retries exhausted"),
        pytest.param(sf.LlmError("x", E.RATE_LIMIT, retry_after_ms=5000), 1, 5000, id="retry-after above back-off"),
        pytest.param(sf.LlmError("x", E.RATE_LIMIT, retry_after_ms=10), 2, 2000, id="retry-after below back-off"),
        pytest.param(sf.LlmError("x", E.SERVER, retry_after_ms=30_000), 1, 30_000, id="retry-after at the cap"),
        pytest.param(sf.LlmError("x", E.RATE_LIMIT, retry_after_ms=30_001), 1, None, id="retry-after past the cap"),
        pytest.param(sf.LlmError("x", E.AUTH), 1, None, id="not retryable"),
        pytest.param(sf.LlmError("x", E.BLOCK_NOT_OPEN, chunk_index=3), 1, None, id="protocol error"),
        pytest.param(sf.LlmError("x", "PROVIDER_SPECIFIC"), 1, None, id="unknown code"),
    ],
)
def test_next_delay_without_jitter(error: sf.LlmError, retry: int, delay: int | None) -> None:
    assert sf.RetryPolicy(jitter=False).next_delay_ms(error, retry) == delay


# -- full jitter -----------------------------------------------------------------------------------

#: What the loop knows of retry-after: none, below every back-off, above the first ones, at the cap.
ASKED = [None, 10, 1500, 5000, 30_000]


def test_jitter_is_the_default_and_its_draws_are_deterministic_under_a_seed() -> None:
    assert sf.RetryPolicy().jitter
    policy = sf.RetryPolicy(seed=7, max_retries=5)
    rng = policy.rng()
    delays = [policy.next_delay_ms(RATE_LIMIT, n, rng) for n in range(1, 6)]
    # round(uniform(0, ceiling)) from random.Random(7), one draw per retry: the same on every machine.
    assert delays == [324, 302, 2604, 579, 8574]
    draws = random.Random(7)
    assert delays == [round(draws.uniform(0, policy.backoff_ms(n))) for n in range(1, 6)]
    rng = policy.rng()  # a new source starts the sequence again
    assert [policy.next_delay_ms(RATE_LIMIT, n, rng) for n in range(1, 6)] == delays
    # Without a source of its own, each call draws the seeded source's first number.
    assert policy.next_delay_ms(RATE_LIMIT, 1) == policy.next_delay_ms(RATE_LIMIT, 1) == 324


@pytest.mark.parametrize("asked", ASKED)
def test_jittered_delays_stay_within_zero_and_the_ceiling_and_never_below_retry_after(asked: int | None) -> None:
    error = sf.LlmError("busy", E.RATE_LIMIT, retry_after_ms=asked)
    for seed in range(200):
        policy = sf.RetryPolicy(seed=seed, max_retries=7)
        rng = policy.rng()
        for retry in range(1, 8):
            delay = policy.next_delay_ms(error, retry, rng)
            ceiling = policy.backoff_ms(retry)
            assert delay is not None
            assert max(0, asked or 0) <= delay <= max(ceiling, asked or 0), (seed, retry, delay)


def test_jitter_spreads_the_delays_over_the_whole_range() -> None:
    # 1,000 seeded draws under a ceiling of 1,000 ms: bounds that a uniform draw passes with room to spare.
    delays = [sf.RetryPolicy(seed=seed).next_delay_ms(RATE_LIMIT, 1) for seed in range(1000)]
    assert all(d is not None and 0 <= d <= 1000 for d in delays)
    numbers = [d for d in delays if d is not None]
    assert min(numbers) < 50 and max(numbers) > 950 and 400 < sum(numbers) / len(numbers) < 600


def test_a_retry_after_past_the_cap_is_still_not_retried_with_jitter() -> None:
    policy = sf.RetryPolicy(seed=1)
    assert policy.next_delay_ms(sf.LlmError("x", E.RATE_LIMIT, retry_after_ms=30_001), 1) is None
    assert policy.next_delay_ms(RATE_LIMIT, 4) is None  # retries exhausted
    assert policy.next_delay_ms(sf.LlmError("x", E.AUTH), 1) is None  # not retryable


def test_policy_is_checked() -> None:
    with pytest.raises(ValueError):
        sf.RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError):
        sf.RetryPolicy(multiplier=0.5)


# -- retries in a run ------------------------------------------------------------------------------


def test_a_rate_limit_succeeds_on_retry_after_the_back_off() -> None:
    loop, adapter, clock = make_loop(
        [Fail(RATE_LIMIT), Fail(RATE_LIMIT), answer("Hello, world!")], retry=sf.RetryPolicy(jitter=False)
    )
    started = clock.now
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    assert wire(out) == [
        {
            "type": "error",
            "error": {"message": "Rate limit exceeded", "code": "RATE_LIMIT", "status": 429},
            "recoverable": True,
            "retryAfter": 1000,
        },
        {
            "type": "error",
            "error": {"message": "Rate limit exceeded", "code": "RATE_LIMIT", "status": 429},
            "recoverable": True,
            "retryAfter": 2000,
        },
        {"type": "text", "content": "Hello, world!"},
        {"type": "done", "reason": "stop", "usage": {"promptTokens": 10, "completionTokens": 5, "totalTokens": 15}},
    ]
    assert clock.sleeps == [1.0, 2.0] and clock.now - started == 3.0
    assert len(adapter.requests) == 3
    assert agent_run.metrics.retry_count == 2 and agent_run.turns[0].retry_count == 2
    assert agent_run.error is None
    assert out[0].error is RATE_LIMIT  # the very error the adapter raised


def test_a_seeded_run_sleeps_the_jittered_delays_it_reports(caplog: pytest.LogCaptureFixture) -> None:
    def one_run() -> tuple[list[float], list[Any], list[int]]:
        errors = [sf.LlmError(f"overloaded {n}", E.SERVER, status=503) for n in range(3)]
        loop, _, clock = make_loop([*(Fail(e) for e in errors), answer("ok")], retry=sf.RetryPolicy(seed=7))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="streamfsm.agent"):
            out = run(collect(loop.run("hi")))
        logged = [r.__dict__["delay_ms"] for r in caplog.records if r.msg == "llm_retry"]
        return clock.sleeps, out, logged

    sleeps, out, logged = one_run()
    # The sequence of test_jitter_is_the_default_and_its_draws_are_deterministic_under_a_seed, one draw per retry.
    assert [c.retry_after for c in out[:3]] == logged == [324, 302, 2604]
    assert sleeps == [0.324, 0.302, 2.604]
    assert kinds(out) == ["error", "error", "error", "text", "done"]
    again, _, _ = one_run()
    assert again == sleeps  # each run has its own source: a seeded run is the same every time


def test_a_jittered_back_off_never_sleeps_less_than_the_providers_retry_after() -> None:
    slow_down = sf.LlmError("slow down", E.RATE_LIMIT, status=429, retry_after_ms=900)
    for seed in range(20):
        loop, _, clock = make_loop(
            [Fail(slow_down), Fail(slow_down), Fail(slow_down), answer("ok")], retry=sf.RetryPolicy(seed=seed)
        )
        out = run(collect(loop.run("hi")))
        ceilings = [1000, 2000, 4000]
        assert [c.retry_after for c in out[:3]] == [round(s * 1000) for s in clock.sleeps]
        assert all(900 <= round(s * 1000) <= c for s, c in zip(clock.sleeps, ceilings, strict=True)), clock.sleeps


def test_the_providers_retry_after_is_honoured() -> None:
    slow_down = sf.LlmError("slow down", E.RATE_LIMIT, status=429, retry_after_ms=5000)
    loop, _, clock = make_loop([Fail(slow_down), answer("ok")])
    out = run(collect(loop.run("hi")))
    assert out[0].retry_after == 5000 and clock.sleeps == [5.0]


def test_retries_run_out_and_the_last_error_ends_the_run() -> None:
    errors = [sf.LlmError(f"overloaded {n}", E.SERVER, status=503) for n in range(4)]
    loop, adapter, clock = make_loop([Fail(e) for e in errors], retry=sf.RetryPolicy(jitter=False))
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    assert kinds(out) == ["error", "error", "error", "error", "done"]
    assert [c.recoverable for c in out[:4]] == [True, True, True, False]
    assert [c.error for c in out[:4]] == errors
    assert out[-1].reason == "error" and out[-1].usage is None
    assert agent_run.error is errors[-1]
    assert clock.sleeps == [1.0, 2.0, 4.0] and len(adapter.requests) == 4


def test_a_non_recoverable_error_ends_the_run_at_once() -> None:
    bad_key = sf.LlmError("Invalid API key", E.AUTH, status=401, request_id="req-9")
    loop, adapter, clock = make_loop([Fail(bad_key), answer("never")])
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    assert wire(out) == [
        {
            "type": "error",
            "error": {"message": "Invalid API key", "code": "AUTH", "status": 401, "requestId": "req-9"},
            "recoverable": False,
        },
        {"type": "done", "reason": "error"},
    ]
    assert out[0].error is bad_key and agent_run.error is bad_key
    assert clock.sleeps == [] and len(adapter.requests) == 1
    assert agent_run.messages == [sf.UserMessage(content="hi")]


def test_the_partial_output_of_a_failed_attempt_is_discarded() -> None:
    partial = [
        *Turn().text("Hel").call("call_1", "lookup", {"q": "x"}).chunks,
        {"type": "block-start", "index": 2, "blockType": "text"},
        {"type": "text-delta", "index": 2, "text": "half a"},
    ]
    ran: list[str] = []

    def lookup(q: str) -> str:
        ran.append(q)
        return q

    loop, adapter, _ = make_loop(
        [Fail(sf.LlmError("connection reset", E.TRANSPORT), after=partial), answer("Hello")], [lookup]
    )
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    # The consumer saw the attempt as it came, then the recoverable error that voids it.
    assert kinds(out) == ["text", "tool_call", "text", "error", "text", "done"]
    assert out[3].recoverable
    # Nothing of it reached the conversation, the next request, or a tool.
    assert ran == []
    assert [m.role for m in agent_run.messages] == ["user", "assistant"]
    last = agent_run.messages[-1]
    assert isinstance(last, sf.AssistantMessage) and last.blocks == (sf.TextBlock(text="Hello"),)
    assert [m.role for m in adapter.requests[1].messages] == ["user"]


def test_a_retryable_error_finish_is_retried_and_a_fatal_one_reported() -> None:
    overloaded = [usage(), finish("error", {"message": "overloaded", "code": "SERVER", "providerRetryAfterMs": 1500})]
    refused = [finish("error", {"message": "content filtered", "code": "content_filter", "status": 400})]
    loop, _, clock = make_loop([overloaded, refused])
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    assert kinds(out) == ["error", "error", "done"]
    assert (out[0].recoverable, out[0].retry_after, out[0].error.code) == (True, 1500, E.SERVER)
    assert (out[1].recoverable, out[1].error.code, out[1].error.message) == (
        False,
        "content_filter",
        "content filtered",
    )
    assert out[1].error.status == 400 and clock.sleeps == [1.5]
    # The failed attempt's usage was billed: it counts.
    assert out[-1].usage is not None and out[-1].usage.total_tokens == 15


def test_retryable_codes_are_configurable() -> None:
    broken = [{"type": "text-delta", "index": 0, "text": "x"}]
    retry = sf.RetryPolicy(retryable_codes=frozenset({E.BLOCK_NOT_OPEN}), delay_ms=1)
    loop, _, _ = make_loop([broken, answer("fine")], retry=retry)
    out = run(collect(loop.run("hi")))
    assert kinds(out) == ["error", "text", "done"] and out[0].error.code is E.BLOCK_NOT_OPEN


def test_a_back_off_sleep_that_fails_fails_the_run() -> None:
    loop, adapter, _ = make_loop([Fail(RATE_LIMIT), answer("never")])

    async def broken_sleep(seconds: float) -> None:
        raise RuntimeError("no timer")

    loop.sleep = broken_sleep
    agent_run = loop.run("hi")
    with pytest.raises(RuntimeError, match="no timer"):
        run(collect(agent_run))
    assert len(adapter.requests) == 1  # not retried unslept
    assert agent_run.done is not None and agent_run.done.reason == "cancel"
    assert agent_run.error is not None and agent_run.error.code is E.UNKNOWN
    assert agent_run.error.message == "the run failed: RuntimeError: no timer"


def test_no_retries() -> None:
    loop, _, _ = make_loop([Fail(RATE_LIMIT)], retry=sf.RetryPolicy(max_retries=0))
    out = run(collect(loop.run("hi")))
    assert kinds(out) == ["error", "done"] and not out[0].recoverable


# -- errors from the adapter, never silent ---------------------------------------------------------


def test_an_exception_that_is_not_an_llm_error_becomes_unknown_with_its_cause() -> None:
    boom = RuntimeError("socket on fire")
    loop, _, _ = make_loop([Fail(boom, after=Turn().text("hi").chunks)])
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    assert kinds(out) == ["text", "error", "done"]
    err = out[1].error
    assert err.code is E.UNKNOWN and err.__cause__ is boom
    assert err.message == "ScriptedAdapter failed: RuntimeError: socket on fire"
    assert not out[1].recoverable and agent_run.error is err


def test_an_adapter_whose_own_generate_raises_a_foreign_exception() -> None:
    """An adapter may replace ``generate``: what it raises that is not an ``LlmError`` the loop wraps, as the
    adapter's ``generate`` would."""
    boom = OSError("disk gone")

    class Raw(ScriptedAdapter):
        async def generate(self, options: sf.GenerateOptions, **kwargs: Any) -> AsyncIterator[sf.StreamChunk]:
            yield Turn().text("hi").chunks[0]
            raise boom

    loop = sf.AgentLoop(Raw([]), model="m", retry=sf.RetryPolicy(max_retries=0))
    agent_run = loop.run("hi")
    run(collect(agent_run))
    err = agent_run.error
    assert err is not None and err.code is E.UNKNOWN and err.__cause__ is boom
    assert err.message == "Raw failed: OSError: disk gone"


def test_an_adapter_that_raises_cancelled_error_of_its_own_ends_the_run_as_aborted() -> None:
    # Nobody cancelled the run: its consumer is not cancelled, and the run ends as an adapter abort does.
    loop, adapter, _ = make_loop([Fail(asyncio.CancelledError(), after=Turn().text("hi").chunks[:2])])
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    assert kinds(out) == ["text", "done"] and out[-1].reason == "cancel"
    assert agent_run.error is not None and agent_run.error.code is E.ABORTED
    assert agent_run.error.message == "ScriptedAdapter was cancelled"
    assert adapter.closed == 1


def test_an_exception_before_the_stream_starts_becomes_unknown_too() -> None:
    loop, adapter, _ = make_loop([answer("never")])

    async def resolve_model(model: str) -> sf.ModelInfo:
        raise KeyError(model)

    adapter.resolve_model = resolve_model  # type: ignore[method-assign]
    out = run(collect(loop.run("hi")))
    assert out[0].error.code is E.UNKNOWN and isinstance(out[0].error.__cause__, KeyError)


# -- adapters that break the protocol ------------------------------------------------------------

BROKEN = [
    pytest.param(
        [*Turn().text("ok").chunks, {"type": "text-delta", "index": 0, "text": "!"}],
        E.BLOCK_NOT_OPEN,
        3,
        id="a delta after its block ended",
    ),
    pytest.param(
        [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "abc"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "abd"}},
        ],
        E.BLOCK_CONTENT_MISMATCH,
        2,
        id="block-end that differs from the deltas",
    ),
    pytest.param(
        [*Turn().call("c1", "note", {"text": "x"}).chunks, {"type": "finish", "reason": {"kind": "stop"}}],
        E.USAGE_MISSING,
        4,
        id="a completed call, then a finish without usage",
    ),
    pytest.param([*Turn().call("c1", "note", {"text": "x"}).chunks, usage()], E.STREAM_TRUNCATED, 5, id="no finish"),
    pytest.param([{"type": "mystery"}], E.INVALID_CHUNK, 0, id="unknown chunk type"),
]


@pytest.mark.parametrize("eager", [False, True], ids=["", "eager"])
@pytest.mark.parametrize(("chunks", "code", "position"), BROKEN)
def test_a_broken_stream_surfaces_the_coded_error_and_passes_nothing_half_assembled_on(
    chunks: list[dict[str, Any]], code: ErrorCode, position: int, eager: bool
) -> None:
    ran: list[str] = []

    async def note(text: str) -> None:
        ran.append(text)

    loop, _, _ = make_loop([list(chunks)], [note], eager_tools=eager)
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    error, done = out[-2:]
    assert isinstance(error, sf.ErrorChunk) and not error.recoverable
    assert (error.error.code, error.error.chunk_index) == (code, position)
    assert done.reason == "error" and agent_run.error is error.error
    assert agent_run.messages == [sf.UserMessage(content="hi")]  # no half-assembled turn
    assert not any(isinstance(c, sf.ToolResultChunk) for c in out)  # no result of a call of a broken stream
    if not eager:
        assert ran == []  # an eager call may have started at its block-end: that is what eager means


def test_a_provider_abort_ends_the_run_as_cancelled() -> None:
    aborted = [finish("aborted", {"message": "the provider stopped", "code": "ABORTED"})]
    loop, _, _ = make_loop([Turn().text("so far").chunks + aborted])
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    assert kinds(out) == ["text", "done"] and out[-1].reason == "cancel"
    assert agent_run.error is not None and agent_run.error.code is E.ABORTED
    assert agent_run.messages == [sf.UserMessage(content="hi")]


def test_a_provider_abort_cancels_an_eager_tool() -> None:
    log: list[str] = []

    async def forever() -> None:
        log.append("started")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            log.append("cancelled")
            raise

    aborted = [finish("aborted", {"message": "the provider stopped", "code": "ABORTED"})]
    loop, _, _ = make_loop([Turn().call("c1", "forever", {}).chunks + aborted], [forever], eager_tools=True)
    agent_run = loop.run("hi")

    async def main() -> list[Any]:
        out = await collect(agent_run)
        await asyncio.sleep(0)
        assert asyncio.all_tasks() == {asyncio.current_task()}
        return out

    out = run(main())
    assert kinds(out) == ["tool_call", "done"] and out[-1].reason == "cancel"
    assert log == ["started", "cancelled"]
    assert agent_run.messages == [sf.UserMessage(content="hi")]


def test_tool_results_between_retries_stay() -> None:
    def one() -> int:
        return 1

    loop, _, _ = make_loop([calls(("c1", "one", {})), Fail(RATE_LIMIT), answer("done")], [one])
    out = run(collect(loop.run("hi")))
    assert kinds(out) == ["tool_call", "tool_result", "error", "text", "done"]

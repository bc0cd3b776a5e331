"""The metrics of ``streamfsm.otel``, read from the real SDK's in-memory reader: the GenAI conventions' names,
units and bucket boundaries, times on the loop's (fake) clock, usage only when known, and the protocol's own
counter of rejected streams.
"""

from __future__ import annotations

import streamfsm as sf

from ..agent_support import Fail, Tick, Turn, answer, collect, make_loop, run
from .otel_support import Recorded

E = sf.ErrorCode
#: The boundaries the conventions give (docs/gen-ai/gen-ai-metrics.md of open-telemetry/semantic-conventions-genai).
TOKEN_BOUNDARIES = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
SECONDS_BOUNDARIES = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "ScriptedAdapter", "gen_ai.request.model": "m"}


def timed_response() -> list[object]:
    """Six chunks: the first 0.5 s after the request, the next two 0.25 s apart, the rest at once."""
    start, first, second, end, used, finish = Turn().text("a", "b").end("stop", input_tokens=12, output_tokens=2)
    return [Tick(0.5), start, Tick(0.25), first, Tick(0.25), second, end, used, finish]


def test_time_to_first_chunk_time_per_chunk_duration_and_tokens(otel: Recorded) -> None:
    loop, _, _ = make_loop([timed_response()], model="m")
    run(collect(loop.run("hi")))

    first = otel.histogram("gen_ai.client.operation.time_to_first_chunk", CHAT)
    assert first is not None and (first.count, first.sum) == (1, 0.5)
    assert tuple(first.explicit_bounds) == SECONDS_BOUNDARIES
    per_chunk = otel.histogram("gen_ai.client.operation.time_per_output_chunk", CHAT)
    assert per_chunk is not None and (per_chunk.count, per_chunk.sum) == (5, 0.5)  # each chunk after the first
    assert (per_chunk.min, per_chunk.max) == (0.0, 0.25)
    duration = otel.histogram("gen_ai.client.operation.duration", CHAT)
    assert duration is not None and (duration.count, duration.sum) == (1, 1.0)
    assert "error.type" not in duration.attributes
    assert tuple(duration.explicit_bounds) == SECONDS_BOUNDARIES

    inputs = otel.histogram("gen_ai.client.token.usage", {**CHAT, "gen_ai.token.type": "input"})
    outputs = otel.histogram("gen_ai.client.token.usage", {**CHAT, "gen_ai.token.type": "output"})
    assert inputs is not None and outputs is not None
    assert (inputs.count, inputs.sum, outputs.count, outputs.sum) == (1, 12, 1, 2)
    assert tuple(inputs.explicit_bounds) == TOKEN_BOUNDARIES

    [chat] = otel.spans("chat")
    assert (chat.attributes or {})["gen_ai.response.time_to_first_chunk"] == 0.5


def test_the_instruments_units(otel: Recorded) -> None:
    loop, _, _ = make_loop([answer("hi")], model="m")
    run(collect(loop.run("hi")))
    assert otel.units() == {
        "gen_ai.client.token.usage": "{token}",
        "gen_ai.client.operation.duration": "s",
        "gen_ai.client.operation.time_to_first_chunk": "s",
        "gen_ai.client.operation.time_per_output_chunk": "s",
    }


def test_rejected_streams_are_counted_by_code_and_failures_carry_error_type(otel: Recorded) -> None:
    broken = [{"type": "text-delta", "index": 0, "text": "x"}]
    truncated = Turn().text("cut").chunks
    limited = Fail(sf.LlmError("slow down", E.RATE_LIMIT, status=429))
    loop, _, _ = make_loop([broken, limited, truncated, broken], model="m")
    for _ in range(3):
        run(collect(loop.run("hi")))

    rejected = "streamfsm.client.stream.rejected"
    not_open = otel.counter(rejected, {"error.type": "BLOCK_NOT_OPEN", **CHAT})
    cut = otel.counter(rejected, {"error.type": "STREAM_TRUNCATED"})
    assert not_open is not None and not_open.value == 2
    assert cut is not None and cut.value == 1
    assert otel.counter(rejected, {"error.type": "RATE_LIMIT"}) is None  # the provider's failure, not a rejection
    assert otel.units()[rejected] == "{stream}"

    failed = otel.histogram("gen_ai.client.operation.duration", {**CHAT, "error.type": "RATE_LIMIT"})
    assert failed is not None and failed.count == 1
    # The retried attempt after the rate limit got the truncated stream: both are in the duration, each by its code.
    assert otel.histogram("gen_ai.client.operation.duration", {"error.type": "STREAM_TRUNCATED"}) is not None


def test_no_usage_is_reported_when_unknown(otel: Recorded) -> None:
    # A stream that fails before its usage: its duration is recorded, its tokens are not.
    loop, _, _ = make_loop([Fail(sf.LlmError("down", E.AUTH, status=401), after=Turn().text("x").chunks)], model="m")
    run(collect(loop.run("hi")))
    assert otel.histogram("gen_ai.client.operation.duration", {"error.type": "AUTH"}) is not None
    assert otel.points("gen_ai.client.token.usage") == []

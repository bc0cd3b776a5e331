"""The names and values streamfsm's spans and metrics carry, checked against the GenAI semantic conventions (the
``opentelemetry-semantic-conventions`` package) and its message schema, with the real SDK's in-memory exporter and
reader: ``error.type`` of low cardinality, the conventions' finish reasons, ``tool_call_response`` parts, well-known
provider names, and the response's id and model on chat completions' spans."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import GenAiProviderNameValues
from opentelemetry.semconv.attributes.error_attributes import ErrorTypeValues

import streamfsm as sf
from streamfsm.otel import PROVIDER_NAMES, StreamfsmInstrumentor

from ..agent_support import Turn, answer, calls, collect, finish, make_loop, run, usage
from ..sse_server import SSE, SSEServer, openai_events
from .otel_support import Recorded, recorder


def odd_finish(reason: str) -> list[dict[str, Any]]:
    """A response that ends with an error finish whose code is ``reason`` (a provider's unknown finish reason)."""
    return [*Turn().text("partial").chunks, usage(), finish("error", {"message": "stopped", "code": reason})]


def test_an_unknown_error_code_is_other_and_known_ones_stay(otel: Recorded) -> None:
    """400 distinct 4 KiB finish reasons: one metric series, not 400; a known code keeps its name."""
    reasons = [f"REASON_{n}_" + "X" * 4096 for n in range(400)]
    loop, _, _ = make_loop([odd_finish(reason) for reason in reasons] + [odd_finish("CONTENT_FILTER")])
    for _ in range(401):
        run(collect(loop.run("hi")))
    other = ErrorTypeValues.OTHER.value
    types = {(span.attributes or {}).get("error.type") for span in otel.spans()}
    assert types == {other, "CONTENT_FILTER"}
    series = {p.attributes.get("error.type") for p in otel.points("gen_ai.client.operation.duration")}
    assert series == {other, "CONTENT_FILTER"}
    longest = max(len(str(v)) for s in otel.spans() for v in (s.attributes or {}).values())
    assert longest < 64


def test_finish_reasons_are_the_conventions_values() -> None:
    recorded = recorder()
    instrumentor = StreamfsmInstrumentor()
    instrumentor.instrument(
        tracer_provider=recorded.tracer_provider, meter_provider=recorded.meter_provider, capture_content=True
    )
    try:

        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        loop, _, _ = make_loop([calls(("c1", "add", {"a": 1, "b": 2})), answer("3")], [add])
        run(collect(loop.run("1 + 2?")))
        filtered, _, _ = make_loop([odd_finish("CONTENT_FILTER")])
        run(collect(filtered.run("hi")))
    finally:
        instrumentor.uninstrument()
    first, second, blocked = recorded.spans("chat")
    reasons = [(s.attributes or {})["gen_ai.response.finish_reasons"] for s in (first, second, blocked)]
    assert reasons == [("tool_call",), ("stop",), ("content_filter",)]
    output = json.loads(str((first.attributes or {})["gen_ai.output.messages"]))
    assert output[0]["finish_reason"] == "tool_call"
    # The tool's result, in the next request's input, as the schema's tool_call_response part.
    tool = json.loads(str((second.attributes or {})["gen_ai.input.messages"]))[-1]
    assert tool == {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "3"}]}
    agents = recorded.spans("invoke_agent")
    assert [(s.attributes or {})["gen_ai.response.finish_reasons"] for s in agents] == [("stop",), ("content_filter",)]


def test_every_mapped_provider_name_is_well_known() -> None:
    well_known = {value.value for value in GenAiProviderNameValues}
    assert set(PROVIDER_NAMES.values()) <= well_known
    from streamfsm._semconv import WELL_KNOWN_PROVIDERS

    assert well_known == WELL_KNOWN_PROVIDERS


def test_a_route_without_a_well_known_name_is_reported_as_named(otel: Recorded) -> None:
    loop, _, _ = make_loop([answer("hi")], options=sf.GenerateOptions(model="kimi-k2", provider="moonshot"), model=None)
    run(collect(loop.run("hi")))
    [chat] = otel.spans("chat")
    assert (chat.attributes or {})["gen_ai.provider.name"] == "moonshot"


def test_chat_completions_spans_carry_the_response_id_and_model(otel: Recorded) -> None:
    """The chunks carry ``id`` and ``model`` (the model the server answered with, not always the one asked for)."""
    head = {"id": "chatcmpl-9", "model": "deepseek-v3.2-exp"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**head, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
    ]
    with SSEServer() as server:
        server.script(SSE(openai_events(chunks)))
        adapter = sf.OpenAICompatibleAdapter(server.url, provider="deepseek")
        run(collect(sf.AgentLoop(adapter, model="deepseek-chat").run("hi")))
    [chat] = otel.spans("chat")
    attributes = chat.attributes or {}
    assert attributes["gen_ai.response.id"] == "chatcmpl-9"
    assert attributes["gen_ai.response.model"] == "deepseek-v3.2-exp"
    assert attributes["gen_ai.request.model"] == "deepseek-chat"

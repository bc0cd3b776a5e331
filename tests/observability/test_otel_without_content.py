"""With content capture off (the default), nothing a span exports quotes a tool's result or the model's output: a
failed span's status says its error type and nothing else, whatever the error's message quotes. Recorded by the
real SDK's in-memory exporter; with capture on, the messages are there."""

from __future__ import annotations

import orjson
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

import streamfsm as sf
from streamfsm.otel import StreamfsmInstrumentor

from ..agent_support import Turn, answer, calls, collect, make_loop, run
from .otel_support import Recorded, recorder

SECRETS = ("sk-live-PLANTED-1", "sk-live-PLANTED-2", "sk-live-PLANTED-3")


def exported(span: ReadableSpan) -> str:
    """Everything the exporter has of ``span``: its name, status, attributes and events, as one text."""
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    return orjson.dumps([span.name, span.status.description, dict(span.attributes or {}), events], default=str).decode()


def leaked(otel: Recorded) -> list[str]:
    """The planted secrets that reached the exporter."""
    spans = [exported(span) for span in otel.spans()]
    return [secret for secret in SECRETS if any(secret in text for text in spans)]


#: A tool's arguments: a user number (a string is refused, and the JSON Schema refusal quotes it).
LOGIN = {"type": "object", "properties": {"user": {"type": "integer"}}}


def tools() -> list[sf.Tool]:
    def raises() -> None:
        """Fails with its exception text."""
        raise RuntimeError(f"connection to postgres://admin:{SECRETS[0]}@db failed")

    def tool_error() -> None:
        """Fails with its own message."""
        raise sf.ToolError(f"token {SECRETS[1]} expired")

    def login(args: dict[str, int]) -> str:
        """Never reached: the schema refuses the argument."""
        return "in"

    return [sf.Tool(raises), sf.Tool(tool_error), sf.Tool(login, parameters=LOGIN)]


def test_failed_tool_calls_say_their_error_type_and_nothing_of_their_result(otel: Recorded) -> None:
    loop, _, _ = make_loop(
        [calls(("c1", "raises", {}), ("c2", "tool_error", {}), ("c3", "login", {"user": SECRETS[2]})), answer("ok")],
        tools(),
    )
    out = run(collect(loop.run("go")))
    results = [c for c in out if c.type == "tool_result"]
    assert all(r.is_error for r in results) and len(results) == 3
    assert all(any(s in orjson.dumps(r.result).decode() for s in SECRETS) for r in results)  # the model is told
    spans = otel.spans("execute_tool")
    assert len(spans) == 3
    for span in spans:
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "tool_error"
        assert (span.attributes or {})["error.type"] == "tool_error"
    assert leaked(otel) == []


def test_a_rejected_stream_says_its_code_and_nothing_of_the_output(otel: Recorded) -> None:
    """BLOCK_CONTENT_MISMATCH quotes the block's text: neither the chat span nor the run's span carries it."""
    turn = Turn().text(f"api key {SECRETS[0]}")
    turn.chunks[-1]["block"]["text"] = f"api key {SECRETS[1]}"  # the final text contradicts the deltas
    loop, _, _ = make_loop([turn.end("stop")])
    out = run(collect(loop.run("hi")))
    assert out[-1].reason == "error" and SECRETS[0] in out[-2].error.message  # the message quotes it
    for span in (*otel.spans("chat"), *otel.spans("invoke_agent")):
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "BLOCK_CONTENT_MISMATCH"
    assert leaked(otel) == []


def test_invalid_tool_arguments_are_not_quoted_by_a_bare_streams_span(otel: Recorded) -> None:
    """TOOL_ARGUMENTS_INVALID quotes the arguments (a bare stream: the machine checks them)."""
    _, adapter, _ = make_loop([Turn().call("c1", "login", f'["{SECRETS[2]}"]').end("tool-calls")])

    async def read() -> None:
        async for _ in adapter.generate(sf.GenerateOptions(model="scripted-model")):
            pass

    with pytest.raises(sf.LlmError) as caught:
        run(read())
    assert caught.value.code == sf.ErrorCode.TOOL_ARGUMENTS_INVALID and SECRETS[2] in caught.value.message
    [chat] = otel.spans("chat")
    assert chat.status.description == "TOOL_ARGUMENTS_INVALID"
    assert leaked(otel) == []


def test_with_capture_on_the_status_says_the_message() -> None:
    recorded = recorder()
    instrumentor = StreamfsmInstrumentor()
    instrumentor.instrument(
        tracer_provider=recorded.tracer_provider, meter_provider=recorded.meter_provider, capture_content=True
    )
    try:
        loop, _, _ = make_loop([calls(("c1", "raises", {})), answer("ok")], tools())
        run(collect(loop.run("go")))
    finally:
        instrumentor.uninstrument()
    [tool] = recorded.spans("execute_tool")
    assert SECRETS[0] in str(tool.status.description)

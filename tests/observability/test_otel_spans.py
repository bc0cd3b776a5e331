"""The spans of ``streamfsm.otel``, recorded by the real OpenTelemetry SDK: one ``invoke_agent`` per run, one
``chat`` per model request (children of it), one ``execute_tool`` per tool call; errors, retries and cancels as the
GenAI semantic conventions and the module docstring say; nothing once uninstrumented.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

import streamfsm as sf
from streamfsm.otel import StreamfsmInstrumentor

from ..agent_support import FakeClock, Hang, Turn, answer, calls, collect, make_loop, run, usage
from ..sse_server import SSE, Reply, SSEServer, anthropic_events, chat_delta, openai_events
from .otel_support import Recorded, recorder

E = sf.ErrorCode
REPO = Path(__file__).resolve().parents[2]


def tool_delta(index: int, arguments: str, call_id: str, name: str) -> dict[str, Any]:
    """Parallel tool call ``index`` in one delta."""
    call = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return chat_delta(tool_calls=[call])


def ending(reason: str, prompt: int, completion: int, cached: int = 0) -> list[dict[str, Any]]:
    """The finish reason, then the usage chunk (``stream_options.include_usage``)."""
    tokens: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if cached:
        tokens["prompt_tokens_details"] = {"cached_tokens": cached}
    return [
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]},
        {"id": "chatcmpl-1", "choices": [], "usage": tokens},
    ]


TOOL_TURN = [
    chat_delta(role="assistant", content="Reading both"),
    tool_delta(0, '{"path": "src/index.ts"}', "call_1", "read_file"),
    tool_delta(1, '{"path": "src/app.ts"}', "call_2", "read_file"),
    *ending("tool_calls", 120, 40, cached=100),
]
ANSWER_TURN = [chat_delta(role="assistant", content="Both export a name."), *ending("stop", 200, 10)]


def children(parent: ReadableSpan, spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """The spans whose parent is ``parent``, in the order they ended."""
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def test_a_tool_calling_run_over_http_gives_one_agent_span_a_chat_span_per_request_and_a_tool_span_per_call(
    otel: Recorded,
) -> None:
    async def read_file(path: str) -> dict[str, str]:
        """Read a file."""
        return {"content": f"export const name = {path!r}"}

    clock = FakeClock()
    with SSEServer() as server:
        server.script(
            SSE(openai_events(TOOL_TURN)),
            Reply(429, {"error": {"message": "Rate limit exceeded"}}, {"retry-after-ms": "1500"}),
            SSE(openai_events(ANSWER_TURN)),
        )
        adapter = sf.OpenAICompatibleAdapter(server.url, api_key="sk-test")
        loop = sf.AgentLoop(
            adapter, [read_file], model="deepseek-chat", name="file-reader", clock=clock, sleep=clock.sleep
        )
        agent_run = loop.run("what do the two files export?")
        out = run(collect(agent_run))
    assert out[-1].reason == "stop" and agent_run.metrics.retry_count == 1

    spans = otel.spans()
    [agent] = otel.spans("invoke_agent")
    assert agent.name == "invoke_agent file-reader" and agent.kind is SpanKind.INTERNAL and agent.parent is None
    assert agent.status.status_code is StatusCode.UNSET
    assert dict(agent.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "file-reader",
        "gen_ai.provider.name": "openai",  # the openai-compatible route speaks OpenAI's API
        "gen_ai.request.model": "deepseek-chat",
        "server.address": "127.0.0.1",
        "server.port": int(server.url.rsplit(":", 1)[1]),
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 320,
        "gen_ai.usage.output_tokens": 50,
    }

    # Every other span is the run's child: three requests (one rate-limited) and two tool calls.
    assert sorted(s.name for s in children(agent, spans)) == [
        "chat deepseek-chat",
        "chat deepseek-chat",
        "chat deepseek-chat",
        "execute_tool read_file",
        "execute_tool read_file",
    ]
    first, limited, second = sorted(otel.spans("chat"), key=lambda s: s.start_time or 0)
    for span in (first, limited, second):
        assert span.kind is SpanKind.CLIENT
        attributes = span.attributes or {}
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "deepseek-chat"
        assert attributes["gen_ai.request.stream"] is True
    assert first.attributes is not None and second.attributes is not None and limited.attributes is not None
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert first.attributes["gen_ai.usage.input_tokens"] == 120  # the cached tokens included, as the conventions ask
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 100
    assert first.attributes["gen_ai.usage.output_tokens"] == 40
    assert first.attributes["gen_ai.response.time_to_first_chunk"] == 0.0  # the loop's (fake) clock
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert (second.attributes["gen_ai.usage.input_tokens"], second.attributes["gen_ai.usage.output_tokens"]) == (
        200,
        10,
    )
    assert (first.attributes["streamfsm.attempt"], limited.attributes["streamfsm.attempt"]) == (1, 1)
    assert second.attributes["streamfsm.attempt"] == 2

    # The rate limit: an ERROR chat span with the code, no usage (none came), and the retry as an event of the run.
    assert limited.status.status_code is StatusCode.ERROR
    assert limited.attributes["error.type"] == "RATE_LIMIT"
    assert limited.attributes["gen_ai.response.finish_reasons"] == ("error",)
    assert not any(key.startswith("gen_ai.usage.") for key in limited.attributes)
    [retry] = agent.events
    assert retry.name == "streamfsm.retry"
    assert dict(retry.attributes or {}) == {
        "error.type": "RATE_LIMIT",
        "streamfsm.retry.count": 1,
        "streamfsm.retry.delay_ms": 1500,
    }

    tools = otel.spans("execute_tool")
    assert sorted((s.attributes or {})["gen_ai.tool.call.id"] for s in tools) == ["call_1", "call_2"]
    for span in tools:
        assert span.kind is SpanKind.INTERNAL and span.status.status_code is StatusCode.UNSET
        assert (span.attributes or {})["gen_ai.tool.name"] == "read_file"
        assert "gen_ai.tool.call.arguments" not in (span.attributes or {})  # content only when opted in
    # No message content anywhere without the opt-in.
    assert not any(
        key.endswith("messages") or key == "gen_ai.system_instructions" for s in spans for key in s.attributes or {}
    )


def test_a_protocol_error_gives_an_error_chat_span_with_its_code_and_chunk_position(otel: Recorded) -> None:
    broken = [{"type": "text-delta", "index": 0, "text": "no block-start"}]
    loop, _, _ = make_loop([broken])
    agent_run = loop.run("hi")
    out = run(collect(agent_run))
    assert out[-1].reason == "error"

    [chat] = otel.spans("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes is not None
    assert chat.attributes["error.type"] == "BLOCK_NOT_OPEN"
    assert chat.attributes["streamfsm.chunk_index"] == 0
    assert chat.attributes["gen_ai.provider.name"] == "ScriptedAdapter"  # a route with no well-known name: as named
    [agent] = otel.spans("invoke_agent")
    assert agent.name == "invoke_agent"  # an unnamed loop
    assert agent.status.status_code is StatusCode.ERROR
    assert (agent.attributes or {})["error.type"] == "BLOCK_NOT_OPEN"


def test_a_bare_adapter_stream_outside_a_run_gets_its_own_chat_span(otel: Recorded) -> None:
    _, adapter, _ = make_loop([Turn().text("Hel", "lo").end("stop"), [*Turn().text("cut").chunks, usage(3, 1)]])
    options = sf.GenerateOptions(model="scripted-model", temperature=0.5)

    async def read(stream: Any) -> list[Any]:
        return [chunk async for chunk in stream]

    run(read(adapter.generate(options)))
    with pytest.raises(sf.LlmError) as caught:
        run(read(adapter.generate(options)))
    assert caught.value.code is E.STREAM_TRUNCATED

    done, truncated = otel.spans("chat")
    assert done.parent is None and done.name == "chat scripted-model"
    assert done.attributes is not None and truncated.attributes is not None
    assert done.attributes["gen_ai.request.temperature"] == 0.5
    assert done.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert done.attributes["gen_ai.usage.output_tokens"] == 5
    assert "streamfsm.attempt" not in done.attributes
    assert truncated.status.status_code is StatusCode.ERROR
    assert truncated.attributes["error.type"] == "STREAM_TRUNCATED"
    assert truncated.attributes["streamfsm.chunk_index"] == 4  # the chunks received
    assert truncated.attributes["gen_ai.usage.input_tokens"] == 3  # the usage that came before it broke
    assert otel.spans("invoke_agent") == []


def test_the_response_id_and_model_come_from_what_the_converter_kept(otel: Recorded) -> None:
    """The block protocol has no field for them; the Anthropic converter keeps the message's id and model in the
    finish's replayState, and so does the chat completions converter (its first chunk's), and the chat span reads
    them there."""
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
               "content": [], "usage": {"input_tokens": 12, "output_tokens": 1}}  # fmt: skip
    events = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    ask = sf.GenerateOptions(model="claude-sonnet-4-5", messages=(sf.UserMessage(content="Hi?"),))

    async def read(adapter: sf.LlmAdapter) -> list[Any]:
        return [chunk async for chunk in adapter.generate(ask)]

    with SSEServer() as server:
        server.script(
            SSE(anthropic_events(events)), SSE(openai_events([chat_delta(content="Hi"), *ending("stop", 3, 1)]))
        )
        run(read(sf.AnthropicAdapter(api_key="k", base_url=server.url)))
        run(read(sf.OpenAICompatibleAdapter(server.url)))
    anthropic, chat = otel.spans("chat")
    assert anthropic.attributes is not None and chat.attributes is not None
    assert anthropic.attributes["gen_ai.response.id"] == "msg_01"
    assert anthropic.attributes["gen_ai.response.model"] == "claude-sonnet-4-5-20250929"
    assert anthropic.attributes["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert chat.attributes["gen_ai.response.id"] == "chatcmpl-1"


def test_a_bare_stream_left_early_is_cancelled_and_its_upstream_closed_at_once(otel: Recorded) -> None:
    _, adapter, _ = make_loop([Turn().text("a", "b", "c").end("stop")])

    async def first() -> None:
        stream = adapter.generate(sf.GenerateOptions(model="scripted-model"))
        async for _ in stream:
            break
        await stream.aclose()  # type: ignore[attr-defined]
        assert adapter.closed == 1

    run(first())
    [chat] = otel.spans("chat")
    assert chat.status.status_code is StatusCode.UNSET
    assert (chat.attributes or {})["streamfsm.cancelled"] is True
    assert (chat.attributes or {})["gen_ai.response.finish_reasons"] == ("cancel",)


def test_a_cancel_is_recorded_as_cancelled_not_as_an_error(otel: Recorded) -> None:
    controller = sf.AbortController()
    loop, _, _ = make_loop([Hang(before=Turn().text("Hello").chunks[:2])])

    async def main() -> list[Any]:
        out = []
        async for chunk in loop.run("hi", signal=controller.signal):
            out.append(chunk)
            controller.abort("user pressed stop")
        return out

    out = run(main())
    assert out[-1].reason == "cancel"
    for span in (*otel.spans("chat"), *otel.spans("invoke_agent")):
        assert span.status.status_code is StatusCode.UNSET
        assert span.attributes is not None
        assert "error.type" not in span.attributes
        assert span.attributes["streamfsm.cancelled"] is True
        assert span.attributes["streamfsm.cancel.code"] == "ABORTED"
        assert span.attributes["gen_ai.response.finish_reasons"] == ("cancel",)
        assert not any(key.startswith("gen_ai.usage.") for key in span.attributes)  # none came: unknown, not 0
    assert len(otel.spans("chat")) == 1 and len(otel.spans("invoke_agent")) == 1


def test_a_failing_tool_gives_an_error_tool_span(otel: Recorded) -> None:
    def explode() -> None:
        """Always fails."""
        raise RuntimeError("no")

    loop, _, _ = make_loop([calls(("c1", "explode", {})), answer("sorry")], [explode])
    run(collect(loop.run("go")))
    [tool] = otel.spans("execute_tool")
    assert tool.status.status_code is StatusCode.ERROR
    assert (tool.attributes or {})["error.type"] == "tool_error"


def test_content_is_recorded_only_when_opted_in() -> None:
    recorded = recorder()
    instrumentor = StreamfsmInstrumentor()
    instrumentor.instrument(
        tracer_provider=recorded.tracer_provider, meter_provider=recorded.meter_provider, capture_content=True
    )
    try:

        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        loop, _, _ = make_loop(
            [calls(("c1", "add", {"a": 1, "b": 2})), answer("3")],
            [add],
            model=None,
            options=sf.GenerateOptions(model="scripted-model", system="Be brief."),
        )
        run(collect(loop.run("1 + 2?")))
    finally:
        instrumentor.uninstrument()
    first, second = recorded.spans("chat")
    assert first.attributes is not None and second.attributes is not None
    assert json.loads(str(first.attributes["gen_ai.system_instructions"])) == [{"type": "text", "content": "Be brief."}]
    assert json.loads(str(first.attributes["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "1 + 2?"}]}
    ]
    assert json.loads(str(first.attributes["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'}],
            "finish_reason": "tool_call",
        }
    ]
    assert [m["role"] for m in json.loads(str(second.attributes["gen_ai.input.messages"]))] == [
        "user",
        "assistant",
        "tool",
    ]
    [tool] = recorded.spans("execute_tool")
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"a": 1, "b": 2}'
    assert tool.attributes["gen_ai.tool.call.result"] == "3"


def test_after_uninstrument_nothing_is_recorded(otel: Recorded) -> None:
    loop, adapter, _ = make_loop([answer("one"), answer("two"), answer("three")])
    run(collect(loop.run("first")))
    spans_before = len(otel.spans())
    points_before = otel.histogram("gen_ai.client.operation.duration")
    assert spans_before == 2 and points_before is not None and points_before.count == 1

    StreamfsmInstrumentor().uninstrument()
    assert not StreamfsmInstrumentor().is_instrumented_by_opentelemetry
    run(collect(loop.run("second")))

    async def read() -> list[Any]:
        return [chunk async for chunk in adapter.generate(sf.GenerateOptions(model="scripted-model"))]

    run(read())
    assert len(otel.spans()) == spans_before
    after = otel.histogram("gen_ai.client.operation.duration")
    assert after is not None and after.count == 1


def test_a_run_under_way_when_uninstrumented_still_ends_its_spans(otel: Recorded) -> None:
    loop, _, _ = make_loop([Turn().text("a", "b").end("stop")])

    async def main() -> None:
        agent_run = loop.run("hi")
        await agent_run.__anext__()
        StreamfsmInstrumentor().uninstrument()
        async for _ in agent_run:
            pass

    run(main())
    assert [s.name for s in otel.spans()] == ["chat scripted-model", "invoke_agent"]


def test_nothing_is_recorded_when_not_instrumented() -> None:
    recorded = recorder()  # an SDK ready to record, but streamfsm never instrumented onto it
    assert not StreamfsmInstrumentor().is_instrumented_by_opentelemetry
    loop, adapter, _ = make_loop([calls(("c1", "echo", {"x": 1})), answer("done"), answer("bare")], [lambda x: x])
    run(collect(loop.run("hi")))

    async def read() -> list[Any]:
        return [chunk async for chunk in adapter.generate(sf.GenerateOptions(model="scripted-model"))]

    run(read())
    assert recorded.spans() == []
    assert recorded.reader.get_metrics_data() is None or recorded.points("gen_ai.client.operation.duration") == []
    # The adapter's stream is its own, not wrapped: per chunk, no instrumentation code runs.
    stream = adapter.generate(sf.GenerateOptions(model="scripted-model"))
    assert stream.__qualname__ == "LlmAdapter._checked"  # type: ignore[attr-defined]
    asyncio.run(stream.aclose())  # type: ignore[attr-defined]


def test_instrument_twice_is_a_no_op_and_the_instrumentor_is_one_per_process(otel: Recorded) -> None:
    assert StreamfsmInstrumentor() is StreamfsmInstrumentor()
    other = recorder()
    StreamfsmInstrumentor().instrument(tracer_provider=other.tracer_provider, meter_provider=other.meter_provider)
    loop, _, _ = make_loop([answer("hi")])
    run(collect(loop.run("hi")))
    assert other.spans() == [] and len(otel.spans()) == 2


def test_without_providers_the_global_ones_are_used() -> None:
    # In a child interpreter: the global providers can be set once per process.
    script = textwrap.dedent(
        """
        import asyncio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import streamfsm as sf
        from streamfsm.otel import StreamfsmInstrumentor
        from tests.agent_support import Turn, make_loop

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        StreamfsmInstrumentor().instrument()
        _, adapter, _ = make_loop([Turn().text("hi").end("stop")])

        async def main():
            async for _ in adapter.generate(sf.GenerateOptions(model="m")):
                pass

        asyncio.run(main())
        print([span.name for span in exporter.get_finished_spans()])
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['chat m']"

"""An OpenTelemetry SDK that raises (a span processor whose ``on_start`` or ``on_end`` fails) never breaks what it
traces: the failure is logged (``streamfsm.otel``), and the bare stream or the agent run goes on as it would
uninstrumented, with the real SDK."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

import streamfsm as sf
from streamfsm.otel import StreamfsmInstrumentor

from ..agent_support import Turn, answer, calls, collect, make_loop, run


class Raising(SpanProcessor):
    """A span processor that raises in ``on_start`` or in ``on_end``, for the spans whose name starts with one of
    ``names``."""

    def __init__(self, when: str, names: tuple[str, ...]) -> None:
        self.when = when
        self.names = names

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.when == "start" and span.name.startswith(self.names):
            raise RuntimeError("on_start failed")

    def on_end(self, span: ReadableSpan) -> None:
        if self.when == "end" and span.name.startswith(self.names):
            raise RuntimeError("on_end failed")


@pytest.fixture(
    params=[(when, name) for when in ("start", "end") for name in ("invoke_agent", "chat", "execute_tool")],
    ids=lambda param: f"{param[1]} {param[0]}",
)
def broken(request: pytest.FixtureRequest) -> Iterator[str]:
    """streamfsm instrumented onto a tracer provider whose processor raises in ``on_start`` or ``on_end`` of one
    kind of span."""
    when, name = request.param
    provider = TracerProvider()
    provider.add_span_processor(Raising(when, (name,)))
    instrumentor = StreamfsmInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=MeterProvider(), capture_content=False)
    try:
        yield name
    finally:
        instrumentor.uninstrument()


def test_a_bare_stream_goes_on(broken: str, caplog: pytest.LogCaptureFixture) -> None:
    _, adapter, _ = make_loop([Turn().text("Hel", "lo").end("stop")])

    async def read() -> list[Any]:
        return [chunk async for chunk in adapter.generate(sf.GenerateOptions(model="scripted-model"))]

    with caplog.at_level(logging.ERROR, logger="streamfsm.otel"):
        chunks = run(read())
    assert chunks[-1]["type"] == "finish" and len(chunks) == 6
    logged = any(r.name == "streamfsm.otel" and r.exc_info for r in caplog.records)
    assert logged == (broken == "chat")  # a bare stream has a chat span only


def test_an_agent_run_goes_on(broken: str, caplog: pytest.LogCaptureFixture) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    loop, _, _ = make_loop([calls(("c1", "add", {"a": 1, "b": 2})), answer("3")], [add])
    with caplog.at_level(logging.ERROR, logger="streamfsm.otel"):
        out = run(collect(loop.run("1 + 2?")))
    assert [c.type for c in out] == ["tool_call", "tool_result", "text", "done"]
    assert out[1].result == 3 and out[-1].reason == "stop"
    assert any(r.name == "streamfsm.otel" and r.exc_info for r in caplog.records)

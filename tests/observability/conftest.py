"""What the OpenTelemetry tests share: the real SDK, recording in memory, and the instrumentor on it.

``otel`` instruments streamfsm with a tracer provider whose spans go to an ``InMemorySpanExporter`` and a meter
provider read by an ``InMemoryMetricReader``, and uninstruments it afterwards (the instrumentor is one per
process, as opentelemetry-instrumentation's are).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from streamfsm.otel import StreamfsmInstrumentor

from .otel_support import Recorded, recorder


@pytest.fixture
def otel() -> Iterator[Recorded]:
    """streamfsm instrumented onto a fresh in-memory recorder (message content not captured)."""
    recorded = recorder()
    instrumentor = StreamfsmInstrumentor()
    instrumentor.instrument(
        tracer_provider=recorded.tracer_provider, meter_provider=recorded.meter_provider, capture_content=False
    )
    try:
        yield recorded
    finally:
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()

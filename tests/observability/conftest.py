"""What the OpenTelemetry tests share: the real SDK, recording in memory, and the instrumentor on it.

``otel`` instruments streamfsm with a tracer provider whose spans go to an ``InMemorySpanExporter`` and a meter
provider read by an ``InMemoryMetricReader``, and uninstruments it afterwards (the instrumentor is one per
process, as opentelemetry-instrumentation's are).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from streamfsm.otel import StreamfsmInstrumentor


@dataclass
class Recorded:
    """The SDK's in-memory exporter and reader behind one instrumentation."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """The finished spans, in the order they ended (those whose name starts with ``name``)."""
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name.startswith(name)]

    def points(self, metric: str) -> list[Any]:
        """The data points of ``metric`` so far (cumulative), none if it was never recorded."""
        data = self.reader.get_metrics_data()
        if data is None:
            return []
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for found in scope.metrics
            if found.name == metric
            for point in found.data.data_points
        ]

    def units(self) -> dict[str, str]:
        """The unit of every metric recorded so far, by name."""
        data = self.reader.get_metrics_data()
        if data is None:
            return {}
        return {m.name: m.unit for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}

    def histogram(self, metric: str, attributes: Mapping[str, Any] | None = None) -> HistogramDataPoint | None:
        """The one point of histogram ``metric`` whose attributes include ``attributes`` (None: none)."""
        return _one(self.points(metric), attributes or {})

    def counter(self, metric: str, attributes: Mapping[str, Any] | None = None) -> NumberDataPoint | None:
        """The one point of counter ``metric`` whose attributes include ``attributes`` (None: none)."""
        return _one(self.points(metric), attributes or {})


def _one(points: list[Any], wanted: Mapping[str, Any]) -> Any:
    found = [p for p in points if all(p.attributes.get(k) == v for k, v in wanted.items())]
    assert len(found) <= 1, found
    return found[0] if found else None


def recorder() -> Recorded:
    """A tracer and a meter provider of the real SDK, recording in memory."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return Recorded(exporter, reader, tracer_provider, MeterProvider(metric_readers=[reader]))


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

"""What the OpenTelemetry tests share: the real SDK recording in memory (:class:`Recorded`, :func:`recorder`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


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

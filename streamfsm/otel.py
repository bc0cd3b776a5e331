"""OpenTelemetry instrumentation: runs, model calls and tool calls as the GenAI semantic conventions name them.

Install the ``otel`` extra (``opentelemetry-api``: ``pip install '.[otel]'`` in a clone of streamfsm, see
``docs/install.md``), configure an SDK, then::

    from streamfsm.otel import StreamfsmInstrumentor

    StreamfsmInstrumentor().instrument()                  # the global tracer and meter providers
    StreamfsmInstrumentor().instrument(tracer_provider=tp, meter_provider=mp)
    StreamfsmInstrumentor().uninstrument()                # runs and streams started later are not traced

What is recorded (names from ``docs/gen-ai/`` of open-telemetry/semantic-conventions-genai, status Development):

- a span ``invoke_agent {name}`` (``invoke_agent`` for an unnamed :class:`~streamfsm.AgentLoop`) per run, kind
  INTERNAL; a span ``chat {model}`` per model request, kind CLIENT, a child of its run's span (a bare
  :meth:`~streamfsm.LlmAdapter.generate` stream outside a run gets one too, a child of the current span); a span
  ``execute_tool {tool}`` per tool call, kind INTERNAL, a child of the run's span and current while the tool runs;
- a failed call: status ERROR and ``error.type`` its :class:`~streamfsm.LlmError` code (one of
  :data:`ERROR_TYPES`, else ``_OTHER``), with ``streamfsm.chunk_index`` for a stream the protocol rejected; the
  status description is the error's message only when content is captured, else the error type; a cancelled
  one (the caller's abort, a timeout, a budget) is no error: ``streamfsm.cancelled`` true,
  ``streamfsm.cancel.code`` the cause's code, finish reason ``cancel``; each retry is an event
  ``streamfsm.retry`` on the run's span;
- usage only when the stream reported it: a call stopped before its ``usage`` chunk has no usage attributes and
  records no ``gen_ai.client.token.usage``; one stopped after it reports what it received;
- metrics ``gen_ai.client.token.usage``, ``gen_ai.client.operation.duration``,
  ``gen_ai.client.operation.time_to_first_chunk``, ``gen_ai.client.operation.time_per_output_chunk`` (one value
  per chunk after the first), and streamfsm's own counter :data:`REJECTED_STREAMS`;
- an SDK that raises (a span processor, an exporter) is logged, and what it traced goes on untraced;
- message content (``gen_ai.input.messages``, ``gen_ai.system_instructions``, ``gen_ai.output.messages``,
  ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``) only when opted in: ``capture_content=True``, or
  the environment variable :data:`CAPTURE_CONTENT_ENV` set to ``true`` (read when :meth:`instrument` is called).

Times come from the loop's clock (``AgentLoop(clock=...)``) in a run, ``time.monotonic`` for a bare stream. When
not instrumented nothing here runs: the loop and the adapters look for an instrumentation once per run or
request (``streamfsm._observe``), and the machine never does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Collection, Coroutine, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

try:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, trace
    from opentelemetry.metrics import Histogram, Meter, MeterProvider
    from opentelemetry.trace import Span, SpanKind, TracerProvider
except ImportError as exc:  # pragma: no cover - the extra is missing
    from ._extras import missing

    raise ImportError(missing("streamfsm.otel", "otel")) from exc

from ._adapter import APP_IDENTITY, GenerateOptions, LlmAdapter
from ._errors import LlmError
from ._flat import DoneChunk, DoneReason, done_reason
from ._models import ToolCallBlock, Usage
from ._semconv import (
    ERROR_TYPES,
    PROVIDER_NAMES,
    cancelled,
    error_type,
    fail,
    finish_reason,
    message,
    part,
    provider_name,
    to_json,
)
from ._tool_calls import Outcome
from ._trace import Instrumentation, RequestTrace, RunTrace, instrumentation, set_instrumentation
from ._upstream import aclose_upstream
from ._wire import StreamChunk

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "DURATION_BUCKETS",
    "ERROR_TYPES",
    "PROVIDER_NAMES",
    "REJECTED_STREAMS",
    "TOKEN_BUCKETS",
    "StreamfsmInstrumentor",
    "provider_name",
]

_LOGGER = logging.getLogger(__name__)

#: The conventions' opt-in for message content: ``true`` records it (``span_only`` and ``span_and_event`` too).
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

#: ``gen_ai.client.token.usage``'s explicit bucket boundaries, as the conventions give them.
TOKEN_BUCKETS: tuple[int, ...] = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                                  16777216, 67108864)  # fmt: skip

#: The bucket boundaries (seconds) of the duration, time-to-first-chunk and time-per-output-chunk histograms.
DURATION_BUCKETS: tuple[float, ...] = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                                       40.96, 81.92)  # fmt: skip

#: streamfsm's own counter (unit ``{stream}``): model streams the block protocol's check rejected, by
#: ``error.type`` (the protocol code: ``BLOCK_NOT_OPEN``, ``STREAM_TRUNCATED``, ...), with the provider and model.
REJECTED_STREAMS = "streamfsm.client.stream.rejected"

_CONTENT_ON = frozenset({"true", "1", "yes", "span_only", "span_and_event"})


class StreamfsmInstrumentor:
    """Traces agent runs, model calls and tool calls with OpenTelemetry (see the module docstring).

    Shaped like opentelemetry-instrumentation's ``BaseInstrumentor``: one instance per process (every
    ``StreamfsmInstrumentor()`` is the same object), :meth:`instrument` and :meth:`uninstrument`, and a second
    :meth:`instrument` without an :meth:`uninstrument` between does nothing but log a warning.
    """

    _instance: StreamfsmInstrumentor | None = None
    _lock = threading.Lock()
    _active: _Otel | None

    def __new__(cls) -> StreamfsmInstrumentor:
        with cls._lock:
            if cls._instance is None:
                made = super().__new__(cls)
                made._active = None
                cls._instance = made
            return cls._instance

    def instrumentation_dependencies(self) -> Collection[str]:
        """The packages this instruments (streamfsm itself, whatever its version)."""
        return ("streamfsm",)

    @property
    def is_instrumented_by_opentelemetry(self) -> bool:
        """Whether :meth:`instrument` is in force."""
        return self._active is not None

    def instrument(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
    ) -> None:
        """Trace the runs and bare adapter streams that start from now on.

        ``tracer_provider`` and ``meter_provider``: None for the global ones. ``capture_content``: record message
        content (None: as :data:`CAPTURE_CONTENT_ENV` says; off unless it is ``true``).
        """
        if self._active is not None:
            _LOGGER.warning("streamfsm is already instrumented: uninstrument() first")
            return
        if capture_content is None:
            capture_content = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CONTENT_ON
        self._active = _Otel(tracer_provider, meter_provider, capture_content)
        set_instrumentation(self._active)

    def uninstrument(self) -> None:
        """Stop tracing: runs and streams that start from now on record nothing (those under way end their spans)."""
        if self._active is None:
            _LOGGER.warning("streamfsm is not instrumented")
            return
        if instrumentation() is self._active:
            set_instrumentation(None)
        self._active = None


def _histogram(
    meter: Meter, name: str, description: str, unit: str = "s", buckets: Sequence[float] = DURATION_BUCKETS
) -> Histogram:
    """One of the conventions' histograms, with its explicit bucket boundaries (of seconds unless told)."""
    return meter.create_histogram(name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets)


class _Otel(Instrumentation):
    """The tracer, the instruments and the content switch of one :meth:`StreamfsmInstrumentor.instrument`."""

    __slots__ = ("capture", "chunk_time", "duration", "first_chunk", "rejected", "tokens", "tracer")

    def __init__(
        self, tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None, capture: bool
    ) -> None:
        version = APP_IDENTITY.version
        self.tracer = trace.get_tracer("streamfsm", version, tracer_provider)
        meter = metrics.get_meter("streamfsm", version, meter_provider)
        self.capture = capture
        self.tokens = _histogram(
            meter, "gen_ai.client.token.usage", "Number of input and output tokens used.", "{token}", TOKEN_BUCKETS
        )
        self.duration = _histogram(meter, "gen_ai.client.operation.duration", "GenAI operation duration.")
        self.first_chunk = _histogram(
            meter,
            "gen_ai.client.operation.time_to_first_chunk",
            "Time to receive the first chunk, from when the request is issued.",
        )
        self.chunk_time = _histogram(
            meter,
            "gen_ai.client.operation.time_per_output_chunk",
            "Time from the end of the previous chunk to the end of this one, each chunk after the first.",
        )
        self.rejected = meter.create_counter(
            REJECTED_STREAMS,
            unit="{stream}",
            description="Model streams the block protocol's check rejected, by error code.",
        )

    def run(
        self, adapter: LlmAdapter, options: GenerateOptions, name: str | None, clock: Callable[[], float]
    ) -> RunTrace:
        """A run of an agent: its ``invoke_agent`` span (none if it cannot be started: the run goes untraced)."""
        try:
            return _Run(self, adapter, options, name, clock)
        except Exception:
            _broken("starting an invoke_agent span")
            return _UNTRACED

    def stream(
        self, adapter: LlmAdapter, options: GenerateOptions, chunks: AsyncIterator[StreamChunk]
    ) -> AsyncIterator[StreamChunk]:
        """A bare adapter stream: its ``chat`` span, a child of the current span, opened when it starts."""
        return self._bare(adapter, options, chunks)

    async def _bare(
        self, adapter: LlmAdapter, options: GenerateOptions, chunks: AsyncIterator[StreamChunk]
    ) -> AsyncIterator[StreamChunk]:
        try:
            call = _Request(self, adapter, options, None, time.monotonic, None)
        except Exception:
            _broken("starting a chat span")
            try:
                async for chunk in chunks:
                    yield chunk
            finally:
                await aclose_upstream(chunks)
            return
        usage: Usage | None = None
        reason: DoneReason | None = None
        error: LlmError | None = None
        try:
            # Closed here, at once, however the stream ends: the adapter's connection is not left to the collector.
            async with contextlib.aclosing(call.chunks(chunks)) as timed:
                async for chunk in timed:
                    kind = chunk.get("type")
                    if kind == "usage":
                        usage = _usage_of(chunk)
                    elif kind == "finish":
                        reason, error = _finish_of(chunk)
                    yield chunk
        except LlmError as exc:
            call.end("error", usage, exc)
            raise
        except (GeneratorExit, asyncio.CancelledError):
            call.end("cancel", usage, None)
            raise
        except BaseException as exc:
            call.end("error", usage, LlmError.wrap(exc, "the stream failed"))
            raise
        # Without a finish the machine raised (STREAM_TRUNCATED) unless it was skipped (policy=None).
        call.end(reason or "error", usage, error)


class _Request(RequestTrace):
    """One model request: its ``chat`` span, its timings and, when opted in, its output as it streams."""

    __slots__ = ("_clock", "_first", "_last", "_otel", "_output", "_start", "attributes", "span")

    def __init__(
        self,
        otel: _Otel,
        adapter: LlmAdapter,
        options: GenerateOptions,
        parent: otel_context.Context | None,
        clock: Callable[[], float],
        attempt: int | None,
    ) -> None:
        self._otel = otel
        self._clock = clock
        #: The attributes every metric of the request carries.
        self.attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(adapter, options),
            "gen_ai.request.model": options.model,
            **_server(adapter),
        }
        attributes: dict[str, Any] = {**self.attributes, "gen_ai.request.stream": True}
        for key, value in (
            ("gen_ai.request.temperature", options.temperature),
            ("gen_ai.request.max_tokens", options.max_tokens),
            ("gen_ai.request.stop_sequences", options.stop),
            ("gen_ai.conversation.id", options.session_id),
            ("streamfsm.attempt", attempt),
        ):
            if value is not None:
                attributes[key] = value
        if otel.capture:
            if options.system is not None:
                attributes["gen_ai.system_instructions"] = to_json([{"type": "text", "content": options.system}])
            attributes["gen_ai.input.messages"] = to_json([message(m) for m in options.messages])
        self.span: Span = otel.tracer.start_span(
            f"chat {options.model}", context=parent, kind=SpanKind.CLIENT, attributes=attributes
        )
        self._output: list[dict[str, Any]] | None = [] if otel.capture else None
        self._start = clock()
        self._first: float | None = None
        self._last = 0.0

    def chunks(self, source: AsyncIterator[StreamChunk]) -> AsyncGenerator[StreamChunk, None]:
        """``source`` with each chunk's arrival timed (and its complete blocks kept, when content is captured)."""
        return self._timed(source)

    async def _timed(self, source: AsyncIterator[StreamChunk]) -> AsyncGenerator[StreamChunk, None]:
        clock = self._clock
        record = self._otel.chunk_time.record
        attributes = self.attributes
        output = self._output
        live = True  # until recording a chunk fails: the rest of the stream goes unrecorded
        try:
            async for chunk in source:
                if live:
                    try:
                        now = clock()
                        if self._first is None:
                            self._first = now
                        else:
                            record(now - self._last, attributes)
                        self._last = now
                        kind = chunk.get("type")
                        if kind == "finish":
                            _set_response(self.span, chunk.get("replayState"))
                        elif output is not None and kind == "block-end":
                            output.append(part(chunk.get("block")))
                    except Exception:
                        live = False
                        _broken("recording a chunk")
                yield chunk
        finally:
            await aclose_upstream(source)

    def end(self, reason: DoneReason, usage: Usage | None, error: LlmError | None) -> None:
        """The span's outcome, and the request's metrics (a failure to record them is logged, never raised)."""
        try:
            self._end(reason, usage, error)
        except Exception:
            _broken("ending a chat span")

    def _end(self, reason: DoneReason, usage: Usage | None, error: LlmError | None) -> None:
        otel, span = self._otel, self.span
        metric = dict(self.attributes)
        finish = finish_reason(reason, error)
        span.set_attribute("gen_ai.response.finish_reasons", (finish,))
        if self._first is not None:
            first = self._first - self._start
            span.set_attribute("gen_ai.response.time_to_first_chunk", first)
            otel.first_chunk.record(first, metric)
        if usage is not None:
            _set_usage(span, usage)
            inputs = usage.input_tokens + (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
            otel.tokens.record(inputs, {**metric, "gen_ai.token.type": "input"})
            otel.tokens.record(usage.output_tokens, {**metric, "gen_ai.token.type": "output"})
        if self._output is not None:
            output = {"role": "assistant", "parts": self._output, "finish_reason": finish}
            span.set_attribute("gen_ai.output.messages", to_json([output]))
        if reason == "cancel":
            cancelled(span, error)
        elif error is not None:
            code = fail(span, error.code, error.message, otel.capture, error.chunk_index)
            metric["error.type"] = code
            if error.chunk_index is not None:
                otel.rejected.add(1, {**self.attributes, "error.type": code})
        otel.duration.record(self._clock() - self._start, metric)
        span.end()


class _Run(RunTrace):
    """One run: its ``invoke_agent`` span, the parent of its requests' and tools' spans."""

    __slots__ = ("_adapter", "_clock", "_context", "_otel", "span")

    def __init__(
        self, otel: _Otel, adapter: LlmAdapter, options: GenerateOptions, name: str | None, clock: Callable[[], float]
    ) -> None:
        self._otel = otel
        self._adapter = adapter
        self._clock = clock
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider_name(adapter, options),
            "gen_ai.request.model": options.model,
            **_server(adapter),
        }
        if name:
            attributes["gen_ai.agent.name"] = name
        span_name = f"invoke_agent {name}" if name else "invoke_agent"
        self.span: Span = otel.tracer.start_span(span_name, kind=SpanKind.INTERNAL, attributes=attributes)
        self._context = trace.set_span_in_context(self.span)

    def request(self, options: GenerateOptions, attempt: int) -> RequestTrace:
        """The request's ``chat`` span, a child of the run's (none if it cannot be started)."""
        try:
            return _Request(self._otel, self._adapter, options, self._context, self._clock, attempt)
        except Exception:
            _broken("starting a chat span")
            return _UNTRACED

    def tool(self, call: ToolCallBlock, job: Coroutine[Any, Any, Outcome]) -> Coroutine[Any, Any, Outcome]:
        """The call's ``execute_tool`` span, current while the tool runs."""
        return self._tool(call, job)

    async def _tool(self, call: ToolCallBlock, job: Coroutine[Any, Any, Outcome]) -> Outcome:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if self._otel.capture:
            attributes["gen_ai.tool.call.arguments"] = call.arguments
        try:
            span = self._otel.tracer.start_span(
                f"execute_tool {call.name}", context=self._context, kind=SpanKind.INTERNAL, attributes=attributes
            )
        except Exception:
            _broken("starting an execute_tool span")
            return await job
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                outcome = await job
        except asyncio.CancelledError:
            _ending(span, cancelled, span, None)
            raise
        except BaseException as exc:  # the runner turns whatever a tool raises into an outcome: a bug here
            _ending(span, fail, span, type(exc).__qualname__, type(exc).__name__, False)
            raise
        _ending(span, self._outcome, span, outcome)
        return outcome

    def _outcome(self, span: Span, outcome: Outcome) -> None:
        capture = self._otel.capture
        if outcome.is_error:
            fail(span, "tool_error", outcome.content, capture)
        elif capture:
            span.set_attribute("gen_ai.tool.call.result", outcome.content)

    def retry(self, error: LlmError, retry: int, delay_ms: int) -> None:
        """An event ``streamfsm.retry`` on the run's span."""
        try:
            self.span.add_event(
                "streamfsm.retry",
                {
                    "error.type": error_type(error.code),
                    "streamfsm.retry.count": retry,
                    "streamfsm.retry.delay_ms": delay_ms,
                },
            )
        except Exception:
            _broken("adding a retry event")

    def end(self, done: DoneChunk, error: LlmError | None) -> None:
        """The run's outcome: its finish reason, its usage as far as it is known, its error or cancellation."""
        _ending(self.span, self._end, done, error)

    def _end(self, done: DoneChunk, error: LlmError | None) -> None:
        span = self.span
        span.set_attribute("gen_ai.response.finish_reasons", (finish_reason(done.reason, error),))
        if done.usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", done.usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", done.usage.completion_tokens)
        if done.reason == "cancel":
            cancelled(span, error)
        elif done.reason == "error" and error is not None:
            fail(span, error.code, error.message, self._otel.capture, error.chunk_index)


class _Untraced(RunTrace, RequestTrace):
    """A run or a request whose span could not be started: nothing is recorded (the SDK's failure was logged)."""

    __slots__ = ()

    def request(self, options: GenerateOptions, attempt: int) -> RequestTrace:
        """Untraced too."""
        return self

    def tool(self, call: ToolCallBlock, job: Coroutine[Any, Any, Outcome]) -> Coroutine[Any, Any, Outcome]:
        """The call as it is."""
        return job

    def retry(self, error: LlmError, retry: int, delay_ms: int) -> None:
        """Nothing."""

    def end(self, *_: object) -> None:
        """Nothing."""


_UNTRACED = _Untraced()


# --- Failures of the instrumentation --------------------------------------------------------------------


def _broken(what: str) -> None:
    """The SDK failed (a span processor or an exporter raised, say) while ``what``: logged with its traceback; the
    stream or run goes on as if uninstrumented. Call it in an ``except`` block."""
    _LOGGER.exception("streamfsm.otel: %s failed; the stream goes on without it", what)


def _ending(span: Span, outcome: Callable[..., object], *args: Any) -> None:
    """Record a span's ``outcome(*args)`` and end it; what the SDK raises meanwhile is logged (:func:`_broken`)."""
    try:
        outcome(*args)
        span.end()
    except Exception:
        _broken("ending a span")


# --- What the spans say (their error types, finish reasons and content: ``_semconv``) --------------------


def _set_response(span: Span, state: object) -> None:
    """``gen_ai.response.id`` and ``gen_ai.response.model``, where the finish's ``replayState`` names them: the
    block protocol has no field for either, but the converters of the Responses, Anthropic and chat completions
    APIs keep ``response: {id, model}`` (chat completions: its first chunk's), Gemini's ``gemini.response:
    {responseId, modelVersion}`` and Cohere's ``responseId``."""
    if not isinstance(state, Mapping):
        return
    response = state.get("response")
    gemini = state.get("gemini")
    if isinstance(gemini, Mapping) and isinstance(gemini.get("response"), Mapping):
        found = gemini["response"]
        identity = (found.get("responseId"), found.get("modelVersion"))
    elif isinstance(response, Mapping):
        identity = (response.get("id"), response.get("model"))
    else:
        identity = (state.get("responseId"), None)
    for key, value in zip(("gen_ai.response.id", "gen_ai.response.model"), identity, strict=True):
        if isinstance(value, str) and value:
            span.set_attribute(key, value)


def _set_usage(span: Span, usage: Usage) -> None:
    cache_read, cache_write = usage.cache_read_tokens, usage.cache_write_tokens
    # The protocol's counts are disjoint; the conventions' input count includes the cached tokens.
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens + (cache_read or 0) + (cache_write or 0))
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    for key, value in (
        ("gen_ai.usage.cache_read.input_tokens", cache_read),
        ("gen_ai.usage.cache_creation.input_tokens", cache_write),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    ):
        if value is not None:
            span.set_attribute(key, value)


def _server(adapter: LlmAdapter) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of an adapter over HTTP (its ``base_url``)."""
    base = getattr(adapter, "base_url", None)
    if not isinstance(base, str):
        return {}
    parts = urlsplit(base)
    if not parts.hostname:
        return {}
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {"server.address": parts.hostname, "server.port": port}


def _usage_of(chunk: Mapping[str, Any]) -> Usage | None:
    try:
        return Usage.model_validate(chunk.get("usage"))
    except ValueError:  # policy=None: an unchecked chunk may be anything
        return None


def _finish_of(chunk: Mapping[str, Any]) -> tuple[DoneReason, LlmError | None]:
    reason = chunk.get("reason")
    kind = reason.get("kind") if isinstance(reason, Mapping) else None
    done = done_reason(kind if isinstance(kind, str) else "")
    failure = reason.get("failure") if isinstance(reason, Mapping) else None
    if done != "error":
        return done, None
    if isinstance(failure, Mapping) and failure.get("message") and failure.get("code"):
        return done, LlmError(str(failure["message"]), str(failure["code"]))
    return done, LlmError("the stream finished with an error", "UNKNOWN")

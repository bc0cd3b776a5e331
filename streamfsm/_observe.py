"""What a run tells the outside: hooks, metrics and log records.

- :class:`Hooks`: listeners for the seed's ``llm/stream/*`` events, called by :class:`RunLog`;
- :class:`StreamMetrics` and the :class:`Meter` behind it: a run keeps one meter per turn, updated as chunks
  come, and one for the run that holds the turns it has closed (:meth:`Meter.add`): each figure is updated
  once, in the turn's meter, and a run's figures while a turn is open are the closed turns' plus the open one's;
- the log records, every one written here: ``llm_request``, ``llm_response``, ``llm_retry`` and ``llm_error``
  by :class:`RunLog`, ``tool_error`` and ``tool_abandoned`` by :func:`log_tool_error` and
  :func:`log_tool_abandoned`; a listener that raises is logged as ``hook_error``;
- the instrumentation hooks (:class:`Instrumentation`, set by :mod:`streamfsm.otel`): a run, each model request,
  each tool call and each bare adapter stream, as they start and end. With none set (the default) the loop and
  the adapters check for one once per run or request, never per chunk.

A request's usage is what it received (its ``usage`` chunk), whether or not the stream completed: a request
cancelled or timed out after its usage came reports that usage, one cut off before it reports None (unknown),
never 0 (:meth:`RunLog.request_end`).
"""

from __future__ import annotations

import abc
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, overload

from ._errors import LlmError
from ._flat import DoneChunk, DoneReason, ErrorChunk, TextChunk, TokenUsage, ToolCallChunk, ToolResultChunk
from ._models import ToolCallBlock, Usage, WireModel

if TYPE_CHECKING:
    from ._adapter import GenerateOptions, LlmAdapter
    from ._agent import AgentLoop
    from ._attempt import Attempt
    from ._tool_calls import Outcome
    from ._wire import StreamChunk

__all__ = [
    "IN_RUN",
    "LOGGER",
    "Flat",
    "Hooks",
    "Instrumentation",
    "Logger",
    "Meter",
    "RequestTrace",
    "RunLog",
    "RunTrace",
    "StreamMetrics",
    "instrumentation",
    "set_instrumentation",
]

#: A flat chunk object, as a run yields it.
Flat: TypeAlias = TextChunk | ToolCallChunk | ToolResultChunk | ErrorChunk | DoneChunk
Logger: TypeAlias = logging.Logger | logging.LoggerAdapter[logging.Logger]
F = TypeVar("F", bound=Callable[..., Any])

#: The logger the loop writes ``llm_request``, ``llm_response``, ``llm_retry``, ``llm_error``, ``tool_error``,
#: ``tool_abandoned`` and ``hook_error`` to.
LOGGER = logging.getLogger("streamfsm.agent")
# A library leaves logging to the application: without its own configuration nothing is printed
# (Python's last-resort handler would otherwise write warnings to stderr).
logging.getLogger("streamfsm").addHandler(logging.NullHandler())


# --- Metrics ------------------------------------------------------------------------------------------


class StreamMetrics(WireModel):
    """Figures of one turn (:attr:`AgentRun.turns`) or of a whole run (:attr:`AgentRun.metrics`).

    Times are seconds on the loop's clock. ``ttfb``: from the start (of the turn's first request, or of
    the run: when its first chunk is asked for) to the first chunk the adapter sent (None if none came).
    ``total_duration``: a turn from its first request to its finish (tools not included); a run from
    start to ``done``. ``chunk_count``: block-protocol chunks the adapter sent, every attempt counted.
    ``tool_call_count``: completed tool calls. ``retry_count``: attempts retried. ``token_usage``: added
    up over every response that reported usage, one cancelled, timed out or cut off after its ``usage`` came
    included (None if none did: unknown, never 0).
    """

    ttfb: float | None
    total_duration: float
    chunk_count: int
    tool_call_count: int
    retry_count: int
    token_usage: TokenUsage | None

    def to_wire(self) -> dict[str, Any]:
        """The seed's camelCase dict (``ttfb``, ``totalDuration``, ``chunkCount``, ...; ``ttfb`` and ``tokenUsage``
        may be null)."""
        return self.model_dump(by_alias=True)


class Meter:
    """Running figures behind a :class:`StreamMetrics` (plain attributes: a turn's are updated per chunk)."""

    __slots__ = ("chunks", "end", "first", "retries", "start", "tool_calls", "usage")

    def __init__(self, start: float) -> None:
        self.start = start
        self.first: float | None = None
        self.end: float | None = None
        self.chunks = 0
        self.tool_calls = 0
        self.retries = 0
        self.usage: TokenUsage | None = None

    def add_usage(self, usage: TokenUsage | None) -> None:
        """Add a response's usage (None: it reported none)."""
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def add(self, turn: Meter) -> None:
        """Roll a turn's figures up into this (a run's) meter."""
        if self.first is None:
            self.first = turn.first
        self.chunks += turn.chunks
        self.tool_calls += turn.tool_calls
        self.retries += turn.retries
        self.add_usage(turn.usage)

    def metrics(self, now: float, open_turn: Meter | None = None) -> StreamMetrics:
        """The figures so far; a run's include those of ``open_turn``, its turn not yet rolled up."""
        end = self.end if self.end is not None else now
        first, chunks, tool_calls, retries, usage = self.first, self.chunks, self.tool_calls, self.retries, self.usage
        if open_turn is not None:
            first = first if first is not None else open_turn.first
            chunks += open_turn.chunks
            tool_calls += open_turn.tool_calls
            retries += open_turn.retries
            if open_turn.usage is not None:
                usage = open_turn.usage if usage is None else usage + open_turn.usage
        return StreamMetrics(
            ttfb=None if first is None else first - self.start,
            total_duration=end - self.start,
            chunk_count=chunks,
            tool_call_count=tool_calls,
            retry_count=retries,
            token_usage=usage,
        )


# --- Hooks ------------------------------------------------------------------------------------------

HookEvent: TypeAlias = Literal["stream_start", "chunk", "stream_end"]
_HOOK_ALIASES: dict[str, HookEvent] = {
    "stream_start": "stream_start",
    "chunk": "chunk",
    "stream_end": "stream_end",
    "llm/stream/start": "stream_start",
    "llm/stream/chunk": "chunk",
    "llm/stream/end": "stream_end",
}


class Hooks:
    """Listeners for the seed's ``llm/stream/*`` events; each listener may be sync or async.

    - ``stream_start(request)``: before every model request (each attempt), with its :class:`GenerateOptions`;
    - ``chunk(chunk)``: every flat chunk of the run, before the consumer gets it (the final ``done`` too,
      even when the run is cancelled and cannot yield it);
    - ``stream_end(done)``: after every model request, paired with its ``stream_start``, with a
      :class:`DoneChunk` for that request (its finish as a reason, its usage; ``error`` or ``cancel`` when
      it failed or was stopped).

    Register with the constructor or :meth:`on` (the seed's names ``llm/stream/start`` etc. are accepted).
    A listener that raises is logged (``streamfsm.agent``, with its traceback) and the run goes on.
    """

    __slots__ = ("listeners",)

    def __init__(
        self,
        *,
        stream_start: Callable[[GenerateOptions], Any] | None = None,
        chunk: Callable[[Flat], Any] | None = None,
        stream_end: Callable[[DoneChunk], Any] | None = None,
    ) -> None:
        #: Listeners by event, in the order they were registered.
        self.listeners: dict[HookEvent, list[Callable[[Any], Any]]] = {
            "stream_start": [],
            "chunk": [],
            "stream_end": [],
        }
        for event, fn in (("stream_start", stream_start), ("chunk", chunk), ("stream_end", stream_end)):
            if fn is not None:
                self.on(event, fn)

    @overload
    def on(self, event: str, fn: F) -> F: ...
    @overload
    def on(self, event: str) -> Callable[[F], F]: ...
    def on(self, event: str, fn: F | None = None) -> F | Callable[[F], F]:
        """Register ``fn`` for ``event``; without ``fn``, a decorator that does."""
        name = _HOOK_ALIASES.get(event)
        if name is None:
            raise ValueError(f"unknown hook event {event!r}; expected one of {', '.join(_HOOK_ALIASES)}")

        def register(listener: F) -> F:
            if not callable(listener):
                raise TypeError(f"a hook must be callable, got {type(listener).__name__}")
            self.listeners[name].append(listener)
            return listener

        return register if fn is None else register(fn)


async def _notify(listeners: list[Callable[[Any], Any]], event: str, value: object, logger: Logger) -> None:
    for listener in listeners:
        try:
            result = listener(value)
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception("hook_error", extra={"hook": event, "listener": repr(listener)})


# --- Instrumentation ----------------------------------------------------------------------------------


class RequestTrace(abc.ABC):
    """One model request of a run, as an instrumentation follows it (from :meth:`RunTrace.request`)."""

    __slots__ = ()

    def chunks(self, source: AsyncIterator[StreamChunk]) -> AsyncIterator[StreamChunk]:
        """``source``, the adapter's chunks, as the run reads them: an instrumentation that times each chunk
        wraps it here (by default it is returned as it is)."""
        return source

    @abc.abstractmethod
    def end(self, reason: DoneReason, usage: Usage | None, error: LlmError | None) -> None:
        """The request ended: ``reason`` as its ``stream_end`` says (``cancel`` when the run was stopped);
        ``usage`` as received (None: none came); ``error``: why it failed (reason ``error``) or was stopped."""


class RunTrace(abc.ABC):
    """One :class:`AgentRun`, as an instrumentation follows it (from :meth:`Instrumentation.run`)."""

    __slots__ = ()

    @abc.abstractmethod
    def request(self, options: GenerateOptions, attempt: int) -> RequestTrace:
        """A model request starts (attempt ``attempt`` of a turn, counted from 1)."""

    @abc.abstractmethod
    def tool(self, call: ToolCallBlock, job: Coroutine[Any, Any, Outcome]) -> Coroutine[Any, Any, Outcome]:
        """A tool call starts: ``job`` runs it to its outcome (cancelled: the run was stopped); the call as
        the run awaits it (by default ``job`` itself)."""

    @abc.abstractmethod
    def retry(self, error: LlmError, retry: int, delay_ms: int) -> None:
        """A failed attempt is retried (``retry``: the turn's retries so far) after ``delay_ms``."""

    @abc.abstractmethod
    def end(self, done: DoneChunk, error: LlmError | None) -> None:
        """The run is over with ``done``; ``error`` is what ended it (:attr:`AgentRun.error`)."""


class Instrumentation(abc.ABC):
    """What a tracer (:class:`streamfsm.otel.StreamfsmInstrumentor`) plugs in: told of runs and of bare
    adapter streams (:meth:`LlmAdapter.generate` called outside a run). Set with :func:`set_instrumentation`."""

    __slots__ = ()

    @abc.abstractmethod
    def run(self, loop: AgentLoop, clock: Callable[[], float]) -> RunTrace:
        """A run of ``loop`` starts (``clock``: the loop's, seconds)."""

    @abc.abstractmethod
    def stream(
        self, adapter: LlmAdapter, options: GenerateOptions, chunks: AsyncIterator[StreamChunk]
    ) -> AsyncIterator[StreamChunk]:
        """A bare adapter stream: ``chunks`` (checked by the machine unless ``policy=None``) as its caller gets
        them."""


_instrumentation: Instrumentation | None = None

#: Set in a run's producer task: an adapter stream there is the run's request, traced by the run, not on its own.
IN_RUN: ContextVar[bool] = ContextVar("streamfsm_in_run", default=False)


def instrumentation() -> Instrumentation | None:
    """The instrumentation in force (None: nothing is traced)."""
    return _instrumentation


def set_instrumentation(value: Instrumentation | None) -> None:
    """Put ``value`` in force for runs and streams that start from now on (None: trace nothing)."""
    global _instrumentation
    _instrumentation = value


# --- Log records (and the hooks that go with them) ---------------------------------------------------


class RunLog:
    """What one run reports of its requests: log records, hooks and the instrumentation's trace, each request's
    start paired with its end. ``trace``: the run's (None: the run is not traced)."""

    __slots__ = ("_clock", "_hooks", "_logger", "_open", "trace")

    def __init__(self, hooks: Hooks, logger: Logger, clock: Callable[[], float], trace: RunTrace | None = None) -> None:
        self._hooks = hooks
        self._logger = logger
        self._clock = clock
        self.trace = trace
        #: The request in flight: its options, attempt, the turn's meter, start time and trace.
        self._open: tuple[GenerateOptions, Attempt, Meter, float, RequestTrace | None] | None = None

    async def request_start(self, options: GenerateOptions, attempt: Attempt, meter: Meter) -> None:
        """A model request is sent for ``attempt`` (its turn's figures in ``meter``): ``llm_request``, then the
        ``stream_start`` hooks."""
        trace = self.trace.request(options, attempt.number) if self.trace is not None else None
        self._open = (options, attempt, meter, self._clock(), trace)
        self._logger.info(
            "llm_request",
            extra={
                "model": options.model,
                "message_count": len(options.messages),
                "tool_count": len(options.tools or ()),
                "stream": True,
                "turn": attempt.turn,
                "attempt": attempt.number,
            },
        )
        listeners = self._hooks.listeners["stream_start"]
        if listeners:
            await _notify(listeners, "stream_start", options, self._logger)

    def chunks(self, source: AsyncIterator[StreamChunk]) -> AsyncIterator[StreamChunk]:
        """The adapter's chunks of the request in flight, as its trace follows them."""
        trace = self._open[4] if self._open is not None else None
        return source if trace is None else trace.chunks(source)

    async def request_end(self, reason: DoneReason, error: LlmError | None = None) -> None:
        """The request in flight ended (if one is: a second call does nothing): its usage as received is added
        to its turn's figures, then ``llm_response``, the ``stream_end`` hooks and its trace's end."""
        if self._open is None:
            return
        options, attempt, meter, started, trace = self._open
        self._open = None
        usage = attempt.usage
        tokens = TokenUsage.from_usage(usage) if usage is not None else None
        meter.add_usage(tokens)
        extra: dict[str, Any] = {
            "model": options.model,
            "duration": self._clock() - started,
            "tokens": tokens.total_tokens if tokens is not None else None,
            "reason": reason,
            "turn": attempt.turn,
            "attempt": attempt.number,
        }
        if error is not None:
            extra["code"] = str(error.code)
        self._logger.info("llm_response", extra=extra)
        listeners = self._hooks.listeners["stream_end"]
        if listeners:
            await _notify(listeners, "stream_end", DoneChunk(reason=reason, usage=tokens), self._logger)
        if trace is not None:
            trace.end(reason, usage, error)

    def retry(self, error: LlmError, retry: int, max_retries: int, delay_ms: int, turn: int) -> None:
        """A failed attempt is retried after ``delay_ms``: ``llm_retry``, and an event on the run's trace."""
        self._logger.warning(
            "llm_retry",
            extra={
                "code": str(error.code),
                "error": error.message,
                "retry": retry,
                "max_retries": max_retries,
                "delay_ms": delay_ms,
                "turn": turn,
            },
        )
        if self.trace is not None:
            self.trace.retry(error, retry, delay_ms)

    def failed(self, error: LlmError, turn: int, attempt: int) -> None:
        """The run fails with ``error``: ``llm_error``."""
        self._logger.error(
            "llm_error", extra={"code": str(error.code), "error": error.message, "turn": turn, "attempt": attempt}
        )

    async def chunk(self, chunk: Flat) -> None:
        """A flat chunk is about to reach the consumer: the ``chunk`` hooks."""
        listeners = self._hooks.listeners["chunk"]
        if listeners:
            await _notify(listeners, "chunk", chunk, self._logger)


def log_tool_error(logger: Logger, call: ToolCallBlock, message: str, exc: BaseException | None = None) -> None:
    """A tool call failed with ``message`` (``exc``: what the tool raised, logged with its traceback):
    ``tool_error``."""
    logger.warning("tool_error", extra={"tool": call.name, "tool_call_id": call.id, "error": message}, exc_info=exc)


def log_tool_abandoned(logger: Logger, call: ToolCallBlock, error: str) -> None:
    """A cancelled tool call did not end within its grace and is left running: ``tool_abandoned``."""
    logger.warning("tool_abandoned", extra={"tool": call.name, "tool_call_id": call.id, "error": error})

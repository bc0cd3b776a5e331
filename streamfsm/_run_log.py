"""What a run reports of itself as it goes: the :class:`Hooks` a user registers, and the :class:`RunLog` that writes
each request's log records (``llm_request``, ``llm_response``, ``llm_retry``, ``llm_error``), calls the hooks and
tells the run's trace (:mod:`streamfsm._trace`). A listener that raises is logged as ``hook_error``.

A request's usage is what it received (its ``usage`` chunk), whether or not the stream completed: a request
cancelled or timed out after its usage came reports that usage, one cut off before it reports None (unknown),
never 0 (:meth:`RunLog.request_end`).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, overload

from ._errors import LlmError
from ._flat import DoneChunk, DoneReason, TokenUsage
from ._observe import Flat, Logger, Meter
from ._trace import RequestTrace, RunTrace

if TYPE_CHECKING:
    from ._adapter import GenerateOptions
    from ._attempt import Attempt
    from ._wire import StreamChunk

__all__ = ["Hooks", "RunLog"]

F = TypeVar("F", bound=Callable[..., Any])

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

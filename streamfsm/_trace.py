"""The instrumentation's side of a run: what a tracer (:mod:`streamfsm.otel`) is told of runs, their model
requests and tool calls. Bare adapter streams it follows as a :class:`~streamfsm._adapter.StreamTracer`, in force
through the one slot the adapters read (:func:`streamfsm._adapter.tracer`). With none set (the default) the loop
and the adapters look once per run or request, never per chunk.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ._adapter import GenerateOptions, LlmAdapter, StreamTracer, set_tracer, tracer
from ._errors import LlmError
from ._flat import DoneChunk, DoneReason
from ._models import ToolCallBlock, Usage

if TYPE_CHECKING:
    from ._tool_calls import Outcome
    from ._wire import StreamChunk

__all__ = ["Instrumentation", "RequestTrace", "RunTrace", "instrumentation", "set_instrumentation"]


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


class Instrumentation(StreamTracer):
    """What a tracer (:class:`streamfsm.otel.StreamfsmInstrumentor`) plugs in: told of runs and of bare
    adapter streams (:meth:`LlmAdapter.generate` called outside a run). Set with :func:`set_instrumentation`."""

    __slots__ = ()

    @abc.abstractmethod
    def run(
        self, adapter: LlmAdapter, options: GenerateOptions, name: str | None, clock: Callable[[], float]
    ) -> RunTrace:
        """A run of an agent starts: its ``adapter``, its ``options``, its ``name`` and its ``clock`` (seconds)."""


def instrumentation() -> Instrumentation | None:
    """The instrumentation in force (None: nothing is traced)."""
    value = tracer()
    return value if isinstance(value, Instrumentation) else None


def set_instrumentation(value: Instrumentation | None) -> None:
    """Put ``value`` in force for runs and streams that start from now on (None: trace nothing)."""
    set_tracer(value)

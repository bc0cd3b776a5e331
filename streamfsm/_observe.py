"""What a run measures and the log records it writes outside a request: the agent layer's ground floor.

- :class:`StreamMetrics` and the :class:`Meter` behind it: a run keeps one meter per turn, updated as chunks
  come, and one for the run that holds the turns it has closed (:meth:`Meter.add`): each figure is updated
  once, in the turn's meter, and a run's figures while a turn is open are the closed turns' plus the open one's;
- the logger every record of a run goes to (:data:`LOGGER`), and the tool's records ``tool_error`` and
  ``tool_abandoned`` (:func:`log_tool_error`, :func:`log_tool_abandoned`). A request's records and the hooks are
  :class:`~streamfsm._run_log.RunLog`'s; what a tracer is told, :mod:`streamfsm._trace`'s.
"""

from __future__ import annotations

import logging
from typing import Any, TypeAlias

from ._flat import DoneChunk, ErrorChunk, TextChunk, TokenUsage, ToolCallChunk, ToolResultChunk
from ._models import ToolCallBlock, WireModel

__all__ = [
    "LOGGER",
    "Flat",
    "Logger",
    "Meter",
    "StreamMetrics",
    "log_tool_abandoned",
    "log_tool_error",
]

#: A flat chunk object, as a run yields it.
Flat: TypeAlias = TextChunk | ToolCallChunk | ToolResultChunk | ErrorChunk | DoneChunk
Logger: TypeAlias = logging.Logger | logging.LoggerAdapter[logging.Logger]

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


# --- Log records ----------------------------------------------------------------------------------


def log_tool_error(logger: Logger, call: ToolCallBlock, message: str, exc: BaseException | None = None) -> None:
    """A tool call failed with ``message`` (``exc``: what the tool raised, logged with its traceback):
    ``tool_error``."""
    logger.warning("tool_error", extra={"tool": call.name, "tool_call_id": call.id, "error": message}, exc_info=exc)


def log_tool_abandoned(logger: Logger, call: ToolCallBlock, error: str) -> None:
    """A cancelled tool call did not end within its grace and is left running: ``tool_abandoned``."""
    logger.warning("tool_abandoned", extra={"tool": call.name, "tool_call_id": call.id, "error": error})

"""The tool phase of a run: a turn's calls, from the first that starts to their results in the conversation.

A run has one :class:`ToolPhase`, and it holds all there is to know about the run's tool calls: the tasks of
the calls running (an eager call starts at its ``block-end``, the others when the turn completes), their
outcomes, the ``result_<n>`` numbering of the results, and the call ids the run has used. Everything is
keyed by a call's position in its turn (:attr:`TurnCall.index`), never by the id the model gave it: two calls
of a turn may come with one id, or none (``Policy.HARNESS``); the attempt gives them ids of the loop's own
(``_attempt.py``), and this module keeps the run's used ids for it (:attr:`ToolPhase.ids`).

A phase goes: calls start (eagerly) → the turn completes and :meth:`~ToolPhase.commit` names its calls → they
are answered (:meth:`~ToolPhase.run`, or :meth:`~ToolPhase.answer_rest` for calls not run or cut off) →
:meth:`~ToolPhase.close` gives their results for the conversation, in call order. A failed attempt's eager
calls are cancelled (:meth:`~ToolPhase.reap`) and the next attempt starts afresh; a stopped run stops the phase
(:meth:`~ToolPhase.stop`).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass
from typing import Any

from ._adapter import AssistantMessage, Message, ToolResultMessage
from ._flat import ToolResultChunk
from ._models import SafetyCheck, ToolCallBlock
from ._quote import quote
from ._tool_calls import Outcome, ToolRunner
from ._trace import RunTrace

__all__ = ["ToolPhase", "TurnCall"]


@dataclass(frozen=True, slots=True)
class TurnCall:
    """One completed tool call of a turn, as the loop runs it and the conversation keeps it.

    ``index``: its position among the turn's calls (the flat ``tool_call``'s ``index``); ``block_index``: its
    block's index in the response (call order); ``block``: the call with the loop's id and the arguments as
    kept (see :func:`check_arguments`); ``refusal``: why it is refused before it runs (None: it is not);
    ``checks``: the safety checks it is flagged with, to be acknowledged before it runs (:func:`safety_checks`).
    """

    index: int
    block_index: int
    block: ToolCallBlock
    refusal: str | None
    checks: tuple[SafetyCheck, ...] = ()


class ToolPhase:
    """The run's tool calls (see the module docstring). ``messages``: the run's input, whose call ids are used."""

    __slots__ = ("_calls", "_outcomes", "_result_ids", "_runner", "_stopped", "_tasks", "ids", "trace")

    def __init__(self, runner: ToolRunner, messages: Iterable[Message], trace: RunTrace | None = None) -> None:
        self._runner = runner
        #: The run's trace, told of each call (None: the run is not traced).
        self.trace = trace
        #: Every call id of the conversation: the input's, then those of each completed turn.
        self.ids: set[str] = {
            call.id for message in messages if isinstance(message, AssistantMessage) for call in message.tool_calls
        }
        self._result_ids = itertools.count(1)
        #: The tasks of the calls started and not yet answered, by position.
        self._tasks: dict[int, asyncio.Task[Outcome]] = {}
        #: The outcomes of the calls answered, by position.
        self._outcomes: dict[int, Outcome] = {}
        #: The calls of the completed turn, in call order (None: no turn has completed since the last close).
        self._calls: list[TurnCall] | None = None
        self._stopped = False

    def start(self, call: TurnCall) -> asyncio.Task[Outcome]:
        """Start ``call``, unless it has started: its task."""
        task = self._tasks.get(call.index)
        if task is None:
            job = self._runner.call(call.block, call.refusal, call.checks)
            if self.trace is not None:
                job = self.trace.tool(call.block, job)
            task = asyncio.get_running_loop().create_task(job)
            self._tasks[call.index] = task
        return task

    def commit(self, calls: list[TurnCall]) -> None:
        """The turn completed with ``calls`` (in call order): each is to be answered, and its id is the run's."""
        self._calls = calls
        self.ids.update(call.block.id for call in calls)

    async def run(self) -> AsyncGenerator[ToolResultChunk, None]:
        """Start every call of the turn that has not started, and answer each as it finishes (calls that finish
        together in call order), until all are answered or the phase is stopped."""
        calls = self._calls or []
        pending = {self.start(call): (n, call) for n, call in enumerate(calls)}
        while pending and not self._stopped:
            finished, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(finished, key=lambda t: pending[t][0]):
                _, call = pending.pop(task)
                self._tasks.pop(call.index, None)
                if task.cancelled():
                    if self._stopped:
                        continue  # the run was stopped: answer_rest answers it
                    outcome = Outcome.failure(f"tool {quote(call.block.name)} was cancelled")
                else:
                    outcome = task.result()
                yield self._answer(call, outcome)

    def answer_rest(self, why: str) -> list[ToolResultChunk]:
        """Answer the calls of the turn that have no result yet: a call whose tool finished keeps its result,
        the others get ``why`` (their tasks are left to :meth:`reap`)."""
        out: list[ToolResultChunk] = []
        for call in self._calls or ():
            if call.index in self._outcomes:
                continue
            task = self._tasks.get(call.index)
            if task is not None and task.done() and not task.cancelled():
                outcome = task.result()
            else:
                outcome = Outcome.failure(why)
            out.append(self._answer(call, outcome))
        return out

    def close(self) -> list[ToolResultMessage]:
        """The turn's results as the conversation keeps them, in call order (every call answered); the phase is
        then ready for the next turn."""
        calls, self._calls = self._calls, None
        outcomes = self._outcomes
        self._outcomes = {}
        return [
            ToolResultMessage(
                tool_call_id=call.block.id,
                content=outcome.content,
                is_error=outcome.is_error,
                acknowledged_safety_checks=outcome.acknowledged,
            )
            for call in calls or ()
            for outcome in (outcomes[call.index],)
        ]

    def stop(self) -> None:
        """The run was stopped: cancel every call still running; :meth:`run` answers no more."""
        self._stopped = True
        for task in self._tasks.values():
            if not task.done():
                task.cancel()

    async def reap(self, *others: asyncio.Future[Any]) -> None:
        """Cancel every call still running and wait for it to end, and for ``others`` (the run's other tasks,
        cancelled by the caller). A call already cancelled is not cancelled again: it is waiting for its tool
        to end (at most the grace)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            if not task.cancelling():
                task.cancel()
        waited = [*others, *tasks]
        if waited:
            await asyncio.wait(waited)
        self._tasks.clear()

    def _answer(self, call: TurnCall, outcome: Outcome) -> ToolResultChunk:
        self._outcomes[call.index] = outcome
        return ToolResultChunk(
            id=f"result_{next(self._result_ids)}",
            tool_call_id=call.block.id,
            result=outcome.result,
            is_error=outcome.is_error,
        )

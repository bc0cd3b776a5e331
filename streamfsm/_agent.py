"""The agent loop: stream a turn, run the tools it asks for, repeat — as the flat chunk stream of seed 001.

Theory of operation. :class:`AgentLoop` holds what does not change between runs (adapter, tools, policy,
retry, limits, hooks); :meth:`AgentLoop.run` starts one :class:`AgentRun`, an async iterator of flat chunks.
A run repeats *turns* until the model stops, runs out of tokens, fails, is cancelled, or ``max_turns`` is
reached. One turn:

1. **Model response** (:meth:`AgentRun._respond`, a retry loop around :meth:`AgentRun._attempt`). One attempt
   is one request: the adapter's ``generate()`` runs in a *producer task* that only moves raw chunks into a
   small queue; the run feeds each one to the attempt's own machine and turns it into flat chunks
   (:class:`Attempt`, sans-IO, O(1) per chunk). An attempt that fails with a retryable code is retried after
   a back-off (:class:`RetryPolicy`): an ``ErrorChunk(recoverable=True)`` tells the consumer that what the
   attempt streamed is void, and the next attempt starts from an empty machine. How the response ended is
   recorded on the turn (:class:`_Turn`), never sent down the chunk channel.
2. **Tools** (:class:`ToolPhase`, which owns all the run's tool-call state). On a ``tool-calls`` finish,
   every call runs in its own task, each under its own timeout (:class:`ToolRunner`); results are emitted as
   they complete and added to the conversation in call order. Whatever goes wrong in a tool (unknown name,
   arguments refused or rejected by the schema, whatever it raises, a timeout, a cancellation it ignores) is
   an error *result*, never a crash or a hang of the run. With ``eager_tools`` a call starts at its
   ``block-end``. Calls are keyed by their position in the turn; a call whose id is empty or already used in
   the run gets one of the loop's own (``_attempt.py``).

Where the rest lives: declaring tools in ``_tools.py``, running one call in ``_tool_calls.py``, retry and
limits in ``_retry.py``, metrics in ``_observe.py`` (a turn's meter rolls up into the run's when the turn
closes), hooks and each request's log records in ``_run_log.py``, what a tracer is told in ``_trace.py``.

Stopping. Everything the run waits on is a task it owns (producer, tools, back-off sleep), so stopping is
one synchronous step, :meth:`AgentRun._stop`: record the cause, abort the signal handed to the adapter,
cancel the tasks. The consumer's own task is never cancelled by the run. Causes: the caller's
:class:`AbortSignal`, a turn or run timeout (``loop.call_later``), a budget. The run then ends with
``done(cancel)``; the cause is :attr:`AgentRun.error`. When the consumer's task is cancelled or it stops
iterating early, the same clean-up runs, the hooks still see the final ``done(cancel)``, and the
cancellation propagates; so does a KeyboardInterrupt in the main thread (a Ctrl-C), in the run's code or in
a tool's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from pydantic import TypeAdapter

from ._abort import AbortController, AbortSignal
from ._adapter import IN_RUN, GenerateOptions, LlmAdapter, Message, UserMessage
from ._attempt import Attempt, finish_error
from ._config import Policy
from ._errors import ErrorCode, LlmError
from ._flat import DoneChunk, DoneReason, ErrorChunk, TextChunk, ToolCallChunk, done_reason
from ._models import ToolCallBlock
from ._observe import LOGGER, Flat, Logger, Meter, StreamMetrics
from ._quote import quote
from ._retry import AgentLimits, RetryPolicy, TextBudget, over_token_budget, timed_out
from ._run_log import Hooks, RunLog
from ._tool_calls import Acknowledge, ToolRunner
from ._tool_phase import ToolPhase
from ._tools import Tool
from ._trace import instrumentation

__all__ = ["AgentLoop", "AgentRun"]

_END: Any = object()
_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


class AgentLoop:
    """An agent loop over one adapter: stream a turn, run its tools, repeat (see the module docstring).

    ``tools``: :class:`Tool` objects or plain callables (made into tools with :class:`Tool`'s defaults).
    The request: ``model`` (a model id), or ``options``, a :class:`GenerateOptions` template (system prompt,
    temperature, ...) whose ``messages`` and ``tools`` must be left empty: the run fills them in. The
    run's abort signal is passed to the adapter when it supports the ``signal`` option.
    ``policy`` is the block protocol's; ``retry``, ``limits``, ``hooks`` as their classes say. ``name``
    names the agent where a run is traced (:mod:`streamfsm.otel`: ``invoke_agent {name}``).
    ``eager_tools`` starts a tool call as soon as its ``block-end`` arrives, while the model still
    streams (its result is still emitted after the turn; if the attempt then fails, it is cancelled).
    ``acknowledge_safety_checks(call, checks)`` (sync or async): asked about a call the provider flagged with
    safety checks (a Responses ``computer_call`` with ``pending_safety_checks``, say) before it runs; the call
    runs only if it returns ``True``, and its result then echoes the checks to the provider. Without it, or on
    any other answer, the call is refused: the model gets an error result naming the checks, and the run
    goes on.
    ``clock`` (seconds) and ``sleep`` (seconds, awaitable) are injectable for tests; timeouts use the
    event loop's own timers.
    """

    def __init__(
        self,
        adapter: LlmAdapter,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        model: str | None = None,
        options: GenerateOptions | None = None,
        policy: Policy | str = Policy.STRICT,
        retry: RetryPolicy | None = None,
        limits: AgentLimits | None = None,
        hooks: Hooks | None = None,
        eager_tools: bool = False,
        name: str | None = None,
        acknowledge_safety_checks: Acknowledge | None = None,
        logger: Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if not isinstance(adapter, LlmAdapter):
            raise TypeError(f"adapter must be an LlmAdapter, got {type(adapter).__name__}")
        if (model is None) == (options is None):
            raise ValueError("pass exactly one of model= (a model id) or options= (a GenerateOptions template)")
        template = options if options is not None else GenerateOptions(model=cast(str, model))
        if template.messages or template.tools is not None:
            raise ValueError("the options template must leave messages and tools empty: the run fills them in")
        self.adapter = adapter
        #: The tools by name.
        self.tools: dict[str, Tool] = {}
        for item in tools:
            made = item if isinstance(item, Tool) else Tool(item)
            if made.name in self.tools:
                raise ValueError(f"two tools are named {made.name!r}")
            self.tools[made.name] = made
        #: The tools as the model sees them, sent with every request (None: no tools).
        self.tool_schemas = tuple(t.schema for t in self.tools.values()) or None
        self.options = template
        self.policy = Policy(policy)
        self.retry = retry if retry is not None else RetryPolicy()
        self.limits = limits if limits is not None else AgentLimits()
        self.hooks = hooks if hooks is not None else Hooks()
        self.eager_tools = eager_tools
        #: The agent's name (None: unnamed).
        self.name = name
        #: The hook a call flagged with safety checks is run by (None: such calls are refused).
        self.acknowledge_safety_checks = acknowledge_safety_checks
        self.logger: Logger = logger if logger is not None else LOGGER
        self.clock = clock
        self.sleep = sleep

    def run(
        self, messages: str | Sequence[Message | Mapping[str, Any]], *, signal: AbortSignal | None = None
    ) -> AgentRun:
        """Start a run on ``messages`` (a string is one user message); iterate the result for flat chunks.

        Nothing happens until the first chunk is asked for. ``signal`` aborts the run (``done(cancel)``); by
        default it is the options template's ``signal``.
        """
        if isinstance(messages, str):
            conversation: list[Message] = [UserMessage(content=messages)]
        else:
            conversation = _MESSAGES.validate_python(list(messages))
        return AgentRun(self, conversation, signal if signal is not None else self.options.signal)


class _Turn:
    """One turn of a run: its number, its meter, and how its model response ended (neither ``attempt`` nor
    ``failure``: the run was stopped)."""

    __slots__ = ("attempt", "failure", "meter", "number")

    def __init__(self, number: int, meter: Meter) -> None:
        self.number = number
        self.meter = meter
        #: The attempt that completed.
        self.attempt: Attempt | None = None
        #: What the response failed with for good (retries exhausted, or not retryable).
        self.failure: LlmError | None = None


class AgentRun:
    """One run of an :class:`AgentLoop`: an async iterator of flat chunks, ending with one ``done``.

    Use ``async for chunk in run`` (or ``async with run: ...`` to close it for sure when leaving early;
    :meth:`aclose` does the same). While and after it runs: :attr:`messages`, the conversation with every
    completed turn and tool result; :attr:`turns`, metrics per turn; :attr:`metrics`, of the run;
    :attr:`done`, the final chunk; :attr:`error`, what ended it (None for ``stop``, ``length`` and
    ``tool_use``; the :class:`LlmError` of a failure; ``ABORTED``, ``TIMEOUT`` or ``BUDGET_EXCEEDED``
    for ``cancel``).
    """

    def __init__(self, agent: AgentLoop, messages: list[Message], signal: AbortSignal | None) -> None:
        self.agent = agent
        #: The conversation: the input, then every completed turn and its tool results.
        self.messages: list[Message] = messages
        #: Metrics of every completed (or cut-off) turn.
        self.turns: list[StreamMetrics] = []
        #: The final chunk, once the run is over.
        self.done: DoneChunk | None = None
        #: What ended the run, when it did not end by the model's own finish.
        self.error: LlmError | None = None
        self._controller = AbortController()
        #: Why the run was stopped (None: it was not).
        self._cause: LlmError | None = None
        #: A KeyboardInterrupt in the main thread while a tool ran: raised to the consumer once the run is over.
        self._interrupt: BaseException | None = None
        self._producer: asyncio.Task[Exception | None] | None = None
        self._sleeper: asyncio.Future[Any] | None = None
        runner = ToolRunner(
            agent.tools,
            timeout=agent.limits.tool_timeout,
            threads=agent.limits.tool_threads,
            grace=agent.limits.tool_cancel_grace,
            logger=agent.logger,
            on_interrupt=self._interrupted_in_tool,
            acknowledge=agent.acknowledge_safety_checks,
        )
        self._tools = ToolPhase(runner, messages)
        self._log = RunLog(agent.hooks, agent.logger, agent.clock)
        #: The run's figures: those of its closed turns (the open turn's meter rolls up when it closes).
        self._meter = Meter(agent.clock())
        self._turn: _Turn | None = None
        self._budget = TextBudget(agent.limits.max_text_chars)
        self._rng = agent.retry.rng()
        self._gen = self._events(signal)

    # -- the async-iterator surface

    def __aiter__(self) -> AgentRun:
        """The run itself."""
        return self

    async def __anext__(self) -> Flat:
        """The next flat chunk."""
        return await self._gen.__anext__()

    async def aclose(self) -> None:
        """Stop the run if it is still going (upstream and tools cancelled; hooks see ``done(cancel)``)."""
        await self._gen.aclose()

    async def __aenter__(self) -> AgentRun:
        """``async with loop.run(...) as run``: closed when the block is left."""
        return self

    async def __aexit__(self, *_: object) -> None:
        """Close the run."""
        await self.aclose()

    async def collect(self) -> list[Flat]:
        """Run to the end; every flat chunk."""
        return [chunk async for chunk in self]

    @property
    def metrics(self) -> StreamMetrics:
        """The run's metrics so far (final once :attr:`done` is set)."""
        return self._meter.metrics(self.agent.clock(), self._turn.meter if self._turn is not None else None)

    # -- stopping

    def _stop(self, cause: LlmError) -> None:
        """Stop everything the run is waiting on (idempotent; the first cause wins). Synchronous."""
        if self._cause is not None or self.done is not None:
            return
        self._cause = cause
        self._controller.abort(cause.message)
        for task in (self._producer, self._sleeper):
            if task is not None and not task.done():
                task.cancel()
        self._tools.stop()

    def _interrupted_in_tool(self, exc: BaseException, call: ToolCallBlock) -> None:
        """A KeyboardInterrupt in the main thread, in a tool: maybe the user's Ctrl-C. Stop the run; the
        consumer gets the interrupt instead of the final ``done``."""
        if self._interrupt is None and self.done is None:
            self._interrupt = exc
        self._stop(LlmError(f"interrupted: KeyboardInterrupt in tool {quote(call.name)}", ErrorCode.ABORTED))

    async def _reap(self) -> None:
        """Cancel and wait for every task of the run (producer, back-off sleep, tools). A task already
        cancelled is not cancelled again (a tool's is waiting for its call to end, at most the grace)."""
        own = [t for t in (self._producer, self._sleeper) if t is not None]
        for task in own:
            if not (isinstance(task, asyncio.Task) and task.cancelling()):
                task.cancel()
        await self._tools.reap(*own)
        self._producer = self._sleeper = None

    # -- the run

    async def _events(self, signal: AbortSignal | None) -> AsyncGenerator[Flat, None]:
        agent = self.agent
        aio = asyncio.get_running_loop()
        self._meter.start = agent.clock()  # the run starts when its first chunk is asked for, not when made
        instrumented = instrumentation()
        if instrumented is not None:
            self._log.trace = self._tools.trace = instrumented.run(
                agent.adapter, agent.options, agent.name, agent.clock
            )
        handles: list[asyncio.TimerHandle] = []
        remove: Callable[[], None] | None = None
        if signal is not None:
            if signal.aborted:
                self._stop(signal.error())
            else:

                def listener() -> None:
                    # abort() runs listeners in the aborting thread: act at once in ours, else hand over.
                    try:
                        here = asyncio.get_running_loop() is aio
                    except RuntimeError:
                        here = False
                    if here:
                        self._stop(signal.error())
                    else:
                        aio.call_soon_threadsafe(self._stop, signal.error())

                remove = signal.add_listener(listener)
        if agent.limits.run_timeout is not None:
            seconds = agent.limits.run_timeout
            handles.append(aio.call_later(seconds, self._stop, timed_out("the run", seconds)))
        try:
            async with contextlib.aclosing(self._turns(aio, handles)) as turns:
                async for chunk in turns:
                    await self._log.chunk(chunk)
                    if chunk is self.done and self._interrupt is not None:
                        raise self._interrupt  # a Ctrl-C: the run is over, the program is interrupted
                    yield chunk
            await self._reap()  # nothing is left running behind a finished run
        except BaseException as exc:
            # Cancelled, closed early (GeneratorExit), or a bug: stop everything, then let it through.
            if self.done is None:
                self._stop(_interrupted(exc))
                for chunk in await self._wind_down():
                    await self._log.chunk(chunk)
            raise
        finally:
            if remove is not None:
                remove()
            for handle in handles:
                handle.cancel()

    async def _turns(
        self, aio: asyncio.AbstractEventLoop, handles: list[asyncio.TimerHandle]
    ) -> AsyncGenerator[Flat, None]:
        agent = self.agent
        limits = agent.limits
        number = 0
        while True:
            if self._cause is not None:
                for chunk in await self._wind_down():
                    yield chunk
                return
            if number == limits.max_turns:
                yield self._finish("tool_use")
                return
            number += 1
            turn = self._turn = _Turn(number, Meter(agent.clock()))
            timer = None
            if limits.turn_timeout is not None:
                timer = aio.call_later(
                    limits.turn_timeout, self._stop, timed_out(f"turn {number}", limits.turn_timeout)
                )
                handles.append(timer)
            try:
                async with contextlib.aclosing(self._respond(aio, turn)) as response:
                    async for chunk in response:
                        yield chunk
            finally:
                if timer is not None:
                    timer.cancel()
                    handles.remove(timer)
            attempt = turn.attempt
            if attempt is None:
                self._close_turn()
                if turn.failure is None:
                    continue  # stopped: the wind-down
                self.error = turn.failure
                yield ErrorChunk(error=turn.failure, recoverable=False)
                yield self._finish("error")
                return
            result = attempt.result
            assert result is not None
            calls = attempt.turn_calls()
            turn.meter.tool_calls = len(calls)
            self._close_turn()
            kind = result.finish.kind
            if kind == "aborted":
                # The provider aborted the response: the run ends as a cancellation, the turn not kept.
                self._stop(finish_error(result.finish.failure, ErrorCode.ABORTED))
                continue
            self.messages.append(attempt.message())
            self._tools.commit(calls)
            budget = limits.max_output_tokens
            used = self._meter.usage.completion_tokens if self._meter.usage is not None else 0
            if budget is not None and used > budget:
                self._stop(over_token_budget(used, budget))
            if kind == "tool-calls" and self._cause is None:
                async for chunk in self._tools.run():
                    yield chunk
                if self._cause is None:
                    self.messages.extend(self._tools.close())
                continue
            if calls:
                # The model completed calls the run will not make: answer each, so the conversation stays whole.
                why = (
                    f"not run: {self._cause.message}"
                    if self._cause is not None
                    else f"not run: the model ended its turn with {quote(kind)}"
                )
                for chunk in await self._end_phase(why):
                    yield chunk
            if self._cause is not None:
                continue  # the wind-down
            yield self._finish(done_reason(kind))
            return

    async def _respond(self, aio: asyncio.AbstractEventLoop, turn: _Turn) -> AsyncGenerator[Flat, None]:
        """The retry loop: the turn's model response, one :meth:`_attempt` after another, as the retry policy
        says; flat chunks. It ends with ``turn.attempt`` set (the attempt that completed), with ``turn.failure``
        set (failed for good: logged, not yet reported), or with the run stopped."""
        agent = self.agent
        retry = agent.retry
        number = 0
        while True:
            number += 1
            attempt = Attempt(agent.policy, agent.limits.stream, turn.number, number, self._tools.ids)
            async with contextlib.aclosing(self._attempt(aio, turn, attempt)) as chunks:
                async for chunk in chunks:
                    yield chunk
            if self._cause is not None:
                return
            failure = attempt.failure
            if failure is None:
                turn.attempt = attempt
                return
            await self._reap()  # an eager tool of the failed attempt
            if failure.code == ErrorCode.ABORTED:
                # The adapter or provider aborted on its own: the run ends as a cancellation.
                self._stop(failure)
                return
            delay = retry.next_delay_ms(failure, turn.meter.retries + 1, self._rng)
            if delay is None:
                turn.failure = failure
                self._log.failed(failure, turn.number, number)
                return
            turn.meter.retries += 1
            self._log.retry(failure, turn.meter.retries, retry.max_retries, delay, turn.number)
            yield ErrorChunk(error=failure, recoverable=True, retry_after=delay)
            if self._cause is not None:
                return
            sleeper = self._sleeper = asyncio.ensure_future(agent.sleep(delay / 1000))
            await asyncio.wait([sleeper])
            self._sleeper = None
            if self._cause is not None:
                return
            sleeper.result()  # a sleep that failed fails the run; the retry does not go ahead unslept

    async def _attempt(
        self, aio: asyncio.AbstractEventLoop, turn: _Turn, attempt: Attempt
    ) -> AsyncGenerator[Flat, None]:
        """One model request: its flat chunks as they come. It ends with ``attempt.failure`` set (failed, an
        ``error`` finish included), with ``attempt.result`` alone set (completed), or with the run stopped;
        the request's end is reported either way (``llm_response``, ``stream_end``)."""
        agent = self.agent
        meter = turn.meter
        budget = self._budget
        eager = agent.eager_tools
        options = self._request_options()
        await self._log.request_start(options, attempt, meter)
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)
        producer = self._producer = aio.create_task(self._pump(options, queue, meter))
        producer.add_done_callback(functools.partial(_wake, queue))
        step = attempt.step
        try:
            while self._cause is None:
                # A producer that ended while the queue was full could not post _END (see _wake).
                item = queue.get_nowait() if not queue.empty() else (_END if producer.done() else await queue.get())
                if self._cause is not None:
                    break
                if item is _END:
                    if producer.cancelled():
                        # Not by the run (its cause is unset): the adapter raised CancelledError of its own.
                        attempt.failure = LlmError(f"{type(agent.adapter).__name__} was cancelled", ErrorCode.ABORTED)
                    elif (exc := producer.result()) is not None:
                        attempt.failure = LlmError.wrap(exc, f"{type(agent.adapter).__name__} failed")
                    else:
                        attempt.complete()
                    break
                flat = step(item)
                if flat is None:
                    continue
                if isinstance(flat, int):  # reasoning: not shown, but streamed and held, so counted
                    if budget.take(flat) < flat:
                        self._stop(budget.error())
                        break
                    continue
                if type(flat) is TextChunk:
                    size = len(flat.content)
                    fit = budget.take(size)
                    if fit < size:
                        if fit > 0:
                            yield TextChunk(content=flat.content[:fit])
                        self._stop(budget.error())
                        break
                elif eager and type(flat) is ToolCallChunk:
                    self._tools.start(attempt.calls[-1])
                yield flat
        except LlmError as exc:
            attempt.failure = exc
        if not producer.done():
            producer.cancel()
        await asyncio.wait([producer])
        self._producer = None
        result = attempt.result
        if self._cause is not None:
            await self._log.request_end("cancel", self._cause)
            return
        if attempt.failure is not None:
            await self._log.request_end("error", attempt.failure)
        elif result is not None:
            await self._log.request_end(done_reason(result.finish.kind))

    async def _pump(self, options: GenerateOptions, queue: asyncio.Queue[Any], meter: Meter) -> Exception | None:
        """The producer task: the adapter's raw chunks into ``queue`` (the run validates them), counted and
        timed as they arrive. What the adapter raises is returned, not raised: a run stopped meanwhile drops
        it, and a task that failed unread would be logged by asyncio as "never retrieved"."""
        clock = self.agent.clock
        IN_RUN.set(True)  # this task's own context: the adapter's stream is the run's request, traced as such
        # The run checks the chunks itself; its limits (options.limits) still bound what the adapter holds back.
        chunks = self._log.chunks(self.agent.adapter.generate(options, policy=None))
        try:
            async for chunk in chunks:
                if meter.first is None:
                    meter.first = clock()
                meter.chunks += 1
                await queue.put(chunk)
        except Exception as exc:
            return exc
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
        return None

    def _request_options(self) -> GenerateOptions:
        agent = self.agent
        signal = self._controller.signal if "signal" in agent.adapter.supported_options else None
        return agent.options.model_copy(
            update={
                "messages": tuple(self.messages),
                "tools": agent.tool_schemas,
                "signal": signal,
                "limits": agent.limits.stream,
            }
        )

    # -- ending

    def _close_turn(self) -> None:
        """The open turn is over: its metrics are kept, and its figures roll up into the run's."""
        turn, self._turn = self._turn, None
        assert turn is not None
        meter = turn.meter
        meter.end = self.agent.clock()
        self._meter.add(meter)
        self.turns.append(meter.metrics(meter.end))

    def _finish(self, reason: DoneReason) -> DoneChunk:
        self._meter.end = self.agent.clock()
        self.done = DoneChunk(reason=reason, usage=self._meter.usage)
        if self._log.trace is not None:
            self._log.trace.end(self.done, self.error)
        return self.done

    async def _end_phase(self, why: str) -> list[Flat]:
        """Answer the calls of the tool phase that have no result yet (a tool that finished keeps its result,
        the others get ``why``), stop every task of the run, and add the phase's results to the conversation."""
        out: list[Flat] = [*self._tools.answer_rest(why)]
        await self._reap()
        self.messages.extend(self._tools.close())
        return out

    async def _wind_down(self) -> list[Flat]:
        """The run was stopped (``_cause`` is set): the chunks that end it, ending with ``done(cancel)``.

        Calls of a tool phase still unanswered are answered: a tool that finished keeps its result, the
        others are cancelled. The request in flight, if any, gets its ``stream_end``.
        """
        cause = self._cause
        assert cause is not None
        out = await self._end_phase(f"cancelled: {cause.message}")
        await self._log.request_end("cancel", cause)
        if self._turn is not None:
            self._close_turn()
        self.error = cause
        out.append(self._finish("cancel"))
        return out


def _wake(queue: asyncio.Queue[Any], _: object) -> None:
    with contextlib.suppress(asyncio.QueueFull):
        queue.put_nowait(_END)


def _interrupted(exc: BaseException) -> LlmError:
    if isinstance(exc, GeneratorExit):
        return LlmError("the consumer closed the run", ErrorCode.ABORTED)
    if isinstance(exc, asyncio.CancelledError):
        return LlmError("the run's task was cancelled", ErrorCode.ABORTED)
    if isinstance(exc, KeyboardInterrupt):  # a Ctrl-C while the run's own code ran (a hook, say)
        return LlmError("interrupted: KeyboardInterrupt", ErrorCode.ABORTED)
    return LlmError.wrap(exc, "the run failed")

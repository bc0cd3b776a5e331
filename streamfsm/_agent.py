"""The agent loop: stream a turn, run the tools it asks for, repeat — as the flat chunk stream of seed 001.

Theory of operation. :class:`AgentLoop` holds what does not change between runs (adapter, tools, policy,
retry, limits, hooks); :meth:`AgentLoop.run` starts one :class:`AgentRun`, an async iterator of flat chunks.
A run repeats *turns* until the model stops, runs out of tokens, fails, is cancelled, or ``max_turns`` is
reached. One turn:

1. **Model response.** The adapter's ``generate()`` runs in a *producer task* that only moves raw chunks
   into a small queue; the run feeds each one to its own :class:`StreamAssembler` (every chunk validated,
   blocks assembled) and turns it into flat chunks (:class:`_Attempt`, sans-IO, O(1) per chunk). An
   attempt that fails with a retryable code is retried after a back-off (:class:`RetryPolicy`): an
   ``ErrorChunk(recoverable=True)`` tells the consumer that what the attempt streamed is void, and the
   next attempt starts from an empty assembler.
2. **Tools.** On a ``tool-calls`` finish, every call runs in its own task, each under its own timeout
   (:class:`ToolRunner`, in ``_tools.py``); results are emitted as they complete and added to the
   conversation in call order. Whatever goes wrong in a tool (unknown name, arguments refused or rejected
   by the schema, whatever it raises, a timeout, a cancellation it ignores) is an error *result*, never a
   crash or a hang of the run. With ``eager_tools`` a call starts at its ``block-end``.

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
import inspect
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ._abort import AbortController, AbortSignal
from ._adapter import AssistantMessage, GenerateOptions, LlmAdapter, Message, ToolResultMessage, UserMessage
from ._config import DEFAULT_LIMITS, Limits, Policy
from ._errors import RETRYABLE_CODES, ErrorCode, LlmError
from ._flat import (
    DoneChunk,
    DoneReason,
    ErrorChunk,
    TextChunk,
    TokenUsage,
    ToolCallChunk,
    ToolResultChunk,
    done_reason,
)
from ._machine import StreamAssembler
from ._models import LlmFailure, StreamResult, ToolCallBlock, Usage, WireModel
from ._tools import Tool, ToolError, ToolRunner, _Outcome, check_arguments, tool, tool_signal
from ._wire import CallId

__all__ = [
    "AgentLimits",
    "AgentLoop",
    "AgentRun",
    "Hooks",
    "RetryPolicy",
    "StreamMetrics",
    "Tool",
    "ToolError",
    "tool",
    "tool_signal",
]

#: A flat chunk object, as a run yields it.
Flat: TypeAlias = TextChunk | ToolCallChunk | ToolResultChunk | ErrorChunk | DoneChunk
F = TypeVar("F", bound=Callable[..., Any])

#: The logger the loop writes ``llm_request``, ``llm_response``, ``llm_retry``, ``llm_error``, ``tool_error``,
#: ``tool_abandoned`` and ``hook_error`` to.
LOGGER = logging.getLogger("streamfsm.agent")
# A library leaves logging to the application: without its own configuration nothing is printed
# (Python's last-resort handler would otherwise write warnings to stderr).
logging.getLogger("streamfsm").addHandler(logging.NullHandler())


# --- Retry, limits, metrics -------------------------------------------------------------------------


class RetryPolicy(BaseModel):
    """Exponential back-off for failed attempts (the seed's ``maxRetries``/``retryDelay``/``retryMultiplier``).

    Retry ``n`` (1, 2, ...) waits ``delay_ms * multiplier ** (n - 1)``, at most ``max_delay_ms``, and at
    least the ``retry_after_ms`` the provider asked for. An error whose ``retry_after_ms`` is more than
    ``max_delay_ms`` is not retried: the provider said a retry within the bound would fail again.
    Only codes in ``retryable_codes`` are retried (by default :data:`RETRYABLE_CODES`).
    ``RetryPolicy(max_retries=0)`` never retries.
    """

    model_config = ConfigDict(frozen=True)

    max_retries: int = Field(default=3, ge=0)
    delay_ms: int = Field(default=1000, ge=0)
    multiplier: float = Field(default=2.0, ge=1.0)
    max_delay_ms: int = Field(default=30_000, ge=0)
    retryable_codes: frozenset[str] = RETRYABLE_CODES

    def backoff_ms(self, retry: int) -> int:
        """The back-off before retry number ``retry`` (1-based), ignoring any ``retry_after_ms``."""
        try:
            delay = self.delay_ms * self.multiplier ** max(0, retry - 1)
        except OverflowError:  # the power passed the largest float: any delay but 0 is past the cap
            return self.max_delay_ms if self.delay_ms else 0
        return int(min(delay, self.max_delay_ms))

    def next_delay_ms(self, error: LlmError, retry: int) -> int | None:
        """Milliseconds to wait before retry number ``retry`` after ``error``, or None: do not retry."""
        if retry > self.max_retries or error.code not in self.retryable_codes:
            return None
        delay = self.backoff_ms(retry)
        asked = error.retry_after_ms
        if asked is not None:
            if asked > self.max_delay_ms:
                return None
            delay = max(delay, asked)
        return delay


class AgentLimits(BaseModel):
    """How far a run may go. Timeouts are seconds; ``None`` means no limit.

    - ``max_turns``: model responses per run. When the last one still asks for tools, its tools run and
      the run ends with ``done(tool_use)``.
    - ``turn_timeout``: one model response, all its attempts and back-off included (not its tools).
    - ``run_timeout``: the whole run.
    - ``tool_timeout``: one tool call, unless the tool sets its own ``timeout``. A tool that passes it
      gives an error result; the run goes on.
    - ``tool_threads``: sync tool calls of one run running at once, each in a thread of its own (a call
      waits for a free one within its timeout; a call left behind no longer counts).
    - ``tool_cancel_grace``: how long a cancelled tool call (timed out, or its run stopped) is waited for
      before it is left behind, still running, and reported (``tool_abandoned``).
    - ``max_output_tokens``: output tokens of the run, checked as each response ends.
    - ``max_text_chars``: characters of text and reasoning streamed by the run, checked at every delta;
      a text chunk that passes it is cut at the limit.
    - ``stream``: the :class:`Limits` of each response's machine.

    A timeout or budget stops the run as an abort does: ``done(cancel)``, with :attr:`AgentRun.error`
    ``TIMEOUT`` or ``BUDGET_EXCEEDED``.
    """

    model_config = ConfigDict(frozen=True)

    max_turns: int = Field(default=10, ge=1)
    turn_timeout: float | None = Field(default=None, gt=0)
    run_timeout: float | None = Field(default=None, gt=0)
    tool_timeout: float | None = Field(default=60.0, gt=0)
    tool_threads: int = Field(default=8, ge=1)
    tool_cancel_grace: float = Field(default=1.0, gt=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    max_text_chars: int | None = Field(default=None, ge=0)
    stream: Limits = DEFAULT_LIMITS


class StreamMetrics(WireModel):
    """Figures of one turn (:attr:`AgentRun.turns`) or of a whole run (:attr:`AgentRun.metrics`).

    Times are seconds on the loop's clock. ``ttfb``: from the start (of the turn's first request, or of
    the run: when its first chunk is asked for) to the first chunk the adapter sent (None if none came).
    ``total_duration``: a turn from its first request to its finish (tools not included); a run from
    start to ``done``. ``chunk_count``: block-protocol chunks the adapter sent, every attempt counted.
    ``tool_call_count``: completed tool calls. ``retry_count``: attempts retried. ``token_usage``: added
    up over every response that reported usage (None if none did).
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


class _Meter:
    """Running figures behind a :class:`StreamMetrics` (plain attributes: updated per chunk)."""

    __slots__ = ("chunks", "end", "first", "retries", "start", "tool_calls", "usage")

    def __init__(self, start: float) -> None:
        self.start = start
        self.first: float | None = None
        self.end: float | None = None
        self.chunks = 0
        self.tool_calls = 0
        self.retries = 0
        self.usage: TokenUsage | None = None

    def add_usage(self, usage: TokenUsage) -> None:
        self.usage = usage if self.usage is None else self.usage + usage

    def metrics(self, now: float) -> StreamMetrics:
        end = self.end if self.end is not None else now
        return StreamMetrics(
            ttfb=None if self.first is None else self.first - self.start,
            total_duration=end - self.start,
            chunk_count=self.chunks,
            tool_call_count=self.tool_calls,
            retry_count=self.retries,
            token_usage=self.usage,
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


async def _notify(listeners: list[Callable[[Any], Any]], event: str, value: object, logger: _Logger) -> None:
    for listener in listeners:
        try:
            result = listener(value)
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception("hook_error", extra={"hook": event, "listener": repr(listener)})


# --- One attempt, sans-IO -----------------------------------------------------------------------------


class _Attempt:
    """One model request: block-protocol chunks in (validated by its own machine), flat chunks out."""

    __slots__ = ("asm", "feed", "refused", "streamed", "tool_index")

    def __init__(self, policy: Policy | str, limits: Limits) -> None:
        # Arguments that are not a JSON object are the model's mistake, not a broken stream: kept raw, so that
        # the call gets an error result (check_arguments) and the model can try again.
        self.asm = StreamAssembler(policy, limits, raw_arguments=True)
        self.feed = self.asm.feed
        self.tool_index = 0
        # Text and reasoning blocks open now that have streamed some text (a block without deltas counts at its end).
        self.streamed: set[int] = set()
        #: Calls refused before they run (check_arguments): id -> (the arguments kept, the error result's message).
        self.refused: dict[str, tuple[str, str]] = {}

    def step(self, chunk: Mapping[str, Any]) -> TextChunk | ToolCallChunk | int | None:
        """Feed one chunk (raises the machine's :class:`LlmError`); the flat chunk it makes, if any, or the
        number of reasoning characters it streamed (reasoning is not in the flat stream, but in the budget)."""
        self.feed(chunk)
        kind = chunk["type"]
        if kind == "text-delta" or kind == "reasoning-delta":
            text = chunk["text"]
            if text:
                self.streamed.add(chunk["index"])
                return TextChunk(content=text) if kind == "text-delta" else len(text)
            return None
        if kind == "block-end":
            block = chunk["block"]
            block_type = block["type"]
            if block_type == "text" or block_type == "reasoning":
                index = chunk["index"]
                if index in self.streamed:
                    self.streamed.discard(index)
                elif block["text"]:
                    return TextChunk(content=block["text"]) if block_type == "text" else len(block["text"])
            elif block_type == "tool-call":
                call_id = block["id"]
                arguments, refusal = check_arguments(block["name"], block["arguments"])
                if refusal is not None:
                    self.refused[call_id] = (arguments, refusal)
                call = ToolCallChunk(id=call_id, name=block["name"], arguments=arguments, index=self.tool_index)
                self.tool_index += 1
                return call
        return None


def _refusal(refused: Mapping[str, tuple[str, str]], call_id: str) -> str | None:
    found = refused.get(call_id)
    return None if found is None else found[1]


def _kept(result: StreamResult, refused: Mapping[str, tuple[str, str]]) -> AssistantMessage:
    """The turn as the conversation keeps it: refused calls with the arguments :func:`check_arguments` gave
    them, which any provider can be sent."""
    message = AssistantMessage.from_result(result)
    if not refused:
        return message
    blocks = tuple(
        ToolCallBlock(id=block.id, name=block.name, arguments=refused[block.id][0])
        if isinstance(block, ToolCallBlock) and block.id in refused
        else block
        for block in message.blocks
    )
    return message.model_copy(update={"blocks": blocks})


# --- The loop ---------------------------------------------------------------------------------------

_Logger: TypeAlias = logging.Logger | logging.LoggerAdapter[logging.Logger]
_END: Any = object()
_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


class AgentLoop:
    """An agent loop over one adapter: stream a turn, run its tools, repeat (see the module docstring).

    ``tools``: :class:`Tool` objects or plain callables (made into tools with :class:`Tool`'s defaults).
    The request: ``model`` (a model id), or ``options``, a :class:`GenerateOptions` template (system prompt,
    temperature, ...) whose ``messages`` and ``tools`` must be left empty: the run fills them in. The
    run's abort signal is passed to the adapter when it supports the ``signal`` option.
    ``policy`` is the block protocol's; ``retry``, ``limits``, ``hooks`` as their classes say.
    ``eager_tools`` starts a tool call as soon as its ``block-end`` arrives, while the model still
    streams (its result is still emitted after the turn; if the attempt then fails, it is cancelled).
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
        logger: _Logger | None = None,
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
        self.options = template
        self.policy = Policy(policy)
        self.retry = retry if retry is not None else RetryPolicy()
        self.limits = limits if limits is not None else AgentLimits()
        self.hooks = hooks if hooks is not None else Hooks()
        self.eager_tools = eager_tools
        self.logger: _Logger = logger if logger is not None else LOGGER
        self.clock = clock
        self.sleep = sleep
        self._schemas = tuple(t.schema for t in self.tools.values()) or None

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
        self._signal = signal
        self._controller = AbortController()
        self._cause: LlmError | None = None
        self._producer: asyncio.Task[Exception | None] | None = None
        self._sleeper: asyncio.Future[Any] | None = None
        self._tasks: dict[str, asyncio.Task[_Outcome]] = {}
        self._tools = ToolRunner(
            agent.tools,
            timeout=agent.limits.tool_timeout,
            threads=agent.limits.tool_threads,
            grace=agent.limits.tool_cancel_grace,
            logger=agent.logger,
            on_interrupt=self._interrupted_in_tool,
        )
        #: A KeyboardInterrupt in the main thread while a tool ran: raised to the consumer once the run is over.
        self._interrupt: BaseException | None = None
        #: The calls of the current turn that are refused before they run (see _Attempt.refused).
        self._refused: dict[str, tuple[str, str]] = {}
        self._request: GenerateOptions | None = None
        self._request_meta: tuple[int, int, float] = (0, 0, 0.0)
        self._phase: list[ToolCallBlock] | None = None
        self._outcomes: dict[str, _Outcome] = {}
        self._results = 0
        self._text_chars = 0
        self._meter = _Meter(agent.clock())
        self._turn: _Meter | None = None
        self._gen = self._events()

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
        return self._meter.metrics(self.agent.clock())

    # -- stopping

    def _stop(self, cause: LlmError) -> None:
        """Stop everything the run is waiting on (idempotent; the first cause wins). Synchronous."""
        if self._cause is not None or self.done is not None:
            return
        self._cause = cause
        self._controller.abort(cause.message)
        for task in (self._producer, self._sleeper, *self._tasks.values()):
            if task is not None and not task.done():
                task.cancel()

    def _interrupted_in_tool(self, exc: BaseException, call: ToolCallBlock) -> None:
        """A KeyboardInterrupt in the main thread, in a tool: maybe the user's Ctrl-C. Stop the run; the
        consumer gets the interrupt instead of the final ``done``."""
        if self._interrupt is None and self.done is None:
            self._interrupt = exc
        self._stop(LlmError(f"interrupted: KeyboardInterrupt in tool {call.name!r}", ErrorCode.ABORTED))

    async def _reap(self) -> None:
        """Cancel and wait for every task of the run (producer, back-off sleep, tools). A tool task already
        cancelled is not cancelled again: it is waiting for its call to end (at most the grace)."""
        tasks = [t for t in (self._producer, self._sleeper, *self._tasks.values()) if t is not None]
        for task in tasks:
            if not (isinstance(task, asyncio.Task) and task.cancelling()):
                task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self._producer = self._sleeper = None
        self._tasks.clear()

    # -- emitting

    async def _emit(self, chunk: Flat) -> Flat:
        listeners = self.agent.hooks.listeners["chunk"]
        if listeners:
            await _notify(listeners, "chunk", chunk, self.agent.logger)
        return chunk

    def _finish(self, reason: DoneReason) -> DoneChunk:
        self._meter.end = self.agent.clock()
        self.done = DoneChunk(reason=reason, usage=self._meter.usage)
        return self.done

    # -- the run

    async def _events(self) -> AsyncGenerator[Flat, None]:
        agent = self.agent
        aio = asyncio.get_running_loop()
        self._meter.start = agent.clock()  # the run starts when its first chunk is asked for, not when made
        handles: list[asyncio.TimerHandle] = []
        remove: Callable[[], None] | None = None
        signal = self._signal
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
            handles.append(aio.call_later(seconds, self._stop, _timeout("the run", seconds)))
        try:
            async with contextlib.aclosing(self._turns(aio, handles)) as turns:
                async for chunk in turns:
                    await self._emit(chunk)
                    if chunk is self.done and self._interrupt is not None:
                        raise self._interrupt  # a Ctrl-C: the run is over, the program is interrupted
                    yield chunk
            await self._reap()  # nothing is left running behind a finished run
        except BaseException as exc:
            # Cancelled, closed early (GeneratorExit), or a bug: stop everything, then let it through.
            if self.done is None:
                self._stop(_interrupted(exc))
                for chunk in await self._wind_down():
                    await self._emit(chunk)
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
        turn = 0
        while True:
            if self._cause is not None:
                for chunk in await self._wind_down():
                    yield chunk
                return
            if turn == limits.max_turns:
                yield self._finish("tool_use")
                return
            turn += 1
            meter = self._turn = _Meter(agent.clock())
            timer = None
            if limits.turn_timeout is not None:
                timer = aio.call_later(limits.turn_timeout, self._stop, _timeout(f"turn {turn}", limits.turn_timeout))
                handles.append(timer)
            try:
                result: StreamResult | None = None
                async with contextlib.aclosing(self._respond(aio, turn, meter)) as response:
                    async for item in response:
                        if isinstance(item, StreamResult):
                            result = item
                        else:
                            yield item
            finally:
                if timer is not None:
                    timer.cancel()
                    handles.remove(timer)
            meter.end = agent.clock()
            if result is None:
                # Failed for good (the error and done are out) or stopped (the wind-down follows).
                self.turns.append(meter.metrics(meter.end))
                self._turn = None
                if self.done is not None:
                    return
                continue
            calls = result.tool_calls
            meter.tool_calls = len(calls)
            self._meter.tool_calls += len(calls)
            self.turns.append(meter.metrics(meter.end))
            self._turn = None
            kind = result.finish.kind
            if kind == "aborted":
                # The provider aborted the response: the run ends as a cancellation, the turn not kept.
                self._stop(_failure_error(result.finish.failure, ErrorCode.ABORTED))
                continue
            self.messages.append(_kept(result, self._refused))
            budget = limits.max_output_tokens
            if budget is not None and self._meter.usage is not None and self._meter.usage.completion_tokens > budget:
                self._stop(
                    LlmError(
                        f"the run used {self._meter.usage.completion_tokens} output tokens; its budget is {budget}",
                        ErrorCode.BUDGET_EXCEEDED,
                    )
                )
            if kind == "tool-calls" and self._cause is None:
                async for chunk in self._run_tools(calls):
                    yield chunk
                continue
            if calls:
                # The model completed calls the run will not make: answer each, so the conversation stays whole.
                why = (
                    f"not run: {self._cause.message}"
                    if self._cause is not None
                    else f"not run: the model ended its turn with {kind!r}"
                )
                self._phase = calls
                for chunk in await self._answer_rest(why):
                    yield chunk
            if self._cause is not None:
                continue  # the wind-down
            yield self._finish(done_reason(kind))
            return

    async def _respond(
        self, aio: asyncio.AbstractEventLoop, turn: int, meter: _Meter
    ) -> AsyncGenerator[Flat | StreamResult, None]:
        """One model response with its retries: flat chunks, then the :class:`StreamResult` if it completed."""
        agent = self.agent
        run_meter = self._meter
        text_budget = agent.limits.max_text_chars
        attempt_no = 0
        while True:
            attempt_no += 1
            options = self._request_options()
            attempt = _Attempt(agent.policy, agent.limits.stream)
            await self._stream_start(options, turn, attempt_no)
            queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)
            producer = self._producer = aio.create_task(self._pump(options, queue, meter))
            producer.add_done_callback(functools.partial(_wake, queue))
            failure: LlmError | None = None
            result: StreamResult | None = None
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
                            failure = LlmError(f"{type(agent.adapter).__name__} was cancelled", ErrorCode.ABORTED)
                        elif (exc := producer.result()) is not None:
                            failure = _as_llm_error(exc, agent.adapter)
                        else:
                            result = attempt.asm.close()
                        break
                    flat = step(item)
                    if flat is None:
                        continue
                    if isinstance(flat, int):  # reasoning: not shown, but streamed and held, so counted
                        self._text_chars += flat
                        if text_budget is not None and self._text_chars > text_budget:
                            self._stop(_over_budget(text_budget))
                            break
                        continue
                    if type(flat) is TextChunk:
                        if text_budget is not None:
                            room = text_budget - self._text_chars
                            if len(flat.content) > room:
                                if room > 0:
                                    self._text_chars = text_budget
                                    yield TextChunk(content=flat.content[:room])
                                self._stop(_over_budget(text_budget))
                                break
                        self._text_chars += len(flat.content)
                    elif agent.eager_tools and type(flat) is ToolCallChunk:
                        # The raw arguments (the flat chunk holds what can be sent back), and the refusal if any.
                        call = ToolCallBlock(id=CallId(flat.id), name=flat.name, arguments=item["block"]["arguments"])
                        self._start_tool(call, _refusal(attempt.refused, flat.id))
                    yield flat
            except LlmError as exc:
                failure = exc
            if not producer.done():
                producer.cancel()
            await asyncio.wait([producer])
            self._producer = None
            if result is not None and result.usage is not None:
                usage = TokenUsage.from_usage(result.usage)
                meter.add_usage(usage)
                run_meter.add_usage(usage)
            if self._cause is not None:
                await self._stream_end("cancel", None)
                return
            if failure is None and result is not None and result.finish.kind == "error":
                failure = _failure_error(result.finish.failure, ErrorCode.UNKNOWN)
            if failure is None and result is not None:
                await self._stream_end(done_reason(result.finish.kind), result.usage)
                self._refused = attempt.refused
                yield result
                return
            assert failure is not None
            await self._stream_end("error", result.usage if result is not None else None, failure)
            await self._reap()  # an eager tool of the failed attempt
            if failure.code == ErrorCode.ABORTED:
                # The adapter or provider aborted on its own: the run ends as a cancellation.
                self._stop(failure)
                return
            delay = agent.retry.next_delay_ms(failure, meter.retries + 1)
            if delay is None:
                self.error = failure
                agent.logger.error(
                    "llm_error",
                    extra={"code": str(failure.code), "error": failure.message, "turn": turn, "attempt": attempt_no},
                )
                yield ErrorChunk(error=failure, recoverable=False)
                yield self._finish("error")
                return
            meter.retries += 1
            run_meter.retries += 1
            agent.logger.warning(
                "llm_retry",
                extra={
                    "code": str(failure.code),
                    "error": failure.message,
                    "retry": meter.retries,
                    "max_retries": agent.retry.max_retries,
                    "delay_ms": delay,
                    "turn": turn,
                },
            )
            yield ErrorChunk(error=failure, recoverable=True, retry_after=delay)
            if self._cause is not None:
                return
            sleeper = self._sleeper = asyncio.ensure_future(agent.sleep(delay / 1000))
            await asyncio.wait([sleeper])
            self._sleeper = None
            if self._cause is not None:
                return
            sleeper.result()  # a sleep that failed fails the run; the retry does not go ahead unslept

    async def _pump(self, options: GenerateOptions, queue: asyncio.Queue[Any], meter: _Meter) -> Exception | None:
        """The producer task: the adapter's raw chunks into ``queue`` (the run validates them), counted and
        timed as they arrive. What the adapter raises is returned, not raised: a run stopped meanwhile drops
        it, and a task that failed unread would be logged by asyncio as "never retrieved"."""
        run_meter = self._meter
        clock = self.agent.clock
        chunks = self.agent.adapter.generate(options, policy=None)
        try:
            async for chunk in chunks:
                if meter.first is None:
                    meter.first = clock()
                    if run_meter.first is None:
                        run_meter.first = meter.first
                meter.chunks += 1
                run_meter.chunks += 1
                await queue.put(chunk)
        except Exception as exc:
            return exc
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
        return None

    def _request_options(self) -> GenerateOptions:
        signal = self._controller.signal if "signal" in self.agent.adapter.supported_options else None
        return self.agent.options.model_copy(
            update={"messages": tuple(self.messages), "tools": self.agent._schemas, "signal": signal}
        )

    async def _stream_start(self, options: GenerateOptions, turn: int, attempt: int) -> None:
        agent = self.agent
        self._request = options
        self._request_meta = (turn, attempt, agent.clock())
        agent.logger.info(
            "llm_request",
            extra={
                "model": options.model,
                "message_count": len(options.messages),
                "tool_count": len(options.tools or ()),
                "stream": True,
                "turn": turn,
                "attempt": attempt,
            },
        )
        listeners = agent.hooks.listeners["stream_start"]
        if listeners:
            await _notify(listeners, "stream_start", options, agent.logger)

    async def _stream_end(self, reason: DoneReason, usage: Usage | None, error: LlmError | None = None) -> None:
        options = self._request
        if options is None:
            return
        self._request = None
        agent = self.agent
        turn, attempt, started = self._request_meta
        tokens = TokenUsage.from_usage(usage) if usage is not None else None
        extra: dict[str, Any] = {
            "model": options.model,
            "duration": agent.clock() - started,
            "tokens": tokens.total_tokens if tokens is not None else None,
            "reason": reason,
            "turn": turn,
            "attempt": attempt,
        }
        if error is not None:
            extra["code"] = str(error.code)
        agent.logger.info("llm_response", extra=extra)
        listeners = agent.hooks.listeners["stream_end"]
        if listeners:
            await _notify(listeners, "stream_end", DoneChunk(reason=reason, usage=tokens), agent.logger)

    # -- tools

    def _start_tool(self, call: ToolCallBlock, refusal: str | None = None) -> asyncio.Task[_Outcome]:
        task = self._tasks.get(call.id)
        if task is None:
            task = self._tasks[call.id] = asyncio.get_running_loop().create_task(self._tools.call(call, refusal))
        return task

    def _answer(self, call: ToolCallBlock, outcome: _Outcome) -> ToolResultChunk:
        self._results += 1
        self._outcomes[call.id] = outcome
        return ToolResultChunk(
            id=f"result_{self._results}", tool_call_id=call.id, result=outcome.result, is_error=outcome.is_error
        )

    def _close_phase(self) -> None:
        """Add the tool results of the phase to the conversation, in call order."""
        calls, self._phase = self._phase, None
        for call in calls or ():
            outcome = self._outcomes[call.id]
            self.messages.append(
                ToolResultMessage(tool_call_id=call.id, content=outcome.content, is_error=outcome.is_error)
            )
        self._outcomes.clear()

    async def _run_tools(self, calls: list[ToolCallBlock]) -> AsyncGenerator[Flat, None]:
        self._phase = calls
        pending = {self._start_tool(call, _refusal(self._refused, call.id)): call for call in calls}
        order = {call.id: n for n, call in enumerate(calls)}
        while pending and self._cause is None:
            finished, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(finished, key=lambda t: order[pending[t].id]):
                call = pending.pop(task)
                self._tasks.pop(call.id, None)
                if task.cancelled():
                    if self._cause is not None:
                        continue  # the run was stopped: the wind-down answers it
                    outcome = _Outcome.failure(f"tool {call.name!r} was cancelled")
                else:
                    outcome = task.result()
                yield self._answer(call, outcome)
        if self._cause is None:
            self._close_phase()

    async def _answer_rest(self, why: str) -> list[Flat]:
        """Answer the calls of the tool phase that have no result yet (a tool that finished keeps its
        result, the others get ``why``), stop every task of the run, and add the phase to the conversation."""
        out: list[Flat] = []
        for call in self._phase or ():
            if call.id in self._outcomes:
                continue
            task = self._tasks.get(call.id)
            if task is not None and task.done() and not task.cancelled():
                outcome = task.result()
            else:
                outcome = _Outcome.failure(why)
            out.append(self._answer(call, outcome))
        await self._reap()
        if self._phase is not None:
            self._close_phase()
        return out

    async def _wind_down(self) -> list[Flat]:
        """The run was stopped (``_cause`` is set): the chunks that end it, ending with ``done(cancel)``.

        Calls of a tool phase still unanswered are answered: a tool that finished keeps its result, the
        others are cancelled. The request in flight, if any, gets its ``stream_end``.
        """
        cause = self._cause
        assert cause is not None
        out = await self._answer_rest(f"cancelled: {cause.message}")
        await self._stream_end("cancel", None)
        if self._turn is not None:
            self._turn.end = self.agent.clock()
            self.turns.append(self._turn.metrics(self._turn.end))
            self._turn = None
        self.error = cause
        out.append(self._finish("cancel"))
        return out


def _wake(queue: asyncio.Queue[Any], _: object) -> None:
    with contextlib.suppress(asyncio.QueueFull):
        queue.put_nowait(_END)


def _over_budget(budget: int) -> LlmError:
    return LlmError(f"the run's text and reasoning passed its budget of {budget} characters", ErrorCode.BUDGET_EXCEEDED)


def _timeout(what: str, seconds: float) -> LlmError:
    return LlmError(f"{what} timed out after {seconds:g} s", ErrorCode.TIMEOUT)


def _interrupted(exc: BaseException) -> LlmError:
    if isinstance(exc, GeneratorExit):
        return LlmError("the consumer closed the run", ErrorCode.ABORTED)
    if isinstance(exc, asyncio.CancelledError):
        return LlmError("the run's task was cancelled", ErrorCode.ABORTED)
    if isinstance(exc, KeyboardInterrupt):  # a Ctrl-C while the run's own code ran (a hook, say)
        return LlmError("interrupted: KeyboardInterrupt", ErrorCode.ABORTED)
    return LlmError(f"the run failed: {type(exc).__name__}: {exc}", ErrorCode.UNKNOWN)


def _as_llm_error(exc: BaseException, adapter: LlmAdapter) -> LlmError:
    if isinstance(exc, LlmError):
        return exc
    err = LlmError(f"{type(adapter).__name__} failed: {type(exc).__name__}: {exc}", ErrorCode.UNKNOWN)
    err.__cause__ = exc
    return err


def _failure_error(failure: LlmFailure | None, default: ErrorCode) -> LlmError:
    if failure is None:
        return LlmError(f"the stream finished with {default.value}", default)
    return LlmError(
        failure.message,
        failure.code,
        status=failure.status,
        retry_after_ms=failure.provider_retry_after_ms,
        request_id=failure.request_id,
    )

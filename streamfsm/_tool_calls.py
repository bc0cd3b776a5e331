r"""Running a tool call: its arguments checked, the call made under its timeout, what happened as an outcome.

A :class:`ToolRunner` (one per run) runs the run's calls: each in a task of its own (an async tool) or a thread
of its own (a sync tool, at most ``threads`` of them at once), under its timeout, and turns whatever happens
into an :class:`Outcome` — a result, or an error result the model can act on. What a tool may and may not do
to a run (docs/project/reliability.md):

- whatever it raises is its failure, ``BaseException``\ s included (``SystemExit`` from argparse,
  ``GeneratorExit``, ``StopIteration``, a ``KeyboardInterrupt`` raised in a worker thread); only a
  ``KeyboardInterrupt`` in the main thread, which cannot be told from the user's Ctrl-C, stops the run and
  goes on up (:meth:`ToolRunner.call` hands it to ``on_interrupt``);
- a call that does not stop when cancelled (its timeout passed, or its run was stopped) is waited for
  ``grace`` seconds, then left behind: reported (``tool_abandoned``), never awaited;
- arguments the provider could not be sent back (an escaped lone surrogate) or that are not a JSON object
  are refused before the tool runs (:func:`check_arguments`), and the conversation keeps a form that can be
  sent;
- a call the provider flagged with safety checks (:func:`safety_checks`) runs only once the application's
  ``acknowledge`` hook returned ``True`` for it; without a hook, or on any other answer (an exception
  included), it is refused, and the refusal is its error result.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import math
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

import orjson
from pydantic_core import to_jsonable_python

from ._abort import AbortController
from ._arguments import ORJSON_MAX, parse_arguments
from ._models import SafetyCheck, ToolCallBlock
from ._observe import Logger, log_tool_abandoned, log_tool_error
from ._quote import quote
from ._tools import TOOL_SIGNAL, Tool, ToolError

__all__ = ["Acknowledge", "Outcome", "ToolRunner", "check_arguments", "safety_checks"]

#: The application's answer to a call's safety checks: ``True`` (or an awaitable of it) acknowledges them all.
Acknowledge = Callable[[ToolCallBlock, tuple[SafetyCheck, ...]], "bool | Awaitable[bool]"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one tool call gave: JSON data for the flat stream, text for the model, whether it failed, and the
    safety checks the application acknowledged before it ran (sent back with the result)."""

    result: Any
    content: str
    is_error: bool
    acknowledged: tuple[SafetyCheck, ...] = ()

    @classmethod
    def value(cls, value: Any) -> Outcome:
        """What the tool returned: as JSON data, and as text for the model (a string as it is)."""
        data = to_jsonable_python(value, fallback=str)
        if isinstance(value, str):
            return cls(data, _sendable_text(value), False)
        try:
            content = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode()
        except orjson.JSONEncodeError:
            # orjson refuses integers past 64 bits, which are JSON all the same, and lone surrogates.
            content = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return cls(data, _sendable_text(content), False)

    @classmethod
    def failure(cls, message: str) -> Outcome:
        """A failed call: ``{"error": true, "message": ...}``."""
        data = {"error": True, "message": message}
        return cls(data, orjson.dumps(data).decode(), True)


def _sendable_text(text: str) -> str:
    """``text`` as UTF-8 can carry it: a lone surrogate (from a file name that is not UTF-8, say) becomes
    its ``\\udcXX`` escape, so that the conversation can still be sent."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


# --- Arguments the loop refuses -------------------------------------------------------------------------

#: The escapes that matter, in one left-to-right scan of JSON text: a surrogate pair (12 characters), a lone
#: surrogate (6), and an escaped backslash (2), consumed whole so that a ``\\u`` after it is not read as an escape.
_SURROGATE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\\\\"
)
_ANY_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_JSON_KIND = {
    "list": "a JSON array",
    "str": "a JSON string",
    "int": "a JSON number",
    "float": "a JSON number",
    "bool": "JSON true or false",
    "NoneType": "JSON null",
}
_NOT_AN_OBJECT = "arguments must be a JSON object, got "


def check_arguments(name: str, raw: str) -> tuple[str, str | None]:
    """The arguments of a call to tool ``name`` as they can be sent back to any provider, and why the call is
    refused (None: it is not; the arguments are then ``raw`` itself).

    Refused: arguments holding an escaped lone surrogate (``"\\udc00"``: JSON's grammar allows it, but it is
    not Unicode text; a provider that takes the arguments as an object cannot be sent it), kept with the
    escape escaped once more (the model sees the six characters); and arguments that are not a JSON object
    (not JSON, empty, an array, ...), kept as ``{}``. Cost: one orjson parse of arguments up to
    :data:`ORJSON_MAX` characters that hold an object; a regex scan and the standard parser for the others.
    """
    if len(raw) <= ORJSON_MAX:
        try:
            if type(orjson.loads(raw)) is dict:
                return raw, None  # orjson refuses escaped lone surrogates: none here
        except orjson.JSONDecodeError:
            pass
    lone = _lone_surrogate(raw)
    if lone is not None:
        escaped = _SURROGATE_ESCAPE.sub(_escape_lone, raw)
        parsed, _ = parse_arguments(escaped)
        return ("{}" if parsed is None else escaped), (
            f"invalid arguments for tool {quote(name)}: the escaped lone surrogate {lone.group()} at character "
            f"{lone.start()} is not Unicode text and cannot be sent back to the provider; call the tool again "
            "without it"
        )
    parsed, why = parse_arguments(raw)
    if parsed is not None:
        return raw, None
    if not raw.strip():
        what = "they are empty"
    elif why.startswith(_NOT_AN_OBJECT):
        kind = why.removeprefix(_NOT_AN_OBJECT)
        what = f"they are {_JSON_KIND.get(kind, kind)}: {_excerpt(raw)}"
    else:
        what = f"they are not JSON ({why}): {_excerpt(raw)}"
    return "{}", (
        f"invalid arguments for tool {quote(name)}: the arguments are not a JSON object: {what}; call the tool "
        "again with a JSON object"
    )


def _lone_surrogate(raw: str) -> re.Match[str] | None:
    if _ANY_SURROGATE_ESCAPE.search(raw) is None:
        return None
    for match in _SURROGATE_ESCAPE.finditer(raw):
        if match.end() - match.start() == 6:
            return match
    return None


def _escape_lone(match: re.Match[str]) -> str:
    escape = match.group()
    return "\\" + escape if len(escape) == 6 else escape


def _excerpt(raw: str, limit: int = 80) -> str:
    """The start of ``raw``, quoted, control characters and lone surrogates escaped."""
    return repr(raw[:limit]) + ("..." if len(raw) > limit else "")


#: The key of a call's arguments that holds the checks the provider flagged it with (the Responses API's name).
PENDING_CHECKS = "pending_safety_checks"


def safety_checks(raw: str) -> tuple[tuple[SafetyCheck, ...], str | None]:
    """The safety checks a call's arguments (``raw``, a JSON object) carry under ``pending_safety_checks``, and
    why they cannot be read (None: they can). Checks that cannot be read refuse the call as surely as checks
    not acknowledged. Cost: a substring scan; the arguments are parsed again only when they hold the key."""
    if f'"{PENDING_CHECKS}"' not in raw:
        return (), None
    parsed, _ = parse_arguments(raw)
    given = parsed.get(PENDING_CHECKS) if parsed is not None else None
    if given is None:
        return (), None
    why = f"its {PENDING_CHECKS} are not a list of objects with an id"
    if not isinstance(given, list):
        return (), why
    checks = []
    for item in given:
        if not isinstance(item, dict):
            return (), why
        try:
            checks.append(SafetyCheck.model_validate({k: item.get(k) for k in ("id", "code", "message")}))
        except ValueError:
            return (), why
    return tuple(checks), None


# --- Running calls ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Raised:
    """What a tool raised, and whether it may be the user's Ctrl-C (a KeyboardInterrupt in the main thread)."""

    exc: BaseException
    ctrl_c: bool


#: Calls left behind (they did not stop when cancelled), held until they end: a task only the loop's weak
#: set refers to could be collected while it runs.
_ABANDONED: set[asyncio.Future[Any]] = set()


class ToolRunner:
    """Runs the tool calls of one run, each to an :class:`Outcome` (see the module docstring).

    ``timeout``: seconds a call may take unless its tool sets its own (None: no limit). ``threads``: sync
    calls running at once; a call waits for a free thread within its own timeout, and a call left behind
    no longer counts. ``grace``: seconds a cancelled call is waited for before it is left behind.
    ``on_interrupt(exc, call)``: a KeyboardInterrupt in the main thread (see :meth:`call`). ``acknowledge``:
    the application's hook for a call flagged with safety checks (None: every such call is refused).
    """

    __slots__ = ("_acknowledge", "_grace", "_logger", "_on_interrupt", "_slots", "_threads", "_timeout", "_tools")

    def __init__(
        self,
        tools: Mapping[str, Tool],
        *,
        timeout: float | None,
        threads: int,
        grace: float,
        logger: Logger,
        on_interrupt: Callable[[BaseException, ToolCallBlock], None],
        acknowledge: Acknowledge | None = None,
    ) -> None:
        self._acknowledge = acknowledge
        self._tools = tools
        self._timeout = timeout
        self._threads = threads
        self._grace = grace
        self._logger = logger
        self._on_interrupt = on_interrupt
        self._slots: asyncio.Semaphore | None = None

    async def call(
        self, call: ToolCallBlock, refusal: str | None = None, checks: tuple[SafetyCheck, ...] = ()
    ) -> Outcome:
        """Run ``call`` (refused with the message ``refusal`` if given; flagged with ``checks``, run only once the
        ``acknowledge`` hook returns ``True`` for them, and its outcome then carries them): its outcome.

        The tool runs in a task (async) or a thread (sync) of its own, which this task watches: at the
        timeout, or when this task is cancelled (the run was stopped), the call is cancelled and waited
        for ``grace`` seconds, then left behind if it still runs. A cancellation of this task is re-raised
        once that is done. A KeyboardInterrupt raised in the main thread is handed to ``on_interrupt``.
        """
        found = self._tools.get(call.name)
        if found is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return self._failed(call, f"unknown tool {quote(call.name)} (available: {known})")
        if refusal is not None:
            return self._failed(call, refusal)
        if checks:
            refused = await self._ask(call, checks)
            if refused is not None:
                return self._failed(call, refused)
            return replace(await self._run(found, call), acknowledged=checks)
        return await self._run(found, call)

    async def _ask(self, call: ToolCallBlock, checks: tuple[SafetyCheck, ...]) -> str | None:
        """Ask the ``acknowledge`` hook about ``call``'s checks: None if it acknowledged them (returned
        ``True``), else the refusal the model gets."""
        listed = "; ".join(
            f"{check.code or 'unspecified'} ({check.id})" + (f": {check.message}" if check.message else "")
            for check in checks
        )
        refused = (
            f"not run: the provider flagged this call with safety checks ({listed}), and the application did not "
            "acknowledge them"
        )
        if self._acknowledge is None:
            return refused
        try:
            answer = self._acknowledge(call, checks)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            log_tool_error(self._logger, call, f"the safety-check hook failed: {_describe(exc)}", exc)
            return refused
        return None if answer is True else refused

    async def _run(self, found: Tool, call: ToolCallBlock) -> Outcome:
        """Validate ``call``'s arguments and run it under its timeout (see :meth:`call`)."""
        try:
            args, kwargs = found.validate(call.arguments)
        except ToolError as exc:
            return self._failed(call, _tool_error(exc))
        except Exception as exc:  # a validator that breaks on these arguments: still the call's failure
            return self._failed(call, f"invalid arguments for tool {quote(call.name)}: {_describe(exc)}", exc)
        seconds = found.timeout if found.timeout is not None else self._timeout
        if seconds is not None and math.isinf(seconds):
            seconds = None
        # The call's own signal: a sync tool in its thread cannot be cancelled, but it can look (tool_signal()).
        controller = AbortController()
        context = contextvars.copy_context()
        context.run(TOOL_SIGNAL.set, controller.signal)
        thread: list[asyncio.Future[Any]] = []  # a sync tool's thread, once it has started
        job = asyncio.get_running_loop().create_task(self._job(found, args, kwargs, thread), context=context)
        try:
            await asyncio.wait((job,), timeout=seconds)
        except asyncio.CancelledError:
            if job.done():  # it ended before this task could see it: a call that finished keeps its result
                cast(asyncio.Task[Any], asyncio.current_task()).uncancel()
                controller.abort("the tool call is over")
                return self._outcome(call, job)
            controller.abort("the tool call was cancelled")
            await self._let_go(call, job, thread, "its run was stopped")
            raise
        if job.done():
            controller.abort("the tool call is over")
            return self._outcome(call, job)
        ended = f"timed out after {seconds:g} s"
        controller.abort(ended)
        if await self._let_go(call, job, thread, ended):
            return self._failed(call, f"tool {quote(call.name)} {ended}")
        return self._failed(
            call, f"tool {quote(call.name)} {ended}, and did not stop when cancelled: it was left running"
        )

    async def _job(self, found: Tool, args: tuple[Any, ...], kwargs: dict[str, Any], thread: list[Any]) -> Any:
        """The call itself: what the tool returned, or :class:`_Raised`. Only a cancellation is raised."""
        try:
            if found.is_async:
                value = await found.fn(*args, **kwargs)
            else:
                value = await self._in_thread(found, args, kwargs, thread)
                if type(value) is _Raised:
                    return value
            if inspect.isawaitable(value):
                value = await value
            return value
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # whatever the tool raised is its failure (see _outcome)
            main = threading.current_thread() is threading.main_thread()
            return _Raised(exc, ctrl_c=main and isinstance(exc, KeyboardInterrupt))

    async def _in_thread(self, found: Tool, args: tuple[Any, ...], kwargs: dict[str, Any], thread: list[Any]) -> Any:
        """Run a sync tool in a daemon thread of its own, once one of the run's ``threads`` slots is free.

        The slot is the thread's until the call ends or is left behind; the thread itself goes on until the
        function returns (nothing can stop it), and does not keep the program from exiting.
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._threads)
        async with self._slots:
            loop = asyncio.get_running_loop()
            done: asyncio.Future[Any] = loop.create_future()
            thread.append(done)
            worker = threading.Thread(
                target=_work,
                args=(loop, done, contextvars.copy_context(), found.fn, args, kwargs),
                name=f"streamfsm tool {found.name}",
                daemon=True,
            )
            worker.start()
            # Shielded: a cancelled call stops waiting, but the thread's end is still watched (_let_go).
            return await asyncio.shield(done)

    async def _let_go(self, call: ToolCallBlock, job: asyncio.Task[Any], thread: list[Any], why: str) -> bool:
        """Cancel the call and wait up to ``grace`` for it (and its thread) to end; whether it did. One that
        did not is left behind, and reported. Cancelled meanwhile, it is left behind at once."""
        job.cancel()
        watched = [job, *thread]
        try:
            await asyncio.wait(watched, timeout=self._grace)
        finally:
            running = [f for f in watched if not f.done()]
            if running:
                self._abandon(call, running, why)
        return not running

    def _abandon(self, call: ToolCallBlock, running: list[asyncio.Future[Any]], why: str) -> None:
        what = "it did not stop" if isinstance(running[0], asyncio.Task) else "its thread did not return"
        log_tool_abandoned(
            self._logger, call, f"{what} within {self._grace:g} s of its cancellation ({why}): left running"
        )
        for future in running:
            _ABANDONED.add(future)
            future.add_done_callback(_ABANDONED.discard)

    def _outcome(self, call: ToolCallBlock, job: asyncio.Task[Any]) -> Outcome:
        if job.cancelled():  # the tool raised CancelledError of its own: nothing cancelled it
            return self._failed(call, f"tool {quote(call.name)} was cancelled")
        value = job.result()
        if type(value) is not _Raised:
            try:
                return Outcome.value(value)
            except Exception as exc:  # a result that is not JSON data (a circular list, say)
                return self._failed(call, _describe(exc), exc)
        raised = value.exc
        if isinstance(raised, ToolError):
            return self._failed(call, _tool_error(raised))
        if value.ctrl_c:
            self._on_interrupt(raised, call)
            return Outcome.failure("interrupted: KeyboardInterrupt")
        return self._failed(call, _describe(raised), raised)

    def _failed(self, call: ToolCallBlock, message: str, exc: BaseException | None = None) -> Outcome:
        log_tool_error(self._logger, call, message, exc)
        return Outcome.failure(message)


def _work(
    loop: asyncio.AbstractEventLoop,
    done: asyncio.Future[Any],
    context: contextvars.Context,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    """A sync tool's thread: call it, and hand what it returned or raised (anything: a thread gets no
    Ctrl-C) to the loop. A loop closed meanwhile is not told: the call was left behind long ago."""
    try:
        value: Any = context.run(fn, *args, **kwargs)
    except BaseException as exc:
        value = _Raised(exc, ctrl_c=False)
    with contextlib.suppress(RuntimeError):  # the loop is closed
        loop.call_soon_threadsafe(_settle, done, value)


def _settle(done: asyncio.Future[Any], value: Any) -> None:
    if not done.done():
        done.set_result(value)


def _said(exc: BaseException) -> str | None:
    """What ``exc`` says (``str(exc)``); ``None`` if its ``__str__`` raises or gives no string. It is the tool's
    code: whatever it raises is its failure, told as such, never the run's end."""
    try:
        text = str(exc)
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise  # a Ctrl-C or a cancellation that landed here is not the tool's message
    except BaseException:
        return None
    return text if type(text) is str else None


def _describe(exc: BaseException) -> str:
    """``Name: message`` of what a tool raised; a message that cannot be read is said to be so."""
    name = type(exc).__name__
    text = _said(exc)
    if text is None:
        return f"{name} (its message could not be read: its __str__ failed)"
    return f"{name}: {text}" if text else name


def _tool_error(exc: ToolError) -> str:
    """A :class:`ToolError`'s message as the model gets it (the tool's own words; described if unreadable)."""
    text = _said(exc)
    return text if text is not None else _describe(exc)

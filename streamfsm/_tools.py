r"""Tools: how a callable is declared to the model, and how the loop runs one call of it.

A :class:`Tool` validates the model's arguments and knows how its function is called. A :class:`ToolRunner`
(one per run) runs the run's calls: each in a task of its own (an async tool) or a thread of its own (a sync
tool, at most ``threads`` of them at once), under its timeout, and turns whatever happens into an
:class:`_Outcome` — a result, or an error result the model can act on. What a tool may and may not do to a
run (README, Reliability):

- whatever it raises is its failure, ``BaseException``\ s included (``SystemExit`` from argparse,
  ``GeneratorExit``, ``StopIteration``, a ``KeyboardInterrupt`` raised in a worker thread); only a
  ``KeyboardInterrupt`` in the main thread, which cannot be told from the user's Ctrl-C, stops the run and
  goes on up (:meth:`ToolRunner.call` hands it to ``on_interrupt``);
- a call that does not stop when cancelled (its timeout passed, or its run was stopped) is waited for
  ``grace`` seconds, then left behind: reported (``tool_abandoned``), never awaited;
- arguments the provider could not be sent back (an escaped lone surrogate) or that are not a JSON object
  are refused before the tool runs (:func:`check_arguments`), and the conversation keeps a form that can be
  sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast, overload

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import to_jsonable_python

from ._abort import AbortController, AbortSignal
from ._adapter import ToolSchema
from ._models import ORJSON_MAX, ToolCallBlock, parse_arguments

__all__ = ["Tool", "ToolError", "ToolRunner", "check_arguments", "tool", "tool_signal"]

_Logger: TypeAlias = logging.Logger | logging.LoggerAdapter[logging.Logger]


class ToolError(Exception):
    """Raise it in a tool to fail the call with exactly this message (no exception type prefixed)."""


_Mode = Literal["model", "kwargs", "json"]


class Tool:
    """A plain Python callable, sync or async, that the model may call by ``name``.

    ``parameters`` says what arguments the tool takes, and decides how it is called:

    - a pydantic model class: the arguments are validated into an instance (``model_validate_json``),
      and the tool is called with it: ``fn(args)``;
    - a JSON Schema (a dict): the arguments are validated against it (``jsonschema``, the draft the
      schema's ``$schema`` names, 2020-12 by default), and the tool is called with the dict: ``fn(args)``;
    - ``None`` (the default): a pydantic model is built from ``fn``'s signature (annotations, defaults,
      ``Annotated[..., Field(description=...)]``; extra arguments refused), and the tool is called with
      keyword arguments: ``fn(**args)``.

    ``description`` defaults to ``fn``'s docstring. ``timeout`` (seconds) overrides
    :attr:`AgentLimits.tool_timeout` for this tool; ``math.inf`` means none. In a run, a sync callable runs
    in a thread of its own (see :class:`ToolRunner`); a thread cannot be interrupted, so on timeout or
    cancellation its result is discarded when it comes. What the tool returns is the result: JSON data
    (pydantic models, dataclasses and the like are converted; anything else becomes its ``str``).
    """

    __slots__ = (
        "_call_async",
        "_fields",
        "_mode",
        "_model",
        "_validator",
        "description",
        "fn",
        "name",
        "parameters",
        "timeout",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: type[BaseModel] | Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"a tool must be callable, got {type(fn).__name__}")
        tool_name = name if name is not None else getattr(fn, "__name__", None)
        if not isinstance(tool_name, str) or not tool_name:
            raise ValueError("a tool needs a non-empty name (pass name=...)")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"tool {tool_name!r}: timeout must be positive seconds, got {timeout!r}")
        #: The name the model calls the tool by.
        self.name: str = tool_name
        #: What the model is told the tool does.
        self.description: str = description if description is not None else (inspect.getdoc(fn) or "")
        #: The callable.
        self.fn = fn
        #: Seconds the tool may take (None: the loop's ``tool_timeout``; ``math.inf``: no limit).
        self.timeout = timeout
        self._validator: Any = None
        self._fields: tuple[tuple[str, str], ...] = ()
        self._model: type[BaseModel] | None = None
        self._mode: _Mode
        if isinstance(parameters, type) and issubclass(parameters, BaseModel):
            self._mode, self._model = "model", parameters
            schema = parameters.model_json_schema()
        elif isinstance(parameters, Mapping):
            self._mode = "json"
            schema = dict(parameters)
            self._validator = _json_schema_validator(tool_name, schema)
        elif parameters is None:
            self._mode = "kwargs"
            self._model, self._fields = _signature_model(tool_name, fn)
            schema = self._model.model_json_schema()
        else:
            raise TypeError(
                f"tool {tool_name!r}: parameters must be a pydantic model class or a JSON Schema dict, "
                f"got {type(parameters).__name__}"
            )
        #: The JSON Schema of the arguments, as sent to the model.
        self.parameters: dict[str, Any] = schema
        # An object whose __call__ is async counts as async too.
        dunder_call = inspect.getattr_static(type(fn), "__call__", None)
        self._call_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(dunder_call)

    @property
    def schema(self) -> ToolSchema:
        """The tool as the model sees it."""
        return ToolSchema(name=self.name, description=self.description, parameters=self.parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function itself (the decorator keeps the decorated function callable)."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def validate(self, arguments: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Validate raw JSON arguments; the positional and keyword arguments to call the tool with.

        Raises :class:`ToolError` saying what is wrong with them, field by field.
        """
        if self._mode == "json":
            parsed, why = parse_arguments(arguments)
            if parsed is None:
                raise ToolError(f"invalid arguments for tool {self.name!r}: {why}")
            errors = sorted(self._validator.iter_errors(parsed), key=lambda e: [str(p) for p in e.absolute_path])
            if errors:
                raise ToolError(
                    f"invalid arguments for tool {self.name!r}: "
                    + "; ".join(f"{_json_path(e.absolute_path)}: {e.message}" for e in errors[:10])
                )
            return (parsed,), {}
        assert self._model is not None
        try:
            instance = self._model.model_validate_json(arguments)
        except ValidationError as exc:
            raise ToolError(f"invalid arguments for tool {self.name!r}: {_pydantic_errors(exc)}") from None
        if self._mode == "model":
            return (instance,), {}
        return (), {alias: getattr(instance, field) for field, alias in self._fields}

    async def invoke(self, arguments: str) -> Any:
        """Validate ``arguments`` and call the tool (in a worker thread if it is sync); its return value.

        A convenience outside a run: what the tool raises comes out as it is. A run calls its tools
        through a :class:`ToolRunner` instead.
        """
        args, kwargs = self.validate(arguments)
        if self._call_async:
            value = await self.fn(*args, **kwargs)
        else:
            value = await asyncio.to_thread(self.fn, *args, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        return value


def _json_schema_validator(name: str, schema: dict[str, Any]) -> Any:
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"tool {name!r}: the parameters are not a valid JSON Schema: {exc.message}") from None
    if schema.get("type", "object") != "object":
        raise ValueError(f"tool {name!r}: the parameters schema must describe an object, not {schema.get('type')!r}")
    return cls(schema)


def _json_path(path: Iterable[object]) -> str:
    return ".".join(str(p) for p in path) or "(arguments)"


def _pydantic_errors(exc: ValidationError) -> str:
    return "; ".join(f"{_json_path(e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)[:10])


def _signature_model(name: str, fn: Callable[..., Any]) -> tuple[type[BaseModel], tuple[tuple[str, str], ...]]:
    """A pydantic model of ``fn``'s parameters; fields are named ``p_<name>`` with the parameter's name as
    alias, so a parameter may be called ``json`` or ``schema`` without shadowing ``BaseModel``."""
    try:
        signature = inspect.signature(fn, eval_str=True)
    except (TypeError, ValueError, NameError) as exc:
        raise TypeError(f"tool {name!r}: cannot read the signature ({exc}); pass parameters=") from None
    fields: dict[str, Any] = {}
    names: list[tuple[str, str]] = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(
                f"tool {name!r}: parameter {param.name!r} cannot be passed by keyword; pass parameters= instead"
            )
        annotation = Any if param.annotation is param.empty else param.annotation
        default = ... if param.default is param.empty else param.default
        field_name = f"p_{param.name}"
        fields[field_name] = (annotation, Field(default, alias=param.name))
        names.append((field_name, param.name))
    model = create_model(name, __config__=ConfigDict(extra="forbid", populate_by_name=False), **fields)
    return cast(type[BaseModel], model), tuple(names)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: type[BaseModel] | Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: type[BaseModel] | Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` of a function: ``@sf.tool`` or ``@sf.tool(name=..., timeout=...)``."""
    if fn is not None:
        return Tool(fn, name=name, description=description, parameters=parameters, timeout=timeout)
    return lambda f: Tool(f, name=name, description=description, parameters=parameters, timeout=timeout)


_TOOL_SIGNAL: contextvars.ContextVar[AbortSignal | None] = contextvars.ContextVar("streamfsm_tool_signal", default=None)


def tool_signal() -> AbortSignal | None:
    """The :class:`AbortSignal` of the tool call running here (None outside a tool call).

    It aborts when the call ends: cancelled (the run was stopped), timed out, or done. A sync tool runs in a
    worker thread that nothing can interrupt: a long one should poll ``tool_signal().aborted`` and return.
    Async tools are cancelled as usual and may ignore it.
    """
    return _TOOL_SIGNAL.get()


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What one tool call gave: JSON data for the flat stream, text for the model, and whether it failed."""

    result: Any
    content: str
    is_error: bool

    @classmethod
    def value(cls, value: Any) -> _Outcome:
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
    def failure(cls, message: str) -> _Outcome:
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
            f"invalid arguments for tool {name!r}: the escaped lone surrogate {lone.group()} at character "
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
        f"invalid arguments for tool {name!r}: the arguments are not a JSON object: {what}; call the tool "
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
    """Runs the tool calls of one run, each to an :class:`_Outcome` (see the module docstring).

    ``timeout``: seconds a call may take unless its tool sets its own (None: no limit). ``threads``: sync
    calls running at once; a call waits for a free thread within its own timeout, and a call left behind
    no longer counts. ``grace``: seconds a cancelled call is waited for before it is left behind.
    ``on_interrupt(exc, call)``: a KeyboardInterrupt in the main thread (see :meth:`call`).
    """

    __slots__ = ("_grace", "_logger", "_on_interrupt", "_slots", "_threads", "_timeout", "_tools")

    def __init__(
        self,
        tools: Mapping[str, Tool],
        *,
        timeout: float | None,
        threads: int,
        grace: float,
        logger: _Logger,
        on_interrupt: Callable[[BaseException, ToolCallBlock], None],
    ) -> None:
        self._tools = tools
        self._timeout = timeout
        self._threads = threads
        self._grace = grace
        self._logger = logger
        self._on_interrupt = on_interrupt
        self._slots: asyncio.Semaphore | None = None

    async def call(self, call: ToolCallBlock, refusal: str | None = None) -> _Outcome:
        """Run ``call`` (refused with the message ``refusal`` if given): its outcome.

        The tool runs in a task (async) or a thread (sync) of its own, which this task watches: at the
        timeout, or when this task is cancelled (the run was stopped), the call is cancelled and waited
        for ``grace`` seconds, then left behind if it still runs. A cancellation of this task is re-raised
        once that is done. A KeyboardInterrupt raised in the main thread is handed to ``on_interrupt``.
        """
        found = self._tools.get(call.name)
        if found is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return self._failed(call, f"unknown tool {call.name!r} (available: {known})")
        if refusal is not None:
            return self._failed(call, refusal)
        try:
            args, kwargs = found.validate(call.arguments)
        except ToolError as exc:
            return self._failed(call, str(exc))
        except Exception as exc:  # a validator that breaks on these arguments: still the call's failure
            return self._failed(call, f"invalid arguments for tool {call.name!r}: {_describe(exc)}", exc)
        seconds = found.timeout if found.timeout is not None else self._timeout
        if seconds is not None and math.isinf(seconds):
            seconds = None
        # The call's own signal: a sync tool in its thread cannot be cancelled, but it can look (tool_signal()).
        controller = AbortController()
        context = contextvars.copy_context()
        context.run(_TOOL_SIGNAL.set, controller.signal)
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
            return self._failed(call, f"tool {call.name!r} {ended}")
        return self._failed(call, f"tool {call.name!r} {ended}, and did not stop when cancelled: it was left running")

    async def _job(self, found: Tool, args: tuple[Any, ...], kwargs: dict[str, Any], thread: list[Any]) -> Any:
        """The call itself: what the tool returned, or :class:`_Raised`. Only a cancellation is raised."""
        try:
            if found._call_async:
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
        self._logger.warning(
            "tool_abandoned",
            extra={
                "tool": call.name,
                "tool_call_id": call.id,
                "error": f"{what} within {self._grace:g} s of its cancellation ({why}): left running",
            },
        )
        for future in running:
            _ABANDONED.add(future)
            future.add_done_callback(_ABANDONED.discard)

    def _outcome(self, call: ToolCallBlock, job: asyncio.Task[Any]) -> _Outcome:
        if job.cancelled():  # the tool raised CancelledError of its own: nothing cancelled it
            return self._failed(call, f"tool {call.name!r} was cancelled")
        value = job.result()
        if type(value) is not _Raised:
            try:
                return _Outcome.value(value)
            except Exception as exc:  # a result that is not JSON data (a circular list, say)
                return self._failed(call, _describe(exc), exc)
        raised = value.exc
        if isinstance(raised, ToolError):
            return self._failed(call, str(raised))
        if value.ctrl_c:
            self._on_interrupt(raised, call)
            return _Outcome.failure("interrupted: KeyboardInterrupt")
        return self._failed(call, _describe(raised), raised)

    def _failed(self, call: ToolCallBlock, message: str, exc: BaseException | None = None) -> _Outcome:
        self._logger.warning(
            "tool_error",
            extra={"tool": call.name, "tool_call_id": call.id, "error": message},
            exc_info=exc,
        )
        return _Outcome.failure(message)


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


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

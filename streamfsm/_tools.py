"""Tools: how a callable is declared to the model, and how it is called.

A :class:`Tool` (or :func:`tool`) holds a callable, its name and description, and the JSON Schema of its
arguments: given, or built from the callable's signature (:func:`_signature_model`, a pydantic model). It
validates the model's arguments and knows how its function is called. :func:`tool_signal` is the abort signal
of the call running here. How the loop runs a call (under its timeout, in a task or a thread) is
``_tool_calls.py``'s.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, cast, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ._abort import AbortSignal
from ._adapter import ToolSchema
from ._arguments import parse_arguments

__all__ = ["TOOL_SIGNAL", "Tool", "ToolError", "tool", "tool_signal"]


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
    in a thread of its own (see ``ToolRunner`` in ``_tool_calls.py``); a thread cannot be interrupted, so on timeout or
    cancellation its result is discarded when it comes. What the tool returns is the result: JSON data
    (pydantic models, dataclasses and the like are converted; anything else becomes its ``str``).
    """

    __slots__ = (
        "_fields",
        "_mode",
        "_model",
        "_validator",
        "description",
        "fn",
        "is_async",
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
        #: Whether ``fn`` is async (awaited in a task of its own in a run), or sync (run in a thread of its own).
        self.is_async: bool = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(dunder_call)

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
        through its ``ToolRunner`` instead.
        """
        args, kwargs = self.validate(arguments)
        if self.is_async:
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


#: The abort signal of the tool call running in this context (set by the runner, read by :func:`tool_signal`).
TOOL_SIGNAL: contextvars.ContextVar[AbortSignal | None] = contextvars.ContextVar("streamfsm_tool_signal", default=None)


def tool_signal() -> AbortSignal | None:
    """The :class:`AbortSignal` of the tool call running here (None outside a tool call).

    It aborts when the call ends: cancelled (the run was stopped), timed out, or done. A sync tool runs in a
    worker thread that nothing can interrupt: a long one should poll ``tool_signal().aborted`` and return.
    Async tools are cancelled as usual and may ignore it.
    """
    return TOOL_SIGNAL.get()

"""The adapter contract: what a request is, what a model offers, and what every adapter must honour.

An adapter turns a provider's wire format into the block protocol. It implements :meth:`LlmAdapter.stream`
(raw chunks, nothing checked); callers use :meth:`LlmAdapter.generate`, which checks the options and the
reasoning effort *before* the adapter is called, and sends the adapter's output through the machine, so a
broken adapter is caught at the chunk where it broke.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from ._abort import AbortSignal
from ._api import avalidate
from ._config import Limits, Policy
from ._errors import ErrorCode, LlmError
from ._models import ReasoningBlock, SafetyCheck, StreamResult, TextBlock, ToolCallBlock, WireModel
from ._upstream import aclose_upstream
from ._wire import StreamChunk

__all__ = [
    "APP_IDENTITY",
    "IN_RUN",
    "OPTIONAL_FIELDS",
    "AppIdentity",
    "AssistantMessage",
    "GenerateOptions",
    "LlmAdapter",
    "Message",
    "ModelInfo",
    "ModelReasoningInfo",
    "ProviderInfo",
    "ReasoningEffortInfo",
    "StreamTracer",
    "ToolResultMessage",
    "ToolSchema",
    "UserMessage",
    "attribution_headers",
    "check_model_info",
    "resolve_reasoning_effort",
    "set_tracer",
    "tracer",
]


# --- Messages -------------------------------------------------------------------------------------


class UserMessage(WireModel):
    """A user turn: plain text."""

    role: Literal["user"] = "user"
    content: str


AssistantBlock = Annotated[TextBlock | ReasoningBlock | ToolCallBlock, Field(discriminator="type")]


class AssistantMessage(WireModel):
    """A model turn: its completed blocks, in order (what :class:`StreamResult` assembled)."""

    role: Literal["assistant"] = "assistant"
    blocks: tuple[AssistantBlock, ...]
    #: The adapter-private ``replayState`` of the turn's ``finish``, handed back to the same adapter.
    replay_state: Any = None

    @classmethod
    def from_result(cls, result: StreamResult) -> AssistantMessage:
        """The assistant turn a finished stream produced: its text, reasoning and tool-call blocks, and its
        ``replay_state``, with which the adapter of the same wire API sends the turn back as the provider sent it
        (thinking signatures; the provider blocks kept for replay, :attr:`StreamResult.kept`, where they came).

        Image blocks and blocks of types the protocol does not know (``Policy.HARNESS``) stay in the result;
        the adapters have no way to send them back as the model's own turn.
        """
        blocks = tuple(b for b in result.blocks if isinstance(b, TextBlock | ReasoningBlock | ToolCallBlock))
        return cls(blocks=blocks, replay_state=result.replay_state)

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        """The turn's tool calls, in order."""
        return [b for b in self.blocks if isinstance(b, ToolCallBlock)]


class ToolResultMessage(WireModel):
    """The result of one tool call, sent back to the model. ``acknowledged_safety_checks``: the checks the
    provider flagged the call with that the application acknowledged before it ran (the Responses API's
    ``computer_call_output`` echoes them; other adapters send none)."""

    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: str
    is_error: bool = False
    acknowledged_safety_checks: tuple[SafetyCheck, ...] = ()


Message = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]


# --- The request ----------------------------------------------------------------------------------


class ToolSchema(WireModel):
    """A tool as the model sees it: name, description, and a JSON Schema object for its arguments."""

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class GenerateOptions(WireModel):
    """One model request, fully assembled.

    Optional fields left as ``None`` are not sent. A field that is set must be honoured: an adapter that
    cannot raises ``LlmError(UNSUPPORTED_OPTION)`` naming it, before any request is made. ``limits`` is no such
    option, and never sent: the limits of the machine that checks the stream (:meth:`LlmAdapter.generate` sets
    its own), which a provider converter the adapter makes takes, so that it holds back no more content than they
    allow before the machine sees it (None: the defaults).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    provider: str = ""
    model: str = Field(min_length=1)
    messages: tuple[Message, ...] = ()
    system: str | None = None
    tools: tuple[ToolSchema, ...] | None = None
    temperature: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, gt=0)
    stop: tuple[str, ...] | None = None
    reasoning_effort: str | None = Field(default=None, min_length=1)
    signal: AbortSignal | None = Field(default=None, exclude=True)
    session_id: str | None = None
    limits: Limits | None = Field(default=None, exclude=True)


#: The optional fields of :class:`GenerateOptions` an adapter may or may not support.
OPTIONAL_FIELDS: tuple[str, ...] = (
    "system",
    "tools",
    "temperature",
    "max_tokens",
    "stop",
    "reasoning_effort",
    "signal",
    "session_id",
)


# --- What providers and models offer --------------------------------------------------------------


class ProviderInfo(WireModel):
    """Display metadata of one provider route."""

    id: str
    name: str


class ReasoningEffortInfo(WireModel):
    """One reasoning effort a model offers. ``id`` is opaque: sent to the provider as it is."""

    id: str
    name: str
    description: str | None = None


class ModelReasoningInfo(WireModel):
    """The reasoning efforts of one model, in the adapter's order (``off`` included when the provider lists it).

    Built leniently: :func:`check_model_info` is what rejects malformed metadata, with
    ``INVALID_MODEL_REASONING``, so an adapter's mistake is reported as the adapter's.
    """

    efforts: tuple[ReasoningEffortInfo, ...]
    default_effort: str | None = None


class ModelInfo(WireModel):
    """Everything an adapter knows about one model."""

    provider: str
    id: str
    name: str
    description: str | None = None
    context_window: int | None = None
    default_max_tokens: int | None = None
    #: None: the model has no selectable reasoning effort (any explicit effort is refused).
    reasoning: ModelReasoningInfo | None = None


def check_model_info(info: ModelInfo) -> ModelInfo:
    """Reject malformed reasoning metadata with ``INVALID_MODEL_REASONING``; return ``info`` unchanged."""
    reasoning = info.reasoning
    if reasoning is None:
        return info
    where = f"provider {info.provider!r} model {info.id!r}"
    if not reasoning.efforts:
        raise LlmError(f"{where}: the reasoning metadata lists no efforts", ErrorCode.INVALID_MODEL_REASONING)
    seen: set[str] = set()
    for effort in reasoning.efforts:
        if not effort.id or not effort.name:
            raise LlmError(
                f"{where}: a reasoning effort has an empty id or name ({effort.id!r}, {effort.name!r})",
                ErrorCode.INVALID_MODEL_REASONING,
            )
        if effort.id in seen:
            raise LlmError(
                f"{where}: reasoning effort {effort.id!r} is listed twice", ErrorCode.INVALID_MODEL_REASONING
            )
        seen.add(effort.id)
    if reasoning.default_effort is not None and reasoning.default_effort not in seen:
        raise LlmError(
            f"{where}: the default reasoning effort {reasoning.default_effort!r} is not one of {sorted(seen)}",
            ErrorCode.INVALID_MODEL_REASONING,
        )
    return info


def resolve_reasoning_effort(options: GenerateOptions, info: ModelInfo) -> GenerateOptions:
    """Check the requested effort against the model; an omitted effort becomes the model's default.

    Raises ``UNSUPPORTED_REASONING_EFFORT`` for an effort the model does not list, or any explicit effort
    when the model has no reasoning metadata, and ``INVALID_MODEL_REASONING`` for malformed metadata.
    """
    check_model_info(info)
    requested = options.reasoning_effort
    reasoning = info.reasoning
    where = f"provider {info.provider!r} model {info.id!r}"
    if reasoning is None:
        if requested is not None:
            raise LlmError(
                f"{where} has no selectable reasoning effort, but reasoning_effort={requested!r} was requested",
                ErrorCode.UNSUPPORTED_REASONING_EFFORT,
            )
        return options
    effective = requested if requested is not None else reasoning.default_effort
    if effective is None:
        return options
    ids = [effort.id for effort in reasoning.efforts]
    if effective not in ids:
        raise LlmError(
            f"{where} does not support reasoning effort {effective!r} (it offers {ids})",
            ErrorCode.UNSUPPORTED_REASONING_EFFORT,
        )
    return options if effective == requested else options.model_copy(update={"reasoning_effort": effective})


# --- Attribution ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AppIdentity:
    """Who is calling: rendered as the ``user-agent`` ``product/version (+url)``."""

    product: str
    version: str
    url: str


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("streamfsm")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"


#: streamfsm's own identity, the default of :func:`attribution_headers`.
APP_IDENTITY = AppIdentity("streamfsm", _version(), "https://github.com/streamfsm/streamfsm")


def attribution_headers(identity: AppIdentity | None = None) -> dict[str, str]:
    """The headers every provider request carries: ``{"user-agent": "product/version (+url)"}``."""
    who = identity or APP_IDENTITY
    return {"user-agent": f"{who.product}/{who.version} (+{who.url})"}


# --- The adapter ----------------------------------------------------------------------------------


class LlmAdapter(abc.ABC):
    """Base of every adapter.

    Subclasses implement :meth:`stream` (the provider's output as raw chunks) and declare
    :attr:`supported_options`; they may override :attr:`provider_info`, :meth:`list_models` and
    :meth:`resolve_model`. Callers use :meth:`generate`.
    """

    #: The optional :class:`GenerateOptions` fields this adapter honours (see :data:`OPTIONAL_FIELDS`).
    supported_options: ClassVar[frozenset[str]] = frozenset()

    @property
    def provider_info(self) -> ProviderInfo:
        """The provider route this adapter serves."""
        name = type(self).__name__
        return ProviderInfo(id=name, name=name)

    async def list_models(self) -> list[ModelInfo]:
        """Models the adapter can advertise, in its preferred order (advisory: others may be accepted)."""
        return []

    async def resolve_model(self, model: str) -> ModelInfo:
        """All the adapter knows about one model; by default its id and nothing else."""
        return ModelInfo(provider=self.provider_info.id, id=model, name=model)

    @abc.abstractmethod
    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Stream one response as block-protocol chunks (an async generator). Raw: nothing is checked here."""

    def check_options(self, options: GenerateOptions) -> None:
        """Raise ``UNSUPPORTED_OPTION`` naming the first set option this adapter cannot honour."""
        for field in OPTIONAL_FIELDS:
            if field not in self.supported_options and getattr(options, field) is not None:
                raise LlmError(
                    f"{type(self).__name__} does not support the option {field!r}; leave it unset "
                    f"(supported: {', '.join(sorted(self.supported_options)) or 'none'})",
                    ErrorCode.UNSUPPORTED_OPTION,
                )

    async def prepare(self, options: GenerateOptions) -> GenerateOptions:
        """Check ``options`` before any request: options this adapter supports, the model's reasoning effort.

        Returns the options to send (with the model's default effort filled in when none was asked for).
        """
        self.check_options(options)
        info = await self.resolve_model(options.model)
        return resolve_reasoning_effort(options, info)

    def generate(
        self,
        options: GenerateOptions,
        *,
        policy: Policy | str | None = Policy.STRICT,
        limits: Limits | None = None,
    ) -> AsyncIterator[StreamChunk]:
        """Stream one response, checked: :meth:`prepare`, then :meth:`stream` through the machine.

        Each chunk is yielded once the machine accepted it; a broken adapter raises the protocol's
        :class:`LlmError` at the chunk where it broke. An exception from the adapter (its :meth:`resolve_model`
        included) that is not an ``LlmError`` becomes ``LlmError(UNKNOWN)`` with the original as ``__cause__``.
        ``policy=None`` skips the machine. ``limits`` (else ``options.limits``) bound the machine and, given to
        :meth:`stream` as ``options.limits``, what a converter it makes holds back before the machine sees it (with
        or without the machine). No secret of the adapter (its API key) is in the error raised, nor in its causes.
        Outside an agent run, an instrumentation in force (:mod:`streamfsm.otel`) traces the stream.
        """
        chunks = self._checked(options, policy, limits)
        traced = _tracer
        if traced is None or IN_RUN.get():
            return chunks
        return traced.stream(self, options, chunks)

    async def _checked(
        self, options: GenerateOptions, policy: Policy | str | None, limits: Limits | None
    ) -> AsyncIterator[StreamChunk]:
        """:meth:`generate`'s stream."""
        source: AsyncIterator[StreamChunk] | None = None
        failure: LlmError | None = None
        try:
            prepared = await self.prepare(options)
            if limits is not None and limits is not prepared.limits:  # the converter the adapter makes takes them
                prepared = prepared.model_copy(update={"limits": limits})
            chunks = self.stream(prepared)
            source = chunks if policy is None else avalidate(chunks, policy=policy, limits=prepared.limits)
            async for chunk in source:
                yield chunk
        except LlmError as exc:
            failure = exc
        except Exception as exc:
            failure = LlmError.wrap(exc, f"{type(self).__name__} failed")
        finally:
            if source is not None:
                await aclose_upstream(source)
        if failure is not None:
            # Raised outside the handler, so that no context is attached that the redaction could not cut.
            raise self._redacted(failure)

    def _redacted(self, error: LlmError) -> LlmError:
        """``error`` with this adapter's secrets taken out (an adapter with credentials says which they are)."""
        return error


# --- Tracing ----------------------------------------------------------------------------------------


class StreamTracer(abc.ABC):
    """What traces bare adapter streams (:meth:`LlmAdapter.generate` called outside an agent run); the agent
    layer's instrumentation (``streamfsm._trace.Instrumentation``) is one that follows runs too."""

    __slots__ = ()

    @abc.abstractmethod
    def stream(
        self, adapter: LlmAdapter, options: GenerateOptions, chunks: AsyncIterator[StreamChunk]
    ) -> AsyncIterator[StreamChunk]:
        """A bare adapter stream: ``chunks`` (checked by the machine unless ``policy=None``) as its caller gets
        them."""


_tracer: StreamTracer | None = None

#: Set in a run's producer task: an adapter stream there is the run's request, traced by the run, not on its own.
IN_RUN: ContextVar[bool] = ContextVar("streamfsm_in_run", default=False)


def tracer() -> StreamTracer | None:
    """The tracer in force (None: nothing is traced)."""
    return _tracer


def set_tracer(value: StreamTracer | None) -> None:
    """Put ``value`` in force for streams and runs that start from now on (None: trace nothing)."""
    global _tracer
    _tracer = value

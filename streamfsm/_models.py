"""What users build and read: result types as pydantic models (snake_case in Python, camelCase on the wire)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.alias_generators import to_camel
from pydantic_core import from_json

from ._arguments import parse_arguments
from ._json import copy_json
from ._quote import quote
from ._wire import CallId

__all__ = [
    "Block",
    "FinishReason",
    "ImageBlock",
    "KeptBlock",
    "LlmFailure",
    "OpenBlock",
    "ReasoningBlock",
    "SafetyCheck",
    "Snapshot",
    "StreamResult",
    "TextBlock",
    "ToolCallBlock",
    "Usage",
    "kept_blocks",
]


def partial_object(text: str) -> dict[str, Any] | None:
    """The JSON object that cut-off JSON text holds so far (pydantic_core's partial parser), or None."""
    if not text:
        return None
    try:
        value = from_json(text, allow_partial="trailing-strings")
    except (ValueError, TypeError):  # TypeError: a lone surrogate, which cannot be UTF-8
        return None
    return value if isinstance(value, dict) else None


class WireModel(BaseModel):
    """Base of the result types: frozen, snake_case attributes, camelCase wire aliases."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")

    def to_wire(self) -> dict[str, Any]:
        """The camelCase dict of the wire format; optional fields the stream did not send are left out."""
        return self.model_dump(by_alias=True, exclude_none=True)


class _Blank(WireModel):
    """An empty result model that takes plain attribute assignment, for :func:`construct` (``_machine``).

    A frozen model refuses ``setattr`` and ``object.__setattr__`` is a slow call, so the machine fills a
    ``_Blank`` with ordinary assignments and then makes it the result class by setting ``__class__``:
    every ``WireModel`` subclass has this class's memory layout (none adds slots), which CPython checks.
    ``__delattr__`` is replaced too, or the ``setattr`` slot would stay the Python-level dispatcher.
    """

    __slots__ = ()
    __init__ = object.__init__
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__


class TextBlock(WireModel):
    """A complete text block."""

    type: Literal["text"] = "text"
    text: str


class ReasoningBlock(WireModel):
    """A complete reasoning block."""

    type: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallBlock(WireModel):
    """A complete tool call. ``arguments`` is the raw JSON text; ``parsed_arguments`` the object it holds."""

    type: Literal["tool-call"] = "tool-call"
    id: CallId
    name: str
    arguments: str

    @cached_property
    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict (the machine parsed them once, when the block ended).

        Raises ``ValueError``, saying why, when the arguments are not a JSON object: a stream may carry
        such arguments under ``Policy.HARNESS`` (or an assembler with ``raw_arguments=True``), where they
        are kept raw. For an interrupted block (:attr:`StreamResult.interrupted`) the machine gives the
        cut-off arguments parsed as far as they go (an empty dict if nothing is usable).
        """
        parsed, why = parse_arguments(self.arguments)
        if parsed is None:
            raise ValueError(f"tool call {quote(self.id)} ({self.name}): arguments are not a JSON object: {why}")
        return parsed


class SafetyCheck(WireModel):
    """A check the provider flagged a tool call with, to be acknowledged before the call runs.

    The OpenAI Responses API sends them as a ``computer_call``'s ``pending_safety_checks``: ``id``, ``code``
    (``malicious_instructions``, ``irrelevant_domain``, ``sensitive_domain``, ...) and ``message`` (what to tell
    the user). An agent loop runs such a call only when the application acknowledges its checks
    (``AgentLoop(acknowledge_safety_checks=...)``).
    """

    id: str = Field(min_length=1)
    code: str | None = None
    message: str | None = None


class ImageBlock(WireModel):
    """A complete image block: ``attachment`` is the JSON object the stream carried, kept as it came."""

    type: Literal["image"] = "image"
    attachment: dict[str, Any]


#: A completed block of a core type. A block of a type the protocol does not know (``Policy.HARNESS``) is
#: kept as the plain dict its ``block-end`` carried.
Block = TextBlock | ReasoningBlock | ToolCallBlock | ImageBlock


class Usage(WireModel):
    """Token usage of one stream. Optional counts are ``None`` when the stream did not send them."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens (cache and reasoning counts are reported apart, not added)."""
        return self.input_tokens + self.output_tokens


class LlmFailure(WireModel):
    """Why a stream ended with ``error`` or ``aborted``."""

    message: str
    code: str
    status: int | None = None
    provider_retry_after_ms: int | None = None
    request_id: str | None = None


class FinishReason(WireModel):
    """How a stream ended: ``kind``, and for ``error``/``aborted`` the ``failure``.

    ``kind`` is one of :data:`FinishKind` (``stop``, ``tool-calls``, ``max-tokens``, ``error``, ``aborted``),
    or under ``Policy.HARNESS`` a kind the protocol does not know, kept as it came: its other fields in
    ``model_extra`` (a ``failure`` that is an :class:`LlmFailure` as ``failure``), and :meth:`to_wire` gives
    back the reason exactly as it came.
    """

    model_config = ConfigDict(extra="allow")

    kind: str
    failure: LlmFailure | None = None
    #: The reason as it came, for a kind the protocol does not know (what :meth:`to_wire` gives back).
    _raw: dict[str, Any] | None = PrivateAttr(default=None)

    @classmethod
    def kept_as_it_came(cls, reason: dict[str, Any]) -> FinishReason:
        """A finish reason of a kind the protocol does not know: typed where it can be, and its wire form kept."""
        failure: LlmFailure | None = None
        if "failure" in reason:
            try:
                failure = LlmFailure.model_validate(reason["failure"])
            except ValueError:  # not a failure the protocol knows: it stays in the wire form only
                failure = None
        extra = {key: value for key, value in reason.items() if key not in ("kind", "failure")}
        made = cls.model_validate({**extra, "kind": reason["kind"], "failure": failure})
        made._raw = reason
        return made

    def __eq__(self, other: object) -> bool:
        """Equal when kind, failure and other fields are: the wire form kept of an unknown kind is not compared."""
        if not isinstance(other, FinishReason):
            return NotImplemented
        return (self.kind, self.failure, self.model_extra) == (other.kind, other.failure, other.model_extra)

    __hash__ = WireModel.__hash__

    def to_wire(self) -> dict[str, Any]:
        """The camelCase dict of the wire format; a reason of an unknown kind exactly as it came (a copy)."""
        if self._raw is not None:
            return dict(copy_json(self._raw))
        return super().to_wire()


class KeptBlock(WireModel):
    """A provider item the block protocol has no word for, kept verbatim for replay (see :attr:`StreamResult.kept`).

    A server-tool call or its result, an MCP call, a compaction, a fallback notice, redacted reasoning, the
    citations of a text block, a content part of a type the protocol does not know: whatever a converter kept
    in the finish's ``replayState["kept"]``, in the order the provider sent it.
    """

    #: The provider's name for it (``server_tool_use``, ``web_search_tool_result``, ``compaction``, ...).
    type: str
    #: Where it came: how many protocol blocks of the turn came before it. ``citations`` belong to block ``at``.
    at: int = Field(ge=0)
    #: The item as the provider sent it, assembled from its start and its deltas (JSON data).
    data: dict[str, Any]


def kept_blocks(replay_state: object) -> list[KeptBlock]:
    """The provider items a turn's ``replayState`` keeps for replay, in order (``[]`` when there are none).

    Reads ``replay_state["kept"]``, a list of ``{"type": str, "at": int, "data": {...}}``; an entry not of that
    form is passed over.
    """
    if not isinstance(replay_state, dict):
        return []
    kept = replay_state.get("kept")
    if not isinstance(kept, list):
        return []
    out = []
    for item in kept:
        if not isinstance(item, dict):
            continue
        kind, at, data = item.get("type"), item.get("at"), item.get("data")
        if isinstance(kind, str) and type(at) is int and at >= 0 and isinstance(data, dict):
            out.append(KeptBlock(type=kind, at=at, data=data))
    return out


class StreamResult(WireModel):
    """A validated, assembled stream."""

    blocks: list[Block | dict[str, Any]] = Field(default_factory=list)
    usage: Usage | None = None
    finish: FinishReason
    interrupted: list[Block | dict[str, Any]] = Field(default_factory=list)
    replay_state: Any = None

    @property
    def text(self) -> str:
        """All text blocks joined ('' if none)."""
        return "".join(b.text for b in self.blocks if isinstance(b, TextBlock))

    @property
    def reasoning(self) -> str:
        """All reasoning blocks joined ('' if none)."""
        return "".join(b.text for b in self.blocks if isinstance(b, ReasoningBlock))

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        """The completed tool calls, in index order."""
        return [b for b in self.blocks if isinstance(b, ToolCallBlock)]

    @property
    def kept(self) -> list[KeptBlock]:
        """What the provider sent that the block protocol has no word for, kept for replay, in order.

        Server-tool calls and results, MCP blocks, compaction, citations, redacted reasoning, ...: read from
        ``replay_state["kept"]`` (:func:`kept_blocks`); ``[]`` when the turn kept nothing.
        """
        return kept_blocks(self.replay_state)

    def to_wire(self, *, interrupted: bool = False) -> dict[str, Any]:
        """``{"blocks": [...], "usage": {...} | None, "finish": {...}}`` in camelCase (SPEC §5).

        ``interrupted`` and ``replay_state`` are attributes of the result, not part of this dict; with
        ``interrupted=True`` (what ``streamfsm assemble`` prints) it ends with ``"interrupted": [...]`` too: the
        blocks a cut-off finish left open, as far as they came, in the form of ``blocks`` (``[]`` when none were).
        """
        wire = {
            "blocks": _wire_blocks(self.blocks),
            "usage": self.usage.to_wire() if self.usage is not None else None,
            "finish": self.finish.to_wire(),
        }
        if interrupted:
            wire["interrupted"] = _wire_blocks(self.interrupted)
        return wire


def _wire_blocks(blocks: list[Block | dict[str, Any]]) -> list[dict[str, Any]]:
    """Blocks in the form of a ``block-end``'s ``block`` (a block of a type the protocol does not know, as it came)."""
    return [copy_json(b) if isinstance(b, dict) else b.to_wire() for b in blocks]


class OpenBlock(WireModel):
    """A block that has started and not ended, as far as it has come (see :meth:`StreamAssembler.snapshot`)."""

    index: int
    #: A core :data:`BlockType`, or under ``Policy.HARNESS`` a type the protocol does not know.
    block_type: str
    text: str = ""
    id: CallId | None = None
    name: str | None = None
    arguments: str = ""
    partial_arguments: dict[str, Any] | None = None


class Snapshot(WireModel):
    """A view of a stream in progress: computed only when asked for."""

    state: str
    chunk_count: int
    blocks: list[Block | dict[str, Any]]
    open: list[OpenBlock]
    usage: Usage | None = None
    finish: FinishReason | None = None


@dataclass(slots=True)
class StreamSummary:
    """What a valid stream came to, without its content: a verdict's worth, at no cost of result models.

    A plain record (not frozen: a frozen dataclass's ``__init__`` costs three times as much, and one is made a
    stream).

    Returned by :meth:`StreamAssembler.summary`; an assembler made with ``results=False`` (what ``validate``,
    ``validate_jsonl`` and ``streamfsm check`` use) keeps no more than this of a stream once each block has
    ended, so a check's memory is bounded by the largest open block, not by the stream.
    """

    #: Chunks accepted.
    chunks: int
    #: The type of each completed block, in index order (``text``, ``reasoning``, ``tool-call``, ``image``, or
    #: under HARNESS a type the protocol does not know).
    blocks: tuple[str, ...]
    #: ``(id, name)`` of each completed tool call, in index order.
    tool_calls: tuple[tuple[str, str], ...]
    usage: Usage | None
    finish: FinishReason
    #: The types of the blocks still open at a cut-off finish (``max-tokens``, ``error``, ``aborted``).
    interrupted: tuple[str, ...]
    #: The types of the provider items the turn's replay state keeps (``StreamResult.kept``).
    kept: tuple[str, ...]

"""The wire vocabulary of SPEC §1 as ``TypedDict`` s: chunks are plain dicts on the wire and in Python."""

from __future__ import annotations

from typing import Any, Literal, NewType, NotRequired, TypeAlias, TypedDict

__all__ = [
    "BlockEnd",
    "BlockStart",
    "BlockType",
    "CallId",
    "Finish",
    "FinishKind",
    "ReasoningDelta",
    "StreamChunk",
    "TextDelta",
    "ToolCallDelta",
    "UsageChunk",
    "WireBlock",
    "WireFailure",
    "WireFinishReason",
    "WireImageBlock",
    "WireReasoningBlock",
    "WireTextBlock",
    "WireToolCallBlock",
    "WireUsage",
]

CallId = NewType("CallId", str)
CallId.__doc__ = "A tool call's id: a non-empty string, typed apart from other strings (``CallId('call-1')``)."

#: The core block types (SPEC §1). Under ``Policy.HARNESS`` a block of another type is accepted (no deltas).
BlockType: TypeAlias = Literal["text", "reasoning", "tool-call", "image"]
#: The core finish kinds. Under ``Policy.HARNESS`` another kind is accepted (the vocabulary is merge-extensible).
FinishKind: TypeAlias = Literal["stop", "tool-calls", "max-tokens", "error", "aborted"]


class BlockStart(TypedDict):
    """Opens block ``index`` (the n-th block of a stream has index n)."""

    type: Literal["block-start"]
    index: int
    blockType: BlockType


class TextDelta(TypedDict):
    """A piece of a text block."""

    type: Literal["text-delta"]
    index: int
    text: str


class ReasoningDelta(TypedDict):
    """A piece of a reasoning block."""

    type: Literal["reasoning-delta"]
    index: int
    text: str


class ToolCallDelta(TypedDict):
    """A piece of a tool call's raw JSON arguments; every delta of a block repeats its ``id``."""

    type: Literal["tool-call-delta"]
    index: int
    id: CallId
    name: NotRequired[str]
    argumentsDelta: str


class WireTextBlock(TypedDict):
    """A complete text block, as ``block-end`` carries it."""

    type: Literal["text"]
    text: str


class WireReasoningBlock(TypedDict):
    """A complete reasoning block, as ``block-end`` carries it."""

    type: Literal["reasoning"]
    text: str


class WireToolCallBlock(TypedDict):
    """A complete tool call, as ``block-end`` carries it; ``arguments`` is raw JSON text."""

    type: Literal["tool-call"]
    id: CallId
    name: str
    arguments: str


class WireImageBlock(TypedDict):
    """A complete image block, as ``block-end`` carries it; ``attachment`` is a JSON object kept as it came."""

    type: Literal["image"]
    attachment: dict[str, Any]


WireBlock: TypeAlias = WireTextBlock | WireReasoningBlock | WireToolCallBlock | WireImageBlock


class BlockEnd(TypedDict):
    """Closes block ``index`` and carries the complete block."""

    type: Literal["block-end"]
    index: int
    block: WireBlock


class WireUsage(TypedDict):
    """Token counts as the wire carries them."""

    inputTokens: int
    outputTokens: int
    cacheReadTokens: NotRequired[int]
    cacheWriteTokens: NotRequired[int]
    reasoningTokens: NotRequired[int]


class UsageChunk(TypedDict):
    """The stream's token usage; at most one, before ``finish``."""

    type: Literal["usage"]
    usage: WireUsage


class WireFailure(TypedDict):
    """Why a stream ended in ``error`` or ``aborted``."""

    message: str
    code: str
    status: NotRequired[int]
    providerRetryAfterMs: NotRequired[int]
    requestId: NotRequired[str]


class WireFinishReason(TypedDict):
    """``{kind}``, plus ``failure`` for the kinds ``error`` and ``aborted``."""

    kind: FinishKind
    failure: NotRequired[WireFailure]


class Finish(TypedDict):
    """The last chunk of every stream."""

    type: Literal["finish"]
    reason: WireFinishReason
    replayState: NotRequired[Any]


StreamChunk: TypeAlias = BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | Finish

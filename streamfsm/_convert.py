"""Shared pieces of the provider converters: block numbering, held-back blocks, usage and failures.

A converter is sans-IO: it is fed one provider event at a time and returns the chunks that event
completes. Provider formats let content interleave (OpenAI streams parallel tool calls by index and may
send text between them); the block protocol under ``Policy.STRICT`` does not. The :class:`BlockQueue`
keeps one block open at a time: the first block streams live, later ones are held back (buffered) and
started, with everything they buffered as one delta, once the open block can end.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from ._errors import ErrorCode, LlmError
from ._wire import CallId, StreamChunk, WireUsage

__all__ = ["BlockQueue", "ProviderBlock", "classify_failure", "malformed", "non_negative_int"]

Kind = Literal["text", "reasoning", "tool-call"]


def malformed(message: str) -> LlmError:
    """A provider sent something that is not its documented format."""
    return LlmError(message, ErrorCode.MALFORMED_RESPONSE)


def non_negative_int(value: object, field: str) -> int:
    """A token count: an int ≥ 0 (floats with an integral value are accepted, as some providers send them)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or int(value) != value:
        raise malformed(f"usage field {field!r} must be a non-negative integer, got {value!r}")
    return int(value)


class ProviderBlock:
    """One content block of the provider's response, as it is being converted."""

    __slots__ = ("call_id", "depth", "ended", "index", "kind", "name", "parts", "scanned", "started", "state")

    def __init__(self, kind: Kind, call_id: str = "", name: str = "") -> None:
        self.kind: Kind = kind
        self.call_id = call_id
        self.name = name
        self.parts: list[str] = []
        self.index = -1  # the block protocol's index, once started
        self.started = False
        self.ended = False
        # Tool arguments: how far the JSON object is known to be complete (scanned lazily, only when asked).
        self.scanned = 0
        self.depth = 0
        self.state = 0  # 0 before the value, 1 in it, 2 in a string, 3 after a backslash, 4 complete

    def delta(self, text: str) -> StreamChunk:
        """The chunk carrying ``text`` for this (started) block."""
        if self.kind == "tool-call":
            return {"type": "tool-call-delta", "index": self.index, "id": CallId(self.call_id), "argumentsDelta": text}
        if self.kind == "text":
            return {"type": "text-delta", "index": self.index, "text": text}
        return {"type": "reasoning-delta", "index": self.index, "text": text}

    def opening(self, arguments: str) -> StreamChunk:
        """The first delta of a tool call: the only one that must carry the name."""
        return {
            "type": "tool-call-delta",
            "index": self.index,
            "id": CallId(self.call_id),
            "name": self.name,
            "argumentsDelta": arguments,
        }

    def arguments_complete(self) -> bool:
        """Whether the arguments so far are one complete JSON object or array.

        Scans only the parts added since the last call, so asking after every delta stays linear.
        """
        state, depth = self.state, self.depth
        parts = self.parts
        for number in range(self.scanned, len(parts)):
            for char in parts[number]:
                if state == 4:
                    if not char.isspace():
                        state = 1  # more than one value: not complete (the machine will say why)
                elif state == 2:
                    if char == "\\":
                        state = 3
                    elif char == '"':
                        state = 1
                elif state == 3 or char == '"':
                    state = 2
                elif char in "{[":
                    depth += 1
                    state = 1
                elif char in "}]":
                    depth -= 1
                    if depth == 0:
                        state = 4
        self.scanned, self.state, self.depth = len(parts), state, depth
        return state == 4

    def block(self) -> dict[str, Any]:
        """The complete block a ``block-end`` carries."""
        text = "".join(self.parts)
        if self.kind == "tool-call":
            return {"type": "tool-call", "id": CallId(self.call_id), "name": self.name, "arguments": text or "{}"}
        return {"type": self.kind, "text": text}


class BlockQueue:
    """Numbers blocks in order and keeps at most one open; later blocks wait, buffered, until it may end.

    A text or reasoning block may end as soon as another block has content. A tool call may end once its
    arguments are a complete JSON value, or when the response ends. Empty arguments become ``{}``, the
    provider's way of saying "no arguments".
    """

    __slots__ = ("blocks", "next_index", "out")

    def __init__(self) -> None:
        self.blocks: list[ProviderBlock] = []  # not yet ended; blocks[0] is the open one once started
        self.next_index = 0
        self.out: list[StreamChunk] = []

    @property
    def count(self) -> int:
        """How many blocks were started."""
        return self.next_index

    def add(self, block: ProviderBlock, text: str) -> None:
        """Append content to ``block`` (which must be in the queue): live if it is open, buffered otherwise."""
        block.parts.append(text)
        if block.started:
            if text:
                self.out.append(block.delta(text))
            return
        self._advance()

    def push(self, block: ProviderBlock, text: str) -> None:
        """A new block, with its first content."""
        self.blocks.append(block)
        block.parts.append(text)
        self._advance()

    def last(self) -> ProviderBlock | None:
        """The most recent block still in the queue."""
        return self.blocks[-1] if self.blocks else None

    def _advance(self) -> None:
        blocks = self.blocks
        while blocks:
            head = blocks[0]
            if not head.started:
                self._start(head)
            if len(blocks) == 1:
                return
            if head.kind == "tool-call" and not head.arguments_complete():
                return
            self._end(blocks.pop(0))

    def _start(self, block: ProviderBlock) -> None:
        block.index = self.next_index
        self.next_index += 1
        block.started = True
        out = self.out
        out.append({"type": "block-start", "index": block.index, "blockType": block.kind})
        held = "".join(block.parts)
        block.parts = [held] if held else []
        if block.kind == "tool-call":
            out.append(block.opening(held))
        elif held:
            out.append(block.delta(held))

    def _end(self, block: ProviderBlock) -> None:
        if block.kind == "tool-call" and not any(block.parts):
            self.out.append(block.delta("{}"))
            block.parts.append("{}")
        block.ended = True
        self.out.append({"type": "block-end", "index": block.index, "block": block.block()})  # type: ignore[typeddict-item]

    def close_all(self, *, keep_cut_calls: bool) -> None:
        """End every block (starting held ones). With ``keep_cut_calls``, a tool call whose arguments are
        cut off is left open: the response was cut (``max-tokens``, an error) and the call is interrupted."""
        while self.blocks:
            head = self.blocks[0]
            if not head.started:
                self._start(head)
            if keep_cut_calls and head.kind == "tool-call" and any(head.parts) and not head.arguments_complete():
                # Blocks after it cannot start under STRICT while it stays open; they were cut as well.
                self.blocks.clear()
                return
            self._end(self.blocks.pop(0))
            if not self.blocks:
                return

    def take(self) -> list[StreamChunk]:
        """The chunks produced since the last call."""
        out, self.out = self.out, []
        return out


# --- Failures ---------------------------------------------------------------------------------------

# The provider wordings DeepSeek Harness (dsh-llm 0.1.1) recognises as a context overflow and as an exhausted quota.
_CONTEXT = (
    re.compile(
        r"(?:^|[^a-z0-9])context[\s_-](?:length|window)[\s_-](?:exceed(?:ed|s)?|overflow(?:ed)?|limit[\s_-]exceeded)"
        r"(?:$|[^a-z0-9])",
        re.I,
    ),
    re.compile(r"\b(?:maximum|max)(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)\b", re.I),
    re.compile(
        r"\b(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:large|long)\s+for\s+(?:(?:this|the)\s+)?"
        r"(?:model(?:'s)?\s+)?context(?:\s+window)?\b",
        re.I,
    ),
    re.compile(r"\b(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+model\b", re.I),
    re.compile(
        r"\b(?:input|prompt|request|messages?)\b.{0,40}\b(?:exceed(?:s|ed)?|overflows?|is\s+larger\s+than)\b.{0,40}"
        r"\b(?:the\s+)?(?:model(?:'s)?\s+)?context(?:\s+(?:length|window))?\b",
        re.I,
    ),
)
_QUOTA = (
    re.compile(r"\binsufficient[\s_-]+(?:quota|balance|credits?)\b", re.I),
    re.compile(r"\b(?:quota|usage[\s_-]+limit)[\s_-]+(?:exceeded|exhausted|reached)\b", re.I),
    re.compile(r"\bexceed(?:ed|s)?[\s_-]+(?:(?:your|the)[\s_-]+)?(?:current[\s_-]+)?quota\b", re.I),
    re.compile(r"\b(?:balance|credits?)[\s_-]+(?:exhausted|depleted)\b", re.I),
    re.compile(r"\bout[\s_-]+of[\s_-]+(?:credits?|budget)\b", re.I),
)


def classify_failure(status: int | None, detail: str) -> ErrorCode:
    """The code of a provider failure, from its HTTP status and its error text (code, type and message).

    The wording wins where it is specific (a context overflow or an exhausted quota is reported as 400 or
    429 by different providers); otherwise the status decides (SPEC §3). ``status=None`` is an error the
    provider sent inside a stream.
    """
    if any(pattern.search(detail) for pattern in _CONTEXT):
        return ErrorCode.CONTEXT_WINDOW_EXCEEDED
    if status == 402 or any(pattern.search(detail) for pattern in _QUOTA):
        return ErrorCode.QUOTA
    if status is None:
        lowered = detail.lower()
        if "rate_limit" in lowered or "rate limit" in lowered:
            return ErrorCode.RATE_LIMIT
        if "overloaded" in lowered or "server" in lowered or "api_error" in lowered:
            return ErrorCode.SERVER
        if "authentication" in lowered or "permission" in lowered:
            return ErrorCode.AUTH
        if "invalid_request" in lowered or "not_found" in lowered or "too_large" in lowered:
            return ErrorCode.INVALID_REQUEST
        return ErrorCode.PROVIDER_HTTP_ERROR
    if status in (401, 403):
        return ErrorCode.AUTH
    if status == 429:
        return ErrorCode.RATE_LIMIT
    if status in (400, 413, 422):
        return ErrorCode.INVALID_REQUEST
    if status >= 500:
        return ErrorCode.SERVER
    return ErrorCode.PROVIDER_HTTP_ERROR


def error_detail(body: object) -> tuple[str, str]:
    """(message, everything searchable) of a provider error body: ``{"error": {...}}`` or ``{"message": ...}``."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            message = str(error.get("message") or error.get("msg") or "")
            parts = [str(error.get(key) or "") for key in ("code", "type", "message")]
            return message, " ".join(part for part in parts if part)
        if isinstance(error, str):
            return error, error
    return "", ""


def usage_chunk(usage: WireUsage) -> StreamChunk:
    """The ``usage`` chunk of a provider's counts."""
    return {"type": "usage", "usage": usage}

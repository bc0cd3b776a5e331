"""The shape of a chunk (SPEC §1): which fields each type carries, and of which type (JSON data: ``_json``).

Every check here decides ``INVALID_CHUNK``. :func:`check` is called for every chunk that does not
take the machine's hot path, so it is written as plain type tests, cheapest first; it names the
field and the reason of the first problem it finds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._json import is_json_value

__all__ = [
    "BLOCK_TYPES",
    "CHUNK_TYPES",
    "FINISH_KINDS",
    "MAX_INT",
    "NON_EMPTY",
    "InvalidLine",
    "ShapeError",
    "check",
    "describe",
    "short",
    "unknown_block_type",
    "unknown_finish_kind",
]

#: The largest int the wire carries (JavaScript's ``Number.MAX_SAFE_INTEGER``).
MAX_INT: Final = 2**53 - 1

#: The block types of SPEC §1: what every policy knows. Under HARNESS a block of another type is accepted.
BLOCK_TYPES: Final = frozenset({"text", "reasoning", "tool-call", "image"})
FINISH_KINDS: Final = frozenset({"stop", "tool-calls", "max-tokens", "error", "aborted"})
CHUNK_TYPES: Final = (
    "block-start",
    "text-delta",
    "reasoning-delta",
    "tool-call-delta",
    "block-end",
    "usage",
    "finish",
)
_OPTIONAL_USAGE: Final = ("cacheReadTokens", "cacheWriteTokens", "reasoningTokens")

#: Why a tool call's empty ``id`` or ``name`` is refused (STRICT; HARNESS notes it with these words).
NON_EMPTY: Final = "must be a non-empty string"


def short(value: str, limit: int = 40) -> str:
    """``value`` quoted, cut to ``limit`` characters (how every message quotes a value)."""
    return repr(value if len(value) <= limit else value[: limit - 3] + "...")


def unknown_block_type(block_type: str) -> str:
    """Why a block of a type the protocol does not know is refused (STRICT; HARNESS notes it with these words)."""
    return f"unknown block type {short(block_type)}; expected text, reasoning, tool-call or image"


def unknown_finish_kind(kind: str) -> str:
    """Why a finish of a kind the protocol does not know is refused (STRICT; HARNESS notes it with these words)."""
    return f"unknown finish kind {short(kind)}; expected one of stop, tool-calls, max-tokens, error, aborted"


class InvalidLine:
    """A recorded line that holds no chunk it should (not JSON, or a malformed packed row), at its position.

    The machine rejects it as ``INVALID_CHUNK`` (or ``CHUNK_AFTER_FINISH`` after a finish), so a bad
    line is reported exactly like a bad chunk, with its position. ``what`` says what the line is
    (``line is not JSON``, ``malformed text-chunks storage row``), ``reason`` why.
    """

    __slots__ = ("reason", "text", "what")

    def __init__(self, text: str, reason: str, what: str = "line is not JSON") -> None:
        self.text = text
        self.reason = reason
        self.what = what

    def __repr__(self) -> str:
        return f"InvalidLine({self.text[:60]!r}, reason={self.reason!r})"


class ShapeError(Exception):
    """Raised by :func:`check`: ``field`` is a dotted path ('' for the chunk itself)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(field, reason)
        self.field = field
        self.reason = reason


def describe(value: object) -> str:
    """A short, safe description of a value for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the real error
        text = f"<{type(value).__name__}>"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _is_int(value: object) -> bool:
    return type(value) is int or (isinstance(value, int) and not isinstance(value, bool))


def _count(obj: Mapping[str, Any], key: str, path: str, *, low: int = 0, high: int = MAX_INT) -> int:
    if key not in obj:
        raise ShapeError(path + key, "is missing")
    value = obj[key]
    if not _is_int(value):
        raise ShapeError(path + key, f"must be an integer, got {describe(value)}")
    if not low <= value <= high:
        raise ShapeError(path + key, f"must be between {low} and {high}, got {value}")
    return value if type(value) is int else int.__int__(value)


def _text(obj: Mapping[str, Any], key: str, path: str, *, non_empty: bool = False) -> str:
    if key not in obj:
        raise ShapeError(path + key, "is missing")
    value = obj[key]
    if not isinstance(value, str):
        raise ShapeError(path + key, f"must be a string, got {describe(value)}")
    if non_empty and not value:
        raise ShapeError(path + key, NON_EMPTY)
    return value if type(value) is str else str.__str__(value)  # a str subclass, as a plain str


def _mapping(obj: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
    if key not in obj:
        raise ShapeError(path + key, "is missing")
    value = obj[key]
    if not isinstance(value, Mapping):
        raise ShapeError(path + key, f"must be an object, got {describe(value)}")
    return dict(value)  # a copy: the normalised fields are written into it, never into the caller's chunk


def check(chunk: object, harness: bool = False) -> tuple[dict[str, Any], str]:
    """Validate the shape of one chunk; return it as a plain, normalised ``dict`` and its type.

    Raises :class:`ShapeError` naming the first field that is missing or ill-typed. With ``harness``
    (``Policy.HARNESS``, SPEC §4): a block type or finish kind the protocol does not know is accepted (its
    block or reason must be JSON data, kept as it came), and a tool call's ``id`` and ``name`` may be empty.
    The chunk returned is a new dict whose fields the machine reads have their exact types (a ``str``
    subclass is a ``str``, an ``int`` subclass an ``int``, another mapping a ``dict``); other keys are kept.
    """
    if isinstance(chunk, InvalidLine):
        raise ShapeError("", f"{chunk.what} ({chunk.reason}): {chunk.text[:80]!r}")
    if not isinstance(chunk, Mapping):
        raise ShapeError("", f"a chunk must be an object, got {describe(chunk)}")
    c: dict[str, Any] = dict(chunk)
    if "type" not in c:
        raise ShapeError("type", "is missing")
    t = c["type"]
    if not isinstance(t, str):
        raise ShapeError("type", f"must be a string, got {describe(t)}")
    if t not in CHUNK_TYPES:
        raise ShapeError("type", f"unknown chunk type {t!r}; expected one of {', '.join(CHUNK_TYPES)}")
    t = c["type"] = str.__str__(t)
    if t == "usage":
        usage = c["usage"] = _mapping(c, "usage", "")
        usage["inputTokens"] = _count(usage, "inputTokens", "usage.")
        usage["outputTokens"] = _count(usage, "outputTokens", "usage.")
        for key in _OPTIONAL_USAGE:
            if key in usage:
                usage[key] = _count(usage, key, "usage.")
        return c, t
    if t == "finish":
        reason = c["reason"] = _mapping(c, "reason", "")
        kind = reason["kind"] = _text(reason, "kind", "reason.")
        if kind not in FINISH_KINDS:
            if not harness:
                raise ShapeError("reason.kind", unknown_finish_kind(kind))
            if not is_json_value(reason):
                raise ShapeError("reason", "must be JSON data")
        if kind in ("error", "aborted"):
            failure = reason["failure"] = _mapping(reason, "failure", "reason.")
            failure["message"] = _text(failure, "message", "reason.failure.", non_empty=True)
            failure["code"] = _text(failure, "code", "reason.failure.", non_empty=True)
            for key, low, high in (("status", 100, 599), ("providerRetryAfterMs", 0, MAX_INT)):
                if key in failure:
                    failure[key] = _count(failure, key, "reason.failure.", low=low, high=high)
            if "requestId" in failure:
                failure["requestId"] = _text(failure, "requestId", "reason.failure.")
        if "replayState" in c and not is_json_value(c["replayState"]):
            raise ShapeError("replayState", "must be JSON data")
        return c, t
    c["index"] = _count(c, "index", "")
    if t == "text-delta" or t == "reasoning-delta":
        c["text"] = _text(c, "text", "")
    elif t == "tool-call-delta":
        c["id"] = _text(c, "id", "", non_empty=not harness)
        if "name" in c:
            c["name"] = _text(c, "name", "", non_empty=not harness)
        c["argumentsDelta"] = _text(c, "argumentsDelta", "")
    elif t == "block-start":
        block_type = c["blockType"] = _text(c, "blockType", "")
        if block_type not in BLOCK_TYPES and not harness:
            raise ShapeError("blockType", unknown_block_type(block_type))
    else:  # block-end
        block = c["block"] = _mapping(c, "block", "")
        block_type = block["type"] = _text(block, "type", "block.")
        if block_type == "tool-call":
            block["id"] = _text(block, "id", "block.", non_empty=not harness)
            block["name"] = _text(block, "name", "block.", non_empty=not harness)
            block["arguments"] = _text(block, "arguments", "block.")
        elif block_type == "text" or block_type == "reasoning":
            block["text"] = _text(block, "text", "block.")
        elif block_type == "image":
            attachment = _mapping(block, "attachment", "block.")
            if not is_json_value(attachment):
                raise ShapeError("block.attachment", "must be JSON data")
            block["attachment"] = attachment
        elif not harness:
            raise ShapeError("block.type", unknown_block_type(block_type))
        elif not is_json_value(block):
            raise ShapeError("block", "must be JSON data")
    return c, t

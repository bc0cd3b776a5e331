"""The shape of a chunk (SPEC §1): which fields each type carries, and of which type.

Every check here decides ``INVALID_CHUNK``. :func:`check` is called for every chunk that does not
take the machine's hot path, so it is written as plain type tests, cheapest first; it names the
field and the reason of the first problem it finds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["MAX_INT", "InvalidLine", "ShapeError", "check", "describe", "is_json_value"]

#: The largest int the wire carries (JavaScript's ``Number.MAX_SAFE_INTEGER``).
MAX_INT: Final = 2**53 - 1

BLOCK_TYPES: Final = frozenset({"text", "reasoning", "tool-call"})
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


class InvalidLine:
    """A JSON line that could not be parsed, standing in the stream at its position.

    The machine rejects it as ``INVALID_CHUNK`` (or ``CHUNK_AFTER_FINISH`` after a finish), so a bad
    line is reported exactly like a bad chunk, with its position.
    """

    __slots__ = ("reason", "text")

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason

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
    return int(value)


def _opt_count(obj: Mapping[str, Any], key: str, path: str, *, low: int = 0, high: int = MAX_INT) -> None:
    if key in obj:
        _count(obj, key, path, low=low, high=high)


def _text(obj: Mapping[str, Any], key: str, path: str, *, non_empty: bool = False) -> str:
    if key not in obj:
        raise ShapeError(path + key, "is missing")
    value = obj[key]
    if not isinstance(value, str):
        raise ShapeError(path + key, f"must be a string, got {describe(value)}")
    if non_empty and not value:
        raise ShapeError(path + key, "must be a non-empty string")
    return value


def _mapping(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    if key not in obj:
        raise ShapeError(path + key, "is missing")
    value = obj[key]
    if not isinstance(value, Mapping):
        raise ShapeError(path + key, f"must be an object, got {describe(value)}")
    return value


def is_json_value(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is JSON data (dict with str keys, list, str, finite number, bool, None)."""
    if value is None or isinstance(value, (str, bool)):
        return True
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if depth > 512:
        return False
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and is_json_value(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(is_json_value(v, depth + 1) for v in value)
    return False


def check(chunk: object) -> tuple[dict[str, Any], str]:
    """Validate the shape of one chunk; return it as a plain ``dict`` and its type.

    Raises :class:`ShapeError` naming the first field that is missing or ill-typed.
    """
    if isinstance(chunk, InvalidLine):
        raise ShapeError("", f"line is not JSON ({chunk.reason}): {chunk.text[:80]!r}")
    if not isinstance(chunk, Mapping):
        raise ShapeError("", f"a chunk must be an object, got {describe(chunk)}")
    c: dict[str, Any] = chunk if type(chunk) is dict else dict(chunk)
    if "type" not in c:
        raise ShapeError("type", "is missing")
    t = c["type"]
    if not isinstance(t, str):
        raise ShapeError("type", f"must be a string, got {describe(t)}")
    if t not in CHUNK_TYPES:
        raise ShapeError("type", f"unknown chunk type {t!r}; expected one of {', '.join(CHUNK_TYPES)}")
    t = str(t)
    if t == "usage":
        usage = _mapping(c, "usage", "")
        _count(usage, "inputTokens", "usage.")
        _count(usage, "outputTokens", "usage.")
        for key in _OPTIONAL_USAGE:
            _opt_count(usage, key, "usage.")
        return c, t
    if t == "finish":
        reason = _mapping(c, "reason", "")
        kind = _text(reason, "kind", "reason.")
        if kind not in FINISH_KINDS:
            raise ShapeError(
                "reason.kind",
                f"unknown finish kind {kind!r}; expected one of stop, tool-calls, max-tokens, error, aborted",
            )
        if kind in ("error", "aborted"):
            failure = _mapping(reason, "failure", "reason.")
            _text(failure, "message", "reason.failure.", non_empty=True)
            _text(failure, "code", "reason.failure.", non_empty=True)
            _opt_count(failure, "status", "reason.failure.", low=100, high=599)
            _opt_count(failure, "providerRetryAfterMs", "reason.failure.")
            if "requestId" in failure:
                _text(failure, "requestId", "reason.failure.")
        if "replayState" in c and not is_json_value(c["replayState"]):
            raise ShapeError("replayState", "must be JSON data")
        return c, t
    _count(c, "index", "")
    if t == "text-delta" or t == "reasoning-delta":
        _text(c, "text", "")
    elif t == "tool-call-delta":
        _text(c, "id", "", non_empty=True)
        if "name" in c:
            _text(c, "name", "", non_empty=True)
        _text(c, "argumentsDelta", "")
    elif t == "block-start":
        block_type = _text(c, "blockType", "")
        if block_type not in BLOCK_TYPES:
            raise ShapeError("blockType", f"unknown block type {block_type!r}; expected text, reasoning or tool-call")
    else:  # block-end
        block = _mapping(c, "block", "")
        block_type = _text(block, "type", "block.")
        if block_type not in BLOCK_TYPES:
            raise ShapeError("block.type", f"unknown block type {block_type!r}; expected text, reasoning or tool-call")
        if block_type == "tool-call":
            _text(block, "id", "block.", non_empty=True)
            _text(block, "name", "block.", non_empty=True)
            _text(block, "arguments", "block.")
        else:
            _text(block, "text", "block.")
    return c, t

"""The shape of a chunk (SPEC §1): which fields each type carries, and of which type.

Every check here decides ``INVALID_CHUNK``. :func:`check` is called for every chunk that does not
take the machine's hot path, so it is written as plain type tests, cheapest first; it names the
field and the reason of the first problem it finds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["MAX_INT", "MAX_JSON_DEPTH", "InvalidLine", "ShapeError", "check", "describe", "is_json_value"]

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


#: The deepest nesting of arrays and objects :func:`is_json_value` accepts (a replay state, an attachment).
MAX_JSON_DEPTH: Final = 512


def is_json_value(value: object, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` is JSON data (dict with str keys, list, str, finite number, bool, None).

    Arrays and objects may nest ``max_depth`` levels. The walk is iterative (no recursion limit) and
    checks each container object once per depth it is met at, so data built from shared references
    (``v = [v, v]`` twenty levels deep) costs time linear in its distinct objects, not in its expansion;
    a cycle is refused by the depth bound.
    """
    seen: dict[int, int] = {}  # id of a container checked -> the shallowest depth it was checked at
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if item is None or isinstance(item, (str, bool, int)):
            continue
        if isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return False
            continue
        if not isinstance(item, (Mapping, list, tuple)):
            return False
        if depth >= max_depth:
            return False
        key = id(item)
        checked = seen.get(key)
        if checked is not None and checked <= depth:
            continue  # already checked here or shallower: everything below it fits
        seen[key] = depth
        if isinstance(item, Mapping):
            for k, v in item.items():
                if not isinstance(k, str):
                    return False
                stack.append((v, depth + 1))
        else:
            stack.extend((v, depth + 1) for v in item)
    return True


def check(chunk: object, harness: bool = False) -> tuple[dict[str, Any], str]:
    """Validate the shape of one chunk; return it as a plain ``dict`` and its type.

    Raises :class:`ShapeError` naming the first field that is missing or ill-typed. With ``harness``
    (``Policy.HARNESS``, SPEC §4): a block type or finish kind the protocol does not know is accepted (its
    block or reason must be JSON data, kept as it came), and a tool call's ``id`` and ``name`` may be empty.
    """
    if isinstance(chunk, InvalidLine):
        raise ShapeError("", f"{chunk.what} ({chunk.reason}): {chunk.text[:80]!r}")
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
            if not harness:
                raise ShapeError(
                    "reason.kind",
                    f"unknown finish kind {kind!r}; expected one of stop, tool-calls, max-tokens, error, aborted",
                )
            if not is_json_value(reason):
                raise ShapeError("reason", "must be JSON data")
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
        _text(c, "id", "", non_empty=not harness)
        if "name" in c:
            _text(c, "name", "", non_empty=not harness)
        _text(c, "argumentsDelta", "")
    elif t == "block-start":
        block_type = _text(c, "blockType", "")
        if block_type not in BLOCK_TYPES and not harness:
            raise ShapeError(
                "blockType", f"unknown block type {block_type!r}; expected text, reasoning, tool-call or image"
            )
    else:  # block-end
        block = _mapping(c, "block", "")
        block_type = _text(block, "type", "block.")
        if block_type == "tool-call":
            _text(block, "id", "block.", non_empty=not harness)
            _text(block, "name", "block.", non_empty=not harness)
            _text(block, "arguments", "block.")
        elif block_type == "text" or block_type == "reasoning":
            _text(block, "text", "block.")
        elif block_type == "image":
            attachment = _mapping(block, "attachment", "block.")
            if not is_json_value(attachment):
                raise ShapeError("block.attachment", "must be JSON data")
        elif not harness:
            raise ShapeError(
                "block.type", f"unknown block type {block_type!r}; expected text, reasoning, tool-call or image"
            )
        elif not is_json_value(block):
            raise ShapeError("block", "must be JSON data")
    return c, t

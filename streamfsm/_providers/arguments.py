"""Gemini's streamed function-call arguments (``partialArgs``) written out as raw JSON text, as they come.

With ``streamFunctionCallArguments`` on, Gemini sends a call's arguments as ``PartialArg`` s: each names a value
by a JSON path (RFC 9535: ``$.recipe.ingredients[0].amount``, ``$['a key']``) and gives it as ``stringValue``
(in pieces: ``willContinue`` says the same string goes on), ``numberValue``, ``boolValue`` or ``nullValue``.
:class:`ArgumentWriter` turns them into the text of one JSON object, a delta per value, so that a tool call's
arguments stream as they do from other providers. The values come in document order (the model writes its JSON
from start to end): each path either goes deeper into the open containers or leaves some of them for a new key
or the next array element. A path that goes back into a container already closed, names a key twice, skips an
array index or sets the root is not a JSON document written in order: ``MALFORMED_RESPONSE``, saying which.
Every step costs time in proportion to the path's length: linear in the input. A path is read no further than
:data:`~streamfsm._arguments.MAX_DEPTH` (1,024) segments, the most levels tool arguments may nest: a deeper one is
``MALFORMED_RESPONSE`` as soon as its segment 1,025 is read, so what one path costs (its segments, the levels it
opens) is bounded whatever its length.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import orjson

from .._arguments import MAX_DEPTH
from .._quote import quote
from .._shape import MAX_INT
from .convert import malformed

__all__ = ["ArgumentWriter", "json_number", "parse_path"]

Segment = str | int

_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "/": "/", "\\": "\\", "'": "'", '"': '"'}


def _path_error(path: str, why: str) -> Exception:
    return malformed(f"partialArgs jsonPath {path[:200]!r}: {why}")


def parse_path(path: str) -> list[Segment]:
    """The segments of a JSON path: member names (``str``) and array indexes (``int``), from the root ``$``.

    Reads the shorthand ``.name`` and the bracketed ``['name']`` / ``["name"]`` (with JSON's escapes) and
    ``[index]``: what RFC 9535's normalized paths and Gemini use.
    """
    if not path.startswith("$"):
        raise _path_error(path, "does not start at the root '$'")
    segments: list[Segment] = []
    i, n = 1, len(path)
    while i < n:
        if len(segments) == MAX_DEPTH:
            raise _path_error(path, f"deeper than {MAX_DEPTH:,} levels, the most tool arguments may nest")
        char = path[i]
        if char == ".":
            start = i = i + 1
            while i < n and path[i] not in ".[":
                i += 1
            if i == start:
                raise _path_error(path, f"an empty member name at {start}")
            segments.append(path[start:i])
        elif char == "[" and i + 1 < n and path[i + 1] in "'\"":
            name, i = _quoted(path, i + 1)
            if i >= n or path[i] != "]":
                raise _path_error(path, f"expected ']' at {i}")
            segments.append(name)
            i += 1
        elif char == "[":
            start = i = i + 1
            while i < n and path[i].isascii() and path[i].isdigit():
                i += 1
            digits = path[start:i]
            if i >= n or path[i] != "]" or not digits or (len(digits) > 1 and digits[0] == "0") or len(digits) > 15:
                raise _path_error(path, f"expected an array index and ']' at {start}")
            segments.append(int(digits))
            i += 1
        else:
            raise _path_error(path, f"unexpected {char!r} at {i}")
    return segments


def _quoted(path: str, i: int) -> tuple[str, int]:
    """A quoted member name starting at ``path[i]`` (its quote): the name, and where it ends (after the quote)."""
    quote = path[i]
    out: list[str] = []
    i += 1
    n = len(path)
    while i < n:
        char = path[i]
        if char == quote:
            return "".join(out), i + 1
        if char != "\\":
            out.append(char)
            i += 1
            continue
        escape = path[i + 1] if i + 1 < n else ""
        if escape == "u":
            code = path[i + 2 : i + 6]
            if len(code) != 4 or not all(c in "0123456789abcdefABCDEF" for c in code):
                raise _path_error(path, f"a bad \\u escape at {i}")
            out.append(chr(int(code, 16)))
            i += 6
        elif escape in _ESCAPES:
            out.append(_ESCAPES[escape])
            i += 2
        else:
            raise _path_error(path, f"a bad escape at {i}")
    raise _path_error(path, "a quoted name is not closed")


def _string(text: str) -> str:
    """``text`` as a JSON string (a lone surrogate, which UTF-8 cannot carry, as its ``\\u`` escape)."""
    try:
        return orjson.dumps(text).decode()
    except orjson.JSONEncodeError:
        return json.dumps(text)


def json_number(value: object, what: str) -> str:
    """A number as JSON text: an integral value (``3``, or ``3.0`` as a double) as an integer, so that the same
    argument gives the same text whether it came as JSON or through an SDK's ``float``. NaN and infinities are
    refused: they are not JSON."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise malformed(f"{what} must be a number, got {type(value).__name__}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise malformed(f"{what} must be a finite number, got {quote(value)}")
        if value.is_integer() and abs(value) <= MAX_INT:
            value = int(value)
    elif not -(2**63) <= value < 2**64:  # JSON has no bound, orjson has (a dict parsed by another reader may not)
        try:
            return str(int(value))
        except ValueError as exc:  # more digits than Python writes (4,300)
            raise malformed(f"{what} is an integer of too many digits") from exc
    return orjson.dumps(value).decode()


class _Level:
    """One open container of the arguments: its closing character, the keys it has (an object) or its length."""

    __slots__ = ("closer", "count", "keys")

    def __init__(self, closer: str) -> None:
        self.closer = closer
        self.keys: set[str] = set()
        self.count = 0


class ArgumentWriter:
    """The arguments of one streamed call, written as JSON text one ``PartialArg`` at a time (see the module)."""

    __slots__ = ("levels", "path", "string")

    def __init__(self) -> None:
        self.levels: list[_Level] = []  # the open containers, the root object first (none before the first value)
        self.path: list[Segment] = []  # the path of the innermost open container
        self.string: list[Segment] | None = None  # the path of a string still open (its value goes on)

    def write(self, arg: Mapping[str, Any], get: Any) -> str:
        """The text one ``PartialArg`` adds (``get(arg, "camelName")`` reads its fields in either spelling)."""
        raw_path = get(arg, "jsonPath")
        if not isinstance(raw_path, str):
            raise malformed(f"partialArgs jsonPath must be a string, got {type(raw_path).__name__}")
        going_on = get(arg, "willContinue") is True
        string = get(arg, "stringValue")
        if string is not None and not isinstance(string, str):
            raise malformed(f"partialArgs stringValue must be a string, got {type(string).__name__}")
        segments = parse_path(raw_path)
        out: list[str] = []
        if self.string is not None:
            if string is not None and segments == self.string:  # the open string goes on
                out.append(_string(string)[1:-1])
                if not going_on:
                    out.append('"')
                    self.string = None
                return "".join(out)
            out.append('"')
            self.string = None
        if string is not None:
            literal = _string(string)
            if going_on:
                literal = literal[:-1]
        elif get(arg, "numberValue") is not None:
            literal = json_number(get(arg, "numberValue"), "partialArgs numberValue")
        elif get(arg, "boolValue") is not None:
            flag = get(arg, "boolValue")
            if not isinstance(flag, bool):
                raise malformed(f"partialArgs boolValue must be a boolean, got {type(flag).__name__}")
            literal = "true" if flag else "false"
        elif get(arg, "nullValue") is not None:
            literal = "null"
        else:
            return "".join(out)  # a path with no value: nothing to write
        if not segments:
            raise _path_error(raw_path, "a value for the root: the arguments must be an object")
        if not self.levels:
            if not isinstance(segments[0], str):
                raise _path_error(raw_path, "an array index at the root: the arguments must be an object")
            out.append("{")
            self.levels.append(_Level("}"))
        parent = segments[:-1]
        path = self.path
        shared = 0
        limit = min(len(path), len(parent))
        while shared < limit and path[shared] == parent[shared]:
            shared += 1
        while len(path) > shared:
            out.append(self.levels.pop().closer)
            path.pop()
        for depth in range(shared, len(parent)):
            self._member(out, parent[depth], raw_path)
            opener, closer = ("{", "}") if isinstance(segments[depth + 1], str) else ("[", "]")
            out.append(opener)
            self.levels.append(_Level(closer))
            path.append(parent[depth])
        self._member(out, segments[-1], raw_path)
        out.append(literal)
        if string is not None and going_on:
            self.string = segments
        return "".join(out)

    def _member(self, out: list[str], segment: Segment, raw_path: str) -> None:
        """Write the separator and key of a new member of the innermost open container."""
        level = self.levels[-1]
        if level.closer == "}":
            if not isinstance(segment, str):
                raise _path_error(raw_path, f"array index {segment} inside an object")
            if segment in level.keys:
                raise _path_error(raw_path, f"member {segment[:80]!r} again, after its value was written")
            if level.keys:
                out.append(",")
            level.keys.add(segment)
            out.append(_string(segment))
            out.append(":")
            return
        if not isinstance(segment, int):
            raise _path_error(raw_path, f"member {segment[:80]!r} inside an array")
        if segment != level.count:
            raise _path_error(raw_path, f"array index {segment} where index {level.count} comes next")
        if level.count:
            out.append(",")
        level.count += 1

    def finish(self) -> str:
        """The text that ends the arguments: the open string and containers closed ("" when no value came)."""
        out = ['"'] if self.string is not None else []
        self.string = None
        while self.levels:
            out.append(self.levels.pop().closer)
        self.path.clear()
        return "".join(out)

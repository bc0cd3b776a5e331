"""DeepSeek Harness's packed storage rows (its ``packages/core/session/src/chunk-rows.ts``), decoded.

A session log stores a run of three or more consecutive deltas of one block as one row (``text-chunks``,
``reasoning-chunks``, ``tool-call-chunks``). :func:`expand_row` validates a row exactly as upstream's decoder
does and gives back the deltas it stands for, in order (SPEC §6), one at a time as they are taken.

A row is bounded by its line alone (up to 128 MiB), and parsed whole it costs more than its line: a pointer per
member in each of its two arrays, and an object per member that is not a one-character string (a row of
one-character members parses to 2.4x its line, on top of the line). So a row line longer than
:data:`SCAN_BYTES` is read in place (:func:`scan_row`): its arrays stay spans of the line, checked once for
JSON and counted, and their members are parsed one at a time as they are taken. Memory holds the line and the
member in hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

import orjson

from ._shape import MAX_INT

__all__ = ["ROW_TYPES", "SCAN_BYTES", "MalformedRow", "expand_row", "scan_row"]

#: The packed storage rows of a session log, and the delta type each row's members have.
ROW_TYPES: Final = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}


class MalformedRow(Exception):
    """A packed row that is not exactly upstream's shape (``chunk-rows.ts``'s ``validateRow``)."""


def _is_number(value: object) -> bool:
    """JavaScript's ``typeof value === 'number'`` for a parsed JSON value."""
    return type(value) is int or type(value) is float


def _is_safe_integer(value: object) -> bool:
    """JavaScript's ``Number.isSafeInteger`` for a parsed JSON value (``5.0`` is the integer 5 there)."""
    if type(value) is int:
        return -MAX_INT <= value <= MAX_INT
    return type(value) is float and value.is_integer() and -MAX_INT <= value <= MAX_INT


_ENVELOPE: Final = frozenset({"type", "seq0", "time0", "data"})
_SNAPSHOT_ENVELOPE: Final = frozenset({"type", "data"})
_TEXT_DATA: Final = frozenset({"turn", "step", "index", "dt", "texts"})
_CALL_DATA: Final = frozenset({"turn", "step", "index", "id", "dt", "args"})
_NAMED_CALL_DATA: Final = _CALL_DATA | {"name"}


def expand_row(row: Mapping[str, Any]) -> tuple[Mapping[str, Any], Iterator[dict[str, Any]]]:
    """A packed row's ``data`` and the delta chunks it stands for, validated as upstream validates a row.

    The row is validated whole before this returns; the chunks are made one at a time as they are taken.
    ``row`` is a parsed line, or a line :func:`scan_row` read in place.

    Raises :class:`MalformedRow` with upstream's reason: exact keys, numbers for ``turn``/``step``/
    ``index``, a non-empty string array of members, ``dt`` a safe-integer array one shorter than the
    members, and ``seq0``/``time0`` safe integers whose reconstructed member seqs and times stay safe.
    A row without both ``seq0`` and ``time0`` (envelope exactly ``{type, data}``) is the form upstream's
    snapshot fixtures store, with every line's timing stripped; it is read without the timing checks.
    """
    tag = row["type"]
    envelope = set(row)
    if envelope == _SNAPSHOT_ENVELOPE:
        # Upstream's snapshot fixtures strip every line's timing (``seq``/``time`` of events, ``seq0``/``time0``
        # of rows) to keep snapshots stable; such a row is read without the checks its timing would need.
        seq0 = time0 = None
    elif envelope == _ENVELOPE:
        seq0, time0 = row["seq0"], row["time0"]
        if not _is_safe_integer(seq0) or seq0 < 0:
            raise MalformedRow("seq0 must be a non-negative safe integer")
        if not _is_safe_integer(time0):
            raise MalformedRow("time0 must be a safe integer")
    else:
        raise MalformedRow("envelope must be exactly {type, seq0, time0, data} (or {type, data}, as in a snapshot)")
    data = row["data"]
    if not isinstance(data, dict):
        raise MalformedRow("data must be an object")
    keys = set(data)
    if tag == "tool-call-chunks":
        named = keys == _NAMED_CALL_DATA
        if not named and keys != _CALL_DATA:
            raise MalformedRow("data must be exactly {turn, step, index, id, name?, dt, args}")
        if type(data["id"]) is not str or (named and type(data["name"]) is not str):
            raise MalformedRow("id (and name when present) must be strings")
        payload_key = "args"
    else:
        if keys != _TEXT_DATA:
            raise MalformedRow("data must be exactly {turn, step, index, dt, texts}")
        payload_key = "texts"
    if not (_is_number(data["turn"]) and _is_number(data["step"]) and _is_number(data["index"])):
        raise MalformedRow("turn/step/index must be numbers")
    payload = data[payload_key]
    if not _is_array(payload) or not payload or any(type(m) is not str for m in payload):
        raise MalformedRow(f"{payload_key} must be a non-empty string array")
    dt = data["dt"]
    if not _is_array(dt) or not all(_is_safe_integer(gap) for gap in dt):
        raise MalformedRow("dt must be an array of safe integers")
    if len(dt) != len(payload) - 1:
        raise MalformedRow(f"dt length {len(dt)} does not match {len(payload)} members")
    if seq0 is not None and not _is_safe_integer(seq0 + len(payload) - 1):
        raise MalformedRow("member seqs must stay safe integers")
    if time0 is not None:
        time = time0
        for gap in dt:
            time += gap
            if not _is_safe_integer(time):
                raise MalformedRow("member times must stay safe integers")
    index = data["index"]
    if tag == "tool-call-chunks":
        head: dict[str, Any] = {"type": "tool-call-delta", "index": index, "id": data["id"]}
        if "name" in data:
            head["name"] = data["name"]
        return data, ({**head, "argumentsDelta": member} for member in payload)
    delta = ROW_TYPES[tag]
    return data, ({"type": delta, "index": index, "text": member} for member in payload)


# -- a long row line, read in place -----------------------------------------------------------------------

#: A row line longer than this is read in place (:func:`scan_row`) rather than parsed whole. In place, each
#: member is parsed on its own, at about twice orjson's cost for it in a whole line; a line this short costs a
#: few times its length at most when parsed whole, next to an interpreter of some 30 MiB.
SCAN_BYTES: Final = 64 * 1024

_WS: Final = rb"[ \t\n\r]*+"
# A string, number or literal token as JSON spells it, loosely: orjson parses each one matched, and says whether
# it is JSON (a number's spelling, a string's escapes, control characters and UTF-8). Possessive, so that a long
# token keeps nothing to go back to.
_TOKEN: Final = rb'(?:"(?:[^"\\]++|\\.)*+"|-?[0-9][-+.0-9eE]*+|true|false|null)'
_VALUE: Final = re.compile(_TOKEN, re.DOTALL)
_KEY: Final = re.compile(_WS + rb'("(?:[^"\\]++|\\.)*+")' + _WS + rb":" + _WS, re.DOTALL)
#: One element of an array and what ends it (a comma, or the array's end).
_ELEMENT: Final = re.compile(_WS + rb"(" + _TOKEN + rb")" + _WS + rb"([,\]])", re.DOTALL)
#: Up to 512 elements each followed by a comma: what orjson parses at once, in one array, when it is short.
_RUN: Final = re.compile(rb"(?:" + _WS + _TOKEN + _WS + rb",){1,512}+", re.DOTALL)
_RUN_BYTES: Final = 64 * 1024
_AFTER: Final = re.compile(_WS + rb"([,}])")
_CLOSED: Final = re.compile(_WS + rb"([}\]])")
_BLANK: Final = re.compile(rb"[ \t\n\r]*")


def _skip(raw: bytes, at: int) -> int:
    """Past the JSON whitespace at ``at``."""
    blank = _BLANK.match(raw, at)
    return blank.end() if blank is not None else at


class _NotInPlace(Exception):
    """A line :func:`scan_row` does not read in place: not a row, not of a row's shape, or not JSON."""


class _Array:
    """A JSON array of scalars left in its line: checked and counted once, its elements parsed as they are taken
    (anew each time it is iterated)."""

    __slots__ = ("_count", "_raw", "_start", "end")

    def __init__(self, raw: bytes, start: int) -> None:
        """The array whose ``[`` is just before ``start``; ``end`` is where it ends (past its ``]``).

        Raises :class:`_NotInPlace` if it is not an array of scalars, ``orjson.JSONDecodeError`` if one is not
        JSON.
        """
        self._raw, self._start = raw, start
        count = 0
        closed = _CLOSED.match(raw, start)
        if closed is not None:
            if closed.group(1) != b"]":
                raise _NotInPlace
            end = closed.end()
        else:
            runs = _Runs(raw, start)
            for values in runs:
                count += len(values)
            end = runs.end
        self._count = count
        self.end = end

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Any]:
        for values in _Runs(self._raw, self._start) if self._count else ():
            yield from values


class _Runs:
    """The elements of the array that starts at ``at`` (just past its ``[``; not empty), parsed a run at a time:
    up to 512 short elements in one orjson call, a long one alone. ``end``: past the ``]``, once they are over."""

    __slots__ = ("_at", "_raw", "_stop", "_view", "end")

    def __init__(self, raw: bytes, at: int) -> None:
        self._raw, self._view, self._at = raw, memoryview(raw), at
        self._stop = -1  # within a run of long elements: where it ends
        self.end = -1

    def __iter__(self) -> _Runs:
        return self

    def __next__(self) -> list[Any]:
        raw, at = self._raw, self._at
        if self.end >= 0:
            raise StopIteration
        if at >= self._stop:
            run = _RUN.match(raw, at)
            if run is not None and run.end() - at <= _RUN_BYTES:
                # The run from the "[" or "," before it to its last ",", as one array: one copy of 64 KiB at most.
                batch = bytearray(self._view[at - 1 : run.end()])
                batch[0], batch[-1] = 0x5B, 0x5D
                self._at = run.end()
                values: list[Any] = orjson.loads(batch)
                return values
            self._stop = run.end() if run is not None else -1  # long elements: one at a time to its end
        element = _ELEMENT.match(raw, at)
        if element is None:
            raise _NotInPlace
        self._at = element.end()
        if element.group(2) == b"]":
            self.end = self._at
        return [orjson.loads(self._view[element.start(1) : element.end(1)])]


def _is_array(value: object) -> bool:
    """A JSON array: parsed (a list), or left in its line (:class:`_Array`)."""
    return type(value) is list or type(value) is _Array


def scan_row(raw: bytes) -> dict[str, Any] | None:
    """A packed row's line read in place: parsed as orjson parses it, except that each array in its ``data``
    (``dt``, ``texts``, ``args``) is left in the line, checked for JSON and counted, its members parsed as
    :func:`expand_row` takes them.

    ``None`` for a line read no further than needed to tell: not a packed row, or of a shape a row cannot have
    (an object or array deeper in, which :func:`expand_row` refuses anyway), or not JSON. Such a line is parsed
    whole, which says why it is not JSON, in orjson's words. Whatever this returns, orjson would have parsed.
    """
    view = memoryview(raw)
    try:
        record, end = _object(raw, view, _skip(raw, 0), 0)
    except (_NotInPlace, orjson.JSONDecodeError):
        return None
    if _skip(raw, end) != len(raw) or record.get("type") not in ROW_TYPES:
        return None
    return record


def _object(raw: bytes, view: memoryview, at: int, depth: int) -> tuple[dict[str, Any], int]:
    """The object at ``at``: a row's envelope (``depth`` 0) or its ``data`` (1, whose arrays stay in place)."""
    if raw[at : at + 1] != b"{":
        raise _NotInPlace
    at += 1
    out: dict[str, Any] = {}
    closed = _CLOSED.match(raw, at)
    if closed is not None:
        if closed.group(1) != b"}":
            raise _NotInPlace
        return out, closed.end()
    while True:
        m = _KEY.match(raw, at)
        if m is None:
            raise _NotInPlace
        key = orjson.loads(view[m.start(1) : m.end(1)])
        at = m.end()
        first = raw[at : at + 1]
        value: Any
        if first == b"{" and depth == 0:
            value, at = _object(raw, view, at, 1)
        elif first == b"[" and depth == 1:
            value = _Array(raw, at + 1)
            at = value.end
        else:
            token = _VALUE.match(raw, at)
            if token is None:
                raise _NotInPlace  # an object or array anywhere else: no row's shape
            value = orjson.loads(view[at : token.end()])
            at = token.end()
        out[key] = value
        after = _AFTER.match(raw, at)
        if after is None:
            raise _NotInPlace
        at = after.end()
        if after.group(1) == b"}":
            return out, at

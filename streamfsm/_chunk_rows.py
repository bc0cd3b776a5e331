"""DeepSeek Harness's packed storage rows (its ``packages/core/session/src/chunk-rows.ts``), decoded.

A session log stores a run of three or more consecutive deltas of one block as one row (``text-chunks``,
``reasoning-chunks``, ``tool-call-chunks``). :func:`expand_row` validates a row exactly as upstream's decoder
does and gives back the deltas it stands for, in order (SPEC §6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._shape import MAX_INT

__all__ = ["ROW_TYPES", "MalformedRow", "expand_row"]

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


def expand_row(row: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[dict[str, Any]]]:
    """A packed row's ``data`` and the delta chunks it stands for, validated as upstream validates a row.

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
    if type(payload) is not list or not payload or any(type(m) is not str for m in payload):
        raise MalformedRow(f"{payload_key} must be a non-empty string array")
    dt = data["dt"]
    if type(dt) is not list or not all(_is_safe_integer(gap) for gap in dt):
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
        return data, [{**head, "argumentsDelta": member} for member in payload]
    delta = ROW_TYPES[tag]
    return data, [{"type": delta, "index": index, "text": member} for member in payload]

"""Provider constructs the block protocol has no word for, kept verbatim for replay.

A provider's turn may hold more than text, reasoning and client tool calls: server-tool calls and their
results, MCP calls, compaction, fallback notices, citations, encrypted or redacted reasoning. streamfsm never
rejects a stream for them. A converter keeps each such item *verbatim*, in order, in the finish's
``replayState`` under the key ``"kept"``: a list of ``{"type": str, "at": int, "data": {...}}``, where ``at``
is how many protocol blocks of the turn came before the item, so that the adapter can put it back where it
was when it sends the turn back (``AssistantMessage.from_result(...)`` carries the replay state to the adapter
of the same wire API, whose request builder places the items with :func:`by_position`). An item that
annotates a protocol block rather than standing between two (``citations`` of a text block) has the ``at``
of that block, and comes after every item that stood before the block.

The ``replayState`` stays adapter-private: a converter may keep more under other keys (a thinking block's
signature, the provider's response id). Only ``"kept"`` has this shared form, so that users
(:attr:`StreamResult.kept`, :func:`kept_blocks`) and the command (:func:`describe_kept`) can see what was kept,
whatever the provider.

Bound: a turn keeps at most :data:`MAX_KEPT_CHARS` characters (of the kept items' JSON text, and of the
signatures a converter keeps under its other keys: Anthropic's, Bedrock's and Gemini's thought signatures,
counted as they come, in O(1) per delta); past it the converter raises ``LIMIT_EXCEEDED``. Every converter
counts through one :class:`Keeper` per turn: what it keeps whole is counted by :meth:`Keeper.keep`, what comes
in pieces by :meth:`Keeper.charge` as each comes. The protocol blocks have the machine's
:class:`~streamfsm.Limits`; kept items do not pass through the machine until the finish.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .._errors import ErrorCode, LlmError
from .._models import KeptBlock, kept_blocks

__all__ = ["MAX_KEPT_CHARS", "Keeper", "KeptBlock", "by_position", "describe_kept", "json_size", "kept_blocks"]

#: The most characters of JSON text one turn may keep for replay (64 Mi): far above any real turn (a web search
#: result with its encrypted content is some tens of kilobytes), a bound on what a hostile stream can make us hold.
MAX_KEPT_CHARS = 64 * 1024 * 1024

#: How many distinct types :func:`describe_kept` names before it says how many more there are, and the most
#: characters of a type's name it shows (the names are the provider's).
_NAMED = 8
_LONGEST = 60


def _as_base64(value: object) -> str:
    """Bytes (an SDK's blobs, as boto3 gives them) as the base64 text they are kept as."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def json_size(value: object, what: str, *, blobs: bool = False) -> int:
    """The length of ``value`` as JSON text (what keeping it costs); ``MALFORMED_RESPONSE`` if it is not JSON data.
    With ``blobs``, bytes count as the base64 text they are kept as (Bedrock's, from boto3)."""
    try:
        return len(orjson.dumps(value, default=_as_base64 if blobs else None))
    except (orjson.JSONEncodeError, TypeError) as exc:
        raise LlmError(f"{what} is not JSON data: {exc}", ErrorCode.MALFORMED_RESPONSE) from exc


class Keeper:
    """Collects the items of one turn a converter keeps, in order, within :data:`MAX_KEPT_CHARS` (module docstring)."""

    __slots__ = ("items", "limit", "size")

    def __init__(self, limit: int | None = None) -> None:
        self.items: list[dict[str, Any]] = []
        self.limit = MAX_KEPT_CHARS if limit is None else limit
        self.size = 0

    def charge(self, chars: int) -> None:
        """Count ``chars`` more characters kept; ``LIMIT_EXCEEDED`` once the turn keeps more than the limit."""
        self.size += chars
        if self.size > self.limit:
            raise LlmError(
                f"the provider sent more than {self.limit:,} characters of items to keep for replay in one turn",
                ErrorCode.LIMIT_EXCEEDED,
            )

    def keep(self, kind: str, at: int, item: Mapping[str, Any], *, charged: bool = False) -> None:
        """Keep ``item`` (a provider's JSON object, copied) of type ``kind``, after ``at`` protocol blocks.

        Its size is charged (:meth:`charge`) here, unless ``charged``: the caller charged it as its pieces came.
        """
        if not charged:
            self.charge(json_size(item, f"a kept {kind!r} item"))
        self.items.append({"type": kind, "at": at, "data": dict(item)})

    def state(self, **more: Any) -> dict[str, Any] | None:
        """The finish's ``replayState``: ``{**more, "kept": [...]}``, or None when there is nothing to keep.

        A ``more`` value of None is left out; ``"kept"`` is there only when an item was kept.
        """
        extra = {key: value for key, value in more.items() if value is not None}
        if not self.items and not extra:
            return None
        return {**extra, "kept": list(self.items)} if self.items else extra


def by_position(kept: Sequence[KeptBlock], count: int) -> list[list[KeptBlock]]:
    """Kept items by place, for a request builder sending a turn of ``count`` blocks back: entry ``i`` (for ``i <
    count``) holds, in order, the items that came before block ``i`` (and ``citations`` of block ``i``); entry
    ``count``, those after the last block. An ``at`` past the end (a turn whose blocks were edited) goes last."""
    slots: list[list[KeptBlock]] = [[] for _ in range(count + 1)]
    for item in kept:
        slots[min(item.at, count)].append(item)
    return slots


def describe_kept(kept: Sequence[KeptBlock | str]) -> str:
    """One line saying what a turn kept for replay, for people: ``""`` when nothing was kept, else e.g.
    ``3 provider blocks kept for replay: server_tool_use, web_search_tool_result, compaction``.

    ``kept`` is :attr:`StreamResult.kept` (or the items' types alone, as the command's reports hold them). Types
    are named in the order they first came, a repeated one once with its count (``citations (12)``); past eight
    types the rest are counted (``… and 3 more types``) and a name is cut at 60 characters, so the line stays
    short whatever the turn.
    """
    if not kept:
        return ""
    counts: dict[str, int] = {}
    for item in kept:
        kind = item if isinstance(item, str) else item.type
        counts[kind] = counts.get(kind, 0) + 1
    names = []
    for name, n in list(counts.items())[:_NAMED]:
        shown = name if len(name) <= _LONGEST else f"{name[:_LONGEST]}…"
        names.append(shown if n == 1 else f"{shown} ({n})")
    if len(counts) > _NAMED:
        names.append(f"… and {len(counts) - _NAMED} more types")
    noun = "block" if len(kept) == 1 else "blocks"
    return f"{len(kept)} provider {noun} kept for replay: {', '.join(names)}"

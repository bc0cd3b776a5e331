"""One safe, bounded ``repr`` for every message that quotes input.

A message that quotes what a stream, a provider or a recording sent must not fail, and must not grow with it:
``repr`` of a JSON value nested a thousand levels (orjson reads 1,024) raises ``RecursionError``, ``repr`` of an
integer of more than 4,300 digits raises ``ValueError``, an object's ``__repr__`` may raise anything, and the
``repr`` of a 16 MiB string is 16 MiB. :func:`quote` writes what ``repr`` writes, as far as ``limit`` characters,
walking containers without recursion and stopping there: its cost is bounded by ``limit``, not by the value.

While an HTTP adapter's request runs, its secrets are replaced before the cut (:data:`REDACTION`, set by
``_providers/secrets.py``): a cut must not keep part of a key, which no redaction after it could recognise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Final

__all__ = ["QUOTE_MAX", "REDACTION", "quote", "redact_active"]

#: The redaction of the request under way, if any: a function replacing its secrets in a text, and the length of
#: the longest form of them (how far past a cut a secret that the cut would split may reach).
REDACTION: ContextVar[tuple[Callable[[str], str], int] | None] = ContextVar("streamfsm_redaction", default=None)


def redact_active(text: str) -> str:
    """``text`` with the secrets of the request under way replaced (as it is when there is none)."""
    active = REDACTION.get()
    return text if active is None else active[0](text)


#: How much of a value a message quotes by default.
QUOTE_MAX: Final = 80
#: An integer of more bits than this is named by its size: its digits would be cut anyway, and converting a
#: long one costs time (and past 4,300 digits raises).
_INT_BITS: Final = 4096


def quote(value: object, limit: int = QUOTE_MAX) -> str:
    """``value`` as ``repr`` writes it, cut to ``limit`` characters (``…`` marks the cut). Never raises.

    A string, bytes, number or literal is ``repr``'s; a dict, list or tuple is written item by item (without
    recursion: any depth) until ``limit`` is passed; an integer past 4,096 bits is ``<int of N bits>``; any other
    object is its ``repr``, or ``<TypeName>`` if that raises.
    """
    active = REDACTION.get()
    room = limit if active is None else limit + active[1]  # a secret across the cut is written whole, then replaced
    pieces: list[str] = []
    size = 0
    for piece in _pieces(value, room):
        pieces.append(piece)
        size += len(piece)
        if size > room:
            break
    text = "".join(pieces)
    if active is not None:
        text = active[0](text)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "\u2026"


def _leaf(value: object, limit: int) -> str:
    """The ``repr`` of a value that is not a container, its cost bounded by ``limit`` where the value is long."""
    try:
        if isinstance(value, str):
            return repr(str.__getitem__(value, slice(0, limit + 1)))
        if isinstance(value, (bytes, bytearray)):
            return repr(bytes(value[: limit + 1]))
        if isinstance(value, int) and not isinstance(value, bool) and int.bit_length(value) > _INT_BITS:
            return f"<int of {int.bit_length(value):,} bits>"
        return repr(value)
    except Exception:  # a hostile __repr__ (or a deep object's): the message is still written
        return f"<{type(value).__name__}>"


def _pieces(value: object, limit: int) -> Iterator[str]:
    """The text of ``quote(value)`` in pieces, each container open on a stack of its remaining items."""
    # Each open container: its remaining items (pairs for a dict), whether it is a dict, and what closes it.
    stack: list[tuple[Iterator[Any], bool, str]] = []
    first = True
    while True:
        if isinstance(value, dict):
            yield "{"
            stack.append((iter(dict.items(value)), True, "}"))
            first = True
        elif isinstance(value, (list, tuple)):
            yield "[" if isinstance(value, list) else "("
            closer = "]" if isinstance(value, list) else ("," if tuple.__len__(value) == 1 else "") + ")"
            stack.append(
                (iter(list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)), False, closer)
            )
            first = True
        else:
            yield _leaf(value, limit)
            first = False
        # The next value to write: the next item of the innermost open container, closing the ones that are over.
        while stack:
            items, is_dict, closer = stack[-1]
            item: Any = next(items, _END)
            if item is _END:
                stack.pop()
                yield closer
                first = False
                continue
            if not first:
                yield ", "
            if is_dict:
                key, value = item
                yield _leaf(key, limit) if not isinstance(key, tuple) else quote(key, limit)
                yield ": "
            else:
                value = item
            break
        else:
            return


_END: Final = object()

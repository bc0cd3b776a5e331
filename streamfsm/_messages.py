"""The machine's messages: how a refusal, a note and a quoted value read. Cold code, on plain values only.

Every function here is called once a rule has failed (or a note is made), never for an accepted chunk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._config import Policy
from ._errors import ErrorCode, LlmError
from ._shape import CHUNK_TYPES, short
from ._table import accepts

__all__ = [
    "Note",
    "a",
    "block_name",
    "first_difference",
    "invalid",
    "mismatch",
    "printable_kind",
    "refused",
    "short",
    "type_of",
    "undo",
    "what",
]


def printable_kind(kind: str) -> str:
    """A block type or finish kind for a message: as it is when short and plain, else quoted and cut."""
    plain = len(kind) <= 40 and kind.replace("-", "_").isidentifier()
    return kind if plain else short(kind)


def a(kind: str) -> str:
    """``a text``, ``an image``: a kind with its article, for a message."""
    shown = printable_kind(kind)
    return f"{'an' if shown[:1] in ('a', 'e', 'i', 'o', 'u') else 'a'} {shown}"


def block_name(index: int, type_name: str) -> str:
    """``block 0 (text)``: an open block, for a message."""
    return f"block {index} ({printable_kind(type_name)})"


def first_difference(a: str, b: str) -> int:
    """The first position where ``a`` and ``b`` differ (the shorter one's length if one begins the other)."""
    end = min(len(a), len(b))
    for start in range(0, end, _PIECE):  # whole pieces compared in C; loops over a range end, whatever they hold
        if a[start : start + _PIECE] != b[start : start + _PIECE]:
            for at in range(start, min(start + _PIECE, end)):
                if a[at] != b[at]:
                    return at
            break  # the pieces differ past the shorter one's end
    return end


#: How many characters :func:`first_difference` compares at a time.
_PIECE: Final = 4096


def mismatch(block: str, field: str, got: str, assembled: str, state: str) -> str:
    """``BLOCK_CONTENT_MISMATCH``: a block-end's ``field`` is not what the block's deltas assembled."""
    at = first_difference(got, assembled)
    return (
        f"block-end for {block} carries {field} {short(got)}, but its deltas "
        f"assembled {short(assembled)} (state {state}); they first differ at character {at}: "
        f"{short(got[max(at - 10, 0) : at + 20])} against {short(assembled[max(at - 10, 0) : at + 20])}"
    )


def invalid(chunk: str, field: str, reason: str, state: str, hint: str = "") -> str:
    """``INVALID_CHUNK``: what the shape (``_shape.check``) finds wrong with a ``chunk`` (its type, or ``chunk``)."""
    where = f"field {field!r} " if field else ""
    return f"invalid {chunk}: {where}{reason}{hint} (state {state})"


def what(t: str, c: dict[str, Any]) -> str:
    """A chunk the table refused, for its message: its type and what it is about."""
    if t == "finish":
        return f"finish {printable_kind(c['reason']['kind'])}"
    if t == "usage":
        return "usage"
    if t == "block-start":
        return f"block-start for block {c['index']} ({printable_kind(c['blockType'])})"
    return f"{t} for block {c['index']}"


def listed(open_blocks: list[tuple[int, str]]) -> str:
    """Open blocks (index, type name), for a message: ``block 0 (text), block 1 (tool-call)``."""
    return ", ".join([block_name(index, kind) for index, kind in open_blocks])


def refused(
    code: ErrorCode,
    t: str,
    c: dict[str, Any],
    state: str,
    policy: Policy,
    open_blocks: list[tuple[int, str]],
) -> str:
    """The message of a chunk the table of ``policy`` refused with ``code`` in ``state``, ``open_blocks`` open (see
    ``_table.refusal``)."""
    accepted = accepts(state, policy)
    open_list = listed(open_blocks)
    first_open = open_blocks[0][0] if open_blocks else -1
    chunk = what(t, c)
    if code is ErrorCode.BLOCK_NOT_OPEN:
        return f"{chunk}, but no block is open (state {state}); expected {', '.join(accepted)}"
    if code is ErrorCode.BLOCKS_INTERLEAVED:
        return (
            f"{chunk} while {open_list} is open (state {state}); under policy {policy.value} blocks may not "
            f"interleave: expected block-end for block {first_open} first"
        )
    if code is ErrorCode.CHUNK_AFTER_USAGE:
        return f"{chunk} after usage (state {state}); after usage only finish may come"
    if code is ErrorCode.USAGE_DUPLICATE:
        return f"a second usage (state {state}); a stream carries at most one usage"
    # BLOCK_NOT_CLOSED
    return (
        f"{chunk} while {open_list} is open (state {state}); {a(c['reason']['kind'])} "
        f"finish needs every block ended first (only max-tokens, error and aborted may cut a block off)"
    )


def type_of(chunk: object) -> str:
    """A chunk's type for a message, if it has a known one; else ``chunk``. Never raises."""
    try:
        if isinstance(chunk, Mapping):
            t = chunk.get("type")
            if isinstance(t, str) and t in CHUNK_TYPES:
                return str(t)
    except Exception:
        pass
    return "chunk"


#: What a message of a refusal by the table is made of, kept when a note is made: the chunk's type, what it is about
#: (its index and the like: what :func:`what` reads), and the open blocks (index, type name).
Words = tuple[str, dict[str, Any], list[tuple[int, str]]]


class Note:
    """One entry of ``StreamAssembler.notes``: the error STRICT would have raised at the first chunk that broke a
    rule the policy accepted, and how many accepted chunks broke it.

    It holds what that error holds (its code, message, position, and the state the chunk met; ``expected`` is what
    that state accepts under STRICT), the count, and ``last``, the position of the last chunk that counted it: a
    chunk counts a note once, and a chunk that then fails takes its count back (:func:`undo`). The error is made
    when it is first read: a check that never reads the notes does not pay for one. So is the message of a chunk
    STRICT's table refuses (``words``: the chunk's type, what it is about, and the blocks open when it came).
    """

    __slots__ = ("_error", "_message", "_words", "code", "count", "last", "position", "state")

    def __init__(self, code: ErrorCode, message: str, position: int, state: str, words: Words | None = None) -> None:
        self.code = code
        self._message = message
        self._words = words
        self.position = position
        self.state = state
        self.count = 1
        self.last = position
        self._error: LlmError | None = None

    @property
    def message(self) -> str:
        """STRICT's message for the first such chunk."""
        words = self._words
        if words is not None:
            t, about, open_blocks = words
            self._message = refused(self.code, t, about, self.state, Policy.STRICT, open_blocks)
            self._words = None
        return self._message

    @property
    def error(self) -> LlmError:
        """The error STRICT would have raised at the first such chunk."""
        if self._error is None:
            expected = accepts(self.state, Policy.STRICT)
            self._error = LlmError(
                self.message, self.code, chunk_index=self.position, state=self.state, expected=expected
            )
        return self._error


def undo(notes: dict[ErrorCode, Note], n: int) -> None:
    """Chunk ``n`` failed: the notes it counted take their count back, and those it made are dropped."""
    for code, note in list(notes.items()):
        if note.last == n:
            if note.position == n:
                del notes[code]
            else:
                note.count -= 1

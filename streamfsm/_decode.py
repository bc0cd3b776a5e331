"""JSON lines decoded a slice of a blob at a time by msgspec (the ``fast`` extra), with orjson's verdicts.

``sf.validate_jsonl`` and ``sf.assemble_jsonl`` parse each line with orjson. With msgspec installed, a bytes
blob is decoded instead a slice of whole lines at a time (:func:`~streamfsm._lines.blob_slices`) by one call
of ``msgspec.json.Decoder.decode_lines``: no line is split out, no Python runs for a line before the machine
takes its chunk. The chunks and the verdicts are orjson's. Where the two parsers differ, the slice goes to
orjson line by line, as it would without msgspec:

- a slice whose lines are not each one object, ``{`` to ``}`` (:func:`_one_object_a_line`: msgspec reads two
  values on one line, or one across two, where orjson refuses the line; CRLF line ends and blank lines, too);
- a slice msgspec refuses (a line that is not JSON, of JSON whitespace other than orjson's, nested past the
  interpreter's recursion limit): orjson tells which line and why, at its position in the stream;
- an integer past orjson's range (below ``-2**63`` or above ``2**64 - 1``: orjson makes it a float, msgspec an
  exact ``int``): told before the slice is decoded by 19 digits in a row anywhere in it (one translation and one
  search, in C; 19 digits in a string send a slice to orjson too, at no cost but speed);
- nesting deeper than orjson's 1,024 levels, which orjson refuses: msgspec stops at the interpreter's recursion
  limit, so the slices go to msgspec only where that limit is within 1,024 levels (:func:`usable`).

Text (``str``) and other sources are read by orjson, a line at a time.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import suppress
from importlib import import_module
from typing import Any, Final, TypeGuard

import orjson

from ._blocks import JSON_KEYS, LITERAL_KEYS, Keys
from ._lines import blob_slices, lines_of

__all__ = ["KEYS", "decoded_slices", "usable"]

# Imported by name: mypy checks this module with or without msgspec installed (it is typed Any here).
_refused: tuple[type[BaseException], ...] = (RecursionError,)
try:
    _msgspec = import_module("msgspec")
    _decode_lines: Any = import_module("msgspec.json").Decoder().decode_lines
    _refused = (_msgspec.MsgspecError, RecursionError)
except ImportError:  # the fast extra is not installed
    _decode_lines = None


def _keys_of(decode_lines: Any) -> Keys:
    """The delta's keys as msgspec makes them (one object per key, from its key cache): the machine looks the keys of
    the chunks it decodes up with these, found by identity (``Keys``)."""
    k = LITERAL_KEYS
    (decoded,) = decode_lines(orjson.dumps(dict.fromkeys((k.type, k.index, k.text, k.arguments, k.id, k.name), 0)))
    return Keys(decoded)


#: The keys the machine reads of a chunk msgspec decoded (orjson's where msgspec is not installed).
KEYS: Final = _keys_of(_decode_lines) if _decode_lines is not None else JSON_KEYS

#: Every byte to a space but the digits, which become ``0``: a number of 19 digits is then 19 ``0`` in a row.
_DIGITS: Final = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
#: The fewest digits of an integer orjson reads as a float (``-2**63 - 1`` has 19, ``2**64`` has 20).
_LONG_NUMBER: Final = b"0" * 19
_LF: Final = ord("\n")
_OPEN: Final = ord("{")
_CLOSE: Final = ord("}")
#: The deepest nesting orjson reads.
_ORJSON_DEPTH: Final = 1024


def _bounded_by_recursion() -> bool:
    """Whether msgspec refuses nesting deeper than orjson's anywhere in this interpreter: it counts its depth
    against the recursion limit, which a Python before 3.12 sets with ``sys.setrecursionlimit``, and 3.12 and
    later fixes for C code when it is built (probed once, at the top of the stack, where the most is left)."""
    if sys.version_info < (3, 12):
        return True  # read at each call (usable): the limit may change
    deep = b"[" * (_ORJSON_DEPTH + 1) + b"]" * (_ORJSON_DEPTH + 1)
    try:
        _decode_lines(deep)
    except RecursionError:
        return True
    return False


_DEPTH_BOUNDED: Final = _decode_lines is not None and _bounded_by_recursion()


def usable(source: object) -> TypeGuard[bytes]:
    """Whether ``source`` is decoded by msgspec: a bytes blob, with msgspec installed and bounded in depth."""
    if type(source) is not bytes or not _DEPTH_BOUNDED:
        return False
    return sys.version_info >= (3, 12) or sys.getrecursionlimit() <= _ORJSON_DEPTH


def decoded_slices(blob: bytes) -> Iterator[tuple[list[Any] | None, list[bytes] | None]]:
    """The blob a slice of whole lines at a time: ``(its chunks, None)`` as msgspec decoded them, or ``(None, its
    lines)`` for orjson to read one by one, where msgspec's reading could differ from orjson's (module docstring).

    Only :func:`usable` blobs: the depth rule is read there.
    """
    decode = _decode_lines
    for piece in blob_slices(blob):
        chunks = None
        if _one_object_a_line(piece) and _LONG_NUMBER not in piece.translate(_DIGITS):
            with suppress(*_refused):  # orjson says which line, and why
                chunks = decode(piece)
            if chunks is not None and len(chunks) != piece.count(b"\n") + (piece[-1] != _LF):
                chunks = None  # a line of two objects (or of none): orjson refuses it
        yield (chunks, None) if chunks is not None else (None, lines_of(piece))


def _one_object_a_line(piece: bytes) -> bool:
    """Whether every line of ``piece`` starts with ``{`` and ends with ``}`` (no blank line, no whitespace around).

    msgspec's ``decode_lines`` reads values one after another, whitespace between them, LF or not: two objects on
    one line, or one across two lines, are JSON lines to it and not to orjson. Where every line starts with ``{``
    and ends with ``}``, a line ends where an object does (a string holds no LF, and ``{`` cannot follow an object
    inside another), so each line holds whole objects: as many objects as lines is one a line.
    """
    if not piece or piece[0] != _OPEN:
        return False
    ends = piece.count(b"\n")
    last = piece[-1] == _LF
    return piece[-2 if last else -1] == _CLOSE and piece.count(b"}\n") == ends and piece.count(b"\n{") == ends - last

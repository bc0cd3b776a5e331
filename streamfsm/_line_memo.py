"""The shape of the last delta line: a line that repeats it up to its text is parsed in its text alone.

A stream's deltas come in runs: the same chunk type, index, id and name, line after line, only the text differs.
:class:`LineMemo` keeps the last delta chunk a line gave, when its fields are each a str or an int and the last is
its text, and the line's bytes before the text (the *prefix*). The text is found in the line by its JSON, written
as orjson writes a string, followed by the closing ``}``: no other string token ends there with the same value (a
quote inside a string is escaped, so the string that ends the line starts at that quote and no earlier), so the
prefix is the line up to its last value. A line of bytes that starts with the prefix and ends with ``}`` is then
that chunk with another text: the rest of the line between them is parsed alone, by the same parser, and must be
one JSON string (whitespace around it allowed, as in the object). The chunk is the kept chunk's copy with that
string as its text: the values, and the order of keys, that a parse of the whole line gives, because a parser
reads the prefix alike and then a string value and the end of the object. Anything else (another shape, a value
that is no string, a line that is no JSON) is parsed whole, as without the memo: the memo decides no verdict, it
only reads.

Bytes only: a line of text (``str``) is always parsed whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

#: The kept chunk before one is learned (never read: there is no prefix yet). Shared: a memo a stream costs less.
_NOTHING: Final[dict[str, Any]] = {}


class LineMemo:
    """The last delta chunk learned (:meth:`learn`) and its prefix: what :meth:`chunk` reads a line with."""

    __slots__ = ("_chunk", "_key", "_prefix")

    def __init__(self) -> None:
        self._prefix: bytes | None = None
        self._chunk: dict[str, Any] = _NOTHING  # read only once a prefix is kept
        self._key = ""

    def chunk(self, line: bytes, loads: Callable[[Any], Any]) -> dict[str, Any] | None:
        """The chunk of ``line`` if it repeats the learned shape, its text parsed alone by ``loads``; else None."""
        prefix = self._prefix
        if prefix is None or not line.startswith(prefix) or not line.endswith(b"}"):
            return None
        try:
            text = loads(line[len(prefix) : -1])
        except Exception:
            return None
        if type(text) is not str:
            return None
        chunk = self._chunk.copy()
        chunk[self._key] = text
        return chunk

    def learn(self, chunk: dict[str, Any], line: bytes) -> None:
        """Keep the shape of ``chunk``, parsed from ``line``, if it has one to keep: its fields each a str or an int,
        its last a str (its text) that ends the line as orjson writes it, before the closing brace. A chunk of
        another shape forgets the last one."""
        self._prefix = None
        last: Any = None
        value: Any = None
        for key, value in chunk.items():
            if type(value) is not str and type(value) is not int:
                return
            last = key
        if type(value) is not str:
            return
        try:
            written = orjson.dumps(value)  # a lone surrogate: no shape
        except orjson.JSONEncodeError:
            return
        size = len(line) - len(written) - 1
        if size <= 0 or line[-1] != 125 or not line.endswith(written, 0, len(line) - 1):  # 125: "}"
            return
        # The line is its prefix, the text as a JSON string, and "}": the text is the line's last value, and a
        # line that starts with the same prefix is this chunk with the string after it as its text.
        self._chunk = chunk.copy()  # the caller's chunk is the caller's to change
        self._key = last
        self._prefix = line[:size]

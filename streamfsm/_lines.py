"""Lines: the one rule by which every reader of the package splits a source into lines, and the bound on a line.

- **Line ends.** JSON lines and session logs are split at LF; a CR before it is JSON whitespace.
- **Blank lines** (:data:`BLANK` only) carry no chunk; the readers skip them.
- **Byte order mark.** A UTF-8 BOM at the very start of a source (``EF BB BF``, or U+FEFF in text) is
  skipped; anywhere else it is content.
- **The bound.** No line is held past :data:`MAX_LINE_BYTES`: a device or a file with no line ends is refused
  (:class:`LineTooLong`), never read until memory runs out.

Files are read a block at a time and split in C (:func:`bounded_lines`); a blob in memory a slice at a time
(:func:`line_batches`); :func:`iter_lines` gives the lines of any JSON-lines source for the machine.
:class:`Lines` reads a source's first lines ahead (to tell its format) and gives them back in order;
:class:`Numbered` numbers the lines that hold content.
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any, Final

__all__ = [
    "BLANK",
    "BOM",
    "MAX_LINE_BYTES",
    "LineTooLong",
    "Lines",
    "Numbered",
    "bounded_lines",
    "iter_lines",
    "line_batches",
    "not_json",
    "without_bom",
]

#: JSON whitespace: a line of these only is blank.
BLANK: Final = b" \t\r\n"
#: The UTF-8 byte order mark.
BOM: Final = codecs.BOM_UTF8


#: The longest line a recording may hold, its LF included: twice ``Limits().max_block_bytes`` (64 MiB), room
#: for the ``block-end`` of a block at the default limit with its text JSON-escaped. Counted in bytes
#: (characters for a text file object).
MAX_LINE_BYTES: Final = 128 * 1024 * 1024
#: How much of a binary file is asked for at a time (``read1``: what is there, as it comes).
_BLOCK_BYTES: Final = 64 * 1024


def not_json(exc: ValueError) -> str:
    """Why a line is not JSON (``exc``: orjson's ``JSONDecodeError`` for it), the position a column of that line.

    orjson counts a line's own LF as the start of a second line: of a line cut short it says ``unexpected end of
    data: line 2 column 1 (char 31)``, where the line has one line and 30 characters. The column here is the
    line's, 1-based, in characters; a position past the line's last character that is not JSON whitespace is its
    end (``unexpected end of data at the end of the line, column 31``).
    """
    msg, pos, doc = getattr(exc, "msg", None), getattr(exc, "pos", None), getattr(exc, "doc", None)
    if not (isinstance(msg, str) and isinstance(pos, int) and isinstance(doc, str)):
        return str(exc)
    if not doc:  # no text to point into: the bytes are not UTF-8 (orjson says "str is not valid UTF-8: ...")
        return "not valid UTF-8" if "UTF-8" in msg else msg
    doc = doc.rstrip(" \t\r\n")  # the line's end, and the JSON whitespace before it
    pos = min(pos, len(doc))
    start = doc.rfind("\n", 0, pos) + 1
    end = doc.find("\n", start)
    line = doc[start : len(doc) if end < 0 else end].rstrip(" \t\r")
    if pos - start >= len(line):
        return f"{msg} at the end of the line, column {len(line) + 1}"
    return f"{msg} at column {pos - start + 1}"


class LineTooLong(ValueError):
    """A line of a recording longer than :data:`MAX_LINE_BYTES` (``/dev/zero``, or a file with no line ends)."""


def bounded_lines(handle: Any, limit: int = MAX_LINE_BYTES) -> Iterator[Any]:
    """The lines of a file object, as iterating it gives them, holding at most ``limit`` for one line.

    A longer line raises :class:`LineTooLong` (its 1-based number and the bound in the message) before more
    is read. A binary file is read a block at a time (``read1``, else ``read``) and the complete lines of each
    block are split in C, as iterating the file would (as fast, where ``readline(limit)`` a line at a time
    costs about 3x as much); a text file, whose newline mode says where its lines end, with
    ``readline(limit + 1)``. An object with neither is iterated as it is (an iterable of lines).
    """
    if isinstance(handle, io.TextIOBase) or isinstance(getattr(handle, "encoding", None), str):
        number = 0
        while line := handle.readline(limit + 1):
            number += 1
            if len(line) > limit:
                raise _too_long(number, limit)
            yield line
        return
    read = getattr(handle, "read1", None) or getattr(handle, "read", None)
    if read is None:
        yield from handle
        return
    size = min(_BLOCK_BYTES, limit)  # a line within one block is within the bound
    # The start of a line whose end has not come yet, gathered in one growing buffer: its getvalue() is the
    # line itself (no copy), so a long line is held once, not as pieces and then again joined.
    start: io.BytesIO | None = None
    held = number = 0  # its length; the lines ended so far
    while block := read(size):
        if start is not None:  # a line began in an earlier block: it ends in this one, or goes on
            first = block.find(b"\n")
            if held + (first + 1 if first >= 0 else len(block)) > limit:
                raise _too_long(number + 1, limit)
            if first < 0:
                start.write(block)
                held += len(block)
                continue
            start.write(memoryview(block)[: first + 1])
            line = start.getvalue()
            start, held = None, 0
            number += 1
            yield line
            del line
            block = block[first + 1 :]
        end = block.rfind(b"\n")
        if end < 0:
            if block:
                start, held = _buffer(block), len(block)
            continue
        if end + 1 < len(block):
            start, held = _buffer(memoryview(block)[end + 1 :]), len(block) - end - 1
        number += block.count(b"\n", 0, end + 1)
        yield from io.BytesIO(block[: end + 1] if end + 1 < len(block) else block)
    if start is not None:
        yield start.getvalue()


def _buffer(piece: bytes | memoryview) -> io.BytesIO:
    """A buffer that starts with ``piece``, written at its end (``BytesIO(piece)`` would write over it)."""
    buffer = io.BytesIO()
    buffer.write(piece)
    return buffer


def _too_long(number: int, limit: int) -> LineTooLong:
    bound = f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else f"{limit} bytes"
    return LineTooLong(f"line {number} is longer than {bound} (a line with no end?)")


def without_bom(lines: Iterable[Any], bom: Any = BOM) -> Iterator[Any]:
    """``lines`` with the byte order mark removed from the start of the first (bytes, or ``"\ufeff"`` for text)."""
    iterator = iter(lines)
    first = next(iterator, None)
    if first is None:
        return
    yield first[len(bom) :] if first.startswith(bom) else first
    yield from iterator


def _without_any_bom(lines: Iterator[Any]) -> Iterator[Any]:
    """An iterable of lines, bytes or str, with the byte order mark removed from the start of the first."""
    first = next(lines, None)
    if first is None:
        return
    bom = "\ufeff" if isinstance(first, str) else BOM
    if isinstance(first, (bytes, bytearray, str)) and first.startswith(bom):  # type: ignore[arg-type]
        first = first[len(bom) :]
    yield first
    yield from lines


def iter_lines(source: object) -> Iterator[bytes | str]:
    """The lines of a JSON-lines ``source`` for the machine: a bytes or str blob, a file, or an iterable of lines.

    Here a ``str`` is the text itself (``sf.assemble_jsonl`` takes content), split at LF only:
    ``str.splitlines`` would also split inside JSON strings at U+2028 and friends; a blob of a batch or less is
    split at once, a longer one a slice at a time (:func:`line_batches`), each by the same split. The BOM rule
    holds for every source: blobs, files, and the first of an iterable of lines.
    """
    if type(source) is bytes and len(source) <= _BATCH_SIZE and not source.startswith(BOM):
        return iter(_split_rest(source, 0))  # the usual source, a stream's worth of bytes: nothing more to ask
    if isinstance(source, (bytes, str, bytearray, memoryview)):
        blob = source if isinstance(source, (bytes, str)) else bytes(source)
        if len(blob) <= _BATCH_SIZE:  # a stream's worth, usually: its one split, with no generator to run
            return iter(_split_rest(blob, _after_bom(blob)))
        return chain.from_iterable(line_batches(blob))
    if isinstance(source, (io.IOBase, io.TextIOBase)):
        return without_bom(source, "\ufeff" if isinstance(source, io.TextIOBase) else BOM)
    return _without_any_bom(iter(source))  # type: ignore[call-overload]


#: About how many bytes (or characters) of a blob :func:`line_batches` splits at a time.
_BATCH_SIZE: Final = 1 << 18


def _after_bom(blob: bytes | str) -> int:
    """Where a blob's content starts: after its byte order mark, if it starts with one."""
    if isinstance(blob, str):
        return 1 if blob.startswith("\ufeff") else 0
    return len(BOM) if blob.startswith(BOM) else 0


def _split_rest(blob: Any, start: int) -> list[Any]:
    """The lines of ``blob`` from ``start`` to its end, in one split (no copy of a blob from its start)."""
    lines: list[Any] = (blob[start:] if start else blob).split("\n" if isinstance(blob, str) else b"\n")
    if not lines[-1]:
        lines.pop()  # the LF that ends the last line starts no line after it (an empty rest: no line)
    return lines


def line_batches(blob: bytes | str) -> Iterator[list[Any]]:
    """The lines of a JSON-lines blob in memory, split at LF, in lists of about :data:`_BATCH_SIZE` of it.

    Each list is one ``split`` in C of a slice of the blob: never the whole blob at once (a copy of at most a
    batch, or of one line longer than it); the last batch is the rest of the blob, which for a blob of one
    batch or less (a stream's worth, usually) is the blob itself, split with no copy. The BOM rule of
    :func:`iter_lines` holds; a line keeps no LF, a blank line is an empty (or whitespace) string, and a last
    line without an LF is a line.
    """
    newline: Any = "\n" if isinstance(blob, str) else b"\n"
    start = _after_bom(blob)
    end = len(blob)
    while start < end:
        if end - start <= _BATCH_SIZE:  # the rest, in one split
            yield _split_rest(blob, start)
            return
        stop = blob.rfind(newline, start, start + _BATCH_SIZE)
        if stop < 0:  # no LF in reach: one long line (or the last one)
            stop = blob.find(newline, start)
            yield [blob[start : end if stop < 0 else stop]]
        else:
            yield blob[start:stop].split(newline)
        start = end if stop < 0 else stop + 1


class Numbered:
    """``(line number, line)`` of the lines that hold more than JSON whitespace.

    An iterator, not a generator: it keeps no reference to the line it gave (a generator's frame would hold a
    long line while its chunk is checked).
    """

    __slots__ = ("_lines", "_number")

    def __init__(self, lines: Iterable[bytes]) -> None:
        self._lines = iter(lines)
        self._number = 0

    def __iter__(self) -> Numbered:
        return self

    def __next__(self) -> tuple[int, bytes]:
        while True:
            raw = next(self._lines)
            self._number += 1
            # A line with content mostly starts with it: only a line that starts blank is stripped (a copy).
            if raw and (raw[0] not in BLANK or raw.strip(BLANK)):
                return self._number, raw


class Lines:
    """The lines of a source with the first ones read ahead (to tell the format) and given back in order."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._source = lines
        self.ahead: list[bytes] = []

    def peek(self, count: int) -> list[bytes]:
        while len(self.ahead) < count:
            line = next(self._source, None)
            if line is None:
                break
            self.ahead.append(line)
        return self.ahead

    def first_content(self) -> bytes:
        """The first line with more than whitespace (stripped), or ``b""``."""
        i = 0
        while True:
            ahead = self.peek(i + 1)
            if i >= len(ahead):
                return b""
            stripped = ahead[i].strip(BLANK)
            if stripped:
                return stripped
            i += 1

    def __iter__(self) -> Iterator[bytes]:
        ahead, self.ahead = self.ahead, []
        yield from ahead
        yield from self._source

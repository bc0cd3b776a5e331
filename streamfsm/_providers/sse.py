"""Server-sent events, parsed within a bound: the ``text/event-stream`` format of the WHATWG HTML standard.

Sans-IO: :class:`SSEParser` is fed a body's bytes as they arrive and returns the events they complete. As the
standard says: the body is UTF-8 (invalid bytes become U+FFFD) and a byte-order mark at its start is skipped;
lines end at CR, LF or CRLF (a CRLF split between two feeds included); a blank line dispatches the event; a line
starting with ``:`` is a comment; ``field: value`` loses one space after the colon, and a line without a colon is
a field with an empty value; ``data`` lines are joined with LF, ``event`` names the type (``message`` when
none), ``id`` (unless it holds NUL) is kept across events, ``retry`` is taken when it is all ASCII digits; other
fields are ignored; an event with no data is not dispatched.

Unlike a reader that splits lines first, it never holds more than ``max_event_bytes`` of one event: the bytes of
its lines (line ends excluded) and of the line being read together. Passing it raises
``LlmError(LIMIT_EXCEEDED)`` at once, before anything more is buffered. The bound is on memory, not only on
what is counted: an event's ``data`` is kept as the bytes of its values in one buffer (decoded once, at
dispatch), never as one Python object per line, so that an event of many short ``data:`` lines costs its bytes
(a ``str`` per line would cost some 50 bytes more each); and a feed is split into lines :data:`FEED_STEP` bytes
at a time, so that the lines of one large feed (a whole recorded body) are never all made at once.
"""

from __future__ import annotations

from typing import NamedTuple

from .._errors import ErrorCode, LlmError

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "FEED_STEP", "SSEEvent", "SSEParser", "parse_sse"]

#: The default bound on one event (and so on one line): 16 MiB.
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

#: The most bytes of one feed split into lines at once (see the module docstring).
FEED_STEP = 64 * 1024

_MAX_RETRY_DIGITS = 15  # a longer reconnection time is no time (and int() refuses past 4,300 digits)
_LF = 0x0A
_BOM = b"\xef\xbb\xbf"


class SSEEvent(NamedTuple):
    """One dispatched event."""

    data: str
    event: str = "message"
    id: str = ""
    retry: int | None = None
    #: The 1-based line of the body on which the event's first field stands.
    line: int = 0


class SSEParser:
    """Turns the bytes of an event stream into :class:`SSEEvent` s, holding at most ``max_event_bytes`` of one."""

    __slots__ = (
        "_data",
        "_event",
        "_event_bytes",
        "_first",
        "_has_data",
        "_id",
        "_lineno",
        "_max",
        "_out",
        "_partial",
        "_retry",
        "_skip_lf",
        "_start",
    )

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be at least 1, got {max_event_bytes}")
        self._max = max_event_bytes
        self._partial = bytearray()  # the line being read, up to its line end
        self._skip_lf = False  # the last feed ended with CR: an LF first in the next one ends no line
        self._first = True  # the next line is the first of the body (it may start with a byte-order mark)
        self._lineno = 0
        self._event_bytes = 0  # the bytes of the current event's lines so far
        self._data = bytearray()  # the values of the current event's data lines, joined with LF, undecoded
        self._has_data = False  # whether it has a data line (an empty one included)
        self._event = ""
        self._id = ""
        self._retry: int | None = None
        self._start = 0  # the line of the current event's first field, 0 before it has one
        self._out: list[SSEEvent] = []  # the events completed by the current feed

    def feed(self, data: bytes) -> list[SSEEvent]:
        """The events that ``data`` (the next bytes of the body) completes, in order."""
        out = self._out = []
        for start in range(0, len(data), FEED_STEP):
            self._feed(data[start : start + FEED_STEP] if len(data) > FEED_STEP else data)
        return out

    def _feed(self, data: bytes) -> None:
        if self._skip_lf:
            self._skip_lf = False
            if data[0] == _LF:
                data = data[1:]
        if b"\r" in data:  # CRLF, then a lone CR, as LF (a CR at the end: an LF next would be part of it)
            self._skip_lf = data.endswith(b"\r")
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        rest = lines.pop()
        partial = self._partial
        if lines:
            if partial:
                self._check(len(partial) + len(lines[0]))
                lines[0] = bytes(partial) + lines[0]
                partial.clear()
            take = self._take
            for line in lines:
                take(line)
        if rest:
            self._check(len(partial) + len(rest))
            partial += rest

    def end(self, *, complete: bool = False) -> list[SSEEvent]:
        """The body is over: a last line without its line end is still a line.

        The standard drops an event whose blank line never came; ``complete=True`` dispatches it instead (a
        recording whose last event lacks its blank line, as files often do).
        """
        out = self._out = []
        if self._partial:
            line = bytes(self._partial)
            self._partial.clear()
            self._take(line)
        if complete:
            self._take(b"")
        return out

    def _check(self, pending: int) -> None:
        """Refuse a line of ``pending`` bytes that would take the event past the bound."""
        if self._event_bytes + pending > self._max:
            raise LlmError(
                f"a server-sent event is longer than {self._max:,} bytes (max_event_bytes): it was not read further",
                ErrorCode.LIMIT_EXCEEDED,
            )

    def _take(self, raw: bytes) -> None:
        self._lineno += 1
        if self._first and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        self._first = False
        if not raw:
            self._dispatch()
            return
        if raw[0] == 0x3A:  # ":", a comment
            return
        self._check(len(raw))
        self._event_bytes += len(raw)
        if not self._start:
            self._start = self._lineno
        field, colon, value = raw.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            if self._has_data:
                self._data.append(_LF)
            self._data += value
            self._has_data = True
        elif field == b"event":
            self._event = value.decode("utf-8", "replace")
        elif field == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:  # bytes: ASCII digits only
            self._retry = int(value)

    def _dispatch(self) -> None:
        self._first = False
        data, has_data, event, start = self._data, self._has_data, self._event, self._start
        self._data, self._has_data, self._event, self._event_bytes, self._start = bytearray(), False, "", 0, 0
        if has_data:
            # Decoded whole: invalid bytes become U+FFFD as they would line by line (LF ends any sequence).
            text = data.decode("utf-8", "replace")
            del data[:]
            self._out.append(SSEEvent(text, event or "message", self._id, self._retry, start))


def parse_sse(body: bytes, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> list[SSEEvent]:
    """The events of a whole recorded body; the end of the body ends its last event (see :meth:`SSEParser.end`)."""
    parser = SSEParser(max_event_bytes)
    return [*parser.feed(body), *parser.end(complete=True)]

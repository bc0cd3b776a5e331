"""Checking recorded streams: run each stream a recording holds through the machine, and report.

This is the logic behind ``streamfsm check`` and ``streamfsm assemble``, kept apart from the terminal
(``_cli.py`` formats what this returns). Recordings are read by the one reader of recordings
(``_reader.py``: every format, every kind of source, one rule for lines, blank lines and the BOM),
one stream at a time. The converters' own errors (``MALFORMED_RESPONSE``, ``STREAM_CLOSED``,
``EMPTY_RESPONSE``, ...) are reported like protocol errors, where they happened in the stream.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Final, cast

import orjson

from ._config import Policy
from ._errors import ErrorCode, LlmError
from ._lines import BLANK, BOM, LineTooLong, bounded_lines
from ._machine import StreamAssembler, checker
from ._models import StreamResult
from ._quote import quote
from ._reader import scan_recordings
from ._recordings import (
    FORMATS,
    NOT_JSON_SHOWN,
    RecordedChunks,
    RecordedStream,
    RecordingSource,
    UnknownFormat,
)
from ._shape import InvalidLine
from ._sources import STREAM_SUFFIXES, open_binary

__all__ = [
    "FORMATS",
    "STREAM_SUFFIXES",
    "UNSAFE",
    "FileCheck",
    "FileReport",
    "Note",
    "StreamReport",
    "check_file",
    "check_recording",
    "check_source",
    "printable",
    "short",
]

#: How much of a chunk a JSON report carries.
CHUNK_TEXT_MAX: Final = 200
#: JSON whitespace: a line of it only carries nothing.

#: Characters that are never shown as they are: C0 controls, DEL and C1 controls (a recording or a model
#: must not move the cursor, retitle or clear the terminal its text is shown on); the bidirectional
#: controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which reorder what follows them on the
#: line; and the line and paragraph separators. Each is written as Python writes it escaped (``\n``,
#: ``\x1b``, ``\u202e``).
UNSAFE: Final = (
    *range(0x20),
    *range(0x7F, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x2028,
    0x2029,
)
_ESCAPES: Final = {
    **{c: repr(chr(c))[1:-1] for c in UNSAFE},
    # Lone surrogates: a file name that is not UTF-8 holds its bytes as U+DC80-U+DCFF ("surrogateescape"),
    # shown as the bytes they stand for (\xff); any other lone surrogate as \udxxx. None can be encoded.
    **{c: f"\\x{c - 0xDC00:02x}" if 0xDC80 <= c <= 0xDCFF else f"\\u{c:04x}" for c in range(0xD800, 0xE000)},
}
#: The same, keeping line ends and tabs: for text of several lines (a model's answer in the demo).
_ESCAPES_LINES: Final = {c: e for c, e in _ESCAPES.items() if c not in (0x0A, 0x09)}


@dataclass(frozen=True, slots=True)
class Note:
    """Something a stream broke of ``Policy.STRICT`` that its policy accepted: STRICT's code and message."""

    code: str
    chunk_index: int | None
    #: The line of the first such chunk, and its member of a packed row when it was one.
    line: int | None
    member: str | None
    message: str
    #: How many chunks did the same.
    count: int

    def to_json(self) -> dict[str, Any]:
        """The note as a JSON object: its fields, in order."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class StreamReport:
    """The outcome of one recorded stream: what ``check`` prints and ``--json`` serialises (:meth:`to_json`)."""

    path: str
    #: 0-based position of the stream in its file.
    stream: int
    #: Whether the file holds several streams (a session log, a provider recording of several turns), so the name
    #: carries the number.
    numbered: bool
    format: str
    policy: str
    ok: bool
    #: Chunks received (for a converted format: the block-protocol chunks the converter produced).
    chunks: int
    first_line: int | None = None
    last_line: int | None = None
    code: str | None = None
    message: str | None = None
    chunk_index: int | None = None
    #: The line of the offending chunk; for ``STREAM_TRUNCATED`` the line of the last chunk received.
    line: int | None = None
    #: For a chunk a packed row of a session log stood for: which (``member 12 of the text-chunks row``).
    member: str | None = None
    #: The machine's state when the offending chunk came, and the chunk types that state accepts.
    state: str | None = None
    expected: tuple[str, ...] | None = None
    #: The offending chunk (or provider event) as JSON text; for ``STREAM_TRUNCATED`` the last chunk.
    chunk: str | None = None
    blocks: tuple[str, ...] | None = None
    #: ``(id, name)`` of each completed tool call.
    tool_calls: tuple[tuple[str, str], ...] | None = None
    usage: dict[str, Any] | None = None
    finish: dict[str, Any] | None = None
    interrupted: tuple[str, ...] | None = None
    #: The type of each item the turn kept for replay (``StreamResult.kept``), in order.
    kept: tuple[str, ...] | None = None
    turn: Any = None
    step: Any = None
    #: What the stream broke of ``Policy.STRICT`` that its policy accepted (see ``StreamAssembler.notes``).
    notes: tuple[Note, ...] = ()

    @property
    def name(self) -> str:
        """``path`` for a file of one stream, ``path#n`` for the n-th stream of a session log or turn of a provider
        recording of several."""
        return f"{self.path}#{self.stream}" if self.numbered else self.path

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON object, with the same keys for every stream (``null`` where not applicable)."""
        return {
            "path": self.path,
            "stream": self.stream,
            "name": self.name,
            "format": self.format,
            "policy": self.policy,
            "ok": self.ok,
            "code": self.code,
            "message": self.message,
            "chunk_index": self.chunk_index,
            "line": self.line,
            "state": self.state,
            "expected": list(self.expected) if self.expected is not None else None,
            "chunk": short(self.chunk, CHUNK_TEXT_MAX) if self.chunk is not None else None,
            "chunks": self.chunks,
            "lines": [self.first_line, self.last_line] if self.first_line is not None else None,
            "blocks": list(self.blocks) if self.blocks is not None else None,
            "tool_calls": [{"id": i, "name": n} for i, n in self.tool_calls] if self.tool_calls is not None else None,
            "usage": self.usage,
            "finish": self.finish,
            "interrupted": list(self.interrupted) if self.interrupted is not None else None,
            "kept": list(self.kept) if self.kept is not None else None,
            "turn": self.turn,
            "step": self.step,
            "member": self.member,
            "notes": [note.to_json() for note in self.notes],
        }


@dataclass(frozen=True, slots=True)
class FileReport:
    """The outcome of one file: its streams, or why it could not be read (``error``)."""

    path: str
    format: str | None
    streams: list[StreamReport]
    error: str | None = None
    #: The assembled result of each stream (``None`` for a bad one); only when asked for.
    results: list[StreamResult | None] | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON object: ``path``, ``format``, ``error`` and ``streams`` (each stream's
        :meth:`StreamReport.to_json`); the results are not part of it."""
        return {
            "path": self.path,
            "format": self.format,
            "error": self.error,
            "streams": [stream.to_json() for stream in self.streams],
        }


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` safe to show on a terminal: on one line, every character of :data:`UNSAFE` escaped (``\\n``,
    ``\\x1b``, ``\\u202e``), and a lone surrogate (a file name that is not UTF-8) as the byte it stands for
    (``\\xff``). With ``lines``, line ends and tabs are kept (text of several lines).
    """
    return text.translate(_ESCAPES_LINES if lines else _ESCAPES)


def short(text: str, limit: int) -> str:
    """``text`` made :func:`printable` and cut to ``limit`` characters (an ellipsis marks the cut)."""
    text = printable(text)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "\u2026"


# -- checking ---------------------------------------------------------------------------------------


def _chunk_text(chunk: object) -> str:
    if isinstance(chunk, InvalidLine):
        return chunk.text
    try:
        return orjson.dumps(chunk).decode()
    except TypeError:  # not JSON to orjson (nested past 255 levels, an integer past 64 bits): quoted, bounded
        return quote(chunk, CHUNK_TEXT_MAX)


def check_recording(
    recording: RecordedStream | RecordedChunks, policy: Policy | str, *, numbered: bool = False, results: bool = False
) -> tuple[StreamReport, StreamResult | None]:
    """Run one recorded stream through the machine: its report, and with ``results`` its result if it is valid.

    A :class:`RecordedChunks` is checked as it is read: memory holds the chunk in hand and the machine's open
    blocks (``results=False`` keeps no block past its end), never the stream.
    """
    policy = Policy(policy)
    stream = recording if isinstance(recording, RecordedChunks) else _replayed(recording)
    asm = StreamAssembler(policy) if results else checker(policy)
    at: tuple[str, int | None, str | None] | None = None  # the offending chunk's line as written, its number, member
    noted: list[tuple[int | None, str | None]] = []  # the line and member of the chunk each note was made at
    result = None
    feed = asm.feed
    try:
        try:
            for chunk in stream.chunks():
                feed(chunk)
                if asm.note_count != len(noted):
                    noted.append((stream.line, stream.member))
        except LlmError:  # the machine refused the chunk in hand (the reader's errors are stream.failure)
            at = _at(stream)
            raise
        if stream.failure is not None:
            raise stream.failure
        summary = asm.summary()
        if results:
            result = asm.close()
    except LlmError as err:
        if at is None and err is not stream.failure:  # STREAM_TRUNCATED: the last chunk received
            at = _at(stream) if stream.count else None
        stream.drain()  # the stream's chunks after the offending one are read, and counted
        return _bad(stream, policy, err, at, numbered), None
    notes = tuple(
        Note(str(err.code), err.chunk_index, line, member, err.message, count)
        for (err, count), (line, member) in zip(asm.notes, noted, strict=True)
    )
    report = StreamReport(
        ok=True,
        blocks=summary.blocks,
        tool_calls=summary.tool_calls,
        usage=summary.usage.to_wire() if summary.usage is not None else None,
        finish=summary.finish.to_wire(),
        interrupted=summary.interrupted,
        kept=summary.kept,
        notes=notes,
        **_common(stream, policy, numbered),
    )
    return report, result


def _at(stream: RecordedChunks) -> tuple[str, int | None, str | None]:
    """Where the chunk given last came from: its line as written (the chunk as JSON where the reader cannot say,
    as for chunks given in memory), the line's number, and its member of a packed row.

    A line that is not JSON (or a malformed packed row) is quoted as its :class:`InvalidLine` quotes it, by its
    start only: a file that is not a recording is never echoed."""
    last = stream.last
    written = None if isinstance(last, InvalidLine) else stream.written()
    return (written if written is not None else _chunk_text(last)), stream.line, stream.member


def _replayed(recording: RecordedStream) -> RecordedChunks:
    """A stream already in memory, given chunk by chunk as the reader gives one."""
    members = recording.members or [0] * len(recording.chunks)
    stream = RecordedChunks(
        recording.path, recording.number, recording.format, zip(recording.chunks, recording.lines, members, strict=True)
    )
    stream.turn, stream.step = recording.turn, recording.step
    stream.failure, stream.failure_line = recording.failure, recording.failure_line
    stream.failure_text = recording.failure_text
    stream.more = recording.more
    return stream


def _common(stream: RecordedChunks, policy: Policy, numbered: bool) -> dict[str, Any]:
    return {
        "path": stream.path,
        "stream": stream.number,
        # A provider recording of several turns is named as a session log is: stream by stream.
        "numbered": numbered or stream.number > 0 or stream.more,
        "format": stream.format,
        "policy": policy.value,
        "chunks": stream.count,
        "first_line": stream.first_line,
        "last_line": stream.line,
        "turn": stream.turn,
        "step": stream.step,
    }


def _bad(
    stream: RecordedChunks,
    policy: Policy,
    err: LlmError,
    at: tuple[str, int | None, str | None] | None,
    numbered: bool,
) -> StreamReport:
    if err is stream.failure:  # the converter's (or the reader's) error, after every chunk it made
        line, text, state, expected, member = stream.failure_line, stream.failure_text, None, None, None
    else:
        assert err.chunk_index is not None, err
        # The machine's view travels on its error: the state the chunk met, and what that state accepts.
        state, expected = err.state, err.expected
        text, line, member = at if at is not None else (None, None, None)
    return StreamReport(
        ok=False,
        code=str(err.code),
        message=err.message,
        chunk_index=err.chunk_index,
        line=line,
        member=member,
        state=state,
        expected=expected,
        chunk=text,
        **_common(stream, policy, numbered),
    )


def check_source(
    source: RecordingSource,
    fmt: str = "auto",
    policy: Policy | str = Policy.STRICT,
    *,
    name: str | None = None,
    results: bool = False,
) -> FileReport:
    """Check every stream recorded in ``source`` (a path or URL, bytes, or a file object; see ``sf.read_recordings``).

    Streams are read and checked one at a time. A source that cannot be read, or a format that cannot be told,
    is the report's ``error`` (reading an SSE body needs no extra: the SSE parser is streamfsm's own); a source
    that breaks partway (a line past the bound, a cut-off ``.gz``) keeps the reports of the streams before. With
    ``results``, the report keeps each valid stream's :class:`StreamResult`.
    """
    return FileCheck(source, fmt, policy, name=name, results=results).report()


class FileCheck:
    """One source being checked, its streams reported one at a time as they are read: what the command prints
    from, so that its memory does not grow with a file's streams (:func:`check_source` keeps them all).

    Iterate :meth:`streams` once; ``format`` is set once the source has been opened, ``error`` once it is known
    (at the start, or where the source broke off).
    """

    __slots__ = ("_fmt", "_policy", "_results", "_source", "error", "format", "path")

    def __init__(
        self,
        source: RecordingSource,
        fmt: str = "auto",
        policy: Policy | str = Policy.STRICT,
        *,
        name: str | None = None,
        results: bool = False,
    ) -> None:
        self.path = (
            name if name is not None else (source if isinstance(source, str) else str(getattr(source, "name", "-")))
        )
        self._source, self._fmt, self._policy, self._results = source, fmt, Policy(policy), results
        self.format: str | None = None
        self.error: str | None = None

    def streams(self) -> Iterator[tuple[StreamReport, StreamResult | None]]:
        """Each stream's report (and with ``results`` its result if it is valid), as it is checked."""
        try:
            with contextlib.ExitStack() as stack:
                watched = _FirstLine.of(self._source, stack)
                read = cast("RecordingSource", watched) if watched is not None else self._source
                resolved, streams = scan_recordings(read, self._fmt, name=self.path)
                self.format = resolved
                numbered = resolved == "harness-session"
                seen = False
                for stream in streams:
                    seen = True
                    yield check_recording(stream, self._policy, numbered=numbered, results=self._results)
                if numbered and not seen and watched is not None and not watched.header:
                    # Lines that look like a session log's events, but neither its header nor a model turn: no
                    # stream is recognisable, and that is no pass (an empty JSON-lines file is STREAM_TRUNCATED too).
                    yield check_recording(watched.no_stream(self.path), self._policy, numbered=True)
        except UnknownFormat as exc:
            self.error = f"cannot tell the format: {exc}"
        except OSError as exc:
            self.error = f"cannot read: {exc.strerror or exc}"
        except LineTooLong as exc:
            self.error = f"cannot read: {exc}"

    def report(self) -> FileReport:
        """All of it: the :class:`FileReport`."""
        checked = list(self.streams())
        return FileReport(
            self.path,
            self.format if self.error is None else None,
            [report for report, _ in checked],
            self.error,
            results=[result for _, result in checked] if self._results else None,
        )


class _FirstLine:
    """The lines of a binary source as the reader takes them, with the first line that has content kept.

    A session log starts with its header (``{"type":"session",...}``): a file told to be one that records
    no stream and has no header is not a session log with no model turn, but a file with no recognisable
    stream at all.
    """

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._lines = lines
        self.number: int | None = None
        self.header = False
        self.text: str | None = None

    @classmethod
    def of(cls, source: RecordingSource, stack: contextlib.ExitStack) -> _FirstLine | None:
        """``source`` watched (a path is opened here, and closed by ``stack``); ``None`` for a text file object."""
        if isinstance(source, (str, os.PathLike)):
            return cls(bounded_lines(stack.enter_context(open_binary(source))))
        if isinstance(source, (bytes, bytearray, memoryview)):
            return cls(bounded_lines(io.BytesIO(bytes(source))))
        if isinstance(source, io.TextIOBase) or isinstance(getattr(source, "encoding", None), str):
            return None  # the library's; the command gives paths and standard input's bytes
        return cls(bounded_lines(source))

    def __iter__(self) -> Iterator[bytes]:
        for number, line in enumerate(self._lines, start=1):
            content = (line.removeprefix(BOM) if number == 1 else line).strip(BLANK)
            if content:
                self.number, self.text = number, content[: CHUNK_TEXT_MAX * 4].decode("utf-8", "backslashreplace")
                try:
                    record = orjson.loads(content)
                except orjson.JSONDecodeError:
                    record = None
                    self.text = short(self.text, NOT_JSON_SHOWN + 1)  # not a recording's line: its start only
                self.header = isinstance(record, dict) and record.get("type") == "session"
                yield line
                break
            yield line
        line = content = b""  # nothing of the first line held while the rest is read
        yield from self._lines  # the rest as it comes: nothing more to see

    def no_stream(self, path: str) -> RecordedStream:
        """The empty stream of a file with no recognisable stream, its failure saying why."""
        header = 'a session log starts with its header, {"type":"session",...}'
        message = (
            f"no stream recorded, and no line with content ({header})"
            if self.number is None
            else f"no stream recorded, and no session header ({header}): not a session log (--format jsonl reads "
            "its lines as chunks)"
        )
        error = LlmError(message, ErrorCode.STREAM_TRUNCATED, chunk_index=0)
        return RecordedStream(
            path, 0, [], [], format="harness-session", failure=error, failure_line=self.number, failure_text=self.text
        )


def check_file(
    path: str, fmt: str = "auto", policy: Policy | str = Policy.STRICT, *, results: bool = False
) -> FileReport:
    """Check every stream recorded in the file ``path``: a :class:`FileReport` (its :class:`StreamReport` for each
    stream, or why the file could not be read in ``error``; it never raises for a file it cannot read).

    This is what ``streamfsm check`` runs on each file, in its worker processes and on a Dask cluster: the
    function and its arguments are picklable (by reference, as ``streamfsm.check_file``), and so is the report it
    returns, so it can be mapped over a corpus by any executor (Dask, Ray, Spark, ``concurrent.futures``).
    ``fmt`` is one of ``FORMATS`` (``auto`` tells them apart by the first lines); ``policy`` a :class:`Policy` or
    its value. With ``results``, the report keeps each valid stream's :class:`StreamResult` as well.
    """
    return check_source(path, fmt, policy, name=path, results=results)

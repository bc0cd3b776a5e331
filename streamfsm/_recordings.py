"""The one reader of recordings: the library, the command and the tests read every recorded stream here.

A *source* is a path (``str`` or ``os.PathLike``; a ``str`` may also be an fsspec URL, and a name ending
``.gz`` or ``.zst`` is decompressed as it is read: ``_sources.open_binary``), ``bytes`` (or
``bytearray``/``memoryview``), or a binary or text file object (standard input included). A ``str`` is a path, as
for ``open()``: text already in
memory is given as ``bytes`` or ``io.StringIO`` (pandas deprecated literal text in ``read_json`` for the
same reason: a string that is meant as a path must never be read as content). Sources are read line by
line as they come, never copied to a temporary file.

One rule for every format and entry point (``read_recordings``, ``read_session``, ``assemble_jsonl``,
``validate_jsonl``, ``streamfsm check`` and ``assemble``):

- **Lines** are the one rule of ``_lines.py``: JSON lines and session logs split at LF (a CR before it is JSON
  whitespace), blank lines skipped (they count for line numbers, 1-based, and take no position in the
  stream), a BOM at the very start skipped. An SSE body is split at CR, LF or CRLF, as the SSE specification
  says. (A text file object opened with universal newlines has already turned CR into a line end: that is the
  file object's choice.)

Formats (:data:`FORMATS`): ``jsonl`` (one chunk a line), ``harness-session`` (a DeepSeek Harness session
log, SPEC §6: ``assistant/chunk`` event lines and packed ``*-chunks`` storage rows, one stream per
``finish``), and one format per wire API, each a provider's SSE body or its events as JSON lines (one event a
line), converted by the wire API's converter (:data:`PROVIDER_FORMATS`): ``openai-sse`` (chat completions,
``sf.from_openai_chunks``), ``anthropic-sse`` (Messages, ``sf.from_anthropic_events``), ``openai-responses``
(``sf.from_openai_responses_events``), ``gemini`` (``sf.from_gemini_chunks``), ``bedrock``
(``sf.from_bedrock_events``: the events boto3's ``converse_stream`` yields, as JSON lines) and ``cohere``
(``sf.from_cohere_events``). ``auto`` tells them apart by the first lines. An SSE body is parsed by the
adapters' own parser (``_providers/sse.py``), each event knowing the line it starts at.
"""

from __future__ import annotations

import io
import os
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Final, TypeAlias

import orjson

from ._chunk_rows import ROW_TYPES, SCAN_BYTES, MalformedRow, expand_row, scan_row
from ._errors import ErrorCode, LlmError
from ._lines import BLANK, MAX_LINE_BYTES, bounded_lines, without_bom
from ._shape import InvalidLine
from ._sources import open_binary

if TYPE_CHECKING:
    from ._providers.convert import Turns

__all__ = [
    "FORMATS",
    "PROVIDER_FORMATS",
    "ROW_TYPES",
    "RecordedChunks",
    "RecordedStream",
    "RecordingSource",
    "UnknownFormat",
    "detect_format",
    "open_recordings",
    "read_recordings",
    "read_session",
    "scan_recordings",
]

#: What a recording is read from: a path, bytes, or a binary or text file object.
RecordingSource: TypeAlias = "str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes] | IO[str]"

#: The formats ``format=`` names; ``auto`` tells the others apart by their first lines.
FORMATS: Final = (
    "auto",
    "jsonl",
    "harness-session",
    "openai-sse",
    "anthropic-sse",
    "openai-responses",
    "gemini",
    "bedrock",
    "cohere",
)
#: The formats of a provider's stream (an SSE body, or its events as JSON lines), read through its converter.
PROVIDER_FORMATS: Final = FORMATS[3:]

_ROW_OF: Final = {delta: row for row, delta in ROW_TYPES.items()}

_SSE_FIELDS: Final = (b"data:", b"event:", b"id:", b"retry:", b":")
_ANTHROPIC_EVENTS: Final = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
        "error",
    }
)
#: The events of a Cohere v2 chat stream (``tool-call-delta`` is left out: the block protocol has a chunk type of
#: that name, and a Cohere stream starts with ``message-start`` anyway).
_COHERE_EVENTS: Final = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
        "debug",
    }
)
#: The fields of a Gemini ``GenerateContentResponse`` chunk, any of which tells one.
_GEMINI_FIELDS: Final = ("candidates", "usageMetadata", "modelVersion", "promptFeedback", "responseId")
#: The events of a Bedrock ``ConverseStream`` (each an object of one key, the event's name; an exception event's
#: name ends in ``Exception``).
_BEDROCK_EVENTS: Final = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
)
#: How many lines ``auto`` reads ahead into an SSE body to find an event that names its provider.
_SNIFF_LINES: Final = 10_000


class UnknownFormat(Exception):
    """The format of a recording could not be told from its content (``format=`` names it)."""


@dataclass(slots=True)
class RecordedStream:
    """One stream read from a recording: its chunks and where each came from.

    ``lines`` holds the 1-based line of each chunk (``None`` where the format has none). In a session log,
    ``members`` tells the chunks a packed row stood for: ``members[i]`` is ``k`` for the k-th member
    (1-based) of the row on ``lines[i]``, 0 for a chunk that had a line of its own. ``failure`` is an
    error the reading or the provider conversion raised after these chunks (``failure_line``,
    ``failure_text``: where, and the provider event it raised at). A provider recording holds one stream per
    turn (``more``: another turn follows).
    """

    path: str
    #: 0-based position of this stream in its recording.
    number: int
    chunks: list[Any] = field(repr=False)
    lines: list[int | None] = field(repr=False)
    turn: Any = None
    step: Any = None
    format: str = "jsonl"
    members: list[int] | None = field(default=None, repr=False)
    failure: LlmError | None = None
    failure_line: int | None = None
    failure_text: str | None = None
    #: Whether another stream follows this one in its recording (a provider recording of several turns).
    more: bool = False

    @property
    def finished(self) -> bool:
        """Whether the recording ends with a finish chunk (a cut-off log does not)."""
        last = self.chunks[-1] if self.chunks else None
        return isinstance(last, dict) and last.get("type") == "finish"

    def member(self, i: int) -> str | None:
        """For chunk ``i`` of a session log that a packed row stood for: ``member 12 of the text-chunks row``."""
        k = self.members[i] if self.members is not None and 0 <= i < len(self.members) else 0
        return _member(self.chunks[i], k)

    def where(self, i: int) -> str:
        """Where chunk ``i`` came from: ``path:line``, with its member of a packed row when it was one."""
        line = self.lines[i] if 0 <= i < len(self.lines) else None
        text = self.path if line is None else f"{self.path}:{line}"
        member = self.member(i)
        return text if member is None else f"{text} ({member})"


def _member(chunk: object, k: int) -> str | None:
    """``member 12 of the text-chunks row`` for the k-th member of a packed row (``None`` for ``k == 0``)."""
    if not k:
        return None
    row = _ROW_OF.get(chunk.get("type", "") if isinstance(chunk, dict) else "", "packed")
    return f"member {k} of the {row} row"


#: What a format's reader gives for each chunk of a stream: the chunk, its line, its member of a packed row (0
#: for none).
_Entry: TypeAlias = "tuple[Any, int | None, int]"


class RecordedChunks:
    """One stream of a recording read as it comes (what ``streamfsm check`` runs through the machine).

    :meth:`chunks` gives the stream's chunks once, in order, reading the source as it goes: memory holds the
    chunk in hand, not the stream. ``last``, ``line`` and ``member`` are those of the chunk given last;
    ``count`` and ``first_line`` tell what has been given so far. Once the chunks are over, ``failure`` (with
    ``failure_line`` and ``failure_text``) is an error the reading or the provider conversion raised after
    them. :meth:`recorded` reads the rest into a :class:`RecordedStream`.
    """

    __slots__ = (
        "_entries",
        "count",
        "failure",
        "failure_line",
        "failure_text",
        "first_line",
        "format",
        "k",
        "last",
        "line",
        "more",
        "number",
        "path",
        "step",
        "turn",
    )

    def __init__(self, path: str, number: int, fmt: str, entries: Iterator[_Entry]) -> None:
        self.path = path
        #: 0-based position of this stream in its recording.
        self.number = number
        self.format = fmt
        self.turn: Any = None
        self.step: Any = None
        self._entries = entries
        self.count = 0
        self.first_line: int | None = None
        self.last: Any = None
        self.line: int | None = None
        self.k = 0
        self.failure: LlmError | None = None
        self.failure_line: int | None = None
        self.failure_text: str | None = None
        #: Whether another stream follows in the recording (known once this one's chunks are over).
        self.more = False

    def chunks(self) -> Iterator[Any]:
        """The stream's chunks, each once, as they are read (``last``, ``line`` and ``member`` follow them)."""
        for chunk, line, k in self._entries:
            self.count += 1
            self.last, self.line, self.k = chunk, line, k
            if self.first_line is None:
                self.first_line = line
            yield chunk

    @property
    def member(self) -> str | None:
        """For the chunk given last, if a packed row stood for it: ``member 12 of the text-chunks row``."""
        return _member(self.last, self.k)

    def drain(self) -> None:
        """Read the rest of the stream's chunks, unchecked (a checker that met an error counts them)."""
        for _ in self.chunks():
            pass

    def recorded(self) -> RecordedStream:
        """The rest of the stream read into a :class:`RecordedStream` (all of it, if none was given yet)."""
        chunks: list[Any] = []
        lines: list[int | None] = []
        members: list[int] = []
        for chunk in self.chunks():
            chunks.append(chunk)
            lines.append(self.line)
            members.append(self.k)
        return RecordedStream(
            self.path,
            self.number,
            chunks,
            lines,
            self.turn,
            self.step,
            self.format,
            members if self.format == "harness-session" else None,
            self.failure,
            self.failure_line,
            self.failure_text,
            self.more,
        )


# -- sources and lines ------------------------------------------------------------------------------


def _name_of(source: object) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fsdecode(source)
    name = getattr(source, "name", None)
    if isinstance(name, str) and name:
        return name
    return "-" if source is not None and not isinstance(source, (bytes, bytearray, memoryview)) else "<bytes>"


def _raw_lines(source: RecordingSource) -> Iterator[bytes]:
    """The LF-ended lines of ``source`` as bytes, the BOM at its start removed (the one rule, above)."""
    if isinstance(source, (str, os.PathLike)):
        with open_binary(source) as handle:
            yield from without_bom(bounded_lines(handle))
        return
    if isinstance(source, (bytes, bytearray, memoryview)):
        yield from without_bom(bounded_lines(io.BytesIO(bytes(source))))
        return
    if isinstance(source, io.TextIOBase) or (
        hasattr(source, "read") and isinstance(getattr(source, "encoding", None), str)
    ):
        yield from without_bom(line.encode("utf-8", "surrogatepass") for line in bounded_lines(source))
        return
    yield from without_bom(bounded_lines(source))


class _Numbered:
    """``(line number, line)`` of the lines that hold more than JSON whitespace.

    An iterator, not a generator: it keeps no reference to the line it gave (a generator's frame would hold a
    long line while its chunk is checked).
    """

    __slots__ = ("_lines", "_number")

    def __init__(self, lines: Iterable[bytes]) -> None:
        self._lines = iter(lines)
        self._number = 0

    def __iter__(self) -> _Numbered:
        return self

    def __next__(self) -> tuple[int, bytes]:
        while True:
            raw = next(self._lines)
            self._number += 1
            # A line with content mostly starts with it: only a line that starts blank is stripped (a copy).
            if raw and (raw[0] not in BLANK or raw.strip(BLANK)):
                return self._number, raw


#: How much of a line that is not JSON a report quotes: a file that is not a recording (a folder's link to
#: ``~/.env``, say) is not echoed past this short prefix, escaped where it is shown.
NOT_JSON_SHOWN: Final = 16
#: How much of a malformed packed row (JSON, but not a row's shape) a report quotes.
ROW_SHOWN: Final = 200


def _invalid(raw: bytes, reason: str, what: str = "line is not JSON", shown: int = NOT_JSON_SHOWN) -> InvalidLine:
    """A refused line, quoted by its first ``shown`` characters (``…`` marks the cut); only those are decoded."""
    text = raw[: 4 * shown + 64].decode("utf-8", "backslashreplace").strip()
    if len(text) > shown or len(raw) > 4 * shown + 64:
        text = text[:shown] + "\u2026"
    return InvalidLine(text, reason, what)


# -- formats ----------------------------------------------------------------------------------------


class _Lines:
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


def _is_session_record(record: dict[str, Any]) -> bool:
    """A session log's line: its header, a packed row, or an event (``x/y`` type with ``seq`` and ``data``)."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return False
    return kind == "session" or kind in ROW_TYPES or ("/" in kind and "seq" in record and "data" in record)


def _detect(lines: _Lines) -> str:
    first = lines.first_content()
    if first.startswith(b"{"):
        try:
            record = orjson.loads(first)
        except orjson.JSONDecodeError:
            return "jsonl"
        if isinstance(record, dict):
            if _is_session_record(record):
                return "harness-session"
            return _provider_of(record) or "jsonl"
        return "jsonl"
    if first.startswith(_SSE_FIELDS):
        provider = _sse_provider(lines.peek(_SNIFF_LINES))
        if provider is None:
            raise UnknownFormat(
                "an SSE body, but its events are of no wire API streamfsm reads (OpenAI chat completions, "
                "Anthropic Messages, OpenAI Responses, Gemini, Bedrock, Cohere): pass --format "
                + " or ".join(PROVIDER_FORMATS)
            )
        return provider
    return "jsonl"


def _provider_of(event: dict[str, Any]) -> str | None:
    """The wire API one provider event belongs to, told by its fields; None for anything else (a chunk)."""
    kind = event.get("type")
    if isinstance(kind, str):
        if kind in _ANTHROPIC_EVENTS:
            return "anthropic-sse"
        if kind.startswith("response."):
            return "openai-responses"
        if kind in _COHERE_EVENTS:
            return "cohere"
    if event.get("object") == "chat.completion.chunk" or "choices" in event:
        return "openai-sse"
    if kind is None:
        if any(key in event for key in _GEMINI_FIELDS):
            return "gemini"
        if len(event) == 1:
            (name,) = event
            if name in _BEDROCK_EVENTS or (name.endswith("Exception") and isinstance(event[name], dict)):
                return "bedrock"
    return None


def detect_format(source: RecordingSource) -> str:
    """The format of a recording, told from its first lines (:class:`UnknownFormat` if an SSE body's is not).

    A first line that is a JSON object: a session log's line (its ``session`` header, a packed row, or an
    event with an ``x/y`` type, ``seq`` and ``data``) is ``harness-session``; a provider's event (as JSON
    lines) is its wire API's format: a ``chat.completion.chunk`` (or an object with ``choices``) ``openai-sse``,
    a Messages API event (``message_start``, ...) ``anthropic-sse``, an event whose ``type`` starts with
    ``response.`` ``openai-responses``, a Cohere v2 event (``message-start``, ``content-delta``, ...)
    ``cohere``, an object without ``type`` holding ``candidates``, ``usageMetadata``, ``modelVersion``,
    ``promptFeedback`` or ``responseId`` ``gemini``, an object of one key naming a ConverseStream event
    (``messageStart``, ``contentBlockDelta``, ``metadata``, ``...Exception``) ``bedrock``; anything else
    ``jsonl``. A first line that is an SSE field is a provider body, whose events (their ``event`` names or
    their data, told as above) say which provider. Anything else (an empty file, a line that is not JSON) is
    ``jsonl``, where the machine reports it.
    """
    return _detect(_Lines(_raw_lines(source)))


def _sse_split(raw: bytes) -> list[str]:
    """An LF-ended line of an SSE body as its SSE lines (CR, LF and CRLF end a line), decoded."""
    text = raw.decode("utf-8", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("\r"):
        text = text[:-1]
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if "\r" in text else [text]


def _sse_provider(lines: list[bytes]) -> str | None:
    for raw in lines:
        for line in _sse_split(raw):
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event" and value:
                named = _provider_of({"type": value})
                if named is not None:
                    return named
            if name != "data":
                continue
            if value.strip() == "[DONE]":
                return "openai-sse"
            try:
                event = orjson.loads(value)
            except orjson.JSONDecodeError:
                continue
            if isinstance(event, dict):
                provider = _provider_of(event)
                if provider is not None:
                    return provider
    return None


# -- reading ----------------------------------------------------------------------------------------


def open_recordings(
    source: RecordingSource, format: str = "auto", *, name: str | None = None
) -> tuple[str, Iterator[RecordedStream]]:
    """The format of ``source`` and its streams, read lazily (one stream in memory at a time).

    ``name`` is what reports call the source (default: its path, or the file object's ``name``). Raises
    :class:`UnknownFormat` when ``auto`` cannot tell, ``ValueError`` for an unknown ``format``, and
    ``OSError`` when a path cannot be opened (at once, not at the first stream).
    """
    fmt, streams = scan_recordings(source, format, name=name)
    return fmt, (stream.recorded() for stream in streams)


def scan_recordings(
    source: RecordingSource, format: str = "auto", *, name: str | None = None
) -> tuple[str, Iterator[RecordedChunks]]:
    """:func:`open_recordings` one chunk at a time: the format, and each stream as :class:`RecordedChunks`.

    A stream's chunks are read as they are taken; asking for the next stream reads (and drops) what is left
    of the one before. Memory holds a line (a packed row's members) and what the caller keeps.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}: expected one of {', '.join(FORMATS)}")
    path = name if name is not None else _name_of(source)
    lines = _Lines(_raw_lines(source))
    lines.peek(1)  # opens a path now: a file that cannot be read fails here
    fmt = _detect(lines) if format == "auto" else format
    if fmt == "jsonl":
        return fmt, iter([RecordedChunks(path, 0, fmt, _jsonl_entries(lines))])
    if fmt == "harness-session":
        return fmt, _session_streams(lines, path)
    return fmt, _provider_streams(lines, fmt, path)


def read_recordings(
    source: RecordingSource, format: str = "auto", *, name: str | None = None
) -> Iterator[RecordedStream]:
    """The streams recorded in ``source``, one at a time (see :func:`open_recordings` and the module's rules)."""
    return open_recordings(source, format, name=name)[1]


def read_session(source: RecordingSource, *, name: str | None = None) -> Iterator[RecordedStream]:
    """Yield the streams recorded in a DeepSeek Harness session log (SPEC §6), one per ``finish``.

    Every ``assistant/chunk`` line contributes its ``data.chunk``; every packed row (``text-chunks``,
    ``reasoning-chunks``, ``tool-call-chunks``) is expanded into the deltas it stands for, in order,
    exactly as upstream's decoder does, each knowing its line and member number. A row that is not exactly
    upstream's shape is an ``INVALID_CHUNK`` at its line, never skipped; so is a line that is not JSON.
    Other event lines carry no chunks. Chunks after the last finish form a last, unfinished stream (which
    the machine reports as ``STREAM_TRUNCATED``). ``turn`` and ``step`` are those of the stream's first chunk.
    """
    return open_recordings(source, "harness-session", name=name)[1]


def _jsonl_entries(lines: Iterable[bytes]) -> Iterator[_Entry]:
    for lineno, raw in _Numbered(lines):
        try:
            chunk = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            chunk = _invalid(raw, str(exc))
        del raw  # the line goes before its chunk is checked: a long one is not held twice
        yield chunk, lineno, 0


def _session_entries(lines: Iterable[bytes]) -> Iterator[tuple[Any, int, int, Any]]:
    """Every chunk a session log records, in order: ``(chunk, line, member, data)`` (``data``: its line's)."""
    for lineno, raw in _Numbered(lines):
        # A long packed row is read in place, its members parsed as the machine takes them (_chunk_rows.py).
        record = scan_row(raw) if len(raw) > SCAN_BYTES else None
        if record is None:
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                yield _invalid(raw, str(exc)), lineno, 0, None
                continue
        if not isinstance(record, dict):
            continue
        kind = record.get("type")
        data = record.get("data")
        if kind == "assistant/chunk":
            yield (data.get("chunk") if isinstance(data, dict) else None), lineno, 0, data
        elif isinstance(kind, str) and kind in ROW_TYPES:
            try:
                data, members = expand_row(record)
            except MalformedRow as exc:
                yield _invalid(raw, str(exc), f"malformed {kind} storage row", ROW_SHOWN), lineno, 0, None
                continue
            # Only the members hold the row (and a long row's line) while they are taken: nothing of it is held
            # once they are over and the next line is read.
            placed = {"turn": data["turn"], "step": data["step"]}
            del raw, record, data
            for k, chunk in enumerate(members, start=1):
                yield chunk, lineno, k, placed


def _is_finish(chunk: object) -> bool:
    return isinstance(chunk, dict) and chunk.get("type") == "finish"


def _session_streams(lines: Iterable[bytes], path: str) -> Iterator[RecordedChunks]:
    """The streams of a session log, one per ``finish``, each read as it is taken (see :func:`read_session`)."""
    entries = _session_entries(lines)
    ahead = next(entries, None)  # the first chunk of the next stream: there is one when this is not None
    number = 0

    def stream_entries() -> Iterator[_Entry]:
        nonlocal ahead
        while ahead is not None:
            chunk, line, k, _ = ahead
            ahead = next(entries, None)
            yield chunk, line, k
            if _is_finish(chunk):
                return

    while ahead is not None:
        stream = RecordedChunks(path, number, "harness-session", stream_entries())
        data = ahead[3]
        if isinstance(data, dict):  # the turn and step of the stream's first chunk
            stream.turn, stream.step = data.get("turn"), data.get("step")
        yield stream
        stream.drain()  # what the caller left of it
        number += 1


# -- provider recordings ----------------------------------------------------------------------------


class _Where:
    """The line of the provider event the converter is working on (the chunks it yields come from it), of the
    event before it (a turn's last chunks, made once the first event of the next turn was read), and of the event a
    turn's conversion failed at (``failed``: its line and text)."""

    __slots__ = ("before", "failed", "line", "text")

    def __init__(self) -> None:
        self.line: int | None = None
        self.before: int | None = None
        self.text: str | None = None
        self.failed: tuple[int | None, str | None] | None = None

    def fail(self, between: bool) -> None:
        """A turn's conversion failed at the event in hand, or (``between``: the next turn's first event was read)
        at its end, after the event before."""
        self.failed = (self.before, None) if between else (self.line, self.text)


def _sse_records(lines: Iterable[bytes]) -> Iterator[tuple[int | None, str]]:
    """``(line, data)`` of each event of an SSE body, with the SSE line the event starts at.

    The events are parsed by the adapters' own parser (``_providers/sse.py``, the one that reads a live body),
    fed the recording line by line as it is read. The end of the recording ends the last event (a file often
    lacks the blank line after it). One event holds at most :data:`MAX_LINE_BYTES`, as one line does:
    past it, ``LIMIT_EXCEEDED``.
    """
    from ._providers.sse import SSEParser  # here: the provider layer imports the core, which imports this

    parser = SSEParser(MAX_LINE_BYTES)
    for raw in lines:
        for event in parser.feed(raw):
            yield event.line, event.data
    for event in parser.end(complete=True):
        yield event.line, event.data


def _json_records(lines: Iterable[bytes]) -> Iterator[tuple[int | None, str]]:
    for lineno, raw in _Numbered(lines):
        yield lineno, raw.decode("utf-8", "backslashreplace").strip()


def _provider_events(
    records: Iterable[tuple[int | None, str]], where: _Where, fmt: str, *, sse: bool
) -> Generator[Any, None, None]:
    """Parsed provider events, with ``where`` following them; an SSE body's ``[DONE]`` as the end of a turn; the
    end markers enforced as the adapters do (the last turn of a chat-completions body ends with ``[DONE]``, of a
    Messages body with ``message_stop``)."""
    from ._providers.convert import END_OF_TURN, event_object  # the provider layer imports the core, which imports this

    who = _READERS[fmt][1]
    marker = _MARKERS.get(fmt) if sse else None
    marked = False  # the last turn ended with its marker
    for line, text in records:
        if not text:
            continue
        where.before, where.line, where.text = where.line, line, text
        if sse and text == "[DONE]":  # chat completions' end; some Responses servers send it too
            marked = marker == "[DONE]"
            yield END_OF_TURN
            continue
        event = event_object(text, who)
        kind = event.get("type")
        if kind != "ping":
            marked = marker == "message_stop" and kind == "message_stop"
        yield event
    if marker is not None and not marked:
        where.text = None
        raise LlmError(f"{who}: the recording ended without {marker}", ErrorCode.STREAM_CLOSED)


#: Per provider format: the converter (by name, in ``streamfsm._providers``) and the provider's name in messages.
_READERS: Final = {
    "openai-sse": ("from_openai_chunks", "OpenAI"),
    "anthropic-sse": ("from_anthropic_events", "Anthropic"),
    "openai-responses": ("from_openai_responses_events", "OpenAI Responses"),
    "gemini": ("from_gemini_chunks", "Gemini"),
    "bedrock": ("from_bedrock_events", "Bedrock"),
    "cohere": ("from_cohere_events", "Cohere"),
}
#: The SSE bodies whose last turn must end with a marker of their own, as the adapters require it; the other wire
#: APIs' converters say whether the response was complete when the body ends.
_MARKERS: Final = {"openai-sse": "[DONE]", "anthropic-sse": "message_stop"}


def _provider_streams(lines: _Lines, fmt: str, path: str) -> Iterator[RecordedChunks]:
    """A provider recording converted to block-protocol chunks, one stream per turn (``_providers/turns.py``).

    A recording holds one or more turns, each ended where its wire API says (SSE bodies and JSON lines of events
    alike); a recorded SSE body is otherwise read as the adapters read a live one: an event that is not a JSON
    object is ``MALFORMED_RESPONSE``, and the last turn of a chat-completions or Messages body needs its end
    marker. Except that the last event needs no blank line after it: a file often ends without one. A turn's
    conversion error becomes its stream's ``failure``, and that stream is the last.
    """
    from ._providers.convert import Turns  # the provider layer imports the core, which imports this
    from ._providers.turns import TURN_APIS

    api = TURN_APIS[_READERS[fmt][0]]
    sse = not lines.first_content().startswith(b"{")
    where = _Where()
    events = _provider_events(_sse_records(lines) if sse else _json_records(lines), where, fmt, sse=sse)
    turns = Turns(api.new, events, on_failure=where.fail)
    try:
        for number, chunks in enumerate(turns):
            stream = RecordedChunks(path, number, fmt, iter(()))
            stream._entries = _turn_entries(chunks, where, stream, turns)
            yield stream
            stream.drain()  # what the caller left of it
    finally:
        events.close()  # what is left of the body is not read (a file is closed now)


def _turn_entries(chunks: Iterator[Any], where: _Where, stream: RecordedChunks, turns: Turns) -> Iterator[_Entry]:
    """One turn's chunks with their lines; the converter's error becomes ``stream.failure``."""
    try:
        for chunk in chunks:
            # Once the next turn's first event was read, what the converter makes came from the events before it.
            yield chunk, where.before if turns.between else where.line, 0
    except LlmError as err:
        line, text = where.failed if where.failed is not None else (where.line, where.text)
        where.failed = None
        stream.failure, stream.failure_line, stream.failure_text = err, line, text
    stream.more = turns.more

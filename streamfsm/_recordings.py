"""What a recording is: the formats it may be in (told apart by its first lines), its source read as lines, and
the streams read from it (:class:`RecordedStream`, :class:`RecordedChunks`).

A *source* is a path (``str`` or ``os.PathLike``; a ``str`` may also be an fsspec URL, and a name ending
``.gz`` or ``.zst`` is decompressed as it is read: ``_sources.open_binary``), ``bytes`` (or
``bytearray``/``memoryview``), or a binary or text file object (standard input included). A ``str`` is a path, as
for ``open()``: text already in memory is given as ``bytes`` or ``io.StringIO`` (pandas deprecated literal text in
``read_json`` for the same reason: a string that is meant as a path must never be read as content). Sources are
read line by line as they come, never copied to a temporary file.

This module is the core's: it knows each wire API's events only by their names and fields, to tell a format (and
to say which converter a provider's event wants); the one reader (``_reader.py``) reads each format, a provider's
through its converter (``_providers/recorded.py``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Final, TypeAlias

import orjson

from ._bodies import GEMINI_FIELDS, body_format, whole_document
from ._chunk_rows import ROW_TYPES
from ._errors import LlmError
from ._lines import Lines, bounded_lines, without_bom
from ._shape import InvalidLine
from ._sources import open_binary
from ._wire_apis import WIRE_APIS, wire_api

__all__ = [
    "ECHO_BYTES",
    "FORMATS",
    "NOT_JSON_SHOWN",
    "PROVIDER_FORMATS",
    "READERS",
    "ROW_SHOWN",
    "Entry",
    "RecordedChunks",
    "RecordedStream",
    "RecordingSource",
    "UnknownFormat",
    "Where",
    "converter_hint",
    "detect",
    "detect_format",
    "event_format",
    "invalid_line",
    "raw_lines",
    "source_name",
]

#: What a recording is read from: a path, bytes, or a binary or text file object.
RecordingSource: TypeAlias = "str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes] | IO[str]"

#: The formats ``format=`` names: ``auto`` (tells the others apart by their first lines), ``jsonl``,
#: ``harness-session``, then each wire API's (``openai-sse``, ``anthropic-sse``, ``openai-responses``, ``gemini``,
#: ``bedrock``, ``cohere``: ``_wire_apis.WIRE_APIS``).
FORMATS: Final = ("auto", "jsonl", "harness-session", *(api.format for api in WIRE_APIS))
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
#: The events of a Bedrock ``ConverseStream`` (each an object of one key, the event's name; an exception event's
#: name ends in ``Exception``).
_BEDROCK_EVENTS: Final = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
)
#: The ``object`` of a chunk of the OpenAI-compatible APIs one converter reads (``openai-sse``): chat completions, and
#: the legacy completions API (``/v1/completions``).
_OPENAI_OBJECTS: Final = ("chat.completion.chunk", "text_completion")
#: How many lines ``auto`` reads ahead into an SSE body to find an event that names its provider.
_SNIFF_LINES: Final = 10_000
#: How much of a line a report echoes at most (what ``check`` shows of the line a bad chunk came from).
ECHO_BYTES: Final = 800


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

    Iterating the stream itself gives its chunks and then raises its ``failure``, if it has one: give the stream
    (not ``stream.chunks``) to :func:`streamfsm.assemble` or :func:`streamfsm.validate`, and they report what
    ``streamfsm check`` reports (a body cut before its end marker is ``STREAM_CLOSED``, not the machine's
    ``STREAM_TRUNCATED``). ``stream.where(err)`` says where any of their errors came from.
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

    def __iter__(self) -> Iterator[Any]:
        """The stream's chunks, then its ``failure`` raised (when the reader or the converter failed it)."""
        yield from self.chunks
        if self.failure is not None:
            raise self.failure

    def member(self, i: int) -> str | None:
        """For chunk ``i`` of a session log that a packed row stood for: ``member 12 of the text-chunks row``."""
        k = self.members[i] if self.members is not None and 0 <= i < len(self.members) else 0
        return _member(self.chunks[i], k)

    def where(self, at: int | LlmError) -> str:
        """Where chunk ``at`` came from: ``path:line``, with its member of a packed row when it was one.

        ``at`` may be an error met reading the stream, as ``streamfsm check`` places it: the stream's own
        ``failure`` at its ``failure_line``, an error of the machine at the chunk it names (its ``chunk_index``; a
        ``STREAM_TRUNCATED`` at the last chunk received); ``path`` where neither says.
        """
        if isinstance(at, LlmError):
            if at is self.failure:
                line = self.failure_line
                return self.path if line is None else f"{self.path}:{line}"
            if at.chunk_index is None:
                return self.path
            at = min(at.chunk_index, len(self.chunks) - 1)
        line = self.lines[at] if 0 <= at < len(self.lines) else None
        text = self.path if line is None else f"{self.path}:{line}"
        member = self.member(at) if 0 <= at < len(self.chunks) else None
        return text if member is None else f"{text} ({member})"


def _member(chunk: object, k: int) -> str | None:
    """``member 12 of the text-chunks row`` for the k-th member of a packed row (``None`` for ``k == 0``)."""
    if not k:
        return None
    row = _ROW_OF.get(chunk.get("type", "") if isinstance(chunk, dict) else "", "packed")
    return f"member {k} of the {row} row"


#: What a format's reader gives for each chunk of a stream: the chunk, its line, its member of a packed row (0
#: for none).
Entry: TypeAlias = "tuple[Any, int | None, int]"


class RecordedChunks:
    """One stream of a recording read as it comes (what ``streamfsm check`` runs through the machine).

    :meth:`chunks` gives the stream's chunks once, in order, reading the source as it goes: memory holds the
    chunk in hand, not the stream. ``last``, ``line`` and ``member`` are those of the chunk given last;
    ``count`` and ``first_line`` tell what has been given so far. Once the chunks are over, ``failure`` (with
    ``failure_line`` and ``failure_text``) is an error the reading or the provider conversion raised after
    them. :meth:`recorded` reads the rest into a :class:`RecordedStream`.
    """

    __slots__ = (
        "count",
        "entries",
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
        "where",
    )

    def __init__(self, path: str, number: int, fmt: str, entries: Iterator[Entry]) -> None:
        self.path = path
        #: 0-based position of this stream in its recording.
        self.number = number
        self.format = fmt
        self.turn: Any = None
        self.step: Any = None
        self.entries = entries
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
        #: The line the reader is on, as written (see :meth:`written`); ``None`` where the reader does not say.
        self.where: Where | None = None

    def written(self) -> str | None:
        """The line the chunk given last came from, as written in the source (its first :data:`ECHO_BYTES`, an
        ellipsis marking a cut), or ``None`` where the reader does not say (a provider recording: its chunks are
        the converter's, made from one event or several)."""
        where = self.where
        if where is None or where.raw is None:
            return None
        text = where.raw.decode("utf-8", "backslashreplace").strip()
        return text + "\u2026" if where.cut else text

    def chunks(self) -> Iterator[Any]:
        """The stream's chunks, each once, as they are read (``last``, ``line`` and ``member`` follow them)."""
        for chunk, line, k in self.entries:
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


class Where:
    """The line a reader is on. Of a provider recording: the line of the event the converter is working on (the
    chunks it yields come from it), of the event before it (a turn's last chunks, made once the first event of the
    next turn was read), and of the event a turn's conversion failed at (``failed``: its line and text). Of JSON
    lines and session logs: the first :data:`ECHO_BYTES` of the line as read (``raw``; ``cut`` when the line is
    longer)."""

    __slots__ = ("before", "cut", "failed", "line", "raw", "text")

    def __init__(self) -> None:
        self.line: int | None = None
        self.before: int | None = None
        self.text: str | None = None
        self.failed: tuple[int | None, str | None] | None = None
        self.raw: bytes | None = None
        self.cut = False

    def read(self, raw: bytes) -> None:
        """``raw`` is the line being read (a short line is kept as it is: no copy; a long one, its start)."""
        self.cut = len(raw) > ECHO_BYTES
        self.raw = raw[:ECHO_BYTES] if self.cut else raw

    def fail(self, between: bool) -> None:
        """A turn's conversion failed at the event in hand, or (``between``: the next turn's first event was read)
        at its end, after the event before."""
        self.failed = (self.before, None) if between else (self.line, self.text)


# -- sources and lines ------------------------------------------------------------------------------


def source_name(source: object) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fsdecode(source)
    name = getattr(source, "name", None)
    if isinstance(name, str) and name:
        return name
    return "-" if source is not None and not isinstance(source, (bytes, bytearray, memoryview)) else "<bytes>"


def raw_lines(source: RecordingSource) -> Iterator[bytes]:
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


#: How much of a line that is not JSON a report quotes: a file that is not a recording (a folder's link to
#: ``~/.env``, say) is not echoed past this short prefix, escaped where it is shown.
NOT_JSON_SHOWN: Final = 16
#: How much of a malformed packed row (JSON, but not a row's shape) a report quotes.
ROW_SHOWN: Final = 200


def invalid_line(raw: bytes, reason: str, what: str = "line is not JSON", shown: int = NOT_JSON_SHOWN) -> InvalidLine:
    """A refused line, quoted by its first ``shown`` characters (``…`` marks the cut); only those are decoded."""
    text = raw[: 4 * shown + 64].decode("utf-8", "backslashreplace").strip()
    if len(text) > shown or len(raw) > 4 * shown + 64:
        text = text[:shown] + "\u2026"
    return InvalidLine(text, reason, what)


# -- formats ----------------------------------------------------------------------------------------


def _is_session_record(record: dict[str, Any]) -> bool:
    """A session log's line: its header, a packed row, or an event (``x/y`` type with ``seq`` and ``data``)."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return False
    return kind == "session" or kind in ROW_TYPES or ("/" in kind and "seq" in record and "data" in record)


def detect(lines: Lines) -> str:
    first = lines.first_content()
    if first.startswith(b"{"):
        try:
            record = orjson.loads(first)
        except orjson.JSONDecodeError:
            document = whole_document(lines)  # a body written over several lines (pretty-printed)
            return (body_format(document) if isinstance(document, dict) else None) or "jsonl"
        if isinstance(record, dict):
            if _is_session_record(record):
                return "harness-session"
            return _provider_of(record) or body_format(record) or "jsonl"
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
    if event.get("object") in _OPENAI_OBJECTS or "choices" in event:
        return "openai-sse"
    if kind is None:
        if any(key in event for key in GEMINI_FIELDS):
            return "gemini"
        if len(event) == 1:
            (name,) = event
            if name in _BEDROCK_EVENTS or (name.endswith("Exception") and isinstance(event[name], dict)):
                return "bedrock"
    return None


#: The SDK packages whose stream objects a converter takes (the module a type comes from, its start), and the format;
#: the longest first (``openai.types.responses`` before ``openai.``).
_SDK_FORMATS: Final = sorted(
    ((prefix, api.format) for api in WIRE_APIS for prefix in api.sdk), key=lambda row: len(row[0]), reverse=True
)


def event_format(event: object) -> str | None:
    """The provider format (:data:`PROVIDER_FORMATS`) of one provider event: a dict's told by its fields, an SDK
    object's by the package its type comes from; ``None`` for anything else (a block-protocol chunk, say)."""
    if isinstance(event, dict):
        return _provider_of(event)
    if isinstance(event, Mapping):
        return None
    module = getattr(type(event), "__module__", "") or ""
    return next((f for prefix, f in _SDK_FORMATS if module.startswith(prefix)), None)


def converter_hint(chunk: object) -> str:
    """What to say of a chunk the machine refused that is a provider's event (its dict, or its SDK's object): which
    converter turns that provider's stream into chunks; of a JSON line that is a line of a server-sent events body,
    which reader takes the body (``""`` for anything else). The machine's cold path."""
    if isinstance(chunk, InvalidLine):
        if chunk.what == "line is not JSON" and chunk.text.encode().startswith(_SSE_FIELDS):
            return (
                "; it is a line of a server-sent events body (a provider's stream), not a JSON line of chunks: read "
                "the body with sf.read_recordings(...), which tells the provider from its first lines"
            )
        return ""
    fmt = event_format(chunk)
    if fmt is None:
        return ""
    api = wire_api(fmt)
    return (
        f"; it is an event of the {api.title} wire API, not a block-protocol chunk: convert them with "
        f"sf.{api.reader}(...)"
    )


def detect_format(source: RecordingSource) -> str:
    """The format of a recording, told from its first lines (:class:`UnknownFormat` if an SSE body's is not), or
    from the whole of it when it is one JSON object written over several lines: a wire API's response body.

    A first line that is a JSON object: a session log's line (its ``session`` header, a packed row, or an
    event with an ``x/y`` type, ``seq`` and ``data``) is ``harness-session``; a provider's event (as JSON
    lines) is its wire API's format: a ``chat.completion.chunk`` or a legacy completion's ``text_completion`` chunk
    (or any object with ``choices``) ``openai-sse``, a Messages API event (``message_start``, ...)
    ``anthropic-sse``, an event whose ``type`` starts with ``response.`` ``openai-responses``, a Cohere v2
    event (``message-start``, ``content-delta``, ...) ``cohere``, an object without ``type`` holding
    ``candidates``, ``usageMetadata``, ``modelVersion``, ``promptFeedback`` or ``responseId`` ``gemini``, an
    object of one key naming a ConverseStream event (``messageStart``, ``contentBlockDelta``, ``metadata``,
    ``...Exception``) ``bedrock``; anything else ``jsonl``. A first line that is an SSE field is a provider
    body, whose events (their ``event`` names or their data, told as above) say which provider. Anything else
    (an empty file, a line that is not JSON) is ``jsonl``, where the machine reports it.
    """
    return detect(Lines(raw_lines(source)))


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


#: Per provider format: the converter (by name, in ``streamfsm._providers``) and the provider's name in messages.
READERS: Final = {api.format: (api.reader, api.who) for api in WIRE_APIS}

"""Checking recorded streams: read a recording in any of its formats, run it through the machine, report.

This is the logic behind ``streamfsm check`` and ``streamfsm assemble``, kept apart from the terminal
(``_cli.py`` formats what this returns). A recording is read into streams of block-protocol chunks, each
with the line of the file it came from:

- ``jsonl``: one chunk per line (what ``sf.assemble_jsonl`` reads);
- ``harness-session``: a DeepSeek Harness session log (``sf.read_session``), one stream per ``finish``;
- ``openai-sse``: an OpenAI-compatible ``/chat/completions`` body (``data:`` events up to ``[DONE]``), or
  one ``chat.completion.chunk`` object per line, converted by ``sf.from_openai_chunks``;
- ``anthropic-sse``: a Messages API body (events up to ``message_stop``), or one event object per line,
  converted by ``sf.from_anthropic_events``.

A recorded SSE body is read as the adapters read a live one (``[DONE]`` and ``message_stop`` are required,
an event that is not a JSON object is ``MALFORMED_RESPONSE``), except that the last event needs no blank
line after it: a file often ends without one. Converted chunks keep the line of the provider event that
produced them. The converters' own errors (``MALFORMED_RESPONSE``, ``STREAM_CLOSED``, ``EMPTY_RESPONSE``,
...) are reported like protocol errors, where they happened in the stream. A UTF-8 byte order mark at the
start of a file, which Windows editors write, is skipped in every format.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from ._config import Policy
from ._convert import event_object
from ._errors import ErrorCode, LlmError
from ._machine import TABLE, StreamAssembler
from ._models import StreamResult, ToolCallBlock
from ._session import read_session
from ._shape import CHUNK_TYPES, InvalidLine

__all__ = [
    "FORMATS",
    "STREAM_SUFFIXES",
    "FileReport",
    "Recording",
    "StreamReport",
    "UnknownFormat",
    "check_data",
    "check_file",
    "detect_format",
    "expected_in",
    "printable",
    "read_recordings",
    "short",
]

#: The formats ``--format`` names; ``auto`` tells the others apart by their first lines.
FORMATS: Final = ("auto", "jsonl", "harness-session", "openai-sse", "anthropic-sse")
#: Files a walked folder contributes (a file named on the command line is read whatever its name).
STREAM_SUFFIXES: Final = (".jsonl", ".ndjson", ".sse")
#: How much of a chunk a JSON report carries.
CHUNK_TEXT_MAX: Final = 200

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
_SSE_FIELDS: Final = (b"data:", b"event:", b"id:", b"retry:", b":")
_BLANK: Final = b" \t\r\n"
#: C0 controls, DEL and C1 controls, as Python writes them escaped (``\n``, ``\x1b``): text read from a
#: recording must not move the cursor, retitle or clear the terminal it is shown on.
_ESCAPES: Final = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0))}


class UnknownFormat(Exception):
    """The format of a recording could not be told from its content (``--format`` names it)."""


@dataclass(slots=True)
class Recording:
    """One stream read from a file, ready for the machine.

    ``lines`` holds the 1-based line of each chunk (``None`` where the format has none). ``failure`` is an
    error the reading or the conversion raised after those chunks (``failure_line``, ``failure_text``: where,
    and the provider event it raised at).
    """

    path: str
    number: int
    format: str
    chunks: list[Any] = field(repr=False)
    lines: list[int | None] = field(repr=False)
    failure: LlmError | None = None
    failure_line: int | None = None
    failure_text: str | None = None
    turn: int | None = None
    step: int | None = None


@dataclass(frozen=True, slots=True)
class StreamReport:
    """The outcome of one recorded stream: what ``check`` prints and ``--json`` serialises (:meth:`to_json`)."""

    path: str
    #: 0-based position of the stream in its file.
    stream: int
    #: Whether the file's format holds several streams (a session log), so the name carries the number.
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
    turn: int | None = None
    step: int | None = None

    @property
    def name(self) -> str:
        """``path`` for a file of one stream, ``path#n`` for the n-th stream of a session log."""
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
            "turn": self.turn,
            "step": self.step,
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


def printable(text: str) -> str:
    """``text`` on one line with its control characters escaped (``\\n``, ``\\x1b``), safe to show on a terminal."""
    return text.translate(_ESCAPES)


def short(text: str, limit: int) -> str:
    """``text`` made :func:`printable` and cut to ``limit`` characters (an ellipsis marks the cut)."""
    text = printable(text)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "\u2026"


def expected_in(state: str, policy: Policy | str) -> tuple[str, ...]:
    """The chunk types the machine accepts in ``state`` under ``policy``, in protocol order.

    Read from the machine's table; an edge guarded by ``interleave`` exists only under ``Policy.HARNESS``.
    The other guards depend on the stream (which block is open), so their edges are listed.
    """
    interleave = Policy(policy) is Policy.HARNESS
    row = TABLE.get(state, {})
    accepted = {
        chunk_type
        for chunk_type, edges in row.items()
        if any(
            ("interleave" not in cond or interleave) and ("interleave" not in unless or not interleave)
            for _, cond, unless in edges
        )
    }
    return tuple(t for t in CHUNK_TYPES if t in accepted)


# -- formats ----------------------------------------------------------------------------------------


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of the lines of ``data`` that hold more than JSON whitespace, as the machine skips.

    Split on LF only, as ``sf.assemble_jsonl`` and ``sf.read_session`` split (a CR before it is whitespace).
    """
    for lineno, raw in enumerate(io.BytesIO(data), start=1):
        if raw.strip(_BLANK):
            yield lineno, raw


def _first_line(data: bytes) -> bytes:
    return next((raw.strip(_BLANK) for _, raw in _lines(data)), b"")


def detect_format(data: bytes) -> str:
    """The format of a recording, told from its content (:class:`UnknownFormat` if an SSE body's provider is not).

    A first line that is a JSON object: a session record (``type`` ``session`` or ``x/y``) is a session
    log; a ``chat.completion.chunk`` is ``openai-sse`` (as JSON lines); a Messages API event is
    ``anthropic-sse``; anything else ``jsonl``. A first line that is an SSE field is a provider body, whose
    events say which provider. Anything else (an empty file, a line that is not JSON) is ``jsonl``, where
    the machine reports it.
    """
    first = _first_line(data)
    if first.startswith(b"{"):
        try:
            record = orjson.loads(first)
        except orjson.JSONDecodeError:
            return "jsonl"
        if isinstance(record, dict):
            kind = record.get("type")
            if isinstance(kind, str) and (kind == "session" or "/" in kind):
                return "harness-session"
            if record.get("object") == "chat.completion.chunk" or "choices" in record:
                return "openai-sse"
            if kind in _ANTHROPIC_EVENTS:
                return "anthropic-sse"
        return "jsonl"
    if first.startswith(_SSE_FIELDS):
        provider = _sse_provider(data)
        if provider is None:
            raise UnknownFormat(
                "an SSE body, but its events are neither OpenAI chat completion chunks nor Anthropic Messages "
                "events: pass --format openai-sse or --format anthropic-sse"
            )
        return provider
    return "jsonl"


def _sse_provider(data: bytes) -> str | None:
    for line in _sse_lines(data):
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event" and value in _ANTHROPIC_EVENTS:
            return "anthropic-sse"
        if name != "data":
            continue
        if value.strip() == "[DONE]":
            return "openai-sse"
        try:
            event = orjson.loads(value)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict):
            if event.get("object") == "chat.completion.chunk" or "choices" in event:
                return "openai-sse"
            if event.get("type") in _ANTHROPIC_EVENTS:
                return "anthropic-sse"
    return None


# -- reading ----------------------------------------------------------------------------------------


def read_recordings(
    data: bytes, path: str, fmt: str = "auto", *, file: str | None = None
) -> tuple[str, list[Recording]]:
    """The streams recorded in ``data`` (the content of ``path``), and the format they were read as.

    ``fmt`` is one of :data:`FORMATS`; ``file`` names a file that holds ``data``, if there is one (a
    session log is read from it; otherwise from a temporary copy). Raises :class:`UnknownFormat` when
    ``auto`` cannot tell, and ``ImportError`` for an SSE body when the ``http`` extra is not installed.
    """
    if fmt == "auto":
        fmt = detect_format(data)
    if fmt == "jsonl":
        return fmt, [_read_jsonl(data, path)]
    if fmt == "harness-session":
        return fmt, _read_session(data, path, file)
    if fmt in ("openai-sse", "anthropic-sse"):
        return fmt, [_read_provider(data, path, fmt)]
    raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")


def _read_jsonl(data: bytes, path: str) -> Recording:
    chunks: list[Any] = []
    lines: list[int | None] = []
    for lineno, raw in _lines(data):
        try:
            chunks.append(orjson.loads(raw))
        except orjson.JSONDecodeError as exc:
            chunks.append(InvalidLine(raw.decode("utf-8", "backslashreplace").strip(), str(exc)))
        lines.append(lineno)
    return Recording(path, 0, "jsonl", chunks, lines)


def _read_session(data: bytes, path: str, file: str | None) -> list[Recording]:
    if file is not None:
        streams = list(read_session(file))
    else:  # standard input: read_session reads a file by its name
        with tempfile.TemporaryDirectory() as folder:
            name = os.path.join(folder, "session.jsonl")
            with open(name, "wb") as handle:
                handle.write(data)
            streams = list(read_session(name))
    return [
        Recording(path, s.number, "harness-session", s.chunks, list(s.lines), turn=s.turn, step=s.step) for s in streams
    ]


class _Where:
    """The line of the provider event the converter is working on (the chunks it yields come from it)."""

    __slots__ = ("line", "text")

    def __init__(self) -> None:
        self.line: int | None = None
        self.text: str | None = None


def _sse_lines(data: bytes) -> list[str]:
    """The lines of an SSE body: they end at CR, LF or CRLF, as httpx-sse splits them."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _sse_records(data: bytes) -> Iterator[tuple[int | None, str]]:
    """``(line, data)`` of each event of an SSE body, with the line the event starts at.

    The events are decoded by httpx-sse's decoder, the one the adapters' ``EventSource`` runs over a live
    body, fed here line by line so that each event's line is known (``EventSource`` gives none). The end of
    the file ends the last event.
    """
    from httpx_sse._decoders import SSEDecoder  # the http extra

    decoder = SSEDecoder()
    start: int | None = None
    for lineno, line in enumerate([*_sse_lines(data), ""], start=1):
        if start is None and line and not line.startswith(":"):
            start = lineno
        event = decoder.decode(line)
        if event is not None:
            yield start, event.data
        if not line:
            start = None


def _json_records(data: bytes) -> Iterator[tuple[int | None, str]]:
    for lineno, raw in _lines(data):
        yield lineno, raw.decode("utf-8", "backslashreplace").strip()


def _provider_events(
    records: Iterable[tuple[int | None, str]], where: _Where, fmt: str, *, sse: bool
) -> Iterator[Mapping[str, Any]]:
    """Parsed provider events, with ``where`` following them; the end markers enforced as the adapters do."""
    who = "OpenAI" if fmt == "openai-sse" else "Anthropic"
    for line, text in records:
        where.line, where.text = line, text
        if sse and fmt == "openai-sse" and text == "[DONE]":
            return
        if not text:
            continue
        event = event_object(text, who)
        yield event
        if sse and fmt == "anthropic-sse" and event.get("type") == "message_stop":
            return
    if sse:
        where.text = None
        marker = "[DONE]" if fmt == "openai-sse" else "message_stop"
        raise LlmError(f"{who}: the recording ended without {marker}", ErrorCode.STREAM_CLOSED)


def _read_provider(data: bytes, path: str, fmt: str) -> Recording:
    from . import _anthropic, _openai

    convert: Callable[[Iterable[Any]], Iterator[Any]] = (
        _openai.from_openai_chunks if fmt == "openai-sse" else _anthropic.from_anthropic_events
    )
    sse = not _first_line(data).startswith(b"{")
    records = _sse_records(data) if sse else _json_records(data)
    where = _Where()
    recording = Recording(path, 0, fmt, [], [])
    try:
        for chunk in convert(_provider_events(records, where, fmt, sse=sse)):
            recording.chunks.append(chunk)
            recording.lines.append(where.line)
    except LlmError as err:
        recording.failure, recording.failure_line, recording.failure_text = err, where.line, where.text
    return recording


# -- checking ---------------------------------------------------------------------------------------


def _chunk_text(chunk: object) -> str:
    if isinstance(chunk, InvalidLine):
        return chunk.text
    try:
        return orjson.dumps(chunk).decode()
    except TypeError:
        return repr(chunk)


def check_recording(
    recording: Recording, policy: Policy | str, *, numbered: bool = False
) -> tuple[StreamReport, StreamResult | None]:
    """Run one recorded stream through a :class:`StreamAssembler`: its report, and its result if it is valid."""
    policy = Policy(policy)
    chunks, lines = recording.chunks, recording.lines
    common: dict[str, Any] = {
        "path": recording.path,
        "stream": recording.number,
        "numbered": numbered,
        "format": recording.format,
        "policy": policy.value,
        "chunks": len(chunks),
        "first_line": next((n for n in lines if n is not None), None),
        "last_line": next((n for n in reversed(lines) if n is not None), None),
        "turn": recording.turn,
        "step": recording.step,
    }
    asm = StreamAssembler(policy)
    try:
        asm.feed_many(chunks)
        if recording.failure is not None:
            raise recording.failure
        result = asm.close()
    except LlmError as err:
        return _bad(recording, policy, err, common), None
    blocks = tuple(b.type for b in result.blocks)
    calls = tuple((b.id, b.name) for b in result.blocks if isinstance(b, ToolCallBlock))
    wire = result.to_wire()
    report = StreamReport(
        ok=True,
        blocks=blocks,
        tool_calls=calls,
        usage=wire["usage"],
        finish=wire["finish"],
        interrupted=tuple(b.type for b in result.interrupted),
        **common,
    )
    return report, result


def _bad(recording: Recording, policy: Policy, err: LlmError, common: dict[str, Any]) -> StreamReport:
    chunks, lines = recording.chunks, recording.lines
    index = err.chunk_index
    if err is recording.failure:  # the converter's (or the reader's) error, after every chunk it made
        line, text, state, expected = recording.failure_line, recording.failure_text, None, None
    else:
        assert index is not None, err
        # The state the offending chunk met: replay the chunks before it (on the error path only).
        replay = StreamAssembler(policy)
        replay.feed_many(chunks[:index])
        state = replay.state
        expected = expected_in(state, policy)
        at = index if index < len(chunks) else len(chunks) - 1  # STREAM_TRUNCATED: the last chunk received
        line = lines[at] if at >= 0 else None
        text = _chunk_text(chunks[at]) if at >= 0 else None
    return StreamReport(
        ok=False,
        code=str(err.code),
        message=err.message,
        chunk_index=index,
        line=line,
        state=state,
        expected=expected,
        chunk=text,
        **common,
    )


def check_data(
    data: bytes,
    path: str,
    fmt: str = "auto",
    policy: Policy | str = Policy.STRICT,
    *,
    file: str | None = None,
    results: bool = False,
) -> FileReport:
    """Check every stream recorded in ``data`` (the content of ``path``; ``-`` for standard input).

    ``file`` names a file that holds ``data``, if there is one (see :func:`read_recordings`). A format that
    cannot be told, or an SSE body without the ``http`` extra, is the file's ``error``. With ``results``,
    the report keeps each valid stream's :class:`StreamResult`.
    """
    if data.startswith(codecs.BOM_UTF8):
        data, file = data[len(codecs.BOM_UTF8) :], None  # the file no longer holds data as it is
    try:
        resolved, recordings = read_recordings(data, path, fmt, file=file)
    except UnknownFormat as exc:
        return FileReport(path, None, [], f"cannot tell the format: {exc}")
    except ImportError as exc:
        return FileReport(path, None, [], f"reading SSE needs the http extra (pip install 'streamfsm[http]'): {exc}")
    numbered = resolved == "harness-session"
    checked = [check_recording(r, policy, numbered=numbered) for r in recordings]
    return FileReport(
        path,
        resolved,
        [report for report, _ in checked],
        results=[result for _, result in checked] if results else None,
    )


def check_file(
    path: str, fmt: str = "auto", policy: Policy | str = Policy.STRICT, *, results: bool = False
) -> FileReport:
    """:func:`check_data` for a file by name; a file that cannot be read is the report's ``error``."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
            # A pipe (``<(zcat log.gz)``) or a device gives its content once: a session log is then read
            # from ``data``, not from the file again.
            regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
    except OSError as exc:
        return FileReport(path, None, [], f"cannot read: {exc.strerror or exc}")
    return check_data(data, path, fmt, policy, file=path if regular else None, results=results)

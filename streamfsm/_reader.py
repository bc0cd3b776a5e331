"""The one reader of recordings: the library, the command and the tests read every recorded stream here.

What a source, a format and a stream are is ``_recordings.py``'s; this module reads each format: JSON lines and
session logs here, a provider's stream through its wire API's converter (``_providers/recorded.py``). A provider
format also reads the wire API's non-streamed answer: a source that is one JSON object, pretty-printed over
several lines, is one response body, and JSON lines whose first line is one are one body a line
(``_bodies.recorded_bodies``): each body is read as the one stream (one turn) it stands for by the wire API's body
reader (``sf.from_openai_completion``, ...; ``_providers/recorded.body_streams``), every chunk at the body's
first line.

One rule for every format and entry point (``read_recordings``, ``read_session``, ``assemble_jsonl``,
``validate_jsonl``, ``streamfsm check`` and ``assemble``):

- **Lines** are the one rule of ``_lines.py``: JSON lines and session logs split at LF (a CR before it is JSON
  whitespace), blank lines skipped (they count for line numbers, 1-based, and take no position in the
  stream), a BOM at the very start skipped. An SSE body is split at CR, LF or CRLF, as the SSE specification
  says. (A text file object opened with universal newlines has already turned CR into a line end: that is the
  file object's choice.)

Formats (:data:`~._recordings.FORMATS`): ``jsonl`` (one chunk a line), ``harness-session`` (a DeepSeek Harness session
log, SPEC §6: ``assistant/chunk`` event lines and packed ``*-chunks`` storage rows, one stream per
``finish``), and one format per wire API, each a provider's SSE body or its events as JSON lines (one event a
line), converted by the wire API's converter (:data:`~._recordings.PROVIDER_FORMATS`): ``openai-sse`` (chat
completions and the legacy completions API, ``sf.from_openai_chunks``), ``anthropic-sse`` (Messages,
``sf.from_anthropic_events``), ``openai-responses`` (``sf.from_openai_responses_events``), ``gemini``
(``sf.from_gemini_chunks``), ``bedrock`` (``sf.from_bedrock_events``: the events boto3's ``converse_stream``
yields, as JSON lines) and ``cohere`` (``sf.from_cohere_events``). ``auto`` tells them apart by the first lines.
An SSE body is parsed by the adapters' own parser (``_providers/sse.py``), each event knowing the line it starts at.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from ._bodies import recorded_bodies
from ._chunk_rows import ROW_TYPES, SCAN_BYTES, MalformedRow, expand_row, scan_row
from ._lines import Lines, Numbered, not_json
from ._providers.recorded import body_streams, provider_streams
from ._recordings import (
    FORMATS,
    ROW_SHOWN,
    Entry,
    RecordedChunks,
    RecordedStream,
    RecordingSource,
    Where,
    detect,
    invalid_line,
    raw_lines,
    source_name,
)

__all__ = ["open_recordings", "read_recordings", "read_session", "scan_recordings"]


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
    path = name if name is not None else source_name(source)
    lines = Lines(raw_lines(source))
    lines.peek(1)  # opens a path now: a file that cannot be read fails here
    fmt = detect(lines) if format == "auto" else format
    if fmt == "jsonl":
        stream = RecordedChunks(path, 0, fmt, iter(()))
        stream.where = Where()
        stream.entries = _jsonl_entries(lines, stream.where)
        return fmt, iter([stream])
    if fmt == "harness-session":
        return fmt, _session_streams(lines, path)
    bodies = recorded_bodies(lines, fmt)
    if bodies is not None:  # non-streamed answers: one stream each
        return fmt, body_streams(bodies, fmt, path)
    return fmt, provider_streams(lines, fmt, path)


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


def _jsonl_entries(lines: Iterable[bytes], where: Where) -> Iterator[Entry]:
    for lineno, raw in Numbered(lines):
        where.read(raw)
        try:
            chunk = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            chunk = invalid_line(raw, not_json(exc))
        del raw  # the line goes before its chunk is checked: a long one is not held twice
        yield chunk, lineno, 0


def _session_entries(lines: Iterable[bytes], where: Where) -> Iterator[tuple[Any, int, int, Any]]:
    """Every chunk a session log records, in order: ``(chunk, line, member, data)`` (``data``: its line's); ``where``
    follows the line of the chunk given last (``_session_streams`` reads one chunk ahead: it keeps its own)."""
    for lineno, raw in Numbered(lines):
        where.read(raw)
        # A long packed row is read in place, its members parsed as the machine takes them (_chunk_rows.py).
        record = scan_row(raw) if len(raw) > SCAN_BYTES else None
        if record is None:
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                yield invalid_line(raw, not_json(exc)), lineno, 0, None
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
                yield invalid_line(raw, str(exc), f"malformed {kind} storage row", ROW_SHOWN), lineno, 0, None
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
    reading, given = Where(), Where()  # the line read ahead, and the line of the chunk given last
    entries = _session_entries(lines, reading)
    ahead = next(entries, None)  # the first chunk of the next stream: there is one when this is not None
    number = 0

    def stream_entries() -> Iterator[Entry]:
        nonlocal ahead
        while ahead is not None:
            chunk, line, k, _ = ahead
            given.raw, given.cut = reading.raw, reading.cut
            ahead = next(entries, None)
            yield chunk, line, k
            if _is_finish(chunk):
                return

    while ahead is not None:
        stream = RecordedChunks(path, number, "harness-session", stream_entries())
        stream.where = given
        data = ahead[3]
        if isinstance(data, dict):  # the turn and step of the stream's first chunk
            stream.turn, stream.step = data.get("turn"), data.get("step")
        yield stream
        stream.drain()  # what the caller left of it
        number += 1

"""Reading a recorded provider stream (an SSE body, or its events as JSON lines): the events parsed as a live body's
are, converted by the wire API's converter, one stream per turn (:data:`.turns.TURN_APIS`), each chunk knowing
the line of the event it came from. The one reader (``streamfsm/_reader.py``) reads provider formats here.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, Final

from .._errors import ErrorCode, LlmError
from .._lines import MAX_LINE_BYTES, Lines, Numbered
from .._recordings import READERS, Entry, RecordedChunks, Where
from .._wire import StreamChunk
from .anthropic_messages_body import message_chunks
from .bedrock_body import converse_chunks
from .cohere_body import chat_chunks
from .convert import END_OF_TURN, Turns, event_object
from .gemini_body import generate_content_chunks
from .openai_chat_body import completion_chunks
from .openai_responses_body import response_chunks
from .sse import SSEParser
from .turns import TURN_APIS

__all__ = ["body_streams", "provider_streams"]

#: Per provider format: the chunks of its non-streamed answer, one response body (the ``<api>_body.py`` modules).
_BODIES: Final[dict[str, Callable[[Any], Iterator[StreamChunk]]]] = {
    "openai-sse": completion_chunks,
    "anthropic-sse": message_chunks,
    "openai-responses": response_chunks,
    "gemini": generate_content_chunks,
    "bedrock": converse_chunks,
    "cohere": chat_chunks,
}

#: The SSE bodies whose last turn must end with a marker of their own, as the adapters require it; the other wire
#: APIs' converters say whether the response was complete when the body ends.
_MARKERS: Final = {"openai-sse": "[DONE]", "anthropic-sse": "message_stop"}


def _sse_records(lines: Iterable[bytes]) -> Iterator[tuple[int | None, str]]:
    """``(line, data)`` of each event of an SSE body, with the SSE line the event starts at.

    The events are parsed by the adapters' own parser (``sse.py``, the one that reads a live body),
    fed the recording line by line as it is read. The end of the recording ends the last event (a file often
    lacks the blank line after it). One event holds at most :data:`MAX_LINE_BYTES`, as one line does:
    past it, ``LIMIT_EXCEEDED``.
    """
    parser = SSEParser(MAX_LINE_BYTES)
    for raw in lines:
        for event in parser.feed(raw):
            yield event.line, event.data
    for event in parser.end(complete=True):
        yield event.line, event.data


def _json_records(lines: Iterable[bytes]) -> Iterator[tuple[int | None, str]]:
    for lineno, raw in Numbered(lines):
        yield lineno, raw.decode("utf-8", "backslashreplace").strip()


def _provider_events(
    records: Iterable[tuple[int | None, str]], where: Where, fmt: str, *, sse: bool
) -> Generator[Any, None, None]:
    """Parsed provider events, with ``where`` following them; an SSE body's ``[DONE]`` as the end of a turn; the
    end markers enforced as the adapters do (the last turn of a chat-completions body ends with ``[DONE]``, of a
    Messages body with ``message_stop``)."""
    who = READERS[fmt][1]
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


def provider_streams(lines: Lines, fmt: str, path: str) -> Iterator[RecordedChunks]:
    """A provider recording converted to block-protocol chunks, one stream per turn (``turns.py``).

    A recording holds one or more turns, each ended where its wire API says (SSE bodies and JSON lines of events
    alike); a recorded SSE body is otherwise read as the adapters read a live one: an event that is not a JSON
    object is ``MALFORMED_RESPONSE``, and the last turn of a chat-completions or Messages body needs its end
    marker. Except that the last event needs no blank line after it: a file often ends without one. A turn's
    conversion error becomes its stream's ``failure``, and that stream is the last.
    """
    api = TURN_APIS[READERS[fmt][0]]
    sse = not lines.first_content().startswith(b"{")
    where = Where()
    events = _provider_events(_sse_records(lines) if sse else _json_records(lines), where, fmt, sse=sse)
    turns = Turns(api.new, events, on_failure=where.fail)
    try:
        for number, chunks in enumerate(turns):
            stream = RecordedChunks(path, number, fmt, iter(()))
            stream.entries = _turn_entries(chunks, where, stream, turns)
            yield stream
            stream.drain()  # what the caller left of it
    finally:
        events.close()  # what is left of the body is not read (a file is closed now)


def _turn_entries(chunks: Iterator[Any], where: Where, stream: RecordedChunks, turns: Turns) -> Iterator[Entry]:
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


def body_streams(bodies: Iterator[tuple[int, object]], fmt: str, path: str) -> Iterator[RecordedChunks]:
    """A recording of non-streamed answers (``(line, body)`` of wire API ``fmt``: a parsed body, or a line of JSON
    lines to parse) read as one stream a body, the one turn each stands for: the chunks its stream would have
    converted to (``<api>_body.py``), each at the body's line; what the body's reader raises (a line that is not a
    JSON object included) becomes the stream's ``failure``."""
    read = _BODIES[fmt]
    who = READERS[fmt][1]
    ahead = next(bodies, None)
    number = 0
    while ahead is not None:
        line, body = ahead
        stream = RecordedChunks(path, number, fmt, iter(()))
        stream.entries = _body_entries(read, body, who, stream, line)
        ahead = next(bodies, None)
        stream.more = ahead is not None
        yield stream
        stream.drain()  # what the caller left of it
        number += 1


def _body_entries(
    read: Callable[[Any], Iterator[StreamChunk]], body: object, who: str, stream: RecordedChunks, line: int
) -> Iterator[Entry]:
    try:
        given = event_object(body.decode("utf-8", "backslashreplace"), who) if isinstance(body, bytes) else body
        for chunk in read(given):
            yield chunk, line, 0
    except LlmError as err:
        stream.failure, stream.failure_line = err, line

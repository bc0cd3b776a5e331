"""A recording that is a wire API's non-streamed answer: one response body (a JSON object, on one line or
pretty-printed over several), told apart from a stream by its fields.

Core, as ``_recordings.py`` is: it knows each wire API's body only by its fields (the readers are
``streamfsm/_providers/*_body.py``); ``_recordings.detect`` tells a body's format with it, and the one reader
(``_reader.py``) reads a body as the one stream it stands for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import orjson

from ._lines import BLANK, MAX_LINE_BYTES, Lines, Numbered

__all__ = ["GEMINI_FIELDS", "body_format", "recorded_bodies", "whole_document"]

#: The fields of a Gemini ``GenerateContentResponse`` (an answer, or a chunk of its stream), any of which tells one.
GEMINI_FIELDS: Final = ("candidates", "usageMetadata", "modelVersion", "promptFeedback", "responseId")


def body_format(record: Mapping[str, Any]) -> str | None:
    """The wire API whose non-streamed answer (one response body) ``record`` is, told by its fields; None for
    anything else (an event of a stream, a chunk): a ``chat.completion`` or ``text_completion`` (an object whose
    choices carry a ``message`` or a ``text``) ``openai-sse``, a Messages API ``message`` ``anthropic-sse``, a
    ``response`` (an ``output`` list) ``openai-responses``, a ``GenerateContentResponse`` ``gemini`` (the shape of
    each chunk of its stream), a ``converse`` answer (an ``output`` object with its ``message``) ``bedrock``, a
    Cohere v2 chat answer (a ``message`` object and a ``finish_reason``) ``cohere``."""
    kind = record.get("type")
    choices = record.get("choices")
    if record.get("object") in ("chat.completion", "text_completion") or (
        isinstance(choices, list)
        and any(isinstance(c, Mapping) and ("message" in c or "text" in c) and "delta" not in c for c in choices)
    ):
        return "openai-sse"
    if kind == "message" and isinstance(record.get("content"), list):
        return "anthropic-sse"
    if record.get("object") == "response" or (kind is None and isinstance(record.get("output"), list)):
        return "openai-responses"
    if kind is None and isinstance(record.get("output"), Mapping) and "message" in record["output"]:
        return "bedrock"
    if kind is None and isinstance(record.get("message"), Mapping) and "finish_reason" in record:
        return "cohere"
    if kind is None and any(key in record for key in GEMINI_FIELDS):
        return "gemini"
    return None


def whole_document(lines: Lines) -> object:
    """The source as one JSON document, when it is one written over several lines (a pretty-printed body), read
    ahead into ``lines`` (within :data:`MAX_LINE_BYTES`, the bound of one line: past it, or if the lines are not one
    JSON document, None)."""
    size = count = 0
    while True:
        ahead = lines.peek(count + 1)
        if len(ahead) <= count:
            break
        size += len(ahead[count])
        count += 1
        if size > MAX_LINE_BYTES:
            return None
    if count < 2:
        return None
    try:
        return orjson.loads(b"".join(ahead))
    except orjson.JSONDecodeError:
        return None


def recorded_bodies(lines: Lines, fmt: str) -> Iterator[tuple[int, object]] | None:
    """The non-streamed answers of wire API ``fmt`` that the source holds, as ``(line, body)``, or None when it is a
    stream: one JSON object written over several lines (a stream of events never is: its body, at its first
    line), or JSON lines whose first line is ``fmt``'s body (:func:`body_format`) of a shape no chunk of its stream
    has: each line one body, given as it is read (its bytes, parsed by the reader of each, which refuses what is
    not a body)."""
    first = lines.first_content()
    if not first.startswith(b"{"):
        return None
    try:
        record = orjson.loads(first)
    except orjson.JSONDecodeError:
        document = whole_document(lines)
        if not isinstance(document, dict):
            return None
        line = next(number for number, raw in enumerate(lines.ahead, 1) if raw.strip(BLANK))
        return iter([(line, document)])
    if not isinstance(record, dict) or body_format(record) != fmt or _chunk_shaped(record, fmt):
        return None
    return iter(Numbered(lines))


def _chunk_shaped(body: Mapping[str, Any], fmt: str) -> bool:
    """Whether ``body`` has the shape of a chunk of its wire API's stream, so that JSON lines of such are a stream:
    Gemini's (each chunk is a ``GenerateContentResponse``), a legacy completion's (``text_completion`` chunks carry
    their ``text`` as the body does). Alone on one line, as a stream of one chunk, it reads the same."""
    if fmt == "gemini":
        return True
    choices = body.get("choices")
    return body.get("object") == "text_completion" or (
        isinstance(choices, list) and not any(isinstance(c, Mapping) and "message" in c for c in choices)
    )

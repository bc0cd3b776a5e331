"""A non-streamed Cohere v2 chat answer read as a :class:`~streamfsm.StreamResult`.

``POST /v2/chat`` answers with ``message`` (``content``, ``tool_plan``, ``tool_calls``, ``citations``),
``finish_reason`` and ``usage``; its stream sends the same as ``message-start``, ``tool-plan-delta``,
``content-start``, ``tool-call-start``, ``citation-start`` and ``message-end`` events. The body is given as that
stream, each part whole at its start, and converted by :class:`CohereConverter`: the result is the stream's, by
the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._config import Limits
from .._models import StreamResult
from .cohere import CohereConverter
from .convert import BodyReader, answer, malformed

__all__ = ["chat_chunks", "chat_events", "from_cohere_response"]


def _list(message: Mapping[str, Any], key: str) -> list[Any]:
    value = message.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise malformed(f"a v2 chat body's 'message.{key}' must be a list, got {type(value).__name__}")
    return value


def _event(kind: str, index: int | None, key: str, value: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "delta": {"message": {key: value}}}
    if index is not None:
        event["index"] = index
    return event


def chat_events(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The v2 chat stream events a chat answer would have been streamed as: its reasoning (``thinking`` parts)
    first, then the tool plan, the other content parts, the tool calls, the citations, and ``message-end``.

    An error body (``{"message": "..."}``, what the API answers with an HTTP error, or ``{"error": ...}``) is the
    stream's error event.
    """
    message = body.get("message")
    if isinstance(message, str):
        return [{"error": {"message": message}}]
    if message is None and body.get("error") is not None:
        return [{"error": body["error"]}]
    if not isinstance(message, Mapping):
        raise malformed(f"a v2 chat body must have a 'message' object, got {type(message).__name__}")
    start: dict[str, Any] = {"type": "message-start", "delta": {"message": {"role": "assistant"}}}
    if isinstance(body.get("id"), str):
        start["id"] = body["id"]
    events: list[Mapping[str, Any]] = [start]
    content = _list(message, "content")
    thinking = [i for i, part in enumerate(content) if isinstance(part, Mapping) and part.get("type") == "thinking"]
    plan = message.get("tool_plan")
    order = thinking + [i for i in range(len(content)) if i not in thinking]
    for number, i in enumerate(order):
        if number == len(thinking) and plan:
            events.append(_event("tool-plan-delta", None, "tool_plan", plan))
        events.append(_event("content-start", i, "content", content[i]))
        events.append({"type": "content-end", "index": i})
    if plan and len(order) == len(thinking):
        events.append(_event("tool-plan-delta", None, "tool_plan", plan))
    for i, call in enumerate(_list(message, "tool_calls")):
        events.append(_event("tool-call-start", i, "tool_calls", call))
        events.append({"type": "tool-call-end", "index": i})
    for i, citation in enumerate(_list(message, "citations")):
        events.append(_event("citation-start", i, "citations", citation))
        events.append({"type": "citation-end", "index": i})
    end: dict[str, Any] = {"finish_reason": body.get("finish_reason")}
    if body.get("usage") is not None:
        end["usage"] = body["usage"]
    events.append({"type": "message-end", "delta": end})
    return events


#: ``chat_chunks(body, limits)``: the chunks of the v2 chat answer, as its stream would convert to them.
chat_chunks: Final = BodyReader(CohereConverter, chat_events, "a v2 chat body")


def from_cohere_response(body: Any, *, limits: Limits | None = None) -> StreamResult:
    """Read a non-streamed Cohere v2 chat answer into the :class:`~streamfsm.StreamResult` its stream would
    assemble to.

    ``body``: a v2 chat response (``{"id", "message": {...}, "finish_reason", "usage"}``), as a dict or the
    ``cohere`` SDK's ``V2ChatResponse`` (what ``ClientV2.chat`` returns). It is read as :func:`from_cohere_events`
    reads the stream: ``text`` parts are text, ``thinking`` parts and the ``tool_plan`` reasoning (the plan's
    block index in the replay state), ``tool_calls`` tool calls, citations and parts of other types kept for
    replay; ``finish_reason`` and ``usage`` are mapped as in a stream.

    Raises :class:`~streamfsm.LlmError`: ``MALFORMED_RESPONSE`` for a body that is not one (no ``message``
    object, no ``finish_reason``), the code a stream's error gets for an error body or an ``ERROR`` finish,
    ``EMPTY_RESPONSE`` for a ``COMPLETE`` with no content, and the machine's codes (``LIMIT_EXCEEDED`` past
    ``limits``).
    """
    return answer(chat_chunks(body, limits), limits)

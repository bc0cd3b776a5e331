"""A non-streamed OpenAI-compatible chat completion (``chat.completion``; the legacy ``text_completion`` too) read
as a :class:`~streamfsm.StreamResult`.

The body is turned into the one ``chat.completion.chunk`` its stream would have been (each choice's ``message`` as
its ``delta``, whole; the finish reason and the usage beside it) and converted by :class:`OpenAIConverter`: the
result is the stream's, by the same rules (kept parts, finish and usage mapping, limits, errors).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._config import Limits
from .._models import StreamResult
from .convert import BodyReader, answer, malformed
from .openai_chat import OpenAIConverter

__all__ = ["completion_chunks", "completion_events", "from_openai_completion"]


def _delta(choice: Mapping[str, Any]) -> Mapping[str, Any]:
    """A choice's answer as a whole ``delta``: the chat ``message`` (its tool calls given their ``index``), or a
    legacy completion's ``text`` as ``content``."""
    if "message" not in choice and "text" in choice:  # object: "text_completion"
        return {"content": choice["text"]}
    message = choice.get("message")
    if message is None:
        return {}
    if not isinstance(message, Mapping):
        raise malformed(f"a choice's 'message' must be an object, got {type(message).__name__}")
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return message  # no calls (null, absent), or what the converter refuses as it would in a stream
    indexed = [
        {**call, "index": i} if isinstance(call, Mapping) and "index" not in call else call
        for i, call in enumerate(calls)
    ]
    return {**message, "tool_calls": indexed}


def completion_events(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``chat.completion.chunk`` a ``chat.completion`` (or ``text_completion``) body would have been streamed as.

    An error body (``{"error": ...}``) is given as it is: the converter classifies it as an error chunk.
    """
    if body.get("error"):
        return [body]
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        given = "an empty list" if choices == [] else type(choices).__name__
        raise malformed(f"a chat.completion body must have a non-empty 'choices' list, got {given}")
    streamed = []
    for choice in choices:
        if not isinstance(choice, Mapping):
            raise malformed(f"a choice must be an object, got {type(choice).__name__}")
        streamed.append(
            {"index": choice.get("index", 0), "delta": _delta(choice), "finish_reason": choice.get("finish_reason")}
        )
    chunk: dict[str, Any] = {key: body[key] for key in ("id", "model", "usage") if key in body}
    chunk["object"] = "chat.completion.chunk"
    chunk["choices"] = streamed
    return [chunk]


#: ``completion_chunks(body, limits)``: the chunks of the chat completion body, as its stream would convert to them.
completion_chunks: Final = BodyReader(OpenAIConverter, completion_events, "a chat.completion body")


def from_openai_completion(body: Any, *, limits: Limits | None = None) -> StreamResult:
    """Read a non-streamed chat completion into the :class:`~streamfsm.StreamResult` its stream would assemble to.

    ``body``: a ``chat.completion`` object, as a dict or the ``openai`` SDK's ``ChatCompletion`` (a legacy
    ``text_completion``, whose ``choices[].text`` is a text block, too). Its ``message`` is read as
    :func:`from_openai_chunks` reads a stream's deltas: ``reasoning_content`` (or ``reasoning``) is reasoning,
    ``content`` (a string or Mistral's list of parts) and ``refusal`` text, ``tool_calls`` tool calls; parts the
    protocol has no word for are kept for replay; ``finish_reason`` and ``usage`` are mapped as in a stream.

    Raises :class:`~streamfsm.LlmError`: ``MALFORMED_RESPONSE`` for a body that is not one (no ``choices``, no
    ``finish_reason``, ...), the code a stream's error chunk gets for an error body (``{"error": ...}``),
    ``EMPTY_RESPONSE`` for a ``stop`` with no content, and the machine's codes (``LIMIT_EXCEEDED`` past
    ``limits``).
    """
    return answer(completion_chunks(body, limits), limits)

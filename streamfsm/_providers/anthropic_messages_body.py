"""A non-streamed Anthropic ``Message`` read as a :class:`~streamfsm.StreamResult`.

The Messages API's stream can carry a whole turn in its ``message_start`` (programmatic tool calling does), and
:class:`AnthropicConverter` converts content given there as it converts streamed blocks: the body is given as that
``message_start`` (its content whole), then ``message_stop``. The result is the stream's, by the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._config import Limits
from .._models import StreamResult
from .anthropic_messages import AnthropicConverter
from .convert import BodyReader, answer, malformed

__all__ = ["from_anthropic_message", "message_chunks", "message_events"]


def message_events(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The events a ``Message`` body would have been streamed as: its ``message_start`` and ``message_stop``.

    An error body (``{"type": "error", "error": {...}}``, what the API answers with an HTTP error) is the stream's
    ``error`` event already.
    """
    if body.get("type") == "error":
        return [body]
    if body.get("error") is not None:  # an error object without the envelope (a gateway's)
        return [{"type": "error", "error": body["error"]}]
    if not isinstance(body.get("content"), list):
        raise malformed(f"a Messages body must have a 'content' list, got {type(body.get('content')).__name__}")
    return [{"type": "message_start", "message": body}, {"type": "message_stop"}]


#: ``message_chunks(body, limits)``: the chunks of the Messages body, as its stream would convert to them.
message_chunks: Final = BodyReader(AnthropicConverter, message_events, "a Messages body")


def from_anthropic_message(body: Any, *, limits: Limits | None = None) -> StreamResult:
    """Read a non-streamed Messages API answer into the :class:`~streamfsm.StreamResult` its stream would assemble to.

    ``body``: a ``Message`` (``{"type": "message", "content": [...], "stop_reason", "usage", ...}``), as a dict or
    the ``anthropic`` SDK's object. Its content blocks are read as :func:`from_anthropic_events` reads streamed
    ones: ``text`` is text (its citations kept), ``thinking`` reasoning (its signature in the replay state),
    ``tool_use`` a tool call (its ``input`` as the arguments, compact JSON), every other block
    (``redacted_thinking``, ``server_tool_use`` and its results, MCP, ``compaction``, ...) kept verbatim for
    replay; ``stop_reason`` and ``usage`` are mapped as in a stream.

    Raises :class:`~streamfsm.LlmError`: ``MALFORMED_RESPONSE`` for a body that is not a message (no ``content``
    list, no ``stop_reason``, ...), the code a stream's ``error`` event gets for an error body, ``EMPTY_RESPONSE``
    for an ``end_turn`` with no content, and the machine's codes (``LIMIT_EXCEEDED`` past ``limits``).
    """
    return answer(message_chunks(body, limits), limits)

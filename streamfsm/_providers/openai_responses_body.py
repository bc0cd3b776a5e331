"""A non-streamed OpenAI Responses answer (a ``Response`` object) read as a :class:`~streamfsm.StreamResult`.

A response streams each output item between ``response.output_item.added`` and ``.done``, and the ``.done`` event
carries the item whole: :class:`OpenAIResponsesConverter` converts an item sent whole at its ``.done``. The body is
given as the stream a server that sends items whole would send: ``response.created`` (the response without its
output), each item's ``response.output_item.done``, and the terminal event its ``status`` names. The result is the
stream's, by the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._config import Limits
from .._models import StreamResult
from .._quote import quote
from .convert import BodyReader, answer, malformed
from .openai_responses import OpenAIResponsesConverter

__all__ = ["from_openai_response", "response_chunks", "response_events"]

#: A response's ``status`` → the event that ends its stream (a response without a status is taken as completed).
_TERMINAL: Final = {
    None: "response.completed",
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
}


def response_events(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The events a ``Response`` body would have been streamed as, its items whole.

    An error body (``{"error": {...}}`` without a response's ``output``) is the stream's ``error`` event.
    """
    output = body.get("output")
    if output is None and body.get("error") is not None:
        return [{"type": "error", "error": body["error"]}]
    if not isinstance(output, list):
        raise malformed(f"a Responses body must have an 'output' list, got {type(output).__name__}")
    status = body.get("status")
    terminal = _TERMINAL.get(status) if status is None or isinstance(status, str) else None
    if terminal is None:
        raise malformed(f"a Responses body with status {quote(status)} is not a finished response")
    started = {key: value for key, value in body.items() if key != "output"}
    events: list[Mapping[str, Any]] = [{"type": "response.created", "response": started}]
    events += [{"type": "response.output_item.done", "output_index": i, "item": item} for i, item in enumerate(output)]
    events.append({"type": terminal, "response": body})
    return events


#: ``response_chunks(body, limits)``: the chunks of the Responses body, as its stream would convert to them.
response_chunks: Final = BodyReader(OpenAIResponsesConverter, response_events, "a Responses body")


def from_openai_response(body: Any, *, limits: Limits | None = None) -> StreamResult:
    """Read a non-streamed Responses API answer into the :class:`~streamfsm.StreamResult` its stream would assemble to.

    ``body``: a ``Response`` object (``{"object": "response", "status", "output": [...], "usage", ...}``), as a dict
    or the ``openai`` SDK's ``Response``. Its output items are read as :func:`from_openai_responses_events` reads
    streamed ones: a ``message``'s ``output_text`` and ``refusal`` parts are text (annotations kept), a
    ``reasoning`` item's summary and text parts reasoning (the item kept for replay), a ``function_call`` or
    ``custom_tool_call`` a tool call, a call of the API's own tools the client runs (``local_shell_call``,
    ``shell_call``, ``apply_patch_call``, ``computer_call``, a client ``tool_search_call``) a tool call named for
    the tool, every other item kept for replay. ``status`` gives the finish as the stream's terminal event does
    (``completed``: ``stop``, or ``tool-calls`` with a client call; ``incomplete``: by its reason; ``failed``:
    the response's error, raised), and ``usage`` is mapped as in a stream.

    Raises :class:`~streamfsm.LlmError`: ``MALFORMED_RESPONSE`` for a body that is not a finished response (no
    ``output`` list, a ``status`` such as ``in_progress``), the codes of a failed response or of an error body
    (``{"error": ...}``) that the stream's ``response.failed`` and ``error`` events get, ``EMPTY_RESPONSE`` for a
    completed response with no content, and the machine's codes (``LIMIT_EXCEEDED`` past ``limits``).
    """
    return answer(response_chunks(body, limits), limits)

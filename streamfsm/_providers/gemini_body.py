"""A non-streamed Gemini answer (``generateContent``) read as a :class:`~streamfsm.StreamResult`.

``generateContent`` answers with one ``GenerateContentResponse``, the shape of each chunk of
``streamGenerateContent``: the body is its stream's one chunk (its parts whole), converted by
:class:`GeminiConverter`. The result is the stream's, by the same rules.
"""

from __future__ import annotations

from typing import Any, Final

from .._config import Limits
from .._models import StreamResult
from .convert import BodyReader, answer
from .gemini import GeminiConverter, gemini_event

__all__ = ["from_gemini_response", "generate_content_chunks"]


#: ``generate_content_chunks(body, limits)``: the chunks of the body, as its stream would convert to them.
generate_content_chunks: Final = BodyReader(
    GeminiConverter, lambda event: (event,), "a GenerateContentResponse body", gemini_event
)


def from_gemini_response(body: Any, *, limits: Limits | None = None) -> StreamResult:
    """Read a non-streamed Gemini answer into the :class:`~streamfsm.StreamResult` its stream would assemble to.

    ``body``: a ``GenerateContentResponse`` (``generateContent``'s answer), as a dict (camelCase as the API sends
    it, or snake_case) or the ``google-genai`` SDK's object. It is read as :func:`from_gemini_chunks` reads a
    stream of one chunk: ``text`` parts are text, ``thought`` parts reasoning (their signatures in the replay
    state), ``functionCall`` parts tool calls, other parts and candidate fields (grounding, citations) kept for
    replay; ``finishReason``, ``promptFeedback`` and ``usageMetadata`` are mapped as in a stream.

    Raises :class:`~streamfsm.LlmError`: ``MALFORMED_RESPONSE`` for a body that is not one (no ``finishReason``,
    several candidates, ...), the code a stream's error chunk gets for an error body (``{"error": ...}``),
    ``EMPTY_RESPONSE`` for a ``STOP`` with no content, and the machine's codes (``LIMIT_EXCEEDED`` past ``limits``).
    """
    return answer(generate_content_chunks(body, limits), limits)

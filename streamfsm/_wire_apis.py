"""The wire APIs streamfsm reads, each declared once, as one row (:class:`WireApi`): what its recordings are called,
which public functions and classes serve it, how its SDK's objects and its OpenTelemetry provider are named.

Core, as ``_recordings.py`` is: a row names the provider layer's functions and classes (``streamfsm/_providers/``)
by their names, so that the core imports nothing of it. The lists of wire APIs are read from
:data:`WIRE_APIS`: the formats (``streamfsm.FORMATS``) and their readers (``_recordings.READERS``), the SDK object
whose type tells its API, the hint that names a converter, ``streamfsm.otel.PROVIDER_NAMES``. What must hold a
function itself (``_providers/turns.TURN_APIS``, the body readers of ``_providers/recorded.py``, the ``api=`` names
of :func:`streamfsm.checked`) is held against these rows by ``tests/providers/test_wire_apis.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["WIRE_APIS", "WireApi", "wire_api"]


@dataclass(frozen=True, slots=True)
class WireApi:
    """One wire API: its names across the package."""

    #: Its recordings' format, as ``format=`` (and :func:`streamfsm.checked`'s ``api=``) names it.
    format: str
    #: The ``from_...`` function that converts its stream (``streamfsm.<reader>``).
    reader: str
    #: The ``from_...`` function that reads its non-streamed answer, one response body.
    body: str
    #: Its converter class.
    converter: str
    #: Its HTTP adapter class (None: none, its SDK signs or holds the request).
    adapter: str | None
    #: The provider, as messages name it ("a malformed OpenAI event").
    who: str
    #: The wire API, as the hint for one of its events given as a chunk names it.
    title: str
    #: The start of the module of each SDK type whose objects are its events.
    sdk: tuple[str, ...]
    #: Its adapter's route (``provider_info.id``) or the route users give its SDK's requests.
    route: str
    #: ``gen_ai.provider.name`` for that route, a well-known value of the OpenTelemetry GenAI conventions.
    otel: str


#: Every wire API, in the order the docs and ``format=`` list them.
WIRE_APIS: Final = (
    WireApi(
        "openai-sse",
        "from_openai_chunks",
        "from_openai_completion",
        "OpenAIConverter",
        "OpenAICompatibleAdapter",
        "OpenAI",
        "OpenAI chat completions",
        ("openai.",),
        "openai-compatible",
        "openai",
    ),
    WireApi(
        "anthropic-sse",
        "from_anthropic_events",
        "from_anthropic_message",
        "AnthropicConverter",
        "AnthropicAdapter",
        "Anthropic",
        "Anthropic",
        ("anthropic.",),
        "anthropic",
        "anthropic",
    ),
    WireApi(
        "openai-responses",
        "from_openai_responses_events",
        "from_openai_response",
        "OpenAIResponsesConverter",
        "OpenAIResponsesAdapter",
        "OpenAI Responses",
        "OpenAI Responses",
        ("openai.types.responses",),
        "openai-responses",
        "openai",
    ),
    WireApi(
        "gemini",
        "from_gemini_chunks",
        "from_gemini_response",
        "GeminiConverter",
        "GeminiAdapter",
        "Gemini",
        "Gemini",
        ("google.genai.",),
        "gemini",
        "gcp.gemini",
    ),
    WireApi(
        "bedrock",
        "from_bedrock_events",
        "from_bedrock_response",
        "BedrockConverter",
        None,
        "Bedrock",
        "Bedrock",
        (),
        "bedrock",
        "aws.bedrock",
    ),
    WireApi(
        "cohere",
        "from_cohere_events",
        "from_cohere_response",
        "CohereConverter",
        None,
        "Cohere",
        "Cohere",
        ("cohere.",),
        "cohere",
        "cohere",
    ),
)

_BY_FORMAT: Final = {api.format: api for api in WIRE_APIS}


def wire_api(fmt: str) -> WireApi:
    """The row of the wire API whose recordings are format ``fmt`` (``KeyError`` for another format)."""
    return _BY_FORMAT[fmt]

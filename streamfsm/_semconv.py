"""What a span of :mod:`streamfsm.otel` may say, in the GenAI semantic conventions' words: decided here, once.

- :func:`provider_name`: ``gen_ai.provider.name``, a route mapped to the conventions' well-known names;
- :func:`error_type`: ``error.type``, short and of low cardinality: a code of :data:`ERROR_TYPES`, else ``_OTHER``
  (every distinct value is a metric series a meter provider keeps, and a provider's finish reason is the code of
  an unknown finish);
- :func:`finish_reason`: ``gen_ai.response.finish_reasons`` and an output message's ``finish_reason``: the
  conventions' values (``stop``, ``length``, ``tool_call``, ``content_filter``, ``error``; ``cancel`` has none);
- :func:`fail`: a failed span's status and ``error.type``. With content capture off, a status says the error type
  and nothing else: an error's message may quote the model's output (``BLOCK_CONTENT_MISMATCH``,
  ``TOOL_ARGUMENTS_INVALID``) or a tool's result (its exception, a schema refusal quoting an argument);
- :func:`message` and :func:`part`: message content (opt-in) in the conventions' message schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
from opentelemetry.trace import Span, Status, StatusCode

from ._adapter import AssistantMessage, Message, ToolResultMessage, UserMessage
from ._errors import ErrorCode, LlmError
from ._flat import DoneReason
from ._models import ReasoningBlock, TextBlock
from ._wire_apis import WIRE_APIS

if TYPE_CHECKING:
    from ._adapter import GenerateOptions, LlmAdapter

__all__ = [
    "ERROR_TYPES",
    "OTHER",
    "PROVIDER_NAMES",
    "cancelled",
    "error_type",
    "fail",
    "finish_reason",
    "message",
    "part",
    "provider_name",
    "to_json",
]

#: The conventions' ``gen_ai.provider.name`` well-known values.
WELL_KNOWN_PROVIDERS = frozenset({
    "anthropic", "aws.bedrock", "azure.ai.inference", "azure.ai.openai", "cohere", "deepseek", "gcp.gemini",
    "gcp.gen_ai", "gcp.vertex_ai", "groq", "ibm.watsonx.ai", "mistral_ai", "openai", "perplexity", "x_ai",
})  # fmt: skip

#: ``gen_ai.provider.name`` of an adapter's provider route (``GenerateOptions.provider``, else the adapter's
#: ``provider_info.id``), each a well-known name of the conventions; a route not listed is reported as it is named.
#: Each wire API's route first (``_wire_apis.WIRE_APIS``), then the other providers' routes.
PROVIDER_NAMES: Mapping[str, str] = {
    **{api.route: api.otel for api in WIRE_APIS},
    "openai": "openai",
    "vertex": "gcp.vertex_ai",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "perplexity": "perplexity",
    "xai": "x_ai",
    "azure-openai": "azure.ai.openai",
}


def provider_name(adapter: LlmAdapter, options: GenerateOptions) -> str:
    """``gen_ai.provider.name`` of a request: its route mapped by :data:`PROVIDER_NAMES`, else the route itself."""
    route = options.provider or adapter.provider_info.id
    if route in WELL_KNOWN_PROVIDERS:
        return route
    return PROVIDER_NAMES.get(route.lower(), route)


#: The conventions' value for an error type the instrumentation does not define.
OTHER = "_OTHER"

#: The values ``error.type`` takes besides :data:`OTHER`: streamfsm's error codes, ``tool_error`` (a tool call
#: that failed), and the finish reasons the converters turn into an error finish's code (each the provider's reason
#: upper-cased). A code outside this set (a finish reason no provider documents) is :data:`OTHER`.
ERROR_TYPES = frozenset(code.value for code in ErrorCode) | {
    "tool_error",
    "PROMPT_BLOCKED",
    # chat completions, Responses
    "CONTENT_FILTER", "FUNCTION_CALL", "INCOMPLETE",
    # Anthropic
    "REFUSAL", "PAUSE_TURN", "COMPACTION", "MODEL_CONTEXT_WINDOW_EXCEEDED",
    # Gemini
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MALFORMED_FUNCTION_CALL", "OTHER", "LANGUAGE",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "IMAGE_OTHER", "NO_IMAGE", "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS", "FINISH_REASON_UNSPECIFIED", "MISSING_THOUGHT_SIGNATURE",
    # Bedrock
    "GUARDRAIL_INTERVENED", "CONTENT_FILTERED", "MALFORMED_MODEL_OUTPUT", "MALFORMED_TOOL_USE",
    # Cohere
    "ERROR", "ERROR_TOXIC", "ERROR_LIMIT", "USER_CANCEL",
}  # fmt: skip


def error_type(code: object) -> str:
    """``error.type`` of an error code: the code if :data:`ERROR_TYPES` has it, else :data:`OTHER`."""
    text = str(code)
    return text if text in ERROR_TYPES else OTHER


#: The error types that are the conventions' ``content_filter`` finish.
_FILTERED = frozenset({"CONTENT_FILTER", "CONTENT_FILTERED", "SAFETY", "PROHIBITED_CONTENT", "GUARDRAIL_INTERVENED"})


def finish_reason(reason: DoneReason, error: LlmError | None = None) -> str:
    """The conventions' finish reason of a ``done`` reason: ``tool_use`` is ``tool_call``, an ``error`` whose code
    is a content filter's is ``content_filter``; ``stop``, ``length``, ``error`` and ``cancel`` as they are."""
    if reason == "tool_use":
        return "tool_call"
    if reason == "error" and error is not None and str(error.code) in _FILTERED:
        return "content_filter"
    return reason


def fail(span: Span, code: object, message: str, capture: bool, chunk_index: int | None = None) -> str:
    """Mark ``span`` failed with error ``code`` saying ``message``: status ERROR, ``error.type``, and
    ``streamfsm.chunk_index`` for a stream the protocol rejected. The status says ``message`` only when content is
    captured, else the error type alone. Returns the error type."""
    kind = error_type(code)
    span.set_status(Status(StatusCode.ERROR, message if capture else kind))
    span.set_attribute("error.type", kind)
    if chunk_index is not None:
        span.set_attribute("streamfsm.chunk_index", chunk_index)
    return kind


def cancelled(span: Span, cause: LlmError | None) -> None:
    """Mark ``span`` cancelled (no error): ``streamfsm.cancelled``, and the cause's error type."""
    span.set_attribute("streamfsm.cancelled", True)
    if cause is not None:
        span.set_attribute("streamfsm.cancel.code", error_type(cause.code))


# --- Content (opt-in), in the conventions' message schemas --------------------------------------------


def to_json(value: Any) -> str:
    """``value`` as the JSON text a message attribute holds."""
    return orjson.dumps(value, default=str).decode()


def message(item: Message) -> dict[str, Any]:
    """A conversation's message as an input message."""
    if isinstance(item, UserMessage):
        return {"role": "user", "parts": [{"type": "text", "content": item.content}]}
    if isinstance(item, ToolResultMessage):
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": item.tool_call_id,
                                           "response": item.content}]}  # fmt: skip
    assert isinstance(item, AssistantMessage)
    parts: list[dict[str, Any]] = []
    for block in item.blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ReasoningBlock):
            parts.append({"type": "reasoning", "content": block.text})
        else:
            parts.append({"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.arguments})
    return {"role": "assistant", "parts": parts}


def part(block: Any) -> dict[str, Any]:
    """A complete block of the response (a ``block-end``'s ``block``) as an output message part."""
    if not isinstance(block, Mapping):
        return {"type": "unknown"}
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": block.get("text")}
    if kind == "reasoning":
        return {"type": "reasoning", "content": block.get("text")}
    if kind == "tool-call":
        return {"type": "tool_call", "id": block.get("id"), "name": block.get("name"),
                "arguments": block.get("arguments")}  # fmt: skip
    return {"type": str(kind)}

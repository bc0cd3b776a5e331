"""streamfsm: validate and assemble LLM block streams (DeepSeek Harness's StreamChunk protocol).

An adapter's ``stream()`` yields chunks; streamfsm feeds them one at a time through an explicit
finite-state machine, rejects every rule violation with a coded :class:`LlmError`, and assembles
text, reasoning and tool-call blocks with the usage and finish reason.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._abort import AbortController, AbortSignal
from ._adapter import (
    APP_IDENTITY,
    AppIdentity,
    AssistantMessage,
    GenerateOptions,
    LlmAdapter,
    Message,
    ModelInfo,
    ModelReasoningInfo,
    ProviderInfo,
    ReasoningEffortInfo,
    ToolResultMessage,
    ToolSchema,
    UserMessage,
    attribution_headers,
)
from ._agent import AgentLimits, AgentLoop, AgentRun, Hooks, RetryPolicy, StreamMetrics, Tool, ToolError, tool
from ._anthropic import AnthropicAdapter, AnthropicConverter, from_anthropic_events
from ._api import (
    aassemble,
    assemble,
    assemble_jsonl,
    avalidate,
    iter_lines,
    validate,
    validate_jsonl,
)
from ._config import Limits, Policy
from ._errors import RETRYABLE_CODES, ErrorCode, LlmError
from ._flat import (
    DoneChunk,
    DoneReason,
    ErrorChunk,
    FlatChunk,
    FlatValidator,
    TextChunk,
    TokenUsage,
    ToolCallChunk,
    ToolResultChunk,
    avalidate_flat,
    parse_flat,
    validate_flat,
)
from ._machine import StreamAssembler, diagram
from ._models import (
    Block,
    FinishReason,
    LlmFailure,
    OpenBlock,
    ReasoningBlock,
    Snapshot,
    StreamResult,
    TextBlock,
    ToolCallBlock,
    Usage,
)
from ._openai import OpenAICompatibleAdapter, OpenAIConverter, from_openai_chunks
from ._session import RecordedStream, read_session
from ._shape import InvalidLine
from ._wire import (
    BlockEnd,
    BlockStart,
    BlockType,
    CallId,
    Finish,
    FinishKind,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
    WireBlock,
    WireFailure,
    WireFinishReason,
    WireReasoningBlock,
    WireTextBlock,
    WireToolCallBlock,
    WireUsage,
)

try:
    __version__ = version("streamfsm")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "APP_IDENTITY",
    "RETRYABLE_CODES",
    "AbortController",
    "AbortSignal",
    "AgentLimits",
    "AgentLoop",
    "AgentRun",
    "AnthropicAdapter",
    "AnthropicConverter",
    "AppIdentity",
    "AssistantMessage",
    "Block",
    "BlockEnd",
    "BlockStart",
    "BlockType",
    "CallId",
    "DoneChunk",
    "DoneReason",
    "ErrorChunk",
    "ErrorCode",
    "Finish",
    "FinishKind",
    "FinishReason",
    "FlatChunk",
    "FlatValidator",
    "GenerateOptions",
    "Hooks",
    "InvalidLine",
    "Limits",
    "LlmAdapter",
    "LlmError",
    "LlmFailure",
    "Message",
    "ModelInfo",
    "ModelReasoningInfo",
    "OpenAICompatibleAdapter",
    "OpenAIConverter",
    "OpenBlock",
    "Policy",
    "ProviderInfo",
    "ReasoningBlock",
    "ReasoningDelta",
    "ReasoningEffortInfo",
    "RecordedStream",
    "RetryPolicy",
    "Snapshot",
    "StreamAssembler",
    "StreamChunk",
    "StreamMetrics",
    "StreamResult",
    "TextBlock",
    "TextChunk",
    "TextDelta",
    "TokenUsage",
    "Tool",
    "ToolCallBlock",
    "ToolCallChunk",
    "ToolCallDelta",
    "ToolError",
    "ToolResultChunk",
    "ToolResultMessage",
    "ToolSchema",
    "Usage",
    "UsageChunk",
    "UserMessage",
    "WireBlock",
    "WireFailure",
    "WireFinishReason",
    "WireReasoningBlock",
    "WireTextBlock",
    "WireToolCallBlock",
    "WireUsage",
    "__version__",
    "aassemble",
    "assemble",
    "assemble_jsonl",
    "attribution_headers",
    "avalidate",
    "avalidate_flat",
    "diagram",
    "from_anthropic_events",
    "from_openai_chunks",
    "iter_lines",
    "parse_flat",
    "read_session",
    "tool",
    "validate",
    "validate_flat",
    "validate_jsonl",
]

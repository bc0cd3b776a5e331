"""streamfsm: validate and assemble LLM block streams (DeepSeek Harness's StreamChunk protocol).

An adapter's ``stream()`` yields chunks; streamfsm feeds them one at a time through an explicit
finite-state machine, rejects every rule violation with a coded :class:`LlmError`, and assembles
text, reasoning and tool-call blocks with the usage and finish reason.

The package imports its modules when one of its names is first used (PEP 562), not when it is imported: so
``import streamfsm`` is quick, and the ``streamfsm`` command (``python -m streamfsm``) takes Ctrl-C before
pydantic or httpx load. ``sf.NAME`` and ``from streamfsm import NAME`` give the defining module's object.
"""

from __future__ import annotations

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (mypy takes any ``TYPE_CHECKING`` as true).
TYPE_CHECKING = False

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ below imports each name on first use
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
    from ._agent import AgentLoop, AgentRun
    from ._api import (
        aassemble,
        assemble,
        assemble_jsonl,
        avalidate,
        validate,
        validate_jsonl,
    )
    from ._check import FileReport, StreamReport, check_file
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
    from ._lines import iter_lines
    from ._machine import StreamAssembler, diagram
    from ._models import (
        Block,
        FinishReason,
        ImageBlock,
        KeptBlock,
        LlmFailure,
        OpenBlock,
        ReasoningBlock,
        Snapshot,
        StreamResult,
        StreamSummary,
        TextBlock,
        ToolCallBlock,
        Usage,
        kept_blocks,
    )
    from ._observe import Hooks, StreamMetrics
    from ._providers import (
        AnthropicAdapter,
        AnthropicConverter,
        BedrockConverter,
        CohereConverter,
        GeminiAdapter,
        GeminiConverter,
        OpenAICompatibleAdapter,
        OpenAIConverter,
        OpenAIResponsesAdapter,
        OpenAIResponsesConverter,
        describe_kept,
        from_anthropic_events,
        from_bedrock_events,
        from_cohere_events,
        from_gemini_chunks,
        from_openai_chunks,
        from_openai_responses_events,
        read_turns,
    )
    from ._reader import open_recordings, read_recordings, read_session
    from ._recordings import (
        FORMATS,
        RecordedStream,
        RecordingSource,
        UnknownFormat,
        detect_format,
    )
    from ._retry import AgentLimits, RetryPolicy
    from ._shape import InvalidLine
    from ._tools import Tool, ToolError, tool, tool_signal
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
        WireImageBlock,
        WireReasoningBlock,
        WireTextBlock,
        WireToolCallBlock,
        WireUsage,
    )

    __version__: str

#: Where each public name is defined: ``sf.NAME`` imports ``streamfsm.<module>`` the first time it is asked for.
#: A new public name goes in three places, which ``tests/test_package.py`` keeps equal: its module's row here, its
#: import under ``TYPE_CHECKING`` above, and ``__all__``.
_MODULES: dict[str, tuple[str, ...]] = {
    "_abort": ("AbortController", "AbortSignal"),
    "_adapter": (
        "APP_IDENTITY",
        "AppIdentity",
        "AssistantMessage",
        "GenerateOptions",
        "LlmAdapter",
        "Message",
        "ModelInfo",
        "ModelReasoningInfo",
        "ProviderInfo",
        "ReasoningEffortInfo",
        "ToolResultMessage",
        "ToolSchema",
        "UserMessage",
        "attribution_headers",
    ),
    "_agent": ("AgentLoop", "AgentRun"),
    "_api": ("aassemble", "assemble", "assemble_jsonl", "avalidate", "validate", "validate_jsonl"),
    "_check": ("FileReport", "StreamReport", "check_file"),
    "_config": ("Limits", "Policy"),
    "_errors": ("RETRYABLE_CODES", "ErrorCode", "LlmError"),
    "_flat": (
        "DoneChunk",
        "DoneReason",
        "ErrorChunk",
        "FlatChunk",
        "FlatValidator",
        "TextChunk",
        "TokenUsage",
        "ToolCallChunk",
        "ToolResultChunk",
        "avalidate_flat",
        "parse_flat",
        "validate_flat",
    ),
    "_machine": ("StreamAssembler", "diagram"),
    "_models": (
        "Block",
        "FinishReason",
        "ImageBlock",
        "KeptBlock",
        "LlmFailure",
        "OpenBlock",
        "ReasoningBlock",
        "Snapshot",
        "StreamResult",
        "StreamSummary",
        "TextBlock",
        "ToolCallBlock",
        "Usage",
        "kept_blocks",
    ),
    "_observe": ("Hooks", "StreamMetrics"),
    "_providers": (
        "AnthropicAdapter",
        "AnthropicConverter",
        "BedrockConverter",
        "CohereConverter",
        "GeminiAdapter",
        "GeminiConverter",
        "OpenAICompatibleAdapter",
        "OpenAIConverter",
        "OpenAIResponsesAdapter",
        "OpenAIResponsesConverter",
        "describe_kept",
        "from_anthropic_events",
        "from_bedrock_events",
        "from_cohere_events",
        "from_gemini_chunks",
        "from_openai_chunks",
        "from_openai_responses_events",
        "read_turns",
    ),
    "_lines": ("iter_lines",),
    "_reader": ("open_recordings", "read_recordings", "read_session"),
    "_recordings": (
        "FORMATS",
        "RecordedStream",
        "RecordingSource",
        "UnknownFormat",
        "detect_format",
    ),
    "_retry": ("AgentLimits", "RetryPolicy"),
    "_shape": ("InvalidLine",),
    "_tools": ("Tool", "ToolError", "tool", "tool_signal"),
    "_wire": (
        "BlockEnd",
        "BlockStart",
        "BlockType",
        "CallId",
        "Finish",
        "FinishKind",
        "ReasoningDelta",
        "StreamChunk",
        "TextDelta",
        "ToolCallDelta",
        "UsageChunk",
        "WireBlock",
        "WireFailure",
        "WireFinishReason",
        "WireImageBlock",
        "WireReasoningBlock",
        "WireTextBlock",
        "WireToolCallBlock",
        "WireUsage",
    ),
}

_WHERE = {name: module for module, names in _MODULES.items() for name in names}

if not TYPE_CHECKING:  # hidden from type checkers: a module __getattr__ would make every unknown name Any

    def __getattr__(name: str) -> object:
        """The public name ``name``, its module imported on first use (PEP 562); kept, so asked once."""
        module = _WHERE.get(name)
        if module is not None:
            from importlib import import_module

            value = getattr(import_module(f"{__name__}.{module}"), name)
        elif name == "__version__":
            from importlib.metadata import PackageNotFoundError, version

            try:
                value = version("streamfsm")
            except PackageNotFoundError:  # pragma: no cover - running from a source tree
                value = "0.0.0"
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """The module's names and every public name, imported or not yet."""
    return sorted({*globals(), *__all__})


__all__ = [
    "APP_IDENTITY",
    "FORMATS",
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
    "BedrockConverter",
    "Block",
    "BlockEnd",
    "BlockStart",
    "BlockType",
    "CallId",
    "CohereConverter",
    "DoneChunk",
    "DoneReason",
    "ErrorChunk",
    "ErrorCode",
    "FileReport",
    "Finish",
    "FinishKind",
    "FinishReason",
    "FlatChunk",
    "FlatValidator",
    "GeminiAdapter",
    "GeminiConverter",
    "GenerateOptions",
    "Hooks",
    "ImageBlock",
    "InvalidLine",
    "KeptBlock",
    "Limits",
    "LlmAdapter",
    "LlmError",
    "LlmFailure",
    "Message",
    "ModelInfo",
    "ModelReasoningInfo",
    "OpenAICompatibleAdapter",
    "OpenAIConverter",
    "OpenAIResponsesAdapter",
    "OpenAIResponsesConverter",
    "OpenBlock",
    "Policy",
    "ProviderInfo",
    "ReasoningBlock",
    "ReasoningDelta",
    "ReasoningEffortInfo",
    "RecordedStream",
    "RecordingSource",
    "RetryPolicy",
    "Snapshot",
    "StreamAssembler",
    "StreamChunk",
    "StreamMetrics",
    "StreamReport",
    "StreamResult",
    "StreamSummary",
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
    "UnknownFormat",
    "Usage",
    "UsageChunk",
    "UserMessage",
    "WireBlock",
    "WireFailure",
    "WireFinishReason",
    "WireImageBlock",
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
    "check_file",
    "describe_kept",
    "detect_format",
    "diagram",
    "from_anthropic_events",
    "from_bedrock_events",
    "from_cohere_events",
    "from_gemini_chunks",
    "from_openai_chunks",
    "from_openai_responses_events",
    "iter_lines",
    "kept_blocks",
    "open_recordings",
    "parse_flat",
    "read_recordings",
    "read_session",
    "read_turns",
    "tool",
    "tool_signal",
    "validate",
    "validate_flat",
    "validate_jsonl",
]

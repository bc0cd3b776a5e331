"""streamfsm: validate and assemble LLM block streams (DeepSeek Harness's StreamChunk protocol).

An adapter's ``stream()`` yields chunks; streamfsm feeds them one at a time through a finite-state machine, rejects
the first one that breaks a rule with a coded :class:`LlmError`, and assembles the text, reasoning and tool-call
blocks with the usage and the finish reason::

    >>> import streamfsm as sf
    >>> chunks = [
    ...     {"type": "block-start", "index": 0, "blockType": "text"},
    ...     {"type": "text-delta", "index": 0, "text": "hi"},
    ...     {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
    ...     {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 1}},
    ...     {"type": "finish", "reason": {"kind": "stop"}},
    ... ]
    >>> sf.assemble(chunks).text
    'hi'
    >>> try:
    ...     sf.assemble(chunks[1:])
    ... except sf.LlmError as err:
    ...     print(err.code, err.chunk_index)
    BLOCK_NOT_OPEN 0

The public names, by what they are for (each documented in the API reference, ``docs/reference/``):

- Streams: ``assemble``, ``aassemble``, ``validate``, ``avalidate``, ``assemble_jsonl``, ``validate_jsonl``,
  ``StreamAssembler`` (the machine, one chunk at a time), ``diagram``, ``iter_lines``.
- Results: ``StreamResult``, ``StreamSummary``, ``TextBlock``, ``ReasoningBlock``, ``ToolCallBlock``,
  ``ImageBlock``, ``Block``, ``OpenBlock``, ``Snapshot``, ``Usage``, ``FinishReason``, ``LlmFailure``,
  ``KeptBlock``, ``kept_blocks``.
- The chunks on the wire (typed dicts): ``StreamChunk``, ``BlockStart``, ``TextDelta``, ``ReasoningDelta``,
  ``ToolCallDelta``, ``BlockEnd``, ``UsageChunk``, ``Finish``, ``CallId``, ``BlockType``, ``FinishKind``,
  ``WireBlock``, ``WireTextBlock``, ``WireReasoningBlock``, ``WireToolCallBlock``, ``WireImageBlock``,
  ``WireUsage``, ``WireFinishReason``, ``WireFailure``.
- Errors and configuration: ``LlmError``, ``ErrorCode``, ``RETRYABLE_CODES``, ``Policy``, ``Limits``,
  ``InvalidLine``.
- Recordings and checking: ``read_recordings``, ``open_recordings``, ``read_session``, ``read_turns``,
  ``detect_format``, ``FORMATS``, ``RecordedStream``, ``RecordingSource``, ``UnknownFormat``, ``check_file``,
  ``FileReport``, ``StreamReport``.
- Wire APIs: the converters ``from_openai_chunks``, ``from_anthropic_events``, ``from_openai_responses_events``,
  ``from_gemini_chunks``, ``from_bedrock_events``, ``from_cohere_events`` (and their classes ``OpenAIConverter``,
  ``AnthropicConverter``, ``OpenAIResponsesConverter``, ``GeminiConverter``, ``BedrockConverter``,
  ``CohereConverter``), ``describe_kept``; the non-streamed answers read as results ``from_openai_completion``,
  ``from_anthropic_message``, ``from_openai_response``, ``from_gemini_response``, ``from_bedrock_response``,
  ``from_cohere_response``; an SDK's own stream checked as it is read, ``checked`` (``Checked``,
  ``AsyncChecked``); the HTTP adapters (the ``http`` extra) ``OpenAICompatibleAdapter``, ``AnthropicAdapter``,
  ``OpenAIResponsesAdapter``, ``GeminiAdapter``, ``HttpSettings``.
- Probing a live endpoint, streamed against non-streamed: ``probe``, ``ProbeReport``, ``CaseRun``, ``ProbeCase``,
  ``PROBE_CASES``, ``load_probe_cases``, ``parity``, ``Parity``, ``Difference``.
- Adapters: ``LlmAdapter``, ``GenerateOptions``, ``Message``, ``UserMessage``, ``AssistantMessage``,
  ``ToolResultMessage``, ``ToolSchema``, ``ModelInfo``, ``ModelReasoningInfo``, ``ReasoningEffortInfo``,
  ``ProviderInfo``, ``AppIdentity``, ``APP_IDENTITY``, ``attribution_headers``, ``AbortController``,
  ``AbortSignal``.
- The agent loop: ``AgentLoop``, ``AgentRun``, ``Tool``, ``tool``, ``tool_signal``, ``ToolError``, ``RetryPolicy``,
  ``AgentLimits``, ``Hooks``, ``StreamMetrics``, ``SafetyCheck``; its flat stream ``FlatChunk``, ``TextChunk``,
  ``ToolCallChunk``, ``ToolResultChunk``, ``ErrorChunk``, ``DoneChunk``, ``DoneReason``, ``TokenUsage``,
  ``validate_flat``, ``avalidate_flat``, ``FlatValidator``, ``parse_flat``; OpenTelemetry in ``streamfsm.otel``
  (the ``otel`` extra).

The command ``streamfsm`` (``python -m streamfsm``) checks recordings (``streamfsm check PATH...``) and probes a
live endpoint (``streamfsm probe --base-url URL --model NAME``).
"""

# The package imports its modules when one of its names is first used (PEP 562), not when it is imported: so
# ``import streamfsm`` is quick, and the ``streamfsm`` command takes Ctrl-C before pydantic or httpx load.
# ``sf.NAME`` and ``from streamfsm import NAME`` give the defining module's object. The package's face is written
# once: the imports under ``TYPE_CHECKING`` below, one ``NAME as NAME`` (an explicit re-export, for type checkers)
# for each public name. ``__all__``, ``dir()`` and the lazy imports are read from them (:func:`_face`) the first
# time one is asked for.

from __future__ import annotations

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (mypy takes any ``TYPE_CHECKING`` as true).
TYPE_CHECKING = False

if TYPE_CHECKING:  # the face: what type checkers see; at run time __getattr__ imports each name on first use
    from ._abort import AbortController as AbortController
    from ._abort import AbortSignal as AbortSignal
    from ._adapter import APP_IDENTITY as APP_IDENTITY
    from ._adapter import AppIdentity as AppIdentity
    from ._adapter import AssistantMessage as AssistantMessage
    from ._adapter import GenerateOptions as GenerateOptions
    from ._adapter import LlmAdapter as LlmAdapter
    from ._adapter import Message as Message
    from ._adapter import ModelInfo as ModelInfo
    from ._adapter import ModelReasoningInfo as ModelReasoningInfo
    from ._adapter import ProviderInfo as ProviderInfo
    from ._adapter import ReasoningEffortInfo as ReasoningEffortInfo
    from ._adapter import ToolResultMessage as ToolResultMessage
    from ._adapter import ToolSchema as ToolSchema
    from ._adapter import UserMessage as UserMessage
    from ._adapter import attribution_headers as attribution_headers
    from ._agent import AgentLoop as AgentLoop
    from ._agent import AgentRun as AgentRun
    from ._api import aassemble as aassemble
    from ._api import assemble_jsonl as assemble_jsonl
    from ._api import avalidate as avalidate
    from ._api import validate as validate
    from ._api import validate_jsonl as validate_jsonl
    from ._assemble import assemble as assemble
    from ._check import FileReport as FileReport
    from ._check import StreamReport as StreamReport
    from ._check import check_file as check_file
    from ._config import Limits as Limits
    from ._config import Policy as Policy
    from ._errors import RETRYABLE_CODES as RETRYABLE_CODES
    from ._errors import ErrorCode as ErrorCode
    from ._errors import LlmError as LlmError
    from ._flat import DoneChunk as DoneChunk
    from ._flat import DoneReason as DoneReason
    from ._flat import ErrorChunk as ErrorChunk
    from ._flat import FlatChunk as FlatChunk
    from ._flat import FlatValidator as FlatValidator
    from ._flat import TextChunk as TextChunk
    from ._flat import TokenUsage as TokenUsage
    from ._flat import ToolCallChunk as ToolCallChunk
    from ._flat import ToolResultChunk as ToolResultChunk
    from ._flat import avalidate_flat as avalidate_flat
    from ._flat import parse_flat as parse_flat
    from ._flat import validate_flat as validate_flat
    from ._lines import iter_lines as iter_lines
    from ._machine import StreamAssembler as StreamAssembler
    from ._machine import diagram as diagram
    from ._models import Block as Block
    from ._models import FinishReason as FinishReason
    from ._models import ImageBlock as ImageBlock
    from ._models import KeptBlock as KeptBlock
    from ._models import LlmFailure as LlmFailure
    from ._models import OpenBlock as OpenBlock
    from ._models import ReasoningBlock as ReasoningBlock
    from ._models import SafetyCheck as SafetyCheck
    from ._models import Snapshot as Snapshot
    from ._models import StreamResult as StreamResult
    from ._models import StreamSummary as StreamSummary
    from ._models import TextBlock as TextBlock
    from ._models import ToolCallBlock as ToolCallBlock
    from ._models import Usage as Usage
    from ._models import kept_blocks as kept_blocks
    from ._observe import StreamMetrics as StreamMetrics
    from ._probe import CaseRun as CaseRun
    from ._probe import ProbeReport as ProbeReport
    from ._probe import probe as probe
    from ._probe_cases import PROBE_CASES as PROBE_CASES
    from ._probe_cases import ProbeCase as ProbeCase
    from ._probe_cases import load_probe_cases as load_probe_cases
    from ._probe_parity import Difference as Difference
    from ._probe_parity import Parity as Parity
    from ._probe_parity import parity as parity
    from ._providers import AnthropicAdapter as AnthropicAdapter
    from ._providers import AnthropicConverter as AnthropicConverter
    from ._providers import AsyncChecked as AsyncChecked
    from ._providers import BedrockConverter as BedrockConverter
    from ._providers import Checked as Checked
    from ._providers import CohereConverter as CohereConverter
    from ._providers import GeminiAdapter as GeminiAdapter
    from ._providers import GeminiConverter as GeminiConverter
    from ._providers import HttpSettings as HttpSettings
    from ._providers import OpenAICompatibleAdapter as OpenAICompatibleAdapter
    from ._providers import OpenAIConverter as OpenAIConverter
    from ._providers import OpenAIResponsesAdapter as OpenAIResponsesAdapter
    from ._providers import OpenAIResponsesConverter as OpenAIResponsesConverter
    from ._providers import checked as checked
    from ._providers import describe_kept as describe_kept
    from ._providers import from_anthropic_events as from_anthropic_events
    from ._providers import from_anthropic_message as from_anthropic_message
    from ._providers import from_bedrock_events as from_bedrock_events
    from ._providers import from_bedrock_response as from_bedrock_response
    from ._providers import from_cohere_events as from_cohere_events
    from ._providers import from_cohere_response as from_cohere_response
    from ._providers import from_gemini_chunks as from_gemini_chunks
    from ._providers import from_gemini_response as from_gemini_response
    from ._providers import from_openai_chunks as from_openai_chunks
    from ._providers import from_openai_completion as from_openai_completion
    from ._providers import from_openai_response as from_openai_response
    from ._providers import from_openai_responses_events as from_openai_responses_events
    from ._providers import read_turns as read_turns
    from ._reader import open_recordings as open_recordings
    from ._reader import read_recordings as read_recordings
    from ._reader import read_session as read_session
    from ._recordings import FORMATS as FORMATS
    from ._recordings import RecordedStream as RecordedStream
    from ._recordings import RecordingSource as RecordingSource
    from ._recordings import UnknownFormat as UnknownFormat
    from ._recordings import detect_format as detect_format
    from ._retry import AgentLimits as AgentLimits
    from ._retry import RetryPolicy as RetryPolicy
    from ._run_log import Hooks as Hooks
    from ._shape import InvalidLine as InvalidLine
    from ._tools import Tool as Tool
    from ._tools import ToolError as ToolError
    from ._tools import tool as tool
    from ._tools import tool_signal as tool_signal
    from ._wire import BlockEnd as BlockEnd
    from ._wire import BlockStart as BlockStart
    from ._wire import BlockType as BlockType
    from ._wire import CallId as CallId
    from ._wire import Finish as Finish
    from ._wire import FinishKind as FinishKind
    from ._wire import ReasoningDelta as ReasoningDelta
    from ._wire import StreamChunk as StreamChunk
    from ._wire import TextDelta as TextDelta
    from ._wire import ToolCallDelta as ToolCallDelta
    from ._wire import UsageChunk as UsageChunk
    from ._wire import WireBlock as WireBlock
    from ._wire import WireFailure as WireFailure
    from ._wire import WireFinishReason as WireFinishReason
    from ._wire import WireImageBlock as WireImageBlock
    from ._wire import WireReasoningBlock as WireReasoningBlock
    from ._wire import WireTextBlock as WireTextBlock
    from ._wire import WireToolCallBlock as WireToolCallBlock
    from ._wire import WireUsage as WireUsage

    __version__: str

_FACE: dict[str, str] = {}


def _face() -> dict[str, str]:
    """Each public name and its module, read from the imports under ``TYPE_CHECKING`` in this file (once)."""
    if not _FACE:
        import ast

        loader = globals().get("__loader__")
        source = loader.get_source(__name__) if loader is not None else None
        if source is None:  # pragma: no cover - installed without its source
            raise ImportError(f"{__name__}: the source of the package face is not available")
        for node in ast.parse(source).body:
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                for statement in node.body:
                    if isinstance(statement, ast.ImportFrom) and statement.module is not None:
                        _FACE.update(dict.fromkeys((alias.name for alias in statement.names), statement.module))
                break
    return _FACE


if not TYPE_CHECKING:  # hidden from type checkers: a module __getattr__ would make every unknown name Any

    def __getattr__(name: str) -> object:
        """The public name ``name``, its module imported on first use (PEP 562); kept, so asked once."""
        # No public name starts with "_": a private one (``from . import _startup`` asks for one) reads no face.
        module = _face().get(name) if not name.startswith("_") else None
        if module is not None:
            from importlib import import_module

            value = getattr(import_module(f"{__name__}.{module}"), name)
        elif name == "__all__":
            value = sorted([*_face(), "__version__"])
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
    return sorted({*globals(), *_face(), "__version__"})

"""The Anthropic Messages API over HTTP: :class:`AnthropicAdapter` (the ``http`` extra).

It streams ``POST {base_url}/v1/messages`` and converts the events with
:class:`~.anthropic_messages.AnthropicConverter`; a conversation is sent as Messages ``content``
(:func:`anthropic_messages`), each earlier model turn with the blocks it kept for replay.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Unpack

from .._adapter import (
    AssistantMessage,
    GenerateOptions,
    ToolResultMessage,
)
from .._errors import ErrorCode, LlmError
from .._models import ReasoningBlock, TextBlock, ToolCallBlock
from .._wire import StreamChunk
from .anthropic_messages import AnthropicConverter
from .base import HttpAdapter, HttpSettings
from .replay import by_position, kept_blocks
from .secrets import check_headers

__all__ = ["AnthropicAdapter", "anthropic_messages", "assistant_content"]


def anthropic_messages(options: GenerateOptions) -> list[dict[str, Any]]:
    """The request's ``messages`` in the Messages API form (tool results ride in user turns, merged).

    An assistant turn goes back as it came (:func:`assistant_content`). A user turn is one text block.
    """
    out: list[dict[str, Any]] = []
    for message in options.messages:
        if isinstance(message, AssistantMessage):
            out.append({"role": "assistant", "content": assistant_content(message)})
        elif isinstance(message, ToolResultMessage):
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            if message.is_error:
                result["is_error"] = True
            previous = out[-1] if out else None
            if previous is not None and previous["role"] == "user" and isinstance(previous["content"], list):
                previous["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
        else:
            out.append({"role": "user", "content": [{"type": "text", "text": message.content}]})
    return out


def assistant_content(message: AssistantMessage) -> list[dict[str, Any]]:
    """An assistant turn's ``content`` as the Messages API wants it back, from its blocks and its replay state.

    The blocks the provider sent that the protocol has no word for (``replayState["kept"]``: server-tool calls and
    results, MCP blocks, compaction with its ``encrypted_content``, fallback, redacted thinking, ...) go back
    verbatim, where they came; a text block gets its citations back, a tool call the fields it came with (a
    programmatic call's ``caller``). Reasoning goes back as ``thinking`` only with the signature the provider gave
    it; without one the provider would refuse it, so it is left out. Empty text is left out (the API refuses it).
    """
    replay = message.replay_state if isinstance(message.replay_state, dict) else {}
    entries = replay.get("blocks")
    metadata: list[Any] = entries if isinstance(entries, list) else []
    places = by_position(kept_blocks(replay), len(message.blocks))
    content: list[dict[str, Any]] = []
    for position, block in enumerate(message.blocks):
        citations: Any = None
        for item in places[position]:
            if item.type == "citations":
                citations = item.data.get("citations")
            else:
                content.append(item.data)
        entry = metadata[position] if position < len(metadata) and isinstance(metadata[position], dict) else {}
        given = entry.get("extra")
        extra: dict[str, Any] = given if isinstance(given, dict) else {}
        if isinstance(block, TextBlock):
            if block.text:
                text = {**extra, "type": "text", "text": block.text}
                if isinstance(citations, list) and citations:
                    text["citations"] = citations
                content.append(text)
        elif isinstance(block, ReasoningBlock):
            if "redactedData" in entry:  # the form of a replay state made before redacted thinking was kept
                content.append({"type": "redacted_thinking", "data": entry["redactedData"]})
            elif "signature" in entry:
                content.append({**extra, "type": "thinking", "thinking": block.text, "signature": entry["signature"]})
        elif isinstance(block, ToolCallBlock):
            content.append(
                {**extra, "type": "tool_use", "id": block.id, "name": block.name, "input": block.parsed_arguments}
            )
    content.extend(item.data for item in places[-1] if item.type != "citations")
    return content


def _container(options: GenerateOptions) -> str | None:
    """The code-execution container of the latest assistant turn that had one: the next request reuses it."""
    for message in reversed(options.messages):
        if isinstance(message, AssistantMessage) and isinstance(message.replay_state, dict):
            response = message.replay_state.get("response")
            container = response.get("container") if isinstance(response, dict) else None
            identifier = container.get("id") if isinstance(container, dict) else None
            if isinstance(identifier, str):
                return identifier
    return None


class AnthropicAdapter(HttpAdapter):
    """Streaming from the Anthropic Messages API (``POST {base_url}/v1/messages``).

    ``max_tokens`` is required by the API: when a request leaves it unset, the model's ``default_max_tokens``
    is sent, else ``default_max_tokens`` of the adapter, plus the thinking budget when thinking is on (the API
    counts thinking in ``max_tokens``). Reasoning efforts are the model's opaque ids; each one names a thinking
    budget in ``thinking_budgets`` (``off`` sends no thinking). The other arguments are the shared
    :class:`HttpSettings`. Supports every option but ``session_id``.
    """

    default_provider = "anthropic"

    def __init__(
        self,
        *,
        base_url: str = "https://api.anthropic.com",
        default_max_tokens: int = 4096,
        thinking_budgets: Mapping[str, int] | None = None,
        version: str = "2023-06-01",
        **settings: Unpack[HttpSettings],
    ) -> None:
        super().__init__(base_url, **settings)
        self.default_max_tokens = default_max_tokens
        self.thinking_budgets = dict(thinking_budgets or {"low": 1024, "medium": 4096, "high": 16384})
        self.version = version
        check_headers({"anthropic-version": version})

    def provider_headers(self) -> dict[str, str]:
        """The API version, and the key as ``x-api-key``."""
        headers = {"anthropic-version": self.version}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body of a streamed Messages request for ``options``."""
        budget = self._thinking_budget(options.reasoning_effort)
        max_tokens = options.max_tokens
        if max_tokens is None:
            declared = self.models.get(options.model)
            max_tokens = (declared and declared.default_max_tokens) or self.default_max_tokens
            # Thinking counts against max_tokens, which the API wants above the budget: the answer gets its own.
            max_tokens += budget or 0
        body: dict[str, Any] = {
            "model": options.model,
            "max_tokens": max_tokens,
            "messages": anthropic_messages(options),
            "stream": True,
        }
        if options.system is not None:
            body["system"] = options.system
        if options.tools is not None:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in options.tools
            ]
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.stop is not None:
            body["stop_sequences"] = list(options.stop)
        if budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        container = _container(options)
        if container is not None:
            body["container"] = container
        return body

    def _thinking_budget(self, effort: str | None) -> int | None:
        if effort is None or effort == "off":
            return None
        budget = self.thinking_budgets.get(effort)
        if budget is None:
            raise LlmError(
                f"{self.provider}: reasoning effort {effort!r} has no thinking budget "
                f"(known: {sorted(self.thinking_budgets)})",
                ErrorCode.UNSUPPORTED_REASONING_EFFORT,
            )
        return budget

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """POST the request and convert its events (see :class:`AnthropicConverter`).

        The options are checked at once (``UNSUPPORTED_OPTION``, ``UNSUPPORTED_REASONING_EFFORT`` for an effort
        without a thinking budget); then the stream raises :class:`LlmError`: HTTP failures by status, an ``error``
        event by its type, ``MALFORMED_RESPONSE`` for an event that is not a JSON object, ``STREAM_CLOSED`` when the
        body ends before ``message_stop``, ``TRANSPORT``/``TIMEOUT``, ``ABORTED``.
        """
        self.check_options(options)
        # No event's data is "message_stop": the stream is over at that event's finish; the name is for STREAM_CLOSED.
        converter = AnthropicConverter(options.limits)
        return self._converted(converter, "/v1/messages", self.request_body(options), options.signal, "message_stop")

"""OpenAI-compatible chat completions over HTTP: :class:`OpenAICompatibleAdapter` (the ``http`` extra).

It streams ``POST {base_url}/chat/completions`` and converts the chunks with :class:`~.openai_chat.OpenAIConverter`;
a conversation is sent as chat ``messages`` (:func:`openai_messages`), each earlier model turn with what it kept
for replay.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Unpack

from .._adapter import (
    AssistantMessage,
    GenerateOptions,
    ModelInfo,
    ToolResultMessage,
)
from .._errors import LlmError
from .._models import ReasoningBlock, TextBlock, ToolCallBlock
from .._wire import StreamChunk
from .base import HttpAdapter, HttpSettings
from .convert import malformed
from .openai_chat import OpenAIConverter
from .replay import KeptBlock, by_position, kept_blocks

__all__ = ["OpenAICompatibleAdapter", "openai_messages"]


def openai_messages(options: GenerateOptions, *, send_reasoning: bool) -> list[dict[str, Any]]:
    """The request's ``messages``: the system prompt, then the conversation in the chat-completions form.

    An assistant turn's text is its ``content``: a string, or, when the turn kept content parts for replay, the
    list of its parts with the kept ones back where they came (the form the provider sent).
    """
    out: list[dict[str, Any]] = []
    if options.system is not None:
        out.append({"role": "system", "content": options.system})
    for message in options.messages:
        if isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {"role": "assistant"}
            kept = kept_blocks(message.replay_state)
            texts = [b.text for b in message.blocks if isinstance(b, TextBlock)]
            entry["content"] = _parts(message, kept) if kept else "".join(texts) if texts else None
            if send_reasoning:
                reasoning = [b.text for b in message.blocks if isinstance(b, ReasoningBlock)]
                if reasoning:
                    entry["reasoning_content"] = "".join(reasoning)
            calls = [b for b in message.blocks if isinstance(b, ToolCallBlock)]
            if calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in calls
                ]
            out.append(entry)
        elif isinstance(message, ToolResultMessage):
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
        else:
            out.append({"role": "user", "content": message.content})
    return out


def _parts(message: AssistantMessage, kept: list[KeptBlock]) -> list[dict[str, Any]]:
    """A turn's text blocks as text parts, with its kept parts put back where they came."""
    places = by_position(kept, len(message.blocks))
    parts: list[dict[str, Any]] = []
    for position, block in enumerate(message.blocks):
        parts.extend(item.data for item in places[position])
        if isinstance(block, TextBlock) and block.text:
            parts.append({"type": "text", "text": block.text})
    parts.extend(item.data for item in places[-1])
    return parts


class OpenAICompatibleAdapter(HttpAdapter):
    """Streaming chat completions from any OpenAI-compatible endpoint (DeepSeek, OpenAI, vLLM, Ollama, ...).

    ``base_url`` is the API root (``https://api.deepseek.com``, ``https://api.openai.com/v1``,
    ``http://localhost:11434/v1``); requests go to ``{base_url}/chat/completions`` with usage requested
    (``stream_options.include_usage``), the key as a bearer token. ``max_tokens_field`` names the limit in the
    body (OpenAI's newer models want ``max_completion_tokens``). ``send_reasoning`` sends earlier reasoning back
    as ``reasoning_content`` (DeepSeek's thinking with tools); by default it is not sent, as most servers reject
    it. The other arguments are the shared :class:`HttpSettings`. Supports every option but ``session_id``.
    """

    default_provider = "openai-compatible"

    def __init__(
        self,
        base_url: str,
        *,
        max_tokens_field: str = "max_tokens",
        send_reasoning: bool = False,
        **settings: Unpack[HttpSettings],
    ) -> None:
        super().__init__(base_url, **settings)
        self.max_tokens_field = max_tokens_field
        self.send_reasoning = send_reasoning

    async def list_models(self) -> list[ModelInfo]:
        """The declared models; with none declared, the endpoint's ``GET /models``."""
        if self.models:
            return list(self.models.values())
        from .http import request_json

        url = f"{self.base_url}/models"
        try:
            listing = await request_json(
                self.client,
                "GET",
                url,
                headers=self.request_headers(),
                who=self.provider,
                timeout=self.timeout,
                deadline=self.deadline,
                max_bytes=self.max_event_bytes,
            )
        except LlmError as exc:
            failure: LlmError | None = exc
        else:
            failure = None
        if failure is not None:  # raised outside the handler: see LlmAdapter.generate
            raise self._redacted(failure)
        data = listing.get("data") if isinstance(listing, Mapping) else None
        if not isinstance(data, list):
            raise malformed(f"{self.provider}: GET /models did not return a 'data' list")
        return [
            ModelInfo(provider=self.provider, id=entry["id"], name=entry["id"])
            for entry in data
            if isinstance(entry, Mapping) and isinstance(entry.get("id"), str)
        ]

    def provider_headers(self) -> dict[str, str]:
        """The key, as a bearer token."""
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body of a streamed chat completion for ``options``."""
        body: dict[str, Any] = {
            "model": options.model,
            "messages": openai_messages(options, send_reasoning=self.send_reasoning),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if options.tools is not None:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in options.tools
            ]
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.max_tokens is not None:
            body[self.max_tokens_field] = options.max_tokens
        if options.stop is not None:
            body["stop"] = list(options.stop)
        if options.reasoning_effort is not None:
            body["reasoning_effort"] = options.reasoning_effort
        return body

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """POST the request and convert the event stream (see :class:`OpenAIConverter`).

        The options are checked at once (``UNSUPPORTED_OPTION``); then the stream raises :class:`LlmError`: HTTP
        failures by status, ``MALFORMED_RESPONSE`` for an event that is not a JSON object, ``STREAM_CLOSED`` when
        the body ends without ``[DONE]``, ``TRANSPORT``/``TIMEOUT``, ``ABORTED``.
        """
        self.check_options(options)
        return self._converted(
            OpenAIConverter(options.limits), "/chat/completions", self.request_body(options), options.signal, "[DONE]"
        )

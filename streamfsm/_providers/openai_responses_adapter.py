"""The OpenAI Responses API over HTTP: :class:`OpenAIResponsesAdapter` (the ``http`` extra).

It streams ``POST {base_url}/responses`` and converts the events with
:class:`~.openai_responses.OpenAIResponsesConverter`. A conversation is sent in the API's ``input`` form
(:func:`responses_input`): each earlier model turn as the items it came as (their ids, from the turn's
``replayState``), with the items kept for replay (reasoning, server-tool calls, MCP, ...) put back where they were.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Unpack

from .._adapter import (
    AssistantMessage,
    GenerateOptions,
    ToolResultMessage,
)
from .._models import TextBlock, ToolCallBlock
from .._wire import StreamChunk
from .base import HttpAdapter, HttpSettings
from .openai_responses import OpenAIResponsesConverter
from .openai_responses_tools import CLIENT_TOOLS, NO_TEXT, error_note, output_item
from .replay import kept_blocks

__all__ = ["OpenAIResponsesAdapter", "responses_input"]


def _entry(entries: object, position: int) -> Mapping[str, Any]:
    """The replay entry of block ``position`` (an empty one if the turn has none: it came from elsewhere)."""
    entry = entries[position] if isinstance(entries, list) and position < len(entries) else None
    return entry if isinstance(entry, Mapping) else {}


def _assistant_items(message: AssistantMessage, calls: dict[str, str]) -> list[dict[str, Any]]:
    """One model turn as input items: its blocks as the items they came from, and the kept items where they were.

    A text block is an ``output_text`` (or ``refusal``) part of a ``message`` item, with the annotations kept for
    it; consecutive parts of one item go back as one item. A reasoning block is not sent by itself: the API takes
    reasoning back only as the reasoning item it sent, which was kept. A tool call is a ``function_call``, a
    ``custom_tool_call`` with its ``input``, or the call of the API's own tool it came as (``local_shell_call``,
    ``shell_call``, ...: the item itself); ``calls`` learns each call's item type, for its result.
    """
    state = message.replay_state if isinstance(message.replay_state, Mapping) else {}
    entries = state.get("blocks")
    kept = kept_blocks(state)
    claimed: set[int] = set()
    for position in range(len(message.blocks)):
        numbers = _entry(entries, position).get("annotations")
        if isinstance(numbers, list):
            claimed.update(n for n in numbers if type(n) is int and 0 <= n < len(kept))
    out: list[dict[str, Any]] = []
    waiting = 0  # the next kept item to put back
    last: dict[str, Any] | None = None  # the message item the next text part may join

    def put_back(before: int | None) -> None:
        nonlocal waiting, last
        while waiting < len(kept) and (before is None or kept[waiting].at <= before):
            if waiting not in claimed:
                out.append(dict(kept[waiting].data))
                last = None
            waiting += 1

    for position, block in enumerate(message.blocks):
        put_back(position)
        entry = _entry(entries, position)
        item_id = entry.get("item") if isinstance(entry.get("item"), str) else None
        if isinstance(block, TextBlock):
            part: dict[str, Any]
            if entry.get("part") == "refusal":
                part = {"type": "refusal", "refusal": block.text}
            else:
                numbers = entry.get("annotations")
                cited = [kept[n].data for n in numbers if n in claimed] if isinstance(numbers, list) else []
                part = {"type": "output_text", "text": block.text, "annotations": cited}
            if last is not None and item_id is not None and last.get("id") == item_id:
                last["content"].append(part)
                continue
            last = {"type": "message", "role": "assistant", "content": [part]}
            if item_id is not None:
                last["id"] = item_id
                last["status"] = "completed"
            if isinstance(entry.get("phase"), str):
                last["phase"] = entry["phase"]
            out.append(last)
            continue
        last = None
        if isinstance(block, ToolCallBlock):
            call: dict[str, Any]
            kind = entry.get("type")
            calls[block.id] = kind if isinstance(kind, str) else "function_call"
            if kind in CLIENT_TOOLS and isinstance(entry.get("call"), Mapping):
                item = dict(entry["call"])  # the item as it came: id, action, status, ...
                if (item.get("call_id") or item.get("id")) != block.id:
                    item["call_id"] = block.id  # the loop renamed the call: the item and its output agree
                out.append(item)
                continue
            if kind == "custom_tool_call":
                given = block.parsed_arguments.get("input")
                call = {"type": "custom_tool_call", "call_id": block.id, "name": block.name}
                call["input"] = given if isinstance(given, str) else block.arguments
            else:
                call = {"type": "function_call", "call_id": block.id, "name": block.name, "arguments": block.arguments}
            if item_id is not None:
                call["id"] = item_id
            out.append(call)
    put_back(None)
    return out


def responses_input(options: GenerateOptions) -> list[dict[str, Any]]:
    """The request's ``input``: the conversation as Responses API items.

    A user turn is ``{"role": "user", "content": ...}``; a model turn its items (see :func:`_assistant_items`); a
    tool result the output item of its call's type (:func:`output_item`).
    """
    out: list[dict[str, Any]] = []
    calls: dict[str, str] = {}
    for message in options.messages:
        if isinstance(message, AssistantMessage):
            out.extend(_assistant_items(message, calls))
        elif isinstance(message, ToolResultMessage):
            kind = calls.get(message.tool_call_id, "function_call")
            out.append(output_item(kind, message))
            if message.is_error and kind in NO_TEXT:
                out.append(error_note(kind, message))
        else:
            out.append({"role": "user", "content": message.content})
    return out


class OpenAIResponsesAdapter(HttpAdapter):
    """Streaming from the OpenAI Responses API (``POST {base_url}/responses``): OpenAI, Azure, xAI, LM Studio.

    ``base_url`` is the API root (``https://api.openai.com/v1``, ``https://api.x.ai/v1``,
    ``https://<resource>.openai.azure.com/openai/v1`` with the key in ``headers={"api-key": ...}``,
    ``http://localhost:1234/v1``); the key goes as a bearer token. The system prompt is sent as ``instructions``,
    ``max_tokens`` as ``max_output_tokens``, a reasoning effort (an id the model lists, sent as it is) as
    ``reasoning.effort``, with ``reasoning.summary`` = ``reasoning_summary`` (``"auto"``; None sends none) so that
    the model's reasoning is streamed. ``store`` is sent when it is not None: ``store=False`` keeps nothing at the
    provider, and asks for the reasoning items' ``encrypted_content`` (``include``), which the next turn sends
    back. ``strict_tools`` is each function tool's ``strict``. ``native_tools`` sends a tool as one of the API's
    own, by the tool's name: ``{"local_shell": {"type": "local_shell"}, "apply_patch": {"type": "apply_patch"}}``
    declares those two as the API's local shell and apply-patch tools; the model's calls of them come as
    ``local_shell_call`` and ``apply_patch_call`` items, which are tool calls named ``local_shell`` and
    ``apply_patch`` (their action as the arguments), and their results go back as ``local_shell_call_output`` and
    ``apply_patch_call_output`` items (:func:`output_item`). The other arguments are the shared :class:`HttpSettings`.
    Supports every option but ``stop`` (the API has no stop sequences) and ``session_id``.
    """

    default_provider = "openai-responses"

    supported_options = HttpAdapter.supported_options - {"stop"}

    def __init__(
        self,
        base_url: str = "https://api.openai.com/v1",
        *,
        store: bool | None = None,
        reasoning_summary: str | None = "auto",
        strict_tools: bool = False,
        native_tools: Mapping[str, Mapping[str, Any]] | None = None,
        **settings: Unpack[HttpSettings],
    ) -> None:
        super().__init__(base_url, **settings)
        self.store = store
        self.reasoning_summary = reasoning_summary
        self.strict_tools = strict_tools
        self.native_tools = {name: dict(tool) for name, tool in (native_tools or {}).items()}

    def provider_headers(self) -> dict[str, str]:
        """The key, as a bearer token."""
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body of a streamed response for ``options``."""
        body: dict[str, Any] = {"model": options.model, "input": responses_input(options), "stream": True}
        if options.system is not None:
            body["instructions"] = options.system
        if options.tools is not None:
            body["tools"] = [
                self.native_tools.get(t.name)
                or {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": self.strict_tools,
                }
                for t in options.tools
            ]
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.max_tokens is not None:
            body["max_output_tokens"] = options.max_tokens
        if options.reasoning_effort is not None:
            body["reasoning"] = {"effort": options.reasoning_effort}
            if self.reasoning_summary is not None:
                body["reasoning"]["summary"] = self.reasoning_summary
        if self.store is not None:
            body["store"] = self.store
            if not self.store:
                body["include"] = ["reasoning.encrypted_content"]
        return body

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """POST the request and convert its events (see :class:`~.openai_responses.OpenAIResponsesConverter`).

        The options are checked at once (``UNSUPPORTED_OPTION``); then the stream raises :class:`LlmError`: HTTP
        failures by status, ``response.failed`` and ``error`` events by their code, ``MALFORMED_RESPONSE`` for an
        event that is not a JSON object or not of the documented shape, ``STREAM_CLOSED`` when the body ends before
        the response does (``response.completed``, ``response.incomplete``), ``TRANSPORT``/``TIMEOUT``,
        ``ABORTED``.
        """
        self.check_options(options)
        # No event's data is "response.completed": the stream is over at that event's finish; the name is for
        # STREAM_CLOSED.
        body = self.request_body(options)
        converter = OpenAIResponsesConverter(options.limits)
        return self._converted(converter, "/responses", body, options.signal, "response.completed")

"""The Anthropic Messages API to the block protocol.

:class:`AnthropicConverter` is sans-IO (fed the stream's events as dicts); :func:`from_anthropic_events` wraps it
around any iterable of events, dicts or the ``anthropic`` SDK's objects; :class:`AnthropicAdapter` speaks HTTP
(the ``http`` extra).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

import orjson

from ._adapter import (
    APP_IDENTITY,
    AppIdentity,
    AssistantMessage,
    GenerateOptions,
    HttpAdapter,
    ModelInfo,
    ToolResultMessage,
)
from ._convert import (
    ProviderBlock,
    classify_failure,
    convert,
    error_detail,
    finish_reason,
    malformed,
    non_negative_int,
    words,
)
from ._errors import ErrorCode, LlmError
from ._models import ReasoningBlock, TextBlock, ToolCallBlock
from ._secrets import check_headers
from ._sse import DEFAULT_MAX_EVENT_BYTES
from ._wire import StreamChunk, WireFinishReason, WireUsage

if TYPE_CHECKING:
    import httpx

__all__ = ["AnthropicAdapter", "AnthropicConverter", "from_anthropic_events"]

_FINISH: dict[str, WireFinishReason] = {
    "end_turn": {"kind": "stop"},
    "stop_sequence": {"kind": "stop"},
    "tool_use": {"kind": "tool-calls"},
    "max_tokens": {"kind": "max-tokens"},
}
_KINDS = {"text": "text", "thinking": "reasoning", "redacted_thinking": "reasoning", "tool_use": "tool-call"}
#: Each block kind: the delta type that carries its content, and the field the content is in.
_DELTAS: dict[str, tuple[str, str]] = {
    "text": ("text_delta", "text"),
    "reasoning": ("thinking_delta", "thinking"),
    "tool-call": ("input_json_delta", "partial_json"),
}
#: Message usage fields, as the protocol names them. Later events repeat them with the running totals.
_USAGE = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_input_tokens", "cacheReadTokens"),
    ("cache_creation_input_tokens", "cacheWriteTokens"),
)


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise malformed(f"{what} must be a string, got {type(value).__name__}")
    return value


class AnthropicConverter:
    """Turns Messages API stream events into block-protocol chunks.

    ``text`` blocks become text, ``thinking`` (and ``redacted_thinking``) reasoning, ``tool_use`` with its
    ``input_json_delta`` s a tool call (id and name on the first delta, ``{}`` when no input came). ``ping`` and
    event types it does not know are skipped, as the API's versioning policy asks (it may add event types
    without a new version); an ``error`` event raises its coded :class:`LlmError`. Usage (``input_tokens``
    already uncached, ``cache_read_input_tokens``, ``cache_creation_input_tokens``, the last ``output_tokens``)
    and the finish are sent at ``message_stop``. A tool call cut by ``max_tokens`` never ends: it is reported as
    interrupted. Thinking signatures and redacted data go in the finish's ``replayState`` (one entry per block), so the
    adapter can send thinking back on the next turn.
    """

    def __init__(self) -> None:
        self.blocks: dict[int, ProviderBlock] = {}
        self.open: ProviderBlock | None = None
        self.count = 0
        self.replay: list[dict[str, Any] | None] = []
        # Each block's signature, in the pieces it came in: joined once, at the end (joining per delta is quadratic).
        self.signatures: dict[int, list[str]] = {}
        self.counts: dict[str, int] | None = None  # the usage fields seen so far, by the protocol's names
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.message: dict[str, Any] = {}
        self.stopped = False

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        """Convert one event; returns the protocol chunks it completes."""
        kind = event.get("type")
        if self.stopped and kind != "ping":
            raise malformed(f"event {kind!r} after message_stop")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            return self._start(event)
        if kind == "content_block_stop":
            return self._stop(event)
        if kind == "message_start":
            message = event.get("message")
            if not isinstance(message, Mapping):
                raise malformed("message_start without a 'message' object")
            self.message = {key: message[key] for key in ("id", "model") if isinstance(message.get(key), str)}
            self._usage(message.get("usage"))
            return []
        if kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping):
                reason = delta.get("stop_reason")
                if reason is not None:
                    self.stop_reason = _str(reason, "stop_reason")
                if isinstance(delta.get("stop_sequence"), str):
                    self.stop_sequence = delta["stop_sequence"]
            self._usage(event.get("usage"))
            return []
        if kind == "message_stop":
            return self.end()
        if kind == "error":
            message, error_kind = error_detail(event)
            raise LlmError(
                f"the provider sent an error event: {message or words(event)}",
                classify_failure(None, message, error_kind),
            )
        return []  # ping, or an event type added since

    def _usage(self, usage: object) -> None:
        if usage is None:
            return
        if not isinstance(usage, Mapping):
            raise malformed(f"'usage' must be an object, got {type(usage).__name__}")
        if self.counts is None:
            self.counts = {}
        for field, key in _USAGE:
            if usage.get(field) is not None:
                self.counts[key] = non_negative_int(usage[field], field)

    @property
    def usage(self) -> WireUsage | None:
        """The usage so far, merged over ``message_start`` and ``message_delta``; None if no event had any."""
        counts = self.counts
        if counts is None:
            return None
        usage: WireUsage = {"inputTokens": counts.get("inputTokens", 0), "outputTokens": counts.get("outputTokens", 0)}
        if "cacheReadTokens" in counts:
            usage["cacheReadTokens"] = counts["cacheReadTokens"]
        if "cacheWriteTokens" in counts:
            usage["cacheWriteTokens"] = counts["cacheWriteTokens"]
        return usage

    def _block(self, event: Mapping[str, Any]) -> ProviderBlock:
        position = event.get("index")
        block = self.blocks.get(position) if isinstance(position, int) else None
        if block is None:
            raise malformed(f"{event.get('type')} for block {position!r}, which did not start")
        return block

    def _start(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        position = event.get("index")
        content = event.get("content_block")
        if isinstance(position, bool) or not isinstance(position, int) or position in self.blocks:
            raise malformed(f"content_block_start with a bad or repeated index {position!r}")
        if not isinstance(content, Mapping) or content.get("type") not in _KINDS:
            shown = content.get("type") if isinstance(content, Mapping) else content
            raise malformed(f"content block {position}: type {shown!r} cannot be converted to the block protocol")
        if self.open is not None:
            raise malformed(f"content block {position} started while block {self.open.index} is open")
        source = content["type"]
        if source == "tool_use":
            block = ProviderBlock(
                "tool-call", _str(content.get("id"), "tool_use.id"), _str(content.get("name"), "tool_use.name")
            )
        else:
            block = ProviderBlock("text" if source == "text" else "reasoning")
        block.index = self.count
        block.started = True
        self.count += 1
        self.blocks[position] = block
        self.open = block
        replay: dict[str, Any] | None = None
        out: list[StreamChunk] = [{"type": "block-start", "index": block.index, "blockType": block.kind}]
        if source == "tool_use":
            given = content.get("input")
            arguments = orjson.dumps(given).decode() if isinstance(given, Mapping) and given else ""
            block.parts.append(arguments)
            out.append(block.opening(arguments))
        elif source == "redacted_thinking":
            replay = {"redactedData": _str(content.get("data"), "redacted_thinking.data")}
        else:
            text = _str(content.get("text" if source == "text" else "thinking", ""), f"{source} text")
            if isinstance(content.get("signature"), str) and content["signature"]:
                replay = {"signature": ""}
                self.signatures[block.index] = [content["signature"]]
            if text:
                block.parts.append(text)
                out.append(block.delta(text))
        self.replay.append(replay)
        return out

    def _delta(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        block = self._block(event)
        if block.ended:
            raise malformed(f"content_block_delta for block {event.get('index')!r} after its content_block_stop")
        delta = event.get("delta")
        if not isinstance(delta, Mapping):
            raise malformed("content_block_delta without a 'delta' object")
        kind = delta.get("type")
        if kind == "signature_delta":
            parts = self.signatures.get(block.index)
            if parts is None:
                parts = self.signatures[block.index] = []
                entry = self.replay[block.index] or {}
                entry["signature"] = ""
                self.replay[block.index] = entry
            parts.append(_str(delta.get("signature"), "signature"))
            return []
        if kind == "citations_delta":
            entry = self.replay[block.index] or {}
            entry.setdefault("citations", []).append(delta.get("citation"))
            self.replay[block.index] = entry
            return []
        expected, field = _DELTAS[block.kind]
        if kind != expected:
            raise malformed(f"delta {kind!r} for a {block.kind} block")
        text = _str(delta.get(field), f"{kind}.{field}")
        if not text:
            return []
        block.parts.append(text)
        return [block.delta(text)]

    def _stop(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        block = self._block(event)
        if block.ended:
            raise malformed(f"content_block_stop for block {event.get('index')!r} twice")
        self.open = None
        return block.close()

    def end(self) -> list[StreamChunk]:
        """The message is over (``message_stop``, or the end of the events): ``usage`` then ``finish``.

        Raises ``STREAM_CLOSED`` when no stop reason came, ``EMPTY_RESPONSE`` for an ``end_turn`` with no content.
        After ``message_stop`` there is nothing more to end: it returns no chunks.
        """
        if self.stopped:
            return []
        self.stopped = True
        reason = self.stop_reason
        if reason is None:
            raise LlmError("the stream ended without a stop_reason", ErrorCode.STREAM_CLOSED)
        finish = finish_reason(reason, _FINISH, "stop_reason")
        if finish["kind"] == "stop" and self.count == 0:
            raise LlmError("the provider stopped without any content", ErrorCode.EMPTY_RESPONSE)
        out: list[StreamChunk] = []
        cut = self.open
        if cut is not None and (cut.kind != "tool-call" or cut.arguments_complete()):
            self.open = None
            out.extend(cut.close())
        usage = self.usage
        if usage is not None:
            out.append({"type": "usage", "usage": usage})
        if finish["kind"] == "error":
            out.append({"type": "finish", "reason": finish})
        else:
            response = {**self.message, "stopReason": reason}
            if self.stop_sequence is not None:
                response["stopSequence"] = self.stop_sequence
            for position, parts in self.signatures.items():
                entry = self.replay[position]
                assert entry is not None  # made when its first piece came
                entry["signature"] = "".join(parts)
            replay = {"response": response, "blocks": list(self.replay)}
            out.append({"type": "finish", "reason": finish, "replayState": replay})
        return out


@overload
def from_anthropic_events(events: AsyncIterable[Any]) -> AsyncIterator[StreamChunk]: ...
@overload
def from_anthropic_events(events: Iterable[Any]) -> Iterator[StreamChunk]: ...
def from_anthropic_events(
    events: Iterable[Any] | AsyncIterable[Any],
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Convert a Messages API event stream (dicts or SDK event objects, sync or async) to protocol chunks."""
    return convert(AnthropicConverter(), events, "an event")


# --- HTTP -------------------------------------------------------------------------------------------


def anthropic_messages(options: GenerateOptions) -> list[dict[str, Any]]:
    """The request's ``messages`` in the Messages API form (tool results ride in user turns, merged).

    Reasoning goes back as ``thinking`` only with the signature the provider gave it (from ``replay_state``);
    without one the provider would refuse it, so it is left out.
    """
    out: list[dict[str, Any]] = []
    for message in options.messages:
        if isinstance(message, AssistantMessage):
            replay = message.replay_state if isinstance(message.replay_state, Mapping) else {}
            blocks = replay.get("blocks")
            metadata: list[Any] = blocks if isinstance(blocks, list) else []
            content: list[dict[str, Any]] = []
            for position, block in enumerate(message.blocks):
                extra = (
                    metadata[position] if position < len(metadata) and isinstance(metadata[position], Mapping) else {}
                )
                if isinstance(block, TextBlock):
                    if block.text:
                        content.append({"type": "text", "text": block.text})
                elif isinstance(block, ReasoningBlock):
                    if "redactedData" in extra:
                        content.append({"type": "redacted_thinking", "data": extra["redactedData"]})
                    elif "signature" in extra:
                        content.append({"type": "thinking", "thinking": block.text, "signature": extra["signature"]})
                elif isinstance(block, ToolCallBlock):
                    content.append(
                        {"type": "tool_use", "id": block.id, "name": block.name, "input": block.parsed_arguments}
                    )
            out.append({"role": "assistant", "content": content})
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


class AnthropicAdapter(HttpAdapter):
    """Streaming from the Anthropic Messages API (``POST {base_url}/v1/messages``).

    ``max_tokens`` is required by the API: when a request leaves it unset, the model's ``default_max_tokens``
    is sent, else ``default_max_tokens`` of the adapter, plus the thinking budget when thinking is on (the API
    counts thinking in ``max_tokens``). Reasoning efforts are the model's opaque ids; each one names a thinking
    budget in ``thinking_budgets`` (``off`` sends no thinking). The other arguments are :class:`HttpAdapter`'s.
    Supports every option but ``session_id``.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = "https://api.anthropic.com",
        provider: str = "anthropic",
        models: Sequence[ModelInfo] = (),
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float | None = None,
        deadline: float | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        headers: Mapping[str, str] | None = None,
        identity: AppIdentity = APP_IDENTITY,
        default_max_tokens: int = 4096,
        thinking_budgets: Mapping[str, int] | None = None,
        version: str = "2023-06-01",
    ) -> None:
        super().__init__(
            base_url,
            api_key=api_key,
            provider=provider,
            models=models,
            client=client,
            timeout=timeout,
            deadline=deadline,
            max_event_bytes=max_event_bytes,
            headers=headers,
            identity=identity,
        )
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
        return self._converted(
            AnthropicConverter(), "/v1/messages", self.request_body(options), options.signal, "message_stop"
        )

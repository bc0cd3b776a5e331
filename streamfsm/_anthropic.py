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
    LlmAdapter,
    ModelInfo,
    ProviderInfo,
    ToolResultMessage,
    attribution_headers,
    to_mapping,
)
from ._convert import ProviderBlock, classify_failure, error_detail, malformed, non_negative_int
from ._errors import ErrorCode, LlmError
from ._models import ReasoningBlock, TextBlock, ToolCallBlock
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


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise malformed(f"{what} must be a string, got {type(value).__name__}")
    return value


class AnthropicConverter:
    """Turns Messages API stream events into block-protocol chunks.

    ``text`` blocks become text, ``thinking`` (and ``redacted_thinking``) reasoning, ``tool_use`` with its
    ``input_json_delta`` s a tool call (id and name on the first delta, ``{}`` when no input came). ``ping`` is
    ignored; an ``error`` event raises its coded :class:`LlmError`. Usage (``input_tokens`` already uncached,
    ``cache_read_input_tokens``, ``cache_creation_input_tokens``, the last ``output_tokens``) and the finish
    are sent at ``message_stop``. A tool call cut by ``max_tokens`` never ends: it is reported as interrupted.
    Thinking signatures and redacted data go in the finish's ``replayState`` (one entry per block), so the
    adapter can send thinking back on the next turn.
    """

    def __init__(self) -> None:
        self.blocks: dict[int, ProviderBlock] = {}
        self.open: ProviderBlock | None = None
        self.count = 0
        self.replay: list[dict[str, Any] | None] = []
        self.usage: WireUsage | None = None
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
        if kind == "ping":
            return []
        if kind == "error":
            message, detail = error_detail(event)
            raise LlmError(f"the provider sent an error event: {message or event}", classify_failure(None, detail))
        raise malformed(f"unknown event type {kind!r}")

    def _usage(self, usage: object) -> None:
        if usage is None:
            return
        if not isinstance(usage, Mapping):
            raise malformed(f"'usage' must be an object, got {type(usage).__name__}")
        previous = self.usage or {"inputTokens": 0, "outputTokens": 0}
        merged: WireUsage = dict(previous)  # type: ignore[assignment]
        for field, key in (
            ("input_tokens", "inputTokens"),
            ("output_tokens", "outputTokens"),
            ("cache_read_input_tokens", "cacheReadTokens"),
            ("cache_creation_input_tokens", "cacheWriteTokens"),
        ):
            if usage.get(field) is not None:
                merged[key] = non_negative_int(usage[field], field)  # type: ignore[literal-required]
        self.usage = merged

    def _block(self, event: Mapping[str, Any]) -> ProviderBlock:
        block = self.blocks.get(event.get("index"))  # type: ignore[arg-type]
        if block is None:
            raise malformed(f"{event.get('type')} for block {event.get('index')!r}, which did not start")
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
                replay = {"signature": content["signature"]}
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
        expected = {"text_delta": "text", "thinking_delta": "reasoning", "input_json_delta": "tool-call"}.get(kind)  # type: ignore[arg-type]
        if kind == "signature_delta":
            entry = self.replay[block.index] or {}
            entry["signature"] = entry.get("signature", "") + _str(delta.get("signature"), "signature")
            self.replay[block.index] = entry
            return []
        if kind == "citations_delta":
            entry = self.replay[block.index] or {}
            entry.setdefault("citations", []).append(delta.get("citation"))
            self.replay[block.index] = entry
            return []
        if expected is None or expected != block.kind:
            raise malformed(f"delta {kind!r} for a {block.kind} block")
        field = {"text": "text", "reasoning": "thinking", "tool-call": "partial_json"}[block.kind]
        text = _str(delta.get(field), f"{kind}.{field}")
        if not text:
            return []
        block.parts.append(text)
        return [block.delta(text)]

    def _stop(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        block = self._block(event)
        if block.ended:
            raise malformed(f"content_block_stop for block {event.get('index')!r} twice")
        block.ended = True
        self.open = None
        out: list[StreamChunk] = []
        if block.kind == "tool-call" and not any(block.parts):
            block.parts.append("{}")
            out.append(block.delta("{}"))
        out.append({"type": "block-end", "index": block.index, "block": block.block()})  # type: ignore[typeddict-item]
        return out

    def end(self) -> list[StreamChunk]:
        """The message is over (``message_stop``, or the end of the events): ``usage`` then ``finish``.

        Raises ``STREAM_CLOSED`` when no stop reason came, ``EMPTY_RESPONSE`` for an ``end_turn`` with no content.
        """
        self.stopped = True
        reason = self.stop_reason
        if reason is None:
            raise LlmError("the stream ended without a stop_reason", ErrorCode.STREAM_CLOSED)
        finish = _FINISH.get(reason)
        if finish is not None and finish["kind"] == "stop" and self.count == 0:
            raise LlmError("the provider stopped without any content", ErrorCode.EMPTY_RESPONSE)
        out: list[StreamChunk] = []
        cut = self.open
        if cut is not None and (cut.kind != "tool-call" or cut.arguments_complete()):
            out.extend(self._stop({"index": next(k for k, v in self.blocks.items() if v is cut)}))
        if self.usage is not None:
            out.append({"type": "usage", "usage": self.usage})
        if finish is None:
            failure = {"message": f"the provider stopped with stop_reason {reason!r}", "code": reason.upper()}
            out.append({"type": "finish", "reason": {"kind": "error", "failure": failure}})  # type: ignore[typeddict-item]
        else:
            response = {**self.message, "stopReason": reason}
            if self.stop_sequence is not None:
                response["stopSequence"] = self.stop_sequence
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
    if isinstance(events, AsyncIterable):
        return _from_anthropic_async(events)
    return _from_anthropic_sync(events)


def _mapping(item: object) -> Mapping[str, Any]:
    event = to_mapping(item)
    if event is None:
        raise malformed(f"an event must be an object, got {type(item).__name__}")
    return event


def _from_anthropic_sync(events: Iterable[Any]) -> Iterator[StreamChunk]:
    converter = AnthropicConverter()
    for item in events:
        yield from converter.feed(_mapping(item))
    if not converter.stopped:
        yield from converter.end()


async def _from_anthropic_async(events: AsyncIterable[Any]) -> AsyncIterator[StreamChunk]:
    converter = AnthropicConverter()
    async for item in events:
        for chunk in converter.feed(_mapping(item)):
            yield chunk
    if not converter.stopped:
        for chunk in converter.end():
            yield chunk


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


class AnthropicAdapter(LlmAdapter):
    """Streaming from the Anthropic Messages API (``POST {base_url}/v1/messages``).

    ``max_tokens`` is required by the API: when a request leaves it unset, the model's ``default_max_tokens``
    is sent, else ``default_max_tokens`` of the adapter. Reasoning efforts are the model's opaque ids; each
    one names a thinking budget in ``thinking_budgets`` (``off`` sends no thinking). Pass ``client`` (an
    ``httpx.AsyncClient``) to reuse connections. Supports every option but ``session_id``.
    """

    supported_options = frozenset(
        {"system", "tools", "temperature", "max_tokens", "stop", "reasoning_effort", "signal"}
    )

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = "https://api.anthropic.com",
        provider: str = "anthropic",
        models: Sequence[ModelInfo] = (),
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float | None = None,
        headers: Mapping[str, str] | None = None,
        identity: AppIdentity = APP_IDENTITY,
        default_max_tokens: int = 4096,
        thinking_budgets: Mapping[str, int] | None = None,
        version: str = "2023-06-01",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.provider = provider
        self.models = {model.id: model for model in models}
        self.client = client
        self.timeout = timeout
        self.headers = dict(headers or {})
        self.identity = identity
        self.default_max_tokens = default_max_tokens
        self.thinking_budgets = dict(thinking_budgets or {"low": 1024, "medium": 4096, "high": 16384})
        self.version = version

    @property
    def provider_info(self) -> ProviderInfo:
        """The provider route this adapter was configured as."""
        return ProviderInfo(id=self.provider, name="Anthropic")

    async def resolve_model(self, model: str) -> ModelInfo:
        """The declared metadata of ``model``, or just its id."""
        return self.models.get(model) or ModelInfo(provider=self.provider, id=model, name=model)

    async def list_models(self) -> list[ModelInfo]:
        """The declared models, in the order given."""
        return list(self.models.values())

    def request_headers(self) -> dict[str, str]:
        """Headers of every request: attribution, version, the key, then the caller's own headers."""
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": self.version,
            **attribution_headers(self.identity),
        }
        if self.api_key:
            headers["x-api-key"] = self.api_key
        headers.update(self.headers)
        return headers

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body of a streamed Messages request for ``options``."""
        declared = self.models.get(options.model)
        max_tokens = options.max_tokens or (declared and declared.default_max_tokens) or self.default_max_tokens
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
        effort = options.reasoning_effort
        if effort is not None and effort != "off":
            budget = self.thinking_budgets.get(effort)
            if budget is None:
                raise LlmError(
                    f"{self.provider}: reasoning effort {effort!r} has no thinking budget "
                    f"(known: {sorted(self.thinking_budgets)})",
                    ErrorCode.UNSUPPORTED_REASONING_EFFORT,
                )
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return body

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """POST the request and convert its events (see :class:`AnthropicConverter`).

        Raises :class:`LlmError`: HTTP failures by status, an ``error`` event by its type, ``MALFORMED_RESPONSE``
        for an event that is not JSON, ``STREAM_CLOSED`` when the body ends before ``message_stop``,
        ``TRANSPORT``/``TIMEOUT``, ``ABORTED``.
        """
        self.check_options(options)
        from ._http import ClientScope, post_sse

        converter = AnthropicConverter()
        body = self.request_body(options)
        async with ClientScope(self.client, self.timeout) as client:
            events = post_sse(
                client,
                f"{self.base_url}/v1/messages",
                headers=self.request_headers(),
                body=body,
                signal=options.signal,
                who=self.provider,
            )
            try:
                async for event in events:
                    if not event.data:
                        continue
                    try:
                        parsed = orjson.loads(event.data)
                    except orjson.JSONDecodeError as exc:
                        raise malformed(f"{self.provider}: an event is not JSON ({exc}): {event.data[:80]!r}") from exc
                    if not isinstance(parsed, Mapping):
                        raise malformed(f"{self.provider}: an event is not a JSON object: {event.data[:80]!r}")
                    for chunk in converter.feed(parsed):
                        yield chunk
                    if converter.stopped:
                        return
            finally:
                await events.aclose()  # type: ignore[attr-defined]
        raise LlmError(f"{self.provider}: the stream ended before message_stop", ErrorCode.STREAM_CLOSED)

"""Cohere's v2 chat stream (``POST /v2/chat`` with ``stream: true``) to the block protocol.

:class:`CohereConverter` is sans-IO: it is fed the stream's events as dicts (``{"type": "content-delta", ...}``).
:func:`from_cohere_events` wraps it around any iterable of them, sync or async, dicts or the ``cohere`` SDK's v2
stream events (what ``ClientV2.chat_stream`` yields). There is no HTTP adapter: the user holds the SDK's
stream; it is handed over as it is.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Hashable, Iterable, Iterator, Mapping
from typing import Any

from .._config import Limits
from .._errors import ErrorCode, LlmError
from .._quote import quote
from .._wire import StreamChunk, WireFinishReason, WireUsage
from .blocks import Kind, ProviderBlock
from .classify import stream_failure, words
from .convert import as_object, convert, count, ended_turn, is_position, malformed, stop_reason, sync_or_async
from .frame import TurnState
from .replay import json_size

__all__ = ["CohereConverter", "cohere_usage", "from_cohere_events"]

_FINISH: dict[str, WireFinishReason] = {
    "COMPLETE": {"kind": "stop"},
    "STOP_SEQUENCE": {"kind": "stop"},
    "TOOL_CALL": {"kind": "tool-calls"},
    "MAX_TOKENS": {"kind": "max-tokens"},
}


def cohere_usage(usage: Mapping[str, Any]) -> WireUsage | None:
    """Cohere's ``usage`` as the protocol's disjoint counts; None when it has no counts.

    The model's own counts, ``tokens`` (what it read, Cohere's prompt template included, and wrote), are used:
    ``inputTokens`` is ``tokens.input_tokens`` less ``cached_tokens`` (the prompt tokens that hit the cache),
    which is ``cacheReadTokens``. Only when ``tokens`` is absent are ``billed_units`` used, as they are (they
    leave the template out and say nothing of the cache). Cohere does not count reasoning apart.
    """
    tokens = usage.get("tokens")
    read = count(usage, "cached_tokens", "cached_tokens")
    given = count(tokens, "input_tokens", "tokens.input_tokens")
    written = count(tokens, "output_tokens", "tokens.output_tokens")
    if given is not None or written is not None:
        result: WireUsage = {"inputTokens": max(0, (given or 0) - (read or 0)), "outputTokens": written or 0}
        if read is not None:
            result["cacheReadTokens"] = read
        return result
    billed = usage.get("billed_units")
    given = count(billed, "input_tokens", "billed_units.input_tokens")
    written = count(billed, "output_tokens", "billed_units.output_tokens")
    if given is not None or written is not None:
        return {"inputTokens": given or 0, "outputTokens": written or 0}
    return None


def _message(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """An event's ``delta.message``."""
    kind = event.get("type")
    delta = as_object(event.get("delta"), f"{kind}.delta")
    return as_object(delta.get("message"), f"{kind}.delta.message")


def _index(event: Mapping[str, Any]) -> int:
    index = event.get("index")
    if not is_position(index):
        raise malformed(f"{event.get('type')} with a bad index {quote(index)}")
    return index


def _text(value: object, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise malformed(f"{what} must be a string, got {type(value).__name__}")
    return value


class _Part:
    """A content part of a type the protocol has no word for, assembled from its start and its deltas."""

    __slots__ = ("at", "pieces", "start")

    def __init__(self, at: int, start: Mapping[str, Any]) -> None:
        self.at = at
        self.start = dict(start)
        self.pieces: dict[str, list[str]] = {}  # text fields of the deltas, joined once, at the end

    def add(self, content: Mapping[str, Any]) -> None:
        for key, value in content.items():
            if isinstance(value, str):
                self.pieces.setdefault(key, []).append(value)
            else:
                self.start[key] = value

    def data(self) -> dict[str, Any]:
        data = dict(self.start)
        for key, pieces in self.pieces.items():
            before = data.get(key)
            data[key] = (before if isinstance(before, str) else "") + "".join(pieces)
        return data


class CohereConverter(TurnState):
    """Turns v2 chat stream events into block-protocol chunks.

    ``content-start``/``content-delta`` of type ``text`` become text blocks and of type ``thinking`` reasoning
    blocks; ``tool-plan-delta`` s a reasoning block (the plan the model states before its calls: the protocol
    indexes of such blocks go in the finish's ``replayState["toolPlanBlocks"]``); ``tool-call-start`` and its
    ``tool-call-delta`` s a tool call. Each ``citation-start`` is kept verbatim in ``replayState["kept"]``, with
    ``at`` the index of the block it cites; so is a content part of a type the protocol has no word for.
    ``debug`` events and types this converter does not know are skipped. A ``message-end`` with an ``error`` or
    the ``ERROR`` finish reason raises its coded :class:`LlmError`, ``TIMEOUT`` raises ``TIMEOUT``; ``usage``
    and ``finish`` are sent when the input ends.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)  # over: "message-end" or "error"; ended: end() has run
        self.blocks: dict[Hashable, ProviderBlock] = {}  # ("content", i), ("tool", i) → block
        self.ordinals: dict[int, int] = {}  # content index → protocol index, for citations
        self.parts: dict[int, _Part] = {}  # content index → a kept part
        self.kept: list[tuple[str, int, _Part | Mapping[str, Any]]] = []
        self.plan: ProviderBlock | None = None
        self.plans: list[int] = []
        self.response_id: str | None = None
        self.reason: str | None = None
        self.started = False  # message-start came

    def begins_turn(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` is the first of another turn: a ``message-start`` after this turn's ``message-end``."""
        return self.over is not None and event.get("type") == "message-start"

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        """Convert one event; returns the protocol chunks it completes."""
        kind = event.get("type")
        if kind is None:
            if "error" in event:
                raise stream_failure(event, "in the stream")
            raise malformed(f"an event without a type: {words(event)[:80]}")
        if self.over is not None and kind != "debug":
            reader = "from_cohere_events" if self.begins_turn(event) else None
            raise ended_turn(f"event {words(kind)[:40]}", "message-end", reader)
        if kind == "content-delta":
            self._content_delta(event)
        elif kind == "tool-call-delta":
            self._tool_delta(event)
        elif kind == "tool-plan-delta":
            self._plan(_text(_message(event).get("tool_plan"), "tool_plan"))
        elif kind == "content-start":
            self._content_start(_index(event), as_object(_message(event).get("content"), "content-start content"))
        elif kind == "tool-call-start":
            self._tool_start(_index(event), as_object(_message(event).get("tool_calls"), "tool-call-start tool_calls"))
        elif kind == "citation-start":
            self._citation(as_object(_message(event).get("citations"), "citation-start citations"))
        elif kind == "message-start":
            self._message_start(event)
        elif kind == "message-end":
            self._message_end(as_object(event.get("delta"), "message-end.delta"))
        elif kind == "error":
            raise self.failed("error", stream_failure(event, "in the stream"))
        # content-end, tool-call-end, citation-end: the next block or the end closes a block. debug, and event
        # types added to the API later: nothing to convert.
        return self.queue.take()

    # --- Content ------------------------------------------------------------------------------------

    def _new(self, key: Hashable, block: ProviderBlock, text: str) -> ProviderBlock:
        if key in self.blocks:
            raise malformed(f"{key[0]} {key[1]} began twice" if isinstance(key, tuple) else "a block began twice")
        self.blocks[key] = block
        self.queue.push(block, text)
        return block

    def _add(self, block: ProviderBlock, text: str) -> None:
        if not text:
            return
        if block.ended:
            raise malformed(f"content for a block after the next block had begun: {text[:40]!r}")
        self.queue.add(block, text)

    def _content_start(self, index: int, content: Mapping[str, Any]) -> None:
        kind = content.get("type")
        if kind is None:
            kind = "thinking" if content.get("thinking") is not None else "text"
        if kind not in ("text", "thinking"):
            if index in self.parts or ("content", index) in self.blocks:
                raise malformed(f"content {index} began twice")
            self.keeper.charge(json_size(content, f"a {kind!r} content part"))
            part = self.parts[index] = _Part(self.queue.made, content)
            self.kept.append((kind if isinstance(kind, str) else quote(kind), part.at, part))
            return
        self.ordinals[index] = self.queue.made
        block = ProviderBlock("text" if kind == "text" else "reasoning")
        field = "text" if kind == "text" else "thinking"
        self._new(("content", index), block, _text(content.get(field), f"{kind} content"))

    def _content_delta(self, event: Mapping[str, Any]) -> None:
        index = _index(event)
        content = as_object(_message(event).get("content"), "content-delta content")
        part = self.parts.get(index)
        if part is not None:
            self.keeper.charge(json_size(content, "a content-delta of a kept part"))
            part.add(content)
            return
        block = self.blocks.get(("content", index))
        if block is None:  # no content-start: the delta says what it is
            self._content_start(index, content)
            return
        kind: Kind = block.kind
        field = "thinking" if kind == "reasoning" and content.get("thinking") is not None else "text"
        self._add(block, _text(content.get(field), f"content-delta {field}"))

    def _plan(self, text: str) -> None:
        plan = self.plan
        if plan is not None and not plan.ended and self.queue.last() is plan:
            self._add(plan, text)
            return
        self.plans.append(self.queue.made)
        self.plan = self._new(("plan", self.queue.made), ProviderBlock("reasoning"), text)

    def _tool_start(self, index: int, call: Mapping[str, Any]) -> None:
        call_id = call.get("id")
        function = as_object(call.get("function"), "tool_calls.function")
        name = function.get("name")
        if not isinstance(call_id, str) or not call_id:
            raise malformed(f"tool call {index} began without an id")
        if not isinstance(name, str) or not name:
            raise malformed(f"tool call {index} ({call_id}) began without a function name")
        self._new(
            ("tool", index), ProviderBlock("tool-call", call_id, name), _text(function.get("arguments"), "arguments")
        )
        self.calls += 1

    def _tool_delta(self, event: Mapping[str, Any]) -> None:
        index = _index(event)
        block = self.blocks.get(("tool", index))
        if block is None:
            raise malformed(f"tool-call-delta for tool call {index}, which did not start")
        call = as_object(_message(event).get("tool_calls"), "tool-call-delta tool_calls")
        function = as_object(call.get("function"), "tool-call-delta function")
        self._add(block, _text(function.get("arguments"), "arguments"))

    def _citation(self, citation: Mapping[str, Any]) -> None:
        content = citation.get("content_index")
        made = self.queue.made
        at = self.ordinals.get(content, made) if type(content) is int else made
        self.keeper.charge(json_size(citation, "a citation"))
        self.kept.append(("citation", at, citation))

    def _message_start(self, event: Mapping[str, Any]) -> None:
        if self.started:
            raise malformed("message-start before the message-end of the message before: a turn spliced into another")
        self.started = True
        if isinstance(event.get("id"), str):
            self.response_id = event["id"]
        delta = event.get("delta")
        message = delta.get("message") if isinstance(delta, Mapping) else None
        if not isinstance(message, Mapping):
            return
        # The documented stream starts with these empty; a message that starts with content is read as such.
        plan = _text(message.get("tool_plan"), "message-start tool_plan")
        if plan:
            self._plan(plan)
        content = message.get("content") or []
        calls = message.get("tool_calls") or []
        if not isinstance(content, list) or not isinstance(calls, list):
            raise malformed("message-start content and tool_calls must be lists")
        for number, item in enumerate(content):
            self._content_start(-1 - number, as_object(item, "message-start content"))
        for number, item in enumerate(calls):
            self._tool_start(-1 - number, as_object(item, "message-start tool_calls"))

    def _message_end(self, delta: Mapping[str, Any]) -> None:
        self.over = "message-end"
        reason = delta.get("finish_reason")
        error = delta.get("error")
        if error or reason == "ERROR":
            message = words(error) if error else "the provider stopped with finish_reason 'ERROR'"
            raise stream_failure({"error": {"message": message, "type": words(reason or "ERROR")}}, "at message-end")
        if reason == "TIMEOUT":
            raise LlmError("the provider stopped with finish_reason 'TIMEOUT'", ErrorCode.TIMEOUT)
        if not isinstance(reason, str) or not reason:
            raise malformed(f"message-end.finish_reason must be a non-empty string, got {quote(reason)}")
        self.reason = reason
        usage = delta.get("usage")
        if usage is not None:
            self.usage = cohere_usage(as_object(usage, "message-end.usage"))

    # --- The end ------------------------------------------------------------------------------------

    def close(self) -> list[StreamChunk]:
        """The input is over: end the blocks, then ``usage`` and ``finish``.

        Raises ``STREAM_CLOSED`` when no ``message-end`` came, ``EMPTY_RESPONSE`` for a ``stop`` with no content.
        A ``message-end`` without usage gives no ``usage`` (under ``Policy.STRICT`` that is ``USAGE_MISSING``).
        """
        finish = stop_reason(self.reason, _FINISH, "finish_reason", "message-end")
        keeper = self.keeper
        for kind, at, item in self.kept:
            keeper.keep(kind, at, item.data() if isinstance(item, _Part) else item, charged=True)
        return self.closed(finish, keeper.state(responseId=self.response_id, toolPlanBlocks=list(self.plans) or None))


@sync_or_async
def from_cohere_events(
    events: Iterable[Any] | AsyncIterable[Any], *, limits: Limits | None = None
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Convert a Cohere v2 chat stream (dicts or the ``cohere`` SDK's v2 stream events, sync or async).

    ``limits`` (pass those the machine is given) bound the content held back until a tool call's arguments are
    complete: ``LIMIT_EXCEEDED`` once it passes them (the machine does not see it yet).
    """
    return convert(CohereConverter(limits), events, "a v2 chat stream event")

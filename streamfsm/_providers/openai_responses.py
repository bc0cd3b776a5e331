"""The OpenAI Responses API (``POST /responses`` with ``stream: true``; OpenAI, Azure, xAI, LM Studio) to the block
protocol.

:class:`OpenAIResponsesConverter` is sans-IO (fed the stream's events as dicts); :func:`from_openai_responses_events`
wraps it around any iterable of events, dicts or the ``openai`` SDK's ``ResponseStreamEvent`` objects. The HTTP
adapter, which sends a conversation back in the API's ``input`` form, is :mod:`.openai_responses_adapter`.

A response is a list of *output items*, each streamed between ``response.output_item.added`` and
``response.output_item.done``. What the block protocol has words for becomes blocks: a ``message``'s
``output_text`` (and ``refusal``) parts text blocks, a ``reasoning`` item's summary parts and reasoning-text parts
reasoning blocks, a ``function_call`` or ``custom_tool_call`` a tool call, and so does a call of the API's own
tools that the client runs (:mod:`.openai_responses_tools`: ``local_shell_call``, ``shell_call``, ``apply_patch_call``,
``computer_call``, ``tool_search_call`` with ``execution: "client"``), named ``local_shell``, ``shell``,
``apply_patch``, ``computer``, ``tool_search``, its action as the arguments. Every other item (web and file
search, code interpreter, image generation, MCP, a call the server ran itself, items added since) and every
reasoning item (its id and ``encrypted_content`` are what the API needs to see again) is kept verbatim for replay
(:mod:`.replay`), and so are a text's annotations (citations). A call the server ran says so in its item: a
``tool_search_call`` whose ``execution`` is ``server``, a ``shell_call`` whose ``environment`` is a container, a
``custom_tool_call`` named for none of the client's tools the response lists (xAI's search tools).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

import orjson

from .._config import Limits
from .._errors import ErrorCode, LlmError
from .._quote import quote
from .._wire import StreamChunk, WireFinishReason, WireUsage
from .blocks import Kind, ProviderBlock
from .classify import responses_failure, stream_failure
from .convert import as_event, convert, count, ended_turn, finish_reason, is_position, malformed, string, sync_or_async
from .frame import TurnState
from .openai_responses_tools import CLIENT_TOOLS, client_call, listed_tools, server_runs
from .replay import json_size

__all__ = ["OpenAIResponsesConverter", "from_openai_responses_events", "responses_event", "responses_usage"]


def responses_event(value: Any, what: str) -> Mapping[str, Any]:
    """One event as a mapping (:func:`~.convert.as_event`). Of the events the ``openai`` SDK's ``ResponseStream``
    (``client.responses.stream(...)``) makes of the API's, the API's fields: not the ``snapshot`` (the text so far)
    it adds to its delta events, which would cost the whole text at every delta, and without the warnings pydantic
    gives for its parsed response (a ``ParsedResponseOutputMessage`` where the API's model has an output item)."""
    if not isinstance(value, Mapping) and type(value).__module__.startswith("openai.lib."):
        dumped = value.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude={"snapshot"}, warnings=False)
        if isinstance(dumped, Mapping):
            return dumped
    return as_event(value, what)


#: ``incomplete_details.reason`` of a ``response.incomplete``; any other reason is an ``error`` finish whose code is
#: the reason upper-cased (``content_filter`` → ``CONTENT_FILTER``).
_INCOMPLETE: dict[str, WireFinishReason] = {"max_output_tokens": {"kind": "max-tokens"}}

#: The client tool calls whose arguments stream (``.delta`` events): what becomes a tool-call block.
_CALLS = frozenset({"function_call", "custom_tool_call"})


def _escaped(text: str) -> str:
    """``text`` as the inside of a JSON string (a lone surrogate, which UTF-8 cannot carry, as its ``\\u`` escape)."""
    try:
        return orjson.dumps(text).decode()[1:-1]
    except orjson.JSONEncodeError:
        return json.dumps(text)[1:-1]


def _position(event: Mapping[str, Any], key: str) -> int:
    value = event.get(key, 0 if key != "output_index" else None)
    if not is_position(value):
        raise malformed(f"{event.get('type')}: {key!r} must be an integer from 0 to 2^53-1, got {quote(value)}")
    return value


def _output_item(event: Mapping[str, Any], verb: str) -> tuple[int, Mapping[str, Any]]:
    """The position and item of an ``output_item.added`` or ``.done`` event (``verb``: which, for messages)."""
    data = event.get("item")
    position = _position(event, "output_index")
    if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
        raise malformed(f"output item {position} was {verb} without an 'item' object with a type")
    return position, data


def responses_usage(usage: Mapping[str, Any]) -> WireUsage:
    """A response's ``usage`` as the protocol's disjoint counts.

    ``input_tokens`` counts every input token: ``inputTokens`` is what is left once the cached tokens
    (``input_tokens_details.cached_tokens`` → ``cacheReadTokens``) and those written to the cache
    (``input_tokens_details.cache_write_tokens`` → ``cacheWriteTokens``) are taken out; ``outputTokens`` is
    ``output_tokens`` (reasoning included), ``reasoningTokens`` ``output_tokens_details.reasoning_tokens``. A count
    absent or null is 0 (or left out, for the optional ones).
    """
    details = usage.get("input_tokens_details")
    cached = count(details, "cached_tokens", "input_tokens_details.cached_tokens")
    written = count(details, "cache_write_tokens", "input_tokens_details.cache_write_tokens")
    total = count(usage, "input_tokens", "input_tokens") or 0
    result: WireUsage = {
        "inputTokens": max(0, total - (cached or 0) - (written or 0)),
        "outputTokens": count(usage, "output_tokens", "output_tokens") or 0,
    }
    if cached is not None:
        result["cacheReadTokens"] = cached
    if written is not None:
        result["cacheWriteTokens"] = written
    reasoning = count(usage.get("output_tokens_details"), "reasoning_tokens", "output_tokens_details.reasoning_tokens")
    if reasoning is not None:
        result["reasoningTokens"] = reasoning
    return result


class _Part:
    """The text of one part of an item (a message's output text or refusal, a reasoning summary or text, a call's
    arguments): the blocks it went into (more than one only if another item interleaved with it) and its text,
    which is the blocks' own (a custom tool's input is kept apart as well, unescaped)."""

    __slots__ = ("blocks", "kind", "raw", "text")

    def __init__(self, kind: Kind, raw: bool = False) -> None:
        self.kind: Kind = kind
        self.blocks: list[tuple[ProviderBlock, int]] = []  # each block, with its place in the turn
        self.raw: list[str] | None = [] if raw else None  # a custom tool's input, as it came
        self.text: str | None = ""  # the text, once asked for (None: not joined since the last piece)

    def full(self) -> str:
        """Everything so far, joined once per change (asking again after each ``.done`` stays linear)."""
        if self.text is None:
            if self.raw is not None:
                self.text = "".join(self.raw)
                self.raw = [self.text]
            elif self.kind == "tool-call":
                self.text = "".join(self.blocks[0][0].parts)  # its parts stay: their JSON is scanned as they come
            else:
                for block, _ in self.blocks:
                    block.parts = ["".join(block.parts)]  # one piece, the same string as the part's text
                self.text = "".join(block.parts[0] for block, _ in self.blocks)
        return self.text


class _Item:
    """One output item: its type, id, where it came in the turn, and the parts its content went into."""

    __slots__ = ("at", "call", "data", "done", "id", "kind", "parts", "server")

    def __init__(self, kind: str, at: int, data: Mapping[str, Any]) -> None:
        self.kind = kind
        self.at = at  # how many blocks of the turn came before it
        self.data = data
        self.id = data.get("id") if isinstance(data.get("id"), str) else None
        self.parts: dict[tuple[str, int], _Part] = {}
        self.call: _Part | None = None
        self.done = False
        self.server = False  # a call the server runs itself: kept, never a client call


class OpenAIResponsesConverter(TurnState):
    """Turns Responses API stream events into block-protocol chunks.

    Blocks are numbered in the order their content first comes and kept one open at a time (:mod:`.held`), so
    the output is valid under ``Policy.STRICT`` even if a server interleaves items; each ends at its ``.done``
    event. A part's ``.done`` (and the item's ``output_item.done``) carries its whole text: what the deltas did not
    bring is added, so a server that sends items whole converts too; a final text that contradicts its deltas is
    ``MALFORMED_RESPONSE``. A ``custom_tool_call``'s free-text input becomes the arguments ``{"input": "…"}``.
    Progress events (``response.web_search_call.searching``, ...) and event types added since are skipped.

    ``response.completed`` ends the turn with ``tool-calls`` whenever it has a client tool call (the API says
    ``completed`` for those too), else ``stop``; ``response.incomplete`` with ``max_output_tokens`` is
    ``max-tokens``, with another reason an ``error`` finish whose code is the reason upper-cased
    (``CONTENT_FILTER``). ``response.failed`` and an ``error`` event raise their coded :class:`LlmError`.

    The finish's ``replayState``: ``response`` (id, model, status), ``blocks`` (one entry per block: the item it
    came from, for the adapter to send it back as the same item), and ``kept`` (:mod:`.replay`).
    """

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)  # over: the event that ended the response
        self.items: dict[int, _Item] = {}  # by output_index
        self.meta: list[dict[str, Any]] = []  # one entry per block, in order
        self.response: dict[str, Any] = {}
        self.created = False  # its response.created came
        # The names of the client's own tools (function, custom), when the response lists its tools: a call of
        # another name is one the server runs (xAI's search tools come as custom_tool_call items).
        self.declared: frozenset[str] | None = None

    # --- Events ---

    def begins_turn(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` is the first of another turn: a response's first event (``response.created``,
        ``.queued`` or ``.in_progress``) after this turn's terminal event (``response.completed``,
        ``response.incomplete``, ``response.failed``, or an ``error`` event)."""
        return self.over is not None and event.get("type") in _STARTS

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        """Convert one event; returns the protocol chunks it completes."""
        kind = event.get("type")
        if self.over is not None:
            reader = "from_openai_responses_events" if self.begins_turn(event) else None
            raise ended_turn(f"event {quote(kind)}", self.over, reader)
        if not isinstance(kind, str):
            names = sorted(key for key in event if isinstance(key, str))[:8]  # a dict given may have other keys
            raise malformed(f"an event without a 'type': {[name[:40] for name in names]}")
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)
        elif kind == "error":
            error = event.get("error")
            if not isinstance(error, Mapping):  # the SDK's ResponseErrorEvent: code, message and param on the event
                error = {key: event[key] for key in ("code", "message", "param") if key in event}
            raise self.failed(kind, stream_failure({"error": error}, "in an error event"))
        elif kind in ("response.completed", "response.incomplete"):
            return self._finish(kind, self._response(event))
        elif kind == "response.failed":
            raise self.failed(kind, responses_failure(self._response(event)))
        return self.queue.take()

    def _response(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        response = event.get("response")
        if not isinstance(response, Mapping):
            raise malformed(f"{event.get('type')} without a 'response' object")
        found = response.get("id")
        if isinstance(found, str):  # the last one said: a gateway may give each event an id of its own (Copilot's)
            self.response["id"] = found
        if isinstance(response.get("model"), str):
            self.response["model"] = response["model"]
        tools = response.get("tools")
        if self.declared is None and isinstance(tools, list) and tools:
            self.declared = frozenset(listed_tools(tools))
        return response

    def _started(self, event: Mapping[str, Any]) -> None:  # response.created, .in_progress, .queued
        """A turn ends only at its terminal event: before it, a new id is the same response, another
        ``response.created`` a response spliced into this one."""
        known = self.response.get("id")
        response = self._response(event)
        if event.get("type") == "response.created":
            if self.created:
                found = quote(response.get("id"))
                raise malformed(f"response {found} began before response {quote(known)} ended: not one turn")
            self.created = True

    def _item(self, event: Mapping[str, Any], kinds: frozenset[str]) -> _Item:
        """The item (of one of ``kinds``) an event is about. A text event for an item never added makes it (a server
        may send no ``output_item.added``); a call's cannot, as its id and name come with the item."""
        position = _position(event, "output_index")
        item = self.items.get(position)
        if item is None:
            if kinds is _CALLS:
                raise malformed(f"{event.get('type')} for output item {position}, which was not added")
            item_id = event.get("item_id")
            data = {"id": item_id} if isinstance(item_id, str) and item_id else {}
            item = self.items[position] = _Item(next(iter(kinds)), len(self.meta), data)
        elif item.kind not in kinds:
            raise malformed(f"{event.get('type')} for output item {position}, a {quote(item.kind)}")
        if item.done:
            raise malformed(f"{event.get('type')} for output item {position} after its output_item.done")
        return item

    def _added(self, event: Mapping[str, Any]) -> None:
        position, data = _output_item(event, "added")
        if position in self.items:
            raise malformed(f"output item {position} was added twice")
        item = self.items[position] = _Item(data["type"], len(self.meta), data)
        if item.kind in _CALLS:
            item.server = server_runs(item.kind, data, self.declared)
            if not item.server:
                self._call(item, data)

    def _call(self, item: _Item, data: Mapping[str, Any]) -> _Part:
        call = item.call
        if call is None:
            call_id, name = data.get("call_id"), data.get("name")
            if not isinstance(call_id, str) or not call_id:
                raise malformed(f"a {item.kind} without a call_id")
            if not isinstance(name, str) or not name:
                raise malformed(f"{item.kind} {call_id} without a name")
            call = item.call = _Part("tool-call", raw=item.kind == "custom_tool_call")
            block = ProviderBlock("tool-call", call_id, name)
            self._push(item, call, block, '{"input":"' if item.kind == "custom_tool_call" else "", "")
            self.calls += 1
            field = "arguments" if item.kind == "function_call" else "input"
            self._grow(item, call, string(data.get(field) or "", f"{item.kind}.{field}"))
        return call

    def _done(self, event: Mapping[str, Any]) -> None:
        position, data = _output_item(event, "done")
        item = self.items.get(position)
        if item is None:  # sent whole
            item = self.items[position] = _Item(data["type"], len(self.meta), data)
            item.server = item.kind == "custom_tool_call" and server_runs(item.kind, data, self.declared)
        elif item.done:
            raise malformed(f"output item {position} was done twice")
        elif item.kind != data["type"]:
            raise malformed(f"output item {position} was added as {quote(item.kind)} and done as {quote(data['type'])}")
        kind = item.kind
        if kind == "message":
            self._message_done(item, data)
        elif item.server:
            self.keep(kind, item.at, data, f"a {kind}")
        elif kind in CLIENT_TOOLS and not server_runs(kind, data, self.declared):
            self._client_tool(item, data)
        elif kind in _CALLS:
            call = self._call(item, data)
            field = "arguments" if kind == "function_call" else "input"
            if field in data:
                self._settle(item, call, string(data[field], f"{kind}.{field}"), f"{kind}.{field}")
            self._end_call(item, call)
        else:
            if kind == "reasoning":
                self._reasoning_done(item, data)
            self.keeper.keep(kind, item.at, data)
        item.done = True
        item.data = data

    def _client_tool(self, item: _Item, data: Mapping[str, Any]) -> None:
        """A call of the API's own tool that the client runs: a tool call named for the tool, its action (or
        operation, or arguments) as the arguments; the item itself goes in the block's replay entry, to be sent
        back as it came."""
        call_id, name, arguments = client_call(item.kind, data)
        self.keeper.charge(json_size(data, f"a {item.kind}"))
        call = item.call = _Part("tool-call")
        block = ProviderBlock("tool-call", call_id, name)
        self._push(item, call, block, arguments, "")
        self.meta[-1]["call"] = dict(data)
        self.calls += 1
        self.queue.end(block)

    def _message_done(self, item: _Item, data: Mapping[str, Any]) -> None:
        content = data.get("content") or []
        if not isinstance(content, list):
            raise malformed(f"message content must be a list, got {type(content).__name__}")
        for number, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise malformed(f"a message content part must be an object, got {type(part).__name__}")
            name = part.get("type")
            field = _PART_FIELDS.get(name) if isinstance(name, str) else None
            if name is None or field is None:
                continue  # a part type added since: nothing to show, and it is in no block
            key = (name, number)
            self._settle(item, item.parts.get(key), string(part.get(field, ""), f"{name}.{field}"), name, key)
            target = item.parts.get(key)
            annotations = part.get("annotations")
            if isinstance(annotations, list) and annotations and target is not None and target.blocks:
                self._cite(target.blocks[-1][1], annotations)
        self._end_parts(item)

    def _cite(self, place: int, annotations: list[Any]) -> None:
        """Keep a text's annotations, after its block (at ``place``), and say in its replay entry which they are."""
        claimed = self.meta[place].setdefault("annotations", [])
        for annotation in annotations:
            if isinstance(annotation, Mapping):
                claimed.append(len(self.keeper.items))
                kind = annotation.get("type")
                self.keeper.keep(kind if isinstance(kind, str) else "annotation", place + 1, annotation)

    def _reasoning_done(self, item: _Item, data: Mapping[str, Any]) -> None:
        for field, key_name in (("summary", "summary"), ("content", "reasoning_text")):
            parts = data.get(field) or []
            if not isinstance(parts, list):
                raise malformed(f"reasoning {field} must be a list, got {type(parts).__name__}")
            for number, part in enumerate(parts):
                text = string(part.get("text", "") if isinstance(part, Mapping) else None, f"reasoning {field} text")
                self._settle(item, item.parts.get((key_name, number)), text, key_name, (key_name, number))
        self._end_parts(item)

    # --- Content ---

    def _push(self, item: _Item, part: _Part, block: ProviderBlock, text: str, name: str) -> None:
        place = len(self.meta)
        part.blocks.append((block, place))
        meta: dict[str, Any] = {"item": item.id} if item.id else {}
        if part.kind == "tool-call":
            meta["type"] = item.kind
        elif item.kind == "message":
            meta["part"] = name
            if isinstance(item.data.get("phase"), str):
                meta["phase"] = item.data["phase"]
        self.meta.append(meta)
        self.queue.push(block, text)

    def _grow(self, item: _Item, part: _Part, text: str, name: str = "") -> None:
        """Add ``text`` to ``part``: to its open block, or to a new one (its first text, or a continuation after
        another item's block made it end)."""
        if not text:
            return
        if part.raw is not None:
            part.raw.append(text)
        part.text = None
        if part.kind == "tool-call":
            block, _ = part.blocks[0]
            if block.ended or id(block) in self.queue.done:
                raise malformed(f"arguments for {block.call_id} came after they were done: {text[:40]!r}")
            self.queue.add(block, _escaped(text) if item.kind == "custom_tool_call" else text)
            return
        if part.blocks and not part.blocks[-1][0].ended:
            self.queue.add(part.blocks[-1][0], text)
        else:
            self._push(item, part, ProviderBlock(part.kind), text, name)

    def _settle(
        self, item: _Item, part: _Part | None, full: str, what: str, key: tuple[str, int] | None = None
    ) -> None:
        """A part's whole text: what its deltas did not bring is added; anything else is malformed."""
        if part is None:
            if not full:
                return
            assert key is not None
            part = item.parts[key] = _Part("text" if key[0] in ("output_text", "refusal") else "reasoning")
        have = part.full()
        if full != have:
            if not full.startswith(have):
                raise malformed(f"the final {what} of output item {item.id or '?'} is not what its deltas sent")
            self._grow(item, part, full[len(have) :], key[0] if key else "")

    def _text(self, event: Mapping[str, Any], kinds: frozenset[str], name: str, index: str, field: str) -> None:
        item = self._item(event, kinds)
        key = (name, _position(event, index))
        part = item.parts.get(key)
        if event["type"].endswith(".delta"):
            text = string(event.get("delta"), f"{event['type']}.delta")
            if part is None:
                part = item.parts[key] = _Part("text" if item.kind == "message" else "reasoning")
            self._grow(item, part, text, name)
        else:
            self._settle(item, part, string(event.get(field), f"{event['type']}.{field}"), name, key)

    def _output_text(self, event: Mapping[str, Any]) -> None:
        self._text(event, _MESSAGE, "output_text", "content_index", "text")

    def _refusal(self, event: Mapping[str, Any]) -> None:
        self._text(event, _MESSAGE, "refusal", "content_index", "refusal")

    def _summary(self, event: Mapping[str, Any]) -> None:
        self._text(event, _REASONING, "summary", "summary_index", "text")

    def _summary_part(self, event: Mapping[str, Any]) -> None:  # reasoning_summary_part.done: the part's text
        part = event.get("part")
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            self._text({**event, "text": part["text"]}, _REASONING, "summary", "summary_index", "text")

    def _reasoning_text(self, event: Mapping[str, Any]) -> None:
        self._text(event, _REASONING, "reasoning_text", "content_index", "text")

    def _arguments(self, event: Mapping[str, Any]) -> None:
        item = self._item(event, _CALLS)
        if item.server:  # its input is in the item, kept whole at its output_item.done
            return
        call = self._call(item, item.data)
        if event["type"].endswith(".delta"):
            self._grow(item, call, string(event.get("delta"), f"{event['type']}.delta"))
            return
        field = "arguments" if item.kind == "function_call" else "input"
        self._settle(item, call, string(event.get(field), f"{event['type']}.{field}"), f"{item.kind}.{field}")
        self._end_call(item, call)

    def _end_call(self, item: _Item, call: _Part) -> None:
        block, _ = call.blocks[0]
        if block.ended or id(block) in self.queue.done:
            return
        if item.kind == "custom_tool_call":
            self.queue.add(block, '"}')
        self.queue.end(block)

    def _end_parts(self, item: _Item) -> None:
        for part in item.parts.values():
            for block, _ in part.blocks:
                self.queue.end(block)

    # --- The end ---

    def _finish(self, kind: str, response: Mapping[str, Any]) -> list[StreamChunk]:
        """The response ended (``kind``: ``response.completed`` or ``.incomplete``): its finish, its usage. A
        response with only reasoning items kept (no text, no call, nothing else) is empty."""
        self.over = kind
        finish: WireFinishReason = {"kind": "stop"}
        if kind != "response.completed":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, Mapping) else None
            reason = reason if isinstance(reason, str) and reason else "incomplete"
            finish = finish_reason(reason, _INCOMPLETE, "incomplete_details.reason")
        usage = response.get("usage")
        if usage is not None:
            if not isinstance(usage, Mapping):
                raise malformed(f"'usage' must be an object, got {type(usage).__name__}")
            self.usage = responses_usage(usage)
        self._final_ids(response.get("output"))
        status = response.get("status")
        state = self.keeper.state(
            response={**self.response, **({"status": status} if isinstance(status, str) else {})},
            blocks=list(self.meta) if self.meta else None,
        )
        empty = self.queue.made == 0 and all(k["type"] == "reasoning" for k in self.keeper.items)
        return self.closed(finish, state, empty=empty)

    def _final_ids(self, output: object) -> None:
        """The terminal response names the items, as a non-streamed answer does: a gateway that gives every event ids
        of its own (GitHub Copilot's) names them anew there, and the turn is replayed under those names."""
        finals = output if isinstance(output, list) else []
        names: dict[object, str] = {}
        for position, item in self.items.items():
            final = finals[position] if position < len(finals) else None
            new = final.get("id") if isinstance(final, Mapping) else None
            if isinstance(new, str):
                names.update((seen, new) for seen in (item.id, item.data.get("id")) if isinstance(seen, str))
        for entry, key in [
            *((meta, "item") for meta in self.meta),
            *((kept["data"], "id") for kept in self.keeper.items),
        ]:
            if entry.get(key) in names:
                entry[key] = names[entry[key]]

    def close(self) -> list[StreamChunk]:
        """The input is over: nothing more once the response ended, else ``STREAM_CLOSED``."""
        if self.over is None:
            raise LlmError(
                "the stream ended without response.completed, response.incomplete or response.failed",
                ErrorCode.STREAM_CLOSED,
            )
        return []


#: The events a response begins with (a server may leave out the first ones).
_STARTS = frozenset({"response.created", "response.queued", "response.in_progress"})
_MESSAGE = frozenset({"message"})
#: A message's content parts that are text, and the field their text is in.
_PART_FIELDS = {"output_text": "text", "refusal": "refusal"}
_REASONING = frozenset({"reasoning"})
_HANDLERS = {
    "response.created": OpenAIResponsesConverter._started,
    "response.in_progress": OpenAIResponsesConverter._started,
    "response.queued": OpenAIResponsesConverter._started,
    "response.output_item.added": OpenAIResponsesConverter._added,
    "response.output_item.done": OpenAIResponsesConverter._done,
    "response.output_text.delta": OpenAIResponsesConverter._output_text,
    "response.output_text.done": OpenAIResponsesConverter._output_text,
    "response.refusal.delta": OpenAIResponsesConverter._refusal,
    "response.refusal.done": OpenAIResponsesConverter._refusal,
    "response.reasoning_summary_text.delta": OpenAIResponsesConverter._summary,
    "response.reasoning_summary_text.done": OpenAIResponsesConverter._summary,
    "response.reasoning_summary_part.done": OpenAIResponsesConverter._summary_part,
    "response.reasoning_text.delta": OpenAIResponsesConverter._reasoning_text,
    "response.reasoning_text.done": OpenAIResponsesConverter._reasoning_text,
    "response.function_call_arguments.delta": OpenAIResponsesConverter._arguments,
    "response.function_call_arguments.done": OpenAIResponsesConverter._arguments,
    "response.custom_tool_call_input.delta": OpenAIResponsesConverter._arguments,
    "response.custom_tool_call_input.done": OpenAIResponsesConverter._arguments,
}


@sync_or_async
def from_openai_responses_events(
    events: Iterable[Any] | AsyncIterable[Any], *, limits: Limits | None = None
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Convert a Responses API event stream (dicts or the ``openai`` SDK's event objects, sync or async).

    The block-protocol chunks come out as the events go in; ``usage`` and ``finish`` at ``response.completed``
    (or ``response.incomplete``). Send the output through :func:`streamfsm.validate` to check and assemble it.

    ``limits`` (pass those the machine is given) bound the content held back until a tool call's arguments are
    complete: ``LIMIT_EXCEEDED`` once it passes them (the machine does not see it yet).
    """
    return convert(OpenAIResponsesConverter(limits), events, "a Responses stream event")

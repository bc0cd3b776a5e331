"""The Anthropic Messages API to the block protocol.

:class:`AnthropicConverter` is sans-IO (fed the stream's events as dicts); :func:`from_anthropic_events` wraps it
around any iterable of events, dicts or the ``anthropic`` SDK's objects; :class:`AnthropicAdapter` speaks HTTP
(the ``http`` extra).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Final

import orjson

from .._config import Limits
from .._quote import quote
from .._wire import StreamChunk, WireUsage
from .blocks import Kind, ProviderBlock
from .classify import stream_failure
from .convert import (
    STOP_REASONS,
    convert,
    ended_turn,
    is_position,
    malformed,
    non_negative_int,
    stop_reason,
    string,
    sync_or_async,
)
from .frame import TurnState
from .replay import Keeper, json_size

__all__ = ["MESSAGE_STREAM_HELPERS", "AnthropicConverter", "from_anthropic_events"]

#: The events the ``anthropic`` SDK's ``MessageStream`` (``client.messages.stream(...)``) yields besides the API's
#: own, each after the ``content_block_delta`` whose content it repeats (with the block so far as its ``snapshot``).
MESSAGE_STREAM_HELPERS: Final = frozenset({"text", "thinking", "citation", "signature", "input_json"})

#: The content blocks the protocol has a word for; every other block type is kept for replay (module replay.py).
_KINDS: dict[str, Kind] = {"text": "text", "thinking": "reasoning", "tool_use": "tool-call"}
#: Each block kind: the delta type that carries its content, and the field the content is in.
_DELTAS: dict[str, tuple[str, str]] = {
    "text": ("text_delta", "text"),
    "reasoning": ("thinking_delta", "thinking"),
    "tool-call": ("input_json_delta", "partial_json"),
}
#: The fields of a text, thinking or tool_use block that the protocol carries or that are kept apart (signature,
#: citations). Any other (a programmatic tool call's ``caller``) rides in the block's replay entry, sent back with it.
_CARRIED = frozenset({"type", "text", "thinking", "signature", "citations", "id", "name", "input"})
#: Message usage fields, as the protocol names them. Later events repeat them with the running totals.
_USAGE = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_input_tokens", "cacheReadTokens"),
    ("cache_creation_input_tokens", "cacheWriteTokens"),
)


class _Kept:
    """A content block the protocol has no word for (``server_tool_use``, ``compaction``, ...), assembled from its
    start and its deltas as the official SDKs assemble it: the ``partial_json`` pieces of ``input_json_delta`` s
    become the block's ``input``, a ``citations_delta`` 's citation is appended to its ``citations``, a
    ``compaction_delta`` gives the block its ``content`` and ``encrypted_content`` whole. A delta of a type added
    since has each string field appended to the block's field of the same name (as ``text_delta`` does); its
    other fields replace the block's."""

    __slots__ = ("at", "citations", "data", "ended", "json", "pieces")

    def __init__(self, at: int, content: Mapping[str, Any]) -> None:
        self.at = at
        self.data = dict(content)
        self.pieces: dict[str, list[str]] = {}
        self.json: list[str] = []
        self.citations: list[Any] | None = None
        self.ended = False

    def add(self, delta: Mapping[str, Any], keeper: Keeper) -> None:
        kind = delta.get("type")
        if kind == "input_json_delta":
            piece = string(delta.get("partial_json"), "input_json_delta.partial_json")
            keeper.charge(len(piece))
            self.json.append(piece)
            return
        if kind == "citations_delta":
            citation = delta.get("citation")
            keeper.charge(json_size(citation, "a citation"))
            if self.citations is None:
                given = self.data.get("citations")
                self.citations = list(given) if isinstance(given, list) else []
            self.citations.append(citation)
            return
        whole = kind == "compaction_delta"
        for key, value in delta.items():
            if key == "type" or value is None:
                continue
            if isinstance(value, str) and not whole:
                keeper.charge(len(value))
                self.pieces.setdefault(key, []).append(value)
            else:
                keeper.charge(json_size(value, f"{kind}.{key}"))
                self.pieces.pop(key, None)
                self.data[key] = value

    def assembled(self, position: object) -> dict[str, Any]:
        """The block, complete (its content_block_stop came)."""
        data = self.data
        for key, parts in self.pieces.items():
            given = data.get(key)
            data[key] = (given if isinstance(given, str) else "") + "".join(parts)
        if self.citations is not None:
            data["citations"] = self.citations
        text = "".join(self.json)
        if text.strip():
            try:
                data["input"] = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                raise malformed(f"content block {position} ({data.get('type')}): its input is not JSON: {exc}") from exc
        return data


class AnthropicConverter(TurnState):
    """Turns Messages API stream events into block-protocol chunks.

    ``text`` blocks become text, ``thinking`` reasoning, ``tool_use`` with its ``input_json_delta`` s a tool call
    (id and name on the first delta, ``{}`` when no input came). Every other content block (server-tool calls and
    results, MCP, ``compaction``, ``fallback``, ``container_upload``, ``redacted_thinking``, and types added since)
    is assembled from its start and deltas and kept verbatim, in order, for replay (``replayState["kept"]``, module
    ``replay.py``), as are a text block's citations. Content already in ``message_start`` (programmatic tool calling
    sends the whole turn there, then ``message_stop``) is converted the same way. ``ping`` and event types it does
    not know are skipped, as the API's versioning policy asks; an ``error`` event raises its coded
    :class:`LlmError`. Usage (``input_tokens`` already uncached, ``cache_read_input_tokens``,
    ``cache_creation_input_tokens``, the last ``output_tokens``) and the finish are sent at ``message_stop``. A
    tool call cut by ``max_tokens`` never ends: it is reported as interrupted. Thinking signatures (and fields of a
    block the protocol does not carry, like a tool call's ``caller``) go in the finish's ``replayState`` (one entry
    per block), so the adapter can send the turn back as it came.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        # over: "message_stop" (set as the message ends) or "error". Its blocks come in order: it numbers its own,
        # holds nothing back (the queue stays empty), and its stop reason says tool_use itself (calls stay 0).
        super().__init__(limits)
        self.blocks: dict[int, ProviderBlock | _Kept] = {}
        self.open: ProviderBlock | _Kept | None = None
        self.count = 0
        self.replay: list[dict[str, Any] | None] = []
        # Each block's signature, in the pieces it came in: joined once, at the end (joining per delta is quadratic).
        self.signatures: dict[int, list[str]] = {}
        self.citations: dict[int, list[Any]] = {}  # a text block's citations, kept when it ends
        self.counts: dict[str, int] = {}  # the usage fields seen so far, by the protocol's names
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.message: dict[str, Any] = {}
        self.started = False

    def begins_turn(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` is the first of another turn: a ``message_start`` after this turn's ``message_stop``."""
        return self.over is not None and event.get("type") == "message_start"

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        """Convert one event; returns the protocol chunks it completes."""
        kind = event.get("type")
        if self.over is not None and kind != "ping":
            reader = "from_anthropic_events" if self.begins_turn(event) else None
            raise ended_turn(f"event {quote(kind)}", "message_stop", reader)
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            return self._start(event)
        if kind == "content_block_stop":
            return self._stop(event)
        if kind == "message_start":
            return self._message_start(event)
        if kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping):
                self._message_fields(delta)
            self._usage(event.get("usage"))
            return []
        if kind == "message_stop":
            return self.end()
        if kind == "error":
            # The API ends a stream with its error event (nothing left to end): a turn may follow in a recording.
            self.ended = True
            raise self.failed("error", stream_failure(event, "event"))
        return []  # ping, or an event type added since

    def _message_start(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        message = event.get("message")
        if self.started:
            if self._repeats_the_start(message):
                return []  # some proxies send it twice: the same message, before any content (as the Vercel AI SDK)
            raise malformed("message_start before the message_stop of the message before: a turn spliced into another")
        self.started = True
        if not isinstance(message, Mapping):
            raise malformed("message_start without a 'message' object")
        self.message = {key: message[key] for key in ("id", "model") if isinstance(message.get(key), str)}
        self._message_fields(message)
        self._usage(message.get("usage"))
        content = message.get("content")
        if not content:
            return []
        if not isinstance(content, list):
            raise malformed(f"message_start: 'content' must be a list, got {type(content).__name__}")
        out: list[StreamChunk] = []
        for number, block in enumerate(content):  # the turn given whole (programmatic tool calling): start, stop
            opened = self._begin(block, f"message_start content {number}", out)
            out.extend(self._end(opened, f"message_start content {number}"))
        return out

    def _repeats_the_start(self, message: object) -> bool:
        """Whether a second ``message_start`` repeats the open message's: its id, no content of its own, and
        before any content block (it is then ignored whole, its usage included)."""
        opened = self.message.get("id")
        return (
            isinstance(message, Mapping)
            and opened is not None
            and message.get("id") == opened
            and not message.get("content")
            and self.count == 0
            and not self.blocks
            and not self.keeper.items
        )

    def _message_fields(self, fields: Mapping[str, Any]) -> None:
        """The stop reason, stop sequence and container of ``message_start.message`` or ``message_delta.delta``."""
        reason = fields.get("stop_reason")
        if reason is not None:
            self.stop_reason = string(reason, "stop_reason")
        if isinstance(fields.get("stop_sequence"), str):
            self.stop_sequence = fields["stop_sequence"]
        if isinstance(fields.get("container"), Mapping):
            self.message["container"] = dict(fields["container"])

    def _usage(self, usage: object) -> None:
        """Merge a ``message_start`` or ``message_delta`` usage into the turn's (each repeats the running totals)."""
        if usage is None:
            return
        if not isinstance(usage, Mapping):
            raise malformed(f"'usage' must be an object, got {type(usage).__name__}")
        counts = self.counts
        for field, key in _USAGE:
            if usage.get(field) is not None:
                counts[key] = non_negative_int(usage[field], field)
        merged: WireUsage = {"inputTokens": counts.get("inputTokens", 0), "outputTokens": counts.get("outputTokens", 0)}
        if "cacheReadTokens" in counts:
            merged["cacheReadTokens"] = counts["cacheReadTokens"]
        if "cacheWriteTokens" in counts:
            merged["cacheWriteTokens"] = counts["cacheWriteTokens"]
        self.usage = merged

    def _block(self, event: Mapping[str, Any]) -> ProviderBlock | _Kept:
        position = event.get("index")
        block = self.blocks.get(position) if isinstance(position, int) else None
        if block is None:
            raise malformed(f"{event.get('type')} for block {quote(position)}, which did not start")
        return block

    def _start(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        position = event.get("index")
        if not is_position(position) or position in self.blocks:
            raise malformed(f"content_block_start with a bad or repeated index {quote(position)}")
        if self.open is not None:
            raise malformed(f"content block {position} started while another block is open")
        out: list[StreamChunk] = []
        block = self._begin(event.get("content_block"), f"content block {position}", out)
        self.blocks[position] = block
        self.open = block
        return out

    def _begin(self, content: object, where: str, out: list[StreamChunk]) -> ProviderBlock | _Kept:
        """Open a content block (its start, or a block given whole): its first chunks go to ``out``."""
        if not isinstance(content, Mapping) or not isinstance(content.get("type"), str):
            shown = content.get("type") if isinstance(content, Mapping) else type(content).__name__
            raise malformed(f"{where}: a content block must be an object with a string 'type', got {quote(shown)}")
        source = content["type"]
        kind = _KINDS.get(source)
        if kind is None:
            self.keeper.charge(json_size(content, f"{where} ({source})"))
            return _Kept(self.count, content)
        if kind == "tool-call":
            block = ProviderBlock(
                kind, string(content.get("id"), "tool_use.id"), string(content.get("name"), "tool_use.name")
            )
        else:
            block = ProviderBlock(kind)
        block.index = self.count
        block.started = True
        self.count += 1
        extra = {key: value for key, value in content.items() if key not in _CARRIED}
        replay: dict[str, Any] | None = None
        if extra:
            self.keeper.charge(json_size(extra, f"{where} ({source})"))
            replay = {"extra": extra}
        out.append({"type": "block-start", "index": block.index, "blockType": kind})
        if kind == "tool-call":
            given = content.get("input")
            try:  # nested past orjson's 255 levels, or not JSON data at all: refused as the provider's fault
                arguments = orjson.dumps(given).decode() if isinstance(given, Mapping) and given else ""
            except TypeError as exc:  # orjson.JSONEncodeError is one
                raise malformed(f"{where}: the tool_use input is not JSON data ({exc})") from exc
            block.parts.append(arguments)
            out.append(block.opening(arguments))
        else:
            text = string(content.get(source, ""), f"{source}.{source}")
            if isinstance(content.get("signature"), str) and content["signature"]:
                replay = {**(replay or {}), "signature": ""}
                self.keeper.charge(len(content["signature"]))
                self.signatures[block.index] = [content["signature"]]
            citations = content.get("citations")
            if kind == "text" and isinstance(citations, list) and citations:
                self.keeper.charge(json_size(citations, f"{where} citations"))
                self.citations[block.index] = list(citations)
            if text:
                block.parts.append(text)
                out.append(block.delta(text))
        self.replay.append(replay)
        return block

    def _delta(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        block = self._block(event)
        if block.ended:
            raise malformed(f"content_block_delta for block {event.get('index')!r} after its content_block_stop")
        delta = event.get("delta")
        if not isinstance(delta, Mapping):
            raise malformed("content_block_delta without a 'delta' object")
        if isinstance(block, _Kept):
            block.add(delta, self.keeper)
            return []
        kind = delta.get("type")
        if kind == "signature_delta":
            parts = self.signatures.get(block.index)
            if parts is None:
                parts = self.signatures[block.index] = []
                self.replay[block.index] = {**(self.replay[block.index] or {}), "signature": ""}
            piece = string(delta.get("signature"), "signature")
            self.keeper.charge(len(piece))
            parts.append(piece)
            return []
        if kind == "citations_delta" and block.kind == "text":
            citation = delta.get("citation")
            self.keeper.charge(json_size(citation, "a citation"))
            self.citations.setdefault(block.index, []).append(citation)
            return []
        expected, field = _DELTAS[block.kind]
        if kind != expected:
            raise malformed(f"delta {quote(kind)} for a {block.kind} block")
        text = string(delta.get(field), f"{kind}.{field}")
        if not text:
            return []
        block.parts.append(text)
        return [block.delta(text)]

    def _stop(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        block = self._block(event)
        if block.ended:
            raise malformed(f"content_block_stop for block {event.get('index')!r} twice")
        self.open = None
        return self._end(block, f"content block {event.get('index')}")

    def _end(self, block: ProviderBlock | _Kept, where: str) -> list[StreamChunk]:
        """Close a block: a protocol block's ``block-end`` (its citations kept), a kept block kept."""
        if isinstance(block, _Kept):
            block.ended = True
            data = block.assembled(where)
            self.keeper.keep(data["type"], block.at, data, charged=True)
            return []
        citations = self.citations.pop(block.index, None)
        if citations is not None:
            self.keeper.keep("citations", block.index, {"citations": citations}, charged=True)
        return block.close()

    def close(self) -> list[StreamChunk]:
        """The message is over (``message_stop``, or the end of the events): ``usage`` then ``finish``.

        Raises ``STREAM_CLOSED`` when no stop reason came, ``EMPTY_RESPONSE`` for an ``end_turn`` with no content
        (neither a block nor a kept item). After ``message_stop`` there is nothing more to end: it returns no chunks.
        Every finish carries the ``replayState`` (a turn that stopped with ``pause_turn`` or ``refusal`` may be sent
        back too); a kept block the stream cut off before its ``content_block_stop`` is not kept (it could not be
        sent back whole).
        """
        self.over = "message_stop"
        reason = self.stop_reason
        finish = stop_reason(reason, STOP_REASONS, "stop_reason")
        empty = self.count == 0 and not self.keeper.items
        out: list[StreamChunk] = []
        cut = self.open
        self.open = None
        if isinstance(cut, ProviderBlock) and (cut.kind != "tool-call" or cut.arguments_complete()):
            out.extend(self._end(cut, "the last content block"))
        response = {**self.message, "stopReason": reason}
        if self.stop_sequence is not None:
            response["stopSequence"] = self.stop_sequence
        for position, parts in self.signatures.items():
            entry = self.replay[position]
            assert entry is not None  # made when its first piece came
            entry["signature"] = "".join(parts)
        return out + self.closed(finish, self.keeper.state(response=response, blocks=list(self.replay)), empty=empty)


@sync_or_async
def from_anthropic_events(
    events: Iterable[Any] | AsyncIterable[Any], *, limits: Limits | None = None
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Convert a Messages API event stream (dicts or SDK event objects, sync or async) to protocol chunks.

    ``limits`` are taken as every ``from_*`` function takes them; the Messages API's blocks come in order, so
    nothing is held back for them to bound.
    """
    return convert(AnthropicConverter(limits), events, "an event")

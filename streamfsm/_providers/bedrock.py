"""Amazon Bedrock's ConverseStream to the block protocol.

:class:`BedrockConverter` is sans-IO: it is fed the events of ``converse_stream(...)["stream"]`` as boto3 yields
them, dicts of one key, the event's name (``{"contentBlockDelta": {...}}``); recordings of the stream as JSON
lines have the same form. :func:`from_bedrock_events` wraps it around any iterable of them, sync or async
(aioboto3). There is no HTTP adapter: a Bedrock request is signed with SigV4 by boto3, and the user holds the
SDK's stream; it is handed over as it is.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, NoReturn

import orjson

from .._config import Limits
from .._errors import LlmError
from .._quote import quote
from .._wire import StreamChunk, WireUsage
from .blocks import Kind, ProviderBlock
from .classify import classify_failure, words
from .convert import (
    STOP_REASONS,
    convert,
    count,
    ended_turn,
    is_position,
    malformed,
    stop_reason,
    string,
    sync_or_async,
)
from .frame import TurnState
from .replay import json_size

__all__ = [
    "BedrockConverter",
    "bedrock_failure",
    "bedrock_usage",
    "client_failure",
    "from_bedrock_events",
    "sdk_errors",
]

#: The exceptions ConverseStream sends in its stream, each classified as an HTTP response of the status the API
#: reference gives it. modelStreamErrorException is listed as 424 there, with "retry your request": it is
#: classed as a server failure, unless it gives the model's own ``originalStatusCode``.
_EXCEPTIONS: dict[str, int] = {
    "internalServerException": 500,
    "modelStreamErrorException": 500,
    "serviceUnavailableException": 503,
    "throttlingException": 429,
    "validationException": 400,
}

#: How deep a kept item may nest (boto3 gives bytes where the JSON form has base64: kept items are copied as JSON).
_MAX_DEPTH = 64


def _status(value: object) -> int | None:
    return value if type(value) is int and 100 <= value <= 599 else None


def bedrock_failure(name: str, body: object, *, status: int | None = None, request_id: str | None = None) -> LlmError:
    """The coded error of a Bedrock exception ``name`` (``throttlingException``, ``ThrottlingException``...) whose
    body is ``body`` (``{"message": ...}``).

    Classified as an HTTP response of the status the API reference gives the exception (``throttlingException``:
    429, ``RATE_LIMIT``), after the wording of a context overflow or an exhausted quota (``classify_failure``). A
    ``modelStreamErrorException`` with the model's ``originalStatusCode`` is classified by that status, which the
    error then carries, as it carries ``status`` and ``request_id`` when boto3 gives them.
    """
    fields = body if isinstance(body, Mapping) else {}
    message = words(fields.get("message") or fields.get("Message") or "")
    original = fields.get("originalMessage")
    if original:
        message = f"{message} (the model said: {words(original)})" if message else words(original)
    given = _status(fields.get("originalStatusCode"))
    if given is not None:
        status = given
    key = name[:1].lower() + name[1:]
    code = classify_failure(status or _EXCEPTIONS.get(key), message, name)
    return LlmError(
        f"Bedrock sent {words(name)}: {message or '(no message)'}", code, status=status, request_id=request_id
    )


def _client_error(exc: BaseException) -> LlmError | None:
    """The coded error of an exception botocore raised while reading the stream, or None if it is not one.

    botocore raises an exception event as ``EventStreamError`` (a ``ClientError``), whose ``response`` is
    ``{"Error": {"Code": "throttlingException", "Message": ...}}``, with ``ResponseMetadata`` on a ``ClientError``.
    """
    response = getattr(exc, "response", None)
    return client_failure(response) if isinstance(response, Mapping) else None


def client_failure(response: Mapping[str, Any]) -> LlmError | None:
    """The coded error of a botocore error response (``{"Error": {"Code", "Message"}, "ResponseMetadata"}``, what a
    ``ClientError`` holds), or None if it is not one."""
    error = response.get("Error")
    if not isinstance(error, Mapping) or not isinstance(error.get("Code"), str) or not error["Code"]:
        return None
    meta = response.get("ResponseMetadata")
    meta = meta if isinstance(meta, Mapping) else {}
    status = _status(meta.get("HTTPStatusCode"))
    request_id = meta.get("RequestId")
    return bedrock_failure(
        error["Code"],
        {"message": error.get("Message") or ""},
        status=status if status is not None and status >= 400 else None,  # an error event came with a 200
        request_id=request_id if isinstance(request_id, str) and request_id else None,
    )


def bedrock_usage(usage: Mapping[str, Any]) -> WireUsage:
    """Bedrock's ``TokenUsage`` as the protocol's disjoint counts.

    Bedrock's counts are disjoint already: ``inputTokens`` is the input neither read from nor written to the
    prompt cache (AWS's prompt-caching guide: the input is ``inputTokens + cacheReadInputTokens +
    cacheWriteInputTokens``). So ``inputTokens``, ``outputTokens``, ``cacheReadInputTokens`` and
    ``cacheWriteInputTokens`` are passed on as they are; Bedrock does not count reasoning apart.
    """
    result: WireUsage = {
        "inputTokens": count(usage, "inputTokens") or 0,
        "outputTokens": count(usage, "outputTokens") or 0,
    }
    read = count(usage, "cacheReadInputTokens")
    if read is not None:
        result["cacheReadTokens"] = read
    write = count(usage, "cacheWriteInputTokens")
    if write is not None:
        result["cacheWriteTokens"] = write
    return result


def _json(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data: bytes (boto3's blobs) as base64, as the API's JSON form has them."""
    if depth > _MAX_DEPTH:
        raise malformed(f"a kept item nests deeper than {_MAX_DEPTH} levels")
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Mapping):
        return {str(key): _json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json(item, depth + 1) for item in value]
    return value


class _Kept:
    """A content block kept for replay, as it is assembled from its start and its deltas."""

    __slots__ = ("at", "parts", "start", "type")

    def __init__(self, kind: str, at: int, start: Mapping[str, Any]) -> None:
        self.type = kind
        self.at = at
        self.start = start
        self.parts: list[Any] = []

    def data(self) -> dict[str, Any]:
        """The block as Converse's ``ContentBlock`` holds it (what goes back in the next request's messages)."""
        if self.type == "toolUse":  # a server tool's call: its input came as JSON text
            raw = "".join(self.parts)
            try:
                given: Any = orjson.loads(raw) if raw else {}
            except orjson.JSONDecodeError:
                given = raw
            return {"toolUse": {**_json(self.start), "input": given}}
        if self.type == "toolResult":
            content: list[Any] = []
            text: list[str] = []  # consecutive text pieces are one text, joined once
            for part in [*self.parts, None]:
                if isinstance(part, Mapping) and len(part) == 1 and isinstance(part.get("text"), str):
                    text.append(part["text"])
                    continue
                if text:
                    content.append({"text": "".join(text)})
                    text = []
                if part is not None:
                    content.append(_json(part))
            return {"toolResult": {**_json(self.start), "content": content}}
        if self.type == "image":
            image = dict(self.start)
            for part in self.parts:
                image.update(part)
            return {"image": _json(image)}
        if self.type == "redactedContent":
            if len(self.parts) == 1 and isinstance(self.parts[0], str):  # the JSON form, kept as it came
                return {"reasoningContent": {"redactedContent": self.parts[0]}}
            data = b"".join(base64.b64decode(p) if isinstance(p, str) else bytes(p) for p in self.parts)
            return {"reasoningContent": {"redactedContent": base64.b64encode(data).decode("ascii")}}
        result: dict[str, Any] = _json(self.start)
        return result


class _Slot:
    """One of the provider's content blocks (by ``contentBlockIndex``): a protocol block, a kept one, or both."""

    __slots__ = ("block", "kept", "ordinal", "stopped")

    def __init__(self) -> None:
        self.block: ProviderBlock | None = None
        self.ordinal = -1  # the protocol index of ``block``
        self.kept: _Kept | None = None
        self.stopped = False


def _index(body: Mapping[str, Any], event: str) -> int:
    index = body.get("contentBlockIndex")
    if not is_position(index):
        raise malformed(f"{event} with a bad contentBlockIndex {quote(index)}")
    return index


def _body(value: object, event: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise malformed(f"{event} must be an object, got {type(value).__name__}")
    return value


class BedrockConverter(TurnState):
    """Turns ConverseStream events into block-protocol chunks.

    ``text`` deltas become text blocks, ``reasoningContent.text`` reasoning blocks (their ``signature`` goes to
    the finish's ``replayState["blocks"]``, at the block's index), a ``toolUse`` start and its ``input`` deltas a
    tool call. What the protocol has no word for is kept verbatim in ``replayState["kept"]``, assembled as
    Converse's ``ContentBlock``: ``redactedContent`` reasoning (base64), a server tool's ``toolUse``
    (``type: server_tool_use``) and its ``toolResult``, ``image`` blocks, each ``citation``, and any content
    kind this converter does not know. Events it does not know are skipped (the API may add some); an
    exception event raises its coded :class:`LlmError`. ``usage`` (from ``metadata``, which may come before or
    after ``messageStop``) and ``finish`` are sent when the input ends.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)  # over: the exception event that ended it; ended: end() has run
        self.slots: dict[int, _Slot] = {}
        self.kept: list[_Kept] = []
        self.signatures: dict[int, list[str]] = {}  # protocol index → the signature's pieces
        self.stop_reason: str | None = None
        self.started = False  # an event of this turn came

    def begins_turn(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` is the first of another turn: a ``messageStart`` after this turn's ``messageStop`` (the
        turn's ``metadata``, which may come before or after its ``messageStop``, is the turn's own) or after an
        exception event."""
        return (self.stop_reason is not None or self.over is not None) and "messageStart" in event

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        """Convert one event (``{"contentBlockDelta": {...}}``); returns the protocol chunks it completes."""
        for name, body in event.items():
            if name == "messageStart":
                if self.begins_turn(event):
                    raise ended_turn("messageStart", "messageStop", "from_bedrock_events")
                if self.started:
                    raise malformed(
                        "messageStart after the events of a message that did not stop: a turn spliced into another"
                    )
            elif name == "contentBlockDelta":
                self._delta(_body(body, name))
            elif name == "contentBlockStart":
                self._start(_body(body, name))
            elif name == "contentBlockStop":
                self._stop(_body(body, name))
            elif name == "messageStop":
                self._message_stop(_body(body, name))
            elif name == "metadata":
                usage = _body(body, name).get("usage")
                if usage is not None:
                    self.usage = bedrock_usage(_body(usage, "metadata.usage"))
            elif isinstance(name, str) and name.endswith("Exception"):
                raise self.failed(name, bedrock_failure(name, body))
            # Events added to the API later: nothing to convert (messageStart's role is always "assistant").
        self.started = True
        return self.queue.take()

    # --- Content ------------------------------------------------------------------------------------

    def _slot(self, body: Mapping[str, Any], event: str) -> tuple[int, _Slot]:
        if self.stop_reason is not None:
            raise ended_turn(event, "messageStop")
        index = _index(body, event)
        slot = self.slots.get(index)
        if slot is None:
            slot = self.slots[index] = _Slot()
        elif slot.stopped:
            raise malformed(f"{event} for content block {index} after its contentBlockStop")
        return index, slot

    def _keep(self, kind: str, start: Mapping[str, Any], at: int | None = None) -> _Kept:
        self.keeper.charge(json_size(start, f"a kept {kind}", blobs=True))
        kept = _Kept(kind, self.queue.made if at is None else at, start)
        self.kept.append(kept)
        return kept

    def _start(self, body: Mapping[str, Any]) -> None:
        index, slot = self._slot(body, "contentBlockStart")
        if slot.block is not None or slot.kept is not None:
            raise malformed(f"contentBlockStart for content block {index}, which had begun")
        start = _body(body.get("start"), "contentBlockStart.start")
        for kind, value in start.items():
            if kind == "toolUse":
                value = _body(value, "start.toolUse")
                if value.get("type") == "server_tool_use":  # Bedrock runs it: kept, not a call for the client
                    slot.kept = self._keep("toolUse", value)
                    continue
                call_id = string(value.get("toolUseId"), "toolUse.toolUseId")
                name = string(value.get("name"), "toolUse.name")
                if not call_id or not name:
                    raise malformed(f"content block {index}: a toolUse without its toolUseId or name")
                self._new(slot, ProviderBlock("tool-call", call_id, name), "")
                self.calls += 1
            elif kind in ("toolResult", "image"):
                slot.kept = self._keep(kind, _body(value, f"start.{kind}"))
            else:
                slot.kept = self._keep(kind, {kind: value})

    def _delta(self, body: Mapping[str, Any]) -> None:
        index, slot = self._slot(body, "contentBlockDelta")
        delta = _body(body.get("delta"), "contentBlockDelta.delta")
        for kind, value in delta.items():
            if kind == "text":
                self._content(index, slot, "text", string(value, "delta.text"))
            elif kind == "reasoningContent":
                self._reasoning(index, slot, _body(value, "delta.reasoningContent"))
            elif kind == "toolUse":
                given = string(_body(value, "delta.toolUse").get("input"), "delta.toolUse.input")
                if slot.kept is not None and slot.kept.type == "toolUse":
                    self.keeper.charge(len(given))
                    slot.kept.parts.append(given)
                elif slot.block is not None and slot.block.kind == "tool-call":
                    self._add(index, slot.block, given)
                else:
                    raise malformed(f"toolUse input for content block {index}, which did not start as a toolUse")
            elif kind == "toolResult":
                if not isinstance(value, list):
                    raise malformed(f"delta.toolResult must be a list, got {type(value).__name__}")
                self._kept_slot(slot, "toolResult").parts.extend(value)
                self.keeper.charge(json_size(value, "delta.toolResult", blobs=True))
            elif kind == "image":
                image = _body(value, "delta.image")
                self.keeper.charge(json_size(image, "delta.image", blobs=True))
                self._kept_slot(slot, "image").parts.append(image)
            elif kind == "citation":
                at = slot.ordinal if slot.block is not None else self.queue.made  # the text block it belongs to
                self._keep("citation", _body(value, "delta.citation"), at)
            else:
                self._keep(kind, {kind: value})

    def _reasoning(self, index: int, slot: _Slot, value: Mapping[str, Any]) -> None:
        text = value.get("text")
        if text is not None:
            self._content(index, slot, "reasoning", string(text, "reasoningContent.text"))
        signature = value.get("signature")
        if signature is not None:
            self._content(index, slot, "reasoning", "")
            piece = string(signature, "reasoningContent.signature")
            self.keeper.charge(len(piece))
            self.signatures.setdefault(slot.ordinal, []).append(piece)
        redacted = value.get("redactedContent")
        if redacted is not None:
            if not isinstance(redacted, str | bytes | bytearray):
                raise malformed(f"reasoningContent.redactedContent must be bytes, got {type(redacted).__name__}")
            if isinstance(redacted, str):
                try:
                    base64.b64decode(redacted, validate=True)
                except ValueError as exc:
                    raise malformed("reasoningContent.redactedContent is not base64") from exc
            self.keeper.charge(len(redacted) * 4 // 3 + 4)  # its base64, as it is kept
            self._kept_slot(slot, "redactedContent").parts.append(redacted)

    def _kept_slot(self, slot: _Slot, kind: str) -> _Kept:
        if slot.kept is None:
            slot.kept = self._keep(kind, {})
        elif slot.kept.type != kind:
            raise malformed(f"a {kind} delta for a content block that began as {slot.kept.type}")
        return slot.kept

    def _content(self, index: int, slot: _Slot, kind: Kind, text: str) -> None:
        block = slot.block
        if block is None:
            self._new(slot, ProviderBlock(kind), text)
        elif block.kind != kind:
            raise malformed(f"{kind} content for content block {index}, a {block.kind} block")
        else:
            self._add(index, block, text)

    def _new(self, slot: _Slot, block: ProviderBlock, text: str) -> None:
        slot.block = block
        slot.ordinal = self.queue.made
        self.queue.push(block, text)

    def _add(self, index: int, block: ProviderBlock, text: str) -> None:
        if not text:
            return
        if block.ended:
            raise malformed(f"content for content block {index} after the next block had begun: {text[:40]!r}")
        self.queue.add(block, text)

    def _stop(self, body: Mapping[str, Any]) -> None:
        _, slot = self._slot(body, "contentBlockStop")
        slot.stopped = True

    def _message_stop(self, body: Mapping[str, Any]) -> None:
        if self.stop_reason is not None:
            raise malformed("messageStop twice")
        reason = body.get("stopReason")
        if not isinstance(reason, str) or not reason:
            raise malformed(f"messageStop.stopReason must be a non-empty string, got {quote(reason)}")
        self.stop_reason = reason

    # --- The end ------------------------------------------------------------------------------------

    def close(self) -> list[StreamChunk]:
        """The input is over: end the blocks, then ``usage`` (from ``metadata``) and ``finish``.

        Raises ``STREAM_CLOSED`` when no ``messageStop`` came, ``EMPTY_RESPONSE`` for a ``stop`` with no content.
        A stream without ``metadata`` gets no ``usage`` (under ``Policy.STRICT`` that is ``USAGE_MISSING``).
        """
        finish = stop_reason(self.stop_reason, STOP_REASONS, "stopReason", "messageStop")
        keeper = self.keeper
        for kept in self.kept:
            keeper.keep(kept.type, kept.at, kept.data(), charged=True)
        blocks: list[dict[str, str] | None] | None = None
        if self.signatures:
            blocks = [None] * self.queue.made
            for ordinal, parts in self.signatures.items():
                blocks[ordinal] = {"signature": "".join(parts)}
        return self.closed(finish, keeper.state(blocks=blocks))


def _reraise(exc: Exception) -> NoReturn:
    """``exc``, raised while the events were read, as its coded :class:`LlmError` when botocore raised it."""
    failure = None if isinstance(exc, LlmError) else _client_error(exc)
    if failure is None:
        raise exc
    raise failure from exc


def sdk_errors(events: Iterable[Any]) -> Iterator[Any]:
    """``events`` as they come, an exception botocore raises while reading them as its coded :class:`LlmError`."""
    try:
        yield from events
    except Exception as exc:
        _reraise(exc)


async def _sdk_errors_async(events: AsyncIterable[Any]) -> AsyncIterator[Any]:
    try:
        async for event in events:
            yield event
    except Exception as exc:
        _reraise(exc)


@sync_or_async
def from_bedrock_events(
    events: Iterable[Any] | AsyncIterable[Any], *, limits: Limits | None = None
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Convert a ConverseStream event stream (boto3's ``response["stream"]``, sync or async) to protocol chunks.

    An exception botocore raises while reading the stream (an exception event, as ``EventStreamError``) becomes
    the same coded :class:`LlmError` as the event would; other exceptions pass through unchanged.

    ``limits`` (pass those the machine is given) bound the content held back until a tool call's arguments are
    complete: ``LIMIT_EXCEEDED`` once it passes them (the machine does not see it yet).
    """
    if isinstance(events, AsyncIterable):
        return convert(BedrockConverter(limits), _sdk_errors_async(events), "a ConverseStream event")
    return convert(BedrockConverter(limits), sdk_errors(events), "a ConverseStream event")

"""What every converter shares: driving one over an iterable of events, and reading the events.

A converter is sans-IO: an object with ``feed(event) -> chunks`` (the protocol chunks that one provider event,
a mapping, completes) and ``end() -> chunks`` (the input is over). :func:`convert` drives one over events given
sync or async, as dicts or as an SDK's objects (:func:`as_event` dumps those). The blocks a converter builds
are :mod:`.blocks`; content a provider interleaves is held back by :mod:`.held`; failures are classified by
:mod:`.classify`.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Protocol

import orjson

from .._errors import ErrorCode, LlmError
from .._quote import quote
from .._shape import MAX_INT
from .._wire import StreamChunk, WireFailure, WireFinishReason
from .classify import clip

__all__ = [
    "Converter",
    "as_event",
    "closing",
    "convert",
    "event_object",
    "finish_reason",
    "malformed",
    "non_negative_int",
]


def malformed(message: str) -> LlmError:
    """A provider sent something that is not its documented format."""
    return LlmError(message, ErrorCode.MALFORMED_RESPONSE)


def event_object(data: str, who: str) -> Mapping[str, Any]:
    """One provider event's data: a JSON object, or ``MALFORMED_RESPONSE`` saying what it is instead."""
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise LlmError(f"{who}: an event is not JSON ({exc}): {data[:80]!r}", ErrorCode.MALFORMED_RESPONSE) from exc
    if not isinstance(parsed, Mapping):
        raise LlmError(f"{who}: an event is not a JSON object: {data[:80]!r}", ErrorCode.MALFORMED_RESPONSE)
    return parsed


def non_negative_int(value: object, field: str) -> int:
    """A token count: an int from 0 to 2^53-1 (an integral float is accepted: some providers send them)."""
    # The range test comes first: it also refuses NaN and infinity, on which int() would raise.
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_INT:
        raise malformed(f"usage field {field!r} must be an integer from 0 to 2^53-1, got {quote(value)}")
    if int(value) != value:
        raise malformed(f"usage field {field!r} must be an integer, got {quote(value)}")
    return int(value)


def finish_reason(reason: str, known: Mapping[str, WireFinishReason], field: str) -> WireFinishReason:
    """The protocol's finish for a provider's stop reason: ``known`` mapped, anything else an ``error`` whose code
    is the reason upper-cased (``content_filter`` → ``CONTENT_FILTER``)."""
    finish = known.get(reason)
    if finish is None:
        shown = clip(reason, 200)
        failure: WireFailure = {"message": f"the provider stopped with {field} {shown!r}", "code": reason.upper()}
        finish = {"kind": "error", "failure": failure}
    return finish


def closing(usage: Any, finish: WireFinishReason, replay_state: Any = None) -> list[StreamChunk]:
    """The chunks that close a turn: its ``usage`` (when the provider gave one), then its ``finish``, with the
    ``replayState`` when the converter keeps one (every converter's ``end`` ends with these)."""
    out: list[StreamChunk] = []
    if usage is not None:
        out.append({"type": "usage", "usage": usage})
    if replay_state is None:
        out.append({"type": "finish", "reason": finish})
    else:
        out.append({"type": "finish", "reason": finish, "replayState": replay_state})
    return out


# --- Driving a converter ------------------------------------------------------------------------------


class Converter(Protocol):
    """What :func:`convert` drives: a sans-IO converter fed one provider event at a time."""

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        """The protocol chunks one event completes."""
        ...

    def end(self) -> list[StreamChunk]:
        """The input is over: the chunks that end the stream."""
        ...


def as_event(value: object, what: str) -> Mapping[str, Any]:
    """A provider event as a mapping: dicts as they are, SDK objects (pydantic models) dumped."""
    if isinstance(value, Mapping):
        return value
    # The openai and anthropic SDKs' to_dict() gives the API's own names and leaves out what the provider did not send;
    # in JSON mode, as the provider sent it (a datetime, such as a container's expires_at, back as its text).
    to_dict = getattr(value, "to_dict", None)
    model_dump = getattr(value, "model_dump", None)
    dumped: object = None
    if callable(to_dict):
        try:
            dumped = to_dict(mode="json")
        except TypeError:  # a to_dict without modes
            dumped = to_dict()
    elif callable(model_dump):
        dumped = model_dump(mode="json", by_alias=True)
    if isinstance(dumped, Mapping):
        return dumped
    raise malformed(f"{what} must be an object, got {type(value).__name__}")


def convert(
    converter: Converter, events: Iterable[Any] | AsyncIterable[Any], what: str
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Drive ``converter`` over ``events`` (sync or async, dicts or SDK objects): the same kind of iterator back."""
    if isinstance(events, AsyncIterable):
        return _convert_async(converter, events, what)
    return _convert_sync(converter, events, what)


def _convert_sync(converter: Converter, events: Iterable[Any], what: str) -> Iterator[StreamChunk]:
    for event in events:
        yield from converter.feed(as_event(event, what))
    yield from converter.end()


async def _convert_async(converter: Converter, events: AsyncIterable[Any], what: str) -> AsyncIterator[StreamChunk]:
    async for event in events:
        for chunk in converter.feed(as_event(event, what)):
            yield chunk
    for chunk in converter.end():
        yield chunk

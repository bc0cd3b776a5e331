"""What every converter shares: driving one over an iterable of events, and reading the events.

A converter is sans-IO: an object with ``feed(event) -> chunks`` (the protocol chunks that one provider event,
a mapping, completes) and ``end() -> chunks`` (the input is over). :func:`convert` drives one over events given
sync or async, as dicts or as an SDK's objects (:func:`as_event` dumps those). The blocks a converter builds
are :mod:`.blocks`; content a provider interleaves is held back by :mod:`.held`; failures are classified by
:mod:`.classify`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeGuard, cast, overload

import orjson

from .._assemble import assemble
from .._errors import ErrorCode, LlmError
from .._quote import quote
from .._shape import MAX_INT
from .._wire import StreamChunk, WireFailure, WireFinishReason
from .classify import clip

if TYPE_CHECKING:
    from .._config import Limits
    from .._models import StreamResult

__all__ = [
    "END_OF_TURN",
    "STOP_REASONS",
    "BodyReader",
    "Converter",
    "SyncOrAsync",
    "TurnConverter",
    "Turns",
    "another_turn",
    "answer",
    "as_event",
    "as_object",
    "body_chunks",
    "closing",
    "convert",
    "count",
    "ended_turn",
    "event_object",
    "finish_reason",
    "is_position",
    "malformed",
    "non_negative_int",
    "refuse_empty",
    "stop_or_calls",
    "stop_reason",
    "string",
    "sync_or_async",
]


#: The stop reasons of Anthropic's Messages API, which Bedrock's Converse gives too (their own others, such as
#: Converse's ``guardrail_intervened``, are an ``error`` finish of that code, :func:`finish_reason`).
STOP_REASONS: Final[Mapping[str, WireFinishReason]] = {
    "end_turn": {"kind": "stop"},
    "stop_sequence": {"kind": "stop"},
    "tool_use": {"kind": "tool-calls"},
    "max_tokens": {"kind": "max-tokens"},
    # The output was cut because the context window was full: a length limit, as max_tokens is.
    "model_context_window_exceeded": {"kind": "max-tokens"},
}


def malformed(message: str) -> LlmError:
    """A provider sent something that is not its documented format."""
    return LlmError(message, ErrorCode.MALFORMED_RESPONSE)


def as_object(value: object, what: str) -> Mapping[str, Any]:
    """``value``, which the wire API says is an object (``what`` names it), or ``MALFORMED_RESPONSE`` saying what
    it is instead."""
    if not isinstance(value, Mapping):
        raise malformed(f"{what} must be an object, got {type(value).__name__}")
    return value


def another_turn(what: str, reader: str) -> LlmError:
    """The first event of a second turn, fed to a converter (which converts one): ``MALFORMED_RESPONSE`` saying
    how to read a recording of several turns (``reader``: the wire API's ``from_...`` function)."""
    return malformed(
        f"{what}: the first event of another turn, and a recording of several turns is not one turn; read it with "
        f"sf.read_turns(sf.{reader}, events) or sf.read_recordings(path), one stream per turn"
    )


def ended_turn(what: str, end: str, reader: str | None = None) -> LlmError:
    """What may follow a turn's end, one rule for the six wire APIs: after the event or field that ended the turn
    (``end``: its finish reason, ``message_stop``, ``response.completed``...) only the turn's usage (and what its API
    sends with it, as Gemini's empty last part with its signature) belongs to the turn. Anything else (``what``) is
    never merged into it: it begins another turn (``reader``, the wire API's ``from_...`` function, given when the
    converter's ``begins_turn`` says so: :func:`another_turn`) or, starting none, is ``MALFORMED_RESPONSE``."""
    if reader is not None:
        return another_turn(f"{what} after {end}", reader)
    return malformed(f"{what} after {end}, which ended the turn: only its usage may follow, and this starts no turn")


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


def count(container: object, key: str, name: str | None = None) -> int | None:
    """A token count of a usage object (``name``: its field as messages call it, default ``key``): None when absent or
    null (a null count is a count not given), or when ``container`` is not an object."""
    value = container.get(key) if isinstance(container, Mapping) else None
    return None if value is None else non_negative_int(value, name or key)


def string(value: object, what: str) -> str:
    """A field that must be a string (``what``: its name in the message), else ``MALFORMED_RESPONSE``."""
    if not isinstance(value, str):
        raise malformed(f"{what} must be a string, got {type(value).__name__}")
    return value


def stop_reason(
    reason: str | None,
    known: Mapping[str, WireFinishReason],
    field: str,
    carrier: str | None = None,
) -> WireFinishReason:
    """The finish of a turn whose input is over (the opening of every converter's ``end``): ``STREAM_CLOSED`` when
    no stop reason came (``field``: the provider's name for it; ``carrier``: the event that brings it, when the
    message names that instead), else :func:`finish_reason`."""
    if reason is None:
        raise LlmError(f"the stream ended without a {carrier or field}", ErrorCode.STREAM_CLOSED)
    return finish_reason(reason, known, field)


def refuse_empty(finish: WireFinishReason, empty: bool) -> None:
    """A ``stop`` with no content at all (``empty``: neither a block nor a kept item) is ``EMPTY_RESPONSE``."""
    if finish["kind"] == "stop" and empty:
        raise LlmError("the provider stopped without any content", ErrorCode.EMPTY_RESPONSE)


def is_position(value: object) -> TypeGuard[int]:
    """Whether a provider's index of a block, call or item is one: an int from 0 to 2^53-1. A bigger one is no
    position any stream reaches, and past 4,300 digits it could not even be written into a message."""
    return type(value) is int and 0 <= value <= MAX_INT


def finish_reason(reason: str, known: Mapping[str, WireFinishReason], field: str) -> WireFinishReason:
    """The protocol's finish for a provider's stop reason: ``known`` mapped, anything else an ``error`` whose code
    is the reason upper-cased (``content_filter`` → ``CONTENT_FILTER``)."""
    finish = known.get(reason)
    if finish is None:
        shown = clip(reason, 200)
        failure: WireFailure = {"message": f"the provider stopped with {field} {shown!r}", "code": reason.upper()}
        finish = {"kind": "error", "failure": failure}
    return finish


def stop_or_calls(finish: WireFinishReason, calls: object) -> WireFinishReason:
    """A turn's finish as its client tool calls say: ``tool-calls`` when the provider said ``stop`` and the turn asks
    for any (``calls``: true when it does), whatever the stop reason says; any other finish as it is."""
    if finish["kind"] == "stop" and calls:
        return {"kind": "tool-calls"}
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


#: How a wire API reads one of its events given as a dict or an SDK's object (None: :func:`as_event`).
Reader = Callable[[Any], Mapping[str, Any]] | None


def convert(
    converter: Converter, events: Iterable[Any] | AsyncIterable[Any], what: str, read: Reader = None
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Drive ``converter`` over ``events`` (sync or async, dicts or SDK objects, each read by ``read``, else by
    :func:`as_event`): the same kind of iterator back."""
    if isinstance(events, AsyncIterable):
        return _convert_async(converter, events, what, read)
    return _convert_sync(converter, events, what, read)


class SyncOrAsync(Protocol):
    """The type of a ``from_<api>_<events>`` function: an async iterator back for async input, else a sync one."""

    @overload
    def __call__(
        self, events: AsyncIterable[Any], /, *, limits: Limits | None = None
    ) -> AsyncIterator[StreamChunk]: ...
    @overload
    def __call__(self, events: Iterable[Any], /, *, limits: Limits | None = None) -> Iterator[StreamChunk]: ...


def sync_or_async(function: Callable[..., Iterator[StreamChunk] | AsyncIterator[StreamChunk]]) -> SyncOrAsync:
    """Type ``function`` (``events``, sync or async, and ``limits=``; :func:`convert`'s iterator back) as
    :class:`SyncOrAsync`: a caller is told which kind of iterator comes back. Nothing changes at run time."""
    return cast(SyncOrAsync, function)


def _convert_sync(converter: Converter, events: Iterable[Any], what: str, read: Reader) -> Iterator[StreamChunk]:
    for event in events:
        yield from converter.feed(as_event(event, what) if read is None else read(event))
    yield from converter.end()


async def _convert_async(
    converter: Converter, events: AsyncIterable[Any], what: str, read: Reader
) -> AsyncIterator[StreamChunk]:
    async for event in events:
        for chunk in converter.feed(as_event(event, what) if read is None else read(event)):
            yield chunk
    for chunk in converter.end():
        yield chunk


# --- A non-streamed answer ---------------------------------------------------------------------------


def body_chunks(
    converter: Converter,
    body: Any,
    events: Callable[[Mapping[str, Any]], Iterable[Mapping[str, Any]]],
    what: str,
    read: Reader = None,
) -> Iterator[StreamChunk]:
    """The block-protocol chunks of the non-streamed answer ``body`` (``what``: the body, as messages call it; a
    dict or an SDK's object, read by ``read``, else by :func:`as_event`): ``events(body)`` gives the events its
    stream would have been (called as the chunks are first asked for, so that a body it refuses fails where a
    stream would), driven through ``converter``. Assembled by the machine, they give the stream's
    :class:`StreamResult`, by the one set of rules. A body is complete by definition: one that lacks its stop
    reason (the converter's ``STREAM_CLOSED``) is ``MALFORMED_RESPONSE``."""
    try:
        yield from _convert_sync(converter, events(as_event(body, what) if read is None else read(body)), what, None)
    except LlmError as err:
        if err.code != ErrorCode.STREAM_CLOSED:
            raise
        raise malformed(f"{what} is incomplete: {err.message.replace('the stream ended', 'it ends', 1)}") from None


class BodyReader:
    """A wire API's reader of its non-streamed answer: called with ``(body, limits)``, the answer's
    :func:`body_chunks`, read by a ``converter`` made with the limits (``events``, ``what`` and ``read``: as
    :func:`body_chunks` takes them)."""

    __slots__ = ("converter", "events", "read", "what")

    def __init__(
        self,
        converter: Callable[[Limits | None], Converter],
        events: Callable[[Mapping[str, Any]], Iterable[Mapping[str, Any]]],
        what: str,
        read: Reader = None,
    ) -> None:
        self.converter = converter
        self.events = events
        self.what = what
        self.read = read

    def __call__(self, body: Any, limits: Limits | None = None) -> Iterator[StreamChunk]:
        """The block-protocol chunks of the non-streamed answer ``body``: what its stream would be converted to."""
        return body_chunks(self.converter(limits), body, self.events, self.what, self.read)


def answer(chunks: Iterable[StreamChunk], limits: Limits | None) -> StreamResult:
    """A non-streamed answer's :class:`StreamResult`: its :func:`body_chunks` assembled under ``Policy.STRICT``."""
    return assemble(chunks, limits=limits)


# --- Turns --------------------------------------------------------------------------------------------


class TurnConverter(Converter, Protocol):
    """A converter that can tell where its turn ends: :class:`Turns` drives one per turn.

    ``begins_turn(event)`` is whether ``event`` is the first of another turn: the converter's turn is over, as
    its wire API says a turn ends, and ``event`` starts one. ``feed`` refuses such an event (:func:`another_turn`);
    an event that starts a turn before the converter's turn ended is spliced into it, and ``MALFORMED_RESPONSE``.
    """

    def begins_turn(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` is the first event of another turn (this converter's is over)."""
        ...


class _EndOfTurn:
    """The type of :data:`END_OF_TURN`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "END_OF_TURN"


#: What a reader puts among the events where the transport itself says a turn is over (an SSE body's ``[DONE]``):
#: the turn ends there whatever its converter says, and the next event, if any, begins another.
END_OF_TURN: Final = _EndOfTurn()


class Turns:
    """The turns of a recording of one wire API, each converted by a fresh converter: the one rule of turns.

    A recording holds one or more turns. Iterating gives one iterator of block-protocol chunks per turn, as the
    turn's converter makes them; the first turn always comes (an empty recording is one turn, which its converter
    says is not complete). A turn is over where its wire API says (``converter.begins_turn``, on the event that
    starts the next) or at :data:`END_OF_TURN`. Asking for the next turn reads (and drops) what is left of the
    one before. A turn whose conversion raised: one the provider failed (its error event, a failed response: the
    error's code is the provider's) is over, and the turns go on at the next event that begins one (the failed
    turn's last events, as a failed response after its error event, are its own); one broken by what its
    converter could not read (``MALFORMED_RESPONSE``, ``LIMIT_EXCEEDED``) is the last: what follows cannot be
    told apart. ``more`` says, once a turn's chunks are over, whether another turn follows. ``on_failure(between)``
    is called when a turn's conversion raised, before any more events are read (``between``: as :attr:`between`).
    """

    __slots__ = ("_ahead", "_broken", "_events", "_new", "_on_failure", "_past")

    def __init__(
        self,
        new: Callable[[], TurnConverter],
        events: Iterable[Mapping[str, Any] | _EndOfTurn],
        on_failure: Callable[[bool], object] | None = None,
    ) -> None:
        self._new = new
        self._events = iter(events)
        self._on_failure = on_failure
        self._ahead: Mapping[str, Any] | None = None  # the first event of the next turn, read already
        self._broken = False
        self._past = False  # an event after the turn in hand was read

    @property
    def between(self) -> bool:
        """Whether an event after the turn in hand has been read: its converter's last chunks came from the events
        before the last one read."""
        return self._past

    @property
    def more(self) -> bool:
        """Whether another turn follows the one whose chunks are over."""
        return self._ahead is not None and not self._broken

    def __iter__(self) -> Iterator[Iterator[StreamChunk]]:
        first = True
        while first or self.more:
            first = False
            turn = self._turn(self._new())
            yield turn
            with contextlib.suppress(LlmError):  # what the caller left of it (an error there is the turn's)
                for _ in turn:
                    pass

    def _turn(self, converter: TurnConverter) -> Iterator[StreamChunk]:
        first, self._ahead, self._past = self._ahead, None, False
        try:
            if first is not None:
                yield from converter.feed(first)
            for event in self._events:
                if isinstance(event, _EndOfTurn):
                    self._past = True
                    self._ahead = self._after_end()
                    break
                if converter.begins_turn(event):
                    self._past = True
                    self._ahead = event
                    break
                yield from converter.feed(event)
            yield from converter.end()
        except LlmError as err:
            if self._on_failure is not None:
                self._on_failure(self._past)
            self._after_failure(converter, err)
            raise
        except BaseException:
            self._broken = True
            raise

    def _after_end(self) -> Mapping[str, Any] | None:
        """The first event after an :data:`END_OF_TURN` (and any more of them), or None at the end."""
        return next((e for e in self._events if not isinstance(e, _EndOfTurn)), None)

    def _after_failure(self, converter: TurnConverter, err: LlmError) -> None:
        """A turn's conversion raised ``err``: find the next turn, if there is one to find (the class docstring)."""
        if self._past:  # its end was read already (the error is its converter's verdict at the end)
            self._broken = self._ahead is None
            return
        self._broken = True
        if err.code in _UNREADABLE:
            return
        try:
            for event in self._events:
                self._past = True
                if isinstance(event, _EndOfTurn) or converter.begins_turn(event):
                    ahead = self._after_end() if isinstance(event, _EndOfTurn) else event
                    self._ahead, self._broken = ahead, ahead is None
                    return
        except LlmError:  # reading on failed too: the turn's own error is the one to report
            pass


#: The codes of a turn its converter could not read: nothing after it can be told apart.
_UNREADABLE: Final = frozenset({ErrorCode.MALFORMED_RESPONSE, ErrorCode.LIMIT_EXCEEDED})

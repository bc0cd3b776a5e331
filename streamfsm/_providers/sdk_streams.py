"""An SDK's own stream, checked as it passes: :func:`checked` and the wrappers it gives (:class:`Checked`,
:class:`AsyncChecked`).

The objects the SDK yields go to the consumer unchanged (the same objects); each is also read (an SDK object
dumped, as the ``from_...`` functions read it), converted by its wire API's converter and fed to a
:class:`~streamfsm.StreamAssembler`. The wire API is told from the first object (``_recordings.event_format``:
the SDK's package, or a dict's fields; an object of another package, such as LiteLLM's chunks, by the fields of
its dump), or named by ``api=``; its converter and its way of reading an event are those of
:data:`.turns.TURN_APIS`.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Generator, Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, Final, Generic, Literal, TypeVar, overload

from .._config import Limits, Policy
from .._errors import ErrorCode, LlmError
from .._machine import StreamAssembler
from .._models import Snapshot, StreamResult
from .._recordings import PROVIDER_FORMATS, READERS, event_format
from .convert import as_event
from .turns import TURN_APIS, TurnApi

__all__ = ["Api", "AsyncChecked", "Checked", "checked"]

T = TypeVar("T")
S = TypeVar("S")

#: The wire APIs ``api=`` names, as ``format=`` names their recordings (``openai-sse``: chat completions).
Api = Literal["openai-sse", "anthropic-sse", "openai-responses", "gemini", "bedrock", "cohere"]

_APIS: Final = ", ".join(repr(name) for name in PROVIDER_FORMATS)
#: Per wire API's helper events (``TurnApi.helpers``), per class of object: whether it is one (told once per class:
#: an SDK's event class has one ``type``, and a pydantic model's missing attribute is slow to ask for).
_HELPER_CLASSES: Final[dict[frozenset[str], dict[type, bool]]] = {}


class _Check:
    """The checking of one stream: the converter of its wire API (made at the first object unless named) and the
    machine it feeds. ``count``: the objects checked whole (all passed on)."""

    __slots__ = (
        "_asm",
        "_converter",
        "_error",
        "_event",
        "_helpers",
        "_limits",
        "_result",
        "_skipped",
        "_what",
        "api",
        "count",
    )

    def __init__(self, api: str | None, policy: Policy | str, limits: Limits | None) -> None:
        self._asm = StreamAssembler(policy, limits)
        self._limits = limits
        self._result: StreamResult | None = None
        self._error: LlmError | None = None
        self.api: str | None = None
        self.count = 0
        if api is not None:
            if api not in READERS:
                raise ValueError(f"checked(): api must be one of {_APIS}, got {api!r}")
            self._use(api)

    def _use(self, api: str) -> None:
        wire: TurnApi = TURN_APIS[READERS[api][0]]
        self.api = api
        self._converter = wire.new(self._limits)
        self._event, self._what, self._helpers = wire.event, wire.what, wire.helpers
        self._skipped = _HELPER_CLASSES.setdefault(wire.helpers, {})

    def _tell(self, first: object) -> None:
        """Tell the wire API from the first object, or ``TypeError`` saying to name it."""
        api = event_format(first)
        if api is None and not isinstance(first, Mapping):  # another package's object: its fields tell
            try:
                api = event_format(dict(as_event(first, "an event")))
            except LlmError:
                api = None
        if api is None:
            raise TypeError(
                f"checked() could not tell the wire API of a stream whose first event is a {type(first).__name__}: "
                f"name it with api= (one of {_APIS}); block-protocol chunks are checked by sf.validate()"
            )
        self._use(api)

    def feed(self, item: object) -> None:
        """Check one object of the SDK's stream (``LlmError`` at the first broken rule)."""
        if self.api is None:
            self._tell(item)
        if self._helpers:
            kind = type(item)
            helper = self._skipped.get(kind)
            if helper is None:
                helper = self._skipped[kind] = (
                    not isinstance(item, Mapping) and getattr(item, "type", None) in self._helpers
                )
            if helper:
                self.count += 1
                return
        try:
            feed = self._asm.feed
            for chunk in self._converter.feed(self._event(item, self._what)):
                feed(chunk)
        except LlmError as err:
            self._error = err
            raise
        self.count += 1

    def end(self) -> None:
        """The SDK's stream is over: its last chunks checked, the result assembled."""
        try:
            if self.api is None:
                raise LlmError("the stream ended before its first event", ErrorCode.STREAM_CLOSED)
            feed = self._asm.feed
            for chunk in self._converter.end():
                feed(chunk)
            self._result = self._asm.close()
        except LlmError as err:
            self._error = err
            raise

    @property
    def result(self) -> StreamResult:
        if self._result is not None:
            return self._result
        if self._error is not None:
            raise ValueError(f"the stream failed ({self._error.code}): it has no result; snapshot() says what came")
        raise ValueError("the stream has not been read to its end: it has no result yet; snapshot() says what came")

    def snapshot(self) -> Snapshot:
        return self._asm.snapshot()


class _Face(Generic[S]):
    """What :class:`Checked` and :class:`AsyncChecked` both say of their stream (``S``: its type, sync or async)."""

    __slots__ = ("_check", "_reading", "_started", "_stream")

    def __init__(
        self,
        stream: S,
        *,
        api: Api | None = None,
        policy: Policy | str = Policy.STRICT,
        limits: Limits | None = None,
    ) -> None:
        self._stream = stream
        self._check = _Check(api, policy, limits)
        self._reading: weakref.ref[Any] | None = None  # the generator reading the stream (a weak reference, so that
        # a consumer that stops early and drops it has it finalised: its ``finally`` closes the SDK's stream)
        self._started = False

    def _read(self, stream: S) -> Any:
        raise NotImplementedError

    def _reader(self) -> Any:
        """The generator reading the stream: the one reading it already, else a new one (:meth:`_read`), else None
        when it was read already (or closed)."""
        reading = self._reading() if self._reading is not None else None
        if reading is not None or self._started:
            return reading
        self._started = True
        generator = self._read(self._stream)
        self._reading = weakref.ref(generator)
        return generator

    @property
    def api(self) -> str | None:
        """The wire API, as ``api=`` names it (``"openai-sse"``, ...): given, or told from the first object;
        ``None`` until then."""
        return self._check.api

    @property
    def count(self) -> int:
        """How many of the SDK's objects have been checked and passed on (when ``LlmError`` comes: all the consumer
        has seen)."""
        return self._check.count

    @property
    def result(self) -> StreamResult:
        """The assembled :class:`~streamfsm.StreamResult`, once the stream has been read to its end and checked;
        ``ValueError`` before that, or after a failure (:meth:`snapshot` says what came)."""
        return self._check.result

    def snapshot(self) -> Snapshot:
        """The stream so far (:meth:`streamfsm.StreamAssembler.snapshot`): what came before an early stop or an
        error."""
        return self._check.snapshot()


class Checked(_Face[Iterable[T]], Generic[T]):
    """An SDK's stream, each of its objects yielded unchanged once checked (see :func:`checked`).

    Read once. A context manager: leaving the ``with`` block (or :meth:`close`) closes the SDK's stream, as does
    stopping early (``break``: the generator reading it is finalised), an error, and the end.
    """

    __slots__ = ()

    def __iter__(self) -> Iterator[T]:
        reading: Iterator[T] | None = self._reader()
        return iter(()) if reading is None else reading  # nothing once read (or closed)

    def _read(self, stream: Iterable[T]) -> Generator[T, None, None]:
        check = self._check
        iterator = iter(stream)
        try:
            for item in iterator:
                check.feed(item)
                yield item
            check.end()
        except BaseException:
            _close(iterator, stream, quietly=True)
            raise
        _close(iterator, stream)

    def close(self) -> None:
        """Stop reading and close the SDK's stream (if it has ``close()``); idempotent."""
        self._shut(quietly=False)

    def _shut(self, *, quietly: bool) -> None:
        self._started = True
        reading = self._reading() if self._reading is not None else None
        if reading is not None:
            reading.close()
        _close(self._stream, self._stream, quietly=quietly)

    def __enter__(self) -> Checked[T]:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._shut(quietly=kind is not None)  # what closing raises does not hide the exception on its way out


class AsyncChecked(_Face[AsyncIterable[T]], Generic[T]):
    """:class:`Checked` for an async stream: ``async for``, ``async with``, :meth:`aclose`.

    Stopping early without ``async with`` closes the SDK's stream when the event loop finalises the async generator
    that reads it (soon, not at once); ``async with`` (or :meth:`aclose`) closes it at once.
    """

    __slots__ = ()

    def __aiter__(self) -> AsyncIterator[T]:
        reading: AsyncIterator[T] | None = self._reader()
        return _nothing() if reading is None else reading  # nothing once read (or closed)

    async def _read(self, stream: AsyncIterable[T]) -> AsyncGenerator[T, None]:
        check = self._check
        iterator = aiter(stream)
        try:
            async for item in iterator:
                check.feed(item)
                yield item
            check.end()
        except BaseException:
            await _aclose(iterator, stream, quietly=True)
            raise
        await _aclose(iterator, stream)

    async def aclose(self) -> None:
        """Stop reading and close the SDK's stream (its ``aclose()`` or ``close()``); idempotent."""
        await self._shut(quietly=False)

    async def _shut(self, *, quietly: bool) -> None:
        self._started = True
        reading = self._reading() if self._reading is not None else None
        if reading is not None:
            await reading.aclose()
        await _aclose(self._stream, self._stream, quietly=quietly)

    async def __aenter__(self) -> AsyncChecked[T]:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._shut(quietly=kind is not None)


async def _nothing() -> AsyncGenerator[Any, None]:
    return
    yield  # an async generator that yields nothing


def _close(iterator: object, stream: object, *, quietly: bool = False) -> None:
    """Close the iterator (a generator's ``close()``) and the SDK's stream it came from, if they can be."""
    for closing in (iterator,) if iterator is stream else (iterator, stream):
        close = getattr(closing, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                if not quietly:
                    raise


async def _aclose(iterator: object, stream: object, *, quietly: bool = False) -> None:
    """:func:`_close` for an async stream: ``aclose()``, else ``close()`` (awaited when it gives an awaitable)."""
    for closing in (iterator,) if iterator is stream else (iterator, stream):
        close = getattr(closing, "aclose", None) or getattr(closing, "close", None)
        if callable(close):
            try:
                done = close()
                if inspect.isawaitable(done):
                    await done
            except Exception:
                if not quietly:
                    raise


@overload
def checked(
    stream: AsyncIterable[T], *, api: Api | None = None, policy: Policy | str = ..., limits: Limits | None = None
) -> AsyncChecked[T]: ...
@overload
def checked(
    stream: Iterable[T], *, api: Api | None = None, policy: Policy | str = ..., limits: Limits | None = None
) -> Checked[T]: ...
def checked(
    stream: Iterable[T] | AsyncIterable[T],
    *,
    api: Api | None = None,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> Checked[T] | AsyncChecked[T]:
    """Check an SDK's stream as it is read, passing its own objects on unchanged.

    ``stream``: what an SDK's streaming call returns, sync or async (an async one gives :class:`AsyncChecked`):
    ``openai`` chat completions' ``Stream[ChatCompletionChunk]`` (and LiteLLM's, of the same shape) and Responses'
    ``Stream[ResponseStreamEvent]``, or the streams of their ``.stream(...)`` helpers; ``anthropic``'s
    ``Stream[RawMessageStreamEvent]`` or the ``MessageStream`` of ``client.messages.stream(...)`` (the events such a
    helper adds, which repeat the API's, pass unread); ``google-genai``'s ``generate_content_stream(...)``; ``cohere``'s
    ``chat_stream(...)`` (v2); boto3's ``converse_stream(...)["stream"]``; or the same events as dicts. The wire
    API is told from the first object; ``api=`` names it (one of ``"openai-sse"`` (chat completions),
    ``"anthropic-sse"``, ``"openai-responses"``, ``"gemini"``, ``"bedrock"``, ``"cohere"``) when it cannot be.
    ``policy`` and ``limits``: as :func:`streamfsm.validate` takes them.

    Each object is converted (by the wire API's converter, as the ``from_...`` functions convert) and the chunks it
    completes are fed to the machine before the object is yielded: at the first broken rule, :class:`LlmError` is
    raised instead of yielding the object in hand, and the consumer has seen exactly the objects before it
    (``count`` of them). A converter completes some chunks only at a later event (a tool call whose arguments
    are not yet whole JSON, a block held back behind an open one, usage and the finish at the end), so a rule is
    broken at the object that completed the chunk that breaks it, which may come after the object that carried
    its content. What only the end can tell (no finish, usage missing under ``STRICT``, an empty response) is
    raised once the SDK's stream is over, after every object was yielded. An exception the SDK raises (its
    ``APIError``, botocore's ``EventStreamError``) passes through unchanged.

    Once the stream has been read to its end, ``.result`` is the assembled :class:`~streamfsm.StreamResult`. The
    SDK's stream is closed at the end, at an error, when the consumer stops early, and on leaving ``with`` (or
    ``async with``).
    """
    if isinstance(stream, AsyncIterable):
        return AsyncChecked(stream, api=api, policy=policy, limits=limits)
    if isinstance(stream, Iterable) and not isinstance(stream, Mapping | str | bytes):
        return Checked(stream, api=api, policy=policy, limits=limits)
    if isinstance(stream, Mapping) and "stream" in stream:
        hint = ": boto3's converse_stream() response holds it at ['stream']"
    elif hasattr(stream, "__enter__") or hasattr(stream, "__aenter__"):
        hint = ": this one is a context manager, enter it first (with client.messages.stream(...) as stream: ...)"
    else:
        hint = ""
    raise TypeError(f"checked() takes an SDK's stream (an iterable of its events), not a {type(stream).__name__}{hint}")

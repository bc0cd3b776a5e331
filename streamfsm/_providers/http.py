"""The HTTP layer of the provider adapters: one streamed POST within bounds, its failures as coded errors, and
ending it (an abort, a deadline).

Needs the ``http`` extra (``httpx``). Nothing here knows the block protocol: it yields server-sent events (parsed
by :mod:`.sse`) and maps what goes wrong to the codes of SPEC §3 (:mod:`.classify` says which). Every read is
bounded: the body is read raw and its content coding undone a step at a time (:mod:`.body`); an event holds at
most ``max_event_bytes``; an error body is read up to :data:`MAX_ERROR_BODY` bytes, no further. Redirects are never
followed, whatever the client says: the credentials stay with the configured host.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import httpx
import orjson

from .._abort import AbortSignal
from .._errors import ErrorCode, LlmError
from .body import BodyDecoder
from .classify import clip, http_failure, request_id, retry_after_ms
from .convert import event_object
from .sse import DEFAULT_MAX_EVENT_BYTES, SSEEvent, SSEParser, parse_sse

__all__ = ["DEFAULT_TIMEOUT", "MAX_ERROR_BODY", "post_sse", "read_sse", "request_json"]

T = TypeVar("T")

#: Connect within 10 s; then wait up to 5 minutes between two reads (reasoning models think in silence).
DEFAULT_TIMEOUT = httpx.Timeout(300.0, connect=10.0)


#: The most of an error body that is read, decoded: past it the body is not read at all (the message keeps less).
MAX_ERROR_BODY = 64 * 1024
#: The most of a redirect's ``location`` an error message shows.
_SHOWN_LOCATION = 200


async def _http_error(response: httpx.Response, guard: _Guard, who: str) -> LlmError:
    """The coded error of a status ≥ 300, its body read up to :data:`MAX_ERROR_BODY` (abort and deadline honoured)."""
    status = response.status_code
    if status < 400:
        location = clip(response.headers.get("location", ""), _SHOWN_LOCATION)
        return LlmError(
            f"{who}: HTTP {status}: the provider redirects to {location!r}; redirects are not followed, so that the "
            "credentials never leave the configured host (configure the new address instead)",
            ErrorCode.PROVIDER_HTTP_ERROR,
            status=status,
            retry_after_ms=retry_after_ms(response.headers),
            request_id=request_id(response.headers),
        )
    note = ""
    try:
        body, more = await _read(response, guard, MAX_ERROR_BODY)
        if more:
            note = f" (the body is longer than {MAX_ERROR_BODY:,} bytes: the rest was not read)"
    except httpx.HTTPError as exc:  # the status says more than the failure to read its explanation
        body, note = b"", f" (its body could not be read: {type(exc).__name__})"
    except LlmError as exc:
        if exc.code != ErrorCode.MALFORMED_RESPONSE:
            raise  # aborted, or past the deadline
        body, note = b"", " (its body could not be decoded)"
    return http_failure(who, status, response.headers, body, response.reason_phrase, note)


async def _read(response: httpx.Response, guard: _Guard, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` decoded bytes of the body, and whether it held more (then the rest is not read)."""
    decoder = BodyDecoder(response.headers.get("content-encoding"))
    kept = bytearray()
    raw = response.aiter_raw()
    while True:
        chunk: bytes | None = await guard.run(anext(raw, None))
        for piece in decoder.end() if chunk is None else decoder.decode(chunk):
            room = limit - len(kept)
            if len(piece) > room:
                kept += piece[:room]
                return bytes(kept), True
            kept += piece
            guard.check()
        if chunk is None:
            return bytes(kept), False


def _transport_error(exc: httpx.HTTPError, who: str) -> LlmError:
    name = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return LlmError(f"{who}: timed out ({name}: {exc})", ErrorCode.TIMEOUT)
    if isinstance(exc, httpx.LocalProtocolError | httpx.UnsupportedProtocol):  # ours: sending again cannot help
        return LlmError(f"{who}: the request could not be sent ({name}: {exc})", ErrorCode.INVALID_REQUEST)
    if isinstance(exc, httpx.DecodingError):
        return LlmError(f"{who}: the response could not be decoded ({name}: {exc})", ErrorCode.MALFORMED_RESPONSE)
    return LlmError(f"{who}: connection failed ({name}: {exc})", ErrorCode.TRANSPORT)


def _nothing() -> None:
    return None


class _Guard:
    """Ends a request when its :class:`AbortSignal` aborts or its deadline passes.

    While the request awaits the network the consuming task is cancelled (and the cancellation turned into the
    ``LlmError``: ``ABORTED``, or ``TIMEOUT`` for the deadline); while it is suspended at a ``yield`` the response
    is closed and the next step raises. No task is created per event: the signal's listener and one timer do the
    work. :meth:`check` also reads the signal and the clock, because a loop whose reads never suspend (a fast
    local body) gives neither a turn.
    """

    def __init__(self, signal: AbortSignal | None, deadline: float | None = None, who: str = "") -> None:
        self.signal = signal
        self.who = who
        self.deadline = deadline
        self.loop = asyncio.get_running_loop()
        self.task: asyncio.Task[Any] | None = None
        self.inside = False
        self.ended: Callable[[], LlmError] | None = None  # why the request was ended, once it was
        self.response: httpx.Response | None = None
        self.closing: asyncio.Task[None] | None = None
        self.watching = signal is not None or deadline is not None
        self.expires = None if deadline is None else self.loop.time() + deadline
        self.timer = None if self.expires is None else self.loop.call_at(self.expires, self._end, self._timeout)
        self.remove: Callable[[], None] = _nothing if signal is None else signal.add_listener(self._listener)

    def _timeout(self) -> LlmError:
        return LlmError(f"{self.who}: the deadline of {self.deadline:g} s passed", ErrorCode.TIMEOUT)

    def _aborted(self) -> LlmError:
        assert self.signal is not None
        return self.signal.error()

    def _listener(self) -> None:
        # A request whose event loop is gone has nothing left to tear down; abort() must not fail for it.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._end, self._aborted)

    def _end(self, why: Callable[[], LlmError]) -> None:
        if self.ended is not None:
            return
        self.ended = why
        if self.inside and self.task is not None:
            self.task.cancel()
        elif self.response is not None:
            self.closing = self.loop.create_task(self.response.aclose())

    def check(self) -> None:
        """Raise the ``LlmError`` that ends the request, if it was aborted or is past its deadline."""
        if not self.watching:
            return
        if self.ended is not None:
            raise self.ended()
        if self.signal is not None and self.signal.aborted:
            raise self.signal.error()
        if self.expires is not None and self.loop.time() >= self.expires:
            raise self._timeout()

    async def run(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``, ended at once by an abort or the deadline."""
        if not self.watching:
            return await awaitable
        try:
            self.check()
        except LlmError:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise
        self.task = asyncio.current_task()
        self.inside = True
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self.ended is not None and self.task is not None and self.task.uncancel() == 0:
                raise self.ended() from None
            raise
        finally:
            self.inside = False

    async def release(self, response: httpx.Response | None) -> None:
        """The request is over: stop watching, close ``response`` (if one came), and wait for a close an abort or the
        deadline began."""
        self.close()
        if response is not None:
            await response.aclose()
        if self.closing is not None:
            await self.closing

    def close(self) -> None:
        """The request is over: no listener, no timer, nothing left to close."""
        self.remove()
        if self.timer is not None:
            self.timer.cancel()
        self.response = None  # an abort that comes now has nothing to close


def _check_event_stream(response: httpx.Response, who: str) -> None:
    media = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media != "text/event-stream":
        raise LlmError(
            f"{who}: the response is not an event stream: Content-Type {clip(media, 80)!r}, not 'text/event-stream'",
            ErrorCode.MALFORMED_RESPONSE,
        )


async def post_sse(
    client: httpx.AsyncClient | None,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    signal: AbortSignal | None,
    who: str,
    end: str | None,
    timeout: httpx.Timeout | float | None = None,
    deadline: float | None = None,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncGenerator[Mapping[str, Any], None]:
    """POST ``body`` as JSON and yield the data of each server-sent event: a JSON object.

    The stream ends at the event whose data is ``end`` (OpenAI's ``[DONE]``); a body that ends before it raises
    ``STREAM_CLOSED``, so a provider whose last event is an object of its own stops iterating there. ``end=None``
    is an API without an end marker (Gemini): the body's end ends the stream, and the converter says whether the
    response was complete. Without a
    ``client``, one is opened (with ``timeout``, else :data:`DEFAULT_TIMEOUT`) and closed at the end; a client's
    ``follow_redirects`` is overridden: a redirect is an error. ``deadline`` (seconds) bounds the whole request,
    from sending it to the last event.

    Raises :class:`LlmError`: the status codes of SPEC §3 (with ``status``, ``retry_after_ms``, ``request_id``;
    a 3xx is ``PROVIDER_HTTP_ERROR``), ``MALFORMED_RESPONSE`` for a success that is not an event stream, an event
    that is not a JSON object or a content coding that is broken or unknown, ``LIMIT_EXCEEDED`` for an event past
    ``max_event_bytes``, ``TRANSPORT``/``TIMEOUT`` for the connection (``TIMEOUT`` also past the deadline),
    ``ABORTED`` when ``signal`` aborts. The response is closed however the iteration ends.
    """
    guard = _Guard(signal, deadline, who)
    response: httpx.Response | None = None
    async with _client(client, timeout) as http:
        try:
            request = http.build_request("POST", url, headers=dict(headers), content=orjson.dumps(body))
            response = await guard.run(http.send(request, stream=True, follow_redirects=False))
            guard.response = response
            if response.status_code >= 300:
                raise await _http_error(response, guard, who)
            _check_event_stream(response, who)
            decoder = BodyDecoder(response.headers.get("content-encoding"))
            parser = SSEParser(max_event_bytes)
            raw = response.aiter_raw()
            while True:
                chunk: bytes | None = await guard.run(anext(raw, None))
                for piece in decoder.end() if chunk is None else decoder.decode(chunk):
                    for event in parser.feed(piece):
                        if event.data == end:
                            return
                        yield event_object(event.data, who)
                        guard.check()
                    guard.check()
                if chunk is None:  # an event left without its blank line is dropped, as the standard says
                    if end is None:
                        return
                    raise LlmError(f"{who}: the stream ended without {end}", ErrorCode.STREAM_CLOSED)
        except httpx.HTTPError as exc:
            raise _transport_error(exc, who) from exc
        finally:
            await guard.release(response)


async def request_json(
    client: httpx.AsyncClient | None,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    who: str,
    timeout: httpx.Timeout | float | None = None,
    deadline: float | None = None,
    max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    body: Mapping[str, Any] | None = None,
) -> Any:
    """One request whose answer is JSON of at most ``max_bytes`` (model listings, a non-streamed answer;
    ``LIMIT_EXCEEDED`` past it), with ``body`` sent as JSON if given; the client, redirects, the deadline and
    failures as in :func:`post_sse`."""
    guard = _Guard(None, deadline, who)
    response: httpx.Response | None = None
    async with _client(client, timeout) as http:
        try:
            content = None if body is None else orjson.dumps(body)
            request = http.build_request(method, url, headers=dict(headers), content=content)
            response = await guard.run(http.send(request, stream=True, follow_redirects=False))
            if response.status_code >= 300:
                raise await _http_error(response, guard, who)
            answer, more = await _read(response, guard, max_bytes)
        except httpx.HTTPError as exc:
            raise _transport_error(exc, who) from exc
        finally:
            await guard.release(response)
    if more:
        raise LlmError(f"{who}: the response is longer than {max_bytes:,} bytes", ErrorCode.LIMIT_EXCEEDED)
    try:
        return orjson.loads(answer)
    except orjson.JSONDecodeError as exc:
        raise LlmError(f"{who}: the response is not JSON: {exc}", ErrorCode.MALFORMED_RESPONSE) from exc


@contextlib.asynccontextmanager
async def _client(
    client: httpx.AsyncClient | None, timeout: httpx.Timeout | float | None
) -> AsyncIterator[httpx.AsyncClient]:
    """The caller's client as it is, or a client of our own that is closed at the end."""
    if client is not None:
        yield client
        return
    async with httpx.AsyncClient(timeout=DEFAULT_TIMEOUT if timeout is None else timeout) as own:
        yield own


def read_sse(data: bytes) -> list[SSEEvent]:
    """The server-sent events of a recorded body, parsed by the same parser as live responses.

    A recording whose last event lacks its closing blank line (as files often do) keeps that event: the end
    of the file ends it.
    """
    return parse_sse(data)

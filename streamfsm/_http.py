"""The HTTP layer of the provider adapters: one streamed POST, its failures as coded errors, and aborting it.

Needs the ``http`` extra (``httpx`` and ``httpx-sse``). Nothing here knows the block protocol: it yields
server-sent events and maps what goes wrong to the codes of SPEC §3.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import email.utils
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

import httpx
import orjson
from httpx_sse import EventSource, ServerSentEvent, SSEError

from ._abort import AbortSignal
from ._convert import MAX_COUNT, classify_failure, error_detail, event_object
from ._errors import ErrorCode, LlmError

__all__ = ["DEFAULT_TIMEOUT", "post_sse", "read_sse", "request_json", "retry_after_ms"]

T = TypeVar("T")

#: Connect within 10 s; then wait up to 5 minutes between two reads (reasoning models think in silence).
DEFAULT_TIMEOUT = httpx.Timeout(300.0, connect=10.0)


def retry_after_ms(headers: httpx.Headers) -> int | None:
    """The delay a provider asks for: ``retry-after-ms``, or ``retry-after`` in seconds or as an HTTP date.

    A value that is no delay (negative, not a number) is ignored; one past the protocol's integers is capped.
    """
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        delay = _number(raw_ms)
        if delay is not None:
            return min(int(delay), MAX_COUNT)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _number(raw)
    if seconds is None:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # "-0000": UTC, the sender's own zone unknown (RFC 5322 §3.3)
            when = when.replace(tzinfo=datetime.UTC)
        seconds = max(0.0, when.timestamp() - time.time())
    return min(int(seconds * 1000), MAX_COUNT)


def _number(text: str) -> float | None:
    """A finite number ≥ 0, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 <= value < math.inf else None  # NaN fails both tests


def request_id(headers: httpx.Headers) -> str | None:
    """The provider's id of the request, for support tickets."""
    value = headers.get("x-request-id") or headers.get("request-id")
    return str(value) if value else None


def _http_error(response: httpx.Response, body: bytes, who: str) -> LlmError:
    try:
        parsed: object = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    message, kind = error_detail(parsed)
    if not message:
        message = body.decode("utf-8", "replace").strip()[:500] or response.reason_phrase
    code = classify_failure(response.status_code, message, kind)
    return LlmError(
        f"{who}: HTTP {response.status_code}: {message}",
        code,
        status=response.status_code,
        retry_after_ms=retry_after_ms(response.headers),
        request_id=request_id(response.headers),
    )


def _transport_error(exc: httpx.HTTPError, who: str) -> LlmError:
    if isinstance(exc, httpx.TimeoutException):
        return LlmError(f"{who}: timed out ({type(exc).__name__}: {exc})", ErrorCode.TIMEOUT)
    return LlmError(f"{who}: connection failed ({type(exc).__name__}: {exc})", ErrorCode.TRANSPORT)


def _nothing() -> None:
    return None


class _Guard:
    """Tears a request down when its :class:`AbortSignal` aborts.

    While the stream awaits the network the consuming task is cancelled (and the cancellation turned into
    ``LlmError(ABORTED)``); while it is suspended at a ``yield`` the response is closed and the next step
    raises. No task is created per event: the signal's listener does the work.
    """

    def __init__(self, signal: AbortSignal | None) -> None:
        self.signal = signal
        self.loop = asyncio.get_running_loop()
        self.task: asyncio.Task[Any] | None = None
        self.inside = False
        self.fired = False
        self.response: httpx.Response | None = None
        self.closing: asyncio.Task[None] | None = None
        self.remove: Callable[[], None] = _nothing if signal is None else signal.add_listener(self._listener)

    def _listener(self) -> None:
        # A request whose event loop is gone has nothing left to tear down; abort() must not fail for it.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._abort)

    def _abort(self) -> None:
        self.fired = True
        if self.inside and self.task is not None:
            self.task.cancel()
        elif self.response is not None:
            self.closing = self.loop.create_task(self.response.aclose())

    async def run(self, awaitable: Awaitable[T]) -> T:
        signal = self.signal
        if signal is None:
            return await awaitable
        if self.fired or signal.aborted:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise signal.error()
        self.task = asyncio.current_task()
        self.inside = True
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self.fired and self.task is not None and self.task.uncancel() == 0:
                raise signal.error() from None
            raise
        finally:
            self.inside = False


async def post_sse(
    client: httpx.AsyncClient | None,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    signal: AbortSignal | None,
    who: str,
    end: str,
    timeout: httpx.Timeout | float | None = None,
) -> AsyncGenerator[Mapping[str, Any], None]:
    """POST ``body`` as JSON and yield the data of each server-sent event: a JSON object.

    The stream ends at the event whose data is ``end`` (OpenAI's ``[DONE]``); a body that ends before it raises
    ``STREAM_CLOSED``, so a provider whose last event is an object of its own stops iterating there. Without a
    ``client``, one is opened (with ``timeout``, else :data:`DEFAULT_TIMEOUT`) and closed at the end.

    Raises :class:`LlmError`: the status codes of SPEC §3 (with ``status``, ``retry_after_ms``, ``request_id``),
    ``MALFORMED_RESPONSE`` for a success that is not an event stream or an event that is not a JSON object,
    ``TRANSPORT``/``TIMEOUT`` for the connection, ``ABORTED`` when ``signal`` aborts. The response is closed
    however the iteration ends.
    """
    guard = _Guard(signal)
    response: httpx.Response | None = None
    async with _client(client, timeout) as http:
        try:
            request = http.build_request("POST", url, headers=dict(headers), content=orjson.dumps(body))
            response = await guard.run(http.send(request, stream=True))
            guard.response = response
            if response.status_code >= 300:
                raise _http_error(response, await guard.run(response.aread()), who)
            events = EventSource(response).aiter_sse()
            while True:
                event: ServerSentEvent | None = await guard.run(anext(events, None))
                if event is None:
                    raise LlmError(f"{who}: the stream ended without {end}", ErrorCode.STREAM_CLOSED)
                if event.data == end:
                    return
                if event.data:
                    yield event_object(event.data, who)
        except SSEError as exc:  # a subclass of httpx.TransportError: first
            raise LlmError(f"{who}: {exc}", ErrorCode.MALFORMED_RESPONSE) from exc
        except httpx.HTTPError as exc:
            raise _transport_error(exc, who) from exc
        finally:
            guard.remove()
            guard.response = None  # an abort that comes now has nothing to close
            if response is not None:
                await response.aclose()
            if guard.closing is not None:
                await guard.closing


async def request_json(
    client: httpx.AsyncClient | None,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    who: str,
    timeout: httpx.Timeout | float | None = None,
) -> Any:
    """One request whose answer is JSON (model listings); the client and failures as in :func:`post_sse`."""
    async with _client(client, timeout) as http:
        try:
            response = await http.request(method, url, headers=dict(headers))
        except httpx.HTTPError as exc:
            raise _transport_error(exc, who) from exc
    if response.status_code >= 300:
        raise _http_error(response, response.content, who)
    try:
        return orjson.loads(response.content)
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


def read_sse(data: bytes) -> Iterator[ServerSentEvent]:
    """The server-sent events of a recorded body, parsed by the same parser as live responses.

    A recording whose last event lacks its closing blank line (as files often do) keeps that event: the end
    of the file ends it.
    """
    if not data.endswith((b"\n\n", b"\r\n\r\n")):
        data += b"\n\n"
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)
    return EventSource(response).iter_sse()

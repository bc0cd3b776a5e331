"""The HTTP layer of the provider adapters: one streamed POST, its failures as coded errors, and aborting it.

Needs the ``http`` extra (``httpx`` and ``httpx-sse``). Nothing here knows the block protocol: it yields
server-sent events and maps what goes wrong to the codes of SPEC §3.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

import httpx
import orjson
from httpx_sse import EventSource, ServerSentEvent, SSEError

from ._abort import AbortSignal
from ._convert import classify_failure, error_detail
from ._errors import ErrorCode, LlmError

__all__ = ["DEFAULT_TIMEOUT", "ClientScope", "post_sse", "read_sse", "request_json", "retry_after_ms"]

T = TypeVar("T")

#: Connect within 10 s; then wait up to 5 minutes between two reads (reasoning models think in silence).
DEFAULT_TIMEOUT = httpx.Timeout(300.0, connect=10.0)


def retry_after_ms(headers: httpx.Headers) -> int | None:
    """The delay a provider asks for: ``retry-after-ms``, or ``retry-after`` in seconds or as an HTTP date."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = -1.0
        if value >= 0 and value == value and value != float("inf"):
            return int(value)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds or seconds == float("inf"):
        return None
    return max(0, int(seconds * 1000))


def request_id(headers: httpx.Headers) -> str | None:
    """The provider's id of the request, for support tickets."""
    value = headers.get("x-request-id") or headers.get("request-id")
    return str(value) if value else None


def _http_error(response: httpx.Response, body: bytes, who: str) -> LlmError:
    try:
        parsed: object = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    message, detail = error_detail(parsed)
    if not message:
        message = body.decode("utf-8", "replace").strip()[:500] or response.reason_phrase
    code = classify_failure(response.status_code, detail or message)
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
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    signal: AbortSignal | None,
    who: str,
) -> AsyncIterator[ServerSentEvent]:
    """POST ``body`` as JSON and yield the response's server-sent events.

    Raises :class:`LlmError`: the status codes of SPEC §3 (with ``status``, ``retry_after_ms``, ``request_id``),
    ``MALFORMED_RESPONSE`` for a success that is not an event stream, ``TRANSPORT``/``TIMEOUT`` for the
    connection, ``ABORTED`` when ``signal`` aborts. The response is closed however the iteration ends.
    """
    guard = _Guard(signal)
    response: httpx.Response | None = None
    try:
        request = client.build_request("POST", url, headers=dict(headers), content=orjson.dumps(body))
        response = await guard.run(client.send(request, stream=True))
        guard.response = response
        if response.status_code >= 300:
            raise _http_error(response, await guard.run(response.aread()), who)
        events = EventSource(response).aiter_sse()
        while True:
            event: ServerSentEvent | None = await guard.run(anext(events, None))
            if event is None:
                return
            yield event
    except SSEError as exc:  # a subclass of httpx.TransportError: first
        raise LlmError(f"{who}: {exc}", ErrorCode.MALFORMED_RESPONSE) from exc
    except httpx.HTTPError as exc:
        raise _transport_error(exc, who) from exc
    finally:
        guard.remove()
        if response is not None:
            await response.aclose()
        if guard.closing is not None:
            await guard.closing


async def request_json(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    who: str,
) -> Any:
    """One request whose answer is JSON (model listings); failures as in :func:`post_sse`."""
    try:
        response = await client.request(method, url, headers=dict(headers))
    except httpx.HTTPError as exc:
        raise _transport_error(exc, who) from exc
    if response.status_code >= 300:
        raise _http_error(response, response.content, who)
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise LlmError(f"{who}: the response is not JSON: {exc}", ErrorCode.MALFORMED_RESPONSE) from exc


class ClientScope:
    """The caller's client as it is, or a client of our own that is closed at the end."""

    def __init__(self, client: httpx.AsyncClient | None, timeout: httpx.Timeout | float | None) -> None:
        self.given = client
        self.timeout = timeout
        self.own: httpx.AsyncClient | None = None

    async def __aenter__(self) -> httpx.AsyncClient:
        if self.given is not None:
            return self.given
        self.own = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT if self.timeout is None else self.timeout)
        return self.own

    async def __aexit__(self, *_: object) -> None:
        if self.own is not None:
            await self.own.aclose()


def read_sse(data: bytes) -> Iterator[ServerSentEvent]:
    """The server-sent events of a recorded body, parsed by the same parser as live responses.

    A recording whose last event lacks its closing blank line (as files often do) keeps that event: the end
    of the file ends it.
    """
    if not data.endswith((b"\n\n", b"\r\n\r\n")):
        data += b"\n\n"
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)
    return EventSource(response).iter_sse()

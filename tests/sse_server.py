"""A real HTTP server on 127.0.0.1 for the adapter tests: scripted responses, recorded requests.

No mock of httpx: the adapters talk to this server over a socket. Script what the next requests get, in order::

    with SSEServer() as server:
        server.script(SSE(openai_events(chunks)), Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "2"}))
        adapter = sf.OpenAICompatibleAdapter(server.url)
        ...
        server.requests[0].json()  # what the adapter sent

Responses:

- ``SSE(events, delay=0.0, end="close")``: ``200 text/event-stream`` with chunked encoding, one chunk per event
  (each event is the raw text of one SSE event, e.g. ``"data: {...}"``), ``delay`` seconds before each event.
  ``end="close"`` finishes the body properly; ``end="drop"`` cuts the connection without the final chunk (a
  connection dropped mid-stream).
- ``Reply(status, body, headers, delay=0.0)``: a complete response (``body`` a dict is sent as JSON), ``delay``
  seconds before its status line.
- ``Raw(pieces)``: the response byte for byte, status line and framing included (a float among the pieces is a
  pause, in seconds); the connection is closed after the last piece. ``pieces`` may be a generator, consumed
  once: a body of any size is made while it is written. ``head(status, headers)`` and ``chunked(pieces)`` help
  build one; anything else (broken framing, broken compression) is the test's to write.

A request with nothing scripted gets what ``server.answer(request)`` returns, when it is set (a function of the
:class:`Recorded` request: a server that answers by what is asked), else ``599``. ``server.disconnects`` records
when the server noticed a client had gone while it was still writing; ``server.active`` counts requests being
answered right now.

A client that hangs up (a reset, a broken pipe: what the tests that stop reading early do) is no error of the
server's, and prints nothing (``socketserver`` prints a traceback by default, from the server's thread, which lands
in the middle of the test run's output). Any other exception a request raises is kept in ``server.errors`` and
raised when the ``with`` block ends without an exception of its own: a bug of the handler is not hidden.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import orjson

__all__ = [
    "SSE",
    "Raw",
    "Recorded",
    "Reply",
    "SSEServer",
    "anthropic_events",
    "chunked",
    "head",
    "openai_body",
    "openai_events",
]


@dataclass
class SSE:
    """A scripted event-stream response."""

    events: list[str]
    delay: float = 0.0
    end: Literal["close", "drop"] = "close"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Reply:
    """A scripted complete response."""

    status: int
    body: Any = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Raw:
    """A scripted response written as it is: bytes, with pauses (floats, in seconds) between them."""

    pieces: Iterable[bytes | float]


def head(status: int, headers: Mapping[str, str] | None = None) -> bytes:
    """A status line and headers, up to the blank line that ends them."""
    lines = [f"HTTP/1.1 {status} Scripted", *(f"{name}: {value}" for name, value in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunked(pieces: Iterable[bytes | float], *, last: bool = True) -> Iterator[bytes | float]:
    """``pieces`` in chunked transfer coding, one chunk each (pauses passed through), then the last chunk."""
    for piece in pieces:
        if isinstance(piece, float):
            yield piece
        elif piece:
            yield b"%x\r\n%s\r\n" % (len(piece), piece)
    if last:
        yield b"0\r\n\r\n"


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The request body, parsed."""
        return orjson.loads(self.body)


def openai_events(chunks: Iterable[Mapping[str, Any]], *, done: bool = True) -> list[str]:
    """``data:`` events of chat.completion.chunk objects, then ``data: [DONE]`` unless ``done=False``."""
    events = [f"data: {orjson.dumps(chunk).decode()}" for chunk in chunks]
    return [*events, "data: [DONE]"] if done else events


def openai_body(chunks: Iterable[Mapping[str, Any]], *, done: bool = True) -> bytes:
    """The SSE body of :func:`openai_events`, as a server sends it and a recording holds it."""
    return b"".join(f"{event}\n\n".encode() for event in openai_events(chunks, done=done))


def chat_delta(**fields: Any) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with a delta of ``fields`` (for :func:`openai_events`)."""
    return {"id": "chatcmpl-1", "model": "deepseek-chat", "choices": [{"index": 0, "delta": fields}]}


def anthropic_events(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """``event:``/``data:`` pairs of Messages API events."""
    return [f"event: {event['type']}\ndata: {orjson.dumps(event).decode()}" for event in events]


def wait_for(condition: Callable[[], bool], seconds: float = 2.0) -> bool:
    """Whether ``condition()`` holds within ``seconds`` (polled): what the server notices comes a moment later."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


class SSEServer:
    """The server, run in a thread for the duration of a ``with`` block."""

    def __init__(self) -> None:
        self.queue: deque[SSE | Reply | Raw] = deque()
        #: What a request gets when nothing is queued (see the module's docstring).
        self.answer: Callable[[Recorded], SSE | Reply | Raw] | None = None
        self.requests: list[Recorded] = []
        self.disconnects: list[float] = []
        self.active = 0
        self.lock = threading.Lock()
        #: What requests raised, other than a client hanging up (see the module's docstring).
        self.errors: list[BaseException] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: object) -> None:
                return None

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                recorded = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server.lock:
                    server.requests.append(recorded)
                    response = server.queue.popleft() if server.queue else None
                    server.active += 1
                if response is None:
                    response = Reply(599, b"nothing scripted") if server.answer is None else server.answer(recorded)
                try:
                    if isinstance(response, Reply):
                        self._reply(response)
                    elif isinstance(response, Raw):
                        self._raw(response)
                    else:
                        self._stream(response)
                finally:
                    with server.lock:
                        server.active -= 1

            def _reply(self, reply: Reply) -> None:
                body = reply.body
                if isinstance(body, dict | list):
                    body = orjson.dumps(body)
                elif isinstance(body, str):
                    body = body.encode()
                time.sleep(reply.delay)
                self.send_response(reply.status)
                headers = {"content-type": "application/json", **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:  # the client went away before the whole body (it reads only so much)
                    with server.lock:
                        server.disconnects.append(time.monotonic())
                    self.close_connection = True

            def _raw(self, raw: Raw) -> None:
                self.close_connection = True
                try:
                    for piece in raw.pieces:
                        if isinstance(piece, float):
                            time.sleep(piece)
                        else:
                            self.wfile.write(piece)
                            self.wfile.flush()
                except OSError:  # the client went away
                    with server.lock:
                        server.disconnects.append(time.monotonic())
                finally:
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)

            def _stream(self, sse: SSE) -> None:
                self.send_response(200)
                for name, value in {"content-type": "text/event-stream", **sse.headers}.items():
                    self.send_header(name, value)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                try:
                    for event in sse.events:
                        if sse.delay:
                            time.sleep(sse.delay)
                        data = (event + "\n\n").encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    if sse.end == "drop":
                        self.close_connection = True
                        with contextlib.suppress(OSError):
                            self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:  # the client went away (broken pipe, reset, ...)
                    with server.lock:
                        server.disconnects.append(time.monotonic())
                    self.close_connection = True

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                error = sys.exc_info()[1]
                if error is not None and not isinstance(error, ConnectionError):
                    with server.lock:
                        server.errors.append(error)

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def script(self, *responses: SSE | Reply | Raw) -> None:
        """Queue the responses the next requests get, in order."""
        self.queue.extend(responses)

    def __enter__(self) -> SSEServer:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if kind is None and self.errors:
            raise AssertionError(f"the test server's requests raised: {self.errors!r}") from self.errors[0]

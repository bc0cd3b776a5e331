"""The probe's side of each wire API: one request streamed and the same one not, through the package's own
adapters, converters and non-streamed readers; every raw body captured for ``--record``.

:data:`WIRES` holds, per ``--api`` name, how to make its adapter, how to ask for a tool in its own form
(``tool_choice``, ``toolConfig``), where the streamed and the non-streamed request go, and which reader turns the
non-streamed body into a :class:`StreamResult`. :func:`stream_once` streams a request with every chunk through
the machine; :func:`answer_once` sends it non-streamed. Each opens its own HTTP client, whose transport keeps a
copy of the body as it is read (:class:`Capture`): what ``--record`` writes, decoded, byte for byte as the
server sent it.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ._adapter import GenerateOptions
from ._config import Policy
from ._errors import ErrorCode, LlmError
from ._machine import StreamAssembler
from ._models import StreamResult
from ._probe_cases import ProbeCase
from ._providers.base import HttpAdapter
from ._wire import StreamChunk

if TYPE_CHECKING:
    import httpx

    from ._providers.convert import Converter

__all__ = ["APIS", "WIRES", "Answered", "Capture", "Streamed", "Wire", "answer_once", "stream_once"]

#: The most of one body kept for ``--record`` (bytes, decoded); past it the recording is cut and says so.
MAX_RECORDED: Final = 64 * 1024 * 1024


@dataclass(frozen=True)
class Wire:
    """One wire API as the probe drives it."""

    #: The ``--api`` name.
    name: str
    #: The environment variable of its key, by default.
    key_env: str
    #: ``adapter(base_url, api_key, client, deadline)``.
    adapter: Callable[[str, str | None, httpx.AsyncClient, float | None], HttpAdapter]
    #: ``converter()``: the stream's converter.
    converter: Callable[[], Converter]
    #: ``paths(adapter, model)``: the streamed request's path, the non-streamed one's.
    paths: Callable[[HttpAdapter, str], tuple[str, str]]
    #: The data of the event that ends a stream (``[DONE]``), or None.
    end: str | None
    #: ``tool_choice(body, choice)``: ``body`` with the case's ``tool_choice`` in the API's own form.
    tool_choice: Callable[[dict[str, Any], str], None]
    #: ``non_streamed(body)``: the streamed body made a non-streamed one.
    non_streamed: Callable[[dict[str, Any]], dict[str, Any]]
    #: The name of its non-streamed reader in :mod:`streamfsm._providers`.
    reader: str

    def read(self, body: Any) -> StreamResult:
        """The non-streamed answer ``body`` read as a result (the wire API's reader)."""
        from . import _providers

        reader: Callable[[Any], StreamResult] = getattr(_providers, self.reader)
        return reader(body)


def _openai_chat(base_url: str, key: str | None, client: httpx.AsyncClient, deadline: float | None) -> HttpAdapter:
    from ._providers.openai_chat_adapter import OpenAICompatibleAdapter

    return OpenAICompatibleAdapter(base_url, api_key=key, client=client, deadline=deadline, provider=PROVIDER)


def _anthropic(base_url: str, key: str | None, client: httpx.AsyncClient, deadline: float | None) -> HttpAdapter:
    from ._providers.anthropic_messages_adapter import AnthropicAdapter

    return AnthropicAdapter(base_url=base_url, api_key=key, client=client, deadline=deadline, provider=PROVIDER)


def _responses(base_url: str, key: str | None, client: httpx.AsyncClient, deadline: float | None) -> HttpAdapter:
    from ._providers.openai_responses_adapter import OpenAIResponsesAdapter

    return OpenAIResponsesAdapter(base_url, api_key=key, client=client, deadline=deadline, provider=PROVIDER)


def _gemini(base_url: str, key: str | None, client: httpx.AsyncClient, deadline: float | None) -> HttpAdapter:
    from ._providers.gemini_adapter import GeminiAdapter

    return GeminiAdapter(base_url=base_url, api_key=key, client=client, deadline=deadline, provider=PROVIDER)


#: The adapters' provider name: what their errors begin with.
PROVIDER: Final = "probe"


def _converter(module: str, name: str) -> Callable[[], Converter]:
    def make() -> Converter:
        from importlib import import_module

        made: Converter = getattr(import_module(f"streamfsm._providers.{module}"), name)()
        return made

    return make


def _openai_choice(body: dict[str, Any], choice: str) -> None:
    named = {"type": "function", "function": {"name": choice}}
    body["tool_choice"] = choice if choice in ("auto", "required") else named


def _anthropic_choice(body: dict[str, Any], choice: str) -> None:
    body["tool_choice"] = {"auto": {"type": "auto"}, "required": {"type": "any"}}.get(
        choice, {"type": "tool", "name": choice}
    )


def _responses_choice(body: dict[str, Any], choice: str) -> None:
    body["tool_choice"] = choice if choice in ("auto", "required") else {"type": "function", "name": choice}


def _gemini_choice(body: dict[str, Any], choice: str) -> None:
    config: dict[str, Any] = {"mode": "AUTO" if choice == "auto" else "ANY"}
    if choice not in ("auto", "required"):
        config["allowedFunctionNames"] = [choice]
    body["toolConfig"] = {"functionCallingConfig": config}


def _not_streamed(body: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in body.items() if key != "stream_options"}
    out["stream"] = False
    return out


def _gemini_paths(adapter: HttpAdapter, model: str) -> tuple[str, str]:
    streamed: str = adapter.path(model)  # type: ignore[attr-defined]
    return streamed, streamed.replace(":streamGenerateContent?alt=sse", ":generateContent")


WIRES: Final[Mapping[str, Wire]] = {
    wire.name: wire
    for wire in (
        Wire(
            "openai-chat",
            "OPENAI_API_KEY",
            _openai_chat,
            _converter("openai_chat", "OpenAIConverter"),
            lambda adapter, model: ("/chat/completions", "/chat/completions"),
            "[DONE]",
            _openai_choice,
            _not_streamed,
            "from_openai_completion",
        ),
        Wire(
            "anthropic",
            "ANTHROPIC_API_KEY",
            _anthropic,
            _converter("anthropic_messages", "AnthropicConverter"),
            lambda adapter, model: ("/v1/messages", "/v1/messages"),
            "message_stop",
            _anthropic_choice,
            _not_streamed,
            "from_anthropic_message",
        ),
        Wire(
            "openai-responses",
            "OPENAI_API_KEY",
            _responses,
            _converter("openai_responses", "OpenAIResponsesConverter"),
            lambda adapter, model: ("/responses", "/responses"),
            "response.completed",
            _responses_choice,
            _not_streamed,
            "from_openai_response",
        ),
        Wire(
            "gemini",
            "GEMINI_API_KEY",
            _gemini,
            _converter("gemini", "GeminiConverter"),
            _gemini_paths,
            None,
            _gemini_choice,
            dict,
            "from_gemini_response",
        ),
    )
}
#: The ``--api`` names.
APIS: Final = tuple(WIRES)


def options_of(case: ProbeCase, model: str) -> GenerateOptions:
    """The request of ``case`` to ``model``, as the adapters take it."""
    return GenerateOptions(
        model=model,
        messages=case.messages,
        system=case.system,
        tools=case.tools or None,
        temperature=case.temperature,
        max_tokens=case.max_tokens,
        reasoning_effort=case.reasoning_effort,
    )


def request_body(wire: Wire, adapter: HttpAdapter, case: ProbeCase, model: str) -> dict[str, Any]:
    """The streamed request's JSON body for ``case``: the adapter's, with the case's tool choice in the API's form.

    Raises the adapter's :class:`LlmError` for an option it cannot send (``UNSUPPORTED_REASONING_EFFORT``, ...).
    """
    body: dict[str, Any] = adapter.request_body(options_of(case, model))  # type: ignore[attr-defined]
    if case.tool_choice is not None:
        wire.tool_choice(body, case.tool_choice)
    return body


# -- capturing what the server sends ------------------------------------------------------------------


@dataclass
class Capture:
    """The body of one response, as read (raw: its content coding undone when written), up to :data:`MAX_RECORDED`;
    nothing of it unless ``keep`` (only ``--record`` keeps bodies)."""

    keep: bool = False
    status: int | None = None
    encoding: str | None = None
    pieces: list[bytes] = field(default_factory=list)
    size: int = 0
    cut: bool = False

    def add(self, piece: bytes) -> None:
        if not self.keep:
            return
        if self.size + len(piece) > MAX_RECORDED:
            self.cut = True
            return
        self.pieces.append(piece)
        self.size += len(piece)

    def decoded(self) -> bytes:
        """The body, its content coding undone (what a recording holds)."""
        from ._providers.body import BodyDecoder

        decoder = BodyDecoder(self.encoding)
        raw = b"".join(self.pieces)
        try:
            return b"".join([*decoder.decode(raw), *decoder.end()])
        except LlmError:  # a coding that cannot be undone: kept as it came
            return raw

    def save(self, path: Path) -> None:
        """Write the body to ``path`` (only a success's: an error's message is in the verdict)."""
        if self.status is None or not 200 <= self.status < 300 or not self.pieces:
            return
        path.write_bytes(self.decoded())


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS settings of every client the probe opens: made once (each costs tens of milliseconds)."""
    import httpx

    return httpx.create_ssl_context()


def _client(capture: Capture, timeout: float | None) -> httpx.AsyncClient:
    """An HTTP client whose responses' bodies are copied into ``capture`` as they are read."""
    import httpx

    class Copied(httpx.AsyncByteStream):
        def __init__(self, inner: httpx.AsyncByteStream) -> None:
            self.inner = inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for piece in self.inner:
                capture.add(piece)
                yield piece

        async def aclose(self) -> None:
            await self.inner.aclose()

    class Tee(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport(verify=_tls())

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await self.inner.handle_async_request(request)
            capture.status, capture.encoding = response.status_code, response.headers.get("content-encoding")
            assert isinstance(response.stream, httpx.AsyncByteStream)
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                stream=Copied(response.stream),
                extensions=response.extensions,
                request=request,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return httpx.AsyncClient(transport=Tee(), timeout=httpx.Timeout(timeout, connect=min(timeout or 10.0, 10.0)))


# -- one request --------------------------------------------------------------------------------------


@dataclass
class Endpoint:
    """Where the probe sends its requests, and how."""

    wire: Wire
    base_url: str
    model: str
    api_key: str | None = None
    #: Seconds a whole request may take (the adapters' ``deadline``); ``TIMEOUT`` past it.
    deadline: float | None = 120.0
    #: Seconds to connect (10 at most), and between two reads (None: the deadline bounds them).
    timeout: float | None = None
    #: Whether the bodies are kept, to be recorded.
    record: bool = False


@dataclass
class Streamed:
    """One streamed request: its result (None when it failed or was cut), its failure, and its timing."""

    result: StreamResult | None = None
    error: LlmError | None = None
    #: The failure was the machine's (a chunk broke a rule), not the connection's or the server's.
    protocol: bool = False
    chunks: int = 0
    first_chunk: float | None = None
    duration: float = 0.0
    capture: Capture = field(default_factory=Capture)


@dataclass
class Answered:
    """One non-streamed request: its answer read as a result, or its failure."""

    result: StreamResult | None = None
    error: LlmError | None = None
    capture: Capture = field(default_factory=Capture)


async def stream_once(endpoint: Endpoint, case: ProbeCase, *, stop_after: int | None = None) -> Streamed:
    """Stream ``case``, every chunk through the machine (``Policy.STRICT``); with ``stop_after``, close the stream
    after that many chunks (what a client that goes away does), and the result stays None."""
    out = Streamed(capture=Capture(endpoint.record))
    started = time.perf_counter()
    async with _client(out.capture, endpoint.timeout) as client:
        adapter = endpoint.wire.adapter(endpoint.base_url, endpoint.api_key, client, endpoint.deadline)
        try:
            body = request_body(endpoint.wire, adapter, case, endpoint.model)
        except LlmError as exc:
            out.error = exc
            return out
        path = endpoint.wire.paths(adapter, endpoint.model)[0]
        machine = StreamAssembler(Policy.STRICT)
        chunks: AsyncIterator[StreamChunk] = adapter._converted(
            endpoint.wire.converter(), path, body, None, endpoint.wire.end
        )
        try:
            while True:
                try:
                    chunk = await anext(chunks, None)
                except LlmError as exc:
                    out.error = exc
                    break
                if chunk is None:
                    out.result = machine.close()
                    break
                if out.first_chunk is None:
                    out.first_chunk = time.perf_counter() - started
                out.chunks += 1
                try:
                    machine.feed(chunk)
                except LlmError as exc:
                    out.error, out.protocol = exc, True
                    break
                if stop_after is not None and out.chunks >= stop_after:
                    break
        except LlmError as exc:  # the machine's close(): the stream ended before its finish
            out.error, out.protocol = exc, True
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
    out.duration = time.perf_counter() - started
    return out


async def answer_once(endpoint: Endpoint, case: ProbeCase) -> Answered:
    """Send ``case`` non-streamed and read the answer with the wire API's reader."""
    from ._providers.http import request_json

    out = Answered(capture=Capture(endpoint.record))
    async with _client(out.capture, endpoint.timeout) as client:
        adapter = endpoint.wire.adapter(endpoint.base_url, endpoint.api_key, client, endpoint.deadline)
        try:
            body = endpoint.wire.non_streamed(request_body(endpoint.wire, adapter, case, endpoint.model))
            path = endpoint.wire.paths(adapter, endpoint.model)[1]
            headers = {**adapter.request_headers(), "accept": "application/json"}
            answer = await request_json(
                client,
                "POST",
                f"{adapter.base_url}{path}",
                headers=headers,
                who=adapter.provider,
                deadline=endpoint.deadline,
                max_bytes=adapter.max_event_bytes,
                body=body,
            )
        except LlmError as exc:
            out.error = adapter._redacted(exc)
            return out
    try:
        out.result = endpoint.wire.read(answer)
    except LlmError as exc:
        out.error = exc
    except ValueError as exc:  # pydantic's, for a body outside the API's format
        out.error = LlmError(f"the non-streamed answer could not be read: {exc}", ErrorCode.MALFORMED_RESPONSE)
    return out


#: Codes of a failure that is the connection's or the server's, whatever chunk it came at (the verdict ``error``).
TRANSPORT_CODES: Final = frozenset(
    {
        ErrorCode.PROVIDER_HTTP_ERROR,
        ErrorCode.AUTH,
        ErrorCode.RATE_LIMIT,
        ErrorCode.SERVER,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.CONTEXT_WINDOW_EXCEEDED,
        ErrorCode.QUOTA,
        ErrorCode.TIMEOUT,
        ErrorCode.TRANSPORT,
        ErrorCode.ABORTED,
        ErrorCode.UNSUPPORTED_OPTION,
        ErrorCode.UNSUPPORTED_REASONING_EFFORT,
    }
)

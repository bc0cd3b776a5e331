"""The base of the provider adapters over HTTP: what each shares, so that a wire API's adapter says only its own.

:class:`HttpAdapter` holds the API root, the key, the declared models, the client, the bounds and the headers;
checks the key and headers before any request; redacts the secrets from every error; and runs one request
through a converter (:meth:`HttpAdapter._converted`). A wire API's adapter subclasses it: its constructor names
its own parameters and takes the shared ones as :class:`HttpSettings` (``**settings``), says how the key is sent
(:meth:`HttpAdapter.provider_headers`), builds the request body and implements ``stream``. Importing this
needs no ``httpx``: the request is made by :mod:`.http`, imported when a stream starts; constructing an adapter
without it raises ``ImportError`` naming the ``http`` extra.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from .._abort import AbortSignal
from .._adapter import (
    APP_IDENTITY,
    OPTIONAL_FIELDS,
    AppIdentity,
    LlmAdapter,
    ModelInfo,
    ProviderInfo,
    attribution_headers,
)
from .._errors import LlmError
from .._extras import require
from .._wire import StreamChunk
from .body import ACCEPT_ENCODING
from .secrets import Redactor, check_api_key, check_headers, is_secret_header, redacting
from .sse import DEFAULT_MAX_EVENT_BYTES

if TYPE_CHECKING:
    import httpx

    from .convert import Converter

__all__ = ["HttpAdapter", "HttpSettings"]


class HttpSettings(TypedDict, total=False):
    """The settings every adapter over HTTP takes, as keywords (``OpenAICompatibleAdapter(url, api_key=...)``).

    Each may be left out: the default is given with it.
    """

    #: The API key (default None: no key is sent). Refused at once, as ``AUTH``, if it cannot be sent.
    api_key: str | None
    #: The provider route's id, in ``provider_info`` and every model (default: the adapter's own, ``"gemini"``...).
    provider: str
    #: What the adapter knows of each model, reasoning efforts included (default: none; a model it does not list
    #: has no selectable effort).
    models: Sequence[ModelInfo]
    #: An ``httpx.AsyncClient`` to reuse connections (default None: each request opens and closes its own).
    client: httpx.AsyncClient | None
    #: Connect and per-read timeout of a request the adapter opens itself (default None: 10 s, 300 s).
    timeout: httpx.Timeout | float | None
    #: Seconds a whole request may take, from sending it to its last event (default None: no bound); ``TIMEOUT``.
    deadline: float | None
    #: The bound of one server-sent event or JSON answer, in bytes (default 16 MiB); ``LIMIT_EXCEEDED`` past it.
    max_event_bytes: int
    #: Headers sent with every request, last (default none). Refused at once, by name, if one cannot be sent.
    headers: Mapping[str, str] | None
    #: Who the application is, in the attribution headers (default: streamfsm's own).
    identity: AppIdentity


class HttpAdapter(LlmAdapter):
    """What the provider adapters over HTTP share: the API root, the key, the declared models, the client, headers.

    ``models`` declares what the adapter knows of each model, reasoning efforts included; a model it does not
    list has no selectable effort. Pass ``client`` (an ``httpx.AsyncClient``) to reuse connections; otherwise
    each request opens and closes its own, with ``timeout`` (connect, and each read). ``deadline`` (seconds, None
    for none) bounds a whole request, from sending it to its last event: past it the stream raises ``TIMEOUT``.
    ``max_event_bytes`` bounds one server-sent event (and a JSON answer): ``LIMIT_EXCEEDED`` past it. ``headers``
    are sent with every request, last. A key or header that cannot be sent is refused here, by name, never
    quoting it (``AUTH`` for the key, ``INVALID_REQUEST`` for a header), and again at each request; the key and
    credential headers are redacted from every error. A subclass implements :meth:`stream` and says how the key is
    sent (:meth:`provider_headers`).
    """

    supported_options = frozenset(OPTIONAL_FIELDS) - {"session_id"}
    #: The provider route's id when ``provider=`` is not given.
    default_provider: ClassVar[str] = "http"

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        provider: str | None = None,
        models: Sequence[ModelInfo] = (),
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float | None = None,
        deadline: float | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        headers: Mapping[str, str] | None = None,
        identity: AppIdentity = APP_IDENTITY,
    ) -> None:
        require("httpx", "http", type(self).__name__)  # here, not at the first request
        check_api_key(api_key)
        check_headers(headers or {})
        if deadline is not None and not deadline > 0:  # NaN fails too
            raise ValueError(f"deadline must be a number of seconds above 0, or None; got {deadline!r}")
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be at least 1, got {max_event_bytes!r}")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.provider = self.default_provider if provider is None else provider
        self.models = {model.id: model for model in models}
        self.client = client
        self.timeout = timeout
        self.deadline = deadline
        self.max_event_bytes = max_event_bytes
        self.headers = dict(headers or {})
        self.identity = identity

    @property
    def provider_info(self) -> ProviderInfo:
        """The provider route this adapter was configured as."""
        return ProviderInfo(id=self.provider, name=self.provider)

    async def resolve_model(self, model: str) -> ModelInfo:
        """The declared metadata of ``model``, or just its id."""
        return self.models.get(model) or ModelInfo(provider=self.provider, id=model, name=model)

    async def list_models(self) -> list[ModelInfo]:
        """The declared models, in the order given."""
        return list(self.models.values())

    def provider_headers(self) -> dict[str, str]:
        """The provider's own headers (how it takes the key); none by default."""
        return {}

    def request_headers(self) -> dict[str, str]:
        """Headers of every request: JSON in, events out (gzip or deflate), attribution, the provider's, then the
        caller's own. Raises ``AUTH`` or ``INVALID_REQUEST`` for a key or value that cannot be sent."""
        check_api_key(self.api_key)
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "accept-encoding": ACCEPT_ENCODING,
            **attribution_headers(self.identity),
            **self.provider_headers(),
            **self.headers,
        }
        check_headers(headers)
        return headers

    def _redactor(self) -> Redactor:
        """The redactor of the API key and the value of every credential header (as they are now)."""
        return Redactor([self.api_key, *(value for name, value in self.headers.items() if is_secret_header(name))])

    def _redacted(self, error: LlmError) -> LlmError:
        """``error`` without the API key or the value of any credential header (as they are now)."""
        return self._redactor().error(error)

    async def _converted(
        self, converter: Converter, path: str, body: Mapping[str, Any], signal: AbortSignal | None, end: str | None
    ) -> AsyncIterator[StreamChunk]:
        """POST ``body`` to ``{base_url}{path}`` and convert its events (see :func:`.http.post_sse`).

        The stream is over at ``end`` (an event's data, as OpenAI's ``[DONE]``) or once ``converter`` sent the
        ``finish`` (at the provider's own last event); a body that ends before either is ``STREAM_CLOSED``. With
        ``end=None`` (an API without an end marker, as Gemini) the body's end is the stream's, and
        ``converter.end()`` says whether the response was complete.
        """
        from .http import post_sse  # the http extra: imported when a request is made

        events = post_sse(
            self.client,
            f"{self.base_url}{path}",
            headers=self.request_headers(),
            body=body,
            signal=signal,
            who=self.provider,
            end=end,
            timeout=self.timeout,
            deadline=self.deadline,
            max_event_bytes=self.max_event_bytes,
        )
        # The secrets are redacted before any message is cut (secrets.py), in the request and in the converter;
        # active only between two yields (a consumer's own code never runs with it).
        redactor = self._redactor()
        async with contextlib.aclosing(events):
            while True:
                with redacting(redactor):
                    event = await anext(events, None)
                    if event is None:
                        break
                    chunks = converter.feed(event)
                for chunk in chunks:
                    yield chunk
                if chunks and chunks[-1]["type"] == "finish":
                    return
        with redacting(redactor):
            chunks = converter.end()
        for chunk in chunks:
            yield chunk

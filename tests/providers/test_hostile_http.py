"""The HTTP adapters against hostile configuration and hostile servers (issue 16), over real HTTP on 127.0.0.1.

A key never reaches an output; credentials never follow a redirect; every read is bounded (an SSE line and
event, an error body, the message kept from it, a JSON answer); a total deadline; abort honoured while reads
never suspend; the converters stay linear in the number of deltas. Bounds on time and memory are stated
generously: each is many times what the fixed code takes, and far below what the unbounded code took.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import threading
import time
import traceback
import tracemalloc
import zlib
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any

import httpx
import orjson
import pytest

import streamfsm as sf

from ..agent_support import collect, wire
from ..sse_server import SSE, Raw, Reply, SSEServer, anthropic_events, chunked, head, openai_events, wait_for

E = sf.ErrorCode
KiB, MiB = 1024, 1024 * 1024
KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
#: What must never be seen: the key's two halves (a bad key below is the key with a character put in at 12).
KEY_PARTS = (KEY[:12], KEY[12:])
ASK = sf.GenerateOptions(model="m", messages=(sf.UserMessage(content="hi"),))
#: Memory every request takes whatever it reads: an httpx client (its TLS context is about 3 MiB) and the
#: server's pieces in flight. A bound below is the reader's own bound (twice, for a buffer that grows) plus this.
FIXED = 4 * MiB
SSE_HEAD = {"content-type": "text/event-stream", "transfer-encoding": "chunked"}


def openai(url: str, key: str | None = KEY, **options: Any) -> Any:
    return sf.OpenAICompatibleAdapter(url, api_key=key, **options)


def anthropic(url: str, key: str | None = KEY, **options: Any) -> Any:
    return sf.AnthropicAdapter(base_url=url, api_key=key, **options)


ADAPTERS = [pytest.param(openai, id="openai"), pytest.param(anthropic, id="anthropic")]
Make = Callable[..., Any]


async def drain(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> list[sf.StreamChunk]:
    return [chunk async for chunk in adapter.generate(options)]


def failure(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> sf.LlmError:
    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(drain(adapter, options))
    return caught.value


def everything_shown(error: BaseException) -> str:
    """All an error can show: its traceback as printed, and str, repr and args of it and every cause."""
    parts = ["".join(traceback.format_exception(error))]
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        link = pending.pop()
        if id(link) in seen:
            continue
        seen.add(id(link))
        parts += [str(link), repr(link), repr(link.args), repr(vars(link))]
        pending += [x for x in (link.__cause__, link.__context__) if x is not None]
    return "\n".join(parts)


def assert_no_key(*texts: str) -> None:
    for text in texts:
        for part in KEY_PARTS:
            assert part not in text


def peak_while(run: Callable[[], Any]) -> tuple[Any, int]:
    """``run()``'s result (or the LlmError it raised) and the peak of memory allocated meanwhile (all threads)."""
    tracemalloc.start()
    try:
        try:
            result: Any = run()
        except sf.LlmError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def repeat(piece: bytes, total: int) -> Iterator[bytes]:
    """``piece`` again and again, ``total`` bytes in all."""
    for _ in range(total // len(piece)):
        yield piece


def event_stream(body: Iterable[bytes | float], headers: dict[str, str] | None = None) -> Raw:
    """A 200 event stream, chunked, made while it is written."""
    return Raw(itertools.chain([head(200, {**SSE_HEAD, **(headers or {})})], chunked(body)))


@cache
def deflated(piece: bytes, total: int, wbits: int = 31) -> bytes:
    """``total`` bytes of ``piece`` repeated, compressed (gzip by default): a bomb, made once."""
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    block = piece * (MiB // len(piece))
    out = [packer.compress(block) for _ in range(total // len(block))]
    return b"".join([*out, packer.flush()])


def corrupted(packed: bytes) -> bytes:
    """``packed`` with 40 bytes in its middle overwritten."""
    middle = len(packed) // 2
    return packed[:middle] + b"\xff" * 40 + packed[middle + 40 :]


# --- Secrets -----------------------------------------------------------------------------------------


BAD_KEYS = [
    pytest.param(KEY + "\n", "line break", id="newline-at-the-end"),
    pytest.param(KEY + "\r\n", "line break", id="crlf-at-the-end"),
    pytest.param(KEY[:12] + "\n" + KEY[12:], "line break", id="newline-inside"),
    pytest.param(" " + KEY, "space", id="space-first"),
    pytest.param(KEY[:12] + " " + KEY[12:], "space", id="space-inside"),
    pytest.param(KEY[:12] + "\x00" + KEY[12:], "control character", id="nul"),
    pytest.param(KEY[:12] + "\x7f" + KEY[12:], "control character", id="del"),
    pytest.param(KEY[:12] + "é" + KEY[12:], "non-ASCII", id="non-ascii"),
    pytest.param(KEY[:12] + "\u2028" + KEY[12:], "non-ASCII", id="line-separator"),
]


@pytest.mark.parametrize("make", ADAPTERS)
@pytest.mark.parametrize(("key", "problem"), BAD_KEYS)
def test_a_key_that_cannot_be_sent_is_refused_when_the_adapter_is_made(make: Make, key: str, problem: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        make("http://127.0.0.1:9", key)
    error = caught.value
    assert error.code == E.AUTH and not error.retryable
    assert "API key" in error.message and problem in error.message
    assert_no_key(everything_shown(error))


@pytest.mark.parametrize("make", ADAPTERS)
def test_a_key_read_from_a_file_is_told_to_be_stripped(make: Make) -> None:
    with pytest.raises(sf.LlmError, match=r"line break at position 40 of 41 \(its last character\).*strip it"):
        make("http://127.0.0.1:9", KEY + "\n")


@pytest.mark.parametrize("make", ADAPTERS)
@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"x-api-key": KEY + "\n"}, "'x-api-key'"),
        ({"authorization": "Bearer " + KEY + "\r\nx-evil: 1"}, "'authorization'"),
        ({"x-trace": "caf\u00e9"}, "'x-trace'"),
        ({"x trace": "1"}, "'x trace'"),
        ({"x-trace\n": "1"}, "header name"),
    ],
)
def test_a_header_that_cannot_be_sent_is_refused_by_name(make: Make, headers: dict[str, str], named: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        make("http://127.0.0.1:9", headers=headers)
    assert caught.value.code == E.INVALID_REQUEST and named in caught.value.message
    assert_no_key(everything_shown(caught.value))


def test_an_anthropic_version_that_cannot_be_sent_is_refused() -> None:
    with pytest.raises(sf.LlmError, match="anthropic-version") as caught:
        sf.AnthropicAdapter(api_key=KEY, version="2023-06-01\n")
    assert caught.value.code == E.INVALID_REQUEST


async def no_sleep(_: float) -> None:
    await asyncio.sleep(0)


def run_agent(adapter: sf.LlmAdapter) -> list[Any]:
    return asyncio.run(collect(sf.AgentLoop(adapter, model="m", sleep=no_sleep).run("hi")))


def every_channel(chunks: list[Any], caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> str:
    """The chunks (as objects, as the wire has them, and each error's whole chain), the log records (their text
    and every attribute), and what was written to standard output and error."""
    errors = [everything_shown(chunk.error) for chunk in chunks if chunk.type == "error"]
    records = [repr(vars(record)) for record in caplog.records]
    out = capsys.readouterr()
    return "\n".join(
        [repr(chunks), orjson.dumps(wire(chunks)).decode(), *errors, caplog.text, *records, out.out, out.err]
    )


@pytest.mark.parametrize("make", ADAPTERS)
def test_a_key_that_cannot_be_sent_reaches_no_output_and_is_not_retried(
    server: SSEServer, make: Make, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    adapter = make(server.url)
    adapter.api_key = KEY + "\n"  # set after the adapter was made: refused at the request
    caplog.set_level(logging.DEBUG)
    chunks = run_agent(adapter)
    (error,) = [chunk for chunk in chunks if chunk.type == "error"]
    assert error.error.code == E.AUTH and not error.recoverable
    assert chunks[-1].type == "done" and server.requests == []
    assert_no_key(every_channel(chunks, caplog, capsys))


def echoing(make: Make) -> list[SSE | Reply]:
    """A server that quotes the key back: in a 500 (retried) and its request id, then a 401 and an error event."""
    quoted = f"Incorrect API key provided: {KEY}; header b'Bearer {KEY}\\n'; json {orjson.dumps(KEY).decode()}"
    error = {"error": {"message": quoted, "type": "server_error"}}
    event = (
        anthropic_events([{"type": "error", "error": {"type": "authentication_error", "message": quoted}}])
        if make is anthropic
        else [f"data: {orjson.dumps({'error': {'message': quoted, 'type': 'authentication_error'}}).decode()}"]
    )
    return [Reply(500, error, {"x-request-id": KEY}), SSE(event)]


@pytest.mark.parametrize("make", ADAPTERS)
def test_a_key_the_server_quotes_back_is_redacted_everywhere(
    server: SSEServer, make: Make, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script(*echoing(make))
    # streamfsm's own records at every level; httpcore's DEBUG trace prints response headers as the server sent
    # them (here the key it echoes in x-request-id), which is the server's doing and not streamfsm's output.
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="streamfsm")
    chunks = run_agent(make(server.url))
    errors = [chunk.error for chunk in chunks if chunk.type == "error"]
    assert [e.code for e in errors] == [E.SERVER, E.AUTH]
    assert all("[redacted]" in e.message for e in errors) and errors[0].request_id == "[redacted]"
    assert_no_key(every_channel(chunks, caplog, capsys))


@pytest.mark.parametrize("make", ADAPTERS)
def test_a_credential_header_the_server_quotes_back_is_redacted(server: SSEServer, make: Make) -> None:
    server.script(Reply(401, {"error": {"message": f"bad token {KEY}"}}))
    error = failure(make(server.url, key=None, headers={"x-goog-api-key": KEY}))
    assert error.code == E.AUTH and "bad token [redacted]" in error.message
    assert server.requests[0].headers["x-goog-api-key"] == KEY
    assert_no_key(everything_shown(error))


def test_an_exception_that_quotes_the_key_loses_its_chain(server: SSEServer) -> None:
    class Leaky(sf.OpenAICompatibleAdapter):
        def request_body(self, options: sf.GenerateOptions) -> dict[str, Any]:
            raise RuntimeError(f"cannot build the body with key {self.api_key}")

    error = failure(Leaky(server.url, api_key=KEY))
    assert error.code == E.UNKNOWN and error.__cause__ is None and error.__context__ is None
    assert "[redacted]" in error.message
    assert_no_key(everything_shown(error))


def test_an_exception_that_does_not_quote_the_key_keeps_its_chain(server: SSEServer) -> None:
    class Broken(sf.OpenAICompatibleAdapter):
        def request_body(self, options: sf.GenerateOptions) -> dict[str, Any]:
            raise RuntimeError("no body today")

    error = failure(Broken(server.url, api_key=KEY))
    assert error.code == E.UNKNOWN and isinstance(error.__cause__, RuntimeError)


# --- Redirects ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("make", ADAPTERS)
def test_credentials_never_follow_a_redirect_whatever_the_client(server: SSEServer, make: Make, status: int) -> None:
    with SSEServer() as elsewhere:
        server.script(Reply(status, b"", {"location": f"{elsewhere.url}/v1/messages"}))

        async def main() -> list[sf.StreamChunk]:
            async with httpx.AsyncClient(follow_redirects=True) as client:
                return await drain(make(server.url, client=client))

        with pytest.raises(sf.LlmError) as caught:
            asyncio.run(main())
        assert elsewhere.requests == []  # never asked: the key never reached it
    error = caught.value
    assert (error.code, error.status, error.retryable) == (E.PROVIDER_HTTP_ERROR, status, False)
    assert "redirects are not followed" in error.message and elsewhere.url in error.message


def test_a_same_host_redirect_is_not_followed_either(server: SSEServer) -> None:
    server.script(Reply(307, b"", {"location": "/v2/chat/completions"}), SSE(openai_events([])))
    error = failure(openai(server.url))
    assert (error.code, error.status) == (E.PROVIDER_HTTP_ERROR, 307) and len(server.requests) == 1


def test_listing_models_follows_no_redirect(server: SSEServer) -> None:
    with SSEServer() as elsewhere:
        server.script(Reply(302, b"", {"location": f"{elsewhere.url}/models"}))

        async def main() -> list[sf.ModelInfo]:
            async with httpx.AsyncClient(follow_redirects=True) as client:
                return await openai(server.url, client=client).list_models()

        with pytest.raises(sf.LlmError) as caught:
            asyncio.run(main())
        assert elsewhere.requests == []
    assert (caught.value.code, caught.value.status) == (E.PROVIDER_HTTP_ERROR, 302)


# --- SSE lines and events ----------------------------------------------------------------------------


@pytest.mark.parametrize("make", ADAPTERS)
def test_a_line_that_never_ends_is_cut_at_the_bound(server: SSEServer, make: Make) -> None:
    # 64 MiB of one line, no line end; the bound is 1 MiB. Unbounded, the whole line was buffered.
    server.script(event_stream(itertools.chain([b"data: "], repeat(b"x" * (64 * KiB), 64 * MiB))))
    error, peak = peak_while(lambda: failure(make(server.url, max_event_bytes=MiB)))
    assert error.code == E.LIMIT_EXCEEDED and "1,048,576 bytes" in error.message
    assert peak < 2 * MiB + FIXED


@pytest.mark.parametrize("make", ADAPTERS)
def test_an_event_that_never_ends_is_cut_at_the_bound(server: SSEServer, make: Make) -> None:
    # Short data lines, never a blank line: 16 MiB of one event, the bound 256 KiB.
    server.script(event_stream(repeat(b"data: xxxxxxxxxxxxxxxxxxxxxxxx\n" * 1024, 16 * MiB)))
    error, peak = peak_while(lambda: failure(make(server.url, max_event_bytes=256 * KiB)))
    assert error.code == E.LIMIT_EXCEEDED
    assert peak < 512 * KiB + FIXED


def test_the_default_bound_of_an_event_is_16_mib(server: SSEServer) -> None:
    server.script(event_stream(itertools.chain([b"data: "], repeat(b"x" * (64 * KiB), 17 * MiB))))
    error, peak = peak_while(lambda: failure(openai(server.url)))
    assert error.code == E.LIMIT_EXCEEDED and "16,777,216 bytes" in error.message
    assert peak < 32 * MiB + FIXED


def test_an_event_just_within_the_bound_is_read(server: SSEServer) -> None:
    text = {"choices": [{"index": 0, "delta": {"content": "y" * 2000}, "finish_reason": "stop"}]}
    events = openai_events([text, {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}])
    size = len(events[0].encode())
    server.script(SSE(events))
    chunks = asyncio.run(drain(openai(server.url, max_event_bytes=size)))
    assert sf.assemble(chunks).text == "y" * 2000
    server.script(SSE(events))
    assert failure(openai(server.url, max_event_bytes=size - 1)).code == E.LIMIT_EXCEEDED


def test_a_gzip_bomb_as_an_event_stream_is_cut_at_the_bound(server: SSEServer) -> None:
    # 256 MiB of one line, gzipped to about 250 KB.
    bomb = deflated(b"data: " + b"x" * 1018, 256 * MiB)
    server.script(
        event_stream([bomb[i : i + 16 * KiB] for i in range(0, len(bomb), 16 * KiB)], {"content-encoding": "gzip"})
    )
    error, peak = peak_while(lambda: failure(openai(server.url, max_event_bytes=MiB)))
    assert error.code == E.LIMIT_EXCEEDED
    assert peak < MiB + FIXED


@pytest.mark.parametrize(("coding", "wbits"), [("gzip", 31), ("x-gzip", 31), ("deflate", 15), ("deflate", -15)])
def test_a_compressed_event_stream_is_read(server: SSEServer, coding: str, wbits: int) -> None:
    events = openai_events(
        [
            {"choices": [{"index": 0, "delta": {"content": "compressed"}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}},
        ]
    )
    body = "".join(event + "\n\n" for event in events).encode()
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    packed = packer.compress(body) + packer.flush()
    server.script(event_stream([packed[i : i + 7] for i in range(0, len(packed), 7)], {"content-encoding": coding}))
    assert sf.assemble(asyncio.run(drain(openai(server.url)))).text == "compressed"


@pytest.mark.parametrize(
    ("coding", "body", "words"),
    [
        ("br", b"data: x\n\n", "'br'"),
        ("gzip", b"this is not gzip at all", "gzip coding is broken"),
        ("gzip", corrupted(deflated(b": " + b"a" * 1000 + b"\n", MiB)), "gzip coding is broken"),
    ],
)
def test_an_unknown_or_broken_coding_is_malformed(server: SSEServer, coding: str, body: bytes, words: str) -> None:
    server.script(event_stream([body], {"content-encoding": coding}))
    error = failure(openai(server.url))
    assert error.code == E.MALFORMED_RESPONSE and words in error.message


# --- Error bodies ------------------------------------------------------------------------------------


def test_a_gzip_bomb_as_an_error_body_is_read_no_further_than_64_kib(server: SSEServer) -> None:
    # 256 MiB of zeros, gzipped to about 250 KB; unbounded, all of it was inflated into memory.
    bomb = deflated(b"\0", 256 * MiB)
    server.script(Raw([head(500, {"content-encoding": "gzip", "content-length": str(len(bomb))}), bomb]))
    error, peak = peak_while(lambda: failure(openai(server.url)))
    assert (error.code, error.status) == (E.SERVER, 500)
    assert "longer than 65,536 bytes: the rest was not read" in error.message and len(error.message) < 1000
    assert peak < MiB + FIXED


def test_a_100_mb_error_message_is_cut_to_4096_characters(server: SSEServer) -> None:
    parts = itertools.chain([b'{"error": {"message": "'], repeat(b"z" * (64 * KiB), 100 * MiB), [b'"}}'])
    server.script(Raw(itertools.chain([head(429, {"transfer-encoding": "chunked"})], chunked(parts))))
    started = time.monotonic()
    error, peak = peak_while(lambda: failure(openai(server.url)))
    assert (error.code, error.status) == (E.RATE_LIMIT, 429)
    assert len(error.message) < 1000 and "the rest was not read" in error.message
    assert peak < MiB + FIXED and time.monotonic() - started < 10  # unbounded: 18-28 s and 328 MB


def test_the_message_kept_from_an_error_body_is_4096_characters(server: SSEServer) -> None:
    server.script(Reply(400, {"error": {"message": "w" * 50_000, "type": "invalid_request_error"}}))
    error = failure(openai(server.url))
    assert error.code == E.INVALID_REQUEST
    assert "w" * 4096 + "… [45,904 more characters not kept]" in error.message and "w" * 4097 not in error.message


def test_the_message_of_an_error_event_is_cut_and_classified_quickly(server: SSEServer) -> None:
    quoted = "prompt " * 1_000_000 + "context length exceeded"  # 7 MB; the wording past the cut is not read
    server.script(SSE([f"data: {orjson.dumps({'error': {'message': quoted}}).decode()}"]))
    started = time.monotonic()
    error = failure(openai(server.url))
    assert error.code == E.PROVIDER_HTTP_ERROR and len(error.message) < 4200
    assert time.monotonic() - started < 10  # the classification reads 4096 characters, not 7 MB


def test_an_error_body_with_a_broken_coding_keeps_its_status(server: SSEServer) -> None:
    server.script(Raw([head(503, {"content-encoding": "gzip", "content-length": "12"}), b"not gzipped!"]))
    error = failure(openai(server.url))
    assert (error.code, error.status) == (E.SERVER, 503) and "could not be decoded" in error.message


def test_a_model_listing_is_bounded(server: SSEServer) -> None:
    listing = {"data": [{"id": f"model-{n}"} for n in range(10_000)]}
    server.script(Reply(200, listing))
    error = failure_of(openai(server.url, max_event_bytes=64 * KiB).list_models())
    assert error.code == E.LIMIT_EXCEEDED
    server.script(Reply(200, listing))
    assert len(asyncio.run(openai(server.url).list_models())) == 10_000


def failure_of(awaitable: Any) -> sf.LlmError:
    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(awaitable)
    return caught.value


# --- Deadline and abort ------------------------------------------------------------------------------


def slow_loris(pause: float = 0.1, count: int = 600) -> Raw:
    """An event stream that sends a comment line every ``pause`` seconds: each read is quick, the whole endless."""
    return event_stream(itertools.chain.from_iterable((b":\n", pause) for _ in range(count)))


def fast_and_endless(total: int = 4096 * MiB) -> Raw:
    """An event stream of comments as fast as the socket takes them (the client's reads hardly ever wait)."""
    return event_stream(repeat(b": keep-alive\n" * 5000, total))


@pytest.mark.parametrize("make", ADAPTERS)
def test_a_total_deadline_ends_a_slow_loris(server: SSEServer, make: Make) -> None:
    server.script(slow_loris())
    started = time.monotonic()
    error = failure(make(server.url, timeout=5, deadline=0.5))
    assert error.code == E.TIMEOUT and error.retryable and "deadline of 0.5 s" in error.message
    assert time.monotonic() - started < 5  # the per-read timeout alone never ends it (60 s of body here)


def test_the_deadline_counts_from_the_request(server: SSEServer) -> None:
    server.script(Reply(200, b"", delay=3.0))  # no status line for 3 s
    started = time.monotonic()
    error = failure(openai(server.url, deadline=0.3))
    assert error.code == E.TIMEOUT and time.monotonic() - started < 2.5


def test_the_deadline_ends_a_body_whose_reads_never_wait(server: SSEServer) -> None:
    server.script(fast_and_endless())
    started = time.monotonic()
    error = failure(openai(server.url, deadline=0.3))
    assert error.code == E.TIMEOUT and time.monotonic() - started < 10
    assert wait_for(lambda: server.active == 0, 5.0)


def test_the_deadline_passes_while_the_consumer_is_busy(server: SSEServer) -> None:
    first = {"choices": [{"index": 0, "delta": {"content": "a"}}]}
    server.script(SSE(openai_events([first] * 50), delay=0.02))

    async def consume() -> None:
        async for _ in openai(server.url, deadline=0.2).generate(ASK):
            await asyncio.sleep(0.5)  # past the deadline at the first chunk

    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(consume())
    assert caught.value.code == E.TIMEOUT
    assert wait_for(lambda: server.active == 0, 5.0)


def test_a_deadline_bounds_listing_models(server: SSEServer) -> None:
    server.script(Reply(200, {"data": []}, delay=3.0))
    assert failure_of(openai(server.url, deadline=0.3).list_models()).code == E.TIMEOUT


def test_a_deadline_must_be_positive() -> None:
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="deadline"):
            openai("http://127.0.0.1:9", deadline=bad)
    with pytest.raises(ValueError, match="max_event_bytes"):
        openai("http://127.0.0.1:9", max_event_bytes=0)


def test_abort_ends_a_body_whose_reads_never_wait(server: SSEServer) -> None:
    server.script(fast_and_endless())
    controller = sf.AbortController()
    threading.Timer(0.2, controller.abort).start()
    started = time.monotonic()
    error = failure(openai(server.url), ASK.model_copy(update={"signal": controller.signal}))
    assert error.code == E.ABORTED and time.monotonic() - started < 10
    assert wait_for(lambda: server.active == 0, 5.0)


def test_abort_ends_the_reading_of_an_error_body(server: SSEServer) -> None:
    slow = itertools.chain.from_iterable((b"x", 0.05) for _ in range(400))  # 20 s of error body
    server.script(Raw(itertools.chain([head(500, {"transfer-encoding": "chunked"})], chunked(slow))))
    controller = sf.AbortController()
    threading.Timer(0.3, controller.abort).start()
    started = time.monotonic()
    error = failure(openai(server.url), ASK.model_copy(update={"signal": controller.signal}))
    assert error.code == E.ABORTED and time.monotonic() - started < 5


def test_a_deadline_ends_the_reading_of_an_error_body(server: SSEServer) -> None:
    slow = itertools.chain.from_iterable((b"x", 0.05) for _ in range(400))
    server.script(Raw(itertools.chain([head(500, {"transfer-encoding": "chunked"})], chunked(slow))))
    assert failure(openai(server.url, deadline=0.3)).code == E.TIMEOUT


# --- Linear converters -------------------------------------------------------------------------------


@pytest.mark.slow
def test_signature_and_thinking_deltas_are_joined_once() -> None:
    count = 320_000
    delta = {"type": "content_block_delta", "index": 0}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        *({**delta, "delta": {"type": "thinking_delta", "thinking": "t"}} for _ in range(count)),
        *({**delta, "delta": {"type": "signature_delta", "signature": "sig-"}} for _ in range(count)),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    converter = sf.AnthropicConverter()
    started = time.monotonic()
    chunks = [chunk for event in events for chunk in converter.feed(event)]
    elapsed = time.monotonic() - started
    (end,) = [chunk for chunk in chunks if chunk["type"] == "block-end"]
    (finish,) = [chunk for chunk in chunks if chunk["type"] == "finish"]
    assert end["block"]["text"] == "t" * count  # type: ignore[typeddict-item]
    assert finish["replayState"]["blocks"][0]["signature"] == "sig-" * count  # type: ignore[typeddict-item]
    assert elapsed < 10  # joined per delta: 29 s for the signatures alone


def test_a_signature_in_the_block_start_comes_first() -> None:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "hm", "signature": "a"},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "b"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "ok"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    result = sf.assemble(sf.from_anthropic_events(events))
    assert result.replay_state["blocks"] == [{"signature": "abc"}, None]


def test_blocks_held_behind_an_open_tool_call_end_in_constant_time_each() -> None:
    """400,000 tool calls held behind an incomplete first one took 15.5 s to end (each ended block shifted the
    list of those behind it: quadratic in memory moves, invisible in small runs) and take about 4 s now, the rest
    being the allocator's. Timing would not tell the two apart reliably on a shared machine: the queue is asserted
    to be one whose first item is taken in O(1)."""
    queue = sf.OpenAIConverter().queue
    assert isinstance(queue.blocks, collections.deque)
    held = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}}]}
    converter = sf.OpenAIConverter()
    converter.feed(held)
    for n in range(1, 1000):
        call = {"index": n, "id": f"c{n}", "function": {"name": "f", "arguments": "{}"}}
        converter.feed({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    converter.feed(
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]}
    )
    converter.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    ends = [chunk for chunk in converter.end() if chunk["type"] == "block-end"]
    assert [end["index"] for end in ends][-3:] == [997, 998, 999]


# -- the test server itself: quiet when a client hangs up, loud about its own bugs ------------------------------


def test_the_test_server_prints_nothing_when_a_client_hangs_up(capfd: pytest.CaptureFixture[str]) -> None:
    """socketserver prints a traceback from the server's thread for any error a request raises; a client that resets
    (what a test that stops reading early does) is none of the server's, and a green run shows no traceback."""
    with SSEServer() as running:
        for error in (ConnectionResetError(104, "reset"), BrokenPipeError(32, "broken pipe")):
            try:
                raise error
            except OSError:
                running.httpd.handle_error(None, ("127.0.0.1", 1))
        assert running.errors == []
    assert capfd.readouterr() == ("", "")


def test_the_test_server_raises_what_its_handler_raised(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError, match="the test server's requests raised") as info, SSEServer() as running:
        try:
            raise ValueError("a bug in the handler")
        except ValueError:
            running.httpd.handle_error(None, ("127.0.0.1", 1))
    assert isinstance(info.value.__cause__, ValueError)
    assert capfd.readouterr() == ("", "")

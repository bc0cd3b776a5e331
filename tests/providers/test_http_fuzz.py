"""Fuzzing the HTTP layer (issue 16), as the machine is fuzzed: a hostile server on 127.0.0.1, driven by hypothesis,
against the four adapters over HTTP (chat completions, Messages, Responses, Gemini).

Each example is one response written byte for byte: a status line (valid or not), headers, a framing (chunked,
a content length that is right, short or long, or the connection's close; chunk sizes broken or the last chunk
missing), a content coding (identity, gzip, deflate wrapped or raw, gzip twice, broken, truncated, unknown, a
bomb), a body of server-sent events (valid ones of the adapter's provider, random text, random bytes, comments,
events past the bound) and random pauses between random cuts of it. Whatever comes, consuming
``adapter.generate()`` raises nothing but :class:`streamfsm.LlmError`, ends within the deadline, and the memory
allocated meanwhile stays under a bound stated below.

``STREAMFSM_HTTP_FUZZ_EXAMPLES`` sets the number of examples (default 150: about 20 s on 2 cores).
"""

from __future__ import annotations

import asyncio
import gzip
import os
import time
import tracemalloc
import zlib
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import streamfsm as sf

from ..sse_server import Raw, SSEServer, anthropic_events, openai_events

EXAMPLES = int(os.environ.get("STREAMFSM_HTTP_FUZZ_EXAMPLES", "150"))
MAX_EVENT = 4096
DEADLINE = 2.0
#: The memory bound of one example: an httpx client (its TLS context is about 3 MiB), the adapter's own bounds
#: (an event, an error body, a decoding step: tens of KiB each) and the server's copy of the response, with room.
MEMORY = 10 * 1024 * 1024
ASK = sf.GenerateOptions(model="m", messages=(sf.UserMessage(content="hi"),))

OPENAI_VALID = openai_events(
    [
        {"id": "c", "choices": [{"index": 0, "delta": {"reasoning_content": "think"}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"content": "hello"}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"id": "c", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}},
    ]
)
ANTHROPIC_VALID = anthropic_events(
    [
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
)
RESPONSES_VALID = [
    f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}"
    for e in [
        {"type": "response.created", "response": {"id": "r", "model": "m", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {"id": "m1", "type": "message"}},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": "m1", "delta": "he"},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": "m1", "delta": "llo"},
        {"type": "response.output_item.done", "output_index": 0, "item": {"id": "m1", "type": "message"}},
        {
            "type": "response.completed",
            "response": {
                "id": "r",
                "model": "m",
                "status": "completed",
                "usage": {"input_tokens": 3, "output_tokens": 2},
            },
        },
    ]
]
GEMINI_VALID = [
    f"data: {orjson.dumps(e).decode()}"
    for e in [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "think", "thought": True}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "hello"}]}}]},
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
        },
    ]
]
VALID = {"openai": OPENAI_VALID, "anthropic": ANTHROPIC_VALID, "responses": RESPONSES_VALID, "gemini": GEMINI_VALID}
ERRORS = [
    'data: {"error": {"message": "overloaded", "type": "overloaded_error"}}',
    'event: error\ndata: {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}',
]


@st.composite
def event_bytes(draw: st.DrawFn, valid: list[str], spoilt: bool) -> bytes:
    """A body of events: the provider's whole valid stream, or (spoilt) part of it mixed with anything else."""
    separator = draw(st.sampled_from(["\n\n", "\r\n\r\n", "\r\r", "\n\r\n"]))
    items: list[str | bytes] = list(valid)
    if spoilt:
        items = draw(st.lists(st.sampled_from(valid), max_size=len(valid))) if draw(st.booleans()) else items
        extra = st.one_of(
            st.sampled_from([*ERRORS, ": comment", "data: [DONE]", "data:", "event: ping", "retry: 10", "id: 1"]),
            st.text(max_size=30).map(lambda text: "data: " + text),
            st.binary(max_size=30),
            st.integers(MAX_EVENT - 20, MAX_EVENT + 20).map(lambda size: "data: " + "x" * size),
        )
        for _ in range(draw(st.integers(0, 3))):
            items.insert(draw(st.integers(0, len(items))), draw(extra))
        separator = draw(st.sampled_from([separator, "\n", ""]))
    body = b"".join((item if isinstance(item, bytes) else item.encode()) + separator.encode() for item in items)
    if spoilt and draw(st.booleans()):
        body = body[: draw(st.integers(0, len(body)))]  # cut anywhere
    return body


def code(body: bytes, coding: str) -> tuple[bytes, str]:
    """``body`` in ``coding``, and the Content-Encoding that says so."""
    if coding in ("gzip", "gzip-broken", "gzip-truncated"):
        packed = gzip.compress(body)
        if coding == "gzip-broken" and len(packed) > 20:
            middle = len(packed) // 2
            packed = packed[:middle] + b"\xff" * 8 + packed[middle + 8 :]
        elif coding == "gzip-truncated":
            packed = packed[: len(packed) // 2]
        return packed, "gzip"
    if coding == "gzip, gzip":
        return gzip.compress(gzip.compress(body)), coding
    if coding == "deflate":
        return zlib.compress(body), coding
    if coding == "raw-deflate":
        packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return packer.compress(body) + packer.flush(), "deflate"
    if coding == "bomb":  # 8 MiB of one line in about 8 KB
        return gzip.compress(b"data: " + b"y" * (8 * 1024 * 1024), 9), "gzip"
    if coding == "br":
        return body, "br"
    return body, coding


def frame(body: bytes, framing: str, sizes: list[int]) -> tuple[bytes, dict[str, str]]:
    """``body`` framed, and the headers that say how."""
    if framing.startswith("chunked"):
        out, position = [], 0
        for size in [*sizes, len(body)]:
            piece = body[position : position + max(size, 1)]
            if not piece:
                break
            position += len(piece)
            size_line = b"zz" if framing == "chunked-broken" and len(out) == 1 else b"%x" % len(piece)
            out.append(size_line + b"\r\n" + piece + b"\r\n")
        if framing != "chunked-unterminated":
            out.append(b"0\r\n\r\n")
        return b"".join(out), {"transfer-encoding": "chunked"}
    if framing == "length":
        return body, {"content-length": str(len(body))}
    if framing == "length-short":
        return body, {"content-length": str(len(body) // 2)}
    if framing == "length-long":
        return body, {"content-length": str(len(body) + 100)}
    return body, {}  # delimited by the close of the connection


#: What a response may have spoilt; each example spoils none, one or several of them.
SPOILS = ["status", "events", "error body", "coding", "framing", "content type", "header", "cuts"]


@st.composite
def responses(draw: st.DrawFn, valid: list[str]) -> list[bytes | float]:
    """One response, valid but for what is spoilt, cut into pieces with pauses between them."""
    spoilt = draw(st.sets(st.sampled_from(SPOILS)))
    status = b"HTTP/1.1 200 OK"
    if "status" in spoilt:
        status = draw(
            st.sampled_from(
                [
                    *(b"HTTP/1.0 200 OK", b"HTTP/1.1 204 Empty", b"HTTP/1.1 307 Go", b"HTTP/1.1 400 Bad"),
                    *(b"HTTP/1.1 401 No", b"HTTP/1.1 429 Slow", b"HTTP/1.1 500 Oops", b"HTTP/1.1 2000 Odd"),
                    *(b"NOT HTTP AT ALL", b""),
                ]
            )
        )
    if "error body" in spoilt:
        body = draw(st.sampled_from([b'{"error": {"message": "no", "type": "server_error"}}', b"<html>", b""]))
    else:
        body = draw(event_bytes(valid, "events" in spoilt))
    codings = ["", "identity", "gzip", "deflate", "raw-deflate", "gzip, gzip"]
    if "coding" in spoilt:
        codings = ["gzip-broken", "gzip-truncated", "br", "bomb"]
    body, content_encoding = code(body, draw(st.sampled_from(codings)))
    framings = ["chunked", "length", "close"]
    if "framing" in spoilt:
        framings = ["length-short", "length-long", "chunked-broken", "chunked-unterminated"]
    sizes = draw(st.lists(st.integers(1, 3000), max_size=6))
    body, headers = frame(body, draw(st.sampled_from(framings)), sizes)
    content_type = "text/event-stream"
    if "content type" in spoilt:
        content_type = draw(st.sampled_from(["application/json", "text/plain", "", "text/event-stream-ish"]))
    headers = {"content-type": content_type, **headers}
    if content_encoding:
        headers["content-encoding"] = content_encoding
    harmless = ["retry-after: 1", "retry-after: soon", "x-request-id: r1", "location: /x", "x-odd: \x7f"]
    extra = draw(st.lists(st.sampled_from(harmless), max_size=2))
    if "header" in spoilt:
        extra.append(draw(st.sampled_from(["bad", ": empty name", "x-long: " + "h" * 70_000, "x: a\r\n b"])))
    head = b"\r\n".join([status, *(f"{k}: {v}".encode() for k, v in headers.items()), *(e.encode() for e in extra)])
    whole = head + b"\r\n\r\n" + body
    cuts = sorted(draw(st.lists(st.integers(0, len(whole)), max_size=6)))
    pieces: list[bytes | float] = []
    for start, end in zip([0, *cuts], [*cuts, len(whole)], strict=True):
        pieces.append(whole[start:end])
        pause = draw(st.sampled_from([0.0, 0.0, 0.0, 0.001, 0.01, 0.03] if "cuts" in spoilt else [0.0]))
        if pause:
            pieces.append(pause)
    return pieces


def adapter(kind: str, url: str) -> sf.LlmAdapter:
    bounds: dict[str, Any] = {"timeout": 1.0, "deadline": DEADLINE, "max_event_bytes": MAX_EVENT}
    if kind == "openai":
        return sf.OpenAICompatibleAdapter(url, api_key="sk-fuzz", **bounds)
    if kind == "responses":
        return sf.OpenAIResponsesAdapter(url, api_key="sk-fuzz", **bounds)
    if kind == "gemini":
        return sf.GeminiAdapter(base_url=url, api_key="g-fuzz", **bounds)
    return sf.AnthropicAdapter(base_url=url, api_key="sk-fuzz", **bounds)


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
@given(data=st.data(), kind=st.sampled_from(sorted(VALID)), policy=st.sampled_from(["strict", None]))
def test_nothing_but_an_llm_error_escapes_and_every_bound_holds(
    server: SSEServer, data: st.DataObject, kind: str, policy: str | None
) -> None:
    pieces = data.draw(responses(VALID[kind]))
    server.queue.clear()
    server.script(Raw(pieces))

    async def consume() -> int:
        count = 0
        async for _ in adapter(kind, server.url).generate(ASK, policy=policy):
            count += 1
        return count

    tracemalloc.start()
    started = time.monotonic()
    try:
        event(f"{kind}: {asyncio.run(consume())} chunks")
    except sf.LlmError as exc:
        event(f"{kind}: {exc.code}")
    finally:
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert elapsed < DEADLINE + 2.0
    assert peak < MEMORY

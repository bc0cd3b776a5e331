"""The HTTP adapters against a real server on 127.0.0.1 (tests/sse_server.py): streams, failures, aborting."""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import time
from typing import Any

import pytest

import streamfsm as sf

from ..data import PROVIDER_STREAMS
from ..sse_server import SSE, Reply, SSEServer, anthropic_events, openai_events, wait_for
from .support import anthropic_recording, openai_recording

E = sf.ErrorCode
TOOL_CALL = openai_recording(PROVIDER_STREAMS / "openai-chat" / "deepseek-tool-call.jsonl")
TEXT = openai_recording(PROVIDER_STREAMS / "openai-chat" / "openai-text.jsonl")
ANTHROPIC_TOOL = anthropic_recording(PROVIDER_STREAMS / "anthropic-messages" / "tool_use_response.sse")
ASK = sf.GenerateOptions(model="deepseek-reasoner", messages=(sf.UserMessage(content="What is the weather?"),))


async def collect(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> list[sf.StreamChunk]:
    return [chunk async for chunk in adapter.generate(options)]


def failure(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> sf.LlmError:
    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(collect(adapter, options))
    return caught.value


# --- Streams ----------------------------------------------------------------------------------------


def test_tool_call_stream(server: SSEServer) -> None:
    server.script(SSE(openai_events(TOOL_CALL)))
    chunks = asyncio.run(collect(sf.OpenAICompatibleAdapter(server.url, api_key="sk-test")))
    result = sf.assemble(chunks)
    assert result.finish.kind == "tool-calls"
    assert [(c.name, c.parsed_arguments) for c in result.tool_calls] == [("weather", {"location": "San Francisco"})]
    assert result.usage == sf.Usage(input_tokens=19, output_tokens=83, cache_read_tokens=320, reasoning_tokens=39)


def test_text_stream_and_the_request(server: SSEServer) -> None:
    server.script(SSE(openai_events(TEXT)))
    options = ASK.model_copy(
        update={
            "system": "Be brief.",
            "tools": (sf.ToolSchema(name="weather", description="Weather", parameters={"type": "object"}),),
            "temperature": 0.5,
            "max_tokens": 300,
            "stop": ("END",),
        }
    )
    result = sf.assemble(
        asyncio.run(collect(sf.OpenAICompatibleAdapter(server.url + "/v1/", api_key="sk-test"), options))
    )
    assert result.text.startswith("**Holiday Name:**")
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["user-agent"] == sf.attribution_headers()["user-agent"]
    assert request.headers["user-agent"].startswith(f"streamfsm/{sf.__version__} (+https://")
    assert request.json() == {
        "model": "deepseek-reasoner",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is the weather?"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {"name": "weather", "description": "Weather", "parameters": {"type": "object"}},
            }
        ],
        "temperature": 0.5,
        "max_tokens": 300,
        "stop": ["END"],
    }


def test_a_conversation_is_sent_in_the_chat_completions_form(server: SSEServer) -> None:
    server.script(SSE(openai_events(TEXT)))
    earlier = sf.assemble(sf.from_openai_chunks(TOOL_CALL))
    options = ASK.model_copy(
        update={
            "messages": (
                sf.UserMessage(content="weather?"),
                sf.AssistantMessage.from_result(earlier),
                sf.ToolResultMessage(tool_call_id=earlier.tool_calls[0].id, content="sunny"),
            )
        }
    )
    asyncio.run(collect(sf.OpenAICompatibleAdapter(server.url), options))
    call = earlier.tool_calls[0]
    assert server.requests[0].json()["messages"] == [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call.id, "type": "function", "function": {"name": "weather", "arguments": call.arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]


def test_identity_and_headers_are_overridable(server: SSEServer) -> None:
    server.script(SSE(openai_events(TEXT)))
    identity = sf.AppIdentity("my-agent", "2.0", "https://example.org")
    adapter = sf.OpenAICompatibleAdapter(server.url, identity=identity, headers={"x-tenant": "t1"})
    asyncio.run(collect(adapter))
    headers = server.requests[0].headers
    assert headers["user-agent"] == "my-agent/2.0 (+https://example.org)" and headers["x-tenant"] == "t1"
    assert "authorization" not in headers


# --- Failures ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "code", "status", "retry_after_ms", "request_id"),
    [
        (
            Reply(401, {"error": {"message": "Invalid API key", "type": "authentication_error"}}),
            E.AUTH,
            401,
            None,
            None,
        ),
        (Reply(403, "forbidden", {"content-type": "text/plain"}), E.AUTH, 403, None, None),
        (
            Reply(429, {"error": {"message": "Rate limit reached"}}, {"retry-after": "2", "x-request-id": "req-9"}),
            E.RATE_LIMIT,
            429,
            2000,
            "req-9",
        ),
        (
            Reply(429, {"error": {"message": "slow"}}, {"retry-after-ms": "1500", "retry-after": "9"}),
            E.RATE_LIMIT,
            429,
            1500,
            None,
        ),
        (
            Reply(429, {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}),
            E.QUOTA,
            429,
            None,
            None,
        ),
        (Reply(402, {"error": {"message": "Insufficient Balance"}}), E.QUOTA, 402, None, None),
        (
            Reply(400, {"error": {"message": "This model's maximum context length is 65536 tokens"}}),
            E.CONTEXT_WINDOW_EXCEEDED,
            400,
            None,
            None,
        ),
        (Reply(422, {"error": {"message": "bad field"}}), E.INVALID_REQUEST, 422, None, None),
        (Reply(500, "oops", {"request-id": "r-500"}), E.SERVER, 500, None, "r-500"),
        (
            Reply(503, {"error": {"message": "overloaded"}}, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}),
            E.SERVER,
            503,
            0,
            None,
        ),
        (Reply(404, {"error": {"message": "no such route"}}), E.PROVIDER_HTTP_ERROR, 404, None, None),
        # A Retry-After that is no delay is not one; one past the protocol's integers is capped.
        (Reply(429, {"error": {"message": "slow"}}, {"retry-after": "-5"}), E.RATE_LIMIT, 429, None, None),
        (Reply(429, {"error": {"message": "slow"}}, {"retry-after": "1e300"}), E.RATE_LIMIT, 429, 2**53 - 1, None),
        (Reply(429, {"error": {"message": "slow"}}, {"retry-after-ms": "1e300"}), E.RATE_LIMIT, 429, 2**53 - 1, None),
    ],
)
def test_http_failures(
    server: SSEServer, reply: Reply, code: sf.ErrorCode, status: int, retry_after_ms: int | None, request_id: str | None
) -> None:
    server.script(reply)
    error = failure(sf.OpenAICompatibleAdapter(server.url))
    assert (error.code, error.status, error.retry_after_ms, error.request_id) == (
        code,
        status,
        retry_after_ms,
        request_id,
    )
    assert f"HTTP {status}" in error.message


@pytest.mark.parametrize(
    ("response", "code", "words"),
    [
        (SSE([*openai_events(TOOL_CALL[:3], done=False), "data: {not json"]), E.MALFORMED_RESPONSE, "not JSON"),
        (SSE(['data: ["a list"]']), E.MALFORMED_RESPONSE, "not a JSON object"),
        (SSE(openai_events(TOOL_CALL[:10], done=False), end="drop"), E.TRANSPORT, "connection failed"),
        (SSE(openai_events(TOOL_CALL, done=False)), E.STREAM_CLOSED, "without [DONE]"),
        (SSE(openai_events(TOOL_CALL[:10])), E.STREAM_CLOSED, "without a finish_reason"),
        (Reply(200, {"id": "not a stream"}), E.MALFORMED_RESPONSE, "text/event-stream"),
        (SSE(['data: {"error": {"message": "upstream overloaded", "type": "server_error"}}']), E.SERVER, "overloaded"),
        # A proxy's in-stream error: its code is its HTTP status (no word of the message says server).
        (SSE(['data: {"error": {"message": "KeyError: x", "type": null, "code": "500"}}']), E.SERVER, "KeyError"),
    ],
)
def test_broken_streams(server: SSEServer, response: SSE | Reply, code: sf.ErrorCode, words: str) -> None:
    server.script(response)
    error = failure(sf.OpenAICompatibleAdapter(server.url))
    assert error.code == code and words in error.message


def test_an_http_date_without_a_zone_is_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from streamfsm._providers.classify import retry_after_ms

    when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=60)
    utc = email.utils.format_datetime(when, usegmt=True)
    unzoned = email.utils.format_datetime(when.replace(tzinfo=None))  # "... -0000": UTC, the sender's zone unknown
    monkeypatch.setenv("TZ", "America/New_York")  # 4 or 5 hours from UTC
    time.tzset()
    try:
        delays = [retry_after_ms(httpx.Headers({"retry-after": value})) for value in (utc, unzoned)]
    finally:
        monkeypatch.undo()
        time.tzset()
    assert all(d is not None and 55_000 < d <= 60_000 for d in delays), delays


def test_text_with_unicode_line_separators_is_one_event(server: SSEServer) -> None:
    # U+2028 and U+2029 are valid unescaped in JSON; the SSE parser must split lines on CR and LF only.
    text = "one\u2028two\u2029three\x85four"
    events: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1}},
    ]
    server.script(SSE(openai_events(events)))
    assert sf.assemble(asyncio.run(collect(sf.OpenAICompatibleAdapter(server.url)))).text == text


def test_connection_refused_is_transport() -> None:
    with SSEServer() as gone:
        url = gone.url
    error = failure(sf.OpenAICompatibleAdapter(url))
    assert error.code == E.TRANSPORT


def test_a_silent_server_times_out(server: SSEServer) -> None:
    server.script(SSE(openai_events(TOOL_CALL), delay=0.5))
    error = failure(sf.OpenAICompatibleAdapter(server.url, timeout=0.1))
    assert error.code == E.TIMEOUT


def test_a_failure_before_streaming_leaves_the_machine_untouched(server: SSEServer) -> None:
    server.script(Reply(500, "down"), SSE(openai_events(TOOL_CALL)))
    adapter = sf.OpenAICompatibleAdapter(server.url)
    assert failure(adapter).code == E.SERVER
    assert sf.assemble(asyncio.run(collect(adapter))).finish.kind == "tool-calls"  # the next call starts afresh


# --- Cancellation -----------------------------------------------------------------------------------

SLOW = SSE(openai_events(TEXT * 5), delay=0.01)


def test_abort_tears_the_request_down_at_once(server: SSEServer) -> None:
    server.script(SLOW)
    controller = sf.AbortController()
    options = ASK.model_copy(update={"signal": controller.signal})
    received = 0
    aborted_at = 0.0

    async def consume() -> None:
        nonlocal received, aborted_at
        async for _ in sf.OpenAICompatibleAdapter(server.url).generate(options):
            received += 1
            if received == 5:
                loop = asyncio.get_running_loop()
                loop.call_later(0.03, lambda: (controller.abort("user pressed stop"), None))

    started = time.monotonic()
    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(consume())
    raised_at = time.monotonic()
    assert caught.value.code == E.ABORTED and "user pressed stop" in caught.value.message
    assert received >= 5
    assert raised_at - started < 5
    # The server sees the connection go (its next write fails) and nothing is left being answered.
    assert wait_for(lambda: server.active == 0)
    assert len(server.disconnects) == 1


def test_abort_is_honoured_at_once_not_at_the_next_event(server: SSEServer) -> None:
    """The server sends an event a second: an abort 0.1 s after one is honoured long before the next (a bound of
    0.5 s, which a loaded machine's pauses stay under)."""
    server.script(SSE(openai_events(TEXT * 5), delay=1.0))
    controller = sf.AbortController()
    options = ASK.model_copy(update={"signal": controller.signal})
    timings: dict[str, float] = {}

    async def consume() -> None:
        streaming = asyncio.Event()

        async def abort_later() -> None:
            await streaming.wait()
            await asyncio.sleep(0.1)  # the stream is waiting for the server's next event
            timings["abort"] = time.monotonic()
            controller.abort()

        aborter = asyncio.create_task(abort_later())
        try:
            async for _ in sf.OpenAICompatibleAdapter(server.url).generate(options):
                streaming.set()
        finally:
            timings["raised"] = time.monotonic()
            await aborter

    with pytest.raises(sf.LlmError, match="aborted"):
        asyncio.run(consume())
    assert timings["raised"] - timings["abort"] < 0.5
    assert wait_for(lambda: server.active == 0 and len(server.disconnects) == 1, 5.0)  # at its next write


def test_abort_while_waiting_for_the_response_headers(server: SSEServer) -> None:
    server.script(Reply(200, {"never": "read"}, delay=1.0))
    controller = sf.AbortController()
    options = ASK.model_copy(update={"signal": controller.signal})
    left: list[asyncio.Task[Any]] = []

    async def consume() -> None:
        asyncio.get_running_loop().call_later(0.1, controller.abort)
        try:
            await collect(sf.OpenAICompatibleAdapter(server.url), options)
        finally:
            left.extend(t for t in asyncio.all_tasks() if t is not asyncio.current_task())

    started = time.monotonic()
    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(consume())
    assert caught.value.code == E.ABORTED
    assert time.monotonic() - started < 0.5  # not the server's 1 s
    assert left == []


def test_abort_from_another_thread(server: SSEServer) -> None:
    import threading

    server.script(SLOW)
    controller = sf.AbortController()
    threading.Timer(0.1, controller.abort).start()
    error = failure(sf.OpenAICompatibleAdapter(server.url), ASK.model_copy(update={"signal": controller.signal}))
    assert error.code == E.ABORTED
    assert wait_for(lambda: server.active == 0)


def test_abort_while_the_consumer_is_busy_closes_the_response(server: SSEServer) -> None:
    server.script(SLOW)
    controller = sf.AbortController()
    options = ASK.model_copy(update={"signal": controller.signal})

    async def consume() -> None:
        async for _ in sf.OpenAICompatibleAdapter(server.url).generate(options):
            controller.abort()  # the stream is suspended at its yield, not waiting on the network
            await asyncio.sleep(0.05)

    with pytest.raises(sf.LlmError, match="aborted"):
        asyncio.run(consume())
    assert wait_for(lambda: server.active == 0)


def test_aborting_after_the_event_loop_closed_does_not_raise() -> None:
    # A stream whose generator was never closed keeps its listener; abort() must not fail in the caller.
    from streamfsm._providers.http import _Guard

    controller = sf.AbortController()

    async def open_guard() -> None:
        _Guard(controller.signal)

    asyncio.run(open_guard())
    assert controller.abort() is True


def test_a_signal_aborted_before_the_call_makes_no_request(server: SSEServer) -> None:
    controller = sf.AbortController()
    controller.abort()
    error = failure(sf.OpenAICompatibleAdapter(server.url), ASK.model_copy(update={"signal": controller.signal}))
    assert error.code == E.ABORTED and server.requests == []


def test_cancelling_the_task_propagates_and_closes_the_connection(server: SSEServer) -> None:
    server.script(SLOW)

    async def main() -> None:
        streaming = asyncio.Event()

        async def consume() -> None:
            async for _ in sf.OpenAICompatibleAdapter(server.url).generate(ASK):
                streaming.set()

        task = asyncio.create_task(consume())
        await streaming.wait()
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    asyncio.run(main())
    assert wait_for(lambda: server.active == 0)
    assert len(server.disconnects) == 1


# --- Anthropic --------------------------------------------------------------------------------------


def test_anthropic_stream_and_request(server: SSEServer) -> None:
    server.script(SSE(anthropic_events(ANTHROPIC_TOOL)))
    adapter = sf.AnthropicAdapter(api_key="sk-ant", base_url=server.url)
    options = ASK.model_copy(update={"model": "claude-sonnet-4", "system": "Be brief.", "stop": ("END",)})
    result = sf.assemble(asyncio.run(collect(adapter, options)))
    assert result.tool_calls[0].parsed_arguments == {"location": "Paris"}
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant" and request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["user-agent"] == sf.attribution_headers()["user-agent"]
    assert request.json() == {
        "model": "claude-sonnet-4",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "What is the weather?"}]}],
        "stream": True,
        "system": "Be brief.",
        "stop_sequences": ["END"],
    }


def test_anthropic_sends_thinking_back_with_its_signature(server: SSEServer) -> None:
    from .test_converters import MESSAGE_START, THINKING, a_finish

    server.script(SSE(anthropic_events(ANTHROPIC_TOOL)))
    earlier = sf.assemble(sf.from_anthropic_events([MESSAGE_START, *THINKING, *a_finish("tool_use")]))
    options = ASK.model_copy(
        update={
            "model": "claude",
            "messages": (
                sf.UserMessage(content="list"),
                sf.AssistantMessage.from_result(earlier),
                sf.ToolResultMessage(tool_call_id="toolu_1", content="no such dir", is_error=True),
            ),
        }
    )
    asyncio.run(collect(sf.AnthropicAdapter(base_url=server.url), options))
    assert server.requests[0].json()["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig=="},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such dir", "is_error": True}],
        },
    ]


@pytest.mark.parametrize(
    ("response", "code"),
    [
        (SSE(anthropic_events(ANTHROPIC_TOOL[:-1])), E.STREAM_CLOSED),
        (
            SSE(
                anthropic_events(
                    [
                        ANTHROPIC_TOOL[0],
                        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                    ]
                )
            ),
            E.SERVER,
        ),
        (Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), E.SERVER),
        (
            SSE(anthropic_events([ANTHROPIC_TOOL[0], {"type": "error", "error": {"message": "down", "status": 503}}])),
            E.SERVER,  # its status, not its (absent) type
        ),
        (
            Reply(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "prompt is too long: 210000 tokens > 200000 maximum",
                    },
                },
            ),
            E.CONTEXT_WINDOW_EXCEEDED,  # Anthropic's wording of a context overflow
        ),
        (
            Reply(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "Your credit balance is too low to access the Anthropic API. Please go to Plans "
                        "& Billing to upgrade or purchase credits.",
                    },
                },
            ),
            E.QUOTA,
        ),
        (SSE(["event: message_start\ndata: {oops"]), E.MALFORMED_RESPONSE),
    ],
)
def test_anthropic_failures(server: SSEServer, response: SSE | Reply, code: sf.ErrorCode) -> None:
    server.script(response)
    assert failure(sf.AnthropicAdapter(base_url=server.url)).code == code


def test_anthropic_reasoning_effort_becomes_a_thinking_budget(server: SSEServer) -> None:
    server.script(SSE(anthropic_events(ANTHROPIC_TOOL)))
    efforts = tuple(sf.ReasoningEffortInfo(id=i, name=i.title()) for i in ("off", "low", "high"))
    model = sf.ModelInfo(
        provider="anthropic", id="claude", name="Claude", reasoning=sf.ModelReasoningInfo(efforts=efforts)
    )
    adapter = sf.AnthropicAdapter(base_url=server.url, models=[model])
    asyncio.run(collect(adapter, ASK.model_copy(update={"model": "claude", "reasoning_effort": "high"})))
    assert server.requests[0].json()["thinking"] == {"type": "enabled", "budget_tokens": 16384}


@pytest.mark.parametrize(("max_tokens", "sent"), [(None, 16384 + 4096), (20000, 20000)])
def test_anthropic_leaves_room_for_the_answer_beside_the_thinking_budget(
    server: SSEServer, max_tokens: int | None, sent: int
) -> None:
    # The API refuses a max_tokens that is not above thinking.budget_tokens: the default must leave room.
    server.script(SSE(anthropic_events(ANTHROPIC_TOOL)))
    efforts = (sf.ReasoningEffortInfo(id="high", name="High"),)
    model = sf.ModelInfo(provider="anthropic", id="claude", name="C", reasoning=sf.ModelReasoningInfo(efforts=efforts))
    adapter = sf.AnthropicAdapter(base_url=server.url, models=[model])
    options = ASK.model_copy(update={"model": "claude", "reasoning_effort": "high", "max_tokens": max_tokens})
    asyncio.run(collect(adapter, options))
    assert server.requests[0].json()["max_tokens"] == sent


def test_list_models_from_the_endpoint(server: SSEServer) -> None:
    server.script(Reply(200, {"object": "list", "data": [{"id": "deepseek-chat"}, {"id": "deepseek-reasoner"}]}))
    models = asyncio.run(sf.OpenAICompatibleAdapter(server.url).list_models())
    assert [m.id for m in models] == ["deepseek-chat", "deepseek-reasoner"]
    assert server.requests[0].method == "GET" and server.requests[0].path == "/models"
    assert server.requests[0].headers["user-agent"] == sf.attribution_headers()["user-agent"]

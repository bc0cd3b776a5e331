"""OpenAIResponsesAdapter against a real server on 127.0.0.1 (tests/sse_server.py): the request, streams,
failures, aborting, and a conversation sent back turn after turn."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm._providers.openai_responses import from_openai_responses_events
from streamfsm._providers.openai_responses_adapter import OpenAIResponsesAdapter

from ..data import recording
from ..sse_server import SSE, Reply, SSEServer, wait_for
from .test_openai_responses import RESPONSES

E = sf.ErrorCode
TEXT = recording(RESPONSES / "xai-text-with-reasoning-streaming.1.jsonl")
TOOL_CALL = recording(RESPONSES / "azure-tool-call.1.jsonl")
LMSTUDIO = recording(RESPONSES / "lmstudio-tool-call.1.jsonl")
WEB_SEARCH = recording(RESPONSES / "openai-web-search-tool.1.jsonl")
CUSTOM = recording(RESPONSES / "openai-custom-tool.1.jsonl")
FAILED = recording(RESPONSES / "openai-error.1.jsonl")
ASK = sf.GenerateOptions(model="gpt-5", messages=(sf.UserMessage(content="What is the weather?"),))
EFFORTS = sf.ModelReasoningInfo(
    efforts=(sf.ReasoningEffortInfo(id="low", name="Low"), sf.ReasoningEffortInfo(id="high", name="High"))
)
GPT5 = sf.ModelInfo(provider="openai-responses", id="gpt-5", name="GPT-5", reasoning=EFFORTS)


def events(recorded: Iterable[Mapping[str, Any]]) -> list[str]:
    """``event:``/``data:`` pairs, as the Responses API streams them."""
    return [f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}" for e in recorded]


async def collect(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> list[sf.StreamChunk]:
    return [chunk async for chunk in adapter.generate(options)]


def run(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> sf.StreamResult:
    return sf.assemble(asyncio.run(collect(adapter, options)))


def failure(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> sf.LlmError:
    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(collect(adapter, options))
    return caught.value


def done_items(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["item"] for e in recorded if e["type"] == "response.output_item.done"]


# --- Streams and the request --------------------------------------------------------------------------


def test_text_stream_and_the_request(server: SSEServer) -> None:
    server.script(SSE(events(TEXT)))
    tool = sf.ToolSchema(name="weather", description="Weather", parameters={"type": "object"})
    options = ASK.model_copy(
        update={
            "system": "Be brief.",
            "tools": (tool,),
            "temperature": 0.5,
            "max_tokens": 300,
            "reasoning_effort": "high",
        }
    )
    adapter = OpenAIResponsesAdapter(server.url + "/v1/", api_key="sk-test", models=[GPT5])
    result = run(adapter, options)
    assert result.text.startswith("### Overview of Sonoran Cuisine") and result.reasoning.startswith("First,")
    assert result.finish.kind == "stop" and result.usage is not None and result.usage.cache_read_tokens == 192
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/responses")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["user-agent"] == sf.attribution_headers()["user-agent"]
    assert request.headers["accept"] == "text/event-stream"
    assert request.json() == {
        "model": "gpt-5",
        "input": [{"role": "user", "content": "What is the weather?"}],
        "stream": True,
        "instructions": "Be brief.",
        "tools": [
            {
                "type": "function",
                "name": "weather",
                "description": "Weather",
                "parameters": {"type": "object"},
                "strict": False,
            }
        ],
        "temperature": 0.5,
        "max_output_tokens": 300,
        "reasoning": {"effort": "high", "summary": "auto"},
    }


def test_tool_call_stream(server: SSEServer) -> None:
    server.script(SSE(events(TOOL_CALL)))
    result = run(OpenAIResponsesAdapter(server.url, api_key="sk-test"))
    assert result.finish.kind == "tool-calls"
    assert [(c.id, c.name, c.parsed_arguments) for c in result.tool_calls] == [
        ("call_H5DxLSFnsGhiROnUiDHmgyc8", "weather", {"location": "San Francisco"})
    ]
    assert result.usage == sf.Usage(input_tokens=45, output_tokens=24, cache_read_tokens=0, reasoning_tokens=0)


def test_store_false_asks_for_the_encrypted_reasoning(server: SSEServer) -> None:
    server.script(SSE(events(TEXT)))
    run(
        OpenAIResponsesAdapter(server.url, store=False, reasoning_summary=None, strict_tools=True, models=[GPT5]),
        ASK.model_copy(update={"reasoning_effort": "low", "tools": (sf.ToolSchema(name="f"),)}),
    )
    body = server.requests[0].json()
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "low"} and body["tools"][0]["strict"] is True


def test_options_the_api_cannot_honour_are_refused_before_any_request(server: SSEServer) -> None:
    adapter = OpenAIResponsesAdapter(server.url, models=[GPT5])
    stop = failure(adapter, ASK.model_copy(update={"stop": ("END",)}))
    assert stop.code == E.UNSUPPORTED_OPTION and "'stop'" in stop.message
    effort = failure(adapter, ASK.model_copy(update={"reasoning_effort": "extreme"}))
    assert effort.code == E.UNSUPPORTED_REASONING_EFFORT
    assert failure(adapter, ASK.model_copy(update={"session_id": "s"})).code == E.UNSUPPORTED_OPTION
    assert server.requests == []


def test_a_key_that_cannot_be_sent_is_refused_at_once() -> None:
    with pytest.raises(sf.LlmError) as caught:
        OpenAIResponsesAdapter(api_key="sk-secret-key\n")
    assert caught.value.code == E.AUTH and "sk-secret" not in caught.value.message


def test_azure_takes_its_key_in_a_header_and_it_is_redacted(server: SSEServer) -> None:
    server.script(Reply(401, {"error": {"message": "bad key azkey-0123456789", "code": "401"}}))
    adapter = OpenAIResponsesAdapter(server.url + "/openai/v1", headers={"api-key": "azkey-0123456789"})
    error = failure(adapter)
    assert error.code == E.AUTH and "azkey-0123456789" not in error.message
    assert server.requests[0].headers["api-key"] == "azkey-0123456789"
    assert server.requests[0].path == "/openai/v1/responses"


# --- Failures -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "code", "retry_after_ms"),
    [
        (Reply(401, {"error": {"message": "Incorrect API key", "type": "invalid_request_error"}}), E.AUTH, None),
        (Reply(429, {"error": {"message": "Rate limit reached"}}, {"retry-after": "2"}), E.RATE_LIMIT, 2000),
        (Reply(500, {"error": {"message": "The server had an error"}}), E.SERVER, None),
        (Reply(400, {"error": {"message": "Your input exceeds the context window"}}), E.CONTEXT_WINDOW_EXCEEDED, None),
    ],
)
def test_http_failures(server: SSEServer, reply: Reply, code: sf.ErrorCode, retry_after_ms: int | None) -> None:
    server.script(reply)
    error = failure(OpenAIResponsesAdapter(server.url, api_key="sk-test"))
    assert (error.code, error.status, error.retry_after_ms) == (code, reply.status, retry_after_ms)


def test_a_failed_response_is_its_coded_error(server: SSEServer) -> None:
    server.script(SSE(events(FAILED)))
    error = failure(OpenAIResponsesAdapter(server.url))
    assert error.code == E.QUOTA and not error.retryable


def test_a_response_failed_by_the_server_is_retryable(server: SSEServer) -> None:
    failed = {
        "type": "response.failed",
        "response": {**TEXT[0]["response"], "status": "failed", "error": {"code": "server_error", "message": "try"}},
    }
    server.script(SSE(events([TEXT[0], failed])))
    error = failure(OpenAIResponsesAdapter(server.url))
    assert error.code == E.SERVER and error.retryable and "try" in error.message


@pytest.mark.parametrize(
    ("response", "code", "words"),
    [
        (SSE(events(TEXT[:-1])), E.STREAM_CLOSED, "without response.completed"),
        (SSE(events(TEXT[:40]), end="drop"), E.TRANSPORT, "connection failed"),
        (SSE([*events(TEXT[:3]), "data: {not json"]), E.MALFORMED_RESPONSE, "not JSON"),
        (Reply(200, {"id": "resp_1", "object": "response"}), E.MALFORMED_RESPONSE, "text/event-stream"),
    ],
)
def test_broken_streams(server: SSEServer, response: SSE | Reply, code: sf.ErrorCode, words: str) -> None:
    server.script(response)
    error = failure(OpenAIResponsesAdapter(server.url))
    assert error.code == code and words in error.message


def test_the_bounds_hold(server: SSEServer) -> None:
    # response.completed repeats the whole output: an event bound below it is LIMIT_EXCEEDED.
    server.script(SSE(events(TEXT)), SSE(events(TEXT), delay=0.2))
    assert failure(OpenAIResponsesAdapter(server.url, max_event_bytes=4096)).code == E.LIMIT_EXCEEDED
    error = failure(OpenAIResponsesAdapter(server.url, timeout=5, deadline=0.5))
    assert error.code == E.TIMEOUT and "deadline of 0.5 s" in error.message


# --- Cancellation -------------------------------------------------------------------------------------


def test_abort_tears_the_request_down(server: SSEServer) -> None:
    server.script(SSE(events(TEXT), delay=0.01))
    controller = sf.AbortController()
    options = ASK.model_copy(update={"signal": controller.signal})
    received = 0

    async def consume() -> None:
        nonlocal received
        async for _ in OpenAIResponsesAdapter(server.url).generate(options):
            received += 1
            if received == 5:
                controller.abort("user pressed stop")

    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(consume())
    assert caught.value.code == E.ABORTED and "user pressed stop" in caught.value.message
    assert wait_for(lambda: server.active == 0)
    assert len(server.disconnects) == 1


# --- The SDK's own stream -----------------------------------------------------------------------------


def test_the_openai_sdks_stream_converts(server: SSEServer) -> None:
    """The events the ``openai`` SDK itself yields (``client.responses.create(stream=True)``), sync and async."""
    import openai

    server.script(SSE(events(LMSTUDIO)), SSE(events(LMSTUDIO)))
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
    with client.responses.create(model="gpt-5", input="weather?", stream=True) as stream:
        result = sf.assemble(from_openai_responses_events(stream))
    assert result == sf.assemble(from_openai_responses_events(LMSTUDIO))

    async def consume() -> sf.StreamResult:
        async_client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
        async with await async_client.responses.create(model="gpt-5", input="weather?", stream=True) as events:
            return await sf.aassemble(from_openai_responses_events(events))

    assert asyncio.run(consume()) == result
    assert server.requests[0].path == "/v1/responses"


# --- A conversation, turn after turn ------------------------------------------------------------------


def test_a_tool_turn_goes_back_as_its_items_with_the_reasoning_kept(server: SSEServer) -> None:
    server.script(SSE(events(LMSTUDIO)), SSE(events(TEXT)))
    adapter = OpenAIResponsesAdapter(server.url)
    first = run(adapter)
    call = first.tool_calls[0]
    conversation = (
        *ASK.messages,
        sf.AssistantMessage.from_result(first),
        sf.ToolResultMessage(tool_call_id=call.id, content="sunny, 21 °C"),
    )
    run(adapter, ASK.model_copy(update={"messages": conversation}))

    reasoning, msg, function_call = done_items(LMSTUDIO)
    assert server.requests[1].json()["input"] == [
        {"role": "user", "content": "What is the weather?"},
        reasoning,  # kept verbatim, where it came
        {
            "type": "message",
            "role": "assistant",
            "id": msg["id"],
            "status": "completed",
            "content": [{"type": "output_text", "text": msg["content"][0]["text"], "annotations": []}],
        },
        {
            "type": "function_call",
            "id": function_call["id"],
            "call_id": function_call["call_id"],
            "name": "weather",
            "arguments": function_call["arguments"],
        },
        {"type": "function_call_output", "call_id": function_call["call_id"], "output": "sunny, 21 °C"},
    ]


def test_server_tools_and_citations_go_back_in_order(server: SSEServer) -> None:
    server.script(SSE(events(WEB_SEARCH)), SSE(events(TEXT)))
    adapter = OpenAIResponsesAdapter(server.url)
    first = run(adapter)
    again = sf.UserMessage(content="And tomorrow?")
    run(adapter, ASK.model_copy(update={"messages": (*ASK.messages, sf.AssistantMessage.from_result(first), again)}))

    *tools, answer = done_items(WEB_SEARCH)
    (part,) = answer["content"]
    sent = server.requests[1].json()["input"]
    assert sent[1:-1] == [
        *tools,  # six reasoning items and web searches, then the last reasoning item: verbatim, in order
        {
            "type": "message",
            "role": "assistant",
            "id": answer["id"],
            "status": "completed",
            "content": [{"type": "output_text", "text": part["text"], "annotations": part["annotations"]}],
        },
    ]
    assert sent[-1] == {"role": "user", "content": "And tomorrow?"}


def test_a_custom_tool_call_goes_back_with_its_input_and_output(server: SSEServer) -> None:
    server.script(SSE(events(CUSTOM)), SSE(events(TEXT)))
    adapter = OpenAIResponsesAdapter(server.url)
    first = run(adapter)
    call = first.tool_calls[0]
    result = sf.ToolResultMessage(tool_call_id=call.id, content="3 rows")
    run(adapter, ASK.model_copy(update={"messages": (*ASK.messages, sf.AssistantMessage.from_result(first), result)}))
    (item,) = done_items(CUSTOM)
    assert server.requests[1].json()["input"][1:] == [
        {
            "type": "custom_tool_call",
            "id": item["id"],
            "call_id": item["call_id"],
            "name": "write_sql",
            "input": "SELECT * FROM users WHERE age > 25",
        },
        {"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "3 rows"},
    ]


def test_a_refusal_and_a_turn_from_elsewhere_go_back_as_messages(server: SSEServer) -> None:
    refused = sf.assemble(
        [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "No."},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "No."}},
            {"type": "block-start", "index": 1, "blockType": "reasoning"},
            {"type": "block-end", "index": 1, "block": {"type": "reasoning", "text": "hm"}},
            {"type": "block-start", "index": 2, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 2, "id": "c9", "name": "ls", "argumentsDelta": "{}"},
            {
                "type": "block-end",
                "index": 2,
                "block": {"type": "tool-call", "id": "c9", "name": "ls", "arguments": "{}"},
            },
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
            {
                "type": "finish",
                "reason": {"kind": "tool-calls"},
                "replayState": {"blocks": [{"item": "msg_9", "part": "refusal"}]},
            },
        ]
    )
    server.script(SSE(events(TEXT)))
    messages = (sf.AssistantMessage.from_result(refused), sf.ToolResultMessage(tool_call_id="c9", content="x"))
    run(OpenAIResponsesAdapter(server.url), ASK.model_copy(update={"messages": messages}))
    assert server.requests[0].json()["input"] == [
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_9",
            "status": "completed",
            "content": [{"type": "refusal", "refusal": "No."}],
        },
        # Reasoning without the provider's item cannot be sent; a call without an item id goes without one.
        {"type": "function_call", "call_id": "c9", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c9", "output": "x"},
    ]

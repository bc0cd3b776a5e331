"""GeminiAdapter against a real server on 127.0.0.1 (tests/sse_server.py): requests, streams, failures, aborting,
and a conversation sent back with its thought signatures and kept parts where they came."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm._providers.gemini import from_gemini_chunks
from streamfsm._providers.gemini_adapter import GeminiAdapter

from ..data import MORE_PROVIDER_STREAMS, recording
from ..sse_server import SSE, Reply, SSEServer, wait_for
from .test_gemini import USAGE, call, chunk, end

E = sf.ErrorCode
TOOL_CALL = recording(MORE_PROVIDER_STREAMS / "gemini" / "google-tool-call.jsonl")
TEXT = recording(MORE_PROVIDER_STREAMS / "gemini" / "google-text.jsonl")
ASK = sf.GenerateOptions(model="gemini-2.5-flash", messages=(sf.UserMessage(content="What is the weather?"),))
PATH = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


def events(chunks: list[dict[str, Any]]) -> list[str]:
    """``data:`` events, as Gemini sends them with ``alt=sse`` (no end marker)."""
    return [f"data: {orjson.dumps(c).decode()}" for c in chunks]


async def collect(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> list[sf.StreamChunk]:
    return [c async for c in adapter.generate(options)]


def failure(adapter: sf.LlmAdapter, options: sf.GenerateOptions = ASK) -> sf.LlmError:
    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(collect(adapter, options))
    return caught.value


def efforts(*ids: str) -> sf.ModelReasoningInfo:
    return sf.ModelReasoningInfo(efforts=tuple(sf.ReasoningEffortInfo(id=i, name=i) for i in ids))


# --- Streams and requests ---------------------------------------------------------------------------


def test_text_stream_and_the_request(server: SSEServer) -> None:
    server.script(SSE(events(TEXT)))
    options = ASK.model_copy(
        update={
            "system": "Be brief.",
            "tools": (sf.ToolSchema(name="weather", description="Weather", parameters={"type": "object"}),),
            "temperature": 0.5,
            "max_tokens": 300,
            "stop": ("END",),
        }
    )
    result = sf.assemble(asyncio.run(collect(GeminiAdapter(api_key="g-key", base_url=server.url + "/"), options)))
    assert result.text == 'There are **3** "r"s in strawberry.\n\nst**r**awbe**rr**y'
    assert result.usage == sf.Usage(input_tokens=9, output_tokens=208, reasoning_tokens=185)
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", PATH)
    assert request.headers["x-goog-api-key"] == "g-key" and "authorization" not in request.headers
    assert request.headers["user-agent"] == sf.attribution_headers()["user-agent"]
    assert request.json() == {
        "contents": [{"role": "user", "parts": [{"text": "What is the weather?"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {"name": "weather", "description": "Weather", "parametersJsonSchema": {"type": "object"}}
                ]
            }
        ],
        "generationConfig": {"temperature": 0.5, "maxOutputTokens": 300, "stopSequences": ["END"]},
    }


def test_tool_call_stream(server: SSEServer) -> None:
    server.script(SSE(events(TOOL_CALL)))
    result = sf.assemble(asyncio.run(collect(GeminiAdapter(base_url=server.url))))
    assert result.finish.kind == "tool-calls"
    assert [(c.id, c.name, c.parsed_arguments) for c in result.tool_calls] == [
        ("call_b36LacjwM668nsEP2tbsgQQ_0", "weather", {"location": "San Francisco"})
    ]
    assert "x-goog-api-key" not in server.requests[0].headers  # no key, no header


@pytest.mark.parametrize(
    ("model", "path"),
    [
        ("models/gemini-2.5-pro", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"),
        ("tunedModels/my-model", "/v1beta/tunedModels/my-model:streamGenerateContent?alt=sse"),
        ("odd name?x", "/v1beta/models/odd%20name%3Fx:streamGenerateContent?alt=sse"),
    ],
)
def test_the_model_goes_in_the_path(server: SSEServer, model: str, path: str) -> None:
    server.script(SSE(events(TEXT)))
    asyncio.run(collect(GeminiAdapter(base_url=server.url), ASK.model_copy(update={"model": model})))
    assert server.requests[0].path == path


def test_a_conversation_goes_back_with_its_signatures_and_kept_parts_in_place(server: SSEServer) -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}, "thoughtSignature": "sigC"}
    first = sf.assemble(
        from_gemini_chunks(
            [
                chunk({"text": "Plan ", "thought": True}, {"text": "it.", "thought": True, "thoughtSignature": "sigT"}),
                chunk({"text": "Hel"}, {"text": "lo", "thoughtSignature": "sigA"}, code),
                chunk({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}),
                chunk(call("weather", args={"city": "Paris"})),
                chunk({**call("weather", args={"city": "Rome"}, id="fc-1"), "thoughtSignature": "sigF"}),
                chunk(
                    {"text": "", "thoughtSignature": "sigEnd"}, finish="STOP", usage=USAGE, groundingMetadata={"x": 1}
                ),
            ]
        )
    )
    paris, rome = first.tool_calls
    server.script(SSE(events(TEXT)))
    options = ASK.model_copy(
        update={
            "messages": (
                sf.UserMessage(content="weather?"),
                sf.AssistantMessage.from_result(first),
                sf.ToolResultMessage(tool_call_id=paris.id, content="sunny"),
                sf.ToolResultMessage(tool_call_id=rome.id, content="no such city", is_error=True),
                sf.UserMessage(content="thanks"),
            )
        }
    )
    asyncio.run(collect(GeminiAdapter(base_url=server.url), options))
    assert server.requests[0].json()["contents"] == [
        {"role": "user", "parts": [{"text": "weather?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Plan ", "thought": True},
                {"text": "it.", "thought": True, "thoughtSignature": "sigT"},
                {"text": "Hel"},
                {"text": "lo", "thoughtSignature": "sigA"},
                code,
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
                {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
                {
                    "functionCall": {"name": "weather", "args": {"city": "Rome"}, "id": "fc-1"},
                    "thoughtSignature": "sigF",
                },
                {"text": "", "thoughtSignature": "sigEnd"},  # the grounding metadata is the user's to read, not sent
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "weather", "response": {"output": "sunny"}}},
                {"functionResponse": {"name": "weather", "response": {"error": "no such city"}, "id": "fc-1"}},
            ],
        },
        {"role": "user", "parts": [{"text": "thanks"}]},
    ]


def test_a_recorded_turn_round_trips(server: SSEServer) -> None:
    server.script(SSE(events(TOOL_CALL)), SSE(events(TEXT)))
    adapter = GeminiAdapter(base_url=server.url)
    turn = sf.assemble(asyncio.run(collect(adapter)))
    (weather,) = turn.tool_calls
    follow_up = ASK.model_copy(
        update={
            "messages": (
                *ASK.messages,
                sf.AssistantMessage.from_result(turn),
                sf.ToolResultMessage(tool_call_id=weather.id, content="18 C"),
            )
        }
    )
    asyncio.run(collect(adapter, follow_up))
    signature = TOOL_CALL[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    assert server.requests[1].json()["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "weather", "args": {"location": "San Francisco"}},
                    "thoughtSignature": signature,
                }
            ],
        },
        {"role": "user", "parts": [{"functionResponse": {"name": "weather", "response": {"output": "18 C"}}}]},
    ]


def test_another_apis_turn_goes_without_its_reasoning_and_replay_state(server: SSEServer) -> None:
    server.script(SSE(events(TEXT)))
    other = sf.AssistantMessage(
        blocks=(sf.ReasoningBlock(text="hmm"), sf.TextBlock(text="hi")),
        replay_state={
            "blocks": [{"signature": "anthropic"}],
            "kept": [{"type": "server_tool_use", "at": 0, "data": {}}],
        },
    )
    asyncio.run(collect(GeminiAdapter(base_url=server.url), ASK.model_copy(update={"messages": (other,)})))
    assert server.requests[0].json()["contents"] == [{"role": "model", "parts": [{"text": "hi"}]}]


def test_a_tool_result_for_an_unknown_call_is_refused_before_any_request(server: SSEServer) -> None:
    options = ASK.model_copy(update={"messages": (sf.ToolResultMessage(tool_call_id="nope", content="x"),)})
    error = failure(GeminiAdapter(base_url=server.url), options)
    assert error.code == E.INVALID_REQUEST and "'nope'" in error.message
    assert server.requests == []


# --- Options and reasoning efforts --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "effort", "config"),
    [
        ("gemini-2.5-flash", "off", {"thinkingBudget": 0}),
        ("gemini-2.5-flash", "high", {"thinkingBudget": 24576, "includeThoughts": True}),
        ("models/gemini-2.5-pro", "dynamic", {"thinkingBudget": -1, "includeThoughts": True}),
        ("gemini-3-pro-preview", "high", {"thinkingLevel": "high", "includeThoughts": True}),
        ("gemini-3-flash", "minimal", {"thinkingLevel": "minimal", "includeThoughts": True}),
        ("gemini-3-pro-preview", "dynamic", {"thinkingBudget": -1, "includeThoughts": True}),
    ],
)
def test_a_reasoning_effort_becomes_a_thinking_config(
    server: SSEServer, model: str, effort: str, config: dict[str, Any]
) -> None:
    server.script(SSE(events(TEXT)))
    info = sf.ModelInfo(provider="gemini", id=model, name=model, reasoning=efforts(effort))
    adapter = GeminiAdapter(base_url=server.url, models=[info])
    asyncio.run(collect(adapter, ASK.model_copy(update={"model": model, "reasoning_effort": effort})))
    assert server.requests[0].json()["generationConfig"] == {"thinkingConfig": config}


@pytest.mark.parametrize(("model", "effort"), [("gemini-2.5-flash", "minimal"), ("gemini-3-pro", "extreme")])
def test_an_effort_with_no_budget_or_level_is_refused(server: SSEServer, model: str, effort: str) -> None:
    info = sf.ModelInfo(provider="gemini", id=model, name=model, reasoning=efforts(effort))
    adapter = GeminiAdapter(base_url=server.url, models=[info])
    error = failure(adapter, ASK.model_copy(update={"model": model, "reasoning_effort": effort}))
    assert error.code == E.UNSUPPORTED_REASONING_EFFORT and server.requests == []


def test_options_it_cannot_honour_are_refused(server: SSEServer) -> None:
    error = failure(GeminiAdapter(base_url=server.url), ASK.model_copy(update={"session_id": "s1"}))
    assert error.code == E.UNSUPPORTED_OPTION and "session_id" in error.message
    assert failure(GeminiAdapter(base_url=server.url), ASK.model_copy(update={"reasoning_effort": "high"})).code == (
        E.UNSUPPORTED_REASONING_EFFORT  # a model that declares no efforts
    )
    assert server.requests == []


def test_a_key_that_cannot_be_sent_is_refused_and_never_shown() -> None:
    with pytest.raises(sf.LlmError) as caught:
        GeminiAdapter(api_key="AIza-secret\n")
    assert caught.value.code == E.AUTH and "AIza-secret" not in str(caught.value)
    with pytest.raises(ValueError, match="api_version"):
        GeminiAdapter(api_version="v1/../x")


# --- Failures ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "code", "retry_after_ms"),
    [
        (
            Reply(
                400, {"error": {"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}}
            ),
            E.INVALID_REQUEST,
            None,
        ),
        (
            Reply(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": "API key not valid. Please pass a valid API key.",
                        "status": "INVALID_ARGUMENT",
                    }
                },
            ),
            E.AUTH,  # Gemini answers a bad key with 400
            None,
        ),
        (Reply(401, {"error": {"code": 401, "message": "unauthenticated", "status": "UNAUTHENTICATED"}}), E.AUTH, None),
        (Reply(403, {"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}}), E.AUTH, None),
        (
            Reply(
                429,
                {
                    "error": {
                        "code": 429,
                        "message": "You exceeded your current quota, please check your plan.",
                        "status": "RESOURCE_EXHAUSTED",
                        "details": [
                            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"},
                        ],
                    }
                },
            ),
            E.RATE_LIMIT,
            34400,
        ),
        (Reply(429, {"error": {"code": 429, "message": "slow down"}}, {"retry-after": "2"}), E.RATE_LIMIT, 2000),
        (Reply(500, {"error": {"code": 500, "message": "internal", "status": "INTERNAL"}}), E.SERVER, None),
        (Reply(503, [{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}]), E.SERVER, None),
        (
            Reply(
                400,
                [
                    {
                        "error": {
                            "code": 400,
                            "message": "The input token count (2551556) exceeds the maximum number of tokens allowed "
                            "(1048576).",
                        }
                    }
                ],
            ),
            E.CONTEXT_WINDOW_EXCEEDED,
            None,
        ),
    ],
)
def test_http_failures(server: SSEServer, reply: Reply, code: sf.ErrorCode, retry_after_ms: int | None) -> None:
    server.script(reply)
    error = failure(GeminiAdapter(api_key="AIza-test", base_url=server.url))
    assert (error.code, error.status, error.retry_after_ms) == (code, reply.status, retry_after_ms)
    assert f"HTTP {reply.status}" in error.message and "AIza-test" not in error.message


@pytest.mark.parametrize(
    ("response", "code", "words"),
    [
        (SSE(events(TOOL_CALL[:1])), E.STREAM_CLOSED, "without a finishReason"),
        (SSE(events(TOOL_CALL[:1]), end="drop"), E.TRANSPORT, "connection failed"),
        (SSE([*events(TEXT[:1]), "data: {not json"]), E.MALFORMED_RESPONSE, "not JSON"),
        (
            SSE([*events(TEXT[:1]), 'data: {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}']),
            E.SERVER,
            "boom",
        ),
        (Reply(200, {"candidates": []}), E.MALFORMED_RESPONSE, "text/event-stream"),
    ],
)
def test_broken_streams(server: SSEServer, response: SSE | Reply, code: sf.ErrorCode, words: str) -> None:
    server.script(response)
    error = failure(GeminiAdapter(base_url=server.url))
    assert error.code == code and words in error.message


def test_a_stream_whose_usage_comes_after_the_finish_reason(server: SSEServer) -> None:
    server.script(SSE(events([chunk({"text": "hi"}), chunk(finish="STOP"), {"usageMetadata": USAGE}])))
    result = sf.assemble(asyncio.run(collect(GeminiAdapter(base_url=server.url))))
    assert (result.text, result.usage) == ("hi", sf.Usage(input_tokens=10, output_tokens=5))


def test_abort_tears_the_request_down(server: SSEServer) -> None:
    many = [chunk({"text": f"word {n} "}) for n in range(200)]
    server.script(SSE(events([*many, end()]), delay=0.01))
    controller = sf.AbortController()
    options = ASK.model_copy(update={"signal": controller.signal})
    received = 0

    async def consume() -> None:
        nonlocal received
        async for _ in GeminiAdapter(base_url=server.url).generate(options):
            received += 1
            if received == 5:
                controller.abort("user pressed stop")

    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(consume())
    assert caught.value.code == E.ABORTED and "user pressed stop" in caught.value.message
    assert received < len(many)
    assert wait_for(lambda: server.active == 0 and len(server.disconnects) == 1)

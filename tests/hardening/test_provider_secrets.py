"""A key the provider echoes is redacted before a message is cut: no cut (4,096, 500, 200 characters) keeps part
of it. Over real HTTP on 127.0.0.1, through the Gemini, Responses and chat adapters."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm._providers.classify import MAX_MESSAGE, clip
from streamfsm._providers.secrets import Redactor, redacting

from ..sse_server import SSE, Reply, SSEServer

KEY = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"  # 39 characters, as a Google API key
ASK = sf.GenerateOptions(model="m", messages=(sf.UserMessage(content="hi"),))


def leaks(text: str, key: str = KEY) -> list[str]:
    """Every piece of 6 characters or more of ``key`` that ``text`` holds."""
    return [key[i : i + 6] for i in range(len(key) - 5) if key[i : i + 6] in text]


ADAPTERS: dict[str, Callable[[str], sf.LlmAdapter]] = {
    "gemini": lambda url: sf.GeminiAdapter(base_url=url, api_key=KEY),
    "responses": lambda url: sf.OpenAIResponsesAdapter(url, api_key=KEY),
    "openai": lambda url: sf.OpenAICompatibleAdapter(url, api_key=KEY),
}


def outcome(adapter: sf.LlmAdapter) -> sf.LlmError | sf.StreamResult:
    async def run() -> list[sf.StreamChunk]:
        return [chunk async for chunk in adapter.generate(ASK)]

    try:
        return sf.assemble(asyncio.run(run()))
    except sf.LlmError as exc:
        return exc


def shown(error: BaseException) -> str:
    return f"{error}\n{error!r}\n{error.args!r}"


@pytest.mark.parametrize("name", ADAPTERS)
@pytest.mark.parametrize("before", [MAX_MESSAGE - 38, MAX_MESSAGE - 20, MAX_MESSAGE - 1])
def test_a_key_across_the_4096_character_cut_of_an_error_message(server: SSEServer, name: str, before: int) -> None:
    server.script(Reply(400, {"error": {"message": "x" * before + KEY + " was refused", "code": 400}}))
    error = outcome(ADAPTERS[name](server.url))
    assert isinstance(error, sf.LlmError) and error.status == 400
    assert "more characters not kept" in error.message or "[redacted]" in error.message
    assert leaks(shown(error)) == []


@pytest.mark.parametrize("name", ADAPTERS)
@pytest.mark.parametrize("before", [500 - 30, 500 - 5])
def test_a_key_across_the_500_character_cut_of_an_error_body(server: SSEServer, name: str, before: int) -> None:
    server.script(Reply(500, ("<html>" + "y" * before + KEY + "</html>").encode()))
    error = outcome(ADAPTERS[name](server.url))
    assert isinstance(error, sf.LlmError) and error.code == sf.ErrorCode.SERVER
    assert leaks(shown(error)) == []


def test_a_key_across_the_200_character_cut_of_a_gemini_finish_reason(server: SSEServer) -> None:
    reason = "R" * 185 + KEY
    event = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": reason}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1},
    }
    server.script(SSE([f"data: {orjson.dumps(event).decode()}"]))
    got = outcome(ADAPTERS["gemini"](server.url))
    text = shown(got) if isinstance(got, sf.LlmError) else got.finish.model_dump_json()
    assert leaks(text) == []


def test_a_key_across_the_200_character_cut_of_a_responses_incomplete_reason(server: SSEServer) -> None:
    reason = "r" * 190 + KEY
    response = {"id": "resp_1", "model": "m", "status": "incomplete", "incomplete_details": {"reason": reason}}
    events = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress"}},
        {"type": "response.incomplete", "response": {**response, "usage": {"input_tokens": 1, "output_tokens": 1}}},
    ]
    server.script(SSE([f"data: {orjson.dumps(e).decode()}" for e in events]))
    got = outcome(ADAPTERS["responses"](server.url))
    message = shown(got) if isinstance(got, sf.LlmError) else str(got.finish.failure.message)  # type: ignore[union-attr]
    assert leaks(message) == []


def test_clip_redacts_the_active_secrets_before_it_cuts() -> None:
    text = "a" * 90 + KEY
    assert leaks(clip(text, 100)) != []  # no request under way: nothing to redact
    with redacting(Redactor([KEY])):
        assert leaks(clip(text, 100)) == [] and clip(text, 100) == "a" * 90 + "[redacted]"
        assert clip("short " + KEY, 100) == "short " + KEY  # not cut: the adapter redacts it whole, later
    assert leaks(clip(text, 100)) != []  # the redactor is active only inside


def test_another_requests_redactor_is_never_active(server: SSEServer) -> None:
    async def both() -> list[Any]:
        async def one(key: str, before: int) -> Any:
            adapter = sf.OpenAICompatibleAdapter(server.url, api_key=key)
            try:
                return [chunk async for chunk in adapter.generate(ASK)]
            except sf.LlmError as exc:
                return exc

        return list(await asyncio.gather(one(KEY, MAX_MESSAGE - 20), one("sk-other-key-000000000000", 0)))

    for _ in range(2):
        server.script(Reply(401, {"error": {"message": "z" * (MAX_MESSAGE - 20) + KEY}}))
    first, second = asyncio.run(both())
    assert isinstance(first, sf.LlmError) and isinstance(second, sf.LlmError)
    assert leaks(shown(first)) == []
    # The other request's key is not KEY: the part of KEY its cut keeps is not its secret, and stays.
    assert leaks(shown(second)) != []


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_key_too_short_to_be_a_secret_is_redacted_only_where_it_stands_alone(server: SSEServer, name: str) -> None:
    """``api_key="k"``: the server quotes it (redacted), and the words holding a ``k`` stay whole."""
    server.script(Reply(400, {"error": {"message": "key k refused after 0 chunk(s); keep keys secret", "code": 400}}))
    adapter = {
        "gemini": lambda url: sf.GeminiAdapter(base_url=url, api_key="k"),
        "responses": lambda url: sf.OpenAIResponsesAdapter(url, api_key="k"),
        "openai": lambda url: sf.OpenAICompatibleAdapter(url, api_key="k"),
    }[name](server.url)
    error = outcome(adapter)
    assert isinstance(error, sf.LlmError)
    assert "key [redacted] refused after 0 chunk(s); keep keys secret" in error.message


def test_the_threshold_is_eight_characters() -> None:
    seven, eight = "abcdefg", "abcdefgh"
    assert Redactor([seven]).text(f"x{seven}y {seven}") == "xabcdefgy [redacted]"
    assert Redactor([eight]).text(f"x{eight}y {eight}") == "x[redacted]y [redacted]"

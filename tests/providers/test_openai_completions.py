"""The legacy completions API's stream (``/v1/completions``: ``text_completion`` chunks), read by the chat converter.

The streams are written here from each server's documented wire format:

- OpenAI (the API reference of ``POST /v1/completions``, and the ``openai`` SDK's ``Completion``, whose docstring
  says the streamed and non-streamed objects share its shape): chunks of ``choices[].text`` with ``index``,
  ``logprobs`` and a ``finish_reason`` that is null until the last one; with ``stream_options.include_usage``, every
  chunk has ``usage: null`` and a last chunk has ``choices: []`` and the usage.
- llama.cpp's ``llama-server`` (``tools/server/server-task.cpp``, ``server_task_result_cmpl_partial::
  to_json_oaicompat`` and ``server_task_result_cmpl_final::to_json_oaicompat``): a chunk a token, ``logprobs: null``,
  ``finish_reason: null``, a ``system_fingerprint``, an id minted ``chatcmpl-``; the last chunk has ``text: ""`` (in
  stream mode its content already went out), the ``finish_reason``, the ``usage`` and ``timings``, whatever
  ``include_usage`` says.
- vLLM (``vllm/entrypoints/openai/serving_completion.py``, ``completion_stream_generator``): one choice a chunk, every
  field written (``stop_reason``, ``prompt_token_ids``, ``token_ids``, ``usage`` as null), the last token's text in the
  chunk that carries the ``finish_reason``, the legacy ``logprobs`` (``tokens``, ``token_logprobs``,
  ``top_logprobs``, ``text_offset``); with ``include_usage`` a chunk with ``choices: []``; with ``n > 1`` the
  choices' ``index`` tells them apart; a failure mid-stream is a chunk ``{"error": {...}}``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

import streamfsm as sf

from ..sse_server import SSE, SSEServer, openai_events

E = sf.ErrorCode

PIECES = ["Once", " upon", " a", " time", ",", " a", " small", " llama", " read", " streams", "."]
TEXT = "".join(PIECES)


def openai_stream(pieces: list[str], finish: str = "length", *, usage: bool = True) -> list[dict[str, Any]]:
    """What ``api.openai.com/v1/completions`` streams (``stream_options.include_usage`` when ``usage``)."""
    base = {"id": "cmpl-AbC123", "object": "text_completion", "created": 1764892800, "model": "gpt-3.5-turbo-instruct"}
    extra: dict[str, Any] = {"usage": None} if usage else {}

    def choice(text: str, reason: str | None) -> dict[str, Any]:
        return {"text": text, "index": 0, "logprobs": None, "finish_reason": reason}

    chunks = [{**base, "choices": [choice(piece, None)], **extra} for piece in pieces]
    chunks.append({**base, "choices": [choice("", finish)], **extra})
    if usage:
        usage_chunk = {"prompt_tokens": 6, "completion_tokens": 11, "total_tokens": 17}
        chunks.append({**base, "choices": [], "usage": usage_chunk})
    return chunks


def llama_server_stream(pieces: list[str], finish: str = "length") -> list[dict[str, Any]]:
    """What llama.cpp's ``llama-server`` streams from ``/v1/completions``."""
    base = {
        "created": 1764892800,
        "model": "tiny-llama.gguf",
        "system_fingerprint": "b7210-1f2e3d4c",
        "object": "text_completion",
        "id": "chatcmpl-Qm2v9Ld0sXkTq",
    }

    def choice(text: str, reason: str | None) -> list[dict[str, Any]]:
        return [{"text": text, "index": 0, "logprobs": None, "finish_reason": reason}]

    chunks = [{"choices": choice(piece, None), **base} for piece in pieces]
    timings = {"prompt_n": 6, "prompt_ms": 3.1, "predicted_n": 11, "predicted_ms": 40.2}
    usage = {"completion_tokens": 11, "prompt_tokens": 6, "total_tokens": 17}
    chunks.append({"choices": choice("", finish), **base, "usage": usage, "timings": timings})
    return chunks


def vllm_stream(
    pieces: list[str], finish: str = "stop", *, choices: int = 1, logprobs: bool = True
) -> list[dict[str, Any]]:
    """What vLLM streams from ``/v1/completions`` with ``stream_options.include_usage`` (``n=choices``)."""
    base = {"id": "cmpl-8c1f0e2a9b", "object": "text_completion", "created": 1764892800, "model": "Qwen/Qwen2.5-0.5B"}
    chunks = []
    offset = 0
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        for index in range(choices):
            probs = {"text_offset": [offset], "token_logprobs": [-0.25], "tokens": [piece]}
            probs["top_logprobs"] = [{piece: -0.25}]
            choice = {
                "index": index,
                "text": piece,
                "logprobs": probs if logprobs else None,
                "finish_reason": finish if last else None,
                "stop_reason": None,
                "prompt_token_ids": None,
                "token_ids": None,
            }
            chunks.append({**base, "choices": [choice], "usage": None})
        offset += len(piece)
    usage = {"prompt_tokens": 6, "total_tokens": 6 + 11 * choices, "completion_tokens": 11 * choices}
    chunks.append({**base, "choices": [], "usage": usage})
    return chunks


SERVERS = {"openai": openai_stream, "llama-server": llama_server_stream, "vllm": vllm_stream}


def chat_chunk(**delta: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}


def caught(events: list[dict[str, Any]], policy: str = "strict") -> sf.LlmError:
    with pytest.raises(sf.LlmError) as error:
        sf.assemble(sf.from_openai_chunks(events), policy=policy)
    return error.value


# --- Each server's stream ------------------------------------------------------------------------------


@pytest.mark.parametrize("server_name", sorted(SERVERS))
def test_each_servers_stream_is_its_text_with_its_finish_and_usage(server_name: str) -> None:
    chunks = SERVERS[server_name](PIECES)
    result = sf.assemble(sf.from_openai_chunks(chunks))
    assert result.to_wire()["blocks"] == [{"type": "text", "text": TEXT}]
    expected = {"openai": "max-tokens", "llama-server": "max-tokens", "vllm": "stop"}[server_name]
    assert result.finish.kind == expected
    assert result.usage is not None and (result.usage.input_tokens, result.usage.output_tokens) == (6, 11)
    assert result.interrupted == [] and result.tool_calls == []


def test_logprobs_and_the_servers_own_fields_are_not_text() -> None:
    plain = sf.assemble(sf.from_openai_chunks(vllm_stream(PIECES, logprobs=False)))
    assert sf.assemble(sf.from_openai_chunks(vllm_stream(PIECES))) == plain
    assert plain.text == TEXT


def test_the_openai_sdks_own_stream_objects(server: SSEServer) -> None:
    """``client.completions.create(stream=True)`` yields ``openai.types.Completion`` objects, sync and async."""
    openai = pytest.importorskip("openai")
    chunks = openai_stream(PIECES)
    expected = sf.assemble(sf.from_openai_chunks(chunks))
    assert expected.text == TEXT
    server.script(SSE(openai_events(chunks)), SSE(openai_events(chunks)))
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
    stream = client.completions.create(
        model="gpt-3.5-turbo-instruct", prompt="Once", stream=True, stream_options={"include_usage": True}
    )
    with stream:
        assert sf.assemble(sf.from_openai_chunks(stream)) == expected

    async def consume() -> sf.StreamResult:
        async_client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
        events = await async_client.completions.create(model="gpt-3.5-turbo-instruct", prompt="Once", stream=True)
        async with events:
            return await sf.aassemble(sf.from_openai_chunks(events))

    assert asyncio.run(consume()) == expected
    assert server.requests[0].path == "/v1/completions"
    assert orjson.loads(server.requests[0].body)["stream"] is True


# --- The same rules as chat ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [("stop", "stop", None), ("length", "max-tokens", None), ("content_filter", "error", "CONTENT_FILTER")],
)
def test_finish_reasons_map_as_chats_do(reason: str, kind: str, code: str | None) -> None:
    completion = sf.assemble(sf.from_openai_chunks(openai_stream(PIECES, reason)))
    chat = sf.assemble(
        sf.from_openai_chunks(
            [
                chat_chunk(content=TEXT),
                {**chat_chunk(), "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]},
                {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 6, "completion_tokens": 11}},
            ]
        )
    )
    assert completion.finish == chat.finish
    assert completion.finish.kind == kind
    assert (completion.finish.failure.code if completion.finish.failure else None) == code


def test_a_stop_with_no_text_is_an_empty_response() -> None:
    assert caught(llama_server_stream([], "stop")).code == E.EMPTY_RESPONSE


def test_a_server_that_sends_no_usage_passes_harness_but_not_strict() -> None:
    chunks = openai_stream(PIECES, usage=False)
    assert caught(chunks).code == E.USAGE_MISSING
    assert sf.assemble(sf.from_openai_chunks(chunks), policy="harness").text == TEXT


def test_a_stream_that_never_finishes_is_closed() -> None:
    assert caught(llama_server_stream(PIECES)[:-1]).code == E.STREAM_CLOSED


def test_several_choices_are_refused_as_chat_refuses_them() -> None:
    completion = caught(vllm_stream(PIECES, choices=2))
    chat = caught([{**chat_chunk(content="a"), "choices": [{"index": 1, "delta": {"content": "a"}}]}])
    assert completion.code == chat.code == E.MALFORMED_RESPONSE
    assert completion.message == chat.message == "choice 1: only one choice (n=1) can be converted"


def test_an_error_chunk_in_the_stream_is_classed_by_its_code() -> None:
    """vLLM ends a failed stream with ``create_streaming_error_response``: ``{"error": {...}}``, then ``[DONE]``."""
    error = {"error": {"message": "the engine died", "type": "InternalServerError", "param": None, "code": 500}}
    err = caught([*vllm_stream(PIECES)[:3], error])
    assert err.code == E.SERVER and "the engine died" in err.message


def test_a_recording_of_two_completions_is_two_turns() -> None:
    second = [{**chunk, "id": "cmpl-second"} for chunk in openai_stream(["Twice", "."], "stop")]
    turns = [sf.assemble(turn) for turn in sf.read_turns(sf.from_openai_chunks, openai_stream(PIECES) + second)]
    assert [(t.text, t.finish.kind) for t in turns] == [(TEXT, "max-tokens"), ("Twice.", "stop")]


# --- What is not a completions stream ------------------------------------------------------------------


COMPLETION = openai_stream(["Hi"])[0]


@pytest.mark.parametrize(
    ("events", "words"),
    [
        ([chat_chunk(content="Hi"), COMPLETION], "a text_completion chunk in a stream of chat.completion.chunk chunks"),
        ([COMPLETION, chat_chunk(content="Hi")], "a chat.completion.chunk chunk in a stream of text_completion chunks"),
        (  # told by the form of its choices when it names no object
            [chat_chunk(content="Hi"), {"choices": [{"index": 0, "text": "Hi"}]}],
            "a text_completion chunk in a stream of chat.completion.chunk chunks",
        ),
        (  # a chunk that is both
            [{**COMPLETION, "choices": [{"index": 0, "delta": {"content": "Hi"}}]}],
            "a chat.completion.chunk chunk in a stream of text_completion chunks",
        ),
        (  # a chunk that is both
            [{**chat_chunk(), "choices": [{"index": 0, "text": "Hi"}]}],
            "a text_completion chunk in a stream of chat.completion.chunk chunks",
        ),
        ([{**COMPLETION, "choices": [{"index": 0, "text": 7}]}], "choice.text must be a string, got int"),
    ],
)
def test_what_is_not_one_apis_stream_is_malformed(events: list[dict[str, Any]], words: str) -> None:
    err = caught(events)
    assert err.code == E.MALFORMED_RESPONSE and words in err.message, err.message

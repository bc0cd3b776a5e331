"""Non-streamed answers read as results: each wire API's reader (``sf.from_openai_completion``,
``sf.from_anthropic_message``, ...) gives the StreamResult its stream assembles to. Real bodies from the peers' test
suites and the SDKs' own objects; the same answer as body and as stream (recorded pairs, and generated answers);
errors and malformed bodies."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf

from ..data import BODIES, MORE_PROVIDER_STREAMS, PROVIDER_STREAMS
from . import rendered
from .support import anthropic_recording, openai_recording

E = sf.ErrorCode

#: Each wire API: its fixtures' folder, its body reader, its stream converter, and a generated answer's two shapes.
APIS: dict[str, tuple[Callable[..., sf.StreamResult], Callable[..., Any], Callable[..., Any], Callable[..., Any]]] = {
    "openai-chat": (sf.from_openai_completion, sf.from_openai_chunks, rendered.openai_body, rendered.openai_stream),
    "anthropic-messages": (
        sf.from_anthropic_message,
        sf.from_anthropic_events,
        rendered.anthropic_body,
        rendered.anthropic_stream,
    ),
    "openai-responses": (
        sf.from_openai_response,
        sf.from_openai_responses_events,
        rendered.responses_body,
        rendered.responses_stream,
    ),
    "gemini": (sf.from_gemini_response, sf.from_gemini_chunks, rendered.gemini_body, rendered.gemini_stream),
    "bedrock": (sf.from_bedrock_response, sf.from_bedrock_events, rendered.bedrock_body, rendered.bedrock_stream),
    "cohere": (sf.from_cohere_response, sf.from_cohere_events, rendered.cohere_body, rendered.cohere_stream),
}
BODY_FILES = [(api, path) for api in APIS for path in sorted((BODIES / api).glob("*.json"))]


def body(api: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads((BODIES / api / name).read_bytes())
    return loaded


def answer_of(result: sf.StreamResult) -> dict[str, Any]:
    """A result as data, each tool call's arguments parsed: a body gives a call's arguments as a JSON value (its
    ``input``, ``args``), written back as compact JSON, where a stream gives the provider's own text."""
    wire = result.to_wire()
    for block in wire["blocks"]:
        if block["type"] == "tool-call":
            block["arguments"] = orjson.loads(block["arguments"] or "{}")
    return {**wire, "replayState": result.replay_state}


def test_the_bodies_are_there() -> None:
    assert {api for api, _ in BODY_FILES} == set(APIS)
    assert len(BODY_FILES) >= 20


# --- Real bodies ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("api", "path"), BODY_FILES, ids=lambda v: getattr(v, "name", v))
def test_a_real_body_reads_to_a_valid_result(api: str, path: Path) -> None:
    result = APIS[api][0](orjson.loads(path.read_bytes()))
    assert result.blocks or result.kept
    assert result.usage is not None
    assert result.finish.kind in ("stop", "tool-calls", "max-tokens")
    for call in result.tool_calls:
        assert isinstance(call.parsed_arguments, dict)
    # The result is what the machine gives for its chunks: valid under STRICT, its wire form read back the same.
    assert sf.StreamResult.model_validate(result.model_dump()) == result


def sdk_object(api: str, raw: dict[str, Any]) -> Any:
    """``raw`` as the official SDK's object, built as the SDK builds it from the API's JSON."""
    if api == "openai-chat":
        from openai.types.chat import ChatCompletion

        return ChatCompletion.construct(**raw)
    if api == "anthropic-messages":
        from anthropic.types import Message
        from anthropic.types.beta import BetaMessage
        from pydantic import ValidationError

        try:
            return Message.model_validate(raw)
        except ValidationError:  # a block of a beta feature (MCP)
            return BetaMessage.model_validate(raw)
    if api == "openai-responses":
        from openai.types.responses import Response

        return Response.construct(**raw)
    if api == "gemini":
        from google.genai import types

        return types.GenerateContentResponse.model_validate(raw)
    if api == "cohere":
        from cohere.v2 import V2ChatResponse

        return V2ChatResponse.model_validate(raw)
    return None  # boto3 gives Bedrock's answer as a dict


def has_sdk_object(api: str, path: Path) -> bool:
    """Whether the official SDK has a type for this body: boto3 gives Bedrock's answer as a dict, and the openai
    SDK's types have no list of content parts (Mistral's)."""
    if api == "bedrock":
        return False
    raw = orjson.loads(path.read_bytes())
    return api != "openai-chat" or isinstance(raw["choices"][0]["message"]["content"], str)


@pytest.mark.parametrize(
    ("api", "path"), [case for case in BODY_FILES if has_sdk_object(*case)], ids=lambda v: getattr(v, "name", v)
)
def test_the_sdk_object_reads_as_its_dict(api: str, path: Path) -> None:
    raw = orjson.loads(path.read_bytes())
    sdk = sdk_object(api, raw)
    assert sdk is not None
    read = APIS[api][0]
    # The SDK's dump orders an object's keys by its fields: arguments written from an object compare parsed.
    assert answer_of(read(sdk)) == answer_of(read(raw))


# --- The same answer, non-streamed and streamed -------------------------------------------------------------


def stream_result(api: str, events: list[Any]) -> sf.StreamResult:
    return sf.assemble(APIS[api][1](events))


RESPONSES_STREAMS = sorted((MORE_PROVIDER_STREAMS / "openai-responses").glob("*.jsonl"))


@pytest.mark.parametrize("path", RESPONSES_STREAMS, ids=lambda p: p.name)
def test_responses_a_recorded_stream_and_its_final_response_agree(path: Path) -> None:
    """A Responses stream ends with the whole response (``response.completed``, ``.failed``): the body its request
    would have been answered with, non-streamed. Both read to the same result, or to the same error."""
    events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    final = next(
        e for e in reversed(events) if e["type"] in ("response.completed", "response.incomplete", "response.failed")
    )
    try:
        streamed: sf.StreamResult | sf.LlmError = stream_result("openai-responses", events)
    except sf.LlmError as err:
        streamed = err
    if isinstance(streamed, sf.LlmError):
        with pytest.raises(sf.LlmError) as caught:
            sf.from_openai_response(final["response"])
        assert caught.value.code == streamed.code
    else:
        assert sf.from_openai_response(final["response"]) == streamed


OPENAI_STREAMS = sorted(p for p in (PROVIDER_STREAMS / "openai-chat").glob("*") if p.suffix in (".jsonl", ".sse"))


@pytest.mark.parametrize("path", OPENAI_STREAMS, ids=lambda p: p.name)
def test_openai_a_recorded_stream_and_the_completion_the_sdk_makes_of_it_agree(path: Path) -> None:
    """The openai SDK's own accumulator (``ChatCompletionStreamState``) makes the ``chat.completion`` a recorded
    stream stands for: read as a body, it gives the stream's result."""
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    chunks = openai_recording(path)
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.construct(**chunk))
    completion = state.current_completion_snapshot.to_dict(mode="json")
    assert sf.from_openai_completion(completion) == stream_result("openai-chat", chunks)


ANTHROPIC_STREAMS = [
    *sorted((PROVIDER_STREAMS / "anthropic-messages").glob("*.sse")),
    *sorted((MORE_PROVIDER_STREAMS / "anthropic-messages").glob("*.jsonl")),
]
#: A stream cut by max_tokens inside a tool call's input: the stream's call is interrupted (not complete), where the
#: SDK's accumulator parses the cut input as far as it goes into a whole tool_use block. No body to compare with.
CUT_CALL = "incomplete_partial_json_response.sse"


@pytest.mark.parametrize("path", ANTHROPIC_STREAMS, ids=lambda p: p.name)
def test_anthropic_a_recorded_stream_and_the_message_the_sdk_makes_of_it_agree(path: Path) -> None:
    """The anthropic SDK's own accumulator (``accumulate_event``, of its beta types, which know every block) makes
    the ``Message`` a recorded stream stands for: read as a body, it gives the stream's result (a tool call's
    arguments as JSON values: the body has its ``input`` as an object)."""
    import httpx
    from anthropic.lib.streaming._beta_messages import accumulate_event

    if path.name == CUT_CALL:
        streamed = stream_result("anthropic-messages", anthropic_recording(path))
        assert streamed.interrupted and streamed.finish.kind == "max-tokens"
        return
    if path.suffix == ".sse":
        events = anthropic_recording(path)
    else:
        events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for event in events:  # the SDK builds its event objects from the dicts itself
        if event["type"] != "ping":
            snapshot = accumulate_event(
                event=event, current_snapshot=snapshot, json_bufs=json_bufs, request_headers=httpx.Headers()
            )
    assert snapshot is not None
    answered = answer_of(sf.from_anthropic_message(snapshot.to_dict(mode="json")))
    # The SDK's types add the fields they know to a block, as None where the API sent none (a compaction's
    # encrypted_content), and the API sends some as null: kept blocks are compared without their null fields.
    assert without_none(answered) == without_none(answer_of(stream_result("anthropic-messages", events)))


def without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_none(item) for item in value]
    return value


@settings(max_examples=40, deadline=None)
@given(api=st.sampled_from(sorted(APIS)), answer=rendered.answers(), data=st.data())
def test_a_generated_answer_reads_the_same_as_body_and_as_stream(
    api: str, answer: rendered.Answer, data: st.DataObject
) -> None:
    read, _, as_body, as_stream = APIS[api]
    streamed = stream_result(api, as_stream(answer, data.draw))
    answered = read(as_body(answer))
    assert answered == streamed
    assert answered.to_wire() == streamed.to_wire()
    assert answered.reasoning == (answer["reasoning"] or "")
    assert [c.parsed_arguments for c in answered.tool_calls] == [c["arguments"] for c in answer["calls"]]


# --- OpenAI chat completions ----------------------------------------------------------------------------


def test_openai_usage_is_mapped_as_in_a_stream() -> None:
    result = sf.from_openai_completion(body("openai-chat", "xai-tool-call.json"))
    assert result.usage == sf.Usage(
        input_tokens=307 - 244, output_tokens=26, cache_read_tokens=244, reasoning_tokens=255
    )


def test_openai_a_legacy_text_completion_is_a_text_block() -> None:
    # The example of the API reference (POST /v1/completions).
    legacy = {
        "id": "cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7",
        "object": "text_completion",
        "created": 1589478378,
        "model": "gpt-3.5-turbo-instruct",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"text": "\n\nThis is indeed a test", "index": 0, "logprobs": None, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
    result = sf.from_openai_completion(legacy)
    assert result.to_wire() == {
        "blocks": [{"type": "text", "text": "\n\nThis is indeed a test"}],
        "usage": {"inputTokens": 5, "outputTokens": 7},
        "finish": {"kind": "max-tokens"},
    }
    from openai.types import Completion

    assert sf.from_openai_completion(Completion.model_validate(legacy)) == result


def test_openai_a_legacy_completion_reads_as_its_stream() -> None:
    chunks = [  # what /v1/completions streams, with stream_options.include_usage
        {
            "id": "cmpl-7",
            "object": "text_completion",
            "choices": [{"index": 0, "text": "Once upon", "finish_reason": None}],
        },
        {
            "id": "cmpl-7",
            "object": "text_completion",
            "choices": [{"index": 0, "text": " a time", "finish_reason": "length"}],
        },
        {
            "id": "cmpl-7",
            "object": "text_completion",
            "choices": [],
            "usage": {"prompt_tokens": 4, "completion_tokens": 4},
        },
    ]
    body = {
        "id": "cmpl-7",
        "object": "text_completion",
        "choices": [{"index": 0, "text": "Once upon a time", "logprobs": None, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 4, "total_tokens": 8},
    }
    streamed = sf.assemble(sf.from_openai_chunks(chunks))
    assert streamed.text == "Once upon a time"
    assert sf.from_openai_completion(body) == streamed


def test_openai_an_error_body_is_classified_as_an_error_chunk() -> None:
    error = {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": "rate_limit_exceeded"}}
    with pytest.raises(sf.LlmError) as streamed:
        list(sf.from_openai_chunks([error]))
    with pytest.raises(sf.LlmError) as answered:
        sf.from_openai_completion(error)
    assert answered.value.code == streamed.value.code == E.RATE_LIMIT
    assert answered.value.message == streamed.value.message


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ([], "must be an object"),
        ({"object": "chat.completion"}, "'choices'"),
        ({"choices": []}, "'choices'"),
        ({"choices": ["x"]}, "a choice must be an object"),
        ({"choices": [{"index": 0, "message": "hi", "finish_reason": "stop"}]}, "'message' must be an object"),
        ({"choices": [{"index": 0, "message": {"content": "hi"}}]}, "incomplete: it ends without a finish_reason"),
        ({"choices": [{"index": 0, "message": {"content": 3}, "finish_reason": "stop"}]}, "must be a string"),
    ],
)
def test_openai_a_malformed_body_is_a_coded_error(bad: Any, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        sf.from_openai_completion(bad)
    assert caught.value.code == E.MALFORMED_RESPONSE
    assert words in caught.value.message


def test_openai_an_empty_stop_is_empty_as_in_a_stream() -> None:
    empty = {"choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]}
    with pytest.raises(sf.LlmError) as caught:
        sf.from_openai_completion(empty)
    assert caught.value.code == E.EMPTY_RESPONSE


def test_openai_limits_bound_a_body() -> None:
    long = {"choices": [{"index": 0, "message": {"content": "x" * 100}, "finish_reason": "stop"}]}
    with pytest.raises(sf.LlmError) as caught:
        sf.from_openai_completion(long, limits=sf.Limits(max_block_bytes=10))
    assert caught.value.code == E.LIMIT_EXCEEDED


# --- Every wire API: errors and bodies that are not one ---------------------------------------------------


#: Per API: an error body, and the stream's error event that says the same (both must get the same code).
ERRORS = [
    (
        "anthropic-messages",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}],
        E.SERVER,
    ),
    (
        "openai-responses",
        {"error": {"code": "rate_limit_exceeded", "message": "Rate limit reached", "type": "requests"}},
        [{"type": "error", "error": {"code": "rate_limit_exceeded", "message": "Rate limit reached"}}],
        E.RATE_LIMIT,
    ),
    (
        "gemini",
        {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}},
        [{"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}],
        E.RATE_LIMIT,
    ),
    (
        "bedrock",
        {"Error": {"Code": "ThrottlingException", "Message": "Too many requests"}, "ResponseMetadata": {}},
        [{"throttlingException": {"message": "Too many requests"}}],
        E.RATE_LIMIT,
    ),
    (
        "cohere",
        {"message": "invalid api token"},
        [{"error": {"message": "invalid api token"}}],
        None,
    ),
]


@pytest.mark.parametrize(("api", "error", "events", "code"), ERRORS, ids=[e[0] for e in ERRORS])
def test_an_error_body_gets_the_code_of_the_streams_error(
    api: str, error: dict[str, Any], events: list[Any], code: sf.ErrorCode | None
) -> None:
    with pytest.raises(sf.LlmError) as streamed:
        stream_result(api, events)
    with pytest.raises(sf.LlmError) as answered:
        APIS[api][0](error)
    assert answered.value.code == streamed.value.code
    if code is not None:
        assert answered.value.code == code


def test_responses_a_failed_response_raises_its_error() -> None:
    failed = {
        "id": "resp_1",
        "object": "response",
        "status": "failed",
        "output": [],
        "error": {"code": "server_error", "message": "The server had an error"},
    }
    with pytest.raises(sf.LlmError) as streamed:
        stream_result("openai-responses", [{"type": "response.failed", "response": failed}])
    with pytest.raises(sf.LlmError) as answered:
        sf.from_openai_response(failed)
    assert answered.value.code == streamed.value.code == E.SERVER


def test_responses_an_incomplete_response_is_cut() -> None:
    body = rendered.responses_body({"reasoning": None, "text": "a long", "calls": [], "usage": (1, 2)})
    body.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    assert sf.from_openai_response(body).finish.kind == "max-tokens"


def test_cohere_an_error_finish_is_raised() -> None:
    body = rendered.cohere_body({"reasoning": None, "text": "x", "calls": [], "usage": (1, 2)})
    body["finish_reason"] = "ERROR"
    with pytest.raises(sf.LlmError) as caught:
        sf.from_cohere_response(body)
    assert "ERROR" in caught.value.message


def test_bedrock_blobs_as_boto3_gives_them() -> None:
    """boto3 gives a blob (redacted reasoning) as bytes, where the JSON form has base64: both read the same."""
    import base64

    raw = body("bedrock", "amazon-bedrock-redacted-content.json")
    as_bytes = orjson.loads(orjson.dumps(raw))
    block = as_bytes["output"]["message"]["content"][0]["reasoningContent"]
    block["redactedContent"] = base64.b64decode(block["redactedContent"])
    assert sf.from_bedrock_response(as_bytes) == sf.from_bedrock_response(raw)
    assert [k.type for k in sf.from_bedrock_response(raw).kept] == ["redactedContent"]


MALFORMED = [
    ("anthropic-messages", {"type": "message", "role": "assistant"}, "'content' list"),
    ("anthropic-messages", {"type": "message", "content": [{"type": "text", "text": "hi"}]}, "incomplete"),
    ("openai-responses", {"object": "response", "status": "completed"}, "'output' list"),
    ("openai-responses", {"object": "response", "status": "in_progress", "output": []}, "not a finished response"),
    ("gemini", {"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}, "incomplete"),
    ("gemini", {"candidates": "x"}, "'candidates'"),
    ("bedrock", {"stopReason": "end_turn"}, "'output'"),
    ("bedrock", {"output": {"message": {"content": "hi"}}, "stopReason": "end_turn"}, "content' must be a list"),
    ("bedrock", {"output": {"message": {"content": [{"text": "hi"}]}}}, "stopReason"),
    ("cohere", {"id": "x", "finish_reason": "COMPLETE"}, "'message' object"),
    ("cohere", {"message": {"content": [{"type": "text", "text": "hi"}]}}, "finish_reason"),
    ("cohere", {"message": {"content": "hi"}, "finish_reason": "COMPLETE"}, "must be a list"),
]


@pytest.mark.parametrize(("api", "bad", "words"), MALFORMED, ids=[f"{m[0]}-{m[2]}" for m in MALFORMED])
def test_a_body_that_is_not_one_is_malformed(api: str, bad: Any, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        APIS[api][0](bad)
    assert caught.value.code == E.MALFORMED_RESPONSE
    assert words in caught.value.message


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_body_that_is_no_object_is_malformed(api: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        APIS[api][0](["not", "a", "body"])
    assert caught.value.code == E.MALFORMED_RESPONSE


@pytest.mark.parametrize("api", sorted(APIS))
def test_limits_bound_a_body(api: str) -> None:
    answer = {"reasoning": None, "text": "x" * 100, "calls": [], "usage": (1, 2)}
    with pytest.raises(sf.LlmError) as caught:
        APIS[api][0](APIS[api][2](answer), limits=sf.Limits(max_block_bytes=10))
    assert caught.value.code == E.LIMIT_EXCEEDED

"""Bedrock ConverseStream to the block protocol: every recording, each conversion rule, every documented failure.

The events are the dicts boto3's ``converse_stream(...)["stream"]`` yields (one key: the event's name), which is
also the form of the recordings: for Bedrock, the SDK's objects are these dicts. The expected content of a
recording is derived here from its raw events, independently of the converter.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm._providers.bedrock import bedrock_failure, from_bedrock_events

from ..data import MORE_PROVIDER_STREAMS, recording
from .support import split

E = sf.ErrorCode
BEDROCK = MORE_PROVIDER_STREAMS / "bedrock"
FILES = sorted(BEDROCK.glob("*.jsonl"))


def assemble(events: Iterable[Any], policy: sf.Policy = sf.Policy.STRICT) -> sf.StreamResult:
    return sf.assemble(from_bedrock_events(events), policy=policy)


def test_the_recordings_are_there() -> None:
    assert [p.name for p in FILES] == [
        "amazon-bedrock-reasoning.jsonl",
        "amazon-bedrock-text.jsonl",
        "amazon-bedrock-tool-call.1.jsonl",
    ]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_recording_converts_with_exactly_its_content(path: Path) -> None:
    events = recording(path)
    text: list[str] = []
    reasoning: list[str] = []
    signatures: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    reason = usage = None
    for event in events:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = start["start"]["toolUse"]
            calls[start["contentBlockIndex"]] = {"id": tool["toolUseId"], "name": tool["name"], "input": []}
        elif "contentBlockDelta" in event:
            body = event["contentBlockDelta"]
            delta = body["delta"]
            text.append(delta.get("text", ""))
            reasoning.append(delta.get("reasoningContent", {}).get("text", ""))
            if "signature" in delta.get("reasoningContent", {}):
                signatures.append(delta["reasoningContent"]["signature"])
            if "toolUse" in delta:
                calls[body["contentBlockIndex"]]["input"].append(delta["toolUse"]["input"])
        elif "messageStop" in event:
            reason = event["messageStop"]["stopReason"]
        elif "metadata" in event:
            usage = event["metadata"]["usage"]
    assert reason is not None and usage is not None

    result = assemble(events)

    assert result.text == "".join(text)
    assert result.reasoning == "".join(reasoning)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        (c["id"], c["name"], "".join(c["input"])) for _, c in sorted(calls.items())
    ]
    assert result.finish.kind == {"end_turn": "stop", "tool_use": "tool-calls"}[reason]
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (usage["inputTokens"], usage["outputTokens"])
    assert result.interrupted == []
    if signatures:
        assert result.replay_state == {"blocks": [{"signature": "".join(signatures)}, None]}
    else:
        assert result.replay_state is None


def test_the_same_events_async() -> None:
    async def events() -> AsyncIterator[dict[str, Any]]:
        for event in recording(BEDROCK / "amazon-bedrock-reasoning.jsonl"):
            yield event

    result = asyncio.run(sf.aassemble(from_bedrock_events(events()), policy=sf.Policy.STRICT))
    assert result == assemble(recording(BEDROCK / "amazon-bedrock-reasoning.jsonl"))


# --- Building events --------------------------------------------------------------------------------------


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"contentBlockDelta": {"contentBlockIndex": index, "delta": fields}}


def start(index: int, **fields: Any) -> dict[str, Any]:
    return {"contentBlockStart": {"contentBlockIndex": index, "start": fields}}


def stop(index: int) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def tool(index: int, call_id: str, name: str, *inputs: str) -> list[dict[str, Any]]:
    return [
        start(index, toolUse={"toolUseId": call_id, "name": name}),
        *(delta(index, toolUse={"input": piece}) for piece in inputs),
        stop(index),
    ]


def end(reason: str = "end_turn", **usage: int) -> list[dict[str, Any]]:
    return [
        {"messageStop": {"stopReason": reason}},
        {"metadata": {"usage": {"inputTokens": 10, "outputTokens": 5, **usage}, "metrics": {"latencyMs": 1}}},
    ]


MESSAGE_START = {"messageStart": {"role": "assistant"}}
SAY = [delta(0, text="hi"), stop(0)]


# --- Conversion rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "max-tokens", None),
        ("model_context_window_exceeded", "max-tokens", None),
        ("guardrail_intervened", "error", "GUARDRAIL_INTERVENED"),
        ("content_filtered", "error", "CONTENT_FILTERED"),
        ("malformed_model_output", "error", "MALFORMED_MODEL_OUTPUT"),
    ],
)
def test_stop_reasons(reason: str, kind: str, code: str | None) -> None:
    result = assemble([MESSAGE_START, *SAY, *end(reason)])
    assert result.finish.kind == kind and result.text == "hi"
    assert (result.finish.failure.code if result.finish.failure else None) == code


def test_a_turn_with_tool_calls_finishes_with_tool_calls_whatever_the_stop_reason() -> None:
    for reason in ("tool_use", "end_turn"):
        result = assemble([*SAY, *tool(1, "t1", "ls", '{"a":', "1}"), *end(reason)])
        assert result.finish.kind == "tool-calls"
        assert [(c.id, c.name, c.parsed_arguments) for c in result.tool_calls] == [("t1", "ls", {"a": 1})]


def test_a_tool_call_without_input_has_no_arguments() -> None:
    result = assemble([*tool(0, "t1", "now"), *end("tool_use")])
    assert result.tool_calls[0].arguments == "{}"


def test_a_tool_call_cut_by_max_tokens_is_interrupted() -> None:
    events = [
        start(0, toolUse={"toolUseId": "t1", "name": "ls"}),
        delta(0, toolUse={"input": '{"pa'}),
        *end("max_tokens"),
    ]
    result = assemble(events)
    assert result.finish.kind == "max-tokens" and result.tool_calls == []
    (cut,) = result.interrupted
    assert isinstance(cut, sf.ToolCallBlock) and cut.arguments == '{"pa'


def test_usage_is_disjoint_as_bedrock_counts_it() -> None:
    # AWS's prompt-caching guide: the input is inputTokens + cacheReadInputTokens + cacheWriteInputTokens.
    result = assemble([*SAY, *end(cacheReadInputTokens=300, cacheWriteInputTokens=20, totalTokens=335)])
    assert result.usage == sf.Usage(input_tokens=10, output_tokens=5, cache_read_tokens=300, cache_write_tokens=20)


def test_metadata_may_come_before_or_after_message_stop() -> None:
    stop_event, metadata = end()
    assert assemble([*SAY, stop_event, metadata]) == assemble([*SAY, metadata, stop_event])


def test_a_stream_without_metadata_fails_strict_with_usage_missing() -> None:
    events = [MESSAGE_START, *SAY, {"messageStop": {"stopReason": "end_turn"}}]
    with pytest.raises(sf.LlmError) as caught:
        assemble(events)
    assert caught.value.code == E.USAGE_MISSING
    assert assemble(events, sf.Policy.HARNESS).usage is None


def test_reasoning_signatures_go_to_the_replay_state_at_their_block() -> None:
    events = [
        delta(0, text="a"),
        stop(0),
        delta(1, reasoningContent={"text": "think"}),
        delta(1, reasoningContent={"signature": "si"}),
        delta(1, reasoningContent={"signature": "g=="}),
        stop(1),
        delta(2, reasoningContent={"signature": "only"}),  # a signature with no text still has its block
        stop(2),
        *end(),
    ]
    result = assemble(events)
    assert [type(b) for b in result.blocks] == [sf.TextBlock, sf.ReasoningBlock, sf.ReasoningBlock]
    assert result.replay_state == {"blocks": [None, {"signature": "sig=="}, {"signature": "only"}]}


def test_interleaved_blocks_come_out_in_order_and_a_late_signature_is_kept() -> None:
    events = [
        delta(0, reasoningContent={"text": "think"}),
        delta(1, text="say"),  # block 0 ends here: block 1 has content
        delta(0, reasoningContent={"signature": "sig"}),
        stop(0),
        stop(1),
        *end(),
    ]
    result = assemble(events)
    assert (result.reasoning, result.text) == ("think", "say")
    assert result.replay_state == {"blocks": [{"signature": "sig"}, None]}
    late = [delta(0, reasoningContent={"text": "a"}), delta(1, text="b"), delta(0, reasoningContent={"text": "c"})]
    with pytest.raises(sf.LlmError, match="after the next block had begun") as caught:
        list(from_bedrock_events(late))
    assert caught.value.code == E.MALFORMED_RESPONSE


def test_what_the_protocol_has_no_word_for_is_kept_verbatim_in_order() -> None:
    secret = b"\x00\xffopaque"
    events = [
        MESSAGE_START,
        delta(0, reasoningContent={"redactedContent": secret}),  # boto3 gives blobs as bytes
        stop(0),
        start(1, toolUse={"toolUseId": "s1", "name": "web_search", "type": "server_tool_use"}),
        delta(1, toolUse={"input": '{"q":'}),
        delta(1, toolUse={"input": '"x"}'}),
        stop(1),
        start(2, toolResult={"toolUseId": "s1", "type": "web_search_result", "status": "success"}),
        delta(2, toolResult=[{"text": "res"}, {"text": "ult"}]),
        delta(2, toolResult=[{"json": {"n": 1}}]),
        stop(2),
        delta(3, text="The answer"),
        delta(3, citation={"title": "Doc", "location": {"documentChar": {"start": 0, "end": 3}}}),
        delta(3, text="."),
        stop(3),
        start(4, image={"format": "png"}),
        delta(4, image={"source": {"bytes": b"PNG"}}),
        stop(4),
        delta(5, futureKind={"x": 1}),
        stop(5),
        *tool(6, "t1", "ls", "{}"),
        *end("tool_use"),
    ]
    result = assemble(events)
    assert result.text == "The answer." and [c.id for c in result.tool_calls] == ["t1"]
    assert [type(b) for b in result.blocks] == [sf.TextBlock, sf.ToolCallBlock]
    assert result.replay_state == {
        "kept": [
            {
                "type": "redactedContent",
                "at": 0,
                "data": {"reasoningContent": {"redactedContent": base64.b64encode(secret).decode()}},
            },
            {
                "type": "toolUse",
                "at": 0,
                "data": {
                    "toolUse": {"toolUseId": "s1", "name": "web_search", "type": "server_tool_use", "input": {"q": "x"}}
                },
            },
            {
                "type": "toolResult",
                "at": 0,
                "data": {
                    "toolResult": {
                        "toolUseId": "s1",
                        "type": "web_search_result",
                        "status": "success",
                        "content": [{"text": "result"}, {"json": {"n": 1}}],
                    }
                },
            },
            # A citation belongs to the text block it came in: block 0.
            {
                "type": "citation",
                "at": 0,
                "data": {"title": "Doc", "location": {"documentChar": {"start": 0, "end": 3}}},
            },
            {"type": "image", "at": 1, "data": {"image": {"format": "png", "source": {"bytes": "UE5H"}}}},
            {"type": "futureKind", "at": 1, "data": {"futureKind": {"x": 1}}},
        ]
    }


def test_redacted_reasoning_in_the_json_form_is_kept_as_it_came() -> None:
    result = assemble([delta(0, reasoningContent={"redactedContent": "b3BhcXVl"}), stop(0), *end()])
    assert result.blocks == [] and result.replay_state is not None
    assert result.replay_state["kept"][0]["data"] == {"reasoningContent": {"redactedContent": "b3BhcXVl"}}


def test_redacted_pieces_are_one_item_and_a_server_input_that_is_not_json_is_kept_raw() -> None:
    events = [
        delta(0, reasoningContent={"redactedContent": b"ab"}),
        delta(0, reasoningContent={"redactedContent": b"cd"}),
        start(1, toolUse={"toolUseId": "s1", "name": "x", "type": "server_tool_use"}),
        delta(1, toolUse={"input": "{cut"}),
        delta(2, text="hi"),
        *end(),
    ]
    replay = assemble(events).replay_state
    assert replay is not None
    kept = replay["kept"]
    assert kept[0]["data"] == {"reasoningContent": {"redactedContent": base64.b64encode(b"abcd").decode()}}
    assert kept[1]["data"]["toolUse"]["input"] == "{cut"


def test_events_it_does_not_know_are_skipped() -> None:
    events = [MESSAGE_START, {"somethingNew": {"x": 1}}, *SAY, *end()]
    assert assemble(events).text == "hi"


# --- Failures -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "body", "code"),
    [
        ("throttlingException", {"message": "Too many requests, please wait before trying again."}, E.RATE_LIMIT),
        ("internalServerException", {"message": "An internal error occurred."}, E.SERVER),
        ("serviceUnavailableException", {"message": "Service unavailable."}, E.SERVER),
        ("validationException", {"message": "Malformed input request."}, E.INVALID_REQUEST),
        ("validationException", {"message": "Input is too long for requested model."}, E.CONTEXT_WINDOW_EXCEEDED),
        (
            "validationException",
            {"message": "The model returned the following errors: prompt is too long: 200049 tokens > 200000 maximum"},
            E.CONTEXT_WINDOW_EXCEEDED,
        ),
        ("modelStreamErrorException", {"message": "The stream failed."}, E.SERVER),
        (
            "modelStreamErrorException",
            {"message": "x", "originalStatusCode": 429, "originalMessage": "slow"},
            E.RATE_LIMIT,
        ),
        ("modelStreamErrorException", {"message": "x", "originalStatusCode": 400}, E.INVALID_REQUEST),
        ("accessDeniedException", {"message": "no"}, E.PROVIDER_HTTP_ERROR),
    ],
)
def test_exception_events_are_coded_as_the_http_adapters_code_them(
    name: str, body: dict[str, Any], code: sf.ErrorCode
) -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(from_bedrock_events([MESSAGE_START, delta(0, text="partial"), {name: body}]))
    assert caught.value.code == code
    assert name in caught.value.message and body["message"] in caught.value.message
    assert caught.value.status == body.get("originalStatusCode")


class EventStreamError(Exception):
    """What botocore raises for an exception event while a stream is read: a ``ClientError`` whose ``response``
    is the parsed event (botocore's ``EventStreamError``, with the attributes it has; botocore is not a
    dependency of these tests)."""

    def __init__(self, response: dict[str, Any], operation_name: str) -> None:
        super().__init__(f"An error occurred ({response['Error']['Code']}) when calling {operation_name}")
        self.response = response
        self.operation_name = operation_name


def raising(events: list[dict[str, Any]], error: BaseException) -> Iterator[dict[str, Any]]:
    yield from events
    raise error


def test_an_exception_botocore_raises_in_the_stream_is_coded_like_the_event() -> None:
    error = EventStreamError(
        {"Error": {"Code": "throttlingException", "Message": "Too many tokens, please wait."}}, "ConverseStream"
    )
    with pytest.raises(sf.LlmError) as caught:
        list(from_bedrock_events(raising([MESSAGE_START, delta(0, text="x")], error)))
    assert caught.value.code == E.RATE_LIMIT and caught.value.__cause__ is error
    assert "Too many tokens" in caught.value.message


def test_a_client_error_keeps_its_status_and_request_id() -> None:
    error = EventStreamError(
        {
            "Error": {"Code": "ValidationException", "Message": "Input is too long for requested model."},
            "ResponseMetadata": {"HTTPStatusCode": 400, "RequestId": "req-1"},
        },
        "ConverseStream",
    )
    with pytest.raises(sf.LlmError) as caught:
        list(from_bedrock_events(raising([], error)))
    failure = caught.value
    assert (failure.code, failure.status, failure.request_id) == (E.CONTEXT_WINDOW_EXCEEDED, 400, "req-1")


def test_an_async_stream_that_raises_is_coded_too() -> None:
    async def events() -> AsyncIterator[dict[str, Any]]:
        yield MESSAGE_START
        raise EventStreamError({"Error": {"Code": "internalServerException", "Message": "boom"}}, "ConverseStream")

    async def run() -> None:
        async for _ in from_bedrock_events(events()):
            pass

    with pytest.raises(sf.LlmError) as caught:
        asyncio.run(run())
    assert caught.value.code == E.SERVER


def test_an_error_that_came_with_a_200_is_classed_by_its_name() -> None:
    error = EventStreamError(
        {
            "Error": {"Code": "serviceUnavailableException", "Message": "busy"},
            "ResponseMetadata": {"HTTPStatusCode": 200},
        },
        "ConverseStream",
    )
    with pytest.raises(sf.LlmError) as caught:
        list(from_bedrock_events(raising([], error)))
    assert (caught.value.code, caught.value.status) == (E.SERVER, None)


def test_other_exceptions_pass_through_unchanged() -> None:
    error = ConnectionResetError("gone")
    with pytest.raises(ConnectionResetError) as caught:
        list(from_bedrock_events(raising([MESSAGE_START], error)))
    assert caught.value is error


def test_bedrock_failure_takes_the_sdk_spelling_too() -> None:
    assert bedrock_failure("ThrottlingException", {"Message": "slow down"}).code == E.RATE_LIMIT


@pytest.mark.parametrize(
    ("events", "code", "words"),
    [
        ([MESSAGE_START, *SAY], E.STREAM_CLOSED, "without a messageStop"),
        ([MESSAGE_START, *end()], E.EMPTY_RESPONSE, "without any content"),
        ([delta(0, toolUse={"input": "{}"}), *end()], E.MALFORMED_RESPONSE, "did not start as a toolUse"),
        ([*SAY, delta(0, text="more"), *end()], E.MALFORMED_RESPONSE, "after its contentBlockStop"),
        ([*end(), delta(0, text="late")], E.MALFORMED_RESPONSE, "after messageStop"),
        ([{"messageStop": {}}], E.MALFORMED_RESPONSE, "stopReason"),
        ([delta(-1, text="x")], E.MALFORMED_RESPONSE, "contentBlockIndex"),
        ([delta(0, text=5)], E.MALFORMED_RESPONSE, "delta.text must be a string"),
        ([delta(0, text="a"), delta(0, reasoningContent={"text": "b"})], E.MALFORMED_RESPONSE, "a text block"),
        ([start(0, toolUse={"name": "ls"})], E.MALFORMED_RESPONSE, "toolUseId"),
        ([delta(0, reasoningContent={"redactedContent": "not base64!"})], E.MALFORMED_RESPONSE, "not base64"),
        ([*SAY, *end(), {"messageStop": {"stopReason": "end_turn"}}], E.MALFORMED_RESPONSE, "messageStop twice"),
        ([*SAY, {"metadata": {"usage": {"inputTokens": -1}}}], E.MALFORMED_RESPONSE, "inputTokens"),
        (["not an event"], E.MALFORMED_RESPONSE, "must be an object"),
    ],
)
def test_what_cannot_be_converted_is_a_coded_error(events: list[Any], code: sf.ErrorCode, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(from_bedrock_events(events))
    assert caught.value.code == code and words in caught.value.message


# --- Any split of the deltas --------------------------------------------------------------------------


@st.composite
def turns(draw: st.DrawFn) -> tuple[list[dict[str, Any]], str, str, list[str]]:
    thought = draw(st.text(max_size=30))
    said = draw(st.text(min_size=1, max_size=30))
    arguments = [
        orjson.dumps(draw(st.dictionaries(st.text(max_size=4), st.text(max_size=6), max_size=3))).decode()
        for _ in range(draw(st.integers(0, 3)))
    ]
    events: list[dict[str, Any]] = [MESSAGE_START]
    events += [delta(0, reasoningContent={"text": piece}) for piece in split(draw, thought)]
    events += [delta(0, reasoningContent={"signature": "s"}), stop(0)]
    events += [delta(1, text=piece) for piece in split(draw, said)] + [stop(1)]
    for number, text in enumerate(arguments):
        events += tool(2 + number, f"t{number}", "f", *split(draw, text))
    return [*events, *end("tool_use" if arguments else "end_turn")], thought, said, arguments


@settings(max_examples=200, deadline=None)
@given(turns())
def test_any_split_of_the_deltas_assembles_the_same(case: tuple[list[dict[str, Any]], str, str, list[str]]) -> None:
    events, thought, said, arguments = case
    result = assemble(events)
    assert (result.reasoning, result.text) == (thought, said)
    assert [c.arguments for c in result.tool_calls] == arguments
    assert result.finish.kind == ("tool-calls" if arguments else "stop")

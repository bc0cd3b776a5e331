"""Gemini ``streamGenerateContent`` to the block protocol, without HTTP: every recording, and each conversion rule.

The expected content of a recording is derived here from the recording itself (its parts read one by one, the
streamed arguments set into an object by their paths), independently of the converter.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm._providers.arguments import ArgumentWriter, parse_path
from streamfsm._providers.gemini import from_gemini_chunks, gemini_usage

from ..data import MORE_PROVIDER_STREAMS, recording
from .support import async_items

E = sf.ErrorCode
GEMINI = MORE_PROVIDER_STREAMS / "gemini"
FILES = sorted(GEMINI.glob("*.jsonl"))
USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def chunk(
    *parts: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """One GenerateContentResponse with one candidate holding ``parts``."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    candidate.update(extra)
    event: dict[str, Any] = {"candidates": [candidate], "responseId": "resp1", "modelVersion": "gemini-test"}
    if usage is not None:
        event["usageMetadata"] = usage
    return event


def end(finish: str = "STOP", **extra: Any) -> dict[str, Any]:
    """The last chunk: an empty text part, the finish reason and the usage."""
    return chunk({"text": ""}, finish=finish, usage=USAGE, **extra)


def run(events: Iterable[Any]) -> list[sf.StreamChunk]:
    return list(from_gemini_chunks(events))


def result(events: Iterable[Any], policy: sf.Policy = sf.Policy.STRICT) -> sf.StreamResult:
    return sf.assemble(from_gemini_chunks(events), policy=policy)


def failure(events: Iterable[Any]) -> sf.LlmError:
    with pytest.raises(sf.LlmError) as caught:
        result(events)
    return caught.value


def call(name: str | None = None, **fields: Any) -> dict[str, Any]:
    """A part holding a functionCall."""
    body = dict(fields)
    if name is not None:
        body["name"] = name
    return {"functionCall": body}


def arg(path: str, going_on: bool = False, **value: Any) -> dict[str, Any]:
    out = {"jsonPath": path, **value}
    if going_on:
        out["willContinue"] = True
    return out


def test_the_recordings_are_there() -> None:
    assert [p.name for p in FILES] == [
        "google-reasoning.jsonl",
        "google-stream-tool-call-arguments.jsonl",
        "google-text.jsonl",
        "google-tool-call.jsonl",
    ]


# --- Every recording --------------------------------------------------------------------------------


def _set(target: dict[str, Any], path: str, value: Any) -> None:
    keys: list[str | int] = [m[0] or int(m[1]) for m in re.findall(r"\.(\w+)|\[(\d+)\]", path)]
    node: Any = target
    for key, following in itertools.pairwise(keys):
        if isinstance(node, list):
            while len(node) <= key:  # type: ignore[operator]
                node.append([] if isinstance(following, int) else {})
            node = node[key]  # type: ignore[index]
        else:
            node = node.setdefault(key, [] if isinstance(following, int) else {})
    if isinstance(node, list):
        node.append(value)
    else:
        node[keys[-1]] = value


def expected_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a recording holds, read from its parts (streamed arguments set by their paths)."""
    text, reasoning, calls, signatures = [], [], [], []
    streaming: dict[str, Any] | None = None
    strings: dict[str, list[str]] = {}
    reason = usage = None
    for event in events:
        for candidate in event.get("candidates", []):
            for part in candidate.get("content", {}).get("parts", []):
                if "thoughtSignature" in part:
                    signatures.append(part["thoughtSignature"])
                if "functionCall" in part:
                    fc = part["functionCall"]
                    if fc.get("name") and (streaming is None or streaming["name"] != fc["name"]):
                        streaming = {"name": fc["name"], "args": fc.get("args", {})}
                        calls.append(streaming)
                        strings = {}
                    for piece in fc.get("partialArgs", []):
                        if "stringValue" in piece:
                            strings.setdefault(piece["jsonPath"], []).append(piece["stringValue"])
                            _set(streaming["args"], piece["jsonPath"], "".join(strings[piece["jsonPath"]]))  # type: ignore[index]
                    if not fc.get("willContinue"):
                        streaming = None
                elif part.get("thought"):
                    reasoning.append(part["text"])
                else:
                    text.append(part.get("text", ""))
            reason = candidate.get("finishReason") or reason
        if "promptTokenCount" in event.get("usageMetadata", {}):
            usage = event["usageMetadata"]
    assert usage is not None
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "calls": [(c["name"], c["args"]) for c in calls],
        "finish": "tool-calls" if calls and reason == "STOP" else {"STOP": "stop"}.get(str(reason), reason),
        "usage": sf.Usage(
            input_tokens=usage["promptTokenCount"] - usage.get("cachedContentTokenCount", 0),
            output_tokens=usage["candidatesTokenCount"] + usage.get("thoughtsTokenCount", 0),
            reasoning_tokens=usage.get("thoughtsTokenCount"),
        ),
        "signatures": signatures,
        "response": event["responseId"],
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_recording_converts_with_exactly_its_content(path: Path) -> None:
    events = recording(path)
    expected = expected_of(events)
    got = result(events)
    assert got.text == expected["text"]
    assert got.reasoning == expected["reasoning"]
    assert [(c.name, c.parsed_arguments) for c in got.tool_calls] == expected["calls"]
    assert [c.id for c in got.tool_calls] == [f"call_{expected['response']}_{n}" for n in range(len(got.tool_calls))]
    assert got.finish.kind == expected["finish"]
    assert got.usage == expected["usage"]
    assert got.interrupted == []
    # Every thought signature is kept: on its call, or (an empty text part) verbatim in "kept".
    state = got.replay_state
    on_blocks = [entry["signature"] for entry in state["gemini"]["blocks"] if entry and "signature" in entry]
    kept = [k.data["thoughtSignature"] for k in got.kept if k.type == "thoughtSignature"]
    assert on_blocks + kept == expected["signatures"]
    assert state["gemini"]["response"]["responseId"] == expected["response"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_sdk_objects_give_the_same_chunks(path: Path) -> None:
    events = recording(path)
    wire = run(events)
    objects = [types.GenerateContentResponse.model_validate(event) for event in events]
    assert run(objects) == wire
    # snake_case dicts, as the SDK's model_dump() gives them (bytes, nulls) and its JSON (URL-safe base64).
    for dumped in ([o.model_dump() for o in objects], [o.model_dump(mode="json", exclude_none=True) for o in objects]):
        converted = run(dumped)
        strip = [c for c in converted if c["type"] != "finish"]
        assert strip == [c for c in wire if c["type"] != "finish"]
        assert converted[-1]["reason"] == wire[-1]["reason"]  # type: ignore[typeddict-item]
        assert converted[-1]["replayState"]["gemini"] == wire[-1]["replayState"]["gemini"]  # type: ignore[typeddict-item]


def test_sdk_objects_keep_the_order_of_the_arguments_and_kept_parts() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "x"}, "thoughtSignature": "c2ln"}
    events = [chunk(call("f", args={"z": 1, "a": {"y": [3, 2], "b": None}}), code), end()]
    objects = [types.GenerateContentResponse.model_validate(event) for event in events]
    assert run(objects) == run(events)
    assert result(objects).tool_calls[0].arguments == '{"z":1,"a":{"y":[3,2],"b":null}}'
    assert list(result(objects).kept[0].data) == ["executableCode", "thoughtSignature"]


async def _collect(chunks: AsyncIterator[sf.StreamChunk]) -> list[sf.StreamChunk]:
    return [c async for c in chunks]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_async_input_gives_the_same_chunks(path: Path) -> None:
    events = recording(path)
    objects = [types.GenerateContentResponse.model_validate(event) for event in events]
    assert asyncio.run(_collect(from_gemini_chunks(async_items(events)))) == run(events)
    assert asyncio.run(_collect(from_gemini_chunks(async_items(objects)))) == run(events)


# --- Text, reasoning and signatures -----------------------------------------------------------------


def test_thought_parts_are_reasoning_and_signed_parts_keep_their_place() -> None:
    events = [
        chunk({"text": "Let me ", "thought": True}),
        chunk({"text": "think.", "thought": True, "thoughtSignature": "sigT"}),
        chunk({"text": "Hel"}, {"text": "lo", "thoughtSignature": "sigA"}),
        chunk({"text": " world"}),
        end(),
    ]
    got = result(events)
    assert (got.reasoning, got.text) == ("Let me think.", "Hello world")
    assert [getattr(b, "type", None) for b in got.blocks] == ["reasoning", "text"]
    assert got.replay_state["gemini"]["blocks"] == [
        {"signatures": [[7, 13, "sigT"]]},
        {"signatures": [[3, 5, "sigA"]]},
    ]
    assert got.kept == []  # the empty last part carries nothing


def test_an_empty_part_with_a_signature_is_kept_where_it_came() -> None:
    events = [chunk({"text": "a"}), chunk({"text": "", "thoughtSignature": "s1"}), chunk({"text": "b"}), end()]
    got = result(events)
    assert [b.text for b in got.blocks] == ["a", "b"]  # type: ignore[union-attr]
    assert [(k.type, k.at, k.data) for k in got.kept] == [
        ("thoughtSignature", 1, {"text": "", "thoughtSignature": "s1"})
    ]


def test_parts_the_protocol_has_no_word_for_are_kept_verbatim_in_order() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(2+2)"}}
    output = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}}
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}, "thoughtSignature": "img"}
    grounding = {
        "webSearchQueries": ["2+2"],
        "groundingChunks": [{"web": {"uri": "https://example.com", "title": "x"}}],
    }
    citations = {"citations": [{"startIndex": 0, "endIndex": 3, "uri": "https://example.com"}]}
    future = {"someNewPart": {"x": 1}}
    events = [
        chunk({"text": "Run it."}, code),
        chunk(output, {"text": "It is 4."}),
        chunk(image, future),
        chunk({"text": ""}, finish="STOP", usage=USAGE, groundingMetadata=grounding, citationMetadata=citations),
    ]
    got = result(events)
    assert [b.text for b in got.blocks] == ["Run it.", "It is 4."]  # type: ignore[union-attr]
    assert [(k.type, k.at, k.data) for k in got.kept] == [
        ("executableCode", 1, code),
        ("codeExecutionResult", 1, output),
        ("inlineData", 2, image),
        ("someNewPart", 2, future),
        ("groundingMetadata", 2, grounding),
        ("citationMetadata", 2, citations),
    ]
    assert got.finish.kind == "stop"


def test_a_turn_of_only_an_image_is_a_stop_with_the_image_kept() -> None:
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    got = result([chunk(image, finish="STOP", usage=USAGE)])
    assert (got.finish.kind, got.blocks) == ("stop", [])
    assert [(k.type, k.at, k.data) for k in got.kept] == [("inlineData", 0, image)]


# --- Function calls ----------------------------------------------------------------------------------


def test_whole_calls_get_stable_ids_and_the_finish_is_tool_calls() -> None:
    events = [
        chunk({"text": "Checking."}, call("weather", args={"city": "Paris"}), call("time", args={})),
        chunk(call("given", args={"x": 1}, id="fc-7")),
        end(),
    ]
    first, second = result(events), result(events)
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_resp1_0", "weather", '{"city":"Paris"}'),
        ("call_resp1_1", "time", "{}"),
        ("fc-7", "given", '{"x":1}'),
    ]
    assert [c.id for c in second.tool_calls] == [c.id for c in first.tool_calls]
    assert first.finish.kind == "tool-calls"  # Gemini said STOP
    assert first.replay_state["gemini"]["blocks"] == [None, None, None, {"id": True}]


def test_ids_without_a_response_id_and_a_repeated_id() -> None:
    events = [chunk(call("a", args={}, id="same"), call("b", args={}, id="same"), call("c", args={}, id="call_2"))]
    for event in events:
        del event["responseId"]
    got = result([*events, end()])
    assert [c.id for c in got.tool_calls] == ["same", "call_1", "call_2"]


def test_streamed_arguments_are_written_as_they_come() -> None:
    events = [
        chunk(call("cook", willContinue=True), thoughtSignature="unused"),
        chunk(call(partialArgs=[arg("$.recipe.ingredients[0].amount", True, stringValue="16 ")], willContinue=True)),
        chunk(call(partialArgs=[arg("$.recipe.ingredients[0].amount", stringValue="oz")], willContinue=True)),
        chunk(call(partialArgs=[arg("$.recipe.ingredients[0].name", stringValue='"noodles"\n')], willContinue=True)),
        chunk(call(willContinue=True)),
        chunk(call(partialArgs=[arg("$.recipe.ingredients[1].n", numberValue=2.0)], willContinue=True)),
        chunk(call(partialArgs=[arg("$.recipe['a key'].ok", boolValue=True), arg("$.none", nullValue="NULL_VALUE")])),
        end(),
    ]
    got = result(events)
    (only,) = got.tool_calls
    assert only.arguments == (
        '{"recipe":{"ingredients":[{"amount":"16 oz","name":"\\"noodles\\"\\n"},{"n":2}],'
        '"a key":{"ok":true}},"none":null}'
    )
    deltas = [c["argumentsDelta"] for c in run(events) if c["type"] == "tool-call-delta"]
    assert len(deltas) > 4 and "".join(deltas) == only.arguments  # live, not at the end


def test_a_streamed_call_whose_last_part_does_not_say_so_is_complete_at_stop() -> None:
    events = [
        chunk(call("write", willContinue=True)),
        chunk(call(partialArgs=[arg("$.items[0]", True, stringValue="a")], willContinue=True)),
        end(),
    ]
    assert result(events).tool_calls[0].parsed_arguments == {"items": ["a"]}


def test_a_streamed_call_cut_by_max_tokens_is_interrupted() -> None:
    events = [
        chunk(call("write", willContinue=True)),
        chunk(call(partialArgs=[arg("$.text", True, stringValue="half")], willContinue=True)),
        end("MAX_TOKENS"),
    ]
    got = result(events)
    assert got.finish.kind == "max-tokens" and got.tool_calls == []
    (cut,) = got.interrupted
    assert cut.arguments == '{"text":"half'  # type: ignore[union-attr]


def test_text_while_a_call_streams_is_held_until_it_ends() -> None:
    events = [
        chunk(call("f", willContinue=True)),
        chunk({"text": "aside"}),
        chunk(call(partialArgs=[arg("$.a", numberValue=1)], willContinue=True)),
        chunk(call()),
        end(),
    ]
    got = result(events)  # valid under STRICT: the text block waits for the call
    assert [getattr(b, "type", None) for b in got.blocks] == ["tool-call", "text"]
    assert got.tool_calls[0].parsed_arguments == {"a": 1}


def test_a_call_of_another_name_ends_the_streamed_one() -> None:
    events = [
        chunk(call("f", willContinue=True)),
        chunk(call(partialArgs=[arg("$.a", numberValue=1)], willContinue=True)),
        chunk(call("g", args={"b": 2})),
        end(),
    ]
    assert [(c.name, c.parsed_arguments) for c in result(events).tool_calls] == [("f", {"a": 1}), ("g", {"b": 2})]


# --- Finish and usage --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("STOP", "stop", None),
        ("MAX_TOKENS", "max-tokens", None),
        ("SAFETY", "error", "SAFETY"),
        ("RECITATION", "error", "RECITATION"),
        ("BLOCKLIST", "error", "BLOCKLIST"),
        ("PROHIBITED_CONTENT", "error", "PROHIBITED_CONTENT"),
        ("SPII", "error", "SPII"),
        ("MALFORMED_FUNCTION_CALL", "error", "MALFORMED_FUNCTION_CALL"),
        ("OTHER", "error", "OTHER"),
        ("A_REASON_ADDED_LATER", "error", "A_REASON_ADDED_LATER"),
    ],
)
def test_finish_reasons(reason: str, kind: str, code: str | None) -> None:
    ratings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
    events = [chunk({"text": "Partial answer"}), end(reason, safetyRatings=ratings, finishMessage="why it stopped")]
    got = result(events)
    assert got.finish.kind == kind and got.text == "Partial answer"
    assert (got.finish.failure.code if got.finish.failure else None) == code
    if code is not None:
        assert got.finish.failure is not None and "why it stopped" in got.finish.failure.message
    assert got.replay_state["gemini"]["response"]["safetyRatings"] == ratings


def test_a_blocked_prompt_is_an_error_finish_with_its_reason() -> None:
    feedback = {
        "blockReason": "SAFETY",
        "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}],
    }
    got = result([{"promptFeedback": feedback, "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}}])
    assert got.finish.kind == "error" and got.finish.failure is not None
    assert got.finish.failure.code == "PROMPT_BLOCKED" and "SAFETY" in got.finish.failure.message
    assert got.usage == sf.Usage(input_tokens=7, output_tokens=0)
    assert got.replay_state["gemini"]["response"]["promptFeedback"] == feedback


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (USAGE, {"inputTokens": 10, "outputTokens": 5}),
        (
            {
                "promptTokenCount": 100,
                "cachedContentTokenCount": 60,
                "candidatesTokenCount": 5,
                "thoughtsTokenCount": 20,
            },
            {"inputTokens": 40, "outputTokens": 25, "cacheReadTokens": 60, "reasoningTokens": 20},
        ),
        (
            {"promptTokenCount": 10, "toolUsePromptTokenCount": 30, "candidatesTokenCount": 1},
            {"inputTokens": 40, "outputTokens": 1},
        ),
        ({"candidatesTokenCount": 3}, {"inputTokens": 0, "outputTokens": 3}),
    ],
)
def test_usage_is_disjoint(usage: dict[str, Any], expected: dict[str, int]) -> None:
    out = run([chunk({"text": "x"}), chunk({"text": ""}, finish="STOP", usage=usage)])
    assert out[-2] == {"type": "usage", "usage": expected}


def test_the_last_usage_with_counts_wins_even_after_the_finish_reason() -> None:
    events = [
        chunk({"text": "x"}, usage={"promptTokenCount": 1, "candidatesTokenCount": 1}),
        chunk({"text": ""}, finish="STOP", usage={"trafficType": "ON_DEMAND"}),
        {"usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 4}},
    ]
    assert result(events).usage == sf.Usage(input_tokens=9, output_tokens=4)
    assert gemini_usage({"trafficType": "ON_DEMAND"}) is None


def test_a_stream_without_usage_passes_harness_but_not_strict() -> None:
    events = [chunk({"text": "x"}), chunk({"text": ""}, finish="STOP")]
    assert failure(events).code == E.USAGE_MISSING
    assert result(events, sf.Policy.HARNESS).usage is None


# --- Failures ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code", "status", "retry_after_ms"),
    [
        (
            {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"},
            E.RATE_LIMIT,
            429,
            None,
        ),
        ({"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}, E.SERVER, 500, None),
        ({"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}, E.SERVER, 503, None),
        (
            {
                "code": 400,
                "message": "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            },
            E.CONTEXT_WINDOW_EXCEEDED,
            400,
            None,
        ),
        (
            {
                "code": 429,
                "message": "You exceeded your current quota, please check your plan.",
                "status": "RESOURCE_EXHAUSTED",
                "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"}],
            },
            E.RATE_LIMIT,  # a quota the provider says to retry in 34.4 s is a rate limit
            429,
            34400,
        ),
        ({"code": 429, "message": "You exceeded your current quota, please check your plan."}, E.QUOTA, 429, None),
    ],
)
def test_an_error_in_the_stream_is_coded(
    error: dict[str, Any], code: sf.ErrorCode, status: int, retry_after_ms: int | None
) -> None:
    caught = failure([chunk({"text": "partial"}), {"error": error}])
    assert (caught.code, caught.status, caught.retry_after_ms) == (code, status, retry_after_ms)
    assert error["message"] in caught.message


@pytest.mark.parametrize(
    ("events", "code", "words"),
    [
        ([chunk({"text": "cut"})], E.STREAM_CLOSED, "without a finishReason"),
        ([], E.STREAM_CLOSED, "without a finishReason"),
        ([chunk({"text": ""}, finish="STOP", usage=USAGE)], E.EMPTY_RESPONSE, "without any content"),
        (
            [
                {
                    "candidates": [
                        {"content": {"parts": [{"text": "a"}]}, "index": 0},
                        {"content": {"parts": [{"text": "b"}]}, "index": 1},
                    ]
                }
            ],
            E.MALFORMED_RESPONSE,
            "several candidates",
        ),
        (
            [chunk({"text": "a"}), {"candidates": [{"content": {"parts": [{"text": "b"}]}, "index": 1}]}],
            E.MALFORMED_RESPONSE,
            "several candidates",
        ),
        ([{"candidates": "no"}], E.MALFORMED_RESPONSE, "'candidates' must be a list"),
        ([chunk("a part that is a string")], E.MALFORMED_RESPONSE, "a part must be an object"),  # type: ignore[arg-type]
        ([chunk({"text": 5})], E.MALFORMED_RESPONSE, "text must be a string"),
        ([chunk(call(args={"a": 1}))], E.MALFORMED_RESPONSE, "without a name"),
        ([chunk({"text": "x", "thoughtSignature": 7})], E.MALFORMED_RESPONSE, "thoughtSignature must be a string"),
        ([chunk({"text": "x"}, finish="")], E.MALFORMED_RESPONSE, "finishReason"),
        ([chunk({"text": "x"}, usage={"promptTokenCount": -1})], E.MALFORMED_RESPONSE, "promptTokenCount"),
        (
            [
                chunk(
                    call(
                        "f",
                        willContinue=True,
                        partialArgs=[arg("$.a", numberValue=1), arg("$.b", numberValue=2), arg("$.a", numberValue=3)],
                    )
                )
            ],
            E.MALFORMED_RESPONSE,
            "member 'a' again",
        ),
        ([chunk(call("f", partialArgs=[arg("$.a[1]", numberValue=1)]))], E.MALFORMED_RESPONSE, "index 0 comes next"),
        ([chunk(call("f", partialArgs=[arg("$[0]", numberValue=1)]))], E.MALFORMED_RESPONSE, "must be an object"),
        ([chunk(call("f", partialArgs=[arg("location", stringValue="x")]))], E.MALFORMED_RESPONSE, "root '$'"),
        ([chunk(call("f", partialArgs=[arg("$.a", stringValue=3)]))], E.MALFORMED_RESPONSE, "stringValue must be"),
        ([chunk(call("f", willContinue=True)), chunk(call(args={"a": 1}))], E.MALFORMED_RESPONSE, "whole 'args'"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_failures_are_coded(events: list[dict[str, Any]], code: sf.ErrorCode, words: str) -> None:
    caught = failure(events)
    assert caught.code == code and words in caught.message, caught.message


def test_the_sdk_cannot_hide_a_non_finite_number() -> None:
    bad = types.GenerateContentResponse(
        candidates=[
            types.Candidate(
                content=types.Content(
                    role="model",
                    parts=[
                        types.Part(
                            function_call=types.FunctionCall(
                                name="f", partial_args=[types.PartialArg(json_path="$.x", number_value=float("inf"))]
                            )
                        )
                    ],
                )
            )
        ]
    )
    caught = failure([bad.model_dump()])  # snake_case, the float as it is
    assert caught.code == E.MALFORMED_RESPONSE and "finite" in caught.message


# --- Properties --------------------------------------------------------------------------------------


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces, at = [], 0
    for point in [*points, len(text)]:
        pieces.append(text[at:point])
        at = point
    return [p for p in pieces if p] or [text]


@PROPS
@given(
    thought=st.text(min_size=1, max_size=40),
    answer=st.text(min_size=1, max_size=40),
    thought_cuts=st.lists(st.integers(0, 40), max_size=6),
    answer_cuts=st.lists(st.integers(0, 40), max_size=6),
)
def test_any_split_of_text_and_thoughts_assembles_the_same(
    thought: str, answer: str, thought_cuts: list[int], answer_cuts: list[int]
) -> None:
    events = [chunk({"text": p, "thought": True}) for p in _split(thought, thought_cuts)]
    events += [chunk({"text": p}) for p in _split(answer, answer_cuts)]
    got = result([*events, end()])
    assert (got.reasoning, got.text) == (thought, answer)
    assert [getattr(b, "type", None) for b in got.blocks] == ["reasoning", "text"]


_KEYS = st.text(max_size=6)
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, min_size=1, max_size=3) | st.dictionaries(_KEYS, inner, min_size=1, max_size=3),
    max_leaves=10,
)
_OBJECTS = st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=4)


def _path(segments: list[str | int]) -> str:
    out = ["$"]
    for segment in segments:
        if isinstance(segment, int):
            out.append(f"[{segment}]")
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", segment):
            out.append(f".{segment}")
        else:
            escaped = segment.replace("\\", "\\\\").replace("'", "\\'")
            out.append(f"['{escaped}']")
    return "".join(out)


def _leaves(value: Any, segments: list[str | int]) -> Iterable[tuple[list[str | int], Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, [*segments, key])
    elif isinstance(value, list):
        for number, inner in enumerate(value):
            yield from _leaves(inner, [*segments, number])
    else:
        yield segments, value


def _partial_args(value: dict[str, Any], data: st.DataObject) -> list[dict[str, Any]]:
    """``value`` as PartialArgs in document order, each string in random pieces."""
    out: list[dict[str, Any]] = []
    for segments, leaf in _leaves(value, []):
        path = _path(segments)
        if isinstance(leaf, str):
            pieces = _split(leaf, data.draw(st.lists(st.integers(0, 12), max_size=3)))
            terminated = data.draw(st.booleans())  # Gemini's way: every piece goes on, then an empty one ends it
            for number, piece in enumerate(pieces):
                out.append(arg(path, terminated or number < len(pieces) - 1, stringValue=piece))
            if terminated:
                out.append(arg(path, stringValue=""))
        elif leaf is None:
            out.append(arg(path, nullValue="NULL_VALUE"))
        elif isinstance(leaf, bool):
            out.append(arg(path, boolValue=leaf))
        else:
            out.append(arg(path, numberValue=leaf))
    return out


@PROPS
@given(value=_OBJECTS, data=st.data())
def test_any_split_of_streamed_arguments_assembles_the_object(value: dict[str, Any], data: st.DataObject) -> None:
    pieces = _partial_args(value, data)
    group = data.draw(st.integers(1, 4))
    events = [chunk(call("f", willContinue=True))]
    for start in range(0, len(pieces), group):
        events.append(chunk(call(partialArgs=pieces[start : start + group], willContinue=True)))
    events += [chunk(call()), end()]
    streamed = result(events).tool_calls[0]
    whole = result([chunk(call("f", args=value)), end()]).tool_calls[0]
    assert orjson.loads(streamed.arguments) == value == orjson.loads(whole.arguments)


@PROPS
@given(segments=st.lists(st.one_of(st.integers(0, 10**6), st.text(max_size=8)), max_size=5))
def test_paths_read_back(segments: list[str | int]) -> None:
    assert parse_path(_path(segments)) == segments


def test_a_deep_path_with_many_siblings() -> None:
    # A bound, not a timing: one deep path then many siblings costs each step the path's length, never more.
    writer = ArgumentWriter()
    deep = "$" + ".a" * 500
    text = [writer.write({"jsonPath": deep + f".k{n}", "numberValue": n}, dict.get) for n in range(2000)]
    text.append(writer.finish())
    value = orjson.loads("".join(text))
    for _ in range(500):
        value = value["a"]
    assert len(value) == 2000

"""Cohere's v2 chat stream to the block protocol: every recording, each conversion rule, every documented failure,
and the ``cohere`` SDK's own stream event objects.

The expected content of a recording is derived here from its raw events, independently of the converter.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm._providers.cohere import from_cohere_events

from ..data import MORE_PROVIDER_STREAMS, recording
from .support import split

E = sf.ErrorCode
COHERE = MORE_PROVIDER_STREAMS / "cohere"
FILES = sorted(COHERE.glob("*.jsonl"))


def assemble(events: Iterable[Any], policy: sf.Policy = sf.Policy.STRICT) -> sf.StreamResult:
    return sf.assemble(from_cohere_events(events), policy=policy)


def test_the_recordings_are_there() -> None:
    assert [p.name for p in FILES] == ["cohere-text.jsonl", "cohere-tool-call.jsonl"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_recording_converts_with_exactly_its_content(path: Path) -> None:
    events = recording(path)
    text: list[str] = []
    plan: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    end: dict[str, Any] = {}
    for event in events:
        message = event.get("delta", {}).get("message", {})
        if event["type"] in ("content-start", "content-delta"):
            text.append(message["content"].get("text", ""))
        elif event["type"] == "tool-plan-delta":
            plan.append(message["tool_plan"])
        elif event["type"] == "tool-call-start":
            call = message["tool_calls"]
            calls[event["index"]] = {"id": call["id"], "name": call["function"]["name"], "args": []}
            calls[event["index"]]["args"].append(call["function"]["arguments"])
        elif event["type"] == "tool-call-delta":
            calls[event["index"]]["args"].append(message["tool_calls"]["function"]["arguments"])
        elif event["type"] == "message-end":
            end = event["delta"]

    result = assemble(events)

    assert result.text == "".join(text)
    assert result.reasoning == "".join(plan)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        (c["id"], c["name"], "".join(c["args"])) for _, c in sorted(calls.items())
    ]
    assert result.finish.kind == {"COMPLETE": "stop", "TOOL_CALL": "tool-calls"}[end["finish_reason"]]
    tokens, cached = end["usage"]["tokens"], end["usage"]["cached_tokens"]
    assert result.usage == sf.Usage(
        input_tokens=tokens["input_tokens"] - cached, output_tokens=tokens["output_tokens"], cache_read_tokens=cached
    )
    assert result.interrupted == []
    assert result.replay_state is not None and result.replay_state["responseId"] == events[0]["id"]


@pytest.mark.parametrize("union", ["V2ChatStreamResponse", "StreamedChatResponseV2"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_sdk_stream_events_give_the_same_chunks(path: Path, union: str) -> None:
    cohere = pytest.importorskip("cohere")
    from cohere.core.pydantic_utilities import parse_obj_as  # how the SDK builds each event of a stream

    events = recording(path)
    objects = [parse_obj_as(getattr(cohere, union), event) for event in events]
    assert type(objects[0]).__module__.startswith("cohere.")
    assert list(from_cohere_events(objects)) == list(from_cohere_events(events))


def test_the_same_events_async() -> None:
    events = recording(COHERE / "cohere-tool-call.jsonl")

    async def each() -> AsyncIterator[dict[str, Any]]:
        for event in events:
            yield event

    result = asyncio.run(sf.aassemble(from_cohere_events(each()), policy=sf.Policy.STRICT))
    assert result == assemble(events)


# --- Building events --------------------------------------------------------------------------------------


def message(kind: str, index: int | None = None, **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "delta": {"message": fields}}
    if index is not None:
        event["index"] = index
    return event


def content(index: int, kind: str, *pieces: str) -> list[dict[str, Any]]:
    field = "thinking" if kind == "thinking" else "text"
    return [
        message("content-start", index, content={"type": kind, field: ""}),
        *(message("content-delta", index, content={field: piece}) for piece in pieces),
        {"type": "content-end", "index": index},
    ]


def tool(index: int, call_id: str, name: str, *pieces: str) -> list[dict[str, Any]]:
    return [
        message("tool-call-start", index, tool_calls={"id": call_id, "type": "function", "function": {"name": name}}),
        *(message("tool-call-delta", index, tool_calls={"function": {"arguments": p}}) for p in pieces),
        {"type": "tool-call-end", "index": index},
    ]


START = message("message-start", None, role="assistant", content=[], tool_plan="", tool_calls=[], citations=[])
START["id"] = "r1"
USAGE = {"billed_units": {"input_tokens": 3, "output_tokens": 2}, "tokens": {"input_tokens": 40, "output_tokens": 9}}


def end(reason: str | None = "COMPLETE", usage: dict[str, Any] | None = USAGE, **more: Any) -> dict[str, Any]:
    delta: dict[str, Any] = {"finish_reason": reason, **more}
    if usage is not None:
        delta["usage"] = usage
    return {"type": "message-end", "delta": delta}


SAY = content(0, "text", "hi")


# --- Conversion rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("COMPLETE", "stop", None),
        ("STOP_SEQUENCE", "stop", None),
        ("MAX_TOKENS", "max-tokens", None),
        ("ERROR_TOXIC", "error", "ERROR_TOXIC"),  # a v1 reason a compatible server may still send
    ],
)
def test_finish_reasons(reason: str, kind: str, code: str | None) -> None:
    result = assemble([START, *SAY, end(reason)])
    assert result.finish.kind == kind and result.text == "hi"
    assert (result.finish.failure.code if result.finish.failure else None) == code


def test_thinking_becomes_reasoning_and_text_text() -> None:
    result = assemble([START, *content(0, "thinking", "let me ", "see"), *content(1, "text", "4"), end()])
    assert [type(b) for b in result.blocks] == [sf.ReasoningBlock, sf.TextBlock]
    assert (result.reasoning, result.text) == ("let me see", "4")


def test_the_tool_plan_is_reasoning_and_the_calls_are_tool_calls() -> None:
    plan = [message("tool-plan-delta", None, tool_plan=p) for p in ("I will ", "look.")]
    events = [
        START,
        *plan,
        *tool(0, "c0", "weather", '{"city"', ': "Paris"}'),
        *tool(1, "c1", "time"),
        end("TOOL_CALL"),
    ]
    result = assemble(events)
    assert result.reasoning == "I will look."
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("c0", "weather", '{"city": "Paris"}'),
        ("c1", "time", "{}"),
    ]
    assert result.replay_state == {"responseId": "r1", "toolPlanBlocks": [0]}


def test_a_turn_with_tool_calls_finishes_with_tool_calls_even_on_complete() -> None:
    assert assemble([START, *tool(0, "c0", "f", "{}"), end("COMPLETE")]).finish.kind == "tool-calls"


def test_a_tool_call_cut_by_max_tokens_is_interrupted() -> None:
    events = [START, *tool(0, "c0", "f", '{"a": ')[:-1], end("MAX_TOKENS")]
    result = assemble(events)
    (cut,) = result.interrupted
    assert isinstance(cut, sf.ToolCallBlock) and cut.arguments == '{"a": '


def test_citations_are_kept_verbatim_at_the_block_they_cite() -> None:
    citation = {
        "start": 26,
        "end": 31,
        "text": "Paris",
        "sources": [{"type": "document", "id": "doc_0", "document": {"title": "France"}}],
        "content_index": 1,
        "type": "TEXT_CONTENT",
    }
    events = [
        START,
        *content(0, "thinking", "hmm"),
        message("content-start", 1, content={"type": "text", "text": ""}),
        message("content-delta", 1, content={"text": "The capital of France is Paris."}),
        message("citation-start", 0, citations=citation),
        {"type": "citation-end", "index": 0},
        {"type": "content-end", "index": 1},
        {"type": "debug", "prompt": "<the whole prompt>"},
        end(),
    ]
    result = assemble(events)
    assert result.text == "The capital of France is Paris."
    assert result.replay_state == {"responseId": "r1", "kept": [{"type": "citation", "at": 1, "data": citation}]}


def test_a_content_part_of_an_unknown_type_is_kept_assembled() -> None:
    events = [
        START,
        message("content-start", 0, content={"type": "audio", "transcript": "he", "format": "wav"}),
        message("content-delta", 0, content={"transcript": "llo"}),
        {"type": "content-end", "index": 0},
        *content(1, "text", "ok"),
        end(),
    ]
    result = assemble(events)
    assert result.text == "ok"
    assert result.replay_state is not None
    assert result.replay_state["kept"] == [
        {"type": "audio", "at": 0, "data": {"type": "audio", "transcript": "hello", "format": "wav"}}
    ]


def test_event_types_it_does_not_know_are_skipped() -> None:
    assert assemble([START, {"type": "something-new", "x": 1}, *SAY, end()]).text == "hi"


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {
                "billed_units": {"input_tokens": 12},
                "tokens": {"input_tokens": 507, "output_tokens": 10},
                "cached_tokens": 448,
            },
            sf.Usage(input_tokens=59, output_tokens=10, cache_read_tokens=448),
        ),
        ({"tokens": {"input_tokens": 5.0, "output_tokens": 1.0}}, sf.Usage(input_tokens=5, output_tokens=1)),
        # Without the model's counts, the billed ones (they leave Cohere's prompt template out).
        ({"billed_units": {"input_tokens": 12, "output_tokens": 7}}, sf.Usage(input_tokens=12, output_tokens=7)),
    ],
)
def test_usage_is_disjoint(usage: dict[str, Any], expected: sf.Usage) -> None:
    assert assemble([START, *SAY, end(usage=usage)]).usage == expected


@pytest.mark.parametrize("usage", [None, {}, {"billed_units": {"search_units": 1}}])
def test_a_stream_without_usage_fails_strict_with_usage_missing(usage: dict[str, Any] | None) -> None:
    events = [START, *SAY, end(usage=usage)]
    with pytest.raises(sf.LlmError) as caught:
        assemble(events)
    assert caught.value.code == E.USAGE_MISSING
    assert assemble(events, sf.Policy.HARNESS).usage is None


# --- Failures -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "code", "words"),
    [
        ([START, *SAY], E.STREAM_CLOSED, "without a message-end"),
        ([START, *SAY, end("TIMEOUT")], E.TIMEOUT, "TIMEOUT"),
        ([START, *SAY, end("ERROR", error="internal server error")], E.SERVER, "internal server error"),
        ([START, *SAY, end("ERROR", error="rate limit reached")], E.RATE_LIMIT, "rate limit"),
        (
            [START, end("ERROR", error="too many tokens: the input exceeds the model's context length")],
            E.CONTEXT_WINDOW_EXCEEDED,
            "context length",
        ),
        ([START, *SAY, end("ERROR")], E.PROVIDER_HTTP_ERROR, "ERROR"),
        ([START, *SAY, end("COMPLETE", error="generation failed")], E.PROVIDER_HTTP_ERROR, "generation failed"),
        ([START, {"type": "error", "error": {"message": "x", "code": 503}}], E.SERVER, "x"),
        ([START, end()], E.EMPTY_RESPONSE, "without any content"),
        ([START, *SAY, end(None)], E.MALFORMED_RESPONSE, "finish_reason"),
        ([START, *SAY, end(), *SAY], E.MALFORMED_RESPONSE, "after message-end"),
        ([{"delta": {}}], E.MALFORMED_RESPONSE, "without a type"),
        (
            [message("tool-call-delta", 0, tool_calls={"function": {"arguments": "{}"}})],
            E.MALFORMED_RESPONSE,
            "did not start",
        ),
        (
            [message("tool-call-start", 0, tool_calls={"function": {"name": "f"}})],
            E.MALFORMED_RESPONSE,
            "without an id",
        ),
        ([*SAY, *SAY], E.MALFORMED_RESPONSE, "began twice"),
        ([message("content-delta", 0, content={"text": 3})], E.MALFORMED_RESPONSE, "must be a string"),
        ([{"type": "content-delta", "index": 0}], E.MALFORMED_RESPONSE, "content-delta.delta must be an object"),
        ([START, *SAY, end(usage={"tokens": {"input_tokens": -1}})], E.MALFORMED_RESPONSE, "input_tokens"),
        ([5], E.MALFORMED_RESPONSE, "must be an object"),
    ],
)
def test_what_cannot_be_converted_is_a_coded_error(events: list[Any], code: sf.ErrorCode, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(from_cohere_events(events))
    assert caught.value.code == code and words in caught.value.message


def test_text_after_the_next_block_began_is_refused() -> None:
    events = [
        START,
        *content(0, "thinking", "a"),
        *content(1, "text", "b"),
        message("content-delta", 0, content={"thinking": "c"}),
    ]
    with pytest.raises(sf.LlmError, match="after the next block had begun") as caught:
        list(from_cohere_events(events))
    assert caught.value.code == E.MALFORMED_RESPONSE


# --- Any split of the deltas --------------------------------------------------------------------------


@st.composite
def turns(draw: st.DrawFn) -> tuple[list[dict[str, Any]], str, str, list[str]]:
    thought = draw(st.text(max_size=30))
    arguments = [
        orjson.dumps(draw(st.dictionaries(st.text(max_size=4), st.text(max_size=6), max_size=3))).decode()
        for _ in range(draw(st.integers(0, 3)))
    ]
    events: list[dict[str, Any]] = [START]
    if arguments:  # a tool plan, then the calls
        events += [message("tool-plan-delta", None, tool_plan=piece) for piece in split(draw, thought)]
        for number, text in enumerate(arguments):
            events += tool(number, f"c{number}", "f", *split(draw, text))
        return [*events, end("TOOL_CALL")], thought, "", arguments
    said = draw(st.text(min_size=1, max_size=30))
    events += content(0, "thinking", *split(draw, thought)) + content(1, "text", *split(draw, said))
    return [*events, end()], thought, said, arguments


@settings(max_examples=200, deadline=None)
@given(turns())
def test_any_split_of_the_deltas_assembles_the_same(case: tuple[list[dict[str, Any]], str, str, list[str]]) -> None:
    events, thought, said, arguments = case
    result = assemble(events)
    assert (result.reasoning, result.text) == (thought, said)
    assert [c.arguments for c in result.tool_calls] == arguments
    assert result.finish.kind == ("tool-calls" if arguments else "stop")

"""Provider streams to the block protocol, without HTTP: every recording, and each conversion rule.

The expected content of a recording is derived here from the recording itself, independently of the
converters: the text, reasoning and tool calls the provider sent must come out of the machine unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf

from ..data import MORE_PROVIDER_STREAMS, PROVIDER_STREAMS
from .support import anthropic_recording, async_items, openai_recording

E = sf.ErrorCode
OPENAI = PROVIDER_STREAMS / "openai-chat"
ANTHROPIC = PROVIDER_STREAMS / "anthropic-messages"


OPENAI_FILES = sorted(p for p in OPENAI.glob("*") if p.suffix in (".jsonl", ".sse"))
ANTHROPIC_FILES = sorted(ANTHROPIC.glob("*.sse"))


def test_the_recordings_are_there() -> None:
    assert len(OPENAI_FILES) == 10 and len(ANTHROPIC_FILES) == 3


# --- Every recording ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", OPENAI_FILES, ids=lambda p: p.name)
def test_openai_recording_is_valid_and_complete(path: Path) -> None:
    events = openai_recording(path)
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    reason: str | None = None
    usage: dict[str, Any] | None = None
    for event in events:
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or delta.get("reasoning") or "")
            for call in delta.get("tool_calls") or []:
                entry = calls.setdefault(call["index"], {"id": call.get("id"), "name": None, "args": []})
                entry["name"] = entry["name"] or call["function"].get("name")
                entry["args"].append(call["function"].get("arguments") or "")
            reason = choice.get("finish_reason") or reason
        usage = event.get("usage") or usage

    result = sf.assemble(sf.from_openai_chunks(events), policy=sf.Policy.STRICT)

    assert result.text == "".join(text)
    assert result.reasoning == "".join(reasoning)
    expected_calls = [(c["id"], c["name"], "".join(c["args"]) or "{}") for _, c in sorted(calls.items())]
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == expected_calls
    assert reason is not None and result.usage is not None and usage is not None
    assert result.finish.kind == {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}[reason]
    assert result.usage.output_tokens == usage["completion_tokens"]
    cached = usage.get("prompt_cache_hit_tokens", (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
    assert result.usage.input_tokens + (result.usage.cache_read_tokens or 0) == usage["prompt_tokens"]
    assert (result.usage.cache_read_tokens or 0) == cached
    assert result.interrupted == []


@pytest.mark.parametrize("path", ANTHROPIC_FILES, ids=lambda p: p.name)
def test_anthropic_recording_is_valid_and_complete(path: Path) -> None:
    events = anthropic_recording(path)
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        if event["type"] == "content_block_start":
            block = event["content_block"]
            blocks[event["index"]] = {"type": block["type"], "parts": [], "stopped": False, "block": block}
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            blocks[event["index"]]["parts"].append(delta.get("text") or delta.get("partial_json") or "")
        elif event["type"] == "content_block_stop":
            blocks[event["index"]]["stopped"] = True

    result = sf.assemble(sf.from_anthropic_events(events), policy=sf.Policy.STRICT)

    complete = [b for _, b in sorted(blocks.items()) if b["stopped"]]
    cut = [b for _, b in sorted(blocks.items()) if not b["stopped"]]
    assert result.text == "".join("".join(b["parts"]) for b in complete if b["type"] == "text")
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        (b["block"]["id"], b["block"]["name"], "".join(b["parts"]) or "{}") for b in complete if b["type"] == "tool_use"
    ]
    assert [(getattr(b, "name", None), getattr(b, "arguments", None)) for b in result.interrupted] == [
        (b["block"]["name"], "".join(b["parts"])) for b in cut
    ]
    if cut:
        assert result.finish.kind == "max-tokens"


def test_a_cut_tool_call_is_interrupted_with_what_came() -> None:
    result = sf.assemble(
        sf.from_anthropic_events(anthropic_recording(ANTHROPIC / "incomplete_partial_json_response.sse"))
    )
    (cut,) = result.interrupted
    assert isinstance(cut, sf.ToolCallBlock) and cut.name == "make_file"
    assert cut.parsed_arguments["filename"] == "taxes.txt"  # parsed as far as it goes


# --- OpenAI conversion rules ----------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """A chat.completion.chunk with one choice."""
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
        **extra,
    }


def call(position: int, arguments: str, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    """A chunk with one tool-call delta."""
    entry: dict[str, Any] = {"index": position, "function": {"arguments": arguments}}
    if call_id:
        entry["id"] = call_id
        entry["type"] = "function"
    if name:
        entry["function"]["name"] = name
    return chunk({"tool_calls": [entry]})


USAGE = {"usage": {"prompt_tokens": 10, "completion_tokens": 5}}


def convert(events: Iterable[dict[str, Any]]) -> list[Any]:
    """The protocol chunks of ``events``, checked under STRICT as they come."""
    return list(sf.validate(sf.from_openai_chunks(events), policy=sf.Policy.STRICT))


def test_text_stream_becomes_one_text_block() -> None:
    out = convert(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            chunk(finish="stop", **USAGE),
        ]
    )
    assert [c["type"] for c in out] == ["block-start", "text-delta", "text-delta", "block-end", "usage", "finish"]
    assert out[3]["block"] == {"type": "text", "text": "Hello"}


def test_interleaved_parallel_calls_are_held_back_until_the_first_is_complete() -> None:
    events = [
        call(0, '{"a":', "call_a", "f"),
        call(1, '{"b":', "call_b", "g"),  # starts while call 0 is incomplete: held back
        call(0, " 1}"),
        call(1, " 2}"),
        chunk(finish="tool_calls", **USAGE),
    ]
    out = convert(events)
    result = sf.assemble(out)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("call_a", "f", '{"a": 1}'),
        ("call_b", "g", '{"b": 2}'),
    ]
    # The second call began only after the first ended, carrying everything it had buffered.
    starts = [i for i, c in enumerate(out) if c["type"] == "block-start"]
    ends = [i for i, c in enumerate(out) if c["type"] == "block-end"]
    assert ends[0] < starts[1]


def test_sequential_calls_stream_live() -> None:
    converter = sf.OpenAIConverter()
    first = converter.feed(call(0, '{"a": 1}', "call_a", "f"))
    assert [c["type"] for c in first] == ["block-start", "tool-call-delta"]
    second = converter.feed(call(1, "{", "call_b", "g"))  # call 0 is complete: it ends, call 1 starts at once
    assert [c["type"] for c in second] == ["block-end", "block-start", "tool-call-delta"]


def test_end_closes_the_turn_once() -> None:
    converter = sf.OpenAIConverter()
    converter.feed(call(0, '{"a": 1}', "call_a", "f"))
    converter.feed(chunk(finish="tool_calls", **USAGE))
    assert [c["type"] for c in converter.end()] == ["block-end", "usage", "finish"]
    assert converter.end() == []  # a second call gives nothing, as every converter's end does


def test_braces_inside_strings_do_not_end_a_call() -> None:
    events = [
        call(0, '{"s": "}{\\"}', "call_a", "f"),
        call(1, "{}", "call_b", "g"),
        call(0, '"}'),
        chunk(finish="tool_calls", **USAGE),
    ]
    result = sf.assemble(convert(events))
    assert [c.parsed_arguments for c in result.tool_calls] == [{"s": '}{"}'}, {}]


def test_an_empty_id_on_a_later_delta_is_no_id() -> None:
    # Alibaba DashScope repeats the id as "" (and the name as "") on every delta after the first.
    later = [
        chunk({"tool_calls": [{"index": 0, "id": "", "function": {"name": "", "arguments": a}}]})
        for a in ('{"a"', ": 1}")
    ]
    result = sf.assemble(convert([call(0, "", "call_a", "f"), *later, chunk(finish="tool_calls", **USAGE)]))
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("call_a", "f", '{"a": 1}')]


def test_calls_without_an_index_are_told_apart_by_id() -> None:
    def whole(call_id: str, arguments: str) -> dict[str, Any]:
        return chunk({"tool_calls": [{"id": call_id, "function": {"name": "f", "arguments": arguments}}]})

    events = [
        whole("call_a", '{"a":'),
        whole("call_b", "{}"),
        whole("call_a", " 1}"),
        chunk(finish="tool_calls", **USAGE),
    ]
    result = sf.assemble(convert(events))
    assert [(c.id, c.arguments) for c in result.tool_calls] == [("call_a", '{"a": 1}'), ("call_b", "{}")]


def test_text_after_a_tool_call_is_a_new_block() -> None:
    events = [
        chunk({"content": "a"}),
        call(0, "{}", "call_a", "f"),
        chunk({"content": "b"}),
        chunk(finish="tool_calls", **USAGE),
    ]
    result = sf.assemble(convert(events))
    assert [b.type for b in result.blocks] == ["text", "tool-call", "text"]


def test_empty_arguments_become_an_empty_object() -> None:
    result = sf.assemble(convert([call(0, "", "call_a", "f"), chunk(finish="tool_calls", **USAGE)]))
    assert result.tool_calls[0].arguments == "{}"


def test_reasoning_then_text() -> None:
    events = [
        chunk({"reasoning_content": "think"}),
        chunk({"reasoning": " more"}),
        chunk({"content": "answer"}),
        chunk(finish="stop", **USAGE),
    ]
    result = sf.assemble(convert(events))
    assert (result.reasoning, result.text) == ("think more", "answer")


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("stop", "stop", None),
        ("tool_calls", "tool-calls", None),
        ("length", "max-tokens", None),
        ("content_filter", "error", "CONTENT_FILTER"),
        ("insufficient_system_resource", "error", "INSUFFICIENT_SYSTEM_RESOURCE"),
    ],
)
def test_finish_reasons(reason: str, kind: str, code: str | None) -> None:
    events = [call(0, "{}", "call_a", "f")] if reason == "tool_calls" else [chunk({"content": "x"})]
    result = sf.assemble(convert([*events, chunk(finish=reason, **USAGE)]))
    assert result.finish.kind == kind
    assert (result.finish.failure.code if result.finish.failure else None) == code


def test_a_call_cut_by_length_is_interrupted() -> None:
    result = sf.assemble(convert([call(0, '{"path": "/et', "call_a", "read"), chunk(finish="length", **USAGE)]))
    (cut,) = result.interrupted
    assert result.tool_calls == [] and isinstance(cut, sf.ToolCallBlock) and cut.arguments == '{"path": "/et'


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_a_call_cut_before_any_arguments_came_is_interrupted_not_empty(reason: str) -> None:
    # "{}" stands for "no arguments" only when the call ended; a cut-off call is not a call to run.
    result = sf.assemble(convert([call(0, "", "call_a", "read"), chunk(finish=reason, **USAGE)]))
    (cut,) = result.interrupted
    assert result.tool_calls == [] and isinstance(cut, sf.ToolCallBlock) and (cut.name, cut.arguments) == ("read", "")


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {
                "prompt_tokens": 339,
                "completion_tokens": 83,
                "prompt_cache_hit_tokens": 320,
                "completion_tokens_details": {"reasoning_tokens": 39},
            },
            {"inputTokens": 19, "outputTokens": 83, "cacheReadTokens": 320, "reasoningTokens": 39},
        ),
        (
            {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 64}},
            {"inputTokens": 36, "outputTokens": 7, "cacheReadTokens": 64},
        ),
        ({"prompt_tokens": 5, "completion_tokens": 1}, {"inputTokens": 5, "outputTokens": 1}),
        ({"prompt_tokens": 5.0, "completion_tokens": 1, "queue_time": 0.04}, {"inputTokens": 5, "outputTokens": 1}),
        # null counts are counts not given, as a null cache count already was
        (
            {"prompt_tokens": 5, "completion_tokens": None, "total_tokens": None, "prompt_cache_hit_tokens": None},
            {"inputTokens": 5, "outputTokens": 0},
        ),
    ],
)
def test_usage_is_disjoint(usage: dict[str, Any], expected: dict[str, int]) -> None:
    out = convert([chunk({"content": "x"}), chunk(finish="stop"), {"id": "c1", "choices": [], "usage": usage}])
    assert out[-2] == {"type": "usage", "usage": expected}


def test_a_server_that_sends_no_usage_passes_harness_but_not_strict() -> None:
    events = [chunk({"content": "x"}), chunk(finish="stop")]
    with pytest.raises(sf.LlmError) as caught:
        sf.assemble(sf.from_openai_chunks(events))
    assert caught.value.code == E.USAGE_MISSING
    assert sf.assemble(sf.from_openai_chunks(events), policy=sf.Policy.HARNESS).usage is None


@pytest.mark.parametrize(
    ("events", "code", "words"),
    [
        ([chunk(finish="stop", **USAGE)], E.EMPTY_RESPONSE, "without any content"),
        ([chunk({"content": "x"})], E.STREAM_CLOSED, "without a finish_reason"),
        ([{"choices": {"index": 0}}], E.MALFORMED_RESPONSE, "'choices' must be a list"),
        ([chunk({"content": 5})], E.MALFORMED_RESPONSE, "delta.content must be a string"),
        ([call(0, "{}", None, "f")], E.MALFORMED_RESPONSE, "began without an id"),
        ([call(0, "{}", "call_a", None)], E.MALFORMED_RESPONSE, "without a function name"),
        ([call(0, "{}", "call_a", "f"), call(0, "", "call_b")], E.MALFORMED_RESPONSE, "changed its id"),
        ([{"choices": [{"index": 1, "delta": {}}]}], E.MALFORMED_RESPONSE, "only one choice"),
        (
            [chunk({"content": "x"}), {"choices": [], "usage": {"prompt_tokens": -1}}],
            E.MALFORMED_RESPONSE,
            "prompt_tokens",
        ),
        (
            [chunk({"content": "x"}, "stop", usage={"prompt_tokens": float("inf"), "completion_tokens": 1})],
            E.MALFORMED_RESPONSE,
            "prompt_tokens",
        ),
        (
            [chunk({"content": "x"}, "stop", usage={"prompt_tokens": 2**53, "completion_tokens": 1})],
            E.MALFORMED_RESPONSE,
            "prompt_tokens",
        ),
        ([{"error": {"message": "Rate limit exceeded", "type": "rate_limit_error"}}], E.RATE_LIMIT, "Rate limit"),
        (
            [{"error": {"message": "This model's maximum context length is 8192 tokens"}}],
            E.CONTEXT_WINDOW_EXCEEDED,
            "context",
        ),
        (["not an object"], E.MALFORMED_RESPONSE, "must be an object"),
    ],
)
def test_what_cannot_be_converted_is_a_coded_error(events: list[Any], code: sf.ErrorCode, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(sf.from_openai_chunks(events))
    assert caught.value.code == code and words in caught.value.message


def test_arguments_after_the_next_block_began_are_refused() -> None:
    events = [call(0, "{}", "call_a", "f"), call(1, "{}", "call_b", "g"), call(0, "{}")]
    with pytest.raises(sf.LlmError, match="came after") as caught:
        list(sf.from_openai_chunks(events))
    assert caught.value.code == E.MALFORMED_RESPONSE


def test_async_input_gives_async_output() -> None:
    events = openai_recording(OPENAI / "deepseek-tool-call.jsonl")
    result = asyncio.run(sf.aassemble(sf.from_openai_chunks(async_items(events))))
    assert result == sf.assemble(sf.from_openai_chunks(events))


def test_openai_sdk_objects() -> None:
    types = pytest.importorskip("openai.types.chat")
    events = openai_recording(OPENAI / "deepseek-reasoning.jsonl")
    objects = [types.ChatCompletionChunk.model_validate(event) for event in events]
    assert sf.assemble(sf.from_openai_chunks(objects)) == sf.assemble(sf.from_openai_chunks(events))


# --- Anthropic conversion rules -------------------------------------------------------------------


def a_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def a_delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def a_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "model": "claude",
        "usage": {"input_tokens": 20, "output_tokens": 1, "cache_read_input_tokens": 8},
    },
}


def a_finish(reason: str, output_tokens: int = 30) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


THINKING = [
    a_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
    a_delta(0, {"type": "thinking_delta", "thinking": "hmm"}),
    a_delta(0, {"type": "signature_delta", "signature": "sig=="}),
    a_stop(0),
    a_start(1, {"type": "redacted_thinking", "data": "opaque"}),
    a_stop(1),
    a_start(2, {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}),
    a_stop(2),  # no input deltas: no arguments
]


def test_anthropic_thinking_signatures_go_to_replay_state() -> None:
    result = sf.assemble(sf.from_anthropic_events([MESSAGE_START, {"type": "ping"}, *THINKING, *a_finish("tool_use")]))
    # Redacted thinking has no text the protocol could carry: it is kept for replay, between the two blocks.
    assert [b.type for b in result.blocks] == ["reasoning", "tool-call"]
    assert result.reasoning == "hmm" and result.tool_calls[0].arguments == "{}"
    assert result.replay_state == {
        "response": {"id": "msg_1", "model": "claude", "stopReason": "tool_use"},
        "blocks": [{"signature": "sig=="}, None],
        "kept": [{"type": "redacted_thinking", "at": 1, "data": {"type": "redacted_thinking", "data": "opaque"}}],
    }
    assert result.usage == sf.Usage(input_tokens=20, output_tokens=30, cache_read_tokens=8)


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "max-tokens", None),
        ("refusal", "error", "REFUSAL"),
    ],
)
def test_anthropic_stop_reasons(reason: str, kind: str, code: str | None) -> None:
    text = [a_start(0, {"type": "text", "text": ""}), a_delta(0, {"type": "text_delta", "text": "hi"}), a_stop(0)]
    result = sf.assemble(sf.from_anthropic_events([MESSAGE_START, *text, *a_finish(reason)]))
    assert result.finish.kind == kind and (result.finish.failure.code if result.finish.failure else None) == code


@pytest.mark.parametrize(
    ("events", "code", "words"),
    [
        (
            [MESSAGE_START, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}],
            E.SERVER,
            "Overloaded",
        ),
        (
            [MESSAGE_START, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}],
            E.RATE_LIMIT,
            "slow",
        ),
        (
            [MESSAGE_START, a_start(0, {"type": "text", "text": ""}), a_stop(0)],
            E.STREAM_CLOSED,
            "without a stop_reason",
        ),
        ([MESSAGE_START, *a_finish("end_turn")], E.EMPTY_RESPONSE, "without any content"),
        (
            [MESSAGE_START, a_start(0, {"type": ["text"], "text": ""})],
            E.MALFORMED_RESPONSE,
            "with a string 'type'",
        ),
        ([MESSAGE_START, a_delta(3, {"type": "text_delta", "text": "x"})], E.MALFORMED_RESPONSE, "did not start"),
        (
            [
                MESSAGE_START,
                a_start(0, {"type": "text", "text": ""}),
                a_delta(0, {"type": "input_json_delta", "partial_json": "{"}),
            ],
            E.MALFORMED_RESPONSE,
            "for a text block",
        ),
        ([MESSAGE_START, {"type": "content_block_delta", "index": [0]}], E.MALFORMED_RESPONSE, "did not start"),
        (
            [MESSAGE_START, a_start(0, {"type": "text", "text": ""}), a_delta(0, {"type": ["text_delta"]})],
            E.MALFORMED_RESPONSE,
            "for a text block",
        ),
        (
            # the error's type decides, not a word of its message
            [
                MESSAGE_START,
                {"type": "error", "error": {"type": "invalid_request_error", "message": "bad mcp_servers"}},
            ],
            E.INVALID_REQUEST,
            "mcp_servers",
        ),
    ],
)
def test_anthropic_failures_are_coded(events: list[dict[str, Any]], code: sf.ErrorCode, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(sf.from_anthropic_events(events))
    assert caught.value.code == code and words in caught.value.message


# --- Errors sent inside the stream: a status first, then words ----------------------------------------

# What a real OpenAI-compatible proxy sent: no type, the status as a string code, and a traceback in the message.
PROXY_500 = {"message": "Traceback (most recent call last): KeyError: 'choices'", "type": None, "code": "500"}

STREAM_STATUSES = [
    pytest.param(PROXY_500, E.SERVER, 500, id="code '500', no word of it in the message"),
    pytest.param({"message": "slow down", "code": 429}, E.RATE_LIMIT, 429, id="code 429 as a number"),
    pytest.param({"message": "who are you", "code": "401"}, E.AUTH, 401, id="code '401'"),
    pytest.param({"message": "down", "type": None, "status": 503}, E.SERVER, 503, id="status 503, no code"),
    pytest.param({"message": "down", "code": "bad_gateway", "status": " 502 "}, E.SERVER, 502, id="status ' 502 '"),
    pytest.param(
        {"message": "the server could not parse the request", "code": "400"},
        E.INVALID_REQUEST,
        400,
        id="code '400' before the word server",
    ),
    pytest.param(
        {"message": "an internal server error", "type": "rate_limit_error", "code": 404},
        E.PROVIDER_HTTP_ERROR,
        404,
        id="code 404 before the type's words",
    ),
    pytest.param(
        {"message": "This model's maximum context length is 8192 tokens", "code": 400},
        E.CONTEXT_WINDOW_EXCEEDED,
        400,
        id="a context overflow with status 400, as over HTTP",
    ),
    pytest.param({"message": "Insufficient balance", "code": "429"}, E.QUOTA, 429, id="a quota with status 429"),
    # Not a status: the words decide, as before.
    pytest.param({"message": "upstream server died", "code": 600}, E.SERVER, None, id="600 is no status"),
    pytest.param({"message": "upstream server died", "code": 99}, E.SERVER, None, id="99 is no status"),
    pytest.param({"message": "upstream server died", "code": "0500"}, E.SERVER, None, id="'0500' is no status"),
    pytest.param({"message": "upstream server died", "code": "5e2"}, E.SERVER, None, id="'5e2' is no status"),
    pytest.param({"message": "upstream server died", "code": 500.0}, E.SERVER, None, id="500.0 is no status"),
    pytest.param({"message": "upstream server died", "code": True}, E.SERVER, None, id="true is no status"),
    pytest.param({"message": "no words known", "code": "1500"}, E.PROVIDER_HTTP_ERROR, None, id="'1500' no status"),
]


@pytest.mark.parametrize(("error", "code", "status"), STREAM_STATUSES)
def test_openai_an_error_in_the_stream_is_classed_by_its_status_first(
    error: dict[str, Any], code: sf.ErrorCode, status: int | None
) -> None:
    events = [chunk({"content": "partial"}), {"error": error}]
    with pytest.raises(sf.LlmError) as caught:
        list(sf.from_openai_chunks(events))
    assert (caught.value.code, caught.value.status) == (code, status)
    assert caught.value.failure.status == status
    assert error["message"] in caught.value.message


@pytest.mark.parametrize(("error", "code", "status"), STREAM_STATUSES)
def test_anthropic_an_error_event_is_classed_by_its_status_first(
    error: dict[str, Any], code: sf.ErrorCode, status: int | None
) -> None:
    text = [a_start(0, {"type": "text", "text": ""}), a_delta(0, {"type": "text_delta", "text": "partial"})]
    with pytest.raises(sf.LlmError) as caught:
        list(sf.from_anthropic_events([MESSAGE_START, *text, {"type": "error", "error": error}]))
    assert (caught.value.code, caught.value.status) == (code, status)
    assert error["message"] in caught.value.message


def test_an_error_in_the_stream_with_a_status_is_retried_as_the_status_says() -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(sf.from_openai_chunks([{"error": PROXY_500}]))
    assert caught.value.retryable


def test_anthropic_unknown_event_types_are_skipped() -> None:
    # The Messages API may add event types without a new version; clients are to skip the ones they do not know.
    text = [a_start(0, {"type": "text", "text": ""}), a_delta(0, {"type": "text_delta", "text": "hi"}), a_stop(0)]
    events = [MESSAGE_START, {"type": "surprise", "data": 1}, *text, *a_finish("end_turn")]
    assert sf.assemble(sf.from_anthropic_events(events)).text == "hi"


def test_anthropic_sdk_events() -> None:
    from pydantic import TypeAdapter

    anthropic_types = pytest.importorskip("anthropic.types")
    events = [e for e in anthropic_recording(ANTHROPIC / "tool_use_response.sse") if e["type"] != "ping"]
    objects = [TypeAdapter(anthropic_types.RawMessageStreamEvent).validate_python(event) for event in events]
    assert sf.assemble(sf.from_anthropic_events(objects)) == sf.assemble(sf.from_anthropic_events(events))


# --- Interleaving, in general ---------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def interleaved(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str], str]:
    """Parallel tool calls (and text) whose deltas arrive in any order that keeps each call's own order."""
    count = draw(st.integers(1, 4))
    arguments = [
        orjson.dumps(draw(st.dictionaries(st.text(max_size=3), st.text(max_size=5), max_size=3))).decode()
        for _ in range(count)
    ]
    queues: list[list[dict[str, Any]]] = []
    for number, text in enumerate(arguments):
        cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        queues.append([call(number, pieces[0], f"call_{number}", "f")] + [call(number, p) for p in pieces[1:]])
    texts = draw(st.lists(st.text(min_size=1, max_size=4), max_size=3))
    queues.append([chunk({"content": t}) for t in texts])
    events = []
    while any(queues):
        pick = draw(st.sampled_from([q for q in queues if q]))
        events.append(pick.pop(0))
    return [*events, chunk(finish="tool_calls", **USAGE)], arguments, "".join(texts)


@settings(max_examples=300, deadline=None)
@given(interleaved())
def test_any_interleaving_comes_out_valid_under_strict(case: tuple[list[dict[str, Any]], list[str], str]) -> None:
    events, arguments, text = case
    result = sf.assemble(sf.from_openai_chunks(events), policy=sf.Policy.STRICT)
    # Calls come out in the order they began, each whole.
    began = [c["index"] for e in events for c in e["choices"][0]["delta"].get("tool_calls", []) if "id" in c]
    assert [(c.id, c.arguments) for c in result.tool_calls] == [(f"call_{n}", arguments[n]) for n in began]
    assert result.text == text


# --- Chat completions: content as a list of parts (issue #13, item 2) -----------------------------------------

MORE_OPENAI = sorted((MORE_PROVIDER_STREAMS / "openai-chat").glob("*.jsonl"))


def _parts_of(content: Any) -> tuple[str, str]:
    """(text, reasoning) of one ``delta.content``, read independently of the converter."""
    if isinstance(content, str):
        return content, ""
    text = "".join(p["text"] for p in content or [] if p["type"] == "text")
    reasoning = "".join(i["text"] for p in content or [] if p["type"] == "thinking" for i in p["thinking"])
    return text, reasoning


@pytest.mark.parametrize("path", MORE_OPENAI, ids=lambda p: p.name)
def test_a_recording_with_content_parts_converts_with_exactly_its_content(path: Path) -> None:
    events = openai_recording(path)
    pieces = [_parts_of(c["delta"].get("content")) for e in events for c in e["choices"]]
    result = sf.assemble(sf.from_openai_chunks(events), policy=sf.Policy.STRICT)
    assert result.text == "".join(t for t, _ in pieces) and result.reasoning == "".join(r for _, r in pieces)
    assert [t for t, _ in typed_texts(result)] == ["reasoning", "text"]
    assert result.usage is not None and result.usage.output_tokens == events[-1]["usage"]["completion_tokens"]
    assert result.finish.kind == "stop" and result.kept == [] and set(result.replay_state) == {"response"}


def test_the_mistral_recording_is_there() -> None:
    assert [p.name for p in MORE_OPENAI] == ["mistral-reasoning.jsonl"]


def typed_texts(result: sf.StreamResult) -> list[tuple[str, str]]:
    return [(b.type, b.text) for b in result.blocks if isinstance(b, sf.TextBlock | sf.ReasoningBlock)]


def parts(*items: dict[str, Any]) -> dict[str, Any]:
    return chunk({"content": list(items)})


def thinking(*texts: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": [{"type": "text", "text": t} for t in texts]}


def test_text_and_thinking_parts_become_blocks() -> None:
    out = convert(
        [
            parts(thinking("a", "b")),
            parts(thinking("c"), {"type": "text", "text": "x"}),
            parts({"type": "text", "text": ""}, {"type": "text", "text": "y"}),
            chunk({"content": "z"}),  # a plain string after parts: the same text block
            chunk(finish="stop", **USAGE),
        ]
    )
    result = sf.assemble(out)
    assert typed_texts(result) == [("reasoning", "abc"), ("text", "xyz")]
    assert out[-1]["replayState"] == {"response": {"id": "c1"}}  # nothing kept: its id alone


def test_a_part_of_another_type_is_kept_where_it_came() -> None:
    reference = {"type": "reference", "reference_ids": [3]}
    image = {"type": "image_url", "image_url": {"url": "https://i.example/a.png"}}
    events = [
        parts({"type": "text", "text": "Paris"}, reference, {"type": "text", "text": " is big."}),
        parts({"type": "thinking", "thinking": [{"type": "text", "text": "hm"}, reference], "closed": True}),
        parts(image),
        chunk(finish="stop", **USAGE),
    ]
    result = sf.assemble(convert(events))
    assert typed_texts(result) == [("text", "Paris"), ("text", " is big."), ("reasoning", "hm")]
    assert [(k.type, k.at, k.data) for k in result.kept] == [
        ("reference", 1, reference),
        # inside the thinking part it came in, with that part's other fields
        ("thinking", 3, {"type": "thinking", "thinking": [reference], "closed": True}),
        ("image_url", 3, image),
    ]


def test_thinking_given_as_a_string_is_reasoning() -> None:
    result = sf.assemble(convert([parts({"type": "thinking", "thinking": "plain"}), chunk(finish="stop", **USAGE)]))
    assert result.reasoning == "plain"


def test_a_turn_of_kept_parts_only_is_not_empty() -> None:
    result = sf.assemble(convert([parts({"type": "reference", "reference_ids": [1]}), chunk(finish="stop", **USAGE)]))
    assert result.blocks == [] and [k.type for k in result.kept] == ["reference"]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (["text"], "a content part must be an object with a string 'type', got str"),
        ([{"text": "x"}], "with a string 'type', got None"),
        ([{"type": "text", "text": 5}], "a text part's 'text' must be a string"),
        ([{"type": "thinking", "thinking": {"type": "text"}}], "'thinking' must be a list of parts"),
        ([{"type": "thinking", "thinking": ["x"]}], "a thinking part must hold objects"),
        ([{"type": "thinking", "thinking": [{"type": "text"}]}], "a thinking text part's 'text' must be a string"),
        ({"type": "text", "text": "x"}, "delta.content must be a string"),
    ],
)
def test_parts_that_are_not_the_documented_form_are_refused(content: Any, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(sf.from_openai_chunks([chunk({"content": content}), chunk(finish="stop", **USAGE)]))
    assert caught.value.code == E.MALFORMED_RESPONSE and words in caught.value.message


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.text(max_size=8)), max_size=12))
def test_any_split_of_the_parts_assembles_the_same(pieces: list[tuple[bool, str]]) -> None:
    events = [parts(thinking(t) if is_thinking else {"type": "text", "text": t}) for is_thinking, t in pieces]
    events.append(chunk({"content": "end"}, "stop", **USAGE))
    result = sf.assemble(convert(events))
    assert result.reasoning == "".join(t for is_thinking, t in pieces if is_thinking)
    assert result.text == "".join(t for is_thinking, t in pieces if not is_thinking) + "end"

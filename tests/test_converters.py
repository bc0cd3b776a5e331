"""Provider streams to the block protocol, without HTTP: every recording, and each conversion rule.

The expected content of a recording is derived here from the recording itself, independently of the
converters: the text, reasoning and tool calls the provider sent must come out of the machine unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm._http import read_sse

from .conftest import PROVIDER_STREAMS

E = sf.ErrorCode
OPENAI = PROVIDER_STREAMS / "openai-chat"
ANTHROPIC = PROVIDER_STREAMS / "anthropic-messages"


def openai_recording(path: Path) -> list[dict[str, Any]]:
    """The chat.completion.chunk objects of a recording: one per line, or SSE up to ``[DONE]``."""
    if path.suffix == ".jsonl":
        return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    out = []
    for event in read_sse(path.read_bytes()):
        if event.data == "[DONE]":
            break
        out.append(orjson.loads(event.data))
    return out


def anthropic_recording(path: Path) -> list[dict[str, Any]]:
    """The events of a recorded Messages API stream."""
    return [orjson.loads(event.data) for event in read_sse(path.read_bytes())]


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


async def _aiter(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def test_async_input_gives_async_output() -> None:
    events = openai_recording(OPENAI / "deepseek-tool-call.jsonl")
    result = asyncio.run(sf.aassemble(sf.from_openai_chunks(_aiter(events))))
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
    assert [b.type for b in result.blocks] == ["reasoning", "reasoning", "tool-call"]
    assert result.reasoning == "hmm" and result.tool_calls[0].arguments == "{}"
    assert result.replay_state == {
        "response": {"id": "msg_1", "model": "claude", "stopReason": "tool_use"},
        "blocks": [{"signature": "sig=="}, {"redactedData": "opaque"}, None],
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
            [MESSAGE_START, a_start(0, {"type": "server_tool_use", "id": "s", "name": "web_search"})],
            E.MALFORMED_RESPONSE,
            "cannot be converted",
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

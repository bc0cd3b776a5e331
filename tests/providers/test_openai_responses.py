"""The OpenAI Responses API stream to the block protocol, without HTTP: every recording, each rule, each failure.

The expected content of a recording is derived here from its raw events (the final items of
``response.output_item.done`` and the deltas), independently of the converter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm._providers.openai_responses import OpenAIResponsesConverter, from_openai_responses_events
from streamfsm._providers.replay import kept_blocks

from ..data import MORE_PROVIDER_STREAMS, recording
from .support import async_items, split

E = sf.ErrorCode
RESPONSES = MORE_PROVIDER_STREAMS / "openai-responses"
FILES = sorted(RESPONSES.glob("*.jsonl"))
CONVERTED = [path for path in FILES if path.name != "openai-error.1.jsonl"]


def convert(events: Iterable[Any], policy: sf.Policy = sf.Policy.STRICT) -> sf.StreamResult:
    return sf.assemble(from_openai_responses_events(events), policy=policy)


def test_the_recordings_are_there() -> None:
    assert [p.name for p in FILES] == [
        "azure-text.1.jsonl",
        "azure-tool-call.1.jsonl",
        "github-copilot-id-rotation.1.jsonl",
        "lmstudio-tool-call.1.jsonl",
        "openai-custom-tool.1.jsonl",
        "openai-error.1.jsonl",
        "openai-web-search-tool.1.jsonl",
        "xai-text-streaming.1.jsonl",
        "xai-text-with-reasoning-streaming.1.jsonl",
    ]


# --- Every recording ----------------------------------------------------------------------------------


def expected(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a recording holds, read from its final items (named as the terminal response names them): block types,
    text, reasoning, calls, kept items."""
    final = next(e["response"] for e in events if e["type"] == "response.completed")
    named = {n: item["id"] for n, item in enumerate(final.get("output") or []) if "id" in item}
    items = {
        e["output_index"]: {**e["item"], **({"id": named[e["output_index"]]} if e["output_index"] in named else {})}
        for e in events
        if e["type"] == "response.output_item.done"
    }
    blocks: list[str] = []
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[tuple[str, str, dict[str, Any]]] = []
    kept: list[tuple[str, dict[str, Any]]] = []
    for _, item in sorted(items.items()):
        kind = item["type"]
        if kind == "message":
            for part in item["content"]:
                words = part["text"] if part["type"] == "output_text" else part["refusal"]
                if words:
                    blocks.append("text")
                    text.append(words)
                kept += [(a["type"], a) for a in part.get("annotations") or []]
        elif kind in ("function_call", "custom_tool_call"):
            blocks.append("tool-call")
            given = orjson.loads(item["arguments"] or "{}") if kind == "function_call" else {"input": item["input"]}
            calls.append((item["call_id"], item["name"], given))
        else:
            if kind == "reasoning":
                parts = [p["text"] for p in [*item["summary"], *(item.get("content") or [])] if p["text"]]
                blocks += ["reasoning"] * len(parts)
                reasoning += parts
            kept.append((kind, item))
    return {
        "blocks": blocks,
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "calls": calls,
        "kept": kept,
        "usage": final["usage"],
        "finish": "tool-calls" if calls else "stop",
    }


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: p.name)
def test_recording_is_valid_and_complete(path: Path) -> None:
    events = recording(path)
    want = expected(events)
    result = convert(events)

    assert [b.type for b in result.blocks] == want["blocks"]
    assert result.text == want["text"]
    assert result.reasoning == want["reasoning"]
    assert [(c.id, c.name, c.parsed_arguments) for c in result.tool_calls] == want["calls"]
    assert result.finish.kind == want["finish"] and result.interrupted == []
    # The deltas, where the server sent them, say the same as the final items.
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    if deltas:
        assert result.text == "".join(deltas)
    summaries = [e["delta"] for e in events if e["type"].startswith("response.reasoning_") and "delta" in e]
    if summaries:
        assert result.reasoning == "".join(summaries)
    # Usage, in disjoint counts.
    usage = want["usage"]
    cached = usage["input_tokens_details"]["cached_tokens"]
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (usage["input_tokens"] - cached, cached)
    assert result.usage.output_tokens == usage["output_tokens"]
    assert result.usage.reasoning_tokens == usage["output_tokens_details"]["reasoning_tokens"]
    # Everything else, verbatim and in order.
    assert [(k.type, k.data) for k in kept_blocks(result.replay_state)] == want["kept"]


def test_the_failed_recording_is_a_coded_error() -> None:
    with pytest.raises(sf.LlmError) as caught:
        convert(recording(RESPONSES / "openai-error.1.jsonl"))
    assert caught.value.code == E.QUOTA and "exceeded your current quota" in caught.value.message


def test_web_search_items_and_citations_are_kept_where_they_came() -> None:
    result = convert(recording(RESPONSES / "openai-web-search-tool.1.jsonl"))
    kept = kept_blocks(result.replay_state)
    # Six searches, each after a reasoning item, then the last reasoning item: all before the one text block (at 0).
    assert [(k.type, k.at) for k in kept[:13]] == [("reasoning", 0), ("web_search_call", 0)] * 6 + [("reasoning", 0)]
    # The answer's twelve citations come after its block, and its replay entry names them.
    assert [(k.type, k.at) for k in kept[13:]] == [("url_citation", 1)] * 12
    (entry,) = result.replay_state["blocks"]
    assert entry["annotations"] == list(range(13, 25)) and entry["part"] == "output_text"


# --- Built-in tools, reasoning items, refusals --------------------------------------------------------

RESPONSE = {"id": "resp_1", "object": "response", "model": "gpt-5", "status": "in_progress", "output": []}
USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 40},
    "output_tokens": 30,
    "output_tokens_details": {"reasoning_tokens": 10},
    "total_tokens": 130,
}


def created() -> dict[str, Any]:
    return {"type": "response.created", "response": RESPONSE}


def completed(usage: dict[str, Any] | None = USAGE, status: str = "completed", **more: Any) -> dict[str, Any]:
    kind = "response.completed" if status == "completed" else f"response.{status}"
    return {"type": kind, "response": {**RESPONSE, "status": status, "usage": usage, **more}}


def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def whole(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    return [added(index, item), done(index, item)]


def message(index: int, *pieces: str, item_id: str = "msg_1") -> list[dict[str, Any]]:
    text = "".join(pieces)
    deltas = [
        {
            "type": "response.output_text.delta",
            "item_id": item_id,
            "output_index": index,
            "content_index": 0,
            "delta": p,
        }
        for p in pieces
    ]
    final = {"type": "output_text", "text": text, "annotations": []}
    return [
        added(index, {"id": item_id, "type": "message", "role": "assistant", "content": [], "status": "in_progress"}),
        *deltas,
        {
            "type": "response.output_text.done",
            "item_id": item_id,
            "output_index": index,
            "content_index": 0,
            "text": text,
        },
        done(index, {"id": item_id, "type": "message", "role": "assistant", "content": [final], "status": "completed"}),
    ]


def function_call(index: int, call_id: str, name: str, *pieces: str) -> list[dict[str, Any]]:
    item = {"id": f"fc_{call_id}", "type": "function_call", "call_id": call_id, "name": name, "arguments": ""}
    deltas = [
        {"type": "response.function_call_arguments.delta", "output_index": index, "item_id": item["id"], "delta": p}
        for p in pieces
    ]
    arguments = "".join(pieces)
    return [
        added(index, item),
        *deltas,
        {"type": "response.function_call_arguments.done", "output_index": index, "arguments": arguments},
        done(index, {**item, "arguments": arguments, "status": "completed"}),
    ]


BUILT_IN = [
    {"id": "mcpl_1", "type": "mcp_list_tools", "server_label": "docs", "tools": [{"name": "find", "input_schema": {}}]},
    {"id": "mcp_1", "type": "mcp_call", "server_label": "docs", "name": "find", "arguments": "{}", "output": "x"},
    {"id": "mcpr_1", "type": "mcp_approval_request", "server_label": "docs", "name": "rm", "arguments": "{}"},
    {
        "id": "ci_1",
        "type": "code_interpreter_call",
        "code": "1+1",
        "container_id": "c",
        "outputs": [],
        "status": "completed",
    },
    {"id": "ig_1", "type": "image_generation_call", "result": "aGVsbG8=", "status": "completed"},
    {"id": "fs_1", "type": "file_search_call", "queries": ["q"], "status": "completed", "results": None},
    # Calls the server ran itself, as their items say (client-run ones are tool calls: test_responses_client_tools).
    {
        "id": "sh_1",
        "type": "shell_call",
        "call_id": "c2",
        "action": {"commands": ["pwd"]},
        "environment": {"type": "container_reference", "container_id": "cntr_1"},
        "status": "completed",
    },
    {"id": "ts_1", "type": "tool_search_call", "call_id": "c3", "arguments": {"q": "x"}, "execution": "server"},
    {"id": "ws_1", "type": "web_search_call", "action": {"type": "search", "query": "q"}, "status": "completed"},
    {"id": "new_1", "type": "an_item_added_next_year", "anything": [1, {"two": None}]},
]
PROGRESS = [  # what comes between a built-in tool's added and done: nothing the protocol shows
    {"type": "response.mcp_call_arguments.delta", "output_index": 1, "item_id": "mcp_1", "delta": "{}"},
    {"type": "response.code_interpreter_call_code.delta", "output_index": 3, "item_id": "ci_1", "delta": "1+"},
    {"type": "response.image_generation_call.partial_image", "output_index": 4, "partial_image_b64": "aGk="},
    {"type": "response.shell_call_command.delta", "output_index": 6, "delta": "pw"},
    {"type": "response.some_event_added_next_year", "output_index": 9},
]


def test_built_in_tool_items_are_kept_verbatim_in_order() -> None:
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA-opaque=="}
    events = [created(), *whole(0, reasoning)]
    for number, item in enumerate(BUILT_IN):
        events.append(added(number + 1, {**item, "status": "in_progress"}))
        events += [p for p in PROGRESS if p["output_index"] == number]
        events.append(done(number + 1, item))
        if number == 4:
            events += message(11, "Here is the image.")
    events.append(completed())

    result = convert(events)

    assert result.text == "Here is the image." and result.finish.kind == "stop"
    kept = kept_blocks(result.replay_state)
    assert [k.type for k in kept] == ["reasoning", *(item["type"] for item in BUILT_IN)]
    assert [k.data for k in kept] == [reasoning, *BUILT_IN]  # the done items, exactly
    assert [k.at for k in kept] == [0] * 6 + [1] * 5  # the text block came after the image


def test_reasoning_summaries_and_reasoning_text_become_reasoning_blocks() -> None:
    summary = [{"type": "summary_text", "text": "First."}, {"type": "summary_text", "text": "Second."}]
    item = {"id": "rs_1", "type": "reasoning", "summary": summary, "encrypted_content": "enc"}
    events = [
        created(),
        added(0, {**item, "summary": []}),
        *(
            {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": n, "delta": d}
            for n, d in [(0, "Fir"), (0, "st."), (1, "Second.")]
        ),
        done(0, item),
        *whole(
            1,
            {"id": "rs_2", "type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "Raw"}]},
        ),
        *message(2, "Answer"),
        completed(),
    ]
    result = convert(events)
    assert [(b.type, getattr(b, "text", None)) for b in result.blocks] == [
        ("reasoning", "First."),
        ("reasoning", "Second."),
        ("reasoning", "Raw"),
        ("text", "Answer"),
    ]
    assert [(k.type, k.at, k.data.get("encrypted_content")) for k in kept_blocks(result.replay_state)] == [
        ("reasoning", 0, "enc"),
        ("reasoning", 2, None),
    ]


def test_a_refusal_is_text_and_its_replay_entry_says_so() -> None:
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
    events = [
        created(),
        added(0, {**item, "content": []}),
        {"type": "response.refusal.delta", "output_index": 0, "content_index": 0, "delta": "I can't "},
        {"type": "response.refusal.delta", "output_index": 0, "content_index": 0, "delta": "help with that."},
        {"type": "response.refusal.done", "output_index": 0, "content_index": 0, "refusal": "I can't help with that."},
        done(0, {**item, "content": [{"type": "refusal", "refusal": "I can't help with that."}]}),
        completed(),
    ]
    result = convert(events)
    assert result.text == "I can't help with that." and result.finish.kind == "stop"
    assert result.replay_state["blocks"] == [{"item": "msg_1", "part": "refusal"}]


def test_a_custom_tool_call_is_arguments_with_its_input() -> None:
    tricky = 'SELECT "a\\b" -- ✓ \n\t\x00 \ud83d'  # quotes, a backslash, control characters, a lone surrogate
    item = {"id": "ct_1", "type": "custom_tool_call", "call_id": "call_1", "name": "sql", "input": ""}
    deltas = [
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ct_1", "delta": tricky[a:b]}
        for a, b in [(0, 7), (7, 12), (12, len(tricky))]
    ]
    events = [created(), added(0, item), *deltas, done(0, {**item, "input": tricky}), completed()]
    result = convert(events)
    (call,) = result.tool_calls
    assert call.parsed_arguments == {"input": tricky} and result.finish.kind == "tool-calls"
    assert result.replay_state["blocks"] == [{"item": "ct_1", "type": "custom_tool_call"}]


@pytest.mark.parametrize("name", [["sql"], {"n": 1}, 7, None])
def test_a_custom_tool_call_whose_name_is_no_string_is_malformed(name: object) -> None:
    # A response that lists its tools decides by a call's name whether the server ran it: a name of another
    # type is the client's call, refused as such, never a TypeError.
    listed = {"type": "response.created", "response": {**RESPONSE, "tools": [{"type": "custom", "name": "sql"}]}}
    item = {"id": "ct_1", "type": "custom_tool_call", "call_id": "call_1", "name": name, "input": ""}
    with pytest.raises(sf.LlmError) as raised:
        convert([listed, added(0, item), done(0, item), completed()])
    assert raised.value.code == sf.ErrorCode.MALFORMED_RESPONSE


def test_items_sent_whole_convert_too() -> None:
    # A server that sends no deltas: each item's text arrives in its output_item.done.
    msg = {"id": "m", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
    call = {"id": "f", "type": "function_call", "call_id": "c", "name": "ls", "arguments": '{"a":1}'}
    result = convert([created(), done(0, msg), done(1, call), completed()])
    assert result.text == "hi" and [(c.id, c.arguments) for c in result.tool_calls] == [("c", '{"a":1}')]


def test_interleaved_items_are_held_back_and_valid_under_strict() -> None:
    # Two calls and a text, their deltas interleaved: each block whole, in the order it began.
    first, second = function_call(0, "a", "f", '{"x":', "1}"), function_call(1, "b", "g", '{"y":', "2}")
    text = message(2, "one ", "two")
    order = [first[0], second[0], first[1], text[0], second[1], text[1], first[2], second[2], text[2]]
    order += [first[3], first[4], second[3], second[4], text[3], text[4], completed()]
    result = convert([created(), *order])
    assert [(c.id, c.arguments) for c in result.tool_calls] == [("a", '{"x":1}'), ("b", '{"y":2}')]
    assert result.text == "one two" and result.finish.kind == "tool-calls"


def test_a_block_ends_at_its_items_done_event() -> None:
    converter = OpenAIResponsesConverter()
    out = [converter.feed(event) for event in [created(), *message(0, "hi")]]
    assert out[-1] == [{"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}}]
    assert not any(chunk["type"] == "block-end" for chunks in out[:-1] for chunk in chunks)


# --- Finishes and usage -------------------------------------------------------------------------------


def test_tool_calls_even_when_the_api_says_completed() -> None:
    result = convert([created(), *message(0, "Let me look."), *function_call(1, "c", "ls", "{}"), completed()])
    assert result.finish.kind == "tool-calls"


def test_max_output_tokens_is_max_tokens_and_a_cut_call_is_interrupted() -> None:
    cut = function_call(1, "c", "write", '{"text": "a lo')[:2]
    incomplete = completed(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    result = convert([created(), *message(0, "Writing."), *cut, incomplete])
    assert result.finish.kind == "max-tokens" and result.text == "Writing."
    assert [(b.name, b.arguments) for b in result.interrupted] == [("write", '{"text": "a lo')]


def test_a_content_filter_is_an_error_finish() -> None:
    incomplete = completed(status="incomplete", incomplete_details={"reason": "content_filter"})
    result = convert([created(), *message(0, "Once upon"), incomplete])
    assert result.finish.kind == "error" and result.finish.failure is not None
    assert result.finish.failure.code == "CONTENT_FILTER" and result.text == "Once upon"


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (USAGE, {"input_tokens": 60, "output_tokens": 30, "cache_read_tokens": 40, "reasoning_tokens": 10}),
        (
            {
                "input_tokens": 100,
                "input_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 50},
                "output_tokens": 3,
            },
            {"input_tokens": 10, "output_tokens": 3, "cache_read_tokens": 40, "cache_write_tokens": 50},
        ),
        (
            {"input_tokens": 5, "output_tokens": 2, "input_tokens_details": None},
            {"input_tokens": 5, "output_tokens": 2},
        ),
    ],
)
def test_usage_is_disjoint(usage: dict[str, Any], expected: dict[str, int]) -> None:
    result = convert([created(), *message(0, "hi"), completed(usage)])
    assert result.usage == sf.Usage(**expected)


def test_a_response_without_usage_passes_harness_but_not_strict() -> None:
    events = [created(), *message(0, "hi"), completed(None)]
    assert convert(events, sf.Policy.HARNESS).text == "hi"
    with pytest.raises(sf.LlmError) as caught:
        convert(events)
    assert caught.value.code == E.USAGE_MISSING


def test_the_replay_state_names_the_response() -> None:
    result = convert([created(), *message(0, "hi"), completed()])
    assert result.replay_state == {
        "response": {"id": "resp_1", "model": "gpt-5", "status": "completed"},
        "blocks": [{"item": "msg_1", "part": "output_text"}],
    }


def test_a_gateway_that_rotates_every_id_gives_one_response() -> None:
    """GitHub Copilot's gateway gives ``response.created``, ``.in_progress`` and ``.completed`` each a response id
    of its own, and every event of an item an item id of its own: a turn ends only at its terminal event, so a new
    id before it is the same response (the last one said names it for replay). A second ``response.created`` before
    the terminal event is another response spliced in."""
    events = recording(RESPONSES / "github-copilot-id-rotation.1.jsonl")
    ids = [e["response"]["id"] for e in events if "response" in e]
    assert len(set(ids)) == 3 and len({e["item_id"] for e in events if "item_id" in e}) > 50
    result = convert(events)
    assert result.text.startswith("There are **3** letter") and result.finish.kind == "stop"
    assert result.replay_state is not None and result.replay_state["response"]["id"] == ids[-1]
    # The terminal response names the items too, as the non-streamed answer would: the turn goes back under those.
    final = [item["id"] for item in events[-1]["response"]["output"]]
    assert [block["item"] for block in result.replay_state["blocks"]] == final
    assert [kept.data["id"] for kept in result.kept] == final[:1]
    assert [sf.assemble(t).text for t in sf.read_turns(sf.from_openai_responses_events, events)] == [result.text]
    with pytest.raises(sf.LlmError, match="began before") as caught:
        convert([created(), *message(0, "a")[:2], created(), *message(0, "b"), completed()])
    assert caught.value.code == E.MALFORMED_RESPONSE


# --- Failures -----------------------------------------------------------------------------------------


def error_event(**error: Any) -> dict[str, Any]:
    return {"type": "error", "sequence_number": 3, "error": error}


def failed(**error: Any) -> dict[str, Any]:
    return {"type": "response.failed", "response": {**RESPONSE, "status": "failed", "error": error or None}}


FAILURES = [
    # error events: nested (as recorded), and flat (the SDK's ResponseErrorEvent)
    (error_event(type="tokens", code="rate_limit_exceeded", message="Rate limit reached"), E.RATE_LIMIT, None),
    ({"type": "error", "code": "server_error", "message": "The server had an error", "param": None}, E.SERVER, None),
    (
        error_event(code="context_length_exceeded", message="Your input exceeds the context window"),
        E.CONTEXT_WINDOW_EXCEEDED,
        None,
    ),
    (error_event(code="500", message="KeyError: 'x'"), E.SERVER, 500),
    (error_event(code="insufficient_quota", message="You exceeded your current quota"), E.QUOTA, None),
    # response.failed, by ResponseError.code
    (failed(code="server_error", message="An error occurred while processing your request."), E.SERVER, None),
    (failed(code="rate_limit_exceeded", message="Too many requests"), E.RATE_LIMIT, None),
    (failed(code="invalid_prompt", message="Invalid prompt: flagged"), E.INVALID_REQUEST, None),
    (failed(code="image_too_large", message="The image is too large"), E.INVALID_REQUEST, None),
    (failed(code="invalid_image_url", message="Could not fetch it"), E.INVALID_REQUEST, None),
    (failed(code="vector_store_timeout", message="The vector store timed out"), E.SERVER, None),
    (failed(code="bio_policy", message="Blocked", type="invalid_request_error"), E.INVALID_REQUEST, None),
    (failed(), E.PROVIDER_HTTP_ERROR, None),
]


@pytest.mark.parametrize(("event", "code", "status"), FAILURES)
def test_failures_are_coded(event: dict[str, Any], code: sf.ErrorCode, status: int | None) -> None:
    with pytest.raises(sf.LlmError) as caught:
        convert([created(), *message(0, "partial")[:2], event])
    assert (caught.value.code, caught.value.status) == (code, status)


@pytest.mark.parametrize(
    ("events", "code", "words"),
    [
        ([created(), *message(0, "hi")], E.STREAM_CLOSED, "without response.completed"),
        ([created(), completed()], E.EMPTY_RESPONSE, "without any content"),
        ([created(), *message(0, "hi"), completed(), created()], E.MALFORMED_RESPONSE, "not one turn"),
        (
            [created(), *message(0, "hi")[:2], {"type": "response.created", "response": {**RESPONSE, "id": "resp_2"}}],
            E.MALFORMED_RESPONSE,
            "not one turn",
        ),
        (
            [created(), *message(0, "hello")[:2], *message(0, "bye")[2:]],
            E.MALFORMED_RESPONSE,
            "not what its deltas sent",
        ),
        (
            [created(), {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{"}],
            E.MALFORMED_RESPONSE,
            "which was not added",
        ),
        ([created(), added(0, {"type": "function_call", "name": "f"})], E.MALFORMED_RESPONSE, "without a call_id"),
        ([created(), *message(0, "a"), done(0, {"type": "message", "content": []})], E.MALFORMED_RESPONSE, "twice"),
        ([created(), {"type": "response.output_text.delta", "output_index": "0"}], E.MALFORMED_RESPONSE, "integer"),
        (
            [created(), {"type": "response.output_text.delta", "output_index": 0, "delta": 5}],
            E.MALFORMED_RESPONSE,
            "string",
        ),
        ([{"type": "response.completed"}], E.MALFORMED_RESPONSE, "without a 'response' object"),
        ([{"no": "type"}], E.MALFORMED_RESPONSE, "without a 'type'"),
        ([created(), *whole(0, {"id": "r", "type": "reasoning", "summary": []}), completed()], E.EMPTY_RESPONSE, ""),
        (["not an event"], E.MALFORMED_RESPONSE, "must be an object"),
        (
            [created(), *message(0, "a"), {**message(0, "b")[1]}],
            E.MALFORMED_RESPONSE,
            "after its output_item.done",
        ),
        ([created(), *function_call(0, "c", "f")[:1], message(0, "x")[1]], E.MALFORMED_RESPONSE, "a 'function_call'"),
        (
            # Input after the custom tool's input was done: its arguments are closed, nothing is appended.
            [
                created(),
                *message(0, "hi")[:2],
                added(1, {"type": "custom_tool_call", "call_id": "c", "name": "g", "input": ""}),
                {"type": "response.custom_tool_call_input.done", "output_index": 1, "input": "ab"},
                {"type": "response.custom_tool_call_input.delta", "output_index": 1, "delta": "c"},
            ],
            E.MALFORMED_RESPONSE,
            "came after they were done",
        ),
    ],
)
def test_what_cannot_be_converted_is_a_coded_error(events: list[Any], code: sf.ErrorCode, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        convert(events)
    assert caught.value.code == code and words in caught.value.message


def test_text_of_items_never_added_converts() -> None:
    # A minimal server: deltas and the completion, no output_item events.
    events = [created(), *message(0, "he", "llo")[1:-1], completed()]
    result = convert(events)
    assert result.text == "hello" and result.replay_state["blocks"] == [{"item": "msg_1", "part": "output_text"}]


def test_unknown_events_are_skipped() -> None:
    events = [created(), {"type": "response.in_progress", "response": RESPONSE}, {"type": "keepalive"}]
    assert convert([*events, *message(0, "hi"), completed()]).text == "hi"


# --- Input forms: async, the SDK's objects ------------------------------------------------------------


def test_async_input_gives_async_output() -> None:
    events = recording(RESPONSES / "lmstudio-tool-call.1.jsonl")
    result = asyncio.run(sf.aassemble(from_openai_responses_events(async_items(events))))
    assert result == convert(events)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_sdk_event_objects_give_the_same_chunks(path: Path) -> None:
    """The ``openai`` SDK's own event models, built from the recorded dicts as its stream builds them."""
    from openai._models import construct_type
    from openai.types.responses import ResponseStreamEvent

    events = recording(path)
    objects = [construct_type(type_=ResponseStreamEvent, value=event) for event in events]
    assert type(objects[0]).__name__ == "ResponseCreatedEvent"

    def chunks(source: list[Any]) -> list[Any]:
        out: list[Any] = []
        try:
            out.extend(from_openai_responses_events(source))
        except sf.LlmError as exc:
            out.append((exc.code, exc.message))
        return out

    assert chunks(objects) == chunks(events)


def test_validated_sdk_events_convert() -> None:
    from openai.types.responses import (
        ResponseCompletedEvent,
        ResponseCreatedEvent,
        ResponseOutputItemAddedEvent,
        ResponseOutputItemDoneEvent,
        ResponseReasoningSummaryTextDeltaEvent,
        ResponseTextDeltaEvent,
    )

    response = {**RESPONSE, "created_at": 1, "tool_choice": "auto", "tools": [], "parallel_tool_calls": True}
    summary = [{"type": "summary_text", "text": "Think."}]
    msg = {"id": "m", "type": "message", "role": "assistant", "status": "completed"}
    text = {"type": "output_text", "text": "Hi.", "annotations": []}
    usage = {**USAGE, "input_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 0}}
    objects = [
        ResponseCreatedEvent.model_validate({"type": "response.created", "sequence_number": 0, "response": response}),
        ResponseOutputItemAddedEvent.model_validate(
            {**added(0, {"id": "r", "type": "reasoning", "summary": []}), "sequence_number": 1}
        ),
        ResponseReasoningSummaryTextDeltaEvent.model_validate(
            {
                "type": "response.reasoning_summary_text.delta",
                "sequence_number": 2,
                "item_id": "r",
                "output_index": 0,
                "summary_index": 0,
                "delta": "Think.",
            }
        ),
        ResponseOutputItemDoneEvent.model_validate(
            {**done(0, {"id": "r", "type": "reasoning", "summary": summary}), "sequence_number": 3}
        ),
        ResponseOutputItemAddedEvent.model_validate({**added(1, {**msg, "content": []}), "sequence_number": 4}),
        ResponseTextDeltaEvent.model_validate(
            {
                "type": "response.output_text.delta",
                "sequence_number": 5,
                "item_id": "m",
                "output_index": 1,
                "content_index": 0,
                "delta": "Hi.",
                "logprobs": [],
            }
        ),
        ResponseOutputItemDoneEvent.model_validate({**done(1, {**msg, "content": [text]}), "sequence_number": 6}),
        ResponseCompletedEvent.model_validate(
            {
                "type": "response.completed",
                "sequence_number": 7,
                "response": {**response, "status": "completed", "usage": usage},
            }
        ),
    ]
    result = convert(objects)
    assert (result.reasoning, result.text, result.finish.kind) == ("Think.", "Hi.", "stop")
    assert result.usage == sf.Usage(
        input_tokens=60, output_tokens=30, cache_read_tokens=40, cache_write_tokens=0, reasoning_tokens=10
    )
    assert [k.type for k in kept_blocks(result.replay_state)] == ["reasoning"]


# --- Properties ---------------------------------------------------------------------------------------


@st.composite
def turns(draw: st.DrawFn) -> tuple[list[list[dict[str, Any]]], tuple[str, str, str, str]]:
    """One turn (reasoning, text, a function call, a custom tool call), its deltas split two ways (or not sent)."""
    reasoning = draw(st.text(min_size=1, max_size=30))
    text = draw(st.text(min_size=1, max_size=30))
    arguments = orjson.dumps(draw(st.dictionaries(st.text(max_size=4), st.text(max_size=6), max_size=3))).decode()
    tool_input = draw(st.text(max_size=30))
    ways = []
    for _ in range(2):
        deltas = draw(st.booleans())  # False: the server sends each item whole, at its .done
        events = [created()]
        r_item = {"id": "rs", "type": "reasoning", "summary": [{"type": "summary_text", "text": reasoning}]}
        events.append(added(0, {**r_item, "summary": []}))
        events += [
            {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": p}
            for p in (split(draw, reasoning) if deltas else [])
        ]
        events.append(done(0, r_item))
        events += message(1, *(split(draw, text) if deltas else []))[:-2]
        msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
        events.append(done(1, {**msg, "content": [{"type": "output_text", "text": text, "annotations": []}]}))
        call = function_call(2, "c1", "f", *(split(draw, arguments) if deltas else []))
        events += [*call[:-2], done(2, {**call[-1]["item"], "arguments": arguments})]
        custom = {"id": "ct", "type": "custom_tool_call", "call_id": "c2", "name": "g", "input": ""}
        events.append(added(3, custom))
        events += [
            {"type": "response.custom_tool_call_input.delta", "output_index": 3, "delta": p}
            for p in (split(draw, tool_input) if deltas else [])
        ]
        events += [done(3, {**custom, "input": tool_input}), completed()]
        ways.append(events)
    return ways, (reasoning, text, arguments, tool_input)


@settings(max_examples=300, deadline=None)
@given(turns())
def test_any_split_of_the_deltas_assembles_the_same(case: tuple[list[list[dict[str, Any]]], tuple[str, ...]]) -> None:
    ways, (reasoning, text, arguments, tool_input) = case
    one, other = (convert(events) for events in ways)
    assert one.to_wire() == other.to_wire()
    assert (one.reasoning, one.text) == (reasoning, text)
    assert [(c.id, c.parsed_arguments) for c in one.tool_calls] == [
        ("c1", orjson.loads(arguments)),
        ("c2", {"input": tool_input}),
    ]
    assert one.tool_calls[0].arguments == arguments


@st.composite
def interleavings(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str], str]:
    """Function calls and a text whose events arrive in any order that keeps each item's own order."""
    count = draw(st.integers(1, 3))
    arguments = [
        orjson.dumps(draw(st.dictionaries(st.text(max_size=3), st.text(max_size=5), max_size=3))).decode()
        for _ in range(count)
    ]
    queues = [function_call(n, f"c{n}", "f", *split(draw, a)) for n, a in enumerate(arguments)]
    text = draw(st.text(min_size=1, max_size=12))
    queues.append(message(count, *split(draw, text)))
    events = [created()]
    while any(queues):
        events.append(draw(st.sampled_from([q for q in queues if q])).pop(0))
    return [*events, completed()], arguments, text


@settings(max_examples=300, deadline=None)
@given(interleavings())
def test_any_interleaving_is_valid_under_strict(case: tuple[list[dict[str, Any]], list[str], str]) -> None:
    events, arguments, text = case
    result = convert(events)
    began = [
        e["item"]["call_id"] for e in events if e["type"] == "response.output_item.added" and "call_id" in e["item"]
    ]
    by_id = {f"c{n}": a for n, a in enumerate(arguments)}
    assert [(c.id, c.arguments) for c in result.tool_calls] == [(i, by_id[i] or "{}") for i in began]
    assert result.text == text and result.finish.kind == "tool-calls"


def test_the_converter_is_linear_in_its_done_events() -> None:
    """Many ``.done`` repeats of a long text cost what their bytes cost: the text is joined once per change."""
    converter = OpenAIResponsesConverter()
    converter.feed(created())
    text = "x" * 100_000
    for event in message(0, *(["x"] * 100_000))[:-2]:
        converter.feed(event)
    repeat = {"type": "response.output_text.done", "output_index": 0, "content_index": 0, "text": text}
    for _ in range(200):  # 20 MB of final text compared, none joined again
        converter.feed(repeat)
    part = converter.items[0].parts[("output_text", 0)]
    (block, _), *_ = part.blocks
    assert part.full() == text and block.parts[0] is part.full()  # joined once, and held once

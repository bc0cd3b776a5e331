"""What a turn keeps for replay, and sending it back (issue #13, items 1 and 3).

A converter keeps, verbatim and in order, every provider item the block protocol has no word for
(``replayState["kept"]``); users read it as :attr:`StreamResult.kept`; ``AssistantMessage.from_result`` carries it
to the adapter, which puts it back where it came in the next request. The round trips run against the real local
HTTP server (tests/sse_server.py), whose recorded request bodies are checked; the expected Anthropic turn is the
one the ``anthropic`` SDK's own stream accumulator builds from the same events.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import streamfsm as sf
from streamfsm._providers.replay import KeptBlock, by_position, describe_kept, kept_blocks

from ..data import MORE_PROVIDER_STREAMS
from ..sse_server import SSE, SSEServer, anthropic_events, openai_events
from .support import openai_recording
from .test_anthropic_blocks import (
    MESSAGE_START,
    RECORDINGS,
    Expected,
    delta,
    message_end,
    recording,
    sdk_events,
    server_call,
    start,
    stop,
    text,
    turns,
    whole,
)
from .test_converters import USAGE, chunk


def generate(adapter: sf.LlmAdapter, messages: tuple[sf.Message, ...], model: str = "claude") -> sf.StreamResult:
    options = sf.GenerateOptions(model=model, messages=messages)
    return asyncio.run(sf.aassemble(adapter.generate(options)))


# --- Reading what was kept ------------------------------------------------------------------------------


def test_kept_blocks_reads_the_shared_form_and_passes_over_the_rest() -> None:
    state = {
        "blocks": [None],
        "kept": [
            {"type": "compaction", "at": 0, "data": {"type": "compaction", "content": "c"}},
            {"type": "x", "at": -1, "data": {}},  # not a position
            {"type": "x", "at": True, "data": {}},  # not an int
            {"type": 3, "at": 0, "data": {}},
            {"type": "x", "at": 0, "data": "not an object"},
            "not an item",
        ],
    }
    assert kept_blocks(state) == [KeptBlock(type="compaction", at=0, data={"type": "compaction", "content": "c"})]
    assert kept_blocks(None) == kept_blocks({"kept": "no"}) == kept_blocks(["kept"]) == []


def test_a_result_shows_what_it_kept() -> None:
    events = [MESSAGE_START, *whole(0, {"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}})]
    result = sf.assemble(sf.from_anthropic_events([*events, *text(1, ["hi"]), *message_end("end_turn")]))
    (kept,) = result.kept
    assert isinstance(kept, KeptBlock) and (kept.type, kept.at) == ("fallback", 0)
    assert kept.data == {"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}}
    assert kept.to_wire() == {"type": "fallback", "at": 0, "data": kept.data}
    with pytest.raises(ValueError):
        kept.at = 1  # frozen, like every result type
    assert sf.assemble(sf.from_anthropic_events([MESSAGE_START, *text(0, ["hi"]), *message_end("end_turn")])).kept == []


def kept(*types: str) -> list[KeptBlock]:
    return [KeptBlock(type=kind, at=0, data={"type": kind}) for kind in types]


@pytest.mark.parametrize(
    ("items", "line"),
    [
        ([], ""),
        (kept("compaction"), "1 provider block kept for replay: compaction"),
        (
            kept("server_tool_use", "web_search_tool_result", "citations"),
            "3 provider blocks kept for replay: server_tool_use, web_search_tool_result, citations",
        ),
        (
            kept("server_tool_use", "web_search_tool_result", *["citations"] * 12, "server_tool_use"),
            "15 provider blocks kept for replay: server_tool_use (2), web_search_tool_result, citations (12)",
        ),
        (
            kept(*(f"t{n}" for n in range(11))),
            "11 provider blocks kept for replay: t0, t1, t2, t3, t4, t5, t6, t7, … and 3 more types",
        ),
        (kept("x" * 1000), f"1 provider block kept for replay: {'x' * 60}…"),
    ],
)
def test_describe_kept(items: list[KeptBlock], line: str) -> None:
    assert describe_kept(items) == line


def test_by_position_places_items_before_their_block() -> None:
    items = [KeptBlock(type=t, at=at, data={}) for t, at in [("a", 0), ("b", 0), ("c", 2), ("d", 9)]]
    assert [[i.type for i in slot] for slot in by_position(items, 2)] == [["a", "b"], [], ["c", "d"]]


# --- Anthropic: a multi-turn conversation -----------------------------------------------------------------

CITATION = {
    "type": "web_search_result_location",
    "cited_text": "Tea is a drink.",
    "url": "https://t.example",
    "title": "Tea",
    "encrypted_index": "IDX==",
}
RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [{"type": "web_search_result", "title": "Tea", "url": "https://t.example", "encrypted_content": "E1"}],
}
MCP_RESULT = {
    "type": "mcp_tool_result",
    "tool_use_id": "mcptoolu_1",
    "is_error": False,
    "content": [{"type": "text", "text": "hi"}],
}
FALLBACK = {
    "type": "fallback",
    "from": {"model": "claude-opus-4-5"},
    "to": {"model": "claude-sonnet-4-5"},
    "trigger": {"type": "refusal", "category": None},
}
CALLER = {"type": "code_execution_20250825", "tool_id": "srvtoolu_2"}
CONTAINER = {"id": "container_1", "expires_at": "2025-12-20T05:33:35Z"}

#: Turn 1: compaction, signed thinking, a web search with its result, cited text, MCP, a fallback, redacted
#: thinking, code execution calling a client tool (programmatic tool calling), in the container given.
TURN_1 = [
    MESSAGE_START,
    start(0, {"type": "compaction", "content": None}),
    delta(0, {"type": "compaction_delta", "content": "## Summary\nWe spoke of tea.", "encrypted_content": "ENC=="}),
    stop(0),
    start(1, {"type": "thinking", "thinking": "", "signature": ""}),
    delta(1, {"type": "thinking_delta", "thinking": "Search it."}),
    delta(1, {"type": "signature_delta", "signature": "SIG=="}),
    stop(1),
    *server_call(2, "srvtoolu_1", "web_search", ['{"query": ', '"tea"}']),
    *whole(3, RESULT),
    start(4, {"type": "text", "text": "", "citations": []}),
    delta(4, {"type": "citations_delta", "citation": CITATION}),
    delta(4, {"type": "text_delta", "text": "Tea is a drink."}),
    stop(4),
    start(5, {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "echo", "server_name": "echo", "input": {}}),
    delta(5, {"type": "input_json_delta", "partial_json": '{"message": "hi"}'}),
    stop(5),
    *whole(6, MCP_RESULT),
    *whole(7, FALLBACK),
    *whole(8, {"type": "redacted_thinking", "data": "REDACTED=="}),
    *text(9, ["Let me ", "roll."]),
    *server_call(10, "srvtoolu_2", "code_execution", ['{"code": "await roll()"}']),
    *whole(11, {"type": "tool_use", "id": "toolu_1", "name": "roll", "input": {"sides": 6}, "caller": CALLER}),
    *message_end("tool_use", container=CONTAINER),
]
#: What the Messages API wants back as that assistant turn: every block as it came, in its place.
TURN_1_CONTENT = [
    {"type": "compaction", "content": "## Summary\nWe spoke of tea.", "encrypted_content": "ENC=="},
    {"type": "thinking", "thinking": "Search it.", "signature": "SIG=="},
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "tea"}},
    RESULT,
    {"type": "text", "text": "Tea is a drink.", "citations": [CITATION]},
    {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "echo", "server_name": "echo", "input": {"message": "hi"}},
    MCP_RESULT,
    FALLBACK,
    {"type": "redacted_thinking", "data": "REDACTED=="},
    {"type": "text", "text": "Let me roll."},
    {"type": "server_tool_use", "id": "srvtoolu_2", "name": "code_execution", "input": {"code": "await roll()"}},
    {"type": "tool_use", "id": "toolu_1", "name": "roll", "input": {"sides": 6}, "caller": CALLER},
]
TURN_2 = [MESSAGE_START, *text(0, ["You rolled ", "a 4."]), *message_end("end_turn")]


def test_a_multi_turn_conversation_sends_every_kept_block_back_in_place(server: SSEServer) -> None:
    sdk_events(TURN_1)  # the turn is the API's: the SDK's own types take every event of it
    server.script(SSE(anthropic_events(TURN_1)), SSE(anthropic_events(TURN_2)), SSE(anthropic_events(TURN_2)))
    adapter = sf.AnthropicAdapter(base_url=server.url)
    question = sf.UserMessage(content="Tell me of tea, then roll a die.")

    first = generate(adapter, (question,))
    assert first.finish.kind == "tool-calls" and [c.name for c in first.tool_calls] == ["roll"]
    assert describe_kept(first.kept) == (
        "9 provider blocks kept for replay: compaction, server_tool_use (2), web_search_tool_result, citations, "
        "mcp_tool_use, mcp_tool_result, fallback, redacted_thinking"
    )

    answer = sf.ToolResultMessage(tool_call_id="toolu_1", content="4")
    conversation: tuple[sf.Message, ...] = (question, sf.AssistantMessage.from_result(first), answer)
    second = generate(adapter, conversation)
    body = server.requests[1].json()
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Tell me of tea, then roll a die."}]},
        {"role": "assistant", "content": TURN_1_CONTENT},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "4"}]},
    ]
    assert body["container"] == "container_1"  # the code-execution container the turn ran in is reused

    # Turn 3: the conversation so far, stored as JSON and read back, still sends turn 1 exactly as it came.
    later = (*conversation, sf.AssistantMessage.from_result(second), sf.UserMessage(content="Again?"))
    stored = [m.model_dump_json() for m in later]
    restored = tuple(type(m).model_validate_json(j) for m, j in zip(later, stored, strict=True))
    generate(adapter, restored)
    third = server.requests[2].json()
    assert third["messages"][1] == {"role": "assistant", "content": TURN_1_CONTENT}
    assert third["messages"][3] == {"role": "assistant", "content": [{"type": "text", "text": "You rolled a 4."}]}


def sdk_message(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assistant turn the ``anthropic`` SDK's own stream accumulator builds from ``events``, as request content:
    without what the API refuses back (empty text; thinking without a signature) and with no null or empty field."""
    streaming = pytest.importorskip("anthropic.lib.streaming._beta_messages")
    snapshot = None
    buffers: dict[int, bytes] = {}
    for event in events:
        if event["type"] != "ping":
            snapshot = streaming.accumulate_event(
                event=event, current_snapshot=snapshot, json_bufs=buffers, request_headers=None
            )
    assert snapshot is not None
    out = []
    for block in snapshot.content:
        data = {k: v for k, v in block.to_dict(mode="json").items() if v is not None and v != []}
        if (data["type"] == "text" and not data.get("text")) or (
            data["type"] == "thinking" and not data.get("signature")
        ):
            continue
        out.append(data)
    return out


def complete_turns() -> list[Any]:
    return [
        pytest.param(turn, id=f"{path.name}#{number}")
        for path in RECORDINGS
        for number, turn in enumerate(turns(recording(path)))
        if not Expected(turn).cut
    ]


@pytest.mark.parametrize("events", complete_turns())
def test_every_recorded_turn_goes_back_as_the_sdk_assembles_it(server: SSEServer, events: list[dict[str, Any]]) -> None:
    server.script(SSE(anthropic_events(events)), SSE(anthropic_events(TURN_2)))
    adapter = sf.AnthropicAdapter(base_url=server.url)
    first = generate(adapter, (sf.UserMessage(content="go"),))
    results = tuple(sf.ToolResultMessage(tool_call_id=c.id, content="ok") for c in first.tool_calls)
    generate(adapter, (sf.UserMessage(content="go"), sf.AssistantMessage.from_result(first), *results))
    assert server.requests[1].json()["messages"][1] == {"role": "assistant", "content": sdk_message(events)}


# --- Chat completions -----------------------------------------------------------------------------------

REFERENCE = {"type": "reference", "reference_ids": [1, 2]}
MISTRAL = [
    chunk({"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Recall."}]}]}),
    chunk({"content": [{"type": "text", "text": "Paris is the capital"}, REFERENCE]}),
    chunk({"content": [{"type": "text", "text": " of France."}]}),
    chunk({"content": ""}, "stop", **USAGE),
]


def test_a_chat_turn_sends_its_kept_parts_back_in_place(server: SSEServer) -> None:
    server.script(SSE(openai_events(MISTRAL)), SSE(openai_events(MISTRAL)))
    adapter = sf.OpenAICompatibleAdapter(server.url, send_reasoning=True)
    question = sf.UserMessage(content="Capital of France?")
    first = generate(adapter, (question,), "magistral-medium")
    assert (first.reasoning, first.text) == ("Recall.", "Paris is the capital of France.")
    assert first.kept == [KeptBlock(type="reference", at=2, data=REFERENCE)]
    generate(adapter, (question, sf.AssistantMessage.from_result(first), sf.UserMessage(content="Sure?")), "m")
    assert server.requests[1].json()["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Paris is the capital"},
            REFERENCE,
            {"type": "text", "text": " of France."},
        ],
        "reasoning_content": "Recall.",
    }


def test_a_chat_turn_that_kept_nothing_goes_back_as_a_string(server: SSEServer) -> None:
    events = openai_recording(MORE_PROVIDER_STREAMS / "openai-chat" / "mistral-reasoning.jsonl")
    server.script(SSE(openai_events(events)), SSE(openai_events(events)))
    adapter = sf.OpenAICompatibleAdapter(server.url)
    question = sf.UserMessage(content="2+2?")
    first = generate(adapter, (question,), "magistral-medium-2507")
    assert first.kept == [] and set(first.replay_state) == {"response"}  # its id and model alone
    generate(adapter, (question, sf.AssistantMessage.from_result(first), sf.UserMessage(content="Sure?")), "m")
    assert server.requests[1].json()["messages"][1] == {"role": "assistant", "content": "2 + 2 = 4"}

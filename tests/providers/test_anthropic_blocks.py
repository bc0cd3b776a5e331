"""Every content block of today's Anthropic Messages API, converted or kept for replay (issue #13, item 1).

Text, thinking and client ``tool_use`` become protocol blocks; every other block (server tools and their results,
MCP, compaction, fallback, container uploads, redacted thinking) and a text block's citations are kept verbatim,
in order, in ``replayState["kept"]``. The expected content of a recording is derived here from its raw events,
independently of the converter; the hand-made events are checked against the ``anthropic`` SDK's own types.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm._providers.http import read_sse
from streamfsm._providers.replay import Keeper, KeptBlock

from ..data import FIXTURES, MORE_PROVIDER_STREAMS, PROVIDER_STREAMS

E = sf.ErrorCode
RECORDINGS = sorted(
    [
        *(MORE_PROVIDER_STREAMS / "anthropic-messages").glob("*.jsonl"),
        *(FIXTURES / "anthropic-blocks").glob("*.jsonl"),
        *(PROVIDER_STREAMS / "anthropic-messages").glob("*.sse"),
    ]
)
PROTOCOL = {"text", "thinking", "tool_use"}
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "max-tokens",
    "model_context_window_exceeded": "max-tokens",
}


def recording(path: Path) -> list[dict[str, Any]]:
    """The events of a recording: one JSON object a line, or server-sent events."""
    if path.suffix == ".sse":
        return [orjson.loads(event.data) for event in read_sse(path.read_bytes())]
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def turns(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A recording's messages, each from its ``message_start`` to its ``message_stop`` (some hold several; one
    repeats its ``message_start``)."""
    out: list[list[dict[str, Any]]] = [[]]
    for event in events:
        if event["type"] == "message_start" and any(e["type"] == "message_stop" for e in out[-1]):
            out.append([])
        out[-1].append(event)
    return out


def recorded_turns() -> list[Any]:
    return [
        pytest.param(turn, id=f"{path.name}#{number}")
        for path in RECORDINGS
        for number, turn in enumerate(turns(recording(path)))
    ]


def assemble(events: Iterable[Any], policy: sf.Policy = sf.Policy.STRICT) -> sf.StreamResult:
    return sf.assemble(sf.from_anthropic_events(events), policy=policy)


class Expected:
    """What a turn must convert to, read from its raw events: its blocks' content, what is kept, in order."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[tuple[str, str, str]] = []
        self.kept: list[tuple[str, int, dict[str, Any]]] = []
        self.blocks = 0  # protocol blocks so far
        self.reason: str | None = None
        self.output_tokens: int | None = None
        self.cut = False
        started: dict[int, dict[str, Any]] = {}
        for event in events:
            kind = event["type"]
            if kind == "message_start":
                self.reason = event["message"].get("stop_reason")
                self.output_tokens = event["message"]["usage"].get("output_tokens")
                for block in event["message"].get("content") or []:
                    self.close({"block": block, "at": self.blocks, "parts": [], "citations": []})
            elif kind == "content_block_start":
                started[event["index"]] = {
                    "block": event["content_block"],
                    "at": self.blocks,
                    "parts": [],
                    "citations": list(event["content_block"].get("citations") or []),
                }
                if event["content_block"]["type"] in PROTOCOL:
                    self.blocks += 1
            elif kind == "content_block_delta":
                delta = event["delta"]
                entry = started[event["index"]]
                if delta["type"] == "citations_delta":
                    entry["citations"].append(delta["citation"])
                elif delta["type"] == "compaction_delta":
                    entry["compaction"] = delta
                else:
                    entry["parts"].append(delta.get("text") or delta.get("thinking") or delta.get("partial_json") or "")
            elif kind == "content_block_stop":
                self.close(started.pop(event["index"]), streamed=True)
            elif kind == "message_delta":
                self.reason = event["delta"].get("stop_reason") or self.reason
                self.output_tokens = event["usage"].get("output_tokens", self.output_tokens)
        self.cut = bool(started)

    def close(self, entry: dict[str, Any], *, streamed: bool = False) -> None:
        block, joined = entry["block"], "".join(entry["parts"])
        kind = block["type"]
        if not streamed and kind in PROTOCOL:
            self.blocks += 1
        at = entry["at"]
        if kind == "text":
            self.text.append(block["text"] + joined)
            if entry["citations"]:
                self.kept.append(("citations", at, {"citations": entry["citations"]}))
        elif kind == "thinking":
            self.reasoning.append(block["thinking"] + joined)
        elif kind == "tool_use":
            arguments = joined or (json.dumps(block["input"], separators=(",", ":")) if block["input"] else "{}")
            self.calls.append((block["id"], block["name"], arguments))
        else:
            data = dict(block)
            if joined.strip():
                data["input"] = json.loads(joined)
            if "compaction" in entry:
                data.update({k: v for k, v in entry["compaction"].items() if k != "type" and v is not None})
            if entry["citations"]:
                data["citations"] = entry["citations"]
            self.kept.append((kind, at, data))


def check(result: sf.StreamResult, expected: Expected) -> None:
    assert result.text == "".join(expected.text)
    assert result.reasoning == "".join(expected.reasoning)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == expected.calls
    assert [(k.type, k.at, k.data) for k in result.kept] == expected.kept
    assert expected.reason is not None and result.finish.kind == FINISH[expected.reason]
    assert result.usage is not None and result.usage.output_tokens == expected.output_tokens


# --- Every recording ----------------------------------------------------------------------------------


def test_the_recordings_are_there() -> None:
    names = [p.name for p in RECORDINGS]
    assert len(names) == 13 and "anthropic-compaction.1.jsonl" in names and "anthropic-fallback.jsonl" in names


@pytest.mark.parametrize("events", recorded_turns())
def test_every_recorded_turn_converts_with_exactly_its_content(events: list[dict[str, Any]]) -> None:
    expected = Expected(events)
    result = assemble(events)
    if expected.cut:  # a tool call cut by max_tokens: interrupted (tests/providers/test_converters.py says how)
        assert result.finish.kind == "max-tokens" and result.interrupted
        return
    check(result, expected)
    assert result.interrupted == []


def test_a_recording_of_several_messages_is_not_one_turn() -> None:
    events = recording(FIXTURES / "anthropic-blocks" / "anthropic-tool-search-bm25.1.jsonl")
    with pytest.raises(sf.LlmError, match="after message_stop") as caught:
        assemble(events)
    assert caught.value.code == E.MALFORMED_RESPONSE
    assert "sf.read_turns(sf.from_anthropic_events, events)" in caught.value.message
    finishes = [sf.assemble(turn).finish.kind for turn in sf.read_turns(sf.from_anthropic_events, events)]
    assert finishes == ["tool-calls", "stop"]


def test_what_the_recordings_keep() -> None:
    def kept(name: str) -> list[str]:
        path = next(p for p in RECORDINGS if p.name == name)
        return [k.type for k in assemble(turns(recording(path))[0]).kept]

    assert kept("anthropic-web-search-tool.1.jsonl")[:3] == ["server_tool_use", "web_search_tool_result", "citations"]
    assert kept("anthropic-mcp.1.jsonl") == ["mcp_tool_use", "mcp_tool_result"]
    assert kept("anthropic-compaction.1.jsonl") == ["compaction"]
    assert kept("anthropic-fallback.jsonl") == ["fallback"]
    assert kept("anthropic-advisor-stop-reasons.jsonl") == ["server_tool_use", "advisor_tool_result"] * 2
    assert kept("anthropic-issue-10819-web-fetch-error.1.jsonl") == ["server_tool_use", "web_fetch_tool_result"]
    assert kept("anthropic-tool-search-bm25.1.jsonl") == ["server_tool_use", "tool_search_tool_result"]


def test_a_repeated_message_start_of_the_open_message_is_ignored() -> None:
    """Some proxies send the open message's ``message_start`` twice (the Vercel AI SDK's recording): the same id,
    before any content, is ignored whole; another id, or the same one after content, is a turn spliced in."""
    events = recording(FIXTURES / "anthropic-blocks" / "duplicate-message-start.jsonl")
    assert [e["type"] for e in events[:2]] == ["message_start", "message_start"]
    result = assemble(events)
    assert result.text == "Hello, World!" and result.usage is not None and result.usage.input_tokens == 17
    assert [sf.assemble(turn).text for turn in sf.read_turns(sf.from_anthropic_events, events)] == ["Hello, World!"]
    other = {**events[1], "message": {**events[1]["message"], "id": "msg_other"}}
    late = [events[0], *events[2:4], events[1], *events[4:]]
    for spliced in ([events[0], other, *events[2:]], late):
        with pytest.raises(sf.LlmError, match="spliced") as caught:
            assemble(spliced)
        assert caught.value.code == E.MALFORMED_RESPONSE


def test_programmatic_tool_calling_sends_the_turn_in_message_start() -> None:
    # The whole turn in message_start, stop_reason "tool_use", then message_stop: no "ended without a stop_reason".
    events = recording(FIXTURES / "anthropic-blocks" / "anthropic-message-start-prepopulated-content.jsonl")
    result = assemble(events)
    assert result.finish.kind == "tool-calls"
    assert [(c.id, c.name, c.parsed_arguments) for c in result.tool_calls] == [
        ("toolu_followup", "lookup_customer", {"id": "customer_123"})
    ]
    assert [(k.type, k.at, k.data["tool_use_id"]) for k in result.kept] == [
        ("code_execution_tool_result", 0, "srvtoolu_result_1"),
        ("code_execution_tool_result", 0, "srvtoolu_result_2"),
    ]
    state = result.replay_state
    assert state["response"]["container"]["id"] == "container_prepopulated"
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_unrelated_caller"}
    assert state["blocks"] == [{"extra": {"caller": caller}}]


# --- Every block type of the Messages API ------------------------------------------------------------


def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


MESSAGE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 20, "output_tokens": 1},
}
MESSAGE_START: dict[str, Any] = {"type": "message_start", "message": MESSAGE}


def message_end(reason: str, **delta_fields: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None, **delta_fields},
            "usage": {"output_tokens": 30},
        },
        {"type": "message_stop"},
    ]


def server_call(index: int, call_id: str, name: str, pieces: list[str]) -> list[dict[str, Any]]:
    return [
        start(index, {"type": "server_tool_use", "id": call_id, "name": name, "input": {}}),
        *(delta(index, {"type": "input_json_delta", "partial_json": piece}) for piece in pieces),
        stop(index),
    ]


def whole(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    return [start(index, block), stop(index)]


def text(index: int, pieces: list[str]) -> list[dict[str, Any]]:
    return [
        start(index, {"type": "text", "text": ""}),
        *(delta(index, {"type": "text_delta", "text": piece}) for piece in pieces),
        stop(index),
    ]


OUTPUT = {"type": "code_execution_output", "file_id": "file_1"}
#: Each block type the protocol has no word for, as the Messages API streams it: (its events, the block it keeps).
BLOCKS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "web_search": (
        [
            *server_call(0, "srvtoolu_1", "web_search", ["", '{"query": "te', 'a"}']),
            *whole(
                1,
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": [
                        {
                            "type": "web_search_result",
                            "title": "Tea",
                            "url": "https://t.example",
                            "encrypted_content": "E1",
                        }
                    ],
                },
            ),
        ],
        [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "tea"}},
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [
                    {"type": "web_search_result", "title": "Tea", "url": "https://t.example", "encrypted_content": "E1"}
                ],
            },
        ],
    ),
    "web_fetch": (
        [
            *server_call(0, "srvtoolu_2", "web_fetch", ['{"url": "https://t.example"}']),
            *whole(
                1,
                {
                    "type": "web_fetch_tool_result",
                    "tool_use_id": "srvtoolu_2",
                    "content": {
                        "type": "web_fetch_result",
                        "url": "https://t.example",
                        "retrieved_at": "2025-01-01T00:00:00Z",
                        "content": {
                            "type": "document",
                            "source": {"type": "text", "media_type": "text/plain", "data": "Tea is a drink."},
                        },
                    },
                },
            ),
        ],
        [
            {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_fetch", "input": {"url": "https://t.example"}},
            {
                "type": "web_fetch_tool_result",
                "tool_use_id": "srvtoolu_2",
                "content": {
                    "type": "web_fetch_result",
                    "url": "https://t.example",
                    "retrieved_at": "2025-01-01T00:00:00Z",
                    "content": {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": "Tea is a drink."},
                    },
                },
            },
        ],
    ),
    "code_execution": (
        [
            *server_call(0, "srvtoolu_3", "code_execution", ['{"code": "print(1)"}']),
            *whole(
                1,
                {
                    "type": "code_execution_tool_result",
                    "tool_use_id": "srvtoolu_3",
                    "content": {
                        "type": "code_execution_result",
                        "stdout": "1\n",
                        "stderr": "",
                        "return_code": 0,
                        "content": [OUTPUT],
                    },
                },
            ),
        ],
        [
            {"type": "server_tool_use", "id": "srvtoolu_3", "name": "code_execution", "input": {"code": "print(1)"}},
            {
                "type": "code_execution_tool_result",
                "tool_use_id": "srvtoolu_3",
                "content": {
                    "type": "code_execution_result",
                    "stdout": "1\n",
                    "stderr": "",
                    "return_code": 0,
                    "content": [OUTPUT],
                },
            },
        ],
    ),
    "bash_code_execution": (
        [
            *server_call(0, "srvtoolu_4", "bash_code_execution", ['{"command": ', '"ls"}']),
            *whole(
                1,
                {
                    "type": "bash_code_execution_tool_result",
                    "tool_use_id": "srvtoolu_4",
                    "content": {
                        "type": "bash_code_execution_result",
                        "stdout": "a.txt\n",
                        "stderr": "",
                        "return_code": 0,
                        "content": [],
                    },
                },
            ),
        ],
        [
            {"type": "server_tool_use", "id": "srvtoolu_4", "name": "bash_code_execution", "input": {"command": "ls"}},
            {
                "type": "bash_code_execution_tool_result",
                "tool_use_id": "srvtoolu_4",
                "content": {
                    "type": "bash_code_execution_result",
                    "stdout": "a.txt\n",
                    "stderr": "",
                    "return_code": 0,
                    "content": [],
                },
            },
        ],
    ),
    "text_editor_code_execution": (
        [
            *server_call(0, "srvtoolu_5", "text_editor_code_execution", ['{"command": "view", "path": "a.txt"}']),
            *whole(
                1,
                {
                    "type": "text_editor_code_execution_tool_result",
                    "tool_use_id": "srvtoolu_5",
                    "content": {
                        "type": "text_editor_code_execution_view_result",
                        "content": "hello",
                        "file_type": "text",
                        "num_lines": 1,
                        "start_line": 1,
                        "total_lines": 1,
                    },
                },
            ),
        ],
        [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_5",
                "name": "text_editor_code_execution",
                "input": {"command": "view", "path": "a.txt"},
            },
            {
                "type": "text_editor_code_execution_tool_result",
                "tool_use_id": "srvtoolu_5",
                "content": {
                    "type": "text_editor_code_execution_view_result",
                    "content": "hello",
                    "file_type": "text",
                    "num_lines": 1,
                    "start_line": 1,
                    "total_lines": 1,
                },
            },
        ],
    ),
    "tool_search_tool_regex": (
        [
            *server_call(0, "srvtoolu_6", "tool_search_tool_regex", ['{"pattern": "weath"}']),
            *whole(
                1,
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_6",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
                    },
                },
            ),
        ],
        [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_6",
                "name": "tool_search_tool_regex",
                "input": {"pattern": "weath"},
            },
            {
                "type": "tool_search_tool_result",
                "tool_use_id": "srvtoolu_6",
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
                },
            },
        ],
    ),
    "advisor": (
        [
            *server_call(0, "srvtoolu_7", "advisor", []),
            *whole(
                1,
                {
                    "type": "advisor_tool_result",
                    "tool_use_id": "srvtoolu_7",
                    "content": {
                        "type": "advisor_redacted_result",
                        "encrypted_content": "ADV",
                        "stop_reason": "end_turn",
                    },
                },
            ),
        ],
        [
            {"type": "server_tool_use", "id": "srvtoolu_7", "name": "advisor", "input": {}},
            {
                "type": "advisor_tool_result",
                "tool_use_id": "srvtoolu_7",
                "content": {"type": "advisor_redacted_result", "encrypted_content": "ADV", "stop_reason": "end_turn"},
            },
        ],
    ),
    "mcp": (
        [
            start(0, {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "echo", "server_name": "echo", "input": {}}),
            delta(0, {"type": "input_json_delta", "partial_json": '{"message": "hi"}'}),
            stop(0),
            *whole(
                1,
                {
                    "type": "mcp_tool_result",
                    "tool_use_id": "mcptoolu_1",
                    "is_error": False,
                    "content": [{"type": "text", "text": "hi"}],
                },
            ),
        ],
        [
            {
                "type": "mcp_tool_use",
                "id": "mcptoolu_1",
                "name": "echo",
                "server_name": "echo",
                "input": {"message": "hi"},
            },
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_1",
                "is_error": False,
                "content": [{"type": "text", "text": "hi"}],
            },
        ],
    ),
    "mcp_tool_listing": (
        whole(
            0,
            {
                "type": "mcp_tool_listing",
                "mcp_server_name": "echo",
                "tools": [{"name": "echo", "input_schema": {"type": "object"}}],
            },
        ),
        [
            {
                "type": "mcp_tool_listing",
                "mcp_server_name": "echo",
                "tools": [{"name": "echo", "input_schema": {"type": "object"}}],
            }
        ],
    ),
    "container_upload": (
        whole(0, {"type": "container_upload", "file_id": "file_9"}),
        [{"type": "container_upload", "file_id": "file_9"}],
    ),
    "compaction": (
        [
            start(0, {"type": "compaction", "content": None}),
            {"type": "ping"},
            delta(0, {"type": "compaction_delta", "content": "## Summary\nTea.", "encrypted_content": "ENC=="}),
            stop(0),
        ],
        [{"type": "compaction", "content": "## Summary\nTea.", "encrypted_content": "ENC=="}],
    ),
    "fallback": (
        whole(
            0,
            {
                "type": "fallback",
                "from": {"model": "claude-opus-4-5"},
                "to": {"model": "claude-sonnet-4-5"},
                "trigger": {"type": "refusal", "category": "cyber"},
            },
        ),
        [
            {
                "type": "fallback",
                "from": {"model": "claude-opus-4-5"},
                "to": {"model": "claude-sonnet-4-5"},
                "trigger": {"type": "refusal", "category": "cyber"},
            }
        ],
    ),
    "redacted_thinking": (
        whole(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}),
        [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}],
    ),
}


def stream_of(name: str) -> list[dict[str, Any]]:
    """The block(s) of ``BLOCKS[name]``, then a text block, as one whole message."""
    events, _ = BLOCKS[name]
    after = max(e["index"] for e in events if "index" in e) + 1
    return [MESSAGE_START, *events, *text(after, ["Done", "."]), *message_end("end_turn")]


def sdk_events(events: list[dict[str, Any]]) -> list[Any]:
    """The ``anthropic`` SDK's own event objects for ``events``, validated against its (beta) types. The SDK's
    stream passes ``ping`` over (it is no message event): so is it here."""
    types = pytest.importorskip("anthropic.types.beta")
    adapter = pytest.importorskip("pydantic").TypeAdapter(types.BetaRawMessageStreamEvent)
    return [adapter.validate_python(event) for event in events if event["type"] != "ping"]


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_every_block_type_is_kept_verbatim_in_order(name: str) -> None:
    events = stream_of(name)
    _, kept = BLOCKS[name]
    result = assemble(events)
    assert result.text == "Done." and result.finish.kind == "stop"
    assert result.kept == [KeptBlock(type=data["type"], at=0, data=data) for data in kept]


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_the_sdk_objects_give_the_same_chunks(name: str) -> None:
    events = stream_of(name)
    objects = sdk_events(events)  # also checks that these hand-made events are the SDK's types
    assert list(sf.from_anthropic_events(objects)) == list(sf.from_anthropic_events(events))


def test_the_recordings_as_sdk_objects_give_the_same_chunks() -> None:
    models = pytest.importorskip("anthropic._models")
    types = pytest.importorskip("anthropic.types.beta")
    for path in RECORDINGS:
        for events in turns(recording(path)):
            # As the SDK builds them from a stream (construct_type: lenient, as it is for responses).
            objects = [models.construct_type(type_=types.BetaRawMessageStreamEvent, value=e) for e in events]
            assert assemble(objects) == assemble(events), path.name


def test_a_text_block_keeps_its_citations_for_the_block_it_annotates() -> None:
    citation = {
        "type": "web_search_result_location",
        "cited_text": "Tea is a drink.",
        "url": "https://t.example",
        "title": "Tea",
        "encrypted_index": "IDX",
    }
    events = [
        MESSAGE_START,
        *whole(0, {"type": "redacted_thinking", "data": "R"}),
        *text(1, ["Intro. "]),
        start(2, {"type": "text", "text": "", "citations": []}),
        delta(2, {"type": "citations_delta", "citation": citation}),
        delta(2, {"type": "text_delta", "text": "Tea is a drink."}),
        stop(2),
        *message_end("end_turn"),
    ]
    result = assemble(sdk_events(events))
    assert [b.text for b in result.blocks if isinstance(b, sf.TextBlock)] == ["Intro. ", "Tea is a drink."]
    assert [(k.type, k.at) for k in result.kept] == [("redacted_thinking", 0), ("citations", 1)]
    assert result.kept[1].data == {"citations": [citation]}


def test_a_programmatic_tool_call_keeps_its_caller_and_the_container() -> None:
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    container = {"id": "container_1", "expires_at": "2025-12-20T05:33:35Z"}
    events = [
        MESSAGE_START,
        *text(0, ["Rolling."]),
        *server_call(1, "srvtoolu_1", "code_execution", ['{"code": "await roll()"}']),
        *whole(2, {"type": "tool_use", "id": "toolu_1", "name": "roll", "input": {"player": "p1"}, "caller": caller}),
        *message_end("tool_use", container=container),
    ]
    result = assemble(sdk_events(events))
    assert [(c.name, c.parsed_arguments) for c in result.tool_calls] == [("roll", {"player": "p1"})]
    assert result.finish.kind == "tool-calls"
    assert [(k.type, k.at) for k in result.kept] == [("server_tool_use", 1)]
    assert result.replay_state["blocks"] == [None, {"extra": {"caller": caller}}]
    assert result.replay_state["response"]["container"] == container


def test_a_block_type_added_since_is_kept_with_its_deltas_assembled() -> None:
    events = [
        MESSAGE_START,
        start(0, {"type": "widget", "body": "", "size": 1}),
        delta(0, {"type": "widget_delta", "body": "ab"}),
        delta(0, {"type": "widget_delta", "body": "cd", "size": 2}),
        stop(0),
        *text(1, ["ok"]),
        *message_end("end_turn"),
    ]
    (kept,) = assemble(events).kept
    assert kept == KeptBlock(type="widget", at=0, data={"type": "widget", "body": "abcd", "size": 2})


def test_a_turn_of_kept_blocks_only_is_not_empty() -> None:
    events, kept = BLOCKS["web_search"]
    result = assemble([MESSAGE_START, *events, *message_end("end_turn")])
    assert result.blocks == [] and [k.data for k in result.kept] == kept and result.finish.kind == "stop"


def test_a_kept_block_the_stream_cut_off_is_not_kept() -> None:
    events = [
        MESSAGE_START,
        *text(0, ["Searching."]),
        start(1, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        delta(1, {"type": "input_json_delta", "partial_json": '{"query": "te'}),
        *message_end("max_tokens"),
    ]
    result = assemble(events)
    assert result.finish.kind == "max-tokens" and result.text == "Searching." and result.kept == []


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("refusal", "error", "REFUSAL"),
        ("pause_turn", "error", "PAUSE_TURN"),
        ("model_context_window_exceeded", "max-tokens", None),
    ],
)
def test_every_finish_carries_what_was_kept(reason: str, kind: str, code: str | None) -> None:
    # A paused or refused turn may be sent back as it is: its kept blocks go with it.
    events, kept = BLOCKS["web_search"]
    result = assemble([MESSAGE_START, *events, *text(2, ["Partial"]), *message_end(reason)])
    assert result.finish.kind == kind and (result.finish.failure.code if result.finish.failure else None) == code
    assert [k.data for k in result.kept] == kept


def test_async_input_gives_the_same_result() -> None:
    async def events() -> AsyncIterator[dict[str, Any]]:
        for event in stream_of("compaction"):
            yield event

    assert asyncio.run(sf.aassemble(sf.from_anthropic_events(events()))) == assemble(stream_of("compaction"))


def test_the_input_events_are_not_changed() -> None:
    events = stream_of("web_search")
    before = copy.deepcopy(events)
    assemble(events)
    assert events == before


# --- Failures ------------------------------------------------------------------------------------------


def test_a_stream_without_usage_fails_strict_with_usage_missing() -> None:
    message = {key: value for key, value in MESSAGE.items() if key != "usage"}
    events = [{"type": "message_start", "message": message}, *BLOCKS["web_search"][0], *text(2, ["x"])]
    events.append({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    events.append({"type": "message_stop"})
    with pytest.raises(sf.LlmError) as caught:
        assemble(events)
    assert caught.value.code == E.USAGE_MISSING
    assert assemble(events, sf.Policy.HARNESS).usage is None


@pytest.mark.parametrize(
    ("events", "code", "words"),
    [
        (
            [MESSAGE_START, *server_call(0, "s", "web_search", ['{"query": ']), *message_end("end_turn")],
            E.MALFORMED_RESPONSE,
            "its input is not JSON",
        ),
        (
            [MESSAGE_START, start(0, {"type": "compaction"}), stop(0), delta(0, {"type": "compaction_delta"})],
            E.MALFORMED_RESPONSE,
            "after its content_block_stop",
        ),
        (
            [MESSAGE_START, start(0, {"type": "fallback"}), start(1, {"type": "fallback"})],
            E.MALFORMED_RESPONSE,
            "while another block is open",
        ),
        ([MESSAGE_START, start(0, {"kind": "text"})], E.MALFORMED_RESPONSE, "with a string 'type'"),
        (
            [MESSAGE_START, start(0, {"type": "server_tool_use", "input": {}}), delta(0, {"type": "input_json_delta"})],
            E.MALFORMED_RESPONSE,
            "partial_json must be a string",
        ),
        (
            [{"type": "message_start", "message": {**MESSAGE, "content": {"type": "text"}}}],
            E.MALFORMED_RESPONSE,
            "'content' must be a list",
        ),
        ([MESSAGE_START, *server_call(0, "s", "web_search", ["{}"])], E.STREAM_CLOSED, "without a stop_reason"),
        (
            [MESSAGE_START, {"type": "error", "error": {"type": "api_error", "message": "busy", "status": 429}}],
            E.RATE_LIMIT,  # its status, before the words of its type
            "busy",
        ),
        (
            [MESSAGE_START, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}],
            E.SERVER,
            "Overloaded",
        ),
    ],
)
def test_what_cannot_be_converted_is_a_coded_error(
    events: list[dict[str, Any]], code: sf.ErrorCode, words: str
) -> None:
    with pytest.raises(sf.LlmError) as caught:
        assemble(events)
    assert caught.value.code == code and words in caught.value.message


def test_what_a_turn_keeps_is_bounded() -> None:
    converter = sf.AnthropicConverter()
    converter.keeper = Keeper(limit=1000)
    converter.feed(MESSAGE_START)
    converter.feed(start(0, {"type": "compaction", "content": None}))
    with pytest.raises(sf.LlmError) as caught:
        for _ in range(100):
            converter.feed(delta(0, {"type": "widget_delta", "content": "x" * 20}))
    assert caught.value.code == E.LIMIT_EXCEEDED and "1,000 characters" in caught.value.message


# --- Any split of the provider's deltas -------------------------------------------------------------------


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


QUERY = '{"query": "tea \\u00e9 \\"green\\"", "max": [1, 2]}'
ARGUMENTS = '{"city": "Paris", "days": 3}'


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 200), max_size=6),
    st.lists(st.integers(0, 200), max_size=6),
    st.lists(st.integers(0, 200), max_size=6),
    st.text(min_size=1, max_size=40),
)
def test_any_split_of_the_deltas_assembles_the_same(
    query_cuts: list[int], argument_cuts: list[int], text_cuts: list[int], words: str
) -> None:
    events = [
        MESSAGE_START,
        *server_call(0, "srvtoolu_1", "web_search", split(QUERY, query_cuts)),
        *text(1, split(words, text_cuts)),
        start(2, {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}),
        *(delta(2, {"type": "input_json_delta", "partial_json": p}) for p in split(ARGUMENTS, argument_cuts)),
        stop(2),
        *message_end("tool_use"),
    ]
    result = assemble(events)
    assert result.text == words and result.tool_calls[0].arguments == ARGUMENTS
    assert result.kept[0].data["input"] == json.loads(QUERY)

"""The Responses API's own tools that the client runs (local shell, shell, apply patch, computer use, client tool
search) are tool calls: converted from their items, run by the agent loop against a real server on 127.0.0.1
(tests/sse_server.py), their results sent back as the matching output items. Calls the server ran itself (a
hosted shell, a server tool search, xAI's search tools as ``custom_tool_call`` items) are kept for replay."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import pytest

import streamfsm as sf

from ..agent_support import collect, kinds
from ..data import FIXTURES as ALL_FIXTURES
from ..sse_server import SSE, SSEServer

FIXTURES = ALL_FIXTURES / "responses-tools"
USAGE = {"input_tokens": 20, "output_tokens": 6}

LOCAL_SHELL = {
    "type": "local_shell_call",
    "id": "lsh_1",
    "call_id": "call_shell",
    "action": {"type": "exec", "command": ["ls", "-la"], "env": {}, "working_directory": "/tmp"},
    "status": "completed",
}
SHELL = {
    "type": "shell_call",
    "id": "sh_1",
    "call_id": "call_sh",
    "action": {"commands": ["pwd", "echo hi"], "timeout_ms": 1000},
    "environment": {"type": "local"},
    "status": "completed",
}
APPLY_PATCH = {
    "type": "apply_patch_call",
    "id": "apc_1",
    "call_id": "call_patch",
    "operation": {"type": "update_file", "path": "a.py", "diff": "@@\n-x = 1\n+x = 2\n"},
    "status": "completed",
}
COMPUTER = {
    "type": "computer_call",
    "id": "cu_1",
    "call_id": "call_cu",
    "action": {"type": "click", "button": "left", "x": 10, "y": 20},
    "pending_safety_checks": [],
    "status": "completed",
}
TOOL_SEARCH = {
    "type": "tool_search_call",
    "id": "ts_1",
    "call_id": "call_ts",
    "arguments": {"query": "weather"},
    "execution": "client",
    "status": "completed",
}
#: Each item, the tool call it becomes (name, arguments), and the output item its result goes back as.
CASES = [
    (LOCAL_SHELL, "local_shell", LOCAL_SHELL["action"]),
    (SHELL, "shell", SHELL["action"]),
    (APPLY_PATCH, "apply_patch", APPLY_PATCH["operation"]),
    (COMPUTER, "computer", COMPUTER["action"]),
    (TOOL_SEARCH, "tool_search", TOOL_SEARCH["arguments"]),
]


def response(response_id: str, *items: Mapping[str, Any], tools: list[Any] | None = None) -> list[dict[str, Any]]:
    """One streamed response whose output is ``items``, each added then done."""
    head: dict[str, Any] = {"id": response_id, "object": "response", "model": "gpt-5", "status": "in_progress"}
    if tools is not None:
        head["tools"] = tools
    events: list[dict[str, Any]] = [{"type": "response.created", "response": head}]
    for index, item in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": index, "item": {**item}})
        events.append({"type": "response.output_item.done", "output_index": index, "item": dict(item)})
    done = {**head, "status": "completed", "output": list(items), "usage": USAGE}
    events.append({"type": "response.completed", "response": done})
    return events


def answer(response_id: str, text: str) -> list[dict[str, Any]]:
    item = {
        "type": "message",
        "id": f"msg_{response_id}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return response(response_id, item)


def sse(recorded: Iterable[Mapping[str, Any]]) -> SSE:
    return SSE([f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}" for e in recorded])


def assemble(events: list[dict[str, Any]]) -> sf.StreamResult:
    return sf.assemble(sf.from_openai_responses_events(events), policy=sf.Policy.STRICT)


# --- Conversion -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("item", "name", "arguments"), CASES, ids=[c[1] for c in CASES])
def test_a_client_tool_item_is_a_tool_call(item: dict[str, Any], name: str, arguments: Any) -> None:
    result = assemble(response("resp_1", item))
    (call,) = result.tool_calls
    assert (call.id, call.name, call.parsed_arguments) == (item["call_id"], name, arguments)
    assert result.finish.kind == "tool-calls" and result.kept == []
    (entry,) = result.replay_state["blocks"]
    assert entry == {"item": item["id"], "type": item["type"], "call": item}  # sent back as it came


def test_the_batched_actions_of_the_computer_tool_are_its_arguments() -> None:
    item = {**COMPUTER, "action": None, "actions": [{"type": "screenshot"}, {"type": "scroll", "x": 1, "y": 2}]}
    del item["action"]
    (call,) = assemble(response("resp_1", item)).tool_calls
    assert call.parsed_arguments == {"actions": item["actions"]}


@pytest.mark.parametrize(
    "item",
    [
        {**SHELL, "environment": {"type": "container_reference", "container_id": "cntr_1"}},
        {**TOOL_SEARCH, "execution": "server"},
        {key: value for key, value in TOOL_SEARCH.items() if key != "execution"},
    ],
    ids=["hosted shell", "server tool search", "tool search, execution unsaid"],
)
def test_a_call_the_server_ran_is_kept(item: dict[str, Any]) -> None:
    text = answer("resp_1", "Done.")
    events = response("resp_1", item, text[2]["item"])
    result = assemble(events)
    assert result.tool_calls == [] and result.finish.kind == "stop" and result.text == "Done."
    assert [(k.type, k.data) for k in result.kept] == [(item["type"], item)]


def test_xai_search_tools_are_custom_tool_calls_the_server_ran() -> None:
    """A trimmed xAI x_search recording (tests/fixtures/responses-tools/README.md): its custom_tool_call items are
    named for none of the tools the response lists, so the server ran them: kept, and the turn finishes stop."""
    events = [orjson.loads(line) for line in (FIXTURES / "xai-x-search-trimmed.jsonl").read_bytes().splitlines()]
    result = assemble(events)
    assert result.tool_calls == [] and result.finish.kind == "stop"
    kept = [(k.type, k.data.get("name")) for k in result.kept]
    assert kept[:2] == [("custom_tool_call", "x_keyword_search"), ("web_search_call", None)]
    assert ("custom_tool_call", "view_x_video") in kept
    assert result.text.startswith("### Latest Videos")


def test_a_custom_tool_the_client_declared_is_still_a_tool_call() -> None:
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "write_sql", "input": "SELECT 1"}
    tools = [{"type": "custom", "name": "write_sql"}, {"type": "x_search"}]
    result = assemble(response("resp_1", item, tools=tools))
    assert [(c.name, c.parsed_arguments) for c in result.tool_calls] == [("write_sql", {"input": "SELECT 1"})]
    assert result.finish.kind == "tool-calls"


#: Each recording of this folder, and the tool calls its one turn asks for (none: the server ran them).
RECORDINGS = {
    "local-shell-call.jsonl": ["local_shell"],
    "shell-call.jsonl": ["shell"],
    "apply-patch-call.jsonl": ["apply_patch"],
    "computer-call.jsonl": ["computer"],
    "tool-search-client.jsonl": ["tool_search"],
    "shell-call-hosted.jsonl": [],
    "tool-search-server.jsonl": [],
    "xai-x-search-trimmed.jsonl": [],
}


def test_every_recording_reads_as_one_turn_with_its_calls() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.jsonl")) == sorted(RECORDINGS)
    for name, calls in RECORDINGS.items():
        (stream,) = sf.read_recordings(FIXTURES / name)
        assert stream.failure is None and stream.finished, name
        result = sf.assemble(stream.chunks, policy=sf.Policy.STRICT)
        assert [call.name for call in result.tool_calls] == calls
        assert result.finish.kind == ("tool-calls" if calls else "stop")
        assert bool(result.kept) == (not calls)


# --- Through the agent loop, against the local server ----------------------------------------------------


def test_each_client_tool_runs_in_the_agent_loop_and_goes_back_as_its_output_item(server: SSEServer) -> None:
    server.script(
        sse(response("resp_1", LOCAL_SHELL, SHELL, APPLY_PATCH)),
        sse(response("resp_2", COMPUTER, TOOL_SEARCH)),
        sse(answer("resp_3", "All done.")),
    )
    ran: list[tuple[str, dict[str, Any]]] = []

    def tool(name: str, result: str) -> sf.Tool:
        def run(arguments: dict[str, Any]) -> str:
            ran.append((name, arguments))
            if name == "apply_patch":
                raise sf.ToolError("the patch does not apply")
            return result

        return sf.Tool(run, name=name, description=name, parameters={"type": "object"})

    weather = {"type": "function", "name": "weather", "parameters": {"type": "object"}}
    tools = [
        tool("local_shell", "total 0"),
        tool("shell", "/tmp\nhi"),
        tool("apply_patch", ""),
        tool("computer", "data:image/png;base64,aGk="),
        tool("tool_search", orjson.dumps([weather]).decode()),
    ]
    native = {"local_shell": {"type": "local_shell"}, "apply_patch": {"type": "apply_patch"}}
    adapter = sf.OpenAIResponsesAdapter(server.url, api_key="sk-test", native_tools=native)
    out = asyncio.run(collect(sf.AgentLoop(adapter, tools, model="gpt-5").run("go")))

    assert kinds(out)[-2:] == ["text", "done"] and out[-1].reason == "stop"
    assert [name for name, _ in ran] == ["local_shell", "shell", "apply_patch", "computer", "tool_search"]
    assert [arguments for _, arguments in ran] == [arguments for _, _, arguments in CASES]

    first, second, third = (request.json() for request in server.requests)
    assert first["tools"][:3] == [
        {"type": "local_shell"},
        {
            "type": "function",
            "name": "shell",
            "description": "shell",
            "parameters": {"type": "object"},
            "strict": False,
        },
        {"type": "apply_patch"},
    ]
    # The calls go back as the items they came as, each followed by its result as the matching output item.
    assert second["input"][1:] == [
        LOCAL_SHELL,
        SHELL,
        APPLY_PATCH,
        {"type": "local_shell_call_output", "id": "call_shell", "output": "total 0"},
        {
            "type": "shell_call_output",
            "call_id": "call_sh",
            "output": [{"stdout": "/tmp\nhi", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
        },
        {
            "type": "apply_patch_call_output",
            "call_id": "call_patch",
            "status": "failed",
            "output": second["input"][-1]["output"],
        },
    ]
    assert "the patch does not apply" in second["input"][-1]["output"]
    assert third["input"][len(second["input"]) :] == [
        COMPUTER,
        TOOL_SEARCH,
        {
            "type": "computer_call_output",
            "call_id": "call_cu",
            "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,aGk="},
        },
        {"type": "tool_search_output", "call_id": "call_ts", "execution": "client", "tools": [weather]},
    ]


def test_output_items_take_structured_results() -> None:
    from streamfsm._providers.openai_responses_adapter import output_item

    chunks = [{"stdout": "a", "stderr": "b", "outcome": {"type": "timeout"}}]
    shell = output_item("shell_call", sf.ToolResultMessage(tool_call_id="c", content=orjson.dumps(chunks).decode()))
    assert shell == {"type": "shell_call_output", "call_id": "c", "output": chunks}
    failed = output_item("shell_call", sf.ToolResultMessage(tool_call_id="c", content="boom", is_error=True))
    assert failed["output"][0]["outcome"] == {"type": "exit", "exit_code": 1}
    shot = {"type": "computer_screenshot", "file_id": "file_1"}
    computer = output_item("computer_call", sf.ToolResultMessage(tool_call_id="c", content=orjson.dumps(shot).decode()))
    assert computer["output"] == shot
    unlisted = output_item("tool_search_call", sf.ToolResultMessage(tool_call_id="c", content="no tools"))
    assert unlisted == {"type": "tool_search_output", "call_id": "c", "execution": "client", "tools": []}


def client_tool(name: str, result: str = "ok", fail: str | None = None) -> sf.Tool:
    """A client tool of ``name`` taking any object: returns ``result``, or fails with ``fail``."""

    def run(arguments: dict[str, Any]) -> str:
        if fail is not None:
            raise RuntimeError(fail)
        return result

    return sf.Tool(run, name=name, description=name, parameters={"type": "object"})


@pytest.mark.parametrize(("item", "name", "arguments"), CASES, ids=[c[1] for c in CASES])
def test_a_renamed_call_goes_back_under_the_loops_id(
    server: SSEServer, item: dict[str, Any], name: str, arguments: Any
) -> None:
    """The server reuses a call id in the second turn: the loop names that call ``call_2_0``, and the item sent
    back for it and its output both say so (the first call keeps the server's id)."""
    again = {**item, "id": f"{item['id']}_again"}
    server.script(sse(response("resp_1", item)), sse(response("resp_2", again)), sse(answer("resp_3", "Done.")))
    result = "[]" if name == "tool_search" else "ok"
    adapter = sf.OpenAIResponsesAdapter(server.url, api_key="sk-test")
    out = asyncio.run(collect(sf.AgentLoop(adapter, [client_tool(name, result)], model="gpt-5").run("go")))
    assert [c.id for c in out if c.type == "tool_call"] == [item["call_id"], "call_2_0"]
    third = server.requests[2].json()["input"]
    calls = [i for i in third if i.get("type") == item["type"]]
    outputs = [i for i in third if i.get("type", "").endswith("_output")]
    assert [c["call_id"] for c in calls] == [item["call_id"], "call_2_0"]
    assert [c["id"] for c in calls] == [item["id"], again["id"]]  # the items keep the server's own ids
    key = "id" if item["type"] == "local_shell_call" else "call_id"
    assert [o[key] for o in outputs] == [item["call_id"], "call_2_0"]


def test_a_failed_tool_search_goes_back_as_an_empty_result_and_the_run_goes_on(server: SSEServer) -> None:
    server.script(sse(response("resp_1", TOOL_SEARCH)), sse(answer("resp_2", "No tools, then.")))
    adapter = sf.OpenAIResponsesAdapter(server.url, api_key="sk-test")
    tool = client_tool("tool_search", fail="the registry is down")
    out = asyncio.run(collect(sf.AgentLoop(adapter, [tool], model="gpt-5").run("go")))
    assert kinds(out)[-2:] == ["text", "done"] and out[-1].reason == "stop"
    output, note = server.requests[1].json()["input"][2:]
    assert output == {"type": "tool_search_output", "call_id": "call_ts", "execution": "client", "tools": []}
    assert note == {
        "role": "user",
        "content": [{"type": "input_text", "text": "The tool_search call call_ts failed: RuntimeError: the registry "
                     "is down"}],
    }  # fmt: skip

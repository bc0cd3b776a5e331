"""The agent loop: turns, tools and the conversation, over a scripted adapter (no network, no real time).

Retries live in ``test_retry.py``, cancellation, timeouts and budgets in ``test_cancel.py``, hooks, metrics and
logging in ``test_observe.py``, the HTTP end-to-end run in ``test_over_http.py`` (all in ``tests/agent/``). Every
run's output goes through the flat validator (``collect``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

import streamfsm as sf
from streamfsm import ErrorCode

from ..agent_support import (
    SEED_READS,
    Fail,
    Turn,
    WaitFor,
    answer,
    calls,
    collect,
    kinds,
    make_loop,
    run,
    wire,
)

E = ErrorCode


# -- the seed's example: two parallel file reads, then the answer ----------------------------------


def test_the_seeds_two_parallel_file_reads_then_the_answer() -> None:
    both_started = asyncio.Event()
    started: list[str] = []

    async def file_edit(action: str, path: str) -> dict[str, str]:
        """Read or edit a file."""
        started.append(path)
        if len(started) == 2:
            both_started.set()
        # Each call waits until both have started: run one after the other, they would never finish.
        await asyncio.wait_for(both_started.wait(), 5)
        return {"content": f"export const name = {path!r}"}

    loop, adapter, _ = make_loop(
        [
            calls(
                ("call_1", "file_edit", {"action": "read", "path": "src/index.ts"}),
                ("call_2", "file_edit", {"action": "read", "path": "src/app.ts"}),
                text="2つのファイルを確認します",
            ),
            answer("上記2ファイル", "の内容..."),
        ],
        [file_edit],
    )
    agent_run = loop.run("list project files")
    out = run(collect(agent_run))
    assert wire(out) == [
        {"type": "text", "content": "2つのファイルを確認します"},
        *SEED_READS,
        {"type": "text", "content": "上記2ファイル"},
        {"type": "text", "content": "の内容..."},
        {"type": "done", "reason": "stop", "usage": {"promptTokens": 20, "completionTokens": 10, "totalTokens": 30}},
    ]
    assert agent_run.done is out[-1] and agent_run.error is None
    # The conversation: the question, the first turn, both results in call order, the answer.
    roles = [m.role for m in agent_run.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    first, second = adapter.requests
    assert [m.role for m in first.messages] == ["user"]
    assert [m.role for m in second.messages] == ["user", "assistant", "tool", "tool"]
    results = [m for m in second.messages if isinstance(m, sf.ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["call_1", "call_2"]
    assert json.loads(results[0].content) == {"content": "export const name = 'src/index.ts'"}
    # The model was told about the tool, with the schema built from the signature.
    assert first.tools is not None
    (schema,) = first.tools
    assert (schema.name, schema.description) == ("file_edit", "Read or edit a file.")
    assert schema.parameters["required"] == ["action", "path"]


def test_results_come_as_tools_finish_and_join_the_conversation_in_call_order() -> None:
    fast_answered = asyncio.Event()

    async def slow() -> str:
        await fast_answered.wait()  # finishes only once the consumer has had fast's result
        return "slow done"

    async def fast() -> str:
        return "fast done"

    def on_chunk(chunk: Any) -> None:
        if isinstance(chunk, sf.ToolResultChunk) and chunk.tool_call_id == "c2":
            fast_answered.set()

    loop, _, _ = make_loop(
        [calls(("c1", "slow", {}), ("c2", "fast", {})), answer("ok")], [slow, fast], hooks=sf.Hooks(chunk=on_chunk)
    )
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    results = [c for c in out if isinstance(c, sf.ToolResultChunk)]
    assert [(r.tool_call_id, r.result) for r in results] == [("c2", "fast done"), ("c1", "slow done")]
    tool_messages = [m for m in agent_run.messages if isinstance(m, sf.ToolResultMessage)]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [("c1", "slow done"), ("c2", "fast done")]


# -- how tools are declared and called -----------------------------------------------------------


class ReadFile(BaseModel):
    """Arguments of read_file."""

    path: str
    max_bytes: int = Field(default=1000, ge=1)


def test_a_pydantic_model_as_parameters_gets_the_validated_instance() -> None:
    got: list[ReadFile] = []

    def read_file(args: ReadFile) -> str:
        got.append(args)
        return f"read {args.path}"

    tool = sf.Tool(read_file, parameters=ReadFile, description="Read a file.")
    assert tool.parameters == ReadFile.model_json_schema()
    loop, _, _ = make_loop([calls(("c1", "read_file", {"path": "a.txt"})), answer("ok")], [tool])
    out = run(collect(loop.run("go")))
    assert got == [ReadFile(path="a.txt", max_bytes=1000)]
    assert [c.result for c in out if isinstance(c, sf.ToolResultChunk)] == ["read a.txt"]


def test_a_json_schema_as_parameters_gets_the_arguments_dict() -> None:
    got: list[dict[str, Any]] = []
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 1}, "limit": {"type": "integer", "maximum": 50}},
        "required": ["query"],
        "additionalProperties": False,
    }

    async def search(arguments: dict[str, Any]) -> list[str]:
        got.append(arguments)
        return ["hit"]

    tool = sf.Tool(search, parameters=schema)
    assert tool.parameters == schema and tool.schema.parameters == schema
    loop, _, _ = make_loop([calls(("c1", "search", {"query": "q", "limit": 5})), answer("ok")], [tool])
    out = run(collect(loop.run("go")))
    assert got == [{"query": "q", "limit": 5}]
    assert [c.result for c in out if isinstance(c, sf.ToolResultChunk)] == [["hit"]]


def test_a_signature_becomes_the_schema_and_keyword_arguments() -> None:
    def grep(
        pattern: Annotated[str, Field(description="a regular expression")], json: bool = False, *, limit: int = 10
    ) -> dict[str, Any]:
        """Search the files."""
        return {"pattern": pattern, "json": json, "limit": limit}

    tool = sf.tool(grep)
    assert tool.name == "grep" and tool.description == "Search the files."
    props = tool.parameters["properties"]
    assert set(props) == {"pattern", "json", "limit"}  # a parameter may be called json: no clash with BaseModel
    assert props["pattern"]["description"] == "a regular expression"
    assert tool.parameters["required"] == ["pattern"]
    assert tool.parameters["additionalProperties"] is False
    assert tool.validate('{"pattern": "x", "limit": 3}') == ((), {"pattern": "x", "json": False, "limit": 3})
    assert tool("direct", limit=1) == {"pattern": "direct", "json": False, "limit": 1}  # still callable


def test_sync_tools_run_in_a_worker_thread_async_tools_in_the_loop() -> None:
    threads: dict[str, int] = {}

    def sync_tool() -> str:
        threads["sync"] = threading.get_ident()
        return "s"

    async def async_tool() -> str:
        threads["async"] = threading.get_ident()
        return "a"

    loop, _, _ = make_loop(
        [calls(("c1", "sync_tool", {}), ("c2", "async_tool", {})), answer("ok")], [sync_tool, async_tool]
    )
    run(collect(loop.run("go")))
    assert threads["async"] == threading.get_ident()
    assert threads["sync"] != threading.get_ident()


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Box(BaseModel):
    size: int


@pytest.mark.parametrize(
    ("value", "result", "content"),
    [
        pytest.param("plain text", "plain text", "plain text", id="str stays as it is"),
        pytest.param({"a": [1, None]}, {"a": [1, None]}, '{"a":[1,null]}', id="dict as JSON"),
        pytest.param(None, None, "null", id="None"),
        pytest.param(Box(size=3), {"size": 3}, '{"size":3}', id="pydantic model"),
        pytest.param(Point(1, 2), {"x": 1, "y": 2}, '{"x":1,"y":2}', id="dataclass"),
        pytest.param({1: "a"}, {"1": "a"}, '{"1":"a"}', id="int keys become strings"),
        pytest.param([2**70], [2**70], "[1180591620717411303424]", id="integers past 64 bits"),
        pytest.param(object, str(object), json.dumps(str(object)), id="anything else becomes its str"),
    ],
)
def test_what_a_tool_returns_becomes_json(value: Any, result: Any, content: str) -> None:
    def give() -> Any:
        return value

    loop, _, _ = make_loop([calls(("c1", "give", {})), answer("ok")], [give])
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    (chunk,) = [c for c in out if isinstance(c, sf.ToolResultChunk)]
    assert chunk.result == result and not chunk.is_error
    (message,) = [m for m in agent_run.messages if isinstance(m, sf.ToolResultMessage)]
    assert message.content == content and not message.is_error


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        pytest.param(lambda: sf.Tool(42), TypeError, "callable", id="not callable"),  # type: ignore[arg-type]
        pytest.param(lambda: sf.Tool(lambda: 1, name=""), ValueError, "name", id="empty name"),
        pytest.param(lambda: sf.Tool(lambda *a: 1, name="f"), TypeError, "keyword", id="*args"),
        pytest.param(lambda: sf.Tool(lambda **k: 1, name="f"), TypeError, "keyword", id="**kwargs"),
        pytest.param(lambda: sf.Tool(len, name="f"), TypeError, "keyword", id="positional-only"),
        pytest.param(lambda: sf.Tool(lambda: 1, name="f", timeout=0), ValueError, "timeout", id="zero timeout"),
        pytest.param(
            lambda: sf.Tool(lambda a: 1, name="f", parameters={"type": "object", "properties": 3}),
            ValueError,
            "not a valid JSON Schema",
            id="invalid JSON schema",
        ),
        pytest.param(
            lambda: sf.Tool(lambda a: 1, name="f", parameters={"type": "array"}),
            ValueError,
            "object",
            id="schema of an array",
        ),
        pytest.param(
            lambda: sf.Tool(lambda a: 1, name="f", parameters=dict),  # type: ignore[arg-type]
            TypeError,
            "parameters",
            id="a type",
        ),
    ],
)
def test_tools_are_checked_when_declared(make: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        make()


def test_two_tools_with_one_name_are_refused() -> None:
    def f() -> None:
        """One."""

    with pytest.raises(ValueError, match="two tools"):
        make_loop([], [f, sf.Tool(f)])


def test_the_decorator_with_options() -> None:
    @sf.tool(name="shell", description="Run a command.", timeout=5)
    def run_command(command: str) -> str:
        return command

    assert isinstance(run_command, sf.Tool)
    assert (run_command.name, run_command.description, run_command.timeout) == ("shell", "Run a command.", 5)


# -- what goes wrong in a tool is an error result, never a crash -----------------------------------


async def sleepy(seconds: float) -> str:
    """Sleeps."""
    await asyncio.sleep(seconds)
    return "woke"


def exploding(reason: str) -> str:
    """Raises."""
    raise ValueError(reason)


async def refusing(path: str) -> str:
    """Refuses with its own message."""
    raise sf.ToolError(f"Permission denied: {path}")


def typed(count: int, names: list[str]) -> int:
    """Typed arguments."""
    return count


async def own_timeout() -> None:
    """Raises a TimeoutError of its own, long before the loop's timeout."""
    raise TimeoutError("the database did not answer")


def circular() -> list[Any]:
    """Returns what is not JSON data."""
    loop: list[Any] = []
    loop.append(loop)
    return loop


SEARCH = sf.Tool(
    lambda arguments: "found",
    name="search",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
FAILING_TOOLS: list[sf.Tool | Callable[..., Any]] = [
    sf.Tool(sleepy, timeout=0.01),
    exploding,
    refusing,
    typed,
    SEARCH,
    own_timeout,
    circular,
]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        pytest.param("missing", {}, "unknown tool 'missing' (available: ", id="unknown tool"),
        pytest.param("typed", {"count": "many", "names": []}, "count: Input should be a valid integer", id="bad type"),
        pytest.param("typed", {"names": []}, "count: Field required", id="missing argument"),
        pytest.param("typed", {"count": 1, "names": [], "x": 1}, "x: Extra inputs are not permitted", id="extra arg"),
        pytest.param("search", {}, "'query' is a required property", id="JSON schema: missing"),
        pytest.param("search", {"query": 5}, "query: 5 is not of type 'string'", id="JSON schema: wrong type"),
        pytest.param("exploding", {"reason": "disk on fire"}, "ValueError: disk on fire", id="tool raises"),
        pytest.param("refusing", {"path": "/etc/passwd"}, "Permission denied: /etc/passwd", id="ToolError"),
        pytest.param("sleepy", {"seconds": 10}, "tool 'sleepy' timed out after 0.01 s", id="timeout"),
        pytest.param("own_timeout", {}, "TimeoutError: the database did not answer", id="its own TimeoutError"),
        pytest.param("circular", {}, "ValueError: Circular reference", id="result that is not JSON"),
    ],
)
def test_a_failing_tool_gives_an_error_result_and_the_run_goes_on(
    name: str, arguments: dict[str, Any], message: str
) -> None:
    loop, adapter, _ = make_loop([calls(("c1", name, arguments)), answer("recovered")], FAILING_TOOLS)
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    assert kinds(out) == ["tool_call", "tool_result", "text", "done"]
    result = out[1]
    assert result.is_error and result.result["error"] is True
    assert message in result.result["message"]
    if name == "refusing":
        assert result.result == {"error": True, "message": "Permission denied: /etc/passwd"}  # the seed's shape
    assert out[-1].reason == "stop" and agent_run.error is None
    # The model is told, and told it failed.
    sent = [m for m in adapter.requests[1].messages if isinstance(m, sf.ToolResultMessage)]
    assert len(sent) == 1 and sent[0].is_error and message in json.loads(sent[0].content)["message"]


def test_a_tool_that_fails_does_not_stop_the_others() -> None:
    loop, _, _ = make_loop(
        [calls(("c1", "exploding", {"reason": "no"}), ("c2", "typed", {"count": 2, "names": []})), answer("ok")],
        FAILING_TOOLS,
    )
    out = run(collect(loop.run("go")))
    results = {c.tool_call_id: c for c in out if isinstance(c, sf.ToolResultChunk)}
    assert results["c1"].is_error and not results["c2"].is_error and results["c2"].result == 2


def test_the_loops_tool_timeout_applies_unless_the_tool_sets_its_own() -> None:
    loop, _, _ = make_loop(
        [
            calls(
                ("c1", "sleepy", {"seconds": 10}),
                ("c2", "longer", {"seconds": 0.05}),
                ("c3", "unbounded", {"seconds": 0.05}),
            ),
            answer("ok"),
        ],
        [sleepy, sf.Tool(sleepy, name="longer", timeout=2), sf.Tool(sleepy, name="unbounded", timeout=math.inf)],
        limits=sf.AgentLimits(tool_timeout=0.01),
    )
    out = run(collect(loop.run("go")))
    results = {c.tool_call_id: c.result for c in out if isinstance(c, sf.ToolResultChunk)}
    assert results == {
        "c1": {"error": True, "message": "tool 'sleepy' timed out after 0.01 s"},
        "c2": "woke",
        "c3": "woke",
    }


def test_a_sync_tool_can_see_that_its_call_is_over() -> None:
    noticed = threading.Event()
    reasons: list[str | None] = []

    def patient() -> str:
        signal = sf.tool_signal()
        assert signal is not None
        while not signal.aborted:  # a thread cannot be cancelled: it looks
            time.sleep(0.002)
        reasons.append(signal.reason)
        noticed.set()
        return "too late"

    loop, _, _ = make_loop([calls(("c1", "patient", {})), answer("ok")], [sf.Tool(patient, timeout=0.02)])
    out = run(collect(loop.run("go")))
    assert "timed out after 0.02 s" in out[1].result["message"]
    assert noticed.wait(2) and reasons == ["timed out after 0.02 s"]
    assert sf.tool_signal() is None  # outside a tool call


# -- how a run ends ------------------------------------------------------------------------------


def test_max_turns_runs_the_last_tools_then_ends_with_tool_use() -> None:
    ran: list[int] = []

    def again(n: int) -> int:
        ran.append(n)
        return n

    loop, adapter, _ = make_loop(
        [calls(("c1", "again", {"n": 1})), calls(("c2", "again", {"n": 2})), answer("never asked")],
        [again],
        limits=sf.AgentLimits(max_turns=2),
    )
    agent_run = loop.run("loop forever")
    out = run(collect(agent_run))
    assert ran == [1, 2] and len(adapter.requests) == 2
    assert out[-1].reason == "tool_use" and agent_run.error is None
    assert agent_run.messages[-1].role == "tool"  # the conversation can be resumed as it is
    assert len(agent_run.turns) == 2


def test_max_tokens_ends_with_length_and_keeps_the_answer() -> None:
    loop, _, _ = make_loop([Turn().text("cut of").end("max-tokens")])
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    assert kinds(out) == ["text", "done"] and out[-1].reason == "length"
    assert isinstance(agent_run.messages[-1], sf.AssistantMessage)


def test_calls_of_a_turn_that_ends_with_stop_are_answered_not_run() -> None:
    ran: list[str] = []

    def note(text: str) -> None:
        ran.append(text)

    loop, _, _ = make_loop([Turn().text("done").call("c1", "note", {"text": "x"}).end("stop")], [note])
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    assert kinds(out) == ["text", "tool_call", "tool_result", "done"]
    assert ran == [] and out[2].is_error and "not run" in out[2].result["message"]
    assert out[-1].reason == "stop"
    assert [m.role for m in agent_run.messages] == ["user", "assistant", "tool"]


def test_reasoning_stays_out_of_the_flat_stream_but_in_the_conversation() -> None:
    loop, _, _ = make_loop([Turn().reasoning("think").text("answer").end()])
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    assert wire(out)[:-1] == [{"type": "text", "content": "answer"}]
    last = agent_run.messages[-1]
    assert isinstance(last, sf.AssistantMessage) and [b.type for b in last.blocks] == ["reasoning", "text"]


def test_a_text_block_without_deltas_is_sent_whole_and_empty_deltas_are_skipped() -> None:
    chunks: list[dict[str, Any]] = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "whole"}},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "text-delta", "index": 1, "text": ""},
        {"type": "text-delta", "index": 1, "text": "b"},
        {"type": "block-end", "index": 1, "block": {"type": "text", "text": "b"}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    loop, _, _ = make_loop([chunks])
    out = run(collect(loop.run("go")))
    assert wire(out)[:-1] == [{"type": "text", "content": "whole"}, {"type": "text", "content": "b"}]


def test_interleaved_blocks_need_the_harness_policy() -> None:
    chunks: list[dict[str, Any]] = [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "text-delta", "index": 1, "text": "hi"},
        {"type": "reasoning-delta", "index": 0, "text": "hm"},
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "hm"}},
        {"type": "block-end", "index": 1, "block": {"type": "text", "text": "hi"}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    loop, _, _ = make_loop([list(chunks)], policy=sf.Policy.HARNESS)
    assert kinds(run(collect(loop.run("go")))) == ["text", "done"]
    loop, _, _ = make_loop([list(chunks)])
    out = run(collect(loop.run("go")))
    assert out[-2].error.code is E.BLOCKS_INTERLEAVED


# -- eager mode ------------------------------------------------------------------------------------


def test_eager_tools_start_while_the_model_still_streams() -> None:
    tool_started = asyncio.Event()

    async def fetch(url: str) -> str:
        tool_started.set()
        return f"got {url}"

    # The response does not finish until the tool has started: only an eager loop gets past it.
    turn = Turn().call("c1", "fetch", {"url": "u"})
    chunks: list[Any] = [*turn.chunks, WaitFor(tool_started), *turn.end("tool-calls")[len(turn.chunks) :]]
    loop, _, _ = make_loop([chunks, answer("ok")], [fetch], eager_tools=True)
    out = run(asyncio.wait_for(collect(loop.run("go")), 5))
    assert kinds(out) == ["tool_call", "tool_result", "text", "done"]
    assert out[1].result == "got u"


def test_an_eager_tool_of_a_failed_attempt_is_cancelled_and_run_again() -> None:
    events: list[str] = []
    release = asyncio.Event()

    async def slow(n: int) -> int:
        events.append(f"start {n}")
        try:
            await release.wait()
        except asyncio.CancelledError:
            events.append(f"cancelled {n}")
            raise
        return n

    async def releaser() -> None:
        release.set()

    broken = Turn().call("c1", "slow", {"n": 1}).chunks
    loop, _, _ = make_loop(
        [
            Fail(sf.LlmError("overloaded", E.SERVER), after=broken),
            Turn().call("c1", "slow", {"n": 2}).call("c2", "releaser", {}).end("tool-calls"),
            answer("ok"),
        ],
        [slow, releaser],
        eager_tools=True,
    )
    out = run(collect(loop.run("go")))
    assert events[:2] == ["start 1", "cancelled 1"] and "start 2" in events
    assert {c.tool_call_id: c.result for c in out if isinstance(c, sf.ToolResultChunk)} == {"c1": 2, "c2": None}


def test_runs_of_one_loop_are_independent_and_may_overlap() -> None:
    class Echoing(sf.LlmAdapter):
        """Asks for the echo tool on a question, answers with the tool's result."""

        supported_options = frozenset({"tools", "signal"})

        async def stream(self, options: sf.GenerateOptions) -> Any:
            last = options.messages[-1]
            if isinstance(last, sf.UserMessage):
                chunks = calls((f"call-{last.content}", "echo", {"text": last.content}))
            else:
                assert isinstance(last, sf.ToolResultMessage)
                chunks = answer(f"echoed {last.content}")  # a str result goes to the model as it is
            for chunk in chunks:
                await asyncio.sleep(0)
                yield chunk

    async def echo(text: str) -> str:
        await asyncio.sleep(0)
        return text

    loop = sf.AgentLoop(Echoing(), [echo], model="m")

    async def main() -> list[list[Any]]:
        return list(await asyncio.gather(*(collect(loop.run(f"q{n}")) for n in range(10))))

    for n, out in enumerate(run(main())):
        assert wire(out)[1:3] == [
            {"type": "tool_result", "id": "result_1", "toolCallId": f"call-q{n}", "result": f"q{n}", "isError": False},
            {"type": "text", "content": f"echoed q{n}"},
        ]


# -- the request ---------------------------------------------------------------------------------


def test_the_options_template_and_conversation_input() -> None:
    options = sf.GenerateOptions(model="m", system="be brief", temperature=0.2)
    loop, adapter, _ = make_loop([answer("hi")], model=None, options=options)
    history: list[Any] = [
        {"role": "user", "content": "earlier"},
        sf.AssistantMessage(blocks=(sf.TextBlock(text="yes"),)),
    ]
    agent_run = loop.run([*history, sf.UserMessage(content="now")])
    run(collect(agent_run))
    (request,) = adapter.requests
    assert (request.model, request.system, request.temperature, request.tools) == ("m", "be brief", 0.2, None)
    assert [m.role for m in request.messages] == ["user", "assistant", "user"]
    assert request.signal is not None  # the adapter supports it: it gets the run's signal


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({}, id="neither model nor options"),
        pytest.param({"model": "m", "options": sf.GenerateOptions(model="m")}, id="both"),
        pytest.param(
            {"options": sf.GenerateOptions(model="m", messages=(sf.UserMessage(content="x"),))}, id="messages"
        ),
    ],
)
def test_the_request_is_checked_when_the_loop_is_made(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        sf.AgentLoop(make_loop([])[1], **kwargs)


def test_an_adapter_that_cannot_take_tools_fails_the_run_with_its_code() -> None:
    class NoTools(sf.LlmAdapter):
        async def stream(self, options: sf.GenerateOptions) -> Any:  # pragma: no cover - never called
            yield {}

    def f() -> None:
        """A tool."""

    loop = sf.AgentLoop(NoTools(), [f], model="m")
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    assert kinds(out) == ["error", "done"]
    assert agent_run.error is not None and agent_run.error.code is E.UNSUPPORTED_OPTION

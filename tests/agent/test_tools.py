"""What a tool may and may not do to a run: whatever it raises, a cancellation it ignores, threads it blocks,
arguments that cannot be sent back to the provider, arguments that are not a JSON object.

Runs that used to hang or to kill the program go through ``run_bounded`` (a thread of their own, a generous
bound): before the fixes they failed the test instead of hanging it or stopping the session.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm import ErrorCode
from streamfsm._providers.anthropic_messages_adapter import anthropic_messages
from streamfsm._providers.openai_chat_adapter import openai_messages

from ..agent_support import Turn, answer, calls, collect, kinds, make_loop, run, run_bounded, wire

E = ErrorCode


def results(out: list[Any]) -> dict[str, Any]:
    """The tool results of a run by call id."""
    return {c.tool_call_id: c for c in out if isinstance(c, sf.ToolResultChunk)}


async def no_task_left() -> None:
    """Only the running task is still there (give cancelled ones a step to go)."""
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


def sendable(request: sf.GenerateOptions) -> None:
    """The request's conversation serialises for both adapters (what they send is orjson of these)."""
    orjson.dumps(anthropic_messages(request))
    orjson.dumps(openai_messages(request, send_reasoning=True))


# -- whatever a tool raises is an error result -------------------------------------------------------


class Custom(BaseException):
    """A BaseException of a library's own."""


def parse_count(count: str) -> int:
    """argparse exits (SystemExit 2) on a value its type refuses."""
    parser = argparse.ArgumentParser(prog="count")
    parser.add_argument("--count", type=int)
    return int(parser.parse_args(["--count", count]).count)


def raising(exc: Callable[[], BaseException]) -> Callable[[], Any]:
    def tool() -> Any:
        raise exc()

    return tool


def make_async(fn: Callable[..., Any]) -> Callable[..., Any]:
    async def tool(**kwargs: Any) -> Any:
        return fn(**kwargs)

    tool.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    return tool


class Unreadable(Exception):
    """An exception whose message cannot be read: its ``__str__`` raises."""

    def __str__(self) -> str:
        raise ValueError("no message")


class UnreadableToolError(sf.ToolError):
    def __str__(self) -> str:
        raise ValueError("no message")


UNREADABLE = "(its message could not be read: its __str__ failed)"

CASES = [
    pytest.param(parse_count, {"count": "many"}, "SystemExit: 2", id="SystemExit from argparse"),
    pytest.param(raising(lambda: Unreadable("x")), {}, f"Unreadable {UNREADABLE}", id="an unreadable message"),
    pytest.param(raising(GeneratorExit), {}, "GeneratorExit", id="GeneratorExit"),
    pytest.param(raising(lambda: Custom("no")), {}, "Custom: no", id="a BaseException of its own"),
    pytest.param(raising(KeyboardInterrupt), {}, "KeyboardInterrupt", id="KeyboardInterrupt, not in the main thread"),
]


@pytest.mark.parametrize("how", ["sync", "async"])
@pytest.mark.parametrize(("fn", "arguments", "message"), CASES)
def test_a_base_exception_a_tool_raises_is_an_error_result(
    how: str, fn: Callable[..., Any], arguments: dict[str, Any], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    tool = sf.Tool(fn if how == "sync" else make_async(fn), name="t")
    loop, adapter, _ = make_loop([calls(("c1", "t", arguments)), answer("recovered")], [tool])
    agent_run = loop.run("go")
    with caplog.at_level(logging.WARNING, logger="streamfsm.agent"):
        out = run_bounded(lambda: collect(agent_run))
    assert kinds(out) == ["tool_call", "tool_result", "text", "done"]
    assert out[1].is_error and out[1].result == {"error": True, "message": message}
    assert out[-1].reason == "stop" and agent_run.error is None
    sent = [m for m in adapter.requests[1].messages if isinstance(m, sf.ToolResultMessage)]
    assert sent[0].is_error and message in sent[0].content
    (record,) = [r for r in caplog.records if r.msg == "tool_error"]
    assert record.exc_info is not None and record.exc_info[1] is not None  # logged with its traceback


@pytest.mark.parametrize("how", ["sync", "async"])
def test_a_tool_error_whose_message_cannot_be_read_is_an_error_result(how: str) -> None:
    """It used to end the run with the ValueError its ``__str__`` raised: no result, no ``done``."""
    fn = raising(lambda: UnreadableToolError("x"))
    tool = sf.Tool(fn if how == "sync" else make_async(fn), name="t")
    loop, _, _ = make_loop([calls(("c1", "t", {})), answer("recovered")], [tool])
    agent_run = loop.run("go")
    out = run_bounded(lambda: collect(agent_run))
    assert kinds(out) == ["tool_call", "tool_result", "text", "done"]
    assert out[1].result == {"error": True, "message": f"UnreadableToolError {UNREADABLE}"}
    assert out[-1].reason == "stop" and agent_run.error is None


@pytest.mark.parametrize(
    ("how", "message"), [("sync", "StopIteration: x"), ("async", "coroutine raised StopIteration")]
)
def test_stop_iteration_is_answered_at_once_even_without_a_timeout(how: str, message: str) -> None:
    # A StopIteration cannot be set on a future: the call used to be never answered (with no timeout: a hang).
    fn = raising(lambda: StopIteration("x"))
    tool = sf.Tool(fn if how == "sync" else make_async(fn), name="t", timeout=float("inf"))
    loop, _, _ = make_loop([calls(("c1", "t", {})), answer("ok")], [tool], limits=sf.AgentLimits(tool_timeout=None))
    out = run_bounded(lambda: collect(loop.run("go")))
    assert kinds(out) == ["tool_call", "tool_result", "text", "done"]
    assert out[1].is_error and message in out[1].result["message"]


def test_a_keyboard_interrupt_in_the_main_thread_stops_the_run_and_goes_on_up() -> None:
    # In the main thread a KeyboardInterrupt cannot be told from the user's Ctrl-C: the run stops as an abort
    # does, its tools are cancelled, and the interrupt reaches the caller (a Ctrl-C must never become a result).
    cancelled: list[str] = []

    async def interrupting() -> None:
        await asyncio.sleep(0)
        raise KeyboardInterrupt

    async def other() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append("other")
            raise

    hooked: list[Any] = []
    loop, _, _ = make_loop(
        [calls(("c1", "interrupting", {}), ("c2", "other", {})), answer("never")],
        [interrupting, other],
        hooks=sf.Hooks(chunk=hooked.append),
    )
    agent_run = loop.run("go")
    assert threading.current_thread() is threading.main_thread()
    with pytest.raises(KeyboardInterrupt):
        run(collect(agent_run))
    assert agent_run.done is not None and agent_run.done.reason == "cancel"
    assert agent_run.error is not None and agent_run.error.code is E.ABORTED
    assert agent_run.error.message == "interrupted: KeyboardInterrupt in tool 'interrupting'"
    assert cancelled == ["other"]
    assert hooked[-1] is agent_run.done and list(sf.validate_flat(hooked)) == hooked
    assert [m.role for m in agent_run.messages] == ["user", "assistant", "tool", "tool"]


def test_a_ctrl_c_in_the_runs_own_code_is_an_abort_and_goes_on_up() -> None:
    def listener(chunk: Any) -> None:
        if isinstance(chunk, sf.TextChunk):
            raise KeyboardInterrupt  # as a Ctrl-C landing while the run's code (a hook) runs

    loop, adapter, _ = make_loop([answer("Hello", " world")], hooks=sf.Hooks(chunk=listener))
    agent_run = loop.run("go")
    with pytest.raises(KeyboardInterrupt):
        run(collect(agent_run))
    assert agent_run.done is not None and agent_run.done.reason == "cancel"
    assert agent_run.error is not None and agent_run.error.code is E.ABORTED
    assert adapter.closed == 1


# -- a tool that ignores its cancellation is left behind --------------------------------------------


class Stubborn:
    """An async tool that swallows every cancellation until it is released (from any thread)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.swallowed = 0
        self.finished = False
        self.on_start: Callable[[], Any] = lambda: None

    async def __call__(self) -> str:
        self.on_start()
        while not self.release.is_set():
            try:
                await asyncio.sleep(0.002)
            except asyncio.CancelledError:
                self.swallowed += 1
        self.finished = True
        return "late"


@pytest.mark.parametrize("how", ["tool timeout", "run timeout", "abort", "consumer cancelled"])
def test_a_tool_that_ignores_cancellation_is_abandoned_and_the_run_ends(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    stubborn = Stubborn()
    controller = sf.AbortController()
    left_running: list[bool] = []

    def on_chunk(chunk: Any) -> None:
        if isinstance(chunk, sf.DoneChunk):
            left_running.append(not stubborn.finished)

    started: list[bool] = []
    if how == "abort":
        stubborn.on_start = lambda: controller.abort("enough")
    else:
        stubborn.on_start = lambda: started.append(True)

    limits = {
        "tool timeout": sf.AgentLimits(tool_cancel_grace=0.05, tool_timeout=0.05),
        "run timeout": sf.AgentLimits(tool_cancel_grace=0.05, tool_timeout=None, run_timeout=0.3),
        "abort": sf.AgentLimits(tool_cancel_grace=0.05, tool_timeout=None),
        "consumer cancelled": sf.AgentLimits(tool_cancel_grace=0.05, tool_timeout=None),
    }[how]
    loop, _, _ = make_loop(
        [calls(("c1", "stubborn", {})), answer("went on")],
        [sf.Tool(stubborn, name="stubborn")],
        limits=limits,
        hooks=sf.Hooks(chunk=on_chunk),
    )
    agent_run = loop.run("go", signal=controller.signal)

    async def main() -> list[Any]:
        out: list[Any] = []
        if how == "consumer cancelled":

            async def consumer() -> None:
                async for chunk in agent_run:
                    out.append(chunk)

            task = asyncio.create_task(consumer())
            while not started:  # until the tool runs
                await asyncio.sleep(0.001)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        else:
            out = await collect(agent_run)
        # The run is over, the tool still runs: it was left behind. Let it end, then nothing is left.
        assert not stubborn.finished
        stubborn.release.set()
        rest = asyncio.all_tasks() - {asyncio.current_task()}
        if rest:
            await asyncio.wait(rest)
        await no_task_left()
        return out

    with caplog.at_level(logging.WARNING, logger="streamfsm.agent"):
        out = run_bounded(main, on_hang=stubborn.release.set)
    assert stubborn.swallowed >= 1 and left_running == [True]
    (record,) = [r for r in caplog.records if r.msg == "tool_abandoned"]
    assert (record.tool, record.tool_call_id) == ("stubborn", "c1")  # type: ignore[attr-defined]
    assert "did not stop within 0.05 s of its cancellation" in record.error  # type: ignore[attr-defined]
    assert agent_run.done is not None
    if how == "tool timeout":
        assert kinds(out) == ["tool_call", "tool_result", "text", "done"] and out[-1].reason == "stop"
        assert out[1].result["message"] == (
            "tool 'stubborn' timed out after 0.05 s, and did not stop when cancelled: it was left running"
        )
    else:
        assert agent_run.done.reason == "cancel"
        expected = {"run timeout": E.TIMEOUT, "abort": E.ABORTED, "consumer cancelled": E.ABORTED}[how]
        assert agent_run.error is not None and agent_run.error.code is expected
        if how != "consumer cancelled":
            assert kinds(out) == ["tool_call", "tool_result", "done"]
            assert out[1].result["message"].startswith("cancelled: ")


def test_a_tool_that_tidies_up_when_cancelled_is_waited_for_not_abandoned(caplog: pytest.LogCaptureFixture) -> None:
    tidied: list[bool] = []

    async def tidy() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.01)  # closes a connection, say
            tidied.append(True)
            raise

    loop, _, _ = make_loop([calls(("c1", "tidy", {})), answer("ok")], [sf.Tool(tidy, timeout=0.02)])

    async def main() -> list[Any]:
        out = await collect(loop.run("go"))
        await no_task_left()
        return out

    with caplog.at_level(logging.WARNING, logger="streamfsm.agent"):
        out = run(main())
    assert out[1].result["message"] == "tool 'tidy' timed out after 0.02 s" and tidied == [True]
    assert [r.msg for r in caplog.records] == ["tool_error"]


# -- sync tools run in threads of the run's own -----------------------------------------------------


def test_blocked_sync_tools_of_one_run_do_not_starve_another_run() -> None:
    release = threading.Event()
    daemons: list[bool] = []

    def blocked() -> str:
        daemons.append(threading.current_thread().daemon)
        release.wait(30)
        return "late"

    def quick() -> str:
        return "quick"

    default_pool = min(32, (os.cpu_count() or 1) + 4)  # the size of asyncio's default executor
    many = [(f"b{n}", "blocked", {}) for n in range(default_pool)]
    loop, _, _ = make_loop(
        [calls(*many), answer("gave up"), calls(("q1", "quick", {})), answer("ok")],
        [sf.Tool(blocked, timeout=0.05), sf.Tool(quick, timeout=5)],
        limits=sf.AgentLimits(tool_threads=default_pool, tool_cancel_grace=0.05),
    )
    try:
        first = run(collect(loop.run("block")))
        assert [r.result["message"] for r in results(first).values()] == [
            "tool 'blocked' timed out after 0.05 s, and did not stop when cancelled: it was left running"
        ] * default_pool
        second = run(collect(loop.run("then something quick")))  # every blocked thread is still blocked
        assert results(second)["q1"].result == "quick"
        assert daemons == [True] * default_pool  # a thread left behind does not keep the program from exiting
    finally:
        release.set()


def test_a_run_runs_at_most_tool_threads_sync_calls_at_once() -> None:
    lock = threading.Lock()
    active = [0, 0]  # now, most
    barrier = threading.Barrier(2, timeout=10)  # the calls meet in pairs: two do run at once

    def paired(n: int) -> int:
        with lock:
            active[0] += 1
            active[1] = max(active)
        barrier.wait()
        time.sleep(0.005)
        with lock:
            active[0] -= 1
        return n

    loop, _, _ = make_loop(
        [calls(*[(f"c{n}", "paired", {"n": n}) for n in range(6)]), answer("ok")],
        [paired],
        limits=sf.AgentLimits(tool_threads=2),
    )
    out = run(collect(loop.run("go")))
    assert {k: r.result for k, r in results(out).items()} == {f"c{n}": n for n in range(6)}
    assert active[1] == 2


def test_a_sync_call_that_timed_out_gives_its_thread_slot_back() -> None:
    release = threading.Event()

    def blocked() -> str:
        release.wait(30)
        return "late"

    def quick() -> str:
        return "quick"

    loop, _, _ = make_loop(
        [calls(("b1", "blocked", {})), calls(("q1", "quick", {})), answer("ok")],
        [sf.Tool(blocked, timeout=0.02), sf.Tool(quick, timeout=5)],
        limits=sf.AgentLimits(tool_threads=1, tool_cancel_grace=0.05),
    )
    try:
        out = run(collect(loop.run("go")))
    finally:
        release.set()
    assert results(out)["b1"].result["message"] == (
        "tool 'blocked' timed out after 0.02 s, and did not stop when cancelled: it was left running"
    )
    assert results(out)["q1"].result == "quick"


def test_tool_threads_and_the_grace_are_checked() -> None:
    with pytest.raises(ValueError):
        sf.AgentLimits(tool_threads=0)
    with pytest.raises(ValueError):
        sf.AgentLimits(tool_cancel_grace=0)
    assert (sf.AgentLimits().tool_threads, sf.AgentLimits().tool_cancel_grace) == (8, 1.0)


# -- arguments that cannot be sent back to the provider --------------------------------------------

LONE = r'{"text": "a\udc00b"}'


@pytest.mark.parametrize(
    ("raw", "escape", "at"),
    [
        pytest.param(LONE, r"\udc00", 11, id="a low surrogate alone"),
        pytest.param(r'{"text": "\uD800"}', r"\uD800", 10, id="a high surrogate alone, upper case"),
        pytest.param(r'{"text": "\ud800\ud800\udc00"}', r"\ud800", 10, id="a high surrogate before a pair"),
        pytest.param(r'{"t\udfff": 1}', r"\udfff", 3, id="in a key"),
        pytest.param(r'{"text": "\\\udc00"}', r"\udc00", 12, id="after an escaped backslash"),
    ],
)
def test_arguments_with_an_escaped_lone_surrogate_are_refused_and_the_conversation_stays_sendable(
    raw: str, escape: str, at: int
) -> None:
    ran: list[Any] = []

    def echo(arguments: dict[str, Any]) -> Any:
        ran.append(arguments)
        return arguments

    tool = sf.Tool(echo, name="echo", parameters={"type": "object"})
    loop, adapter, _ = make_loop([calls(("c1", "echo", raw)), answer("ok")], [tool])
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    assert ran == []
    assert out[1].is_error and out[1].result["message"] == (
        f"invalid arguments for tool 'echo': the escaped lone surrogate {escape} at character {at} is not "
        "Unicode text and cannot be sent back to the provider; call the tool again without it"
    )
    assert out[-1].reason == "stop"
    # The call is shown and kept with the escape escaped once more: the model sees the six characters.
    kept = agent_run.messages[1]
    assert isinstance(kept, sf.AssistantMessage)
    (call,) = kept.tool_calls
    assert out[0].arguments == call.arguments and "\\" + escape in call.arguments
    assert orjson.dumps(call.parsed_arguments)
    sendable(adapter.requests[1])


@pytest.mark.parametrize(
    ("raw", "got"),
    [
        pytest.param(r'{"text": "\ud83d\ude00"}', "\U0001f600", id="an escaped pair"),
        pytest.param(r'{"text": "\\udc00"}', "\\udc00", id="an escaped backslash, then udc00"),
        pytest.param(r'{"text": "\u005cudc00"}', "\\udc00", id="a backslash escaped as \\u005c, then udc00"),
    ],
)
def test_arguments_that_only_look_like_a_lone_surrogate_are_accepted(raw: str, got: str) -> None:
    def echo(text: str) -> str:
        return text

    loop, adapter, _ = make_loop([calls(("c1", "echo", raw)), answer("ok")], [echo])
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    assert not out[1].is_error and out[1].result == got
    assert out[0].arguments == raw  # kept as it came
    sendable(adapter.requests[1])


def test_a_result_holding_a_lone_surrogate_reaches_the_model_escaped() -> None:
    def listing() -> list[str]:
        return [os.fsdecode(b"caf\xe9.txt")]  # a file name that is not UTF-8: 'caf\udce9.txt'

    def name() -> str:
        return os.fsdecode(b"caf\xe9.txt")

    loop, adapter, _ = make_loop([calls(("c1", "listing", {}), ("c2", "name", {})), answer("ok")], [listing, name])
    agent_run = loop.run("go")
    run(collect(agent_run))
    sent = [m.content for m in adapter.requests[1].messages if isinstance(m, sf.ToolResultMessage)]
    assert sent == ['["caf\\udce9.txt"]', "caf\\udce9.txt"]
    sendable(adapter.requests[1])


# -- arguments that are not a JSON object are the model's mistake (issue 12, item 4) -----------------


@pytest.mark.parametrize("policy", [sf.Policy.STRICT, sf.Policy.HARNESS])
@pytest.mark.parametrize(
    ("raw", "why"),
    [
        pytest.param("not json", "they are not JSON", id="not JSON"),
        pytest.param("", "they are empty", id="empty"),
        pytest.param("[1, 2]", "they are a JSON array", id="an array"),
        pytest.param('"text"', "they are a JSON string", id="a string"),
        pytest.param("null", "they are JSON null", id="null"),
        pytest.param('{"a": 1', "they are not JSON", id="cut off"),
    ],
)
def test_arguments_that_are_not_a_json_object_get_an_error_result_and_the_model_tries_again(
    raw: str, why: str, policy: sf.Policy
) -> None:
    got: list[str] = []

    def note(text: str) -> str:
        got.append(text)
        return "noted"

    loop, adapter, _ = make_loop(
        [calls(("c1", "note", raw)), calls(("c2", "note", {"text": "again"})), answer("ok")], [note], policy=policy
    )
    agent_run = loop.run("go")
    out = run(collect(agent_run))
    assert kinds(out) == ["tool_call", "tool_result", "tool_call", "tool_result", "text", "done"]
    message = out[1].result["message"]
    assert out[1].is_error and message.startswith(
        f"invalid arguments for tool 'note': the arguments are not a JSON object: {why}"
    )
    assert message.endswith("call the tool again with a JSON object")
    assert got == ["again"] and out[-1].reason == "stop" and agent_run.error is None
    # The call is shown and kept with {} as its arguments (providers need an object there): the conversation
    # can go on with any adapter.
    assert out[0].arguments == "{}"
    first = agent_run.messages[1]
    assert isinstance(first, sf.AssistantMessage) and first.tool_calls[0].arguments == "{}"
    sendable(adapter.requests[2])


def test_an_eager_call_with_arguments_that_are_not_an_object_is_answered_too() -> None:
    loop, _, _ = make_loop(
        [Turn().call("c1", "note", "[]").end("tool-calls"), answer("ok")],
        [sf.Tool(lambda text: text, name="note")],
        eager_tools=True,
    )
    out = run(collect(loop.run("go")))
    assert wire(out)[1]["isError"] is True and "not a JSON object" in out[1].result["message"]


CTRL_C = """
import asyncio, os, signal, threading
import streamfsm as sf
from tests.agent_support import answer, calls, make_loop

def blocked() -> str:
    os.kill(os.getpid(), signal.SIGINT)  # the user presses Ctrl-C while this tool blocks
    threading.Event().wait(120)
    return "late"

hooked = []
loop, _, _ = make_loop([calls(("c1", "blocked", {})), answer("never")], [blocked],
                       limits=sf.AgentLimits(tool_cancel_grace=0.05), hooks=sf.Hooks(chunk=hooked.append))
agent_run = loop.run("go")

async def main() -> None:
    async for _ in agent_run:
        pass

try:
    asyncio.run(main())
except KeyboardInterrupt:
    print("KeyboardInterrupt", agent_run.done.reason, agent_run.error.code.value, [c.type for c in hooked])
"""


def test_a_real_ctrl_c_under_asyncio_run_ends_the_run_and_the_program() -> None:
    # asyncio.run turns the SIGINT into a cancellation of its main task: the run ends as a cancelled consumer's
    # does, asyncio.run raises KeyboardInterrupt, and the tool's thread, still blocked, does not keep the
    # program from exiting (the bound is generous: a program that waited for the thread would take 120 s).
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2]
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "KeyboardInterrupt cancel ABORTED ['tool_call', 'tool_result', 'done']"

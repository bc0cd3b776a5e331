"""Tool-call ids in the agent loop: calls are keyed by their position in the turn, and a call whose id is empty or
already used in the run gets one of the loop's own, ``call_<turn>_<index>``, used alike in the flat stream and in
the conversation sent back.

Under ``Policy.HARNESS`` a model's calls may come without an id or with one id twice in a turn (upstream's
translators emit ``""`` when a provider omits it). Each case checks the flat stream with ``validate_flat`` and
that every call of the next request's conversation is answered by its own result.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import streamfsm as sf
from streamfsm import ErrorCode

from ..agent_support import Fail, Turn, answer, collect, finish, make_loop, run, usage, wire

E = ErrorCode
HARNESS = sf.Policy.HARNESS


def note(text: str) -> str:
    """Upper-cases ``text``: each result says which call it answers."""
    return text.upper()


def two_calls(first: str, second: str, kind: str = "tool-calls") -> list[dict[str, Any]]:
    """A response with two calls of ``note`` (``t0``, ``t1``) whose ids are ``first`` and ``second``."""
    return Turn().call(first, "note", {"text": "t0"}).call(second, "note", {"text": "t1"}).end(kind)


def checked(out: list[Any]) -> list[dict[str, Any]]:
    """The flat stream as wire dicts, once more through ``validate_flat``."""
    chunks = wire(out)
    assert wire(sf.validate_flat(chunks)) == chunks  # raises at the first chunk that breaks a rule
    return chunks


def pairs(messages: list[sf.Message]) -> list[tuple[str, str, str]]:
    """``(id, arguments, result)`` of every call in a conversation, each checked to be answered by the tool results
    right after its turn, in call order, and its id used once."""
    out: list[tuple[str, str, str]] = []
    for n, message in enumerate(messages):
        if not isinstance(message, sf.AssistantMessage) or not message.tool_calls:
            continue
        results = []
        for later in messages[n + 1 :]:
            if not isinstance(later, sf.ToolResultMessage):
                break
            results.append(later)
        assert [r.tool_call_id for r in results] == [c.id for c in message.tool_calls]
        out += [(c.id, c.arguments, r.content) for c, r in zip(message.tool_calls, results, strict=True)]
    ids = [call_id for call_id, _, _ in out]
    assert len(set(ids)) == len(ids), ids
    return out


def kinds_of(chunks: list[dict[str, Any]]) -> list[str]:
    """The type of every wire chunk."""
    return [c["type"] for c in chunks]


def calls_and_results(chunks: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """The ids of the flat ``tool_call`` chunks, and each call's result by id."""
    ids = [c["id"] for c in chunks if c["type"] == "tool_call"]
    results = {c["toolCallId"]: c["result"] for c in chunks if c["type"] == "tool_result"}
    return ids, results


@pytest.mark.parametrize("eager", [False, True], ids=["", "eager"])
@pytest.mark.parametrize(
    ("given", "named"),
    [
        pytest.param(("", ""), ["call_1_0", "call_1_1"], id="no ids"),
        pytest.param(("a", "a"), ["a", "call_1_1"], id="one id twice"),
        pytest.param(("", "b"), ["call_1_0", "b"], id="one id missing"),
        pytest.param(("", "call_1_0"), ["call_1_0", "call_1_1"], id="the model's id is the loop's: replaced"),
        pytest.param(("call_1_1", ""), ["call_1_1", "call_1_1_2"], id="the loop's id is taken: a suffix"),
    ],
)
def test_every_call_of_a_turn_runs_and_is_answered_under_an_id_of_its_own(
    given: tuple[str, str], named: list[str], eager: bool
) -> None:
    loop, adapter, _ = make_loop([two_calls(*given), answer("ok")], [note], policy=HARNESS, eager_tools=eager)
    agent_run = loop.run("go")
    chunks = checked(run(collect(agent_run)))
    ids, results = calls_and_results(chunks)
    assert ids == named
    assert results == {named[0]: "T0", named[1]: "T1"}  # both ran, each answered under its own id
    assert chunks[-1]["reason"] == "stop"
    # The next request pairs each call with its own result.
    sent = pairs(list(adapter.requests[1].messages))
    assert sent == [(named[0], '{"text": "t0"}', "T0"), (named[1], '{"text": "t1"}', "T1")]
    assert pairs(agent_run.messages) == sent


def test_an_id_used_earlier_in_the_run_or_in_its_input_is_replaced() -> None:
    history: list[Any] = [
        sf.UserMessage(content="before"),
        sf.AssistantMessage(blocks=(sf.ToolCallBlock(id=sf.CallId("a"), name="note", arguments='{"text": "x"}'),)),
        sf.ToolResultMessage(tool_call_id="a", content="X"),
        sf.UserMessage(content="now"),
    ]
    # A STRICT stream cannot repeat an id within a turn, but a model may repeat one from an earlier turn.
    loop, adapter, _ = make_loop(
        [
            Turn().call("a", "note", {"text": "t0"}).end("tool-calls"),
            Turn().call("b", "note", {"text": "t1"}).end("tool-calls"),
            Turn().call("b", "note", {"text": "t2"}).end("tool-calls"),
            answer("ok"),
        ],
        [note],
    )
    agent_run = loop.run(history)
    chunks = checked(run(collect(agent_run)))
    ids, results = calls_and_results(chunks)
    assert ids == ["call_1_0", "b", "call_3_0"]
    assert results == {"call_1_0": "T0", "b": "T1", "call_3_0": "T2"}
    assert pairs(list(adapter.requests[-1].messages)) == [
        ("a", '{"text": "x"}', "X"),
        ("call_1_0", '{"text": "t0"}', "T0"),
        ("b", '{"text": "t1"}', "T1"),
        ("call_3_0", '{"text": "t2"}', "T2"),
    ]


def test_interleaved_calls_are_answered_in_call_order_under_the_ids_they_were_shown_with() -> None:
    # Block 1 ends before block 0: the flat stream shows it first (index 0), the conversation keeps block order.
    def delta(index: int, text: str) -> dict[str, Any]:
        return {"type": "tool-call-delta", "index": index, "id": "", "name": "note", "argumentsDelta": text}

    def end(index: int, text: str) -> dict[str, Any]:
        block = {"type": "tool-call", "id": "", "name": "note", "arguments": text}
        return {"type": "block-end", "index": index, "block": block}

    b0, b1 = '{"text": "b0"}', '{"text": "b1"}'
    response = [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        delta(0, b0),
        delta(1, b1),
        end(1, b1),
        end(0, b0),
        usage(),
        finish("tool-calls"),
    ]
    loop, adapter, _ = make_loop([response, answer("ok")], [note], policy=HARNESS)
    chunks = checked(run(collect(loop.run("go"))))
    shown = [(c["id"], c["arguments"], c["index"]) for c in chunks if c["type"] == "tool_call"]
    assert shown == [("call_1_0", b1, 0), ("call_1_1", b0, 1)]
    assert calls_and_results(chunks)[1] == {"call_1_0": "B1", "call_1_1": "B0"}
    assert pairs(list(adapter.requests[1].messages)) == [("call_1_1", b0, "B0"), ("call_1_0", b1, "B1")]


def test_a_retried_attempt_names_its_calls_afresh() -> None:
    # The failed attempt's calls are void: the retry's calls may take their ids again.
    broken = Turn().call("", "note", {"text": "t0"}).chunks
    loop, adapter, _ = make_loop(
        [Fail(sf.LlmError("overloaded", E.SERVER), after=broken), two_calls("", ""), answer("ok")],
        [note],
        policy=HARNESS,
        retry=sf.RetryPolicy(seed=0),
    )
    chunks = checked(run(collect(loop.run("go"))))
    assert kinds_of(chunks) == [
        *("tool_call", "error"),
        *("tool_call", "tool_call", "tool_result", "tool_result"),
        *("text", "done"),
    ]
    assert calls_and_results(chunks)[0] == ["call_1_0", "call_1_0", "call_1_1"]
    assert [call_id for call_id, _, _ in pairs(list(adapter.requests[2].messages))] == ["call_1_0", "call_1_1"]


def test_calls_not_run_are_answered_each_under_its_own_id() -> None:
    loop, _, _ = make_loop([two_calls("", "", kind="stop")], [note], policy=HARNESS)
    agent_run = loop.run("go")
    chunks = checked(run(collect(agent_run)))
    results = [c for c in chunks if c["type"] == "tool_result"]
    assert [(r["toolCallId"], r["isError"]) for r in results] == [("call_1_0", True), ("call_1_1", True)]
    assert all("not run" in r["result"]["message"] for r in results)
    assert [call_id for call_id, _, _ in pairs(agent_run.messages)] == ["call_1_0", "call_1_1"]


def test_calls_cut_off_by_an_abort_are_answered_each_under_its_own_id() -> None:
    controller = sf.AbortController()
    started: list[str] = []

    async def wait(text: str) -> None:
        started.append(text)
        if len(started) == 2:
            controller.abort("enough")
        await asyncio.Event().wait()

    response = Turn().call("x", "wait", {"text": "t0"}).call("x", "wait", {"text": "t1"}).end("tool-calls")
    loop, _, _ = make_loop([response], [wait], policy=HARNESS)
    agent_run = loop.run("go", signal=controller.signal)
    chunks = checked(run(collect(agent_run)))
    assert kinds_of(chunks) == ["tool_call", "tool_call", "tool_result", "tool_result", "done"]
    results = [c for c in chunks if c["type"] == "tool_result"]
    assert [r["toolCallId"] for r in results] == ["x", "call_1_1"]
    assert all(r["result"]["message"] == "cancelled: aborted: enough" for r in results)
    assert chunks[-1]["reason"] == "cancel"
    assert [(c, json.loads(a)["text"]) for c, a, _ in pairs(agent_run.messages)] == [("x", "t0"), ("call_1_1", "t1")]

"""A Responses ``computer_call`` the provider flagged (``pending_safety_checks``) runs only once the application
acknowledges its checks: through :class:`AgentLoop` against a real server on 127.0.0.1 (tests/sse_server.py).
Without a hook, or on any answer but ``True``, the call is refused, the model is told, and the run goes on; an
acknowledged call's ``computer_call_output`` echoes its own checks, and only those."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

import streamfsm as sf

from ..agent_support import collect
from ..sse_server import SSEServer
from .test_responses_client_tools import COMPUTER, answer, assemble, response, sse

CHECKS = [
    {"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page asks to ignore prior instructions."},
    {"id": "cu_sc_2", "code": "sensitive_domain", "message": "You are on a banking site."},
]
FLAGGED = {**COMPUTER, "id": "cu_2", "call_id": "call_flagged", "pending_safety_checks": CHECKS}
SCREENSHOT = "data:image/png;base64,aGk="


def run(server: SSEServer, *items: dict[str, Any], **loop: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """One run over a first response of ``items`` and a final answer: its chunks and what the tool received."""
    server.script(sse(response("resp_1", *items)), sse(answer("resp_2", "Done.")))
    received: list[dict[str, Any]] = []

    def computer(arguments: dict[str, Any]) -> str:
        received.append(arguments)
        return SCREENSHOT

    tool = sf.Tool(computer, name="computer", description="computer", parameters={"type": "object"})
    adapter = sf.OpenAIResponsesAdapter(server.url, api_key="sk-test")
    out = asyncio.run(collect(sf.AgentLoop(adapter, [tool], model="computer-use-preview", **loop).run("go")))
    return out, received


def sent_back(server: SSEServer) -> list[dict[str, Any]]:
    """The items the second request sent after the user's message."""
    return list(server.requests[1].json()["input"][1:])


def test_the_checks_are_in_the_tool_call_and_in_the_arguments() -> None:
    (call,) = assemble(response("resp_1", FLAGGED)).tool_calls
    assert call.parsed_arguments == {**FLAGGED["action"], "pending_safety_checks": CHECKS}
    unflagged = assemble(response("resp_1", COMPUTER)).tool_calls[0]
    assert unflagged.parsed_arguments == COMPUTER["action"]  # no checks: the action alone


def test_a_flagged_call_is_refused_by_default_and_the_run_goes_on(server: SSEServer) -> None:
    out, received = run(server, FLAGGED)
    assert received == []  # never run
    call = next(c for c in out if c.type == "tool_call")
    assert [c.to_wire() for c in call.safety_checks] == CHECKS
    assert call.to_wire()["safetyChecks"] == CHECKS
    result = next(c for c in out if c.type == "tool_result")
    assert result.is_error and "malicious_instructions (cu_sc_1)" in result.result["message"]
    assert "did not acknowledge" in result.result["message"]
    assert out[-1].type == "done" and out[-1].reason == "stop"
    replayed, output, note = sent_back(server)
    assert replayed == FLAGGED  # the call as it came
    assert output == {
        "type": "computer_call_output",
        "call_id": "call_flagged",
        "output": {"type": "computer_screenshot"},
    }  # no acknowledged_safety_checks, no image
    assert note["role"] == "user" and "sensitive_domain (cu_sc_2)" in note["content"][0]["text"]


@pytest.mark.parametrize(
    "hook",
    [lambda call, checks: False, lambda call, checks: "yes", lambda call, checks: 1 / 0],
    ids=["False", "truthy, not True", "raises"],
)
def test_any_answer_but_true_refuses(server: SSEServer, hook: Any) -> None:
    out, received = run(server, FLAGGED, acknowledge_safety_checks=hook)
    assert received == []
    assert next(c for c in out if c.type == "tool_result").is_error
    assert "acknowledged_safety_checks" not in sent_back(server)[1]
    assert out[-1].reason == "stop"


def test_an_acknowledged_call_runs_and_echoes_only_its_checks(server: SSEServer) -> None:
    asked: list[tuple[str, tuple[sf.SafetyCheck, ...]]] = []

    async def acknowledge(call: sf.ToolCallBlock, checks: tuple[sf.SafetyCheck, ...]) -> bool:
        asked.append((call.id, checks))
        return True

    out, received = run(server, COMPUTER, FLAGGED, acknowledge_safety_checks=acknowledge)
    assert [(call_id, [c.to_wire() for c in checks]) for call_id, checks in asked] == [("call_flagged", CHECKS)]
    assert received == [COMPUTER["action"], {**FLAGGED["action"], "pending_safety_checks": CHECKS}]
    plain, flagged = (c for c in out if c.type == "tool_call")
    assert plain.safety_checks == () and "safetyChecks" not in plain.to_wire()
    assert [c.id for c in flagged.safety_checks] == ["cu_sc_1", "cu_sc_2"]
    assert not any(c.is_error for c in out if c.type == "tool_result")
    assert sent_back(server)[2:] == [
        {"type": "computer_call_output", "call_id": "call_cu", "output": {"type": "computer_screenshot",
                                                                          "image_url": SCREENSHOT}},
        {
            "type": "computer_call_output",
            "call_id": "call_flagged",
            "output": {"type": "computer_screenshot", "image_url": SCREENSHOT},
            "acknowledged_safety_checks": CHECKS,
        },
    ]  # fmt: skip


@pytest.mark.parametrize(
    "checks", [{"id": "x"}, [{"code": "malicious_instructions"}], ["cu_sc_1"], [{"id": "a", "code": 3}]]
)
def test_checks_that_cannot_be_read_are_a_malformed_response(checks: Any) -> None:
    with pytest.raises(sf.LlmError) as caught:
        assemble(response("resp_1", {**FLAGGED, "pending_safety_checks": checks}))
    assert caught.value.code == sf.ErrorCode.MALFORMED_RESPONSE


def test_a_flat_tool_call_with_checks_reads_back() -> None:
    wire = {"type": "tool_call", "id": "c", "name": "computer", "arguments": "{}", "index": 0, "safetyChecks": CHECKS}
    assert sf.parse_flat(wire).to_wire() == wire
    assert sf.parse_flat(orjson.loads(orjson.dumps(wire))).safety_checks[1].code == "sensitive_domain"

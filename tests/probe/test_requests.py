"""What the probe sends, per wire API: the adapter's own request, the case's tool choice in the API's form, and the
same request non-streamed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import streamfsm as sf
from streamfsm._probe_wire import WIRES, request_body

FORCED = next(case for case in sf.PROBE_CASES if case.name == "tool-forced")
PARALLEL = next(case for case in sf.PROBE_CASES if case.name == "tools-parallel")


def bodies(api: str, case: sf.ProbeCase) -> tuple[dict[str, Any], dict[str, Any], tuple[str, str]]:
    wire = WIRES[api]
    adapter = wire.adapter("http://127.0.0.1:9/v1", None, httpx.AsyncClient(), None)
    streamed = request_body(wire, adapter, case, "m")
    return streamed, wire.non_streamed(dict(streamed)), wire.paths(adapter, "m")


@pytest.mark.parametrize(
    ("api", "forced", "required"),
    [
        ("openai-chat", {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}}, "required"),
        ("anthropic", {"tool_choice": {"type": "tool", "name": "get_weather"}}, {"type": "any"}),
        ("openai-responses", {"tool_choice": {"type": "function", "name": "get_weather"}}, "required"),
        (
            "gemini",
            {"toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}},
            {"functionCallingConfig": {"mode": "ANY"}},
        ),
    ],
)
def test_the_tool_choice_in_each_apis_form(api: str, forced: dict[str, Any], required: Any) -> None:
    streamed, _, _ = bodies(api, FORCED)
    assert {key: streamed[key] for key in forced} == forced
    streamed, _, _ = bodies(api, PARALLEL)
    assert streamed["toolConfig" if api == "gemini" else "tool_choice"] == required
    assert streamed.get("temperature", streamed.get("generationConfig", {}).get("temperature")) == 0


@pytest.mark.parametrize("api", list(WIRES))
def test_the_non_streamed_request_is_the_streamed_one_without_streaming(api: str) -> None:
    streamed, non_streamed, (path, answer_path) = bodies(api, FORCED)
    if api == "gemini":
        assert non_streamed == streamed
        assert (path, answer_path) == (
            "/v1beta/models/m:streamGenerateContent?alt=sse",
            "/v1beta/models/m:generateContent",
        )
        return
    assert streamed["stream"] is True and non_streamed["stream"] is False
    assert {k: v for k, v in non_streamed.items() if k != "stream"} == {
        k: v for k, v in streamed.items() if k not in ("stream", "stream_options")
    }
    assert path == answer_path

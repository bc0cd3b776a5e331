"""The probe against a real third-party server: LiteLLM's proxy, its models answering from ``mock_response``.

What LiteLLM serves right passes, with no false alarm; what it serves wrong is reported as it is. With LiteLLM
1.108.7 and mock models (each read in LiteLLM's source, ``litellm/main.py`` ``mock_completion``):

- chat completions stream text right, and the same text non-streamed; but the non-streamed ``usage`` is a constant
  (``prompt_tokens`` 10, completion 20) where the stream counts the prompt: the ``usage`` case diverges on
  ``usage.input_tokens``;
- ``mock_tool_calls`` are answered non-streamed only: the stream has the text and no tool call
  (``mock_completion`` builds the stream from ``mock_response`` alone), so every case diverges on ``tool_calls``;
- Gemini's ``streamGenerateContent`` streams the text right, with the same usage as the chat stream (the same
  constant non-streamed, the same ``usage`` divergence);
- a streamed request to ``/v1/messages`` is answered with one JSON message, not an event stream, and a streamed
  request to ``/v1/responses`` with HTTP 500 and an error event: neither can be probed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

import streamfsm as sf

from .litellm_proxy import MASTER_KEY, start

pytestmark = pytest.mark.litellm


@pytest.fixture(scope="module")
def litellm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with start(tmp_path_factory.mktemp("litellm")) as url:
        yield url


def probe(url: str, model: str, api: str = "openai-chat", **options: object) -> sf.ProbeReport:
    return asyncio.run(sf.probe(url, model, api=api, api_key=MASTER_KEY, deadline=60.0, **options))  # type: ignore[arg-type]


def test_chat_completions_with_a_text_mock(litellm: str, tmp_path: Path) -> None:
    report = probe(f"{litellm}/v1", "mock-text", record=tmp_path)
    verdicts = report.verdicts()
    assert verdicts == {
        **{case.name: "pass" for case in sf.PROBE_CASES},
        "usage": "diverges",
        "reasoning": "skipped",
    }
    usage = next(run for run in report.runs if run.case == "usage")
    (difference,) = usage.differences
    assert difference.field == "usage.input_tokens" and difference.non_streamed == 10  # LiteLLM's mock constant
    assert difference.streamed != 10
    assert (tmp_path / "text.sse").read_bytes().rstrip().endswith(b"data: [DONE]")


def test_chat_completions_drop_the_mock_tool_calls_when_streaming(litellm: str) -> None:
    cases = [case for case in sf.PROBE_CASES if case.name in ("text", "tool-forced")]
    report = probe(f"{litellm}/v1", "mock-tool", cases=cases)
    assert report.verdicts() == {"text": "diverges", "tool-forced": "diverges"}
    for run in report.runs:
        assert run.content == "same"  # the text is the same both ways
        assert [(d.field, d.streamed, d.non_streamed) for d in run.differences] == [("tool_calls", [], ["get_weather"])]


def test_gemini_with_a_text_mock(litellm: str) -> None:
    report = probe(litellm, "mock-text", "gemini")
    assert report.verdicts() == {
        **{case.name: "pass" for case in sf.PROBE_CASES},
        "usage": "diverges",
        "reasoning": "skipped",
    }
    usage = next(run for run in report.runs if run.case == "usage")
    assert [(d.field, d.non_streamed) for d in usage.differences] == [("usage.input_tokens", 10)]


@pytest.mark.parametrize(
    ("api", "says"),
    [
        ("anthropic", "the response is not an event stream: Content-Type 'application/json'"),
        ("openai-responses", "HTTP 500"),
    ],
)
def test_the_apis_that_do_not_stream_mocks_cannot_be_probed(litellm: str, api: str, says: str) -> None:
    url = f"{litellm}/v1" if api == "openai-responses" else litellm
    with pytest.raises(sf.LlmError) as caught:
        probe(url, "mock-text", api)
    assert f"cannot be probed as {api} with model 'mock-text'" in caught.value.message
    assert says in caught.value.message

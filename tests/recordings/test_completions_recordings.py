"""A recorded legacy completions stream (``/v1/completions``) read as what it is: its text, with its finish and usage.

Read as chat chunks, a ``text_completion`` body has no delta, and would pass under STRICT as ``ok; 0 blocks`` with
its text dropped. The bodies here are llama.cpp's ``llama-server``, vLLM's and OpenAI's, written from their
documented formats (``tests/providers/test_openai_completions.py`` says where each comes from).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import streamfsm as sf

from ..cli_support import jsonl, reports, run
from ..data import INFERENCE_SERVERS
from ..providers.test_openai_completions import PIECES, SERVERS, TEXT, chat_chunk
from ..sse_server import openai_body


@pytest.fixture(params=sorted(SERVERS))
def server_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("form", ["sse", "jsonl"])
def test_a_completions_recording_is_read_as_its_text(tmp_path: Path, server_name: str, form: str) -> None:
    chunks = SERVERS[server_name](PIECES)
    path = tmp_path / f"completions.{form}"
    path.write_bytes(openai_body(chunks) if form == "sse" else jsonl(chunks))
    assert sf.detect_format(path) == "openai-sse"
    (stream,) = sf.read_recordings(path)
    result = sf.assemble(stream)
    assert result == sf.assemble(sf.from_openai_chunks(chunks))
    assert result.to_wire()["blocks"] == [{"type": "text", "text": TEXT}]


def test_the_recordings_are_what_the_builders_write() -> None:
    for name, server_name in [("llama-server-completions.sse", "llama-server"), ("vllm-completions.sse", "vllm")]:
        assert (INFERENCE_SERVERS / name).read_bytes() == openai_body(SERVERS[server_name](PIECES)), name


@pytest.mark.parametrize(
    ("name", "finish"), [("llama-server-completions.sse", "max-tokens"), ("vllm-completions.sse", "stop")]
)
def test_check_and_assemble_say_what_the_body_holds(capsys: pytest.CaptureFixture[str], name: str, finish: str) -> None:
    """A completions body of 11 tokens for a prompt of 6, cut by max_tokens (llama-server) or stopped (vLLM): its
    text is one block, never passed empty."""
    path = INFERENCE_SERVERS / name
    status, out, _ = run(capsys, "check", "-v", str(path))
    assert status == 0
    assert out.startswith(f"{path}: ok; 1 block (text); no tool calls; usage 6 in / 11 out; finish {finish}\n")
    status, out, _ = run(capsys, "check", "--json", str(path))
    (report,) = reports(out)
    assert (report["ok"], report["format"], report["blocks"]) == (True, "openai-sse", ["text"])
    status, out, err = run(capsys, "assemble", "--compact", str(path))
    assert (status, err) == (0, "")
    assert orjson.loads(out)["blocks"] == [{"type": "text", "text": TEXT}]


def test_a_body_that_mixes_the_two_apis_is_malformed_at_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    chunks = [chat_chunk(role="assistant", content="Hello"), *SERVERS["openai"](PIECES)]
    path = tmp_path / "mixed.sse"
    path.write_bytes(openai_body(chunks))
    status, out, _ = run(capsys, "check", "--json", str(path))
    (report,) = reports(out)
    assert (status, report["code"], report["line"]) == (1, "MALFORMED_RESPONSE", 3)
    assert "a text_completion chunk in a stream of chat.completion.chunk chunks" in report["message"]

"""``streamfsm assemble`` shows what a cut-off finish left open, as ``check`` does.

It prints ``StreamResult.to_wire(interrupted=True)``: the blocks, usage and finish, and ``interrupted``, the blocks
left open as far as they came (``[]`` when none were). The body is llama.cpp's ``llama-server`` chat stream
(``tools/server/server-task.cpp``: a role delta, a tool call's name then its arguments in pieces, ``finish_reason``
``length`` when ``max_tokens`` ran out, the usage chunk of ``include_usage``), cut by ``max_tokens`` inside a call's
arguments (``tests/fixtures/inference-servers/llama-server-cut-call.sse``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf

from ..cli_support import reports, run
from ..data import INFERENCE_SERVERS
from ..sse_server import openai_body

CALL_ID = "Kf3pXq0Lm9Zt2Wv8Rb6Yc1Nd5Hs7Ga4E"  # llama-server's ids are 32 random letters and digits
ARGUMENTS = ['{"', "location", '":', ' "', "Par"]


def cut_call_body(arguments: list[str], reason: str = "length") -> bytes:
    base = {"created": 1764892800, "id": "chatcmpl-Qm2v9", "model": "tiny", "object": "chat.completion.chunk"}

    def delta(fields: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"finish_reason": finish, "index": 0, "delta": fields}], **base}

    def call(**fields: Any) -> dict[str, Any]:
        return delta({"tool_calls": [{"index": 0, **fields}]})

    chunks = [
        delta({"role": "assistant", "content": None}),
        call(id=CALL_ID, type="function", function={"name": "get_weather", "arguments": ""}),
        *(call(function={"arguments": piece}) for piece in arguments),
        delta({}, reason),
        {"choices": [], **base, "usage": {"completion_tokens": 16, "prompt_tokens": 40, "total_tokens": 56}},
    ]
    return openai_body(chunks)


CUT_CALL = INFERENCE_SERVERS / "llama-server-cut-call.sse"


def test_the_recording_is_what_the_builder_writes() -> None:
    assert CUT_CALL.read_bytes() == cut_call_body(ARGUMENTS)


def test_assemble_prints_the_call_max_tokens_cut(capsys: pytest.CaptureFixture[str]) -> None:
    path = CUT_CALL
    status, out, _ = run(capsys, "check", "--json", str(path))
    (report,) = reports(out)
    assert (status, report["finish"], report["interrupted"]) == (0, {"kind": "max-tokens"}, ["tool-call"])

    status, out, err = run(capsys, "assemble", str(path))
    assert (status, err) == (0, "")
    printed = orjson.loads(out)
    cut = {"type": "tool-call", "id": CALL_ID, "name": "get_weather", "arguments": "".join(ARGUMENTS)}
    assert printed == {
        "blocks": [],
        "usage": {"inputTokens": 40, "outputTokens": 16},
        "finish": {"kind": "max-tokens"},
        "interrupted": [cut],
    }
    (stream,) = sf.read_recordings(path)
    result = sf.assemble(stream)
    assert printed == result.to_wire(interrupted=True)
    # what it prints reads back as the result (the replay state, which names the response, is not printed)
    assert sf.StreamResult.model_validate(printed) == result.model_copy(update={"replay_state": None})


def test_a_stream_with_nothing_cut_prints_an_empty_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "whole-call.sse"
    path.write_bytes(cut_call_body([*ARGUMENTS[:-1], 'Paris"}'], "tool_calls"))
    status, out, _ = run(capsys, "assemble", "--compact", str(path))
    printed = orjson.loads(out)
    assert (status, printed["finish"], printed["interrupted"]) == (0, {"kind": "tool-calls"}, [])
    assert [block["name"] for block in printed["blocks"]] == ["get_weather"]


def test_to_wire_is_unchanged_unless_asked() -> None:
    result = sf.assemble(sf.from_openai_chunks(_events(cut_call_body(ARGUMENTS))))
    assert list(result.to_wire()) == ["blocks", "usage", "finish"]
    assert list(result.to_wire(interrupted=True)) == ["blocks", "usage", "finish", "interrupted"]


def _events(body: bytes) -> list[dict[str, Any]]:
    lines = (line.removeprefix(b"data: ") for line in body.splitlines() if line.startswith(b"data: {"))
    return [orjson.loads(line) for line in lines]

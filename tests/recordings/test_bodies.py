"""A recording that is a non-streamed answer (one response body, pretty-printed or on one line) read by the one reader
and the command: told apart from a stream by ``auto``, read by ``--format <api>``, assembled to what the wire API's
body reader gives, checked as the one turn it is; and what is not a body left to the stream readers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf

from ..cli_support import run
from ..data import BODIES, MORE_PROVIDER_STREAMS

#: Each folder of bodies: its format name, and the wire API's body reader.
FORMATS = {
    "openai-chat": ("openai-sse", sf.from_openai_completion),
    "anthropic-messages": ("anthropic-sse", sf.from_anthropic_message),
    "openai-responses": ("openai-responses", sf.from_openai_response),
    "gemini": ("gemini", sf.from_gemini_response),
    "bedrock": ("bedrock", sf.from_bedrock_response),
    "cohere": ("cohere", sf.from_cohere_response),
}
FILES = [(api, path) for api in FORMATS for path in sorted((BODIES / api).glob("*.json"))]


def one_line(path: Path, tmp_path: Path) -> Path:
    compact = tmp_path / path.name
    compact.write_bytes(orjson.dumps(orjson.loads(path.read_bytes())) + b"\n")
    return compact


@pytest.mark.parametrize(("api", "path"), FILES, ids=lambda v: getattr(v, "name", v))
@pytest.mark.parametrize("shape", ["pretty", "one-line"])
def test_a_body_is_told_and_read_as_its_reader_reads_it(
    api: str, path: Path, shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fmt, reader = FORMATS[api]
    source = path if shape == "pretty" else one_line(path, tmp_path)
    expected = reader(orjson.loads(path.read_bytes())).to_wire()
    assert sf.detect_format(source) == fmt
    for given in ("auto", fmt):
        (stream,) = sf.read_recordings(source, given)
        assert stream.failure is None and stream.format == fmt and not stream.more
        assert sf.assemble(stream.chunks).to_wire() == expected
        status, out, err = run(capsys, "assemble", "--format", given, str(source))
        assert status == 0, err
        printed = orjson.loads(out)  # what assemble prints of a result (it may say more, as its interrupted blocks)
        assert {key: printed[key] for key in expected} == expected
    status, out, _ = run(capsys, "check", "--json", str(source))
    first = orjson.loads(out.splitlines()[0])
    assert status == 0 and first["ok"] and first["format"] == fmt


def test_a_body_is_checked_as_the_one_turn_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "object": "chat.completion",\n  "choices": []\n}\n')
    status, out, _ = run(capsys, "check", "--json", str(broken))
    report = orjson.loads(out.splitlines()[0])
    assert status == 1
    assert report["code"] == "MALFORMED_RESPONSE" and report["line"] == 1
    assert "non-empty 'choices' list" in report["message"]
    status, _, err = run(capsys, "assemble", str(broken))
    assert status == 1 and "MALFORMED_RESPONSE" in err


def test_a_body_read_as_another_api_is_malformed(capsys: pytest.CaptureFixture[str]) -> None:
    path = BODIES / "openai-chat" / "deepseek-text.json"
    status, _, err = run(capsys, "assemble", "--format", "anthropic-sse", str(path))
    assert status == 1 and "MALFORMED_RESPONSE" in err and "'content' list" in err


def test_an_error_body_is_the_streams_error(tmp_path: Path) -> None:
    error = tmp_path / "error.json"
    error.write_text('{\n  "error": {"message": "Rate limit reached", "type": "rate_limit_error"}\n}\n')
    (stream,) = sf.read_recordings(error, "openai-sse")
    assert stream.failure is not None and stream.failure.code == sf.ErrorCode.RATE_LIMIT


def test_json_lines_of_bodies_are_one_stream_a_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON lines whose first line is a body hold one body a line (answers logged one after another): one stream
    each, the turns of the recording; a line that is no body fails its own stream."""
    text = orjson.loads((BODIES / "openai-chat" / "deepseek-text.json").read_bytes())
    call = orjson.loads((BODIES / "openai-chat" / "deepseek-tool-call.json").read_bytes())
    path = tmp_path / "answers.jsonl"
    path.write_bytes(orjson.dumps(text) + b"\n\n" + orjson.dumps(call) + b"\nnot json\n")
    streams = list(sf.read_recordings(path))
    assert [s.format for s in streams] == ["openai-sse"] * 3
    assert [s.more for s in streams] == [True, True, False]
    assert sf.assemble(streams[0].chunks) == sf.from_openai_completion(text)
    assert sf.assemble(streams[1].chunks) == sf.from_openai_completion(call)
    failure = streams[2].failure
    assert failure is not None and failure.code == sf.ErrorCode.MALFORMED_RESPONSE and streams[2].failure_line == 4
    status, out, _ = run(capsys, "check", "--json", str(path))
    reports = [orjson.loads(line) for line in out.splitlines()]
    assert status == 1 and [r.get("ok") for r in reports[:3]] == [True, True, False]
    assert reports[2]["line"] == 4


def test_a_stream_stays_a_stream(tmp_path: Path) -> None:
    """A stream's events are never taken for a body, Gemini's chunks included (each has its body's shape: JSON lines
    of them are its stream); a pretty-printed object that is no wire API's body is JSON lines, refused by the
    machine at its first line."""
    gemini = MORE_PROVIDER_STREAMS / "gemini" / "google-text.jsonl"
    (stream,) = sf.read_recordings(gemini)
    assert stream.failure is None and sf.assemble(stream.chunks).text
    legacy = tmp_path / "completion.jsonl"  # a legacy completions stream: its chunks carry text as its body does
    chunk = {
        "id": "cmpl-7",
        "object": "text_completion",
        "choices": [{"index": 0, "text": "Once", "finish_reason": None}],
    }
    legacy.write_bytes(orjson.dumps(chunk) + b"\n" + orjson.dumps(chunk) + b"\n")
    assert len(list(sf.read_recordings(legacy, "openai-sse"))) == 1
    other = tmp_path / "other.json"
    other.write_text('{\n  "hello": 1\n}\n')
    assert sf.detect_format(other) == "jsonl"
    (stream,) = sf.read_recordings(other)
    with pytest.raises(sf.LlmError) as caught:
        sf.assemble(stream.chunks)
    assert caught.value.code == sf.ErrorCode.INVALID_CHUNK


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def test_a_streams_sse_body_is_not_a_body(tmp_path: Path) -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "hi"}}]}
    end = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }
    path = tmp_path / "stream.sse"
    path.write_bytes(sse([chunk, end]))
    (stream,) = sf.read_recordings(path)
    assert sf.assemble(stream.chunks).text == "hi"

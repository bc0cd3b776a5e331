"""A reader's failure travels with the stream it failed: the library and the command give one code for one fault.

A recorded stream the reader (or its converter) failed holds the chunks that came and, in ``stream.failure``, why it
stopped. Iterating the stream gives the chunks, then raises the failure: ``sf.assemble(stream)`` and
``sf.validate(stream)`` report what ``streamfsm check`` reports (a body cut before its end marker is
``STREAM_CLOSED``, not the machine's ``STREAM_TRUNCATED``), and ``stream.where(err)`` places it where ``check``
does. The bodies are as the servers send them (llama-server's chat stream, vLLM's completions stream, Anthropic's
Messages stream of tests/fixtures), cut or failed as a dropped connection or a failing server leaves them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import streamfsm as sf

from ..cli_support import reports, run
from ..data import PROVIDER_STREAMS, SESSIONS
from ..providers.test_openai_completions import PIECES, llama_server_stream, vllm_stream
from ..sse_server import openai_body

ANTHROPIC = PROVIDER_STREAMS / "anthropic-messages" / "basic_response.sse"


def llama_server_chat(*, finish: bool) -> list[dict[str, Any]]:
    """llama-server's chat stream (``to_json_oaicompat_chat_stream``): a role delta, content deltas, the finish
    chunk and, with ``include_usage``, a chunk of usage with ``choices: []``."""
    base = {"created": 1764892800, "id": "chatcmpl-Qm2v9", "model": "tiny", "object": "chat.completion.chunk"}

    def delta(fields: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {"choices": [{"finish_reason": reason, "index": 0, "delta": fields}], **base}

    chunks = [delta({"role": "assistant", "content": None}), *(delta({"content": p}) for p in PIECES)]
    if finish:
        usage = {"completion_tokens": 11, "prompt_tokens": 6, "total_tokens": 17}
        chunks += [delta({}, "length"), {"choices": [], **base, "usage": usage}]
    return chunks


def vllm_failed() -> bytes:
    """vLLM's completions stream failing mid-way: ``create_streaming_error_response``, then ``[DONE]``."""
    error = {"error": {"message": "the engine died", "type": "InternalServerError", "param": None, "code": 500}}
    return openai_body([*vllm_stream(PIECES)[:3], error])


def anthropic_without_stop() -> bytes:
    body = ANTHROPIC.read_bytes()
    return body[: body.index(b"event: message_stop")]


CLOSED, SERVER = sf.ErrorCode.STREAM_CLOSED, sf.ErrorCode.SERVER
#: A body as a fault leaves it, and the code every consumer gives it.
FAULTS: dict[str, tuple[Callable[[], bytes], sf.ErrorCode]] = {
    "chat cut before its finish": (lambda: openai_body(llama_server_chat(finish=False), done=False), CLOSED),
    "chat finished, cut before [DONE]": (lambda: openai_body(llama_server_chat(finish=True), done=False), CLOSED),
    "completions cut mid-text": (lambda: openai_body(llama_server_stream(PIECES)[:5], done=False), CLOSED),
    "completions failed by the server": (vllm_failed, SERVER),
    "messages cut before message_stop": (anthropic_without_stop, CLOSED),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_every_consumer_gives_the_readers_code_at_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fault: str
) -> None:
    body, code = FAULTS[fault]
    path = tmp_path / "body.sse"
    path.write_bytes(body())
    status, out, _ = run(capsys, "check", "--json", str(path))
    (report,) = reports(out)
    assert (status, report["code"]) == (1, code)
    assert sf.check_file(str(path)).streams[0].code == code

    (stream,) = sf.read_recordings(path)
    assert stream.failure is not None and stream.failure.code == code
    with pytest.raises(sf.LlmError) as assembled:
        sf.assemble(stream)
    with pytest.raises(sf.LlmError) as validated:
        for _ in sf.validate(stream):
            pass
    assert assembled.value is validated.value is stream.failure
    assert stream.where(assembled.value) == f"{path}:{report['line']}"


def test_a_stream_that_did_not_fail_iterates_as_its_chunks() -> None:
    (stream,) = sf.read_recordings(ANTHROPIC)
    assert stream.failure is None
    assert list(stream) == stream.chunks
    assert sf.assemble(stream) == sf.assemble(stream.chunks)


@pytest.mark.parametrize(
    "name", ["acp-agent--snapshots--cancel.jsonl", "web--snapshots--goal-multi-turn-actions.jsonl"]
)
def test_where_places_the_machines_errors_where_check_does(capsys: pytest.CaptureFixture[str], name: str) -> None:
    """A cut-off session (``STREAM_TRUNCATED``, at the last chunk received) and a block that differs from its
    deltas (``BLOCK_CONTENT_MISMATCH``, at its chunk)."""
    path = SESSIONS / name
    _, out, _ = run(capsys, "check", "--json", "--policy", "harness", str(path))
    bad = [report for report in reports(out) if not report["ok"]]
    assert bad
    for report in bad:
        stream = list(sf.read_recordings(path))[report["stream"]]
        with pytest.raises(sf.LlmError) as caught:
            sf.assemble(stream, policy="harness")
        assert caught.value.code == report["code"]
        member = f" ({report['member']})" if report["member"] else ""
        assert stream.where(caught.value) == f"{path}:{report['line']}{member}"

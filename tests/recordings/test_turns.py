"""A recording holds one or more turns, each a stream: one rule for the six wire APIs and for session logs.

Each recording of tests/fixtures/turns/ is two real turns of one API, one after the other (the README there says
which); tests/fixtures/anthropic-blocks/anthropic-tool-search-bm25.1.jsonl is an agent loop's two turns as recorded.
``check`` reports each turn as a stream (``path#n``, with its lines), ``assemble`` prints each, the library reads
them one by one (``sf.read_recordings``, ``sf.read_turns``), and one converter fed two turns says how to read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf

from ..cli_support import run
from ..data import FIXTURES

TURNS = FIXTURES / "turns"


def streams(out: str) -> list[dict[str, Any]]:
    """The stream objects of ``check --json`` output (its file and summary objects left out)."""
    return [o for o in (orjson.loads(line) for line in out.splitlines()) if o["kind"] == "stream"]


#: The JSON-lines recordings of two turns: their converting function, and each turn's finish.
TWO_TURNS: dict[str, tuple[Callable[..., Iterator[Any]], list[str]]] = {
    "chat-two-turns.jsonl": (sf.from_openai_chunks, ["tool-calls", "max-tokens"]),
    "responses-two-turns.jsonl": (sf.from_openai_responses_events, ["tool-calls", "stop"]),
    "gemini-two-turns.jsonl": (sf.from_gemini_chunks, ["tool-calls", "stop"]),
    "bedrock-two-turns.jsonl": (sf.from_bedrock_events, ["tool-calls", "stop"]),
    "cohere-two-turns.jsonl": (sf.from_cohere_events, ["tool-calls", "stop"]),
    "anthropic-tool-search-bm25.1.jsonl": (sf.from_anthropic_events, ["tool-calls", "stop"]),
}
#: The SSE bodies of two turns: each body as its API sends it, the second after the first.
TWO_BODIES = {"chat-two-bodies.sse": ["max-tokens", "tool-calls"], "anthropic-two-bodies.sse": ["tool-calls", "stop"]}


def path_of(name: str) -> Path:
    for folder in (TURNS, FIXTURES / "anthropic-blocks", FIXTURES / "more-provider-streams" / "openai-responses"):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(name)


def events_of(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path_of(name).read_bytes().splitlines() if line.strip()]


def test_the_recordings_are_here() -> None:
    assert sorted(p.name for p in TURNS.glob("*.*") if p.suffix in (".jsonl", ".sse")) == sorted(
        [*(n for n in TWO_TURNS if path_of(n).parent == TURNS), *TWO_BODIES, "responses-failed-then-text.jsonl"]
    )
    assert {p.name for p in TURNS.glob("LICENSE*")} == {
        "LICENSE-vercel-ai",
        "LICENSE-openai-python",
        "LICENSE-anthropic-sdk-python",
    }


@pytest.mark.parametrize("name", sorted(TWO_TURNS))
def test_a_recording_of_two_turns_reads_as_two_streams(name: str) -> None:
    convert, finishes = TWO_TURNS[name]
    streams = list(sf.read_recordings(path_of(name)))
    assert [s.number for s in streams] == [0, 1] and [s.more for s in streams] == [True, False]
    assert all(s.failure is None and s.finished for s in streams)
    results = [sf.assemble(s.chunks, policy=sf.Policy.STRICT) for s in streams]
    assert [r.finish.kind for r in results] == finishes
    # The same turns, read by the library from the events: sf.read_turns with the API's converting function.
    by_library = [sf.assemble(turn, policy=sf.Policy.STRICT) for turn in sf.read_turns(convert, events_of(name))]
    assert [r.to_wire() for r in by_library] == [r.to_wire() for r in results]
    # Each stream's chunks come from its own lines: the second turn's start after the first's end.
    first, second = streams
    assert max(line for line in first.lines if line is not None) < min(line for line in second.lines if line)


@pytest.mark.parametrize("name", sorted(TWO_TURNS))
def test_one_converter_fed_two_turns_says_how_to_read_them(name: str) -> None:
    convert, _ = TWO_TURNS[name]
    with pytest.raises(sf.LlmError) as caught:
        sf.assemble(convert(events_of(name)))
    assert caught.value.code == sf.ErrorCode.MALFORMED_RESPONSE
    assert f"sf.read_turns(sf.{convert.__name__}, events)" in caught.value.message


@pytest.mark.parametrize("name", sorted(TWO_TURNS))
def test_a_turn_spliced_into_another_is_malformed(name: str, tmp_path: Path) -> None:
    convert, _ = TWO_TURNS[name]
    events = events_of(name)
    turns = [list(turn) for turn in sf.read_turns(convert, events)]
    first = len(events) - sum(1 for _ in _second_turn_events(convert, events))
    spliced = [events[0], *events[first:], *events[1:first]]  # the second turn begins inside the first
    with pytest.raises(sf.LlmError) as caught:
        for turn in sf.read_turns(convert, spliced):
            list(turn)
    assert caught.value.code == sf.ErrorCode.MALFORMED_RESPONSE and len(turns) == 2
    assert "spliced" in caught.value.message or "began before" in caught.value.message, caught.value.message
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in spliced))
    (stream,) = sf.read_recordings(path)  # the broken turn is the last: what follows it cannot be told apart
    assert stream.failure is not None and stream.failure.code == sf.ErrorCode.MALFORMED_RESPONSE
    # Chat tolerates a new id within a response (servers that mint one a chunk): the splice shows where the
    # first response's id comes back, the first of its own events after the second turn's.
    spliced_at = 2 + (len(events) - first) if convert is sf.from_openai_chunks else 2
    assert stream.failure_line == spliced_at


def test_a_chat_server_that_mints_an_id_a_chunk_gives_one_turn() -> None:
    """llama.cpp's server (until 2024), LiteLLM's proxy for some providers and Foundry Local give each chunk an id
    of its own; the usage chunk after the finish reason too. That is one response, not a splice nor a turn."""

    def chunk(n: int, **fields: Any) -> dict[str, Any]:
        return {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", **fields}

    events = [
        chunk(1, choices=[{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]),
        chunk(2, choices=[{"index": 0, "delta": {"content": "lo"}}]),
        chunk(3, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        chunk(4, choices=[], usage={"prompt_tokens": 3, "completion_tokens": 2}),
    ]
    result = sf.assemble(sf.from_openai_chunks(events), policy=sf.Policy.STRICT)
    assert result.text == "Hello" and result.usage is not None and result.usage.output_tokens == 2
    assert [sf.assemble(t).text for t in sf.read_turns(sf.from_openai_chunks, events)] == ["Hello"]


def _second_turn_events(convert: Callable[..., Iterator[Any]], events: list[dict[str, Any]]) -> list[Any]:
    """The events of the second turn: those after the first event that a fresh converter's turn refuses."""
    from streamfsm._providers.turns import TURN_APIS

    converter = TURN_APIS[convert.__name__].new()
    for number, event in enumerate(events):
        if converter.begins_turn(event):
            return events[number:]
        converter.feed(event)
    raise AssertionError("one turn only")


@pytest.mark.parametrize("name", sorted(TWO_BODIES))
def test_two_sse_bodies_are_two_streams(name: str) -> None:
    streams = list(sf.read_recordings(TURNS / name))
    assert [sf.assemble(s.chunks).finish.kind for s in streams] == TWO_BODIES[name]


def test_check_names_each_turn_by_file_and_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(TURNS / "gemini-two-turns.jsonl")
    status, out, _ = run(capsys, "check", "-v", path)
    assert status == 0
    assert out.startswith(f"{path}#0: ok; 1 block (tool-call)") and f"\n{path}#1: ok; 1 block (text)" in out
    assert "checked 2 streams in 1 file" in out
    status, out, _ = run(capsys, "check", "--json", path)
    reports = streams(out)
    assert [(r["name"], r["stream"], r["lines"], r["finish"]["kind"]) for r in reports] == [
        (f"{path}#0", 0, [1, 2], "tool-calls"),
        (f"{path}#1", 1, [3, 5], "stop"),
    ]


def test_a_single_turn_keeps_its_plain_name(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "more-provider-streams" / "gemini" / "google-text.jsonl")
    _, out, _ = run(capsys, "check", "--json", path)
    (report,) = streams(out)
    assert report["name"] == path


def test_a_broken_second_turn_is_reported_at_its_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    events = events_of("cohere-two-turns.jsonl")
    end = next(n for n, e in enumerate(events) if e["type"] == "message-end")
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events[:-1]))  # the second turn lacks its end
    status, out, _ = run(capsys, "check", "--json", str(path))
    first, second = streams(out)
    assert status == 1 and first["ok"] and first["lines"][1] <= end + 1
    assert (second["name"], second["code"]) == (f"{path}#1", "STREAM_CLOSED")


def test_assemble_prints_each_turn(capsys: pytest.CaptureFixture[str]) -> None:
    path = TURNS / "responses-two-turns.jsonl"
    status, out, _ = run(capsys, "assemble", "--compact", str(path))
    assert status == 0
    printed = [orjson.loads(line) for line in out.splitlines()]
    assert printed == [r.to_wire(interrupted=True) for r in (sf.assemble(s.chunks) for s in sf.read_recordings(path))]
    status, out, _ = run(capsys, "assemble", "--compact", "--stream", "1", str(path))
    assert (status, [orjson.loads(line) for line in out.splitlines()]) == (0, printed[1:])


def test_a_chat_body_whose_last_turn_lacks_done_is_cut(tmp_path: Path) -> None:
    body = (TURNS / "chat-two-bodies.sse").read_bytes()
    path = tmp_path / "cut.sse"
    path.write_bytes(body[: body.rindex(b"data: [DONE]")])
    first, second = sf.read_recordings(path)
    assert first.failure is None and second.failure is not None
    assert second.failure.code == sf.ErrorCode.STREAM_CLOSED and "[DONE]" in second.failure.message


def test_a_responses_body_may_end_each_turn_with_done(tmp_path: Path) -> None:
    lines = []
    for event in events_of("responses-two-turns.jsonl"):
        lines.append(f"event: {event['type']}\ndata: {orjson.dumps(event).decode()}\n\n")
        if event["type"] == "response.completed":
            lines.append("data: [DONE]\n\n")
    path = tmp_path / "two.sse"
    path.write_text("".join(lines))
    assert [sf.assemble(s.chunks).finish.kind for s in sf.read_recordings(path)] == ["tool-calls", "stop"]


def test_gemini_chunks_without_a_response_id_are_never_merged_into_one_turn() -> None:
    # Without a responseId on both, a second response cannot be told for another turn; its content after the first's
    # finishReason is not merged into the first either: only usage follows a finish.
    events = [{k: v for k, v in e.items() if k != "responseId"} for e in events_of("gemini-two-turns.jsonl")]
    with pytest.raises(sf.LlmError, match="after the finishReason") as caught:
        [list(turn) for turn in sf.read_turns(sf.from_gemini_chunks, events)]
    assert caught.value.code == sf.ErrorCode.MALFORMED_RESPONSE


@pytest.mark.parametrize("api", ["chat", "gemini"])
@pytest.mark.parametrize("same_id", [True, False], ids=["one id", "no id"])
def test_content_after_a_finish_reason_is_never_merged_into_the_turn(
    api: str, same_id: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two responses under one id (or none): the second's content after the first's finish is MALFORMED_RESPONSE,
    to the library and to ``check``, as every wire API reads what follows its turn's end; usage (and Gemini's
    empty last part with its signature) still belong to the turn."""
    if api == "chat":
        ids = {"id": "chatcmpl-1"} if same_id else {}
        reader = sf.from_openai_chunks

        def say(text: str, finish: str | None = None) -> dict[str, Any]:
            return {**ids, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}

        usage: dict[str, Any] = {**ids, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
        empty: dict[str, Any] = {**ids, "choices": [{"index": 0, "delta": {}, "finish_reason": None}]}
    else:
        ids = {"responseId": "r1"} if same_id else {}
        reader = sf.from_gemini_chunks

        def say(text: str, finish: str | None = None) -> dict[str, Any]:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
            return {**ids, "candidates": [{**candidate, **({"finishReason": finish} if finish else {})}]}

        usage = {**ids, "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 2}}
        empty = {**ids, "candidates": [{"content": {"parts": [{"text": "", "thoughtSignature": "c2ln"}]}}]}
    one = [say("Hello", "stop" if api == "chat" else "STOP"), empty, usage]
    assert sf.assemble(reader(one)).text == "Hello"
    two = [*one, say("World", "stop" if api == "chat" else "STOP"), usage]
    with pytest.raises(sf.LlmError, match="after the finish") as caught:
        sf.assemble(reader(two))
    assert caught.value.code == sf.ErrorCode.MALFORMED_RESPONSE
    path = tmp_path / "two.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in two))
    status, out, _ = run(capsys, "check", "--json", str(path))
    assert status == 1 and [s["code"] for s in streams(out)] == ["MALFORMED_RESPONSE"]


def test_read_turns_names_its_apis() -> None:
    with pytest.raises(TypeError, match=r"sf\.from_anthropic_events"):
        sf.read_turns(sf.assemble, [])
    turns = sf.read_turns(sf.from_anthropic_events, [])
    turn = next(turns)  # the first turn always comes
    with pytest.raises(sf.LlmError) as caught:
        list(turn)
    assert caught.value.code == sf.ErrorCode.STREAM_CLOSED
    assert list(turns) == []  # a broken turn is the last


def test_the_agent_loop_and_the_adapters_convert_one_turn() -> None:
    """An HTTP adapter's stream is one request's: a converter ends at its turn's end (tests/test_*_adapter.py run
    them against the local server); the turn rule is the reader's and read_turns'."""
    convert, _ = TWO_TURNS["anthropic-tool-search-bm25.1.jsonl"]
    chunks = []
    with pytest.raises(sf.LlmError):
        for chunk in convert(events_of("anthropic-tool-search-bm25.1.jsonl")):
            chunks.append(chunk)
    assert [c["type"] for c in chunks].count("finish") == 1


def test_a_turn_that_failed_at_its_end_is_followed_by_the_next(capsys: pytest.CaptureFixture[str]) -> None:
    """A failed response ends its turn as the API says (``response.failed``): the next response is the next turn,
    each with its verdict. A turn broken mid-way is the last (test_a_turn_spliced_into_another_is_malformed)."""
    path = TURNS / "responses-failed-then-text.jsonl"
    status, out, _ = run(capsys, "check", "--json", str(path))
    failed, answered = streams(out)
    assert status == 1
    assert (failed["name"], failed["ok"], failed["code"]) == (f"{path}#0", False, "QUOTA")
    assert (answered["name"], answered["ok"], answered["finish"]["kind"]) == (f"{path}#1", True, "stop")
    assert failed["line"] == 3  # the error event; the response.failed after it is the failed turn's own
    turns = sf.read_turns(sf.from_openai_responses_events, events_of("responses-failed-then-text.jsonl"))
    with pytest.raises(sf.LlmError) as caught:
        list(next(turns))
    assert caught.value.code == sf.ErrorCode.QUOTA
    expected = sf.assemble(sf.from_openai_responses_events(events_of("azure-text.1.jsonl")))
    assert sf.assemble(next(turns)).to_wire() == expected.to_wire()
    assert list(turns) == []


@pytest.mark.parametrize(
    ("convert", "failure", "start"),
    [
        (sf.from_openai_chunks, {"error": {"message": "overloaded", "type": "server_error"}}, "chatcmpl-2"),
        (sf.from_gemini_chunks, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}, "resp-2"),
    ],
    ids=["chat", "gemini"],
)
def test_an_error_chunk_ends_its_turn(convert: Callable[..., Iterator[Any]], failure: Any, start: str) -> None:
    if convert is sf.from_openai_chunks:
        answer = [
            {"id": start, "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
            {"id": start, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
    else:
        answer = [
            {"responseId": start, "candidates": [{"content": {"parts": [{"text": "Hi"}]}, "finishReason": "STOP"}]},
        ]
    turns = sf.read_turns(convert, [failure, *answer])
    with pytest.raises(sf.LlmError) as caught:
        list(next(turns))
    assert caught.value.code == sf.ErrorCode.SERVER
    assert sf.assemble(next(turns), policy=sf.Policy.HARNESS).text == "Hi"
    assert list(turns) == []

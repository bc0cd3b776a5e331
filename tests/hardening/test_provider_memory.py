"""Memory the provider converters hold before the machine sees it, bounded: held-back blocks, SSE events,
Gemini's argument paths, what a turn keeps for replay.

Each test feeds far more than the bound it asserts (a hostile provider's stream), lazily, and measures with
tracemalloc what was allocated meanwhile: the bound holds, and the error is the documented ``LIMIT_EXCEEDED`` (or
``MALFORMED_RESPONSE``), not a traceback. Sizes are small enough for the suite; growth is asserted, never time.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest

import streamfsm as sf
from benchmarks.provider_memory import HELD, PIECE, peak  # the hostile streams the benchmark measures
from streamfsm._providers.arguments import ArgumentWriter, parse_path
from streamfsm._providers.blocks import ProviderBlock
from streamfsm._providers.held import PACK, BlockQueue
from streamfsm._providers.sse import SSEParser

from ..sse_server import Raw, Reply, SSEServer, chunked, head

E = sf.ErrorCode
KiB = 1024
MiB = 1024 * KiB
#: The machine's limit in these tests, and what a hostile stream sends: 16 times as much.
LIMIT = 256 * KiB
SENT = 16 * LIMIT
LIMITS = sf.Limits(max_stream_bytes=LIMIT)


def _sent(events: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``events`` up to :data:`SENT` bytes of held content (a stream that would go on for ever), each parsed
    afresh as a live one is (the same string object over and over would cost nothing to hold)."""
    for event in itertools.islice(events, SENT // len(PIECE) + 4):
        yield orjson.loads(orjson.dumps(event))


@pytest.mark.parametrize("name", HELD)
def test_held_back_content_is_bounded_by_the_machines_limits(name: str) -> None:
    convert, events = HELD[name]
    error, used = peak(lambda: sf.assemble(convert(_sent(events()), limits=LIMITS), limits=LIMITS))
    assert isinstance(error, sf.LlmError) and error.code == E.LIMIT_EXCEEDED, error
    assert "held back" in error.message and "Limits.max_stream_bytes" in error.message
    # What is held costs about its bytes (packed as it comes), far below what was sent.
    assert used < 2 * LIMIT + 256 * KiB


@pytest.mark.parametrize("name", HELD)
def test_held_back_content_within_the_limits_is_held(name: str) -> None:
    convert, events = HELD[name]
    room = sf.Limits(max_stream_bytes=2 * SENT)
    with pytest.raises(sf.LlmError) as caught:  # the stream never ends its call, nor the response
        sf.assemble(convert(_sent(events()), limits=room), limits=room)
    assert caught.value.code == E.STREAM_CLOSED


def test_a_held_block_counts_against_max_block_bytes() -> None:
    queue = BlockQueue(sf.Limits(max_block_bytes=LIMIT))
    queue.push(ProviderBlock("tool-call", "c", "f"), '{"a":')
    held = ProviderBlock("text")
    queue.push(held, "")
    with pytest.raises(sf.LlmError, match=r"Limits\.max_block_bytes") as caught:
        for _ in range(SENT // len(PIECE)):
            queue.add(held, PIECE)
    assert caught.value.code == E.LIMIT_EXCEEDED and held.held <= LIMIT + len(PIECE)


def test_held_blocks_count_against_max_blocks() -> None:
    queue = BlockQueue(sf.Limits(max_blocks=3))
    queue.push(ProviderBlock("tool-call", "c", "f"), '{"a":')
    queue.push(ProviderBlock("text"), "a")
    queue.push(ProviderBlock("reasoning"), "b")
    with pytest.raises(sf.LlmError, match=r"more than 3 blocks \(Limits\.max_blocks\)") as caught:
        queue.push(ProviderBlock("text"), "c")
    assert caught.value.code == E.LIMIT_EXCEEDED


def test_held_pieces_are_packed_as_they_come() -> None:
    queue = BlockQueue()
    queue.push(ProviderBlock("tool-call", "c", "f"), '{"a":')
    held = ProviderBlock("text")
    queue.push(held, "")
    for _ in range(10 * PACK):
        queue.add(held, "y")
    assert len(held.parts) <= 11 and "".join(held.parts) == "y" * 10 * PACK


def test_live_content_is_left_to_the_machine() -> None:
    # One block, streamed live: the queue counts it, but the machine is the one to refuse it, at its chunk.
    events = [{"id": "c", "choices": [{"index": 0, "delta": {"content": PIECE}}]}] * (2 * LIMIT // len(PIECE))
    with pytest.raises(sf.LlmError, match="limit exceeded") as caught:
        sf.assemble(sf.from_openai_chunks(events, limits=LIMITS), limits=LIMITS)
    assert caught.value.chunk_index is not None  # the machine's error: it says where


# --- Over HTTP: the adapters' converters take the limits generate() gives the machine -----------------------


SSE_HEAD = {"content-type": "text/event-stream", "transfer-encoding": "chunked"}


def _body(events: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    for event in itertools.islice(events, SENT // len(PIECE) + 4):
        yield b"data: " + orjson.dumps(event) + b"\n\n"


@pytest.fixture(scope="module")
def server() -> Iterator[SSEServer]:
    with SSEServer() as running:
        # One request first: what the first one imports and caches (httpx, its TLS context) is not measured.
        running.script(Reply(500, {"error": {"message": "warming up"}}))
        with pytest.raises(sf.LlmError):
            asyncio.run(_consume(sf.OpenAICompatibleAdapter(running.url, api_key="sk-key"), None))
        yield running


async def _consume(adapter: sf.LlmAdapter, policy: str | None) -> None:
    async for _ in adapter.generate(ASK, policy=policy, limits=LIMITS):
        pass


ADAPTERS: dict[str, Callable[[str], sf.LlmAdapter]] = {
    "Gemini": lambda url: sf.GeminiAdapter(base_url=url, api_key="g-key"),
    "Responses": lambda url: sf.OpenAIResponsesAdapter(url, api_key="sk-key"),
    "chat completions": lambda url: sf.OpenAICompatibleAdapter(url, api_key="sk-key"),
}
ASK = sf.GenerateOptions(model="m", messages=(sf.UserMessage(content="hi"),))


@pytest.mark.slow
@pytest.mark.parametrize("name", ADAPTERS)
@pytest.mark.parametrize("policy", ["strict", None])
def test_an_adapter_holds_back_no_more_than_the_limits_given_to_generate(
    server: SSEServer, name: str, policy: str | None
) -> None:
    server.script(Raw(itertools.chain([head(200, SSE_HEAD)], chunked(_body(HELD[name][1]())))))

    error, used = peak(lambda: asyncio.run(_consume(ADAPTERS[name](server.url), policy)))
    assert isinstance(error, sf.LlmError) and error.code == E.LIMIT_EXCEEDED, error
    assert "held back" in error.message
    assert used < 2 * LIMIT + MiB  # the held content, an httpx client, an event and what the server writes


# --- Gemini's partialArgs paths: read no deeper than tool arguments may nest ------------------------------------


def _streamed_call(path: str) -> list[dict[str, Any]]:
    def chunk(call: dict[str, Any]) -> dict[str, Any]:
        parts = [{"functionCall": call}]
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], "responseId": "r"}

    argument = {"jsonPath": path, "numberValue": 1}
    return [
        chunk({"name": "f", "willContinue": True}),
        chunk({"partialArgs": [argument], "willContinue": True}),
        chunk({}),
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1},
        },
    ]


def test_a_deep_partial_args_path_is_refused_as_it_is_read() -> None:
    path = "$" + ".a" * 300_000  # 0.57 MiB: each level once held its own object and set (250 times the path)
    events = _streamed_call(path)
    error, used = peak(lambda: sf.assemble(sf.from_gemini_chunks(events)))
    assert isinstance(error, sf.LlmError) and error.code == E.MALFORMED_RESPONSE
    assert "deeper than 1,024 levels" in error.message
    assert used < 512 * KiB  # the first 1,025 segments at most, not 300,000


def test_a_partial_args_path_of_1024_levels_is_converted() -> None:
    result = sf.assemble(sf.from_gemini_chunks(_streamed_call("$" + ".a" * 1024)))
    assert result.tool_calls[0].arguments == '{"a":' * 1024 + "1" + "}" * 1024


@pytest.mark.parametrize("levels", [10, 100, 1024])
def test_what_one_path_costs_is_linear_in_its_length(levels: int) -> None:
    path = "$" + ".b" * levels
    writer = ArgumentWriter()
    _, used = peak(lambda: writer.write({"jsonPath": path, "numberValue": 1}, dict.get))
    assert used < 16 * KiB + 400 * levels
    assert len(parse_path(path)) == levels


# --- Server-sent events: one event's memory is its bytes, not a Python object per line ----------------------


def _short_lines(total: int) -> bytes:
    """One event of ``data:`` lines of two characters each (a JSON string split in pieces), ``total`` bytes."""
    lines = total // len(b"data: ab\n")
    return b'data: "\n' + b"data: ab\n" * (lines - 2) + b'data: "\n\n'


@pytest.mark.parametrize("feed", ["whole", "by line"])
def test_an_event_of_many_short_data_lines_holds_about_its_bytes(feed: str) -> None:
    body = _short_lines(256 * KiB)
    pieces = [body] if feed == "whole" else body.splitlines(keepends=True)
    parser = SSEParser(2 * MiB)

    def parse() -> list[Any]:
        return [event for piece in pieces for event in parser.feed(piece)]

    (event,), used = peak(parse)
    assert event.data == '"' + "\nab" * (256 * KiB // 9 - 2) + '\n"'  # the lines' values, joined with LF
    # The buffer, the decoded text and one step of split lines; a str per line held 7 times the body.
    assert used < 2.5 * len(body) + 512 * KiB


def test_the_event_bound_still_counts_the_bytes_of_the_lines() -> None:
    parser = SSEParser(64 * KiB)
    with pytest.raises(sf.LlmError, match="max_event_bytes") as caught:
        parser.feed(_short_lines(MiB))
    assert caught.value.code == E.LIMIT_EXCEEDED


def test_a_recorded_sse_body_of_short_lines_is_checked_within_its_bound(tmp_path: Any) -> None:
    # One chat chunk whose JSON is spread over 2**15 more lines of two spaces (whitespace JSON allows).
    lines = 2**15
    head = b'data: {"id":"c",\n'
    tail = b'data: "choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    usage = orjson.dumps({"id": "c", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
    body = head + b"data:   \n" * lines + tail + b"data: " + usage + b"\n\ndata: [DONE]\n\n"
    path = tmp_path / "short-lines.sse"
    path.write_bytes(head + tail + b"data: " + usage + b"\n\ndata: [DONE]\n\n")
    sf.check_file(str(path), "openai-sse")  # what the first check imports is not measured
    path.write_bytes(body)
    report, used = peak(lambda: sf.check_file(str(path), "openai-sse"))
    assert report.error is None and [s.ok for s in report.streams] == [True], report
    # The reader's batches of lines take ~3.7 times the body; the event's buffer and text a third each. A str
    # per data line took 7 times the body in all.
    assert used < 5.5 * len(body)


# --- What a turn keeps for replay: signatures included, in every converter -----------------------------------


KEPT_LIMIT = 64 * KiB
SIGNATURE = "c2lnbmF0dXJl" * 85  # 1,020 characters of base64


def _anthropic_signatures() -> Iterator[dict[str, Any]]:
    yield {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}}
    yield {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}
    while True:
        yield {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": SIGNATURE}}


def _gemini_signatures() -> Iterator[dict[str, Any]]:
    part = {"text": "t", "thought": True, "thoughtSignature": SIGNATURE}
    while True:
        yield {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}], "responseId": "r"}


def _gemini_call_signatures() -> Iterator[dict[str, Any]]:
    for number in itertools.count():
        call = {"functionCall": {"name": f"f{number}", "args": {}}, "thoughtSignature": SIGNATURE}
        yield {"candidates": [{"content": {"role": "model", "parts": [call]}, "index": 0}], "responseId": "r"}


def _bedrock_signatures() -> Iterator[dict[str, Any]]:
    yield {"messageStart": {"role": "assistant"}}
    delta = {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": SIGNATURE}}}
    while True:
        yield {"contentBlockDelta": delta}


def _bedrock_tool_results() -> Iterator[dict[str, Any]]:
    yield {"messageStart": {"role": "assistant"}}
    start = {"toolResult": {"toolUseId": "s1", "type": "web_search_result"}}
    yield {"contentBlockStart": {"contentBlockIndex": 0, "start": start}}
    while True:
        yield {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolResult": [{"text": SIGNATURE}]}}}


def _responses_reasoning() -> Iterator[dict[str, Any]]:
    yield {"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress"}}
    for number in itertools.count():
        item = {"id": f"rs_{number}", "type": "reasoning", "summary": [], "encrypted_content": SIGNATURE}
        yield {"type": "response.output_item.done", "output_index": number, "item": item}


def _cohere_citations() -> Iterator[dict[str, Any]]:
    yield {"type": "message-start", "id": "r", "delta": {"message": {"role": "assistant"}}}
    citation = {"start": 0, "end": 1, "text": SIGNATURE, "sources": [], "type": "TEXT_CONTENT"}
    for number in itertools.count():
        yield {"type": "citation-start", "index": number, "delta": {"message": {"citations": citation}}}


def _cohere_kept_part() -> Iterator[dict[str, Any]]:
    yield {"type": "message-start", "id": "r", "delta": {"message": {"role": "assistant"}}}
    yield {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "image", "data": ""}}}}
    while True:
        yield {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"data": SIGNATURE}}}}


KEPT = {
    "anthropic signatures": (sf.from_anthropic_events, _anthropic_signatures),
    "gemini text signatures": (sf.from_gemini_chunks, _gemini_signatures),
    "gemini call signatures": (sf.from_gemini_chunks, _gemini_call_signatures),
    "bedrock signatures": (sf.from_bedrock_events, _bedrock_signatures),
    "bedrock tool results": (sf.from_bedrock_events, _bedrock_tool_results),
    "responses reasoning": (sf.from_openai_responses_events, _responses_reasoning),
    "cohere citations": (sf.from_cohere_events, _cohere_citations),
    "cohere kept part": (sf.from_cohere_events, _cohere_kept_part),
}


@pytest.mark.parametrize("name", KEPT)
def test_what_a_turn_keeps_is_bounded_as_it_comes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("streamfsm._providers.replay.MAX_KEPT_CHARS", KEPT_LIMIT)
    convert, events = KEPT[name]
    sent = (orjson.loads(orjson.dumps(e)) for e in itertools.islice(events(), 16 * KEPT_LIMIT // len(SIGNATURE)))
    error, used = peak(lambda: list(convert(sent)))
    assert isinstance(error, sf.LlmError) and error.code == E.LIMIT_EXCEEDED, error
    assert f"more than {KEPT_LIMIT:,} characters of items to keep for replay" in error.message
    assert used < 4 * KEPT_LIMIT + 256 * KiB  # refused at the limit, not after all 16 times it came


# --- The agent loop: its stream limits bound what its adapter's converter holds back --------------------------


class _HoldingAdapter(sf.LlmAdapter):
    """An adapter whose stream converts a chat stream that holds its content back behind an incomplete call."""

    async def _events(self) -> Any:
        for event in _sent(HELD["chat completions"][1]()):
            yield event

    def stream(self, options: sf.GenerateOptions) -> Any:
        return sf.from_openai_chunks(self._events(), limits=options.limits)  # generate() sets them: the loop's


def test_the_agent_loops_stream_limits_bound_what_the_adapter_holds_back() -> None:
    limits = sf.AgentLimits(stream=LIMITS)
    loop = sf.AgentLoop(_HoldingAdapter(), [], model="m", limits=limits, retry=sf.RetryPolicy(max_retries=0))

    async def run() -> Any:
        agent_run = loop.run("hi")
        async for _ in agent_run:
            pass
        return agent_run.error

    error, used = peak(lambda: asyncio.run(run()))
    assert isinstance(error, sf.LlmError) and error.code == E.LIMIT_EXCEEDED, error
    assert "held back" in error.message
    assert used < 2 * LIMIT + MiB

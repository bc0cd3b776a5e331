"""``sf.checked``: the real SDKs' own streams (openai, anthropic, google-genai, cohere, boto3), read from the local
HTTP server, checked as they pass: the SDK's objects come through unchanged, a broken stream raises its code at
the object that broke it, and the SDK's stream is closed however the reading ends.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

import streamfsm as sf

from ..data import MORE_PROVIDER_STREAMS, PROVIDER_STREAMS, recording
from ..sse_server import SSE, Raw, SSEServer, chunked, head, openai_events, wait_for

E = sf.ErrorCode
OPENAI_TEXT = recording(PROVIDER_STREAMS / "openai-chat" / "openai-text.jsonl")
OPENAI_TOOL = recording(PROVIDER_STREAMS / "openai-chat" / "deepseek-tool-call.jsonl")
RESPONSES = recording(MORE_PROVIDER_STREAMS / "openai-responses" / "lmstudio-tool-call.1.jsonl")
RESPONSES_FAILED = recording(MORE_PROVIDER_STREAMS / "openai-responses" / "openai-error.1.jsonl")
GEMINI = recording(MORE_PROVIDER_STREAMS / "gemini" / "google-tool-call.jsonl")
COHERE = recording(MORE_PROVIDER_STREAMS / "cohere" / "cohere-tool-call.jsonl")
BEDROCK = recording(MORE_PROVIDER_STREAMS / "bedrock" / "amazon-bedrock-tool-call.1.jsonl")
ASK = [{"role": "user", "content": "hi"}]
CLIENTS: list[Any] = []


def anthropic_sse(path: Path) -> list[dict[str, Any]]:
    """The events of a recorded Messages API body."""
    return [
        orjson.loads(line.removeprefix(b"data:"))
        for line in path.read_bytes().splitlines()
        if line.startswith(b"data:")
    ]


ANTHROPIC = anthropic_sse(PROVIDER_STREAMS / "anthropic-messages" / "tool_use_response.sse")


def data_events(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """``data:`` events, one per object (Gemini, Cohere)."""
    return [f"data: {orjson.dumps(e).decode()}" for e in events]


def typed_events(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """``event:``/``data:`` pairs named by the event's type (Anthropic, Responses)."""
    return [f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}" for e in events]


def eventstream(events: Iterable[Mapping[str, Any]]) -> Raw:
    """A ConverseStream response as AWS sends it: ``application/vnd.amazon.eventstream`` messages (a prelude with
    its CRC32, string headers naming the event, the JSON payload, the message's CRC32), chunked."""

    def message(event: Mapping[str, Any]) -> bytes:
        ((name, body),) = event.items()
        headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
        packed = b"".join(
            bytes([len(k)]) + k.encode() + b"\x07" + struct.pack(">H", len(v)) + v.encode() for k, v in headers.items()
        )
        payload = orjson.dumps(body)
        prelude = struct.pack(">II", 12 + len(packed) + len(payload) + 4, len(packed))
        whole = prelude + struct.pack(">I", zlib.crc32(prelude)) + packed + payload
        return whole + struct.pack(">I", zlib.crc32(whole))

    start = head(200, {"content-type": "application/vnd.amazon.eventstream", "transfer-encoding": "chunked"})
    return Raw([start, *chunked(message(event) for event in events)])


# --- The clients, each pointed at the server ----------------------------------------------------------------


def openai_client(server: SSEServer) -> Any:
    import openai

    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)


def anthropic_client(server: SSEServer) -> Any:
    import anthropic

    return anthropic.Anthropic(base_url=server.url, api_key="sk-ant", max_retries=0)


def chat(server: SSEServer, events: list[dict[str, Any]]) -> Any:
    server.script(SSE(openai_events(events)))
    return openai_client(server).chat.completions.create(model="gpt", messages=ASK, stream=True)


def responses(server: SSEServer, events: list[dict[str, Any]]) -> Any:
    server.script(SSE(typed_events(events)))
    return openai_client(server).responses.create(model="gpt", input="hi", stream=True)


def messages(server: SSEServer, events: list[dict[str, Any]]) -> Any:
    server.script(SSE(typed_events(events)))
    return anthropic_client(server).messages.create(model="claude", max_tokens=9, messages=ASK, stream=True)


def gemini(server: SSEServer, events: list[dict[str, Any]]) -> Any:
    from google import genai
    from google.genai import types

    server.script(SSE(data_events(events)))
    client = genai.Client(api_key="g-key", http_options=types.HttpOptions(base_url=server.url))
    CLIENTS.append(client)  # its stream does not hold it, and a client collected closes its connections
    return client.models.generate_content_stream(model="gemini", contents="hi")


def cohere_chat(server: SSEServer, events: list[dict[str, Any]]) -> Any:
    import cohere

    server.script(SSE(data_events(events)))
    return cohere.ClientV2(api_key="co-key", base_url=server.url).chat_stream(model="command-a", messages=ASK)


def bedrock(server: SSEServer, events: list[dict[str, Any]]) -> Any:
    import boto3

    server.script(eventstream(events))
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=server.url,
        aws_access_key_id="AKIATEST",
        aws_secret_access_key="secret",
    )
    return client.converse_stream(modelId="m", messages=[{"role": "user", "content": [{"text": "hi"}]}])["stream"]


#: Per wire API: how its SDK's stream is opened, a recording of it, the converter of its events, its name.
SDKS = {
    "openai-chat": (chat, OPENAI_TOOL, sf.from_openai_chunks, "openai-sse"),
    "openai-responses": (responses, RESPONSES, sf.from_openai_responses_events, "openai-responses"),
    "anthropic": (messages, ANTHROPIC, sf.from_anthropic_events, "anthropic-sse"),
    "gemini": (gemini, GEMINI, sf.from_gemini_chunks, "gemini"),
    "cohere": (cohere_chat, COHERE, sf.from_cohere_events, "cohere"),
    "bedrock": (bedrock, BEDROCK, sf.from_bedrock_events, "bedrock"),
}


def fields(sdk_object: Any) -> Any:
    """What an SDK object holds, but for what differs between two responses to one request (google-genai keeps the
    HTTP response's headers, its date among them)."""
    dump = getattr(sdk_object, "model_dump", None)
    return dump(exclude={"sdk_http_response"}) if callable(dump) else sdk_object


# --- A valid stream: the SDK's objects, unchanged, and the result -------------------------------------------


@pytest.mark.parametrize("name", sorted(SDKS))
def test_the_sdks_objects_pass_unchanged_and_the_result_is_assembled(server: SSEServer, name: str) -> None:
    opened, events, convert, api = SDKS[name]
    bare = list(opened(server, events))  # what the consumer gets without the check
    stream = sf.checked(opened(server, events))
    passed = list(stream)
    assert [type(o) for o in passed] == [type(o) for o in bare]
    assert [fields(o) for o in passed] == [fields(o) for o in bare]
    assert stream.api == api and stream.count == len(bare)
    assert stream.result == sf.assemble(convert(events))
    # The very objects: what the SDK yields is what the consumer gets.
    assert all(a is b for a, b in zip(sf.checked(bare), bare, strict=True))


def test_the_anthropic_message_stream_helper_and_its_extra_events(server: SSEServer) -> None:
    """``client.messages.stream(...)`` yields ``text``/``input_json`` events besides the API's own: passed on, not
    read (they repeat the delta before them, with the block so far)."""
    server.script(SSE(typed_events(ANTHROPIC)))
    client = anthropic_client(server)
    with client.messages.stream(model="claude", max_tokens=9, messages=ASK) as events:
        stream = sf.checked(events)
        passed = list(stream)
    kinds = {event.type for event in passed}
    assert {"text", "input_json", "content_block_delta"} <= kinds
    assert stream.result == sf.assemble(sf.from_anthropic_events(ANTHROPIC))


def test_the_openai_stream_helpers_and_their_extra_events(server: SSEServer) -> None:
    """``client.chat.completions.stream(...)`` yields ``chunk`` events (the API's chunk and a snapshot) and
    ``content.delta``-like ones: the chunk is read, the rest passed on unread. ``client.responses.stream(...)``
    adds the text so far to its delta events: left out of what is read."""
    client = openai_client(server)
    server.script(SSE(openai_events(OPENAI_TOOL)))
    with client.chat.completions.stream(model="gpt", messages=ASK) as events:  # type: ignore[arg-type]
        stream = sf.checked(events)
        passed = list(stream)
    assert {"chunk", "content.delta", "tool_calls.function.arguments.delta"} <= {event.type for event in passed}
    assert stream.api == "openai-sse" and stream.result == sf.assemble(sf.from_openai_chunks(OPENAI_TOOL))

    server.script(SSE(typed_events(RESPONSES)))
    with client.responses.stream(model="gpt", input="hi") as events:
        checked = sf.checked(events)
        passed = list(checked)
    assert any(hasattr(event, "snapshot") for event in passed)
    assert checked.result == sf.assemble(sf.from_openai_responses_events(RESPONSES))


def test_an_object_of_another_package_is_told_by_its_fields() -> None:
    """LiteLLM's chunks are its own pydantic models in the OpenAI shape: told by the fields of their dump."""

    class Chunk(BaseModel):  # as LiteLLM's ModelResponseStream: a pydantic model of another package
        id: str
        object: str
        model: str
        choices: list[dict[str, Any]]
        usage: dict[str, Any] | None = None

    objects = [Chunk(**event) for event in OPENAI_TEXT]
    stream = sf.checked(objects)
    assert list(stream) == objects and stream.api == "openai-sse"
    assert stream.result == sf.assemble(sf.from_openai_chunks(OPENAI_TEXT))


def test_api_names_the_wire_api_when_the_events_cannot_tell() -> None:
    events = [{"aNewEvent": {}}, *BEDROCK]  # an event added since, first: it names no wire API
    with pytest.raises(TypeError, match="api="):
        list(sf.checked(events))
    stream = sf.checked(iter(events), api="bedrock")
    assert stream.api == "bedrock"  # named: known before any event
    assert list(stream) == events and stream.result == sf.assemble(sf.from_bedrock_events(BEDROCK))
    with pytest.raises(TypeError, match=r"sf\.validate"):
        list(sf.checked([{"type": "block-start", "index": 0, "blockType": "text"}]))
    with pytest.raises(ValueError, match="'openai-sse'"):
        sf.checked(events, api="openai")  # type: ignore[call-overload]


def test_the_names_api_takes_are_the_provider_formats() -> None:
    from typing import get_args

    from streamfsm._providers.sdk_streams import Api

    assert get_args(Api) == sf.FORMATS[3:]  # the formats of a provider's stream, as recordings name them


def test_what_is_no_stream_is_refused_with_what_to_pass(server: SSEServer) -> None:
    with pytest.raises(TypeError, match=r"\['stream'\]"):
        sf.checked({"stream": iter(BEDROCK), "ResponseMetadata": {}})  # type: ignore[call-overload]
    manager = anthropic_client(server).messages.stream(model="claude", max_tokens=9, messages=ASK)
    with pytest.raises(TypeError, match="context manager"):
        sf.checked(manager)  # type: ignore[call-overload]


# --- A broken stream: LlmError at the object that broke it --------------------------------------------------


def test_a_broken_stream_raises_before_the_object_that_broke_it(server: SSEServer) -> None:
    # message_start, content_block_start, ping (which the SDK drops), content_block_delta, then the broken one
    broken = [*ANTHROPIC[:4], {"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "x"}}]
    sdk = messages(server, [*broken, *ANTHROPIC[4:]])
    stream = sf.checked(sdk)
    seen = []
    with pytest.raises(sf.LlmError) as caught:
        seen.extend(stream)
    assert caught.value.code == E.MALFORMED_RESPONSE and "block 7" in caught.value.message
    assert len(seen) == stream.count == 3  # every object before the one in hand, not that one
    assert sdk.response.is_closed  # the SDK's stream is closed at the error
    with pytest.raises(ValueError, match="MALFORMED_RESPONSE"):
        _ = stream.result
    assert stream.snapshot().state == "IN_BLOCK"  # the converter refused the event: the machine holds what came


def test_limits_and_policy_are_those_given(server: SSEServer) -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(sf.checked(chat(server, OPENAI_TEXT), limits=sf.Limits(max_block_bytes=20)))
    assert caught.value.code == E.LIMIT_EXCEEDED
    without_usage = [event for event in OPENAI_TEXT if event["choices"]]
    stream = sf.checked(chat(server, without_usage))
    passed = []
    with pytest.raises(sf.LlmError) as caught:
        passed.extend(stream)
    assert caught.value.code == E.USAGE_MISSING  # known at the end only: every object was yielded
    assert len(passed) == len(without_usage)
    relaxed = sf.checked(chat(server, without_usage), policy="harness")
    assert len(list(relaxed)) == len(without_usage) and relaxed.result.usage is None


def test_a_stream_cut_short_is_refused_at_its_end(server: SSEServer) -> None:
    with pytest.raises(sf.LlmError) as caught:
        list(sf.checked(chat(server, OPENAI_TEXT[:5])))
    assert caught.value.code == E.STREAM_CLOSED
    with pytest.raises(sf.LlmError) as caught:
        list(sf.checked(iter(())))
    assert caught.value.code == E.STREAM_CLOSED and "before its first event" in caught.value.message


def test_a_failure_the_provider_reports_is_its_coded_error() -> None:
    """A failure in the events themselves (the SDK raises its own ``APIError`` at an ``error`` event before any
    check: see the test below) gets the code the converter gives it."""
    with pytest.raises(sf.LlmError) as expected:
        sf.assemble(sf.from_openai_responses_events(RESPONSES_FAILED))
    with pytest.raises(sf.LlmError) as caught:
        list(sf.checked(iter(RESPONSES_FAILED)))
    assert caught.value.code == expected.value.code != E.MALFORMED_RESPONSE


def test_the_sdks_own_exceptions_pass_unchanged(server: SSEServer) -> None:
    import openai

    server.script(SSE([*openai_events(OPENAI_TEXT[:3], done=False), 'data: {"error": {"message": "overloaded"}}']))
    sdk = openai_client(server).chat.completions.create(model="gpt", messages=ASK, stream=True)
    with pytest.raises(openai.APIError, match="overloaded"):
        list(sf.checked(sdk))


# --- Stopping early closes the SDK's stream -----------------------------------------------------------------


def test_stopping_early_closes_the_sdks_stream(server: SSEServer) -> None:
    sdk = chat(server, OPENAI_TEXT)
    stream = sf.checked(sdk)
    for number, _ in enumerate(stream):
        if number == 2:
            break
    assert sdk.response.is_closed and stream.count == 3
    assert list(stream) == []  # read once
    assert stream.snapshot().state == "IN_BLOCK"
    with pytest.raises(ValueError, match="not been read to its end"):
        _ = stream.result

    sdk = chat(server, OPENAI_TEXT)
    with sf.checked(sdk) as stream:
        reading = iter(stream)
        next(reading)
        assert not sdk.response.is_closed
    assert sdk.response.is_closed

    sdk = chat(server, OPENAI_TEXT)
    sf.checked(sdk).close()  # never read
    assert sdk.response.is_closed
    assert wait_for(lambda: server.active == 0)


# --- The async twins ----------------------------------------------------------------------------------------


def test_async_streams_pass_unchanged_and_close_when_stopped(server: SSEServer) -> None:
    import anthropic
    import cohere
    import openai

    async def run() -> None:
        client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
        server.script(SSE(openai_events(OPENAI_TOOL)), SSE(openai_events(OPENAI_TOOL)))
        bare = [o async for o in await client.chat.completions.create(model="gpt", messages=ASK, stream=True)]
        stream = sf.checked(await client.chat.completions.create(model="gpt", messages=ASK, stream=True))
        assert isinstance(stream, sf.AsyncChecked)
        assert [o async for o in stream] == bare
        assert stream.result == sf.assemble(sf.from_openai_chunks(OPENAI_TOOL))

        server.script(SSE(typed_events(ANTHROPIC)))
        aclient = anthropic.AsyncAnthropic(base_url=server.url, api_key="sk-ant", max_retries=0)
        async with aclient.messages.stream(model="claude", max_tokens=9, messages=ASK) as events:
            checked = sf.checked(events)
            assert [e async for e in checked] and checked.result == sf.assemble(sf.from_anthropic_events(ANTHROPIC))

        server.script(SSE(data_events(COHERE)))
        co = cohere.AsyncClientV2(api_key="co-key", base_url=server.url)
        checked_co = sf.checked(co.chat_stream(model="command-a", messages=ASK))
        assert len([e async for e in checked_co]) == len(COHERE) and checked_co.api == "cohere"

        # Broken: raised before the object that broke it; the SDK's stream closed.
        broken = [*ANTHROPIC[:4], {"type": "content_block_stop", "index": 5}, *ANTHROPIC[4:]]
        server.script(SSE(typed_events(broken)))
        sdk = await aclient.messages.create(model="claude", max_tokens=9, messages=ASK, stream=True)
        seen = []
        with pytest.raises(sf.LlmError) as caught:
            async for event in sf.checked(sdk):
                seen.append(event)
        assert caught.value.code == E.MALFORMED_RESPONSE and len(seen) == 3
        assert sdk.response.is_closed

        # Stopped early: async with closes at once; a bare break once the loop finalises the reader.
        server.script(SSE(openai_events(OPENAI_TEXT)), SSE(openai_events(OPENAI_TEXT)))
        sdk = await client.chat.completions.create(model="gpt", messages=ASK, stream=True)
        async with sf.checked(sdk) as stream:
            async for _ in stream:
                break
        assert sdk.response.is_closed
        sdk = await client.chat.completions.create(model="gpt", messages=ASK, stream=True)
        async for _ in sf.checked(sdk):
            break
        for _ in range(10):
            await asyncio.sleep(0)
        assert sdk.response.is_closed

    asyncio.run(run())

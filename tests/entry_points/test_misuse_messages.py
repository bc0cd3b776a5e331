"""The mistakes a new user makes with the entry points, each answered by a message that names the right call: a
file name given as JSON lines, a policy in capitals, an async iterable given to a sync entry point (and the other
way round), a provider's event given as a chunk, text, a path, a file or one chunk given as the chunks, and a
server-sent events body given as JSON lines."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import _cli
from streamfsm._api import _RECORDING_ENDS, _file_name

from ..cli_support import jsonl
from ..data import PROVIDER_STREAMS, SEED_CHUNKS

E = sf.ErrorCode


# -- a file name given to assemble_jsonl / validate_jsonl --------------------------------------------------


def validate_all(source: Any) -> list[Any]:
    return list(sf.validate_jsonl(source))


@pytest.mark.parametrize("entry", [sf.assemble_jsonl, validate_all], ids=["assemble_jsonl", "validate_jsonl"])
@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_a_file_name_given_as_json_lines_says_how_to_read_the_file(
    entry: Any, as_bytes: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("good.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    Path("recording").write_bytes(jsonl(SEED_CHUNKS))  # no suffix: it exists
    name_of = entry.__name__ if entry is sf.assemble_jsonl else "validate_jsonl"
    for name in ("good.jsonl", "recording", "elsewhere/missing.jsonl.gz"):
        with pytest.raises(sf.LlmError) as info:
            entry(name.encode() if as_bytes else name)
        assert (info.value.code, info.value.chunk_index) == (E.INVALID_CHUNK, 0)
        assert info.value.message.endswith(
            f"; {name_of}() reads a str as JSON text, not as a file name: to read the file, pass open({name!r}, 'rb'), "
            f"or read its streams with sf.read_recordings({name!r})"
        )
    with open("good.jsonl", "rb") as file:  # what it says works
        assert sf.assemble_jsonl(file).text == sf.assemble(SEED_CHUNKS).text


@pytest.mark.parametrize("entry", [sf.assemble_jsonl, validate_all], ids=["assemble_jsonl", "validate_jsonl"])
def test_a_path_object_given_as_json_lines_is_a_type_error_saying_how_to_read_it(entry: Any, tmp_path: Path) -> None:
    path = tmp_path / "good.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS))
    with pytest.raises(TypeError, match=r"not a path: to read the file, pass open\(.*good\.jsonl', 'rb'\)"):
        entry(path)


@pytest.mark.parametrize("text", ["hello", "{broken", "[1, 2"])
def test_text_that_is_no_file_name_keeps_the_plain_message(text: str) -> None:
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl(text)
    assert info.value.code == E.INVALID_CHUNK and "file name" not in info.value.message


def _reads_like_a_file_name(source: str | bytes) -> str | None:
    """The rule of a file name given as JSON lines, as the entry points' docstrings say it, decoded and stripped."""
    text = (source.decode("utf-8", "replace") if isinstance(source, bytes) else source).strip()
    if not text or "\n" in text or text[0] in "{[":
        return None
    return text if text.endswith(_RECORDING_ENDS) or os.path.isfile(text) else None


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=" \t\r\n\x0b\x0c\x1c\x85\xa0\u2028\u3000{[ab.jsonlgz\ufeff\xff", max_size=24), st.booleans())
def test_json_text_is_told_from_a_file_name_by_the_rule_however_it_starts(text: str, as_bytes: bool) -> None:
    """Whatever whitespace comes first (ASCII or not), text that opens an object or array is no file name: the
    entry points decide as the rule does, with or without decoding the text."""
    source: str | bytes = text.encode() if as_bytes else text
    assert _file_name(source) == _reads_like_a_file_name(source)


def test_a_file_name_on_a_later_line_is_not_taken_for_one() -> None:
    """Only a source of one line reads like a file name: the second line of real JSON lines is a bad line."""
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl(jsonl(SEED_CHUNKS[:1]) + b"good.jsonl\n")
    assert info.value.chunk_index == 1 and "file name" not in info.value.message


# -- policies in any case --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["HARNESS", "Harness", "hArNeSs"])
def test_a_policy_is_taken_in_any_case(name: str, seed_chunks: list[dict[str, Any]]) -> None:
    interleaved = [seed_chunks[0], seed_chunks[4], *seed_chunks[1:4], *seed_chunks[5:]]  # HARNESS only
    assert sf.Policy(name) is sf.Policy.HARNESS
    assert sf.assemble(interleaved, policy=name).text == "runoob 教程"
    assert sf.StreamAssembler(name).policy is sf.Policy.HARNESS
    assert sf.assemble(seed_chunks, policy="STRICT").text == "runoob 教程"


def test_an_unknown_policy_names_the_policies() -> None:
    with pytest.raises(ValueError, match=r"^'harnes' is not a policy: one of strict, harness \(in any case\), or a "):
        sf.assemble([], policy="harnes")


def test_the_command_takes_a_policy_in_any_case(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "good.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS))
    assert _cli.main(["check", "--json", "--policy", "HARNESS", str(path)]) == _cli.EXIT_OK
    assert '"policy":"harness"' in capsys.readouterr().out


# -- sync and async --------------------------------------------------------------------------------------


async def chunks() -> AsyncIterator[dict[str, Any]]:
    for chunk in SEED_CHUNKS:
        yield chunk


def test_an_async_iterable_given_to_assemble_names_aassemble() -> None:
    with pytest.raises(TypeError) as info:
        sf.assemble(chunks())  # type: ignore[arg-type]
    assert str(info.value) == (
        "assemble() takes an iterable of chunks, and 'async_generator' is an async iterable: read it with "
        "await sf.aassemble(...)"
    )
    assert asyncio.run(sf.aassemble(chunks())).text == "runoob 教程"  # what it says works


def test_an_async_iterable_given_to_validate_names_avalidate() -> None:
    with pytest.raises(TypeError) as info:
        list(sf.validate(chunks()))  # type: ignore[arg-type]
    assert str(info.value).endswith("is an async iterable: read it with async for chunk in sf.avalidate(...)")


def test_a_sync_iterable_given_to_the_async_entry_points_names_the_sync_ones() -> None:
    with pytest.raises(TypeError, match=r"'list' is a \(sync\) iterable: read it with sf\.assemble\(\.\.\.\)$"):
        asyncio.run(sf.aassemble(SEED_CHUNKS))  # type: ignore[arg-type]

    async def consume() -> None:
        async for _ in sf.avalidate(SEED_CHUNKS):  # type: ignore[arg-type]
            pass

    with pytest.raises(TypeError, match=r"read it with for chunk in sf\.validate\(\.\.\.\)$"):
        asyncio.run(consume())


def test_what_is_no_iterable_at_all_keeps_pythons_message() -> None:
    with pytest.raises(TypeError, match=r"^'int' object is not iterable$"):
        sf.assemble(3)  # type: ignore[arg-type]


# -- a provider's event given as a chunk -------------------------------------------------------------------


PROVIDER_EVENTS = {
    "OpenAI chat completions": (
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "hi"}}]},
        "from_openai_chunks",
    ),
    "Anthropic": (
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        "from_anthropic_events",
    ),
    "OpenAI Responses": ({"type": "response.output_text.delta", "delta": "hi"}, "from_openai_responses_events"),
    "Gemini": ({"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}, "from_gemini_chunks"),
    "Bedrock": ({"contentBlockDelta": {"delta": {"text": "hi"}, "contentBlockIndex": 0}}, "from_bedrock_events"),
    "Cohere": (
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "hi"}}}},
        "from_cohere_events",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("event", "converter"), PROVIDER_EVENTS.values(), ids=PROVIDER_EVENTS.keys())
def test_a_providers_event_given_as_a_chunk_names_its_converter(event: dict[str, Any], converter: str) -> None:
    api = next(name for name, (e, _) in PROVIDER_EVENTS.items() if e is event)
    for policy in sf.Policy:
        with pytest.raises(sf.LlmError) as info:
            sf.assemble([event], policy=policy)
        assert (info.value.code, info.value.chunk_index) == (E.INVALID_CHUNK, 0)
        assert (
            f"; it is an event of the {api} wire API, not a block-protocol chunk: convert them with sf.{converter}(...)"
            in info.value.message
        )
        assert hasattr(sf, converter)


def test_an_sdks_event_object_names_its_converter() -> None:
    from openai.types.chat import ChatCompletionChunk

    event = ChatCompletionChunk(id="c", choices=[], created=0, model="m", object="chat.completion.chunk")
    with pytest.raises(sf.LlmError, match=r"convert them with sf\.from_openai_chunks\(\.\.\.\)"):
        sf.assemble([event])  # type: ignore[list-item]


def test_a_chunk_that_is_nobodys_event_gets_no_hint() -> None:
    for chunk in ({"kind": "text"}, {"type": "text_delta", "index": 0}, ["block-start"]):
        with pytest.raises(sf.LlmError) as info:
            sf.assemble([chunk])  # type: ignore[list-item]
        assert "convert them" not in info.value.message


# -- a path, text, a file or one chunk given as the chunks -------------------------------------------------


def validate_chunks(chunks: Any) -> list[Any]:
    return list(sf.validate(chunks))


@pytest.mark.parametrize(
    ("entry", "lines"),
    [(sf.assemble, "assemble_jsonl"), (validate_chunks, "validate_jsonl")],
    ids=["assemble", "validate"],
)
def test_text_a_file_or_one_chunk_given_as_chunks_says_what_takes_it(entry: Any, lines: str, tmp_path: Path) -> None:
    path = tmp_path / "good.jsonl"
    path.write_bytes(jsonl(SEED_CHUNKS))
    name = "assemble" if entry is sf.assemble else "validate"
    with open(path, "rb") as file:
        wrong = {
            "a file name": (
                str(path),
                f"not a str: JSON lines go to sf.{lines}(text); a recording by its name is read",
            ),
            "JSON lines": (jsonl(SEED_CHUNKS), f"not bytes: JSON lines go to sf.{lines}(text)"),
            "a file": (file, f"and a file gives lines: pass the file to sf.{lines}(file)"),
            "one chunk": (SEED_CHUNKS[0], "and this dict is one chunk: pass a list of them ([chunk, ...])"),
        }
        for what, (source, said) in wrong.items():
            with pytest.raises(sf.LlmError) as info:
                entry(source)
            assert (info.value.code, info.value.chunk_index) == (E.INVALID_CHUNK, 0), what
            assert f"; {name}() takes an iterable of chunk objects, {said}" in info.value.message, what
            assert str(info.value).startswith("[INVALID_CHUNK] invalid chunk: a chunk must be an object, got "), what
    with open(path, "rb") as file:  # what it says works
        assert len(validate_all(file) if lines == "validate_jsonl" else [sf.assemble_jsonl(file)]) > 0
    assert [s.format for s in sf.read_recordings(str(path))] == ["jsonl"]


def test_a_path_object_given_as_chunks_is_a_type_error_naming_the_readers(tmp_path: Path) -> None:
    for call in (sf.assemble, validate_chunks, lambda c: asyncio.run(sf.aassemble(c))):
        with pytest.raises(TypeError, match=r"takes an iterable of chunk objects, not a path: JSON lines go to sf\."):
            call(tmp_path / "good.jsonl")


def test_text_or_one_chunk_given_to_the_async_entry_points_names_the_readers() -> None:
    with pytest.raises(
        TypeError, match=r"^aassemble\(\) takes an iterable of chunk objects, not a str: .*assemble_jsonl"
    ):
        asyncio.run(sf.aassemble("good.jsonl"))  # type: ignore[arg-type]

    async def consume() -> None:
        async for _ in sf.avalidate(SEED_CHUNKS[0]):  # type: ignore[arg-type]
            pass

    with pytest.raises(TypeError, match=r"^avalidate\(\) takes .* this dict is one chunk"):
        asyncio.run(consume())


def test_a_stream_of_wrong_chunks_gets_no_reader_hint() -> None:
    """Only the source itself being text, a file or a chunk earns the hint: a list of bad chunks does not."""
    for chunks in (["/"], [b"{}"], [[SEED_CHUNKS[0]]]):
        with pytest.raises(sf.LlmError) as info:
            sf.assemble(chunks)  # type: ignore[arg-type]
        assert "takes an iterable of chunk objects" not in info.value.message


# -- a server-sent events body given as JSON lines ----------------------------------------------------------

SSE_BODY = PROVIDER_STREAMS / "anthropic-messages" / "tool_use_response.sse"


@pytest.mark.parametrize("entry", [sf.assemble_jsonl, validate_all], ids=["assemble_jsonl", "validate_jsonl"])
def test_an_sse_body_given_as_json_lines_names_the_reader_that_takes_it(entry: Any) -> None:
    body = SSE_BODY.read_bytes()
    for source in (body, body.decode(), io.BytesIO(body)):
        with pytest.raises(sf.LlmError) as info:
            entry(source)
        assert (info.value.code, info.value.chunk_index) == (E.INVALID_CHUNK, 0)
        assert "line is not JSON" in info.value.message
        assert (
            "; it is a line of a server-sent events body (a provider's stream), not a JSON line of chunks: read the "
            "body with sf.read_recordings(...), which tells the provider from its first lines" in info.value.message
        )
    assert [s.format for s in sf.read_recordings(body)] == ["anthropic-sse"]  # what it says works


def test_a_line_that_is_not_json_nor_sse_keeps_the_plain_message() -> None:
    for text in (b"hello: world\n", b"  data\n", b"{data:1}\n"):
        with pytest.raises(sf.LlmError) as info:
            sf.assemble_jsonl(text)
        assert "server-sent events" not in info.value.message

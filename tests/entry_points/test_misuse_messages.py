"""The mistakes a new user makes with the entry points, each answered by a message that names the right call: a
file name given as JSON lines, a policy in capitals, an async iterable given to a sync entry point (and the other
way round), a provider's event given as a chunk."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import streamfsm as sf
from streamfsm import _cli

from ..cli_support import jsonl
from ..data import SEED_CHUNKS

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

"""Non-streamed response bodies read as results: each wire API's ``from_<api>_<body>`` gives the StreamResult its
stream assembles to (real bodies from the peers' test suites, SDK objects, errors, and a generated answer rendered
both ways)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf

from ..data import BODIES
from .support import split

E = sf.ErrorCode


def body(api: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads((BODIES / api / name).read_bytes())
    return loaded


def files(api: str) -> list[Path]:
    return sorted((BODIES / api).glob("*.json"))


# --- A generated answer ---------------------------------------------------------------------------------


@st.composite
def answers(draw: st.DrawFn) -> dict[str, Any]:
    """An answer: reasoning (maybe), text (maybe), tool calls with JSON arguments (maybe), never empty."""
    words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)
    reasoning = draw(st.none() | words)
    text = draw(st.none() | words)
    values = st.recursive(
        st.none() | st.booleans() | st.integers(-1000, 1000) | words,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(words, inner, max_size=3),
        max_leaves=6,
    )
    calls = draw(
        st.lists(st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), values, max_size=3), max_size=3)
    )
    if text is None and not calls:
        text = "ok"
    return {
        "reasoning": reasoning,
        "text": text,
        "calls": [{"id": f"call_{i}", "name": f"tool{i}", "arguments": args} for i, args in enumerate(calls)],
        "usage": (draw(st.integers(0, 10_000)), draw(st.integers(0, 10_000))),
    }


def assert_same(streamed: sf.StreamResult, answered: sf.StreamResult) -> None:
    assert answered == streamed
    assert answered.to_wire() == streamed.to_wire()


# --- OpenAI chat completions ----------------------------------------------------------------------------


def openai_body(answer: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer["text"]}
    if answer["reasoning"] is not None:
        message["reasoning_content"] = answer["reasoning"]
    if answer["calls"]:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": orjson.dumps(c["arguments"]).decode()},
            }
            for c in answer["calls"]
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if answer["calls"] else "stop"}],
        "usage": {"prompt_tokens": answer["usage"][0], "completion_tokens": answer["usage"][1]},
    }


def openai_stream(answer: dict[str, Any], draw: st.DrawFn) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            **more,
        }

    out = [chunk({"role": "assistant", "content": ""})]
    for key, field in (("reasoning", "reasoning_content"), ("text", "content")):
        if answer[key] is not None:
            out += [chunk({field: piece}) for piece in split(draw, answer[key])]
    for i, call in enumerate(answer["calls"]):
        arguments = orjson.dumps(call["arguments"]).decode()
        pieces = split(draw, arguments)
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": pieces[0]},
                        }
                    ]
                }
            )
        )
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in pieces[1:]]
    last = chunk({})
    last["choices"][0]["finish_reason"] = "tool_calls" if answer["calls"] else "stop"
    out.append(last)
    out.append(
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": openai_body(answer)["usage"]}
    )
    return out


@settings(max_examples=60, deadline=None)
@given(answers(), st.data())
def test_openai_a_body_gives_what_its_stream_gives(answer: dict[str, Any], data: st.DataObject) -> None:
    streamed = sf.assemble(sf.from_openai_chunks(openai_stream(answer, data.draw)))
    assert_same(streamed, sf.from_openai_completion(openai_body(answer)))


@pytest.mark.parametrize("path", files("openai-chat"), ids=lambda p: p.name)
def test_openai_real_bodies(path: Path) -> None:
    raw = orjson.loads(path.read_bytes())
    result = sf.from_openai_completion(raw)
    message = raw["choices"][0]["message"]
    content = message["content"]
    if isinstance(content, list):
        assert result.text == "".join(p["text"] for p in content if p["type"] == "text")
        assert result.reasoning == "".join(t["text"] for p in content if p["type"] == "thinking" for t in p["thinking"])
    else:
        assert result.text == content
        assert result.reasoning == (message.get("reasoning_content") or "")
    calls = message.get("tool_calls") or []
    assert [(c.id, c.name, c.parsed_arguments) for c in result.tool_calls] == [
        (c["id"], c["function"]["name"], orjson.loads(c["function"]["arguments"])) for c in calls
    ]
    assert result.finish.kind == ("tool-calls" if calls else "stop")
    assert result.usage is not None and result.usage.output_tokens == raw["usage"]["completion_tokens"]
    # The SDK's own object reads the same as the dict (its types have no list of parts in a message: Mistral's).
    from openai.types.chat import ChatCompletion

    if isinstance(content, str):
        assert sf.from_openai_completion(ChatCompletion.model_validate(raw)) == result


def test_openai_usage_is_mapped_as_in_a_stream() -> None:
    result = sf.from_openai_completion(body("openai-chat", "xai-tool-call.json"))
    assert result.usage == sf.Usage(
        input_tokens=307 - 244, output_tokens=26, cache_read_tokens=244, reasoning_tokens=255
    )


def test_openai_a_legacy_text_completion_is_a_text_block() -> None:
    # The example of the API reference (POST /v1/completions).
    legacy = {
        "id": "cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7",
        "object": "text_completion",
        "created": 1589478378,
        "model": "gpt-3.5-turbo-instruct",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"text": "\n\nThis is indeed a test", "index": 0, "logprobs": None, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
    result = sf.from_openai_completion(legacy)
    assert result.to_wire() == {
        "blocks": [{"type": "text", "text": "\n\nThis is indeed a test"}],
        "usage": {"inputTokens": 5, "outputTokens": 7},
        "finish": {"kind": "max-tokens"},
    }
    from openai.types import Completion

    assert sf.from_openai_completion(Completion.model_validate(legacy)) == result


def test_openai_an_error_body_is_classified_as_an_error_chunk() -> None:
    error = {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": "rate_limit_exceeded"}}
    with pytest.raises(sf.LlmError) as streamed:
        list(sf.from_openai_chunks([error]))
    with pytest.raises(sf.LlmError) as answered:
        sf.from_openai_completion(error)
    assert answered.value.code == streamed.value.code == E.RATE_LIMIT
    assert answered.value.message == streamed.value.message


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ([], "must be an object"),
        ({"object": "chat.completion"}, "'choices'"),
        ({"choices": []}, "'choices'"),
        ({"choices": ["x"]}, "a choice must be an object"),
        ({"choices": [{"index": 0, "message": "hi", "finish_reason": "stop"}]}, "'message' must be an object"),
        ({"choices": [{"index": 0, "message": {"content": "hi"}}]}, "incomplete: it ends without a finish_reason"),
        ({"choices": [{"index": 0, "message": {"content": 3}, "finish_reason": "stop"}]}, "must be a string"),
    ],
)
def test_openai_a_malformed_body_is_a_coded_error(bad: Any, words: str) -> None:
    with pytest.raises(sf.LlmError) as caught:
        sf.from_openai_completion(bad)
    assert caught.value.code == E.MALFORMED_RESPONSE
    assert words in caught.value.message


def test_openai_an_empty_stop_is_empty_as_in_a_stream() -> None:
    empty = {"choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]}
    with pytest.raises(sf.LlmError) as caught:
        sf.from_openai_completion(empty)
    assert caught.value.code == E.EMPTY_RESPONSE


def test_openai_limits_bound_a_body() -> None:
    long = {"choices": [{"index": 0, "message": {"content": "x" * 100}, "finish_reason": "stop"}]}
    with pytest.raises(sf.LlmError) as caught:
        sf.from_openai_completion(long, limits=sf.Limits(max_block_bytes=10))
    assert caught.value.code == E.LIMIT_EXCEEDED

"""``sf.parity``: a streamed answer held against the non-streamed one, field by field; nondeterminism as unknown."""

from __future__ import annotations

from typing import Any

import streamfsm as sf


def result(text: str = "", *calls: tuple[str, str], finish: str = "stop", usage: int | None = 5, **more: Any) -> Any:
    blocks: list[Any] = []
    if more.get("reasoning"):
        blocks.append(sf.ReasoningBlock(text=more["reasoning"]))
    if text:
        blocks.append(sf.TextBlock(text=text))
    blocks.extend(
        sf.ToolCallBlock(id=sf.CallId(f"c{i}"), name=name, arguments=args) for i, (name, args) in enumerate(calls)
    )
    counts = None if usage is None else sf.Usage(input_tokens=usage, output_tokens=3)
    return sf.StreamResult(blocks=blocks, usage=counts, finish=sf.FinishReason(kind=finish))


def fields(found: sf.Parity) -> list[str]:
    return [d.field for d in found.differences]


def test_the_same_answer_has_no_difference() -> None:
    found = sf.parity(result("Hi", ("f", '{"a": 1}')), result("Hi", ("f", '{"a": 1}')))
    assert (found.ok, found.content, found.differences) == (True, "same", ())


def test_arguments_are_compared_as_parsed_json() -> None:
    assert sf.parity(result("", ("f", '{"a":1,"b":[2]}')), result("", ("f", '{ "b": [2], "a": 1 }'))).ok
    found = sf.parity(result("", ("f", '{"a": 1}')), result("", ("f", '{"a": 2}')))
    assert found.differences == (sf.Difference("tool_calls[0].arguments", {"a": 1}, {"a": 2}, True),)


def test_each_structural_field() -> None:
    streamed = result("x", ("f", "{}"), finish="tool-calls", usage=None, reasoning="hm")
    other = result("x", ("g", "{}"), finish="stop", usage=5)
    found = sf.parity(streamed, other)
    assert fields(found) == ["reasoning", "tool_calls[0].name", "finish", "usage"]
    assert not any(d.content for d in found.differences)
    assert fields(sf.parity(result("x"), result("x", ("f", "{}")))) == ["tool_calls"]


def test_input_tokens_only_when_asked() -> None:
    assert sf.parity(result("x", usage=5), result("x", usage=7)).ok
    found = sf.parity(result("x", usage=5), result("x", usage=7), input_tokens=True)
    assert [(d.field, d.streamed, d.non_streamed) for d in found.differences] == [("usage.input_tokens", 5, 7)]


def test_a_text_difference_shows_where_it_begins() -> None:
    before = "word " * 100
    (difference,) = sf.parity(result(before + "streamed"), result(before + "answered")).differences
    assert difference.at == 500
    assert difference.streamed.startswith("\u2026") and difference.streamed.endswith("streamed")
    assert str(difference).startswith("text (from character 500): streamed '\u2026")
    assert difference.to_json()["at"] == 500


def test_two_different_non_streamed_answers_make_content_unknown() -> None:
    found = sf.parity(result("a"), result("b"), again=result("c"))
    assert (found.ok, found.content) == (True, "unknown")
    assert [d.field for d in found.unknown] == ["text"]


def test_content_differs_when_the_non_streamed_answers_agree() -> None:
    found = sf.parity(result("a"), result("b"), again=result("b"))
    assert (found.ok, found.content, fields(found)) == (False, "differs", ["text"])


def test_structure_must_match_one_of_the_non_streamed_answers() -> None:
    streamed = result("", ("f", "{}"), finish="tool-calls")
    assert sf.parity(streamed, result("no tool"), again=result("", ("f", "{}"), finish="tool-calls")).ok
    found = sf.parity(result("x"), result("y", ("f", "{}")), again=result("z", ("f", "{}")))
    assert (found.content, fields(found)) == ("unknown", ["tool_calls"])


def test_the_json_form() -> None:
    found = sf.parity(result("a", ("f", "{}")), result("a"))
    assert found.to_json() == {
        "content": "same",
        "differences": [{"field": "tool_calls", "streamed": ["f"], "nonStreamed": [], "content": False}],
        "unknown": [],
    }

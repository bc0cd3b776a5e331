"""Fuzzing the six provider converters with events that are valid JSON (or dicts, as an SDK gives them) but
hostile: nested deep, large, numbers past 64 bits, keys that are not strings, types where others belong.

Each example takes a recorded stream of one provider (``tests/fixtures``), mutates a few of its events (a value
replaced, a key added or removed, an event repeated or dropped) and converts it, through the machine or not.
Whatever comes out, nothing but :class:`streamfsm.LlmError` escapes. ``STREAMFSM_PROVIDER_FUZZ_EXAMPLES`` sets
the number of examples (default 300).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import streamfsm as sf

from ..data import FIXTURES

EXAMPLES = int(os.environ.get("STREAMFSM_PROVIDER_FUZZ_EXAMPLES", "300"))

CONVERTERS: dict[str, Callable[[Iterable[Any]], Any]] = {
    "openai-chat": sf.from_openai_chunks,
    "anthropic-messages": sf.from_anthropic_events,
    "openai-responses": sf.from_openai_responses_events,
    "gemini": sf.from_gemini_chunks,
    "bedrock": sf.from_bedrock_events,
    "cohere": sf.from_cohere_events,
}


def _recordings() -> list[tuple[str, list[Any]]]:
    found = []
    for folder in ("provider-streams", "more-provider-streams"):
        for name in CONVERTERS:
            for path in sorted((FIXTURES / folder / name).glob("*.jsonl")):
                events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
                found.append((name, events))
    for path in sorted((FIXTURES / "anthropic-blocks").glob("*.jsonl")):
        found.append(("anthropic-messages", [orjson.loads(line) for line in path.read_bytes().splitlines() if line]))
    return found


RECORDINGS = _recordings()


def nested(depth: int, kind: str) -> Any:
    """A value nested ``depth`` levels deep (lists or objects), built without recursion."""
    value: Any = 0
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


class Odd:
    """A key that is no JSON key at all (an SDK's dict may hold anything)."""

    def __repr__(self) -> str:
        return "Odd()"


#: Hostile values, each made afresh when drawn (a value inserted is never shared): valid JSON (or a dict an SDK
#: might give), none of them what the provider documents.
HOSTILE: list[Callable[[], Any]] = [
    *(
        lambda depth=depth, kind=kind: nested(depth, kind)
        for depth in (64, 255, 256, 600)
        for kind in ("list", "object")
    ),
    lambda: "x" * 200_000,
    lambda: "\ud800 lone surrogate",
    lambda: "",
    lambda: 2**63,
    lambda: 2**64,
    lambda: -(2**64) - 1,
    lambda: 2**70,
    lambda: 10**400,
    lambda: 1e308,
    lambda: -1e308,
    lambda: 5e-324,
    lambda: -0.0,
    lambda: True,
    lambda: None,
    lambda: [0] * 20_000,
    lambda: {f"k{i}": i for i in range(5_000)},
    lambda: {1: "int key"},
    lambda: {None: "none key"},
    lambda: {(1, 2): "tuple key"},
    lambda: {True: "bool key", "type": "text"},
    lambda: {Odd(): "odd key"},
    lambda: [{}, [], "", 0],
]
KEYS: list[Any] = ["type", "index", "delta", "text", "id", "name", 0, -1, None, (0,), Odd(), "x" * 1000]


def _copy(value: Any) -> Any:
    """A deep copy of dicts and lists, without recursion (``copy.deepcopy`` recurses: a deep value breaks it)."""
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    pending = [(value, root)]
    while pending:
        source, target = pending.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            made = {} if isinstance(item, dict) else [] if isinstance(item, list) else item
            if isinstance(target, dict):
                target[key] = made
            else:
                target.append(made)
            if made is not item:
                pending.append((item, made))
    return root


def _containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value`` (itself first), without recursion."""
    found, pending, seen = [], [value], set()
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            found.append(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            found.append(item)
            pending.extend(item)
    return found


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, list[Any], list[str]]:
    name, events = draw(st.sampled_from(RECORDINGS))
    events = _copy(events)
    done: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        if not events:
            break
        position = draw(st.integers(0, len(events) - 1))
        operation = draw(st.sampled_from(["replace", "add", "remove", "repeat", "drop", "whole"]))
        if operation == "repeat":
            events.insert(position, _copy(events[position]))
        elif operation == "drop":
            del events[position]
        elif operation == "whole":
            events[position] = draw(st.sampled_from(HOSTILE))()
        else:
            containers = _containers(events[position])
            if not containers:
                continue
            target = draw(st.sampled_from(containers))
            value = draw(st.sampled_from(HOSTILE))()
            if isinstance(target, list):
                if not target or operation == "add":
                    target.append(value)
                elif operation == "remove":
                    del target[draw(st.integers(0, len(target) - 1))]
                else:
                    target[draw(st.integers(0, len(target) - 1))] = value
            elif operation == "add" or not target:
                target[draw(st.sampled_from(KEYS))] = value
            else:
                key = draw(st.sampled_from(sorted(target, key=repr)))
                if operation == "remove":
                    del target[key]
                else:
                    target[key] = value
        done.append(operation)
    return name, events, done


def run(name: str, events: list[Any], policy: sf.Policy | None) -> str:
    chunks = CONVERTERS[name](events)
    try:
        if policy is None:
            list(chunks)
            return "converted"
        return sf.assemble(chunks, policy=policy).finish.kind
    except sf.LlmError as exc:
        assert isinstance(exc.message, str)
        return str(exc.code)


@pytest.mark.parametrize(("name", "events"), RECORDINGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(RECORDINGS)])
def test_the_recordings_convert(name: str, events: list[Any]) -> None:
    # The seeds, as recorded: most convert; some record a provider's error or a case refused on purpose.
    assert run(name, events, sf.Policy.HARNESS)


@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(case=mutated(), policy=st.sampled_from([sf.Policy.STRICT, sf.Policy.HARNESS, None]))
def test_hostile_events_raise_nothing_but_llm_error(case: tuple[str, list[Any], list[str]], policy: Any) -> None:
    name, events, done = case
    event(f"{name} ({', '.join(done)}): {run(name, events, policy)}")


@pytest.mark.parametrize("name", CONVERTERS)
@pytest.mark.parametrize("make", HOSTILE, ids=[f"hostile-{i}" for i in range(len(HOSTILE))])
def test_a_hostile_event_alone_is_an_llm_error_or_nothing(name: str, make: Callable[[], Any]) -> None:
    for policy in (sf.Policy.STRICT, None):
        run(name, [make()], policy)
        run(name, [{"type": make()}], policy)
        run(name, [{"type": "response.created", "response": make()}], policy)


@pytest.mark.slow
def test_a_value_nested_5000_levels_anywhere_is_an_llm_error_or_nothing() -> None:
    # Each top-level value of the first events of each recording, in turn, nested 5,000 levels deep: the
    # converters copy, measure and quote such values without recursion.
    for name, events in RECORDINGS:
        for position, item in enumerate(events[:4]):
            for key in list(item) if isinstance(item, dict) else []:
                changed = _copy(events)
                changed[position][key] = nested(5_000, "list")
                for policy in (sf.Policy.STRICT, None):
                    run(name, _copy(changed), policy)


def _gemini_number(value: Any) -> list[dict[str, Any]]:
    call = {"name": "f", "partialArgs": [{"jsonPath": "$.n", "numberValue": value}]}
    return [
        {
            "candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1},
        }
    ]


@pytest.mark.parametrize("value", [2**64, 2**70, -(2**63) - 1, -(10**100)])
def test_a_gemini_number_past_64_bits_is_written_as_it_is(value: int) -> None:
    # It was a TypeError from orjson; JSON has no bound on integers, and the machine reads them whole.
    (call,) = sf.assemble(sf.from_gemini_chunks(_gemini_number(value))).tool_calls
    assert call.arguments == f'{{"n":{value}}}' and call.parsed_arguments == {"n": value}


def test_a_gemini_number_of_more_digits_than_python_writes_is_malformed() -> None:
    with pytest.raises(sf.LlmError, match="too many digits") as caught:
        sf.assemble(sf.from_gemini_chunks(_gemini_number(10**5000)))
    assert caught.value.code == sf.ErrorCode.MALFORMED_RESPONSE


@pytest.mark.parametrize("event", [{1: 2, "a": 3}, {None: 1}, {(1, 2): 3, "b": 1}, {Odd(): 1}])
def test_a_responses_event_with_a_key_that_is_no_string_and_no_type_is_malformed(event: dict[Any, Any]) -> None:
    # It was a TypeError: the message sorted the event's keys, strings and others together.
    with pytest.raises(sf.LlmError, match="an event without a 'type'") as caught:
        list(sf.from_openai_responses_events([event]))
    assert caught.value.code == sf.ErrorCode.MALFORMED_RESPONSE


def test_a_gemini_string_or_key_with_a_lone_surrogate_is_escaped() -> None:
    # It was a TypeError from orjson (UTF-8 cannot carry a lone surrogate); JSON writes it as its \u escape.
    def chunk(call: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"functionCall": call}]}}
        if finish is None:
            return {"candidates": [candidate]}
        usage = {"promptTokenCount": 1, "candidatesTokenCount": 1}
        return {"candidates": [{**candidate, "finishReason": finish}], "usageMetadata": usage}

    def argument(text: str, going_on: bool) -> dict[str, Any]:
        return {"jsonPath": "$['k\ud800']", "stringValue": text, "willContinue": going_on}

    events = [
        chunk({"name": "f", "willContinue": True}),
        chunk({"partialArgs": [argument("a\udc00", True)], "willContinue": True}),
        chunk({"partialArgs": [argument("b", False)], "willContinue": True}),
        chunk({}, "STOP"),
    ]
    (call,) = sf.assemble(sf.from_gemini_chunks(events), policy=sf.Policy.HARNESS).tool_calls
    assert call.arguments == '{"k\\ud800":"a\\udc00b"}'


#: An index past 4,300 digits: Python cannot write it into a message (``ValueError``), so each converter must
#: refuse it where it reads an index, before any message names it.
HUGE = 10**5000

HUGE_INDEX: dict[str, tuple[Callable[[Iterable[Any]], Any], list[dict[str, Any]]]] = {
    "openai-chat": (
        sf.from_openai_chunks,
        [{"id": "a", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": HUGE, "id": "c",
          "function": {"name": "f", "arguments": "{}"}}]}}]}],
    ),
    "anthropic-messages": (
        sf.from_anthropic_events,
        [{"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}},
         {"type": "content_block_start", "index": HUGE, "content_block": {"type": "text", "text": ""}}],
    ),
    "openai-responses": (
        sf.from_openai_responses_events,
        [{"type": "response.created", "response": {"id": "r"}},
         {"type": "response.output_item.added", "output_index": HUGE, "item": {"type": "message", "id": "i"}}],
    ),
    "bedrock": (
        sf.from_bedrock_events,
        [{"messageStart": {"role": "assistant"}},
         {"contentBlockDelta": {"contentBlockIndex": HUGE, "delta": {"text": "x"}}}],
    ),
    "cohere": (
        sf.from_cohere_events,
        [{"type": "message-start", "id": "x"},
         {"type": "content-start", "index": HUGE, "delta": {"message": {"content": {"type": "text", "text": ""}}}}],
    ),
}  # fmt: skip


@pytest.mark.parametrize("api", sorted(HUGE_INDEX))
def test_an_index_too_big_to_write_is_malformed(api: str) -> None:
    convert, events = HUGE_INDEX[api]
    with pytest.raises(sf.LlmError) as caught:
        list(convert(events))
    assert caught.value.code == sf.ErrorCode.MALFORMED_RESPONSE
    assert "int of" in caught.value.message  # the index named by its size, not its digits

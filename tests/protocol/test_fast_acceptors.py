"""SPEC §1's field checks, as the handlers' fast acceptors test them, held to their definition (``_shape.check``).

A handler tests the fields it reads inline (exact types, cheapest first) and sends whatever it doubts to
``_shape.check``, the definition of a chunk's shape. One shared definition would cost every accepted chunk a call,
so the inline tests stay the fast path, and the property here holds them to the definition: a chunk whose fields
the fast path accepts (the machine never asked the whole check) is accepted by ``_shape.check`` too, which gives back
the very values the machine used (same values, same exact types).

The chunks are of every type, in the states their handlers run in (first delta and a later one, the hot block and
another, a block-end with and without deltas, usage, finish), under both policies, with fields drawn from values
near the edges: the bounds of a count, ``bool``, ``float``, an ``int`` or ``str`` subclass, the empty string, a
missing key, another mapping.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import LlmError, Policy, _shape

from ..builders import HARNESS, STRICT, Chunk, U, start, text_delta, tool_delta
from .test_properties import EXAMPLES

MAX_INT = 2**53 - 1


class Watched(sf.StreamAssembler):
    """The machine, counting the chunks its handlers sent to the whole check (``Stream._shaped``, which calls
    ``_shape.check``). An interpreted subclass: the compiled machine calls its override too."""

    checked = 0

    def _shaped(self, chunk: object, n: int) -> tuple[dict[str, Any], str]:
        self.checked += 1
        return super()._shaped(chunk, n)


class IntSub(int):
    pass


class StrSub(str):
    pass


class DictSub(dict):  # type: ignore[type-arg]
    pass


COUNTS = st.one_of(
    st.sampled_from([0, 0, 0, 1, -1, MAX_INT, MAX_INT + 1, 2**64, True, False, None, 0.0, 1.5, "0", IntSub(0)]),
    st.integers(),
)
TEXTS = st.one_of(
    st.sampled_from(["", "c", "f", "{", "}", "{}", "x", StrSub("c"), StrSub(""), None, 0, b"c"]),
    st.text(max_size=4),
)
BLOCK_TYPES = st.sampled_from(["text", "reasoning", "tool-call", "image", "video", "", StrSub("text"), None, 5])
FINISH_KINDS = st.sampled_from(
    ["stop", "tool-calls", "max-tokens", "error", "aborted", "paused", "", StrSub("stop"), None, 5]
)


def mapping(entries: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """An object field: mostly a plain dict, sometimes another mapping or no mapping at all."""
    return st.one_of(entries, entries.map(DictSub), st.sampled_from([None, [], "x"]))


def chunk(kind: str, required: dict[str, Any], optional: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """A chunk of type ``kind``: each field drawn from its strategy; half of them with some required field missing."""
    full = st.fixed_dictionaries({"type": st.just(kind), **required}, optional=optional or {})
    partial = st.fixed_dictionaries({"type": st.just(kind)}, optional={**required, **(optional or {})})
    return full | partial


BLOCK_START = chunk("block-start", {"index": COUNTS, "blockType": BLOCK_TYPES})
TEXT_DELTA = chunk("text-delta", {"index": COUNTS, "text": TEXTS})
REASONING_DELTA = chunk("reasoning-delta", {"index": COUNTS, "text": TEXTS})
TOOL_DELTA = chunk("tool-call-delta", {"index": COUNTS, "id": TEXTS, "argumentsDelta": TEXTS}, {"name": TEXTS})
ENDED = mapping(
    st.fixed_dictionaries(
        {"type": BLOCK_TYPES},
        optional={"text": TEXTS, "id": TEXTS, "name": TEXTS, "arguments": TEXTS, "attachment": mapping(st.just({}))},
    )
)
BLOCK_END = chunk("block-end", {"index": COUNTS, "block": ENDED})
USAGE = chunk(
    "usage",
    {
        "usage": mapping(
            st.fixed_dictionaries(
                {"inputTokens": COUNTS, "outputTokens": COUNTS},
                optional={"cacheReadTokens": COUNTS, "cacheWriteTokens": COUNTS, "reasoningTokens": COUNTS},
            )
        )
    },
)
FAILURE = mapping(st.fixed_dictionaries({"message": TEXTS, "code": TEXTS}, optional={"status": COUNTS}))
FINISH = chunk(
    "finish",
    {"reason": mapping(st.fixed_dictionaries({"kind": FINISH_KINDS}, optional={"failure": FAILURE}))},
    {"replayState": st.sampled_from([None, {"a": 1}, math.nan])},
)

#: (the policies, what comes before, the chunk): each chunk type in the states its handler runs in.
BOTH = (STRICT, HARNESS)
CASES: list[tuple[str, tuple[Policy, ...], list[Chunk], st.SearchStrategy[Any]]] = [
    ("block-start, the first", BOTH, [], BLOCK_START),
    ("block-start while a block is open", BOTH, [start(0, "text")], BLOCK_START),
    ("text-delta of the hot block", BOTH, [start(0, "text")], TEXT_DELTA),
    ("text-delta after another", BOTH, [start(0, "text"), text_delta(0, "a")], TEXT_DELTA),
    ("reasoning-delta of the hot block", BOTH, [start(0, "reasoning")], REASONING_DELTA),
    ("text-delta of a block not hot", (HARNESS,), [start(0, "text"), start(1, "text")], TEXT_DELTA),
    ("tool-call-delta, the first", BOTH, [start(0, "tool-call")], TOOL_DELTA),
    ("tool-call-delta after a named one", BOTH, [start(0, "tool-call"), tool_delta(0, "c", "{", name="f")],
     TOOL_DELTA),
    ("tool-call-delta after an unnamed one", BOTH, [start(0, "tool-call"), tool_delta(0, "c", "{")], TOOL_DELTA),
    ("tool-call-delta after an empty id", (HARNESS,), [start(0, "tool-call"), tool_delta(0, "", "{", name="")],
     TOOL_DELTA),
    ("block-end of a text block", BOTH, [start(0, "text")], BLOCK_END),
    ("block-end of a text block with deltas", BOTH, [start(0, "text"), text_delta(0, "x")], BLOCK_END),
    ("block-end of a reasoning block", BOTH, [start(0, "reasoning")], BLOCK_END),
    ("block-end of a tool call", BOTH, [start(0, "tool-call")], BLOCK_END),
    ("block-end of a tool call with deltas", BOTH, [start(0, "tool-call"), tool_delta(0, "c", "{}", name="f")],
     BLOCK_END),
    ("block-end of an image block", BOTH, [start(0, "image")], BLOCK_END),
    ("block-end of a block of another type", (HARNESS,), [start(0, "video")], BLOCK_END),
    ("usage", BOTH, [], USAGE),
    ("usage after a block", BOTH, [start(0, "text"), {"type": "block-end", "index": 0,
                                                      "block": {"type": "text", "text": ""}}], USAGE),
    ("finish after usage", BOTH, [U], FINISH),
    ("finish, no usage", BOTH, [], FINISH),
    ("finish with a block open", BOTH, [start(0, "text")], FINISH),
]  # fmt: skip


def same(got: Any, given: Any) -> bool:
    """The same values with the same exact types, all the way down (NaN is itself)."""
    if type(got) is not type(given):
        return False
    if type(got) is dict:
        return got.keys() == given.keys() and all(same(got[key], given[key]) for key in got)
    if type(got) is list:
        return len(got) == len(given) and all(same(a, b) for a, b in zip(got, given, strict=True))
    return bool(got == given) or (got != got and given != given)


def taken_fast(policy: Policy, before: list[Chunk], c: Any) -> bool:
    """Feed ``before``, then ``c``: whether the handlers took ``c``'s fields without the whole check."""
    asm = Watched(policy)
    for earlier in before:
        asm.feed(earlier)  # a state the handler of ``c`` runs in (``before`` is valid under both policies)
    asm.checked = 0
    with contextlib.suppress(LlmError):  # another rule may refuse the chunk: after its fields were checked
        asm.feed(c)
    return asm.checked == 0


@pytest.mark.parametrize(
    ("policy", "before", "chunks"),
    [pytest.param(p, b, c, id=f"{p.value}: {name}") for name, policies, b, c in CASES for p in policies],
)
def test_what_the_fast_path_accepts_the_whole_check_accepts_with_the_same_values(
    policy: Policy, before: list[Chunk], chunks: st.SearchStrategy[Any]
) -> None:
    @settings(
        max_examples=max(50, EXAMPLES // 2),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(chunks)
    def holds(c: Any) -> None:
        if taken_fast(policy, before, c):
            shaped, t = _shape.check(c, policy is HARNESS)  # a ShapeError here: the fast path took a bad field
            assert t == c["type"]
            assert same(shaped, c), (shaped, c)

    holds()


@pytest.mark.parametrize("policy", [STRICT, HARNESS])
def test_the_fast_path_takes_plain_chunks_and_doubts_the_rest(policy: Policy) -> None:
    """What the property above reads: a plain chunk of each type takes the fast path; the same chunk with a field of a
    ``str`` or ``int`` subclass, or a nested mapping that is no dict, goes to the whole check (compiled or not)."""
    tool = [start(0, "tool-call")]
    plain: list[tuple[list[Chunk], dict[str, Any]]] = [
        ([], start(0, "text")),
        ([start(0, "text")], text_delta(0, "x")),
        (tool, tool_delta(0, "c", "{", name="f")),
        ([*tool, tool_delta(0, "c", "{", name="f")], tool_delta(0, "c", "}")),
        (tool, {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c", "name": "f",
                                                             "arguments": "{}"}}),
        ([], U),
        ([U], {"type": "finish", "reason": {"kind": "stop"}}),
    ]  # fmt: skip
    # The largest count the wire carries is plain too (refused, if at all, by another rule than its shape).
    edge = {"inputTokens": MAX_INT, "outputTokens": MAX_INT}
    plain += [
        ([], start(MAX_INT, "text")),
        ([start(0, "text")], text_delta(MAX_INT, "x")),
        ([start(0, "text")], {"type": "block-end", "index": MAX_INT, "block": {"type": "text", "text": ""}}),
        ([], {"type": "usage", "usage": edge}),
    ]
    for before, c in plain:
        assert taken_fast(policy, before, c), c
    doubted: list[tuple[list[Chunk], dict[str, Any]]] = [
        ([], {**start(0, "text"), "blockType": StrSub("text")}),
        ([start(0, "text")], {**text_delta(0, "x"), "index": IntSub(0)}),
        (tool, {**tool_delta(0, "c", "{"), "id": StrSub("c")}),
        ([], {"type": "usage", "usage": DictSub(U["usage"])}),
        ([U], {"type": "finish", "reason": {"kind": "paused"}}),
    ]
    for before, c in doubted:
        assert not taken_fast(policy, before, c), c

"""The assembler as a Python object, alike compiled (mypyc) and pure: subclassed, pickled and copied at any chunk
(a checkpoint that comes to the same end), its flags and its lines checked the same way."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import _parser

from ..builders import U, end_tool, source_machine, start, tool_delta
from ..data import SEED_CHUNKS
from .test_properties import mutated, sources

COPIES = {
    "pickle": lambda m: pickle.loads(pickle.dumps(m)),
    "deepcopy": copy.deepcopy,
    "copy": copy.copy,
}


def run(asm: sf.StreamAssembler, chunks: list[Any], results: bool) -> tuple[Any, ...]:
    """Feed ``chunks`` to the end: the verdict (a failure as its code, position and message), what the stream came
    to, the notes and the chunk count."""
    try:
        for chunk in chunks:
            asm.feed(chunk)
        end: Any = asm.close().to_wire() if results else asm.summary()
        verdict: tuple[Any, ...] = ("ok", end)
    except sf.LlmError as err:
        verdict = ("failed", err.code, err.chunk_index, err.message.removeprefix("the stream already failed: "))
    notes = [(str(e.code), e.chunk_index, count, e.message) for e, count in asm.notes]
    return verdict, notes, asm.chunk_count


@settings(max_examples=300, deadline=None)
@given(mutated(), st.integers(0, 60), st.sampled_from(sorted(COPIES)), st.booleans())
def test_a_machine_copied_at_any_chunk_comes_to_the_same_end(
    case: tuple[Any, list[Any], list[str]], at: int, how: str, results: bool
) -> None:
    source, chunks, _ = case
    whole = run(sf.StreamAssembler(source.policy, results=results), chunks, results)
    first = sf.StreamAssembler(source.policy, results=results)
    at = at % (len(chunks) + 1)
    try:
        for chunk in chunks[:at]:
            first.feed(chunk)
    except sf.LlmError:
        pass  # a failed machine is copied failed: the copy raises the same error again
    copied = COPIES[how](first)
    assert type(copied) is sf.StreamAssembler and copied is not first
    assert (copied.state, copied.chunk_count, copied.policy) == (first.state, first.chunk_count, first.policy)
    assert run(copied, chunks[at:], results) == whole
    assert run(first, chunks[at:], results) == whole  # the original is not changed by its copy's feeding


def test_a_checkpoint_of_json_lines_resumes_them() -> None:
    lines = [orjson.dumps(chunk) for chunk in SEED_CHUNKS]
    asm = sf.StreamAssembler()
    asm.feed_lines(lines[:5])
    saved = pickle.dumps(asm)
    resumed: sf.StreamAssembler = pickle.loads(saved)
    assert resumed._keys is _parser.KEYS
    resumed.feed_lines(lines[5:])
    assert resumed.close() == sf.assemble(SEED_CHUNKS)


class SlowDeltas(source_machine().StreamAssembler):  # type: ignore[misc]
    """The machine as source, counting the deltas that missed the fast path (``Handlers._delta``)."""

    slow = 0

    def _delta(self, c: Any, t: str, n: int) -> None:
        self.slow += 1
        super()._delta(c, t, n)


#: Limits a copy must keep: tight enough that the streams drawn pass them, each limit on its own too.
TIGHT = [
    None,
    sf.Limits(max_chunks=20, max_blocks=3, max_block_bytes=40, max_stream_bytes=90),
    sf.Limits(max_chunks=8),
    sf.Limits(max_blocks=2),
    sf.Limits(max_block_bytes=12),
    sf.Limits(max_stream_bytes=30),
]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(mutated(), sources().map(lambda s: (s, s.chunks, []))),
    st.integers(0, 60),
    st.sampled_from(sorted(COPIES)),
    st.booleans(),
    st.booleans(),
    st.sampled_from(TIGHT),
)
def test_a_copy_keeps_the_settings_and_takes_the_same_paths(
    case: tuple[Any, list[Any], list[str]], at: int, how: str, results: bool, raw: bool, limits: sf.Limits | None
) -> None:
    """A copy keeps the limits, ``raw_arguments`` and ``results``, and the open blocks as they stood, the hot one
    included: fed the rest, it comes to the same end as the original, sending the same deltas to their rules."""
    source, chunks, _ = case
    first = SlowDeltas(source.policy, limits, raw_arguments=raw, results=results)
    at = at % (len(chunks) + 1)
    try:
        for chunk in chunks[:at]:
            first.feed(chunk)
    except sf.LlmError:
        pass
    copied = COPIES[how](first)
    assert type(copied) is SlowDeltas
    if not results:
        with pytest.raises(ValueError, match="keeps no results"):
            copied.snapshot()
    first.slow = copied.slow = 0
    assert run(copied, chunks[at:], results) == run(first, chunks[at:], results)
    assert copied.slow == first.slow


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_copy_keeps_raw_arguments(how: str) -> None:
    """Arguments that are no JSON object pass with ``raw_arguments`` (noted), in the copy too."""
    chunks = [start(0, "tool-call"), tool_delta(0, "c", "not json", name="f"), end_tool(0, "c", "f", "not json"), U,
              {"type": "finish", "reason": {"kind": "tool-calls"}}]  # fmt: skip
    first = sf.StreamAssembler("strict", raw_arguments=True)
    for chunk in chunks[:2]:
        first.feed(chunk)
    copied = COPIES[how](first)
    for chunk in chunks[2:]:
        copied.feed(chunk)
    assert copied.close().tool_calls[0].arguments == "not json"
    assert [e.code for e, _ in copied.notes] == ["TOOL_ARGUMENTS_INVALID"]


def test_a_failed_chunk_takes_back_only_its_own_count_of_a_note() -> None:
    """HARNESS notes two tool calls with an empty id (the second also shares the first's); a third's first delta says
    an empty id too (counted) and then passes the stream's bytes: failed, it takes back its counts only."""
    chunks = []
    for index in range(2):
        chunks += [start(index, "tool-call"), tool_delta(index, "", "{}", name="f"), end_tool(index, "", "f", "{}")]
    chunks += [start(2, "tool-call"), tool_delta(2, "", "x" * 200, name="f")]
    asm = sf.StreamAssembler("harness", sf.Limits(max_stream_bytes=100))
    with pytest.raises(sf.LlmError) as info:
        for chunk in chunks:
            asm.feed(chunk)
    assert (info.value.code, info.value.chunk_index) == ("LIMIT_EXCEEDED", len(chunks) - 1)
    assert {e.code: count for e, count in asm.notes} == {"INVALID_CHUNK": 2, "TOOL_CALL_CONFLICT": 1}


class Counting(sf.StreamAssembler):
    """A subclass that counts what it was fed, as an application might."""

    def feed(self, chunk: Any) -> None:
        self.fed = getattr(self, "fed", 0) + 1
        super().feed(chunk)


def test_the_assembler_may_be_subclassed_and_copied_as_its_class() -> None:
    asm = Counting()
    for chunk in SEED_CHUNKS[:4]:
        asm.feed(chunk)
    resumed = pickle.loads(pickle.dumps(asm))
    assert type(resumed) is Counting
    for chunk in SEED_CHUNKS[4:]:
        resumed.feed(chunk)
    assert resumed.fed == len(SEED_CHUNKS) - 4 and resumed.close() == sf.assemble(SEED_CHUNKS)


@pytest.mark.parametrize("value", [1, 0, None, "yes"])
@pytest.mark.parametrize("flag", ["raw_arguments", "results"])
def test_a_flag_that_is_not_a_bool_is_a_type_error(flag: str, value: object) -> None:
    with pytest.raises(TypeError):
        sf.StreamAssembler(**{flag: value})  # type: ignore[arg-type]
    # As source, the machine's own words (compiled, the call itself checks, in mypyc's)
    with pytest.raises(TypeError, match=f"^{flag} is True or False, got {type(value).__name__}$"):
        source_machine().StreamAssembler(**{flag: value})
    other = "results" if flag == "raw_arguments" else "raw_arguments"
    with pytest.raises(TypeError, match=f"^{flag} is True or False"):  # the one that is not, whichever it is
        source_machine().StreamAssembler(**{flag: value, other: True})


@pytest.mark.parametrize("line", [5, None, 1.5, ["a"]])
def test_a_line_that_is_not_bytes_or_text_is_a_type_error(line: object) -> None:
    with pytest.raises(TypeError):
        sf.StreamAssembler().feed_line(line)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sf.StreamAssembler().feed_lines([line])  # type: ignore[list-item]

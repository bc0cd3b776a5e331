"""The compiled table and the declared ``transitions`` machine agree; the diagram comes from the declaration."""

from __future__ import annotations

import itertools

import pytest
from transitions import MachineError

import streamfsm as sf
from streamfsm import _machine as m
from streamfsm._shape import CHUNK_TYPES

GUARD_VALUES = list(itertools.product([False, True], repeat=len(m.GUARDS)))


class Model:
    """A model whose guards hold as configured."""

    def __init__(self, values: dict[str, bool]) -> None:
        self.values = values

    def interleave(self) -> bool:
        return self.values["interleave"]

    def last_open(self) -> bool:
        return self.values["last_open"]

    def may_finish(self) -> bool:
        return self.values["may_finish"]


def declared_next(state: str, chunk_type: str, values: dict[str, bool]) -> str | None:
    """Ask the ``transitions`` machine itself where a trigger leads."""
    model = Model(values)
    m._declared_machine(model, initial=state)
    try:
        moved = model.trigger(chunk_type)  # type: ignore[attr-defined]
    except MachineError:
        return None
    return model.state if moved else None  # type: ignore[attr-defined]


@pytest.mark.parametrize("state", m.STATES)
@pytest.mark.parametrize("chunk_type", CHUNK_TYPES)
def test_table_agrees_with_transitions_machine(state: str, chunk_type: str) -> None:
    for combo in GUARD_VALUES:
        values = dict(zip(m.GUARDS, combo, strict=True))
        compiled = m.next_state(state, chunk_type, values.__getitem__)
        assert compiled == declared_next(state, chunk_type, values), (state, chunk_type, values)


@pytest.mark.parametrize("state", [m.READY, m.IN_BLOCK, m.USAGE])
@pytest.mark.parametrize("chunk_type", CHUNK_TYPES)
def test_every_refusal_has_a_code(state: str, chunk_type: str) -> None:
    """Wherever some guard combination refuses a chunk, REJECT names the code; nowhere else."""
    refused = any(
        m.next_state(state, chunk_type, dict(zip(m.GUARDS, combo, strict=True)).__getitem__) is None
        for combo in GUARD_VALUES
    )
    assert ((state, chunk_type) in m.REJECT) == refused


def test_terminal_states_accept_nothing() -> None:
    assert m.TABLE[m.FINISHED] == {}
    assert m.TABLE[m.FAILED] == {}


def test_the_table_is_what_the_declaration_says() -> None:
    assert m.TABLE[m.READY] == {
        "block-start": ((m.IN_BLOCK, (), ()),),
        "usage": ((m.USAGE, (), ()),),
        "finish": ((m.FINISHED, (), ()),),
    }
    assert m.TABLE[m.USAGE] == {"finish": ((m.FINISHED, ("may_finish",), ()),)}
    assert m.TABLE[m.IN_BLOCK]["block-end"] == (
        (m.READY, ("last_open",), ()),
        (m.IN_BLOCK, (), ("last_open",)),
    )


def test_diagram_is_mermaid_from_the_declaration() -> None:
    text = sf.diagram()
    assert "stateDiagram-v2" in text
    for state in m.STATES:
        assert f'state "{state}" as {state}' in text
    assert "READY --> IN_BLOCK: block-start" in text
    assert "[interleave]" in text
    assert "IN_BLOCK --> READY: block-end [last_open]" in text
    assert "s_active" not in text


def test_diagram_per_policy() -> None:
    strict = sf.diagram(sf.Policy.STRICT)
    harness = sf.diagram("harness")
    assert "interleave" not in strict and "interleave" not in harness
    assert "IN_BLOCK --> IN_BLOCK: block-start" in harness
    assert "IN_BLOCK --> IN_BLOCK: block-start" not in strict
    assert "streamfsm (strict)" in strict and "streamfsm (harness)" in harness


def test_states_visited_by_a_stream(seed_chunks: list[dict[str, object]]) -> None:
    asm = sf.StreamAssembler()
    seen = [asm.state]
    for chunk in seed_chunks:
        asm.feed(chunk)
        seen.append(asm.state)
    assert seen == [
        "READY", "IN_BLOCK", "IN_BLOCK", "IN_BLOCK", "READY",
        "IN_BLOCK", "IN_BLOCK", "READY", "USAGE", "FINISHED",
    ]  # fmt: skip
    with pytest.raises(sf.LlmError):
        asm.feed(seed_chunks[0])
    assert asm.state == "FAILED"

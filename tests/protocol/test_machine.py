"""The compiled routes and the declared ``transitions`` machine agree; the diagram comes from the declaration."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from transitions import MachineError

import streamfsm as sf
from streamfsm import _table as m
from streamfsm._handlers import BLOCK_END, BLOCK_START, DELTA, FINISH, USAGE, Route, _Rows, start_rows
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


def test_terminal_states_accept_nothing() -> None:
    for policy in sf.Policy:
        assert {state for state, _ in m.ROUTES[policy]} == {m.READY, m.IN_BLOCK, m.USAGE}


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


# -- the routes are compiled from the declaration, at import: checked here against the rules --------


#: The rules of the machine (docs/concepts/machine.md), written out: (state, chunk type) -> dest given the guards.
def expected_dest(state: str, chunk_type: str, interleave: bool, last_open: bool, may_finish: bool) -> str | None:
    deltas = ("text-delta", "reasoning-delta", "tool-call-delta")
    if state == m.READY:
        return {"block-start": m.IN_BLOCK, "usage": m.USAGE, "finish": m.FINISHED}.get(chunk_type)
    if state == m.IN_BLOCK:
        if chunk_type == "block-start":
            return m.IN_BLOCK if interleave else None
        if chunk_type in deltas:
            return m.IN_BLOCK
        if chunk_type == "block-end":
            return m.READY if last_open else m.IN_BLOCK
        if chunk_type == "usage":
            return m.USAGE
        return m.FINISHED if may_finish else None
    if state == m.USAGE and chunk_type == "finish":
        return m.FINISHED if may_finish else None
    return None


@pytest.mark.parametrize("policy", list(sf.Policy))
def test_the_routes_are_the_rules_for_every_guard(policy: sf.Policy) -> None:
    """ROUTES[policy][(state, type)] = (handler, dest, guard, otherwise): the rules written out, for both values of
    the one guard an entry reads, with ``interleave`` resolved by the policy; no entry where a chunk is refused.
    The routes are read from the declaration here, as the import read them (the same)."""
    routes = m._routes(policy)
    assert routes == m.ROUTES[policy]
    interleave = policy is sf.Policy.HARNESS
    for state in m.STATES:
        for chunk_type in CHUNK_TYPES:
            route = routes.get((state, chunk_type))
            ways = {
                (last_open, may_finish): expected_dest(state, chunk_type, interleave, last_open, may_finish)
                for last_open in (False, True)
                for may_finish in (False, True)
            }
            if route is None:
                assert set(ways.values()) == {None}, (state, chunk_type)
                continue
            handler, dest, guard, otherwise = route
            assert handler == ("delta" if chunk_type.endswith("-delta") else chunk_type)
            for (last_open, may_finish), want in ways.items():
                holds = {"": True, "last_open": last_open, "may_finish": may_finish}[guard]
                assert (dest if holds else otherwise) == want, (state, chunk_type, guard, holds)


def test_the_routes_agree_with_the_transitions_machine() -> None:
    """Every route leads where the ``transitions`` machine's trigger leads, for each value of the guards."""
    for policy in sf.Policy:
        for (state, chunk_type), (_, dest, guard, otherwise) in m._routes(policy).items():
            for combo in GUARD_VALUES:
                values = dict(zip(m.GUARDS, combo, strict=True))
                values["interleave"] = policy is sf.Policy.HARNESS
                holds = values[guard] if guard else True
                assert (dest if holds else otherwise) == declared_next(state, chunk_type, values)


@pytest.mark.parametrize("policy", list(sf.Policy))
def test_the_rows_are_the_routes_linked(policy: sf.Policy) -> None:
    """The handlers' rows, built from the routes (here, as at import): one Route object an entry, with the number of
    its handler, its next states, and the rows of those states; where a stream starts."""
    rows = _Rows(policy)
    by_state = rows.by_state
    routes = m._routes(policy)
    assert set(by_state) == set(m.STATES)
    assert {(state, chunk_type) for state, row in by_state.items() for chunk_type in row} == set(routes)
    numbers = {"block-start": BLOCK_START, "delta": DELTA, "block-end": BLOCK_END, "usage": USAGE, "finish": FINISH}
    for (state, chunk_type), (handler, dest, _, otherwise) in routes.items():
        route = by_state[state][chunk_type]
        assert route.row is by_state[state] and route.chunk_type == chunk_type
        assert route.handler == numbers[handler]
        assert route.dest == dest and route.dest_row is by_state[dest]
        assert route.stays == (dest == state)
        assert route.refuses == (otherwise is None)
        assert route.otherwise == (dest if otherwise is None else otherwise)
        assert route.otherwise_row is by_state[route.otherwise]
    assert rows.ready is by_state[m.READY] and rows.first is by_state[m.READY]["block-start"]
    started = start_rows(policy)  # the rows a stream starts with: the same, read at import

    def plain(rows: dict[str, dict[str, Route]]) -> dict[str, dict[str, tuple[Any, ...]]]:
        return {s: {t: (r.handler, r.dest, r.otherwise, r.stays) for t, r in row.items()} for s, row in rows.items()}

    assert plain(by_state) == plain(started.by_state)


def test_a_missing_route_is_the_precedence_code() -> None:
    """Where a policy has no route, or a guard with nowhere to go, the refusal's code is the one REJECT names;
    REJECT names no other."""
    refused_somewhere: dict[tuple[str, str], bool] = {}
    for policy in sf.Policy:
        for state in (m.READY, m.IN_BLOCK, m.USAGE):
            for chunk_type in CHUNK_TYPES:
                route = m.ROUTES[policy].get((state, chunk_type))
                refused = route is None or route[3] is None
                if refused:
                    assert m.refusal(state, chunk_type, False) == m.REJECT[(state, chunk_type)]
                refused_somewhere[(state, chunk_type)] = refused_somewhere.get((state, chunk_type), False) or refused
    assert {key for key, refused in refused_somewhere.items() if refused} == set(m.REJECT)  # a code where refused
    assert m.refusal(m.USAGE, "block-start", True) == sf.ErrorCode.BLOCKS_INTERLEAVED
    assert m.refusal(m.USAGE, "block-start", False) == sf.ErrorCode.CHUNK_AFTER_USAGE


def test_the_declaration_per_policy() -> None:
    """STRICT drops the interleaving edge, HARNESS takes it without a guard; nothing else changes."""
    declared = m._declaration()
    assert declared == [dict(t) for t in m.TRANSITIONS]
    interleaving = {"trigger": "block-start", "source": m.IN_BLOCK, "dest": m.IN_BLOCK, "conditions": "interleave"}
    assert m._declaration(sf.Policy.STRICT) == [t for t in declared if t != interleaving]
    unguarded = {"trigger": "block-start", "source": m.IN_BLOCK, "dest": m.IN_BLOCK}
    assert m._declaration(sf.Policy.HARNESS) == [unguarded if t == interleaving else t for t in declared]


def test_the_policy_diagrams_are_the_declared_one_with_the_guard_resolved() -> None:
    declared = sf.diagram().splitlines()
    edge = "  IN_BLOCK --> IN_BLOCK: block-start [interleave] | text-delta | reasoning-delta | tool-call-delta | "
    assert edge + "block-end [!last_open]" in declared
    strict = [
        line.replace("block-start [interleave] | ", "").replace("streamfsm", "streamfsm (strict)") for line in declared
    ]
    harness = [line.replace(" [interleave]", "").replace("streamfsm", "streamfsm (harness)") for line in declared]
    assert sorted(sf.diagram(sf.Policy.STRICT).splitlines()) == sorted(strict)
    assert sorted(sf.diagram("harness").splitlines()) == sorted(harness)

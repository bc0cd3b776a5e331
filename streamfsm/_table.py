"""The machine's table: what may follow what, declared once, and the diagram drawn from it.

The machine has five stream-level states::

    READY     no block open, no usage yet          (the initial state)
    IN_BLOCK  at least one block open              (exactly one under Policy.STRICT)
    USAGE     usage received: only finish may come (a block may still be open, for a cut-off finish)
    FINISHED  finish received: nothing may come
    FAILED    a rule was broken: every later call raises the same error

:data:`TRANSITIONS` declares the machine in the form the ``transitions`` library reads: to draw
:func:`diagram`, and in the tests, to prove :data:`ROUTES` against it. A ``transitions`` trigger costs
microseconds, so the declaration is read at import into :data:`ROUTES`,
``{(state, chunk type): (handler, next state, guard, next state when the guard fails)}``, per policy: the
one lookup that decides each chunk (``_handlers``). A missing entry, or a failed guard with no state to go
to, *is* the protocol error; :func:`refusal` names its code, by the precedence of SPEC §3.

The guards are data the handler of the chunk's type reads from the stream: ``last_open`` (this
block-end closes the only open block), ``may_finish`` (no block is open, or the finish cuts the stream
off). The third, ``interleave`` (a block may start while another is open), is the policy's, and is
resolved when the routes of a policy are built: STRICT has no edge for it, HARNESS an unguarded one.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Final

from ._config import Policy
from ._errors import ErrorCode
from ._shape import CHUNK_TYPES

__all__ = [
    "FAILED",
    "FINISHED",
    "GUARDS",
    "IN_BLOCK",
    "READY",
    "REJECT",
    "ROUTES",
    "STATES",
    "TRANSITIONS",
    "USAGE",
    "accepts",
    "as_policy",
    "diagram",
    "next_state",
    "refusal",
]

READY: Final = "READY"
IN_BLOCK: Final = "IN_BLOCK"
USAGE: Final = "USAGE"
FINISHED: Final = "FINISHED"
FAILED: Final = "FAILED"

STATES: Final[tuple[str, ...]] = (READY, IN_BLOCK, USAGE, FINISHED, FAILED)
DELTAS: Final = ("text-delta", "reasoning-delta", "tool-call-delta")
GUARDS: Final = ("interleave", "last_open", "may_finish")

#: The machine, declared as data in the form ``transitions`` reads. Triggers are chunk types.
TRANSITIONS: Final[tuple[dict[str, Any], ...]] = (
    # State: READY
    {"trigger": "block-start", "source": READY, "dest": IN_BLOCK},
    {"trigger": "usage", "source": READY, "dest": USAGE},
    {"trigger": "finish", "source": READY, "dest": FINISHED},
    # State: IN_BLOCK
    {"trigger": "block-start", "source": IN_BLOCK, "dest": IN_BLOCK, "conditions": "interleave"},
    *({"trigger": delta, "source": IN_BLOCK, "dest": IN_BLOCK} for delta in DELTAS),
    {"trigger": "block-end", "source": IN_BLOCK, "dest": READY, "conditions": "last_open"},
    {"trigger": "block-end", "source": IN_BLOCK, "dest": IN_BLOCK, "unless": "last_open"},
    {"trigger": "usage", "source": IN_BLOCK, "dest": USAGE},
    {"trigger": "finish", "source": IN_BLOCK, "dest": FINISHED, "conditions": "may_finish"},
    # State: USAGE
    {"trigger": "finish", "source": USAGE, "dest": FINISHED, "conditions": "may_finish"},
    # Any state but FAILED: a rejected chunk (or the end of input before finish).
    {"trigger": "reject", "source": [READY, IN_BLOCK, USAGE, FINISHED], "dest": FAILED},
)

#: The code of a refused chunk, by (state, chunk type), as SPEC §3 orders them (see :func:`refusal`).
REJECT: Final[dict[tuple[str, str], ErrorCode]] = {
    **{(READY, t): ErrorCode.BLOCK_NOT_OPEN for t in (*DELTAS, "block-end")},
    (IN_BLOCK, "block-start"): ErrorCode.BLOCKS_INTERLEAVED,
    (IN_BLOCK, "finish"): ErrorCode.BLOCK_NOT_CLOSED,
    (USAGE, "block-start"): ErrorCode.CHUNK_AFTER_USAGE,
    **{(USAGE, t): ErrorCode.CHUNK_AFTER_USAGE for t in (*DELTAS, "block-end")},
    (USAGE, "usage"): ErrorCode.USAGE_DUPLICATE,
    (USAGE, "finish"): ErrorCode.BLOCK_NOT_CLOSED,
}


def refusal(state: str, chunk_type: str, interleaving: bool) -> ErrorCode:
    """The code of a chunk the routes refuse: :data:`REJECT`, and SPEC §3's one precedence that reads the stream.

    ``interleaving``: a block is open under STRICT, so a block-start would interleave — ``BLOCKS_INTERLEAVED``
    comes before ``CHUNK_AFTER_USAGE``.
    """
    if interleaving and chunk_type == "block-start":
        return ErrorCode.BLOCKS_INTERLEAVED
    return REJECT[(state, chunk_type)]


def _declaration(policy: Policy | None = None) -> list[dict[str, Any]]:
    """The declared transitions, or those a policy can take: STRICT never interleaves, HARNESS always may."""
    result = []
    for declared in TRANSITIONS:
        t = dict(declared)
        if policy is not None and t.get("conditions") == "interleave":
            if policy is Policy.STRICT:
                continue
            del t["conditions"]
        result.append(t)
    return result


def _declared_machine(model: object, initial: str = READY, *, graph: bool = False, policy: Policy | None = None) -> Any:
    """A ``transitions`` machine built from the declaration (never per stream: import, diagram, tests)."""
    kwargs: dict[str, Any] = dict(
        model=model,
        states=list(STATES),
        transitions=_declaration(policy),
        initial=initial,
        auto_transitions=False,
        send_event=False,
    )
    if graph:
        from transitions.extensions import GraphMachine

        return GraphMachine(graph_engine="mermaid", show_conditions=True, title="streamfsm", **kwargs)
    from transitions import Machine

    return Machine(**kwargs)


#: The handler of each chunk type: the three deltas share one.
HANDLER_OF: Final[dict[str, str]] = {
    "block-start": "block-start",
    **{t: "delta" for t in DELTAS},
    "block-end": "block-end",
    "usage": "usage",
    "finish": "finish",
}

#: ``(handler, next state, guard, next state when the guard fails)``: ``guard`` is ``""`` when none is read;
#: a next state of ``None`` is a refusal.
Route = tuple[str, str, str, str | None]


def _routes(policy: Policy) -> dict[tuple[str, str], Route]:
    """Read the declared ``transitions`` machine of a policy into one entry per (state, chunk type) it accepts,
    its guard (at most one) as data."""
    machine = _declared_machine(None, policy=policy)
    routes: dict[tuple[str, str], Route] = {}
    for chunk_type, event in machine.events.items():
        if chunk_type == "reject":
            continue
        for state, transitions in event.transitions.items():
            edges = tuple((t.dest, [(str(c.func), c.target) for c in t.conditions]) for t in transitions)
            guards = {g for _, conditions in edges for g, _ in conditions}
            assert len(guards) <= 1 and "interleave" not in guards, (state, chunk_type, guards)
            guard = guards.pop() if guards else ""
            dest = next_state(edges, True)
            assert dest is not None
            otherwise = next_state(edges, False) if guard else dest
            routes[(state, chunk_type)] = (HANDLER_OF[chunk_type], dest, guard, otherwise)
    return routes


def next_state(edges: tuple[tuple[str, list[tuple[str, bool]]], ...], holds: bool) -> str | None:
    """Where ``edges`` (one guard at most) lead when the guard holds (or not): the first edge whose conditions
    agree; None: refused."""
    for dest, conditions in edges:
        if all(holds == target for _, target in conditions):
            return dest
    return None


#: ``{policy: {(state, chunk type): (handler, next state, guard, next state when the guard fails)}}``: the one
#: form the declaration is compiled to (``_handlers`` makes its route objects from it).
ROUTES: Final[dict[Policy, dict[tuple[str, str], Route]]] = {policy: _routes(policy) for policy in Policy}

_ACCEPTS: Final = {
    (state, policy): tuple(t for t in CHUNK_TYPES if (state, t) in ROUTES[policy])
    for state in STATES
    for policy in Policy
}


def accepts(state: str, policy: Policy | str) -> tuple[str, ...]:
    """The chunk types the machine accepts in ``state`` under ``policy``, in protocol order (read from :data:`ROUTES`).

    A guarded entry (``last_open``, ``may_finish``) depends on the stream, so it is listed.
    """
    return _ACCEPTS[(state, as_policy(policy))]


def as_policy(policy: Policy | str) -> Policy:
    """``policy`` as a :class:`Policy`: a member as it is, its value (``"strict"``) by a lookup, anything else by
    calling the enum (a name in any case; a ``ValueError`` naming the policies). Calling the enum (interpreted)
    costs thousands of instructions: the assembler's constructor and every refusal's message ask this instead."""
    if type(policy) is Policy:
        return policy
    known = _POLICY_BY_VALUE.get(policy) if type(policy) is str else None
    return known if known is not None else Policy(policy)


_POLICY_BY_VALUE: Final[dict[str, Policy]] = {p.value: p for p in Policy}


def diagram(policy: Policy | str | None = None) -> str:
    """The Mermaid state diagram that ``transitions`` draws from the machine's declaration.

    Guards label the edges. With a ``policy``, the ``interleave`` guard is resolved: under
    ``Policy.STRICT`` a block never starts while another is open, under ``Policy.HARNESS`` it may.
    """
    resolved = as_policy(policy) if policy is not None else None
    machine = _declared_machine(SimpleNamespace(), graph=True, policy=resolved)  # a model that holds the state
    if resolved is not None:
        machine.title = f"streamfsm ({resolved.value})"
    text: str = machine.get_graph().draw(None)
    # Styling (and the highlight of a current state, meaningless for a declaration) is left out.
    kept = [line for line in text.splitlines() if not line.lstrip().startswith(("classDef ", "Class "))]
    return "\n".join(kept) + "\n"

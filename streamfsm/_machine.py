"""The StreamChunk machine: every rule that moves a stream lives in this file.

Theory of operation
-------------------

A stream is a sequence of chunks (SPEC §1). The machine has five stream-level states::

    READY     no block open, no usage yet          (the initial state)
    IN_BLOCK  at least one block open              (exactly one under Policy.STRICT)
    USAGE     usage received: only finish may come (a block may still be open, for a cut-off finish)
    FINISHED  finish received: nothing may come
    FAILED    a rule was broken: every later call raises the same error

What may follow what is declared once, as data, in :data:`STATES` and :data:`TRANSITIONS` — the
declaration the ``transitions`` library reads (to draw :func:`diagram`, and in the tests, to prove the
compiled table agrees with it). A ``transitions`` trigger costs microseconds, so the declaration is
compiled at import into :data:`TABLE`, ``{state: {chunk type: ((dest, conditions, unless), ...)}}``;
the first edge whose named guards hold decides the next state. A failed lookup *is* the protocol error:
:data:`REJECT` names its code, chosen by the precedence of SPEC §3.

Which blocks are open is data the guards read, so one table serves both policies: ``interleave``
(Policy.HARNESS lets a block start while another is open), ``last_open`` (this block-end closes the
only open block), ``may_finish`` (no block is open, or the finish cuts the stream off). Their bits are
named (:data:`INTERLEAVE`, :data:`LAST_OPEN`, :data:`MAY_FINISH`); :func:`accepts` says what a state
accepts under a policy, and every protocol error carries it (``err.state``, ``err.expected``).

One path per chunk. A chunk goes to the handler of its type (``_on_block_start``, ``_on_delta``,
``_on_block_end``, ``_on_usage``, ``_on_finish``), after the two checks that come before its shape
(FAILED: the same error again; FINISHED: ``CHUNK_AFTER_FINISH``). Each handler runs the checks of SPEC §3
in their order, written once, as fast tests on plain values:

1. the shape of the fields it reads (``INVALID_CHUNK``): exact types, tested inline; anything the tests
   doubt (another mapping, a ``str`` subclass, a failure or replay state to check whole, a block type or
   finish kind only HARNESS knows) goes to ``_shaped`` — :func:`_shape.check`, the definition of a chunk's
   shape — which fails with the field and the reason, or gives back a plain, exact-typed copy;
2. the table (:data:`RESOLVED`, indexed by the named guard bits): may this chunk type come now? A failed
   lookup is the protocol error :data:`REJECT` names;
3. the rules of the chunk's type, in SPEC order;
4. the limits (``LIMIT_EXCEEDED`` comes last).

Only then is anything committed, so a rejected chunk leaves no trace. A check that fails calls a cold
helper (``_fail``, ``_reject``, ``_mismatch``, ``_limit``) whose only job is to build the error: code,
position, message, state and what the state accepts.

One hot path, shared by ``feed`` and ``feed_many``: ``_take`` appends a delta for the one open block (the
case of every delta inside a block under STRICT) when nothing about it is in doubt — its type, index, field
type, tool id and name, the block's and the stream's room counted in cheap units (``_Open.cap``), the chunk
limit — and otherwise declines, having changed nothing, so that the delta's handler decides. Parts are joined
once, at ``block-end``; big blocks are flushed into segments on the way.

This module is compiled with mypyc when the package is built (``setup.py``), which halves the
per-chunk cost; it is also plain Python, and runs as such with ``STREAMFSM_PURE=1``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any, Final, NoReturn, TypeVar, cast

import orjson
from pydantic import BaseModel

from . import _shape
from ._config import DEFAULT_LIMITS, Limits, Policy
from ._errors import ErrorCode, LlmError
from ._models import (
    ORJSON_MAX,
    Block,
    FinishReason,
    ImageBlock,
    LlmFailure,
    OpenBlock,
    ReasoningBlock,
    Snapshot,
    StreamResult,
    StreamSummary,
    TextBlock,
    ToolCallBlock,
    Usage,
    _Blank,
    kept_blocks,
    parse_arguments,
    partial_object,
)
from ._wire import CallId

__all__ = [
    "INTERLEAVE",
    "LAST_OPEN",
    "MAY_FINISH",
    "REJECT",
    "RESOLVED",
    "STATES",
    "TABLE",
    "TRANSITIONS",
    "StreamAssembler",
    "accepts",
    "diagram",
    "next_state",
]


# State: the stream-level states.
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

#: The code of a failed lookup, by (state, chunk type), as SPEC §3 orders them.
#: (USAGE, block-start) is BLOCKS_INTERLEAVED instead when a block is open under STRICT.
REJECT: Final[dict[tuple[str, str], ErrorCode]] = {
    **{(READY, t): ErrorCode.BLOCK_NOT_OPEN for t in (*DELTAS, "block-end")},
    (IN_BLOCK, "block-start"): ErrorCode.BLOCKS_INTERLEAVED,
    (IN_BLOCK, "finish"): ErrorCode.BLOCK_NOT_CLOSED,
    (USAGE, "block-start"): ErrorCode.CHUNK_AFTER_USAGE,
    **{(USAGE, t): ErrorCode.CHUNK_AFTER_USAGE for t in (*DELTAS, "block-end")},
    (USAGE, "usage"): ErrorCode.USAGE_DUPLICATE,
    (USAGE, "finish"): ErrorCode.BLOCK_NOT_CLOSED,
}

Edge = tuple[str, tuple[str, ...], tuple[str, ...]]


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


def _compile() -> dict[str, dict[str, tuple[Edge, ...]]]:
    """Read the declared ``transitions`` machine back into a plain lookup table."""
    machine = _declared_machine(None)
    table: dict[str, dict[str, tuple[Edge, ...]]] = {state: {} for state in STATES}
    for trigger, event in machine.events.items():
        if trigger == "reject":
            continue
        for source, transitions in event.transitions.items():
            table[source][trigger] = tuple(
                (
                    t.dest,
                    tuple(str(c.func) for c in t.conditions if c.target),
                    tuple(str(c.func) for c in t.conditions if not c.target),
                )
                for t in transitions
            )
    return table


#: ``{state: {chunk type: ((dest, conditions, unless), ...)}}``, compiled from :data:`TRANSITIONS`.
TABLE: Final = _compile()


def next_state(state: str, chunk_type: str, holds: Callable[[str], bool]) -> str | None:
    """The state a chunk of ``chunk_type`` moves ``state`` to, given which guards ``holds``; None: rejected."""
    for dest, conditions, unless in TABLE[state].get(chunk_type, ()):
        if all(holds(g) for g in conditions) and not any(holds(g) for g in unless):
            return dest
    return None


#: Which guards each chunk type's edges may read: the only ones the machine evaluates for it.
GUARDS_OF: Final[dict[str, tuple[str, ...]]] = {
    "block-start": ("interleave",),
    "block-end": ("last_open",),
    "finish": ("may_finish",),
}
_BIT: Final = {guard: 1 << i for i, guard in enumerate(GUARDS)}
#: The guard bits, by name: a block-start may interleave, a block-end closes the last open block, a finish may
#: come (no block is open, or it cuts the stream off). ``RESOLVED[state][type][bits]`` is the next state.
INTERLEAVE: Final = 1
LAST_OPEN: Final = 2
MAY_FINISH: Final = 4
assert (_BIT["interleave"], _BIT["last_open"], _BIT["may_finish"]) == (INTERLEAVE, LAST_OPEN, MAY_FINISH)


def _holds(mask: int) -> Callable[[str], bool]:
    return lambda guard: bool(mask & _BIT[guard])


def _resolve() -> dict[str, dict[str, tuple[str | None, ...]]]:
    """:data:`TABLE` with its guards evaluated ahead: ``{state: {type: dest by guard bit mask}}``."""
    resolved: dict[str, dict[str, tuple[str | None, ...]]] = {}
    for state, row in TABLE.items():
        resolved[state] = {}
        for chunk_type, edges in row.items():
            read = {g for _, conditions, unless in edges for g in (*conditions, *unless)}
            assert read <= set(GUARDS_OF.get(chunk_type, ())), (state, chunk_type, read)
            resolved[state][chunk_type] = tuple(
                next_state(state, chunk_type, _holds(mask)) for mask in range(1 << len(GUARDS))
            )
    return resolved


#: ``{state: {chunk type: (dest for each guard bit mask)}}``; None where the chunk is refused.
RESOLVED: Final = _resolve()


def _accepted(state: str, interleave: bool) -> tuple[str, ...]:
    edges_by_type = TABLE.get(state, {})
    accepted = {
        chunk_type
        for chunk_type, edges in edges_by_type.items()
        if any(
            ("interleave" not in conditions or interleave) and ("interleave" not in unless or not interleave)
            for _, conditions, unless in edges
        )
    }
    return tuple(t for t in _shape.CHUNK_TYPES if t in accepted)


_ACCEPTS: Final = {(state, harness): _accepted(state, harness) for state in STATES for harness in (False, True)}


def accepts(state: str, policy: Policy | str) -> tuple[str, ...]:
    """The chunk types the machine accepts in ``state`` under ``policy``, in protocol order.

    Read from :data:`TABLE`: an edge guarded by ``interleave`` exists only under ``Policy.HARNESS``. The
    other guards depend on the stream (which blocks are open), so their edges are listed.
    """
    return _ACCEPTS[(state, policy is _HARNESS or Policy(policy) is _HARNESS)]


def diagram(policy: Policy | str | None = None) -> str:
    """The Mermaid state diagram that ``transitions`` draws from the machine's declaration.

    Guards label the edges. With a ``policy``, the ``interleave`` guard is resolved: under
    ``Policy.STRICT`` a block never starts while another is open, under ``Policy.HARNESS`` it may.
    """
    resolved = Policy(policy) if policy is not None else None
    machine = _declared_machine(SimpleNamespace(), graph=True, policy=resolved)  # a model that holds the state
    if resolved is not None:
        machine.title = f"streamfsm ({resolved.value})"
    text: str = machine.get_graph().draw(None)
    # Styling (and the highlight of a current state, meaningless for a declaration) is left out.
    kept = [line for line in text.splitlines() if not line.lstrip().startswith(("classDef ", "Class "))]
    return "\n".join(kept) + "\n"


_CUT_OFF: Final = frozenset({"max-tokens", "error", "aborted"})
_USAGE_REQUIRED: Final = frozenset({"stop", "tool-calls", "max-tokens"})
M = TypeVar("M", bound=BaseModel)
_FIELDS_SET: dict[type[BaseModel], set[str]] = {}
_BLANK: Final = _Blank  # a Final name is a C static in the compiled module, an import a dict lookup


def construct(cls: type[M], values: dict[str, Any]) -> M:
    """Build a model from values the machine has already validated, skipping validation.

    ``values`` holds every field (defaults included); other keys fill ``cached_property`` slots
    (``ToolCallBlock.parsed_arguments``). What pydantic's ``model_construct`` does, minus its
    default handling, which costs more than the validation it skips. The model is filled as a
    ``_Blank`` by plain assignments and then given its class (see ``_Blank``): one ``object.__setattr__``
    call costs more than all of those.
    """
    fields_set = _FIELDS_SET.get(cls)
    if fields_set is None:
        fields_set = _FIELDS_SET[cls] = set(cls.__pydantic_fields__)
    obj: Any = _BLANK()
    obj.__dict__ = values
    # Shared by every instance of the class: frozen models never change it, and copies copy it.
    obj.__pydantic_fields_set__ = fields_set
    obj.__pydantic_extra__ = None
    obj.__pydantic_private__ = None
    obj.__class__ = cls
    return obj  # type: ignore[no-any-return]


def _usage(inputs: Any, outputs: Any, cache_read: Any, cache_write: Any, reasoning: Any) -> Usage:
    """The :class:`Usage` of a usage chunk's checked counts (ints; None for one not given), passed as they are."""
    return construct(
        Usage,
        {
            "input_tokens": inputs,
            "output_tokens": outputs,
            "cache_read_tokens": cache_read,
            "cache_write_tokens": cache_write,
            "reasoning_tokens": reasoning,
        },
    )


def _tool_call(cid: str, name: str, arguments: str, parsed: dict[str, Any]) -> ToolCallBlock:
    """The completed tool call, with the arguments the machine parsed to check them.

    Big arguments (over ``ORJSON_MAX`` characters) are not kept parsed: the raw text and the parsed
    object would double the memory a big call holds. ``parsed_arguments`` parses them on first use.
    """
    values: dict[str, Any] = {"type": "tool-call", "id": cid, "name": name, "arguments": arguments}
    if len(arguments) <= ORJSON_MAX:
        values["parsed_arguments"] = parsed
    return construct(ToolCallBlock, values)


_KIND_OF: Final = {"text-delta": "text", "reasoning-delta": "reasoning", "tool-call-delta": "tool-call"}


_NO_ID: Final = object()


class _Keys:
    """The key objects the hot path (``StreamAssembler._take``) looks a delta's fields up with.

    A dict lookup finds its key by hash, then by identity, and only then by comparing characters. The
    package's own string constants are interned, as the keys of dicts written in Python source are; but
    orjson makes its own key objects (one per distinct key, kept in its key cache), so with those constants
    every lookup in a parsed chunk compares characters. An assembler fed JSON lines looks up with orjson's
    objects instead (:data:`_JSON_KEYS`). Only the speed depends on it: a key that is equal and not
    identical is found all the same.
    """

    __slots__ = ("arguments", "id", "index", "name", "text", "type")

    def __init__(self, keys: Iterable[str]) -> None:
        self.type, self.index, self.text, self.arguments, self.id, self.name = keys


_FIELDS_OF_A_DELTA: Final = ("type", "index", "text", "argumentsDelta", "id", "name")
_LITERAL_KEYS: Final = _Keys(_FIELDS_OF_A_DELTA)
_JSON_KEYS: Final = _Keys(orjson.loads(orjson.dumps(dict.fromkeys(_FIELDS_OF_A_DELTA, 0))))
#: Parts (roughly) between two flushes of an open block's buffer.
_FLUSH: Final = 4096


class _Open:
    """A block that has started: its parts so far, and what its deltas have said.

    ``kind`` is the block type for one that takes deltas (``text``, ``reasoning``, ``tool-call``), with the
    ``delta_type`` its deltas have and the ``field`` that holds their text; it is ``""`` for a block that
    takes no deltas (an image, or under HARNESS a type not known), which no delta matches
    (``BLOCK_TYPE_MISMATCH``). ``type_name`` is the ``blockType`` it was started with. Plain slots, not
    class constants: the hot path reads them as fields of the struct.
    """

    __slots__ = (
        "cap",
        "counted",
        "counted_parts",
        "delta_type",
        "field",
        "flushed",
        "hot_id",
        "id",
        "index",
        "kind",
        "name",
        "parts",
        "size",
        "size_at_count",
        "type_name",
    )

    def __init__(
        self, index: int, fast_cap: int, type_name: str, kind: str, delta_type: str, field: str, hot_id: object
    ) -> None:
        self.index = index
        self.type_name = type_name
        self.kind = kind
        self.delta_type = delta_type
        self.field = field
        # The deltas' strings, joined once at block-end. Every _FLUSH parts or so, the parts since the
        # last flush are joined into one segment (the first ``flushed`` entries are segments), so a
        # block of a million one-byte deltas holds a few hundred strings, not a million pointers.
        self.parts: list[str] = []
        self.flushed = 0
        self.id: str | None = None
        self.name: str | None = None
        # What the hot path compares a delta's id with: None for text and reasoning (no id to check);
        # for a tool call, a marker no id equals until its first delta has set the id.
        self.hot_id = hot_id
        # ``size`` counts units (characters plus one a part) while ``cap >= 0``, then UTF-8 bytes (``cap``
        # is -1 from then on): a character is 4 bytes at most, so units under a quarter of the byte
        # limit are under it. The hot path appends while ``size`` stays within ``cap``; past it the quick
        # path takes the delta (the next flush), but the one that must switch the block to exact bytes
        # goes to the precise path (_grow counts the bytes so far, once); exact blocks stay on the quick path.
        self.size = 0
        self.cap = min(fast_cap, _FLUSH)
        # The stream-wide byte limit: ``counted`` is how many UTF-8 bytes of this block the stream's total
        # holds already, as of when ``size`` was ``size_at_count``; the deltas the hot path takes since are
        # counted at the next other path or at block-end. ``cap`` keeps them within the stream's room
        # (StreamAssembler._heat, _count_to): units past ``size_at_count`` are at most a quarter of it.
        self.counted = 0
        self.counted_parts = 0
        self.size_at_count = 0

    @property
    def exact(self) -> bool:
        """Whether ``size`` counts exact UTF-8 bytes."""
        return self.cap < 0

    def flush(self) -> None:
        """Join the parts since the last flush into one segment."""
        parts = self.parts
        if len(parts) - self.flushed > 1:
            segment = "".join(parts[self.flushed :])
            del parts[self.flushed :]
            parts.append(segment)
        self.flushed = len(parts)

    def content(self) -> str:
        return "".join(self.parts)

    def settle(self, text: str) -> bool:
        """Whether the deltas assembled exactly ``text``; if so the buffer becomes ``text`` itself.

        Same content, one string: the parts can be freed before the block's arguments are parsed. A
        small buffer is joined and compared; a flushed (large) one is compared piece by piece, so
        the check allocates nothing and peak memory stays near the size of the block.
        """
        parts = self.parts
        if not self.flushed:
            if "".join(parts) != text:
                return False
        else:
            pos = 0
            for part in parts:
                if not text.startswith(part, pos):
                    return False
                pos += len(part)
            if pos != len(text):
                return False
            self.parts = [text]
            self.flushed = 1
        return True

    def block_type(self) -> str:
        """The ``blockType`` this block was started with."""
        return self.type_name

    def describe(self) -> str:
        return f"block {self.index} ({_printable_kind(self.block_type())})"


def _open_block(kind: str, index: int, fast_cap: int, keys: _Keys) -> _Open:
    """The open block of a ``blockType``: one that takes deltas, or one that takes none (direct calls).

    ``field`` is the key its deltas' text is looked up with on the hot path (see :class:`_Keys`)."""
    if kind == "text":
        return _Open(index, fast_cap, kind, kind, "text-delta", keys.text, None)
    if kind == "tool-call":
        return _Open(index, fast_cap, kind, kind, "tool-call-delta", keys.arguments, _NO_ID)
    if kind == "reasoning":
        return _Open(index, fast_cap, kind, kind, "reasoning-delta", keys.text, None)
    return _Open(index, fast_cap, kind, "", "", "", None)


#: What ``feed_many`` holds instead of a block's parts while no block is hot (never appended to).
_NO_PARTS: Final[list[str]] = []


def _same_name(given: object, name: str | None) -> bool:
    """Whether a later tool-call delta's ``name`` repeats the one its block has (a rare case: out of line)."""
    return type(given) is str and given == name


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _count_or_absent(value: object) -> bool:
    """Whether an optional usage count is absent or a token count (the usage handler's fast test)."""
    return value is _ABSENT or (type(value) is int and 0 <= value <= _MAX_INT)


def _is_blank(line: bytes | bytearray | memoryview | str) -> bool:
    """Whether a JSON line holds only JSON whitespace (str.strip() alone would also drop U+001C and friends)."""
    if isinstance(line, str):
        return not line.strip(" \t\r\n")
    if isinstance(line, memoryview):
        line = line.tobytes()
    return not line.strip(b" \t\r\n")


def _bytes_since(block: _Open) -> int:
    """UTF-8 bytes of the parts the hot path gave ``block`` since it was last counted."""
    parts = block.parts
    start = block.counted_parts
    if start >= len(parts):
        return 0
    if start == len(parts) - 1:
        return _utf8_len(parts[start])
    return _utf8_len("".join(parts[start:]))  # one scan in C (at most a _FLUSH cap's worth), not one a part


def _first_difference(a: str, b: str) -> int:
    """The first position where ``a`` and ``b`` differ (the shorter one's length if one begins the other)."""
    end = min(len(a), len(b))
    at = 0
    step = 4096
    while at < end and a[at : at + step] == b[at : at + step]:  # whole pieces compared in C
        at += step
    while at < end and a[at] == b[at]:
        at += 1
    return at


def _printable_kind(kind: str) -> str:
    """A block type or finish kind for a message: as it is when short and plain, else quoted and cut."""
    plain = len(kind) <= 40 and kind.replace("-", "_").isidentifier()
    return kind if plain else _short(kind)


def _a(kind: str) -> str:
    """``a text``, ``an image``: a kind with its article, for a message."""
    shown = _printable_kind(kind)
    return f"{'an' if shown[:1] in ('a', 'e', 'i', 'o', 'u') else 'a'} {shown}"


def _short(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[: limit - 3] + "...")


class StreamAssembler:
    """Validate and assemble one stream, one chunk at a time (sans-IO).

    ``feed(chunk)`` accepts a chunk or raises :class:`LlmError` with the chunk's position;
    ``close()`` returns the :class:`StreamResult` once the stream has finished. After any error the
    assembler is failed: every later call raises an error with the same code.

    ``results=False`` checks the same rules and keeps no content: a block's text is dropped once its
    ``block-end`` has been checked against its deltas, and no result model is built. ``summary()`` then
    says what the stream came to (``close()`` and ``snapshot()`` have nothing to return and raise
    ``ValueError``). This is what ``validate``, ``validate_jsonl`` and ``streamfsm check`` use.
    """

    __slots__ = (
        "_count",
        "_done",
        "_error",
        "_fast_cap",
        "_finish",
        "_hot",
        "_ids",
        "_interleave",
        "_keys",
        "_max_blocks",
        "_max_bytes",
        "_max_chunks",
        "_max_stream",
        "_notes",
        "_open",
        "_policy",
        "_raw_arguments",
        "_replay",
        "_result",
        "_results",
        "_source_failed",
        "_start_mask",
        "_started",
        "_state",
        "_stream_bytes",
        "_tool_calls",
        "_usage",
        "_usage_counts",
    )

    def __init__(
        self,
        policy: Policy | str = Policy.STRICT,
        limits: Limits | None = None,
        *,
        raw_arguments: bool = False,
        results: bool = True,
    ) -> None:
        # Module constants, not Policy.X: an enum attribute is a slow read (EnumType's __getattr__).
        if policy is _STRICT or policy is _HARNESS:
            self._policy = policy
        else:  # a policy's value ("strict") is looked up, not called: calling the enum is slow
            known = _POLICY_BY_VALUE.get(policy) if type(policy) is str else None
            self._policy = policy = known if known is not None else Policy(policy)
        self._interleave = interleave = policy is _HARNESS
        # Tool arguments that are not a JSON object are kept raw (HARNESS, or asked for: the agent loop).
        self._raw_arguments = raw_arguments or interleave
        self._results = results
        self._keys = _LITERAL_KEYS  # feed_line and fed_lines switch to _JSON_KEYS
        self._notes: dict[str, _Note] | None = None
        self._start_mask = INTERLEAVE if interleave else 0  # the guard bits of a block-start (see RESOLVED)
        # The limits, read once as plain values (a model's attributes are slow to read; the defaults' are read
        # at import): the one source every check reads.
        if limits is None:
            self._max_chunks = _DEFAULT_MAX_CHUNKS
            self._max_blocks = _DEFAULT_MAX_BLOCKS
            self._max_bytes = _DEFAULT_MAX_BYTES
            self._max_stream = _DEFAULT_MAX_STREAM
        else:
            self._max_chunks = limits.max_chunks
            self._max_blocks = limits.max_blocks
            self._max_bytes = limits.max_block_bytes
            self._max_stream = limits.max_stream_bytes
        self._fast_cap = self._max_bytes // 4
        self._state = READY
        self._count = 0
        self._stream_bytes = 0  # UTF-8 bytes of the stream's blocks counted so far (see _Open.counted)
        self._open: dict[int, _Open] = {}
        self._hot: _Open | None = None
        self._started = 0
        # Each block by index once it has ended (None while open): its model, or without results its type
        # (a str) or, for a tool call, its (id, name).
        self._done: list[Any] = []
        self._ids: dict[str, int] = {}
        self._tool_calls = 0
        # The usage chunk's model; without results, its counts (input, output, cache read, cache write,
        # reasoning; None for one not given) until a summary asks for the model (_usage_model).
        self._usage: Usage | None = None
        self._usage_counts: tuple[Any, ...] | None = None
        self._finish: FinishReason | None = None
        self._replay: Any = None
        self._error: LlmError | None = None
        self._result: StreamResult | None = None
        # Set by feed_many when its source (not a chunk) raised: the entry points wrap only those errors.
        self._source_failed = False

    # -- public API ---------------------------------------------------------------------------

    @property
    def policy(self) -> Policy:
        """The policy this assembler enforces."""
        return self._policy

    @property
    def state(self) -> str:
        """The machine's current state: READY, IN_BLOCK, USAGE, FINISHED or FAILED."""
        return self._state

    @property
    def chunk_count(self) -> int:
        """How many chunks have been fed (the position the next chunk will have)."""
        return self._count

    @property
    def error(self) -> LlmError | None:
        """The error that failed the machine, if any."""
        return self._error

    @property
    def notes(self) -> list[tuple[LlmError, int]]:
        """What this stream broke of ``Policy.STRICT`` that its policy accepted, by code, in order of first sight.

        Each entry is the error STRICT would have raised at the first such chunk (its code, position and
        message), and how many chunks did the same (for a tool call's empty id or name, or an id another
        block has: how many blocks). Empty under STRICT unless ``raw_arguments`` kept some arguments that
        are not a JSON object (``TOOL_ARGUMENTS_INVALID``). One entry per code: bounded.
        """
        return [(note.error, note.count) for note in self._notes.values()] if self._notes else []

    @property
    def noted(self) -> int:
        """How many entries :attr:`notes` has (cheap: read after each chunk to find the chunk a note was made at)."""
        notes = self._notes
        return len(notes) if notes is not None else 0

    def feed(self, chunk: Mapping[str, Any]) -> None:
        """Accept one chunk, or raise :class:`LlmError` (with ``chunk_index``) if it breaks a rule."""
        if not self._take(chunk):
            self._feed_one(chunk)

    def feed_many(self, chunks: Iterable[Mapping[str, Any]]) -> None:
        """Feed chunks in order, as many ``feed`` calls would.

        An exception raised by ``chunks`` itself (its ``__next__``) passes through unchanged; ``assemble``
        tells it from the machine's own by ``_source_failed``.
        """
        feeding = False  # True while a chunk is in the machine: an exception then is not the source's
        try:
            for chunk in chunks:
                if self._hot is None or not self._take(chunk):
                    feeding = True
                    self._feed_one(chunk)
                    feeding = False
        except BaseException:
            self._source_failed = not feeding
            raise

    def feed_line(self, line: bytes | bytearray | memoryview | str) -> Any:
        """Parse one JSON line (orjson) and feed it; a line that is not JSON is an ``INVALID_CHUNK``.

        Returns the chunk that was fed; a blank line is skipped, takes no position and returns None.
        """
        self._keys = _JSON_KEYS
        if isinstance(line, memoryview):
            line = line.tobytes()
        if _is_blank(line):
            return None
        try:
            chunk = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            from ._lines import not_json  # the cold path: its position as a column of the line

            text = line if isinstance(line, str) else line.decode("utf-8", "backslashreplace")
            self._feed_one(_shape.InvalidLine(text.strip(), not_json(exc)))
            raise AssertionError("unreachable: a line that is not JSON is always rejected") from exc
        self.feed(chunk)
        return chunk

    def feed_lines(self, lines: Iterable[bytes | bytearray | memoryview | str]) -> None:
        """Parse JSON lines (orjson) and feed them, as many ``feed_line`` calls would, at a lower cost.

        The lines are taken as they come (an endless iterable is fed with bounded memory): see :meth:`fed_lines`.
        """
        for _ in self.fed_lines(lines):
            pass

    def fed_lines(self, lines: Iterable[bytes | bytearray | memoryview | str], end: bool = False) -> Iterator[Any]:
        """Parse JSON lines (orjson) and feed them, yielding each chunk once the machine has accepted it.

        Each line is parsed and fed in one compiled loop, as it comes. A line orjson refuses goes to
        :meth:`feed_line`, which skips it if it is blank and otherwise rejects it (``INVALID_CHUNK`` at its
        position); the blank lines right after a refused one are skipped by a test each, not one refusal each.
        With ``end``, the end of the lines is the end of input (:meth:`end`: ``STREAM_TRUNCATED`` before a
        finish). What ``validate_jsonl`` returns.
        """
        self._keys = _JSON_KEYS
        loads = orjson.loads
        refused = False  # the last line was refused: blank lines are tested before they are parsed
        for line in lines:
            if refused and _is_blank(line):
                continue
            try:
                chunk = loads(line)
            except orjson.JSONDecodeError:
                self.feed_line(line)  # skips a blank line, rejects anything else
                refused = True
                continue
            refused = False
            if self._hot is None or not self._take(chunk):
                self._feed_one(chunk)
            yield chunk
        if end:
            self.end()

    def close(self) -> StreamResult:
        """End of input: the :class:`StreamResult`, or ``LlmError(STREAM_TRUNCATED)`` before a finish."""
        if self._result is not None:
            return self._result
        self.end()
        if not self._results:
            raise ValueError("this assembler keeps no results (results=False): summary() says what the stream was")
        assert self._finish is not None
        done = self._done
        self._result = construct(
            StreamResult,
            {
                "blocks": done if not self._open else [b for b in done if b is not None],
                "usage": self._usage,
                "finish": self._finish,
                "interrupted": [self._partial(b) for b in self._open_blocks()] if self._open else [],
                "replay_state": self._replay,
            },
        )
        return self._result

    def summary(self) -> StreamSummary:
        """End of input, as :meth:`close`: what the stream came to (:class:`StreamSummary`), with or without results."""
        self.end()
        assert self._finish is not None
        blocks: list[str] = []
        calls: list[tuple[str, str]] = []
        for done in self._done:
            if done is None:
                continue
            if type(done) is str:
                blocks.append(done)
            elif type(done) is tuple:
                blocks.append("tool-call")
                calls.append(done)
            elif isinstance(done, ToolCallBlock):
                blocks.append("tool-call")
                calls.append((str(done.id), done.name))
            else:
                blocks.append(done["type"] if isinstance(done, dict) else done.type)
        return StreamSummary(  # its fields in order (keywords would cost a dict of them a stream)
            self._count,
            tuple(blocks),
            tuple(calls),
            self._usage_model(),
            self._finish,
            tuple(b.block_type() for b in self._open_blocks()) if self._open else (),
            tuple(item.type for item in kept_blocks(self._replay)) if self._replay is not None else (),
        )

    def end(self) -> None:
        """End of input, for a check that needs no summary: ``LlmError(STREAM_TRUNCATED)`` before a finish.

        What :meth:`close` and :meth:`summary` check first, with nothing built (after an error, that error again).
        """
        if self._state == FAILED:
            raise self._again()
        if self._state != FINISHED:
            self._fail(
                ErrorCode.STREAM_TRUNCATED,
                f"the input ended after {self._count} chunk(s) without a finish "
                f"(state {self._state}{self._open_note()})",
                self._count,
            )

    def snapshot(self) -> Snapshot:
        """The stream so far: completed blocks, open blocks with partial tool arguments, usage, finish.

        Computed on each call (joins the open blocks' parts); feeding never pays for it. Needs results
        (``ValueError`` with ``results=False``).
        """
        if not self._results:
            raise ValueError("this assembler keeps no results (results=False): it has no snapshot")
        open_blocks = []
        for b in self._open_blocks():
            content = b.content()
            if b.kind == "tool-call":
                open_blocks.append(
                    OpenBlock(
                        index=b.index,
                        block_type="tool-call",
                        id=CallId(b.id) if b.id is not None else None,
                        name=b.name,
                        arguments=content,
                        partial_arguments=partial_object(content),
                    )
                )
            else:
                open_blocks.append(OpenBlock(index=b.index, block_type=b.block_type(), text=content))
        return Snapshot(
            state=self._state,
            chunk_count=self._count,
            blocks=[b for b in self._done if b is not None],
            open=open_blocks,
            usage=self._usage,
            finish=self._finish,
        )

    def _usage_model(self) -> Usage | None:
        """The :class:`Usage` of the usage chunk (None without one); without results, made when first asked for."""
        counts = self._usage_counts
        if self._usage is None and counts is not None:
            self._usage = _usage(*counts)
        return self._usage

    # -- the hot path: a delta for the one open block ---------------------------------------------

    def _take(self, chunk: object) -> bool:
        """Append a delta for the one open block when nothing about it is in doubt; False leaves it to its handler.

        The checks of :meth:`_on_delta` for the common case, on the open block's fields: type, index, field
        type, tool id and name, the block's (and the stream's) room in cheap units (``_Open.cap``), the chunk
        limit. It declines at the first doubt having changed nothing; the handler then decides. Written on
        exact types (``str``, ``int``, ``dict``), so that the compiled machine compares them natively.
        """
        hot = self._hot
        if hot is None or type(chunk) is not dict:
            return False
        c = cast(dict[str, Any], chunk)
        keys = self._keys
        t = c.get(keys.type)
        if type(t) is not str:
            return False
        kind: str = t
        if kind != hot.delta_type:
            return False
        value = c.get(hot.field)
        index = c.get(keys.index)
        if type(value) is not str or type(index) is not int:
            return False
        text: str = value
        at: int = index
        count = self._count
        if at != hot.index or count >= self._max_chunks:
            return False
        size = hot.size + len(text) + 1
        if size > hot.cap:
            return False
        call_id = hot.hot_id
        if call_id is not None:  # a tool call: the id its deltas carry, and the name if one repeats it
            cid = c.get(keys.id)
            if type(cid) is not str or cid != call_id:
                return False
            # Four keys are the four just read: no name to look up (the usual delta).
            if len(c) > 4 and keys.name in c and not _same_name(c[keys.name], hot.name):
                return False
        hot.size = size
        hot.parts.append(text)
        self._count = count + 1
        return True

    # -- every other chunk: one handler per chunk type, its checks in the order of SPEC §3 -----------

    def _feed_one(self, chunk: object) -> None:
        """A chunk the hot path did not take: FAILED and FINISHED first, then its type's handler."""
        state = self._state
        if state == FAILED:
            raise self._again()
        n = self._count
        self._count = n + 1
        if state == FINISHED:  # decided before the chunk's shape
            self._fail(
                ErrorCode.CHUNK_AFTER_FINISH,
                f"{self._type_of(chunk)} after finish; nothing may follow finish (state FINISHED)",
                n,
            )
        if type(chunk) is dict:
            c: dict[str, Any] = chunk
            t = c.get("type")
        else:
            c, t = self._shaped(chunk, n)
        if type(t) is not str:
            c, t = self._shaped(c, n)
        if t == "text-delta" or t == "reasoning-delta" or t == "tool-call-delta":
            self._on_delta(c, t, n)
        elif t == "block-end":
            self._on_block_end(c, n)
        elif t == "block-start":
            self._on_block_start(c, n)
        elif t == "usage":
            self._on_usage(c, n)
        elif t == "finish":
            self._on_finish(c, n)
        else:
            self._shaped(c, n)  # an unknown type: INVALID_CHUNK, described
            raise AssertionError("unreachable: a chunk of an unknown type is always rejected")

    def _shaped(self, chunk: object, n: int) -> tuple[dict[str, Any], str]:
        """The definition of a chunk's shape (``_shape.check``), for anything the handlers' fast tests doubt.

        Returns the chunk as a plain dict whose fields have their exact types (a ``str`` subclass becomes a
        ``str``, another mapping a ``dict``), and its type; or fails with ``INVALID_CHUNK``, saying which
        field and why.
        """
        state = self._state
        try:
            return _shape.check(chunk, self._interleave)
        except _shape.ShapeError as exc:
            from ._recordings import converter_hint  # a provider's event fed as a chunk: the converter to use

            what = self._type_of(chunk)
            where = f"field {exc.field!r} " if exc.field else ""
            hint = converter_hint(chunk) if exc.field in ("", "type") else ""
            self._fail(ErrorCode.INVALID_CHUNK, f"invalid {what}: {where}{exc.reason}{hint} (state {state})", n)
        except Exception as exc:  # a hostile mapping: its keys or values raise when read
            self._fail(
                ErrorCode.INVALID_CHUNK,
                f"invalid chunk: reading it raised {type(exc).__name__}: {exc} (state {state})",
                n,
            )

    def _on_block_start(self, c: dict[str, Any], n: int) -> None:
        index: Any = c.get("index")
        kind: Any = c.get("blockType")
        if not (
            type(index) is int
            and 0 <= index <= _MAX_INT
            and type(kind) is str
            and (kind in _BLOCK_TYPES or self._interleave)
        ):
            c = self._shaped(c, n)[0]
            index, kind = c["index"], c["blockType"]
        state = self._state
        row = RESOLVED[state].get("block-start")
        dest = row[self._start_mask] if row is not None else None
        if dest is None:
            self._reject(state, "block-start", c, n)
        if index != self._started:
            self._fail(
                ErrorCode.INDEX_OUT_OF_ORDER,
                f"block-start with index {index}, expected index {self._started}: the n-th block "
                f"of a stream has index n (state {state})",
                n,
            )
        if index >= self._max_blocks:
            self._limit(n, f"more than {self._max_blocks} blocks")
        if n >= self._max_chunks:
            self._too_many_chunks(n)
        block = _open_block(kind, index, min(self._fast_cap, (self._max_stream - self._stream_bytes) >> 2), self._keys)
        if self._interleave and kind not in _BLOCK_TYPES:  # under STRICT the shape refused it
            self._note(
                ErrorCode.INVALID_CHUNK,
                f"block-start for block {index} has a block type the protocol does not know: {_short(kind)}",
                n,
            )
        open_blocks = self._open
        if open_blocks:  # HARNESS only: under STRICT the table refused this block-start
            self._note_interleaved(index, kind, n)
            self._cool()
        open_blocks[index] = block
        self._done.append(None)
        self._started = index + 1
        self._state = dest
        # The new block is hot (its deltas usually come next), its cap within the room left once the block
        # that was hot has been counted.
        self._hot = self._heat(block)

    def _on_delta(self, c: dict[str, Any], t: str, n: int) -> None:
        index: Any = c.get("index")
        tool = t == "tool-call-delta"
        value: Any = c.get("argumentsDelta" if tool else "text")
        ok = type(index) is int and 0 <= index <= _MAX_INT and type(value) is str
        cid: Any = None
        name: Any = None
        if tool:
            cid = c.get("id")
            name = c.get("name")
            ok = ok and type(cid) is str and (cid != "" or self._interleave)
            if "name" in c:
                ok = ok and type(name) is str and (name != "" or self._interleave)
        if not ok:
            c = self._shaped(c, n)[0]
            index, value = c["index"], c["argumentsDelta" if tool else "text"]
            cid, name = c.get("id"), c.get("name")
        state = self._state
        row = RESOLVED[state].get(t)
        if row is None:  # READY: no block is open; USAGE: after usage only finish may come
            self._reject(state, t, c, n)
        block = self._block_for(t, index, _KIND_OF[t], n)
        if tool:
            if block.id is None:
                if not self._interleave:
                    self._check_id_is_new("tool-call-delta", "opens", block, cid, n)
            elif cid != block.id:
                self._fail(
                    ErrorCode.TOOL_CALL_CONFLICT,
                    f"tool-call-delta for block {block.index} carries id {cid!r}, but the block's "
                    f"id is {block.id!r}: every delta of a block carries the same id (state {state})",
                    n,
                )
            if name is not None and block.name is not None and name != block.name:
                self._fail(
                    ErrorCode.TOOL_CALL_CONFLICT,
                    f"tool-call-delta for block {block.index} names the tool {name!r}, but an "
                    f"earlier delta named it {block.name!r} (state {state})",
                    n,
                )
        if block is not self._hot:  # a delta for another open block: the hot one is counted first
            self._cool()
        size = self._grow(block, value, n)
        pending = _bytes_since(block) + _utf8_len(value)
        stream = self._stream_bytes + pending
        if stream > self._max_stream:
            self._too_big_a_stream(stream, n)
        if n >= self._max_chunks:
            self._too_many_chunks(n)
        if tool and self._interleave and (block.id is None or (name is not None and block.name is None)):
            self._note_call(block, cid if block.id is None else None, name if block.name is None else None, n)
        block.size = size
        parts = block.parts
        parts.append(value)
        if len(parts) - block.flushed >= _FLUSH:
            block.flush()
        self._count_to(block, pending, stream)
        if tool:
            if block.id is None:
                block.id = block.hot_id = cid
                self._ids.setdefault(cid, block.index)
            if name is not None:
                block.name = name
        self._hot = block  # its next deltas take the hot path (counted just now: its cap is the stream's room)

    def _on_block_end(self, c: dict[str, Any], n: int) -> None:
        index: Any = c.get("index")
        wire: Any = c.get("block")
        kind: Any = None
        text: Any = None
        ok = type(index) is int and 0 <= index <= _MAX_INT and type(wire) is dict
        if ok:
            kind = wire.get("type")
        if ok and kind == "tool-call":
            cid = wire.get("id")
            name = wire.get("name")
            ok = (
                type(cid) is str
                and type(name) is str
                and type(wire.get("arguments")) is str
                and ((cid != "" and name != "") or self._interleave)
            )
        elif ok:
            text = wire.get("text")
            ok = (kind == "text" or kind == "reasoning") and type(text) is str
        if not ok:  # a block that takes no deltas is always checked whole: its content must be JSON data
            c = self._shaped(c, n)[0]
            index, wire = c["index"], c["block"]
            kind, text = wire["type"], wire.get("text")
        state = self._state
        row = RESOLVED[state].get("block-end")
        open_blocks = self._open
        dest = row[LAST_OPEN if len(open_blocks) == 1 else 0] if row is not None else None
        if dest is None:  # READY: no block is open; USAGE: after usage only finish may come
            self._reject(state, "block-end", c, n)
        block = open_blocks.get(index)
        if block is None or block.type_name != kind:
            block = self._block_for("block-end", index, kind, n)  # describes the failure
        had_deltas = bool(block.parts)
        hot = self._hot
        if hot is not None and hot is not block:  # another block is hot: counted before this one's limits
            self._cool()
        done: Any
        if block.kind == "tool-call":
            cid = wire["id"]
            name = wire["name"]
            arguments: str = wire["arguments"]
            if had_deltas:
                if cid != block.id:
                    self._mismatch(block, "id", cid, block.id or "", n)
                if block.name is not None and name != block.name:
                    self._mismatch(block, "name", name, block.name, n)
                if not block.settle(arguments):
                    self._mismatch(block, "arguments", arguments, block.content(), n)
            elif not self._interleave:
                self._check_id_is_new("block-end", "carries", block, cid, n)
            parsed, why = parse_arguments(arguments, self._results)  # the values exact only if kept
            invalid = ""
            if parsed is None:
                invalid = (
                    f"tool call {cid!r} ({name}) in block {block.index}: arguments {_short(arguments)} "
                    f"are not a JSON object: {why}"
                )
                if not self._raw_arguments:
                    self._fail(ErrorCode.TOOL_ARGUMENTS_INVALID, f"{invalid} (state {state})", n)
            stream = self._within_limits(block, _utf8_len(arguments), had_deltas, n)
            if parsed is None:
                self._note(ErrorCode.TOOL_ARGUMENTS_INVALID, invalid, n)
            if not self._results:
                done = (cid, name)
            elif parsed is None:
                done = construct(ToolCallBlock, {"type": "tool-call", "id": cid, "name": name, "arguments": arguments})
            else:
                done = _tool_call(cid, name, arguments, parsed)
            if self._interleave and (not had_deltas or block.name is None):
                # What the deltas did not say already: the id of a block without deltas, a name none gave.
                self._note_call(block, None if had_deltas else cid, name if block.name is None else None, n)
            self._ids.setdefault(cid, block.index)
            self._tool_calls += 1
        elif block.kind:
            if had_deltas and not block.settle(text):
                self._mismatch(block, "text", text, block.content(), n)
            stream = self._within_limits(block, _utf8_len(text), had_deltas, n)
            if self._results:
                done = construct(_TEXT_MODEL[block.kind], {"type": block.kind, "text": text})
            else:  # the block's type only: its text goes with its open block, now
                done = block.kind
        else:  # a block that takes no deltas: kept as it came (a copy: the caller may mutate its chunk)
            stream = self._within_limits(block, _json_size(wire), False, n)
            if not self._results:
                done = kind
            elif kind == "image":
                done = construct(ImageBlock, {"type": "image", "attachment": _shape.copy_json(wire)["attachment"]})
            else:
                done = _shape.copy_json(wire)
        del open_blocks[index]
        self._done[index] = done
        self._stream_bytes = stream
        self._state = dest
        if hot is None or hot is block:  # the one block left open (if one is) becomes hot
            hot = next(iter(open_blocks.values())) if len(open_blocks) == 1 else None
        # Hot or not, its cap is renewed: this block's bytes have just made the stream's room smaller.
        self._hot = self._heat(hot) if hot is not None else None

    def _on_usage(self, c: dict[str, Any], n: int) -> None:
        u: Any = c.get("usage")
        if type(u) is dict:
            inputs = u.get("inputTokens")
            outputs = u.get("outputTokens")
            cache_read = u.get("cacheReadTokens", _ABSENT)
            cache_write = u.get("cacheWriteTokens", _ABSENT)
            reasoning = u.get("reasoningTokens", _ABSENT)
            ok = (
                type(inputs) is int
                and type(outputs) is int
                and 0 <= inputs <= _MAX_INT
                and 0 <= outputs <= _MAX_INT
                and _count_or_absent(cache_read)
                and _count_or_absent(cache_write)
                and _count_or_absent(reasoning)
            )
        else:
            ok = False
        if not ok:
            u = self._shaped(c, n)[0]["usage"]
            inputs, outputs = u["inputTokens"], u["outputTokens"]
            cache_read = u.get("cacheReadTokens", _ABSENT)
            cache_write = u.get("cacheWriteTokens", _ABSENT)
            reasoning = u.get("reasoningTokens", _ABSENT)
        state = self._state
        row = RESOLVED[state].get("usage")
        if row is None:  # USAGE: a second usage
            self._reject(state, "usage", c, n)
        dest = row[0]
        assert dest is not None  # a usage reads no guard
        if n >= self._max_chunks:
            self._too_many_chunks(n)
        cache_read = None if cache_read is _ABSENT else cache_read
        cache_write = None if cache_write is _ABSENT else cache_write
        reasoning = None if reasoning is _ABSENT else reasoning
        if self._results:
            self._usage = _usage(inputs, outputs, cache_read, cache_write, reasoning)
        else:
            self._usage_counts = (inputs, outputs, cache_read, cache_write, reasoning)
        self._state = dest
        self._hot = None

    def _on_finish(self, c: dict[str, Any], n: int) -> None:
        reason: Any = c.get("reason")
        kind: Any = reason.get("kind") if type(reason) is dict else None
        finish = _PLAIN_FINISH.get(kind) if type(kind) is str else None
        plain = finish is not None and "replayState" not in c
        if not plain:  # a failure, a replay state or a kind the protocol does not know: checked whole
            c = self._shaped(c, n)[0]
            reason = c["reason"]
            kind = reason["kind"]
        state = self._state
        row = RESOLVED[state].get("finish")
        dest = row[MAY_FINISH if not self._open or kind in _CUT_OFF else 0] if row is not None else None
        if dest is None:  # a block is open at a stop, tool-calls or unknown finish
            self._reject(state, "finish", c, n)
        usage_missing = self._usage is None and self._usage_counts is None and kind in _USAGE_REQUIRED
        if usage_missing and not self._interleave:
            self._fail(
                ErrorCode.USAGE_MISSING,
                f"finish {kind} without usage (state {state}); under policy strict a "
                f"{kind} finish needs one usage chunk before it",
                n,
            )
        no_call = kind == "tool-calls" and self._tool_calls == 0
        if no_call and not self._interleave:
            self._fail(
                ErrorCode.FINISH_REASON_MISMATCH,
                f"finish tool-calls, but the stream completed no tool-call block (state {state})",
                n,
            )
        if n >= self._max_chunks:
            self._too_many_chunks(n)
        if usage_missing:
            self._note_usage_missing(kind, n)
        if no_call:
            self._note(ErrorCode.FINISH_REASON_MISMATCH, "finish tool-calls, but the stream completed no tool call", n)
        if finish is not None and plain:
            self._finish = finish
        else:
            # A copy: a caller mutating its chunk after feed must not change the result.
            self._replay = _shape.copy_json(c["replayState"]) if "replayState" in c else None
            if kind in ("error", "aborted"):
                f = reason["failure"]
                failure = LlmFailure(
                    message=f["message"],
                    code=f["code"],
                    status=f.get("status"),
                    provider_retry_after_ms=f.get("providerRetryAfterMs"),
                    request_id=f.get("requestId"),
                )
                self._finish = FinishReason(kind=kind, failure=failure)
            elif kind in _shape.FINISH_KINDS:
                self._finish = _PLAIN_FINISH[kind]
            else:  # HARNESS: a kind the protocol does not know, kept as it came (refused by the shape under STRICT)
                self._note(ErrorCode.INVALID_CHUNK, f"finish has a kind the protocol does not know: {_short(kind)}", n)
                self._finish = FinishReason.kept_as_it_came(_shape.copy_json(reason))
        self._state = FINISHED
        self._hot = None

    # -- what the handlers share ---------------------------------------------------------------

    def _reject(self, state: str, t: str, c: dict[str, Any], n: int) -> NoReturn:
        """The table refused a chunk of type ``t`` in ``state``: its code (:data:`REJECT`) and message."""
        code = REJECT[(state, t)]
        if code is ErrorCode.CHUNK_AFTER_USAGE and t == "block-start" and self._open and not self._interleave:
            code = ErrorCode.BLOCKS_INTERLEAVED
        what = self._what(t, c)
        if code is ErrorCode.BLOCK_NOT_OPEN:
            msg = f"{what}, but no block is open (state {state}); expected {', '.join(accepts(state, self._policy))}"
        elif code is ErrorCode.BLOCKS_INTERLEAVED:
            msg = (
                f"{what} while {self._open_list()} is open (state {state}); under policy "
                f"{self._policy.value} blocks may not interleave: expected block-end for "
                f"block {next(iter(self._open))} first"
            )
        elif code is ErrorCode.CHUNK_AFTER_USAGE:
            msg = f"{what} after usage (state {state}); after usage only finish may come"
        elif code is ErrorCode.USAGE_DUPLICATE:
            msg = f"a second usage (state {state}); a stream carries at most one usage"
        else:  # BLOCK_NOT_CLOSED
            msg = (
                f"{what} while {self._open_list()} is open (state {state}); {_a(c['reason']['kind'])} "
                f"finish needs every block ended first (only max-tokens, error and aborted may cut a block off)"
            )
        self._fail(code, msg, n)

    def _block_for(self, t: str, index: int, kind: str, n: int) -> _Open:
        block = self._open.get(index)
        if block is None:
            self._fail(
                ErrorCode.BLOCK_NOT_OPEN,
                f"{t} for block {index}, but {self._open_list() + ' is' if self._open else 'no block is'} "
                f"open (state {self._state})",
                n,
            )
        if block.block_type() != kind:
            if t == "block-end":
                what = f"carries {_a(kind)} block for {block.describe()}"
            elif block.delta_type:
                what = f"for {block.describe()}; {_a(block.kind)} block takes {block.delta_type}"
            else:
                what = f"for {block.describe()}; {_a(block.block_type())} block takes no deltas"
            self._fail(ErrorCode.BLOCK_TYPE_MISMATCH, f"{t} {what} (state {self._state})", n)
        return block

    def _check_id_is_new(self, what: str, verb: str, block: _Open, cid: str, n: int) -> None:
        """``TOOL_CALL_CONFLICT`` if a call id already belongs to another block of this stream."""
        owner = self._ids.get(cid)
        if owner is not None:
            self._fail(
                ErrorCode.TOOL_CALL_CONFLICT,
                f"{what} for block {block.index} {verb} call id {cid!r}, which already belongs to block "
                f"{owner}: an id belongs to one block per stream (state {self._state})",
                n,
            )

    def _grow(self, block: _Open, value: str, n: int) -> int:
        """The block's size after ``value`` (see :class:`_Open`); ``LIMIT_EXCEEDED`` past the byte limit."""
        if not block.exact:
            size = block.size + len(value) + 1
            if size <= self._fast_cap:
                return size
            # Past a quarter of the limit in units: count exact bytes from here on (once, over the parts).
            block.size = sum(_utf8_len(p) for p in block.parts)
            block.cap = -1  # exact from here on
        size = block.size + _utf8_len(value)
        if size > self._max_bytes:
            self._limit(n, f"{block.describe()} would hold {size} bytes, more than {self._max_bytes}")
        return size

    def _within_limits(self, block: _Open, size: int, had_deltas: bool, n: int) -> int:
        """The limits of a block ending with ``size`` UTF-8 bytes, in their order: its own bytes (a block with
        deltas was held to them delta by delta), the stream's, the chunk count. Returns the stream's bytes."""
        if not had_deltas and size > self._max_bytes:
            self._limit(n, f"{block.describe()} holds more than {self._max_bytes} bytes")
        stream = self._stream_bytes + size - block.counted
        if stream > self._max_stream:
            self._too_big_a_stream(stream, n)
        if n >= self._max_chunks:
            self._too_many_chunks(n)
        return stream

    def _mismatch(self, block: _Open, field: str, got: str, assembled: str, n: int) -> NoReturn:
        at = _first_difference(got, assembled)
        self._fail(
            ErrorCode.BLOCK_CONTENT_MISMATCH,
            f"block-end for {block.describe()} carries {field} {_short(got)}, but its deltas "
            f"assembled {_short(assembled)} (state {self._state}); they first differ at character {at}: "
            f"{_short(got[max(at - 10, 0) : at + 20])} against {_short(assembled[max(at - 10, 0) : at + 20])}",
            n,
        )

    # -- the stream-wide byte limit (Limits.max_stream_bytes; see _Open.counted) ---------------------

    def _heat(self, block: _Open) -> _Open:
        """``block`` becomes the hot block: its cap no further than the stream's room allows (returned)."""
        if block.cap >= 0:
            block.cap = min(block.cap, block.size_at_count + ((self._max_stream - self._stream_bytes) >> 2))
        return block

    def _cool(self) -> None:
        """Another block opens beside the hot one: count what the hot path gave it (within the room by its cap)."""
        hot = self._hot
        if hot is not None:
            pending = _bytes_since(hot)
            self._count_to(hot, pending, self._stream_bytes + pending)

    def _count_to(self, block: _Open, pending: int, stream: int) -> None:
        """Count ``pending`` bytes of ``block`` (all of its parts now) into the stream's ``stream`` bytes."""
        block.counted += pending
        block.counted_parts = len(block.parts)
        block.size_at_count = block.size
        self._stream_bytes = stream
        if block.cap >= 0:
            block.cap = min(self._fast_cap, block.size + _FLUSH, block.size + ((self._max_stream - stream) >> 2))

    def _too_big_a_stream(self, stream: int, n: int) -> NoReturn:
        self._limit(n, f"the stream would hold {stream} bytes, more than {self._max_stream}")

    def _note(self, code: ErrorCode, message: str, n: int) -> None:
        """Record what STRICT would have refused in an accepted chunk (see :attr:`notes`): once per code."""
        notes = self._notes
        if notes is None:
            notes = self._notes = {}
        note = notes.get(code)
        if note is None:
            notes[code] = _Note(code, message, n)
        else:
            note.count += 1

    def _note_interleaved(self, index: int, kind: str, n: int) -> None:
        self._note(
            ErrorCode.BLOCKS_INTERLEAVED,
            f"blocks interleave: block {index} ({_printable_kind(kind)}) starts while {self._open_list()} is open",
            n,
        )

    def _note_usage_missing(self, kind: str, n: int) -> None:
        self._note(ErrorCode.USAGE_MISSING, f"finish {kind} without usage", n)

    def _note_call(self, block: _Open, cid: str | None, name: str | None, n: int) -> None:
        """HARNESS: a tool call whose id or name (as first said: ``None`` for what was said before) is empty,
        or whose id another block of the stream already has. Counted once a block for each."""
        if cid == "" or name == "":
            empty = " and ".join(what for what, value in (("id", cid), ("name", name)) if value == "")
            self._note(ErrorCode.INVALID_CHUNK, f"tool call in block {block.index} has an empty {empty}", n)
        owner = self._ids.get(cid) if cid is not None else None
        if owner is not None and owner != block.index:
            self._note(
                ErrorCode.TOOL_CALL_CONFLICT,
                f"tool call in block {block.index} has id {_short(cid or '')}, which block {owner} already has",
                n,
            )

    def _too_many_chunks(self, n: int) -> NoReturn:
        self._limit(n, f"more than {self._max_chunks} chunks")

    def _limit(self, n: int, what: str) -> NoReturn:
        self._fail(ErrorCode.LIMIT_EXCEEDED, f"limit exceeded: {what} (state {self._state})", n)

    def _fail(self, code: ErrorCode, message: str, n: int) -> NoReturn:
        """Fail the machine: the error says what, where, and the state the chunk met with what it accepted."""
        state = self._state
        err = LlmError(message, code, chunk_index=n, state=state, expected=accepts(state, self._policy))
        self._error = err
        self._state = FAILED
        self._hot = None
        raise err

    def _again(self) -> LlmError:
        err = self._error
        assert err is not None
        return LlmError(
            f"the stream already failed: {err.message}",
            err.code,
            chunk_index=err.chunk_index,
            state=err.state,
            expected=err.expected,
        )

    def _open_blocks(self) -> list[_Open]:
        return [self._open[i] for i in sorted(self._open)]

    def _open_list(self) -> str:
        return ", ".join(b.describe() for b in self._open_blocks())

    def _open_note(self) -> str:
        return f"; {self._open_list()} still open" if self._open else ""

    @staticmethod
    def _what(t: str, c: dict[str, Any]) -> str:
        if t == "finish":
            return f"finish {_printable_kind(c['reason']['kind'])}"
        if t == "usage":
            return "usage"
        if t == "block-start":
            return f"block-start for block {c['index']} ({_printable_kind(c['blockType'])})"
        return f"{t} for block {c['index']}"

    @staticmethod
    def _type_of(chunk: object) -> str:
        try:
            if isinstance(chunk, Mapping):
                t = chunk.get("type")
                if isinstance(t, str) and t in _shape.CHUNK_TYPES:
                    return str(t)
        except Exception:
            pass
        return "chunk"

    @staticmethod
    def _partial(b: _Open) -> Block | dict[str, Any]:
        """An interrupted block as far as it came, built as completed blocks are (every field set)."""
        content = b.content()
        if b.kind == "tool-call":
            parsed, _ = parse_arguments(content)
            if parsed is None:
                parsed = partial_object(content)
            values = {
                "type": "tool-call",
                "id": CallId(b.id or ""),
                "name": b.name or "",
                "arguments": content,
                "parsed_arguments": parsed if parsed is not None else {},
            }
            return construct(ToolCallBlock, values)
        if not b.kind:  # a block without deltas has no content before its block-end
            return {"type": b.block_type()}
        return construct(_TEXT_MODEL[b.kind], {"type": b.kind, "text": content})


class _Note:
    """One entry of :attr:`StreamAssembler.notes`: the first error STRICT would have raised, and how often.

    The error is made when it is first read: a check that never reads the notes does not pay for one.
    """

    __slots__ = ("_error", "code", "count", "message", "position")

    def __init__(self, code: ErrorCode, message: str, position: int) -> None:
        self.code = code
        self.message = message
        self.position = position
        self.count = 1
        self._error: LlmError | None = None

    @property
    def error(self) -> LlmError:
        if self._error is None:
            self._error = LlmError(self.message, self.code, chunk_index=self.position)
        return self._error


def _json_size(value: object) -> int:
    """The UTF-8 size of ``value`` as compact JSON (a block kept as it came is bounded like any other)."""
    return _shape.json_size(value)


def checker(policy: Policy | str = Policy.STRICT, limits: Limits | None = None) -> StreamAssembler:
    """``StreamAssembler(policy, limits, results=False)``, made by a native call: the way the package's checks
    start a stream (a keyword argument to a compiled class costs a parse of its name, a stream)."""
    return StreamAssembler(policy, limits, results=False)


_STRICT: Final = Policy.STRICT
_HARNESS: Final = Policy.HARNESS
_POLICY_BY_VALUE: Final[dict[str, Policy]] = {p.value: p for p in Policy}
_DEFAULT_MAX_CHUNKS: Final = DEFAULT_LIMITS.max_chunks
_DEFAULT_MAX_BLOCKS: Final = DEFAULT_LIMITS.max_blocks
_DEFAULT_MAX_BYTES: Final = DEFAULT_LIMITS.max_block_bytes
_DEFAULT_MAX_STREAM: Final = DEFAULT_LIMITS.max_stream_bytes
_MAX_INT: Final = _shape.MAX_INT
_BLOCK_TYPES: Final = _shape.BLOCK_TYPES
_ABSENT: Final = object()
_TEXT_MODEL: Final[dict[str, type[TextBlock] | type[ReasoningBlock]]] = {"text": TextBlock, "reasoning": ReasoningBlock}
_USAGE_FIELDS: Final = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cacheReadTokens"),
    ("cache_write_tokens", "cacheWriteTokens"),
    ("reasoning_tokens", "reasoningTokens"),
)
#: The finish reasons without a failure: frozen, so one instance of each serves every stream. Every
#: field is given, as the precise path gives them (``model_fields_set`` is the same on every path).
_PLAIN_FINISH: Final = {kind: FinishReason(kind=kind, failure=None) for kind in ("stop", "tool-calls", "max-tokens")}

"""The machine's handlers: one lookup routes each chunk, and the handler of its type runs its rules.

One lookup per chunk. ``_row[chunk type]`` (the current state's row of ``_table.ROUTES``, for the
assembler's policy) gives the :class:`Route`: the handler of the chunk's type and the next state, with the
guard it depends on as data. A missing entry is the protocol error (``Stream._refuse``), after the
checks SPEC §3 puts before it: FAILED (the same error again), FINISHED (``CHUNK_AFTER_FINISH``, before the
shape), then the chunk's shape (``INVALID_CHUNK``).

Each handler runs the rules of its chunk type, in the order of SPEC §3, each written once:

1. the shape of the fields it reads (``INVALID_CHUNK``): exact types, tested inline; anything the tests
   doubt (another mapping, a ``str`` subclass, a failure or replay state to check whole, a block type or
   finish kind only HARNESS knows) goes to ``_shape.check``, the definition of a chunk's shape, which fails
   with the field and the reason, or gives back a plain, exact-typed copy;
2. the route's guard, if it reads one (:meth:`Handlers._guard`): where it fails with no state to go to, the
   chunk is refused;
3. the rules of the chunk's type (one STRICT holds and HARNESS accepts is one call, ``Stream._violation``: STRICT
   fails, HARNESS notes the same message);
4. the limits (``Stream._limits``: ``LIMIT_EXCEEDED`` comes last).

Only then is anything committed, so a rejected chunk leaves no trace (``Stream._fail`` takes back what it
noted). A handler returns whether the route's guard held; the dispatcher (:meth:`Handlers._feed`) moves to the
state the route names for it. A handler never writes a state.

The dispatch starts a delta with an expectation: what the next delta of the hot block (the one the last
chunk went to) must be — its route, its index, its tool call's id, and its room (``Buffer.cap``). A delta
that meets it breaks no rule, and is appended; any other goes through the delta's rules (``Handlers._delta``).
A route names its handler by a number (:data:`DELTA`, ...), which the dispatch switches on.
"""

from __future__ import annotations

from typing import Any, Final

from . import _shape
from ._arguments import parse_arguments
from ._blocks import Buffer, Keys, bytes_since, open_buffer, utf8_len
from ._compile import mypyc_attr
from ._config import Policy
from ._construct import PLAIN_FINISH, image_block, text_block, tool_call, usage_model
from ._errors import ErrorCode
from ._json import copy_json, json_size
from ._messages import invalid, short, type_of
from ._models import FinishReason, LlmFailure
from ._stream import Stream
from ._table import FAILED, FINISHED, READY, ROUTES, STATES

__all__ = ["BLOCK_END", "BLOCK_START", "DELTA", "FINISH", "USAGE", "Handlers", "Route", "start_rows"]

_CUT_OFF: Final = frozenset({"max-tokens", "error", "aborted"})
_USAGE_REQUIRED: Final = frozenset({"stop", "tool-calls", "max-tokens"})
_MAX_INT: Final = _shape.MAX_INT
_BLOCK_TYPES: Final = _shape.BLOCK_TYPES
_ABSENT: Final = object()
_HARNESS: Final = Policy.HARNESS
# A module constant, not ErrorCode.X where it is read for every block-start: an enum attribute is a slow read.
_INTERLEAVED: Final = ErrorCode.BLOCKS_INTERLEAVED
_NO_BLOCK: Final[dict[str, Any]] = {}  # what block-end's typed ``wire`` holds until its chunk is found to carry one


@mypyc_attr(allow_interpreted_subclasses=True)  # a base of StreamAssembler, which may be subclassed
class Handlers(Stream):
    """The dispatch and the handlers of the chunk types (the base of ``StreamAssembler``)."""

    __slots__ = ("_in_block", "_last", "_last_type")

    _last: Route  # the route the last chunk of type _last_type took (the memo of _feed)
    _last_type: str
    _in_block: dict[str, Route]  # the routes of state IN_BLOCK: a block's deltas take its delta type's

    # -- the dispatch: one lookup a chunk ---------------------------------------------------------

    def _feed(self, chunk: object) -> None:
        """Route ``chunk`` by (state, type), run its handler, and move to the state its route names.

        The lookup is memoised: a chunk of the type the last one looked up had, in the state that route is in, takes
        the same route. A delta first meets the expectation of the hot block's next delta: its route, its index, text
        within the room its cap leaves (the block's, the stream's and the chunk limit's), and for a tool call its id
        and its tool's name as said (if at all). One that meets it breaks no rule and is appended; any other goes
        through the rules (:meth:`_delta`).
        """
        n = self._count
        route: Route | None = None
        if type(chunk) is dict:
            d: dict[str, Any] = chunk  # one cast, not one a use (so hot and block below)
            keys = self._keys
            t = d.get(keys.type)
            if type(t) is str:
                kind: str = t
                last = self._last
                memo = self._last_type
                if (kind is memo or kind == memo) and last.row is self._row:  # the memo: no lookup
                    route = last
                else:
                    route = self._row.get(kind)
                    if route is not None:
                        self._last = route
                        self._last_type = kind  # the chunk's own object: the next one is often the same
                hot = self._hot
                if hot is not None and hot.route is route and route is not None:  # the expectation
                    block: Buffer = hot
                    value = d.get(block.field)
                    index = d.get(keys.index)
                    if type(value) is str and type(index) is int and index == block.index:
                        text: str = value
                        size = block.size + len(text) + 1
                        if size <= block.cap and (block.expected_id is None or _same_call(d, block, keys)):
                            block.size = size
                            block.parts.append(text)
                            self._count = n + 1
                            return
        if route is None:
            chunk, route = self._route_in_full(chunk, n)
        else:
            self._count = n + 1
        c: dict[str, Any] = chunk  # type: ignore[assignment]
        handler = route.handler
        if handler == DELTA:
            self._delta(c, route.chunk_type, n)
            held = True
        elif handler == BLOCK_END:
            held = self._on_block_end(c, route, n)
        elif handler == BLOCK_START:
            held = self._on_block_start(c, route, n)
        elif handler == USAGE:
            held = self._on_usage(c, route, n)
        else:
            held = self._on_finish(c, route, n)
        if held:
            if not route.stays:
                self._state = route.dest
                self._row = route.dest_row
        else:
            self._state = route.otherwise
            self._row = route.otherwise_row

    def _route_in_full(self, chunk: object, n: int) -> tuple[dict[str, Any], Route]:
        """A chunk the row has no route for, as it came: what SPEC §3 decides before the table, then its refusal."""
        state = self._state
        if state == FAILED:
            raise self._again()
        self._count = n + 1
        if state == FINISHED:  # decided before the chunk's shape
            self._fail(
                ErrorCode.CHUNK_AFTER_FINISH,
                f"{type_of(chunk)} after finish; nothing may follow finish (state FINISHED)",
                n,
            )
        c, t = self._shaped(chunk, n)  # a chunk of no known type is refused here
        route = self._row.get(t)
        if route is None:
            self._refuse(t, c, n)
        return c, route

    def _guard(self, route: Route, holds: bool, c: dict[str, Any], n: int) -> bool:
        """The route's guard as the handler found it: a failed guard with no state to go to is a refusal."""
        if not holds and route.refuses:
            self._refuse(route.chunk_type, c, n)
        return holds

    # -- the handlers: the rules of a chunk type, each written once, in the order of SPEC §3 ------------

    def _on_block_start(self, c: dict[str, Any], route: Route, n: int) -> bool:
        keys = self._keys
        got_index: Any = c.get(keys.index)
        got_kind: Any = c.get(keys.block_type)
        index: int
        kind: str
        if (
            type(got_index) is int
            and 0 <= got_index <= _MAX_INT
            and type(got_kind) is str
            and (got_kind in _BLOCK_TYPES or self._interleave)
        ):
            index, kind = got_index, got_kind  # typed: native ints and strs from here
        else:
            c = self._shaped(c, n)[0]
            index, kind = c["index"], c["blockType"]
        if index != self._started:
            self._fail(
                ErrorCode.INDEX_OUT_OF_ORDER,
                f"block-start with index {index}, expected index {self._started}: the n-th block "
                f"of a stream has index n (state {self._state})",
                n,
            )
        if index >= self._max_blocks:
            self._limit(n, f"more than {self._max_blocks} blocks")
        self._limits(n, self._stream_bytes)
        block = open_buffer(kind, index, min(self._fast_cap, (self._max_stream - self._stream_bytes) >> 2), self._keys)
        if block.delta_type:
            block.route = self._in_block[block.delta_type]
        # HARNESS only, each: under STRICT the shape, or the table, refused this block-start (noted with its words)
        if self._interleave and kind not in _BLOCK_TYPES and not self._noted(ErrorCode.INVALID_CHUNK, n):
            reason = _shape.unknown_block_type(kind)
            self._note(ErrorCode.INVALID_CHUNK, invalid("block-start", "blockType", reason, self._state), n)
        open_blocks = self._open
        if open_blocks:
            if not self._noted(_INTERLEAVED, n):
                self._note_refusal(_INTERLEAVED, "block-start", {"index": index, "blockType": kind}, n)
            self._cool()
        open_blocks[index] = block
        self._done.append(None)
        self._started = index + 1
        # The new block is hot (its deltas usually come next), its cap within the room left once the block
        # that was hot has been counted.
        self._hot = self._heat(block)
        return True

    def _delta(self, c: dict[str, Any], t: str, n: int) -> None:
        """A delta the expectation did not meet: its rules in full, then the hot block is this one."""
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
        block = self._block_for(t, index, t[: -len("-delta")], n)
        state = self._state
        if tool:
            if self._interleave and (cid == "" or name == ""):  # under STRICT the shape refused it (its words noted)
                self._said_empty(t, "", cid if block.id is None else None, name if block.name is None else None, n)
            if block.id is None:
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
        size = self._grow(block, value)
        pending = bytes_since(block) + utf8_len(value)
        says = tool and (block.id is None or (name is not None and block.name is None))  # an id or name first said
        kept = 0
        if says:  # the strings the call keeps count with its deltas' bytes, at the chunk that first says them
            new_name = name if name is not None and block.name is None else ""
            kept = self._kept(block, cid if block.id is None else "", new_name, n)
            pending += kept
        stream = self._stream_bytes + pending
        self._limits(n, stream, block, size, True)
        block.size = size
        parts = block.parts
        parts.append(value)
        if len(parts) - block.flushed >= 4096:
            block.flush()
        self._count_to(block, pending, stream)
        if tool:
            block.kept += kept
            if block.id is None:
                block.id = block.expected_id = cid
                self._ids.setdefault(cid, block.index)
            if name is not None:
                block.name = name
        self._hot = block  # its next deltas meet the expectation (counted just now: its cap is the stream's room)

    def _on_block_end(self, c: dict[str, Any], route: Route, n: int) -> bool:
        keys = self._keys
        got_index: Any = c.get(keys.index)
        got: Any = c.get(keys.block)
        kind = ""
        text: Any = None
        index = 0
        wire: dict[str, Any] = _NO_BLOCK  # typed, its fields are read as a dict's (not by a method call)
        ok = type(got_index) is int and 0 <= got_index <= _MAX_INT and type(got) is dict
        if ok:
            index = got_index
            wire = got
            got_kind: Any = wire.get(keys.type)
            ok = type(got_kind) is str
            if ok:
                kind = got_kind  # typed: compared as a str from here
        if ok and kind == "tool-call":
            cid = wire.get(keys.id)
            name = wire.get(keys.name)
            ok = (
                type(cid) is str
                and type(name) is str
                and type(wire.get(keys.arguments)) is str
                and ((cid != "" and name != "") or self._interleave)
            )
        elif ok:
            text = wire.get(keys.text)
            ok = (kind == "text" or kind == "reasoning") and type(text) is str
        if not ok:  # a block that takes no deltas is always checked whole: its content must be JSON data
            c = self._shaped(c, n)[0]
            index, wire = c["index"], c["block"]
            kind, text = wire["type"], wire.get("text")
        open_blocks = self._open
        last_open = self._guard(route, len(open_blocks) == 1, c, n)
        block = open_blocks.get(index)
        if block is None or block.type_name != kind:
            block = self._block_for("block-end", index, kind, n)  # describes the failure
        had_deltas = bool(block.parts)
        hot = self._hot
        done: Any
        if block.kind == "tool-call":
            cid = wire["id"]
            name = wire["name"]
            arguments: str = wire["arguments"]
            if self._interleave and (cid == "" or name == ""):  # under STRICT the shape refused it (its words noted)
                self._said_empty(
                    "block-end", "block.", None if had_deltas else cid, name if block.name is None else None, n
                )
            if had_deltas:
                if cid != block.id:
                    self._mismatch(block, "id", cid, block.id or "", n)
                if block.name is not None and name != block.name:
                    self._mismatch(block, "name", name, block.name, n)
                if not block.settle(arguments):
                    self._mismatch(block, "arguments", arguments, block.content(), n)
            else:
                self._check_id_is_new("block-end", "carries", block, cid, n)
            parsed, why = parse_arguments(arguments, self._results)  # the values exact only if kept
            if parsed is None:
                self._violation(
                    ErrorCode.TOOL_ARGUMENTS_INVALID,
                    f"tool call {cid!r} ({name}) in block {block.index}: arguments {short(arguments)} "
                    f"are not a JSON object: {why} (state {self._state})",
                    n,
                )
            # Its id and name count as its bytes do: those its deltas said are counted already (block.kept).
            kept = block.kept
            if not had_deltas or block.name is None:
                kept += self._kept(block, "" if had_deltas else cid, name if block.name is None else "", n)
            stream = self._block_limits(block, utf8_len(arguments), had_deltas, n, kept)
            done = tool_call(cid, name, arguments, parsed) if self._results else (cid, name)
            self._ids.setdefault(cid, block.index)
            self._tool_calls += 1
        elif block.kind:
            if had_deltas and not block.settle(text):
                self._mismatch(block, "text", text, block.content(), n)
            stream = self._block_limits(block, utf8_len(text), had_deltas, n)
            # without results, the block's type only: its text goes with its open block, now
            done = text_block(block.kind, text) if self._results else block.kind
        else:  # a block that takes no deltas: kept as it came (a copy: the caller may mutate its chunk)
            stream = self._block_limits(block, json_size(wire), False, n)
            if not self._results:
                done = kind
            elif kind == "image":
                done = image_block(copy_json(wire)["attachment"])
            else:
                done = copy_json(wire)
        del open_blocks[index]
        self._done[index] = done
        self._stream_bytes = stream
        if hot is None or hot is block:  # the one block left open (if one is) becomes hot
            hot = next(iter(open_blocks.values())) if len(open_blocks) == 1 else None
        # Hot or not, its cap is renewed: this block's bytes have just made the stream's room smaller.
        self._hot = self._heat(hot) if hot is not None else None
        return last_open

    def _on_usage(self, c: dict[str, Any], route: Route, n: int) -> bool:
        keys = self._keys
        got: Any = c.get(keys.usage)
        if type(got) is dict:
            u: dict[str, Any] = got
            inputs = u.get(keys.input_tokens)
            outputs = u.get(keys.output_tokens)
            if len(u) == 2:  # the two counts a usage must have, and no other (the optional ones absent)
                cache_read = cache_write = reasoning = _ABSENT
            else:
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
            whole: dict[str, Any] = self._shaped(c, n)[0]["usage"]  # an optional count absent is None, as below
            inputs, outputs = whole["inputTokens"], whole["outputTokens"]
            cache_read = whole.get("cacheReadTokens")
            cache_write = whole.get("cacheWriteTokens")
            reasoning = whole.get("reasoningTokens")
        self._limits(n, self._stream_bytes)
        cache_read = None if cache_read is _ABSENT else cache_read
        cache_write = None if cache_write is _ABSENT else cache_write
        reasoning = None if reasoning is _ABSENT else reasoning
        if self._results:
            self._usage = usage_model(inputs, outputs, cache_read, cache_write, reasoning)
        else:
            self._usage_counts = (inputs, outputs, cache_read, cache_write, reasoning)
        return True

    def _on_finish(self, c: dict[str, Any], route: Route, n: int) -> bool:
        keys = self._keys
        reason: Any = c.get(keys.reason)
        kind: Any = reason.get(keys.kind) if type(reason) is dict else None
        finish = PLAIN_FINISH.get(kind) if type(kind) is str else None
        plain = finish is not None and keys.replay_state not in c
        if not plain:  # a failure, a replay state or a kind the protocol does not know: checked whole
            c = self._shaped(c, n)[0]
            reason = c["reason"]
            kind = reason["kind"]
        state = self._state
        may_finish = self._guard(route, not self._open or kind in _CUT_OFF, c, n)
        if self._usage is None and self._usage_counts is None and kind in _USAGE_REQUIRED:
            self._violation(
                ErrorCode.USAGE_MISSING,
                f"finish {kind} without usage (state {state}); under policy strict a "
                f"{kind} finish needs one usage chunk before it",
                n,
            )
        if kind == "tool-calls" and self._tool_calls == 0:
            self._violation(
                ErrorCode.FINISH_REASON_MISMATCH,
                f"finish tool-calls, but the stream completed no tool-call block (state {state})",
                n,
            )
        self._limits(n, self._stream_bytes)
        if finish is not None and plain:
            self._finish = finish
        else:
            # A copy: a caller mutating its chunk after feed must not change the result.
            self._replay = copy_json(c["replayState"]) if "replayState" in c else None
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
                self._finish = PLAIN_FINISH[kind]
            else:  # HARNESS: a kind the protocol does not know, kept as it came (refused by the shape under STRICT)
                self._finish = FinishReason.kept_as_it_came(copy_json(reason))
                reason_kind = _shape.unknown_finish_kind(kind)
                self._note(ErrorCode.INVALID_CHUNK, invalid("finish", "reason.kind", reason_kind, state), n)
        return may_finish


def _count_or_absent(value: object) -> bool:
    """Whether an optional usage count is absent or a token count (the usage handler's fast test)."""
    return value is _ABSENT or (type(value) is int and 0 <= value <= _MAX_INT)


def _same_call(c: dict[str, Any], block: Buffer, keys: Keys) -> bool:
    """Whether a tool call's delta carries the block's id, and names its tool as the block's deltas did (if at all)."""
    cid = c.get(keys.id)
    if type(cid) is not str or cid != block.expected_id:
        return False
    if len(c) > 4:  # four keys are the four read: no name
        name = c.get(keys.name, _ABSENT)  # one lookup, whether it names the tool or not
        return name is _ABSENT or (type(name) is str and name == block.name)
    return True


#: The handlers, as a route names them (``Route.handler``): the dispatch's switch reads the number.
BLOCK_START: Final = 0
DELTA: Final = 1
BLOCK_END: Final = 2
USAGE: Final = 3
FINISH: Final = 4
_HANDLERS: Final[dict[str, int]] = {
    "block-start": BLOCK_START,
    "delta": DELTA,
    "block-end": BLOCK_END,
    "usage": USAGE,
    "finish": FINISH,
}


class Route:
    """An entry of the table: the handler of a chunk type in a state, and the state it leads to.

    ``handler`` is the handler's number (:data:`DELTA`, ...). ``dest`` is the next state when the handler's guard
    holds (or it reads none), ``otherwise`` when it fails; each with its row, the routes of that state. A guard that
    fails where the table has no state to go to ``refuses`` the chunk.
    """

    __slots__ = ("chunk_type", "dest", "dest_row", "handler", "otherwise", "otherwise_row", "refuses", "row", "stays")

    def __init__(
        self,
        rows: dict[str, dict[str, Route]],
        state: str,
        chunk_type: str,
        handler: int,
        dest: str,
        otherwise: str | None,
    ) -> None:
        self.row = rows[state]  # the state's row this route is in (``rows``: every state's, filled as they are made)
        self.chunk_type = chunk_type
        self.handler = handler
        self.dest = dest
        self.dest_row = rows[dest]
        self.stays = dest == state  # whether ``dest`` is the state this route is in
        self.refuses = otherwise is None
        self.otherwise = otherwise if otherwise is not None else dest
        self.otherwise_row = rows[self.otherwise]


class _Rows:
    """The rows of a policy, ``{state: {chunk type: Route}}``, and where a stream starts: plain fields, read once a
    stream (no dict lookup to start one)."""

    __slots__ = ("by_state", "first", "ready")

    def __init__(self, policy: Policy) -> None:
        rows: dict[str, dict[str, Route]] = {state: {} for state in STATES}
        for (state, chunk_type), (handler, dest, _guard, otherwise) in ROUTES[policy].items():
            rows[state][chunk_type] = Route(rows, state, chunk_type, _HANDLERS[handler], dest, otherwise)
        self.by_state = rows
        self.ready = rows[READY]
        self.first: Route = self.ready["block-start"]


_STRICT_ROWS: Final = _Rows(Policy.STRICT)
_HARNESS_ROWS: Final = _Rows(Policy.HARNESS)


def start_rows(policy: Policy) -> _Rows:
    """The rows a stream under ``policy`` starts with."""
    return _HARNESS_ROWS if policy is _HARNESS else _STRICT_ROWS

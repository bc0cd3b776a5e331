"""The stream's state as the handlers share it, and how a chunk fails: the refusal, the limits, the notes.

The base of the handlers (``_handlers``): what the stream holds (its open blocks, what has ended, usage,
finish, the ids of its tool calls), the definition of a chunk's shape as the handlers ask for it
(:meth:`Stream._shaped`), the limits in their order, each written once (:meth:`Stream._limits`), the
notes of what STRICT would have refused (:meth:`Stream._note`), and failing the machine (:meth:`Stream._fail`).
"""

from __future__ import annotations

from typing import Any, Final, NoReturn

from . import _shape
from ._blocks import Buffer, Keys, Room, utf8_len
from ._compile import mypyc_attr
from ._config import Policy
from ._errors import ErrorCode, LlmError
from ._messages import Note, a, block_name, mismatch, refused, short, type_of
from ._models import FinishReason
from ._table import FAILED, accepts, refusal

__all__ = ["Stream"]

_HARNESS: Final = Policy.HARNESS


@mypyc_attr(allow_interpreted_subclasses=True)  # a base of StreamAssembler, which may be subclassed
class Stream(Room):
    """The stream's state, and the checks and failures every handler shares."""

    __slots__ = (
        "_done",
        "_error",
        "_finish",
        "_ids",
        "_interleave",
        "_keys",
        "_notes",
        "_open",
        "_policy",
        "_raw_arguments",
        "_replay",
        "_results",
        "_row",
        "_rows",
        "_started",
        "_state",
        "_tool_calls",
        "_usage",
        "_usage_counts",
    )

    # What the stream holds; set by the machine's one constructor (``StreamAssembler.__init__``).
    _policy: Policy
    _interleave: bool  # the policy is HARNESS
    _raw_arguments: bool  # tool arguments that are not a JSON object are kept raw (HARNESS, or asked for)
    _results: bool
    _keys: Keys  # the key objects the expectation looks a delta's fields up with
    _notes: dict[ErrorCode, Note] | None
    _state: str
    _row: dict[str, Any]  # the current state's routes (``_handlers.Route``), and every state's
    _rows: dict[str, dict[str, Any]]
    _open: dict[int, Buffer]
    _started: int  # the index the next block-start must have
    # Each block by index once it has ended (None while open): its model, or without results its type (a str)
    # or, for a tool call, its (id, name).
    _done: list[Any]
    _ids: dict[str, int]  # the tool calls' ids, each with its block
    _tool_calls: int
    # The usage chunk's model; without results, its counts (input, output, cache read, cache write, reasoning;
    # None for one not given) until a summary asks for the model.
    _usage: Any
    _usage_counts: tuple[Any, ...] | None
    _finish: FinishReason | None
    _replay: Any
    _error: LlmError | None

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
            where = f"field {exc.field!r} " if exc.field else ""
            self._fail(ErrorCode.INVALID_CHUNK, f"invalid {type_of(chunk)}: {where}{exc.reason} (state {state})", n)
        except Exception as exc:  # a hostile mapping: its keys or values raise when read
            self._fail(
                ErrorCode.INVALID_CHUNK,
                f"invalid chunk: reading it raised {type(exc).__name__}: {exc} (state {state})",
                n,
            )

    def _refuse(self, t: str, c: dict[str, Any], n: int) -> NoReturn:
        """The table refused a chunk of type ``t`` in the current state: its code (``_table.refusal``) and message."""
        state = self._state
        open_blocks = self._open
        code = refusal(state, t, bool(open_blocks) and not self._interleave)
        first = next(iter(open_blocks)) if open_blocks else -1
        accepted = accepts(state, self._policy)
        self._fail(code, refused(code, t, c, state, accepted, self._policy.value, self._open_list(), first), n)

    def _limits(self, n: int, stream: int, block: Buffer | None = None, size: int = 0, exact: bool = False) -> None:
        """The limits of an accepted chunk, in their order: its block's bytes, the stream's bytes, the chunk count.

        Each is written here once; a handler calls this after its rules, before it commits anything.
        """
        if block is not None and size > self._max_bytes:
            named = block_name(block.index, block.type_name)
            limit = self._max_bytes
            held = f"would hold {size} bytes, more than {limit}" if exact else f"holds more than {limit} bytes"
            self._limit(n, f"{named} {held}")
        if stream > self._max_stream:
            self._limit(n, f"the stream would hold {stream} bytes, more than {self._max_stream}")
        if n >= self._max_chunks:
            self._limit(n, f"more than {self._max_chunks} chunks")

    def _block_limits(self, block: Buffer, size: int, had_deltas: bool, n: int, kept: int = 0) -> int:
        """The limits of a block ending with ``size`` UTF-8 bytes of content and ``kept`` of a tool call's id and name
        (a block with deltas was held to its own limit delta by delta). Returns the stream's bytes."""
        stream = self._stream_bytes + size + kept - block.counted
        self._limits(n, stream, None if had_deltas else block, size)
        return stream

    def _kept(self, block: Buffer, cid: str, name: str, n: int) -> int:
        """The UTF-8 bytes of a tool call's id and name (``""`` for one already counted): the strings the machine
        keeps besides content. Each is held to ``max_block_bytes``; the caller counts them into the stream's bytes,
        so ``max_stream_bytes`` bounds them with the content. Measured together (one scan), each on its own only
        when together they pass the limit."""
        size = utf8_len(cid + name)
        if size > self._max_bytes:
            for what, value in (("id", cid), ("name", name)):
                held = utf8_len(value)
                if held > self._max_bytes:
                    named = block_name(block.index, block.type_name)
                    self._limit(n, f"the {what} of {named} would hold {held} bytes, more than {self._max_bytes}")
        return size

    def _block_for(self, t: str, index: int, kind: str, n: int) -> Buffer:
        """The open block a delta or block-end names: ``BLOCK_NOT_OPEN``, ``BLOCK_TYPE_MISMATCH``."""
        block = self._open.get(index)
        if block is None:
            self._fail(
                ErrorCode.BLOCK_NOT_OPEN,
                f"{t} for block {index}, but {self._open_list() + ' is' if self._open else 'no block is'} "
                f"open (state {self._state})",
                n,
            )
        if block.block_type() != kind:
            named = block_name(block.index, block.type_name)
            if t == "block-end":
                what = f"carries {a(kind)} block for {named}"
            elif block.delta_type:
                what = f"for {named}; {a(block.kind)} block takes {block.delta_type}"
            else:
                what = f"for {named}; {a(block.block_type())} block takes no deltas"
            self._fail(ErrorCode.BLOCK_TYPE_MISMATCH, f"{t} {what} (state {self._state})", n)
        return block

    def _check_id_is_new(self, what: str, verb: str, block: Buffer, cid: str, n: int) -> None:
        """``TOOL_CALL_CONFLICT`` if a call id already belongs to another block of this stream."""
        owner = self._ids.get(cid)
        if owner is not None:
            self._fail(
                ErrorCode.TOOL_CALL_CONFLICT,
                f"{what} for block {block.index} {verb} call id {cid!r}, which already belongs to block "
                f"{owner}: an id belongs to one block per stream (state {self._state})",
                n,
            )

    def _mismatch(self, block: Buffer, field: str, got: str, assembled: str, n: int) -> NoReturn:
        named = block_name(block.index, block.type_name)
        self._fail(ErrorCode.BLOCK_CONTENT_MISMATCH, mismatch(named, field, got, assembled, self._state), n)

    def _note(self, code: ErrorCode, message: str, n: int) -> None:
        """Record what STRICT would have refused in an accepted chunk (see ``notes``): once per code."""
        notes = self._notes
        if notes is None:
            notes = self._notes = {}
        note = notes.get(code)
        if note is None:
            notes[code] = Note(code, message, n)
        else:
            note.count += 1

    def _note_call(self, block: Buffer, cid: str | None, name: str | None, n: int) -> None:
        """HARNESS: a tool call whose id or name (as first said: ``None`` for what was said before) is empty,
        or whose id another block of the stream already has. Counted once a block for each."""
        if cid == "" or name == "":
            empty = " and ".join(what for what, value in (("id", cid), ("name", name)) if value == "")
            self._note(ErrorCode.INVALID_CHUNK, f"tool call in block {block.index} has an empty {empty}", n)
        owner = self._ids.get(cid) if cid is not None else None
        if owner is not None and owner != block.index:
            self._note(
                ErrorCode.TOOL_CALL_CONFLICT,
                f"tool call in block {block.index} has id {short(cid or '')}, which block {owner} already has",
                n,
            )

    def _limit(self, n: int, what: str) -> NoReturn:
        self._fail(ErrorCode.LIMIT_EXCEEDED, f"limit exceeded: {what} (state {self._state})", n)

    def _fail(self, code: ErrorCode, message: str, n: int) -> NoReturn:
        """Fail the machine: the error says what, where, and the state the chunk met with what it accepted."""
        state = self._state
        err = LlmError(message, code, chunk_index=n, state=state, expected=accepts(state, self._policy))
        self._error = err
        self._state = FAILED
        self._row = self._rows[FAILED]  # no route from here: every chunk raises the error again
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

    def _open_blocks(self) -> list[Buffer]:
        return [self._open[i] for i in sorted(self._open)]

    def _open_list(self) -> str:
        return ", ".join(block_name(b.index, b.type_name) for b in self._open_blocks())

"""The stream's state as the handlers share it, and how a chunk fails: the refusal, the limits, the notes.

The base of the handlers (``_handlers``): what the stream holds (its open blocks, what has ended, usage,
finish, the ids of its tool calls), the definition of a chunk's shape as the handlers ask for it
(:meth:`Stream._shaped`), the limits in their order, each written once (:meth:`Stream._limits`), the
policy's one decision on a rule STRICT holds and HARNESS accepts (:meth:`Stream._violation`: fail, or note the same
message), and failing the machine (:meth:`Stream._fail`, which takes back what the failed chunk noted).
"""

from __future__ import annotations

from typing import Any, Final, NoReturn

from . import _shape
from ._blocks import Buffer, Keys, Room, utf8_len
from ._compile import mypyc_attr
from ._config import Policy
from ._errors import ErrorCode, LlmError
from ._messages import Note, Words, a, block_name, invalid, listed, mismatch, refused, type_of, undo
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
            self._fail(ErrorCode.INVALID_CHUNK, invalid(type_of(chunk), exc.field, exc.reason, state), n)
        except Exception as exc:  # a hostile mapping: its keys or values raise when read
            self._fail(
                ErrorCode.INVALID_CHUNK,
                f"invalid chunk: reading it raised {type(exc).__name__}: {exc} (state {state})",
                n,
            )

    def _refuse(self, t: str, c: dict[str, Any], n: int) -> NoReturn:
        """The table refused a chunk of type ``t`` in the current state: its code (``_table.refusal``) and message."""
        code = refusal(self._state, t, bool(self._open) and not self._interleave)
        self._fail(code, self._refused(code, t, c), n)

    def _refused(self, code: ErrorCode, t: str, c: dict[str, Any]) -> str:
        """The message of a chunk of type ``t`` the table refuses with ``code`` in the current state."""
        return refused(code, t, c, self._state, self._policy, self._open_pairs())

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
        (a block with deltas was held to its own limit delta by delta). Returns the stream's bytes.

        Another block may be hot, with bytes its expectation took not yet counted: at most 4 a unit of its size
        since it was last counted. Where those could take the stream past its limit, they are counted first (exact:
        the verdict and its words as if they always were); far from it, they stay with the hot block, whose cap
        (renewed by the caller) keeps them within the room this block leaves."""
        stream = self._stream_bytes + size + kept - block.counted
        hot = self._hot
        if hot is not None and hot is not block and stream + 4 * (hot.size - hot.size_at_count) > self._max_stream:
            self._cool()
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
        """``TOOL_CALL_CONFLICT`` (a :meth:`_violation`) if a call id already belongs to another block of the stream."""
        owner = self._ids.get(cid)
        if owner is not None:
            self._violation(
                ErrorCode.TOOL_CALL_CONFLICT,
                f"{what} for block {block.index} {verb} call id {cid!r}, which already belongs to block "
                f"{owner}: an id belongs to one block per stream (state {self._state})",
                n,
            )

    def _mismatch(self, block: Buffer, field: str, got: str, assembled: str, n: int) -> NoReturn:
        named = block_name(block.index, block.type_name)
        self._fail(ErrorCode.BLOCK_CONTENT_MISMATCH, mismatch(named, field, got, assembled, self._state), n)

    def _violation(self, code: ErrorCode, message: str, n: int) -> None:
        """Chunk ``n`` broke a rule STRICT holds and HARNESS accepts: the one decision of the policy.

        STRICT fails with ``message``; HARNESS notes the same ``message`` (so does ``raw_arguments`` for arguments
        that are no JSON object). Called where STRICT's rule stands, before the limits: if the chunk then fails,
        :meth:`_fail` takes the note back.
        """
        if self._interleave or (self._raw_arguments and code is ErrorCode.TOOL_ARGUMENTS_INVALID):
            self._note(code, message, n)
        else:
            self._fail(code, message, n)

    def _noted(self, code: ErrorCode, n: int) -> bool:
        """Whether ``code`` is noted already; if so, chunk ``n`` counts it (once a chunk). A message is built only
        for a note still to make: ``if not self._noted(code, n): self._note(code, message, n)``."""
        notes = self._notes
        if notes is None:
            return False
        note = notes.get(code)
        if note is None:
            return False
        if note.last != n:
            note.count += 1
            note.last = n
        return True

    def _note(self, code: ErrorCode, message: str, n: int, words: Words | None = None) -> None:
        """Record what STRICT would have refused with ``message`` at chunk ``n`` (see ``notes``): the first chunk's
        error, once per code; a chunk counts it once. With ``words`` (see :meth:`_note_refusal`), the message is
        written when it is read."""
        if not self._noted(code, n):
            notes = self._notes
            if notes is None:
                notes = self._notes = {}
            notes[code] = Note(code, message, n, self._state, words)

    def _note_refusal(self, code: ErrorCode, t: str, about: dict[str, Any], n: int) -> None:
        """Note that STRICT's table refuses chunk ``n`` (of type ``t``, ``about`` its index and the like: what
        ``_messages.what`` reads) with ``code``: its words, those of :meth:`_refused`, written when read. For a
        note still to make (the caller asks :meth:`_noted` first, before it builds ``about``)."""
        self._note(code, "", n, (t, about, self._open_pairs()))

    def _said_empty(self, t: str, path: str, cid: str | None, name: str | None, n: int) -> None:
        """HARNESS: a tool call's id or name said empty for the first time (``None``: not said now, or said before),
        noted with what STRICT's shape says of it (the id first): once a chunk, so once a block for each."""
        field = "id" if cid == "" else "name" if name == "" else ""
        if field and not self._noted(ErrorCode.INVALID_CHUNK, n):
            self._note(ErrorCode.INVALID_CHUNK, invalid(t, path + field, _shape.NON_EMPTY, self._state), n)

    def _limit(self, n: int, what: str) -> NoReturn:
        self._fail(ErrorCode.LIMIT_EXCEEDED, f"limit exceeded: {what} (state {self._state})", n)

    def _fail(self, code: ErrorCode, message: str, n: int) -> NoReturn:
        """Fail the machine: the error says what, where, and the state the chunk met with what it accepted."""
        state = self._state
        err = LlmError(message, code, chunk_index=n, state=state, expected=accepts(state, self._policy))
        if self._notes:  # what the failed chunk noted is no note: it was not accepted
            undo(self._notes, n)
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

    def _open_pairs(self) -> list[tuple[int, str]]:
        """The open blocks, each its index and type name, by index."""
        return [(b.index, b.type_name) for b in self._open_blocks()]

    def _open_list(self) -> str:
        return listed(self._open_pairs())

"""The StreamChunk machine: :class:`StreamAssembler`, what a caller feeds and what it gets back.

The machine lives in rooms compiled together with mypyc (``setup.py``), each with one reason to change:

- ``_table``: the states, the declared transitions, the table of routes ``(state, chunk type) ->
  (handler, next state)`` read from them, and the diagram;
- ``_handlers``: the one lookup a chunk, and the handler of each chunk type, which runs its rules (SPEC §3);
- ``_blocks``: the open blocks' buffers and the byte accounting of the limits;
- ``_messages``: how a refusal or a note reads;
- ``_construct``: the result models, built from checked values without validating them again.

This module is the face: feeding (a chunk, many, JSON lines), and what the stream came to (a result, a
summary, a snapshot). Compiled, the per-chunk path costs about half as much; it is also plain Python, and
runs as such with ``STREAMFSM_PURE=1``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, cast

import orjson

from . import _parser, _shape
from ._arguments import parse_arguments
from ._blocks import LITERAL_KEYS, NO_ID, Buffer, open_buffer
from ._compile import mypyc_attr
from ._config import DEFAULT_LIMITS, Limits, Policy
from ._construct import CALL_FIELDS, construct, result, text_block, usage_model
from ._errors import ErrorCode, LlmError
from ._handlers import Handlers, start_rows
from ._line_memo import LineMemo
from ._models import (
    Block,
    OpenBlock,
    Snapshot,
    StreamResult,
    StreamSummary,
    ToolCallBlock,
    kept_blocks,
    partial_object,
)
from ._table import DELTAS, FAILED, FINISHED, IN_BLOCK, READY, as_policy, diagram
from ._wire import CallId

__all__ = ["StreamAssembler", "checker", "diagram"]


@mypyc_attr(allow_interpreted_subclasses=True)
class StreamAssembler(Handlers):
    """Validate and assemble one stream, one chunk at a time (sans-IO).

    ``feed(chunk)`` accepts a chunk or raises :class:`LlmError` with the chunk's position;
    ``close()`` returns the :class:`StreamResult` once the stream has finished. After any error the
    assembler is failed: every later call raises an error with the same code.

    ``results=False`` checks the same rules and keeps no content: a block's text is dropped once its
    ``block-end`` has been checked against its deltas, and no result model is built. ``summary()`` then
    says what the stream came to (``close()`` and ``snapshot()`` have nothing to return and raise
    ``ValueError``). This is what ``validate``, ``validate_jsonl`` and ``streamfsm check`` use.

    Compiled or not, it behaves as one object: it may be subclassed; ``pickle``, ``copy.copy`` and
    ``copy.deepcopy`` take the stream as it stands, at any chunk (a checkpoint: the copy, fed the rest, comes to
    the same result); ``raw_arguments`` and ``results`` are ``True`` or ``False`` (anything else is a
    ``TypeError``), and so is a line that is not bytes or text. A subclass whose constructor takes other
    arguments than this one's defines its own ``__reduce__`` to be copied.
    """

    __slots__ = ("_result", "_source_failed")

    def __init__(
        self,
        policy: Policy | str = Policy.STRICT,
        limits: Limits | None = None,
        *,
        raw_arguments: bool = False,
        results: bool = True,
    ) -> None:
        if type(raw_arguments) is not bool or type(results) is not bool:  # compiled, the call itself checks
            _not_a_flag(raw_arguments, results)
        # Module constants, not Policy.X: an enum attribute is a slow read (EnumType's __getattr__).
        if policy is not _STRICT and policy is not _HARNESS:
            policy = as_policy(policy)
        # The one constructor of the machine's rooms: each field is declared (and described) in the room that
        # reads it (Room, Stream, Handlers). The limits are read once as plain values (a model's attributes are slow
        # to read; the defaults' are read at import): the one source every check reads.
        if limits is None:
            self._max_chunks = _MAX_CHUNKS
            self._max_blocks = _MAX_BLOCKS
            self._max_bytes = max_bytes = _MAX_BYTES
            self._max_stream = _MAX_STREAM
        else:
            self._max_chunks = limits.max_chunks
            self._max_blocks = limits.max_blocks
            self._max_bytes = max_bytes = limits.max_block_bytes
            self._max_stream = limits.max_stream_bytes
        self._fast_cap = max_bytes // 4
        self._count = 0
        self._stream_bytes = 0
        self._hot = None
        self._policy = policy
        self._interleave = interleave = policy is _HARNESS
        self._raw_arguments = raw_arguments or interleave
        self._results = results
        self._keys = LITERAL_KEYS  # the JSON-lines paths switch to their parser's (_parser.KEYS)
        self._notes = None
        self._state = READY
        rows = start_rows(policy)
        self._rows = rows.by_state
        self._row = rows.ready
        self._last = rows.first
        self._last_type = rows.first.chunk_type
        self._in_block = rows.by_state[IN_BLOCK]
        self._open = {}
        self._started = 0
        self._done = []
        self._ids = {}
        self._tool_calls = 0
        self._usage = None
        self._usage_counts = None
        self._finish = None
        self._replay = None
        self._error = None
        self._result: StreamResult | None = None
        self._source_failed = False

    # -- what the stream is now -------------------------------------------------------------------

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
    def source_failed(self) -> bool:
        """Whether the last :meth:`feed_many` stopped because its source (not a chunk) raised."""
        return self._source_failed

    @property
    def notes(self) -> list[tuple[LlmError, int]]:
        """What this stream broke of ``Policy.STRICT`` that its policy accepted: one entry per code, in order of first
        sight, each ``(error, count)``.

        ``error`` is the :class:`LlmError` STRICT raises for that rule at the first chunk that broke it: its ``code``,
        its ``message`` word for word, ``chunk_index`` (that chunk's position), ``state`` (the state the chunk met)
        and ``expected`` (what that state accepts under STRICT). ``count`` is how many accepted chunks broke the
        rule, each once (a tool call's empty id or name, or an id another block has, is counted at the chunk that
        first says it: once a block). A chunk the machine refuses adds no entry and no count. Empty under STRICT
        unless ``raw_arguments`` kept some arguments that are not a JSON object (``TOOL_ARGUMENTS_INVALID``). One
        entry per code: bounded.
        """
        return [(note.error, note.count) for note in self._notes.values()] if self._notes else []

    @property
    def note_count(self) -> int:
        """How many entries :attr:`notes` has (cheap: read after each chunk to find the chunk a note was made at)."""
        notes = self._notes
        return len(notes) if notes is not None else 0

    # -- feeding ------------------------------------------------------------------------------------

    def feed(self, chunk: Mapping[str, Any]) -> None:
        """Accept one chunk, or raise :class:`LlmError` (with ``chunk_index``) if it breaks a rule."""
        try:
            self._feed(chunk)
        except LlmError as err:
            _hint(self, err, chunk)
            raise

    def feed_many(self, chunks: Iterable[Mapping[str, Any]]) -> None:
        """Feed chunks in order, as many ``feed`` calls would.

        An exception raised by ``chunks`` itself (its ``__next__``) passes through unchanged; :attr:`source_failed`
        then says so.
        """
        if type(chunks) is list:  # a list raises nothing of its own, and is read by index (no iterator protocol)
            items: list[Any] = chunks
            try:
                for item in items:
                    self._feed(item)
            except BaseException as exc:
                self._source_failed = False
                if isinstance(exc, LlmError):
                    _hint(self, exc, item)
                raise
            return
        feeding = False  # True while a chunk is in the machine: an exception then is not the source's
        try:
            for chunk in chunks:
                feeding = True
                self._feed(chunk)
                feeding = False
        except BaseException as exc:
            self._source_failed = not feeding
            if feeding and isinstance(exc, LlmError):
                _hint(self, exc, chunk)
            raise

    def feed_line(self, line: bytes | bytearray | memoryview | str) -> Any:
        """Parse one JSON line (orjson) and feed it; a line that is not JSON is an ``INVALID_CHUNK``.

        Returns the chunk that was fed; a blank line is skipped, takes no position and returns None. The
        reference of the JSON-lines paths: a line their parser refuses is given to this.
        """
        self._keys = _parser.ORJSON_KEYS
        if isinstance(line, memoryview):
            line = line.tobytes()
        elif not isinstance(line, bytes | bytearray | str):  # compiled, the call itself checks
            raise TypeError(f"a JSON line is bytes, a bytearray, a memoryview or a str, got {type(line).__name__}")
        if _is_blank(line):
            return None
        try:
            chunk = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            from ._lines import not_json  # the cold path: its position as a column of the line

            text = line if isinstance(line, str) else line.decode("utf-8", "backslashreplace")
            self.feed(cast(Any, _shape.InvalidLine(text.strip(), not_json(exc))))  # refused, as a chunk
            raise AssertionError("unreachable: a line that is not JSON is always rejected") from exc
        self.feed(chunk)
        return chunk

    def feed_lines(self, lines: Iterable[bytes | bytearray | memoryview | str]) -> None:
        """Parse JSON lines and feed them, as many ``feed_line`` calls would, at a lower cost.

        The lines are taken as they come (an endless iterable is fed with bounded memory), each by
        :meth:`_line_chunk`: the one line rule of :meth:`accepted_chunks` too.
        """
        loads = _parser.loads
        self._keys = _parser.KEYS
        memo = LineMemo()
        for line in lines:
            self._line_chunk(line, loads, memo)

    def accepted_chunks(
        self, lines: Iterable[bytes | bytearray | memoryview | str], end: bool = False
    ) -> Iterator[Any]:
        """Parse JSON lines and feed them, yielding each chunk once the machine has accepted it.

        Each line is parsed (msgspec where it is installed, orjson otherwise: ``_parser``) and fed as it comes,
        by :meth:`_line_chunk`. With ``end``, the end of the lines is the end of input (:meth:`end`:
        ``STREAM_TRUNCATED`` before a finish). What ``validate_jsonl`` returns.
        """
        loads = _parser.loads
        self._keys = _parser.KEYS
        memo = LineMemo()
        for line in lines:
            chunk = self._line_chunk(line, loads, memo)
            if chunk is not None:
                yield chunk
        if end:
            self.end()

    def _line_chunk(
        self, line: bytes | bytearray | memoryview | str, loads: Callable[[Any], Any], memo: LineMemo
    ) -> Any:
        """Parse one JSON line with ``loads`` and feed it: the chunk, accepted; None for a blank line (skipped).

        A blank line of bytes or text is skipped before it is parsed (a line of JSON never starts with whitespace
        or a control character), by its length and its first character. A line of bytes that repeats the last
        delta's shape is parsed in its text alone (``memo``: the same chunk a whole parse gives). A line ``loads``
        refuses (a line that is not JSON, a blank line of another kind) is :meth:`feed_line`'s: orjson's verdict
        and words decide.
        """
        chunk: Any = None
        if type(line) is bytes:
            if len(line) == 0 or (line[0] <= 32 and _is_blank(line)):
                return None
            chunk = memo.chunk(line, loads)
        elif type(line) is str and (len(line) == 0 or (line[0] <= " " and _is_blank(line))):
            return None
        if chunk is None:
            try:
                chunk = loads(line)
            except Exception:
                chunk = self.feed_line(line)  # skips a blank line, rejects a line that is not JSON
                self._keys = _parser.KEYS
                return chunk
            if type(line) is bytes and type(chunk) is dict and chunk.get(self._keys.type) in DELTAS:
                memo.learn(chunk, line)
        try:
            self._feed(chunk)
        except LlmError as err:
            _hint(self, err, chunk)
            raise
        return chunk

    # -- what the stream came to ----------------------------------------------------------------------

    def close(self) -> StreamResult:
        """End of input: the :class:`StreamResult`, or ``LlmError(STREAM_TRUNCATED)`` before a finish."""
        if self._result is not None:
            return self._result
        self.end()
        if not self._results:
            raise ValueError("this assembler keeps no results (results=False): summary() says what the stream was")
        assert self._finish is not None
        done = self._done
        self._result = result(
            done if not self._open else [b for b in done if b is not None],
            self._usage,
            self._finish,
            [_partial(b) for b in self._open_blocks()] if self._open else [],
            self._replay,
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
            still_open = f"; {self._open_list()} still open" if self._open else ""
            self._fail(
                ErrorCode.STREAM_TRUNCATED,
                f"the input ended after {self._count} chunk(s) without a finish (state {self._state}{still_open})",
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

    # -- a checkpoint: pickle and copy ----------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        """The stream as it stands, as plain data: the machine's settings, then its state (:func:`_restored`)."""
        limits = Limits(
            max_chunks=self._max_chunks,
            max_blocks=self._max_blocks,
            max_block_bytes=self._max_bytes,
            max_stream_bytes=self._max_stream,
        )
        notes = (
            [(n.code, n.message, n.position, n.state, n.count, n.last) for n in self._notes.values()]
            if self._notes
            else None
        )
        blocks = [
            (
                b.type_name,
                b.index,
                b.parts,
                b.flushed,
                b.id,
                b.name,
                b.size,
                b.cap,
                b.counted,
                b.counted_parts,
                b.size_at_count,
                b.kept,
            )
            for b in self._open.values()
        ]
        hot = self._hot.index if self._hot is not None else -1
        state = (
            (self._state, self._count, self._stream_bytes, self._started, self._tool_calls, self._keys is not _LITERAL),
            (self._done, self._ids, self._usage, self._usage_counts, self._finish, self._replay, self._error),
            (notes, blocks, hot, self._result, self._source_failed),
        )
        settings = (self._policy.value, limits, self._raw_arguments, self._results)
        return (_restored, (type(self), settings, state))

    def _usage_model(self) -> Any:
        """The :class:`Usage` of the usage chunk (None without one); without results, made when first asked for."""
        counts = self._usage_counts
        if self._usage is None and counts is not None:
            self._usage = usage_model(*counts)
        return self._usage


def _restored(cls: type[StreamAssembler], settings: tuple[Any, ...], state: tuple[Any, ...]) -> StreamAssembler:
    """A machine made by ``cls`` with ``settings``, at the point of the stream ``state`` holds (see ``__reduce__``):
    each container its own, so a shallow copy shares nothing that feeding changes."""
    from ._messages import Note

    policy, limits, raw_arguments, results = settings
    m = cls(policy, limits, raw_arguments=raw_arguments, results=results)
    (m._state, m._count, m._stream_bytes, m._started, m._tool_calls, json_keys), held, rest = state
    done, ids, m._usage, m._usage_counts, m._finish, m._replay, m._error = held
    notes, blocks, hot, m._result, m._source_failed = rest
    m._done = list(done)
    m._ids = dict(ids)
    m._keys = keys = _parser.KEYS if json_keys else LITERAL_KEYS
    if notes is not None:
        m._notes = {}
        for code, message, position, at, count, last in notes:
            note = m._notes[code] = Note(code, message, position, at)
            note.count, note.last = count, last
    for kind, index, parts, flushed, cid, name, size, cap, counted, counted_parts, size_at_count, kept in blocks:
        b = open_buffer(kind, index, 0, keys)
        b.parts, b.flushed, b.id, b.name, b.size, b.cap = list(parts), flushed, cid, name, size, cap
        b.counted, b.counted_parts, b.size_at_count, b.kept = counted, counted_parts, size_at_count, kept
        if b.kind == "tool-call":
            b.expected_id = cid if cid is not None else NO_ID
        if b.delta_type:
            b.route = m._in_block[b.delta_type]
        m._open[index] = b
        if index == hot:
            m._hot = b
    m._row = m._rows[m._state]
    return m


def _hint(m: StreamAssembler, err: LlmError, chunk: object) -> None:
    """What a refused chunk that is a provider's event (or a line of a server-sent events body) is, and what reads it,
    added to the refusal as it leaves the machine: the machine knows no provider, the recordings' reader does
    (``_recordings.converter_hint``). Only the refusal of this chunk (not a failure raised again) is a candidate."""
    if err is not m._error or err.code != ErrorCode.INVALID_CHUNK or err.chunk_index != m._count - 1:
        return
    if type(chunk) is dict:
        t = chunk.get("type")
        if type(t) is str and t in _shape.CHUNK_TYPES:  # refused for another field than its type
            return
    from ._recordings import converter_hint  # the cold path: a refusal

    try:
        hint = converter_hint(chunk)
    except Exception:  # a hostile value: the refusal goes as it is
        return
    end = f" (state {err.state})"
    if hint and err.message.endswith(end) and hint not in err.message:
        err.message = f"{err.message.removesuffix(end)}{hint}{end}"
        err.args = (err.message,)


def _not_a_flag(raw_arguments: object, results: object) -> None:
    """``TypeError`` for a flag that is not a bool (as the compiled machine's call raises it)."""
    for name, value in (("raw_arguments", raw_arguments), ("results", results)):
        if type(value) is not bool:
            raise TypeError(f"{name} is True or False, got {type(value).__name__}")


def _partial(b: Buffer) -> Block | dict[str, Any]:
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
        return construct(ToolCallBlock, values, CALL_FIELDS)
    if not b.kind:  # a block without deltas has no content before its block-end
        return {"type": b.block_type()}
    return text_block(b.kind, content)


def _is_blank(line: bytes | bytearray | memoryview | str) -> bool:
    """Whether a JSON line holds only JSON whitespace (str.strip() alone would also drop U+001C and friends)."""
    if isinstance(line, str):
        return not line.strip(" \t\r\n")
    if isinstance(line, memoryview):
        line = line.tobytes()
    return not line.strip(b" \t\r\n")


def checker(policy: Policy | str = Policy.STRICT, limits: Limits | None = None) -> StreamAssembler:
    """``StreamAssembler(policy, limits, results=False)``, made by a native call: the way the package's checks
    start a stream (a keyword argument to a compiled class costs a parse of its name, a stream)."""
    return StreamAssembler(policy, limits, results=False)


_STRICT: Final = Policy.STRICT
_LITERAL: Final = LITERAL_KEYS
_HARNESS: Final = Policy.HARNESS
_MAX_CHUNKS: Final = DEFAULT_LIMITS.max_chunks
_MAX_BLOCKS: Final = DEFAULT_LIMITS.max_blocks
_MAX_BYTES: Final = DEFAULT_LIMITS.max_block_bytes
_MAX_STREAM: Final = DEFAULT_LIMITS.max_stream_bytes

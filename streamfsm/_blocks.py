"""The machine's block buffers and byte accounting: what an open block holds, and what the stream has counted.

A delta's text is appended to its block's parts and joined once, at ``block-end``; big blocks are flushed
into segments on the way (:class:`Buffer`). The byte limits (``Limits.max_block_bytes``,
``max_stream_bytes``) are kept in cheap units while they are far (:class:`Room`): a character is 4 UTF-8
bytes at most, so units under a quarter of a limit are under it, and exact bytes are counted only near it.
The checks against the limits are the handlers' (``_handlers``); this room only counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ._compile import mypyc_attr

__all__ = ["FIELDS", "FLUSH", "LITERAL_KEYS", "Buffer", "Keys", "Room", "bytes_since", "open_buffer", "utf8_len"]


class Keys:
    """The key objects the handlers look a chunk's fields up with.

    A dict lookup finds its key by hash, then by identity, and only then by comparing characters. The
    package's own string constants are interned, as the keys of dicts written in Python source are; but
    a JSON parser makes its own key objects (one per distinct key, kept in its key cache), so with those
    constants every lookup in a parsed chunk compares characters. An assembler fed JSON lines looks up with
    its parser's objects instead (``_parser.KEYS``). Only the speed depends on it: a key that is equal and not
    identical is found all the same.
    """

    __slots__ = (
        "arguments",
        "arguments_delta",
        "block",
        "block_type",
        "id",
        "index",
        "input_tokens",
        "kind",
        "name",
        "output_tokens",
        "reason",
        "replay_state",
        "text",
        "type",
        "usage",
    )

    def __init__(self, keys: Iterable[str]) -> None:
        (
            self.type,
            self.index,
            self.text,
            self.arguments_delta,
            self.id,
            self.name,
            self.block_type,
            self.block,
            self.arguments,
            self.usage,
            self.input_tokens,
            self.output_tokens,
            self.reason,
            self.kind,
            self.replay_state,
        ) = keys


#: The fields the handlers read, in the order of :class:`Keys`' arguments.
FIELDS: Final = (
    "type",
    "index",
    "text",
    "argumentsDelta",
    "id",
    "name",
    "blockType",
    "block",
    "arguments",
    "usage",
    "inputTokens",
    "outputTokens",
    "reason",
    "kind",
    "replayState",
)
LITERAL_KEYS: Final = Keys(FIELDS)
#: Parts (roughly) between two flushes of an open block's buffer.
FLUSH: Final = 4096
#: What a tool call's expected id is until its first delta has said it: no id is this object.
NO_ID: Final = object()


class Buffer:
    """A block that has started: its parts so far, what its deltas have said, and what its next delta must be.

    ``kind`` is the block type for one that takes deltas (``text``, ``reasoning``, ``tool-call``), with the
    ``delta_type`` its deltas have and the ``field`` that holds their text; it is ``""`` for a block that
    takes no deltas (an image, or under HARNESS a type not known), which no delta matches
    (``BLOCK_TYPE_MISMATCH``). ``type_name`` is the ``blockType`` it was started with.

    The expectation of its next delta: ``route`` (the delta type's entry in the table), ``index``,
    ``expected_id`` (None for text and reasoning; for a tool call, :data:`NO_ID` until its first delta has set
    the id) and ``cap`` (the room, in units, its deltas may take before the handler counts again). Plain
    slots, not class constants: the handler reads them as fields of the struct.
    """

    __slots__ = (
        "cap",
        "counted",
        "counted_parts",
        "delta_type",
        "expected_id",
        "field",
        "flushed",
        "id",
        "index",
        "kept",
        "kind",
        "name",
        "parts",
        "route",
        "size",
        "size_at_count",
        "type_name",
    )

    def __init__(self, index: int, cap: int, type_name: str, kind: str, delta_type: str, field: str) -> None:
        self.index = index
        self.type_name = type_name
        self.kind = kind
        self.delta_type = delta_type
        self.field = field
        self.route: object = None  # set by the handler that opens it: the route of its deltas
        # The deltas' strings, joined once at block-end. Every FLUSH parts or so, the parts since the
        # last flush are joined into one segment (the first ``flushed`` entries are segments), so a
        # block of a million one-byte deltas holds a few hundred strings, not a million pointers.
        self.parts: list[str] = []
        self.flushed = 0
        self.id: str | None = None
        self.name: str | None = None
        self.expected_id: object = NO_ID if kind == "tool-call" else None
        # ``size`` counts units (characters plus one a part) while ``cap >= 0``, then UTF-8 bytes (``cap``
        # is -1 from then on): see Room.grow.
        self.size = 0
        self.cap = min(cap, FLUSH)
        # The stream-wide byte limit: ``counted`` is how many UTF-8 bytes of this block the stream's total
        # holds already, as of when ``size`` was ``size_at_count``; the deltas the expectation takes since are
        # counted at the next full path or at block-end. ``cap`` keeps them within the stream's room.
        self.counted = 0
        # A tool call's id and name: the UTF-8 bytes of those its deltas said (counted in ``counted`` too).
        self.kept = 0
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
        """The text of the deltas so far."""
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


_DELTA_OF: Final = {"text": "text-delta", "reasoning": "reasoning-delta", "tool-call": "tool-call-delta"}


def open_buffer(kind: str, index: int, cap: int, keys: Keys) -> Buffer:
    """The buffer of a ``blockType``: one that takes deltas, or one that takes none (``kind`` ``""``).

    ``field`` is the key its deltas' text is looked up with (see :class:`Keys`)."""
    delta_type = _DELTA_OF.get(kind)
    if delta_type is None:
        return Buffer(index, cap, kind, "", "", "")
    return Buffer(index, cap, kind, kind, delta_type, keys.arguments_delta if kind == "tool-call" else keys.text)


def utf8_len(text: str) -> int:
    """The UTF-8 size of ``text`` (a lone surrogate counted as its three bytes)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def bytes_since(block: Buffer) -> int:
    """UTF-8 bytes of the parts the expectation gave ``block`` since it was last counted."""
    parts = block.parts
    start = block.counted_parts
    if start >= len(parts):
        return 0
    if start == len(parts) - 1:
        return utf8_len(parts[start])
    return utf8_len("".join(parts[start:]))  # one scan in C (at most a FLUSH cap's worth), not one a part


@mypyc_attr(allow_interpreted_subclasses=True)  # a base of StreamAssembler, which may be subclassed
class Room:
    """The byte accounting of a stream (a base of the machine): the limits as plain values, the bytes counted.

    ``_hot`` is the block whose expectation is live (its deltas' units are counted into the stream's bytes
    at the next full path: :meth:`_cool`, :meth:`_count_to`). Its ``cap`` is the room its expectation may take
    before the delta handler looks again: within the block's limit, the stream's bytes, and the chunk limit
    (each delta takes a unit at least, so a cap of ``size + chunks left`` lets no delta past the last
    position): the handler's checks of those limits then decide, written once (``Stream._limits``).
    """

    __slots__ = (
        "_count",
        "_fast_cap",
        "_hot",
        "_max_blocks",
        "_max_bytes",
        "_max_chunks",
        "_max_stream",
        "_stream_bytes",
    )

    # The limits, as plain values (a model's attributes are slow to read), and the quarter of the block limit that
    # units may reach before bytes are counted exactly (see Buffer.size). Set by the machine's one constructor.
    _max_chunks: int
    _max_blocks: int
    _max_bytes: int
    _max_stream: int
    _fast_cap: int
    _count: int  # chunks fed: the position of the next one
    _stream_bytes: int  # UTF-8 bytes of the stream's blocks counted so far (see Buffer.counted)
    _hot: Buffer | None

    def _heat(self, block: Buffer) -> Buffer:
        """``block`` becomes the hot block: its cap no further than the stream's room allows (returned)."""
        if block.cap >= 0:
            room = min(block.size_at_count + ((self._max_stream - self._stream_bytes) >> 2), self._chunks_left(block))
            block.cap = min(block.cap, room)
        return block

    def _chunks_left(self, block: Buffer) -> int:
        """The units the chunk limit leaves ``block``'s expectation: one a chunk still to come."""
        return block.size + self._max_chunks - self._count

    def _cool(self) -> None:
        """Another block takes a chunk: count what the expectation gave the hot one (within the room by its cap)."""
        hot = self._hot
        if hot is not None:
            pending = bytes_since(hot)
            self._count_to(hot, pending, self._stream_bytes + pending)

    def _count_to(self, block: Buffer, pending: int, stream: int) -> None:
        """Count ``pending`` bytes of ``block`` (all of its parts now) into the stream's ``stream`` bytes."""
        block.counted += pending
        block.counted_parts = len(block.parts)
        block.size_at_count = block.size
        self._stream_bytes = stream
        if block.cap >= 0:
            room = block.size + ((self._max_stream - stream) >> 2)
            # min of two at a time: compiled, a min of more is the generic builtin (boxed ints, ~2,000 instructions)
            block.cap = min(min(self._fast_cap, block.size + FLUSH), min(room, self._chunks_left(block)))

    def _grow(self, block: Buffer, value: str) -> int:
        """The block's size after ``value``: in units while far from the byte limit, in exact bytes near it."""
        if not block.exact:
            size = block.size + len(value) + 1
            if size <= self._fast_cap:
                return size
            # Past a quarter of the limit in units: count exact bytes from here on (once, over the parts).
            block.size = sum(utf8_len(p) for p in block.parts)
            block.cap = -1  # exact from here on
        return block.size + utf8_len(value)

"""Held-back blocks: content that a provider interleaves, put in the one-block-at-a-time order of ``STRICT``.

Provider formats let content interleave (OpenAI streams parallel tool calls by index and may send text between
them); the block protocol under ``Policy.STRICT`` does not. A :class:`BlockQueue` keeps one block open at a
time: the first block streams live, later ones are held back (buffered) and started, with everything they
buffered as one delta, once the open block can end. A converter whose provider may interleave pushes every
block through one queue and returns :meth:`BlockQueue.take` after each event; one whose provider never does
(Anthropic's blocks start and stop in order) uses :class:`~.blocks.ProviderBlock` directly.

Bound: held content never reaches the machine until its block starts, so the queue applies the machine's own
:class:`~streamfsm.Limits` to it as it comes: the UTF-8 bytes of all the content of the stream (live and held, a
call's id and name included, ``max_stream_bytes``), of one held block (``max_block_bytes``), and the blocks made
(``max_blocks``). Held content that passes one is ``LIMIT_EXCEEDED`` at once, before it is kept; live content is
the machine's to refuse. The limits are the queue's argument, its converter's (an adapter gives the converter
it makes ``GenerateOptions.limits``, which :meth:`streamfsm.LlmAdapter.generate` sets to the machine's), else the
defaults. A held block's pieces are packed (joined, :data:`PACK` at a time) as they come, so that what it holds
costs about its bytes, however small the deltas (each piece of text is a Python object of some 50 bytes of its
own).
"""

from __future__ import annotations

from collections import deque
from typing import NoReturn

from .._blocks import utf8_len
from .._config import DEFAULT_LIMITS, Limits
from .._errors import ErrorCode, LlmError
from .._wire import StreamChunk, WireFinishReason
from .blocks import ProviderBlock
from .convert import ended_turn, refuse_empty

__all__ = ["PACK", "BlockQueue"]

#: How many pieces of a held block are joined into one as they come (see the module docstring).
PACK = 256


class BlockQueue:
    """Numbers blocks in order and keeps at most one open; later blocks wait, buffered, until it may end.

    A text or reasoning block may end as soon as another block has content. A tool call may end once its
    arguments are a complete JSON value, or when the response ends. A block the provider said is complete
    (:meth:`end`) ends as soon as it is open. Empty arguments become ``{}``, the provider's way of saying "no
    arguments".

    ``limits`` (the machine's, see the module docstring) bound the content held back. Once the converter has
    read the turn's finish reason (``ended``: its name), content is refused (:func:`~.convert.ended_turn`).
    """

    __slots__ = ("blocks", "done", "ended", "limits", "made", "next_index", "out", "size")

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = DEFAULT_LIMITS if limits is None else limits
        self.size = 0  # the UTF-8 bytes of all the content given so far, live and held
        self.made = 0  # the blocks pushed, started or held
        # Not yet ended; blocks[0] is the open one once started. A deque: ending the first of many held blocks is O(1).
        self.blocks: deque[ProviderBlock] = deque()
        self.next_index = 0
        self.out: list[StreamChunk] = []
        # The blocks (by identity) the provider said are complete (:meth:`end`), not yet ended.
        self.done: set[int] = set()
        self.ended: str | None = None  # what ended the turn (its finish reason, by the provider's name)

    @property
    def count(self) -> int:
        """How many blocks were started."""
        return self.next_index

    def add(self, block: ProviderBlock, text: str) -> None:
        """Append content to ``block`` (which must be in the queue): live if it is open, buffered otherwise."""
        if self.ended is not None:
            raise ended_turn("content", self.ended)
        if block.started:
            block.parts.append(text)
            self.size += utf8_len(text)
            if text:
                self.out.append(block.delta(text))
            return
        self._hold(block, text)
        self._advance()

    def push(self, block: ProviderBlock, text: str) -> None:
        """A new block, with its first content."""
        if self.ended is not None:
            raise ended_turn(f"a {block.kind} block", self.ended)
        self.made += 1
        self.blocks.append(block)
        block.parts.append(text)
        self._advance()
        # A call's id and name count as the machine counts them: with the stream's content.
        kept = utf8_len(block.call_id) + utf8_len(block.name) if block.kind == "tool-call" else 0
        if block.started:
            self.size += utf8_len(text) + kept
            return
        # Held back: the machine cannot count it yet.
        block.parts.pop()
        if self.made > self.limits.max_blocks:
            self._refuse(f"more than {self.limits.max_blocks:,} blocks (Limits.max_blocks)", block)
        self._hold(block, text, kept)

    def _hold(self, block: ProviderBlock, text: str, kept: int = 0) -> None:
        """Keep ``text`` for a block that has not started (and, first, the ``kept`` bytes of its id and name):
        counted first, refused past the limits."""
        size = utf8_len(text)
        self.size += size + kept
        block.held += size
        limits = self.limits
        if block.held > limits.max_block_bytes or kept > limits.max_block_bytes:
            self._refuse(f"more than {limits.max_block_bytes:,} bytes in one block (Limits.max_block_bytes)", block)
        if self.size > limits.max_stream_bytes:
            self._refuse(f"more than {limits.max_stream_bytes:,} bytes in the stream (Limits.max_stream_bytes)", block)
        parts = block.parts
        parts.append(text)
        packed = min(block.packed, len(parts))  # a converter may have joined the parts itself
        if len(parts) - packed >= PACK:
            parts[packed:] = ["".join(parts[packed:])]
            block.packed = packed + 1

    def _refuse(self, what: str, block: ProviderBlock) -> NoReturn:
        head = self.blocks[0]
        waiting = "a tool call whose arguments are not complete" if head.kind == "tool-call" else "an open block"
        raise LlmError(
            f"limit exceeded: {what}, counting the {block.kind} block held back behind block {head.index} "
            f"({waiting}): the provider's content was not kept further",
            ErrorCode.LIMIT_EXCEEDED,
        )

    def last(self) -> ProviderBlock | None:
        """The most recent block still in the queue."""
        return self.blocks[-1] if self.blocks else None

    def end(self, block: ProviderBlock) -> None:
        """The provider said ``block`` (in the queue, or already ended) is complete: it ends as soon as it is open,
        whatever follows it (for providers that mark the end of each block, as the Responses API does)."""
        if not block.ended:
            self.done.add(id(block))
            self._advance()

    def _advance(self) -> None:
        blocks = self.blocks
        while blocks:
            head = blocks[0]
            if not head.started:
                self._start(head)
            if id(head) in self.done:
                self.done.discard(id(head))
            elif len(blocks) == 1 or (head.kind == "tool-call" and not head.arguments_complete()):
                return
            self.out.extend(blocks.popleft().close())

    def _start(self, block: ProviderBlock) -> None:
        block.index = self.next_index
        self.next_index += 1
        block.started = True
        out = self.out
        out.append({"type": "block-start", "index": block.index, "blockType": block.kind})
        held = "".join(block.parts)
        block.parts = [held] if held else []
        if block.kind == "tool-call":
            out.append(block.opening(held))
        elif held:
            out.append(block.delta(held))

    def close_all(self, *, keep_cut_calls: bool) -> None:
        """End every block (starting held ones). With ``keep_cut_calls``, a tool call whose arguments are
        not complete (none came, or they were cut off) is left open: the response was cut (``max-tokens``, an
        error) and the call is interrupted, not a call to run."""
        while self.blocks:
            head = self.blocks[0]
            if not head.started:
                self._start(head)
            if keep_cut_calls and head.kind == "tool-call" and not head.arguments_complete():
                # Blocks after it cannot start under STRICT while it stays open; they were cut as well.
                self.blocks.clear()
                return
            self.out.extend(self.blocks.popleft().close())

    def finish(self, finish: WireFinishReason, *, empty: bool) -> list[StreamChunk]:
        """The input is over with ``finish`` (the opening of a converter's ``end``): every block ended, a tool call
        cut off kept open unless the response was complete (:meth:`close_all`), a ``stop`` with no content
        (``empty``) refused; the chunks made since the last call."""
        self.close_all(keep_cut_calls=finish["kind"] not in ("stop", "tool-calls"))
        refuse_empty(finish, empty)
        return self.take()

    def take(self) -> list[StreamChunk]:
        """The chunks produced since the last call."""
        out, self.out = self.out, []
        return out

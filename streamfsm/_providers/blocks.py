"""One content block of a provider's response as a converter builds it: its chunks, and when its arguments end.

Every converter turns the provider's content into :class:`ProviderBlock` s: text, reasoning or a tool call, its
content kept in pieces and joined once, at its end (joining per delta would be quadratic). A block knows the
chunks that carry it (:meth:`ProviderBlock.delta`, :meth:`ProviderBlock.opening`, :meth:`ProviderBlock.close`)
and, for a tool call, whether its arguments are one complete JSON value yet, scanned incrementally
(:meth:`ProviderBlock.arguments_complete`): what decides when a held-back block may start (:mod:`.held`) and
whether a cut response leaves a call interrupted.
"""

from __future__ import annotations

from typing import Literal

from .._wire import CallId, StreamChunk, WireBlock

__all__ = ["Kind", "ProviderBlock"]

#: The block types a converter makes.
Kind = Literal["text", "reasoning", "tool-call"]


class ProviderBlock:
    """One content block of the provider's response, as it is being converted."""

    __slots__ = (
        "call_id",
        "depth",
        "ended",
        "held",
        "index",
        "kind",
        "name",
        "packed",
        "parts",
        "scanned",
        "started",
        "state",
    )

    def __init__(self, kind: Kind, call_id: str = "", name: str = "") -> None:
        self.kind: Kind = kind
        self.call_id = call_id
        self.name = name
        self.parts: list[str] = []
        self.index = -1  # the block protocol's index, once started
        self.started = False
        self.ended = False
        # While held back (:mod:`.held`): the UTF-8 bytes of its content, and how many leading parts are packed.
        self.held = 0
        self.packed = 0
        # Tool arguments: how far the JSON object is known to be complete (scanned lazily, only when asked).
        self.scanned = 0
        self.depth = 0
        self.state = 0  # 0 before the value, 1 in it, 2 in a string, 3 after a backslash, 4 complete

    def delta(self, text: str) -> StreamChunk:
        """The chunk carrying ``text`` for this (started) block."""
        if self.kind == "tool-call":
            return {"type": "tool-call-delta", "index": self.index, "id": CallId(self.call_id), "argumentsDelta": text}
        if self.kind == "text":
            return {"type": "text-delta", "index": self.index, "text": text}
        return {"type": "reasoning-delta", "index": self.index, "text": text}

    def opening(self, arguments: str) -> StreamChunk:
        """The first delta of a tool call: the only one that must carry the name."""
        return {
            "type": "tool-call-delta",
            "index": self.index,
            "id": CallId(self.call_id),
            "name": self.name,
            "argumentsDelta": arguments,
        }

    def arguments_complete(self) -> bool:
        """Whether the arguments so far are one complete JSON object or array.

        Scans only the parts added since the last call, so asking after every delta stays linear.
        """
        state, depth = self.state, self.depth
        parts = self.parts
        for number in range(self.scanned, len(parts)):
            for char in parts[number]:
                if state == 4:
                    if not char.isspace():
                        state = 1  # more than one value: not complete (the machine will say why)
                elif state == 2:
                    if char == "\\":
                        state = 3
                    elif char == '"':
                        state = 1
                elif state == 3 or char == '"':
                    state = 2
                elif char in "{[":
                    depth += 1
                    state = 1
                elif char in "}]":
                    depth -= 1
                    if depth == 0:
                        state = 4
        self.scanned, self.state, self.depth = len(parts), state, depth
        return state == 4

    def close(self) -> list[StreamChunk]:
        """The chunks that end this (started) block: its ``block-end`` with the complete block.

        A tool call that got no arguments first gets ``{}`` as its delta: the provider's "no arguments".
        """
        out: list[StreamChunk] = []
        text = "".join(self.parts)
        block: WireBlock
        if self.kind == "tool-call":
            if not text:
                text = "{}"
                self.parts.append(text)
                out.append(self.delta(text))
            block = {"type": "tool-call", "id": CallId(self.call_id), "name": self.name, "arguments": text}
        elif self.kind == "text":
            block = {"type": "text", "text": text}
        else:
            block = {"type": "reasoning", "text": text}
        self.ended = True
        out.append({"type": "block-end", "index": self.index, "block": block})
        return out

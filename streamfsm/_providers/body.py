"""A response body's content coding undone step by step: never more than :data:`STEP` bytes made at once.

httpx decodes a whole network read in one go, and a gzip bomb turns 64 KiB read into 64 MiB; here each read is
inflated :data:`STEP` bytes at a time, so whoever consumes the pieces can stop at a bound with nothing more made.
``gzip`` (``x-gzip``), ``deflate`` (zlib-wrapped, or raw as some servers send it) and ``identity`` are decoded,
in any chain (``Content-Encoding: deflate, gzip``); any other coding is ``MALFORMED_RESPONSE`` (the adapters ask
for ``gzip, deflate`` only), and so is a body whose coding is broken. Data after the end of a compressed stream is
ignored, as httpx ignores it.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from .._errors import ErrorCode, LlmError

__all__ = ["ACCEPT_ENCODING", "STEP", "BodyDecoder"]

#: The most a decoder makes from its input before it hands a piece on.
STEP = 64 * 1024
#: What the adapters ask for: the codings :class:`BodyDecoder` undoes.
ACCEPT_ENCODING = "gzip, deflate"

_GZIP = 16 + zlib.MAX_WBITS


class _Inflate:
    """One compressed layer: gzip, or deflate (zlib-wrapped, or raw: told apart by the wrapper's first two bytes)."""

    __slots__ = ("done", "head", "name", "stream")

    def __init__(self, name: str) -> None:
        self.name = name
        self.stream = zlib.decompressobj(_GZIP) if name == "gzip" else None
        self.head = b""  # deflate: the first bytes, until there are two to tell a zlib wrapper by
        self.done = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``data``; ``b""`` is the end of the body."""
        stream = self.stream
        if stream is None:
            ending = not data
            data = self.head + data
            if len(data) < 2 and not ending:
                self.head = data
                return
            if not data:
                return
            self.head = b""
            self.stream = stream = zlib.decompressobj(zlib.MAX_WBITS if _zlib_wrapped(data) else -zlib.MAX_WBITS)
        while not self.done:
            try:
                out = stream.decompress(data, STEP)
            except zlib.error as exc:
                raise LlmError(
                    f"the response body's {self.name} coding is broken ({exc})", ErrorCode.MALFORMED_RESPONSE
                ) from None
            self.done = stream.eof
            data = stream.unconsumed_tail
            if out:
                yield out
            # A full step may leave output inside zlib with no input left: ask again until a step comes short.
            if not data and len(out) < STEP:
                return


def _zlib_wrapped(head: bytes) -> bool:
    """Whether a deflate body starts with a zlib header (RFC 1950: method 8, a check that divides by 31)."""
    return len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0


class BodyDecoder:
    """Undoes a ``Content-Encoding`` chain: :meth:`decode` each read, :meth:`end` when the body is over."""

    __slots__ = ("layers",)

    def __init__(self, content_encoding: str | None) -> None:
        names = [name.strip().lower() for name in (content_encoding or "").split(",")]
        layers: list[_Inflate] = []
        for name in reversed(names):  # the last coding applied is the first to undo
            if name in ("", "identity"):
                continue
            if name in ("gzip", "x-gzip", "deflate"):
                layers.append(_Inflate("deflate" if name == "deflate" else "gzip"))
                continue
            shown = name if len(name) <= 40 else f"{name[:40]}…"
            raise LlmError(
                f"the response body is coded as {shown!r}, which is not decoded (only {ACCEPT_ENCODING} is asked for)",
                ErrorCode.MALFORMED_RESPONSE,
            )
        self.layers = layers

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of the next read, each at most :data:`STEP` bytes (for a coded body)."""
        return self._through(0, data)

    def end(self) -> Iterator[bytes]:
        """What the decoders still hold once the body is over."""
        return self._through(0, b"")

    def _through(self, depth: int, data: bytes) -> Iterator[bytes]:
        if depth == len(self.layers):
            if data:
                yield data
            return
        for piece in self.layers[depth].feed(data):
            yield from self._through(depth + 1, piece)
        if not data:  # the end: flush the layers below as well
            yield from self._through(depth + 1, b"")

"""The entry points of SPEC §5: thin loops around :class:`StreamAssembler` (sync, async, JSON lines)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Generator, Iterable, Iterator, Mapping
from typing import IO, Any, TypeVar

from ._config import Limits, Policy
from ._machine import StreamAssembler
from ._models import StreamResult

__all__ = [
    "aassemble",
    "assemble",
    "assemble_jsonl",
    "avalidate",
    "iter_lines",
    "validate",
    "validate_jsonl",
]

C = TypeVar("C", bound=Mapping[str, Any])
JsonLines = bytes | str | IO[bytes] | IO[str] | Iterable[bytes] | Iterable[str]


def assemble(
    chunks: Iterable[Mapping[str, Any]],
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> StreamResult:
    """Validate and assemble a whole stream of chunk dicts; raises :class:`LlmError` at the first violation."""
    asm = StreamAssembler(policy, limits)
    iterator = iter(chunks)
    try:
        asm.feed_many(iterator)
    except BaseException:
        _close_sync(iterator, quietly=True)
        raise
    _close_sync(iterator)
    return asm.close()


async def aassemble(
    chunks: AsyncIterable[Mapping[str, Any]],
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> StreamResult:
    """:func:`assemble` for an async iterable; the upstream iterator is closed however this ends."""
    asm = StreamAssembler(policy, limits)
    feed = asm.feed
    iterator = aiter(chunks)
    try:
        async for chunk in iterator:
            feed(chunk)
    except BaseException:
        await _close_async(iterator, quietly=True)
        raise
    await _close_async(iterator)
    return asm.close()


def validate(
    chunks: Iterable[C],
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> Generator[C, None, None]:
    """Pass chunks through, each once it is accepted; raises :class:`LlmError` at the first violation.

    At the end of input the stream must have finished (``STREAM_TRUNCATED`` otherwise). The upstream
    iterator is closed on error and when the consumer stops early.
    """
    asm = StreamAssembler(policy, limits)
    feed = asm.feed
    iterator = iter(chunks)
    try:
        for chunk in iterator:
            feed(chunk)
            yield chunk
    except BaseException:
        _close_sync(iterator, quietly=True)
        raise
    _close_sync(iterator)
    asm.close()


async def avalidate(
    chunks: AsyncIterable[C],
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> AsyncGenerator[C, None]:
    """:func:`validate` for an async iterable.

    The upstream async iterator is closed (``aclose()``) on error, on cancellation and when the
    consumer stops early (``break`` then ``aclose()`` of this generator, or its finalisation).
    ``CancelledError`` is never swallowed.
    """
    asm = StreamAssembler(policy, limits)
    feed = asm.feed
    iterator = aiter(chunks)
    try:
        async for chunk in iterator:
            feed(chunk)
            yield chunk
    except BaseException:
        await _close_async(iterator, quietly=True)
        raise
    await _close_async(iterator)
    asm.close()


def iter_lines(source: JsonLines) -> Iterator[bytes | str]:
    """The lines of ``source``: a bytes or str blob, a text or binary file, or an iterable of lines."""
    # Split on newlines only: str.splitlines would also split inside JSON strings at U+2028 and friends.
    if isinstance(source, str):
        return iter(source.split("\n"))
    if isinstance(source, (bytes, bytearray)):
        # A BytesIO over bytes shares their buffer and hands out one line at a time.
        return iter(io.BytesIO(source))
    return iter(source)


def assemble_jsonl(
    source: JsonLines,
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> StreamResult:
    """Assemble a stream given as JSON lines (one chunk a line, parsed with orjson; blank lines skipped).

    A line that is not JSON is an ``INVALID_CHUNK`` at its position in the stream.
    """
    asm = StreamAssembler(policy, limits)
    asm.feed_lines(iter_lines(source))
    return asm.close()


def validate_jsonl(
    source: JsonLines,
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> Iterator[dict[str, Any]]:
    """Parse and validate JSON lines, yielding each chunk dict once it is accepted."""
    asm = StreamAssembler(policy, limits)
    for line in iter_lines(source):
        chunk = asm.feed_line(line)
        if chunk is not None:
            yield chunk
    asm.close()


def _close_sync(iterator: Iterator[Any], *, quietly: bool = False) -> None:
    """Close a generator-like upstream; ``quietly`` while another exception is on its way out."""
    close = getattr(iterator, "close", None)
    if close is not None:
        if quietly:
            with contextlib.suppress(Exception):
                close()
        else:
            close()


async def _close_async(iterator: AsyncIterator[Any], *, quietly: bool = False) -> None:
    """``aclose()`` an async upstream; ``quietly`` keeps the error in flight (never a cancellation)."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        if quietly:
            with contextlib.suppress(Exception):
                await aclose()
        else:
            await aclose()

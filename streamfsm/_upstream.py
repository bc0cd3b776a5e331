"""The source an entry point reads: closing it, wrapping what it raises, and saying what to call when it is no stream.

The entry points (``_api``, and ``assemble`` in ``_assemble``) share these, each written once; every one runs on
the way out of a failure or at the end, never for a chunk.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Final

from ._errors import ErrorCode, LlmError

__all__ = [
    "NOTHING_TO_CLOSE",
    "aclose_upstream",
    "close_upstream",
    "instead",
    "misused",
    "not_async",
    "not_sync",
    "say_instead",
    "wrap_upstream",
]


def instead(chunks: object, entry: str) -> str | None:
    """What to use instead, when ``chunks`` given to ``entry`` (``assemble``, ``validate`` or their async twins) is
    no stream of chunks but something a reader takes: text, a path, a file, or one chunk. ``None`` otherwise."""
    lines = "sf.validate_jsonl" if entry.endswith("validate") else "sf.assemble_jsonl"
    if isinstance(chunks, (str, bytes, bytearray, os.PathLike)):
        what = "a path" if isinstance(chunks, os.PathLike) else "a str" if isinstance(chunks, str) else "bytes"
        return (
            f"{entry}() takes an iterable of chunk objects, not {what}: JSON lines go to {lines}(text); a recording "
            "by its name is read with sf.read_recordings(name) (or pass open(name, 'rb') to "
            f"{lines}())"
        )
    if isinstance(chunks, Mapping):
        return (
            f"{entry}() takes an iterable of chunk objects, and this {type(chunks).__name__} is one chunk: pass a "
            "list of them ([chunk, ...]), or feed one at a time to sf.StreamAssembler().feed(chunk)"
        )
    if hasattr(chunks, "read") and hasattr(chunks, "readline"):
        return f"{entry}() takes an iterable of chunk objects, and a file gives lines: pass the file to {lines}(file)"
    return None


def misused(exc: BaseException, chunks: object, entry: str) -> None:
    """If ``exc`` refused the first chunk as no chunk, and ``chunks`` was something a reader takes (:func:`instead`),
    say in ``exc`` what to use instead. (On the error's way out: no chunk pays for it.)"""
    if isinstance(exc, LlmError):
        say_instead(exc, instead(chunks, entry))


def not_sync(chunks: object, entry: str, twin: str) -> None:
    """``chunks`` is not iterable: if it is a path or an async iterable, a ``TypeError`` that names what takes it.
    (Called only once ``iter`` has refused it: an entry point pays nothing for the hint.)"""
    if isinstance(chunks, os.PathLike):
        raise TypeError(instead(chunks, entry)) from None
    if hasattr(chunks, "__aiter__"):
        raise TypeError(
            f"{entry}() takes an iterable of chunks, and {type(chunks).__name__!r} is an async iterable: "
            f"read it with {twin}"
        ) from None


def not_async(chunks: object, entry: str, twin: str) -> None:
    """``chunks`` is not an async iterable: if it is text, a path, a file or a chunk, a ``TypeError`` that names what
    takes it; if it is a sync iterable, one that names the sync entry point."""
    hint = instead(chunks, entry)
    if hint is not None:
        raise TypeError(hint) from None
    if hasattr(chunks, "__iter__"):
        raise TypeError(
            f"{entry}() takes an async iterable of chunks, and {type(chunks).__name__!r} is a (sync) iterable: "
            f"read it with {twin}"
        ) from None


def close_upstream(iterator: Iterator[Any], *, quietly: bool = False) -> None:
    """Close an upstream iterator, if it can be closed (a generator's ``close()``); the one way the entry points do.

    ``quietly`` while another exception is on its way out: what closing raises then (an ``Exception``) is
    dropped, so that the exception in flight is the one raised. On the way out of a success, it is raised.
    """
    if type(iterator) in NOTHING_TO_CLOSE:
        return
    close = getattr(iterator, "close", None)
    if close is not None:
        if quietly:
            with contextlib.suppress(Exception):
                close()
        else:
            close()


#: The iterators of the built-in containers: nothing to close (``getattr(..., "close", None)`` on one makes and drops
#: an ``AttributeError``, which costs as much as a chunk's checks).
NOTHING_TO_CLOSE: Final = frozenset(map(type, map(iter, ([], (), "", range(0), {}, set()))))


async def aclose_upstream(iterator: AsyncIterator[Any], *, quietly: bool = False) -> None:
    """:func:`close_upstream` for an async upstream: ``await aclose()``, if it has one.

    ``quietly`` drops what closing raises as an ``Exception`` only: a cancellation is never swallowed.
    """
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        if quietly:
            with contextlib.suppress(Exception):
                await aclose()
        else:
            await aclose()


def wrap_upstream(exc: BaseException, ours: bool, chunk_count: int) -> None:
    """The one rule of what an entry point wraps, called where ``exc`` is caught (the caller then re-raises it).

    Raises ``LlmError(UNKNOWN)`` naming ``exc``, ``from`` it, if ``exc`` is the upstream's own failure: an
    ``Exception`` raised while no chunk was in hand (``ours`` false: not the machine's verdict on a chunk, nor
    what the consumer throws in at a yield) that is not an :class:`LlmError`. Returns for anything else: an
    ``LlmError`` the upstream raises, a chunk's own error, a ``BaseException`` (cancellation, ``GeneratorExit``).
    """
    if not ours and isinstance(exc, Exception) and not isinstance(exc, LlmError):
        raise LlmError.wrap(exc, f"the upstream failed after {chunk_count} chunk(s)") from exc


def say_instead(err: BaseException, what: str | None) -> None:
    """Add ``what`` (what to call instead) to ``err``, if it refused the first chunk as no chunk (``INVALID_CHUNK``
    at 0)."""
    if what and isinstance(err, LlmError) and err.code == ErrorCode.INVALID_CHUNK and err.chunk_index == 0:
        err.message += f"; {what}"
        err.args = (err.message,)

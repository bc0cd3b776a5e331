"""The entry points of SPEC §5: thin loops around :class:`StreamAssembler` (sync, async, JSON lines)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from functools import partial
from typing import IO, Any, Final, TypeVar

from ._config import Limits, Policy
from ._errors import ErrorCode, LlmError
from ._lines import _BATCH_SIZE, iter_lines
from ._machine import StreamAssembler, checker
from ._models import StreamResult
from ._upstream import aclose_upstream, close_upstream, misused, not_async, not_sync, say_instead, wrap_upstream

__all__ = [
    "aassemble",
    "assemble_jsonl",
    "avalidate",
    "validate",
    "validate_jsonl",
]

C = TypeVar("C", bound=Mapping[str, Any])
T = TypeVar("T")

JsonLines = bytes | str | IO[bytes] | IO[str] | Iterable[bytes] | Iterable[str]


async def aassemble(
    chunks: AsyncIterable[Mapping[str, Any]],
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
    timeout: float | None = None,
) -> StreamResult:
    """:func:`assemble` for an async iterable; the upstream iterator is closed however this ends.

    Upstream failures, ``timeout`` and cancellation are handled as in :func:`avalidate`.
    """
    asm = StreamAssembler(policy, limits)
    # Passing nothing on, the loop runs the whole stream in its first step (no step a chunk).
    await anext(_checked(chunks, lambda: asm, timeout, "aassemble", "sf.assemble(...)", passing=False), None)
    return asm.close()


def validate(
    chunks: Iterable[C],
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> Generator[C, None, None]:
    """Pass chunks through, each once it is accepted; raises :class:`LlmError` at the first violation.

    At the end of input the stream must have finished (``STREAM_TRUNCATED`` otherwise). The upstream
    iterator is closed on error and when the consumer stops early. What the upstream iterator raises
    becomes an :class:`LlmError` as in :func:`avalidate`.
    """
    asm = checker(policy, limits)
    feed = asm.feed
    try:
        iterator = iter(chunks)
    except TypeError:
        not_sync(chunks, "validate", "async for chunk in sf.avalidate(...)")
        raise
    ours = False  # a chunk is in hand: what is raised now is not the upstream's
    try:
        for chunk in iterator:
            ours = True
            feed(chunk)
            yield chunk
            ours = False
    except BaseException as exc:
        misused(exc, chunks, "validate")
        close_upstream(iterator, quietly=True)
        wrap_upstream(exc, ours, asm.chunk_count)
        raise
    close_upstream(iterator)
    asm.end()  # STREAM_TRUNCATED before a finish


def avalidate(
    chunks: AsyncIterable[C],
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
    timeout: float | None = None,
) -> AsyncGenerator[C, None]:
    """:func:`validate` for an async iterable.

    The upstream async iterator is closed (``aclose()``) on error, on timeout, on cancellation and
    when the consumer stops early (``break`` then ``aclose()`` of this generator, or its finalisation).

    Upstream failures: an :class:`LlmError` the upstream raises passes through unchanged; any other
    ``Exception`` raised by the upstream's ``__anext__`` becomes ``LlmError(UNKNOWN)``, whose message
    names the exception's type and text, raised ``from`` it (``__cause__`` is the original). What the
    consumer's own code raises is not touched. ``CancelledError`` (any ``BaseException``) is never
    swallowed nor wrapped.

    ``timeout`` is an idle timeout: the most seconds to wait for *each* next chunk from the upstream
    (the time the consumer spends between chunks does not count). When it passes, the upstream is
    closed and ``LlmError(TIMEOUT)`` is raised. The wait is cancelled in the task that waits (no task
    is created), by one timer a stream that is re-armed only when it runs out; ``None`` (the default)
    waits for ever and adds nothing per chunk. It needs an asyncio event loop.
    """
    make = partial(checker, policy, limits)
    return _checked(chunks, make, timeout, "avalidate", "for chunk in sf.validate(...)", passing=True)


async def _checked(
    chunks: AsyncIterable[C],
    make: Callable[[], StreamAssembler],
    timeout: float | None,
    entry: str,
    instead: str,
    passing: bool,
) -> AsyncGenerator[C, None]:
    """The one async loop: :func:`avalidate`'s generator (``passing``: it yields each chunk once accepted), and
    :func:`aassemble`'s (it yields none). ``make`` gives the assembler once the generator starts (a bad ``policy``
    is raised at the first chunk asked, as for a sync generator); ``entry`` and ``instead`` name the entry point
    and its sync twin for a misuse's message."""
    asm = make()
    feed = asm.feed
    try:
        iterator = aiter(chunks)
    except TypeError:
        not_async(chunks, entry, instead)
        raise
    idle = None if timeout is None else _Idle(timeout, asm)
    ours = False  # a chunk is in hand (fed, or out with the consumer): what is raised now is not the upstream's
    try:
        async for chunk in iterator if idle is None else idle.pulled(iterator):
            ours = True
            feed(chunk)
            if passing:
                yield chunk
            ours = False
    except BaseException as exc:
        await aclose_upstream(iterator, quietly=True)
        wrap_upstream(exc, ours, asm.chunk_count)
        raise
    finally:
        if idle is not None:
            idle.stop()
    await aclose_upstream(iterator)
    asm.end()  # STREAM_TRUNCATED before a finish


def assemble_jsonl(
    source: JsonLines,
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> StreamResult:
    """Assemble a stream given as JSON lines (one chunk a line, parsed by msgspec where it is installed and by orjson
    otherwise; blank lines skipped).

    ``source``: the text (``bytes`` or ``str``), a binary or text file, or an iterable of lines. Lines,
    blank lines and a byte order mark follow the one rule of ``sf.read_recordings`` (split at LF; a line of
    JSON whitespace is skipped and takes no position; a BOM at the start is skipped). A line that is not
    JSON is an ``INVALID_CHUNK`` at its position in the stream.
    """
    asm = StreamAssembler(policy, limits)
    name = _file_name(source)
    if name is None:
        asm.feed_lines(iter_lines(source))
        return asm.close()
    try:
        asm.feed_lines(iter_lines(source))
        return asm.close()
    except LlmError as err:
        _hint(err, name, "assemble_jsonl")
        raise


def validate_jsonl(
    source: JsonLines,
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> Iterator[dict[str, Any]]:
    """Parse and validate JSON lines, yielding each chunk dict once it is accepted (no result is assembled).

    Each line is taken as it comes (from a blob in memory, a file, a pipe or an iterable of lines), parsed,
    checked, and its chunk yielded before the next line is read; a refused line raises its error once every
    chunk before it has been yielded, and the end of the lines before a finish is ``STREAM_TRUNCATED``. One
    compiled loop (``StreamAssembler.accepted_chunks``) does it all: the lines rule is that of ``assemble_jsonl``.
    """
    if type(source) is bytes and source[:1] == b"{" and len(source) <= _BATCH_SIZE:
        # JSON text in memory, a stream's worth: no file name, no byte order mark, one split (as iter_lines splits
        # it; the empty piece after its last LF is a blank line, which takes no position). No Python call more.
        return checker(policy, limits).accepted_chunks(source.split(b"\n"), True)
    name = _file_name(source)
    lines = checker(policy, limits).accepted_chunks(iter_lines(source), True)
    return lines if name is None else _hinting(lines, name)


#: How long a str or bytes source may be and still be taken for a file name meant as one (a path is short).
_NAME_MAX: Final = 4096
#: How a recording's name ends (``_sources``' suffixes: JSON lines, SSE bodies, compressed or not).
_RECORDING_ENDS: Final = tuple(
    f"{stem}{packed}" for stem in (".jsonl", ".ndjson", ".sse", ".json", ".txt") for packed in ("", ".gz", ".zst")
)


def _file_name(source: object) -> str | None:
    """The file name ``source`` was likely meant as, for :func:`assemble_jsonl` and :func:`validate_jsonl`, which
    take content: a path object (refused here: ``TypeError``), or a short ``str``/``bytes`` of one line that is
    not a JSON object and names a file that exists or ends as a recording's name does. ``None`` otherwise."""
    if type(source) is not bytes and type(source) is not str:  # bytes and text skip the ABC's (slow) check
        if isinstance(source, os.PathLike):
            name = os.fsdecode(source)
            raise TypeError(
                "a JSON-lines source is the lines themselves (bytes, str, a file object or an iterable of lines), "
                f"not a path: {_READ_IT.format(name=name)}"
            )
        if not isinstance(source, (str, bytes)):
            return None
    if len(source) > _NAME_MAX:
        return None
    # JSON text, the usual case, is told by its first character, with nothing decoded or copied (the ASCII
    # whitespace bytes.lstrip skips is whitespace to str.strip too: the rule below decides the same). Compared,
    # not searched: ``x in b"{["`` first tries ``x`` as an int, and makes and drops a TypeError to learn it is not.
    first = source.lstrip()[:1]
    if first in _JSON_STARTS:
        return None
    text = (source.decode("utf-8", "replace") if isinstance(source, bytes) else source).strip()
    if not text or "\n" in text or text[0] in "{[":
        return None
    if text.endswith(_RECORDING_ENDS) or os.path.isfile(text):
        return text
    return None


#: The first character of JSON text that is an object or an array, as bytes and as text.
_JSON_STARTS: Final = frozenset((b"{", b"[", "{", "["))
_READ_IT: Final = "to read the file, pass open({name!r}, 'rb'), or read its streams with sf.read_recordings({name!r})"


def _hint(err: LlmError, name: str, entry: str) -> None:
    """Add to ``err`` (of a one-line source that reads like a file name, refused as it is) how to read the file."""
    say_instead(err, f"{entry}() reads a str as JSON text, not as a file name: {_READ_IT.format(name=name)}")


def _hinting(lines: Iterator[dict[str, Any]], name: str) -> Iterator[dict[str, Any]]:
    """``validate_jsonl``'s chunks for a source that reads like a file name (one line: no chunk pays for this)."""
    try:
        yield from lines
    except LlmError as err:
        _hint(err, name, "validate_jsonl")
        raise


class _Idle:
    """The idle timeout of one stream: the pull in progress is cancelled once it has waited ``timeout``.

    One timer serves the whole stream. Each pull only notes when it started and in which task; when the
    timer runs out it cancels that pull if it has waited long enough, and otherwise sets itself again for
    when it would have. So a chunk costs a clock reading, not a timer of its own (with ``asyncio.timeout``
    a pull would schedule and cancel one, and cancelled timers pile up while the upstream never suspends).
    The cancellation is turned into ``LlmError(TIMEOUT)`` as ``asyncio.timeout`` turns it into
    ``TimeoutError``: only if no other cancellation of the task came meanwhile.
    """

    __slots__ = ("asm", "fired", "handle", "loop", "started", "task", "timeout")

    def __init__(self, timeout: float, asm: StreamAssembler) -> None:
        self.timeout = timeout
        self.asm = asm
        self.loop: asyncio.AbstractEventLoop | None = None
        self.handle: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[Any] | None = None
        self.started = 0.0
        self.fired = False

    def pulled(self, iterator: AsyncIterator[T]) -> AsyncIterator[T]:
        """``iterator``, each of its items awaited under the timeout."""
        return _Timed(self, iterator.__anext__)

    async def pull(self, pull: Callable[[], Awaitable[T]]) -> T:
        """``await pull()``, cancelled with ``LlmError(TIMEOUT)`` if it takes more than ``timeout`` seconds."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a timeout needs an asyncio task")
        loop = self.loop = task.get_loop()
        self.started = loop.time()
        self.task, self.fired = task, False
        if self.handle is None:
            self.handle = loop.call_at(self.started + self.timeout, self._expire)
        cancelling = task.cancelling()
        try:
            item = await pull()
        except asyncio.CancelledError as exc:
            if self.fired and task.uncancel() <= cancelling:
                err = self._error(exc)
                raise err from err.__cause__
            raise
        except Exception as exc:
            if self.fired:
                task.uncancel()
                err = self._error(exc)
                raise err from err.__cause__
            raise
        finally:
            self.task = None
        if self.fired:  # the upstream swallowed the cancellation and answered anyway, too late
            task.uncancel()
            raise self._error(None)
        return item

    def _expire(self) -> None:
        self.handle = None
        task, loop = self.task, self.loop
        if task is None or loop is None:
            return  # no pull in progress: the next one sets the timer again
        deadline = self.started + self.timeout
        if loop.time() < deadline:
            self.handle = loop.call_at(deadline, self._expire)
        else:
            self.fired = True
            task.cancel()

    def stop(self) -> None:
        """Cancel the timer (at the end of the stream, however it ends)."""
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def _error(self, seen: BaseException | None) -> LlmError:
        """``LlmError(TIMEOUT)`` caused by a ``TimeoutError``, itself caused by what the upstream raised then."""
        expired = TimeoutError(f"no chunk within {self.timeout:g} s")
        expired.__cause__ = seen
        err = LlmError(
            f"no chunk from the upstream within {self.timeout:g} s (after {self.asm.chunk_count} chunk(s)); "
            "the upstream was closed",
            ErrorCode.TIMEOUT,
        )
        err.__cause__ = expired
        return err


class _Timed(AsyncIterator[T]):
    """An async iterator whose every ``__anext__`` goes through :meth:`_Idle.pull` (no generator to finalise)."""

    __slots__ = ("idle", "pull")

    def __init__(self, idle: _Idle, pull: Callable[[], Awaitable[T]]) -> None:
        self.idle = idle
        self.pull = pull

    def __aiter__(self) -> _Timed[T]:
        return self

    def __anext__(self) -> Awaitable[T]:
        return self.idle.pull(self.pull)

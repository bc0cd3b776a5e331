"""Upstream failures (SPEC §5, issue 7): an upstream that raises, hangs or is cancelled.

Every entry point closes the upstream and surfaces a coded error: the upstream's own ``LlmError``
unchanged, any other ``Exception`` as ``UNKNOWN`` raised from it, an idle upstream as ``TIMEOUT``
(``timeout=``); a cancellation stays a ``CancelledError``. No task is left behind. What the
consumer's own code raises is never taken for the upstream's.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import orjson
import pytest

import streamfsm as sf

from ..data import SEED_CHUNKS

Chunk = dict[str, Any]
#: Where every broken upstream breaks: after the first text block, before the tool call.
AT = 4
#: The longest any test here may take; a hang past it fails the test instead of the suite.
GUARD = 20.0


class _Upstream:
    """The seed chunks; at ``AT`` it does ``then`` ("raise" ``error``, or "hang"); records its closing."""

    def __init__(self, then: str = "", error: BaseException | None = None, *, pause: float = 0.0) -> None:
        self.then, self.error, self.pause = then, error, pause
        self.closed = False
        self.waiting = asyncio.Event()

    async def before(self, i: int) -> None:
        """What happens before chunk ``i`` comes: the break at ``AT``, then the pause."""
        if i == AT and self.then == "raise":
            assert self.error is not None
            raise self.error
        if i == AT and self.then == "hang":
            self.waiting.set()
            await asyncio.sleep(3600)


class AsyncSource(_Upstream):
    """An async generator upstream."""

    async def chunks(self) -> AsyncIterator[Chunk]:
        try:
            for i, chunk in enumerate(copy.deepcopy(SEED_CHUNKS)):
                await self.before(i)
                await asyncio.sleep(self.pause)
                yield chunk
        finally:
            self.closed = True


class AsyncConnection(_Upstream):
    """An upstream that is not a generator (as an HTTP response body): ``__anext__`` and ``aclose``."""

    def __init__(self, then: str = "", error: BaseException | None = None, *, pause: float = 0.0) -> None:
        super().__init__(then, error, pause=pause)
        self.position = 0

    def chunks(self) -> AsyncConnection:
        return self

    def __aiter__(self) -> AsyncConnection:
        return self

    async def __anext__(self) -> Chunk:
        assert not self.closed, "read after aclose()"
        i = self.position
        await self.before(i)
        if i == len(SEED_CHUNKS):
            raise StopAsyncIteration
        await asyncio.sleep(self.pause)
        self.position = i + 1
        return copy.deepcopy(SEED_CHUNKS[i])

    async def aclose(self) -> None:
        self.closed = True


SOURCES = {"async generator": AsyncSource, "connection object": AsyncConnection}


async def collect(stream: Any) -> list[Any]:
    return [chunk async for chunk in stream]


#: The async entry points, each run to its end; ``timeout`` is passed through.
ASYNC_ENTRY: dict[str, Callable[..., Awaitable[Any]]] = {
    "avalidate": lambda up, **kw: collect(sf.avalidate(up, **kw)),
    "aassemble": lambda up, **kw: sf.aassemble(up, **kw),
}

#: What the upstream raises mid-stream, and the code the consumer sees.
FAILURES: dict[str, tuple[BaseException, str]] = {
    "ConnectionError": (ConnectionError("connection reset by peer"), "UNKNOWN"),
    "ValueError": (ValueError("bad SSE frame"), "UNKNOWN"),
    "its own TimeoutError": (TimeoutError("read timed out"), "UNKNOWN"),
    "OSError subclass": (BrokenPipeError(32, "Broken pipe"), "UNKNOWN"),
    "RuntimeError": (RuntimeError("event loop is closed"), "UNKNOWN"),
    "LlmError (its own code)": (sf.LlmError("slow down", "RATE_LIMIT", status=429), "RATE_LIMIT"),
    "LlmError (a provider's code)": (sf.LlmError("blocked", "CONTENT_FILTER"), "CONTENT_FILTER"),
}


class Interrupt(BaseException):
    """A BaseException that is not an Exception (as KeyboardInterrupt or SystemExit): never wrapped."""


def run(main: Callable[[], Awaitable[None]]) -> None:
    """Run a test's coroutine under a guard, then check that it left no task behind."""

    async def guarded() -> None:
        async with asyncio.timeout(GUARD):
            await main()
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(guarded())


def check_wrapped(err: sf.LlmError, original: BaseException, code: str, chunks_before: int) -> None:
    """The error the consumer got for what the upstream raised."""
    if isinstance(original, sf.LlmError):
        assert err is original  # passes through unchanged
        return
    assert err.code == code and err.chunk_index is None
    assert err.__cause__ is original
    assert type(original).__name__ in err.message and str(original) in err.message
    assert f"after {chunks_before} chunk(s)" in err.message


# -- an upstream that raises -------------------------------------------------------------------


@pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
@pytest.mark.parametrize("entry", ASYNC_ENTRY.values(), ids=ASYNC_ENTRY.keys())
def test_async_upstream_that_raises_mid_stream(
    entry: Callable[..., Awaitable[Any]], source: type[AsyncSource], failure: tuple[BaseException, str]
) -> None:
    original, code = failure

    async def main() -> None:
        for timeout in (None, 5.0):  # with a timeout the same error comes through the timed wait
            up = source("raise", copy.copy(original) if not isinstance(original, sf.LlmError) else original)
            with pytest.raises(sf.LlmError) as info:
                await entry(up.chunks(), timeout=timeout)
            check_wrapped(info.value, up.error or original, code, AT)
            assert up.closed

    run(main)


@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
@pytest.mark.parametrize("entry", ASYNC_ENTRY.values(), ids=ASYNC_ENTRY.keys())
def test_a_base_exception_from_upstream_is_not_wrapped(
    entry: Callable[..., Awaitable[Any]], source: type[AsyncSource]
) -> None:
    async def main() -> None:
        for timeout in (None, 5.0):
            up = source("raise", Interrupt("stop"))
            with pytest.raises(Interrupt):
                await entry(up.chunks(), timeout=timeout)
            assert up.closed

    run(main)


def sync_source(then: str, error: BaseException | None, closed: list[bool]) -> Iterator[Chunk]:
    try:
        for i, chunk in enumerate(copy.deepcopy(SEED_CHUNKS)):
            if i == AT and then == "raise":
                assert error is not None
                raise error
            yield chunk
    finally:
        closed.append(True)


SYNC_ENTRY: dict[str, Callable[[Any], Any]] = {
    "validate": lambda up: list(sf.validate(up)),
    "assemble": sf.assemble,
}


@pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
@pytest.mark.parametrize("entry", SYNC_ENTRY.values(), ids=SYNC_ENTRY.keys())
def test_sync_upstream_that_raises_mid_stream(entry: Callable[[Any], Any], failure: tuple[BaseException, str]) -> None:
    original, code = failure
    closed: list[bool] = []
    with pytest.raises(sf.LlmError) as info:
        entry(sync_source("raise", original, closed))
    check_wrapped(info.value, original, code, AT)
    assert closed == [True]
    with pytest.raises(Interrupt):
        entry(sync_source("raise", Interrupt("stop"), closed))


class NoClose:
    """A sync iterator with no ``close``: what it raises is the upstream's all the same."""

    def __init__(self) -> None:
        self.position = 0

    def __iter__(self) -> NoClose:
        return self

    def __next__(self) -> Chunk:
        if self.position == AT:
            raise ConnectionError("gone")
        self.position += 1
        return SEED_CHUNKS[self.position - 1]


@pytest.mark.parametrize("entry", SYNC_ENTRY.values(), ids=SYNC_ENTRY.keys())
def test_sync_upstream_without_close(entry: Callable[[Any], Any]) -> None:
    with pytest.raises(sf.LlmError) as info:
        entry(NoClose())
    assert info.value.code == "UNKNOWN" and isinstance(info.value.__cause__, ConnectionError)


class Closable:
    """A sync iterator of ``chunks`` with a ``close`` that counts its calls, and raises ``on_close`` if given."""

    def __init__(self, chunks: list[Chunk], on_close: Exception | None = None) -> None:
        self.chunks, self.on_close, self.closed = iter(chunks), on_close, 0

    def __iter__(self) -> Closable:
        return self

    def __next__(self) -> Chunk:
        return next(self.chunks)

    def close(self) -> None:
        self.closed += 1
        if self.on_close is not None:
            raise self.on_close


@pytest.mark.parametrize("entry", SYNC_ENTRY.values(), ids=SYNC_ENTRY.keys())
def test_the_upstream_is_closed_once_at_the_end_whatever_the_end(entry: Callable[[Any], Any]) -> None:
    """Closed after a success (what closing raises then is raised) and after a failure (the failure is raised,
    what closing raises is dropped)."""
    done = Closable(SEED_CHUNKS)
    entry(done)
    assert done.closed == 1
    with pytest.raises(OSError, match="close failed"):
        entry(Closable(SEED_CHUNKS, OSError("close failed")))
    refused = Closable([*SEED_CHUNKS[:AT], {"type": "nonsense"}], OSError("close failed"))
    with pytest.raises(sf.LlmError) as info:
        entry(refused)
    assert (info.value.code, info.value.chunk_index, refused.closed) == ("INVALID_CHUNK", AT, 1)


@pytest.mark.parametrize("entry", SYNC_ENTRY.values(), ids=SYNC_ENTRY.keys())
def test_a_protocol_error_is_the_machines_not_the_upstreams(entry: Callable[[Any], Any]) -> None:
    """A chunk the machine rejects is its coded error, with no cause: the upstream did nothing wrong."""
    chunks = [*SEED_CHUNKS[:AT], {"type": "nonsense"}, *SEED_CHUNKS[AT:]]
    with pytest.raises(sf.LlmError) as info:
        entry(iter(chunks))
    assert (info.value.code, info.value.chunk_index, info.value.__cause__) == ("INVALID_CHUNK", AT, None)


def test_assemble_jsonl_still_reads_past_a_line_that_is_not_json() -> None:
    """feed_lines relies on the source's exception passing through feed_many unchanged."""
    lines = [orjson.dumps(c) for c in SEED_CHUNKS]
    with pytest.raises(sf.LlmError) as info:
        sf.assemble_jsonl([*lines[:AT], b"{not json", *lines[AT:]])
    assert (info.value.code, info.value.chunk_index) == ("INVALID_CHUNK", AT)
    assert sf.assemble_jsonl([*lines[:AT], b"  ", *lines[AT:]]) == sf.assemble(SEED_CHUNKS)


# -- what the consumer raises is its own -------------------------------------------------------


def test_consumer_errors_in_the_loop_body_are_not_wrapped() -> None:
    async def main() -> None:
        up = AsyncSource()
        with pytest.raises(KeyError, match="mine"):
            async with contextlib.aclosing(sf.avalidate(up.chunks())) as stream:
                async for chunk in stream:
                    if chunk["type"] == "block-end":
                        raise KeyError("mine")
        assert up.closed

    run(main)
    closed: list[bool] = []
    with pytest.raises(KeyError, match="mine"), contextlib.closing(sf.validate(sync_source("", None, closed))) as gen:
        for chunk in gen:
            if chunk["type"] == "block-end":
                raise KeyError("mine")
    assert closed == [True]


def test_an_exception_thrown_into_the_generator_is_not_wrapped() -> None:
    """``athrow``/``throw`` lands at the generator's yield, not in the upstream's ``__anext__``."""

    async def main() -> None:
        up = AsyncSource()
        stream = sf.avalidate(up.chunks())
        await stream.__anext__()
        with pytest.raises(ValueError, match="consumer"):
            await stream.athrow(ValueError("consumer"))
        assert up.closed

    run(main)
    closed: list[bool] = []
    gen = sf.validate(sync_source("", None, closed))
    next(gen)
    with pytest.raises(ValueError, match="consumer"):
        gen.throw(ValueError("consumer"))
    assert closed == [True]


# -- an upstream that hangs: the idle timeout ---------------------------------------------------


@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
@pytest.mark.parametrize("entry", ASYNC_ENTRY.values(), ids=ASYNC_ENTRY.keys())
def test_an_upstream_that_hangs_times_out(entry: Callable[..., Awaitable[Any]], source: type[AsyncSource]) -> None:
    async def main() -> None:
        up = source("hang")
        with pytest.raises(sf.LlmError) as info:
            await entry(up.chunks(), timeout=0.5)
        err = info.value
        assert err.code == "TIMEOUT" and err.retryable and err.chunk_index is None
        assert "within 0.5 s" in err.message and f"after {AT} chunk(s)" in err.message
        assert isinstance(err.__cause__, TimeoutError) and str(err.__cause__) == "no chunk within 0.5 s"
        assert isinstance(err.__cause__.__cause__, asyncio.CancelledError)  # what the upstream saw
        assert up.waiting.is_set() and up.closed

    run(main)


class Stubborn:
    """An upstream that swallows the cancellation of its wait and answers anyway, too late."""

    def __init__(self) -> None:
        self.closed = False

    async def chunks(self) -> AsyncIterator[Chunk]:
        try:
            for i, chunk in enumerate(copy.deepcopy(SEED_CHUNKS)):
                if i == AT:
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.sleep(3600)
                yield chunk
        finally:
            self.closed = True


class Crumbling(Stubborn):
    """An upstream whose clean-up, on the cancellation of its wait, raises something else."""

    async def chunks(self) -> AsyncIterator[Chunk]:
        try:
            for i, chunk in enumerate(copy.deepcopy(SEED_CHUNKS)):
                if i == AT:
                    try:
                        await asyncio.sleep(3600)
                    except asyncio.CancelledError:
                        raise ConnectionError("closed while reading") from None
                yield chunk
        finally:
            self.closed = True


@pytest.mark.parametrize("source", [Stubborn, Crumbling], ids=["swallows the cancellation", "raises on it"])
@pytest.mark.parametrize("entry", ASYNC_ENTRY.values(), ids=ASYNC_ENTRY.keys())
def test_a_timed_out_upstream_is_a_timeout_whatever_it_does_then(
    entry: Callable[..., Awaitable[Any]], source: type[Stubborn]
) -> None:
    async def main() -> None:
        up = source()
        with pytest.raises(sf.LlmError) as info:
            await entry(up.chunks(), timeout=0.05)
        assert info.value.code == "TIMEOUT" and up.closed
        expired = info.value.__cause__
        assert isinstance(expired, TimeoutError)
        if source is Crumbling:
            assert isinstance(expired.__cause__, ConnectionError)
        else:
            assert expired.__cause__ is None

    run(main)


@pytest.mark.parametrize("entry", ASYNC_ENTRY.values(), ids=ASYNC_ENTRY.keys())
def test_the_timeout_is_per_chunk_not_for_the_stream(entry: Callable[..., Awaitable[Any]]) -> None:
    """Nine chunks 0.15 s apart take longer than the 1 s timeout in all, but each comes in time."""

    async def main() -> None:
        up = AsyncSource(pause=0.15)
        result = await entry(up.chunks(), timeout=1.0)
        assert result == SEED_CHUNKS or result == sf.assemble(SEED_CHUNKS)
        assert up.closed

    run(main)


def test_the_consumers_time_does_not_count() -> None:
    """The consumer dawdles 0.6 s over a chunk with a 0.5 s timeout: the upstream is never idle."""

    async def main() -> None:
        up = AsyncSource()
        got = []
        async for chunk in sf.avalidate(up.chunks(), timeout=0.5):
            if not got:
                await asyncio.sleep(0.6)
            got.append(chunk)
        assert got == SEED_CHUNKS and up.closed

    run(main)


def test_the_timeout_applies_in_whichever_task_pulls_the_chunk() -> None:
    """An avalidate generator may be driven by several tasks in turn; each pull is timed in its own."""

    async def main() -> None:
        up = AsyncSource()
        stream = sf.avalidate(up.chunks(), timeout=1.0)
        first = await asyncio.create_task(stream.__anext__())
        rest = await asyncio.create_task(collect(stream))
        assert [first, *rest] == SEED_CHUNKS and up.closed

    run(main)


def live_timers() -> int:
    """Timers scheduled on the running loop and not cancelled (asyncio's own list: a private attribute)."""
    scheduled = getattr(asyncio.get_running_loop(), "_scheduled", [])
    return sum(1 for handle in scheduled if not handle.cancelled())


@pytest.mark.parametrize("entry", ASYNC_ENTRY.values(), ids=ASYNC_ENTRY.keys())
def test_one_timer_a_stream_and_none_left_after_it(entry: Callable[..., Awaitable[Any]]) -> None:
    """An upstream that never suspends: its chunks schedule no timers of their own (nothing piles up)."""
    chunks = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        *({"type": "text-delta", "index": 0, "text": "a"} for _ in range(20_000)),
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "a" * 20_000}},
        *copy.deepcopy(SEED_CHUNKS[-2:]),
    ]
    seen: list[int] = []

    async def eager() -> AsyncIterator[Chunk]:
        for k, chunk in enumerate(chunks):
            if k % 5_000 == 0:
                seen.append(len(getattr(asyncio.get_running_loop(), "_scheduled", [])))
            yield chunk

    async def main() -> None:
        before = live_timers()  # the guard's own timer
        scheduled = len(getattr(asyncio.get_running_loop(), "_scheduled", []))
        await entry(eager(), timeout=30.0)
        assert live_timers() == before
        assert len(seen) == 5 and max(seen) <= scheduled + 1, seen

    run(main)


# -- a consuming task that is cancelled ---------------------------------------------------------


@pytest.mark.parametrize("timeout", [None, 5.0], ids=["no timeout", "with a timeout"])
@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
@pytest.mark.parametrize("entry", ASYNC_ENTRY.values(), ids=ASYNC_ENTRY.keys())
def test_cancelling_the_consumer_closes_the_upstream(
    entry: Callable[..., Awaitable[Any]], source: type[AsyncSource], timeout: float | None
) -> None:
    async def main() -> None:
        up = source("hang")
        task = asyncio.ensure_future(entry(up.chunks(), timeout=timeout))
        await up.waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled() and up.closed

    run(main)


@pytest.mark.parametrize("entry", ASYNC_ENTRY.values(), ids=ASYNC_ENTRY.keys())
def test_a_cancelled_consumer_is_not_a_timeout(entry: Callable[..., Awaitable[Any]]) -> None:
    """Cancelled from outside while the timed wait is on: CancelledError, not TIMEOUT."""

    async def main() -> None:
        up = AsyncSource("hang")
        task = asyncio.ensure_future(entry(up.chunks(), timeout=10))
        await up.waiting.wait()
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert up.closed

    run(main)


def test_the_timeout_does_not_hide_the_cancellation_of_the_consumer_within_wait_for() -> None:
    """An outer ``asyncio.wait_for`` that runs out cancels the consumer: its own TimeoutError, not ours."""

    async def main() -> None:
        up = AsyncSource("hang")
        with pytest.raises(TimeoutError) as info:
            await asyncio.wait_for(sf.aassemble(up.chunks(), timeout=10.0), 0.05)
        assert not isinstance(info.value, sf.LlmError) and up.closed

    run(main)


# -- how assemble tells the source's exception from the machine's ------------------------------


#: What feed_many is given, after a source error it has already passed on or not, and whether the source raised.
SOURCE_OR_CHUNK: dict[str, tuple[list[Any], bool, bool]] = {
    "the source raises in a block": ([*SEED_CHUNKS[:2], ConnectionError("gone")], False, True),
    "the source raises between blocks": ([*SEED_CHUNKS[:AT], ConnectionError("gone")], False, True),
    "the source raises first": ([ConnectionError("gone")], False, True),
    "a chunk is rejected in a block": ([*SEED_CHUNKS[:2], {"type": "nonsense"}], False, False),
    "a chunk is rejected between blocks": ([*SEED_CHUNKS[:AT], SEED_CHUNKS[AT - 1]], False, False),
    "a chunk is rejected after a source error": ([*SEED_CHUNKS[:2], {"type": "usage"}], True, False),
}


def raising(items: list[Any]) -> Iterator[Any]:
    for item in items:
        if isinstance(item, BaseException):
            raise item
        yield item


@pytest.mark.parametrize(("items", "after_error", "source"), SOURCE_OR_CHUNK.values(), ids=SOURCE_OR_CHUNK.keys())
def test_feed_many_says_whether_its_source_raised(items: list[Any], after_error: bool, source: bool) -> None:
    asm = sf.StreamAssembler()
    if after_error:
        with pytest.raises(ConnectionError):
            asm.feed_many(raising([ConnectionError("first")]))
        assert asm.source_failed
    with pytest.raises(Exception) as info:
        asm.feed_many(raising(items))
    assert isinstance(info.value, sf.LlmError) is not source
    assert asm.source_failed is source
    assert asm.chunk_count == len(items) - (1 if source else 0)
    if not source:  # the same chunks as a list (read by index, its own path): a refusal is no source's failure
        again = sf.StreamAssembler()
        if after_error:
            with pytest.raises(ConnectionError):
                again.feed_many(raising([ConnectionError("first")]))
        with pytest.raises(sf.LlmError):
            again.feed_many(list(items))
        assert again.source_failed is False

"""Checking a corpus: :func:`check_file` over many files, each file's report handed back in input order, by one of
three executors behind one interface (:func:`reports`).

- **In this process** (``-j 1``, and the automatic choice when there is little to do).
- **Local worker processes** (``-j N``; ``-j 0``, the default, decides by an estimate of the work, see below).
  Each task is a *batch* of files (at most :data:`BATCH_FILES` files and :data:`BATCH_BYTES` bytes; a bigger file
  is a batch of its own), so that a task's fixed cost (pickling, a round trip through the pool's queues) is paid
  once per batch, not once per file.
- **A Dask cluster** (``--scheduler tcp://HOST:8786``, or ``local`` for a ``LocalCluster`` started here and
  closed at the end): batches of at most :data:`CLUSTER_BATCH_FILES` files and :data:`CLUSTER_BATCH_BYTES` bytes
  (a Dask client spends about 3 ms on a task), sent with ``Client.submit`` and collected with ``as_completed``.
  ``Client.map`` over the whole corpus would hold a future for every file; the window below holds a few.

Whatever the executor, the main process holds a bounded number of batches: at most ``window`` (a few per worker)
are in flight or done and waiting for an earlier one, and each report is dropped once it is handed back. Memory in
the main process does not grow with the number of files; the walk that lists them is the caller's. Nor does a
process grow with a file's streams: local workers send them back in bounded pieces (module ``_spool``).

A check that raises (it should not: :func:`check_file` reports the errors of reading) is that file's error, and so
is a file whose worker died: a batch that fails is checked again one file per task, and a file whose own task
fails is reported as that file's error (``the check failed on a worker: ...``). The run goes on.

**When workers pay off (-j 0):** when the files seen so far (looked at as they come, never the whole list) are
estimated (:data:`FILE_COST` a file, :data:`BYTE_COST` a byte) to take :data:`PARALLEL_MIN_SECONDS` or more and
make two batches or more, and two cores or more are free of other work; one worker a free core (see the corpora guide).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import itertools
import os
import pickle
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar

from ._check import FileCheck, FileReport, check_file, check_source
from ._config import Policy
from ._extras import missing
from ._sources import STDIN, is_url
from ._spool import Packed, packed_batch, shipped_batch, unpack

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor


__all__ = [
    "BATCH_BYTES",
    "BATCH_FILES",
    "CONNECT_TIMEOUT",
    "STDIN",
    "SchedulerError",
    "check_batch",
    "reports",
    "stdin_bytes",
]

#: A batch (one task of a worker) holds at most this many files ...
BATCH_FILES: Final = 64
#: ... and at most this many bytes; a file bigger than this is a batch of its own.
BATCH_BYTES: Final = 4 * 1024 * 1024
#: The same on a Dask cluster, whose client spends about 3 ms on a task (measured: a LocalCluster of two workers).
CLUSTER_BATCH_FILES: Final = 256
CLUSTER_BATCH_BYTES: Final = 16 * 1024 * 1024
#: What checking a file costs in one process, besides its bytes (measured: 20,000 recordings of 640 bytes, 78-100 us
#: a file with the machine compiled, about 115 us without).
FILE_COST: Final = 80e-6
#: What checking a byte costs in one process (measured: 48 MB JSON-lines files, 11-12 ns a byte compiled, 16 without;
#: 2,420 session logs, about 19).
BYTE_COST: Final = 15e-9
#: A name of a remote store (``s3://...``): its bytes are not looked at here; a round trip to the store counts.
REMOTE_FILE_COST: Final = 20e-3
#: Below this much estimated work, files are checked in this process (``-j 0``): the workers' start (about 20 ms
#: for two) and the first batches' wait are then a few per cent of the run at most.
PARALLEL_MIN_SECONDS: Final = 0.5
#: Batches in flight or waiting to be handed back in order, per worker.
WINDOW_PER_WORKER: Final = 3
#: Seconds to wait for a Dask scheduler to answer before it is an error (exit 2).
CONNECT_TIMEOUT: Final = 5.0


class Item(Protocol):
    """An input of the command: a name to check, or why it cannot be (``error``, reported as it is)."""

    @property
    def path(self) -> str:
        """The file's name: a path, a URL, or :data:`STDIN`."""
        ...

    @property
    def error(self) -> str | None:
        """Why the input is not checked (a folder with no recordings, ...), or ``None``."""
        ...


class SchedulerError(Exception):
    """``--scheduler`` cannot be used: Dask is not installed, the address is not one, or nothing answers there."""


def failed(name: str, why: str) -> FileReport:
    """The report of a file whose check did not end with a report: ``why``, as its error."""
    return FileReport(name, None, [], why)


def _relative(name: str) -> bool:
    return not is_url(name) and not os.path.isabs(name)


def check_batch(
    names: Sequence[str], fmt: str = "auto", policy: Policy | str = Policy.STRICT, root: str | None = None
) -> list[FileReport]:
    """Each name's :func:`check_file` report, in order: what one task of a worker does.

    With ``root`` (the caller's working folder, for a cluster whose workers work elsewhere), a relative local path
    is read from there and reported as it was given. A check that raises is that file's error.
    """
    out: list[FileReport] = []
    for name in names:
        try:
            if root is not None and _relative(name):
                out.append(check_source(os.path.join(root, name), fmt, policy, name=name))
            else:
                out.append(check_file(name, fmt, policy))
        except Exception as exc:  # a bug, or memory: this file's error, not the end of the run
            out.append(failed(name, f"the check failed: {type(exc).__name__}: {exc}"))
    return out


# -- batches ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Batch:
    names: list[str]
    size: int = 0
    #: The estimated seconds to check it in this process.
    cost: float = 0.0


def _size(name: str) -> int | None:
    """The bytes of a local file, 0 if it cannot be looked at (reading it says why), ``None`` for a remote name."""
    if is_url(name) and not name.startswith("file://"):
        return None
    try:
        return os.stat(name.removeprefix("file://")).st_size
    except (OSError, ValueError):
        return 0


def batches(names: Iterable[str], max_files: int | None = None, max_bytes: int | None = None) -> Iterator[_Batch]:
    """``names`` in order, cut in batches of at most ``max_files`` files and ``max_bytes`` bytes (by default
    :data:`BATCH_FILES` and :data:`BATCH_BYTES`; one file when it alone is bigger), each with its estimated cost."""
    max_files = max_files or BATCH_FILES
    max_bytes = max_bytes or BATCH_BYTES
    batch = _Batch([])
    for name in names:
        size = _size(name)
        nbytes = size or 0
        if batch.names and (len(batch.names) >= max_files or batch.size + nbytes > max_bytes):
            yield batch
            batch = _Batch([])
        batch.names.append(name)
        batch.size += nbytes
        batch.cost += FILE_COST + nbytes * BYTE_COST if size is not None else REMOTE_FILE_COST
    if batch.names:
        yield batch


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _free_cores() -> float:
    """The cores not taken by other work: :func:`_cores` less the run queue's length over the last minute
    (``os.getloadavg``); all of them where that is not known."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return max(0.0, _cores() - load)


def _look_ahead(planned: Iterator[_Batch]) -> tuple[list[_Batch], bool]:
    """The first batches, until they are worth workers (``True``) or the input ends (``False``).

    At most :data:`PARALLEL_MIN_SECONDS` of estimated work is held, and each file costs at least :data:`FILE_COST`:
    a bounded number of names, whatever the input.
    """
    ahead: list[_Batch] = []
    cost = 0.0
    for batch in planned:
        ahead.append(batch)
        cost += batch.cost
        if cost >= PARALLEL_MIN_SECONDS and len(ahead) >= 2:
            return ahead, True
    return ahead, False


# -- executors ----------------------------------------------------------------------------------------

F = TypeVar("F")
Task = Callable[[list[str]], list[Packed]]
Shipped = Callable[[list[str]], bytes]


class _Executor(Protocol, Generic[F]):
    """Where batches run: submit one, take the next that is done (in any order), its reports, cancel the rest."""

    def submit(self, batch: list[str]) -> F: ...

    def next_done(self) -> F: ...

    def outcome(self, future: F, batch: list[str]) -> list[FileReport | FileCheck]: ...

    def cancel(self, futures: Collection[F]) -> None: ...


def _ordered(planned: Iterator[_Batch], executor: _Executor[F], window: int) -> Iterator[FileReport | FileCheck]:
    """The reports of the batches run by ``executor``, in order, with at most ``window`` batches held at a time
    (in flight, or done and waiting for an earlier one: a bounded reorder buffer)."""
    pending: dict[F, tuple[int, list[str]]] = {}
    ready: dict[int, list[FileReport | FileCheck]] = {}
    sent = handed = 0
    try:
        while True:
            while len(pending) + len(ready) < window:
                batch = next(planned, None)
                if batch is None:
                    break
                pending[executor.submit(batch.names)] = (sent, batch.names)
                sent += 1
            if handed in ready:
                yield from ready.pop(handed)
                handed += 1
            elif pending:
                future = executor.next_done()
                number, names = pending.pop(future)
                ready[number] = executor.outcome(future, names)
            else:
                return
    finally:
        if pending:
            executor.cancel(pending)


def _ignore_sigint() -> None:
    """A worker process leaves Ctrl-C to the command (a terminal sends it to the whole group): no traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def dask_setup(worker: object) -> None:
    """Dask's preload hook (this module is the preload of ``--scheduler local``'s workers): as :func:`_ignore_sigint`.
    The command closes the cluster when it is interrupted."""
    _ignore_sigint()


class _Processes:
    """Local worker processes (``concurrent.futures``). A pool broken by a worker that died is replaced; a failed
    batch's files are checked again on a one-worker pool of their own (a worker that dies there died on that file)."""

    def __init__(self, workers: int, task: Task) -> None:
        self._workers, self._task = workers, task
        self._pool = self._start(workers)
        self._solo: ProcessPoolExecutor | None = None
        self._running: set[Future[list[Packed]]] = set()
        self._pools: dict[Future[list[Packed]], ProcessPoolExecutor] = {}

    @staticmethod
    def _start(workers: int) -> ProcessPoolExecutor:
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint)

    def submit(self, batch: list[str]) -> Future[list[Packed]]:
        from concurrent.futures.process import BrokenProcessPool

        try:
            future = self._pool.submit(self._task, batch)
        except BrokenProcessPool as exc:  # a worker died since the last batch was sent: its batch will say so
            self._renew_if_broken(self._pool, exc)
            future = self._pool.submit(self._task, batch)
        self._running.add(future)
        self._pools[future] = self._pool
        return future

    def next_done(self) -> Future[list[Packed]]:
        from concurrent.futures import FIRST_COMPLETED, wait

        done, _ = wait(self._running, return_when=FIRST_COMPLETED)
        future = next(iter(done))
        self._running.discard(future)
        return future

    def outcome(self, future: Future[list[Packed]], batch: list[str]) -> list[FileReport | FileCheck]:
        pool = self._pools.pop(future)
        try:
            return unpack(future.result())
        except Exception as exc:  # a worker died (the pool is broken), or the batch could not travel
            self._renew_if_broken(pool, exc)
            return [self._alone(name) for name in batch]

    def _alone(self, name: str) -> FileReport | FileCheck:
        """``name`` checked as the only task of a worker: its report, or why it gave none (its worker died)."""
        from concurrent.futures.process import BrokenProcessPool

        solo = self._solo = self._solo or self._start(1)
        try:
            return unpack(solo.submit(self._task, [name]).result())[0]
        except Exception as exc:
            if isinstance(exc, BrokenProcessPool):  # its worker died on this file: the next file gets a new one
                solo.shutdown(wait=False, cancel_futures=True)
                self._solo = None
            return failed(name, f"the check failed on a worker: {_why(exc)}")

    def _renew_if_broken(self, pool: ProcessPoolExecutor, exc: Exception) -> None:
        """A new pool in place of ``pool``, if a worker of it died and it is still the one in use."""
        from concurrent.futures.process import BrokenProcessPool

        if isinstance(exc, BrokenProcessPool) and pool is self._pool:
            pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._start(self._workers)

    def cancel(self, futures: Collection[Future[list[Packed]]]) -> None:
        for future in futures:
            future.cancel()
        for pool in {self._pool, *self._pools.values(), *([self._solo] if self._solo else [])}:
            _terminate(pool)

    def close(self) -> None:
        """Wait for the workers to leave."""
        if self._solo is not None:
            self._solo.shutdown(wait=True, cancel_futures=True)
        self._pool.shutdown(wait=True, cancel_futures=True)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool``'s workers now: an interrupted run does not wait for the batches they are checking
    (``terminate_workers`` from Python 3.14; before, what it does)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _distributed() -> Any:
    """``distributed`` (Dask's), as ``Any``: parts of its API are not typed."""
    return importlib.import_module("distributed")


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _Cluster:
    """A Dask cluster: each batch a task (``Client.submit``), collected as they end (``as_completed``)."""

    def __init__(self, client: Any, task: Shipped) -> None:
        self._client, self._task = client, task
        self._done: Any = _distributed().as_completed(loop=client.loop)

    def submit(self, batch: list[str]) -> Any:
        future = self._client.submit(self._task, batch, pure=False)
        self._done.add(future)
        return future

    def next_done(self) -> Any:
        return next(self._done)

    def outcome(self, future: Any, batch: list[str]) -> list[FileReport | FileCheck]:
        try:
            return unpack(pickle.loads(future.result()))
        except Exception:  # a worker died, or could not run the task: each file on its own says which
            return [self._alone(name) for name in batch]

    def _alone(self, name: str) -> FileReport | FileCheck:
        """``name`` checked as a task of its own, one at a time (a worker that dies takes no other file with it)."""
        try:
            return unpack(pickle.loads(self._client.submit(self._task, [name], pure=False).result()))[0]
        except Exception as exc:
            return failed(name, f"the check failed on a worker: {_why(exc)}")

    def cancel(self, futures: Collection[Any]) -> None:
        self._client.cancel(list(futures))


# -- the runs -----------------------------------------------------------------------------------------


def _in_process(files: Iterable[str], fmt: str, policy: Policy, lazy: bool) -> Iterator[FileReport | FileCheck]:
    for name in files:  # one at a time: each report handed back as soon as it is made
        if lazy:  # checked as the caller reads its streams
            yield FileCheck(name, fmt, policy, name=name)
        else:
            yield from check_batch([name], fmt, policy)


def _local(
    files: Iterator[str], fmt: str, policy: Policy, jobs: int, lazy: bool
) -> Generator[FileReport | FileCheck, None, None]:
    """The files' reports from this process or from local workers (``jobs``: 0 decides, 1 none, N that many)."""
    # -j 0: a worker for each core that other work leaves free, if two or more are (on a machine whose cores are
    # busy, workers only add the cost of sending files and reports between processes).
    workers = jobs or min(_cores(), round(_free_cores()))
    if workers <= 1:
        yield from _in_process(files, fmt, policy, lazy)
        return
    planned: Iterator[_Batch] = batches(files)
    if jobs == 0:
        ahead, worth = _look_ahead(planned)
        planned = itertools.chain(ahead, planned)
        if not worth:
            yield from _in_process((name for batch in planned for name in batch.names), fmt, policy, lazy)
            return
    # The streams past a piece travel through spool files in a folder of the run's own (module ``_spool``).
    with tempfile.TemporaryDirectory(prefix="streamfsm-") as spool:
        executor = _Processes(workers, functools.partial(packed_batch, fmt=fmt, policy=policy, spool=spool))
        try:
            yield from _ordered(planned, executor, WINDOW_PER_WORKER * workers)
        finally:
            executor.close()


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[list[int]]:
    """Ctrl-C while the block runs is noted in the list given, to be answered after it: a Dask client or cluster
    interrupted while it starts cannot be closed, and says so at exit. In the main thread, in place of Python's own
    handler only (as ``_startup.guard``)."""
    import signal
    import threading

    noted: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield noted
        return
    signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def _client(scheduler: str, jobs: int) -> Iterator[Any]:
    """A Dask client of the scheduler at ``scheduler``, or of a ``LocalCluster`` started here for ``local``.

    A Ctrl-C while they start (a LocalCluster takes a few seconds; a client waits up to :data:`CONNECT_TIMEOUT`) is
    answered once they have started, and they are closed.
    """
    import logging

    try:
        dask = _distributed()
    except ImportError as exc:
        raise SchedulerError(missing("--scheduler", "dask")) from exc
    Client, LocalCluster = dask.Client, dask.LocalCluster
    with contextlib.ExitStack() as stack:
        with _sigint_deferred() as interrupted:
            if scheduler == "local":
                try:
                    cluster = stack.enter_context(
                        LocalCluster(
                            n_workers=jobs or _cores(),
                            threads_per_worker=1,
                            processes=True,
                            host="127.0.0.1",
                            dashboard_address="127.0.0.1:0",  # its HTTP server too: this machine only, a free port
                            silence_logs=logging.ERROR,
                            preload=[__name__],  # dask_setup: the workers leave Ctrl-C to the command
                        )
                    )
                except Exception:
                    if interrupted:  # a terminal's Ctrl-C reached the workers as they started
                        raise KeyboardInterrupt from None
                    raise
                client = stack.enter_context(Client(cluster, set_as_default=False))
            else:
                try:
                    # An address that is not one fails before a client is made: a client that failed to start says
                    # so again when it is collected, after a timeout of its own.
                    dask.comm.get_address_host_port(scheduler)
                    client = stack.enter_context(Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False))
                except (OSError, ValueError) as exc:
                    raise SchedulerError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
        if interrupted:
            raise KeyboardInterrupt
        yield client


def _on_cluster(
    files: Iterator[str], task: Shipped, scheduler: str, jobs: int
) -> Generator[FileReport | FileCheck, None, None]:
    with _client(scheduler, jobs) as client:
        threads = sum(client.nthreads().values()) or 1
        planned = batches(files, CLUSTER_BATCH_FILES, CLUSTER_BATCH_BYTES)
        yield from _ordered(planned, _Cluster(client, task), WINDOW_PER_WORKER * threads)


def stdin_bytes() -> IO[bytes]:
    """Standard input as bytes, read as it comes (looked up at each call: tests swap ``sys.stdin``)."""
    return sys.stdin.buffer


def reports(
    items: Iterable[Item],
    fmt: str = "auto",
    policy: Policy | str = Policy.STRICT,
    *,
    jobs: int = 0,
    scheduler: str | None = None,
    lazy: bool = False,
) -> Generator[FileReport | FileCheck, None, None]:
    """Each item's report, in input order: a file checked where ``jobs`` and ``scheduler`` say, standard input
    (:data:`STDIN`) in this process, an item with an ``error`` reported as that error.

    ``lazy``: what is checked in this process comes as a :class:`FileCheck`, checked as its streams are read
    (the command's memory then holds one stream's report, not a file's), and so does a file whose streams a worker
    spooled (module ``_spool``: read each before asking for the next); otherwise every report is a
    :class:`FileReport`.

    ``jobs``: 1 checks here, N in N local worker processes, 0 decides by the work (see the module's text).
    ``scheduler``: a Dask scheduler's address, or ``local`` for a ``LocalCluster`` of ``jobs`` (or one per core)
    process workers; :class:`SchedulerError` when it cannot be used. Closing the generator (Ctrl-C, a reader gone)
    cancels what is in flight.
    """
    given = iter(items)
    #: The items taken from ``given`` whose report has not been handed back: those of the files in flight (a
    #: bounded number), and the items between them.
    queued: deque[Item] = deque()

    def files() -> Iterator[str]:
        for item in given:
            queued.append(item)
            if item.error is None and item.path != STDIN:
                yield item.path

    policy = Policy(policy)
    checked: Generator[FileReport | FileCheck, None, None]
    if scheduler is not None:
        task = functools.partial(shipped_batch, fmt=fmt, policy=policy, root=os.getcwd())
        checked = _on_cluster(files(), task, scheduler, jobs)
    else:
        checked = _local(files(), fmt, policy, jobs, lazy)
    with contextlib.closing(checked):
        made: FileReport | FileCheck | None = None  # a file's report taken before its turn (at most one)
        while True:
            if not queued:
                made = next(checked, None)  # takes items from ``given``
                if not queued:
                    return
            item = queued.popleft()
            if item.error is not None:
                yield failed(item.path, item.error)
            elif item.path == STDIN:
                stdin = FileCheck(stdin_bytes(), fmt, policy, name=STDIN)
                yield stdin if lazy else stdin.report()
            else:
                report = made if made is not None else next(checked)
                made = None
                yield report if lazy or isinstance(report, FileReport) else report.report()

"""Checking a corpus (``streamfsm/_corpus.py``): the same reports, in input order, from this process, from local worker
processes in batches, and from a Dask cluster (a ``LocalCluster`` with process workers, on 127.0.0.1, started once for
the module; the tests marked ``cluster`` run unless ``--no-cluster`` is given)."""

from __future__ import annotations

import functools
import io
import os
import pickle
import re
import socket
import sys
import time
import tracemalloc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm import _cli, _corpus
from streamfsm._check import check_source
from streamfsm._config import Policy
from streamfsm._corpus import batches, reports
from streamfsm._spool import Packed, packed_batch, shipped_batch, unpack

from ..cli_support import command, jsonl, run
from ..data import FIXTURES, SEED_CHUNKS, SESSIONS
from .test_check_memory import session_log


@dataclass(frozen=True)
class Named:
    """An input as the command gives them: a name, or why it is not read."""

    path: str
    error: str | None = None


def corpus() -> list[str]:
    """Every recording in tests/fixtures, in the order the command walks them."""
    return sorted(str(p) for p in FIXTURES.rglob("*") if p.suffix in (".jsonl", ".ndjson", ".sse"))


def one_by_one(names: Sequence[str], policy: Policy = Policy.HARNESS) -> list[sf.FileReport]:
    return [sf.check_file(name, "auto", policy) for name in names]


@pytest.fixture
def small_files(tmp_path: Path) -> list[str]:
    """120 small recordings, valid and not, with a file of another format among them."""
    bad = jsonl([*SEED_CHUNKS[:4], {"type": "text-delta", "index": 0, "text": "!"}, *SEED_CHUNKS[4:]])
    names = []
    for n in range(120):
        path = tmp_path / f"{n:03}.jsonl"
        path.write_bytes(bad if n % 7 == 3 else jsonl(SEED_CHUNKS))
        names.append(str(path))
    return names


# -- the public function the workers run --------------------------------------------------------------------


def test_check_file_pickles_by_reference_and_so_does_its_report() -> None:
    blob = pickle.dumps(sf.check_file)
    assert len(blob) < 100 and b"streamfsm._check" in blob  # a reference, not the code
    assert pickle.loads(blob) is sf.check_file
    for name in corpus()[::9]:
        report = sf.check_file(name, policy="harness")
        assert pickle.loads(pickle.dumps(report)) == report
        assert orjson.loads(orjson.dumps(report.to_json())) == {
            "path": name,
            "format": report.format,
            "error": report.error,
            "streams": [s.to_json() for s in report.streams],
        }
    kept = sf.check_file(str(next(SESSIONS.glob("*.jsonl"))), policy="harness", results=True)
    assert pickle.loads(pickle.dumps(kept)).results == kept.results


def test_reports_travel_packed_and_come_back_equal() -> None:
    names = corpus()
    expected = one_by_one(names)
    assert unpack(packed_batch(names, "auto", Policy.HARNESS)) == expected
    assert any(s.notes for r in expected for s in r.streams) and any(not s.ok for r in expected for s in r.streams)


def test_the_reports_past_a_piece_travel_through_a_spool_and_come_back_equal(tmp_path: Path) -> None:
    """A worker's answer holds at most PIECE stream reports; the streams of a file that passes them go to a spool file,
    read back a piece at a time and deleted once read: the reports are those of a check in one process."""
    spool = tmp_path / "spool"
    spool.mkdir()
    names = [str(session_log(tmp_path / f"{n}.jsonl", count)) for n, count in enumerate([300, 400, 10, 1500])]
    packed = packed_batch(names, "auto", Policy.STRICT, spool=str(spool))
    assert [len(streams) for _, _, _, streams, _ in packed] == [300, 0, 10, 0]  # the answer: 310 streams at most
    assert [spooled is not None for *_, spooled in packed] == [False, True, False, True]
    assert len(list(spool.iterdir())) == 2
    got = [r if isinstance(r, sf.FileReport) else r.report() for r in unpack(packed)]
    assert got == one_by_one(names, Policy.STRICT)
    assert not list(spool.iterdir())  # each spool file deleted once it was read
    _, out, _ = run_check(names, "-j", "1")
    assert run_check(names, "-j", "2")[1] == out


def run_check(names: list[str], *argv: str) -> tuple[int, str, str]:
    """``streamfsm check --json`` over ``names``, its per-stream lines only (the summary's time differs)."""
    done = command("check", "--json", *argv, *names)
    lines = [line for line in done.stdout.splitlines() if '"kind":"summary"' not in line.replace(" ", "")]
    return done.returncode, "\n".join(lines), done.stderr


# -- batches and the decision -------------------------------------------------------------------------------


def test_batches_by_count_and_by_bytes(tmp_path: Path) -> None:
    sizes = [10, 10, 10, 10, 10, 1000, 10, 10]
    names = []
    for n, size in enumerate(sizes):
        (tmp_path / f"{n}.jsonl").write_bytes(b"x" * size)
        names.append(str(tmp_path / f"{n}.jsonl"))
    cut = [[Path(name).stem for name in b.names] for b in batches(names, max_files=3, max_bytes=100)]
    assert cut == [["0", "1", "2"], ["3", "4"], ["5"], ["6", "7"]]  # 3 files; 100 bytes; a bigger file alone
    planned = list(batches([*names, "s3://bucket/a.jsonl", str(tmp_path / "missing.jsonl")], max_files=100))
    assert [len(b.names) for b in planned] == [10]
    assert planned[0].size == sum(sizes)  # the remote name is not looked at; a missing file counts 0
    assert planned[0].cost == pytest.approx(
        9 * _corpus.FILE_COST + sum(sizes) * _corpus.BYTE_COST + _corpus.REMOTE_FILE_COST
    )


def test_workers_only_when_the_work_is_worth_them() -> None:
    def planned(costs: list[float]) -> Iterator[_corpus._Batch]:
        for n, cost in enumerate(costs):
            yield _corpus._Batch([str(n)], cost=cost)

    limit = _corpus.PARALLEL_MIN_SECONDS
    ahead, worth = _corpus._look_ahead(planned([limit / 10] * 5))
    assert (len(ahead), worth) == (5, False)  # half the work it takes: here
    ahead, worth = _corpus._look_ahead(planned([limit * 0.3] * 100))
    assert (len(ahead), worth) == (4, True)  # enough: what is held is only that much
    ahead, worth = _corpus._look_ahead(planned([limit * 10]))
    assert (len(ahead), worth) == (1, False)  # one batch (one big file) cannot be shared


class CountedProcesses(_corpus._Processes):
    """The local pool, counting the pools started (a spy: the pool is the real one)."""

    started = 0

    def __init__(self, *args: Any) -> None:
        type(self).started += 1
        super().__init__(*args)


def test_the_automatic_choice_keeps_little_work_here(monkeypatch: pytest.MonkeyPatch, small_files: list[str]) -> None:
    monkeypatch.setattr(_corpus, "_Processes", CountedProcesses)
    monkeypatch.setattr(_corpus, "_cores", lambda: 4)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))  # three cores free of other work
    expected = one_by_one(small_files)
    CountedProcesses.started = 0
    assert list(reports(map(Named, small_files), policy="harness")) == expected
    assert CountedProcesses.started == 0  # 120 small files: about 20 ms of work
    monkeypatch.setattr(_corpus, "PARALLEL_MIN_SECONDS", 0.001)
    monkeypatch.setattr(_corpus, "BATCH_FILES", 8)
    assert list(reports(map(Named, small_files), policy="harness")) == expected
    assert CountedProcesses.started == 1  # enough work now
    monkeypatch.setattr(os, "getloadavg", lambda: (3.6, 3.0, 3.0))  # other work takes all but 0.4 of a core
    assert list(reports(map(Named, small_files), policy="harness")) == expected
    assert CountedProcesses.started == 1  # no workers where they would only add their costs
    assert list(reports(map(Named, small_files), policy="harness", jobs=2)) == expected
    assert CountedProcesses.started == 2  # unless asked for


# -- the local executors agree --------------------------------------------------------------------------------


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_local_workers_give_the_reports_of_one_process_in_order(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, jobs: int
) -> None:
    monkeypatch.setattr(_corpus, "BATCH_FILES", 5)  # many batches, ending in any order
    names = corpus()
    items = [Named(n) for n in names]
    items.insert(3, Named(str(tmp_path / "missing.jsonl")))
    items.insert(40, Named(str(tmp_path / "empty-folder"), "no recordings here"))
    expected = [
        sf.FileReport(i.path, None, [], i.error) if i.error else sf.check_file(i.path, "auto", "harness") for i in items
    ]
    assert expected[3].error is not None and expected[3].error.startswith("cannot read")
    got = list(reports(iter(items), policy=Policy.HARNESS, jobs=jobs))
    assert got == expected


def test_standard_input_keeps_its_place(monkeypatch: pytest.MonkeyPatch, small_files: list[str]) -> None:
    monkeypatch.setattr(_corpus, "BATCH_FILES", 4)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(jsonl(SEED_CHUNKS))))
    items = [Named(n) for n in small_files[:10]]
    items.insert(5, Named("-"))
    got = list(reports(items, jobs=2))
    assert [r.path for r in got] == [i.path for i in items]
    assert got[5].streams[0].ok and got[5] == check_source(jsonl(SEED_CHUNKS), name="-")


@pytest.mark.slow
def test_the_main_process_holds_no_more_for_more_files(tmp_path: Path) -> None:
    """Each report is dropped once handed back, and at most a window of batches is held: the peak of what the main
    process allocates while it checks 3,000 files is that of 750 (the bound: 256 KiB more, where a report of one
    small file kept per file would be about 3 MB more)."""
    names = [str(tmp_path / f"{n:04}.jsonl") for n in range(3000)]
    for name in names:
        Path(name).write_bytes(jsonl(SEED_CHUNKS))

    def peak(count: int, jobs: int) -> int:
        # The walk is not counted: the names are made before (pathlib interns each part it parses, and the
        # interned strings' table grows by a resize of ~2 MB somewhere in 3,000 new names).
        items = (Named(name) for name in names[:count])
        tracemalloc.start()
        try:
            for report in reports(items, jobs=jobs):
                assert report.streams[0].ok
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    for jobs in (1, 2):
        peak(750, jobs)  # first use (lazy imports, the pool's own set-up) is not what is compared
        # With workers, the reports of up to a window of batches wait in the pool's futures and the reorder buffer,
        # as many as the main process lags the workers: up to about 1.5 KB a file of the window, whatever the count
        # of files (a report kept for every file would be 3 MB more).
        held = 0 if jobs == 1 else _corpus.WINDOW_PER_WORKER * jobs * _corpus.BATCH_FILES * 1536
        assert peak(3000, jobs) < peak(750, jobs) + 256 * 1024 + held, jobs


def die_on_poison(names: list[str], fmt: str, policy: Policy, ship: bool = False) -> list[Packed] | bytes:
    """A task whose worker dies on a file named ``poison``: what an out-of-memory kill looks like to the pool.
    ``ship``: the reports as a cluster's task returns them."""
    if any("poison" in name for name in names):
        os._exit(3)
    return (shipped_batch if ship else packed_batch)(names, fmt, policy)


def raise_on_poison(names: list[str], fmt: str, policy: Policy, ship: bool = False) -> list[Packed] | bytes:
    """A task that raises on a file named ``poison`` (as a bug in the checker would, past ``check_batch``)."""
    if any("poison" in name for name in names):
        raise RuntimeError("poisoned")
    return (shipped_batch if ship else packed_batch)(names, fmt, policy)


def poisoned(small_files: list[str]) -> list[str]:
    poison = str(Path(small_files[0]).with_name("poison.jsonl"))
    Path(poison).write_bytes(jsonl(SEED_CHUNKS))
    names = small_files[:30]
    names.insert(13, poison)
    return names


@pytest.mark.parametrize("task", [die_on_poison, raise_on_poison])
def test_a_file_whose_worker_fails_is_that_files_error(small_files: list[str], task: Any) -> None:
    names = poisoned(small_files)
    executor = _corpus._Processes(2, functools.partial(task, fmt="auto", policy=Policy.STRICT))
    try:
        got = list(_corpus._ordered(batches(names, max_files=4), executor, window=6))
    finally:
        executor.close()
    expected = one_by_one(names, Policy.STRICT)
    why = "BrokenProcessPool: " if task is die_on_poison else "RuntimeError: poisoned"
    assert got[13].error is not None and got[13].error.startswith(f"the check failed on a worker: {why}")
    assert got[:13] + got[14:] == expected[:13] + expected[14:]  # the others, and the run, go on


def test_a_batch_sent_after_a_worker_died_goes_to_a_new_pool(small_files: list[str]) -> None:
    """A worker may die between two batches sent: the next one goes to a new pool, the dead one's batch is
    checked file by file."""
    names = poisoned(small_files)[10:16]  # the poison is the fourth
    executor = _corpus._Processes(2, functools.partial(die_on_poison, fmt="auto", policy=Policy.STRICT))
    try:
        first = executor.submit(names[:4])
        assert first.exception(timeout=60) is not None  # the pool is broken
        second = executor.submit(names[4:])
        assert executor.next_done() in (first, second)
        got = executor.outcome(first, names[:4]) + executor.outcome(second, names[4:])
    finally:
        executor.close()
    expected = one_by_one(names, Policy.STRICT)
    assert got[3].error is not None and got[3].error.startswith("the check failed on a worker: BrokenProcessPool")
    assert got[:3] + got[4:] == expected[:3] + expected[4:]


def test_two_batches_whose_workers_die_at_once_fail_only_their_own_files(small_files: list[str]) -> None:
    """Each file of a failed batch is checked again on a worker of its own: another batch's worker dying at the
    same time is not that file's error."""
    names = poisoned(small_files)
    second = str(Path(small_files[0]).with_name("poison-2.jsonl"))
    Path(second).write_bytes(jsonl(SEED_CHUNKS))
    names.insert(22, second)
    executor = _corpus._Processes(2, functools.partial(die_on_poison, fmt="auto", policy=Policy.STRICT))
    try:
        got = list(_corpus._ordered(batches(names, max_files=4), executor, window=8))
    finally:
        executor.close()
    expected = one_by_one(names, Policy.STRICT)
    failed = [n for n, report in enumerate(got) if report.error is not None]
    assert failed == [13, 22]
    assert [r for n, r in enumerate(got) if n not in failed] == [r for n, r in enumerate(expected) if n not in failed]


def test_a_check_that_raises_is_that_files_error(small_files: list[str]) -> None:
    got = _corpus.check_batch([small_files[0], "bad\0name.jsonl", small_files[1]])
    assert got[0] == sf.check_file(small_files[0]) and got[2] == sf.check_file(small_files[1])
    assert got[1].path == "bad\0name.jsonl" and got[1].error is not None and not got[1].streams


# -- a Dask cluster -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A LocalCluster of two process workers on 127.0.0.1 (a dying worker's task fails at once: no retries)."""
    import logging

    import dask
    from distributed import LocalCluster

    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        ) as started,
    ):
        yield started


@pytest.fixture
def client(cluster: Any) -> Iterator[Any]:
    from distributed import Client

    with Client(cluster, set_as_default=False) as made:
        yield made


def without_times(out: str) -> str:
    return re.sub(r"in [0-9]+\.[0-9]+ s", "in T s", out)


@pytest.mark.cluster
@pytest.mark.parametrize("options", [["--json"], ["-v", "--policy", "harness"], ["--policy", "harness", "--json"]])
def test_a_cluster_gives_what_a_local_run_gives(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cluster: Any, options: list[str]
) -> None:
    monkeypatch.setattr(_corpus, "CLUSTER_BATCH_FILES", 7)
    paths = [str(FIXTURES), str(FIXTURES / "missing.jsonl")]
    local = run(capsys, "check", *options, "-j", "1", *paths)
    remote = run(capsys, "check", *options, "--scheduler", cluster.scheduler_address, *paths)
    assert remote[0] == local[0] == _cli.EXIT_USAGE  # a file that could not be read: reported, and not fatal
    assert without_times(remote[1]) == without_times(local[1]) and remote[2] == local[2]
    assert "missing.jsonl: cannot read" in remote[2] and len(remote[1].splitlines()) > 300


@pytest.mark.cluster
def test_relative_names_are_read_from_the_callers_folder(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cluster: Any, tmp_path: Path
) -> None:
    """The workers started elsewhere: a relative path is the command's, as in a local run."""
    (tmp_path / "here.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "check", "--json", "--scheduler", cluster.scheduler_address, "here.jsonl")
    assert (status, err) == (_cli.EXIT_OK, "")
    assert [orjson.loads(line).get("path") for line in out.splitlines()] == ["here.jsonl", None]  # then the summary


@pytest.mark.cluster
@pytest.mark.parametrize("task", [raise_on_poison, die_on_poison])
def test_a_file_whose_task_fails_on_the_cluster_is_that_files_error(
    client: Any, small_files: list[str], task: Any
) -> None:
    names = poisoned(small_files)
    executor = _corpus._Cluster(client, functools.partial(task, fmt="auto", policy=Policy.STRICT, ship=True))
    got = list(_corpus._ordered(batches(names, max_files=4), executor, window=4))
    expected = one_by_one(names, Policy.STRICT)
    why = "RuntimeError: poisoned" if task is raise_on_poison else "KilledWorker: "
    assert got[13].error is not None and got[13].error.startswith(f"the check failed on a worker: {why}")
    assert got[:13] + got[14:] == expected[:13] + expected[14:]
    client.wait_for_workers(2, timeout=60)  # the nanny restarts a worker that died


def cancelled_keys(client: Any) -> int:
    """How many keys the clients of the cluster's scheduler asked it to cancel, so far."""

    def count(dask_scheduler: Any) -> int:
        events = dask_scheduler.get_events()
        return sum(
            message.get("count", 0)
            for topic in events.values()
            for _, message in topic
            if isinstance(message, dict) and message.get("action") == "cancel"
        )

    return int(client.run_on_scheduler(count))


@pytest.mark.cluster
def test_ctrl_c_cancels_the_futures(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, client: Any, cluster: Any, tmp_path: Path
) -> None:
    for n in range(200):
        (tmp_path / f"{n:03}.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    monkeypatch.setattr(_corpus, "CLUSTER_BATCH_FILES", 1)  # six tasks in flight when the first report is printed

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_cli, "_print_file", interrupt)
    before = cancelled_keys(client)
    status, out, err = run(capsys, "check", "--scheduler", cluster.scheduler_address, str(tmp_path))
    assert (status, out, err) == (_cli.EXIT_INTERRUPTED, "", "streamfsm: interrupted\n")
    assert cancelled_keys(client) - before >= 1  # the command asked for what it had in flight to be cancelled
    deadline = time.monotonic() + 30
    while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0  # nothing left running


@pytest.mark.cluster
def test_scheduler_local_starts_a_cluster_and_gives_the_same_output(tmp_path: Path) -> None:
    paths = [str(SESSIONS), str(FIXTURES / "provider-streams")]
    local = command("check", "--json", "--policy", "harness", "-j", "1", *paths)
    on_cluster = command("check", "--json", "--policy", "harness", "--scheduler", "local", "-j", "2", *paths)
    assert (on_cluster.returncode, on_cluster.stderr) == (local.returncode, "")
    assert on_cluster.stdout == local.stdout and on_cluster.stdout.count("\n") > 200


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.cluster
def test_an_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(jsonl(SEED_CHUNKS))
    address = f"tcp://127.0.0.1:{free_port()}"
    done = command("check", "--scheduler", address, str(tmp_path))
    assert (done.returncode, done.stdout) == (_cli.EXIT_USAGE, "")
    assert done.stderr == (
        f"streamfsm: error: cannot reach the Dask scheduler at {address}: "
        f"Timed out trying to connect to {address} after {_corpus.CONNECT_TIMEOUT:g} s\n"
    )
    done = command("check", "--scheduler", "nowhere", str(tmp_path))
    assert (done.returncode, done.stdout) == (_cli.EXIT_USAGE, "")
    assert done.stderr == (
        "streamfsm: error: cannot reach the Dask scheduler at nowhere: missing port number in address 'nowhere'\n"
    )


def test_jobs_with_a_remote_scheduler_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _cli.main(["check", "-j", "2", "--scheduler", "tcp://127.0.0.1:8786", "x.jsonl"])
    assert exited.value.code == _cli.EXIT_USAGE
    assert "--jobs sets local workers" in capsys.readouterr().err

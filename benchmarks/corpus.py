"""The corpus section (issue 15): ``streamfsm check`` over whole corpora, as a user runs it.

``python -m benchmarks.corpus [--quick | --smoke] [--out DIR] [--tmp DIR]`` runs it alone (it prints its
tables and writes ``corpus.png``); ``python -m benchmarks`` runs it after the workloads and puts it in
``RESULTS.md`` (``--corpus quick|smoke|none`` there; ``--only corpus`` for this section alone).

Method
------
* **Corpora**, generated into a temporary folder from the recorded sessions in
  ``tests/fixtures/harness-sessions`` and deleted at the end (checked under ``Policy.HARNESS``, which the
  recordings are valid under):

  - ``logs``: 1,000 session logs, copies of the recorded sessions taken in turn, renamed
    (``0000--NAME.jsonl``...), invalid streams and sessions without a model turn included, as recorded;
  - ``small``: 20,000 small JSON-lines files, one recorded stream each (the 278 streams valid under HARNESS,
    packed rows expanded, taken in turn; median under 1 kB), in folders of 1,000 (at least 20 folders);
  - ``big``: one session log of about 1 GB: one session header, then the turns of every recorded session whose
    streams are all valid, in order, repeated until 1 GB (whole sessions only, so every stream is whole).

* **Throughput** is a whole process, what a user runs: ``python -m streamfsm check -q --no-progress --policy
  harness [-j N] PATH`` (standard output, the invalid streams and the summary, to a file). Wall time from
  start to exit, the interpreter's start included; CPU time and peak RSS from ``os.wait4`` (the process and
  the workers it waited for). ``-j 1``, ``-j 2`` and no ``-j`` (automatic), in rotated order, the median of
  ``repeats`` runs (the big file: ``-j 1``, once; one file is checked in one process whatever ``-j`` says).
  *Per core* is per CPU-second (user + system of the whole process tree): what one core
  checks, the figure that multiplies with more cores as far as the work spreads. Each run is checked: exit
  status and the summary's stream, file and invalid counts must be those of the corpus (the reference is
  ``check_file`` of each recorded session, once, in this process).
* **Local disk against** ``memory://`` (fsspec's in-memory filesystem, which lives in one process): in a
  child process, every file of the ``logs`` and ``small`` corpora is copied into ``memory://``, then
  ``check_file(name, "auto", "harness")`` is called on every file in a loop, local paths and ``memory://``
  URLs in alternate passes (a first pass of each to warm up and compare the reports, which must agree; then
  two timed passes each, the mean quoted). Needs ``streamfsm[cloud]`` (fsspec, and
  ``check_file`` reading URLs); without it the row says so.
* **Peak memory** of ``python -m streamfsm check -q -j 1`` on three files of 50 MiB, against the largest stream
  in each: one JSON-lines file that is one stream (one text block in 40-byte deltas, its ``block-end`` with
  the whole text, usage, finish), one session log of many streams (as ``big``, cut at 50 MiB), and one session
  log that is one stream whose deltas are one packed ``text-chunks`` row of one-character members. The
  constant is the peak RSS of the same command on a tiny file of the same kind (the typical turn as JSON
  lines; the smallest recorded session whose streams are all valid, as a session log: reading a session log
  loads code a JSON-lines file does not), the median of ``repeats`` runs; the 50 MiB files once (peak RSS
  hardly moves between runs). The figure is (peak − constant) ÷ the largest stream's bytes in the file (for a
  session log, the bytes of the lines that carry the stream's chunks). Peak RSS itself moves between runs of
  one command by tens of kB (the constant's runs show by how much: their *spread*); a file whose largest stream
  is smaller than that, and whose peak is within the spread of its constant, is at its constant (the target
  row says so, with both figures).
* Files are read from the page cache (they were just written): the figures are the checker's, not the disk's.
"""

# ruff: noqa: RUF001, RUF002 - the report's multiplication and minus signs are meant

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .plotting import pyplot
from .report import Target, environment, md_table, targets_table, verdict
from .workloads import Stream, recordings, sessions_dir, to_jsonl, typical_turn

__all__ = ["FULL", "QUICK", "SMOKE", "CorpusResult", "CorpusSizes", "main", "run_corpus"]

HERE = Path(__file__).resolve().parent
MIB = 1024 * 1024
POLICY = "harness"


@dataclass(frozen=True)
class CorpusSizes:
    """How big each corpus is, and how many runs each measurement takes."""

    name: str
    #: Session logs in the ``logs`` corpus.
    logs: int
    #: Small JSON-lines files in the ``small`` corpus.
    small: int
    #: Bytes of the ``big`` session log.
    big: int
    #: Bytes of each of the two files of the memory target.
    memory: int
    #: Runs per measurement (the median is quoted); the big file is run once.
    repeats: int


FULL = CorpusSizes("full", logs=1_000, small=20_000, big=1_000_000_000, memory=50 * MIB, repeats=3)
QUICK = CorpusSizes("quick", logs=200, small=4_000, big=64_000_000, memory=16 * MIB, repeats=1)
SMOKE = CorpusSizes("smoke", logs=20, small=200, big=2_000_000, memory=2 * MIB, repeats=1)
SIZES = {s.name: s for s in (FULL, QUICK, SMOKE)}


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the corpora -----------------------------------------------------------------------------------------------


@dataclass
class Corpus:
    """A generated corpus and what ``streamfsm check`` must find in it (the reference)."""

    key: str
    title: str
    #: What the command is given (a folder or a file), and the folders to copy to ``memory://``.
    paths: list[Path]
    files: int
    size: int
    streams: int
    invalid: int

    @property
    def status(self) -> int:
        """The exit status a correct run has."""
        return 1 if self.invalid else 0


@dataclass(frozen=True)
class _Session:
    """One recorded session, read once: its bytes, its header line and body, what it holds."""

    name: str
    data: bytes
    header: bytes
    body: bytes
    streams: int
    invalid: int
    #: Bytes of the lines carrying each stream's chunks (``assistant/chunk`` lines and packed rows).
    stream_bytes: tuple[int, ...]


def _check_file() -> Callable[..., Any]:
    """``sf.check_file`` once it is public, else the function the command's workers run."""
    import streamfsm as sf

    public = getattr(sf, "check_file", None)
    if public is not None:
        return public  # type: ignore[no-any-return]
    from streamfsm._check import check_file

    return check_file


def _stream_bytes(lines: list[bytes]) -> tuple[int, ...]:
    from streamfsm._chunk_rows import ROW_TYPES

    sizes: list[int] = []
    current = 0
    for line in lines:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        kind = record.get("type")
        if kind == "assistant/chunk" or kind in ROW_TYPES:
            current += len(line) + 1
            data = record.get("data")
            chunk = data.get("chunk") if isinstance(data, dict) else None
            if isinstance(chunk, dict) and chunk.get("type") == "finish":
                sizes.append(current)
                current = 0
    if current:
        sizes.append(current)
    return tuple(sizes)


def _sessions() -> list[_Session]:
    check_file = _check_file()
    out = []
    for path in sorted(sessions_dir().glob("*.jsonl")):
        data = path.read_bytes()
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        header_line = lines[0] if lines and orjson.loads(lines[0]).get("type") == "session" else b""
        body = b"".join(line + b"\n" for line in (lines[1:] if header_line else lines))
        report = check_file(str(path), "auto", POLICY)
        invalid = sum(1 for s in report.streams if not s.ok)
        out.append(_Session(path.name, data, header_line, body, len(report.streams), invalid, _stream_bytes(lines)))
    return out


def _whole(sessions: list[_Session]) -> list[_Session]:
    """The sessions whose turns can be repeated in one log: every stream valid (so every stream whole)."""
    return [s for s in sessions if s.streams and not s.invalid and s.header]


def make_logs(root: Path, count: int, sessions: list[_Session]) -> Corpus:
    folder = root / "logs"
    folder.mkdir()
    size = streams = invalid = 0
    for k in range(count):
        s = sessions[k % len(sessions)]
        (folder / f"{k:04d}--{s.name}").write_bytes(s.data)
        size += len(s.data)
        streams += s.streams
        invalid += s.invalid
    return Corpus("logs", f"{count:,} session logs (the {len(sessions)} recorded sessions in turn, renamed)",
                  [folder], count, size, streams, invalid)


def make_small(root: Path, count: int, streams: list[Stream]) -> Corpus:
    folder = root / "small"
    blobs = [to_jsonl(s) + b"\n" for s in streams]
    size = 0
    per_shard = max(10, min(1000, count // 20))  # folders of at most 1,000 files; at least 20 folders when small
    for k in range(count):
        shard = folder / f"{k // per_shard:03d}"
        if k % per_shard == 0:
            shard.mkdir(parents=True)
        blob = blobs[k % len(blobs)]
        (shard / f"{k:06d}.jsonl").write_bytes(blob)
        size += len(blob)
    median = statistics.median(len(b) for b in blobs)
    return Corpus("small", f"{count:,} small JSON-lines files (one of the {len(blobs)} valid recorded streams each, "
                  f"median {median / 1e3:.1f} kB)", [folder], count, size, count, 0)


def make_session_log(path: Path, target: int, sessions: list[_Session]) -> tuple[Corpus, int]:
    """One session log of at most ``target`` bytes (whole sessions' turns after one header); the largest stream."""
    whole = _whole(sessions)
    cycle = b"".join(s.body for s in whole)
    size = len(whole[0].header) + 1
    streams = largest = 0
    with open(path, "wb") as fh:
        fh.write(whole[0].header + b"\n")
        while size + len(cycle) <= target:
            fh.write(cycle)
            size += len(cycle)
            streams += sum(s.streams for s in whole)
            largest = max(largest, *(max(s.stream_bytes) for s in whole))
        for s in whole:
            if size + len(s.body) <= target:
                fh.write(s.body)
                size += len(s.body)
                streams += s.streams
                largest = max(largest, max(s.stream_bytes))
    title = (f"one session log of {_bytes(size)} (the turns of the {len(whole)} recorded sessions whose streams are "
             f"all valid, repeated)")
    return Corpus("big", title, [path], 1, size, streams, 0), largest


def make_one_stream(path: Path, target: int) -> int:
    """A JSON-lines file of about ``target`` bytes that is one valid stream (STRICT): one text block in 40-byte
    deltas, its block-end with the whole text, usage, finish. Returns the file's size."""
    piece = "streamed text in small deltas, 40 bytes"  # ASCII, nothing to escape: sizes add up exactly
    piece = (piece + " " * 40)[:40]
    delta = orjson.dumps({"type": "text-delta", "index": 0, "text": piece}) + b"\n"
    head = orjson.dumps({"type": "block-start", "index": 0, "blockType": "text"}) + b"\n"
    end_empty = orjson.dumps({"type": "block-end", "index": 0, "block": {"type": "text", "text": ""}}) + b"\n"
    tail = (orjson.dumps({"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 1}}) + b"\n"
            + orjson.dumps({"type": "finish", "reason": {"kind": "stop"}}) + b"\n")
    n = max(1, (target - len(head) - len(end_empty) - len(tail)) // (len(delta) + len(piece)))
    with open(path, "wb") as fh:
        fh.write(head)
        for _ in range(n // 1000):
            fh.write(delta * 1000)
        fh.write(delta * (n % 1000))
        prefix, suffix = end_empty.split(b'"text":""')
        fh.write(prefix + b'"text":"')
        text = piece.encode()
        for _ in range(n // 1000):
            fh.write(text * 1000)
        fh.write(text * (n % 1000))
        fh.write(b'"' + suffix + tail)
    return path.stat().st_size


def make_packed_row(path: Path, target: int) -> tuple[int, int]:
    """A session log of about ``target`` bytes that is one valid stream (HARNESS) whose text block's deltas are one
    ``text-chunks`` row of one-character members (the row that cost 41x its bytes when expanded whole), then its
    block-end with the whole text, usage, finish. Returns the file's size and the stream's (its lines but the
    header)."""

    def line(record: dict[str, Any]) -> bytes:
        return orjson.dumps(record) + b"\n"

    def event(seq: int, chunk: dict[str, Any]) -> bytes:
        return line(
            {"type": "assistant/chunk", "seq": seq, "time": 1000, "data": {"turn": 0, "step": 0, "chunk": chunk}}
        )

    header = line({"type": "session", "version": 1, "id": "packed-row"})
    start = event(0, {"type": "block-start", "index": 0, "blockType": "text"})
    row = (
        b'{"type":"text-chunks","seq0":1,"time0":1000,"data":{"turn":0,"step":0,"index":0,"dt":[',
        b'],"texts":[',
        b"]}}\n",
    )
    end = event(9, {"type": "block-end", "index": 0, "block": {"type": "text", "text": ""}})
    tail = event(9, {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}}) + event(
        9, {"type": "finish", "reason": {"kind": "stop"}}
    )
    # A member costs 4 bytes in the row ("a",), 2 in its dt (0,) and 1 in the block-end's text, less the two
    # commas the last member has not.
    n = max(3, (target - len(header) - len(start) - len(b"".join(row)) - len(end) - len(tail) + 2) // 7)

    def repeated(piece: bytes, count: int, last: bytes) -> Iterator[bytes]:
        """``piece`` ``count`` times, the last one ``last``, a block of 100,000 at a time."""
        for k in range(0, count - 1, 100_000):
            yield piece * min(100_000, count - 1 - k)
        yield last

    with open(path, "wb") as fh:
        fh.write(header + start)
        fh.write(row[0])
        fh.writelines(repeated(b"0,", n - 1, b"0"))
        fh.write(row[1])
        fh.writelines(repeated(b'"a",', n, b'"a"'))
        fh.write(row[2])
        prefix, suffix = end.split(b'"text":""')
        fh.write(prefix + b'"text":"')
        fh.writelines(repeated(b"a", n, b"a"))
        fh.write(b'"' + suffix + tail)
    size = path.stat().st_size
    return size, size - len(header)


# -- running the command ------------------------------------------------------------------------------------------


@dataclass
class Proc:
    """One finished ``streamfsm check`` process."""

    status: int
    wall: float
    cpu: float
    #: Peak resident set size (bytes) of the process and the workers it waited for; 0 when unknown.
    rss: int
    stdout: str
    stderr: str


_HEADLINE = re.compile(r"checked ([\d,]+) streams? in ([\d,]+) files? .*?: ([\d,]+) ok, ([\d,]+) invalid")


# The command is started by a small wrapper process that reports its rusage: on Linux, a process's peak RSS
# (ru_maxrss) starts at the RSS of the process it was forked from (exec keeps the old memory's high-water mark),
# so a child of this process, which holds the workloads, would report at least this process's size. The
# wrapper is a bare interpreter (-S -I: no site, nothing imported but os, time and json), smaller than any
# streamfsm process, and times the command itself (its own start-up is not counted).
_WRAPPER = """
import json, os, sys, time
t0 = time.perf_counter()
pid = os.posix_spawn(sys.executable, [sys.executable, *sys.argv[2:]], os.environ)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with open(sys.argv[1], "w") as fh:
    json.dump([os.waitstatus_to_exitcode(status), wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss], fh)
"""


def run_check(args: Sequence[str], scratch: Path) -> Proc:
    """``python -m streamfsm check ARGS``, its output to files; wall and CPU time, peak RSS (see _WRAPPER)."""
    out_path, err_path, usage_path = scratch / "stdout.txt", scratch / "stderr.txt", scratch / "usage.json"
    usage_path.unlink(missing_ok=True)
    env = {**os.environ, "NO_COLOR": "1"}
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        done = subprocess.run([sys.executable, "-S", "-I", "-c", _WRAPPER, str(usage_path), "-m", "streamfsm", "check",
                               *args], stdout=out, stderr=err, env=env, check=False)
    stdout, stderr = out_path.read_text("utf-8", "replace"), err_path.read_text("utf-8", "replace")
    if not usage_path.exists():
        return Proc(done.returncode or 2, math.nan, math.nan, 0, stdout, f"the wrapper failed: {stderr[-500:]}")
    status, wall, cpu, maxrss = json.loads(usage_path.read_text("utf-8"))
    return Proc(status, wall, cpu, maxrss * (1 if sys.platform == "darwin" else 1024), stdout, stderr)


def _verify(proc: Proc, corpus: Corpus) -> str | None:
    """None when the run found what the corpus holds; else what differs."""
    if proc.status != corpus.status:
        return f"exit status {proc.status}, expected {corpus.status}: {proc.stderr.strip()[-300:]}"
    found = _HEADLINE.search(proc.stdout)
    if found is None:
        return "no summary line in the output"
    streams, files, _ok, invalid = (int(g.replace(",", "")) for g in found.groups())
    if (streams, files, invalid) != (corpus.streams, corpus.files, corpus.invalid):
        return (f"found {streams} streams ({invalid} invalid) in {files} files, expected {corpus.streams} "
                f"({corpus.invalid} invalid) in {corpus.files}")
    return None


JOBS: dict[str, list[str]] = {"1": ["-j", "1"], "2": ["-j", "2"], "auto": []}


@dataclass
class Run:
    """Every run of one corpus at one ``-j``."""

    corpus: Corpus
    jobs: str
    procs: list[Proc] = field(default_factory=list)
    check: str | None = None

    def _median(self, key: Callable[[Proc], float]) -> float:
        values = [key(p) for p in self.procs]
        return statistics.median(values) if values else math.nan

    @property
    def wall(self) -> float:
        return self._median(lambda p: p.wall)

    @property
    def cpu(self) -> float:
        return self._median(lambda p: p.cpu)

    @property
    def rss(self) -> float:
        return self._median(lambda p: float(p.rss))

    @property
    def mb_s(self) -> float:
        return self.corpus.size / 1e6 / self.wall

    @property
    def mb_cpu_s(self) -> float:
        return self.corpus.size / 1e6 / self.cpu


def measure(corpora: list[Corpus], jobs: dict[str, list[str]], repeats: int, scratch: Path,
            args: Sequence[str] = ()) -> list[Run]:
    """Every corpus at every ``-j`` in ``jobs``, ``repeats`` rounds in an order rotated by one each round."""
    runs = [Run(c, j) for c in corpora for j in jobs]
    for r in range(repeats):
        for c in corpora:
            mine = [run for run in runs if run.corpus is c]
            k = r % len(mine)
            for run in mine[k:] + mine[:k]:
                proc = run_check(["-q", "--no-progress", "--policy", POLICY, *args, *jobs[run.jobs],
                                  *(str(p) for p in c.paths)], scratch)
                why = _verify(proc, c)
                if why is not None and run.check is None:
                    run.check = why
                run.procs.append(proc)
                _progress(f"    {c.key:<6} -j {run.jobs:<4} {proc.wall:7.2f} s  {c.size / 1e6 / proc.wall:7.1f} MB/s"
                          + (f"  ✗ {why}" if why else ""))
    return runs


# -- in one process: local disk against memory:// -------------------------------------------------------------


def in_process(folders: Sequence[str], repeats: int) -> dict[str, Any]:
    """``check_file`` on every file of each folder, local paths against ``memory://`` URLs (run in a child)."""
    check_file = _check_file()
    corpora: list[dict[str, Any]] = []
    try:
        fsspec: Any = importlib.import_module("fsspec")
    except ImportError as exc:
        return {"status": f"needs streamfsm[cloud] (fsspec is not installed: {exc})", "corpora": corpora}
    fs = fsspec.filesystem("memory")
    status = "ok"
    for k, folder in enumerate(folders):
        local = sorted(str(p) for p in Path(folder).rglob("*.jsonl"))
        root = f"/streamfsm-bench-{os.getpid()}-{k}"
        urls = []
        size = 0
        for path in local:
            data = Path(path).read_bytes()
            size += len(data)
            where = f"{root}/{Path(path).relative_to(folder).as_posix()}"
            fs.pipe(where, data)
            urls.append(f"memory:/{where}")
        entry: dict[str, Any] = {"folder": Path(folder).name, "files": len(local), "bytes": size}
        corpora.append(entry)
        # Warm-up and the check: the same reports from either storage.
        mine = [check_file(p, "auto", POLICY) for p in local]
        why: str | None
        try:
            theirs = [check_file(u, "auto", POLICY) for u in urls]
        except Exception as exc:
            theirs, why = [], f"raised {type(exc).__name__}: {exc}"
        else:
            bad = next((r for r in theirs if r.error is not None), None)
            why = None if bad is None else f"{bad.path}: {bad.error}"
        entry["streams"] = sum(len(r.streams) for r in mine)
        if why is not None:
            status = "needs streamfsm[cloud]: check_file cannot read memory:// URLs here"
            entry["check"] = why[:300]
        else:
            same = all([(s.ok, s.code) for s in a.streams] == [(s.ok, s.code) for s in b.streams]
                       for a, b in zip(mine, theirs, strict=True))
            entry["check"] = None if same else "the memory:// reports differ from the local ones"
        times: dict[str, list[float]] = {"local": [], "memory": []}
        for r in range(repeats):
            order = [("local", local), ("memory", urls)] if why is None else [("local", local)]
            for name, names in order if r % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                for n in names:
                    check_file(n, "auto", POLICY)
                times[name].append(time.perf_counter() - t0)
        entry["local"] = statistics.median(times["local"])
        entry["memory"] = statistics.median(times["memory"]) if times["memory"] else None
        fs.rm(root, recursive=True)
    return {"status": status, "corpora": corpora}


def _in_process_child(folders: Sequence[Path], repeats: int, scratch: Path) -> dict[str, Any]:
    out = scratch / "in-process.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.corpus", "--in-process", str(out),
                           "--repeats", str(repeats), *(str(f) for f in folders)],
                          cwd=HERE.parent, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0 or not out.exists():
        return {"status": f"error: the child exited {done.returncode}: {done.stderr.strip()[-500:]}", "corpora": []}
    result: dict[str, Any] = json.loads(out.read_text("utf-8"))
    return result


# -- the section ----------------------------------------------------------------------------------------------


@dataclass
class MemoryRow:
    title: str
    size: int
    largest: int
    streams: int
    proc: Proc
    check: str | None
    #: The same command on a tiny file of the same kind (median of a few runs).
    constant: Proc
    #: How far apart those runs' peaks were (bytes): what peak RSS moves by between runs of one command.
    spread: int = 0


@dataclass
class CorpusResult:
    """What the section measured, as Markdown, target rows and a plot."""

    sizes: CorpusSizes
    corpora: list[Corpus]
    runs: list[Run]
    memory: list[MemoryRow]
    inproc: dict[str, Any]
    per_file: tuple[float, int, int] | None
    seconds: float
    notes: list[str]
    plot_note: str = ""

    @property
    def failures(self) -> list[str]:
        out = [f"{r.corpus.key} -j {r.jobs}: {r.check}" for r in self.runs if r.check]
        out += [f"memory, {m.title}: {m.check}" for m in self.memory if m.check]
        out += [f"in-process {c['folder']}: {c['check']}" for c in self.inproc.get("corpora", [])
                if c.get("check") and self.inproc.get("status") == "ok"]
        if str(self.inproc.get("status", "")).startswith("error"):
            out.append(f"in-process: {self.inproc['status']}")
        return out

    def run(self, key: str, jobs: str) -> Run | None:
        return next((r for r in self.runs if r.corpus.key == key and r.jobs == jobs), None)


def run_corpus(sizes: CorpusSizes, out_dir: Path, tmp: Path | None = None) -> CorpusResult:
    """Generate the corpora under a temporary folder, measure, delete them; the plot goes to ``out_dir``."""
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="streamfsm-corpus-", dir=tmp))
    notes: list[str] = []
    try:
        scratch = root / "scratch"
        scratch.mkdir()
        big = sizes.big
        free = shutil.disk_usage(root).free
        need = big + 2 * sizes.memory + 200 * MIB
        if free < 2 * need:
            big = max(sizes.memory, (free // 2 - 2 * sizes.memory - 200 * MIB))
            notes.append(f"the big file is {_bytes(big)}, not {_bytes(sizes.big)}: {_bytes(free)} free on disk")
        _progress(f"corpus ({sizes.name}): generating under {root}")
        sessions = _sessions()
        rec, _ = recordings()
        if rec is None:
            raise RuntimeError("no recorded sessions found: the corpus section needs tests/fixtures/harness-sessions")
        logs = make_logs(root, sizes.logs, sessions)
        small = make_small(root, sizes.small, rec.streams)
        log_big, _ = make_session_log(root / "big.jsonl", big, sessions)

        _progress(f"  generated in {time.perf_counter() - started:.0f} s; throughput (whole processes)")
        runs = measure([logs, small], JOBS, sizes.repeats, scratch)
        runs += measure([log_big], {"1": JOBS["1"]}, 1, scratch)  # one file is checked by one process, whatever -j
        # Memory per file in the main process: -j 2 on a tenth of the small files against all of them.
        per_file = None
        shards = sorted((root / "small").iterdir())
        tenth = shards[: max(1, len(shards) // 10)]
        files = [f for d in tenth for f in d.iterdir()]
        subset = Corpus("small", "", tenth, len(files), sum(f.stat().st_size for f in files), len(files), 0)
        sub = measure([subset], {"2": JOBS["2"]}, sizes.repeats, scratch)[0]
        whole = next(r for r in runs if r.corpus is small and r.jobs == "2")
        if sub.check is None and whole.check is None and small.files > subset.files:
            per_file = ((whole.rss - sub.rss) / (small.files - subset.files), subset.files, small.files)

        _progress(f"  at {time.perf_counter() - started:.0f} s: in one process, local disk against memory://")
        inproc = _in_process_child([logs.paths[0], small.paths[0]], min(2, sizes.repeats), scratch)

        _progress(f"  at {time.perf_counter() - started:.0f} s: peak memory")
        tiny = root / "tiny.jsonl"
        tiny.write_bytes(to_jsonl(typical_turn().streams[0]) + b"\n")
        tiny_log = root / "tiny-session.jsonl"
        smallest = min(_whole(sessions), key=lambda s: len(s.body))
        tiny_log.write_bytes(smallest.header + b"\n" + smallest.body)
        one = root / "one-stream.jsonl"
        one_size = make_one_stream(one, sizes.memory)
        log_mem, log_largest = make_session_log(root / "session-50.jsonl", sizes.memory, sessions)
        row = root / "packed-row.jsonl"
        row_size, row_stream = make_packed_row(row, sizes.memory)
        memory: list[MemoryRow] = []
        cases = [
            ("JSON lines: one stream, one text block (STRICT)", one, one_size, one_size, 1, "strict", tiny),
            ("session log: many streams (HARNESS)", log_mem.paths[0], log_mem.size, log_largest,
             log_mem.streams, POLICY, tiny_log),
            ("session log: one stream, its deltas one packed row of one-character members (HARNESS)", row, row_size,
             row_stream, 1, POLICY, tiny_log),
        ]
        for title, path, size, largest, streams, policy, small_one in cases:
            command = ["-q", "--no-progress", "-j", "1", "--policy", policy]
            # The constant: the median of a few runs on the tiny file; the big file once (RSS hardly moves).
            constants = sorted((run_check([*command, str(small_one)], scratch) for _ in range(sizes.repeats)),
                               key=lambda p: p.rss)
            base = constants[len(constants) // 2]
            if base.status != 0:
                notes.append(f"the tiny file's run ({small_one.name}) exited {base.status}: "
                             f"{base.stderr.strip()[-200:]}")
            peak = run_check([*command, str(path)], scratch)
            ref = Corpus("", "", [path], 1, size, streams, 0)
            spread = constants[-1].rss - constants[0].rss
            memory.append(MemoryRow(title, size, largest, streams, peak, _verify(peak, ref), base, spread))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = CorpusResult(sizes, [logs, small, log_big], runs, memory, inproc, per_file,
                          time.perf_counter() - started, notes)
    result.plot_note = plot(result, out_dir / "corpus.png")
    return result


# -- the report ----------------------------------------------------------------------------------------------------


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size * 0.9995:  # 999,960,000 bytes is 1.0 GB, not 1000.0 MB
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _mib(n: float) -> str:
    return f"{n / MIB:.1f} MiB"


def _rate(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.3f}"


def throughput_table(result: CorpusResult) -> str:

    headers = ["corpus", "files", "streams", "size", "-j", "wall", "files/s", "streams/s", "MB/s", "MB/s per worker",
               "CPU", "MB per CPU-s (per core)", "streams per CPU-s", "peak RSS", "check"]
    rows = []
    for r in result.runs:
        c = r.corpus
        workers = {"1": 1, "2": 2}.get(r.jobs)
        rows.append([
            c.key, f"{c.files:,}", f"{c.streams:,}", _bytes(c.size), r.jobs, f"{r.wall:.2f} s",
            _rate(c.files / r.wall), _rate(c.streams / r.wall), _rate(r.mb_s),
            _rate(r.mb_s / workers) if workers else "—", f"{r.cpu:.2f} s", _rate(r.mb_cpu_s),
            _rate(c.streams / r.cpu), _mib(r.rss), "✓" if r.check is None else f"✗ {r.check}",
        ])
    return md_table(headers, rows)


def in_process_table(result: CorpusResult) -> str:

    status = str(result.inproc.get("status", ""))
    corpora = result.inproc.get("corpora", [])
    if not corpora:
        return f"Not measured: {status}."
    rows = []
    for c in corpora:
        mb = c["bytes"] / 1e6
        local = c["local"]
        memory = c.get("memory")
        rows.append([
            c["folder"], f"{c['files']:,}", _bytes(c["bytes"]), f"{local:.2f} s ({mb / local:.1f} MB/s, "
            f"{c['files'] / local:,.0f} files/s)",
            f"{memory:.2f} s ({mb / memory:.1f} MB/s, {c['files'] / memory:,.0f} files/s)" if memory else
            f"{status} ({c.get('check') or ''})",
            f"{memory / local:.2f}×" if memory else "—",
            "✓" if not c.get("check") else ("✗ " + c["check"] if status == "ok" else "—"),
        ])
    return md_table(["corpus", "files", "size", "local disk", "memory://", "memory ÷ local", "same reports"], rows)


def memory_table(result: CorpusResult) -> str:

    if not result.memory:
        return "Not measured."
    rows = []
    for m in result.memory:
        over = m.proc.rss - m.constant.rss
        rows.append([m.title, _mib(m.size), f"{m.streams:,}", _bytes(m.largest), _mib(m.proc.rss),
                     _mib(m.constant.rss) + ("" if m.constant.status == 0 else " ✗"), _mib(over),
                     f"{max(over, 0) / m.largest:.2f}×", _bytes(max(over, 0) / m.streams),
                     "✓" if m.check is None else f"✗ {m.check}"])
    return md_table(["file (`streamfsm check -q -j 1`)", "size", "streams", "largest stream", "peak RSS",
                     "constant (a tiny file of the kind)", "peak − constant", "÷ largest stream", "÷ streams",
                     "check"], rows)


def targets(result: CorpusResult) -> list[Any]:
    """The issue's targets for this section, as rows of the run's targets table."""

    out: list[Any] = []
    for m in result.memory:
        base = m.constant.rss
        over = m.proc.rss - base
        x = max(over, 0) / m.largest  # at or under the constant: nothing held for the streams
        # Peak RSS moves between runs of one command by tens of kB; a file whose streams are smaller than that
        # is at its constant when it is within the constant's own spread.
        noise = x > 1.5 and over <= m.spread
        said = f"{x:.2f}× ({_mib(m.proc.rss)} peak − {_mib(base)} constant, for a largest stream of "
        said += f"{_bytes(m.largest)})"
        if noise:
            said += (f"; {_bytes(over)} over the constant, within its own spread over {result.sizes.repeats} runs "
                     f"({_bytes(m.spread)}): at the constant")
        out.append(Target("peak memory of check vs the largest stream", f"{_mib(m.size)} file: {m.title}",
                          "≤ 1.5× + constant", said, verdict(x <= 1.5 or noise if m.check is None else None)))
    for c in result.corpora:
        one, auto = result.run(c.key, "1"), result.run(c.key, "auto")
        if one is None or auto is None:
            continue
        x = auto.wall / one.wall
        ok = None if one.check or auto.check else x <= 1.1
        out.append(Target("-j auto not slower than -j 1", f"{c.key}: {_count(c.files, 'file')}, {_bytes(c.size)}",
                          "≤ 1.1× (10% for noise)", f"{x:.2f}× ({auto.wall:.2f} s against {one.wall:.2f} s)",
                          verdict(ok)))
    if result.per_file is not None:
        growth, few, many = result.per_file
        out.append(Target("main process memory per file (-j 2)", f"small: {few:,} → {many:,} files",
                          "constant (≤ 1 kB a file)", f"{growth / 1e3:.2f} kB a file", verdict(growth <= 1000)))
    for c in result.corpora:
        if c.key not in ("logs", "big"):
            continue
        one = result.run(c.key, "1")
        if one is None:
            continue
        out.append(Target("check throughput per core (whole process, -j 1)", f"{c.key}: {c.title}", "reported",
                          f"{one.mb_cpu_s:.1f} MB/s, {c.streams / one.cpu:,.0f} streams/s per CPU-second "
                          f"({one.mb_s:.1f} MB/s wall)", "n/a"))
    return out


def method() -> str:
    doc = __doc__ or ""
    return doc.split("Method\n------\n", 1)[1].strip() if "Method\n------\n" in doc else ""


def markdown(result: CorpusResult) -> str:
    """The section's tables (the targets go in the run's targets table)."""
    corpora = "\n".join(f"- `{c.key}`: {c.title}: {_count(c.files, 'file')}, {_bytes(c.size)}, "
                        f"{_count(c.streams, 'stream')} ({c.invalid:,} invalid)" for c in result.corpora)
    notes = "".join(f"\n- Note: {n}" for n in result.notes)
    return "\n\n".join([
        f"Corpora ({result.sizes.name} sizes; {result.seconds:.0f} s for the section):\n\n{corpora}{notes}",
        "#### `python -m streamfsm check -q --no-progress --policy harness [-j N] PATH`, whole processes "
        f"(median of {result.sizes.repeats}; the big file once)\n\n" + throughput_table(result),
        "#### In one process: `check_file` over every file, local disk against `memory://`\n\n"
        + in_process_table(result),
        "#### Peak memory of `streamfsm check` against the largest stream\n\n" + memory_table(result),
    ])


# -- the plot ------------------------------------------------------------------------------------------------------


def plot(result: CorpusResult, path: Path) -> str:
    """MB/s against workers (1, 2, automatic) per corpus; in one process, local disk against memory://."""
    try:
        plt = pyplot()
    except ImportError as exc:
        return f"No plot: matplotlib is not installed ({exc})."
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5))
    slots = {"1": 0, "2": 1, "auto": 2}
    colors = {"logs": "tab:orange", "small": "tab:blue", "big": "tab:green"}
    for c in result.corpora:
        pts = [(slots[r.jobs], r.mb_s) for r in result.runs if r.corpus is c and math.isfinite(r.mb_s)]
        if not pts:
            continue
        pts.sort()
        color = colors.get(c.key, "tab:gray")
        left.plot([p[0] for p in pts], [p[1] for p in pts], "-o", color=color, lw=2,
                  label=f"{c.key}: {_count(c.files, 'file')}, {_bytes(c.size)}")
        cpu = sorted((slots[r.jobs], r.mb_cpu_s) for r in result.runs if r.corpus is c and math.isfinite(r.mb_cpu_s))
        left.plot([p[0] for p in cpu], [p[1] for p in cpu], "--", color=color, lw=1, marker="x", ms=4,
                  label=f"{c.key}: MB per CPU-second (per core)")
        one = next((y for x, y in pts if x == 0), None)
        auto = next((y for x, y in pts if x == 2), None)
        if one is not None and auto is not None:
            left.annotate(f"{auto / one:.2f}× the MB/s of -j 1", (2, auto), textcoords="offset points",
                          xytext=(6, 0), fontsize=8, va="center")
    left.set_xticks(list(slots.values()), ["-j 1", "-j 2", "-j auto"])
    left.set_xlim(-0.3, 3.2)
    left.set_ylim(bottom=0)
    left.set_ylabel("MB/s (wall, whole process); dashed: MB per CPU-second")
    left.set_title("streamfsm check: throughput against workers")
    left.grid(True, alpha=0.3)
    left.legend(fontsize=8)
    corpora = result.inproc.get("corpora", [])
    status = str(result.inproc.get("status", ""))
    if corpora:
        xs = list(range(len(corpora)))
        local = [c["bytes"] / 1e6 / c["local"] for c in corpora]
        memory = [c["bytes"] / 1e6 / c["memory"] if c.get("memory") else 0.0 for c in corpora]
        right.bar([x - 0.2 for x in xs], local, 0.4, label="local disk", color="tab:gray")
        right.bar([x + 0.2 for x in xs], memory, 0.4, label="memory://", color="tab:purple")
        right.set_xticks(xs, [f"{c['folder']}: {c['files']:,} files" for c in corpora])
        if status != "ok":
            right.text(0.5, 0.97, f"memory:// not measured: {status[:70]}", transform=right.transAxes, ha="center",
                       va="top", fontsize=8)
        right.legend(fontsize=8)
    else:
        right.text(0.5, 0.5, status[:80] or "not measured", transform=right.transAxes, ha="center", fontsize=8)
    right.set_ylabel("MB/s (check_file in a loop, -j 1)")
    right.set_title("in one process: local disk against memory://")
    right.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"Checking a corpus ({result.sizes.name} sizes; higher is better)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"![streamfsm check throughput against workers, local disk against memory://]({path.name})"


# -- alone ---------------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.corpus", description=(__doc__ or "").split("\n\n")[0])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_const", dest="sizes", const="quick",
                      help="smaller corpora (200 logs, 4,000 small files, 64 MB, 16 MiB; about a minute)")
    size.add_argument("--smoke", action="store_const", dest="sizes", const="smoke",
                      help="tiny corpora (seconds): proves the section works, not figures to quote")
    p.add_argument("--out", type=Path, default=None,
                   help="directory for corpus.png (default: benchmarks/, or a temp dir with --quick/--smoke)")
    p.add_argument("--tmp", type=Path, default=None, help="where the corpora are generated (default: the temp dir)")
    p.add_argument("--in-process", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--repeats", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("folders", nargs="*", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.in_process is not None:  # the child of in_process(): one JSON object to the file named
        args.in_process.write_text(json.dumps(in_process(args.folders, args.repeats)), encoding="utf-8")
        return 0

    sizes = SIZES[args.sizes or "full"]
    out_dir = args.out if args.out is not None else (
        HERE if sizes is FULL else Path(tempfile.mkdtemp(prefix="streamfsm-bench-")))
    out_dir.mkdir(parents=True, exist_ok=True)
    result = run_corpus(sizes, out_dir, args.tmp)
    print("\n".join(["## Environment", *environment({}), "", "## Corpus", "", markdown(result), "",
                     "#### Targets", "", targets_table(targets(result)), "", result.plot_note]))
    for failure in result.failures:
        print(f"FAILED: {failure}")
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""``validate_jsonl`` and ``assemble_jsonl`` against ``orjson.loads`` of the same lines: instructions a chunk, and time
side by side in one process; the compiled machine and the pure one.

    python -m benchmarks.instructions_jsonl            # instructions and time; about 10 minutes
    python -m benchmarks.instructions_jsonl --time     # time alone, side by side: about a minute

Modes: ``validate_jsonl`` and ``assemble_jsonl`` read the lines with the install's parser (msgspec with the
``fast`` extra), ``validate/orjson`` is ``validate_jsonl`` reading them with orjson (as without it).

Workloads: the DeepSeek Harness session logs (``recordings``), the providers' recorded streams converted to chunk
lines (``provider-recordings``) and the typical turn.

Instructions: each contender runs in a child interpreter under ``valgrind --tool=callgrind``, once with three
rounds of the workload and once with one; the difference over two rounds' chunks is its own cost, warm (see
``benchmarks/instructions.py``). Deterministic where the VM's timings are not; instructions are not time. Time:
every contender of a workload in one child interpreter, in rounds, each round in an order rotated by one; the
median of each over the rounds, divided by orjson's. The pure machine is the package's own modules as plain Python:
a copy of the package without its compiled modules, put first on the child's path.
"""

# ruff: noqa: RUF001 - the report's multiplication signs are meant

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .report import Target, verdict

ROOT = Path(__file__).resolve().parents[1]

_SETUP = """
import collections, json, statistics, sys, time
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])  # the pure copy of the package, before the compiled one
import orjson
import streamfsm as sf
from streamfsm import _machine, _parser
from benchmarks.workloads import provider_recordings, recordings, typical_turn
kind = sys.argv[2]
w = {"recordings": recordings, "provider-recordings": provider_recordings}[kind](None)[0] if kind != "typical" else (
    typical_turn())
blobs = w.jsonl if kind != "typical" else w.jsonl * 10
loads = orjson.loads
def orj(b):
    for line in b.split(b"\\n"):
        if line:
            loads(line)
PARSERS = {}  # each parser of JSON lines installed: what _parser.use(name) sets, set again by a cheap assignment
for name in ("orjson", "msgspec"):
    try:
        _parser.use(name)
    except ImportError:
        continue
    PARSERS[name] = (_parser.loads, _parser.KEYS, _parser.PARSER)
BEST = _parser.PARSER  # msgspec where installed
def parsing(name):
    _parser.loads, _parser.KEYS, _parser.PARSER = PARSERS[name]
policy = w.policy
def validate(b):
    collections.deque(sf.validate_jsonl(b, policy=policy), maxlen=0)
def assemble(b):
    sf.assemble_jsonl(b, policy=policy)
RUN = {  # each contender, a blob at a time, and the parser it reads with: set before a round, not timed
    "orjson.loads": (orj, BEST),
    "validate_jsonl": (validate, BEST),
    "validate/orjson": (validate, "orjson"),
    "assemble_jsonl": (assemble, BEST),
}
"""

_COUNT = (
    _SETUP
    + """
(run, parser), rounds = RUN[sys.argv[3]], int(sys.argv[4])
parsing(parser)
for b in blobs[:5]:
    run(b)
for _ in range(rounds):
    for b in blobs:
        run(b)
"""
)

_TIME = (
    _SETUP
    + """
import gc
modes, rounds = sys.argv[3].split(","), int(sys.argv[4])
for m in modes:
    run, parser = RUN[m]
    parsing(parser)
    for b in blobs:
        run(b)
gc.collect()
gc.freeze()
times = {m: [] for m in modes}
for r in range(rounds):
    for m in modes[r % len(modes):] + modes[: r % len(modes)]:
        run, parser = RUN[m]
        parsing(parser)
        t = time.perf_counter_ns()
        for b in blobs:
            run(b)
        times[m].append(time.perf_counter_ns() - t)
compiled = not str(_machine.__file__).endswith(".py")
print(json.dumps({"compiled": compiled, "chunks": w.n_chunks * (10 if kind == "typical" else 1), "parser": BEST,
                  "ns": {m: statistics.median(v) for m, v in times.items()}}))
"""
)

WORKLOADS = ("recordings", "provider-recordings", "typical")
#: ``validate_jsonl`` and ``assemble_jsonl`` read lines with the install's parser (msgspec where installed, the
#: ``fast`` extra); ``validate/orjson`` is ``validate_jsonl`` reading them with orjson, as without the extra.
MODES = ("orjson.loads", "validate_jsonl", "validate/orjson", "assemble_jsonl")
BUILDS = ("compiled", "pure")


@contextmanager
def pure_copy() -> Iterator[str]:
    """A directory holding the package as plain Python (its modules without the compiled ones), for ``sys.path``."""
    import streamfsm

    with tempfile.TemporaryDirectory(prefix="streamfsm-pure-") as where:
        shutil.copytree(
            Path(streamfsm.__file__).parent,
            Path(where) / "streamfsm",
            ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"),
        )
        yield where


def _child(script: str, path: str, kind: str, mode: str, rounds: int, valgrind: bool) -> str:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    prefix = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] if valgrind else []
    command = [*prefix, sys.executable, "-c", script, path, kind, mode, str(rounds)]
    proc = subprocess.run(command, capture_output=True, text=True, check=True, env=env, cwd=ROOT)
    return proc.stderr if valgrind else proc.stdout


def instructions(path: str, kind: str, mode: str, rounds: int) -> int:
    """Instructions (Ir) of a child interpreter that runs ``mode`` over ``rounds`` rounds of the workload."""
    err = _child(_COUNT, path, kind, mode, rounds, True)
    found = re.search(r"refs:\s+([\d,]+)", err)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{err[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_chunk(path: str, kind: str, mode: str) -> float:
    """Instructions a chunk of ``mode`` on the workload, warm (three rounds less one, over two rounds' chunks)."""
    from .workloads import provider_recordings, recordings, typical_turn

    w = typical_turn() if kind == "typical" else {"recordings": recordings, "provider-recordings": provider_recordings}[
        kind
    ](None)[0]
    if w is None:
        return float("nan")
    chunks = w.n_chunks * (10 if kind == "typical" else 1)
    return (instructions(path, kind, mode, 3) - instructions(path, kind, mode, 1)) / (2 * chunks)


def side_by_side(path: str, kind: str, rounds: int = 21) -> dict[str, object]:
    """Every mode's median time on the workload, in one child interpreter, and which machine and reading ran."""
    result: dict[str, object] = json.loads(_child(_TIME, path, kind, ",".join(MODES), rounds, False))
    return result


def _builds() -> Iterator[tuple[str, str]]:
    yield "compiled", ""
    with pure_copy() as where:
        yield "pure", where


def time_rows(kinds: tuple[str, ...] = WORKLOADS) -> list[str]:
    rows = []
    for _build, path in _builds():
        for kind in kinds:
            r = side_by_side(path, kind)
            ns: dict[str, float] = r["ns"]  # type: ignore[assignment]
            chunks = float(r["chunks"])  # type: ignore[arg-type]
            base = ns["orjson.loads"]
            ran = "compiled" if r["compiled"] else "pure"
            for mode in MODES:
                parser = "orjson" if mode.endswith("orjson") else r["parser"]
                reader = "" if mode == "orjson.loads" else f"; {parser} reads the lines"
                rows.append(f"time  {ran:8} {kind:19} {mode:15} {ns[mode] / chunks:8,.0f} ns a chunk "
                            f"({ns[mode] / base:.2f}x orjson{reader})")
    return rows


def targets() -> list[Target]:
    """The rows of ``python -m benchmarks``: validate_jsonl over orjson.loads in time, side by side, each build."""
    out = []
    for build, path in _builds():
        for kind in ("recordings", "provider-recordings"):
            r = side_by_side(path, kind)
            ns: dict[str, float] = r["ns"]  # type: ignore[assignment]
            base = ns["orjson.loads"]
            for mode, parser in (("validate_jsonl", r["parser"]), ("validate/orjson", "orjson")):
                v = ns[mode] / base
                out.append(Target(
                    f"validate_jsonl() ({parser} reads the lines) vs orjson.loads, {build} machine, side by side",
                    kind, "≤ 1.25×", f"{v:.2f}×", verdict(v <= 1.25),
                ))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.instructions_jsonl", description=__doc__.split("\n\n")[0])
    p.add_argument("--time", action="store_true", help="time alone (no valgrind)")
    p.add_argument("--only", default="", help="comma-separated workloads (recordings,provider-recordings,typical)")
    args = p.parse_args(argv)
    kinds = tuple(k for k in args.only.split(",") if k) or WORKLOADS
    for row in time_rows(kinds):
        print(row, flush=True)
    if args.time:
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    for build, path in _builds():
        for kind in kinds:
            base = None
            for mode in MODES:
                if build == "pure" and mode == "assemble_jsonl":
                    continue
                # Three rounds less one: the first round's one-time costs (code paths taken first, caches filled,
                # the heap grown) are in both, so the difference is what a round costs once warm.
                cost = per_chunk(path, kind, mode)
                base = base or cost
                print(f"instr {build:8} {kind:19} {mode:15} {cost:8,.0f} instructions a chunk "
                      f"({cost / base:.2f}x orjson)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

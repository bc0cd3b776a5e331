"""Instructions per chunk and per short stream, counted by valgrind's callgrind: deterministic where timings are not.

    python -m benchmarks.instructions [--rounds N]      # about a minute on 2 cores

Runs ``assemble()`` on the short streams (5 chunks each) and on the typical turn, and the bare dict loop
(``workloads.bare_loop``, the yardstick of every figure) on the typical turn, in child interpreters under
``valgrind --tool=callgrind``, each twice (with and without the work, the difference is the work's own), and
prints instructions per 5-chunk stream, per typical chunk, the fixed cost of a stream in typical chunks as
``python -m benchmarks`` defines it, and a strict ``assemble`` of a typical chunk as a multiple of the bare
loop's. Instruction counts are not time (allocation-heavy code runs at fewer instructions per cycle), but they
move by a few per cent between runs where timings on a noisy VM move by half: a tool for comparing two versions
of the machine, not for the targets. Needs ``valgrind`` on the PATH.
"""

# ruff: noqa: RUF001 - the report's multiplication signs are meant

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence

from .report import Target, verdict

_DRIVER = """
import sys
import streamfsm as sf
from benchmarks.workloads import bare_loop, short_streams, typical_turn
kind, rounds = sys.argv[1], int(sys.argv[2])
streams = short_streams(1000).streams if kind == "short" else typical_turn().streams * 10
assemble = bare_loop if kind == "bare" else sf.assemble
for s in streams[:10]:
    assemble(s)
for _ in range(rounds):
    for s in streams:
        assemble(s)
"""


def instructions(kind: str, rounds: int) -> int:
    """Instructions (Ir) of a child interpreter that assembles ``rounds`` rounds of the workload."""
    # A fixed hash seed: string hashes decide dict layouts, and so how many probes a lookup takes.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", _DRIVER, kind,
         str(rounds)],
        capture_output=True, text=True, check=True, env=env,
    )
    found = re.search(r"refs:\s+([\d,]+)", proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


#: The targets of #32 for a strict ``assemble``, in instructions (``python -m benchmarks`` checks them).
TYPICAL_CHUNK_MAX = 1_200
SHORT_STREAM_MAX = 23_500


def measure(rounds: int = 4) -> dict[str, float]:
    """Instructions of a 5-chunk stream (``short``), of a typical chunk (``typical``), and of the bare dict loop's
    typical chunk (``bare``), each the difference of ``rounds`` rounds and none (needs valgrind)."""
    from .workloads import typical_turn

    chunks = len(typical_turn().streams[0])
    return {
        "short": (instructions("short", rounds) - instructions("short", 0)) / (rounds * 1000),
        "typical": (instructions("typical", rounds) - instructions("typical", 0)) / (rounds * 10 * chunks),
        "bare": (instructions("bare", rounds) - instructions("bare", 0)) / (rounds * 10 * chunks),
    }


def targets() -> list[Target]:
    """The rows of ``python -m benchmarks``: a strict ``assemble`` of a typical chunk and of a 5-chunk stream, in
    instructions, with the bare loop's (n/a without valgrind)."""
    if shutil.which("valgrind") is None:
        return [
            Target(f"strict assemble() in instructions (callgrind), {what}", kind, wanted, "valgrind missing",
                   verdict(None))
            for what, kind, wanted in (("a typical chunk", "typical", f"≤ {TYPICAL_CHUNK_MAX:,}"),
                                       ("a 5-chunk stream", "short", f"≤ {SHORT_STREAM_MAX:,}"))
        ]
    m = measure()
    return [
        Target(
            "strict assemble() in instructions (callgrind), a typical chunk", "typical", f"≤ {TYPICAL_CHUNK_MAX:,}",
            f"{m['typical']:,.0f} (bare loop {m['bare']:,.0f}: {m['typical'] / m['bare']:.2f}×)",
            verdict(m["typical"] <= TYPICAL_CHUNK_MAX),
        ),
        Target(
            "strict assemble() in instructions (callgrind), a 5-chunk stream", "short", f"≤ {SHORT_STREAM_MAX:,}",
            f"{m['short']:,.0f}", verdict(m["short"] <= SHORT_STREAM_MAX),
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.instructions", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of 1,000 short streams / 10 typical turns")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    m = measure(args.rounds)
    per_stream, per_chunk, bare = m["short"], m["typical"], m["bare"]
    print(f"5-chunk stream: {per_stream:,.0f} instructions")
    print(f"typical chunk:  {per_chunk:,.0f} instructions")
    print(f"fixed cost of a stream: {(per_stream - 5 * per_chunk) / per_chunk:.1f} typical chunks (in instructions)")
    print(f"bare dict loop: {bare:,.0f} instructions a typical chunk; a strict assemble is {per_chunk / bare:.2f}x it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

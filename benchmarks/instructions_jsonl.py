"""Instructions per chunk of ``validate_jsonl`` and ``assemble_jsonl`` against ``orjson.loads`` of the same lines.

    python -m benchmarks.instructions_jsonl            # the recordings and the typical turn; about 5 minutes

Each contender runs in a child interpreter under ``valgrind --tool=callgrind``, once with three rounds of the
workload and once with one; the difference over two rounds' chunks is its own cost, warm (see
``benchmarks/instructions.py``). Deterministic where the VM's timings are not; instructions are not time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

_DRIVER = """
import collections, sys
import orjson
import streamfsm as sf
from benchmarks.workloads import recordings, typical_turn
kind, mode, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
w = recordings(None)[0] if kind == "recordings" else typical_turn()
blobs = w.jsonl if kind == "recordings" else w.jsonl * 10
loads = orjson.loads
def orj(b):
    for line in b.split(b"\\n"):
        if line:
            loads(line)
run = {
    "orjson.loads": orj,
    "validate_jsonl": lambda b: collections.deque(sf.validate_jsonl(b, policy=w.policy), maxlen=0),
    "assemble_jsonl": lambda b: sf.assemble_jsonl(b, policy=w.policy),
}[mode]
for b in blobs[:5]:
    run(b)
for _ in range(rounds):
    for b in blobs:
        run(b)
"""


def instructions(kind: str, mode: str, rounds: int) -> int:
    """Instructions (Ir) of a child interpreter that runs ``mode`` over ``rounds`` rounds of the workload."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", _DRIVER]
    proc = subprocess.run([*command, kind, mode, str(rounds)], capture_output=True, text=True, check=True, env=env)
    found = re.search(r"refs:\s+([\d,]+)", proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    from .workloads import recordings, typical_turn

    for kind in ("recordings", "typical"):
        workload = recordings(None)[0] if kind == "recordings" else typical_turn()
        if workload is None:
            continue
        chunks = workload.n_chunks * (1 if kind == "recordings" else 10)
        base = None
        for mode in ("orjson.loads", "validate_jsonl", "assemble_jsonl"):
            # Three rounds less one: the first round's one-time costs (code paths taken first, caches filled,
            # the heap grown) are in both, so the difference is what a round costs once warm.
            per_chunk = (instructions(kind, mode, 3) - instructions(kind, mode, 1)) / (2 * chunks)
            base = base or per_chunk
            print(f"{kind:10} {mode:15} {per_chunk:8,.0f} instructions a chunk ({per_chunk / base:.2f}x orjson)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What a blank line costs ``assemble_jsonl``, against a valid line, per byte, in instructions.

    python -m benchmarks.blank_lines      # about half a minute; needs valgrind

The typical turn as JSON lines, then the same lines with a run of ten blank lines after each one: empty lines
(``\\n``), or lines of JSON whitespace (``" \\r\\n"``, ``"\\t\\n"``, as a CRLF file's blank lines are). Each
blob is assembled in a child interpreter under valgrind's callgrind, with three rounds and with one (the
difference is two warm rounds' own cost, as in ``benchmarks/instructions_jsonl.py``). Per byte of the valid
lines: the plain blob's cost over its size; per byte of blank lines: the extra cost of a padded blob over the
bytes it adds. Instructions, not time: deterministic where the VM's timings are not (the target: a blank byte
costs under 10 times a valid one).
Run it on the compiled machine (``python setup.py build_ext --inplace``): that is what users run.
"""

# ruff: noqa: RUF001 - the report's multiplication signs are meant

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from .report import Target, verdict

_DRIVER = """
import sys
import streamfsm as sf
from benchmarks.blank_lines import blobs
blob = blobs()[sys.argv[1]]
for _ in range(int(sys.argv[2])):
    sf.assemble_jsonl(blob)
"""

#: The runs of blank lines put after each valid line, by name.
RUNS = {"empty": b"\n" * 10, "whitespace": b" \r\n\t\n" * 5}


def blobs() -> dict[str, bytes]:
    """The typical turn as JSON lines (``valid``), and the same with each run of blank lines after each line."""
    from .workloads import typical_turn

    valid = typical_turn().jsonl[0]
    lines = [line for line in valid.split(b"\n") if line]
    return {"valid": valid, **{name: b"".join(line + b"\n" + run for line in lines) for name, run in RUNS.items()}}


def instructions(kind: str, rounds: int) -> int:
    """Instructions (Ir) of a child interpreter that assembles the ``kind`` blob ``rounds`` times."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", _DRIVER]
    proc = subprocess.run([*command, kind, str(rounds)], capture_output=True, text=True, check=True, env=env)
    found = re.search(r"refs:\s+([\d,]+)", proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def measure() -> dict[str, float]:
    """Instructions a byte: of the valid lines (``valid``), and of each run of blank lines (:data:`RUNS`)."""
    blob = blobs()
    cost = {kind: (instructions(kind, 3) - instructions(kind, 1)) / 2 for kind in blob}
    per_byte = {"valid": cost["valid"] / len(blob["valid"])}
    for kind in RUNS:
        per_byte[kind] = (cost[kind] - cost["valid"]) / (len(blob[kind]) - len(blob["valid"]))
    return per_byte


def targets() -> list[Target]:
    """The target rows of ``python -m benchmarks``: a blank byte under 10 times a valid one (n/a without valgrind)."""
    if shutil.which("valgrind") is None:
        return [
            Target(
                "blank lines in assemble_jsonl vs a valid byte", "typical", "≤ 10×", "valgrind missing", verdict(None)
            )
        ]
    per_byte = measure()
    valid = per_byte["valid"]
    return [
        Target(
            "blank lines in assemble_jsonl vs a valid byte (instructions)",
            f"typical, {kind} lines",
            "≤ 10×",
            f"{per_byte[kind] / valid:.1f}× ({per_byte[kind]:,.0f} vs {valid:,.0f} a byte)",
            verdict(per_byte[kind] / valid <= 10),
        )
        for kind in RUNS
    ]


def main() -> int:
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    from streamfsm import _handlers

    per_byte = measure()
    valid = per_byte["valid"]
    print(f"machine: {'pure Python' if str(_handlers.__file__).endswith('.py') else 'compiled'}")
    print(f"valid lines: {valid:,.0f} instructions a byte")
    for kind in RUNS:
        ratio = per_byte[kind] / valid
        print(f"blank lines ({kind}): {per_byte[kind]:,.0f} instructions a byte ({ratio:.1f} times a valid byte)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

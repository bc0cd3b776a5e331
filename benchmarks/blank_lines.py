"""What a blank line costs ``assemble_jsonl``, against a valid line, per byte, in instructions.

    python -m benchmarks.blank_lines      # about half a minute; needs valgrind

The typical turn as JSON lines, then the same lines with a run of blank lines (eight empty lines, ``" \\r"`` and
``"\\t"``) after each one. Each blob is assembled in a child interpreter under valgrind's callgrind, with three
rounds and with one (the difference is two warm rounds' own cost, as in ``benchmarks/instructions_jsonl.py``).
Per byte of the valid lines: the plain blob's cost over its size; per byte of the blank lines: the extra cost of
the second blob over the bytes it adds. Instructions, not time: deterministic where the VM's timings are not.
Run it on the compiled machine (``python setup.py build_ext --inplace``): that is what users run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

_DRIVER = """
import sys
import streamfsm as sf
from benchmarks.blank_lines import blobs
blob = blobs()[sys.argv[1] == "blank"]
for _ in range(int(sys.argv[2])):
    sf.assemble_jsonl(blob)
"""

#: The blank lines after each valid line: empty lines mostly, and two of JSON whitespace.
_RUN = b"\n" * 8 + b" \r\n" + b"\t\n"


def blobs() -> tuple[bytes, bytes]:
    """The typical turn as JSON lines, and the same with a run of blank lines after each line."""
    from .workloads import typical_turn

    valid = typical_turn().jsonl[0]
    padded = b"".join(line + b"\n" + _RUN for line in valid.split(b"\n") if line)
    return valid, padded


def instructions(kind: str, rounds: int) -> int:
    """Instructions (Ir) of a child interpreter that assembles the ``kind`` blob ``rounds`` times."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", _DRIVER]
    proc = subprocess.run([*command, kind, str(rounds)], capture_output=True, text=True, check=True, env=env)
    found = re.search(r"refs:\s+([\d,]+)", proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    from streamfsm import _handlers

    valid, padded = blobs()
    cost = {kind: (instructions(kind, 3) - instructions(kind, 1)) / 2 for kind in ("valid", "blank")}
    per_valid = cost["valid"] / len(valid)
    per_blank = (cost["blank"] - cost["valid"]) / (len(padded) - len(valid))
    print(f"machine: {'pure Python' if str(_handlers.__file__).endswith('.py') else 'compiled'}")
    print(f"valid lines: {per_valid:,.0f} instructions a byte")
    print(f"blank lines: {per_blank:,.0f} instructions a byte ({per_blank / per_valid:.1f} times a valid byte)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

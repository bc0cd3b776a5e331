"""What the progress bar costs: ``streamfsm check`` of many small files on a terminal, with and without it.

``python -m benchmarks.progress [--files N] [--repeats R]`` prints a table and the ratio; the target is at most
1.3× ``--no-progress``.

Method: ``--files`` JSON-lines files (default 3,000), each the seed example stream (nine chunks, 600 bytes), are
written to a temporary folder. ``python -m streamfsm check -v FOLDER`` runs with its standard output and error on a
pseudo-terminal (120 columns; ``TERM=xterm``) that this process reads as fast as it can, as a terminal emulator
would: every file's ``ok`` line is printed. Wall time of the whole process, interpreter start included; the
two variants (the bar, ``--no-progress``) alternate, and each figure is the median of ``--repeats`` runs. Each run
must exit 0 and end with the summary of every file. ``PYTHONPATH`` chooses the package measured (another checkout's,
to compare).
"""

# ruff: noqa: RUF001, RUF002 - the report's multiplication sign is meant

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Sequence
from pathlib import Path

import orjson

#: The seed articles' example stream: one file of it per file of the corpus.
SEED = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "runoob"},
    {"type": "text-delta", "index": 0, "text": " 教程"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "runoob 教程"}},
    {"type": "block-start", "index": 1, "blockType": "tool-call"},
    {"type": "tool-call-delta", "index": 1, "id": "call-123", "name": "bash", "argumentsDelta": '{"command":"ls"}'},
    {
        "type": "block-end",
        "index": 1,
        "block": {"type": "tool-call", "id": "call-123", "name": "bash", "arguments": '{"command":"ls"}'},
    },
    {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 50}},
    {"type": "finish", "reason": {"kind": "stop"}},
]
TARGET = 1.3


def on_a_terminal(argv: Sequence[str]) -> tuple[float, int, bytes]:
    """Run ``argv`` with standard output and error on a pseudo-terminal: wall seconds, exit status, what it wrote."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES")}
    started = time.perf_counter()
    process = subprocess.Popen(
        list(argv), stdout=child, stderr=child, stdin=subprocess.DEVNULL, env={**env, "TERM": "xterm"}
    )
    os.close(child)
    chunks: list[bytes] = []
    try:
        while data := os.read(main, 1 << 16):
            chunks.append(data)
    except OSError:  # EIO: the child closed the terminal
        pass
    status = process.wait()
    seconds = time.perf_counter() - started
    os.close(main)
    return seconds, status, b"".join(chunks)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.progress", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--files", type=int, default=3000, help="how many small files (default 3000)")
    parser.add_argument("--repeats", type=int, default=7, help="runs of each variant; the median is quoted")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="streamfsm-progress-") as tmp:
        folder = Path(tmp)
        body = b"".join(orjson.dumps(chunk) + b"\n" for chunk in SEED)
        for i in range(args.files):
            (folder / f"{i:05d}.jsonl").write_bytes(body)
        command = [sys.executable, "-m", "streamfsm", "check", "-v", "-j", "1", str(folder)]
        variants = {"progress bar": command, "--no-progress": [*command, "--no-progress"]}
        times: dict[str, list[float]] = {name: [] for name in variants}
        expected = f"checked {args.files} streams in {args.files} files".encode()
        for _ in range(args.repeats):
            for name, run in variants.items():
                seconds, status, shown = on_a_terminal(run)
                if status != 0 or expected not in shown:
                    print(f"{name}: exit {status}, unexpected output:\n{shown[-2000:].decode(errors='replace')}")
                    return 1
                times[name].append(seconds)
    medians = {name: statistics.median(seconds) for name, seconds in times.items()}
    ratio = medians["progress bar"] / medians["--no-progress"]
    print(f"streamfsm check of {args.files:,} small files on a terminal, median of {args.repeats} runs (wall s)\n")
    print("| variant | median s | min s | max s |")
    print("| --- | ---: | ---: | ---: |")
    for name, seconds in times.items():
        print(f"| {name} | {medians[name]:.3f} | {min(seconds):.3f} | {max(seconds):.3f} |")
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"\nthe progress bar costs {ratio:.2f}× --no-progress (target ≤ {TARGET}×: {verdict})")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

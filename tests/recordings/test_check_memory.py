"""``streamfsm check`` holds the stream in hand, not the file (issue 15): memory does not grow with a file's streams,
and a file of one big stream costs about what the stream's text is, not the ~10 times the chunks' objects cost.

Measured with tracemalloc (everything Python allocates while the command runs), the command run in this process
with ``-j 1`` and its output thrown away.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import orjson

from streamfsm._cli import main


def turn(i: int) -> list[dict[str, Any]]:
    text = f"turn {i} " * 20
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        *({"type": "text-delta", "index": 0, "text": text[k : k + 10]} for k in range(0, len(text), 10)),
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 5}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


def session_log(path: Path, streams: int) -> Path:
    """A session log of ``streams`` model turns, as ``assistant/chunk`` events."""
    seq = 0
    with path.open("wb") as out:
        out.write(orjson.dumps({"type": "session", "seq": 0, "data": {"id": "s"}}) + b"\n")
        for i in range(streams):
            for chunk in turn(i):
                seq += 1
                record = {"type": "assistant/chunk", "seq": seq, "data": {"turn": i, "step": 0, "chunk": chunk}}
                out.write(orjson.dumps(record) + b"\n")
    return path


def peak(*argv: str) -> int:
    """Peak bytes tracemalloc saw while ``streamfsm check -j 1 -q --no-progress ARGV`` ran (its exit must be 0)."""
    out = io.StringIO()
    tracemalloc.start()
    try:
        with contextlib.redirect_stdout(out):
            status = main(["check", "-j", "1", "-q", "--no-progress", *argv])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        assert status == 0, out.getvalue()[-2000:]


def test_memory_does_not_grow_with_the_streams_of_a_file(tmp_path: Path) -> None:
    small = session_log(tmp_path / "small.jsonl", 300)
    big = session_log(tmp_path / "big.jsonl", 3000)
    peak(str(small))  # imports and caches out of the way
    # Ten times the streams (3,000 reports a file of about 1 KiB each, before): within 256 KiB of the same peak.
    assert peak(str(big)) - peak(str(small)) < 256 * 1024


_RSS = """
import contextlib, io, resource, sys
from streamfsm._cli import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main(["check", "-j", "1", "-q", "--no-progress", sys.argv[1]])
print(status, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss(path: Path) -> int:
    """Peak resident bytes of a fresh interpreter running the command on ``path`` (its exit must be 0)."""
    done = subprocess.run([sys.executable, "-c", _RSS, str(path)], capture_output=True, text=True, check=True)
    status, kib = done.stdout.split()
    assert status == "0", done.stdout
    return int(kib) * 1024


def test_one_big_stream_costs_about_its_text(tmp_path: Path) -> None:
    """One stream of 8 MiB text in 64-character deltas, then its block-end with the whole text (about 21 MiB of
    JSON lines): the open block's parts, the block-end's line (while it is joined: twice) and its text are held,
    about 2 times the file at most, never its chunks (about ten times its lines, as before the check streamed).

    Resident memory, not tracemalloc: orjson asks for far more than it touches on a long line (104 MiB for an
    8 MiB string), which tracemalloc counts and the kernel never maps."""
    text = "abcdefgh" * (1024 * 1024)
    path = tmp_path / "one.jsonl"
    with path.open("wb") as out:
        out.write(b'{"type":"block-start","index":0,"blockType":"text"}\n')
        for k in range(0, len(text), 64):
            out.write(orjson.dumps({"type": "text-delta", "index": 0, "text": text[k : k + 64]}) + b"\n")
        out.write(orjson.dumps({"type": "block-end", "index": 0, "block": {"type": "text", "text": text}}) + b"\n")
        out.write(b'{"type":"usage","usage":{"inputTokens":1,"outputTokens":2}}\n')
        out.write(b'{"type":"finish","reason":{"kind":"stop"}}\n')
    tiny = session_log(tmp_path / "tiny.jsonl", 1)
    size = path.stat().st_size
    assert size > 20 * 1024 * 1024
    assert peak_rss(path) - peak_rss(tiny) < 2.5 * size


_RSS_WORKERS = """
import contextlib, io, resource, sys
from streamfsm._cli import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main(["check", "-j", "2", "-q", "--no-progress", *sys.argv[1:]])
peak = resource.getrusage
print(status, peak(resource.RUSAGE_SELF).ru_maxrss, peak(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peaks_with_workers(*paths: Path) -> tuple[int, int]:
    """Peak resident bytes of the main process and of its biggest worker, ``check -j 2`` on ``paths``."""
    done = subprocess.run(
        [sys.executable, "-c", _RSS_WORKERS, *map(str, paths)], capture_output=True, text=True, check=True
    )
    status, main_kib, worker_kib = done.stdout.split()
    assert status == "0", done.stdout
    return int(main_kib) * 1024, int(worker_kib) * 1024


def test_workers_send_a_files_reports_in_bounded_pieces(tmp_path: Path) -> None:
    """A worker held every report of its file, and sent them back in one answer the main process unpickled whole
    (a file of 60,000 turns: 108 MiB a process with -j 2, against 40 MiB with -j 1). The reports past a piece travel
    through a spool file, a piece at a time: neither process grows with the file's streams."""
    big = session_log(tmp_path / "big.jsonl", 20_000)
    tiny = session_log(tmp_path / "tiny.jsonl", 10)
    main_big, worker_big = peaks_with_workers(big)
    main_tiny, worker_tiny = peaks_with_workers(tiny)
    # 20,000 reports of about 1 KiB each were held whole in each process (22 and 31 MiB more than 10 reports, measured).
    assert main_big - main_tiny < 4 * 1024 * 1024, (main_big, main_tiny)
    assert worker_big - worker_tiny < 4 * 1024 * 1024, (worker_big, worker_tiny)

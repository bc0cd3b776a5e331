"""What every benchmark report shares: markdown tables, targets and their verdicts, the environment of a run.

``run`` (``python -m benchmarks``) and ``corpus`` (``python -m benchmarks.corpus``) both write reports with these;
neither imports the other for them.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import streamfsm as sf

__all__ = ["REPO", "Target", "environment", "md_table", "targets_table", "verdict"]

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Target:
    name: str
    workload: str
    target: str
    measured: str
    verdict: str  # PASS, FAIL, n/a


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else "PASS" if ok else "FAIL"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |",
        "| " + " | ".join("-" * w for w in widths) + " |",
    ]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    return "\n".join(lines)


def targets_table(ts: list[Target]) -> str:
    return md_table(
        ["target", "workload", "wanted", "measured", "verdict"],
        [[t.name, t.workload, t.target, t.measured, t.verdict] for t in ts],
    )


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        # Changes to what is measured (the package, the harness, the build), not to docs or the run's own outputs.
        dirty = subprocess.run(
            [
                "git",
                "-C",
                str(REPO),
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "streamfsm",
                "benchmarks/*.py",
                "setup.py",
                "pyproject.toml",
            ],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment(versions: dict[str, str]) -> list[str]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    return [
        f"- Machine: {platform.platform()} ({platform.machine()}), CPU: {_cpu_model()}, "
        f"{os.cpu_count()} CPUs ({usable} usable)",
        f"- Python: {platform.python_implementation()} {platform.python_version()}",
        f"- Date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- streamfsm: {sf.__version__}, commit {_git_commit()}",
        "- Peers: " + (", ".join(f"{k} {v}" for k, v in versions.items()) or "none installed"),
    ]

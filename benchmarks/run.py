"""Timing, checks, targets, memory, the report (stdout and RESULTS.md) and the plot.

Method
------
* Every workload is timed as one group: every contender (baselines, streamfsm, installed peers, chunk
  dicts and JSON lines) runs once per round, in an order rotated by one each round, and the figure
  quoted is the **median** over rounds of ``time.perf_counter_ns`` per run. A run of a small workload
  is repeated ``number`` times inside a sample so that a sample lasts a few milliseconds.
* Every figure is also given as a ratio to the **bare dict loop** of the same workload, measured in
  the same rounds (read ``type``, append text and argument deltas to lists, join at the end).
* The first run of each contender is a warm-up and the **content check**: what it assembled is compared
  with what the workload holds (text, reasoning, and each tool call's id, name and raw arguments).
* A peer whose single run would take longer than ``--peer-limit`` seconds is not run on that workload:
  it is first timed on 1/4096, 1/512, 1/64 and 1/8 of it (as far as needed), its growth exponent is
  fitted, and the estimate is reported ("skipped (quadratic, est. 85 s > 10 s)"). The probe runs are
  content-checked too. A peer whose single run is long is timed by that one run (marked ¹);
  streamfsm and the baselines always get every round.
* The imported modules, the workloads and each workload's prepared inputs are moved out of the cyclic
  collector's sight (``gc.freeze``): a collection then costs what the contender's own garbage costs.
* Peak memory: ``tracemalloc``'s peak during one run (the inputs exist before it starts, so only what
  the contender allocates counts), against the UTF-8 size of the assembled payload.
"""

# ruff: noqa: RUF001 - the report's multiplication signs and dashes are meant

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamfsm as sf

from .peers import Contender, baselines, load_peers, streamfsm_contenders
from .plotting import pyplot
from .report import Target, environment, md_table, targets_table, verdict
from .workloads import FULL, SMOKE, Sizes, Workload, all_workloads

__all__ = ["Config", "Measure", "WorkloadResult", "main", "run_workload"]

HERE = Path(__file__).resolve().parent


# -- configuration -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    sizes: Sizes
    #: Most rounds per workload; at least ``min_rounds``.
    rounds: int
    min_rounds: int
    #: Seconds of timing rounds per workload (the round count is fitted to it).
    budget: float
    #: Nanoseconds a sample should last (a small workload's run is repeated inside it).
    sample_ns: int
    #: A peer whose single run is estimated longer than this (seconds) is skipped on that workload.
    peer_limit: float
    #: Workloads with more chunks than this are probed on smaller versions before a peer runs them.
    probe_above: int
    smoke: bool

    @property
    def once_above_ns(self) -> float:
        """A peer whose single run takes longer is timed by that run alone (no rounds): the rounds are
        kept for streamfsm, the baselines and the peers close enough for precision to matter."""
        return min(0.25, self.budget / (2 * self.min_rounds)) * 1e9

    @property
    def trace_below_ns(self) -> float:
        """Peak memory is measured (tracemalloc slows allocation several times) for runs shorter than this."""
        return min(0.5e9, self.peer_limit * 1e9 / 4)


def make_config(args: argparse.Namespace) -> Config:
    if args.smoke:
        return Config(SMOKE, rounds=args.rounds or 3, min_rounds=min(3, args.rounds or 3), budget=0.05,
                      sample_ns=200_000, peer_limit=args.peer_limit or 0.05, probe_above=600, smoke=True)
    return Config(FULL, rounds=args.rounds or 15, min_rounds=min(3, args.rounds or 3), budget=8.0,
                  sample_ns=5_000_000, peer_limit=args.peer_limit or 10.0, probe_above=20_000, smoke=False)


# -- measuring ----------------------------------------------------------------------------------------------


@dataclass
class Measure:
    """What one contender did on one workload."""

    contender: Contender
    #: "timed" (rounds), "once" (one run: too slow for rounds), "skipped" (not run), "error" (raised).
    status: str = "timed"
    note: str = ""
    #: None: the content check passed; else why it failed ("" when not run).
    check: str | None = ""
    checked_at: list[str] = field(default_factory=list)
    samples: list[float] = field(default_factory=list)
    number: int = 1
    first_ns: int = 0
    peak: int | None = None

    @property
    def median_ns(self) -> float:
        return statistics.median(self.samples) if self.samples else math.nan

    @property
    def spread(self) -> float:
        """Interquartile range over the median (0 with fewer than 4 samples)."""
        if len(self.samples) < 4:
            return 0.0
        q = statistics.quantiles(self.samples, n=4)
        return (q[2] - q[0]) / statistics.median(self.samples)

    @property
    def ran(self) -> bool:
        return self.status in ("timed", "once") and bool(self.samples)


@dataclass
class WorkloadResult:
    workload: Workload
    measures: dict[str, Measure]
    rounds: int

    def ns_per_chunk(self, key: str) -> float:
        m = self.measures.get(key)
        if m is None or not m.ran:
            return math.nan
        return m.median_ns / self.workload.n_chunks

    def ratio(self, key: str, to: str = "bare") -> float:
        return self.ns_per_chunk(key) / self.ns_per_chunk(to)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _time_once(c: Contender, prepared: Any) -> tuple[int, list[Any]]:
    t0 = time.perf_counter_ns()
    results = c.run(prepared)
    return time.perf_counter_ns() - t0, results


def _probe(c: Contender, w: Workload, cfg: Config, m: Measure) -> tuple[float, float] | None:
    """Time ``c`` on growing fractions of ``w`` (1/4096 … 1/8, at least 64): the estimated seconds of a
    full run and the fitted growth exponent; None when fewer than two sizes could be probed.

    A probe predicted (at the exponent so far, at least quadratic after one point) to take more than a
    quarter of ``--peer-limit`` is not run once two points are in: the estimate stands on those.
    """
    budget = 0.25 * cfg.peer_limit
    points: list[tuple[int, float]] = []
    estimate, exponent = 0.0, 1.0
    for size in sorted({max(64, w.size // d) for d in (4096, 512, 64, 8)} - {w.size}):
        small = w.scaled(size)
        if points:
            n_last, t_last = points[-1]
            grow = exponent if len(points) >= 2 else 2.0
            if len(points) >= 2 and t_last * (small.n_chunks / n_last) ** grow > budget:
                break
        prepared = c.prepare(small)
        gc.collect()
        elapsed, results = _time_once(c, prepared)
        why = c.check(small, results)
        m.checked_at.append(small.key)
        if why is not None:
            m.check = f"at {small.key}: {why}"
        del prepared, results
        points.append((small.n_chunks, elapsed / 1e9))
        if len(points) >= 2:
            (n0, t0), (n1, t1) = points[-2], points[-1]
            exponent = min(2.5, max(1.0, math.log(max(t1, 1e-9) / max(t0, 1e-9)) / math.log(n1 / n0)))
            estimate = t1 * (w.n_chunks / n1) ** exponent
            if estimate > 3 * cfg.peer_limit or t1 > budget:
                break
    if len(points) < 2:
        return None
    return estimate, exponent


def run_workload(w: Workload, contenders: Sequence[Contender], cfg: Config) -> WorkloadResult:
    """Warm up and check every contender, then time them in interleaved rounds, then their peak memory."""
    measures: dict[str, Measure] = {}
    prepared: dict[str, Any] = {}
    for c in contenders:
        m = measures[c.key] = Measure(c)
        if c.applies is not None and not c.applies(w):
            m.status = "skipped"
            m.note = "n/a"
            continue
        if c.role == "peer" and w.factory is not None and w.n_chunks > cfg.probe_above:
            probed = _probe(c, w, cfg, m)
            if probed is not None and probed[0] > cfg.peer_limit:
                estimate, exponent = probed
                shape = "quadratic" if exponent >= 1.5 else "too slow"
                m.status = "skipped"
                m.note = f"skipped ({shape}, est. {estimate:,.0f} s > {cfg.peer_limit:g} s)"
                continue
        try:
            prepared[c.key] = c.prepare(w)
            gc.collect()
            elapsed, results = _time_once(c, prepared[c.key])
        except Exception as exc:
            m.status = "error"
            m.note = f"raised {type(exc).__name__}: {exc}"[:200]
            m.check = m.note
            prepared.pop(c.key, None)
            continue
        why = c.check(w, results)
        m.checked_at.append(w.key)
        if why is not None:
            m.check = why
        elif m.check == "":
            m.check = None  # passed (a failed probe keeps its message)
        del results
        m.first_ns = elapsed
        m.number = max(1, round(cfg.sample_ns / max(elapsed, 1)))
        if c.role == "peer" and elapsed > cfg.once_above_ns:  # streamfsm and the baselines always get rounds
            m.status = "once"
            m.samples = [float(elapsed)]
            m.note = f"timed by one run ({elapsed / 1e9:.2f} s), too slow for rounds"
            prepared.pop(c.key)

    timed = [c for c in contenders if measures[c.key].status == "timed"]
    round_ns = sum(measures[c.key].number * measures[c.key].first_ns for c in timed)
    rounds = max(cfg.min_rounds, min(cfg.rounds, int(cfg.budget * 1e9 // max(round_ns, 1))))

    gc.collect()
    gc.freeze()  # the prepared inputs (millions of dicts and event objects) are not the collector's business
    try:
        clock = time.perf_counter_ns
        for r in range(rounds):
            k = r % len(timed) if timed else 0
            for c in timed[k:] + timed[:k]:
                m = measures[c.key]
                run, arg, number = c.run, prepared[c.key], m.number
                t0 = clock()
                for _ in range(number):
                    run(arg)
                m.samples.append((clock() - t0) / number)
        # Peak memory: one traced run each (tracemalloc slows allocation down: only if affordable).
        for c in timed:
            m = measures[c.key]
            if m.median_ns > cfg.trace_below_ns:
                m.note = m.note or "peak memory not measured (run too slow to trace)"
                continue
            gc.collect()
            tracemalloc.start()
            try:
                results = c.run(prepared[c.key])
                m.peak = tracemalloc.get_traced_memory()[1]
                del results
            finally:
                tracemalloc.stop()
    finally:
        # No gc.unfreeze(): the frozen inputs are freed by reference counting all the same, and thawing
        # would hand the collector the whole heap (imported peers included) again.
        prepared.clear()
        gc.collect()
    return WorkloadResult(w, measures, rounds)


# -- targets ----------------------------------------------------------------------------------------------


def _finite(*xs: float) -> bool:
    return all(math.isfinite(x) for x in xs)


def targets(results: list[WorkloadResult], cfg: Config) -> list[Target]:
    by = {r.workload.key: r for r in results}
    out: list[Target] = []
    typical = by.get("typical")
    if typical is not None:
        a, f = typical.ratio("assemble"), typical.ratio("feed")
        out.append(Target("assemble() vs bare loop", "typical", "≤ 3.0×", f"{a:.2f}×", verdict(a <= 3.0)))
        out.append(Target("feed() per chunk vs bare loop", "typical", "≤ 4.0×", f"{f:.2f}×", verdict(f <= 4.0)))
    short = by.get("short")
    if typical is not None and short is not None:
        per_chunk = typical.ns_per_chunk("assemble")
        per_stream = short.measures["assemble"].median_ns / len(short.workload.streams)
        fixed = (per_stream - 5 * per_chunk) / per_chunk
        streams = len(short.workload.streams)
        floor = ""
        if short.measures.get("bare-models") is not None and short.measures["bare-models"].ran:
            models = (short.measures["bare-models"].median_ns - short.measures["bare"].median_ns) / streams
            floor = f"; the result models alone (bare loop + models − bare loop): {models / per_chunk:.1f}"
            plain = short.measures.get("bare-plain")
            if plain is not None and plain.ran:
                objects = (plain.median_ns - short.measures["bare"].median_ns) / streams
                floor += f"; plain slotted objects instead: {objects / per_chunk:.1f}"
        out.append(Target(
            "fixed cost of a stream", "short",
            "≤ 10 typical chunks",
            f"{fixed:.1f} typical chunks ({_ns(per_stream)} per 5-chunk stream, {_ns(per_chunk)} per typical "
            f"chunk{floor})",
            verdict(fixed <= 10 if _finite(fixed) else None),
        ))
    series = sorted((r for r in results if r.workload.series == "text"), key=lambda r: r.workload.size)
    small = next((r for r in series if r.workload.size == cfg.sizes.growth[0]), None)
    large = next((r for r in series if r.workload.size == cfg.sizes.growth[1]), None)
    if small is not None and large is not None:
        g = large.ns_per_chunk("assemble") / small.ns_per_chunk("assemble")
        bare = large.ns_per_chunk("bare") / small.ns_per_chunk("bare")
        out.append(Target(
            "per-chunk growth", f"{small.workload.key} → {large.workload.key}", "≤ 1.2×",
            f"{g:.2f}× (bare loop: {bare:.2f}×)", verdict(g <= 1.2),
        ))
    args = sorted((r for r in results if r.workload.series == "args"), key=lambda r: r.workload.size)
    if args:
        biggest = args[-1]
        seconds = biggest.measures["assemble"].median_ns / 1e9
        out.append(Target("big tool argument, 1-byte deltas: total time", biggest.workload.key, "< 2 s",
                          f"{seconds:.3f} s", verdict(seconds < 2.0)))
        if len(args) > 1:
            g = biggest.ns_per_chunk("assemble") / args[0].ns_per_chunk("assemble")
            bare = biggest.ns_per_chunk("bare") / args[0].ns_per_chunk("bare")
            out.append(Target(
                "big tool argument: linear (per-chunk growth)", f"{args[0].workload.key} → {biggest.workload.key}",
                "≤ 1.2×", f"{g:.2f}× (bare loop: {bare:.2f}×)", verdict(g <= 1.2),
            ))
    jsonl_rows = ("typical", "short", "recordings", "provider-recordings")
    for r in results:
        if r.workload.key in jsonl_rows or r is (large or None) or (args and r is args[-1]):
            j = r.ratio("assemble_jsonl", "orjson")
            out.append(Target("JSON lines vs orjson.loads of the lines", r.workload.key, "≤ 1.5×", f"{j:.2f}×",
                              verdict(j <= 1.5 if _finite(j) else None)))
    # The check-only path (validate_jsonl builds no result models) against the same floor: on the recordings, the
    # bar of issue 32 (a checker that costs little more than the parse).
    for key, limit in (("recordings", 1.25), ("provider-recordings", 1.25), ("typical", 1.5)):
        r_v = by.get(key)
        if r_v is not None and "validate_jsonl" in r_v.measures:
            v = r_v.ratio("validate_jsonl", "orjson")
            out.append(Target("validate_jsonl() vs orjson.loads of the lines", key, f"≤ {limit:.2f}×", f"{v:.2f}×",
                              verdict(v <= limit if _finite(v) else None)))
    for r in results:
        m = r.measures["assemble"]
        if len(r.workload.streams) == 1 and r.workload.output_size >= 100_000 and m.peak is not None:
            x = m.peak / r.workload.output_size
            out.append(Target("peak memory vs assembled output", r.workload.key, "≤ 2.0×",
                              f"{x:.2f}× ({_bytes(m.peak)} for {_bytes(r.workload.output_size)})", verdict(x <= 2.0)))
    for r in results:
        if r.workload.key != "typical":
            continue
        for dist in ("openai", "anthropic"):
            made, ours = r.measures.get(f"{dist}-make"), r.measures.get(f"{dist}-checked")
            if made is None or ours is None or not (made.ran and ours.ran):
                continue
            x = ours.median_ns / made.median_ns
            added, making = _ns(r.ns_per_chunk(ours.contender.key)), _ns(r.ns_per_chunk(made.contender.key))
            out.append(Target(
                "checked(): what it adds per SDK object, against the SDK's making of it", f"typical ({dist})", "≤ 1.0×",
                f"{x:.2f}× ({added} against {making} per chunk)", verdict(x <= 1.0),
            ))
    for r in results:
        # Each peer against the streamfsm entry point fed the same input: the machine for chunk dicts and JSON
        # lines, a wire API's converter for that API's events.
        groups: dict[tuple[str, str], list[Measure]] = {}
        for m in r.measures.values():
            c = m.contender
            if c.role != "peer" or (m.status == "skipped" and m.note == "n/a"):
                continue
            mine = c.versus or ("assemble" if c.fmt == "dicts" else "assemble_jsonl")
            groups.setdefault((c.fmt, mine), []).append(m)
        for (fmt, mine), peers in groups.items():
            ours_m = r.measures.get(mine)
            if ours_m is None or not ours_m.ran:
                continue
            where = f"{r.workload.key} ({fmt})" if not peers[0].contender.versus else (
                f"{r.workload.key} ({ours_m.contender.label})")
            ours = r.ns_per_chunk(mine)
            ran = [m for m in peers if m.ran]
            skipped = [m for m in peers if m.status == "skipped"]
            errors = [m for m in peers if m.status == "error"]
            if not ran:
                text = "every peer skipped (too slow)" if skipped else "no peer ran"
                out.append(Target("faster than every peer", where, "every peer slower",
                                  text, verdict(True if skipped and not errors else None)))
                continue
            closest = min(ran, key=lambda m: m.median_ns)
            x = closest.median_ns / r.workload.n_chunks / ours
            extra = f"; {len(skipped)} skipped (too slow)" if skipped else ""
            out.append(Target(
                "faster than every peer", where, "every peer slower",
                f"fastest peer {closest.contender.label}: {x:.2f}× streamfsm's time{extra}",
                verdict(x > 1.0),
            ))
    return out


# -- formatting ---------------------------------------------------------------------------------------------


def _ns(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    if x < 1_000:
        return f"{x:.0f} ns"
    if x < 1_000_000:
        return f"{x / 1e3:.2f} µs"
    if x < 1_000_000_000:
        return f"{x / 1e6:.2f} ms"
    return f"{x / 1e9:.2f} s"


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _cell(r: WorkloadResult, key: str) -> str:
    m = r.measures.get(key)
    if m is None:
        return "—"
    if m.status in ("skipped", "error"):
        return m.note if m.status == "skipped" else "error (see checks)"
    per_chunk = r.ns_per_chunk(key)
    text = f"{_ns(per_chunk)} ({r.ratio(key):.2f}×)" if key != "bare" else _ns(per_chunk)
    if m.status == "once":
        text += " ¹"
    if m.check:
        text += " ✗"
    return text


def results_tables(results: list[WorkloadResult], contenders: Sequence[Contender]) -> str:
    parts = []
    for fmt, title in (("dicts", "chunk dicts"), ("jsonl", "JSON lines (bytes)")):
        cols = [c for c in contenders if c.fmt == fmt]
        ratios = [k for k in ("assemble_jsonl", "validate_jsonl") if any(c.key == k for c in cols)]
        headers = ["workload", "chunks", *(c.label for c in cols)]
        if fmt == "jsonl":
            headers += [f"{k} ÷ orjson" for k in ratios]
        rows = []
        for r in results:
            row = [r.workload.key, f"{r.workload.n_chunks:,}", *(_cell(r, c.key) for c in cols)]
            if fmt == "jsonl":
                row += [f"{r.ratio(k, 'orjson'):.2f}×" for k in ratios]
            rows.append(row)
        parts.append(f"### Results: {title} — median ns per chunk (× the bare dict loop)\n\n" + md_table(headers, rows))
    return "\n\n".join(parts)


def memory_table(results: list[WorkloadResult], contenders: Sequence[Contender]) -> str:
    cols = [c for c in contenders if any(r.measures.get(c.key) and r.measures[c.key].peak is not None for r in results)]
    headers = ["workload", "assembled output", *(c.label for c in cols)]
    rows = []
    for r in results:
        out = r.workload.output_size
        row = [r.workload.key, _bytes(out)]
        for c in cols:
            m = r.measures.get(c.key)
            if m is None or m.peak is None:
                row.append(m.note if m is not None and m.status == "skipped" else "—")
            else:
                row.append(f"{_bytes(m.peak)} ({m.peak / out:.1f}×)" if out else _bytes(m.peak))
        rows.append(row)
    return md_table(headers, rows)


def checks_section(results: list[WorkloadResult]) -> tuple[str, int]:
    """The content-check summary and the number of failures."""
    passed = failed = skipped = 0
    lines = []
    for r in results:
        for m in r.measures.values():
            if m.check is None:
                passed += 1
            elif m.check == "" and m.status == "skipped":
                skipped += 1
            else:
                failed += 1
                lines.append(f"- FAILED: {m.contender.label} on {r.workload.key}: {m.check or m.note}")
    head = f"Content checks: {passed} passed, {failed} failed, {skipped} not run (skipped workloads)."
    if failed == 0:
        head += " Every contender that ran assembled exactly the workload's content."
    return "\n".join([head, *lines]), failed


# -- the environment -----------------------------------------------------------------------------------------


# -- the plot ----------------------------------------------------------------------------------------------------


_COLORS = {
    "bare": "black", "orjson": "tab:gray", "assemble": "tab:orange", "feed": "tab:green",
    "assemble_jsonl": "tab:orange", "validate_jsonl": "tab:green", "anthropic": "tab:red", "openai": "tab:purple",
    "pydantic-ai": "tab:brown", "langchain": "tab:pink", "responses": "tab:blue", "openai-responses": "tab:cyan",
    "gemini": "tab:olive", "google-genai": "tab:green",
}


def plot(results: list[WorkloadResult], contenders: Sequence[Contender], path: Path) -> str:
    """ns/chunk against stream length, one line per contender, for each growth series; a note."""
    try:
        plt = pyplot()
    except ImportError as exc:
        return f"No plot: matplotlib is not installed ({exc})."
    panels = [("text", "long text (one text block)"), ("args", "one tool argument in 1-byte deltas")]
    fig, axes = plt.subplots(1, len(panels), figsize=(13, 6.5))
    for ax, (series, title) in zip(axes, panels, strict=True):
        rs = sorted((r for r in results if r.workload.series == series), key=lambda r: r.workload.n_chunks)
        for c in contenders:
            pts = [(r.workload.n_chunks, r.ns_per_chunk(c.key)) for r in rs]
            pts = [(x, y) for x, y in pts if math.isfinite(y)]
            if not pts:
                continue
            style = "-" if c.fmt == "dicts" else "--"
            width = 2.5 if c.role == "streamfsm" else 1.3
            color = _COLORS.get(c.key.removesuffix("-jsonl"), "tab:gray")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color, marker="o", ms=4, lw=width,
                    label=c.label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("stream length (chunks)")
        ax.set_ylabel("median ns per chunk")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    labels: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            labels.setdefault(label, handle)
    if labels:
        fig.legend(list(labels.values()), list(labels), loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("streamfsm vs peers: cost per chunk against stream length (lower and flatter is better; "
                 "dashed: JSON lines)")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"![ns per chunk against stream length]({path.name})"


# -- main --------------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--smoke", action="store_true",
                   help="tiny sizes and few rounds (seconds): every workload and installed peer, outputs to a temp dir")
    p.add_argument("--rounds", type=int, default=0, help="most timing rounds per workload (default 15; smoke 3)")
    p.add_argument("--out", type=Path, default=None,
                   help="directory for RESULTS.md and the plot (default: benchmarks/, or a temp dir with --smoke)")
    p.add_argument("--peer-limit", type=float, default=0.0,
                   help="skip a peer on a workload whose single run would take longer (seconds; default 10)")
    p.add_argument("--no-peers", action="store_true", help="time streamfsm and the baselines only")
    p.add_argument("--only", default="",
                   help="comma-separated workload keys and sections (e.g. typical,text-200k; corpus for the corpus "
                        "section alone)")
    p.add_argument("--corpus", choices=["full", "quick", "smoke", "none"], default=None,
                   help="the corpus section's sizes (benchmarks/corpus.py; default full, smoke with --smoke; "
                        "none: skip it)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = make_config(args)
    out_dir = args.out if args.out is not None else (
        Path(tempfile.mkdtemp(prefix="streamfsm-bench-")) if cfg.smoke else HERE)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    peer_contenders: list[Contender] = []
    versions: dict[str, str] = {}
    missing: dict[str, str] = {"all peers": "--no-peers"}
    if not args.no_peers:
        peer_contenders, versions, missing = load_peers()
    contenders = [*baselines(), *streamfsm_contenders(), *peer_contenders]
    order = ["bare", "bare-models", "bare-plain", "assemble", "feed", "anthropic", "openai", "pydantic-ai", "langchain",
             "responses", "openai-responses", "gemini", "google-genai",
             "openai-make", "openai-checked", "anthropic-make", "anthropic-checked",
             "orjson", "bare-jsonl", "assemble_jsonl", "validate_jsonl", "anthropic-jsonl", "openai-jsonl"]
    contenders.sort(key=lambda c: order.index(c.key) if c.key in order else len(order))

    workloads, notes = all_workloads(cfg.sizes)
    corpus_sizes = args.corpus or ("smoke" if cfg.smoke else "full")
    blank_lines = not cfg.smoke  # counted under valgrind: half a minute, no use at tiny sizes
    builds = not cfg.smoke  # validate_jsonl side by side with orjson, compiled and pure: a minute in child processes
    if args.only:
        keep = {k.strip() for k in args.only.split(",") if k.strip()}
        workloads = [w for w in workloads if w.key in keep]
        if "corpus" not in keep:
            corpus_sizes = "none"
        blank_lines = "blank-lines" in keep
        builds = "jsonl-builds" in keep
    # Modules, peers and workloads live for the whole run: out of the collector's sight, a collection
    # costs microseconds instead of a fifth of a second (with every peer imported).
    gc.collect()
    gc.freeze()
    _progress(f"streamfsm {sf.__version__}: {len(workloads)} workloads, {len(contenders)} contenders"
              + (f"; missing peers: {', '.join(missing)}" if missing else ""))

    results: list[WorkloadResult] = []
    for w in workloads:
        t0 = time.perf_counter()
        r = run_workload(w, contenders, cfg)
        results.append(r)
        _progress(f"  {w.key:<12} {w.n_chunks:>10,} chunks  {r.rounds:>2} rounds  {time.perf_counter() - t0:6.1f} s  "
                  f"assemble {_ns(r.ns_per_chunk('assemble'))}/chunk ({r.ratio('assemble'):.2f}× bare)")

    ts = targets(results, cfg)
    checks, failures = checks_section(results)
    # No workloads (--only corpus): the committed plot of the workloads is left as it is.
    plot_note = plot(results, contenders, out_dir / "ns_per_chunk.png") if results else ""

    corpus_md = corpus_method = corpus_plot = ""
    if corpus_sizes != "none":
        from . import corpus  # measures whole processes: nothing of this one is timed

        done = corpus.run_corpus(corpus.SIZES[corpus_sizes], out_dir)
        ts += corpus.targets(done)
        corpus_md, corpus_method, corpus_plot = corpus.markdown(done), corpus.method(), done.plot_note
        if done.failures:
            failures += len(done.failures)
            checks += "".join(f"\n- FAILED: corpus {f}" for f in done.failures)
        else:
            checks += ("\n\nCorpus checks: every `streamfsm check` run found the streams, files and invalid streams "
                       "its corpus holds.")
    if blank_lines:
        from . import blank_lines as blanks  # instructions under valgrind, in child interpreters

        ts += blanks.targets()
    if builds:
        from . import instructions, instructions_jsonl  # each build in its own child interpreter

        ts += instructions.targets()  # a strict assemble in instructions, under valgrind
        ts += instructions_jsonl.targets()
    elapsed = time.perf_counter() - started

    peer_lines = [f"- {dist} {v}: installed" for dist, v in versions.items()]
    peer_lines += [f"- {dist}: MISSING ({why}); install with `pip install -e '.[bench]'`"
                   for dist, why in missing.items()]
    footnotes = []
    for r in results:
        for m in r.measures.values():
            if m.status == "once":
                footnotes.append(f"- ¹ {m.contender.label} on {r.workload.key}: {m.note}")
    body = "\n\n".join([
        *([results_tables(results, contenders)] if results else []),
        "### Targets (STRICT policy unless noted; recordings replay under HARNESS)\n\n" + targets_table(ts),
        *(["### Peak memory (tracemalloc) against the assembled output\n\n" + memory_table(results, contenders)]
          if results else []),
        *(["### Corpus: `streamfsm check` over whole corpora\n\n" + corpus_md] if corpus_md else []),
        "### Content checks\n\n" + checks,
    ])
    if footnotes:
        body += "\n\n" + "\n".join(footnotes)
    env_lines = environment(versions)
    print("\n".join(["## Environment", *env_lines, "", "## Peers", *(peer_lines or ["- none"]), "", body]))
    print(f"\n{sum(t.verdict == 'PASS' for t in ts)} targets passed, {sum(t.verdict == 'FAIL' for t in ts)} failed; "
          f"{'; '.join(n for n in (plot_note, corpus_plot) if n) or 'no plot'}; {elapsed:.0f} s; "
          f"results in {out_dir / 'RESULTS.md'}")

    report = "\n\n".join([
        "# streamfsm benchmarks" + (" (smoke run: tiny sizes, not figures to quote)" if cfg.smoke else ""),
        "Written by `python -m benchmarks" + (" --smoke" if cfg.smoke else "") + "`; do not edit by hand.",
        "## Environment\n\n" + "\n".join(env_lines),
        "## Peers\n\n" + "\n".join(peer_lines or ["- none"]),
        "## Workloads\n\n" + "\n".join(
            [f"- `{w.key}`: {w.title}: {w.n_chunks:,} chunks in {len(w.streams):,} stream(s), policy "
             f"{w.policy.upper()}" for w in workloads] + [f"- {n}" for n in notes]),
        *(["## Method\n\n" + _method(cfg, results)] if results else ["## Method"]),
        *([f"### Method of the corpus section (`benchmarks/corpus.py`)\n\n{corpus_method}"] if corpus_method else []),
        "## Results\n\n" + body,
        "## Plot\n\n" + "\n\n".join(n for n in (plot_note, corpus_plot) if n),
        f"Run time: {elapsed:.0f} s.",
    ]) + "\n"
    (out_dir / "RESULTS.md").write_text(report, encoding="utf-8")
    if out_dir == HERE:  # the committed results: the docs site's performance page follows them
        from . import docs

        docs.write()
    return 1 if failures else 0


def _method(cfg: Config, results: list[WorkloadResult]) -> str:
    rounds = sorted({r.rounds for r in results})
    return "\n".join([
        "- Each workload is one timing group: every contender runs once per round, in an order rotated by one "
        f"each round; {rounds[0] if rounds else 0}–{rounds[-1] if rounds else 0} rounds per workload (fitted to "
        f"{cfg.budget:g} s, at most {cfg.rounds}). Figures are medians of `time.perf_counter_ns` per run, "
        "divided by the workload's chunk count (chunks of the block-protocol stream: a peer is fed the "
        "equivalent stream in its own format, which may have a different number of events).",
        "- × = ratio to the bare dict loop of the same workload in the same rounds: `for c in chunks: t = c['type']`, "
        "append `text` of text/reasoning deltas and `argumentsDelta` of tool-call deltas to lists, join at the end.",
        "- The first run of every contender is the warm-up and the content check (text, reasoning, each tool "
        "call's id, name and raw arguments, against the content read straight from the chunks).",
        f"- A peer whose run is estimated above {cfg.peer_limit:g} s (fitted on 1/4096 … 1/8 of the workload) "
        "is skipped on it; the estimate is shown. A peer whose single run takes longer than "
        f"{cfg.once_above_ns / 1e9:g} s is timed by that run alone (marked ¹), and its peak memory is not traced "
        f"when a run takes longer than {cfg.trace_below_ns / 1e9:g} s.",
        "- JSON lines: one bytes blob per stream; `orjson.loads` = split on `\\n` and `orjson.loads` every line, "
        "nothing else. `validate_jsonl()` is consumed as a checker consumes it (`collections.deque(..., maxlen=1)`: "
        "every chunk taken, the last kept for the check that it ran to the end of the stream). The anthropic and "
        "openai JSON-lines paths are what their SDKs do with each SSE data "
        "line: parse, `construct_type`, accumulate.",
        "- Fixed cost of a stream = (time of a 5-chunk stream − 5 × the per-chunk time of the typical turn), "
        "in typical chunks. Peak memory is checked against the target for single streams whose output is at "
        "least 100 kB (for tiny outputs the result objects dominate).",
        "- Floors (baselines that check nothing): `bare loop + result models` is the bare loop that also builds "
        "the pydantic result models streamfsm returns (`StreamResult`, its blocks, `Usage`), as cheaply as "
        "streamfsm builds them (no validation), on the STRICT workloads; `bare loop + plain result objects` "
        "builds slotted dataclasses instead, on the short streams. Their time minus the bare loop's, per "
        "5-chunk stream in typical chunks, is what the result objects alone cost (in the fixed-cost row).",
        "- Peers: anthropic `accumulate_event` on `RawMessageStreamEvent` objects; openai "
        "`ChatCompletionStreamState.handle_chunk` then `get_final_completion()` (reasoning as DeepSeek's "
        "`reasoning_content`); pydantic-ai `ModelResponsePartsManager.handle_*` as its Anthropic model calls "
        "them, then `get_parts()`; langchain-core `AIMessageChunk` summed with `+` one chunk at a time.",
        "- Converters (STRICT workloads): `streamfsm from_openai_responses_events()` is fed the workload as "
        "the Responses API's stream events (dicts, as parsed from the SSE body: each block an output item, its "
        "deltas, its `.done` events with the whole text and item, `response.completed` with the whole "
        "response) and assembles them (`sf.assemble`); its peer is openai's own Responses accumulator, "
        "`ResponseStreamState.handle_event` on the SDK's `ResponseStreamEvent` objects, then the final response "
        "(`get_final_response()`). `streamfsm from_gemini_chunks()` is fed the workload as Gemini "
        "`streamGenerateContent` chunks (dicts: one part per delta, each call whole); google-genai has no "
        "stream accumulator, so its peer is what the SDK does with each chunk (`GenerateContentResponse` "
        "parsed from the chunk's data, as `generate_content_stream` does) and keeps of the turn (each "
        "chunk's `candidates[0].content`, as `Chat.send_message_stream` records it). \"Faster than every peer\" "
        "compares each with the converter fed the same events.",
        "- An SDK's own stream checked as it passes (the typical turn, the short streams, `text-2k`): `streamfsm "
        "checked() over openai's ChatCompletionChunks` (and anthropic's `RawMessageStreamEvent`s) iterates "
        "`sf.checked(objects)` over the SDK's objects, made before the run, and reads `.result`: what checking "
        "adds to the consumer's loop. Next to it, what the SDK itself spends on each object its `Stream` yields "
        "(`construct_type` of the parsed event; reading the body and its SSE not counted): `openai: make each "
        "ChatCompletionChunk`. The target row divides the first by the second.",
    ])

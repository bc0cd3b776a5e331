"""The probe's report in its three forms: rows for a terminal (one per case run, as it ends, then a summary line),
``--json`` objects (:meth:`CaseRun.to_json`, :meth:`ProbeReport.to_json`) and JUnit XML for CI (:func:`junit_xml`).
"""

from __future__ import annotations

from typing import Final

from ._check import printable
from ._cli_report import Style, plural
from ._probe import CaseRun, ProbeReport

__all__ = ["HEADER", "detail", "format_run", "format_summary", "junit_xml"]

_COLORS: Final = {"pass": "green", "skipped": "dim", "diverges": "yellow", "invalid": "red", "error": "red"}
_CASE: Final = 16
#: The head of the table's columns.
HEADER: Final = f"{'case':<{_CASE}} {'verdict':<9} {'first chunk':>11} {'chunks':>7} {'duration':>9}"


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def detail(run: CaseRun) -> list[str]:
    """What a run's row says below it: what broke, what differs, or why it was skipped."""
    lines: list[str] = []
    if run.verdict in ("invalid", "error"):
        where = f" at chunk {run.chunk}" if run.chunk is not None else ""
        status = f" HTTP {run.status}" if run.status is not None else ""
        lines.append(f"[{run.code}]{status}{where}: {run.message}")
    else:
        lines.extend(str(difference) for difference in run.differences)
        if run.message:
            lines.append(run.message)
    return lines


def format_run(run: CaseRun, style: Style, *, details: bool = True) -> str:
    """The row of one case run (its detail lines below it, indented, unless ``details`` is False)."""
    name = run.case if run.run == 1 else f"{run.case} #{run.run}"
    verdict = style(f"{run.verdict:<9}", _COLORS[run.verdict], *(("bold",) if not run.ok else ()))
    row = f"{printable(name):<{_CASE}} {verdict} {_ms(run.first_chunk):>11} {run.chunks:>7} {_ms(run.duration):>9}"
    if not details:
        return row
    below = [style(f"    {printable(line)}", *(("dim",) if run.ok else ())) for line in detail(run)]
    return "\n".join([row, *below])


def format_summary(report: ProbeReport, style: Style) -> str:
    """``11 case runs: 9 pass, 1 diverges, 1 skipped (4.2 s)``, coloured by the worst verdict."""
    counts = [f"{count} {verdict}" for verdict, count in report.counts().items() if count]
    text = f"{plural(len(report.runs), 'case run')}: {', '.join(counts) or 'none'} ({report.seconds:.1f} s)"
    return style(text, "bold", "green" if report.ok else "red")


def junit_xml(report: ProbeReport) -> str:
    """The report as JUnit XML: one ``testcase`` per case run (``invalid`` and ``diverges`` as failures, ``error``
    as errors, ``skipped`` as skipped), in one ``testsuite`` named for the API and model."""
    import xml.etree.ElementTree as ET

    counts = report.counts()
    suite = ET.Element(
        "testsuite",
        {
            "name": f"streamfsm probe {report.api} {report.model}",
            "tests": str(len(report.runs)),
            "failures": str(counts["invalid"] + counts["diverges"]),
            "errors": str(counts["error"]),
            "skipped": str(counts["skipped"]),
            "time": f"{report.seconds:.3f}",
        },
    )
    for run in report.runs:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"probe.{report.api}",
                "name": run.case if run.run == 1 else f"{run.case}#{run.run}",
                "time": f"{run.duration:.3f}",
            },
        )
        text = "\n".join(detail(run))
        if run.verdict in ("invalid", "diverges"):
            ET.SubElement(case, "failure", {"type": run.verdict, "message": text.partition("\n")[0]}).text = text
        elif run.verdict == "error":
            ET.SubElement(case, "error", {"type": str(run.code), "message": text}).text = text
        elif run.verdict == "skipped":
            ET.SubElement(case, "skipped", {"message": run.message or ""})
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"

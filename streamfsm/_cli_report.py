"""What the command reports: each stream's report and the summary of a run, as text for a terminal (styled,
fitted to its width) or as ``--json`` objects, and the exit status the summary gives (``EXIT_*``).

Colours only on a terminal (``--color``), never when ``NO_COLOR`` is set; the boxed summary table needs the
``cli`` extra (``rich``), and the command works without it (a plain table).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Final

import orjson

if TYPE_CHECKING:
    import argparse

from ._check import (
    UNSAFE,
    FileCheck,
    FileReport,
    StreamReport,
    printable,
    short,
)

__all__ = [
    "DEFAULT_WIDTH",
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "Style",
    "Summary",
    "color_option",
    "complain",
    "file_json",
    "format_report",
    "format_summary",
    "is_terminal",
    "json_text",
    "plural",
    "rich_summary",
    "tail",
    "terminal_width",
    "wants_color",
]

#: Every stream is valid.
EXIT_OK: Final = 0
#: At least one stream is invalid.
EXIT_INVALID: Final = 1
#: A usage error, or an input that could not be read.
EXIT_USAGE: Final = 2
#: Interrupted (Ctrl-C).
EXIT_INTERRUPTED: Final = 130
#: Standard output was closed before the end (``| head``), as a shell reports a process killed by SIGPIPE.
EXIT_BROKEN_PIPE: Final = 141

#: Line width when the output is not a terminal.
DEFAULT_WIDTH: Final = 120


# -- styles -----------------------------------------------------------------------------------------


class Style:
    """ANSI styling that is switched off entirely when colour is not wanted."""

    _CODES: Final = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        """``text`` in ``styles`` (names of :attr:`_CODES`), or as it is when colour is off."""
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(self._CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


def complain(text: str) -> None:
    """Say ``text`` on standard error, as the command's own line (``streamfsm: ...``), its unsafe characters escaped."""
    sys.stderr.write(f"streamfsm: {printable(text)}\n")


def color_option(parser: argparse.ArgumentParser) -> None:
    """Give a command the ``--color`` option (:func:`wants_color` reads it)."""
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the output: auto (on a terminal, the default), always or never; NO_COLOR turns it off",
    )


def wants_color(choice: str, stream: IO[str]) -> bool:
    """Whether to colour ``stream``: never with ``NO_COLOR`` set; ``auto`` colours a terminal that is not dumb."""
    if os.environ.get("NO_COLOR"):
        return False
    if choice != "auto":
        return choice == "always"
    return is_terminal(stream) and os.environ.get("TERM") != "dumb"


def is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def terminal_width(stream: IO[str]) -> int:
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns if is_terminal(stream) else DEFAULT_WIDTH


#: The characters of ``UNSAFE`` that JSON writes as they are (DEL, C1 controls, bidi controls, line
#: separators; C0 controls it escapes already), as ``\uXXXX`` escapes: the same JSON, safe on a terminal.
#: A lone surrogate (a file name that is not UTF-8) cannot be written in UTF-8 JSON: it is written as the
#: text ``printable`` shows for it (``\xff``, the byte it stands for).
_JSON_ESCAPES: Final = {
    **{c: f"\\u{c:04x}" for c in UNSAFE if c >= 0x7F},
    **{c: json.dumps(printable(chr(c)))[1:-1] for c in range(0xD800, 0xE000)},
}


def json_text(value: Any, indent: bool = False) -> str:
    """``value`` as JSON text (orjson's), with the characters that could drive a terminal written escaped.

    Escaping keeps the JSON's meaning (``\\u202e`` is U+202E), except for lone surrogates (a file name
    that is not UTF-8), which UTF-8 JSON cannot hold: they become the text ``\\xff``.
    """
    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0).decode()
    except TypeError:  # a lone surrogate: the standard encoder writes it, and it is replaced below
        separators = (",", ": " if indent else ":")
        text = json.dumps(value, ensure_ascii=False, indent=2 if indent else None, separators=separators, default=str)
    return text.translate(_JSON_ESCAPES)


# -- formatting -------------------------------------------------------------------------------------


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def format_report(report: StreamReport, style: Style, width: int = DEFAULT_WIDTH) -> str:
    """One stream's report for a terminal: one line for a valid stream; for a bad one, compiler style.

    A bad stream gives ``path:line: CODE message`` (``path:57 (member 12 of the text-chunks row): ...`` for a
    chunk a packed row of a session log stood for), then the offending chunk at its line (for
    ``STREAM_TRUNCATED`` the last chunk received), then where in the stream it is and what the machine
    accepted in the state it was in. A valid stream's line ends with a ``note`` for each thing its policy
    accepted that ``Policy.STRICT`` would not (see ``StreamAssembler.notes``).
    """
    if report.ok:
        notes = "".join(
            f"; {style('note', 'cyan')}: {printable(n.message)} [{n.code} at chunk {n.chunk_index}"
            f"{f', {n.count} chunks' if n.count > 1 else ''}]"
            for n in report.notes
        )
        return f"{style(printable(report.name), 'bold')}: {style('ok', 'green')}; {_good_details(report)}{notes}"
    where = printable(f"{report.path}:{report.line}" if report.line is not None else report.path)
    if report.member is not None:
        where += f" ({report.member})"
    lines = [f"{style(where, 'bold')}: {style(str(report.code), 'red', 'bold')} {printable(str(report.message))}"]
    gutter = str(report.line) if report.line is not None else ""
    pad = max(len(gutter), 4)
    if report.chunk is not None:
        lines.append(f"  {gutter:>{pad}} {style('|', 'dim')} {short(report.chunk, max(width - pad - 5, 20))}")
    lines.append(f"  {'':>{pad}} {style('=', 'cyan')} {_bad_note(report)}")
    return "\n".join(lines)


def _good_details(report: StreamReport) -> str:
    blocks = report.blocks or ()
    parts = [plural(len(blocks), "block") + (f" ({', '.join(blocks)})" if blocks else "")]
    calls = report.tool_calls or ()
    parts.append(f"tool calls: {printable(', '.join(name for _, name in calls))}" if calls else "no tool calls")
    usage = report.usage
    if usage is None:
        parts.append("no usage")
    else:
        extra = [f"{usage[key]} {label}" for key, label in _USAGE_EXTRA if usage.get(key) is not None]
        parts.append(
            f"usage {usage['inputTokens']} in / {usage['outputTokens']} out"
            + (f" ({', '.join(extra)})" if extra else "")
        )
    finish = report.finish or {}
    failure = finish.get("failure")
    text = f"finish {finish.get('kind')}"
    if failure:
        text += f" ({printable(str(failure.get('code')))}: {short(str(failure.get('message')), 60)})"
    parts.append(text)
    if report.interrupted:
        parts.append(f"interrupted: {', '.join(report.interrupted)}")
    if report.kept:
        from ._providers.replay import describe_kept  # the provider layer: loaded when a provider stream was read

        parts.append(describe_kept(report.kept))
    return printable("; ".join(parts))  # block types and finish kinds come as they were recorded (HARNESS)


_USAGE_EXTRA: Final = (
    ("cacheReadTokens", "cache read"),
    ("cacheWriteTokens", "cache write"),
    ("reasoningTokens", "reasoning"),
)


def _bad_note(report: StreamReport) -> str:
    where = f"stream {report.stream}, " if report.numbered else ""
    if report.state is None:  # the reader or converter stopped, not the machine
        return f"{where}the {report.format} reader stopped after {plural(report.chunks, 'chunk')}"
    if report.chunk_index is not None and report.chunk_index >= report.chunks:
        where += f"the input ended after {plural(report.chunks, 'chunk')}"
    else:
        where += f"chunk {report.chunk_index} of {report.chunks}"
    accepts = ", ".join(report.expected or ()) or "nothing"
    return f"{where}; state {report.state} accepts {accepts} (policy {report.policy})"


@dataclass(slots=True)
class Summary:
    """What a ``check`` run found, for the closing table: streams by outcome and code, and files."""

    policy: str
    files: int = 0
    streams: int = 0
    ok: int = 0
    ok_files: int = 0
    #: Invalid streams by code, and how many files hold at least one of each.
    codes: Counter[str] = field(default_factory=Counter)
    code_files: Counter[str] = field(default_factory=Counter)
    #: Files that record no stream (a session log without a model turn), and files that could not be read.
    empty: int = 0
    unreadable: int = 0
    seconds: float = 0.0

    #: What the file being counted has shown so far (see :meth:`add_stream` and :meth:`end_file`).
    _file_streams: int = field(default=0, repr=False)
    _file_ok: bool = field(default=False, repr=False)
    _file_codes: set[str] = field(default_factory=set, repr=False)

    def add(self, report: FileReport) -> None:
        """Count one file's report."""
        for stream in report.streams:
            self.add_stream(stream)
        self.end_file(report.error)

    def add_stream(self, stream: StreamReport) -> None:
        """Count one stream of the file being counted."""
        self.streams += 1
        self._file_streams += 1
        if stream.ok:
            self.ok += 1
            self._file_ok = True
        else:
            code = str(stream.code)
            self.codes[code] += 1
            self._file_codes.add(code)

    def end_file(self, error: str | None) -> None:
        """The file being counted is over (``error``: why it could not be read, or read to the end)."""
        self.files += 1
        if error is not None:
            self.unreadable += 1
        elif not self._file_streams:
            self.empty += 1
        self.ok_files += self._file_ok
        self.code_files.update(self._file_codes)
        self._file_streams, self._file_ok = 0, False
        self._file_codes.clear()

    @property
    def invalid(self) -> int:
        """Streams that broke a rule."""
        return self.streams - self.ok

    def rows(self) -> list[tuple[str, str, str, str]]:
        """``(outcome, code, streams, files)`` rows: valid first, then codes by count, then files without streams."""
        rows = [("ok", "", str(self.ok), str(self.ok_files))] if self.ok or not self.codes else []
        for code, count in sorted(self.codes.items(), key=lambda item: (-item[1], item[0])):
            rows.append(("invalid", code, str(count), str(self.code_files[code])))
        if self.empty:
            rows.append(("no streams", "", "-", str(self.empty)))
        if self.unreadable:
            rows.append(("unreadable", "", "-", str(self.unreadable)))
        return rows

    def status(self) -> int:
        """The command's exit status for what was found (see :data:`EXIT_OK` and the others)."""
        if self.unreadable:
            return EXIT_USAGE
        return EXIT_INVALID if self.invalid else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        """The closing object of ``check --json``: the counts of the table, and the exit status (no time taken: the
        same files give the same output, whatever ran them)."""
        return {
            "kind": "summary",
            "policy": self.policy,
            "files": self.files,
            "streams": self.streams,
            "ok": self.ok,
            "invalid": self.invalid,
            "codes": {
                code: {"streams": count, "files": self.code_files[code]}
                for code, count in sorted(self.codes.items(), key=lambda item: (-item[1], item[0]))
            },
            "ok_files": self.ok_files,
            "empty_files": self.empty,
            "unreadable_files": self.unreadable,
            "exit": self.status(),
        }

    def headline(self) -> str:
        """One sentence: how much was checked, under which policy, how long it took, what came out."""
        return (
            f"checked {plural(self.streams, 'stream')} in {plural(self.files, 'file')} (policy {self.policy}) "
            f"in {self.seconds:.2f} s: {self.ok} ok, {self.invalid} invalid"
            + (f", {self.unreadable} unreadable" if self.unreadable else "")
        )


_HEADERS: Final = ("outcome", "code", "streams", "files")


def format_summary(summary: Summary, style: Style) -> str:
    """The closing table as plain aligned text (the one for pipes and logs)."""
    rows = summary.rows()
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_HEADERS)]

    def line(cells: Sequence[str], outcome: str | None = None) -> str:
        text = "  ".join(
            cell.rjust(widths[i]) if i >= 2 else cell.ljust(widths[i]) for i, cell in enumerate(cells)
        ).rstrip()
        colour = {"ok": "green", "invalid": "red", "unreadable": "red"}.get(outcome or "")
        return "  " + (style(text, colour) if colour else text)

    out = [style(summary.headline(), "bold"), "", style(line(_HEADERS), "dim")]
    out.extend(line(row, row[0]) for row in rows)
    return "\n".join(out)


def rich_summary(summary: Summary, color: bool) -> bool:
    """Print the closing table with rich on a terminal; False when rich is not installed."""
    try:
        from rich import box
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        return False
    console = Console(file=sys.stdout, no_color=not color, highlight=False)
    console.print(summary.headline(), style="bold")
    table = Table(box=box.SIMPLE_HEAD)
    for i, header in enumerate(_HEADERS):
        table.add_column(header, justify="right" if i >= 2 else "left")
    for row in summary.rows():
        table.add_row(*row, style={"ok": "green", "invalid": "red", "unreadable": "red"}.get(row[0], ""))
    console.print(table)
    return True


def tail(text: str, limit: int) -> str:
    """The end of ``text`` in ``limit`` characters: of a long path, the file's name is what tells files apart."""
    return text if len(text) <= limit else "\u2026" + text[-(limit - 1) :]


def file_json(report: FileReport | FileCheck) -> dict[str, Any]:
    """The ``check --json`` object of a file that holds no stream: its path, its format (when it was told), and
    why it could not be read (``null`` when it was read: it records no stream)."""
    return {
        "kind": "file",
        "path": report.path,
        "format": report.format if report.error is None else None,
        "streams": 0,
        "error": report.error,
    }

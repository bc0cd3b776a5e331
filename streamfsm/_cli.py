"""The ``streamfsm`` command (``python -m streamfsm``): check recorded streams, assemble one, draw the machine,
run the demo (``_demo.py``).

Exit status: 0 when every stream is valid (and for ``diagram`` and ``demo`` when they ran); 1 when at least
one stream is invalid; 2 for a usage error or an input that could not be read (a missing or unreadable file,
a folder with no recordings, a format that cannot be told), whatever the other streams gave; 130 when
interrupted; 141 when standard output was closed early.

The checking itself lives in ``_check.py`` and returns plain reports, run over many files by ``_corpus.py`` (here,
in worker processes, or on a Dask cluster); this module walks the paths and formats the reports for a terminal or
as JSON lines. Colours only on
a terminal (``--color``), never when ``NO_COLOR`` is set; the progress bar and the boxed summary table need
the ``cli`` extra (``rich``), and the command works without it.
"""

# ruff: noqa: E402  (the start-up guard comes before the imports it guards)

from __future__ import annotations

from . import _startup

_startup.guard_if_the_program()  # Ctrl-C from here on is exit 130 (see _startup): before the imports below

import contextlib
import json
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Final

import orjson

from ._check import (
    FORMATS,
    UNSAFE,
    FileCheck,
    FileReport,
    StreamReport,
    check_file,
    check_source,
    printable,
    short,
)
from ._config import Policy
from ._corpus import SchedulerError, reports, stdin_bytes
from ._machine import diagram
from ._sources import STDIN, _inputs

if TYPE_CHECKING:  # imported when used: a Ctrl-C while they load is then inside main()
    import argparse

_startup.imported()  # a Ctrl-C noted while the imports ran is answered now

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "Style",
    "Summary",
    "format_report",
    "format_summary",
    "json_text",
    "main",
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
        if not self.enabled or not styles:
            return text
        codes = ";".join(self._CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


def wants_color(choice: str, stream: IO[str]) -> bool:
    """Whether to colour ``stream``: never with ``NO_COLOR`` set; ``auto`` colours a terminal that is not dumb."""
    if os.environ.get("NO_COLOR"):
        return False
    if choice != "auto":
        return choice == "always"
    return _isatty(stream) and os.environ.get("TERM") != "dumb"


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _width(stream: IO[str]) -> int:
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns if _isatty(stream) else DEFAULT_WIDTH


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


def _plural(count: int, word: str) -> str:
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
    parts = [_plural(len(blocks), "block") + (f" ({', '.join(blocks)})" if blocks else "")]
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
        return f"{where}the {report.format} reader stopped after {_plural(report.chunks, 'chunk')}"
    if report.chunk_index is not None and report.chunk_index >= report.chunks:
        where += f"the input ended after {_plural(report.chunks, 'chunk')}"
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

    def headline(self) -> str:
        """One sentence: how much was checked, under which policy, how long it took, what came out."""
        return (
            f"checked {_plural(self.streams, 'stream')} in {_plural(self.files, 'file')} (policy {self.policy}) "
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


def _rich_summary(summary: Summary, color: bool) -> bool:
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


# -- inputs -----------------------------------------------------------------------------------------


@contextlib.contextmanager
def _progress(total: int, enabled: bool, color: bool) -> Iterator[Any]:
    """A rich progress bar on standard error, or ``None``; output printed meanwhile goes above it."""
    if not enabled:
        yield None
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:
        yield None
        return
    progress = Progress(
        TextColumn("checking"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}", style="dim", markup=False),  # a path, not rich markup: [x] is text
        console=Console(file=sys.stderr, no_color=not color),
        transient=True,
        redirect_stdout=_isatty(sys.stdout),
        redirect_stderr=True,
    )
    with progress:
        progress.add_task("", total=total)
        yield progress


# -- commands ---------------------------------------------------------------------------------------


def _say(text: str) -> None:
    # Looked up at each call: a progress bar swaps sys.stdout for a proxy that prints above it.
    sys.stdout.write(text + "\n")


def _tail(text: str, limit: int) -> str:
    """The end of ``text`` in ``limit`` characters: of a long path, the file's name is what tells files apart."""
    return text if len(text) <= limit else "\u2026" + text[-(limit - 1) :]


def _complain(text: str) -> None:
    sys.stderr.write(f"streamfsm: {printable(text)}\n")


def _check(args: argparse.Namespace) -> int:
    inputs = _inputs(args.paths, follow_links=args.follow_links)
    for item in inputs:
        if item.skipped is not None:
            _complain(f"{item.path}: {item.skipped}")
    inputs = [i for i in inputs if i.skipped is None]
    if sum(1 for i in inputs if i.path == STDIN) > 1:
        _complain("error: '-' (standard input) given more than once")
        return EXIT_USAGE
    policy = Policy(args.policy)
    color = wants_color(args.color, sys.stdout)
    style, width = Style(color), _width(sys.stdout)
    summary = Summary(policy.value)
    started = time.perf_counter()
    show_bar = args.progress and len(inputs) > 1 and _isatty(sys.stderr)
    try:
        with (
            _progress(len(inputs), show_bar, wants_color(args.color, sys.stderr)) as bar,
            contextlib.closing(
                reports(inputs, args.format, policy, jobs=args.jobs, scheduler=args.scheduler, lazy=True)
            ) as run,
        ):
            for report in run:
                _print_file(report, summary, args, style, width)
                if bar is not None:
                    bar.update(bar.task_ids[0], advance=1, description=_tail(printable(report.path), 50))
    except SchedulerError as exc:
        _complain(f"error: {exc}")
        return EXIT_USAGE
    summary.seconds = time.perf_counter() - started
    if not args.json:
        _say("")
        if not (_isatty(sys.stdout) and _rich_summary(summary, color)):
            _say(format_summary(summary, style))
    if summary.unreadable:
        return EXIT_USAGE
    return EXIT_INVALID if summary.invalid else EXIT_OK


def _print_file(
    report: FileReport | FileCheck, summary: Summary, args: argparse.Namespace, style: Style, width: int
) -> None:
    """Print and count a file's streams as they come (one pass: a :class:`FileCheck` is checked as it is read),
    then why it could not be read, if it could not."""
    streams = report.streams if isinstance(report, FileReport) else (stream for stream, _ in report.streams())
    count = 0
    for stream in streams:
        count += 1
        summary.add_stream(stream)
        if args.json:
            _say(json_text(stream.to_json()))
        elif not (stream.ok and args.quiet):
            _say(format_report(stream, style, width))
    summary.end_file(report.error)
    if report.error is not None:
        _complain(f"{report.path}: {report.error}")
    elif not count and not (args.json or args.quiet):
        _say(f"{style(printable(report.path), 'bold')}: {style('no streams recorded', 'dim')}")


def _assemble(args: argparse.Namespace) -> int:
    path = args.path
    if path != STDIN and os.path.isdir(path):
        _complain(f"error: {path} is a folder: assemble reads one recording")
        return EXIT_USAGE
    policy = Policy(args.policy)
    if path == STDIN:
        report = check_source(stdin_bytes(), args.format, policy, name=STDIN, results=True)
    else:
        report = check_file(path, args.format, policy, results=True)
    if report.error is not None:
        _complain(f"{report.path}: {report.error}")
        return EXIT_USAGE
    pairs = list(zip(report.streams, report.results or [], strict=True))
    if args.stream is not None:
        if not 0 <= args.stream < len(pairs):
            _complain(f"error: {path} records {_plural(len(pairs), 'stream')}; there is no stream {args.stream}")
            return EXIT_USAGE
        pairs = [pairs[args.stream]]
    style = Style(wants_color(args.color, sys.stderr))
    status = EXIT_OK
    for stream, result in pairs:
        if result is None:
            sys.stderr.write(format_report(stream, style, _width(sys.stderr)) + "\n")
            status = EXIT_INVALID
        else:
            _say(json_text(result.to_wire(), indent=not args.compact))
            if stream.kept:  # said on standard error: standard output stays JSON
                from ._providers.replay import describe_kept

                kept = describe_kept(stream.kept)
                sys.stderr.write(f"{style(printable(stream.name), 'bold')}: {printable(kept)}\n")
    return status


def _diagram(args: argparse.Namespace) -> int:
    sys.stdout.write(diagram(args.policy))
    return EXIT_OK


def _demo(args: argparse.Namespace) -> int:
    from ._demo import run

    return run(args)


# -- arguments --------------------------------------------------------------------------------------


def _policy_option(parser: argparse.ArgumentParser, default: str | None) -> None:
    parser.add_argument(
        "--policy",
        choices=[p.value for p in Policy],
        default=default,
        help="which rules apply: strict (every rule) or harness (interleaved blocks, usage optional)"
        + (f"; default {default}" if default else ""),
    )


def _format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="how the recordings are written; auto tells them apart by their first lines (default)",
    )


def _color_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the output: auto (on a terminal, the default), always or never; NO_COLOR turns it off",
    )


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    import argparse

    from . import __version__

    parser = argparse.ArgumentParser(
        prog="streamfsm",
        description="Validate and assemble LLM block streams (DeepSeek Harness StreamChunk protocol).",
        epilog="exit status: 0 every stream valid, 1 an invalid stream, 2 usage error or unreadable input",
    )
    parser.add_argument("--version", action="version", version=f"streamfsm {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="validate recorded streams",
        description="Validate recorded streams: JSON lines of chunks, DeepSeek Harness session logs, or "
        "provider SSE bodies. A folder is walked for *.jsonl, *.ndjson and *.sse files, each also as .gz or "
        ".zst (decompressed as read); a pattern (*, ?, [...], ** for any depth of folders) is matched; a URL "
        "(s3://, gs://, az://, https://, any fsspec storage; the cloud extra) is read, its folders walked and "
        "its patterns matched the same way; '-' reads standard input.",
    )
    check.add_argument(
        "paths", nargs="+", metavar="PATH", help="a recording, a folder of them, a pattern, a URL, or '-'"
    )
    _policy_option(check, Policy.STRICT.value)
    _format_option(check)
    check.add_argument("--json", action="store_true", help="print one JSON object per stream (JSON lines)")
    check.add_argument("-q", "--quiet", action="store_true", help="print only the invalid streams and the summary")
    check.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="worker processes, or Dask workers with --scheduler local (default: one per free core when the files "
        "are estimated to take half a second or more to check in one process; 1: none)",
    )
    check.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="check the files on a Dask cluster: its scheduler's address (tcp://HOST:8786), or 'local' for a "
        "LocalCluster started here (needs the dask extra)",
    )
    check.add_argument(
        "--follow-links",
        action="store_true",
        help="in a folder walked or a pattern's matches, read links to files outside it too (not by default: a "
        "link to ~/.env is not a recording); links to folders are never followed",
    )
    check.add_argument(
        "--no-progress", dest="progress", action="store_false", help="no progress bar (shown on a terminal)"
    )
    _color_option(check)
    check.set_defaults(run=_check)

    assemble = commands.add_parser(
        "assemble",
        help="print the assembled result of a recording as JSON",
        description="Print each stream of a recording, assembled, as JSON (StreamResult.to_wire()); "
        "invalid streams are reported on standard error.",
    )
    assemble.add_argument(
        "path", metavar="PATH", help="a recording (a file, .gz or .zst too, or a URL), or '-' for standard input"
    )
    _policy_option(assemble, Policy.STRICT.value)
    _format_option(assemble)
    assemble.add_argument(
        "--stream",
        type=int,
        metavar="N",
        help="only the N-th stream (0-based): of a session log, or turn of a provider recording",
    )
    assemble.add_argument("--compact", action="store_true", help="one line per stream instead of indented JSON")
    _color_option(assemble)
    assemble.set_defaults(run=_assemble)

    draw = commands.add_parser(
        "diagram",
        help="print the machine's Mermaid state diagram",
        description="Print the Mermaid state diagram the machine is declared as (the one in docs/concepts/machine.md).",
    )
    _policy_option(draw, None)
    draw.set_defaults(run=_diagram)

    demo = commands.add_parser(
        "demo",
        help="run the demo (no network, no API key)",
        description="Stream the seed example through the agent loop (no network, no key), then an adapter that "
        "breaks the protocol.",
    )
    demo.add_argument("--fast", action="store_true", help="no pauses between chunks")
    demo.add_argument(
        "--base-url",
        metavar="URL",
        help="talk to a real OpenAI-compatible endpoint (e.g. https://api.deepseek.com) instead, with the key in "
        "STREAMFSM_API_KEY (or OPENAI_API_KEY / DEEPSEEK_API_KEY)",
    )
    demo.add_argument("--model", metavar="NAME", help="the model to ask at --base-url")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``streamfsm`` command with ``argv`` (default: the process's arguments); returns the exit status.

    Ctrl-C at any moment from here on, argument parsing and the imports done on the way included, is exit
    130 with one line on standard error.
    """
    try:
        _startup.release()  # from here on, KeyboardInterrupt, as usual
        return _main(argv)
    except KeyboardInterrupt:
        _complain("interrupted")
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if getattr(args, "jobs", 1) < 0:
        parser.error("--jobs must be 0 (one per core) or more")
    if getattr(args, "scheduler", None) not in (None, "local") and args.jobs:
        parser.error("--jobs sets local workers: a cluster at --scheduler ADDRESS has its own")
    try:
        status: int = args.run(args)
        sys.stdout.flush()  # a reader gone (| head) shows here, not as a complaint when the interpreter exits
    except BrokenPipeError:
        # The reader went away (| head): say nothing more, and let the interpreter not complain on exit.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return status


if __name__ == "__main__":
    raise SystemExit(main())

"""The ``streamfsm`` command (``python -m streamfsm``): check recorded streams, assemble one, draw the machine,
run the demo (``_demo.py``), probe a live endpoint (``_probe_cli.py``).

Exit status: 0 when every stream is valid (and for ``diagram`` and ``demo`` when they ran); 1 when at least
one stream is invalid; 2 for a usage error or an input that could not be read (a missing or unreadable file,
a folder with no recordings, a format that cannot be told), whatever the other streams gave; 130 when
interrupted; 141 when standard output was closed early.

The checking itself lives in ``_check.py`` and returns plain reports, run over many files by ``_corpus.py`` (here,
in worker processes, or on a Dask cluster); this module walks the paths and formats the reports for a terminal or
as JSON lines (``_cli_report.py``), with the command's own progress bar (``_progress.py``).
"""

# ruff: noqa: E402  (the start-up guard comes before the imports it guards)

from __future__ import annotations

from . import _startup

_startup.guard_if_the_program()  # Ctrl-C from here on is exit 130 (see _startup): before the imports below

import contextlib
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ._check import (
    FORMATS,
    FileCheck,
    FileReport,
    check_file,
    check_source,
    printable,
)
from ._cli_report import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Style,
    Summary,
    color_option,
    complain,
    file_json,
    format_report,
    format_summary,
    is_terminal,
    json_text,
    plural,
    rich_summary,
    terminal_width,
    wants_color,
)
from ._config import Policy
from ._corpus import SchedulerError, reports, stdin_bytes
from ._machine import diagram
from ._progress import progress
from ._sources import STDIN
from ._walk import named_files

if TYPE_CHECKING:  # imported when used: a Ctrl-C while they load is then inside main()
    import argparse

_startup.imported()  # a Ctrl-C noted while the imports ran is answered now

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "main",
]


# -- commands ---------------------------------------------------------------------------------------


def _say(text: str) -> None:
    # Looked up at each call: a progress bar swaps sys.stdout for a proxy that prints above it.
    sys.stdout.write(text + "\n")


def _check(args: argparse.Namespace) -> int:
    inputs = named_files(args.paths, follow_links=args.follow_links)
    for item in inputs:
        if item.skipped is not None:
            complain(f"{item.path}: {item.skipped}")
    inputs = [i for i in inputs if i.skipped is None]
    if sum(1 for i in inputs if i.path == STDIN) > 1:
        complain("error: '-' (standard input) given more than once")
        return EXIT_USAGE
    policy = Policy(args.policy)
    color = wants_color(args.color, sys.stdout)
    style, width = Style(color), terminal_width(sys.stdout)
    summary = Summary(policy.value)
    started = time.perf_counter()
    show_bar = args.progress and len(inputs) > 1 and is_terminal(sys.stderr)
    shown = False  # a stream or a file was printed: a blank line parts it from the summary
    try:
        with (
            progress(len(inputs), show_bar, wants_color(args.color, sys.stderr)) as bar,
            contextlib.closing(
                reports(inputs, args.format, policy, jobs=args.jobs, scheduler=args.scheduler, lazy=True)
            ) as run,
        ):
            for report in run:
                shown = _print_file(report, summary, args, style, width) or shown
                if bar is not None:
                    bar.advance(report.path)
    except SchedulerError as exc:
        complain(f"error: {exc}")
        return EXIT_USAGE
    summary.seconds = time.perf_counter() - started
    if args.json:
        _say(json_text(summary.to_json()))
    else:
        if shown:
            _say("")
        if not (is_terminal(sys.stdout) and rich_summary(summary, color)):
            _say(format_summary(summary, style))
    return summary.status()


def _print_file(
    report: FileReport | FileCheck, summary: Summary, args: argparse.Namespace, style: Style, width: int
) -> bool:
    """Print and count a file's streams as they come (one pass: a :class:`FileCheck` is checked as it is read),
    then why it could not be read, if it could not. Without ``-v`` a valid stream is only counted. Whether a line
    went to standard output."""
    streams = report.streams if isinstance(report, FileReport) else (stream for stream, _ in report.streams())
    count = 0
    shown = False
    for stream in streams:
        count += 1
        summary.add_stream(stream)
        if args.json:
            _say(json_text({"kind": "stream", **stream.to_json()}))
        elif args.show_ok or not stream.ok:
            _say(format_report(stream, style, width))
            shown = True
    summary.end_file(report.error)
    if args.json and not count:  # a file that holds no stream, or could not be read, still has its object
        _say(json_text(file_json(report)))
    if report.error is not None:
        complain(f"{report.path}: {report.error}")
    elif not count and args.show_ok and not args.json:
        _say(f"{style(printable(report.path), 'bold')}: {style('no streams recorded', 'dim')}")
        shown = True
    return shown


def _assemble(args: argparse.Namespace) -> int:
    path = args.path
    if path != STDIN and os.path.isdir(path):
        complain(f"error: {path} is a folder: assemble reads one recording")
        return EXIT_USAGE
    policy = Policy(args.policy)
    if path == STDIN:
        report = check_source(stdin_bytes(), args.format, policy, name=STDIN, results=True)
    else:
        report = check_file(path, args.format, policy, results=True)
    if report.error is not None:
        complain(f"{report.path}: {report.error}")
        return EXIT_USAGE
    pairs = list(zip(report.streams, report.results or [], strict=True))
    if args.stream is not None:
        if not 0 <= args.stream < len(pairs):
            complain(f"error: {path} records {plural(len(pairs), 'stream')}; there is no stream {args.stream}")
            return EXIT_USAGE
        pairs = [pairs[args.stream]]
    style = Style(wants_color(args.color, sys.stderr))
    status = EXIT_OK
    for stream, result in pairs:
        if result is None:
            sys.stderr.write(format_report(stream, style, terminal_width(sys.stderr)) + "\n")
            status = EXIT_INVALID
        else:
            _say(json_text(result.to_wire(interrupted=True), indent=not args.compact))
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
        type=str.lower,  # HARNESS as harness, as the library takes it
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


#: What ``--help`` says of the exit status (the command's and ``check``'s).
EXIT_STATUS_HELP: Final = f"""exit status:
  {EXIT_OK}    every stream is valid
  {EXIT_INVALID}    at least one stream is invalid
  {EXIT_USAGE}    a usage error, or an input that could not be read (a missing file, a folder with no recordings, \
a format that cannot be told), whatever the other streams gave
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)
  {EXIT_BROKEN_PIPE}  standard output was closed early (| head)"""


def _version_action() -> type[argparse.Action]:
    import argparse

    class Version(argparse.Action):
        """``--version``: the version and the machine (compiled or pure, and why: ``_about.py``), read when asked."""

        def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
            super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

        def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
            from ._about import version_line

            _say(version_line())
            parser.exit()

    return Version


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    import argparse

    class Formatter(argparse.HelpFormatter):
        """Each line of a description or epilog filled on its own: the exit status is a list, one code a line."""

        def _fill_text(self, text: str, width: int, indent: str) -> str:
            import textwrap

            filled = []
            for line in text.splitlines():
                hang = " " * (len(line) - len(line.lstrip()) + (5 if line.startswith("  ") else 0))
                filled.append(
                    textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent + hang)
                    if line.strip()
                    else ""
                )
            return "\n".join(filled)

    parser = argparse.ArgumentParser(
        prog="streamfsm",
        description="Validate and assemble LLM block streams (DeepSeek Harness StreamChunk protocol).",
        epilog=EXIT_STATUS_HELP,
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action=_version_action(), help="print the version, and which machine runs and why")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="validate recorded streams",
        epilog=EXIT_STATUS_HELP,
        formatter_class=Formatter,
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
    check.add_argument(
        "--json",
        action="store_true",
        help='print JSON lines: one object per stream ("kind": "stream"), one per file that holds none or could not '
        'be read ("kind": "file"), and a closing summary ("kind": "summary")',
    )
    check.add_argument(
        "-v",
        "--verbose",
        dest="show_ok",
        action="store_true",
        help="print every stream: a line for each valid one too (its blocks, tool calls, usage and finish, and what "
        "its policy let through), and each file that records no stream",
    )
    check.add_argument(
        "-q",
        "--quiet",
        dest="show_ok",
        action="store_false",
        help="print only the invalid streams and the summary (the default; undoes an earlier -v)",
    )
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
    color_option(check)
    check.set_defaults(run=_check)

    assemble = commands.add_parser(
        "assemble",
        help="print the assembled result of a recording as JSON",
        description="Print each stream of a recording, assembled, as JSON (StreamResult.to_wire(interrupted=True): "
        "blocks, usage, finish, and the blocks a cut-off finish left open); invalid streams are reported on "
        "standard error.",
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
    color_option(assemble)
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

    from ._probe_cli import add_command

    add_command(commands, Formatter)
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
        complain("interrupted")
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

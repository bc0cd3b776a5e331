"""``streamfsm probe``: its arguments (:func:`add_command`) and its run (:func:`run`): the cases chosen, the probe
run with a progress bar on a terminal, each case run printed as it ends (a row, or a ``--json`` object), the summary,
``--junit-xml``, and the exit status (0 only when nothing is ``invalid``, ``diverges`` or ``error``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ._cli_report import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Style,
    color_option,
    complain,
    is_terminal,
    json_text,
    wants_color,
)
from ._errors import LlmError

if TYPE_CHECKING:
    import argparse

    from ._probe import CaseRun
    from ._probe_cases import ProbeCase

__all__ = ["PROBE_EXIT_HELP", "add_command", "run"]

#: What ``streamfsm probe --help`` says of the exit status.
PROBE_EXIT_HELP: Final = f"""exit status:
  {EXIT_OK}    every case run is pass or skipped
  {EXIT_INVALID}    at least one is invalid, diverges or error
  {EXIT_USAGE}    a usage error, a cases file that cannot be read, or an endpoint that cannot be probed at all \
(unreachable, a refused key, an unknown model, no event stream, no answer within --deadline)
  130  interrupted (Ctrl-C)"""


def add_command(commands: Any, formatter: type[argparse.HelpFormatter]) -> None:
    """Add the ``probe`` subcommand to the command's subparsers."""
    from ._probe_cases import PROBE_CASES
    from ._probe_wire import APIS

    probe = commands.add_parser(
        "probe",
        help="probe a live endpoint's streaming: each case streamed, checked and compared with the same request "
        "non-streamed",
        epilog=PROBE_EXIT_HELP,
        formatter_class=formatter,
        description="Run a suite of cases against a live endpoint. Each case is streamed with every chunk through "
        "the machine, sent again non-streamed, and the two compared. Verdict per case: pass, invalid (a rule the "
        "stream broke), diverges (the fields that differ from the non-streamed answer), error (HTTP or transport) or "
        f"skipped. The built-in cases: {', '.join(case.name for case in PROBE_CASES)}.",
    )
    probe.add_argument("--api", choices=APIS, default="openai-chat", help="the wire API (default openai-chat)")
    probe.add_argument(
        "--base-url",
        required=True,
        metavar="URL",
        help="the API root: http://localhost:8000/v1 for openai-chat and openai-responses, the host root for "
        "anthropic (/v1/messages is added) and gemini (/v1beta/models/... is added)",
    )
    probe.add_argument("--model", required=True, metavar="NAME", help="the model to ask")
    probe.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="the environment variable holding the key (default: OPENAI_API_KEY, ANTHROPIC_API_KEY or "
        "GEMINI_API_KEY, by --api); unset or empty: no key is sent",
    )
    probe.add_argument(
        "--cases", metavar="FILE", action="append", default=[], help="a JSON file of cases to add (repeatable)"
    )
    probe.add_argument(
        "--case",
        dest="only",
        metavar="NAME",
        action="append",
        default=[],
        help="run only this case (repeatable; built-in or from --cases)",
    )
    probe.add_argument(
        "--temperature",
        type=_temperature,
        metavar="T",
        help="the temperature of every case's request, or 'none' to send none (reasoning models refuse one); "
        "default: each case's own (0, but none for reasoning)",
    )
    probe.add_argument("--repeat", type=int, default=1, metavar="N", help="run each case N times (default 1)")
    probe.add_argument(
        "--record",
        metavar="DIR",
        help="save every successful body in DIR: <case>.sse streamed (streamfsm check DIR replays them), "
        "<case>.json non-streamed",
    )
    probe.add_argument(
        "--deadline",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="the most one request may take, from sending it to its last byte (default 120)",
    )
    probe.add_argument(
        "--json",
        action="store_true",
        help='print JSON lines: one object per case run ("kind": "case"), then a summary ("kind": "summary")',
    )
    probe.add_argument("--junit-xml", metavar="FILE", help="also write the report as JUnit XML to FILE (for CI)")
    probe.add_argument(
        "--no-progress", dest="progress", action="store_false", help="no progress bar (shown on a terminal)"
    )
    color_option(probe)
    probe.set_defaults(run=run)


def _temperature(text: str) -> float | str:
    if text.lower() == "none":
        return "none"
    value = float(text)
    if not value >= 0:
        raise ValueError(text)
    return value


def _cases(args: argparse.Namespace) -> list[ProbeCase]:
    from ._probe_cases import PROBE_CASES, load_probe_cases

    cases = list(PROBE_CASES)
    for path in args.cases:
        cases.extend(load_probe_cases(path))
    if args.only:
        known = {case.name for case in cases}
        unknown = [name for name in args.only if name not in known]
        if unknown:
            raise LlmError(f"no case named {', '.join(map(repr, unknown))}; the cases: {', '.join(known)}", "USAGE")
        cases = [case for case in cases if case.name in args.only]
    if args.temperature is not None:
        temperature = None if args.temperature == "none" else args.temperature
        cases = [case.model_copy(update={"temperature": temperature}) for case in cases]
    return cases


def run(args: argparse.Namespace) -> int:
    """Run ``streamfsm probe`` with its parsed arguments; returns the exit status."""
    import asyncio

    from ._probe import probe
    from ._probe_report import HEADER, format_run, format_summary, junit_xml
    from ._probe_wire import WIRES
    from ._progress import progress

    if args.repeat < 1:
        complain("error: --repeat must be 1 or more")
        return EXIT_USAGE
    if not args.deadline > 0:
        complain("error: --deadline must be a number of seconds above 0")
        return EXIT_USAGE
    try:
        cases = _cases(args)
    except LlmError as exc:
        complain(f"error: {exc.message}")
        return EXIT_USAGE
    key = os.environ.get(args.api_key_env or WIRES[args.api].key_env) or None
    style = Style(wants_color(args.color, sys.stdout))
    show_bar = args.progress and not args.json and is_terminal(sys.stderr)
    heading = f"probing {args.base_url} ({args.api}, model {args.model})\n{style(HEADER, 'bold')}\n"
    with progress(len(cases) * args.repeat, show_bar, wants_color(args.color, sys.stderr), "probing") as bar:

        def ended(case_run: CaseRun) -> None:
            nonlocal heading
            if heading and not args.json:  # written with the first row: an endpoint that cannot be probed has none
                sys.stdout.write(heading)
                heading = ""
            text = json_text(case_run.to_json()) if args.json else format_run(case_run, style)
            sys.stdout.write(text + "\n")
            if bar is not None:
                bar.advance(case_run.case)

        try:
            report = asyncio.run(
                probe(
                    args.base_url,
                    args.model,
                    api=args.api,
                    api_key=key,
                    cases=cases,
                    repeat=args.repeat,
                    record=args.record,
                    deadline=args.deadline,
                    on_run=ended,
                )
            )
        except LlmError as exc:
            complain(f"error: {exc.message}")
            return EXIT_USAGE
        except OSError as exc:  # --record DIR that cannot be written
            complain(f"error: {exc}")
            return EXIT_USAGE
    if args.json:
        sys.stdout.write(json_text(report.to_json()) + "\n")
    else:
        sys.stdout.write("\n" + format_summary(report, style) + "\n")
    if args.junit_xml:
        try:
            Path(args.junit_xml).write_text(junit_xml(report), encoding="utf-8")
        except OSError as exc:
            complain(f"error: cannot write {args.junit_xml}: {exc}")
            return EXIT_USAGE
    return EXIT_OK if report.ok else EXIT_INVALID

"""The probe: a live endpoint's streaming checked case by case (:func:`probe`, ``streamfsm probe``).

Each case (:mod:`._probe_cases`) is streamed with every chunk through the machine, sent again non-streamed, and the
two held against each other (:func:`~._probe_parity.parity`). A case run ends with one verdict
(:class:`CaseRun`): ``pass``; ``invalid`` (the stream broke a rule: its code, chunk and message); ``diverges``
(the fields on which the two answers differ); ``error`` (HTTP or transport: the status and a short body); or
``skipped`` (why). The requests themselves are :mod:`._probe_wire`'s; the report's forms (table, JSON, JUnit XML)
are :mod:`._probe_report`'s.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from ._errors import ErrorCode, LlmError
from ._probe_cases import PROBE_CASES, ProbeCase
from ._probe_parity import Difference, parity
from ._probe_wire import PROVIDER, TRANSPORT_CODES, WIRES, Answered, Endpoint, Streamed, answer_once, stream_once

__all__ = ["VERDICTS", "CaseRun", "ProbeReport", "probe"]

Verdict = Literal["pass", "invalid", "diverges", "error", "skipped"]
#: The verdicts, best first.
VERDICTS: Final[tuple[Verdict, ...]] = ("pass", "skipped", "diverges", "invalid", "error")
#: The verdicts that fail a probe (its exit status, :attr:`ProbeReport.ok`).
FAILING: Final = frozenset({"invalid", "diverges", "error"})
#: Codes with which a server refuses an option: the ``reasoning`` case is then skipped, not an error.
_REFUSED: Final = frozenset({ErrorCode.INVALID_REQUEST, ErrorCode.UNSUPPORTED_REASONING_EFFORT})


@dataclass(frozen=True)
class CaseRun:
    """One run of one case: its verdict, and what it measured.

    ``code``, ``chunk``, ``message`` and ``status`` say what broke (``invalid``, ``error``) or why it was skipped
    (``message``); ``differences`` what diverged; ``content`` whether content could be compared (``"same"``,
    ``"differs"``, ``"unknown"`` when the server answered the request differently twice; None when nothing was
    compared). ``first_chunk`` and ``duration`` are seconds (of the streamed request), ``chunks`` the chunks it
    gave. ``run`` counts from 1 (``--repeat``).
    """

    case: str
    verdict: Verdict
    run: int = 1
    code: str | None = None
    chunk: int | None = None
    message: str | None = None
    status: int | None = None
    differences: tuple[Difference, ...] = ()
    content: str | None = None
    first_chunk: float | None = None
    chunks: int = 0
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        """Not ``invalid``, ``diverges`` or ``error``."""
        return self.verdict not in FAILING

    def to_json(self) -> dict[str, Any]:
        """The run as the ``--json`` object of kind ``case`` (times in milliseconds)."""
        return {
            "kind": "case",
            "case": self.case,
            "run": self.run,
            "verdict": self.verdict,
            "code": self.code,
            "chunk": self.chunk,
            "message": self.message,
            "status": self.status,
            "differences": [d.to_json() for d in self.differences],
            "content": self.content,
            "firstChunkMs": None if self.first_chunk is None else round(self.first_chunk * 1000, 1),
            "chunks": self.chunks,
            "durationMs": round(self.duration * 1000, 1),
        }


@dataclass
class ProbeReport:
    """What :func:`probe` found: every case run, in order, and where."""

    api: str
    base_url: str
    model: str
    runs: list[CaseRun] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Nothing ``invalid``, ``diverges`` or ``error``."""
        return all(run.ok for run in self.runs)

    def counts(self) -> dict[str, int]:
        """How many runs got each verdict (every verdict named, 0 included)."""
        seen = Counter(run.verdict for run in self.runs)
        return {verdict: seen[verdict] for verdict in VERDICTS}

    def verdicts(self) -> dict[str, str]:
        """Each case's worst verdict over its runs: ``{"text": "pass", ...}``."""
        out: dict[str, str] = {}
        for run in self.runs:
            known = out.get(run.case)
            if known is None or VERDICTS.index(run.verdict) > VERDICTS.index(known):
                out[run.case] = run.verdict
        return out

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` summary object (kind ``summary``)."""
        return {
            "kind": "summary",
            "api": self.api,
            "baseUrl": self.base_url,
            "model": self.model,
            "runs": len(self.runs),
            **self.counts(),
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
        }


async def probe(
    base_url: str,
    model: str,
    *,
    api: str = "openai-chat",
    api_key: str | None = None,
    cases: Iterable[ProbeCase] | None = None,
    repeat: int = 1,
    record: str | Path | None = None,
    deadline: float | None = 120.0,
    timeout: float | None = None,
    on_run: Callable[[CaseRun], None] | None = None,
) -> ProbeReport:
    """Probe the endpoint at ``base_url``: run each case (default :data:`~._probe_cases.PROBE_CASES`) ``repeat`` times.

    ``api`` is ``openai-chat``, ``anthropic``, ``openai-responses`` or ``gemini``; ``base_url`` is what that API's
    adapter takes (``http://localhost:8000/v1`` for chat completions and Responses, the root for Anthropic and
    Gemini). ``record`` is a folder where every successful body is saved (``<case>.sse`` streamed, which
    ``streamfsm check`` replays; ``<case>.json`` non-streamed). ``deadline`` bounds each request (seconds, from
    sending it to its last byte), ``timeout`` each connect (10 s at most) and read (default: the deadline alone).
    ``on_run`` is called with each run as it ends.

    Returns the :class:`ProbeReport`. Raises :class:`LlmError` when the endpoint cannot be probed at all: the first
    case's stream failed before its first chunk (unreachable, refused key, unknown model, a body that is not an
    event stream, a server that does not answer within ``deadline``): the error says why, in one line.
    """
    if api not in WIRES:
        raise LlmError(f"unknown api {api!r}: one of {', '.join(WIRES)}", ErrorCode.INVALID_REQUEST)
    if repeat < 1:
        raise LlmError(f"repeat must be 1 or more, got {repeat}", ErrorCode.INVALID_REQUEST)
    folder = None if record is None else Path(record)
    endpoint = Endpoint(WIRES[api], base_url.rstrip("/"), model, api_key, deadline, timeout, folder is not None)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    report = ProbeReport(api, endpoint.base_url, model)
    started = time.perf_counter()
    for case in PROBE_CASES if cases is None else cases:
        for number in range(1, repeat + 1):
            run, first = await _run(endpoint, case, number, folder)
            if not report.runs and not run.ok and first.error is not None and not first.chunks:
                raise _unreachable(endpoint, first.error)
            report.runs.append(run)
            if on_run is not None:
                on_run(run)
    report.seconds = time.perf_counter() - started
    return report


def _unreachable(endpoint: Endpoint, error: LlmError) -> LlmError:
    return LlmError(
        f"{endpoint.base_url} cannot be probed as {endpoint.wire.name} with model {endpoint.model!r}: {_said(error)}",
        error.code,
        status=error.status,
    )


async def _run(endpoint: Endpoint, case: ProbeCase, number: int, folder: Path | None) -> tuple[CaseRun, Streamed]:
    """One run of ``case``: its verdict, and its (first) stream."""
    stem = case.name if number == 1 else f"{case.name}-{number}"
    if case.mode == "abort":
        return await _abort(endpoint, case, number, folder, stem)
    if case.mode == "concurrent":
        return await _concurrent(endpoint, case, number, folder, stem)
    streamed = await stream_once(endpoint, case)
    _save(folder, stem + ".sse", streamed)
    timing = _timing(streamed)
    if streamed.error is not None:
        if case.needs_reasoning and not streamed.chunks and streamed.error.code in _REFUSED:
            why = f"the server refused the reasoning effort: {_said(streamed.error)}"
            return _skipped(case, number, why), streamed
        return _failed(case, number, streamed, timing), streamed
    answered = await answer_once(endpoint, case)
    _save(folder, stem + ".json", answered)
    if answered.error is not None or answered.result is None:
        return _answer_failed(case, number, answered, timing), streamed
    assert streamed.result is not None
    if case.needs_reasoning and not (streamed.result.reasoning or answered.result.reasoning):
        return _skipped(case, number, "the model did not reason (no reasoning in either answer)", timing), streamed
    found = parity(streamed.result, answered.result, input_tokens=case.input_tokens)
    if any(d.content for d in found.differences):  # nondeterministic? ask once more
        again = await answer_once(endpoint, case)
        _save(folder, stem + ".again.json", again)
        if again.result is not None:
            found = parity(streamed.result, answered.result, again=again.result, input_tokens=case.input_tokens)
    verdict: Verdict = "pass" if found.ok else "diverges"
    message = None
    if found.content == "unknown":
        message = "content parity unknown: two non-streamed answers to the request differ"
    return (
        CaseRun(
            case.name,
            verdict,
            number,
            differences=found.differences,
            content=found.content,
            message=message,
            **timing,
        ),
        streamed,
    )


async def _abort(
    endpoint: Endpoint, case: ProbeCase, number: int, folder: Path | None, stem: str
) -> tuple[CaseRun, Streamed]:
    """Close the stream after ``case.abort_after`` chunks; then the same request must stream whole."""
    cut = await stream_once(endpoint, case, stop_after=case.abort_after)
    if cut.error is not None:
        return _failed(case, number, cut, _timing(cut)), cut
    whole = await stream_once(endpoint, case)
    _save(folder, stem + ".sse", whole)
    timing = _timing(whole)
    if whole.error is not None:
        run = _failed(case, number, whole, timing)
        return replace(run, message=f"after a stream closed at chunk {cut.chunks}: {run.message}"), cut
    note = f"closed after {cut.chunks} chunk(s); the next request streamed whole"
    return CaseRun(case.name, "pass", number, message=note, **timing), cut


async def _concurrent(
    endpoint: Endpoint, case: ProbeCase, number: int, folder: Path | None, stem: str
) -> tuple[CaseRun, Streamed]:
    """``case.streams`` streams at once, each valid."""
    runs = await asyncio.gather(*(stream_once(endpoint, case) for _ in range(case.streams)))
    for position, streamed in enumerate(runs):
        _save(folder, f"{stem}.{position}.sse", streamed)
    timing: dict[str, Any] = {
        "first_chunk": min((s.first_chunk for s in runs if s.first_chunk is not None), default=None),
        "chunks": sum(s.chunks for s in runs),
        "duration": max(s.duration for s in runs),
    }
    for position, streamed in enumerate(runs):
        if streamed.error is not None:
            run = _failed(case, number, streamed, timing)
            message = f"stream {position + 1} of {len(runs)}: {run.message}"
            return replace(run, message=message), runs[0]
    return CaseRun(case.name, "pass", number, message=f"{len(runs)} streams at once", **timing), runs[0]


def _timing(streamed: Streamed) -> dict[str, Any]:
    return {"first_chunk": streamed.first_chunk, "chunks": streamed.chunks, "duration": streamed.duration}


def _failed(case: ProbeCase, number: int, streamed: Streamed, timing: dict[str, Any]) -> CaseRun:
    """The verdict of a stream that failed: ``invalid`` when a chunk broke a rule or the stream was cut or
    malformed; ``error`` for HTTP and transport failures, and for a body that never gave a chunk."""
    error = streamed.error
    assert error is not None
    transport = error.code in TRANSPORT_CODES or (not streamed.chunks and error.code == ErrorCode.MALFORMED_RESPONSE)
    verdict: Verdict = "invalid" if streamed.protocol or not transport else "error"
    return CaseRun(
        case.name,
        verdict,
        number,
        code=str(error.code),
        chunk=error.chunk_index,
        message=_said(error),
        status=error.status,
        **timing,
    )


def _answer_failed(case: ProbeCase, number: int, answered: Answered, timing: dict[str, Any]) -> CaseRun:
    error = answered.error
    assert error is not None
    return CaseRun(
        case.name,
        "error",
        number,
        code=str(error.code),
        message=f"the non-streamed request: {_said(error)}",
        status=error.status,
        **timing,
    )


def _skipped(case: ProbeCase, number: int, why: str, timing: dict[str, Any] | None = None) -> CaseRun:
    return CaseRun(case.name, "skipped", number, message=_one_line(why), **(timing or {}))


def _save(folder: Path | None, name: str, done: Streamed | Answered) -> None:
    if folder is not None:
        done.capture.save(folder / name)


#: The most of a message a verdict keeps (characters).
MESSAGE_CHARS: Final = 300


def _said(error: LlmError) -> str:
    """What ``error`` says, in one line, without the adapters' provider name before it."""
    return _one_line(error.message.removeprefix(f"{PROVIDER}: "))


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 1] + "\u2026"

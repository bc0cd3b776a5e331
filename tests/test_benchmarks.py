"""The benchmarks (``benchmarks/``) still work: ``python -m benchmarks --smoke`` runs, checks every contender's
output and writes its report; the corpus section generates what it says and measures the command's own process.

No timing assertions: a smoke run only proves the harness still works (every workload, every
installed peer, the content checks, the report). Peers are optional: without them it still passes.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import streamfsm as sf
from benchmarks import corpus
from benchmarks.workloads import to_jsonl, typical_turn

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("bench")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--smoke", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc, out


@pytest.mark.slow  # the smoke run: every workload of python -m benchmarks
def test_smoke_run_exits_cleanly(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, _ = smoke
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"


@pytest.mark.slow  # the smoke run: every workload of python -m benchmarks
def test_smoke_run_prints_the_tables(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, _ = smoke
    out = proc.stdout
    assert "### Results: chunk dicts" in out
    assert "### Results: JSON lines" in out
    assert "### Targets" in out
    assert "### Peak memory" in out
    assert "| bare loop" in out and "streamfsm assemble()" in out and "streamfsm feed()" in out
    assert "streamfsm assemble_jsonl()" in out
    # The floors: what the result objects alone cost, beside the fixed cost of a stream.
    assert "bare loop + result models" in out and "bare loop + plain result objects" in out
    assert "the result models alone" in out and "plain slotted objects instead" in out
    for workload in ("typical", "text-", "args-", "short"):
        assert f"| {workload}" in out, workload
    # Every target row carries a verdict.
    assert "PASS" in out or "FAIL" in out


@pytest.mark.slow  # the smoke run: every workload of python -m benchmarks
def test_validate_jsonl_is_timed_next_to_assemble_jsonl(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """The check-only path is a contender of the JSON-lines table, with its ratio to orjson and its targets on the
    session logs, the providers' recordings and the typical turn."""
    proc, _ = smoke
    out = proc.stdout
    assert "streamfsm validate_jsonl()" in out
    assert "assemble_jsonl ÷ orjson" in out and "validate_jsonl ÷ orjson" in out
    rows = [line for line in out.splitlines() if line.startswith("| validate_jsonl() vs orjson.loads of the lines")]
    assert [row.split("|")[2].strip() for row in rows] == ["recordings", "provider-recordings", "typical"]
    assert [row.split("|")[3].strip() for row in rows] == ["≤ 1.25\u00d7", "≤ 1.25\u00d7", "≤ 1.50\u00d7"]
    assert "| provider-recordings" in out


@pytest.mark.slow  # the smoke run: every workload of python -m benchmarks
def test_the_corpus_section_runs(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """``--smoke`` runs the corpus section at its smoke sizes: whole ``streamfsm check`` processes at -j 1, 2 and
    automatic (each checked against the corpus), local disk against memory:// (or why not), peak memory."""
    proc, out_dir = smoke
    out = proc.stdout
    assert "### Corpus: `streamfsm check` over whole corpora" in out
    for row in ("| logs ", "| small ", "| big "):
        assert row in out, row
    assert "local disk against `memory://`" in out
    assert "Peak memory of `streamfsm check` against the largest stream" in out
    assert "constant (a tiny file of the kind)" in out
    assert "peak memory of check vs the largest stream" in out and "-j auto not slower than -j 1" in out
    assert "Corpus checks: every `streamfsm check` run found" in out
    report = (out_dir / "RESULTS.md").read_text(encoding="utf-8")
    assert "### Method of the corpus section" in report
    if (out_dir / "ns_per_chunk.png").exists():
        assert (out_dir / "corpus.png").exists() and "corpus.png" in report


@pytest.mark.slow  # the smoke run: every workload of python -m benchmarks
def test_the_converters_run_next_to_their_sdks(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """The Responses and Gemini converters are timed (and content-checked) on every STRICT workload, each next to
    its SDK's own handling of the same events when that SDK is installed."""
    proc, _ = smoke
    out = proc.stdout
    assert "streamfsm from_openai_responses_events()" in out and "streamfsm from_gemini_chunks()" in out
    for module, label in (("openai", "openai ResponseStreamState"), ("google.genai", "google-genai")):
        if importlib.util.find_spec(module.split(".")[0]) is not None and importlib.util.find_spec(module):
            assert label in out, label
            assert f"(streamfsm from_{'openai_responses_events' if module == 'openai' else 'gemini_chunks'}())" in out


def test_checked_runs_next_to_the_sdks_making_its_objects(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """``sf.checked()`` over each installed SDK's objects is timed (and content-checked) next to that SDK's making
    of the same objects, and the target row compares them."""
    proc, _ = smoke
    for dist, what in (("openai", "ChatCompletionChunk"), ("anthropic", "RawMessageStreamEvent")):
        if importlib.util.find_spec(dist) is not None:
            assert f"streamfsm checked() over {dist}'s {what}s" in proc.stdout
            assert f"{dist}: make each {what} (construct_type)" in proc.stdout
            assert f"typical ({dist})" in proc.stdout


@pytest.mark.parametrize("finish", ["stop", "tool-calls", "max-tokens"])
def test_the_wire_api_events_of_a_workload_convert_to_its_content(finish: str) -> None:
    """What the converter contenders are fed (benchmarks/workloads.py) is each wire API's documented stream: it
    converts, under STRICT, to exactly the workload's content (text, reasoning, calls) and finish."""
    import streamfsm as sf
    from benchmarks.peers import streamfsm_content
    from benchmarks.workloads import _tail, _text_block, _tool_block, gemini_chunks, reference, responses_events

    stream = _text_block(0, ["Let me", " think", " — café"], "reasoning") + _text_block(1, ["流式", " text"])
    if finish == "tool-calls":
        # Compact JSON, as every workload's arguments: Gemini sends a call's args as an object, written back so.
        stream += _tool_block(2, "call_1", "bash", ['{"command":', '"ls"', "}"])
        stream += _tool_block(3, "call_2", "read", ['{"path":"a"}'])
    stream += _tail(finish, 9)
    want = reference(stream)
    sf.assemble(stream, policy=sf.Policy.STRICT)  # the workload itself is valid
    for convert, events in (
        (sf.from_openai_responses_events, responses_events),
        (sf.from_gemini_chunks, gemini_chunks),
    ):
        result = sf.assemble(convert(events(stream)), policy=sf.Policy.STRICT)
        assert want.diff(streamfsm_content(result)) is None, convert.__name__
        assert result.finish.kind == finish, convert.__name__


@pytest.mark.slow  # the smoke run: every workload of python -m benchmarks
def test_smoke_run_writes_results_md(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, out = smoke
    report = (out / "RESULTS.md").read_text(encoding="utf-8")
    for section in (
        "# streamfsm benchmarks",
        "## Environment",
        "## Peers",
        "## Workloads",
        "## Method",
        "## Results",
        "### Targets",
        "### Peak memory",
        "### Content checks",
        "## Plot",
    ):
        assert section in report, section
    assert "- Machine:" in report and "- Python:" in report and "- Date:" in report and "- streamfsm:" in report
    # The smoke run does not overwrite the committed benchmarks/RESULTS.md.
    assert out.resolve() != (REPO / "benchmarks").resolve()


@pytest.mark.slow  # the smoke run: every workload of python -m benchmarks
def test_missing_peers_are_reported(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, out = smoke
    report = (out / "RESULTS.md").read_text(encoding="utf-8")
    from benchmarks.peers import PEERS

    for dist, _module, _adapter in PEERS:
        assert f"- {dist}" in report, dist  # installed (with its version) or MISSING (with the reason)


@pytest.mark.slow  # the smoke run: every workload of python -m benchmarks
def test_plot_written_or_its_absence_explained(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, out = smoke
    report = (out / "RESULTS.md").read_text(encoding="utf-8")
    if (out / "ns_per_chunk.png").exists():
        assert "ns_per_chunk.png" in report
    else:
        assert "matplotlib is not installed" in report


def test_instruction_counts_without_valgrind(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m benchmarks.instructions`` says what it needs instead of failing (valgrind runs are too slow here)."""
    from benchmarks import instructions

    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    assert instructions.main([]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err


def test_the_pure_copy_of_the_package_runs_the_machine_as_plain_python() -> None:
    """``benchmarks.instructions_jsonl`` times the pure machine beside the compiled one: a copy of the package
    without its compiled modules, first on a child interpreter's path."""
    from benchmarks import instructions_jsonl

    script = "import sys; sys.path.insert(0, sys.argv[1]); from streamfsm import _machine; print(_machine.__file__)"
    with instructions_jsonl.pure_copy() as where:
        done = subprocess.run([sys.executable, "-c", script, where], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(Path(where) / "streamfsm" / "_machine.py")


def test_instruction_counts_are_read_from_valgrinds_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import instructions

    counts = {"0": "1,000,000", "4": "9,000,000"}

    def fake_run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        assert cmd[:2] == ["valgrind", "--tool=callgrind"] and cmd[-2] in ("short", "typical")
        return subprocess.CompletedProcess(cmd, 0, "", f"==1== I   refs:      {counts[cmd[-1]]}\n")

    monkeypatch.setattr(instructions.shutil, "which", lambda name: "/usr/bin/valgrind")
    monkeypatch.setattr(instructions.subprocess, "run", fake_run)
    assert instructions.instructions("short", 4) - instructions.instructions("short", 0) == 8_000_000


@pytest.mark.parametrize(
    ("peak", "spread", "verdict"),
    [(100_000 + 29_000, 132_000, "PASS"), (100_000 + 29_000, 0, "FAIL"), (100_000 + 14_000, 0, "PASS")],
    ids=["over by less than the constant's spread", "over, and no spread", "within 1.5x the stream"],
)
def test_a_peak_within_the_constants_own_spread_is_at_the_constant(peak: int, spread: int, verdict: str) -> None:
    """The corpus section's memory target: (peak - constant) / largest stream <= 1.5; a file of streams smaller than
    what peak RSS moves by between runs is at its constant when its peak is within the constant's spread."""
    from benchmarks import corpus

    def proc(rss: int) -> Any:
        return corpus.Proc(0, 1.0, 1.0, rss, "", "")

    row = corpus.MemoryRow("session log", 50 << 20, 9_700, 12_795, proc(peak), None, proc(100_000), spread)
    result = corpus.CorpusResult(corpus.FULL, [], [], [row], {}, None, 1.0, [])
    (target,) = corpus.targets(result)
    assert target.verdict == verdict
    assert ("within its own spread over 3 runs" in target.measured) == (verdict == "PASS" and spread > 0)


@pytest.mark.slow
def test_provider_memory_quick_run_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import provider_memory

    assert provider_memory.main(["--quick"]) == 0
    table = capsys.readouterr().out
    assert "| held (Gemini), 16 times the limit sent |" in table and "| event JSON: a string |" in table


# ====================================================================================================================
# The corpus section of the benchmarks (``benchmarks/corpus.py``): what it generates is what it says, and what it
# measures is the command's own process. The section itself runs in ``python -m benchmarks --smoke`` (above).
# ====================================================================================================================


@pytest.fixture(scope="module")
def sessions() -> list[corpus._Session]:
    return corpus._sessions()


def test_the_one_stream_file_is_one_valid_stream_of_the_size_asked(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    size = corpus.make_one_stream(path, 200_000)
    assert 200_000 - 200 <= size <= 200_000
    result = sf.assemble_jsonl(path.read_bytes(), policy=sf.Policy.STRICT)
    assert [b.type for b in result.blocks] == ["text"]
    assert result.finish.kind == "stop"


def test_the_packed_row_file_is_one_valid_stream_of_the_size_asked(tmp_path: Path) -> None:
    path = tmp_path / "row.jsonl"
    size, stream = corpus.make_packed_row(path, 200_000)
    assert 200_000 - 500 <= size == path.stat().st_size <= 200_000
    assert 0 < stream < size
    (only,) = sf.read_session(str(path))
    assert only.members is not None and max(only.members) > 20_000  # the deltas are one row's members
    report = corpus._check_file()(str(path), "auto", corpus.POLICY)
    assert [s.ok for s in report.streams] == [True]


def test_a_session_log_holds_the_streams_it_is_said_to(tmp_path: Path, sessions: list[corpus._Session]) -> None:
    """Whole sessions' turns after one header: every stream whole and valid, counted as the checker counts them."""
    path = tmp_path / "log.jsonl"
    made, largest = corpus.make_session_log(path, 400_000, sessions)
    assert made.size == path.stat().st_size <= 400_000
    report = corpus._check_file()(str(path), "auto", corpus.POLICY)
    assert report.error is None and report.format == "harness-session"
    assert len(report.streams) == made.streams > 0
    assert all(s.ok for s in report.streams)
    assert 0 < largest < made.size


def test_the_logs_corpus_reference_counts_every_session(tmp_path: Path, sessions: list[corpus._Session]) -> None:
    made = corpus.make_logs(tmp_path, 3, sessions)
    assert made.files == len(list((tmp_path / "logs").iterdir())) == 3
    assert made.streams == sum(s.streams for s in sessions[:3])


def test_peak_memory_is_the_commands_not_this_process(tmp_path: Path) -> None:
    """The command's peak RSS is measured through a small wrapper: a child forked from a big process would
    report at least that process's size (Linux keeps the high-water mark across exec)."""
    tiny = tmp_path / "tiny.jsonl"
    tiny.write_bytes(to_jsonl(typical_turn().streams[0]) + b"\n")
    held = b"x" * (400 * 1024 * 1024)  # resident in this process while the command runs
    proc = corpus.run_check(["-q", "--no-progress", "-j", "1", str(tiny)], tmp_path)
    del held
    assert proc.status == 0, proc.stderr
    assert 0 < proc.rss < 300 * 1024 * 1024  # a streamfsm process is tens of MiB; this one holds 400
    assert proc.cpu > 0 and proc.wall > 0
    right = corpus.Corpus("tiny", "", [tiny], 1, tiny.stat().st_size, 1, 0)
    assert corpus._verify(proc, right) is None
    wrong = corpus.Corpus("tiny", "", [tiny], 1, tiny.stat().st_size, 2, 0)
    assert "expected 2" in (corpus._verify(proc, wrong) or "")


def test_memory_urls_are_measured_or_said_to_need_the_cloud_extra(tmp_path: Path) -> None:
    """Without fsspec or URL support, the in-process comparison says what it needs instead of failing."""
    folder = tmp_path / "few"
    folder.mkdir()
    for k in range(3):
        (folder / f"{k}.jsonl").write_bytes(to_jsonl(typical_turn().streams[0]) + b"\n")
    done = corpus.in_process([str(folder)], 1)
    assert done["status"] == "ok" or done["status"].startswith("needs streamfsm[cloud]")
    if done["corpora"]:
        (entry,) = done["corpora"]
        assert entry["files"] == 3 and entry["streams"] == 3 and entry["local"] > 0
        if done["status"] == "ok":
            assert entry["check"] is None and entry["memory"] > 0

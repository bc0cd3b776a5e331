"""The corpus section of the benchmarks (``benchmarks/corpus.py``): what it generates is what it says, and what
it measures is the command's own process. The section itself runs in ``python -m benchmarks --smoke``
(``tests/test_benchmarks_smoke.py``). No timing assertions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import streamfsm as sf
from benchmarks import corpus
from benchmarks.workloads import to_jsonl, typical_turn


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

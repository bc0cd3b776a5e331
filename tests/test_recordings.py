"""Every recorded DeepSeek Harness stream gives the outcome SPEC §4 states."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import streamfsm as sf

from .conftest import SESSIONS

pytestmark = pytest.mark.skipif(
    not SESSIONS.is_dir(), reason=f"the recordings folder {SESSIONS} is absent (it lives in ../shared)"
)

#: The two recordings SPEC §4 names as rejected under Policy.HARNESS, with their codes.
HARNESS_REJECTS = {
    "acp-agent--snapshots--cancel.jsonl": sf.ErrorCode.STREAM_TRUNCATED,
    "test-support--acp-snapshot--fixtures--suite--plain-turn.jsonl": sf.ErrorCode.BLOCK_NOT_OPEN,
}


def session_files() -> list[Path]:
    return sorted(SESSIONS.glob("*.jsonl")) if SESSIONS.is_dir() else []


def outcome(stream: sf.RecordedStream, policy: sf.Policy) -> str:
    try:
        sf.assemble(stream.chunks, policy=policy)
    except sf.LlmError as exc:
        return str(exc.code)
    return "ok"


@pytest.mark.parametrize("path", session_files(), ids=lambda p: p.stem)
def test_session_under_harness(path: Path) -> None:
    streams = list(sf.read_session(path))  # some logs record no model stream at all
    outcomes = [outcome(s, sf.Policy.HARNESS) for s in streams]
    expected = HARNESS_REJECTS.get(path.name)
    if expected is None:
        assert outcomes == ["ok"] * len(streams)
    else:
        assert outcomes and outcomes[-1] == expected
        assert outcomes[:-1] == ["ok"] * (len(streams) - 1)


def test_totals_match_spec() -> None:
    """283 streams; under STRICT 136 interleave; under HARNESS all but the two named are accepted."""
    strict: Counter[str] = Counter()
    harness: Counter[str] = Counter()
    for path in session_files():
        for stream in sf.read_session(path):
            strict[outcome(stream, sf.Policy.STRICT)] += 1
            harness[outcome(stream, sf.Policy.HARNESS)] += 1
    assert sum(strict.values()) == sum(harness.values()) == 283
    assert strict["BLOCKS_INTERLEAVED"] == 136
    assert harness == Counter({"ok": 281, "STREAM_TRUNCATED": 1, "BLOCK_NOT_OPEN": 1})


def test_positions_and_line_numbers_of_the_rejects() -> None:
    cancel = list(sf.read_session(SESSIONS / "acp-agent--snapshots--cancel.jsonl"))[-1]
    assert not cancel.finished
    with pytest.raises(sf.LlmError) as info:
        sf.assemble(cancel.chunks, policy=sf.Policy.HARNESS)
    assert info.value.chunk_index == len(cancel.chunks) == 2

    plain = SESSIONS / "test-support--acp-snapshot--fixtures--suite--plain-turn.jsonl"
    (stream,) = sf.read_session(plain)
    with pytest.raises(sf.LlmError) as info:
        sf.assemble(stream.chunks, policy=sf.Policy.HARNESS)
    assert info.value.chunk_index == 0
    line = plain.read_text().splitlines()[stream.lines[0] - 1]
    assert '"text-delta"' in line


def test_recorded_content_is_assembled() -> None:
    """The block-end of a recording carries the block: the result holds exactly those blocks."""
    path = SESSIONS / "acp-agent--snapshots--bash-tool-turn.jsonl"
    first, second = sf.read_session(path)
    result = sf.assemble(first.chunks, policy="harness")
    assert result.finish.kind == "tool-calls"
    (call,) = result.tool_calls
    assert call.name == "bash"
    assert call.parsed_arguments["command"] == "echo TERMINAL_OK"
    assert result.reasoning.startswith("The user wants me to run")
    assert result.usage is not None and result.usage.reasoning_tokens == 18
    assert sf.assemble(second.chunks, policy="harness").text == "DONE"
    assert (first.turn, first.step, second.step) == (1, 1, 2)

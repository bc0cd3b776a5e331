"""Every recorded DeepSeek Harness stream, read in full (packed rows expanded), gives the outcome SPEC §4 states."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import streamfsm as sf

from ..data import SESSIONS

#: The streams SPEC §4 names as rejected under Policy.HARNESS: (file, stream number) -> (code, line).
HARNESS_REJECTS = {
    ("acp-agent--snapshots--cancel.jsonl", 0): (sf.ErrorCode.STREAM_TRUNCATED, 12),
    ("test-support--acp-snapshot--fixtures--suite--plain-turn.jsonl", 0): (sf.ErrorCode.BLOCK_NOT_OPEN, 3),
    # Defects of upstream's fixtures: a block-end that differs from what its deltas assembled.
    ("acp-agent--snapshots--persistent-pwsh-tool-turn.jsonl", 0): (sf.ErrorCode.BLOCK_CONTENT_MISMATCH, 15),
    ("web--snapshots--goal-multi-turn-actions.jsonl", 2): (sf.ErrorCode.BLOCK_CONTENT_MISMATCH, 52),
    ("web--snapshots--goal-multi-turn-actions.jsonl", 11): (sf.ErrorCode.BLOCK_CONTENT_MISMATCH, 178),
}


def session_files() -> list[Path]:
    return sorted(SESSIONS.glob("*.jsonl"))


def outcome(stream: sf.RecordedStream, policy: sf.Policy) -> str:
    try:
        sf.assemble(stream.chunks, policy=policy)
    except sf.LlmError as exc:
        return str(exc.code)
    return "ok"


def test_the_recordings_are_in_the_repository() -> None:
    assert len(session_files()) == 121
    assert (SESSIONS / "LICENSE").is_file()


@pytest.mark.parametrize("path", session_files(), ids=lambda p: p.stem)
def test_session_under_harness(path: Path) -> None:
    for stream in sf.read_session(path):  # some logs record no model stream at all
        expected = HARNESS_REJECTS.get((path.name, stream.number))
        if expected is None:
            assert outcome(stream, sf.Policy.HARNESS) == "ok", stream.number
            continue
        code, line = expected
        with pytest.raises(sf.LlmError) as info:
            sf.assemble(stream.chunks, policy=sf.Policy.HARNESS)
        assert info.value.code == code
        at = min(info.value.chunk_index or 0, len(stream.chunks) - 1)
        assert stream.lines[at] == line


def test_totals_match_spec() -> None:
    """283 streams of 11,611 chunks, every one read; HARNESS accepts all but the five SPEC §4 names."""
    strict: Counter[str] = Counter()
    harness: Counter[str] = Counter()
    chunks = packed = 0
    for path in session_files():
        for stream in sf.read_session(path):
            chunks += len(stream.chunks)
            packed += sum(1 for m in stream.members or () if m)
            strict[outcome(stream, sf.Policy.STRICT)] += 1
            harness[outcome(stream, sf.Policy.HARNESS)] += 1
    assert sum(strict.values()) == sum(harness.values()) == 283
    assert chunks == 11_611
    assert packed == 11_611 - 1_609  # every chunk not on an assistant/chunk line came from a packed row
    assert harness == Counter({"ok": 278, "BLOCK_CONTENT_MISMATCH": 3, "STREAM_TRUNCATED": 1, "BLOCK_NOT_OPEN": 1})
    assert strict == Counter(
        {
            "ok": 142,
            "BLOCKS_INTERLEAVED": 136,
            "USAGE_MISSING": 2,
            "STREAM_TRUNCATED": 1,
            "BLOCK_NOT_OPEN": 1,
            "BLOCK_CONTENT_MISMATCH": 1,
        }
    )


def test_a_mismatch_inside_a_packed_row_is_named_by_line_and_member() -> None:
    path = SESSIONS / "web--snapshots--goal-multi-turn-actions.jsonl"
    streams = list(sf.read_session(path))
    stream = streams[2]
    with pytest.raises(sf.LlmError) as info:
        sf.assemble(stream.chunks, policy=sf.Policy.HARNESS)
    assert "they first differ at character 107" in info.value.message
    # The deltas before the block-end came from packed rows: each knows its line and member.
    deltas = [i for i, m in enumerate(stream.members or ()) if m]
    assert deltas
    first = deltas[0]
    assert stream.where(first).startswith(f"{path}:{stream.lines[first]} (member 1 of the reasoning-chunks row)")


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


def test_packed_deltas_assemble_what_their_block_end_carries() -> None:
    """A packed row's members are the deltas, in order: joined, they are the block-end's text."""
    path = SESSIONS / "acp-agent--snapshots--packed-chunks.jsonl"
    streams = list(sf.read_session(path))
    assert any(stream.members and any(stream.members) for stream in streams)
    for stream in streams:
        result = sf.assemble(stream.chunks, policy="harness")
        deltas: dict[int, list[str]] = {}
        for chunk in stream.chunks:
            if chunk["type"] in ("text-delta", "reasoning-delta"):
                deltas.setdefault(chunk["index"], []).append(chunk["text"])
            elif chunk["type"] == "tool-call-delta":
                deltas.setdefault(chunk["index"], []).append(chunk["argumentsDelta"])
        for index, parts in deltas.items():
            block = result.blocks[index]
            if isinstance(block, sf.ToolCallBlock):
                assert "".join(parts) == block.arguments
            else:
                assert isinstance(block, sf.TextBlock | sf.ReasoningBlock) and "".join(parts) == block.text

"""Streams from DeepSeek Harness's own spec files get upstream's verdict under HARNESS (issue 12, SPEC §4).

The cases and where they come from are in :mod:`tests.protocol.upstream_cases`. Under ``Policy.HARNESS`` each stream is
accepted or rejected as upstream's validator decides (with the code SPEC §3 gives), except where a documented
corruption check applies; an accepted stream's result holds what the stream sent. Where SPEC makes the
STRICT verdict plain, that is checked too.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import streamfsm as sf

from .upstream_cases import CASES, UNCHECKED, Expect, UpstreamCase

#: The corruption checks SPEC §4 adds to upstream's validator under HARNESS.
CORRUPTION_CHECKS = {"BLOCK_CONTENT_MISMATCH", "INDEX_OUT_OF_ORDER", "CHUNK_AFTER_USAGE", "TOOL_CALL_CONFLICT"}
#: The block types of SPEC §1: a result holds them typed, not as plain dicts.
KNOWN_BLOCK_TYPES = {"text", "reasoning", "tool-call", "image"}


def _run(case: UpstreamCase, policy: sf.Policy) -> sf.StreamResult | sf.LlmError:
    """The case's stream (a fresh copy) through ``assemble``: its result, or the error it raised."""
    try:
        return sf.assemble(copy.deepcopy(list(case.chunks)), policy=policy)
    except sf.LlmError as err:
        return err


def _without_none(value: Any) -> Any:
    """A wire dict with ``None`` fields left out (SPEC §5: optional fields are left out or ``None``)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value


def _wire(block: Any) -> Any:
    """A result block in wire form: a typed block's ``to_wire()``, a block of an unknown type as it came."""
    return block if isinstance(block, dict) else block.to_wire()


def _check_verdict(outcome: sf.StreamResult | sf.LlmError, code: str | None, at: int | None) -> None:
    """``outcome`` is acceptance (``code`` None) or an ``LlmError`` with ``code`` at chunk ``at``."""
    if code is None:
        assert not isinstance(outcome, sf.LlmError), f"rejected: {outcome.code}: {outcome.message}"
        return
    assert isinstance(outcome, sf.LlmError), f"accepted; expected {code}"
    assert (outcome.code, outcome.chunk_index) == (code, at), outcome.message


def _check_result(result: sf.StreamResult, expect: Expect) -> None:
    """The result holds the blocks, usage, finish and interrupted blocks the stream sent, as they came."""
    wire = result.to_wire()
    assert wire["blocks"] == list(expect.blocks)
    assert _without_none(wire["usage"]) == expect.usage
    assert _without_none(wire["finish"]) == expect.finish
    assert result.finish.kind == expect.finish["kind"]
    assert [_wire(block) for block in result.interrupted] == list(expect.interrupted)
    known = [b for b in result.blocks if _wire(b)["type"] in KNOWN_BLOCK_TYPES]
    assert not any(isinstance(b, dict) for b in known), "a block of a known type is typed"
    assert result.text == "".join(b["text"] for b in expect.blocks if b["type"] == "text")
    assert result.reasoning == "".join(b["text"] for b in expect.blocks if b["type"] == "reasoning")
    assert [call.arguments for call in result.tool_calls] == [
        b["arguments"] for b in expect.blocks if b["type"] == "tool-call"
    ]


def test_cases_are_consistent() -> None:
    """Each case states one verdict: HARNESS differs from upstream only through a named corruption check."""
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))
    for case in CASES:
        assert case.upstream in {"valid", "invalid"}, case.name
        assert bool(case.upstream_error) == (case.upstream == "invalid"), case.name
        assert (case.harness is None) == (case.at is None), case.name
        assert (case.expect is not None) == (case.harness is None), case.name
        if case.corruption_check:
            assert case.upstream == "valid" and case.harness == case.corruption_check, case.name
            assert case.corruption_check in CORRUPTION_CHECKS and case.corruption_reason, case.name
        else:
            assert (case.harness is None) == (case.upstream == "valid"), case.name
        if case.strict != UNCHECKED:
            assert (case.strict is None) == (case.strict_at is None), case.name


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_harness_gives_upstream_verdict(case: UpstreamCase) -> None:
    """Under HARNESS the stream gets upstream's verdict (or its corruption check), and its content is kept."""
    outcome = _run(case, sf.Policy.HARNESS)
    _check_verdict(outcome, case.harness, case.at)
    if case.expect is not None:
        assert isinstance(outcome, sf.StreamResult)
        _check_result(outcome, case.expect)


STRICT_CASES = [case for case in CASES if case.strict != UNCHECKED]


@pytest.mark.parametrize("case", STRICT_CASES, ids=[case.name for case in STRICT_CASES])
def test_strict_verdict(case: UpstreamCase) -> None:
    """Under STRICT the stream gets the verdict SPEC §2 and §3 give; when it is accepted, its content is kept."""
    outcome = _run(case, sf.Policy.STRICT)
    _check_verdict(outcome, case.strict, case.strict_at)
    if case.strict is None:
        assert case.expect is not None and isinstance(outcome, sf.StreamResult)
        _check_result(outcome, case.expect)

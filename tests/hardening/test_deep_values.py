"""A message that quotes input never fails and never grows with it (``streamfsm._quote.quote``).

A JSON value a thousand levels deep is valid (orjson reads 1,024 levels), and ``repr`` of it raises
``RecursionError``: ``check``'s text of the offending chunk and the converters' ``{value!r}`` messages used to end
in a traceback, the files after it unchecked, and ``sf.check_file`` raised. Every message that quotes input now
goes through one bounded ``repr``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm._quote import QUOTE_MAX, quote
from streamfsm._recordings import ECHO_BYTES

from ..data import MORE_PROVIDER_STREAMS

#: Deeper than Python's recursion limit, within orjson's 1,024 levels.
DEPTH = 1_020


def deep_list(depth: int = DEPTH) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def deep_text(depth: int = DEPTH) -> str:
    return "[" * depth + "1" + "]" * depth


# -- quote ------------------------------------------------------------------------------------------------------

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: (
        st.lists(inner)
        | st.dictionaries(st.text() | st.integers(), inner)
        | st.tuples(inner)
        | st.tuples(inner, inner)
        | st.just(())
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=values, limit=st.integers(1, 300))
def test_quote_is_repr_cut_to_its_limit(value: Any, limit: int) -> None:
    text = repr(value)
    assert quote(value, limit) == (text if len(text) <= limit else text[: limit - 1] + "\u2026")


def test_quote_of_a_deep_value_is_bounded_and_does_not_recurse() -> None:
    deep: Any = {}
    for _ in range(100_000):
        deep = {"a": [deep]}
    with pytest.raises(RecursionError):
        repr(deep_list())
    assert quote(deep_list()) == "[" * (QUOTE_MAX - 1) + "\u2026"
    assert quote(deep, 12) == "{'a': [{'a'\u2026"


class Raising:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_quote_of_what_repr_cannot_write_names_its_type() -> None:
    assert quote([Raising(), 1]) == "[<Raising>, 1]"
    assert quote(10**5000) == "<int of 16,610 bits>"  # repr raises past 4,300 digits
    assert len(quote("x" * 10_000_000)) == QUOTE_MAX


# -- check -------------------------------------------------------------------------------------------------------


def deep_file(path: Path) -> Path:
    """A JSON-lines file whose first chunk holds a value nested ``DEPTH`` levels, valid JSON for orjson."""
    path.write_text(f'{{"type":"text-delta","index":0,"text":{deep_text()}}}\n', encoding="utf-8")
    assert orjson.loads(path.read_bytes())  # within orjson's 1,024 levels
    return path


def valid_file(path: Path) -> Path:
    chunks = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "hi"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    path.write_bytes(b"".join(orjson.dumps(c) + b"\n" for c in chunks))
    return path


def test_check_file_reports_a_deep_chunk(tmp_path: Path) -> None:
    (report,) = sf.check_file(str(deep_file(tmp_path / "deep.jsonl"))).streams
    assert report.code == "INVALID_CHUNK" and report.chunk is not None
    # The line as written (its start: ECHO_BYTES of it, the cut marked), not the chunk written again.
    assert report.chunk.startswith('{"type":"text-delta","index":0,"text":[[[') and report.chunk.endswith("\u2026")
    assert len(report.chunk) <= ECHO_BYTES + 1


@pytest.mark.parametrize("jobs", [["-j", "1"], []], ids=["j1", "default"])
@pytest.mark.parametrize("output", [[], ["--json"]], ids=["text", "json"])
def test_check_reports_a_deep_chunk_and_checks_the_files_after_it(
    tmp_path: Path, jobs: list[str], output: list[str]
) -> None:
    deep, valid = deep_file(tmp_path / "a-deep.jsonl"), valid_file(tmp_path / "b-valid.jsonl")
    done = subprocess.run(
        [sys.executable, "-m", "streamfsm", "check", "--no-progress", *jobs, *output, str(deep), str(valid)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr + done.stdout
    if output:
        reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        streams = [r for r in reports if r["kind"] == "stream"]  # then the summary object
        by_path = {s["path"]: s for s in streams}
        assert by_path[str(deep)]["code"] == "INVALID_CHUNK"
        assert by_path[str(valid)]["ok"] is True
    else:
        assert "INVALID_CHUNK" in done.stdout
        assert "checked 2 streams in 2 files" in done.stdout


# -- the converters ----------------------------------------------------------------------------------------------

#: Each converter, and a recording of its events as JSON lines.
CONVERTERS: list[tuple[str, Callable[..., Iterator[Any]], str]] = [
    ("anthropic", sf.from_anthropic_events, "anthropic-messages/anthropic-web-search-tool.1.jsonl"),
    ("bedrock", sf.from_bedrock_events, "bedrock/amazon-bedrock-tool-call.1.jsonl"),
    ("cohere", sf.from_cohere_events, "cohere/cohere-tool-call.jsonl"),
    ("gemini", sf.from_gemini_chunks, "gemini/google-tool-call.jsonl"),
    ("openai-chat", sf.from_openai_chunks, "openai-chat/mistral-reasoning.jsonl"),
    ("openai-responses", sf.from_openai_responses_events, "openai-responses/azure-tool-call.1.jsonl"),
]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every value in ``value``, itself included."""
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from paths(inner, (*prefix, key))


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = replaced(value[path[0]], path[1:], new)
    return copy


@pytest.mark.parametrize(("name", "convert", "recording"), CONVERTERS, ids=[c[0] for c in CONVERTERS])
def test_a_deep_value_anywhere_in_an_event_is_an_llm_error_or_nothing(
    name: str, convert: Callable[..., Iterator[Any]], recording: str
) -> None:
    """Every value of every event of a recording, in turn, replaced by a list nested ``DEPTH`` levels."""
    events = [orjson.loads(line) for line in (MORE_PROVIDER_STREAMS / recording).read_bytes().splitlines() if line]
    deep = deep_list()
    tried = 0
    for i, event in enumerate(events):
        for path in paths(event):
            hostile = [*events[:i], replaced(event, path, deep), *events[i + 1 :]]
            tried += 1
            try:
                for _ in convert(hostile):
                    pass
            except sf.LlmError as err:
                assert len(err.message) < 2_000, err.message[:300]
    assert tried > 20

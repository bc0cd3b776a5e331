"""The JSON-lines paths read a line with msgspec where it is installed and with orjson otherwise (``_parser``);
both give the same verdict on every input: the same chunks accepted, the same code at the same position. A line
msgspec refuses goes to orjson (``feed_line``), whose words the refusal keeps; the one difference in values, an
integer beyond 64 bits (a float to orjson, the exact int to msgspec), is refused by every field the machine reads."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import _parser

from ..builders import PARSERS, validated
from ..cli_support import without
from ..data import SEED_CHUNKS, SESSIONS


def verdict(blob: bytes, policy: str, parser: str) -> tuple[list[Any], tuple[str, int | None, str] | None]:
    """What ``validate_jsonl`` makes of ``blob`` with ``parser`` (see ``validated``)."""
    _parser.use(parser)
    return validated(blob, policy)


@contextmanager
def deep_recursion() -> Iterator[None]:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def as_orjson_reads(value: Any) -> Any:
    """``value`` with each integer beyond 64 bits as the float orjson reads it as."""
    if type(value) is int and not -(2**63) <= value < 2**64:
        return float(value)
    if isinstance(value, dict):
        return {k: as_orjson_reads(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_orjson_reads(v) for v in value]
    return value


def assert_same_verdict(blob: bytes, policy: str = "strict", *, same_words: bool = True) -> None:
    fast, fast_error = verdict(blob, policy, "msgspec")
    reference, reference_error = verdict(blob, policy, "orjson")
    with deep_recursion():  # a value nested 1,000 deep is compared (and normalised) recursively
        assert as_orjson_reads(fast) == reference
    if fast_error is None or reference_error is None or same_words:
        assert fast_error == reference_error
    else:  # a refused integer beyond 64 bits is quoted as its parser read it
        assert fast_error[:2] == reference_error[:2]


def lines(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(chunk) for chunk in chunks]


def test_the_parser_is_msgspec_where_it_is_installed() -> None:
    assert _parser.PARSER == "msgspec"
    assert _parser.loads(b'{"type":"finish"}') == {"type": "finish"}


def test_without_msgspec_the_parser_is_orjson_and_the_paths_work() -> None:
    done = without(
        {"msgspec"},
        """
        import streamfsm as sf
        from streamfsm import _parser
        assert _parser.PARSER == "orjson", _parser.PARSER
        usage = '{"type":"usage","usage":{"inputTokens":1,"outputTokens":2}}'
        blob = usage + '\\n{"type":"finish","reason":{"kind":"stop"}}'
        assert [c["type"] for c in sf.validate_jsonl(blob)] == ["usage", "finish"]
        try:
            _parser.use("msgspec")
        except ImportError as exc:
            print(exc)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'streamfsm[fast]'" in done.stdout


def test_an_unknown_parser_is_refused() -> None:
    with pytest.raises(ValueError, match="'msgspec' or 'orjson', not 'json'"):
        _parser.use("json")


def test_the_keys_are_the_parsers_own_objects() -> None:
    for parser in PARSERS:
        _parser.use(parser)
        (key,) = _parser.loads(b'{"argumentsDelta": 1}')
        assert key is _parser.KEYS.arguments_delta
        asm = sf.StreamAssembler()
        asm.feed_lines(lines(SEED_CHUNKS))
        assert asm._keys is _parser.KEYS


@pytest.mark.parametrize("parser", PARSERS)
def test_every_json_lines_entry_point_reads_with_the_parser(parser: str) -> None:
    _parser.use(parser)
    blob = b"\n".join(lines(SEED_CHUNKS))
    assert sf.assemble_jsonl(blob) == sf.assemble(SEED_CHUNKS)
    assert list(sf.validate_jsonl(blob)) == SEED_CHUNKS
    asm = sf.StreamAssembler()
    assert list(asm.accepted_chunks(blob.split(b"\n"), True)) == SEED_CHUNKS


#: Lines each parser has its own words for, or that msgspec reads otherwise than line by line.
ODD_LINES = [
    b'{"type":"finish","reason":{"kind":"stop"}}{"type":"finish","reason":{"kind":"stop"}}',
    b'{"type":"usage",\n"usage":{"inputTokens":1,"outputTokens":2}}',
    b'{"type":"finish","reason":{"kind":"stop"}} {"type":"finish"}',
    b'{"type":"text-delta","index":0,"text":"\\ud800"}',
    b'{"type":"text-delta","index":0,"text":"\xff"}',
    b'{"type":"text-delta","index":0,"text":"a\tb"}',
    b'{"type":"text-delta","index":0,"text":NaN}',
    b'{"type":"text-delta","index":1e400,"text":"a"}',
    b'{"type":"text-delta","index":01,"text":"a"}',
    b'{"type":"text-delta","index":0,"text":"a",}',
    b"\xef\xbb\xbf" + b'{"type":"finish","reason":{"kind":"stop"}}',
    b"\x0c",
    b" \x0b ",
    b"\x00",
    b"[" * 1100 + b"]" * 1100,
    b'{"type":"finish","reason":{"kind":"stop"},"x":' + b"[" * 1000 + b"]" * 1000 + b"}",
    b'{"type":"finish","reason":{"kind":"stop"}}\r',
    b"   ",
    b"",
    b"null",
    b"[1, 2]",
    b'"text-delta"',
]


@pytest.mark.parametrize("line", ODD_LINES, ids=[repr(line[:30]) for line in ODD_LINES])
@pytest.mark.parametrize("policy", ["strict", "harness"])
def test_an_odd_line_has_one_verdict(line: bytes, policy: str) -> None:
    head = b"\n".join(lines(SEED_CHUNKS[:4]))
    assert_same_verdict(head + b"\n" + line, policy)
    assert_same_verdict(line, policy)


USAGE = {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}}
BIG = [2**64, 2**64 + 1, -(2**63) - 1, 10**30, -(10**25)]


@pytest.mark.parametrize("big", BIG)
@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "usage", "usage": {"inputTokens": "BIG", "outputTokens": 2}},
        {"type": "block-start", "index": "BIG", "blockType": "text"},
        {"type": "finish", "reason": {"kind": "error", "message": "m", "code": "c", "status": "BIG"}},
        {"type": "finish", "reason": {"kind": "stop"}, "extra": "BIG"},
    ],
    ids=["usage", "index", "status", "a key the machine does not read"],
)
def test_an_integer_beyond_64_bits_has_one_verdict(chunk: dict[str, Any], big: int) -> None:
    line = json.dumps(chunk).replace('"BIG"', str(big)).encode()
    for policy in ("strict", "harness"):
        assert_same_verdict(line, policy, same_words=False)
    if "extra" in chunk:
        usage = b'{"type":"usage","usage":{"inputTokens":1,"outputTokens":2}}\n'
        assert verdict(usage + line, "strict", "msgspec") == ([USAGE, {**chunk, "extra": big}], None)  # exact
        assert verdict(usage + line, "strict", "orjson") == ([USAGE, {**chunk, "extra": float(big)}], None)


def _session_blobs() -> list[bytes]:
    blobs = []
    for path in sorted(SESSIONS.glob("*.jsonl"))[:40]:
        for recording in sf.read_session(path):
            blobs.append(b"\n".join(lines(list(recording.chunks))))
    return blobs


@pytest.mark.parametrize("policy", ["strict", "harness"])
def test_the_session_logs_have_one_verdict(policy: str) -> None:
    blobs = _session_blobs()
    assert len(blobs) > 40
    for blob in blobs:
        assert_same_verdict(blob, policy)


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
values = st.recursive(
    scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=8
)


@st.composite
def json_lines(draw: st.DrawFn) -> bytes:
    """A run of JSON lines: the seed stream's, some with a field set to a random JSON value (as Python writes
    it: integers beyond 64 bits included), some with bytes changed, some blank."""
    out: list[bytes] = []
    for chunk in SEED_CHUNKS:
        how = draw(st.sampled_from(["as is", "as is", "a field", "bytes", "blank"]))
        if how == "a field":
            chunk = {**chunk, draw(st.sampled_from([*chunk, "x"])): draw(values)}
        line = json.dumps(chunk, ensure_ascii=draw(st.booleans())).encode()
        if how == "bytes":
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(st.binary(max_size=3)) + line[at + draw(st.integers(0, 2)) :]
        out.append(line)
        if how == "blank":
            out.append(draw(st.sampled_from([b"", b" ", b"\t\r"])))
    return b"\n".join(out)


@settings(max_examples=300, deadline=None)
@given(blob=json_lines(), policy=st.sampled_from(["strict", "harness"]))
def test_any_json_lines_have_one_verdict(blob: bytes, policy: str) -> None:
    assert_same_verdict(blob, policy, same_words=False)


USAGE_LINE = orjson.dumps(USAGE)
KINDS_OF_LINE: dict[str, list[Any]] = {
    "text with a lone surrogate": ['{"type":"text-delta","index":0,"text":"\udc80"}'],
    "a bytearray": [bytearray(USAGE_LINE)],
    "a memoryview": [memoryview(USAGE_LINE)],
    "a blank bytearray": [bytearray(b" \t"), bytearray(USAGE_LINE)],
    "a blank memoryview": [memoryview(b"\r"), memoryview(USAGE_LINE)],
    "no line at all": [5],
}


@pytest.mark.parametrize("lines", KINDS_OF_LINE.values(), ids=KINDS_OF_LINE.keys())
def test_every_kind_of_line_has_one_verdict(lines: list[Any]) -> None:
    """A line of each kind ``accepted_chunks`` takes (a str, bytes, a bytearray, a memoryview), or none."""

    def outcome(parser: str) -> tuple[list[Any], str]:
        _parser.use(parser)
        chunks: list[Any] = []
        try:
            chunks.extend(sf.StreamAssembler().accepted_chunks(lines))
        except (sf.LlmError, TypeError) as err:
            return chunks, f"{type(err).__name__}: {err}"
        return chunks, ""

    assert outcome("msgspec") == outcome("orjson")

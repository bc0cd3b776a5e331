"""Tool arguments as JSON (``_arguments.parse_arguments``): orjson decides short texts, the standard parser held to
RFC 8259 decides long ones and what orjson reads otherwise (integers past 64 bits, escaped lone surrogates); both
refuse ``NaN``, a number past a double, and nesting past 1,024 levels, each with its reason."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from streamfsm._arguments import MAX_DEPTH, ORJSON_MAX, parse_arguments

#: Padding that makes a text long enough for the standard parser (past ORJSON_MAX characters).
PAD = '"pad": "' + "x" * ORJSON_MAX + '"'


@contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def test_an_object_is_the_value_and_no_reason() -> None:
    assert parse_arguments("{}") == ({}, "")
    assert parse_arguments('{"a": [1, 2.5, "x"]}') == ({"a": [1, 2.5, "x"]}, "")
    assert parse_arguments("[1]") == (None, "arguments must be a JSON object, got list")
    assert parse_arguments("{" + PAD + "}")[1] == ""


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 18446744073709551617, "f": 1.5}',
        '{"f": 1.5, "a": [{"b": [1, -18446744073709551617]}]}',
        '{"a": {"b": {"c": [0.5, 123456789012345678901234567890]}}}',
    ],
)
def test_an_integer_past_64_bits_is_kept_exact_where_orjson_would_give_a_float(text: str) -> None:
    value, why = parse_arguments(text)
    assert why == ""
    assert value == json.loads(text)  # the exact ints, where orjson gives floats
    inexact, why = parse_arguments(text, exact=False)  # a check: the same verdict, the values as orjson read them
    assert why == "" and inexact != value


def test_without_a_float_orjson_keeps_its_exact_ints() -> None:
    value, _ = parse_arguments('{"a": 12345678901234567890, "s": "1234567890123456789012"}')
    assert value == {"a": 12345678901234567890, "s": "1234567890123456789012"}


def test_refusals_of_the_standard_parser_say_why() -> None:
    assert parse_arguments("{" + PAD + ', "n": NaN}') == (None, "NaN is not JSON (RFC 8259)")
    big = "1" + "0" * 45 + "e999"
    assert parse_arguments("{" + PAD + f', "n": {big}}}') == (
        None,
        f"number {big[:40]} is out of the range of a double",
    )
    assert parse_arguments('{"a": "\\ud800"}')[1] == ""  # RFC 8259 allows an escaped lone surrogate


@pytest.mark.parametrize("opener", ["[", '{"a": '])
def test_nesting_past_the_limit_is_refused_by_the_standard_parser(opener: str) -> None:
    closer = "]" if opener == "[" else "}"

    def nested(depth: int) -> str:  # an object whose second member nests ``depth`` levels in all; brackets enough
        return "{" + PAD + ', "deep": ' + opener * (depth - 1) + "0" + closer * (depth - 1) + ', "more": [{}]}'

    with recursion_limit(20_000):  # the interpreter's own limit is not the one held to
        assert parse_arguments(nested(MAX_DEPTH))[1] == ""
        assert parse_arguments(nested(MAX_DEPTH + 1)) == (None, f"nested too deeply (more than {MAX_DEPTH} levels)")
    with recursion_limit(900):  # the interpreter's limit, reached first
        assert parse_arguments(nested(1000)) == (None, "nested too deeply")

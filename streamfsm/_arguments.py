"""Tool arguments as JSON: the parse that decides whether a call's arguments are a JSON object (RFC 8259).

Compiled with the machine (the block-end handler parses every tool call's arguments). orjson decides, fast; the
standard parser, held to RFC 8259, decides what orjson reads differently (escaped lone surrogates, integers past
64 bits, texts over :data:`ORJSON_MAX` characters).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final, NoReturn

import orjson

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "ORJSON_MAX", "parse_arguments"]

_LONG_DIGITS: Final = re.compile(r"[0-9]{19}")
_SURROGATE: Final = re.compile(f"[{chr(0xD800)}-{chr(0xDFFF)}]")  # mypyc takes no surrogate in a literal
#: The deepest nesting of tool arguments accepted: orjson's own limit, enforced on the standard parser too
#: (whose limit depends on the interpreter: Python 3.13 parses 5,000 levels that 3.11 refuses).
MAX_DEPTH: Final = 1024
#: Tool arguments longer than this (characters) are parsed by the standard parser, not orjson.
ORJSON_MAX: Final = 16_384


#: The most digits an integer in tool arguments may have: kept exact up to here, refused past it. Python's
#: own conversion stops at 4,300 digits (CVE-2020-10735); past it digits are converted piece by piece, whose
#: cost grows faster than linearly (100,000 digits: about 25 ms; 1,000,000: about 1 s), so it is bounded.
MAX_INT_DIGITS: Final = 100_000
_INT_PIECE: Final = 4000


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON (RFC 8259)")


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent, refused when a double cannot hold it (``1e999``)."""
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"number {text[:40]} is out of the range of a double")
    return value


def _exact_int(text: str) -> int:
    """A JSON integer, exact at any size up to :data:`MAX_INT_DIGITS` digits (Python's own stops at 4,300)."""
    digits = text.lstrip("-")
    if len(digits) <= _INT_PIECE:
        return int(text)
    if len(digits) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits)} digits: more than {MAX_INT_DIGITS} are not kept")

    def convert(part: str) -> int:
        if len(part) <= _INT_PIECE:
            return int(part)
        low = len(part) // 2
        high: int = convert(part[:-low]) * 10**low
        return high + convert(part[-low:])

    value = convert(digits)
    return -value if text.startswith("-") else value


def parse_arguments(arguments: str, exact: bool = True) -> tuple[dict[str, Any] | None, str]:
    """Parse raw tool arguments: a JSON object (RFC 8259, no NaN/Infinity), or the reason it is not.

    orjson decides small texts, fast. It refuses escaped lone surrogates (``"\\ud800"``), which RFC
    8259's grammar allows, and reads integers past 64 bits as floats: a text it refuses, or (``exact``) one
    with a run of 19 digits, is asked again of the standard parser, with ``NaN``/``Infinity`` turned away.
    Without ``exact`` (a caller that needs the verdict, not the values: a check) such integers stay floats
    and the text is not scanned for them: the verdict is the same.
    Texts over :data:`ORJSON_MAX` characters go to the standard parser directly: orjson reserves about
    13 times its input while it parses. A lone surrogate *character* (not escaped) cannot be UTF-8
    and is not JSON text. Nesting deeper than :data:`MAX_DEPTH` (1,024) levels is refused by both.
    """
    if len(arguments) <= ORJSON_MAX:
        try:
            value = orjson.loads(arguments)
        except orjson.JSONDecodeError as exc:
            value, reason = _stdlib_loads(arguments)
            if reason:
                return None, str(exc)
        else:
            if exact and _has_float(value) and _LONG_DIGITS.search(arguments) is not None:
                # orjson turns integers past 64 bits into floats, silently: keep them exact. Only a value with a
                # float may hold one (a walk of the parsed value costs far less than a scan of the text).
                value, _ = _stdlib_loads(arguments)
    else:
        value, reason = _stdlib_loads(arguments)
        if reason:
            return None, reason
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, ""


def _has_float(value: Any) -> bool:
    """Whether a parsed JSON value holds a float anywhere (no recursion)."""
    if type(value) is float:
        return True
    if type(value) is not dict and type(value) is not list:
        return False
    stack: list[Any] = [value]
    while stack:
        container = stack.pop()
        for item in container.values() if type(container) is dict else container:
            kind = type(item)
            if kind is float:
                return True
            if kind is dict or kind is list:
                stack.append(item)
    return False


def _too_deep(value: Any) -> bool:
    """Whether arrays and objects in a parsed value nest deeper than :data:`MAX_DEPTH` (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        for item in container.values() if type(container) is dict else container:
            if type(item) is dict or type(item) is list:
                stack.append((item, depth + 1))
    return False


def _stdlib_loads(text: str) -> tuple[Any, str]:
    """The standard parser, held to RFC 8259: (value, '') or (None, why not)."""
    surrogate = _SURROGATE.search(text)
    if surrogate is not None:
        return None, f"unpaired surrogate U+{ord(surrogate.group()):04X} at character {surrogate.start()}"
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_exact_int)
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:
        return None, str(exc)
    # Checked on the parsed value, after the parser (linear, and only when there are brackets enough).
    if text.count("[") + text.count("{") > MAX_DEPTH and isinstance(value, dict | list) and _too_deep(value):
        return None, f"nested too deeply (more than {MAX_DEPTH} levels)"
    return value, ""

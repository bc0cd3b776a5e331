"""The parser of JSON lines: msgspec's decoder where it is installed (the ``fast`` extra), orjson's otherwise.

Every JSON-lines path of the machine (``accepted_chunks``, ``feed_lines``, and so
``validate_jsonl`` and ``assemble_jsonl``) parses a line with :data:`loads` and feeds what it gives (a line that
repeats the last delta's shape, its text alone: ``_line_memo``). A line it
refuses goes to ``StreamAssembler.feed_line``, which parses it with orjson, the reference: orjson's verdict and
words decide. The two parsers accept the same lines and give the same values, with one exception: an integer
beyond 64 bits is a float to orjson and the exact ``int`` to msgspec. Every field the machine reads holds at most
``2**53 - 1``, so both are refused there (``INVALID_CHUNK``, at the same position); elsewhere (a key the machine
does not read) the chunk keeps the value as its parser read it.

:data:`KEYS` are the key objects of the parser's dicts (each parser keeps one object a key): the handlers look
a parsed chunk's fields up with them, found by identity (only the speed depends on it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

from ._blocks import FIELDS, Keys

__all__ = ["KEYS", "PARSER", "loads"]


def _msgspec_decode() -> Callable[[Any], Any] | None:
    """msgspec's JSON decoder (untyped: dicts, lists and scalars, as orjson gives), or None without msgspec."""
    try:
        import msgspec
    except ImportError:
        return None
    decode: Callable[[Any], Any] = msgspec.json.Decoder().decode
    return decode


def _keys_of(parse: Callable[[Any], Any]) -> Keys:
    """The key objects of the dicts ``parse`` makes (a parser keeps one object a key)."""
    return Keys(parse(orjson.dumps(dict.fromkeys(FIELDS, 0))))


#: Parses one JSON line (bytes, a bytearray, a memoryview or a str) into its value.
loads: Callable[[Any], Any] = _msgspec_decode() or orjson.loads
#: Which parser :data:`loads` is: ``"msgspec"`` or ``"orjson"``.
PARSER: str = "orjson" if loads is orjson.loads else "msgspec"
#: The key objects of the dicts :data:`loads` makes.
KEYS: Keys = _keys_of(loads)
#: The key objects of the dicts orjson makes (``feed_line``'s).
ORJSON_KEYS: Final = _keys_of(orjson.loads)


def use(parser: str) -> None:
    """Parse JSON lines with ``parser`` (``"msgspec"`` or ``"orjson"``) from here on: the tests run both."""
    global loads, PARSER, KEYS
    if parser == "orjson":
        loads = orjson.loads
    elif parser == "msgspec":
        decode = _msgspec_decode()
        if decode is None:
            raise ImportError("msgspec is not installed: pip install 'streamfsm[fast]'")
        loads = decode
    else:
        raise ValueError(f"a JSON-lines parser is 'msgspec' or 'orjson', not {parser!r}")
    PARSER = parser
    KEYS = _keys_of(loads)

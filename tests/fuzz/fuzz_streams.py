"""Coverage-guided fuzzing of the machine with atheris (``pip install atheris``).

Two targets, each run for a given time::

    python -m tests.fuzz.fuzz_streams jsonl  -max_total_time=600   # arbitrary bytes as JSON lines
    python -m tests.fuzz.fuzz_streams chunks -max_total_time=600   # chunk dicts built from arbitrary data

Invariant, for every input and both policies: nothing but ``LlmError`` escapes; the outcome (result, or
code and position) equals the one ``tests/test_properties.reference`` derives from SPEC §2-§3 on its own;
and every entry point gives the same answer: outcome, position, message, state, notes, snapshot and result
(``tests.builders.agree``: ``feed`` chunk by chunk, ``feed_many``, ``feed_lines``, ``assemble``,
``assemble_jsonl``, ``validate``, ``aassemble``). Run it against the source module
(``STREAMFSM_PURE=1`` build, or a checkout without the compiled ``.so``) for coverage guidance; an input
that breaks the invariant is written by atheris as ``crash-*``: keep it under ``tests/fuzz/regressions/``.
"""

from __future__ import annotations

import sys
from typing import Any

import atheris

with atheris.instrument_imports(include=["streamfsm"]):
    import orjson

    import streamfsm as sf

from tests.builders import agree
from tests.protocol.test_properties import outcome, reference, same_as_reference

POLICIES = (sf.Policy.STRICT, sf.Policy.HARNESS)
TYPES = ("block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage", "finish", "x")
BLOCK_TYPES = ("text", "reasoning", "tool-call", "image")
KINDS = ("stop", "tool-calls", "max-tokens", "error", "aborted", "done")
TEXTS = ("", "a", "ab", "{", "}", '{"a":', "1}", "{}", '{"a":1}', "[1]", "NaN", "\ud800", "é")


def _lines(data: bytes) -> list[Any]:
    """What the machine should see: one chunk a non-blank line; a line orjson refuses is not a chunk."""
    chunks: list[Any] = []
    for line in data.split(b"\n"):
        if not line.strip(b" \t\r\n"):
            continue
        try:
            chunks.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            chunks.append(sf.InvalidLine(line.decode("utf-8", "replace"), "not JSON"))
    return chunks


def _check(chunks: list[Any], run: Any, policy: sf.Policy) -> None:
    got = outcome(run)
    same_as_reference(got, reference(chunks, policy))
    verdict = agree(chunks, policy)["verdict"]
    if got[0] == "ok":
        assert verdict == ("ok",), (verdict, got)
    else:
        assert verdict[1:3] == (str(got[1]), got[2]), (verdict, got)


def fuzz_jsonl(data: bytes) -> None:
    chunks = _lines(data)
    for policy in POLICIES:
        _check(chunks, lambda policy=policy: sf.assemble_jsonl(data, policy=policy), policy)


def _value(fdp: Any, pool: tuple[Any, ...]) -> Any:
    choice = fdp.ConsumeIntInRange(0, len(pool) + 3)
    if choice < len(pool):
        return pool[choice]
    return (None, True, -1, 2**53)[choice - len(pool)]


def _chunk(fdp: Any) -> Any:
    t = _value(fdp, TYPES)
    chunk: dict[str, Any] = {"type": t, "index": fdp.ConsumeIntInRange(0, 3)}
    if fdp.ConsumeBool():
        chunk["index"] = _value(fdp, (0, 1, 2))
    if t == "block-start":
        chunk["blockType"] = _value(fdp, BLOCK_TYPES)
    elif t in ("text-delta", "reasoning-delta"):
        chunk["text"] = _value(fdp, TEXTS)
    elif t == "tool-call-delta":
        chunk["id"] = _value(fdp, ("c1", "c2", ""))
        if fdp.ConsumeBool():
            chunk["name"] = _value(fdp, ("f", "g", ""))
        chunk["argumentsDelta"] = _value(fdp, TEXTS)
    elif t == "block-end":
        kind = _value(fdp, BLOCK_TYPES)
        if kind == "tool-call":
            block = {
                "type": kind,
                "id": _value(fdp, ("c1", "c2")),
                "name": _value(fdp, ("f", "g")),
                "arguments": _value(fdp, TEXTS),
            }
        else:
            block = {"type": kind, "text": _value(fdp, TEXTS)}
        chunk["block"] = block
    elif t == "usage":
        chunk["usage"] = {"inputTokens": _value(fdp, (0, 5)), "outputTokens": _value(fdp, (0, 5))}
        if fdp.ConsumeBool():
            chunk["usage"]["cacheReadTokens"] = _value(fdp, (0, 1))
    elif t == "finish":
        kind = _value(fdp, KINDS)
        reason: dict[str, Any] = {"kind": kind}
        if kind in ("error", "aborted") or fdp.ConsumeBool():
            reason["failure"] = {"message": _value(fdp, ("m", "")), "code": "X"}
        chunk["reason"] = reason
    return chunk if fdp.ConsumeIntInRange(0, 20) else _value(fdp, (None, [], "text-delta", 3))


def fuzz_chunks(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    chunks = [_chunk(fdp) for _ in range(fdp.ConsumeIntInRange(0, 24))]
    for policy in POLICIES:
        _check(chunks, lambda policy=policy: sf.assemble(chunks, policy=policy), policy)


def main() -> None:
    target = {"jsonl": fuzz_jsonl, "chunks": fuzz_chunks}[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""The wire vocabulary of SPEC §1 as builders, and the stream runners that the rule, code and policy tests share:
among them every entry point of SPEC §5, run over one stream and required to agree (:func:`agree`).

Field values are typed ``object`` on purpose: ``tests/protocol/test_codes.py`` builds deliberately malformed chunks
with them.
The constants are shared by every module that imports them; no test may mutate them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

import streamfsm as sf
from streamfsm import ErrorCode, LlmError, Policy, _machine

Chunk = dict[str, Any]
STRICT, HARNESS = Policy.STRICT, Policy.HARNESS
BOTH = (STRICT, HARNESS)
FAILURE = {"message": "upstream went away", "code": "overloaded"}
E = ErrorCode


# -- one chunk ----------------------------------------------------------------------------------


def start(index: object, block_type: object) -> Chunk:
    """A ``block-start`` chunk."""
    return {"type": "block-start", "index": index, "blockType": block_type}


def text_delta(index: int, text: object) -> Chunk:
    """A ``text-delta`` chunk."""
    return {"type": "text-delta", "index": index, "text": text}


def reasoning_delta(index: int, text: object) -> Chunk:
    """A ``reasoning-delta`` chunk."""
    return {"type": "reasoning-delta", "index": index, "text": text}


def tool_delta(index: int, call_id: object, arguments: object, name: object = None) -> Chunk:
    """A ``tool-call-delta`` chunk; ``name`` is left out when it is None."""
    chunk: Chunk = {"type": "tool-call-delta", "index": index, "id": call_id, "argumentsDelta": arguments}
    if name is not None:
        chunk["name"] = name
    return chunk


def end_text(index: int, text: object) -> Chunk:
    """A ``block-end`` chunk carrying a complete text block."""
    return {"type": "block-end", "index": index, "block": {"type": "text", "text": text}}


def end_reasoning(index: int, text: object) -> Chunk:
    """A ``block-end`` chunk carrying a complete reasoning block."""
    return {"type": "block-end", "index": index, "block": {"type": "reasoning", "text": text}}


def end_tool(index: int, call_id: object, name: object, arguments: object) -> Chunk:
    """A ``block-end`` chunk carrying a complete tool-call block."""
    block = {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}
    return {"type": "block-end", "index": index, "block": block}


def end_image(index: int, attachment: object) -> Chunk:
    """A ``block-end`` chunk carrying a complete image block (SPEC §1: an image block has no deltas)."""
    return {"type": "block-end", "index": index, "block": {"type": "image", "attachment": attachment}}


def end_block(index: int, block: object) -> Chunk:
    """A ``block-end`` chunk carrying ``block`` as given (a block of any type, well-formed or not)."""
    return {"type": "block-end", "index": index, "block": block}


def usage(input_tokens: object = 10, output_tokens: object = 5, **optional: object) -> Chunk:
    """A ``usage`` chunk; ``optional`` adds counts such as ``reasoningTokens`` as given."""
    return {"type": "usage", "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens, **optional}}


def finish(kind: object, failure: object = None, **extra: object) -> Chunk:
    """A ``finish`` chunk; ``failure`` is left out when it is None, ``extra`` adds top-level keys (``replayState``)."""
    reason: dict[str, Any] = {"kind": kind}
    if failure is not None:
        reason["failure"] = failure
    return {"type": "finish", "reason": reason, **extra}


# -- one complete block -------------------------------------------------------------------------


def text_block(index: int, *parts: str) -> list[Chunk]:
    """A complete text block: start, one delta a part, and the block-end with the parts joined."""
    return [start(index, "text"), *(text_delta(index, p) for p in parts), end_text(index, "".join(parts))]


def reasoning_block(index: int, *parts: str) -> list[Chunk]:
    """A complete reasoning block: start, one delta a part, and the block-end with the parts joined."""
    return [
        start(index, "reasoning"),
        *(reasoning_delta(index, p) for p in parts),
        end_reasoning(index, "".join(parts)),
    ]


def tool_block(index: int, call_id: str, name: str = "f", *parts: str) -> list[Chunk]:
    """A complete tool-call block: one delta a part (the first names the tool); no parts means one ``"{}"``."""
    parts = parts or ("{}",)
    deltas = [tool_delta(index, call_id, p, name=name if i == 0 else None) for i, p in enumerate(parts)]
    return [start(index, "tool-call"), *deltas, end_tool(index, call_id, name, "".join(parts))]


U = usage()
STOP = finish("stop")
TEXT = [start(0, "text"), text_delta(0, "hi"), end_text(0, "hi")]  # block 0, complete (3 chunks)


# -- running a stream ---------------------------------------------------------------------------

#: A note of :attr:`StreamAssembler.notes` as data: (code, chunk_index, count).
Note = tuple[ErrorCode, int | None, int]


async def aiter_chunks(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    """The chunks as an async iterator, for ``aassemble`` and ``avalidate``."""
    for chunk in chunks:
        yield chunk


def accept(chunks: list[Chunk], policy: Policy | str = STRICT) -> sf.StreamResult:
    """Feed every chunk, then close: the stream must be accepted."""
    asm = sf.StreamAssembler(policy=policy)
    for chunk in chunks:
        asm.feed(chunk)
    return asm.close()


def notes_of(asm: sf.StreamAssembler) -> list[Note]:
    """The assembler's notes as (code, chunk_index, count), in order of first sight."""
    return [(ErrorCode(err.code), err.chunk_index, count) for err, count in asm.notes]


def accept_noted(
    chunks: list[Any], policy: Policy | str = HARNESS, *, raw_arguments: bool = False
) -> tuple[sf.StreamResult, list[Note]]:
    """Feed every chunk, then close: the stream must be accepted. The result, and the notes it left."""
    asm = sf.StreamAssembler(policy=policy, raw_arguments=raw_arguments)
    for chunk in chunks:
        asm.feed(chunk)
    return asm.close(), notes_of(asm)


def reject(
    chunks: list[Any], policy: Policy | str = STRICT, limits: sf.Limits | None = None, *, check_index: bool = False
) -> LlmError:
    """Feed the chunks: the last must be the first rejected (with ``check_index``, at its own position as chunk_index).

    If every chunk is accepted, ``close()`` must fail (a truncated stream) and its error is returned.
    """
    asm = sf.StreamAssembler(policy=policy, limits=limits)
    for position, chunk in enumerate(chunks):
        try:
            asm.feed(chunk)
        except LlmError as err:
            assert position == len(chunks) - 1, f"chunk {position} was rejected early: {err}"
            if check_index:
                assert err.chunk_index == position, err
            return err
    with pytest.raises(LlmError) as info:
        asm.close()
    return info.value


# -- every entry point ----------------------------------------------------------------------------

#: What one entry point showed of a stream, facet by facet: ``verdict`` (``("ok",)``, or the error's code,
#: position, message, state and what that state accepted), ``result`` (the result's wire form, its interrupted
#: blocks' and its replay state), ``notes`` (code, position, count, message), ``snapshot`` and ``chunk_count``
#: (the machine at the end), ``passed`` (how many chunks ``validate`` let through). An entry point leaves out
#: what it does not show.
Seen = dict[str, Any]
Feeder = Callable[[sf.StreamAssembler, list[Any]], None]


#: The parsers of JSON lines (``_parser.use``): msgspec's (the ``fast`` extra; ``test`` installs it) and orjson's.
PARSERS = ("msgspec", "orjson")


def validated(source: Any, policy: Policy | str = STRICT) -> tuple[list[Any], tuple[str, int | None, str] | None]:
    """What ``sf.validate_jsonl`` makes of ``source``: the chunks it yielded, and its error (code, position,
    message) or None."""
    chunks: list[Any] = []
    try:
        for chunk in sf.validate_jsonl(source, policy=policy):
            chunks.append(chunk)
    except LlmError as err:
        return chunks, (err.code.value, err.chunk_index, str(err))
    return chunks, None


def verdict_of(err: LlmError) -> tuple[Any, ...]:
    """An error as the facet ``verdict``: code, position, message, state and what that state accepted."""
    return ("error", str(err.code), err.chunk_index, err.message, err.state, err.expected)


def wire_of(block: Any) -> Any:
    """A block's wire form (a block kept as it came is the dict itself)."""
    return block if isinstance(block, dict) else block.to_wire()


def _result(result: sf.StreamResult) -> Seen:
    wire = (result.to_wire(), [wire_of(b) for b in result.interrupted], result.replay_state)
    return {"verdict": ("ok",), "result": wire}


def _plain(value: object) -> bool:
    """Whether ``value`` is JSON data of exact types that a JSON line carries unchanged (no subclass, no float
    that is not finite, no int past 64 bits, no lone surrogate, no object reached twice: shared or a cycle)."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        t = type(v)
        if t is dict or t is list:
            if id(v) in seen:
                return False
            seen.add(id(v))
        if t is dict:
            assert isinstance(v, dict)
            if any(type(k) is not str for k in v):
                return False
            stack.extend(v.keys())
            stack.extend(v.values())
        elif t is list:
            assert isinstance(v, list)
            stack.extend(v)
        elif t is str:
            assert isinstance(v, str)
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif t is int:
            assert isinstance(v, int)
            if not -(2**63) <= v < 2**64:
                return False
        elif t is float:
            assert isinstance(v, float)
            if v != v or v in (float("inf"), float("-inf")):
                return False
        elif v is not None and t is not bool:
            return False
    return True


def json_lines(chunks: list[Any]) -> list[bytes] | None:
    """The chunks as JSON lines that read back as the very same chunks, or None when one is not plain JSON data."""
    lines = []
    for chunk in chunks:
        if type(chunk) is not dict or not _plain(chunk):
            return None
        try:
            line = orjson.dumps(chunk)
        except orjson.JSONEncodeError:  # nested deeper than orjson writes
            return None
        lines.append(line)
    return lines


def _feed(asm: sf.StreamAssembler, chunks: list[Any]) -> None:
    for chunk in chunks:
        asm.feed(chunk)


def _feed_in_threes(asm: sf.StreamAssembler, chunks: list[Any]) -> None:
    for at in range(0, len(chunks), 3):
        asm.feed_many(iter(chunks[at : at + 3]))


#: The ways a caller feeds an assembler: chunk by chunk, all at once, in calls of three chunks. (JSON lines,
#: ``feed_lines``, take the chunks as lines: see :func:`every_entry_point`.)
FEEDS: dict[str, Feeder] = {
    "feed": _feed,
    "feed_many": lambda asm, chunks: asm.feed_many(iter(chunks)),
    "feed_many in threes": _feed_in_threes,
}


def _fed_by(feed: Feeder, chunks: list[Any]) -> Callable[[sf.StreamAssembler], None]:
    return lambda asm: feed(asm, chunks)


def run_machine(
    feed: Callable[[sf.StreamAssembler], None],
    policy: Policy | str = STRICT,
    limits: sf.Limits | None = None,
    *,
    raw_arguments: bool = False,
) -> Seen:
    """Feed an assembler as ``feed`` does, then close it: the verdict, the result, and the machine at the end."""
    asm = sf.StreamAssembler(policy, limits, raw_arguments=raw_arguments)
    try:
        feed(asm)
        seen = _result(asm.close())
        seen["summary"] = asm.summary()
    except LlmError as err:
        seen = {"verdict": verdict_of(err)}
    seen["notes"] = [(str(e.code), e.chunk_index, count, e.message) for e, count in asm.notes]
    seen["snapshot"] = asm.snapshot().model_dump()
    seen["chunk_count"] = asm.chunk_count
    return seen


def run_checker(
    chunks: list[Any], policy: Policy | str = STRICT, limits: sf.Limits | None = None, *, raw_arguments: bool = False
) -> Seen:
    """``feed_many`` into an assembler that keeps no results (``results=False``): its verdict, its summary (which
    must be the one an assembler with results gives), its notes and chunk count."""
    asm = sf.StreamAssembler(policy, limits, raw_arguments=raw_arguments, results=False)
    try:
        asm.feed_many(chunks)
        seen: Seen = {"verdict": ("ok",), "summary": asm.summary()}
    except LlmError as err:
        seen = {"verdict": verdict_of(err)}
    seen["notes"] = [(str(e.code), e.chunk_index, count, e.message) for e, count in asm.notes]
    seen["chunk_count"] = asm.chunk_count
    return seen


def _run_api(run: Callable[[], sf.StreamResult]) -> Seen:
    try:
        return _result(run())
    except LlmError as err:
        return {"verdict": verdict_of(err)}


def _run_validate(chunks: list[Any], policy: Policy | str, limits: sf.Limits | None) -> Seen:
    passed = 0
    try:
        for chunk in sf.validate(chunks, policy=policy, limits=limits):
            assert chunk is chunks[passed]  # passed through as it came, in order
            passed += 1
    except LlmError as err:
        return {"verdict": verdict_of(err), "passed": passed}
    return {"verdict": ("ok",), "passed": passed}


def _run_validate_jsonl(blob: bytes, policy: Policy | str, limits: sf.Limits | None) -> Seen:
    passed = 0
    try:
        for _ in sf.validate_jsonl(blob, policy=policy, limits=limits):
            passed += 1
    except LlmError as err:
        return {"verdict": verdict_of(err), "passed": passed}
    return {"verdict": ("ok",), "passed": passed}


def _run_aassemble(chunks: list[Any], policy: Policy | str, limits: sf.Limits | None) -> sf.StreamResult:
    with asyncio.Runner() as runner:
        return runner.run(sf.aassemble(aiter_chunks(chunks), policy=policy, limits=limits))


def every_entry_point(
    chunks: list[Any], policy: Policy | str = STRICT, limits: sf.Limits | None = None, *, raw_arguments: bool = False
) -> dict[str, Seen]:
    """What every entry point of SPEC §5 that can take the stream showed of it.

    ``feed`` chunk by chunk, ``feed_many`` (at once and in threes, and into an assembler that keeps no results),
    ``feed_lines`` (JSON lines), ``assemble``, ``assemble_jsonl``, ``validate``, ``validate_jsonl`` and
    ``aassemble``; the JSON-lines ones only when the chunks are plain JSON
    data (:func:`json_lines`), the functions only without ``raw_arguments`` (an assembler's option).
    """
    seen = {
        name: run_machine(_fed_by(feed, chunks), policy, limits, raw_arguments=raw_arguments)
        for name, feed in FEEDS.items()
    }
    seen["results=False"] = run_checker(chunks, policy, limits, raw_arguments=raw_arguments)
    lines = json_lines(chunks)
    if lines is not None:
        seen["feed_lines"] = run_machine(lambda asm: asm.feed_lines(iter(lines)), policy, limits,
                                         raw_arguments=raw_arguments)  # fmt: skip
    if raw_arguments:
        return seen
    seen["assemble"] = _run_api(lambda: sf.assemble(chunks, policy=policy, limits=limits))
    seen["validate"] = _run_validate(chunks, policy, limits)
    seen["aassemble"] = _run_api(lambda: _run_aassemble(chunks, policy, limits))
    if lines is not None:
        blob = b"\n".join(lines) + b"\n"
        seen["assemble_jsonl"] = _run_api(lambda: sf.assemble_jsonl(blob, policy=policy, limits=limits))
        seen["validate_jsonl"] = _run_validate_jsonl(blob, policy, limits)
    return seen


def agree(
    chunks: list[Any], policy: Policy | str = STRICT, limits: sf.Limits | None = None, *, raw_arguments: bool = False
) -> Seen:
    """Run the stream through every entry point that can take it (:func:`every_entry_point`): each facet one shows
    must be the one ``feed`` shows, and ``validate`` lets through every chunk before the one refused. Returns what
    ``feed`` showed."""
    seen = every_entry_point(chunks, policy, limits, raw_arguments=raw_arguments)
    first = seen["feed"]
    verdict = first["verdict"]
    for name, facets in seen.items():
        for facet, value in facets.items():
            if facet == "passed":
                assert value == (len(chunks) if verdict[0] == "ok" else verdict[2]), (name, value, verdict)
            else:
                assert value == first[facet], f"{name} {facet}: {value!r} != feed's {first[facet]!r}"
    return first


# -- the machine as source -----------------------------------------------------------------------


#: The modules mypyc compiles together (``COMPILED`` in ``_build/streamfsm_build.py``), importer after imported.
MACHINE_MODULES = (
    "_line_memo",
    "_arguments",
    "_table",
    "_blocks",
    "_messages",
    "_construct",
    "_stream",
    "_handlers",
    "_machine",
    "_assemble",
)


def source_machine() -> ModuleType:
    """The machine module as Python: itself when it runs as source, else its source files loaded apart (a compiled
    class cannot be subclassed from Python; the source is the same code). Tests subclass it to count calls.

    Loaded apart, the machine's modules are ``streamfsm_source.<module>``, importing one another; every other module
    of the package is the one already imported (the same ``LlmError``, the same models)."""
    if _machine.__file__ is not None and _machine.__file__.endswith(".py"):
        return _machine
    package = "streamfsm_source"
    if package not in sys.modules:
        root = Path(sf.__file__).parent
        importlib.import_module("streamfsm._upstream")  # imported by _assemble: the package's own, shared
        importlib.import_module("streamfsm._recordings")  # imported by a refusal's hint (_machine._hint): shared
        namespace = ModuleType(package)
        namespace.__path__ = []
        sys.modules[package] = namespace
        for name, module in list(sys.modules.items()):
            short = name.removeprefix("streamfsm.")
            if short != name and "." not in short and short not in MACHINE_MODULES:
                sys.modules[f"{package}.{short}"] = module
                setattr(namespace, short, module)
        for short in MACHINE_MODULES:
            spec = importlib.util.spec_from_file_location(f"{package}.{short}", root / f"{short}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            setattr(namespace, short, module)
    return sys.modules[f"{package}._machine"]

"""The wire vocabulary of SPEC §1 as builders, and the stream runners that the rule, code and policy tests share.

Field values are typed ``object`` on purpose: ``test_codes.py`` builds deliberately malformed chunks with them.
The constants are shared by every module that imports them; no test may mutate them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import streamfsm as sf
from streamfsm import ErrorCode, LlmError, Policy

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

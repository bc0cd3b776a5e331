"""Streams transcribed from DeepSeek Harness's own spec files, each with upstream's verdict (issue 12).

Source: the public repository deepseek-ai/deepseek-harness (MIT licence, Copyright (c) 2026 DeepSeek; commit
b150a551b8d4). The streams are transcribed, as data, from these test files:

- ``packages/llm/llm/tests/invariant.spec.ts``: every stream it builds;
- ``packages/llm/llm/tests/assembler.spec.ts``: every stream it builds (one test builds none);
- ``packages/llm/llm-deepseek/tests/translate.spec.ts``: the chunks ``translate()``
  (``packages/llm/llm-deepseek/src/translate.ts``) yields for the provider payloads each test gives; the two
  tests where it throws before yielding a chunk are left out;
- ``packages/acp/acp/tests/turns.spec.ts``: the chunks its scripted model emits; the scripted responses
  ``textResponse``, ``maxTokensResponse``, ``errorResponse`` and the ``'hang'`` entry come from ``harness.ts``
  in the same directory and are rewritten below as functions that build the same chunks.

``upstream`` is the verdict of upstream's validator, ``validateStream`` in ``packages/llm/llm/src/invariant.ts``,
worked out by reading it (not only from what a test asserts: assembler tests assert what ``BlockAssembler``
builds, often from streams the validator rejects; ``note`` says so). ``upstream_error`` is the validator's
message. ``harness`` is what streamfsm gives under ``Policy.HARNESS`` (SPEC §4): ``None`` when it accepts,
else the ``ErrorCode`` SPEC §3 assigns, at chunk ``at``. It is upstream's verdict except where one of the
documented corruption checks applies (``corruption_check``, with ``corruption_reason``); none of the streams
transcribed here needs one. ``strict`` is the verdict under ``Policy.STRICT`` where SPEC makes it plain, else
:data:`UNCHECKED`. ``expect`` is what an accepted stream's result must hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

Chunk = dict[str, Any]

#: ``strict`` of a case whose STRICT verdict is not asserted.
UNCHECKED: Final = "unchecked"

INVARIANT: Final = "invariant.spec.ts"
ASSEMBLER: Final = "assembler.spec.ts"
TRANSLATE: Final = "translate.spec.ts"
TURNS: Final = "turns.spec.ts"

#: validateStream's messages (invariant.ts) that recur below.
NO_FINISH: Final = "LLM stream ended without a terminal finish chunk"
END_NOT_OPEN_0: Final = "LLM stream block-end index 0 has no open block"
TEXT_DELTA_NOT_OPEN_0: Final = "text delta at index 0 requires an open text block, got undefined"


@dataclass(frozen=True)
class Expect:
    """What the result of an accepted stream holds: ``to_wire()``'s parts and the interrupted blocks (wire form).

    ``result.text``, ``result.reasoning`` and the raw arguments of ``result.tool_calls`` are checked against
    the text, reasoning and tool-call blocks of ``blocks``.
    """

    blocks: tuple[Chunk, ...]
    finish: Chunk
    usage: Chunk | None = None
    interrupted: tuple[Chunk, ...] = ()


@dataclass(frozen=True)
class UpstreamCase:
    """One stream from an upstream spec file, with upstream's verdict and streamfsm's under each policy."""

    name: str
    source: str
    chunks: tuple[Chunk, ...]
    upstream: str
    upstream_error: str = ""
    harness: str | None = None
    at: int | None = None
    strict: str | None = UNCHECKED
    strict_at: int | None = None
    expect: Expect | None = None
    corruption_check: str = ""
    corruption_reason: str = ""
    note: str = ""


# --- the scripted responses of turns.spec.ts (harness.ts) -----------------------------------------------------


def text_response(text: str) -> tuple[Chunk, ...]:
    """``textResponse(text)``: one text block streamed a character a delta, usage, a ``stop`` finish."""
    return (
        {"type": "block-start", "index": 0, "blockType": "text"},
        *({"type": "text-delta", "index": 0, "text": char} for char in text),
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": len(text)}},
        {"type": "finish", "reason": {"kind": "stop"}},
    )


def max_tokens_response(text: str) -> tuple[Chunk, ...]:
    """``maxTokensResponse(text)``: as ``textResponse`` without usage, ending ``max-tokens``."""
    return (
        {"type": "block-start", "index": 0, "blockType": "text"},
        *({"type": "text-delta", "index": 0, "text": char} for char in text),
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "finish", "reason": {"kind": "max-tokens"}},
    )


def error_response(message: str) -> tuple[Chunk, ...]:
    """``errorResponse(message)``: a text block left open after one delta, then an ``error`` finish."""
    return (
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "partial"},
        {"type": "finish", "reason": {"kind": "error", "failure": {"message": message, "code": "PROVIDER_ERROR"}}},
    )


#: The ``'hang'`` entry: two chunks, then the adapter waits until cancelled and throws (no finish).
HANG: Final[tuple[Chunk, ...]] = (
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "partial"},
)


def _text_expect(text: str) -> Expect:
    """The result of ``text_response(text)``."""
    return Expect(
        blocks=({"type": "text", "text": text},),
        usage={"inputTokens": 5, "outputTokens": len(text)},
        finish={"kind": "stop"},
    )


def _error_expect(message: str) -> Expect:
    """The result of ``error_response(message)``: no complete block, the open one interrupted."""
    return Expect(
        blocks=(),
        finish={"kind": "error", "failure": {"message": message, "code": "PROVIDER_ERROR"}},
        interrupted=({"type": "text", "text": "partial"},),
    )


def _image(byte: int, media_type: str) -> Chunk:
    """The attachment ref harness.ts's ``MemoryAttachmentStore.saveImage`` returns for one byte of image data."""
    digests = {
        1: "4bf5122f344554c53bde2ebb8cd2b7e3d1600ad631c385a5d7cce23c7785459a",
        2: "dbc1b4c900ffe48d575b5da5c638040125f65db0fe3e24494b76ea986457d986",
        3: "084fed08b978af4d7d196a7446a86b58009e636b611db16211b65a9aadff29c5",
    }
    return {"attachmentId": f"sha256:{digests[byte]}", "mediaType": media_type, "bytes": 1, "width": 1, "height": 1}


#: The attachment the "missing attachment" test builds by hand (never saved).
MISSING_IMAGE: Final[Chunk] = {
    "attachmentId": "sha256:" + "a" * 64,
    "mediaType": "image/png",
    "bytes": 1,
    "width": 1,
    "height": 1,
}

#: The finish translate.ts emits for a ``stop`` (or absent) finish with no block opened.
EMPTY_RESPONSE_FINISH: Final[Chunk] = {
    "kind": "error",
    "failure": {"message": "model returned a completed response with no content", "code": "EMPTY_RESPONSE"},
}

_REPLAY_RESPONSE: Final[Chunk] = {"responseId": "resp-1"}


# --- invariant.spec.ts --------------------------------------------------------------------------------------------

_INVARIANT_CASES = [
    UpstreamCase(
        name="inv_interleaved_grammar",
        source=f"{INVARIANT}: accepts a complete interleaved stream grammar",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "a"},
            {"type": "block-start", "index": 1, "blockType": "reasoning"},
            {"type": "reasoning-delta", "index": 1, "text": "b"},
            {"type": "block-end", "index": 1, "block": {"type": "reasoning", "text": "b"}},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "a"}},
            {"type": "block-start", "index": 2, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 2, "id": "c1", "name": "echo", "argumentsDelta": "{}"},
            {
                "type": "block-end",
                "index": 2,
                "block": {"type": "tool-call", "id": "c1", "name": "echo", "arguments": "{}"},
            },
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="BLOCKS_INTERLEAVED",
        strict_at=2,
        expect=Expect(
            blocks=(
                {"type": "text", "text": "a"},
                {"type": "reasoning", "text": "b"},
                {"type": "tool-call", "id": "c1", "name": "echo", "arguments": "{}"},
            ),
            usage={"inputTokens": 1, "outputTokens": 1},
            finish={"kind": "stop"},
        ),
    ),
    UpstreamCase(
        name="inv_negative_index",
        source=f"{INVARIANT}: rejects malformed stream 0",
        chunks=(
            {"type": "block-start", "index": -1, "blockType": "text"},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="invalid",
        upstream_error="LLM stream block index must be a non-negative safe integer, got -1",
        harness="INVALID_CHUNK",
        at=0,
        strict="INVALID_CHUNK",
        strict_at=0,
    ),
    UpstreamCase(
        name="inv_repeated_start",
        source=f"{INVARIANT}: rejects malformed stream 1",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "block-start", "index": 0, "blockType": "text"},
        ),
        upstream="invalid",
        upstream_error="LLM stream repeated block-start index 0",
        harness="INDEX_OUT_OF_ORDER",
        at=1,
        strict="BLOCKS_INTERLEAVED",
        strict_at=1,
    ),
    UpstreamCase(
        name="inv_delta_without_block",
        source=f"{INVARIANT}: rejects malformed stream 2",
        chunks=({"type": "text-delta", "index": 0, "text": "x"},),
        upstream="invalid",
        upstream_error=TEXT_DELTA_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
    ),
    UpstreamCase(
        name="inv_delta_wrong_type",
        source=f"{INVARIANT}: rejects malformed stream 3",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "reasoning"},
            {"type": "text-delta", "index": 0, "text": "x"},
        ),
        upstream="invalid",
        upstream_error="text delta at index 0 requires an open text block, got reasoning",
        harness="BLOCK_TYPE_MISMATCH",
        at=1,
        strict="BLOCK_TYPE_MISMATCH",
        strict_at=1,
    ),
    UpstreamCase(
        name="inv_end_without_block",
        source=f"{INVARIANT}: rejects malformed stream 4",
        chunks=({"type": "block-end", "index": 0, "block": {"type": "text", "text": ""}},),
        upstream="invalid",
        upstream_error=END_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
    ),
    UpstreamCase(
        name="inv_end_wrong_type",
        source=f"{INVARIANT}: rejects malformed stream 5",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": ""}},
        ),
        upstream="invalid",
        upstream_error="LLM stream block-end index 0 closes reasoning, expected text",
        harness="BLOCK_TYPE_MISMATCH",
        at=1,
        strict="BLOCK_TYPE_MISMATCH",
        strict_at=1,
    ),
    UpstreamCase(
        name="inv_usage_twice",
        source=f"{INVARIANT}: rejects malformed stream 6",
        chunks=(
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        ),
        upstream="invalid",
        upstream_error="LLM stream emitted usage more than once",
        harness="USAGE_DUPLICATE",
        at=1,
        strict="USAGE_DUPLICATE",
        strict_at=1,
    ),
    UpstreamCase(
        name="inv_finish_with_open_block",
        source=f"{INVARIANT}: rejects malformed stream 7",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="invalid",
        upstream_error="LLM stream finished with 1 open block(s)",
        harness="BLOCK_NOT_CLOSED",
        at=1,
        strict="BLOCK_NOT_CLOSED",
        strict_at=1,
    ),
    UpstreamCase(
        name="inv_usage_after_finish",
        source=f"{INVARIANT}: rejects malformed stream 8",
        chunks=(
            {"type": "finish", "reason": {"kind": "stop"}},
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        ),
        upstream="invalid",
        upstream_error="LLM stream emitted usage after terminal finish",
        harness="CHUNK_AFTER_FINISH",
        at=1,
        strict="USAGE_MISSING",
        strict_at=0,
        note="under STRICT the stop finish at chunk 0 already fails: it needs a usage before it",
    ),
    UpstreamCase(
        name="inv_empty_stream",
        source=f"{INVARIANT}: rejects malformed stream 9",
        chunks=(),
        upstream="invalid",
        upstream_error=NO_FINISH,
        harness="STREAM_TRUNCATED",
        at=0,
        strict="STREAM_TRUNCATED",
        strict_at=0,
    ),
]


# --- assembler.spec.ts --------------------------------------------------------------------------------------------

#: What every assembler case asserts besides upstream's validator verdict.
_ASSEMBLER_NOTE = "the test asserts what BlockAssembler builds; upstream's validator rejects the stream"

_ASSEMBLER_CASES = [
    UpstreamCase(
        name="asm_interleaved_deltas",
        source=f"{ASSEMBLER}: assembles interleaved text, reasoning, and tool-call deltas",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "reasoning"},
            {"type": "reasoning-delta", "index": 0, "text": "thinking…"},
            {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "thinking…"}},
            {"type": "block-start", "index": 1, "blockType": "text"},
            {"type": "text-delta", "index": 1, "text": "Hello"},
            {"type": "text-delta", "index": 1, "text": " world"},
            {"type": "block-start", "index": 2, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 2, "id": "call-1", "name": "echo", "argumentsDelta": '{"text":'},
            {"type": "tool-call-delta", "index": 2, "id": "call-1", "argumentsDelta": '"hi"}'},
            {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 5}},
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ),
        upstream="invalid",
        upstream_error="LLM stream finished with 2 open block(s)",
        harness="BLOCK_NOT_CLOSED",
        at=10,
        strict="BLOCKS_INTERLEAVED",
        strict_at=6,
        note=_ASSEMBLER_NOTE + " (blocks 1 and 2 never get their block-end)",
    ),
    UpstreamCase(
        name="asm_block_end_recorded",
        source=f"{ASSEMBLER}: records the completed block from block-end",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "hi"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
        ),
        upstream="invalid",
        upstream_error=NO_FINISH,
        harness="STREAM_TRUNCATED",
        at=3,
        strict="STREAM_TRUNCATED",
        strict_at=3,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_implicit_blocks",
        source=f"{ASSEMBLER}: tolerates deltas without explicit block-start/end",
        chunks=({"type": "text-delta", "index": 0, "text": "implicit"},),
        upstream="invalid",
        upstream_error=TEXT_DELTA_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_undefined_usage",
        source=f"{ASSEMBLER}: returns undefined usage when no usage chunk was received",
        chunks=({"type": "text-delta", "index": 0, "text": "no usage"},),
        upstream="invalid",
        upstream_error=TEXT_DELTA_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_reuses_partial",
        source=f"{ASSEMBLER}: reuses an existing partial when ensure() is called with a tracked index",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "hi"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
        ),
        upstream="invalid",
        upstream_error=NO_FINISH,
        harness="STREAM_TRUNCATED",
        at=3,
        strict="STREAM_TRUNCATED",
        strict_at=3,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_unknown_type_open",
        source=f"{ASSEMBLER}: throws from assemble() when a partial has an unhandled blockType",
        chunks=({"type": "block-start", "index": 0, "blockType": "video"},),
        upstream="invalid",
        upstream_error=NO_FINISH,
        harness="STREAM_TRUNCATED",
        at=1,
        strict="INVALID_CHUNK",
        strict_at=0,
        note=_ASSEMBLER_NOTE + "; the validator takes the unknown block type and fails only at the end",
    ),
    UpstreamCase(
        name="asm_duplicate_start",
        source=f"{ASSEMBLER}: ignores duplicate block-start for the same index",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "one"},
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": " two"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "one two"}},
        ),
        upstream="invalid",
        upstream_error="LLM stream repeated block-start index 0",
        harness="INDEX_OUT_OF_ORDER",
        at=2,
        strict="BLOCKS_INTERLEAVED",
        strict_at=2,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_straggler_delta",
        source=f"{ASSEMBLER}: ignores tool-call-delta stragglers after block-end",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "c1", "name": "echo", "argumentsDelta": "{}"},
            {
                "type": "block-end",
                "index": 0,
                "block": {"type": "tool-call", "id": "c1", "name": "echo", "arguments": "{}"},
            },
            {"type": "tool-call-delta", "index": 0, "id": "c1", "name": "evil", "argumentsDelta": "oops"},
        ),
        upstream="invalid",
        upstream_error="tool-call delta at index 0 requires an open tool-call block, got undefined",
        harness="BLOCK_NOT_OPEN",
        at=3,
        strict="BLOCK_NOT_OPEN",
        strict_at=3,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_delta_without_id",
        source=f"{ASSEMBLER}: assembles tool-call with generated id fallback when no id provided",
        chunks=({"type": "tool-call-delta", "index": 0, "argumentsDelta": "{}"},),
        upstream="invalid",
        upstream_error="tool-call delta at index 0 requires an open tool-call block, got undefined",
        harness="INVALID_CHUNK",
        at=0,
        strict="INVALID_CHUNK",
        strict_at=0,
        note=_ASSEMBLER_NOTE + "; streamfsm's first check is the missing id (SPEC §3: shape before block)",
    ),
    UpstreamCase(
        name="asm_usage_getter",
        source=f"{ASSEMBLER}: exposes usage via the getter when a usage chunk was received",
        chunks=(
            {"type": "text-delta", "index": 0, "text": "msg"},
            {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 3}},
        ),
        upstream="invalid",
        upstream_error=TEXT_DELTA_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_replay_max_tokens_prune",
        source=f"{ASSEMBLER}: prunes per-block replay entries with the tool calls a max-tokens finish drops",
        chunks=(
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "lead"}},
            {
                "type": "block-end",
                "index": 1,
                "block": {"type": "tool-call", "id": "c1", "name": "echo", "arguments": '{"text":'},
            },
            {"type": "block-end", "index": 2, "block": {"type": "reasoning", "text": "tail"}},
            {
                "type": "finish",
                "reason": {"kind": "max-tokens"},
                "replayState": {"response": _REPLAY_RESPONSE, "blocks": ["meta-0", "meta-1", "meta-2"]},
            },
        ),
        upstream="invalid",
        upstream_error=END_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_replay_misaligned",
        source=f"{ASSEMBLER}: omits replay metadata whose per-block entries misalign with the emitted blocks",
        chunks=(
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "one"}},
            {"type": "block-end", "index": 1, "block": {"type": "text", "text": "two"}},
            {
                "type": "finish",
                "reason": {"kind": "stop"},
                "replayState": {"response": _REPLAY_RESPONSE, "blocks": ["meta-0"]},
            },
        ),
        upstream="invalid",
        upstream_error=END_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_replay_unchanged",
        source=f"{ASSEMBLER}: passes replay metadata through unchanged when assembly drops nothing",
        chunks=(
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "partial"}},
            {
                "type": "block-end",
                "index": 1,
                "block": {"type": "tool-call", "id": "c1", "name": "echo", "arguments": "{}"},
            },
            {
                "type": "finish",
                "reason": {"kind": "tool-calls"},
                "replayState": {"response": _REPLAY_RESPONSE, "blocks": ["meta-0", "meta-1"]},
            },
        ),
        upstream="invalid",
        upstream_error=END_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_replay_no_entries",
        source=f"{ASSEMBLER}: keeps a max-tokens replay state with no per-block entries across a tool-call drop",
        chunks=(
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "partial"}},
            {
                "type": "block-end",
                "index": 1,
                "block": {"type": "tool-call", "id": "c1", "name": "echo", "arguments": '{"text":'},
            },
            {"type": "finish", "reason": {"kind": "max-tokens"}, "replayState": {"response": _REPLAY_RESPONSE}},
        ),
        upstream="invalid",
        upstream_error=END_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_replay_text_only",
        source=f"{ASSEMBLER}: keeps a text-only max-tokens response and its replay metadata intact",
        chunks=(
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "partial"}},
            {
                "type": "finish",
                "reason": {"kind": "max-tokens"},
                "replayState": {"response": _REPLAY_RESPONSE, "blocks": ["meta-0"]},
            },
        ),
        upstream="invalid",
        upstream_error=END_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_rogue_chunk",
        source=f"{ASSEMBLER}: BlockAssembler.push rejects chunks outside the closed StreamChunk union",
        chunks=({"type": "rogue-chunk"},),
        upstream="invalid",
        upstream_error=NO_FINISH,
        harness="INVALID_CHUNK",
        at=0,
        strict="INVALID_CHUNK",
        strict_at=0,
        note="the test asserts BlockAssembler.push throws; validateStream's switch has no case for an unknown "
        "chunk type and lets it through, and fails only because no finish comes",
    ),
    UpstreamCase(
        name="asm_duplicate_close",
        source=f"{ASSEMBLER}: first block-end wins: a duplicate block-end for a closed index is ignored",
        chunks=(
            {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "first"}},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "second"}},
        ),
        upstream="invalid",
        upstream_error=END_NOT_OPEN_0,
        harness="BLOCK_NOT_OPEN",
        at=0,
        strict="BLOCK_NOT_OPEN",
        strict_at=0,
        note=_ASSEMBLER_NOTE,
    ),
    UpstreamCase(
        name="asm_interrupted_open_text",
        source=f"{ASSEMBLER}: keeps closed and open text/reasoning blocks with streamed content, in order",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "reasoning"},
            {"type": "reasoning-delta", "index": 0, "text": "planning"},
            {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "planning"}},
            {"type": "block-start", "index": 1, "blockType": "text"},
            {"type": "text-delta", "index": 1, "text": "half an ans"},
        ),
        upstream="invalid",
        upstream_error=NO_FINISH,
        harness="STREAM_TRUNCATED",
        at=5,
        strict="STREAM_TRUNCATED",
        strict_at=5,
        note=_ASSEMBLER_NOTE + " (a stream cut off by interruption)",
    ),
    UpstreamCase(
        name="asm_interrupted_tool_calls",
        source=f"{ASSEMBLER}: drops tool calls whether open or closed — interruption precedes dispatch",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "calling"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "calling"}},
            {"type": "block-start", "index": 1, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 1, "id": "c1", "name": "read", "argumentsDelta": '{"a":1}'},
            {
                "type": "block-end",
                "index": 1,
                "block": {"type": "tool-call", "id": "c1", "name": "read", "arguments": '{"a":1}'},
            },
            {"type": "block-start", "index": 2, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 2, "id": "c2", "name": "read", "argumentsDelta": '{"pa'},
        ),
        upstream="invalid",
        upstream_error=NO_FINISH,
        harness="STREAM_TRUNCATED",
        at=8,
        strict="STREAM_TRUNCATED",
        strict_at=8,
        note=_ASSEMBLER_NOTE + " (a stream cut off by interruption)",
    ),
    UpstreamCase(
        name="asm_interrupted_unknown_type",
        source=f"{ASSEMBLER}: drops empty and whitespace-only text/reasoning blocks and unknown open block types",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "  \n"},
            {"type": "block-start", "index": 1, "blockType": "mystery"},
            {"type": "block-start", "index": 2, "blockType": "reasoning"},
        ),
        upstream="invalid",
        upstream_error=NO_FINISH,
        harness="STREAM_TRUNCATED",
        at=4,
        strict="INVALID_CHUNK",
        strict_at=2,
        note=_ASSEMBLER_NOTE + " (a stream cut off by interruption; three blocks open at once)",
    ),
]


# --- translate.spec.ts: what translate() yields for each test's DeepSeek payloads ---------------------------------

_TRANSLATE_CASES = [
    UpstreamCase(
        name="ds_text_deferred_finish",
        source=f"{TRANSLATE}: streams a text block and defers finish to DONE",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "Hel"},
            {"type": "text-delta", "index": 0, "text": "lo"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello"}},
            {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 2}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict=None,
        expect=Expect(
            blocks=({"type": "text", "text": "Hello"},),
            usage={"inputTokens": 5, "outputTokens": 2},
            finish={"kind": "stop"},
        ),
    ),
    UpstreamCase(
        name="ds_assembles_message",
        source=f"{TRANSLATE}: assembles into the message BlockAssembler expects",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "hi"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=3,
        expect=Expect(blocks=({"type": "text", "text": "hi"},), finish={"kind": "stop"}),
    ),
    UpstreamCase(
        name="ds_empty_first_reasoning",
        source=f"{TRANSLATE}: does NOT open a reasoning block for the empty first-chunk signature",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "plain"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "plain"}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=3,
        expect=Expect(blocks=({"type": "text", "text": "plain"},), finish={"kind": "stop"}),
    ),
    UpstreamCase(
        name="ds_reasoning_then_text",
        source=f"{TRANSLATE}: streams reasoning then text as separate blocks",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "reasoning"},
            {"type": "reasoning-delta", "index": 0, "text": "think"},
            {"type": "reasoning-delta", "index": 0, "text": "ing"},
            {"type": "block-start", "index": 1, "blockType": "text"},
            {"type": "text-delta", "index": 1, "text": "answer"},
            {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "thinking"}},
            {"type": "block-end", "index": 1, "block": {"type": "text", "text": "answer"}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="BLOCKS_INTERLEAVED",
        strict_at=3,
        expect=Expect(
            blocks=({"type": "reasoning", "text": "thinking"}, {"type": "text", "text": "answer"}),
            finish={"kind": "stop"},
        ),
    ),
    UpstreamCase(
        name="ds_absent_reasoning_field",
        source=f"{TRANSLATE}: treats an entirely absent reasoning_content field as non-thinking",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "x"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=3,
        expect=Expect(blocks=({"type": "text", "text": "x"},), finish={"kind": "stop"}),
    ),
    UpstreamCase(
        name="ds_fragmented_tool_call",
        source=f"{TRANSLATE}: reassembles a tool call from fragmented argument deltas (live capture shape)",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "call_00_x", "name": "get_weather", "argumentsDelta": ""},
            {
                "type": "tool-call-delta",
                "index": 0,
                "id": "call_00_x",
                "name": "get_weather",
                "argumentsDelta": '{"city"',
            },
            {
                "type": "tool-call-delta",
                "index": 0,
                "id": "call_00_x",
                "name": "get_weather",
                "argumentsDelta": ': "Paris"}',
            },
            {
                "type": "block-end",
                "index": 0,
                "block": {
                    "type": "tool-call",
                    "id": "call_00_x",
                    "name": "get_weather",
                    "arguments": '{"city": "Paris"}',
                },
            },
            {"type": "usage", "usage": {"inputTokens": 28, "outputTokens": 6}},
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ),
        upstream="valid",
        strict=None,
        expect=Expect(
            blocks=({"type": "tool-call", "id": "call_00_x", "name": "get_weather", "arguments": '{"city": "Paris"}'},),
            usage={"inputTokens": 28, "outputTokens": 6},
            finish={"kind": "tool-calls"},
        ),
    ),
    UpstreamCase(
        name="ds_parallel_tool_calls",
        source=f"{TRANSLATE}: disambiguates parallel tool calls by wire index",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "a", "name": "one", "argumentsDelta": "{}"},
            {"type": "block-start", "index": 1, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 1, "id": "b", "name": "two", "argumentsDelta": ""},
            {"type": "tool-call-delta", "index": 1, "id": "b", "name": "two", "argumentsDelta": "{}"},
            {
                "type": "block-end",
                "index": 0,
                "block": {"type": "tool-call", "id": "a", "name": "one", "arguments": "{}"},
            },
            {
                "type": "block-end",
                "index": 1,
                "block": {"type": "tool-call", "id": "b", "name": "two", "arguments": "{}"},
            },
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ),
        upstream="valid",
        strict="BLOCKS_INTERLEAVED",
        strict_at=2,
        expect=Expect(
            blocks=(
                {"type": "tool-call", "id": "a", "name": "one", "arguments": "{}"},
                {"type": "tool-call", "id": "b", "name": "two", "arguments": "{}"},
            ),
            finish={"kind": "tool-calls"},
        ),
    ),
    UpstreamCase(
        name="ds_text_and_tool_call",
        source=f"{TRANSLATE}: interleaves text and tool-call blocks with distinct indices",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "Checking."},
            {"type": "block-start", "index": 1, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 1, "id": "c", "name": "f", "argumentsDelta": "{}"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Checking."}},
            {
                "type": "block-end",
                "index": 1,
                "block": {"type": "tool-call", "id": "c", "name": "f", "arguments": "{}"},
            },
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ),
        upstream="valid",
        strict="BLOCKS_INTERLEAVED",
        strict_at=2,
        expect=Expect(
            blocks=(
                {"type": "text", "text": "Checking."},
                {"type": "tool-call", "id": "c", "name": "f", "arguments": "{}"},
            ),
            finish={"kind": "tool-calls"},
        ),
    ),
    UpstreamCase(
        name="ds_trailing_usage",
        source=f"{TRANSLATE}: takes usage from a trailing usage-only chunk (docs shape)",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "x"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}},
            {"type": "usage", "usage": {"inputTokens": 9, "outputTokens": 1}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict=None,
        expect=Expect(
            blocks=({"type": "text", "text": "x"},),
            usage={"inputTokens": 9, "outputTokens": 1},
            finish={"kind": "stop"},
        ),
    ),
    UpstreamCase(
        name="ds_last_usage_wins",
        source=f"{TRANSLATE}: last usage wins when both attached and trailing arrive",
        chunks=(
            {"type": "usage", "usage": {"inputTokens": 2, "outputTokens": 2}},
            {"type": "finish", "reason": EMPTY_RESPONSE_FINISH},
        ),
        upstream="valid",
        strict=None,
        expect=Expect(blocks=(), usage={"inputTokens": 2, "outputTokens": 2}, finish=EMPTY_RESPONSE_FINISH),
    ),
    UpstreamCase(
        name="ds_default_stop",
        source=f"{TRANSLATE}: defaults to finish stop when no finish_reason ever arrives",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "x"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=3,
        expect=Expect(blocks=({"type": "text", "text": "x"},), finish={"kind": "stop"}),
    ),
    UpstreamCase(
        name="ds_no_usage_chunk",
        source=f"{TRANSLATE}: omits the usage chunk when none arrived",
        chunks=({"type": "finish", "reason": EMPTY_RESPONSE_FINISH},),
        upstream="valid",
        strict=None,
        expect=Expect(blocks=(), finish=EMPTY_RESPONSE_FINISH),
    ),
    UpstreamCase(
        name="ds_no_choices",
        source=f"{TRANSLATE}: handles chunks with no choices at all",
        chunks=({"type": "finish", "reason": EMPTY_RESPONSE_FINISH},),
        upstream="valid",
        strict=None,
        expect=Expect(blocks=(), finish=EMPTY_RESPONSE_FINISH),
    ),
    UpstreamCase(
        name="ds_empty_stop_after_usage",
        source=f"{TRANSLATE}: classifies an explicit stop with no opened blocks as EMPTY_RESPONSE, after usage",
        chunks=(
            {"type": "usage", "usage": {"inputTokens": 7, "outputTokens": 0}},
            {"type": "finish", "reason": EMPTY_RESPONSE_FINISH},
        ),
        upstream="valid",
        strict=None,
        expect=Expect(blocks=(), usage={"inputTokens": 7, "outputTokens": 0}, finish=EMPTY_RESPONSE_FINISH),
    ),
    UpstreamCase(
        name="ds_reasoning_only_stop",
        source=f"{TRANSLATE}: keeps a reasoning-only stream a successful stop (any opened block counts)",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "reasoning"},
            {"type": "reasoning-delta", "index": 0, "text": "mull"},
            {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "mull"}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=3,
        expect=Expect(blocks=({"type": "reasoning", "text": "mull"},), finish={"kind": "stop"}),
    ),
    UpstreamCase(
        name="ds_length_no_blocks",
        source=f"{TRANSLATE}: leaves non-stop finishes unclassified even with no opened blocks",
        chunks=({"type": "finish", "reason": {"kind": "max-tokens"}},),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=0,
        expect=Expect(blocks=(), finish={"kind": "max-tokens"}),
    ),
    UpstreamCase(
        name="ds_no_id_no_name",
        source=f"{TRANSLATE}: handles deltas that never carry id or name (empty-string fallbacks)",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": "{}"},
            {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "", "name": "", "arguments": "{}"}},
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ),
        upstream="valid",
        strict="INVALID_CHUNK",
        strict_at=1,
        expect=Expect(
            blocks=({"type": "tool-call", "id": "", "name": "", "arguments": "{}"},),
            finish={"kind": "tool-calls"},
        ),
    ),
    UpstreamCase(
        name="ds_no_arguments_field",
        source=f"{TRANSLATE}: handles tool_call deltas with a function object but no arguments field",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "c", "name": "f", "argumentsDelta": ""},
            {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c", "name": "f", "arguments": ""}},
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ),
        upstream="valid",
        strict="TOOL_ARGUMENTS_INVALID",
        strict_at=2,
        expect=Expect(
            blocks=({"type": "tool-call", "id": "c", "name": "f", "arguments": ""},),
            finish={"kind": "tool-calls"},
        ),
    ),
    UpstreamCase(
        name="ds_no_function_object",
        source=f"{TRANSLATE}: handles tool_call deltas with no function object at all",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": ""},
            {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c", "name": "", "arguments": ""}},
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ),
        upstream="valid",
        expect=Expect(
            blocks=({"type": "tool-call", "id": "c", "name": "", "arguments": ""},),
            finish={"kind": "tool-calls"},
        ),
        note="STRICT is not asserted: both the empty name at block-end and the empty arguments break its rules",
    ),
]


# --- turns.spec.ts: the chunks its scripted model emits ------------------------------------------------------------

_TURNS_CASES = [
    UpstreamCase(
        name="acp_max_tokens_turn",
        source=f"{TURNS}: maps a max-token turn to end_turn without losing its committed text",
        chunks=max_tokens_response("cut off"),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=9,
        expect=Expect(blocks=({"type": "text", "text": "cut off"},), finish={"kind": "max-tokens"}),
    ),
    UpstreamCase(
        name="acp_image_delivered",
        source=f"{TURNS}: delivers a committed assistant image as verified ACP base64",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "image"},
            {"type": "block-end", "index": 0, "block": {"type": "image", "attachment": _image(1, "image/png")}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=2,
        expect=Expect(
            blocks=({"type": "image", "attachment": _image(1, "image/png")},),
            finish={"kind": "stop"},
        ),
    ),
    UpstreamCase(
        name="acp_text_image_text",
        source=f"{TURNS}: preserves committed text/image/text order on the ACP wire",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "before"}},
            {"type": "block-start", "index": 1, "blockType": "image"},
            {"type": "block-end", "index": 1, "block": {"type": "image", "attachment": _image(2, "image/jpeg")}},
            {"type": "block-start", "index": 2, "blockType": "text"},
            {"type": "block-end", "index": 2, "block": {"type": "text", "text": "after"}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=6,
        expect=Expect(
            blocks=(
                {"type": "text", "text": "before"},
                {"type": "image", "attachment": _image(2, "image/jpeg")},
                {"type": "text", "text": "after"},
            ),
            finish={"kind": "stop"},
        ),
    ),
    UpstreamCase(
        name="acp_image_delivery_drains",
        source=f"{TURNS}: does not settle a prompt before ordered output delivery drains",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "image"},
            {"type": "block-end", "index": 0, "block": {"type": "image", "attachment": _image(3, "image/png")}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=2,
        expect=Expect(
            blocks=({"type": "image", "attachment": _image(3, "image/png")},),
            finish={"kind": "stop"},
        ),
    ),
    UpstreamCase(
        name="acp_image_missing_attachment",
        source=f"{TURNS}: fails prompt delivery when a committed image attachment is missing",
        chunks=(
            {"type": "block-start", "index": 0, "blockType": "image"},
            {"type": "block-end", "index": 0, "block": {"type": "image", "attachment": MISSING_IMAGE}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ),
        upstream="valid",
        strict="USAGE_MISSING",
        strict_at=2,
        expect=Expect(blocks=({"type": "image", "attachment": MISSING_IMAGE},), finish={"kind": "stop"}),
        note="the stream is valid; the prompt fails later, when the attachment store cannot read the image",
    ),
    UpstreamCase(
        name="acp_failed_turn",
        source=f"{TURNS}: rejects a failed turn and never publishes its partial chunks",
        chunks=error_response("provider boom"),
        upstream="valid",
        strict=None,
        expect=_error_expect("provider boom"),
        note="an error finish may leave a block open (validateStream exempts error and aborted)",
    ),
    UpstreamCase(
        name="acp_observer_throws",
        source=f"{TURNS}: settles even when an earlier turn observer throws",
        chunks=text_response("answer"),
        upstream="valid",
        strict=None,
        expect=_text_expect("answer"),
    ),
    UpstreamCase(
        name="acp_injection_first_step",
        source=f"{TURNS}: correlates the owning prompt when a synchronous injection joins its first step",
        chunks=text_response("real answer"),
        upstream="valid",
        strict=None,
        expect=_text_expect("real answer"),
    ),
    UpstreamCase(
        name="acp_history_replaced",
        source=f"{TURNS}: correlates a prompt whose step history is replaced",
        chunks=text_response("rewritten answer"),
        upstream="valid",
        strict=None,
        expect=_text_expect("rewritten answer"),
    ),
    UpstreamCase(
        name="acp_unrelated_failure",
        source=f"{TURNS}: does not attribute an unrelated Agent failure during prompt admission",
        chunks=text_response("answer"),
        upstream="valid",
        strict=None,
        expect=_text_expect("answer"),
    ),
    UpstreamCase(
        name="acp_cancel_running",
        source=f"{TURNS}: cancels a running turn and records the aborted outcome",
        chunks=HANG,
        upstream="invalid",
        upstream_error=NO_FINISH,
        harness="STREAM_TRUNCATED",
        at=2,
        strict="STREAM_TRUNCATED",
        strict_at=2,
        note="the 'hang' script: when cancelled the adapter throws, and validateStream passes the exception on; "
        "the chunks are a stream cut off without a finish, as the recorded cancel session is",
    ),
    UpstreamCase(
        name="acp_idle_cancel",
        source=f"{TURNS}: an idle cancel does not affect the following prompt",
        chunks=text_response("answer"),
        upstream="valid",
        strict=None,
        expect=_text_expect("answer"),
    ),
    UpstreamCase(
        name="acp_late_end_next",
        source=f"{TURNS}: a late end from a cancelled turn cannot settle the next prompt (second response)",
        chunks=text_response("next"),
        upstream="valid",
        strict=None,
        expect=_text_expect("next"),
        note="the first response of this test is the 'hang' script (acp_cancel_running)",
    ),
    UpstreamCase(
        name="acp_retry_failed",
        source=f"{TURNS}: a retry turn adopts the prompt instead of rejecting at the failed turn end (first response)",
        chunks=error_response("transient boom"),
        upstream="valid",
        strict=None,
        expect=_error_expect("transient boom"),
    ),
    UpstreamCase(
        name="acp_retry_recovered",
        source=f"{TURNS}: a retry turn adopts the prompt instead of rejecting at the failed turn end (second response)",
        chunks=text_response("recovered"),
        upstream="valid",
        strict=None,
        expect=_text_expect("recovered"),
    ),
    UpstreamCase(
        name="acp_no_retry",
        source=f"{TURNS}: a failed turn with no retry still rejects",
        chunks=error_response("terminal boom"),
        upstream="valid",
        strict=None,
        expect=_error_expect("terminal boom"),
    ),
]

#: Every transcribed stream, in the order of the spec files.
CASES: Final[list[UpstreamCase]] = [*_INVARIANT_CASES, *_ASSEMBLER_CASES, *_TRANSLATE_CASES, *_TURNS_CASES]

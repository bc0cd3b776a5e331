"""Messages, word for word: each says what came, what was expected instead, and the state it came in.

``tests/protocol/test_codes.py`` checks that a message holds the words that matter; this module pins every kind of
message the machine writes (one case a message and variant: no block or several open, values cut at
40 characters, a mapping that cannot be read, ...), as the first error and as the error every later
call repeats, through ``feed`` and ``feed_many`` (and the same from every other entry point, with the state the
chunk met and what that state accepted); and every kind of note (what HARNESS accepted that STRICT would have
refused, SPEC §4).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import streamfsm as sf
from streamfsm._messages import first_difference
from streamfsm._table import accepts

from ..builders import (
    FEEDS,
    HARNESS,
    STOP,
    STRICT,
    TEXT,
    E,
    U,
    agree,
    end_block,
    end_image,
    end_reasoning,
    end_text,
    end_tool,
    finish,
    reasoning_delta,
    start,
    text_delta,
    tool_block,
    tool_delta,
)

S, H, L = STRICT, HARNESS, sf.Limits
OPEN_TOOL = [start(0, "tool-call"), tool_delta(0, "c1", "{", name="f")]  # block 0 open, id c1, name f
LONG = "x" * 50
LIST = "[" + "1, " * 20 + "1]"


class Unreadable(Mapping[str, Any]):
    """A mapping that raises when it is read."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no reading me")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("no reading me")

    def __len__(self) -> int:
        return 1


#: (policy, limits, a stream whose last chunk is rejected, code, its position, the message)
MESSAGES: dict[str, tuple[sf.Policy, sf.Limits | None, list[Any], sf.ErrorCode, int, str]] = {
    "a delta after finish": (
        S, None, [U, STOP, text_delta(0, "x")],
        E.CHUNK_AFTER_FINISH, 2,
        'text-delta after finish; nothing may follow finish (state FINISHED)',
    ),
    "garbage after finish": (
        S, None, [U, STOP, 7],
        E.CHUNK_AFTER_FINISH, 2,
        'chunk after finish; nothing may follow finish (state FINISHED)',
    ),
    "an unknown type after finish": (
        S, None, [U, STOP, {"type": "nonsense"}],
        E.CHUNK_AFTER_FINISH, 2,
        'chunk after finish; nothing may follow finish (state FINISHED)',
    ),
    "a field of the wrong type": (
        S, None, [start(0, "text"), {"type": "text-delta", "index": 0, "text": 5}],
        E.INVALID_CHUNK, 1,
        "invalid text-delta: field 'text' must be a string, got int 5 (state IN_BLOCK)",
    ),
    "not a mapping": (
        S, None, [[1]],
        E.INVALID_CHUNK, 0,
        'invalid chunk: a chunk must be an object, got list [1] (state READY)',
    ),
    "a mapping whose reading raises": (
        S, None, [Unreadable()],
        E.INVALID_CHUNK, 0,
        'invalid chunk: reading it raised RuntimeError: no reading me (state READY)',
    ),
    "a delta before any block": (
        S, None, [text_delta(0, "x")],
        E.BLOCK_NOT_OPEN, 0,
        'text-delta for block 0, but no block is open (state READY); expected block-start, usage, '
        'finish',
    ),
    "a block-end before any block": (
        S, None, [end_text(0, "x")],
        E.BLOCK_NOT_OPEN, 0,
        'block-end for block 0, but no block is open (state READY); expected block-start, usage, finish',
    ),
    "interleaved under STRICT": (
        S, None, [start(0, "text"), start(1, "reasoning")],
        E.BLOCKS_INTERLEAVED, 1,
        'block-start for block 1 (reasoning) while block 0 (text) is open (state IN_BLOCK); under '
        'policy strict blocks may not interleave: expected block-end for block 0 first',
    ),
    "interleaved after usage": (
        S, None, [start(0, "text"), U, start(1, "reasoning")],
        E.BLOCKS_INTERLEAVED, 2,
        'block-start for block 1 (reasoning) while block 0 (text) is open (state USAGE); under policy '
        'strict blocks may not interleave: expected block-end for block 0 first',
    ),
    "a block-start after usage": (
        S, None, [*TEXT, U, start(1, "text")],
        E.CHUNK_AFTER_USAGE, 4,
        'block-start for block 1 (text) after usage (state USAGE); after usage only finish may come',
    ),
    "a delta after usage": (
        S, None, [start(0, "text"), U, text_delta(0, "x")],
        E.CHUNK_AFTER_USAGE, 2,
        'text-delta for block 0 after usage (state USAGE); after usage only finish may come',
    ),
    "a second usage": (
        S, None, [U, U],
        E.USAGE_DUPLICATE, 1,
        'a second usage (state USAGE); a stream carries at most one usage',
    ),
    "stop with a block open": (
        H, None, [start(0, "reasoning"), start(1, "text"), U, STOP],
        E.BLOCK_NOT_CLOSED, 3,
        'finish stop while block 0 (reasoning), block 1 (text) is open (state USAGE); a stop finish '
        'needs every block ended first (only max-tokens, error and aborted may cut a block off)',
    ),
    "tool-calls with a block open, in a block": (
        S, None, [start(0, "text"), finish("tool-calls")],
        E.BLOCK_NOT_CLOSED, 1,
        'finish tool-calls while block 0 (text) is open (state IN_BLOCK); a tool-calls finish needs '
        'every block ended first (only max-tokens, error and aborted may cut a block off)',
    ),
    "index out of order": (
        S, None, [*TEXT, start(7, "text")],
        E.INDEX_OUT_OF_ORDER, 3,
        'block-start with index 7, expected index 1: the n-th block of a stream has index n (state '
        'READY)',
    ),
    "a delta for a block not open": (
        S, None, [start(0, "text"), text_delta(3, "x")],
        E.BLOCK_NOT_OPEN, 1,
        'text-delta for block 3, but block 0 (text) is open (state IN_BLOCK)',
    ),
    "a delta for a block not open, two open": (
        H, None, [start(0, "text"), start(1, "reasoning"), text_delta(3, "x")],
        E.BLOCK_NOT_OPEN, 2,
        'text-delta for block 3, but block 0 (text), block 1 (reasoning) is open (state IN_BLOCK)',
    ),
    "a provider's event without a type": (
        S, None, [{"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]}],
        E.INVALID_CHUNK, 0,
        "invalid chunk: field 'type' is missing; it is an event of the OpenAI chat completions wire API, not a "
        "block-protocol chunk: convert them with sf.from_openai_chunks(...) (state READY)",
    ),
    "a provider's event with a type of its own": (
        S, None, [{"type": "message_start", "message": {"id": "m"}}],
        E.INVALID_CHUNK, 0,
        "invalid chunk: field 'type' unknown chunk type 'message_start'; expected one of block-start, text-delta, "
        "reasoning-delta, tool-call-delta, block-end, usage, finish; it is an event of the Anthropic wire API, not a "
        "block-protocol chunk: convert them with sf.from_anthropic_events(...) (state READY)",
    ),
    "a provider's event with a bad field": (
        S, None, [{"type": "block-start", "index": -1, "blockType": "text", "choices": []}],
        E.INVALID_CHUNK, 0,
        "invalid block-start: field 'index' must be between 0 and 9007199254740991, got -1 (state READY)",
    ),
    "a block-end of another type": (
        S, None, [start(0, "text"), end_reasoning(0, "x")],
        E.BLOCK_TYPE_MISMATCH, 1,
        'block-end carries a reasoning block for block 0 (text) (state IN_BLOCK)',
    ),
    "a delta of another type": (
        S, None, [start(0, "text"), reasoning_delta(0, "x")],
        E.BLOCK_TYPE_MISMATCH, 1,
        'reasoning-delta for block 0 (text); a text block takes text-delta (state IN_BLOCK)',
    ),
    "a tool delta with another id": (
        S, None, [*OPEN_TOOL, tool_delta(0, "c2", "}")],
        E.TOOL_CALL_CONFLICT, 2,
        "tool-call-delta for block 0 carries id 'c2', but the block's id is 'c1': every delta of a "
        'block carries the same id (state IN_BLOCK)',
    ),
    "a tool delta with another name": (
        S, None, [*OPEN_TOOL, tool_delta(0, "c1", "}", name="g")],
        E.TOOL_CALL_CONFLICT, 2,
        "tool-call-delta for block 0 names the tool 'g', but an earlier delta named it 'f' (state "
        'IN_BLOCK)',
    ),
    "a tool delta reusing an id": (
        S, None, [*tool_block(0, "c1"), start(1, "tool-call"), tool_delta(1, "c1", "{}")],
        E.TOOL_CALL_CONFLICT, 4,
        "tool-call-delta for block 1 opens call id 'c1', which already belongs to block 0: an id "
        'belongs to one block per stream (state IN_BLOCK)',
    ),
    "a tool delta changing the id two open blocks share": (
        H, None, [*OPEN_TOOL, start(1, "tool-call"), tool_delta(1, "c1", "{"), tool_delta(1, "c2", "}")],
        E.TOOL_CALL_CONFLICT, 4,
        "tool-call-delta for block 1 carries id 'c2', but the block's id is 'c1': every delta of a block "
        "carries the same id (state IN_BLOCK)",
    ),
    "a tool delta with an id after an empty one": (
        H, None, [start(0, "tool-call"), tool_delta(0, "", "{"), tool_delta(0, "c", "}")],
        E.TOOL_CALL_CONFLICT, 2,
        "tool-call-delta for block 0 carries id 'c', but the block's id is '': every delta of a block carries "
        "the same id (state IN_BLOCK)",
    ),
    "a delta for a block that takes none": (
        H, None, [start(0, "video"), text_delta(0, "x")],
        E.BLOCK_TYPE_MISMATCH, 1,
        'text-delta for block 0 (video); a video block takes no deltas (state IN_BLOCK)',
    ),
    "a block-end of an unknown type": (
        H, None, [start(0, "text"), end_block(0, {"type": "video"})],
        E.BLOCK_TYPE_MISMATCH, 1,
        'block-end carries a video block for block 0 (text) (state IN_BLOCK)',
    ),
    **{  # a kind that starts with a vowel takes "an"
        f"a block-end of a type that starts with {kind[0]}": (
            H, None, [start(0, "text"), end_block(0, {"type": kind, "attachment": {"id": "a"}})],
            E.BLOCK_TYPE_MISMATCH, 1,
            f"block-end carries an {kind} block for block 0 (text) (state IN_BLOCK)",
        )
        for kind in ("audio", "embedding", "image", "object", "upload")
    },
    "a delta for an image block": (
        S, None, [start(0, "image"), text_delta(0, "x")],
        E.BLOCK_TYPE_MISMATCH, 1,
        'text-delta for block 0 (image); an image block takes no deltas (state IN_BLOCK)',
    ),
    "an unknown block type": (
        S, None, [start(0, "video")],
        E.INVALID_CHUNK, 0,
        "invalid block-start: field 'blockType' unknown block type 'video'; expected text, reasoning, "
        'tool-call or image (state READY)',
    ),
    "an unknown block type on block-end": (
        S, None, [start(0, "text"), end_block(0, {"type": "video"})],
        E.INVALID_CHUNK, 1,
        "invalid block-end: field 'block.type' unknown block type 'video'; expected text, reasoning, "
        'tool-call or image (state IN_BLOCK)',
    ),
    "a block of an unknown type that is not JSON data": (
        H, None, [start(0, "video"), end_block(0, {"type": "video", "t": float("nan")})],
        E.INVALID_CHUNK, 1,
        "invalid block-end: field 'block' must be JSON data (state IN_BLOCK)",
    ),
    "an attachment that is not an object": (
        S, None, [start(0, "image"), end_block(0, {"type": "image", "attachment": [1]})],
        E.INVALID_CHUNK, 1,
        "invalid block-end: field 'block.attachment' must be an object, got list [1] (state IN_BLOCK)",
    ),
    "an attachment that is not JSON data": (
        S, None, [start(0, "image"), end_image(0, {"a": float("nan")})],
        E.INVALID_CHUNK, 1,
        "invalid block-end: field 'block.attachment' must be JSON data (state IN_BLOCK)",
    ),
    "an unknown finish kind": (
        S, None, [U, finish("paused")],
        E.INVALID_CHUNK, 1,
        "invalid finish: field 'reason.kind' unknown finish kind 'paused'; expected one of stop, tool-calls, "
        'max-tokens, error, aborted (state USAGE)',
    ),
    "a finish of an unknown kind that is not JSON data": (
        H, None, [{"type": "finish", "reason": {"kind": "paused", "x": float("inf")}}],
        E.INVALID_CHUNK, 0,
        "invalid finish: field 'reason' must be JSON data (state READY)",
    ),
    "a finish of an unknown kind with a block open": (
        H, None, [start(0, "text"), finish("paused")],
        E.BLOCK_NOT_CLOSED, 1,
        'finish paused while block 0 (text) is open (state IN_BLOCK); a paused finish needs every block ended '
        'first (only max-tokens, error and aborted may cut a block off)',
    ),
    "an empty id": (
        S, None, [start(0, "tool-call"), tool_delta(0, "", "{")],
        E.INVALID_CHUNK, 1,
        "invalid tool-call-delta: field 'id' must be a non-empty string (state IN_BLOCK)",
    ),
    "an empty name on block-end": (
        S, None, [start(0, "tool-call"), end_tool(0, "c", "", "{}")],
        E.INVALID_CHUNK, 1,
        "invalid block-end: field 'block.name' must be a non-empty string (state IN_BLOCK)",
    ),
    "a block-end reusing an id": (
        S, None, [*tool_block(0, "c1"), start(1, "tool-call"), end_tool(1, "c1", "f", "{}")],
        E.TOOL_CALL_CONFLICT, 4,
        "block-end for block 1 carries call id 'c1', which already belongs to block 0: an id belongs "
        'to one block per stream (state IN_BLOCK)',
    ),
    "a block-end with another id": (
        S, None, [*OPEN_TOOL, end_tool(0, "c2", "f", "{")],
        E.BLOCK_CONTENT_MISMATCH, 2,
        "block-end for block 0 (tool-call) carries id 'c2', but its deltas assembled 'c1' (state "
        "IN_BLOCK); they first differ at character 1: 'c2' against 'c1'",
    ),
    "a block-end with another name": (
        S, None, [*OPEN_TOOL, end_tool(0, "c1", "g", "{")],
        E.BLOCK_CONTENT_MISMATCH, 2,
        "block-end for block 0 (tool-call) carries name 'g', but its deltas assembled 'f' (state "
        "IN_BLOCK); they first differ at character 0: 'g' against 'f'",
    ),
    "a block-end with other arguments": (
        S, None, [*OPEN_TOOL, end_tool(0, "c1", "f", "{}")],
        E.BLOCK_CONTENT_MISMATCH, 2,
        "block-end for block 0 (tool-call) carries arguments '{}', but its deltas assembled '{' (state "
        "IN_BLOCK); they first differ at character 1: '{}' against '{'",
    ),
    "a block-end with other text": (
        S, None, [start(0, "text"), text_delta(0, "assembled"), end_text(0, "carried")],
        E.BLOCK_CONTENT_MISMATCH, 2,
        "block-end for block 0 (text) carries text 'carried', but its deltas assembled 'assembled' "
        "(state IN_BLOCK); they first differ at character 0: 'carried' against 'assembled'",
    ),
    "a block-end with long other text": (
        S, None, [start(0, "text"), text_delta(0, LONG), end_text(0, LONG + "y")],
        E.BLOCK_CONTENT_MISMATCH, 2,
        "block-end for block 0 (text) carries text 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...', but its "
        "deltas assembled 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (state IN_BLOCK); they first differ at "
        "character 50: 'xxxxxxxxxxy' against 'xxxxxxxxxx'",
    ),
    "a block-end with text of 40 characters": (
        S, None, [start(0, "text"), text_delta(0, "a" * 40), end_text(0, "b" * 40)],
        E.BLOCK_CONTENT_MISMATCH, 2,
        "block-end for block 0 (text) carries text 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', but its "
        "deltas assembled 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' (state IN_BLOCK); they first differ at "
        "character 0: 'bbbbbbbbbbbbbbbbbbbb' against 'aaaaaaaaaaaaaaaaaaaa'",
    ),
    "a block-end with text of 41 characters": (
        S, None, [start(0, "text"), text_delta(0, "a" * 41), end_text(0, "b" * 41)],
        E.BLOCK_CONTENT_MISMATCH, 2,
        "block-end for block 0 (text) carries text 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb...', but its "
        "deltas assembled 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' (state IN_BLOCK); they first differ at "
        "character 0: 'bbbbbbbbbbbbbbbbbbbb' against 'aaaaaaaaaaaaaaaaaaaa'",
    ),
    "arguments not an object": (
        S, None, [start(0, "tool-call"), end_tool(0, "call-z", "f", "[1]")],
        E.TOOL_ARGUMENTS_INVALID, 1,
        "tool call 'call-z' (f) in block 0: arguments '[1]' are not a JSON object: arguments must be a "
        'JSON object, got list (state IN_BLOCK)',
    ),
    "long arguments not an object": (
        S, None, [start(0, "tool-call"), end_tool(0, "call-z", "f", LIST)],
        E.TOOL_ARGUMENTS_INVALID, 1,
        "tool call 'call-z' (f) in block 0: arguments '[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, ...' are "
        'not a JSON object: arguments must be a JSON object, got list (state IN_BLOCK)',
    ),
    "usage missing": (
        S, None, [STOP],
        E.USAGE_MISSING, 0,
        'finish stop without usage (state READY); under policy strict a stop finish needs one usage '
        'chunk before it',
    ),
    "usage missing for max-tokens": (
        S, None, [finish("max-tokens")],
        E.USAGE_MISSING, 0,
        'finish max-tokens without usage (state READY); under policy strict a max-tokens finish needs '
        'one usage chunk before it',
    ),
    "tool-calls without a tool call": (
        S, None, [U, finish("tool-calls")],
        E.FINISH_REASON_MISMATCH, 1,
        'finish tool-calls, but the stream completed no tool-call block (state USAGE)',
    ),
    "too many chunks": (
        S, L(max_chunks=2), [start(0, "text"), text_delta(0, "a"), text_delta(0, "b")],
        E.LIMIT_EXCEEDED, 2,
        'limit exceeded: more than 2 chunks (state IN_BLOCK)',
    ),
    "too many blocks": (
        S, L(max_blocks=1), [*TEXT, start(1, "text")],
        E.LIMIT_EXCEEDED, 3,
        'limit exceeded: more than 1 blocks (state READY)',
    ),
    "a block past its bytes": (
        S, L(max_block_bytes=3), [start(0, "text"), text_delta(0, "ab"), text_delta(0, "cd")],
        E.LIMIT_EXCEEDED, 2,
        'limit exceeded: block 0 (text) would hold 4 bytes, more than 3 (state IN_BLOCK)',
    ),
    "a block without deltas past its bytes": (
        S, L(max_block_bytes=3), [start(0, "text"), end_text(0, "abcd")],
        E.LIMIT_EXCEEDED, 1,
        'limit exceeded: block 0 (text) holds more than 3 bytes (state IN_BLOCK)',
    ),
    "a tool call without deltas past its bytes": (
        S, L(max_block_bytes=3), [start(0, "tool-call"), end_tool(0, "c", "f", "{\"a\":1}")],
        E.LIMIT_EXCEEDED, 1,
        'limit exceeded: block 0 (tool-call) holds more than 3 bytes (state IN_BLOCK)',
    ),
    "an image block past its bytes": (
        S, L(max_block_bytes=20), [start(0, "image"), end_image(0, {"id": "x" * 30})],
        E.LIMIT_EXCEEDED, 1,
        'limit exceeded: block 0 (image) holds more than 20 bytes (state IN_BLOCK)',
    ),
    "a stream past its bytes, at a block without deltas": (
        S, L(max_stream_bytes=10), [start(0, "text"), end_text(0, "abcdef"), start(1, "text"), end_text(1, "ghijk")],
        E.LIMIT_EXCEEDED, 3,
        'limit exceeded: the stream would hold 11 bytes, more than 10 (state IN_BLOCK)',
    ),
    "a stream past its bytes, at a delta": (
        S, L(max_stream_bytes=100), [start(0, "text"), *[text_delta(0, "a" * 10)] * 11],
        E.LIMIT_EXCEEDED, 11,
        'limit exceeded: the stream would hold 110 bytes, more than 100 (state IN_BLOCK)',
    ),
    "a stream past its bytes, at a delta to the other open block": (
        H, L(max_stream_bytes=50),
        [start(0, "text"), start(1, "text"), *[text_delta(i % 2, "a" * 10) for i in range(6)]],
        E.LIMIT_EXCEEDED, 7,
        'limit exceeded: the stream would hold 60 bytes, more than 50 (state IN_BLOCK)',
    ),
    "a stream past its bytes, at a block-end while another block is hot": (
        H, L(max_stream_bytes=50),
        [start(0, "text"), start(1, "text"), *[text_delta(1, "b" * 10)] * 4, end_text(0, "abcdefghijk")],
        E.LIMIT_EXCEEDED, 6,
        'limit exceeded: the stream would hold 51 bytes, more than 50 (state IN_BLOCK)',
    ),
    # Block 0's second delta takes the hot path (not yet counted): a delta to block 1 counts it first.
    "a stream past its bytes, at a delta to another block while one is hot": (
        H, L(max_stream_bytes=100),
        [start(0, "text"), start(1, "text"), *[text_delta(0, "a" * 10)] * 2, text_delta(1, "b" * 81)],
        E.LIMIT_EXCEEDED, 4,
        'limit exceeded: the stream would hold 101 bytes, more than 100 (state IN_BLOCK)',
    ),
    # Block 1's two deltas took the hot path (not yet counted): block 0's end counts them before its own bytes.
    "a stream past its bytes, at a block-end while another block's deltas are not yet counted": (
        H, L(max_stream_bytes=200),
        [start(0, "text"), start(1, "text"), *[text_delta(1, "b" * 10)] * 2, end_text(0, "c" * 181)],
        E.LIMIT_EXCEEDED, 4,
        'limit exceeded: the stream would hold 201 bytes, more than 200 (state IN_BLOCK)',
    ),
    # Block 1 is hot with room for 200 bytes; block 0 ends with 180 of them: block 1 stays hot with room for 10.
    "a stream past its bytes, at the deltas of a block still hot after another ended": (
        H, L(max_stream_bytes=200),
        [start(0, "text"), start(1, "text"), text_delta(1, "b" * 10), end_text(0, "c" * 180),
         *[text_delta(1, "b" * 10)] * 2],
        E.LIMIT_EXCEEDED, 5,
        'limit exceeded: the stream would hold 210 bytes, more than 200 (state IN_BLOCK)',
    ),
    "a block of an unknown type past its bytes": (
        H, L(max_block_bytes=20), [start(0, "video"), end_block(0, {"type": "video", "id": "x" * 30})],
        E.LIMIT_EXCEEDED, 1,
        'limit exceeded: block 0 (video) holds more than 20 bytes (state IN_BLOCK)',
    ),
}  # fmt: skip


def first_error(policy: sf.Policy, limits: sf.Limits | None, chunks: list[Any], feed: str) -> tuple[Any, ...]:
    asm = sf.StreamAssembler(policy, limits)
    with pytest.raises(sf.LlmError) as info:
        FEEDS[feed](asm, chunks)
    err = info.value
    return (err.code, err.chunk_index, err.message), asm


@pytest.mark.parametrize("feed", ["feed", "feed_many"])
@pytest.mark.parametrize(
    ("policy", "limits", "chunks", "code", "index", "message"), MESSAGES.values(), ids=MESSAGES.keys()
)
def test_the_message(
    policy: sf.Policy,
    limits: sf.Limits | None,
    chunks: list[Any],
    code: sf.ErrorCode,
    index: int,
    message: str,
    feed: str,
) -> None:
    got, asm = first_error(policy, limits, chunks, feed)
    assert got == (code, index, message)
    assert asm.error is not None and (asm.error.code, asm.error.message) == (code, message)
    assert sf.StreamAssembler().error is None
    for again in (lambda: asm.feed(chunks[0]), asm.close, lambda: asm.feed_many([chunks[0]])):
        with pytest.raises(sf.LlmError) as info:
            again()
        repeat = info.value
        assert (repeat.code, repeat.chunk_index, repeat.message) == (
            code,
            index,
            f"the stream already failed: {message}",
        )
        assert (repeat.state, repeat.expected) == (asm.error.state, asm.error.expected)  # where it failed, still


@pytest.mark.parametrize(
    ("policy", "limits", "chunks", "code", "index", "message"), MESSAGES.values(), ids=MESSAGES.keys()
)
def test_every_entry_point_gives_the_message(
    policy: sf.Policy, limits: sf.Limits | None, chunks: list[Any], code: sf.ErrorCode, index: int, message: str
) -> None:
    """``feed_lines`` (JSON lines, where the chunks are plain JSON), ``assemble``, ``assemble_jsonl``, ``validate``
    and ``aassemble`` give the message ``feed`` gives, with its state and what that state accepted."""
    _, got_code, got_index, got_message, state, expected = agree(chunks, policy, limits)["verdict"]
    assert (got_code, got_index, got_message) == (code, index, message)
    assert state in message and expected == accepts(state, policy)


#: (policy, the chunks before the input ends, the message of STREAM_TRUNCATED at close)
TRUNCATED = {
    "one block open": (
        H, [start(0, "text"), text_delta(0, "a")],
        "the input ended after 2 chunk(s) without a finish (state IN_BLOCK; block 0 (text) still open)",
    ),
    "two blocks open": (
        H, [start(0, "reasoning"), start(1, "tool-call")],
        "the input ended after 2 chunk(s) without a finish (state IN_BLOCK; block 0 (reasoning), "
        "block 1 (tool-call) still open)",
    ),
    "no block open": (H, [U], "the input ended after 1 chunk(s) without a finish (state USAGE)"),
    "an image block and one of an unknown type open": (
        H, [start(0, "video"), start(1, "image")],
        "the input ended after 2 chunk(s) without a finish (state IN_BLOCK; block 0 (video), block 1 (image) "
        "still open)",
    ),
    "nothing": (S, [], "the input ended after 0 chunk(s) without a finish (state READY)"),
}  # fmt: skip


@pytest.mark.parametrize(("policy", "chunks", "message"), TRUNCATED.values(), ids=TRUNCATED.keys())
def test_the_message_of_a_truncated_stream(policy: sf.Policy, chunks: list[Any], message: str) -> None:
    asm = sf.StreamAssembler(policy)
    asm.feed_many(chunks)
    for expected in (message, f"the stream already failed: {message}"):
        with pytest.raises(sf.LlmError) as info:
            asm.close()
        assert (info.value.code, info.value.chunk_index, info.value.message) == (
            E.STREAM_TRUNCATED, len(chunks), expected,
        )  # fmt: skip


#: (policy, raw_arguments, an accepted stream, its notes as (code, position, message); how often each came is
#: tests/protocol/test_policy.py's business)
NOTES: dict[str, tuple[sf.Policy, bool, list[Any], list[tuple[sf.ErrorCode, int, str]]]] = {
    "interleaved blocks, one of an unknown type, a finish of an unknown kind": (
        H, False,
        [start(0, "text"), start(1, "video"), end_block(1, {"type": "video"}), start(2, "image"), end_image(2, {}),
         end_text(0, ""), finish("paused")],
        [(E.INVALID_CHUNK, 1, "invalid block-start: field 'blockType' unknown block type 'video'; expected text, "
          "reasoning, tool-call or image (state IN_BLOCK)"),
         (E.BLOCKS_INTERLEAVED, 1, "block-start for block 1 (video) while block 0 (text) is open (state IN_BLOCK); "
          "under policy strict blocks may not interleave: expected block-end for block 0 first")],
    ),
    "a finish of an unknown kind": (
        H, False, [U, finish("paused")],
        [(E.INVALID_CHUNK, 1, "invalid finish: field 'reason.kind' unknown finish kind 'paused'; expected one of "
          "stop, tool-calls, max-tokens, error, aborted (state USAGE)")],
    ),
    "a block type that is no identifier, cut at 40 characters": (
        H, False, [start(0, "text"), start(1, "v" * 50 + "\n"), end_block(1, {"type": "v" * 50 + "\n"}),
                   end_text(0, ""), U, STOP],
        [(E.INVALID_CHUNK, 1, "invalid block-start: field 'blockType' unknown block type '" + "v" * 37 + "...'; "
          "expected text, reasoning, tool-call or image (state IN_BLOCK)"),
         (E.BLOCKS_INTERLEAVED, 1, "block-start for block 1 ('" + "v" * 37 + "...') while block 0 (text) is open "
          "(state IN_BLOCK); under policy strict blocks may not interleave: expected block-end for block 0 first")],
    ),
    "an empty id": (
        H, False, [start(0, "tool-call"), tool_delta(0, "", "{}")],
        [(E.INVALID_CHUNK, 1, "invalid tool-call-delta: field 'id' must be a non-empty string (state IN_BLOCK)")],
    ),
    "an empty id and name: the id, as STRICT finds it first": (
        H, False, [start(0, "tool-call"), tool_delta(0, "", "{}", name="")],
        [(E.INVALID_CHUNK, 1, "invalid tool-call-delta: field 'id' must be a non-empty string (state IN_BLOCK)")],
    ),
    "an empty name on a block-end": (
        H, False, [start(0, "tool-call"), end_tool(0, "c", "", "{}")],
        [(E.INVALID_CHUNK, 1, "invalid block-end: field 'block.name' must be a non-empty string (state IN_BLOCK)")],
    ),
    "an id a block still open has": (
        H, False, [start(0, "tool-call"), tool_delta(0, "c", "{", name="f"), start(1, "tool-call"),
                   tool_delta(1, "c", "{}", name="g")],
        [(E.BLOCKS_INTERLEAVED, 2, "block-start for block 1 (tool-call) while block 0 (tool-call) is open "
          "(state IN_BLOCK); under policy strict blocks may not interleave: expected block-end for block 0 first"),
         (E.TOOL_CALL_CONFLICT, 3, "tool-call-delta for block 1 opens call id 'c', which already belongs to block 0: "
          "an id belongs to one block per stream (state IN_BLOCK)")],
    ),
    "an id another block has, arguments that are not an object, no usage: in STRICT's order": (
        H, False, [*tool_block(0, "c"), start(1, "tool-call"), end_tool(1, "c", "g", "[1]"), finish("tool-calls")],
        [(E.TOOL_CALL_CONFLICT, 4, "block-end for block 1 carries call id 'c', which already belongs to block 0: "
          "an id belongs to one block per stream (state IN_BLOCK)"),
         (E.TOOL_ARGUMENTS_INVALID, 4, "tool call 'c' (g) in block 1: arguments '[1]' are not a JSON object: "
          "arguments must be a JSON object, got list (state IN_BLOCK)"),
         (E.USAGE_MISSING, 5, "finish tool-calls without usage (state READY); under policy strict a tool-calls "
          "finish needs one usage chunk before it")],
    ),
    "tool-calls without a tool call": (
        H, False, [U, finish("tool-calls")],
        [(E.FINISH_REASON_MISMATCH, 1, "finish tool-calls, but the stream completed no tool-call block "
          "(state USAGE)")],
    ),
    "raw arguments under STRICT": (
        S, True, [start(0, "tool-call"), end_tool(0, "c", "f", LIST), U, finish("tool-calls")],
        [(E.TOOL_ARGUMENTS_INVALID, 1, "tool call 'c' (f) in block 0: arguments '[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
          "1, 1, ...' are not a JSON object: arguments must be a JSON object, got list (state IN_BLOCK)")],
    ),
}  # fmt: skip


@pytest.mark.parametrize("feed", ["feed", "feed_many"])
@pytest.mark.parametrize(("policy", "raw", "chunks", "notes"), NOTES.values(), ids=NOTES.keys())
def test_the_notes(
    policy: sf.Policy,
    raw: bool,
    chunks: list[Any],
    notes: list[tuple[sf.ErrorCode, int, str]],
    feed: str,
) -> None:
    asm = sf.StreamAssembler(policy, raw_arguments=raw)
    FEEDS[feed](asm, chunks)
    assert [(e.code, e.chunk_index, e.message) for e, _ in asm.notes] == notes
    for e, _ in asm.notes:  # STRICT's error: the state its message names, and what that state accepts under STRICT
        assert isinstance(e, sf.LlmError) and f"(state {e.state})" in e.message
        assert e.state is not None and e.expected == accepts(e.state, sf.Policy.STRICT)


@pytest.mark.parametrize(("policy", "raw", "chunks", "notes"), NOTES.values(), ids=NOTES.keys())
def test_every_entry_point_gives_the_notes(
    policy: sf.Policy, raw: bool, chunks: list[Any], notes: list[tuple[sf.ErrorCode, int, str]]
) -> None:
    """``feed_many`` in calls of three chunks and ``feed_lines`` (JSON lines) leave the notes ``feed`` leaves."""
    seen = agree(chunks, policy, raw_arguments=raw)
    assert [(code, index, message) for code, index, _, message in seen["notes"]] == notes


#: A line that is not JSON: the message says why, where as a column of the line (orjson's "line 2 column 1" of a
#: line's own LF is the line's end), and quotes the line (cut at 80 characters).
LINES = {
    "cut short": (
        b'{"type": "text-delta", "index": 0, "text": "oops',
        "unexpected end of data at the end of the line, column 49",
        "'{\"type\": \"text-delta\", \"index\": 0, \"text\": \"oops'",
    ),
    "cut short, its LF read": (
        b'{"type": "text-delta", "index": 0,\n',
        "unexpected end of data at the end of the line, column 35",
        "'{\"type\": \"text-delta\", \"index\": 0,'",
    ),
    "a Python dict": ("{'type': 1}", "unexpected character, expected a string key at column 2", "\"{'type': 1}\""),
    "not UTF-8": (b"\xff\xfe{", "not valid UTF-8", "'\\\\xff\\\\xfe{'"),
    "long, with blanks around it": (
        b"  [" + b"1," * 60 + b" \r\n",
        "unexpected end of data at the end of the line, column 124",
        "'[" + "1," * 39 + "1'",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("line", "reason", "quoted"), LINES.values(), ids=LINES.keys())
def test_the_message_of_a_line_that_is_not_json(line: bytes | str, reason: str, quoted: str) -> None:
    for feed in ("feed_line", "feed_lines"):
        asm = sf.StreamAssembler()
        with pytest.raises(sf.LlmError) as info:
            if feed == "feed_line":
                asm.feed_line(line)
            else:
                asm.feed_lines([line])
        assert (info.value.code, info.value.chunk_index) == (E.INVALID_CHUNK, 0)
        assert info.value.message == f"invalid chunk: line is not JSON ({reason}): {quoted} (state READY)"


@pytest.mark.parametrize("results", [True, False])
def test_the_message_of_a_stream_cut_before_its_finish(results: bool) -> None:
    """``close()`` and ``summary()``: STREAM_TRUNCATED at the position after the last chunk, naming open blocks."""
    for chunks, message in [
        ([start(0, "text"), text_delta(0, "a")],
         "the input ended after 2 chunk(s) without a finish (state IN_BLOCK; block 0 (text) still open)"),
        ([], "the input ended after 0 chunk(s) without a finish (state READY)"),
    ]:  # fmt: skip
        asm = sf.StreamAssembler(S, results=results)
        asm.feed_many(chunks)
        with pytest.raises(sf.LlmError) as info:
            asm.close() if results else asm.summary()
        err = info.value
        assert (err.code, err.chunk_index, err.message) == (E.STREAM_TRUNCATED, len(chunks), message)


@pytest.mark.parametrize(
    ("a", "b", "at"),
    [
        ("", "", 0),
        ("", "abc", 0),
        ("abc", "abc", 3),
        ("abc", "abd", 2),
        ("abc", "ab", 2),
        ("x" * 4095 + "a", "x" * 4095 + "b", 4095),  # the last of the first piece
        ("x" * 4096 + "a", "x" * 4096 + "b", 4096),  # the first of the second
        ("x" * 4097 + "a", "x" * 4097 + "b", 4097),
        ("x" * 8195 + "a" + "y" * 9, "x" * 8195 + "b" + "y" * 9, 8195),
        ("x" * 4096, "x" * 5000, 4096),  # one begins the other, at a piece's end
        ("x" * 4100, "x" * 4100 + "z", 4100),  # within a piece
        ("ab" * 5000, "ab" * 5000, 10000),
    ],
)
def test_first_difference_is_the_first_position_that_differs(a: str, b: str, at: int) -> None:
    assert first_difference(a, b) == first_difference(b, a) == at

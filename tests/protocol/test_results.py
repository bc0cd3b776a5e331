"""What the machine builds, field by field, against values written out here (not derived from the machine).

Results are built without pydantic's validation (``construct``), so each is checked to be the model
pydantic itself would build: every field set, nothing else in it (a finish reason may carry fields of
its own: under HARNESS a finish of an unknown kind keeps them). Tool arguments are kept parsed up to
16,384 characters (``ORJSON_MAX``) and not past it; the replay state is the one sent, copied; a
snapshot shows each stage of a stream, also after a failure.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

import streamfsm as sf

from ..builders import (
    FEEDS,
    HARNESS,
    STRICT,
    end_block,
    end_image,
    end_text,
    end_tool,
    finish,
    reasoning_delta,
    start,
    text_block,
    text_delta,
    tool_block,
    tool_delta,
    usage,
)
from ..data import SEED_CHUNKS, SESSIONS

ORJSON_MAX = 16_384  # streamfsm._arguments.ORJSON_MAX, written out


def models(result: sf.StreamResult) -> list[BaseModel]:
    """The result's models (blocks of an unknown type are plain dicts, kept as they came: not models)."""
    out: list[BaseModel] = [result]
    out += [b for b in (*result.blocks, *result.interrupted) if isinstance(b, BaseModel)]
    out += [m for m in (result.usage, result.finish, result.finish.failure) if m is not None]
    return out


STREAMS: dict[str, tuple[list[dict[str, Any]], sf.Policy]] = {
    "text, reasoning and a tool call": (
        [*text_block(0, "a", "b"), start(1, "reasoning"), reasoning_delta(1, "r"),
         {"type": "block-end", "index": 1, "block": {"type": "reasoning", "text": "r"}},
         *tool_block(2, "c1", "f", '{"x":', " 1}"), usage(3, 4, reasoningTokens=1), finish("tool-calls")],
        STRICT,
    ),
    "blocks with no deltas": (
        [start(0, "text"), end_text(0, "t"), start(1, "tool-call"), end_tool(1, "c", "g", "{}"), usage(),
         finish("stop")],
        STRICT,
    ),
    "cut off, with a failure": (
        [start(0, "tool-call"), tool_delta(0, "c", '{"a', name="f"), start(1, "text"), text_delta(1, "t"),
         finish("error", {"message": "m", "code": "SERVER", "status": 503})],
        HARNESS,
    ),
    "an image block, raw arguments, a block of an unknown type": (
        [start(0, "image"), end_image(0, {"id": "att-1", "size": [1, 2]}), start(1, "tool-call"),
         tool_delta(1, "c", "not", name="f"), tool_delta(1, "c", " json"), end_tool(1, "c", "f", "not json"),
         start(2, "video"), end_block(2, {"type": "video", "frames": [{"t": None}]}),
         start(3, "tool-call"), end_tool(3, "d", "g", "[]"), start(4, "image"), finish("max-tokens")],
        HARNESS,
    ),
    "an image block under STRICT": (
        [start(0, "image"), end_image(0, {"id": "att-1"}), start(1, "image"), usage(), finish("max-tokens")],
        STRICT,
    ),
}  # fmt: skip


def assembled(chunks: list[dict[str, Any]], policy: sf.Policy, feed: str = "feed_many") -> sf.StreamResult:
    asm = sf.StreamAssembler(policy)
    FEEDS[feed](asm, chunks)
    return asm.close()


@pytest.mark.parametrize("feed", ["feed", "feed_many"])
@pytest.mark.parametrize(("chunks", "policy"), STREAMS.values(), ids=STREAMS.keys())
def test_results_are_the_models_pydantic_would_build(
    chunks: list[dict[str, Any]], policy: sf.Policy, feed: str
) -> None:
    result = assembled(chunks, policy, feed)
    for call in result.tool_calls:
        try:
            parsed = orjson.loads(call.arguments)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            assert "parsed_arguments" in vars(call)  # kept from the check, not parsed again
            assert call.parsed_arguments == parsed
        else:  # raw arguments (HARNESS): nothing parsed to keep; asking for them says why
            assert "parsed_arguments" not in vars(call)
            with pytest.raises(ValueError, match="not a JSON object"):
                _ = call.parsed_arguments
    for model in models(result):
        cls = type(model)
        fields = set(cls.model_fields)
        assert model.model_fields_set == fields, cls
        assert set(vars(model)) - {"parsed_arguments"} == fields, cls  # nothing stray in the instance
        # A finish reason takes fields of its own (an unknown kind keeps them); none came here.
        assert model.__pydantic_extra__ == ({} if cls is sf.FinishReason else None), cls
        # FinishReason keeps, privately, a reason of an unknown kind as it came (none came here); no other model
        # has private attributes.
        assert model.__pydantic_private__ == ({"_raw": None} if cls is sf.FinishReason else None), cls
        again = cls.model_validate(model.model_dump())
        assert again == model and again.model_fields_set == fields
        assert model.model_dump(exclude_unset=True) == model.model_dump()
    for block in result.blocks:
        if not isinstance(block, BaseModel):  # a block of an unknown type: the plain dict that came
            assert type(block) is dict and block["type"] not in ("text", "reasoning", "tool-call", "image")
    for block in result.interrupted:
        if not isinstance(block, BaseModel):  # a block that takes no deltas, cut off: nothing came but its type
            assert type(block) is dict and block.keys() == {"type"} and block["type"] not in ("text", "reasoning")


@pytest.mark.parametrize(
    ("length", "kept"), [(ORJSON_MAX - 1, True), (ORJSON_MAX, True), (ORJSON_MAX + 1, False), (3 * ORJSON_MAX, False)]
)
@pytest.mark.parametrize("deltas", [True, False], ids=["with deltas", "no deltas"])
def test_parsed_arguments_are_kept_up_to_orjson_max(length: int, kept: bool, deltas: bool) -> None:
    arguments = '{"a": "' + "x" * (length - 9) + '"}'
    assert len(arguments) == length
    body = [tool_delta(0, "c", arguments[:10], name="f"), tool_delta(0, "c", arguments[10:])] if deltas else []
    result = sf.assemble(
        [start(0, "tool-call"), *body, end_tool(0, "c", "f", arguments), usage(), finish("tool-calls")]
    )
    (call,) = result.tool_calls
    assert ("parsed_arguments" in vars(call)) is kept
    assert call.parsed_arguments == {"a": "x" * (length - 9)}


@pytest.mark.parametrize(
    "replay",
    [{"cursor": [1, "a", None, True, 2.5]}, [1, {"b": []}], "opaque", 0, None],
    ids=["object", "list", "string", "zero", "null"],
)
@pytest.mark.parametrize("kind", ["stop", "error"])
def test_the_replay_state_is_the_one_sent_and_a_copy(replay: Any, kind: str) -> None:
    sent = copy.deepcopy(replay)
    failure = {"message": "m", "code": "SERVER"} if kind == "error" else None
    chunks = [*text_block(0, "hi"), usage(), finish(kind, failure, replayState=sent)]
    for result in (sf.assemble(chunks), sf.assemble_jsonl([orjson.dumps(c) for c in chunks])):
        assert result.replay_state == replay
        if isinstance(sent, dict | list):
            assert result.replay_state is not sent
    without = sf.assemble([*chunks[:-1], finish(kind, failure)])
    assert without.replay_state is None


def test_a_snapshot_at_every_stage() -> None:
    asm = sf.StreamAssembler()
    asm.feed_many([*text_block(0, "a"), start(1, "tool-call"), tool_delta(1, "c1", '{"k": [1', name="f")])
    snap = asm.snapshot()
    assert (snap.state, snap.chunk_count, snap.usage, snap.finish) == ("IN_BLOCK", 5, None, None)
    assert snap.blocks == [sf.TextBlock(text="a")]
    (tool,) = snap.open
    assert (tool.index, tool.block_type, tool.id, tool.name, tool.arguments, tool.partial_arguments, tool.text) == (
        1, "tool-call", "c1", "f", '{"k": [1', {"k": [1]}, "",
    )  # fmt: skip
    asm.feed_many([tool_delta(1, "c1", "]}"), end_tool(1, "c1", "f", '{"k": [1]}'), usage(7, 8)])
    snap = asm.snapshot()
    assert (snap.state, snap.chunk_count, snap.open) == ("USAGE", 8, [])
    assert snap.usage == sf.Usage(input_tokens=7, output_tokens=8) and snap.finish is None
    assert [b.type for b in snap.blocks] == ["text", "tool-call"]  # type: ignore[union-attr]
    asm.feed(finish("stop"))
    snap = asm.snapshot()
    assert (snap.state, snap.usage, snap.finish) == ("FINISHED", sf.Usage(input_tokens=7, output_tokens=8),
                                                    sf.FinishReason(kind="stop"))  # fmt: skip


def test_a_finish_of_an_unknown_kind_is_the_model_pydantic_would_build() -> None:
    reason = {"kind": "paused", "resumeAt": 3, "why": {"a": [1, None]}}
    for feed in FEEDS:
        result = assembled([usage(), {"type": "finish", "reason": copy.deepcopy(reason)}], HARNESS, feed)
        finish = result.finish
        assert type(finish) is sf.FinishReason
        assert finish == sf.FinishReason.model_validate(reason)
        assert (finish.kind, finish.failure, finish.model_extra) == (
            "paused",
            None,
            {"resumeAt": 3, "why": {"a": [1, None]}},
        )
        assert finish.to_wire() == reason
        assert sf.FinishReason.model_validate(finish.to_wire()) == finish


def test_a_block_of_an_unknown_type_is_a_copy_of_what_came() -> None:
    block: dict[str, Any] = {"type": "video", "frames": [{"t": 0}], "meta": {"codec": "av1"}}
    chunks = [start(0, "video"), end_block(0, block), usage(), finish("stop")]
    for feed in FEEDS:
        result = assembled(chunks, HARNESS, feed)
        (kept,) = result.blocks
        assert isinstance(kept, dict)
        assert kept == block and kept is not block and kept["frames"] is not block["frames"]
        block["frames"].append({"t": 1})  # the caller's chunk, changed afterwards: the result is not
        assert kept["frames"] == [{"t": 0}]
        block["frames"].pop()


def test_a_snapshot_of_a_tool_call_with_no_id_yet() -> None:
    asm = sf.StreamAssembler(HARNESS)
    asm.feed_many([start(0, "tool-call"), start(1, "text"), text_delta(1, "t")])
    tool, text = asm.snapshot().open
    assert (tool.id, tool.name, tool.arguments, tool.partial_arguments) == (None, None, "", None)
    assert (text.text, text.id) == ("t", None)


BIG = ["x" * (k % 5) for k in range(9_000)]  # 9,000 deltas: the block is flushed into segments on the way
BIG_TEXT = "".join(BIG)


@pytest.mark.parametrize(
    ("carried", "ok"),
    [
        (BIG_TEXT, True),
        (BIG_TEXT + "x", False),
        (BIG_TEXT[:-1], False),
        ("y" + BIG_TEXT[1:], False),
        (BIG_TEXT[:9_000] + "y" + BIG_TEXT[9_001:], False),
        (BIG_TEXT[:-1] + "y", False),
        ("", False),
    ],
    ids=["the same", "longer", "shorter", "first differs", "middle differs", "last differs", "empty"],
)
@pytest.mark.parametrize("kind", ["text", "tool-call"])
def test_a_big_block_is_compared_piece_by_piece(carried: str, ok: bool, kind: str) -> None:
    if kind == "text":
        chunks = [*text_block(0, *BIG)[:-1], end_text(0, carried), usage(), finish("stop")]
    else:
        wrap = ['{"a": "', *BIG, '"}']
        chunks = [start(0, "tool-call"), *(tool_delta(0, "c", p, name="f") for p in wrap),
                  end_tool(0, "c", "f", '{"a": "' + carried + '"}'), usage(), finish("tool-calls")]  # fmt: skip
    end = len(chunks) - 3
    for feed in ("feed", "feed_many"):
        asm = sf.StreamAssembler()
        try:
            if feed == "feed":
                for chunk in chunks:
                    asm.feed(chunk)
            else:
                asm.feed_many(chunks)
        except sf.LlmError as err:
            assert not ok and (err.code, err.chunk_index) == ("BLOCK_CONTENT_MISMATCH", end)
            assert asm.snapshot().open[0].text + asm.snapshot().open[0].arguments == (
                BIG_TEXT if kind == "text" else '{"a": "' + BIG_TEXT + '"}'
            )
            continue
        assert ok
        result = asm.close()
        assert (result.text if kind == "text" else result.tool_calls[0].parsed_arguments["a"]) == BIG_TEXT


def test_a_big_tool_call_that_is_not_an_object_can_still_be_seen() -> None:
    """After the arguments are settled (compared and joined) they are refused; the snapshot still shows them."""
    arguments = "[" + ",".join(["1"] * 6_000) + "]"
    pieces = [arguments[k : k + 2] for k in range(0, len(arguments), 2)]
    chunks = [
        start(0, "tool-call"),
        *(tool_delta(0, "c", p, name="f") for p in pieces),
        end_tool(0, "c", "f", arguments),
    ]
    for feed in FEEDS.values():
        asm = sf.StreamAssembler()
        with pytest.raises(sf.LlmError) as info:
            feed(asm, chunks)
        assert (info.value.code, info.value.chunk_index) == ("TOOL_ARGUMENTS_INVALID", len(chunks) - 1)
        (tool,) = asm.snapshot().open
        assert tool.arguments == arguments and tool.partial_arguments is None


def test_an_interrupted_tool_call_before_its_id_came() -> None:
    """Cut off before any delta: the id and name that never arrived are empty strings (docs/guides/assembling.md)."""
    result = sf.assemble([start(0, "tool-call"), usage(), finish("max-tokens")])
    (cut,) = result.interrupted
    assert isinstance(cut, sf.ToolCallBlock)
    assert (cut.id, cut.name, cut.arguments, cut.parsed_arguments) == ("", "", "", {})


@pytest.mark.parametrize("feed", ["feed", "feed_many"])
def test_results_behave_as_validated_models(feed: str) -> None:
    """Built as a ``_Blank`` and given their class (``construct``), results are indistinguishable from models
    pydantic validated: frozen, hashable, equal, copied and pickled alike; ``model_copy(update=...)`` leaves
    the field-name set the instances share untouched."""
    import pickle

    chunks, policy = STREAMS["text, reasoning and a tool call"]
    result = assembled(chunks, policy, feed)
    usage = result.usage
    assert usage is not None
    for model in models(result):
        cls = type(model)
        assert cls.__name__ != "_Blank" and cls.__module__ == "streamfsm._models"
        again = cls.model_validate(model.model_dump())
        assert again == model and model == again and repr(model) == repr(again)
        assert pickle.loads(pickle.dumps(model)) == model
        assert copy.copy(model) == model and copy.deepcopy(model) == model
        with pytest.raises(Exception, match="frozen"):
            setattr(model, next(iter(cls.model_fields)), None)
        with pytest.raises(Exception, match="frozen"):
            delattr(model, next(iter(cls.model_fields)))
    assert hash(usage) == hash(sf.Usage.model_validate(usage.model_dump()))
    changed = usage.model_copy(update={"input_tokens": 99})
    assert changed.input_tokens == 99 and usage.input_tokens == 3
    assert usage.model_fields_set == set(sf.Usage.model_fields)
    assert sf.assemble(chunks, policy=policy).usage == usage  # a later result: the shared set as it was


# -- an assembler that keeps no results (results=False) ----------------------------------------------


def test_an_assembler_without_results_says_what_the_stream_was_and_keeps_no_content() -> None:
    """``summary()`` tells the blocks, calls, usage, finish, interrupted blocks and kept items, as the result does;
    ``close()`` and ``snapshot()`` have nothing to give."""
    for path in sorted(SESSIONS.glob("*.jsonl"))[:40]:
        for recording in sf.read_session(path):
            full = sf.StreamAssembler("harness")
            bare = sf.StreamAssembler("harness", results=False)
            try:
                full.feed_many(recording.chunks)
                result = full.close()
            except sf.LlmError:
                continue
            bare.feed_many(recording.chunks)
            summary = bare.summary()
            assert summary == full.summary()
            assert summary.blocks == tuple(b["type"] if isinstance(b, dict) else b.type for b in result.blocks)
            assert summary.tool_calls == tuple((c.id, c.name) for c in result.tool_calls)
            assert (summary.usage, summary.finish) == (result.usage, result.finish)
            assert summary.chunks == len(recording.chunks)
            assert summary.kept == tuple(k.type for k in result.kept)
            assert all(d is None or isinstance(d, (str, tuple)) for d in bare._done)  # no model, no text
            kept_none = r"^this assembler keeps no results \(results=False\): "
            with pytest.raises(ValueError, match=kept_none + r"summary\(\) says what the stream was$"):
                bare.close()
            with pytest.raises(ValueError, match=kept_none + "it has no snapshot$"):
                bare.snapshot()


def test_a_summary_ends_the_input_as_close_does() -> None:
    bare = sf.StreamAssembler(results=False)
    bare.feed_many(SEED_CHUNKS[:3])
    with pytest.raises(sf.LlmError) as info:
        bare.summary()
    assert info.value.code == sf.ErrorCode.STREAM_TRUNCATED


@pytest.mark.parametrize("results", [True, False])
def test_end_checks_that_the_stream_finished_and_builds_nothing(results: bool) -> None:
    """``end()`` is the end of input that ``validate`` and ``validate_jsonl`` use: STREAM_TRUNCATED at the position
    after the last chunk, nothing before a finish is missing; after an error, that error's code again."""
    asm = sf.StreamAssembler(results=results)
    asm.feed_many(SEED_CHUNKS)
    assert asm.end() is None
    assert (asm._usage is None) == (not results)  # a check builds no usage model
    assert asm.summary().usage == sf.Usage.model_validate(SEED_CHUNKS[-2]["usage"])  # made when asked for
    cut = sf.StreamAssembler(results=results)
    cut.feed_many(SEED_CHUNKS[:3])
    with pytest.raises(sf.LlmError) as info:
        cut.end()
    assert (info.value.code, info.value.chunk_index) == (sf.ErrorCode.STREAM_TRUNCATED, 3)
    with pytest.raises(sf.LlmError) as again:
        cut.end()
    assert again.value.code == sf.ErrorCode.STREAM_TRUNCATED


#: (policy, a stream, what its summary says: blocks, interrupted, kept)
SUMMARIES: dict[str, tuple[str, list[dict[str, Any]], tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]] = {
    "a block of an unknown type between two text blocks": (
        "harness",
        [*text_block(0, "a"), start(1, "video"), end_block(1, {"type": "video", "id": "v"}), *text_block(2, "b"),
         usage(), finish("stop")],
        (("text", "video", "text"), (), ()),
    ),
    "a block left open while a later one ends, then cut off": (
        "harness",
        [start(0, "reasoning"), reasoning_delta(0, "hm"), *text_block(1, "a"), usage(), finish("max-tokens")],
        (("text",), ("reasoning",), ()),
    ),
    "kept items in the replay state": (
        "strict",
        [*text_block(0, "a"), usage(),
         finish("stop", replayState={"kept": [{"type": "reasoning-item", "at": 0, "data": {}}, "not an item"]})],
        (("text",), (), ("reasoning-item",)),
    ),
}  # fmt: skip


@pytest.mark.parametrize(("policy", "chunks", "said"), SUMMARIES.values(), ids=SUMMARIES.keys())
@pytest.mark.parametrize("results", [True, False])
def test_the_summary_of_a_stream(policy: str, chunks: list[dict[str, Any]], said: Any, results: bool) -> None:
    """With results or without, a summary names every completed block (an unknown type's too, by its type), the
    blocks a cut-off finish left open, and the replay state's kept items."""
    asm = sf.StreamAssembler(policy, results=results)
    asm.feed_many(chunks)
    summary = asm.summary()
    assert (summary.blocks, summary.interrupted, summary.kept) == said
    assert summary.chunks == len(chunks)


def test_the_checks_start_a_stream_without_results() -> None:
    """``_machine.checker`` (what validate, validate_jsonl and check start a stream with) keeps no results."""
    from streamfsm._machine import checker

    asm = checker("harness", sf.Limits(max_chunks=10))
    asm.feed_many(SEED_CHUNKS)
    assert asm.policy is sf.Policy.HARNESS and asm.summary().chunks == len(SEED_CHUNKS)
    with pytest.raises(ValueError, match="keeps no results"):
        asm.close()
    with pytest.raises(sf.LlmError, match="more than 2 chunks"):
        checker("strict", sf.Limits(max_chunks=2)).feed_many(SEED_CHUNKS)

"""Property-based tests (hypothesis) of the StreamChunk machine against SPEC.md.

Valid streams are generated from their *source content* (blocks, usage, finish), cut into random
deltas and, under ``Policy.HARNESS``, interleaved and given what SPEC §4 lets HARNESS accept (blocks and
finish kinds of unknown types, empty or shared tool-call ids, raw arguments, ``tool-calls`` without a
call); the properties check that they assemble back to that content, that every entry point agrees,
and that random mutations of them only ever raise ``LlmError`` with a published code — the very code
and position that a small reference checker, written from SPEC §1-§4 alone (:func:`reference`),
predicts, along with the notes HARNESS leaves of what STRICT would have refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import math
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamfsm as sf
from streamfsm import ErrorCode, LlmError, Policy

MAX_INT = 2**53 - 1
CHUNK_TYPES = (
    "block-start",
    "text-delta",
    "reasoning-delta",
    "tool-call-delta",
    "block-end",
    "usage",
    "finish",
)
BLOCK_TYPES = ("text", "reasoning", "tool-call")
#: SPEC §1's block types, in both policies: an image block takes no deltas.
CORE_BLOCK_TYPES = (*BLOCK_TYPES, "image")
#: Block types and finish kinds SPEC §1 does not know: HARNESS keeps them as they came (SPEC §4).
OTHER_BLOCK_TYPES = ("video", "audio", "x-custom", "Text", "")
OTHER_FINISH_KINDS = ("paused", "content-filter", "refusal", "length", "STOP", "")
FINISH_KINDS = ("stop", "tool-calls", "max-tokens", "error", "aborted")
CUT_OFF = ("max-tokens", "error", "aborted")
DELTA_OF = {"text": "text-delta", "reasoning": "reasoning-delta", "tool-call": "tool-call-delta"}
KIND_OF = {v: k for k, v in DELTA_OF.items()}
USAGE_OPTIONAL = ("cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
FAILURE_OPTIONAL = ("status", "providerRetryAfterMs", "requestId")

#: Examples per property (raise it locally to fuzz harder: STREAMFSM_HYPOTHESIS_EXAMPLES=5000).
EXAMPLES = int(os.environ.get("STREAMFSM_HYPOTHESIS_EXAMPLES", "200"))
PROPS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LIGHT = settings(PROPS, max_examples=max(1, EXAMPLES // 2))


#: ``StreamAssembler.feed_many`` (beyond SPEC §5's API): checked alongside ``feed`` when present.
HAS_FEED_MANY = hasattr(sf.StreamAssembler, "feed_many")


# -- chunk wrappers: other mappings than a plain dict ----------------------------------------------


class DictSub(dict):  # type: ignore[type-arg]
    """A dict subclass: a valid chunk still, but never taken by the machine's hot path."""


class MappingChunk(Mapping[str, Any]):
    """A well-behaved non-dict Mapping: SPEC §1 only asks for a mapping."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"MappingChunk({self._data!r})"


class HostileMapping(Mapping[str, Any]):
    """A mapping whose values raise when read."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("hostile mapping")

    def __iter__(self) -> Iterator[str]:
        return iter(["type", "index"])

    def __len__(self) -> int:
        return 2

    def __repr__(self) -> str:
        return "HostileMapping()"


class HostileIterMapping(Mapping[str, Any]):
    """A mapping whose keys raise when listed."""

    def __getitem__(self, key: str) -> Any:
        if key == "type":
            return "usage"
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("hostile keys")

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return "HostileIterMapping()"


# -- strategies: JSON data -------------------------------------------------------------------------

TRICKY_TEXT = st.sampled_from(
    ["", " ", "\n", "\r\n", "\t", '"', "\\", "\\u0000", "\x00", "\u2028", "\u2029", "é", "日本語", "😀", "{", "}"]
)
texts = st.one_of(st.text(max_size=20), TRICKY_TEXT, st.text(alphabet='ab{}"\\\n ', max_size=10))
#: Integers orjson reads back exactly (wider ones are the subject of their own property).
json_ints = st.one_of(st.integers(-1000, 1000), st.integers(-(2**63), 2**64 - 1), st.sampled_from([MAX_INT, 2**53]))
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    json_ints,
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(texts, json_values, max_size=5)
small_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda children: st.lists(children, max_size=2) | st.dictionaries(st.text(max_size=3), children, max_size=2),
    max_leaves=3,
)


JSON_STYLES = st.sampled_from(
    [
        {},
        {"ensure_ascii": False},
        {"separators": (",", ":")},
        {"separators": (",", ":"), "ensure_ascii": False},
        {"indent": 2},
        {"indent": "\t", "ensure_ascii": False},
        {"sort_keys": True},
    ]
)
JSON_PADS = st.sampled_from(["", "", "", " ", "\n", " \r\n\t"])


def json_text(draw: st.DrawFn, obj: Any) -> str:
    """``obj`` serialised as JSON text, in one of several styles (escapes, unicode, whitespace)."""
    text = json.dumps(obj, **draw(JSON_STYLES))  # type: ignore[arg-type]
    pad = draw(JSON_PADS)
    return pad + text + pad


# -- strategies: valid streams built from source content -------------------------------------------

#: Keys a chunk (or a nested object) may carry besides its own: SPEC §1, extra keys are ignored.
EXTRA_KEYS = (
    "providerMetadata",
    "x-extra",
    "id",
    "name",
    "text",
    "index",
    "blockType",
    "argumentsDelta",
    "block",
    "usage",
    "reason",
    "totalTokens",
    "kind",
    "arguments",
)
OWN_KEYS = {
    "block-start": {"type", "index", "blockType"},
    "text-delta": {"type", "index", "text"},
    "reasoning-delta": {"type", "index", "text"},
    "tool-call-delta": {"type", "index", "id", "name", "argumentsDelta"},
    "block-end": {"type", "index", "block"},
    "usage": {"type", "usage"},
    "finish": {"type", "reason", "replayState"},
    "block.text": {"type", "text"},
    "block.tool-call": {"type", "id", "name", "arguments"},
    "block.image": {"type", "attachment"},
    "usage.usage": {"inputTokens", "outputTokens", *USAGE_OPTIONAL},
    "reason": {"kind", "failure"},
    "failure": {"message", "code", *FAILURE_OPTIONAL},
}


EXTRAS = {
    own: st.dictionaries(st.sampled_from([k for k in EXTRA_KEYS if k not in keys]), small_json, max_size=2)
    for own, keys in OWN_KEYS.items()
}
ONE_IN_SIX = st.integers(0, 5)


def with_extras(draw: st.DrawFn, obj: dict[str, Any], own: str) -> dict[str, Any]:
    """``obj``, sometimes with extra keys that are not among its own fields."""
    if draw(ONE_IN_SIX) != 0:
        return obj
    return {**obj, **draw(EXTRAS[own])}


def pieces(draw: st.DrawFn, text: str, *, allow_none: bool = True) -> list[str]:
    """``text`` cut into deltas at random points (empty deltas included); sometimes no delta at all."""
    if allow_none and draw(st.integers(0, 4)) == 0:
        return []
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@dataclass
class Source:
    """A valid stream and the content it was built from."""

    policy: Policy
    chunks: list[Any]
    #: Completed blocks, in index order, as §1's block-end ``block`` (no extra keys).
    blocks: list[dict[str, Any]]
    #: Raw arguments of the completed tool calls, in order (under HARNESS not always a JSON object).
    arguments: list[str]
    #: Blocks left open by a cut-off finish, in index order: {type, text|arguments, id?, name?}.
    interrupted: list[dict[str, Any]]
    usage: dict[str, Any] | None
    reason: dict[str, Any]
    replay: Any
    #: Every block by index: ("done", wire) or ("open", partial) — for snapshot checks.
    by_index: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def expected_wire(self) -> dict[str, Any]:
        return {"blocks": self.blocks, "usage": self.usage, "finish": self.reason}


#: The fields a block of an unknown type carries besides its ``type`` (JSON data, kept as it came).
OTHER_FIELDS = st.dictionaries(st.text(max_size=6).filter(lambda k: k != "type"), json_values, max_size=3)


def block_chunks(
    draw: st.DrawFn, index: int, kind: str, call_id: str, *, interrupted: bool, harness: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The chunks of one block (start, deltas, end unless interrupted) and its content."""
    chunks: list[dict[str, Any]] = [
        with_extras(draw, {"type": "block-start", "index": index, "blockType": kind}, "block-start")
    ]
    if kind not in BLOCK_TYPES:  # no deltas: an image block, or (HARNESS) a block of an unknown type
        if interrupted:
            return chunks, {"type": kind}
        if kind == "image":
            wire = {"type": "image", "attachment": draw(json_objects)}
            block = with_extras(draw, dict(wire), "block.image")
        else:
            fields: dict[str, Any] = draw(OTHER_FIELDS)
            block = wire = {**fields, "type": kind}
        chunks.append(with_extras(draw, {"type": "block-end", "index": index, "block": block}, "block-end"))
        return chunks, copy.deepcopy(wire)
    if kind == "tool-call":
        name = draw(st.text(min_size=0 if harness else 1, max_size=12))
        if harness and draw(st.integers(0, 3)) == 0:
            args = draw(st.one_of(ODD_ARGUMENTS, texts))  # SPEC §4: kept raw
        else:
            args = json_text(draw, draw(json_objects))
        if interrupted:
            args = args[: draw(st.integers(0, len(args)))]
        parts = pieces(draw, args)
        # Where the name travels: from the first named delta on (repeated or not), or only on block-end.
        first_named = draw(st.integers(0, len(parts)))
        named = False
        for i, part in enumerate(parts):
            delta: dict[str, Any] = {
                "type": "tool-call-delta",
                "index": index,
                "id": call_id,
                "argumentsDelta": part,
            }
            if i == first_named or (i > first_named and draw(st.booleans())):
                delta["name"] = name
                named = True
            chunks.append(with_extras(draw, delta, "tool-call-delta"))
        if interrupted:
            content = {"type": "tool-call", "arguments": "".join(parts)}
            if parts:
                content["id"] = call_id
            if named:
                content["name"] = name
            return chunks, content
        wire = {"type": "tool-call", "id": call_id, "name": name, "arguments": args}
    else:
        text = draw(texts)
        if interrupted:
            text = text[: draw(st.integers(0, len(text)))]
        parts = pieces(draw, text)
        for part in parts:
            chunks.append(with_extras(draw, {"type": DELTA_OF[kind], "index": index, "text": part}, DELTA_OF[kind]))
        if interrupted:
            return chunks, {"type": kind, "text": "".join(parts)}
        wire = {"type": kind, "text": text}
    block = with_extras(draw, dict(wire), "block.tool-call" if kind == "tool-call" else "block.text")
    chunks.append(with_extras(draw, {"type": "block-end", "index": index, "block": block}, "block-end"))
    return chunks, wire


def merge(draw: st.DrawFn, seqs: list[list[dict[str, Any]]], interleave: bool) -> list[dict[str, Any]]:
    """Concatenate the blocks' chunks, or interleave them with block-starts kept in index order."""
    if not interleave:
        return [c for s in seqs for c in s]
    pos = [0] * len(seqs)
    started = 0
    out: list[dict[str, Any]] = []
    while True:
        candidates = [i for i in range(started) if pos[i] < len(seqs[i])]
        if started < len(seqs):
            candidates.append(started)
        if not candidates:
            return out
        i = candidates[draw(st.integers(0, len(candidates) - 1))]
        if i == started:
            started += 1
        out.append(seqs[i][pos[i]])
        pos[i] += 1


@st.composite
def usages(draw: st.DrawFn) -> dict[str, Any]:
    counts = st.one_of(st.integers(0, 10_000), st.sampled_from([0, MAX_INT]), st.integers(0, MAX_INT))
    usage = {"inputTokens": draw(counts), "outputTokens": draw(counts)}
    for key in USAGE_OPTIONAL:
        if draw(st.booleans()):
            usage[key] = draw(counts)
    return usage


@st.composite
def failures(draw: st.DrawFn) -> dict[str, Any]:
    failure: dict[str, Any] = {
        "message": draw(st.text(min_size=1, max_size=20)),
        "code": draw(st.text(min_size=1, max_size=10)),
    }
    if draw(st.booleans()):
        failure["status"] = draw(st.integers(100, 599))
    if draw(st.booleans()):
        failure["providerRetryAfterMs"] = draw(st.integers(0, MAX_INT))
    if draw(st.booleans()):
        failure["requestId"] = draw(st.text(max_size=10))
    return failure


@st.composite
def sources(draw: st.DrawFn, policy: Policy | None = None, *, interleave: bool | None = None) -> Source:
    """A random valid stream under ``policy`` (drawn when None), with the content it carries."""
    if policy is None:
        policy = draw(st.sampled_from(list(Policy)))
    harness = policy is Policy.HARNESS
    if interleave is None:
        interleave = harness and draw(st.booleans())
    kind = draw(st.sampled_from(FINISH_KINDS + (OTHER_FINISH_KINDS if harness else ())))
    block_types = CORE_BLOCK_TYPES + (OTHER_BLOCK_TYPES if harness else ())
    kinds = draw(st.lists(st.sampled_from(block_types), max_size=5))
    n = len(kinds)
    open_set: set[int] = set()
    if kind in CUT_OFF and n:
        if harness:
            open_set = set(draw(st.sets(st.integers(0, n - 1), max_size=n)))
        elif draw(st.booleans()):
            open_set = {n - 1}
    if kind == "tool-calls" and not any(k == "tool-call" for k in kinds) and not (harness and draw(st.booleans())):
        kinds.append("tool-call")
        n += 1
    if harness:  # SPEC §4: ids may be empty, and blocks may share one
        ids = draw(st.lists(st.sampled_from(["", "call-1", "call-2"]) | st.text(max_size=8), min_size=n, max_size=n))
    else:
        ids = draw(st.lists(st.text(min_size=1, max_size=8), min_size=n, max_size=n, unique=True))
    seqs: list[list[dict[str, Any]]] = []
    by_index: list[tuple[str, dict[str, Any]]] = []
    for i, block_kind in enumerate(kinds):
        chunks, content = block_chunks(draw, i, block_kind, ids[i], interrupted=i in open_set, harness=harness)
        seqs.append(chunks)
        by_index.append(("open" if i in open_set else "done", content))
    chunks = merge(draw, seqs, interleave)
    usage: dict[str, Any] | None = None
    if (not harness and kind not in ("error", "aborted")) or draw(st.booleans()):
        usage = draw(usages())
        u = with_extras(draw, dict(usage), "usage.usage")
        chunks.append(with_extras(draw, {"type": "usage", "usage": u}, "usage"))
    reason: dict[str, Any] = {"kind": kind}
    if kind in ("error", "aborted"):
        reason["failure"] = draw(failures())
    sent = dict(reason)
    if "failure" in sent:
        sent["failure"] = with_extras(draw, dict(sent["failure"]), "failure")
    if kind in FINISH_KINDS:
        sent = with_extras(draw, sent, "reason")
    else:  # SPEC §4: a kind not known is kept as it came, with its fields
        # (fields that are null, or one named failure, are pinned in tests/protocol/test_policy.py)
        fields = st.dictionaries(
            st.text(max_size=6).filter(lambda k: k not in ("kind", "failure")),
            json_values.filter(lambda v: v is not None),
            max_size=3,
        )
        reason = sent = {**draw(fields), "kind": kind}
    finish: dict[str, Any] = {"type": "finish", "reason": sent}
    replay = None
    if draw(st.booleans()):
        replay = draw(json_values)
        finish["replayState"] = replay
    chunks.append(with_extras(draw, finish, "finish"))
    done = [content for state, content in by_index if state == "done"]
    reason = copy.deepcopy(reason)
    return Source(
        policy=policy,
        chunks=chunks,
        blocks=done,
        arguments=[b["arguments"] for b in done if b["type"] == "tool-call"],
        interrupted=[content for state, content in by_index if state == "open"],
        usage=usage,
        reason=reason,
        replay=replay,
        by_index=by_index,
    )


# -- strategies: mutations -------------------------------------------------------------------------

other_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([-1, MAX_INT, MAX_INT + 1, 2**64, 2**100, 99, 600]),
    st.floats(),
    st.text(max_size=5),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(0, 2), max_size=2),
    # Fresh copies: a later mutation may write into these.
    st.sampled_from([b"bytes", {"type": "text", "text": ""}, {"kind": "stop"}, [], {}]).map(copy.deepcopy),
)
index_values = st.one_of(
    st.integers(0, 6),
    st.sampled_from([-1, MAX_INT, MAX_INT + 1, True, False, 0.0, 1.0, "0", None]),
)


@st.composite
def garbage(draw: st.DrawFn, chunks: list[Any]) -> Any:
    """Something that is not a valid chunk (or, sometimes, a valid chunk in another mapping type)."""
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(
            st.sampled_from([None, 0, 7, -1, 1.5, True, "", "text-delta", b"{}", [], [1, 2], ()]).map(copy.deepcopy)
        )
    if choice == 1:
        return draw(st.sampled_from([HostileMapping(), HostileIterMapping()]))
    if choice == 2:
        return {}
    if choice == 3:
        return {"type": draw(st.sampled_from([*CHUNK_TYPES, "", "Text-Delta", "delta", 1, None]))}
    if choice == 4 and chunks:
        base = draw(st.sampled_from(chunks))
        if isinstance(base, Mapping) and not isinstance(base, (HostileMapping, HostileIterMapping)):
            return DictSub(base) if draw(st.booleans()) else MappingChunk(base)
    if choice == 5:
        return draw(st.lists(other_values, max_size=3))
    if choice == 6:
        return {"type": draw(st.sampled_from(CHUNK_TYPES)), "index": draw(index_values)}
    return draw(other_values)


def _paths(obj: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(obj, dict) and depth < 3:
        for k, v in obj.items():
            out.append((*prefix, k))
            out.extend(_paths(v, (*prefix, k), depth + 1))
    return out


def _parent(obj: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    for key in path[:-1]:
        obj = obj[key]
    return obj


#: Arguments that are not a JSON object (RFC 8259), or only just are.
ODD_ARGUMENTS = st.sampled_from(
    [
        "",
        " ",
        "null",
        "[]",
        '"{}"',
        "1",
        "{",
        "{}}",
        "{} {}",
        '{"a":1,}',
        '{"a":NaN}',
        '{"a":Infinity}',
        '{"a":-Infinity}',
        "{'a':1}",
        '{"a":01}',
        '{"a":"\x01"}',
        '{"a":1e400}',
        '{"a":-0}',
        '{"a":1E+2}',
        '{"a":"\\ud83d\\ude00"}',
        '{"a":true,"a":false}',
        "\ufeff{}",
        "{}\u00a0",
        "\u3000{}",
        "{}\x00",
        '{"a":[1,2,]}',
        '{"a":.5}',
        '{"a":+1}',
        '{"a":0x10}',
        '{"a":"\\x41"}',
        '{"\\u00e9":1}',
    ]
)

MUTATIONS = (
    "drop",
    "duplicate",
    "swap",
    "index",
    "type",
    "corrupt",
    "delete",
    "retext",
    "truncate",
    "insert",
    "wrap",
    "arguments",
    "steal-id",
    "rename",
)


def _tool_chunks(chunks: list[Any]) -> list[dict[str, Any]]:
    return [
        c
        for c in chunks
        if isinstance(c, dict)
        and (
            c.get("type") == "tool-call-delta"
            or (c.get("type") == "block-end" and isinstance(c.get("block"), dict) and "id" in c["block"])
        )
    ]


def tool_mutation(draw: st.DrawFn, op: str, chunks: list[Any]) -> None:
    """Coordinated changes to one tool call: odd arguments (in its deltas and block-end alike), another
    call's id, or another name."""
    tools = _tool_chunks(chunks)
    if not tools:
        return
    target = draw(st.sampled_from(tools))
    if op == "arguments":
        args = draw(st.one_of(ODD_ARGUMENTS, texts))
        same = [c for c in tools if c.get("index") == target.get("index")]
        deltas = [c for c in same if c.get("type") == "tool-call-delta"]
        if deltas:
            cuts = st.lists(st.integers(0, len(args)), min_size=len(deltas) - 1, max_size=len(deltas) - 1)
            bounds = [0, *sorted(draw(cuts)), len(args)]
            for delta, start, end in zip(deltas, bounds, bounds[1:], strict=False):
                delta["argumentsDelta"] = args[start:end]
        for c in same:
            if c.get("type") == "block-end":
                c["block"]["arguments"] = args
    elif op == "steal-id":
        ids = [c.get("id") if c.get("type") == "tool-call-delta" else c["block"].get("id") for c in tools]
        new = draw(st.sampled_from(ids))
        if target.get("type") == "block-end":
            target["block"]["id"] = new
        else:
            target["id"] = new
    else:
        new_name = draw(st.sampled_from(["f", "g", "other"]))
        if target.get("type") == "block-end":
            target["block"]["name"] = new_name
        else:
            target["name"] = new_name


@st.composite
def mutated(draw: st.DrawFn, policy: Policy | None = None) -> tuple[Source, list[Any], list[str]]:
    """A valid stream with one to three random mutations: (source, mutated chunks, what was done)."""
    src = draw(sources(policy))
    chunks: list[Any] = copy.deepcopy(src.chunks)
    done: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(MUTATIONS))
        n = len(chunks)
        if op == "insert" or n == 0:
            chunks.insert(draw(st.integers(0, n)), draw(garbage(chunks)))
            done.append("insert")
            continue
        i = draw(st.integers(0, n - 1))
        target = chunks[i]
        if op == "drop":
            del chunks[i]
        elif op == "duplicate":
            dup = copy.deepcopy(target) if isinstance(target, dict) else target
            chunks.insert(draw(st.integers(0, n)), dup)
        elif op == "swap":
            j = draw(st.integers(0, n - 1))
            chunks[i], chunks[j] = chunks[j], chunks[i]
        elif op == "truncate":
            del chunks[draw(st.integers(0, n)) :]
        elif op in ("arguments", "steal-id", "rename"):
            tool_mutation(draw, op, chunks)
        elif op == "wrap":
            if isinstance(target, Mapping) and not isinstance(target, (HostileMapping, HostileIterMapping)):
                chunks[i] = DictSub(target) if draw(st.booleans()) else MappingChunk(target)
        elif not isinstance(target, dict):
            op = "noop"
        elif op == "index":
            target["index"] = draw(index_values)
        elif op == "type":
            where = draw(st.sampled_from(["type", "blockType", "block.type", "reason.kind"]))
            new = draw(
                st.sampled_from([*CHUNK_TYPES, *CORE_BLOCK_TYPES, *FINISH_KINDS, "", "TEXT", "tool_call", "video"])
            )
            if where == "type":
                target["type"] = new
            elif where == "blockType":
                target["blockType"] = new
            elif where == "block.type" and isinstance(target.get("block"), dict):
                target["block"]["type"] = new
            elif where == "reason.kind" and isinstance(target.get("reason"), dict):
                target["reason"]["kind"] = new
        else:
            paths = _paths(target)
            if not paths:
                op = "noop"
            else:
                path = draw(st.sampled_from(paths))
                parent = _parent(target, path)
                if op == "corrupt":
                    old = parent[path[-1]]
                    parent[path[-1]] = draw(other_values.filter(lambda v, old=old: type(v) is not type(old)))  # type: ignore[arg-type]
                elif op == "delete":
                    del parent[path[-1]]
                elif draw(st.booleans()):  # retext: a field gets another string
                    parent[path[-1]] = draw(texts)
                else:
                    parent[path[-1]] = json_text(draw, draw(json_objects))
        done.append(op)
    return src, chunks, done


# -- a reference checker, written from SPEC §1-§4 alone --------------------------------------------


def _int(v: Any, low: int = 0, high: int = MAX_INT) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def _str(v: Any, *, non_empty: bool = False) -> bool:
    return isinstance(v, str) and (not non_empty or v != "")


def _is_json(v: Any) -> bool:
    if v is None or isinstance(v, (bool, str, int)):
        return True
    if isinstance(v, float):
        return v == v and v not in (float("inf"), float("-inf"))
    if isinstance(v, list):
        return all(_is_json(x) for x in v)
    if isinstance(v, Mapping):
        return all(isinstance(k, str) and _is_json(x) for k, x in v.items())
    return False


def _ref_block_shape(b: Any, harness: bool) -> bool:
    """A block-end's ``block`` (SPEC §1; §4: under HARNESS a block of any other type, as JSON data)."""
    if not isinstance(b, Mapping) or not isinstance(b.get("type"), str):
        return False
    if b["type"] == "tool-call":
        return (
            _str(b.get("id"), non_empty=not harness)
            and _str(b.get("name"), non_empty=not harness)
            and _str(b.get("arguments"))
        )
    if b["type"] in ("text", "reasoning"):
        return _str(b.get("text"))
    if b["type"] == "image":
        return isinstance(b.get("attachment"), Mapping) and _is_json(b["attachment"])
    return harness and _is_json(b)


def _ref_shape(chunk: Any, harness: bool) -> tuple[dict[str, Any], str] | None:
    """The chunk as a dict and its type, or None: INVALID_CHUNK (SPEC §1, §3.2 and §4)."""
    if not isinstance(chunk, Mapping):
        return None
    c = dict(chunk)
    t = c.get("type")
    if not isinstance(t, str) or t not in CHUNK_TYPES:
        return None
    if t == "usage":
        u = c.get("usage")
        ok = isinstance(u, Mapping) and _int(u.get("inputTokens")) and _int(u.get("outputTokens"))
        return (c, t) if ok and all(_int(u[k]) for k in USAGE_OPTIONAL if k in u) else None  # type: ignore[index, operator]
    if t == "finish":
        r = c.get("reason")
        if not isinstance(r, Mapping) or not isinstance(r.get("kind"), str):
            return None
        if r["kind"] not in FINISH_KINDS and not (harness and _is_json(r)):
            return None
        if r["kind"] in ("error", "aborted"):
            f = r.get("failure")
            if not isinstance(f, Mapping):
                return None
            if not (_str(f.get("message"), non_empty=True) and _str(f.get("code"), non_empty=True)):
                return None
            if "status" in f and not _int(f["status"], 100, 599):
                return None
            if "providerRetryAfterMs" in f and not _int(f["providerRetryAfterMs"]):
                return None
            if "requestId" in f and not _str(f["requestId"]):
                return None
        if "replayState" in c and not _is_json(c["replayState"]):
            return None
        return c, t
    if not _int(c.get("index")):
        return None
    if t in ("text-delta", "reasoning-delta"):
        ok = _str(c.get("text"))
    elif t == "tool-call-delta":
        ok = (
            _str(c.get("id"), non_empty=not harness)
            and ("name" not in c or _str(c["name"], non_empty=not harness))
            and _str(c.get("argumentsDelta"))
        )
    elif t == "block-start":
        ok = isinstance(c.get("blockType"), str) and (harness or c["blockType"] in CORE_BLOCK_TYPES)
    else:
        ok = _ref_block_shape(c.get("block"), harness)
    return (c, t) if ok else None


def _json_object(text: str) -> bool:
    """Whether tool arguments are a JSON object (RFC 8259: no NaN or Infinity), within the machine's documented
    bounds on numbers: a number a double cannot hold (``1e400``) is refused, and an integer of more than 100,000
    digits (docs/guides/assembling.md, "Tool arguments")."""

    def no_constant(name: str) -> Any:
        raise ValueError(name)

    def finite(number: str) -> float:
        if math.isinf(float(number)):
            raise ValueError(number)
        return 0.0

    def bounded(number: str) -> int:
        if len(number.lstrip("-")) > 100_000:
            raise ValueError(number)
        return 0

    try:
        value = json.loads(text, parse_constant=no_constant, parse_float=finite, parse_int=bounded)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict)


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _json_size(block: Any) -> int:
    """The bytes a block kept as it came counts against ``max_block_bytes``: its compact JSON in UTF-8
    (as orjson writes it; integers past 64 bits, which orjson cannot write, as the standard library does)."""
    try:
        return len(orjson.dumps(block))
    except TypeError:
        return _utf8(json.dumps(block, ensure_ascii=False, separators=(",", ":")))


@dataclass
class _RefBlock:
    kind: str
    parts: list[str] = field(default_factory=list)
    id: str | None = None
    name: str | None = None
    size: int = 0


Outcome = tuple[Any, ...]
#: What HARNESS accepted that STRICT would have refused: {code: position of the first chunk that did}.
RefNotes = dict[ErrorCode, int]


def reference(
    chunks: list[Any], policy: Policy, limits: sf.Limits | None = None, notes: RefNotes | None = None
) -> Outcome:
    """``("ok", to_wire, interrupted)`` or ``("err", code, chunk_index)``, per SPEC §2-§4.

    Given ``notes``, fills it with the first position of each code STRICT would have raised for a chunk
    the policy accepted (SPEC §4: what HARNESS accepts and STRICT refuses is noted).
    """
    limits = limits or sf.Limits()
    strict = policy is Policy.STRICT
    harness = not strict
    opened: dict[int, _RefBlock] = {}
    done: dict[int, dict[str, Any]] = {}
    started = 0
    owners: dict[str, int] = {}  # a tool call's id -> the first block that had it
    usage: dict[str, Any] | None = None
    tool_calls = 0
    finish: dict[str, Any] | None = None

    def err(code: ErrorCode, n: int) -> Outcome:
        return ("err", code, n)

    for n, chunk in enumerate(chunks):
        if finish is not None:
            return err(ErrorCode.CHUNK_AFTER_FINISH, n)
        try:
            shaped = _ref_shape(chunk, harness)
        except Exception:
            shaped = None
        if shaped is None:
            return err(ErrorCode.INVALID_CHUNK, n)
        c, t = shaped
        over = n >= limits.max_chunks
        noted: list[ErrorCode] = []  # what STRICT would refuse in this chunk, if it is accepted
        if t == "block-start":
            if opened and strict:
                return err(ErrorCode.BLOCKS_INTERLEAVED, n)
            if usage is not None:
                return err(ErrorCode.CHUNK_AFTER_USAGE, n)
            if c["index"] != started:
                return err(ErrorCode.INDEX_OUT_OF_ORDER, n)
            if over or started >= limits.max_blocks:
                return err(ErrorCode.LIMIT_EXCEEDED, n)
            if c["blockType"] not in CORE_BLOCK_TYPES:
                noted.append(ErrorCode.INVALID_CHUNK)
            if opened:
                noted.append(ErrorCode.BLOCKS_INTERLEAVED)
            opened[started] = _RefBlock(c["blockType"])
            started += 1
        elif t in KIND_OF or t == "block-end":
            if usage is not None:
                return err(ErrorCode.CHUNK_AFTER_USAGE, n)
            block = opened.get(c["index"])
            if block is None:
                return err(ErrorCode.BLOCK_NOT_OPEN, n)
            kind = KIND_OF[t] if t in KIND_OF else c["block"]["type"]
            if kind != block.kind:
                return err(ErrorCode.BLOCK_TYPE_MISMATCH, n)
            if t != "block-end":
                value = c["text"] if kind != "tool-call" else c["argumentsDelta"]
                if kind == "tool-call":
                    cid = c["id"]
                    if block.id is None and strict and cid in owners:
                        return err(ErrorCode.TOOL_CALL_CONFLICT, n)
                    if block.id is not None and cid != block.id:
                        return err(ErrorCode.TOOL_CALL_CONFLICT, n)
                    if "name" in c and block.name is not None and c["name"] != block.name:
                        return err(ErrorCode.TOOL_CALL_CONFLICT, n)
                said = [] if kind != "tool-call" else [cid] if block.id is None else []
                if kind == "tool-call" and "name" in c and block.name is None:
                    said.append(c["name"])  # an id and a name are each held to the block limit when first said
                if over or block.size + _utf8(value) > limits.max_block_bytes:
                    return err(ErrorCode.LIMIT_EXCEEDED, n)
                if any(_utf8(text) > limits.max_block_bytes for text in said):
                    return err(ErrorCode.LIMIT_EXCEEDED, n)
                block.size += _utf8(value)
                block.parts.append(value)
                if kind == "tool-call":
                    if cid == "" or c.get("name") == "":
                        noted.append(ErrorCode.INVALID_CHUNK)
                    if owners.get(cid, c["index"]) != c["index"]:
                        noted.append(ErrorCode.TOOL_CALL_CONFLICT)
                    if block.id is None:
                        block.id = cid
                        owners.setdefault(cid, c["index"])
                    if "name" in c:
                        block.name = c["name"]
                _note(notes, noted, n)
                continue
            b = c["block"]
            had = bool(block.parts)
            assembled = "".join(block.parts)
            if kind == "tool-call":
                wire = {"type": kind, "id": b["id"], "name": b["name"], "arguments": b["arguments"]}
                if had and (
                    b["id"] != block.id
                    or b["arguments"] != assembled
                    or (block.name is not None and b["name"] != block.name)
                ):
                    return err(ErrorCode.BLOCK_CONTENT_MISMATCH, n)
                reused = owners.get(b["id"], c["index"]) != c["index"]
                if not had and reused and strict:
                    return err(ErrorCode.TOOL_CALL_CONFLICT, n)
                object_arguments = _json_object(b["arguments"])
                if not object_arguments and strict:
                    return err(ErrorCode.TOOL_ARGUMENTS_INVALID, n)
                size = _utf8(b["arguments"])
                if b["id"] == "" or b["name"] == "":
                    noted.append(ErrorCode.INVALID_CHUNK)
                if reused:
                    noted.append(ErrorCode.TOOL_CALL_CONFLICT)
                if not object_arguments:
                    noted.append(ErrorCode.TOOL_ARGUMENTS_INVALID)
            elif kind in ("text", "reasoning"):
                wire = {"type": kind, "text": b["text"]}
                if had and b["text"] != assembled:
                    return err(ErrorCode.BLOCK_CONTENT_MISMATCH, n)
                size = _utf8(b["text"])
            else:  # no deltas: an image block (its attachment), or under HARNESS a block kept as it came
                wire = {"type": "image", "attachment": b["attachment"]} if kind == "image" else dict(b)
                wire = copy.deepcopy(wire)
                size = _json_size(b)
                if kind != "image":
                    noted.append(ErrorCode.INVALID_CHUNK)
            if over or (not had and size > limits.max_block_bytes):
                return err(ErrorCode.LIMIT_EXCEEDED, n)
            if kind == "tool-call" and any(_utf8(text) > limits.max_block_bytes for text in (b["id"], b["name"])):
                return err(ErrorCode.LIMIT_EXCEEDED, n)  # an id and a name said by the deltas passed already
            if kind == "tool-call":
                owners.setdefault(b["id"], c["index"])
                tool_calls += 1
            del opened[c["index"]]
            done[c["index"]] = wire
        elif t == "usage":
            if usage is not None:
                return err(ErrorCode.USAGE_DUPLICATE, n)
            if over:
                return err(ErrorCode.LIMIT_EXCEEDED, n)
            u = c["usage"]
            usage = {k: u[k] for k in ("inputTokens", "outputTokens", *USAGE_OPTIONAL) if k in u}
        else:
            r = c["reason"]
            kind = r["kind"]
            if opened and kind not in CUT_OFF:
                return err(ErrorCode.BLOCK_NOT_CLOSED, n)
            usage_missing = usage is None and kind in ("stop", "tool-calls", "max-tokens")
            if strict and usage_missing:
                return err(ErrorCode.USAGE_MISSING, n)
            no_call = kind == "tool-calls" and tool_calls == 0
            if strict and no_call:
                return err(ErrorCode.FINISH_REASON_MISMATCH, n)
            if over:
                return err(ErrorCode.LIMIT_EXCEEDED, n)
            if kind not in FINISH_KINDS:
                noted.append(ErrorCode.INVALID_CHUNK)
                finish = copy.deepcopy(dict(r))  # kept as it came (SPEC §4)
            else:
                finish = {"kind": kind}
            if usage_missing:
                noted.append(ErrorCode.USAGE_MISSING)
            if no_call:
                noted.append(ErrorCode.FINISH_REASON_MISMATCH)
            if kind in ("error", "aborted"):
                f = r["failure"]
                finish["failure"] = {k: f[k] for k in ("message", "code", *FAILURE_OPTIONAL) if k in f}
        _note(notes, noted, n)
    if finish is None:
        return err(ErrorCode.STREAM_TRUNCATED, len(chunks))
    interrupted = []
    for i in sorted(opened):
        block = opened[i]
        if block.kind == "tool-call":
            partial: dict[str, Any] = {"type": "tool-call", "arguments": "".join(block.parts)}
            if block.id is not None:
                partial["id"] = block.id
            if block.name is not None:
                partial["name"] = block.name
            interrupted.append(partial)
        elif block.kind in ("text", "reasoning"):
            interrupted.append({"type": block.kind, "text": "".join(block.parts)})
        else:  # a block that takes no deltas has nothing but its type before its block-end
            interrupted.append({"type": block.kind})
    wire = {"blocks": [done[i] for i in sorted(done)], "usage": usage, "finish": finish}
    return ("ok", wire, interrupted)


def _note(notes: RefNotes | None, codes: list[ErrorCode], n: int) -> None:
    if notes is not None:
        for code in codes:
            notes.setdefault(code, n)


# -- running the library ---------------------------------------------------------------------------


def wire_of(block: sf.Block | dict[str, Any]) -> dict[str, Any]:
    """A block's wire form: a block of an unknown type (HARNESS) is the plain dict it came as."""
    return block if isinstance(block, dict) else block.to_wire()


def _interrupted_matches(got: list[sf.Block | dict[str, Any]], expected: list[dict[str, Any]]) -> bool:
    """``interrupted`` against partial contents: type and content; id and name where the deltas gave them."""
    if len(got) != len(expected):
        return False
    for block, want in zip(got, expected, strict=True):
        wire = wire_of(block)
        if want["type"] not in BLOCK_TYPES:  # a block that takes no deltas: nothing but its type came
            if wire != want:
                return False
            continue
        if wire["type"] != want["type"]:
            return False
        key = "arguments" if want["type"] == "tool-call" else "text"
        if wire[key] != want[key]:
            return False
        for optional in ("id", "name"):
            if optional in want and wire.get(optional) != want[optional]:
                return False
    return True


def outcome(run: Callable[[], sf.StreamResult]) -> Outcome:
    """``("ok", to_wire, interrupted blocks' wire)`` or ``("err", code, chunk_index)``; nothing else escapes."""
    try:
        result = run()
    except LlmError as exc:
        return ("err", exc.code, exc.chunk_index)
    return ("ok", result.to_wire(), [wire_of(b) for b in result.interrupted])


def check_error(out: Outcome, n_chunks: int) -> None:
    if out[0] == "err":
        _, code, index = out
        assert isinstance(code, ErrorCode), code
        assert code in set(ErrorCode)
        assert type(index) is int, index
        assert 0 <= index <= n_chunks, (index, n_chunks)


def same_as_reference(got: Outcome, ref: Outcome) -> None:
    if ref[0] == "err" or got[0] == "err":
        assert got == ref, f"library {got!r} != reference {ref!r}"
        return
    assert got[1] == ref[1], f"library {got[1]!r} != reference {ref[1]!r}"
    assert len(got[2]) == len(ref[2])
    for block, want in zip(got[2], ref[2], strict=True):
        if want["type"] not in BLOCK_TYPES:
            assert block == want
            continue
        key = "arguments" if want["type"] == "tool-call" else "text"
        assert block["type"] == want["type"] and block[key] == want[key], (block, want)
        for optional in ("id", "name"):
            if optional in want:
                assert block.get(optional) == want[optional], (block, want)


async def _agen(chunks: list[Any]) -> AsyncIterator[Any]:
    for chunk in chunks:
        yield chunk


def run_feed(chunks: list[Any], policy: Policy, limits: sf.Limits | None = None) -> sf.StreamResult:
    asm = sf.StreamAssembler(policy=policy, limits=limits)
    for chunk in chunks:
        asm.feed(chunk)
    return asm.close()


def run_feed_many(chunks: list[Any], policy: Policy, batch: int) -> sf.StreamResult:
    asm = sf.StreamAssembler(policy=policy)
    for start in range(0, len(chunks), batch):
        asm.feed_many(iter(chunks[start : start + batch]))
    return asm.close()


def run_validate(chunks: list[Any], policy: Policy) -> Outcome:
    """validate() as a pass-through: it yields exactly the accepted chunks, in order, then stops or raises."""
    seen: list[Any] = []
    try:
        for chunk in sf.validate(chunks, policy=policy):
            seen.append(chunk)
    except LlmError as exc:
        assert len(seen) == exc.chunk_index
        assert all(a is b for a, b in zip(seen, chunks, strict=False))
        return ("err", exc.code, exc.chunk_index)
    assert len(seen) == len(chunks) and all(a is b for a, b in zip(seen, chunks, strict=True))
    return ("ok",)


def run_avalidate(chunks: list[Any], policy: Policy) -> Outcome:
    async def go() -> Outcome:
        seen: list[Any] = []
        try:
            async for chunk in sf.avalidate(_agen(chunks), policy=policy):
                seen.append(chunk)
        except LlmError as exc:
            assert len(seen) == exc.chunk_index
            return ("err", exc.code, exc.chunk_index)
        assert len(seen) == len(chunks) and all(a is b for a, b in zip(seen, chunks, strict=True))
        return ("ok",)

    return asyncio.run(go())


def run_validate_jsonl(blob: bytes, chunks: list[Any], policy: Policy) -> sf.StreamResult:
    """validate_jsonl yields each parsed chunk once accepted; then the same stream assembles."""
    seen: list[Any] = []
    try:
        for chunk in sf.validate_jsonl(blob, policy=policy):
            seen.append(chunk)
    except LlmError as exc:
        assert seen == chunks[: exc.chunk_index]
        raise
    assert seen == chunks
    return sf.assemble(chunks, policy=policy)


def jsonl_lines(chunks: list[Any]) -> list[bytes] | None:
    """The chunks as orjson lines, or None when one does not survive the JSON round trip unchanged."""
    lines = []
    for chunk in chunks:
        try:
            line = orjson.dumps(chunk)
            if orjson.loads(line) != chunk:
                return None
        except (TypeError, orjson.JSONEncodeError):
            return None
        lines.append(line)
    return lines


def all_entry_points(chunks: list[Any], policy: Policy) -> dict[str, Outcome]:
    """Every entry point of SPEC §5 run over the same stream."""
    outs = {
        "assemble": outcome(lambda: sf.assemble(chunks, policy=policy)),
        "aassemble": outcome(lambda: asyncio.run(sf.aassemble(_agen(chunks), policy=policy))),
        "feed": outcome(lambda: run_feed(chunks, policy)),
        "assemble(iterator)": outcome(lambda: sf.assemble(iter(chunks), policy=policy)),
        "assemble(dict subclass)": outcome(
            lambda: sf.assemble([DictSub(c) if type(c) is dict else c for c in chunks], policy=policy)
        ),
    }
    if HAS_FEED_MANY:
        outs["feed_many"] = outcome(lambda: run_feed_many(chunks, policy, max(1, len(chunks))))
        outs["feed_many(batches of 3)"] = outcome(lambda: run_feed_many(chunks, policy, 3))
    lines = jsonl_lines(chunks)
    if lines is not None:
        blob = b"\n".join(lines) + b"\n"
        outs["assemble_jsonl(bytes)"] = outcome(lambda: sf.assemble_jsonl(blob, policy=policy))
        outs["assemble_jsonl(str)"] = outcome(lambda: sf.assemble_jsonl(blob.decode(), policy=policy))
        outs["assemble_jsonl(lines)"] = outcome(lambda: sf.assemble_jsonl(iter(lines), policy=policy))
        # Blank lines take no position; CRLF line ends are JSON whitespace.
        spaced = b"\n \t\n" + b"\r\n\r\n".join(lines)
        outs["assemble_jsonl(blank lines)"] = outcome(lambda: sf.assemble_jsonl(spaced, policy=policy))
        outs["validate_jsonl"] = outcome(lambda: run_validate_jsonl(spaced, chunks, policy))
    return outs


def assert_agree(chunks: list[Any], policy: Policy) -> Outcome:
    outs = all_entry_points(chunks, policy)
    first = outs["assemble"]
    for name, out in outs.items():
        assert out == first, f"{name}: {out!r} != assemble: {first!r}"
    for name, out in (("validate", run_validate(chunks, policy)), ("avalidate", run_avalidate(chunks, policy))):
        if first[0] == "ok":
            assert out == ("ok",), f"{name}: {out!r} but assemble succeeded"
        else:
            assert out == first, f"{name}: {out!r} != assemble: {first!r}"
    return first


# -- (a) valid streams assemble to their source content --------------------------------------------


def assert_assembles_to_source(src: Source) -> sf.StreamResult:
    result = sf.assemble(src.chunks, policy=src.policy)
    assert [wire_of(b) for b in result.blocks] == src.blocks
    for block, want in zip(result.blocks, src.blocks, strict=True):
        if want["type"] == "image":
            assert isinstance(block, sf.ImageBlock) and block.attachment == want["attachment"]
        elif want["type"] not in BLOCK_TYPES:
            assert type(block) is dict
    assert result.text == "".join(b["text"] for b in src.blocks if b["type"] == "text")
    assert result.reasoning == "".join(b["text"] for b in src.blocks if b["type"] == "reasoning")
    calls = [b for b in src.blocks if b["type"] == "tool-call"]
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        (c["id"], c["name"], c["arguments"]) for c in calls
    ]
    for call, raw in zip(result.tool_calls, src.arguments, strict=True):
        if _json_object(raw):
            assert call.parsed_arguments == json.loads(raw)
        else:  # kept raw (HARNESS): asking for the object says why there is none
            with pytest.raises(ValueError, match="not a JSON object"):
                _ = call.parsed_arguments
    if src.usage is None:
        assert result.usage is None
    else:
        assert result.usage is not None
        assert result.usage.input_tokens == src.usage["inputTokens"]
        assert result.usage.output_tokens == src.usage["outputTokens"]
        assert result.usage.cache_read_tokens == src.usage.get("cacheReadTokens")
        assert result.usage.cache_write_tokens == src.usage.get("cacheWriteTokens")
        assert result.usage.reasoning_tokens == src.usage.get("reasoningTokens")
    assert result.finish.kind == src.reason["kind"]
    failure = src.reason.get("failure")
    if failure is None:
        assert result.finish.failure is None
    else:
        assert result.finish.failure is not None
        assert result.finish.failure.message == failure["message"]
        assert result.finish.failure.code == failure["code"]
        assert result.finish.failure.status == failure.get("status")
        assert result.finish.failure.provider_retry_after_ms == failure.get("providerRetryAfterMs")
        assert result.finish.failure.request_id == failure.get("requestId")
    assert result.replay_state == src.replay
    assert _interrupted_matches(result.interrupted, src.interrupted), (result.interrupted, src.interrupted)
    assert result.to_wire() == src.expected_wire()
    # The result is the machine's own: changing the input chunks afterwards changes nothing.
    wire, replay = result.to_wire(), copy.deepcopy(result.replay_state)
    for chunk in src.chunks:
        _scramble(chunk)
    assert result.to_wire() == wire
    assert result.replay_state == replay
    return result


def _scramble(value: Any) -> None:
    if isinstance(value, dict):
        for v in value.values():
            _scramble(v)
        for k in value:
            value[k] = "scrambled"
    elif isinstance(value, list):
        for v in value:
            _scramble(v)
        value[:] = ["scrambled"] * len(value)


@PROPS
@given(sources(Policy.STRICT))
def test_valid_strict_streams_assemble_to_their_source(src: Source) -> None:
    assert_assembles_to_source(src)


@PROPS
@given(sources(Policy.HARNESS))
def test_valid_harness_streams_assemble_to_their_source(src: Source) -> None:
    assert_assembles_to_source(src)


@LIGHT
@given(sources())
def test_valid_streams_match_the_reference_checker(src: Source) -> None:
    got = outcome(lambda: sf.assemble(src.chunks, policy=src.policy))
    assert got[0] == "ok", got
    same_as_reference(got, reference(src.chunks, src.policy))


big_ints = st.one_of(st.integers(min_value=2**64), st.integers(max_value=-(2**63) - 1))


@LIGHT
@given(st.dictionaries(st.text(max_size=5), big_ints, min_size=1, max_size=3))
def test_tool_arguments_keep_integers_wider_than_64_bits(obj: dict[str, int]) -> None:
    """RFC 8259 numbers of any size: parsed_arguments holds the integers that the arguments spell."""
    args = json.dumps(obj)
    chunks = [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "c", "name": "f", "argumentsDelta": args},
        {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c", "name": "f", "arguments": args}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]
    result = sf.assemble(chunks)  # type: ignore[arg-type]
    assert result.tool_calls[0].parsed_arguments == json.loads(args)


# -- (b) STRICT streams are HARNESS streams ---------------------------------------------------------


@LIGHT
@given(sources(Policy.STRICT))
def test_strict_streams_are_valid_under_harness_with_the_same_result(src: Source) -> None:
    strict = sf.assemble(src.chunks, policy=Policy.STRICT)
    harness = sf.assemble(src.chunks, policy=Policy.HARNESS)
    assert harness.to_wire() == strict.to_wire()
    assert [wire_of(b) for b in harness.interrupted] == [wire_of(b) for b in strict.interrupted]
    assert harness.replay_state == strict.replay_state


@LIGHT
@given(sources(Policy.HARNESS, interleave=True))
def test_harness_streams_under_strict_match_the_reference(src: Source) -> None:
    """Under STRICT an interleaved (or usage-less) HARNESS stream is refused with the code SPEC §3 gives."""
    out = outcome(lambda: sf.assemble(src.chunks, policy=Policy.STRICT))
    check_error(out, len(src.chunks))
    same_as_reference(out, reference(src.chunks, Policy.STRICT))


# -- (c) mutations only ever raise LlmError, with the code the reference predicts -----------------


@PROPS
@given(mutated())
def test_mutated_streams_raise_only_llm_errors(case: tuple[Source, list[Any], list[str]]) -> None:
    src, chunks, _ = case
    asm = sf.StreamAssembler(policy=src.policy)
    for chunk in chunks:
        with contextlib.suppress(LlmError):
            asm.feed(chunk)
        asm.snapshot()  # never raises, failed or not
        _ = asm.state
    out = outcome(lambda: sf.assemble(chunks, policy=src.policy))
    check_error(out, len(chunks))
    if out[0] == "err" and out[1] is not ErrorCode.STREAM_TRUNCATED:
        assert out[2] < len(chunks)


@PROPS
@given(mutated())
def test_mutated_streams_match_the_reference_checker(case: tuple[Source, list[Any], list[str]]) -> None:
    src, chunks, _ = case
    got = outcome(lambda: sf.assemble(chunks, policy=src.policy))
    same_as_reference(got, reference(chunks, src.policy))


# -- SPEC §4: what HARNESS accepts and STRICT refuses is noted ------------------------------------------


def machine_notes(chunks: list[Any], policy: Policy) -> RefNotes:
    """The first position of each code among the machine's notes, the stream accepted or not."""
    asm = sf.StreamAssembler(policy=policy)
    try:
        for chunk in chunks:
            asm.feed(chunk)
        asm.close()
    except LlmError:
        pass
    notes = {error.code: error.chunk_index for error, _ in asm.notes}
    assert all(count >= 1 for _, count in asm.notes)
    assert all(type(index) is int for index in notes.values())
    return notes  # type: ignore[return-value]


@PROPS
@given(mutated(Policy.HARNESS))
def test_notes_match_the_reference_checker(case: tuple[Source, list[Any], list[str]]) -> None:
    _, chunks, _ = case
    expected: RefNotes = {}
    reference(chunks, Policy.HARNESS, notes=expected)
    assert machine_notes(chunks, Policy.HARNESS) == expected


@LIGHT
@given(sources(Policy.HARNESS))
def test_harness_notes_the_chunk_strict_refuses(src: Source) -> None:
    """A stream HARNESS accepts: STRICT accepts it too and nothing is noted, or STRICT's error is noted first."""
    notes = machine_notes(src.chunks, Policy.HARNESS)
    strict = outcome(lambda: sf.assemble(src.chunks, policy=Policy.STRICT))
    if strict[0] == "ok":
        assert notes == {}
        return
    _, code, index = strict
    assert notes.get(code) == index, (strict, notes)
    assert min(notes.values()) == index, notes
    assert machine_notes(src.chunks, Policy.STRICT) == {}


# -- (d) every entry point agrees --------------------------------------------------------------------


@LIGHT
@given(sources())
def test_entry_points_agree_on_valid_streams(src: Source) -> None:
    out = assert_agree(src.chunks, src.policy)
    assert out[0] == "ok"
    assert out[1] == src.expected_wire()


@LIGHT
@given(mutated())
def test_entry_points_agree_on_mutated_streams(case: tuple[Source, list[Any], list[str]]) -> None:
    src, chunks, _ = case
    assert_agree(chunks, src.policy)


#: Lines that hold no JSON: empty, JSON whitespace, other ASCII and Unicode whitespace, a BOM.
SPACE_LINES = st.sampled_from(
    ["", " ", "\t", "\r", " \t\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000", "\ufeff"]
)
GARBAGE_LINES = st.one_of(
    st.text(max_size=8), st.sampled_from(["{", "null", "[]", "1", '"x"', "{}", "NaN", "\ufeff{}", '{"type":'])
)


@st.composite
def jsonl_documents(draw: st.DrawFn) -> tuple[Policy, list[str]]:
    """A valid stream as JSON lines, with whitespace-only and garbage lines slipped in."""
    src = draw(sources())
    lines = [orjson.dumps(c).decode() for c in src.chunks]
    for _ in range(draw(st.integers(0, 3))):
        extra = draw(SPACE_LINES) if draw(st.booleans()) else draw(GARBAGE_LINES)
        lines.insert(draw(st.integers(0, len(lines))), extra)
    return src.policy, lines


@LIGHT
@given(jsonl_documents())
def test_jsonl_as_bytes_and_as_str_agree(doc: tuple[Policy, list[str]]) -> None:
    """The same JSON-lines document gives the same result whether it is read as str or as bytes."""
    policy, lines = doc
    text = "\n".join(lines)
    as_str = outcome(lambda: sf.assemble_jsonl(text, policy=policy))
    as_bytes = outcome(lambda: sf.assemble_jsonl(text.encode(), policy=policy))
    as_lines = outcome(lambda: sf.assemble_jsonl([line.encode() for line in lines], policy=policy))
    check_error(as_str, len(lines))
    assert as_bytes == as_str, f"bytes {as_bytes!r} != str {as_str!r}"
    assert as_lines == as_bytes, f"byte lines {as_lines!r} != bytes {as_bytes!r}"


class Upstream:
    """A chunk source that records whether it was closed (sync and async generators)."""

    def __init__(self, chunks: list[Any]) -> None:
        self.chunks = chunks
        self.closed = False

    def sync(self) -> Iterator[Any]:
        try:
            yield from self.chunks
        finally:
            self.closed = True

    async def aio(self) -> AsyncIterator[Any]:
        try:
            for chunk in self.chunks:
                yield chunk
        finally:
            self.closed = True


@LIGHT
@given(mutated(), st.integers(0, 40))
def test_validate_closes_its_upstream_on_error_and_on_early_exit(
    case: tuple[Source, list[Any], list[str]], stop: int
) -> None:
    """SPEC §5: avalidate closes the upstream iterator on error or early exit (validate likewise)."""
    src, chunks, _ = case
    expected = outcome(lambda: sf.assemble(chunks, policy=src.policy))

    upstream = Upstream(chunks)
    consumer = sf.validate(upstream.sync(), policy=src.policy)
    taken = 0
    try:
        for _ in consumer:
            taken += 1
            if taken == stop:
                consumer.close()
                break
    except LlmError as exc:
        assert ("err", exc.code, exc.chunk_index) == expected
    assert upstream.closed

    async def consume() -> bool:
        upstream = Upstream(chunks)
        consumer = sf.avalidate(upstream.aio(), policy=src.policy)
        taken = 0
        try:
            async for _ in consumer:
                taken += 1
                if taken == stop:
                    await consumer.aclose()
                    break
        except LlmError as exc:
            assert ("err", exc.code, exc.chunk_index) == expected
        return upstream.closed

    assert asyncio.run(consume())


class UpstreamBroke(Exception):
    """Raised by a chunk source midway: not the machine's error."""


@pytest.mark.skipif(not HAS_FEED_MANY, reason="no StreamAssembler.feed_many")
@LIGHT
@given(mutated(), st.integers(0, 40))
def test_feed_many_counts_every_chunk_when_its_source_breaks(
    case: tuple[Source, list[Any], list[str]], cut: int
) -> None:
    """Chunks taken before the source raised keep their positions: later errors point at the right chunk."""
    src, chunks, _ = case
    cut = min(cut, len(chunks))

    def source() -> Iterator[Any]:
        yield from chunks[:cut]
        raise UpstreamBroke

    def run() -> sf.StreamResult:
        asm = sf.StreamAssembler(policy=src.policy)
        try:
            asm.feed_many(source())
        except UpstreamBroke:
            assert asm.chunk_count == cut, f"chunk_count {asm.chunk_count} after {cut} chunks"
            assert asm.snapshot().chunk_count == cut
        for chunk in chunks[cut:]:
            asm.feed(chunk)
        return asm.close()

    assert outcome(run) == outcome(lambda: sf.assemble(chunks, policy=src.policy))


# -- limits: the hot path and the full path decide alike ---------------------------------------------


@st.composite
def limited(draw: st.DrawFn) -> tuple[Source, list[Any], sf.Limits]:
    src = draw(sources())
    chunks = src.chunks
    if draw(st.booleans()):
        _, chunks, _ = draw(mutated(src.policy))
    limits = sf.Limits(
        max_chunks=draw(st.integers(1, len(chunks) + 2)),
        max_blocks=draw(st.integers(1, 6)),
        max_block_bytes=draw(st.integers(1, 80)),
    )
    return src, chunks, limits


@LIGHT
@given(limited())
def test_limits_match_the_reference_on_every_path(case: tuple[Source, list[Any], sf.Limits]) -> None:
    src, chunks, limits = case
    plain = outcome(lambda: run_feed(chunks, src.policy, limits))
    check_error(plain, len(chunks))
    subclassed = outcome(lambda: run_feed([DictSub(c) if type(c) is dict else c for c in chunks], src.policy, limits))
    assert plain == subclassed, f"hot path {plain!r} != full path {subclassed!r}"
    same_as_reference(plain, reference(chunks, src.policy, limits))


# -- (e) a failed machine stays failed ---------------------------------------------------------------


@LIGHT
@given(mutated(), st.data())
def test_after_the_first_error_every_feed_raises_the_same_code(
    case: tuple[Source, list[Any], list[str]], data: st.DataObject
) -> None:
    src, chunks, _ = case
    asm = sf.StreamAssembler(policy=src.policy)
    first: LlmError | None = None
    for chunk in chunks:
        try:
            asm.feed(chunk)
        except LlmError as exc:
            first = exc
            break
    if first is None:
        try:
            asm.close()
            return
        except LlmError as exc:
            first = exc
    assert asm.state == "FAILED"
    later = data.draw(st.lists(st.one_of(st.sampled_from(src.chunks), garbage(src.chunks)), max_size=5))
    for chunk in later:
        try:
            asm.feed(chunk)
        except LlmError as exc:
            assert exc.code == first.code
        else:
            raise AssertionError(f"feed({chunk!r}) was accepted after {first!r}")
    try:
        asm.close()
    except LlmError as exc:
        assert exc.code == first.code
    else:
        raise AssertionError(f"close() returned a result after {first!r}")
    asm.snapshot()


# -- (f) snapshots --------------------------------------------------------------------------------------


@PROPS
@given(sources(), st.data())
def test_snapshots_are_consistent_with_the_final_result(src: Source, data: st.DataObject) -> None:
    n = len(src.chunks)
    points = data.draw(st.sets(st.integers(-1, n - 1), max_size=6))
    asm = sf.StreamAssembler(policy=src.policy)
    snaps = []
    if -1 in points:
        snaps.append((-1, asm.snapshot()))
    for k, chunk in enumerate(src.chunks):
        asm.feed(chunk)
        if k in points:
            snaps.append((k, asm.snapshot()))
    result = asm.close()
    final = [wire_of(b) for b in result.blocks]
    assert asm.state == "FINISHED"
    for k, snap in snaps:
        assert snap.chunk_count == k + 1
        assert snap.state in ("READY", "IN_BLOCK", "USAGE", "FINISHED")
        assert (snap.state == "IN_BLOCK") == (bool(snap.open) and snap.usage is None and snap.finish is None)
        done = [wire_of(b) for b in snap.blocks]
        # Completed blocks so far: a subsequence of the final blocks (a prefix when blocks never interleave).
        it = iter(final)
        assert all(any(b == f for f in it) for b in done), (done, final)
        if src.policy is Policy.STRICT:
            assert done == final[: len(done)]
        for ob in snap.open:
            _, content = src.by_index[ob.index]
            assert ob.block_type == content["type"]
            if ob.block_type == "tool-call":
                assert content["arguments"].startswith(ob.arguments)
                if ob.id is not None:
                    assert ob.id == content.get("id")
                if ob.name is not None:
                    assert ob.name == content.get("name")
                assert ob.partial_arguments is None or isinstance(ob.partial_arguments, dict)
            elif ob.block_type in ("text", "reasoning"):
                assert content["text"].startswith(ob.text)
            else:  # a block that takes no deltas shows nothing but its type until its block-end
                assert (ob.text, ob.id, ob.name, ob.arguments) == ("", None, None, "")
        if snap.usage is not None:
            assert snap.usage.to_wire() == src.usage
        if snap.finish is not None:
            assert k == n - 1
            assert snap.finish.to_wire() == src.reason

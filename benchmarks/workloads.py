"""The workloads of issue 3, as chunk dicts (SPEC §1), as JSON lines, and in each peer's native format.

A :class:`Workload` is one or more streams of chunk dicts plus what they must assemble to
(:class:`Content`, computed here from the chunks, independently of streamfsm). The converters at the
bottom turn a stream into the *equivalent* stream of each peer — Anthropic Messages stream events,
OpenAI ``ChatCompletionChunk`` dicts, OpenAI Responses stream events, Gemini ``GenerateContentResponse``
chunks, pydantic-ai parts-manager calls, langchain ``AIMessageChunk`` keyword arguments — as plain data;
``peers.py`` builds the peer's objects from them (untimed). The Responses events and the Gemini chunks are
also what streamfsm's own converters for those wire APIs are fed.

Nothing here imports a peer, so this module works (and is tested) without any of them installed.
"""

# ruff: noqa: RUF001 - the multiplication sign in titles is meant

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import orjson

Chunk = dict[str, Any]
Stream = list[Chunk]

__all__ = [
    "FULL",
    "SMOKE",
    "Chunk",
    "Content",
    "Op",
    "Sizes",
    "Stream",
    "Workload",
    "all_workloads",
    "anthropic_events",
    "bare_loop",
    "big_arguments",
    "gemini_chunks",
    "langchain_chunks",
    "long_text",
    "openai_chunks",
    "plan",
    "provider_dirs",
    "provider_recordings",
    "pydantic_ai_calls",
    "recordings",
    "reference",
    "responses_events",
    "sessions_dir",
    "short_streams",
    "to_jsonl",
    "typical_turn",
]


# -- what a stream assembles to ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Content:
    """What a contender assembled from one stream: the comparison every content check makes.

    ``text`` and ``reasoning`` are every text (reasoning) block joined in index order;
    ``tool_calls`` is ``(id, name, raw JSON arguments)`` per tool-call block, in index order.
    Blocks a cut-off finish left open count, as far as they came.
    """

    text: str
    reasoning: str
    tool_calls: tuple[tuple[str, str, str], ...]

    @property
    def size(self) -> int:
        """UTF-8 bytes of the assembled payload (text, reasoning and arguments)."""
        return (
            len(self.text.encode("utf-8", "surrogatepass"))
            + len(self.reasoning.encode("utf-8", "surrogatepass"))
            + sum(len(a.encode("utf-8", "surrogatepass")) for _, _, a in self.tool_calls)
        )

    def diff(self, other: Content) -> str | None:
        """None when equal, else a short description of the first difference."""
        for name in ("text", "reasoning"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                return f"{name}: expected {len(mine)} chars {_clip(mine)}, got {len(theirs)} chars {_clip(theirs)}"
        if self.tool_calls != other.tool_calls:
            if len(self.tool_calls) != len(other.tool_calls):
                return f"tool calls: expected {len(self.tool_calls)}, got {len(other.tool_calls)}"
            for k, (mine_call, their_call) in enumerate(zip(self.tool_calls, other.tool_calls, strict=True)):
                if mine_call != their_call:
                    return f"tool call {k}: expected {_clip(str(mine_call))}, got {_clip(str(their_call))}"
        return None


def _clip(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


@dataclass(slots=True)
class _BlockInfo:
    kind: str
    call_id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    ended: dict[str, Any] | None = None


def _blocks(stream: Iterable[Chunk]) -> dict[int, _BlockInfo]:
    """Every block of a stream, by index: kind, tool id and name, deltas, and its ``block-end`` block."""
    blocks: dict[int, _BlockInfo] = {}
    for c in stream:
        t = c["type"]
        if t == "block-start":
            blocks[c["index"]] = _BlockInfo(c["blockType"])
        elif t == "text-delta" or t == "reasoning-delta":
            blocks[c["index"]].parts.append(c["text"])
        elif t == "tool-call-delta":
            b = blocks[c["index"]]
            b.parts.append(c["argumentsDelta"])
            b.call_id = b.call_id or c["id"]
            b.name = b.name or c.get("name") or ""
        elif t == "block-end":
            b = blocks[c["index"]]
            b.ended = c["block"]
            if b.kind == "tool-call":
                b.call_id = b.call_id or c["block"]["id"]
                b.name = b.name or c["block"]["name"]
    return blocks


def reference(stream: Iterable[Chunk]) -> Content:
    """The content a correct assembler produces from a valid stream (read straight from the chunks)."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[tuple[str, str, str]] = []
    for _, b in sorted(_blocks(stream).items()):
        if b.ended is not None:
            value = b.ended["arguments"] if b.kind == "tool-call" else b.ended["text"]
        else:  # left open by a cut-off finish: as far as it came
            value = "".join(b.parts)
        if b.kind == "text":
            text.append(value)
        elif b.kind == "reasoning":
            reasoning.append(value)
        else:
            calls.append((b.call_id, b.name, value))
    return Content("".join(text), "".join(reasoning), tuple(calls))


def bare_loop(chunks: Iterable[Chunk]) -> tuple[str, str]:
    """The yardstick of every figure: read ``type``, append text and argument deltas, join at the end.

    Defined once: the benchmark times it, and the JSON-lines baseline is checked against it.
    """
    texts: list[str] = []
    args: list[str] = []
    for c in chunks:
        t = c["type"]
        if t == "text-delta" or t == "reasoning-delta":
            texts.append(c["text"])
        elif t == "tool-call-delta":
            args.append(c["argumentsDelta"])
    return "".join(texts), "".join(args)


def to_jsonl(stream: Iterable[Chunk]) -> bytes:
    """The stream as JSON lines (one chunk a line, ``\\n``-separated, no trailing newline)."""
    return b"\n".join(orjson.dumps(c) for c in stream)


# -- workloads --------------------------------------------------------------------------------------


@dataclass(eq=False)
class Workload:
    """One benchmark input: streams of chunk dicts and the policy they are valid under."""

    key: str
    title: str
    streams: list[Stream]
    policy: str = "strict"
    #: The growth series this workload belongs to ("text", "args"), for the plot and the growth targets.
    series: str | None = None
    #: The size parameter (deltas, bytes, streams) and how to build the workload at another size:
    #: used to probe slow peers on a smaller version before running them on this one.
    size: int = 0
    factory: Callable[[int], Workload] | None = field(default=None, repr=False)

    @cached_property
    def n_chunks(self) -> int:
        return sum(len(s) for s in self.streams)

    @property
    def stream_length(self) -> float:
        """Mean chunks per stream (the x axis of the plot)."""
        return self.n_chunks / max(1, len(self.streams))

    @cached_property
    def expected(self) -> list[Content]:
        return [reference(s) for s in self.streams]

    @cached_property
    def expected_bare(self) -> list[tuple[str, str]]:
        return [bare_loop(s) for s in self.streams]

    @cached_property
    def jsonl(self) -> list[bytes]:
        return [to_jsonl(s) for s in self.streams]

    @cached_property
    def output_size(self) -> int:
        """UTF-8 bytes of everything the workload assembles to (the memory target's yardstick)."""
        return sum(c.size for c in self.expected)

    def scaled(self, size: int) -> Workload:
        if self.factory is None:
            raise ValueError(f"workload {self.key} has no size to scale")
        return self.factory(size)


@dataclass(frozen=True)
class Sizes:
    """How big each workload is: the full run, or the smoke run's tiny versions."""

    text: tuple[int, ...]
    growth: tuple[int, int]
    args: tuple[int, ...]
    short_streams: int
    #: At most this many recorded streams (None: all).
    recordings: int | None


FULL = Sizes(
    text=(200, 2_000, 20_000, 200_000),
    growth=(2_000, 200_000),
    args=(10_000, 100_000, 1_000_000),
    short_streams=1_000,
    recordings=None,
)
SMOKE = Sizes(text=(20, 200, 1_000), growth=(200, 1_000), args=(500, 2_000), short_streams=20, recordings=20)

#: Token-like text pieces (a few non-ASCII ones, as real text has): ~5 characters each on average.
_PIECES = (
    " the", " stream", " block", " of", " tokens", ",", " and", " a", " tool", " call", ".", " We",
    " assemble", " deltas", " into", " text", " is", " it", " café", " 流式", " —", "\n", " state",
    " machine", " every", " chunk", " once",
)


def _text_pieces(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return rng.choices(_PIECES, k=n)


def _split(text: str, n: int) -> list[str]:
    """``text`` cut into ``n`` consecutive pieces of (nearly) equal length (some may be empty)."""
    step, extra = divmod(len(text), n)
    pieces = []
    pos = 0
    for k in range(n):
        end = pos + step + (1 if k < extra else 0)
        pieces.append(text[pos:end])
        pos = end
    return pieces


def _text_block(index: int, pieces: list[str], kind: str = "text") -> Stream:
    delta = "text-delta" if kind == "text" else "reasoning-delta"
    return [
        {"type": "block-start", "index": index, "blockType": kind},
        *({"type": delta, "index": index, "text": p} for p in pieces),
        {"type": "block-end", "index": index, "block": {"type": kind, "text": "".join(pieces)}},
    ]


def _tool_block(index: int, call_id: str, name: str, pieces: list[str]) -> Stream:
    """A tool-call block; the first delta names the tool, later ones carry only the id (SPEC §1)."""
    chunks: Stream = [{"type": "block-start", "index": index, "blockType": "tool-call"}]
    for k, p in enumerate(pieces):
        d: Chunk = {"type": "tool-call-delta", "index": index, "id": call_id, "argumentsDelta": p}
        if k == 0:
            d["name"] = name
        chunks.append(d)
    block = {"type": "tool-call", "id": call_id, "name": name, "arguments": "".join(pieces)}
    chunks.append({"type": "block-end", "index": index, "block": block})
    return chunks


def _tail(kind: str, output_tokens: int) -> Stream:
    return [
        {"type": "usage", "usage": {"inputTokens": 1_234, "outputTokens": output_tokens}},
        {"type": "finish", "reason": {"kind": kind}},
    ]


TYPICAL_TEXT_DELTAS = 200
TYPICAL_TOOL_CALLS = 2
TYPICAL_ARG_DELTAS = 25


def typical_turn() -> Workload:
    """A text block of 200 deltas and two tool calls of 25 argument deltas: 258 chunks."""
    chunks = _text_block(0, _text_pieces(TYPICAL_TEXT_DELTAS, seed=1))
    calls = [
        ("bash", {"command": "grep -rn 'StreamAssembler' streamfsm --include='*.py' | head -n 40",
                  "timeout_ms": 30_000, "description": "Find where the assembler is used"}),
        ("read_file", {"path": "streamfsm/_machine.py", "offset": 340, "limit": 120,
                       "reason": "Read the hot path of feed() before changing it"}),
    ]
    for k, (name, args) in enumerate(calls[:TYPICAL_TOOL_CALLS]):
        raw = orjson.dumps(args).decode()
        chunks += _tool_block(1 + k, f"call_typical_{k}", name, _split(raw, TYPICAL_ARG_DELTAS))
    chunks += _tail("tool-calls", TYPICAL_TEXT_DELTAS + TYPICAL_TOOL_CALLS * TYPICAL_ARG_DELTAS)
    return Workload("typical", "typical agent turn (text × 200 deltas + 2 tool calls × 25)", [chunks])


def _count_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return str(n)


def _bytes_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}MB"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}kB"
    return f"{n}B"


def long_text(n: int) -> Workload:
    """One text block of ``n`` deltas (``n + 4`` chunks)."""
    chunks = _text_block(0, _text_pieces(n, seed=n)) + _tail("stop", n)
    return Workload(f"text-{_count_label(n)}", f"long text, {n:,} deltas", [chunks],
                    series="text", size=n, factory=long_text)


def big_arguments(nbytes: int) -> Workload:
    """One tool call whose arguments (a JSON object of ``nbytes`` bytes) arrive in 1-byte deltas."""
    head, tail = '{"path":"/tmp/blob.txt","content":"', '"}'
    filler = "abcdefghijklmnopqrstuvwxyz0123456789 "
    body = max(0, nbytes - len(head) - len(tail))
    raw = head + (filler * (body // len(filler) + 1))[:body] + tail
    chunks = _tool_block(0, "call_big", "write_file", list(raw)) + _tail("tool-calls", len(raw))
    return Workload(f"args-{_bytes_label(nbytes)}", f"one {_bytes_label(nbytes)} tool argument in 1-byte deltas",
                    [chunks], series="args", size=nbytes, factory=big_arguments)


def short_streams(count: int) -> Workload:
    """``count`` streams of 5 chunks (start, one delta, end, usage, finish): the fixed cost of a stream."""
    streams = []
    for k in range(count):
        word = _PIECES[k % len(_PIECES)].strip() or "ok"
        streams.append(_text_block(0, [word]) + _tail("stop", 1))
    return Workload("short", f"{count:,} short streams of 5 chunks", streams, size=count, factory=short_streams)


def sessions_dir() -> Path:
    """The recorded session logs kept in the repository (``tests/fixtures/harness-sessions``)."""
    return Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "harness-sessions"


def recordings(limit: int | None = None, directory: Path | None = None) -> tuple[Workload | None, str]:
    """The recorded DeepSeek Harness streams that are valid under ``Policy.HARNESS``, and a note.

    Each log is read in full (packed rows expanded: every chunk of every stream). Most recordings
    interleave a reasoning block with a tool call, which STRICT rejects; the five invalid streams (a
    cut-off log, a delta without its block-start, three content mismatches) are left out, and the note
    says how many streams and chunks are replayed.
    """
    import streamfsm as sf

    where = directory if directory is not None else sessions_dir()
    paths = sorted(where.glob("*.jsonl")) if where.is_dir() else []
    if not paths:
        return None, f"no recordings found in {where}"
    valid, total, strict_ok = _valid_under_harness(rec.chunks for path in paths for rec in sf.read_session(path))
    used = valid if limit is None else valid[:limit]
    note = (
        f"{len(paths)} session logs, {total} recorded streams: {len(valid)} valid under HARNESS "
        f"({strict_ok} also under STRICT), {total - len(valid)} invalid left out; {len(used)} replayed, "
        f"{sum(len(s) for s in used):,} chunks"
    )
    w = Workload("recordings", f"{len(used)} recorded harness streams (HARNESS)", used, policy="harness")
    return w, note


def _valid_under_harness(streams: Iterable[Sequence[Chunk]]) -> tuple[list[Stream], int, int]:
    """The streams valid under ``Policy.HARNESS`` (as lists), how many streams there were, and how many of the valid
    ones ``Policy.STRICT`` accepts too."""
    import streamfsm as sf

    valid: list[Stream] = []
    total = strict_ok = 0
    for chunks in streams:
        total += 1
        try:
            sf.assemble(chunks, policy=sf.Policy.HARNESS)
        except sf.LlmError:
            continue
        try:
            sf.assemble(chunks, policy=sf.Policy.STRICT)
            strict_ok += 1
        except sf.LlmError:
            pass
        valid.append(list(chunks))
    return valid, total, strict_ok


def provider_dirs() -> list[Path]:
    """The providers' recorded streams kept in the repository (``tests/fixtures/*provider-streams``)."""
    fixtures = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
    return [fixtures / "provider-streams", fixtures / "more-provider-streams"]


def provider_recordings(limit: int | None = None) -> tuple[Workload | None, str]:
    """The providers' recorded streams (six wire APIs: SSE bodies and their events as JSON lines), each read as
    ``sf.read_recordings`` reads it, converted to the block protocol's chunks; those valid under HARNESS.

    The JSON-lines contenders read them as chunk lines (``to_jsonl``), as a checker reads a converted corpus.
    """
    import streamfsm as sf

    paths = sorted(p for d in provider_dirs() for p in d.glob("*/*") if p.suffix in (".jsonl", ".sse"))
    if not paths:
        return None, "no provider recordings found"
    valid, total, _ = _valid_under_harness(rec.chunks for path in paths for rec in sf.read_recordings(path))
    used = valid if limit is None else valid[:limit]
    note = (
        f"{len(paths)} provider recordings, {total} streams converted to chunks: {len(valid)} valid under HARNESS, "
        f"{total - len(valid)} invalid left out; {len(used)} replayed, {sum(len(s) for s in used):,} chunks"
    )
    title = f"{len(used)} recorded provider streams, converted to chunks (HARNESS)"
    return Workload("provider-recordings", title, used, policy="harness"), note


def all_workloads(sizes: Sizes) -> tuple[list[Workload], list[str]]:
    """Every workload of the run, in table order, and notes about what was left out."""
    notes: list[str] = []
    # Small workloads first: the fixed-cost target compares "typical" with "short", best timed side by side.
    ws = [typical_turn(), short_streams(sizes.short_streams)]
    rec, note = recordings(sizes.recordings)
    notes.append(f"recordings: {note}")
    if rec is not None:
        ws.append(rec)
    providers, note = provider_recordings(sizes.recordings)
    notes.append(f"provider recordings: {note}")
    if providers is not None:
        ws.append(providers)
    ws += [long_text(n) for n in sizes.text]
    ws += [big_arguments(n) for n in sizes.args]
    return ws, notes


# -- the equivalent stream, in each peer's terms ----------------------------------------------------


class Op(NamedTuple):
    """One step of a stream, format-neutral: what every peer converter reads.

    ``start`` (block, kind, call_id, name) · ``delta`` (block, kind, value) · ``end`` (block) ·
    ``usage`` (tokens) · ``finish`` (kind = the finish kind).
    """

    op: str
    block: int = -1
    kind: str = ""
    value: str = ""
    call_id: str = ""
    name: str = ""
    tokens: tuple[int, int] = (0, 0)


def plan(stream: Stream) -> list[Op]:
    """The stream as :class:`Op` steps. A block that received no deltas gets one delta with its content
    (peers have no "complete block" message), and a tool call's id and name are known at its start."""
    blocks = _blocks(stream)
    ops: list[Op] = []
    for c in stream:
        t = c["type"]
        if t == "block-start":
            b = blocks[c["index"]]
            ops.append(Op("start", c["index"], b.kind, call_id=b.call_id, name=b.name))
        elif t == "text-delta" or t == "reasoning-delta":
            ops.append(Op("delta", c["index"], blocks[c["index"]].kind, c["text"]))
        elif t == "tool-call-delta":
            ops.append(Op("delta", c["index"], "tool-call", c["argumentsDelta"]))
        elif t == "block-end":
            b = blocks[c["index"]]
            if not b.parts:
                whole = c["block"]["arguments"] if b.kind == "tool-call" else c["block"]["text"]
                ops.append(Op("delta", c["index"], b.kind, whole))
            ops.append(Op("end", c["index"]))
        elif t == "usage":
            u = c["usage"]
            ops.append(Op("usage", tokens=(u["inputTokens"], u["outputTokens"])))
        elif t == "finish":
            ops.append(Op("finish", kind=c["reason"]["kind"]))
    return ops


_ANTHROPIC_STOP = {"stop": "end_turn", "tool-calls": "tool_use", "max-tokens": "max_tokens"}
_OPENAI_FINISH = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


def anthropic_events(stream: Stream) -> list[dict[str, Any]]:
    """Anthropic Messages stream events (the SSE ``data`` objects), for ``accumulate_event``."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_bench", "type": "message", "role": "assistant", "model": "bench", "content": [],
                "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        }
    ]
    usage = {"output_tokens": 0}
    for op in plan(stream):
        if op.op == "start":
            if op.kind == "text":
                block: dict[str, Any] = {"type": "text", "text": ""}
            elif op.kind == "reasoning":
                block = {"type": "thinking", "thinking": "", "signature": ""}
            else:
                block = {"type": "tool_use", "id": op.call_id, "name": op.name, "input": {}}
            events.append({"type": "content_block_start", "index": op.block, "content_block": block})
        elif op.op == "delta":
            if op.kind == "text":
                delta = {"type": "text_delta", "text": op.value}
            elif op.kind == "reasoning":
                delta = {"type": "thinking_delta", "thinking": op.value}
            else:
                delta = {"type": "input_json_delta", "partial_json": op.value}
            events.append({"type": "content_block_delta", "index": op.block, "delta": delta})
        elif op.op == "end":
            events.append({"type": "content_block_stop", "index": op.block})
        elif op.op == "usage":
            usage = {"input_tokens": op.tokens[0], "output_tokens": op.tokens[1]}
        elif op.op == "finish":
            events.append({
                "type": "message_delta",
                "delta": {"stop_reason": _ANTHROPIC_STOP.get(op.kind), "stop_sequence": None},
                "usage": usage,
            })
            events.append({"type": "message_stop"})
    return events


def openai_chunks(stream: Stream) -> list[dict[str, Any]]:
    """OpenAI ``ChatCompletionChunk`` objects as dicts (reasoning as DeepSeek's ``reasoning_content``)."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    tool_index: dict[int, int] = {}
    usage: dict[str, int] | None = None
    for op in plan(stream):
        if op.op == "start" and op.kind == "tool-call":
            k = tool_index[op.block] = len(tool_index)
            call = {"index": k, "id": op.call_id, "type": "function", "function": {"name": op.name, "arguments": ""}}
            out.append(chunk({"tool_calls": [call]}))
        elif op.op == "delta":
            if op.kind == "text":
                out.append(chunk({"content": op.value}))
            elif op.kind == "reasoning":
                out.append(chunk({"reasoning_content": op.value}))
            else:
                call = {"index": tool_index[op.block], "function": {"arguments": op.value}}
                out.append(chunk({"tool_calls": [call]}))
        elif op.op == "usage":
            usage = {"prompt_tokens": op.tokens[0], "completion_tokens": op.tokens[1],
                     "total_tokens": op.tokens[0] + op.tokens[1]}
        elif op.op == "finish":
            out.append(chunk({}, _OPENAI_FINISH.get(op.kind, "stop")))
            if usage is not None:
                out.append({**base, "choices": [], "usage": usage})
    return out


#: pydantic-ai call codes (see :func:`pydantic_ai_calls`).
PA_TEXT, PA_THINKING, PA_TOOL_START, PA_TOOL = 0, 1, 2, 3


def pydantic_ai_calls(stream: Stream) -> list[tuple[int, int, str | None, str | None, str | None]]:
    """``ModelResponsePartsManager`` calls ``(code, vendor_part_id, content/args, tool_name, tool_call_id)``,
    made the way pydantic-ai's own Anthropic model makes them: a part at the block's start, then deltas."""
    calls: list[tuple[int, int, str | None, str | None, str | None]] = []
    for op in plan(stream):
        if op.op == "start":
            if op.kind == "text":
                calls.append((PA_TEXT, op.block, "", None, None))
            elif op.kind == "reasoning":
                calls.append((PA_THINKING, op.block, "", None, None))
            else:
                calls.append((PA_TOOL_START, op.block, None, op.name, op.call_id))
        elif op.op == "delta":
            code = PA_TEXT if op.kind == "text" else PA_THINKING if op.kind == "reasoning" else PA_TOOL
            calls.append((code, op.block, op.value, None, None))
    return calls


def langchain_chunks(stream: Stream) -> list[dict[str, Any]]:
    """Keyword arguments of the ``AIMessageChunk`` objects a langchain chat model would stream."""
    out: list[dict[str, Any]] = [{"content": ""}]
    tool_index: dict[int, int] = {}
    for op in plan(stream):
        if op.op == "start" and op.kind == "tool-call":
            k = tool_index[op.block] = len(tool_index)
            tc = {"name": op.name, "args": "", "id": op.call_id, "index": k, "type": "tool_call_chunk"}
            out.append({"content": "", "tool_call_chunks": [tc]})
        elif op.op == "delta":
            if op.kind == "text":
                out.append({"content": op.value})
            elif op.kind == "reasoning":
                out.append({"content": "", "additional_kwargs": {"reasoning_content": op.value}})
            else:
                tc = {"name": None, "args": op.value, "id": None, "index": tool_index[op.block],
                      "type": "tool_call_chunk"}
                out.append({"content": "", "tool_call_chunks": [tc]})
        elif op.op == "usage":
            a, b = op.tokens
            usage = {"input_tokens": a, "output_tokens": b, "total_tokens": a + b}
            out.append({"content": "", "usage_metadata": usage})
        elif op.op == "finish":
            out.append({"content": "", "response_metadata": {"finish_reason": op.kind}})
    return out


def responses_events(stream: Stream) -> list[dict[str, Any]]:
    """OpenAI Responses API stream events (the SSE ``data`` objects), as the API documents and sends them.

    Each block is one output item (a ``message`` with one ``output_text`` part, a ``reasoning`` item with one
    summary part, a ``function_call``) between ``response.output_item.added`` and ``.done``; the deltas, then the
    part's ``.done`` events with the whole text, the item's ``output_item.done`` with the whole item, and
    ``response.completed`` with the whole response (its ``output`` and ``usage``), ``response.incomplete`` for a
    stream cut off by max tokens. Every event has its ``sequence_number``.
    """
    response = {"id": "resp_bench", "object": "response", "created_at": 0, "model": "bench", "output": [],
                "status": "in_progress", "usage": None, "error": None, "incomplete_details": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    output: list[dict[str, Any]] = []
    open_items: dict[int, tuple[int, dict[str, Any], list[str]]] = {}
    usage: dict[str, Any] | None = None
    for op in plan(stream):
        if op.op == "start":
            position = len(output) + len(open_items)
            if op.kind == "text":
                item: dict[str, Any] = {"id": f"msg_{op.block}", "type": "message", "status": "in_progress",
                                        "role": "assistant", "content": []}
            elif op.kind == "reasoning":
                item = {"id": f"rs_{op.block}", "type": "reasoning", "summary": []}
            else:
                item = {"id": f"fc_{op.block}", "type": "function_call", "status": "in_progress",
                        "call_id": op.call_id, "name": op.name, "arguments": ""}
            open_items[op.block] = (position, item, [])
            events.append({"type": "response.output_item.added", "output_index": position, "item": dict(item)})
            where = {"item_id": item["id"], "output_index": position}
            if op.kind == "text":
                part = {"type": "output_text", "text": "", "annotations": []}
                events.append({"type": "response.content_part.added", **where, "content_index": 0, "part": part})
            elif op.kind == "reasoning":
                part = {"type": "summary_text", "text": ""}
                events.append({"type": "response.reasoning_summary_part.added", **where, "summary_index": 0,
                               "part": part})
        elif op.op == "delta":
            position, item, parts = open_items[op.block]
            parts.append(op.value)
            where = {"item_id": item["id"], "output_index": position}
            if op.kind == "text":
                events.append({"type": "response.output_text.delta", **where, "content_index": 0, "delta": op.value,
                               "logprobs": []})
            elif op.kind == "reasoning":
                events.append({"type": "response.reasoning_summary_text.delta", **where, "summary_index": 0,
                               "delta": op.value})
            else:
                events.append({"type": "response.function_call_arguments.delta", **where, "delta": op.value})
        elif op.op == "end":
            position, item, parts = open_items.pop(op.block)
            whole = "".join(parts)
            where = {"item_id": item["id"], "output_index": position}
            if item["type"] == "message":
                part = {"type": "output_text", "text": whole, "annotations": []}
                events.append({"type": "response.output_text.done", **where, "content_index": 0, "text": whole,
                               "logprobs": []})
                events.append({"type": "response.content_part.done", **where, "content_index": 0, "part": part})
                done = {**item, "status": "completed", "content": [part]}
            elif item["type"] == "reasoning":
                part = {"type": "summary_text", "text": whole}
                events.append({"type": "response.reasoning_summary_text.done", **where, "summary_index": 0,
                               "text": whole})
                events.append({"type": "response.reasoning_summary_part.done", **where, "summary_index": 0,
                               "part": part})
                done = {**item, "summary": [part]}
            else:
                events.append({"type": "response.function_call_arguments.done", **where, "arguments": whole})
                done = {**item, "status": "completed", "arguments": whole}
            events.append({"type": "response.output_item.done", "output_index": position, "item": done})
            output.append(done)
        elif op.op == "usage":
            usage = {"input_tokens": op.tokens[0], "input_tokens_details": {"cached_tokens": 0},
                     "output_tokens": op.tokens[1], "output_tokens_details": {"reasoning_tokens": 0},
                     "total_tokens": op.tokens[0] + op.tokens[1]}
        elif op.op == "finish":
            if op.kind == "max-tokens":
                final = {**response, "status": "incomplete", "output": output, "usage": usage,
                         "incomplete_details": {"reason": "max_output_tokens"}}
                events.append({"type": "response.incomplete", "response": final})
            else:
                final = {**response, "status": "completed", "output": output, "usage": usage}
                events.append({"type": "response.completed", "response": final})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def gemini_chunks(stream: Stream) -> list[dict[str, Any]]:
    """Gemini ``streamGenerateContent`` chunks (``GenerateContentResponse`` objects as the API sends them, camelCase).

    A text or reasoning delta is a chunk of one part (``thought: true`` for reasoning); a tool call is one part
    with its whole ``functionCall`` (``id``, ``name``, ``args``: Gemini streams a call's arguments only when asked
    to), in the chunk that ends its block; the last chunk carries the ``finishReason`` (``STOP``, which Gemini
    also says for a turn of calls; ``MAX_TOKENS``) and the ``usageMetadata``. ``args`` is an object, not text:
    the workloads' arguments are compact JSON, which an object written back as JSON gives again.
    """
    base = {"modelVersion": "bench", "responseId": "bench"}

    def chunk(part: dict[str, Any]) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}], **base}

    out: list[dict[str, Any]] = []
    calls: dict[int, tuple[str, str, list[str]]] = {}
    usage: dict[str, int] | None = None
    for op in plan(stream):
        if op.op == "start" and op.kind == "tool-call":
            calls[op.block] = (op.call_id, op.name, [])
        elif op.op == "delta":
            if op.kind == "tool-call":
                calls[op.block][2].append(op.value)
            elif op.kind == "reasoning":
                out.append(chunk({"text": op.value, "thought": True}))
            else:
                out.append(chunk({"text": op.value}))
        elif op.op == "end" and op.block in calls:
            call_id, name, pieces = calls.pop(op.block)
            out.append(chunk({"functionCall": {"id": call_id, "name": name, "args": orjson.loads("".join(pieces))}}))
        elif op.op == "usage":
            usage = {"promptTokenCount": op.tokens[0], "candidatesTokenCount": op.tokens[1],
                     "totalTokenCount": op.tokens[0] + op.tokens[1]}
        elif op.op == "finish":
            reason = "MAX_TOKENS" if op.kind == "max-tokens" else "STOP"
            last: dict[str, Any] = {"candidates": [{"finishReason": reason, "index": 0}], **base}
            if usage is not None:
                last["usageMetadata"] = usage
            out.append(last)
    return out

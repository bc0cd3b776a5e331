"""The contenders: the baselines, streamfsm's entry points, and one adapter per peer.

A :class:`Contender` has three parts. ``prepare`` turns a workload into the contender's own input
(the peer's event objects, JSON lines...) and is never timed. ``run`` is what is timed: it takes
every stream of the prepared input through the contender, *including* the step that produces the
final assembled object (streamfsm's ``close()``, the SDK's final message or completion), and returns
one result per stream. ``content`` reads a result back as :class:`~benchmarks.workloads.Content`, so
that the run can check that every contender assembled exactly what the workload holds.

The peers are optional (``pip install -e '.[bench]'``); :func:`load_peers` says which are
missing and why. They are imported with :mod:`importlib` and typed ``Any``.
"""

from __future__ import annotations

import collections
import importlib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

import streamfsm as sf

from .workloads import (
    PA_TEXT,
    PA_THINKING,
    PA_TOOL,
    Content,
    Stream,
    Workload,
    anthropic_events,
    bare_loop,
    gemini_chunks,
    langchain_chunks,
    openai_chunks,
    pydantic_ai_calls,
    responses_events,
)

__all__ = ["PEERS", "Contender", "baselines", "load_peers", "streamfsm_contenders"]


@dataclass(frozen=True)
class Contender:
    """One thing the run times: see the module docstring."""

    key: str
    label: str
    #: "baseline", "streamfsm" or "peer".
    role: str
    #: "dicts" (fed chunk dicts or the peer's event objects) or "jsonl" (fed bytes).
    fmt: str
    prepare: Callable[[Workload], Any]
    run: Callable[[Any], list[Any]]
    #: How a result reads as Content; None for the baselines, which :meth:`check` handles apart.
    content: Callable[[Any], Content] | None = None
    #: The peer (distribution) this contender belongs to, for the notes.
    peer: str = ""
    #: Which workloads it runs on; None for all.
    applies: Callable[[Workload], bool] | None = None
    #: For a peer: the streamfsm contender it is measured against in the "faster than every peer" target ("": the
    #: machine's own, ``assemble`` for chunk dicts and ``assemble_jsonl`` for JSON lines; a converter's key for a
    #: peer fed a wire API's events).
    versus: str = ""

    def check(self, workload: Workload, results: list[Any]) -> str | None:
        """None when every stream's result holds what the workload holds; else the first difference."""
        if len(results) != len(workload.streams):
            return f"{len(results)} results for {len(workload.streams)} streams"
        if self.key == "bare":
            return None  # the yardstick defines what the bare-loop contenders must join (Workload.expected_bare)
        if self.key == "bare-jsonl":
            for k, (joined, wanted) in enumerate(zip(results, workload.expected_bare, strict=True)):
                if joined != wanted:
                    return (f"stream {k}: the bare loop joined {len(joined[0])}/{len(joined[1])} chars, "
                            f"expected {len(wanted[0])}/{len(wanted[1])}")
            return None
        if self.key == "orjson":
            for k, (parsed, stream) in enumerate(zip(results, workload.streams, strict=True)):
                if parsed != len(stream):
                    return f"stream {k}: parsed {parsed} lines, expected {len(stream)}"
            return None
        if self.key == "validate_jsonl":
            # A validator's output is its verdict: it ran to the end without raising (the generator's end is
            # where the stream is closed and judged complete), and the last chunk it let through is the last
            # chunk of the stream.
            for k, (last, stream) in enumerate(zip(results, workload.streams, strict=True)):
                if last != stream[-1]:
                    return (f"stream {k}: the last chunk passed through was {_clip_chunk(last)}, expected "
                            f"{_clip_chunk(stream[-1])}")
            return None
        if self.content is None:
            # An SDK making its objects (the floor ``checked()`` adds to): its result is how many it made.
            for k, (made, stream) in enumerate(zip(results, workload.streams, strict=True)):
                if not made:
                    return f"stream {k}: no object made for its {len(stream)} chunks"
            return None
        for k, (result, want) in enumerate(zip(results, workload.expected, strict=True)):
            try:
                got = self.content(result)
            except Exception as exc:
                return f"stream {k}: reading the result raised {type(exc).__name__}: {exc}"
            why = want.diff(got)
            if why is not None:
                return f"stream {k}: {why}"
        return None


def _clip_chunk(chunk: object) -> str:
    text = repr(chunk)
    return text if len(text) <= 80 else text[:77] + "..."


# -- baselines ---------------------------------------------------------------------------------------


def _run_bare(streams: list[list[dict[str, Any]]]) -> list[Any]:
    return [bare_loop(s) for s in streams]


def _run_orjson(blobs: list[bytes]) -> list[Any]:
    """``orjson.loads`` of every line, results dropped: the floor of any JSON-lines path."""
    loads = orjson.loads
    out: list[Any] = []
    for blob in blobs:
        lines = blob.split(b"\n")
        for line in lines:
            loads(line)
        out.append(len(lines))
    return out


def _run_bare_jsonl(blobs: list[bytes]) -> list[Any]:
    loads = orjson.loads
    out: list[Any] = []
    for blob in blobs:
        texts: list[str] = []
        args: list[str] = []
        for line in blob.split(b"\n"):
            c = loads(line)
            t = c["type"]
            if t == "text-delta" or t == "reasoning-delta":
                texts.append(c["text"])
            elif t == "tool-call-delta":
                args.append(c["argumentsDelta"])
        out.append(("".join(texts), "".join(args)))
    return out


@dataclass(slots=True)
class _PlainText:
    type: str
    text: str


@dataclass(slots=True)
class _PlainCall:
    type: str
    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class _PlainUsage:
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    reasoning_tokens: int | None


@dataclass(slots=True)
class _PlainResult:
    blocks: list[Any]
    usage: _PlainUsage | None
    finish: Any
    interrupted: list[Any]
    replay_state: Any


def _plain_content(result: _PlainResult) -> Content:
    text = "".join(b.text for b in result.blocks if isinstance(b, _PlainText) and b.type == "text")
    reasoning = "".join(b.text for b in result.blocks if isinstance(b, _PlainText) and b.type == "reasoning")
    calls = tuple((b.id, b.name, b.arguments) for b in result.blocks if isinstance(b, _PlainCall))
    return Content(text, reasoning, calls)


def _run_bare_results(streams: list[list[dict[str, Any]]], plain: bool) -> list[Any]:
    """The bare loop, per block, plus the result objects: the pydantic models streamfsm returns, built as
    cheaply as streamfsm builds them (``construct``: no validation), or with ``plain`` slotted dataclasses.
    It checks nothing: the floor of any assembler that returns such objects.

    Takes STRICT streams (one block open at a time), and ids and names from the block-ends.
    """
    from streamfsm._construct import PLAIN_FINISH, construct
    from streamfsm._models import ReasoningBlock, StreamResult, TextBlock, ToolCallBlock, Usage

    # Each model's fields set, made once (as the machine's are): every field is given.
    fields = {cls: set(cls.model_fields) for cls in (ReasoningBlock, StreamResult, TextBlock, ToolCallBlock, Usage)}
    out: list[Any] = []
    for s in streams:
        blocks: list[Any] = []
        parts: list[str] = []
        usage: Any = None
        finish = None
        for c in s:
            t = c["type"]
            if t == "text-delta" or t == "reasoning-delta":
                parts.append(c["text"])
            elif t == "tool-call-delta":
                parts.append(c["argumentsDelta"])
            elif t == "block-end":
                wire = c["block"]
                kind = wire["type"]
                joined = "".join(parts)
                parts = []
                if kind == "tool-call":
                    blocks.append(_PlainCall(kind, wire["id"], wire["name"], joined) if plain else construct(
                        ToolCallBlock, {"type": kind, "id": wire["id"], "name": wire["name"], "arguments": joined},
                        fields[ToolCallBlock]))
                else:
                    model = TextBlock if kind == "text" else ReasoningBlock
                    blocks.append(_PlainText(kind, joined) if plain else construct(
                        model, {"type": kind, "text": joined}, fields[model]))
            elif t == "usage":
                u = c["usage"]
                usage = _PlainUsage(u["inputTokens"], u["outputTokens"], u.get("cacheReadTokens"),
                                    u.get("cacheWriteTokens"), u.get("reasoningTokens")) if plain else construct(
                    Usage, {"input_tokens": u["inputTokens"], "output_tokens": u["outputTokens"],
                            "cache_read_tokens": u.get("cacheReadTokens"),
                            "cache_write_tokens": u.get("cacheWriteTokens"),
                            "reasoning_tokens": u.get("reasoningTokens")}, fields[Usage])
            elif t == "finish":
                finish = PLAIN_FINISH[c["reason"]["kind"]]
        out.append(_PlainResult(blocks, usage, finish, [], None) if plain else construct(
            StreamResult, {"blocks": blocks, "usage": usage, "finish": finish, "interrupted": [],
                           "replay_state": None}, fields[StreamResult]))
    return out


def _run_bare_models(streams: list[list[dict[str, Any]]]) -> list[Any]:
    return _run_bare_results(streams, plain=False)


def _run_bare_plain(streams: list[list[dict[str, Any]]]) -> list[Any]:
    return _run_bare_results(streams, plain=True)


def baselines() -> list[Contender]:
    return [
        Contender("bare", "bare loop", "baseline", "dicts", lambda w: w.streams, _run_bare),
        Contender("bare-models", "bare loop + result models", "baseline", "dicts", lambda w: w.streams,
                  _run_bare_models, streamfsm_content, applies=lambda w: w.policy == "strict"),
        Contender("bare-plain", "bare loop + plain result objects", "baseline", "dicts", lambda w: w.streams,
                  _run_bare_plain, _plain_content, applies=lambda w: w.key == "short"),
        Contender("orjson", "orjson.loads", "baseline", "jsonl", lambda w: w.jsonl, _run_orjson),
        Contender("bare-jsonl", "orjson + bare loop", "baseline", "jsonl", lambda w: w.jsonl, _run_bare_jsonl),
    ]


# -- streamfsm -----------------------------------------------------------------------------------------


def streamfsm_content(result: sf.StreamResult) -> Content:
    """A StreamResult as Content: completed blocks, then any a cut-off finish left open."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[tuple[str, str, str]] = []
    for b in [*result.blocks, *result.interrupted]:
        if isinstance(b, sf.TextBlock):
            text.append(b.text)
        elif isinstance(b, sf.ReasoningBlock):
            reasoning.append(b.text)
        elif isinstance(b, sf.ToolCallBlock):
            calls.append((b.id, b.name, b.arguments))
    return Content("".join(text), "".join(reasoning), tuple(calls))


def _sf_dicts(w: Workload) -> tuple[list[list[dict[str, Any]]], sf.Policy]:
    return w.streams, sf.Policy(w.policy)


def _sf_jsonl(w: Workload) -> tuple[list[bytes], sf.Policy]:
    return w.jsonl, sf.Policy(w.policy)


def _run_assemble(prepared: tuple[list[list[dict[str, Any]]], sf.Policy]) -> list[Any]:
    streams, policy = prepared
    assemble = sf.assemble
    return [assemble(s, policy=policy) for s in streams]


def _run_feed(prepared: tuple[list[list[dict[str, Any]]], sf.Policy]) -> list[Any]:
    """As a user writes it: ``asm.feed(chunk)`` per chunk, then ``close()``."""
    streams, policy = prepared
    out: list[Any] = []
    for s in streams:
        asm = sf.StreamAssembler(policy)
        for chunk in s:
            asm.feed(chunk)
        out.append(asm.close())
    return out


def _run_assemble_jsonl(prepared: tuple[list[bytes], sf.Policy]) -> list[Any]:
    blobs, policy = prepared
    assemble_jsonl = sf.assemble_jsonl
    return [assemble_jsonl(b, policy=policy) for b in blobs]


def _run_validate_jsonl(prepared: tuple[list[bytes], sf.Policy]) -> list[Any]:
    """``validate_jsonl`` consumed as a checker does (every chunk taken, nothing kept): the last chunk of each."""
    blobs, policy = prepared
    validate_jsonl, drain = sf.validate_jsonl, collections.deque
    out: list[Any] = []
    for b in blobs:
        last = drain(validate_jsonl(b, policy=policy), maxlen=1)
        out.append(last[0] if last else None)
    return out


def _strict(w: Workload) -> bool:
    """The converters' workloads: one block at a time (a wire API's events for them are the documented stream)."""
    return w.policy == "strict"


def _prepare_responses(w: Workload) -> list[list[dict[str, Any]]]:
    return [responses_events(s) for s in w.streams]


def _prepare_gemini(w: Workload) -> list[list[dict[str, Any]]]:
    return [gemini_chunks(s) for s in w.streams]


def _run_responses(streams: list[list[dict[str, Any]]]) -> list[Any]:
    """The Responses API's events (dicts, as parsed from the SSE body) through the converter, then the machine."""
    convert, assemble = sf.from_openai_responses_events, sf.assemble
    return [assemble(convert(events)) for events in streams]


def _run_gemini(streams: list[list[dict[str, Any]]]) -> list[Any]:
    """Gemini's chunks (dicts, as parsed from the SSE body) through the converter, then the machine."""
    convert, assemble = sf.from_gemini_chunks, sf.assemble
    return [assemble(convert(chunks)) for chunks in streams]


def streamfsm_contenders() -> list[Contender]:
    return [
        Contender("assemble", "streamfsm assemble()", "streamfsm", "dicts", _sf_dicts, _run_assemble,
                  streamfsm_content),
        Contender("feed", "streamfsm feed()", "streamfsm", "dicts", _sf_dicts, _run_feed, streamfsm_content),
        Contender("responses", "streamfsm from_openai_responses_events()", "streamfsm", "dicts", _prepare_responses,
                  _run_responses, streamfsm_content, applies=_strict),
        Contender("gemini", "streamfsm from_gemini_chunks()", "streamfsm", "dicts", _prepare_gemini, _run_gemini,
                  streamfsm_content, applies=_strict),
        Contender("assemble_jsonl", "streamfsm assemble_jsonl()", "streamfsm", "jsonl", _sf_jsonl,
                  _run_assemble_jsonl, streamfsm_content),
        Contender("validate_jsonl", "streamfsm validate_jsonl()", "streamfsm", "jsonl", _sf_jsonl,
                  _run_validate_jsonl),
    ]


# -- an SDK's own stream, checked as it passes (sf.checked) -------------------------------------------------


def _sdk_stream_workload(w: Workload) -> bool:
    """Where ``checked()`` is timed: the typical turn, short streams (its fixed cost) and a long text."""
    return w.key in ("typical", "short", "text-2k")


def _sdk_stream(dist: str, what: str, events: Callable[[Stream], list[dict[str, Any]]],
                make: Callable[[dict[str, Any]], Any]) -> list[Contender]:
    """``sf.checked()`` over an SDK's stream objects (made before the run), next to the SDK's making of the same
    objects from the parsed data (``construct_type``, as its ``Stream`` does for each event): what checking adds
    per object, against what the SDK itself spends on each (its HTTP and SSE reading not counted)."""

    def parsed(w: Workload) -> list[list[dict[str, Any]]]:
        return [events(s) for s in w.streams]

    def run_make(streams: list[list[dict[str, Any]]]) -> list[Any]:
        return [len([make(e) for e in stream]) for stream in streams]

    def objects(w: Workload) -> list[list[Any]]:
        return [[make(e) for e in stream] for stream in parsed(w)]

    def run_checked(streams: list[list[Any]]) -> list[Any]:
        out: list[Any] = []
        checked = sf.checked
        for stream in streams:
            passing = checked(stream)
            for _ in passing:
                pass
            out.append(passing.result)
        return out

    return [
        Contender(f"{dist}-make", f"{dist}: make each {what} (construct_type)", "baseline", "dicts", parsed, run_make,
                  peer=dist, applies=_sdk_stream_workload),
        Contender(f"{dist}-checked", f"streamfsm checked() over {dist}'s {what}s", "streamfsm", "dicts", objects,
                  run_checked, streamfsm_content, peer=dist, applies=_sdk_stream_workload),
    ]


# -- peers -----------------------------------------------------------------------------------------------


def _jsonl_of(objects: list[dict[str, Any]]) -> bytes:
    return b"\n".join(orjson.dumps(o) for o in objects)


def _anthropic() -> list[Contender]:
    """anthropic-sdk-python: ``accumulate_event`` builds the ``Message`` snapshot as ``MessageStream`` does."""
    # Not re-exported: the function MessageStream calls for every event (anthropic/lib/streaming/_messages.py).
    accumulate_event: Any = importlib.import_module("anthropic.lib.streaming._messages").accumulate_event
    construct_type: Any = importlib.import_module("anthropic._models").construct_type
    event_type: Any = importlib.import_module("anthropic.types").RawMessageStreamEvent

    def prepare(w: Workload) -> list[list[Any]]:
        # The objects the SDK's Stream yields: construct_type over the parsed SSE data.
        return [[construct_type(type_=event_type, value=e) for e in anthropic_events(s)] for s in w.streams]

    def run(streams: list[list[Any]]) -> list[Any]:
        out: list[Any] = []
        for events in streams:
            snapshot = None
            json_bufs: dict[int, bytes] = {}
            for event in events:
                snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
            out.append((snapshot, json_bufs))
        return out

    def prepare_jsonl(w: Workload) -> list[bytes]:
        return [_jsonl_of(anthropic_events(s)) for s in w.streams]

    def run_jsonl(blobs: list[bytes]) -> list[Any]:
        # accumulate_event accepts the parsed dict and constructs the event itself (construct_type).
        loads = orjson.loads
        out: list[Any] = []
        for blob in blobs:
            snapshot = None
            json_bufs: dict[int, bytes] = {}
            for line in blob.split(b"\n"):
                snapshot = accumulate_event(event=loads(line), current_snapshot=snapshot, json_bufs=json_bufs)
            out.append((snapshot, json_bufs))
        return out

    def content(result: Any) -> Content:
        snapshot, json_bufs = result
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[tuple[str, str, str]] = []
        for i, block in enumerate(snapshot.content):
            if block.type == "text":
                text.append(block.text)
            elif block.type == "thinking":
                reasoning.append(block.thinking)
            elif block.type == "tool_use":
                # The SDK keeps the raw argument bytes in json_bufs (block.input is the parsed object).
                calls.append((block.id, block.name, json_bufs.get(i, b"").decode("utf-8")))
        return Content("".join(text), "".join(reasoning), tuple(calls))

    def make(event: dict[str, Any]) -> Any:
        return construct_type(type_=event_type, value=event)

    return [
        *_sdk_stream("anthropic", "RawMessageStreamEvent", anthropic_events, make),
        Contender("anthropic", "anthropic accumulate_event", "peer", "dicts", prepare, run, content, "anthropic"),
        Contender("anthropic-jsonl", "anthropic (JSON lines)", "peer", "jsonl", prepare_jsonl, run_jsonl, content,
                  "anthropic"),
    ]


def _openai() -> list[Contender]:
    """openai-python: ``ChatCompletionStreamState.handle_chunk`` then ``get_final_completion()``
    (the snapshot for a stream cut off by max tokens)."""
    state_type: Any = importlib.import_module("openai.lib.streaming.chat").ChatCompletionStreamState
    chunk_type: Any = importlib.import_module("openai.types.chat").ChatCompletionChunk
    construct_type: Any = importlib.import_module("openai._models").construct_type
    cut_off: Any = importlib.import_module("openai").LengthFinishReasonError

    def final(state: Any) -> Any:
        # A stream cut off by max tokens ("length") has no final completion: the SDK raises, and callers
        # read the snapshot instead.
        try:
            return state.get_final_completion()
        except cut_off:
            return state.current_completion_snapshot

    def prepare(w: Workload) -> list[list[Any]]:
        return [[construct_type(type_=chunk_type, value=c) for c in openai_chunks(s)] for s in w.streams]

    def run(streams: list[list[Any]]) -> list[Any]:
        out: list[Any] = []
        for chunks in streams:
            state = state_type()
            for chunk in chunks:
                state.handle_chunk(chunk)
            out.append(final(state))
        return out

    def prepare_jsonl(w: Workload) -> list[bytes]:
        return [_jsonl_of(openai_chunks(s)) for s in w.streams]

    def run_jsonl(blobs: list[bytes]) -> list[Any]:
        # As the SDK's Stream does with each SSE data line: parse, construct_type, then handle_chunk.
        loads = orjson.loads
        out: list[Any] = []
        for blob in blobs:
            state = state_type()
            for line in blob.split(b"\n"):
                state.handle_chunk(construct_type(type_=chunk_type, value=loads(line)))
            out.append(final(state))
        return out

    def content(result: Any) -> Content:
        message = result.choices[0].message
        extra = message.model_extra or {}
        calls = tuple(
            (tc.id, tc.function.name, tc.function.arguments) for tc in (message.tool_calls or [])
        )
        return Content(message.content or "", extra.get("reasoning_content") or "", calls)

    def make(chunk: dict[str, Any]) -> Any:
        return construct_type(type_=chunk_type, value=chunk)

    return [
        *_sdk_stream("openai", "ChatCompletionChunk", openai_chunks, make),
        Contender("openai", "openai ChatCompletionStreamState", "peer", "dicts", prepare, run, content, "openai"),
        Contender("openai-jsonl", "openai (JSON lines)", "peer", "jsonl", prepare_jsonl, run_jsonl, content,
                  "openai"),
    ]


def _openai_responses() -> list[Contender]:
    """openai-python's Responses stream accumulator: ``ResponseStreamState.handle_event`` for every event (what
    ``client.responses.stream(...)`` runs), then its final response (``ResponseStream.get_final_response()``)."""
    state_type: Any = importlib.import_module("openai.lib.streaming.responses._responses").ResponseStreamState
    event_type: Any = importlib.import_module("openai.types.responses").ResponseStreamEvent
    construct_type: Any = importlib.import_module("openai._models").construct_type
    omit: Any = importlib.import_module("openai").omit

    def prepare(w: Workload) -> list[list[Any]]:
        # The objects the SDK's Stream yields: construct_type over the parsed SSE data.
        return [[construct_type(type_=event_type, value=e) for e in responses_events(s)] for s in w.streams]

    def run(streams: list[list[Any]]) -> list[Any]:
        out: list[Any] = []
        for events in streams:
            state = state_type(input_tools=omit, text_format=omit)
            for event in events:
                state.handle_event(event)
            # get_final_response(): the response parsed at response.completed (there is none for an incomplete one).
            final = state._completed_response
            out.append(final if final is not None else state._ResponseStreamState__current_snapshot)
        return out

    def content(response: Any) -> Content:
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[tuple[str, str, str]] = []
        for item in response.output:
            if item.type == "message":
                text.extend(part.text for part in item.content if part.type == "output_text")
            elif item.type == "reasoning":
                reasoning.extend(part.text for part in item.summary)
            elif item.type == "function_call":
                calls.append((item.call_id, item.name, item.arguments))
        return Content("".join(text), "".join(reasoning), tuple(calls))

    return [Contender("openai-responses", "openai ResponseStreamState", "peer", "dicts", prepare, run, content,
                      "openai", _strict, versus="responses")]


def _google_genai() -> list[Contender]:
    """google-genai has no stream accumulator: the peer is what the SDK does with each chunk of
    ``generate_content_stream`` (its ``GenerateContentResponse`` parsed from the chunk's JSON data) and what its
    ``Chat.send_message_stream`` keeps of them for the turn (each chunk's ``candidates[0].content``, in a list)."""
    models: Any = importlib.import_module("google.genai.models")
    response_type: Any = importlib.import_module("google.genai.types").GenerateContentResponse
    from_mldev: Any = models._GenerateContentResponse_from_mldev  # the Gemini Developer API's response mapping

    def run(streams: list[list[dict[str, Any]]]) -> list[Any]:
        parse = response_type._from_response
        out: list[Any] = []
        for chunks in streams:
            contents: list[Any] = []
            for chunk in chunks:
                response = parse(response=from_mldev(chunk), kwargs={})
                if response.candidates and response.candidates[0].content:
                    contents.append(response.candidates[0].content)
            out.append(contents)
        return out

    def content(contents: list[Any]) -> Content:
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[tuple[str, str, str]] = []
        for turn in contents:
            for part in turn.parts or []:
                if part.function_call is not None:
                    call = part.function_call
                    calls.append((call.id or "", call.name or "", orjson.dumps(call.args or {}).decode()))
                elif part.text is not None:
                    (reasoning if part.thought else text).append(part.text)
        return Content("".join(text), "".join(reasoning), tuple(calls))

    return [Contender("google-genai", "google-genai GenerateContentResponse", "peer", "dicts", _prepare_gemini, run,
                      content, "google-genai", _strict, versus="gemini")]


def _pydantic_ai() -> list[Contender]:
    """pydantic-ai: ``ModelResponsePartsManager`` fed as its Anthropic model feeds it, then ``get_parts()``."""
    manager_type: Any = importlib.import_module("pydantic_ai._parts_manager").ModelResponsePartsManager
    params_type: Any = importlib.import_module("pydantic_ai.models").ModelRequestParameters
    params = params_type()

    def prepare(w: Workload) -> list[Any]:
        return [pydantic_ai_calls(s) for s in w.streams]

    def run(streams: list[Any]) -> list[Any]:
        out: list[Any] = []
        for calls in streams:
            manager = manager_type(model_request_parameters=params)
            text = manager.handle_text_delta
            thinking = manager.handle_thinking_delta
            tool = manager.handle_tool_call_delta
            for code, index, value, name, call_id in calls:
                if code == PA_TEXT:
                    for _ in text(vendor_part_id=index, content=value):
                        pass
                elif code == PA_TOOL:
                    tool(vendor_part_id=index, args=value)
                elif code == PA_THINKING:
                    for _ in thinking(vendor_part_id=index, content=value):
                        pass
                else:
                    tool(vendor_part_id=index, tool_name=name, args=value, tool_call_id=call_id)
            out.append(manager.get_parts())
        return out

    def content(parts: Any) -> Content:
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[tuple[str, str, str]] = []
        for part in parts:
            kind = part.part_kind
            if kind == "text":
                text.append(part.content)
            elif kind == "thinking":
                reasoning.append(part.content)
            elif kind == "tool-call":
                args = part.args
                calls.append((part.tool_call_id, part.tool_name,
                              args if isinstance(args, str) else "" if args is None else orjson.dumps(args).decode()))
        return Content("".join(text), "".join(reasoning), tuple(calls))

    return [Contender("pydantic-ai", "pydantic-ai PartsManager", "peer", "dicts", prepare, run, content,
                      "pydantic-ai-slim")]


def _langchain() -> list[Contender]:
    """langchain-core: ``AIMessageChunk`` summed with ``+`` as they stream, the way callers accumulate them."""
    chunk_type: Any = importlib.import_module("langchain_core.messages").AIMessageChunk

    def prepare(w: Workload) -> list[list[Any]]:
        return [[chunk_type(**kw) for kw in langchain_chunks(s)] for s in w.streams]

    def run(streams: list[list[Any]]) -> list[Any]:
        out: list[Any] = []
        for chunks in streams:
            it = iter(chunks)
            acc = next(it)
            for chunk in it:
                acc = acc + chunk
            out.append(acc)
        return out

    def content(acc: Any) -> Content:
        calls = tuple(
            (tc.get("id") or "", tc.get("name") or "", tc.get("args") or "")
            for tc in sorted(acc.tool_call_chunks, key=lambda tc: tc.get("index") or 0)
        )
        text = acc.content if isinstance(acc.content, str) else ""
        return Content(text, acc.additional_kwargs.get("reasoning_content", ""), calls)

    return [Contender("langchain", "langchain AIMessageChunk +", "peer", "dicts", prepare, run, content,
                      "langchain-core")]


#: (distribution, the modules it must provide, the adapter).
PEERS: tuple[tuple[str, str, Callable[[], list[Contender]]], ...] = (
    ("anthropic", "anthropic", _anthropic),
    ("openai", "openai", _openai),
    ("openai", "openai", _openai_responses),
    ("google-genai", "google.genai", _google_genai),
    ("pydantic-ai-slim", "pydantic_ai", _pydantic_ai),
    ("langchain-core", "langchain_core", _langchain),
)


def load_peers() -> tuple[list[Contender], dict[str, str], dict[str, str]]:
    """The installed peers' contenders, ``{distribution: version}``, and ``{distribution: why missing}``."""
    contenders: list[Contender] = []
    versions: dict[str, str] = {}
    missing: dict[str, str] = {}
    for dist, _module, adapter in PEERS:
        try:
            made = adapter()
        except Exception as exc:  # ImportError, or an API this harness does not know
            missing[dist] = f"{type(exc).__name__}: {exc}"
            continue
        contenders += made
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "?"
    return contenders, versions, missing

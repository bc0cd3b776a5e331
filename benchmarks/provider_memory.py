"""What the provider layer holds before the machine sees it, against what it is fed: the multiples the limits page
quotes (issue 22).

``python -m benchmarks.provider_memory [--quick]`` prints one markdown table: for each case, the input's size, the
peak of memory allocated while it is converted (``tracemalloc``, in this process: deterministic, the same on every
run) and the peak as a multiple of the input (or of the bound, for a case the bound refuses).

Cases:

* **held**: a tool call whose arguments never complete (``{"a":``), then 64-character deltas of a later block,
  which is held back behind it (every converter that holds blocks). ``within``: 8 MiB held under the default
  limits, the multiple of what is held; ``refused``: the same stream under ``Limits(max_stream_bytes=1 MiB)``,
  16 MiB sent, the multiple of the limit (refused at it).
* **sse**: one server-sent event of 8 MiB, as 2-character ``data:`` lines (fed whole, as a recorded body is, or
  line by line, as the recordings reader feeds it) and as one line; the multiple of the event's bytes.
* **event JSON**: one event's data parsed (``orjson.loads``, what every adapter and reader does with an event):
  valid JSON shaped to cost the most Python objects per byte; the multiple of the event's bytes. A bound on an
  event (``max_event_bytes``, 16 MiB by default; a recording's line, 128 MiB) is a bound on this times it.
* **gemini path**: one ``partialArgs`` value at a path 1,024 levels deep (the most allowed), and a path of
  300,000 levels (refused as it is read); bytes per level, and the refused one's peak.
* **kept**: a Responses turn of reasoning items with 1 KiB ``encrypted_content`` each, 8 MiB of them; the multiple
  of the characters kept (bounded by ``MAX_KEPT_CHARS``, 64 Mi characters).

Each events' dicts are made afresh (parsed from JSON), as from a live stream: the same string object over and
over would cost nothing to hold.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson

import streamfsm as sf
from streamfsm._providers.arguments import ArgumentWriter
from streamfsm._providers.sse import SSEParser

KiB = 1024
MiB = 1024 * KiB
PIECE = "x" * 64


def peak(run: Callable[[], Any]) -> tuple[Any, int]:
    """``run()``'s result (or the LlmError it raised) and the peak of memory allocated meanwhile."""
    tracemalloc.start()
    try:
        try:
            result: Any = run()
        except sf.LlmError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _fresh(events: Iterator[dict[str, Any]], count: int) -> Iterator[Any]:
    for event in itertools.islice(events, count):
        yield orjson.loads(orjson.dumps(event))


def _openai() -> Iterator[dict[str, Any]]:
    def tool(index: int, **function: str) -> dict[str, Any]:
        call: dict[str, Any] = {"index": index, "function": function}
        if "name" in function:
            call["id"] = f"call_{index}"
        return {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}

    yield tool(0, name="f", arguments='{"a":')
    yield tool(1, name="g", arguments="")
    while True:
        yield tool(1, arguments=PIECE)


def _gemini() -> Iterator[dict[str, Any]]:
    def chunk(part: dict[str, Any]) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}], "responseId": "r"}

    yield chunk({"functionCall": {"name": "f", "willContinue": True}})
    while True:
        yield chunk({"text": PIECE})


def _responses() -> Iterator[dict[str, Any]]:
    item = {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": ""}
    yield {"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress"}}
    yield {"type": "response.output_item.added", "output_index": 0, "item": item}
    yield {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": '{"a":'}
    text = {"type": "response.output_text.delta", "item_id": "m1", "output_index": 1, "content_index": 0}
    while True:
        yield {**text, "delta": PIECE}


def _bedrock() -> Iterator[dict[str, Any]]:
    yield {"messageStart": {"role": "assistant"}}
    yield {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}}
    yield {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a":'}}}}
    while True:
        yield {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"text": PIECE}}}


def _cohere() -> Iterator[dict[str, Any]]:
    def message(kind: str, index: int, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "index": index, "delta": {"message": fields}}

    yield {"type": "message-start", "id": "r", "delta": {"message": {"role": "assistant"}}}
    yield message("tool-call-start", 0, tool_calls={"id": "t1", "type": "function", "function": {"name": "f"}})
    yield message("tool-call-delta", 0, tool_calls={"function": {"arguments": '{"a":'}})
    while True:
        yield message("content-delta", 0, content={"text": PIECE})


HELD: dict[str, tuple[Callable[..., Any], Callable[[], Iterator[dict[str, Any]]]]] = {
    "chat completions": (sf.from_openai_chunks, _openai),
    "Gemini": (sf.from_gemini_chunks, _gemini),
    "Responses": (sf.from_openai_responses_events, _responses),
    "Bedrock": (sf.from_bedrock_events, _bedrock),
    "Cohere": (sf.from_cohere_events, _cohere),
}

Row = tuple[str, str, int, int, str]


def _converted(
    convert: Callable[..., Any], events: Callable[[], Iterator[Any]], count: int, limits: sf.Limits | None
) -> list[Any]:
    return list(convert(_fresh(events(), count), limits=limits))


def held(scale: int) -> list[Row]:
    rows: list[Row] = []
    within, limit = 8 * MiB // scale, MiB // scale
    for name, (convert, events) in HELD.items():
        count = within // len(PIECE) + 4
        outcome, used = peak(functools.partial(_converted, convert, events, count, None))
        assert isinstance(outcome, sf.LlmError) and outcome.code == sf.ErrorCode.STREAM_CLOSED, outcome
        rows.append((f"held ({name}), within the limits", "held bytes", within, used, f"{used / within:.2f}x"))
        limits = sf.Limits(max_stream_bytes=limit)
        count = 16 * limit // len(PIECE) + 4
        outcome, used = peak(functools.partial(_converted, convert, events, count, limits))
        assert isinstance(outcome, sf.LlmError) and outcome.code == sf.ErrorCode.LIMIT_EXCEEDED, outcome
        rows.append(
            (f"held ({name}), 16 times the limit sent", "max_stream_bytes", limit, used, f"{used / limit:.2f}x")
        )
    return rows


def sse(scale: int) -> list[Row]:
    rows: list[Row] = []
    size = 8 * MiB // scale
    lines = size // len(b"data: ab\n")
    short = b'data: "\n' + b"data: ab\n" * (lines - 2) + b'data: "\n\n'
    long = b'data: "' + b"x" * (size - 10) + b'"\n\n'
    for label, body, by_line in (
        ("sse: 2-character data lines, fed whole", short, False),
        ("sse: 2-character data lines, fed by line", short, True),
        ("sse: one data line", long, False),
    ):
        pieces = body.splitlines(keepends=True) if by_line else [body]
        parser = SSEParser(2 * size)
        (event,), used = peak(lambda: [e for piece in pieces for e in parser.feed(piece)])  # noqa: B023
        assert event.data.startswith('"')
        rows.append((label, "event bytes", len(body), used, f"{used / len(body):.2f}x"))
    return rows


def event_json(scale: int) -> list[Row]:
    size = 4 * MiB // scale
    shapes = {
        "a string": b'"' + b"x" * (size - 2) + b'"',
        "numbers [0,1,2,...]": b"[" + b",".join(str(i % 1000).encode() for i in range(size // 4)) + b"]",
        "small integers [1,1,...]": b"[" + b"1," * (size // 2 - 1) + b"1]",
        "empty objects [{},{},...]": b"[" + b"{}," * (size // 3 - 1) + b"{}]",
        "empty lists [[],[],...]": b"[" + b"[]," * (size // 3 - 1) + b"[]]",
        'distinct keys {"k0":0,...}': b"{" + b",".join(b'"k%d":0' % i for i in range(size // 10)) + b"}",
        'short strings ["a",...]': b"[" + b'"ab",' * (size // 5 - 1) + b'"ab"]',
    }
    rows: list[Row] = []
    for label, text in shapes.items():
        _, used = peak(lambda: orjson.loads(text))  # noqa: B023
        rows.append((f"event JSON: {label}", "event bytes", len(text), used, f"{used / len(text):.1f}x"))
    return rows


def gemini_path() -> list[Row]:
    rows: list[Row] = []
    path = "$" + ".a" * 1024
    writer = ArgumentWriter()
    _, used = peak(lambda: writer.write({"jsonPath": path, "numberValue": 1}, dict.get))
    rows.append(("gemini path: 1,024 levels (the most)", "path characters", len(path), used, f"{used // 1024} B/level"))
    deep = "$" + ".a" * 300_000
    writer = ArgumentWriter()
    outcome, used = peak(lambda: writer.write({"jsonPath": deep, "numberValue": 1}, dict.get))
    assert isinstance(outcome, sf.LlmError), outcome
    multiple = f"{used / len(deep):.2f}x"
    rows.append(("gemini path: 300,000 levels, refused", "path characters", len(deep), used, multiple))
    return rows


def kept(scale: int) -> list[Row]:
    secret = "c2lnbmF0dXJl" * 85

    def events() -> Iterator[dict[str, Any]]:
        yield {"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress"}}
        for number in itertools.count():
            item = {"id": f"rs_{number}", "type": "reasoning", "summary": [], "encrypted_content": secret}
            yield {"type": "response.output_item.done", "output_index": number, "item": item}

    size = 8 * MiB // scale
    count = size // len(secret)
    _, used = peak(lambda: list(sf.from_openai_responses_events(_fresh(events(), count + 1))))
    chars = count * (len(secret) + 80)
    return [("kept: Responses reasoning items", "kept characters", chars, used, f"{used / chars:.2f}x")]


def _size(n: int) -> str:
    return f"{n / MiB:,.2f} MiB" if n >= MiB else f"{n / KiB:,.1f} KiB"


def table(rows: Sequence[Row]) -> str:
    """The rows as a markdown table."""
    out = ["| case | measured against | size | peak allocated | multiple |", "|---|---|---:|---:|---:|"]
    for label, against, size, used, multiple in rows:
        out.append(f"| {label} | {against} | {_size(size)} | {_size(used)} | {multiple} |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.provider_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="inputs 8 times smaller (a smoke run)")
    args = parser.parse_args(argv)
    scale = 8 if args.quick else 1
    rows = [*held(scale), *sse(scale), *event_json(scale), *gemini_path(), *kept(scale)]
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A generated answer (reasoning, text, tool calls, usage) rendered in each wire API's two shapes: the non-streamed
body and the stream of events, its text and arguments cut into random pieces. Both must read to the same result."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st

from .support import split

Answer = dict[str, Any]

_WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _WORDS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_WORDS, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def answers(draw: st.DrawFn) -> Answer:
    """An answer: reasoning (maybe), text (maybe), tool calls with JSON object arguments (maybe); never empty."""
    reasoning = draw(st.none() | _WORDS)
    text = draw(st.none() | _WORDS)
    arguments = draw(
        st.lists(st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), _VALUES, max_size=3), max_size=3)
    )
    if text is None and not arguments:
        text = "ok"
    return {
        "reasoning": reasoning,
        "text": text,
        "calls": [{"id": f"call_{i}", "name": f"tool{i}", "arguments": a} for i, a in enumerate(arguments)],
        "usage": (draw(st.integers(0, 10_000)), draw(st.integers(0, 10_000))),
    }


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


# --- OpenAI chat completions ----------------------------------------------------------------------------


def openai_body(answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer["text"]}
    if answer["reasoning"] is not None:
        message["reasoning_content"] = answer["reasoning"]
    if answer["calls"]:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": _json(c["arguments"])}}
            for c in answer["calls"]
        ]
    finish = "tool_calls" if answer["calls"] else "stop"
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": answer["usage"][0], "completion_tokens": answer["usage"][1]},
    }


def openai_stream(answer: Answer, draw: st.DrawFn) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}

    out = [chunk({"role": "assistant", "content": ""})]
    for key, field in (("reasoning", "reasoning_content"), ("text", "content")):
        if answer[key] is not None:
            out += [chunk({field: piece}) for piece in split(draw, answer[key])]
    for i, call in enumerate(answer["calls"]):
        first, *rest = split(draw, _json(call["arguments"]))
        function = {"name": call["name"], "arguments": first}
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": function}]}))
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}) for piece in rest]
    out.append(chunk({}, "tool_calls" if answer["calls"] else "stop"))
    out.append(
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": openai_body(answer)["usage"]}
    )
    return out


# --- Anthropic Messages ---------------------------------------------------------------------------------


def anthropic_body(answer: Answer) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if answer["reasoning"] is not None:
        content.append({"type": "thinking", "thinking": answer["reasoning"], "signature": "c2ln"})
    if answer["text"] is not None:
        content.append({"type": "text", "text": answer["text"]})
    content += [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]} for c in answer["calls"]
    ]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": "tool_use" if answer["calls"] else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": answer["usage"][0], "output_tokens": answer["usage"][1]},
    }


def anthropic_stream(answer: Answer, draw: st.DrawFn) -> list[dict[str, Any]]:
    body = anthropic_body(answer)
    start = {**body, "content": [], "stop_reason": None, "usage": {"input_tokens": answer["usage"][0]}}
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(body["content"]):
        kind = block["type"]
        if kind == "tool_use":
            pieces = split(draw, _json(block["input"]))
            opened, deltas = {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        else:
            pieces = split(draw, block[kind])
            opened = {"type": kind, kind: ""}
            deltas = [{"type": f"{kind}_delta", kind: p} for p in pieces]
            if kind == "thinking":
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
        out.append({"type": "content_block_start", "index": i, "content_block": opened})
        out += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
        out.append({"type": "content_block_stop", "index": i})
    delta = {"stop_reason": body["stop_reason"], "stop_sequence": None}
    out.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": answer["usage"][1]}})
    out.append({"type": "message_stop"})
    return out


# --- OpenAI Responses -----------------------------------------------------------------------------------


def _response_items(answer: Answer) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if answer["reasoning"] is not None:
        items.append(
            {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": answer["reasoning"]}]}
        )
    if answer["text"] is not None:
        part = {"type": "output_text", "text": answer["text"], "annotations": []}
        items.append({"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [part]})
    for c in answer["calls"]:
        call = {"type": "function_call", "id": f"fc_{c['id']}", "call_id": c["id"], "name": c["name"]}
        items.append({**call, "arguments": _json(c["arguments"]), "status": "completed"})
    return items


def responses_body(answer: Answer) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": _response_items(answer),
        "usage": {"input_tokens": answer["usage"][0], "output_tokens": answer["usage"][1]},
    }


def responses_stream(answer: Answer, draw: st.DrawFn) -> list[dict[str, Any]]:
    body = responses_body(answer)
    out: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**body, "status": "in_progress", "output": []}}
    ]
    for i, item in enumerate(body["output"]):
        kind = item["type"]
        if kind == "reasoning":
            added, event, text = (
                {**item, "summary": []},
                "response.reasoning_summary_text.delta",
                item["summary"][0]["text"],
            )
            place = {"summary_index": 0}
        elif kind == "message":
            added, event, text = {**item, "content": []}, "response.output_text.delta", item["content"][0]["text"]
            place = {"content_index": 0}
        else:
            added, event, text = {**item, "arguments": ""}, "response.function_call_arguments.delta", item["arguments"]
            place = {}
        out.append({"type": "response.output_item.added", "output_index": i, "item": added})
        out += [
            {"type": event, "output_index": i, "item_id": item["id"], **place, "delta": p} for p in split(draw, text)
        ]
        out.append({"type": "response.output_item.done", "output_index": i, "item": item})
    out.append({"type": "response.completed", "response": body})
    return out


# --- Gemini ---------------------------------------------------------------------------------------------


def _gemini_usage(answer: Answer) -> dict[str, Any]:
    prompt, output = answer["usage"]
    return {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}


def _gemini_calls(answer: Answer) -> list[dict[str, Any]]:
    return [{"functionCall": {"id": c["id"], "name": c["name"], "args": c["arguments"]}} for c in answer["calls"]]


def gemini_body(answer: Answer) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if answer["reasoning"] is not None:
        parts.append({"text": answer["reasoning"], "thought": True})
    if answer["text"] is not None:
        parts.append({"text": answer["text"]})
    parts += _gemini_calls(answer)
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "usageMetadata": _gemini_usage(answer), "modelVersion": "m", "responseId": "r1"}


def gemini_stream(answer: Answer, draw: st.DrawFn) -> list[dict[str, Any]]:
    def chunk(parts: list[dict[str, Any]], **candidate: Any) -> dict[str, Any]:
        content = {"content": {"role": "model", "parts": parts}, "index": 0, **candidate}
        return {"candidates": [content], "modelVersion": "m", "responseId": "r1"}

    out: list[dict[str, Any]] = []
    if answer["reasoning"] is not None:
        out += [chunk([{"text": p, "thought": True}]) for p in split(draw, answer["reasoning"]) if p]
    if answer["text"] is not None:
        out += [chunk([{"text": p}]) for p in split(draw, answer["text"]) if p]
    out += [chunk([call]) for call in _gemini_calls(answer)]
    last = chunk([], finishReason="STOP")
    last["usageMetadata"] = _gemini_usage(answer)
    return [*out, last]


# --- Bedrock Converse -----------------------------------------------------------------------------------


def bedrock_body(answer: Answer) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if answer["reasoning"] is not None:
        content.append({"reasoningContent": {"reasoningText": {"text": answer["reasoning"], "signature": "c2ln"}}})
    if answer["text"] is not None:
        content.append({"text": answer["text"]})
    content += [
        {"toolUse": {"toolUseId": c["id"], "name": c["name"], "input": c["arguments"]}} for c in answer["calls"]
    ]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if answer["calls"] else "end_turn",
        "usage": {"inputTokens": answer["usage"][0], "outputTokens": answer["usage"][1]},
        "metrics": {"latencyMs": 1},
    }


def bedrock_stream(answer: Answer, draw: st.DrawFn) -> list[dict[str, Any]]:
    body = bedrock_body(answer)
    out: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]

    def delta(i: int, value: dict[str, Any]) -> dict[str, Any]:
        return {"contentBlockDelta": {"contentBlockIndex": i, "delta": value}}

    for i, block in enumerate(body["output"]["message"]["content"]):
        if "reasoningContent" in block:
            given = block["reasoningContent"]["reasoningText"]
            out += [delta(i, {"reasoningContent": {"text": p}}) for p in split(draw, given["text"])]
            out.append(delta(i, {"reasoningContent": {"signature": given["signature"]}}))
        elif "text" in block:
            out += [delta(i, {"text": p}) for p in split(draw, block["text"])]
        else:
            call = block["toolUse"]
            start = {"toolUseId": call["toolUseId"], "name": call["name"]}
            out.append({"contentBlockStart": {"contentBlockIndex": i, "start": {"toolUse": start}}})
            out += [delta(i, {"toolUse": {"input": p}}) for p in split(draw, _json(call["input"]))]
        out.append({"contentBlockStop": {"contentBlockIndex": i}})
    out.append({"messageStop": {"stopReason": body["stopReason"]}})
    out.append({"metadata": {"usage": body["usage"], "metrics": body["metrics"]}})
    return out


# --- Cohere v2 chat -------------------------------------------------------------------------------------


def cohere_body(answer: Answer) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if answer["reasoning"] is not None:
        content.append({"type": "thinking", "thinking": answer["reasoning"]})
    if answer["text"] is not None:
        content.append({"type": "text", "text": answer["text"]})
    calls = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": _json(c["arguments"])}}
        for c in answer["calls"]
    ]
    return {
        "id": "c1",
        "message": {"role": "assistant", "content": content, "tool_calls": calls},
        "finish_reason": "TOOL_CALL" if calls else "COMPLETE",
        "usage": {"tokens": {"input_tokens": answer["usage"][0], "output_tokens": answer["usage"][1]}},
    }


def cohere_stream(answer: Answer, draw: st.DrawFn) -> list[dict[str, Any]]:
    body = cohere_body(answer)

    def event(kind: str, index: int, key: str, value: Any) -> dict[str, Any]:
        return {"type": kind, "index": index, "delta": {"message": {key: value}}}

    out: list[dict[str, Any]] = [{"id": "c1", "type": "message-start", "delta": {"message": {"role": "assistant"}}}]
    for i, part in enumerate(body["message"]["content"]):
        field = part["type"]
        out.append(event("content-start", i, "content", {"type": field, field: ""}))
        out += [event("content-delta", i, "content", {field: p}) for p in split(draw, part[field])]
        out.append({"type": "content-end", "index": i})
    for i, call in enumerate(body["message"]["tool_calls"]):
        opened = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
        out.append(event("tool-call-start", i, "tool_calls", opened))
        pieces = split(draw, call["function"]["arguments"])
        out += [event("tool-call-delta", i, "tool_calls", {"function": {"arguments": p}}) for p in pieces]
        out.append({"type": "tool-call-end", "index": i})
    out.append({"type": "message-end", "delta": {"finish_reason": body["finish_reason"], "usage": body["usage"]}})
    return out

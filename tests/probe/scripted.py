"""A scripted model server for the probe's tests: it answers what it is asked, streamed or not, and streams it
as a script says, conforming or with one of the bugs servers are reported to have.

:class:`ScriptedModel` decides the answer to a request, the same for a streamed and a non-streamed request: a tool
call when tools are offered and no tool result came back (two calls, to ``get_weather`` for Paris and Tokyo, when
the prompt says "both at once"), a long text when asked for hundreds of words, a text cut at ``max_tokens`` words,
reasoning when it is asked for, in each API's form (``reasons=True``). The non-streamed body is always
conforming; :func:`openai_stream` renders the streamed body of a script (:data:`OPENAI_SCRIPTS`),
:func:`anthropic_stream` the Messages API's (:data:`ANTHROPIC_SCRIPTS`), :func:`responses_stream` the Responses
API's (:data:`RESPONSES_SCRIPTS`), :func:`gemini_stream` Gemini's (conforming only). Set :func:`serve` as the
:class:`SSEServer`'s ``answer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..sse_server import SSE, Recorded, Reply, anthropic_events, openai_events

#: What the model answers a plain prompt: every word a token.
HELLO = "Hello there, nice to meet you today."
LONG = " ".join(f"word{i}" for i in range(400))


@dataclass
class Call:
    id: str
    name: str
    arguments: str


@dataclass
class Answer:
    text: str = ""
    reasoning: str = ""
    calls: list[Call] = field(default_factory=list)
    cut: bool = False
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class ScriptedModel:
    """The model behind the scripted server: the answer to a request (see the module's docstring)."""

    reasons: bool = False
    #: How many non-streamed answers were given (a nondeterministic model varies its text by it).
    answered: int = 0
    #: The non-streamed text varies from answer to answer (a sampling server).
    varies: bool = False

    def answer(self, request: dict[str, Any], *, streamed: bool) -> Answer:
        messages = request.get("messages") or request.get("input") or request.get("contents") or []
        prompt = _text(messages[-1].get("content", messages[-1].get("parts"))) if messages else ""
        last_is_tool = bool(messages) and (
            messages[-1].get("role") == "tool"
            or messages[-1].get("type") == "function_call_output"
            or any(part.get("type") == "tool_result" for part in _parts(messages[-1].get("content")))
            or any("functionResponse" in part for part in _parts(messages[-1].get("parts")))
        )
        out = Answer(input_tokens=sum(len(_text(m.get("content", m.get("parts"))).split()) for m in messages) + 3)
        if request.get("tools") and not last_is_tool:
            cities = ["Paris", "Tokyo"] if "both at once" in prompt else ["Paris"]
            out.calls = [
                Call(f"call_{n}", "get_weather", orjson.dumps({"city": city}).decode()) for n, city in enumerate(cities)
            ]
        else:
            words = (LONG if "400 words" in prompt or "300 words" in prompt else HELLO).split()
            if "Count from 1" in prompt:
                words = [str(n) for n in range(1, 201)]
            config = request.get("generationConfig") or {}
            limit = request.get("max_tokens") or request.get("max_output_tokens") or config.get("maxOutputTokens")
            if limit and len(words) > limit:
                words, out.cut = words[:limit], True
            out.text = " ".join(words)
            if last_is_tool:
                out.text = "It is 18 degrees and clear in Paris."
        asked = (
            request.get("reasoning_effort")
            or (request.get("thinking") or {}).get("type") == "enabled"
            or (request.get("reasoning") or {}).get("effort")
            or (request.get("generationConfig") or {}).get("thinkingConfig")
        )
        if self.reasons and asked:
            out.reasoning = "391 is 17 times 23, so it is not prime."
        if not streamed:
            self.answered += 1
            if self.varies:  # a word of its own each time, before a tool call too
                out.text = f"{out.text} ({self.answered})".lstrip()
        out.output_tokens = len(out.text.split()) + len(out.calls) * 5 + len(out.reasoning.split())
        return out


def _parts(content: Any) -> list[dict[str, Any]]:
    return [part for part in content if isinstance(part, dict)] if isinstance(content, list) else []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(str(part.get("text", "")) for part in _parts(content))


def pieces(text: str, size: int = 4) -> list[str]:
    """``text`` in pieces of ``size`` characters (how a server streams tokens)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


# -- OpenAI chat completions ---------------------------------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta}
    if finish is not None:
        choice["finish_reason"] = finish
    return {"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "scripted", "choices": [choice]}


def _finish(answer: Answer) -> str:
    return "tool_calls" if answer.calls else "length" if answer.cut else "stop"


def openai_body(answer: Answer) -> dict[str, Any]:
    """The conforming non-streamed chat completion."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.reasoning:
        message["reasoning_content"] = answer.reasoning
    if answer.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in answer.calls
        ]
    return {
        "id": "chatcmpl-s",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(answer)}],
        "usage": {
            "prompt_tokens": answer.input_tokens,
            "completion_tokens": answer.output_tokens,
            "total_tokens": answer.input_tokens + answer.output_tokens,
        },
    }


def _call_deltas(answer: Answer, script: str) -> list[dict[str, Any]]:
    """The tool calls' chunks: the first delta of each with its ``id`` and ``name`` only (as OpenAI streams: the
    later deltas carry the index and a piece of the arguments), unless the script breaks it."""
    out: list[dict[str, Any]] = []
    for index, call in enumerate(answer.calls):
        at = 0 if script == "shared-index" else index
        fragments = pieces(call.arguments, 5)
        head: dict[str, Any] = {"index": at, "type": "function", "function": {"name": call.name, "arguments": ""}}
        if not (script == "shared-index" and index):  # the second call comes at the first one's index, no id
            head["id"] = call.id
        if script == "first-fragment-dropped":
            del fragments[0]  # it came in the delta with the name, and was lost there
        if script == "arguments-empty":
            fragments = []  # the parser gave nothing, as tokens came several to a delta
        out.append(_chunk({"tool_calls": [head]}))
        out.extend(_chunk({"tool_calls": [{"index": at, "function": {"arguments": piece}}]}) for piece in fragments)
        if script == "arguments-duplicated":  # the end-of-stream flush sends the arguments once more
            out.append(_chunk({"tool_calls": [{"index": at, "function": {"arguments": call.arguments}}]}))
    return out


def openai_stream(answer: Answer, script: str) -> list[str]:
    """The streamed body's events for ``script`` (one of :data:`OPENAI_SCRIPTS`)."""
    chunks = [_chunk({"role": "assistant", "content": ""})]
    if answer.reasoning:
        chunks.extend(_chunk({"reasoning_content": piece}) for piece in pieces(answer.reasoning))
    finish = _finish(answer)
    if script == "markup-in-content" and answer.calls:  # the parser missed the call: its markup is text
        markup = "".join(
            f'<tool_call>{{"name": "{c.name}", "arguments": {c.arguments}}}</tool_call>' for c in answer.calls
        )
        chunks.extend(_chunk({"content": piece}) for piece in pieces(markup))
        finish = "stop"
    else:
        chunks.extend(_chunk({"content": piece}) for piece in pieces(answer.text))
        chunks.extend(_call_deltas(answer, script))
    chunks.append(_chunk({}, finish))
    usage = {"prompt_tokens": answer.input_tokens, "completion_tokens": answer.output_tokens}
    chunks.append({"id": "chatcmpl-s", "object": "chat.completion.chunk", "choices": [], "usage": usage})
    return openai_events(chunks)


#: The scripts of the chat completions stream: conforming, and one per reported bug.
OPENAI_SCRIPTS = (
    "conforming",
    "first-fragment-dropped",
    "arguments-duplicated",
    "arguments-empty",
    "markup-in-content",
    "shared-index",
)


# -- Anthropic Messages ----------------------------------------------------------------------------------


def _stop_reason(answer: Answer) -> str:
    return "tool_use" if answer.calls else "max_tokens" if answer.cut else "end_turn"


def anthropic_body(answer: Answer) -> dict[str, Any]:
    """The conforming non-streamed message."""
    content: list[dict[str, Any]] = []
    if answer.reasoning:
        content.append({"type": "thinking", "thinking": answer.reasoning, "signature": "c2lnbmVk"})
    if answer.text:
        content.append({"type": "text", "text": answer.text})
    content.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": orjson.loads(c.arguments)} for c in answer.calls
    )
    return {
        "id": "msg_s",
        "type": "message",
        "role": "assistant",
        "model": "scripted",
        "content": content,
        "stop_reason": _stop_reason(answer),
        "stop_sequence": None,
        "usage": {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens},
    }


def anthropic_stream(answer: Answer, script: str) -> list[str]:
    """The streamed body's events for ``script`` (one of :data:`ANTHROPIC_SCRIPTS`)."""
    usage = {"input_tokens": answer.input_tokens, "output_tokens": 1}
    start = {"id": "msg_s", "type": "message", "role": "assistant", "model": "scripted", "content": [], "usage": usage}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    index = 0

    def block(opening: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        events.append({"type": "content_block_start", "index": index, "content_block": opening})
        events.extend({"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas)
        events.append({"type": "content_block_stop", "index": index})
        index += 1

    if answer.reasoning:
        thinking = [{"type": "thinking_delta", "thinking": piece} for piece in pieces(answer.reasoning)]
        block({"type": "thinking", "thinking": ""}, [*thinking, {"type": "signature_delta", "signature": "c2lnbmVk"}])
    if answer.text:
        block({"type": "text", "text": ""}, [{"type": "text_delta", "text": piece} for piece in pieces(answer.text)])
    for call in answer.calls:
        fragments = pieces(call.arguments, 5)
        if script == "partial-json-unopened":  # the opening {" is never sent
            fragments = pieces(call.arguments[2:], 5)
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in fragments]
        block({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}, deltas)
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(answer), "stop_sequence": None},
            "usage": {"output_tokens": answer.output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return anthropic_events(events)


#: The scripts of the Messages stream.
ANTHROPIC_SCRIPTS = ("conforming", "partial-json-unopened")


# -- OpenAI Responses ----------------------------------------------------------------------------------------


def _response(answer: Answer, output: list[dict[str, Any]], done: bool) -> dict[str, Any]:
    status = "in_progress" if not done else "incomplete" if answer.cut else "completed"
    out: dict[str, Any] = {
        "id": "resp_s",
        "object": "response",
        "model": "scripted",
        "status": status,
        "output": output,
    }
    if done:
        out["usage"] = {
            "input_tokens": answer.input_tokens,
            "output_tokens": answer.output_tokens,
            "total_tokens": answer.input_tokens + answer.output_tokens,
        }
        out["incomplete_details"] = {"reason": "max_output_tokens"} if answer.cut else None
    return out


def _output(answer: Answer, arguments: Callable[[Call], str] = lambda call: call.arguments) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if answer.reasoning:
        summary = [{"type": "summary_text", "text": answer.reasoning}]
        items.append({"type": "reasoning", "id": "rs_s", "summary": summary})
    if answer.text:
        text = {"type": "output_text", "text": answer.text, "annotations": []}
        items.append({"type": "message", "id": "msg_s", "role": "assistant", "status": "completed", "content": [text]})
    items.extend(
        {"type": "function_call", "id": f"fc_{c.id}", "call_id": c.id, "name": c.name, "arguments": arguments(c)}
        for c in answer.calls
    )
    return items


def responses_body(answer: Answer) -> dict[str, Any]:
    """The conforming non-streamed response."""
    return _response(answer, _output(answer), True)


def responses_stream(answer: Answer, script: str) -> list[str]:
    """The streamed body's events for ``script`` (one of :data:`RESPONSES_SCRIPTS`)."""

    def arguments(call: Call) -> list[str]:
        fragments = pieces(call.arguments, 5)
        return fragments[1:] if script == "first-fragment-dropped" else fragments

    events: list[dict[str, Any]] = [{"type": "response.created", "response": _response(answer, [], False)}]
    output = _output(answer, lambda call: "".join(arguments(call)))
    for position, item in enumerate(output):
        if item["type"] == "reasoning":
            events.append(
                {"type": "response.output_item.added", "output_index": position, "item": {**item, "summary": []}}
            )
            where = {"item_id": item["id"], "output_index": position, "summary_index": 0}
            events.append(
                {"type": "response.reasoning_summary_part.added", **where, "part": {"type": "summary_text", "text": ""}}
            )
            events.extend(
                {"type": "response.reasoning_summary_text.delta", **where, "delta": piece}
                for piece in pieces(answer.reasoning)
            )
            events.append({"type": "response.reasoning_summary_text.done", **where, "text": answer.reasoning})
            events.append({"type": "response.reasoning_summary_part.done", **where, "part": item["summary"][0]})
        elif item["type"] == "message":
            empty = {**item, "status": "in_progress", "content": []}
            events.append({"type": "response.output_item.added", "output_index": position, "item": empty})
            part = {"type": "output_text", "text": "", "annotations": []}
            where = {"item_id": item["id"], "output_index": position, "content_index": 0}
            events.append({"type": "response.content_part.added", **where, "part": part})
            events.extend(
                {"type": "response.output_text.delta", **where, "delta": piece} for piece in pieces(answer.text)
            )
            events.append({"type": "response.output_text.done", **where, "text": answer.text})
            events.append({"type": "response.content_part.done", **where, "part": item["content"][0]})
        else:
            call = next(c for c in answer.calls if c.id == item["call_id"])
            opened = {**item, "status": "in_progress", "arguments": ""}
            events.append({"type": "response.output_item.added", "output_index": position, "item": opened})
            where = {"item_id": item["id"], "output_index": position}
            events.extend(
                {"type": "response.function_call_arguments.delta", **where, "delta": piece} for piece in arguments(call)
            )
            events.append({"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]})
        events.append({"type": "response.output_item.done", "output_index": position, "item": item})
    last = "response.incomplete" if answer.cut else "response.completed"
    events.append({"type": last, "response": _response(answer, output, True)})
    return [f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}" for e in events]


#: The scripts of the Responses stream.
RESPONSES_SCRIPTS = ("conforming", "first-fragment-dropped")


# -- Gemini ------------------------------------------------------------------------------------------------


def _candidate(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return candidate


def _gemini_usage(answer: Answer) -> dict[str, Any]:
    return {
        "promptTokenCount": answer.input_tokens,
        "candidatesTokenCount": answer.output_tokens,
        "totalTokenCount": answer.input_tokens + answer.output_tokens,
    }


def gemini_body(answer: Answer) -> dict[str, Any]:
    """The conforming ``generateContent`` answer."""
    parts: list[dict[str, Any]] = [{"text": answer.reasoning, "thought": True}] if answer.reasoning else []
    if answer.text:
        parts.append({"text": answer.text})
    parts.extend({"functionCall": {"name": c.name, "args": orjson.loads(c.arguments)}} for c in answer.calls)
    finish = "MAX_TOKENS" if answer.cut else "STOP"
    return {"candidates": [_candidate(parts, finish)], "usageMetadata": _gemini_usage(answer)}


def gemini_stream(answer: Answer) -> list[str]:
    """The conforming ``streamGenerateContent`` body: the text in pieces, each call whole, then the finish."""
    thoughts = [{"candidates": [_candidate([{"text": p, "thought": True}])]} for p in pieces(answer.reasoning)]
    chunks = [*thoughts, *({"candidates": [_candidate([{"text": piece}])]} for piece in pieces(answer.text))]
    chunks.extend(
        {"candidates": [_candidate([{"functionCall": {"name": c.name, "args": orjson.loads(c.arguments)}}])]}
        for c in answer.calls
    )
    last = {
        "candidates": [_candidate([], "MAX_TOKENS" if answer.cut else "STOP")],
        "usageMetadata": _gemini_usage(answer),
    }
    return [f"data: {orjson.dumps(chunk).decode()}" for chunk in [*chunks, last]]


def serve(model: ScriptedModel, script: str, *, delay: float = 0.0) -> Callable[[Recorded], SSE | Reply]:
    """The server's ``answer``: chat completions at ``/chat/completions``, Messages at ``/v1/messages``, Responses
    at ``/responses``, Gemini at ``:streamGenerateContent`` and ``:generateContent`` (conforming whatever the
    script); ``delay`` seconds before each event of a stream."""

    def answer(request: Recorded) -> SSE | Reply:
        body = request.json()
        streamed = bool(body.get("stream"))
        said = model.answer(body, streamed=streamed)
        if request.path.endswith("/v1/messages"):
            return SSE(anthropic_stream(said, script), delay) if streamed else Reply(200, anthropic_body(said))
        if ":streamGenerateContent" in request.path:
            return SSE(gemini_stream(said), delay)
        if request.path.endswith(":generateContent"):
            return Reply(200, gemini_body(said))
        if request.path.endswith("/responses"):
            return SSE(responses_stream(said, script), delay) if streamed else Reply(200, responses_body(said))
        return SSE(openai_stream(said, script), delay) if streamed else Reply(200, openai_body(said))

    return answer

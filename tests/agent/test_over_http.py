"""The agent loop end to end: ``OpenAICompatibleAdapter`` over real HTTP to the scripted server on 127.0.0.1
(``tests/sse_server.py``). The seed's two parallel file reads, a rate limit on the second request that succeeds on
retry, then the answer; and an abort that tears a live response down. Then ``AnthropicAdapter``: a call whose
arguments could not be sent back is refused, and the conversation goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import streamfsm as sf

from ..agent_support import SEED_READS, FakeClock, collect, kinds, run, wire
from ..sse_server import SSE, Reply, SSEServer, anthropic_events, chat_delta, openai_events


def tool_delta(index: int, arguments: str, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    """A delta of parallel tool call ``index`` (id and name on its first piece)."""
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        call["id"], call["type"], call["function"]["name"] = call_id, "function", name
    return chat_delta(tool_calls=[call])


def ending(reason: str, prompt: int, completion: int) -> list[dict[str, Any]]:
    """The finish reason, then the usage chunk (``stream_options.include_usage``)."""
    return [
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]},
        {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}},
    ]


TOOL_TURN = [
    chat_delta(role="assistant", content="2つのファイルを"),
    chat_delta(content="確認します"),
    tool_delta(0, "", "call_1", "file_edit"),
    tool_delta(0, '{"action": "read", '),
    tool_delta(0, '"path": "src/index.ts"}'),
    tool_delta(1, '{"action": "read", "path": "src/app.ts"}', "call_2", "file_edit"),
    *ending("tool_calls", 120, 40),
]
ANSWER_TURN = [
    chat_delta(role="assistant", content="上記2ファイル"),
    chat_delta(content="の内容..."),
    *ending("stop", 200, 10),
]


def test_two_parallel_file_reads_a_rate_limit_and_the_answer_over_http(server: SSEServer) -> None:
    server.script(
        SSE(openai_events(TOOL_TURN)),
        Reply(429, {"error": {"message": "Rate limit exceeded", "type": "rate_limit"}}, {"retry-after-ms": "1500"}),
        SSE(openai_events(ANSWER_TURN)),
    )

    async def file_edit(action: str, path: str) -> dict[str, str]:
        """Read or edit a file."""
        await asyncio.sleep(0)
        return {"content": f"export const name = {path!r}"}

    clock = FakeClock()
    adapter = sf.OpenAICompatibleAdapter(server.url, api_key="sk-test")
    loop = sf.AgentLoop(
        adapter,
        [file_edit],
        options=sf.GenerateOptions(model="deepseek-chat", system="You edit files."),
        clock=clock,
        sleep=clock.sleep,
    )
    agent_run = loop.run("list project files")
    out = run(collect(agent_run))
    assert wire(out) == [
        {"type": "text", "content": "2つのファイルを"},
        {"type": "text", "content": "確認します"},
        *SEED_READS,
        {
            "type": "error",
            "error": {
                "message": "openai-compatible: HTTP 429: Rate limit exceeded",
                "code": "RATE_LIMIT",
                "status": 429,
                "retryAfterMs": 1500,
            },
            "recoverable": True,
            "retryAfter": 1500,
        },
        {"type": "text", "content": "上記2ファイル"},
        {"type": "text", "content": "の内容..."},
        {"type": "done", "reason": "stop", "usage": {"promptTokens": 320, "completionTokens": 50, "totalTokens": 370}},
    ]
    assert clock.sleeps == [1.5]  # the provider's retry-after, through the injected sleep: no real wait
    assert agent_run.error is None and agent_run.metrics.retry_count == 1

    # What went over the wire: the tool declared, then the whole conversation with both results.
    first, limited, second = (request.json() for request in server.requests)
    assert first["tools"][0]["function"]["name"] == "file_edit"
    assert first["tools"][0]["function"]["parameters"]["required"] == ["action", "path"]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert limited["messages"] == second["messages"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assistant = second["messages"][2]
    assert assistant["content"] == "2つのファイルを確認します"
    assert [(c["id"], c["function"]["name"]) for c in assistant["tool_calls"]] == [
        ("call_1", "file_edit"),
        ("call_2", "file_edit"),
    ]
    tool_messages = second["messages"][3:]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2"]
    assert json.loads(tool_messages[0]["content"]) == {"content": "export const name = 'src/index.ts'"}


def test_an_abort_tears_a_live_http_response_down(server: SSEServer) -> None:
    slow = [chat_delta(content=f"word{n} ") for n in range(40)] + ending("stop", 10, 40)
    server.script(SSE(openai_events(slow), delay=0.2))
    controller = sf.AbortController()
    loop = sf.AgentLoop(sf.OpenAICompatibleAdapter(server.url), model="deepseek-chat")
    agent_run = loop.run("talk slowly", signal=controller.signal)

    async def main() -> tuple[list[Any], float]:
        out = []
        aborted_at = 0.0
        validator = sf.FlatValidator()
        async for chunk in agent_run:
            out.append(validator.feed(chunk))
            if len(out) == 2:
                aborted_at = time.monotonic()
                controller.abort("enough")
        validator.close()
        return out, time.monotonic() - aborted_at

    out, took = run(main())
    assert kinds(out) == ["text", "text", "done"] and out[-1].reason == "cancel"
    assert agent_run.error is not None and agent_run.error.code is sf.ErrorCode.ABORTED
    assert took < 2.0  # at once, not when the server would have finished (8 s)
    deadline = time.monotonic() + 5
    while server.active and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.active == 0  # the server saw the client go


def a_event(kind: str, **fields: Any) -> dict[str, Any]:
    """One Messages API event."""
    return {"type": kind, **fields}


def anthropic_turn(*blocks: list[dict[str, Any]], stop: str) -> list[dict[str, Any]]:
    """A whole Messages API response: message_start, the blocks' events, the stop reason and usage."""
    start = a_event("message_start", message={"id": "msg_1", "model": "claude", "usage": {"input_tokens": 9}})
    ending = [
        a_event("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": 5}),
        a_event("message_stop"),
    ]
    return [start, *(event for block in blocks for event in block), *ending]


def tool_use(index: int, call_id: str, name: str, partial_json: str) -> list[dict[str, Any]]:
    """The events of one tool_use block, its input in one delta."""
    return [
        a_event(
            "content_block_start",
            index=index,
            content_block={"type": "tool_use", "id": call_id, "name": name, "input": {}},
        ),
        a_event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": partial_json}),
        a_event("content_block_stop", index=index),
    ]


def text_block(index: int, text: str) -> list[dict[str, Any]]:
    """The events of one text block."""
    return [
        a_event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        a_event("content_block_delta", index=index, delta={"type": "text_delta", "text": text}),
        a_event("content_block_stop", index=index),
    ]


def test_a_lone_surrogate_in_arguments_is_refused_and_the_anthropic_conversation_goes_on(server: SSEServer) -> None:
    # The Anthropic API takes a call's arguments as an object (`input`): arguments holding an escaped lone
    # surrogate could not be serialised into the next request, and the conversation could never go on.
    server.script(
        SSE(anthropic_events(anthropic_turn(tool_use(0, "toolu_1", "echo", '{"text": "a\\udc00b"}'), stop="tool_use"))),
        SSE(anthropic_events(anthropic_turn(text_block(0, "sorry"), stop="end_turn"))),
    )
    ran: list[str] = []

    async def echo(text: str) -> str:
        """Echo the text."""
        ran.append(text)
        return text

    loop = sf.AgentLoop(sf.AnthropicAdapter(base_url=server.url), [echo], model="claude")
    agent_run = loop.run("say it")
    out = run(collect(agent_run))
    assert kinds(out) == ["tool_call", "tool_result", "text", "done"] and out[-1].reason == "stop"
    assert ran == [] and out[1].is_error and "lone surrogate \\udc00" in out[1].result["message"]
    second = server.requests[1].json()
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "a\\udc00b"}}
    ]
    (result,) = second["messages"][2]["content"]
    assert result["tool_use_id"] == "toolu_1" and result["is_error"] is True
    assert "lone surrogate" in json.loads(result["content"])["message"]

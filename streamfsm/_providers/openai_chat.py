"""OpenAI-compatible chat completions (DeepSeek, OpenAI, xAI, Groq, vLLM, Ollama, ...) to the block protocol.

:class:`OpenAIConverter` is sans-IO (fed ``chat.completion.chunk`` objects, or the ``text_completion`` chunks of
the legacy completions API, ``/v1/completions``); :func:`from_openai_chunks` wraps it around any iterable of
chunks, dicts or the ``openai`` SDK's objects; :class:`OpenAICompatibleAdapter` speaks HTTP (the ``http`` extra).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Final

from .._config import Limits
from .._quote import quote
from .._wire import StreamChunk, WireFinishReason, WireUsage
from .blocks import ProviderBlock
from .classify import clip, stream_failure
from .convert import another_turn, as_event, convert, count, is_position, malformed, stop_reason, sync_or_async
from .frame import TurnState

__all__ = ["CHAT_STREAM_HELPERS", "OpenAIConverter", "chat_event", "from_openai_chunks", "openai_usage"]

#: The events the ``openai`` SDK's ``ChatCompletionStream`` (``client.chat.completions.stream(...)``) yields besides
#: its ``chunk`` events, each repeating what the chunk before it carries.
CHAT_STREAM_HELPERS: Final = frozenset(
    {
        "content.delta",
        "content.done",
        "refusal.delta",
        "refusal.done",
        "tool_calls.function.arguments.delta",
        "tool_calls.function.arguments.done",
        "logprobs.content.delta",
        "logprobs.content.done",
        "logprobs.refusal.delta",
        "logprobs.refusal.done",
    }
)


def chat_event(value: Any, what: str) -> Mapping[str, Any]:
    """One chunk as a mapping (:func:`~.convert.as_event`); of a ``ChatCompletionStream``'s ``chunk`` event (the
    ``openai`` SDK's ``ChunkEvent``), the API's chunk it holds, not the snapshot beside it."""
    if type(value).__name__ == "ChunkEvent":
        value = value.chunk
    return as_event(value, what)


_FINISH: dict[str, WireFinishReason] = {
    "stop": {"kind": "stop"},
    "tool_calls": {"kind": "tool-calls"},
    "length": {"kind": "max-tokens"},
}

#: The ``object`` of a chunk of each API the converter reads: chat completions, and the legacy completions API
#: (``/v1/completions``, whose choices carry a ``text`` where chat's carry a ``delta``).
_CHAT: Final = "chat.completion.chunk"
_COMPLETION: Final = "text_completion"


def openai_usage(usage: Mapping[str, Any]) -> WireUsage:
    """OpenAI-style usage as the protocol's disjoint counts (as DeepSeek Harness reports them).

    ``inputTokens`` is the uncached input (``prompt_tokens`` less the cached tokens); ``cacheReadTokens`` comes
    from DeepSeek's ``prompt_cache_hit_tokens`` or OpenAI's ``prompt_tokens_details.cached_tokens``;
    ``reasoningTokens`` from ``completion_tokens_details.reasoning_tokens``. Absent or null counts are 0 (or left
    out, for the optional ones).
    """
    prompt = count(usage, "prompt_tokens") or 0
    cached = count(usage, "prompt_cache_hit_tokens")
    if cached is None:
        cached = count(usage.get("prompt_tokens_details"), "cached_tokens", "prompt_tokens_details.cached_tokens")
    result: WireUsage = {
        "inputTokens": max(0, prompt - (cached or 0)),
        "outputTokens": count(usage, "completion_tokens") or 0,
    }
    if cached is not None:
        result["cacheReadTokens"] = cached
    details = usage.get("completion_tokens_details")
    reasoning = count(details, "reasoning_tokens", "completion_tokens_details.reasoning_tokens")
    if reasoning is not None:
        result["reasoningTokens"] = reasoning
    return result


def _shown(value: object) -> str:
    return quote(value.get("type")) if isinstance(value, Mapping) else type(value).__name__


def _text_field(delta: Mapping[str, Any], key: str, where: str = "delta") -> str:
    value = delta.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise malformed(f"{where}.{key} must be a string, got {type(value).__name__}")
    return value


def _new_id(found: object, known: str | None) -> bool:
    """Whether a chunk's ``id`` names another response than ``known`` (both given)."""
    return isinstance(found, str) and bool(found) and known is not None and found != known


def _opens(event: Mapping[str, Any]) -> bool:
    """Whether a chunk carries a choice with a delta (or a completion's text), as the first chunk of a response
    does (a chunk of usage alone, or the empty delta of a finish, does not)."""
    choices = event.get("choices")
    return isinstance(choices, list) and any(
        isinstance(c, Mapping) and bool(c.get("delta") or c.get("text")) for c in choices
    )


class OpenAIConverter(TurnState):
    """Turns ``chat.completion.chunk`` objects (as dicts) into block-protocol chunks.

    It reads the legacy completions API's ``text_completion`` chunks too (``/v1/completions``, as llama.cpp, vLLM,
    SGLang and Ollama serve it): a choice's ``text`` is a text block, its ``finish_reason`` and the ``usage`` read as
    chat's. A chunk's ``object`` (else its choices' form: a ``delta``, or a ``text``) tells which API it is of; a
    stream whose chunks are of both is ``MALFORMED_RESPONSE``.

    ``reasoning_content`` (DeepSeek; ``reasoning`` on some servers) becomes a reasoning block, ``content`` (and a
    ``refusal``) a text block, ``tool_calls`` by index tool-call blocks. ``content`` may also be a list of parts
    (Mistral): ``{"type": "text", "text"}`` is text, ``{"type": "thinking", "thinking": [{"type": "text", "text"}]}``
    reasoning; a part of any other type (and a non-text part inside ``thinking``, kept inside its ``thinking``
    part) is kept verbatim for replay (``replayState["kept"]``, module ``replay.py``), and the text after it is a
    new block. One block is open at a time: a later tool call is held back until the earlier one's arguments
    are complete, so the output is valid under ``Policy.STRICT`` even where a provider interleaves parallel
    calls. ``usage`` and ``finish`` are sent by :meth:`end`, because providers send usage after the finish reason.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)  # over: "an error chunk"; calls stay 0: the API says tool_calls itself
        self.split = False  # an item was kept since the last text: the next text is a new block
        self.tools: dict[int, ProviderBlock] = {}  # by index
        self.positions: dict[str, int] = {}  # call id → index, for servers that send calls without one
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.response_id: str | None = None  # the first chunk's id
        self.last_id: str | None = None  # the id of the last chunk that had one
        self.api: str | None = None  # _CHAT or _COMPLETION, once a chunk told which

    def begins_turn(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` is the first of another turn: a chunk with a delta whose ``id`` is not this turn's,
        after its ``finish_reason`` (the chunk of usage after it belongs to the turn, whatever its ``id``: some
        servers mint an ``id`` a chunk), or after an error chunk. An SSE body's ``[DONE]`` ends a turn too (the
        reader of recordings says so). Without an ``id``, turns cannot be told apart."""
        found = event.get("id")
        if self.over is not None:  # after an error chunk, any response but this one's
            return isinstance(found, str) and bool(found) and found != self.response_id
        return self.finish_reason is not None and _new_id(found, self.response_id) and _opens(event)

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        """Convert one chunk object; returns the protocol chunks it completes (often one delta)."""
        if event.get("error"):
            raise self.failed("an error chunk", stream_failure(event, "in the stream"))
        if self.begins_turn(event):
            raise another_turn("a chunk with a new id after a finish_reason", "from_openai_chunks")
        found = event.get("id")
        if isinstance(found, str) and found:
            # A new id within a response is taken as the same response: llama.cpp's server (until 2024),
            # LiteLLM's proxy for some providers and Foundry Local mint one a chunk. The first response's id
            # coming back after another one's is a response spliced into another.
            if found == self.response_id and self.last_id != found:
                raise malformed(
                    f"response {clip(found, 80)!r} came back after response {clip(self.last_id or '', 80)!r} "
                    "began: one response spliced into another"
                )
            self.last_id = found
            if self.response_id is None:
                self.response_id = found
                self.model = event.get("model") if isinstance(event.get("model"), str) else None
        choices = event.get("choices")
        if choices is None:
            choices = ()
        elif not isinstance(choices, list):
            raise malformed(f"'choices' must be a list, got {type(choices).__name__}")
        found = event.get("object")
        if found != self.api and found in (_CHAT, _COMPLETION):
            self._of(_CHAT if found == _CHAT else _COMPLETION)
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise malformed(f"a choice must be an object, got {type(choice).__name__}")
            if choice.get("index", 0) != 0:
                raise malformed(f"choice {quote(choice.get('index'))}: only one choice (n=1) can be converted")
            delta = choice.get("delta")
            if delta is not None:
                if self.api != _CHAT:
                    self._of(_CHAT)
            elif choice.get("text") is not None:  # a legacy completion: its text is what chat's content would be
                if self.api != _COMPLETION:
                    self._of(_COMPLETION)
                delta = {"content": _text_field(choice, "text", "choice")}
            delta = delta or {}
            if not isinstance(delta, Mapping):
                raise malformed(f"'delta' must be an object, got {type(delta).__name__}")
            reasoning = _text_field(delta, "reasoning_content") or _text_field(delta, "reasoning")
            if reasoning:
                self._text("reasoning", reasoning)
            content = delta.get("content")
            if isinstance(content, list):
                for part in content:
                    self._part(part)
            else:
                text = _text_field(delta, "content")
                if text:
                    self._text("text", text)
            refusal = _text_field(delta, "refusal")
            if refusal:
                self._text("text", refusal)
            tool_calls = delta.get("tool_calls")
            if tool_calls:
                if not isinstance(tool_calls, list):
                    raise malformed(f"'tool_calls' must be a list, got {type(tool_calls).__name__}")
                for call in tool_calls:
                    self._tool(call)
            reason = choice.get("finish_reason")
            if reason is not None:
                if not isinstance(reason, str) or not reason:
                    raise malformed(f"'finish_reason' must be a non-empty string, got {quote(reason)}")
                self.finish_reason = reason
                self.queue.ended = "the finish_reason"  # only usage may follow (convert.ended_turn)
        usage = event.get("usage")
        if usage is not None:
            if not isinstance(usage, Mapping):
                raise malformed(f"'usage' must be an object, got {type(usage).__name__}")
            self.usage = openai_usage(usage)
        return self.queue.take()

    def _of(self, api: str) -> None:
        """A chunk (or a choice) of ``api`` came (:data:`_CHAT` or :data:`_COMPLETION`, told by its ``object``, or by
        a choice's ``delta`` or ``text``): the stream's API, unless another's came first (``MALFORMED_RESPONSE``)."""
        if self.api is not None:
            raise malformed(f"a {api} chunk in a stream of {self.api} chunks: one stream holds one API's chunks")
        self.api = api

    def _text(self, kind: str, text: str) -> None:
        queue = self.queue
        last = queue.last()
        if last is not None and last.kind == kind and not self.split:
            queue.add(last, text)
        else:
            queue.push(ProviderBlock("text" if kind == "text" else "reasoning"), text)
        self.split = False

    def _part(self, part: object) -> None:
        """One part of a ``content`` list: text, thinking, or a part kept for replay."""
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            raise malformed(f"a content part must be an object with a string 'type', got {_shown(part)}")
        kind = part["type"]
        if kind == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise malformed(f"a text part's 'text' must be a string, got {type(text).__name__}")
            if text:
                self._text("text", text)
            return
        if kind != "thinking":
            self._keep(kind, part)
            return
        thinking = part.get("thinking")
        if isinstance(thinking, str):  # the documented form is a list of parts; a plain string means the same
            thinking = [{"type": "text", "text": thinking}]
        if not isinstance(thinking, list):
            raise malformed(f"a thinking part's 'thinking' must be a list of parts, got {type(thinking).__name__}")
        for inner in thinking:
            if not isinstance(inner, Mapping) or not isinstance(inner.get("type"), str):
                raise malformed(f"a thinking part must hold objects with a string 'type', got {_shown(inner)}")
            text = inner.get("text")
            if inner["type"] != "text":
                self._keep("thinking", {**part, "thinking": [inner]})
            elif not isinstance(text, str):
                raise malformed(f"a thinking text part's 'text' must be a string, got {type(text).__name__}")
            elif text:
                self._text("reasoning", text)

    def _keep(self, kind: str, part: Mapping[str, Any]) -> None:
        self.keep(kind, self.queue.made, part, f"a {kind!r} content part")
        self.split = True

    def _tool(self, call: object) -> None:
        if not isinstance(call, Mapping):
            raise malformed(f"a tool call must be an object, got {type(call).__name__}")
        function = call.get("function") or {}
        if not isinstance(function, Mapping):
            raise malformed(f"'function' must be an object, got {type(function).__name__}")
        arguments = _text_field(function, "arguments")
        call_id = call.get("id") or None  # DashScope sends "" on the deltas after the first: no id
        position = call.get("index")
        if position is None:  # a server that sends calls whole, without an index
            position = self.positions.get(call_id, len(self.tools)) if isinstance(call_id, str) else len(self.tools)
        if not is_position(position):
            raise malformed(f"tool call index must be an integer from 0 to 2^53-1, got {quote(position)}")
        block = self.tools.get(position)
        if block is None:
            name = function.get("name")
            if not isinstance(call_id, str):
                raise malformed(f"tool call {position} began without an id")
            if not isinstance(name, str) or not name:
                raise malformed(f"tool call {position} ({call_id}) began without a function name")
            block = ProviderBlock("tool-call", call_id, name)
            self.tools[position] = block
            self.positions[call_id] = position
            self.queue.push(block, arguments)
            return
        if call_id is not None and call_id != block.call_id:
            raise malformed(f"tool call {position} changed its id from {quote(block.call_id)} to {quote(call_id)}")
        if block.ended:
            if arguments:
                raise malformed(
                    f"arguments for tool call {block.call_id} came after its arguments were complete and the next "
                    f"block had begun: {arguments[:40]!r}"
                )
            return
        self.queue.add(block, arguments)

    def close(self) -> list[StreamChunk]:
        """The response is over: end the blocks, then ``usage`` (when the provider sent it) and ``finish``.

        Raises ``STREAM_CLOSED`` when no finish reason came, ``EMPTY_RESPONSE`` for a ``stop`` with no content
        (neither a block nor a kept part). The finish carries ``replayState``: ``response`` (the first chunk's
        ``id`` and ``model``, when it had them) and ``kept`` (when a part was kept).
        """
        finish = stop_reason(self.finish_reason, _FINISH, "finish_reason")
        named = {key: value for key, value in (("id", self.response_id), ("model", self.model)) if value}
        return self.closed(finish, self.keeper.state(response=named or None))


@sync_or_async
def from_openai_chunks(
    chunks: Iterable[Any] | AsyncIterable[Any], *, limits: Limits | None = None
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Convert a stream of OpenAI ``chat.completion.chunk`` objects (dicts or SDK objects, sync or async), or of
    the legacy completions API's ``text_completion`` chunks (the SDK's ``Completion``): one API's, not both.

    The block-protocol chunks come out as the input goes in; ``usage`` and ``finish`` when the input ends.
    Send the output through :func:`streamfsm.validate` / :func:`streamfsm.avalidate` to check and assemble it.

    ``limits`` (pass those the machine is given) bound the content held back until a tool call's arguments are
    complete: ``LIMIT_EXCEEDED`` once it passes them (the machine does not see it yet).
    """
    return convert(OpenAIConverter(limits), chunks, "a chat.completion.chunk")

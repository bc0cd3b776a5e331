"""Gemini ``streamGenerateContent`` to the block protocol.

:class:`GeminiConverter` is sans-IO (fed ``GenerateContentResponse`` objects as dicts, camelCase as on the wire or
snake_case as the ``google-genai`` SDK's ``model_dump()`` gives them); :func:`from_gemini_chunks` wraps it around
any iterable of them, dicts or the SDK's own objects, sync or async. The HTTP adapter is
:class:`~.gemini_adapter.GeminiAdapter`.

What it reads, part by part, in order: ``thought: true`` parts become reasoning, other text parts text
(consecutive parts of one kind are one block); a ``functionCall`` a tool call, whole (``args``) or streamed
(``partialArgs`` with ``willContinue``, written out as JSON as they come: :mod:`.arguments`). Gemini's
calls carry no id, or an optional one: a call without one gets ``call_<responseId>_<n>`` (``call_<n>`` without a
``responseId``), n its position among the turn's calls from 0 — the same stream always gives the same ids.
Every other part (``executableCode``, ``codeExecutionResult``, ``inlineData``, ``fileData``, server-side
``toolCall`` / ``toolResponse``, an empty text part that carries only a ``thoughtSignature``, a kind added since)
and the candidate's ``groundingMetadata``, ``citationMetadata`` and ``urlContextMetadata`` are kept verbatim, in
order, in the finish's ``replayState["kept"]`` (:mod:`.replay`). Thought signatures of the parts that became
blocks go in ``replayState["gemini"]["blocks"]``, one entry per block: for text and reasoning the signed parts'
character ranges in the block's text, for a call its signature; :mod:`.gemini_adapter` puts each back on its
own part when the turn is sent back.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import orjson
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .._config import Limits
from .._errors import ErrorCode, LlmError
from .._quote import quote
from .._wire import StreamChunk, WireFinishReason, WireUsage
from .arguments import ArgumentWriter
from .blocks import ProviderBlock
from .classify import clip, stream_failure
from .convert import another_turn, as_event, as_object, convert, malformed, non_negative_int, sync_or_async
from .frame import TurnState

__all__ = ["GeminiConverter", "from_gemini_chunks", "gemini_event", "gemini_usage", "get"]

#: What the converter calls one event, in its messages.
EVENT = "a GenerateContentResponse"
#: The candidate's metadata kept for replay (read by users; not parts, so never sent back).
CANDIDATE_KEPT = ("groundingMetadata", "citationMetadata", "urlContextMetadata")
#: A part's fields that say something about its data, not what the data is.
_PART_METADATA = frozenset(
    {"thought", "thoughtSignature", "partMetadata", "videoMetadata", "mediaResolution"}
    | {"thought_signature", "part_metadata", "video_metadata", "media_resolution"}
)


@lru_cache(maxsize=256)
def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def get(obj: Mapping[str, Any], name: str) -> Any:
    """Field ``name`` (camelCase, as on the wire) of ``obj``, or its snake_case spelling; None when absent or null."""
    value = obj.get(name)
    return obj.get(_snake(name)) if value is None else value


def _list(value: object, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise malformed(f"{what} must be a list, got {type(value).__name__}")
    return list(value)


def jsonable(value: Any) -> Any:
    """``value`` as JSON data: bytes as standard base64 (as the wire has them), enums and dates as the SDK's JSON
    gives them. Copied without recursion, so that no depth of nesting overflows the stack."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, into, key = stack.pop()
        if isinstance(item, Mapping):
            copy: dict[str, Any] = dict.fromkeys(item)  # the keys in their order; the values filled in below
            into[key] = copy
            stack.extend((inner, copy, name) for name, inner in item.items())
        elif isinstance(item, list | tuple):
            items: list[Any] = [None] * len(item)
            into[key] = items
            stack.extend((inner, items, number) for number, inner in enumerate(item))
        elif isinstance(item, bytes | bytearray):
            into[key] = base64.b64encode(item).decode()
        elif item is None or type(item) in (str, int, float, bool):
            into[key] = item
        else:
            try:
                into[key] = to_jsonable_python(item)
            except PydanticSerializationError as exc:
                raise malformed(f"a value of type {type(item).__name__} is not JSON data") from exc
    return root[0]


def gemini_event(value: object) -> Mapping[str, Any]:
    """One stream element as a mapping: a dict as it is; a ``google-genai`` ``GenerateContentResponse`` dumped with
    the API's own (camelCase) names, without its unset fields, and its bytes (thought signatures, inline data) in
    standard base64 as on the wire — the same dict the API sent."""
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump(by_alias=True, exclude_none=True)
        if isinstance(dumped, Mapping):
            result = jsonable(dumped)
            assert isinstance(result, dict)
            return result
    return as_event(value, EVENT)


def _count(usage: Mapping[str, Any], name: str) -> int | None:
    value = get(usage, name)
    return None if value is None else non_negative_int(value, name)


def gemini_usage(usage: Mapping[str, Any]) -> WireUsage | None:
    """``usageMetadata`` as the protocol's disjoint counts; None when it has no count (as the chunks before the
    last one often have only ``trafficType``).

    ``promptTokenCount`` includes the cached tokens: ``inputTokens`` = ``promptTokenCount`` -
    ``cachedContentTokenCount`` + ``toolUsePromptTokenCount`` (the results of server-side tools the model read),
    ``cacheReadTokens`` = ``cachedContentTokenCount``. ``candidatesTokenCount`` leaves the thinking out:
    ``outputTokens`` = ``candidatesTokenCount`` + ``thoughtsTokenCount``, ``reasoningTokens`` =
    ``thoughtsTokenCount`` (as OpenAI's reasoning tokens are part of its completion tokens). The counts add up to
    ``totalTokenCount``.
    """
    prompt = _count(usage, "promptTokenCount")
    cached = _count(usage, "cachedContentTokenCount")
    candidates = _count(usage, "candidatesTokenCount")
    thoughts = _count(usage, "thoughtsTokenCount")
    tools = _count(usage, "toolUsePromptTokenCount")
    if prompt is None and cached is None and candidates is None and thoughts is None and tools is None:
        return None
    result: WireUsage = {
        "inputTokens": max(0, (prompt or 0) - (cached or 0)) + (tools or 0),
        "outputTokens": (candidates or 0) + (thoughts or 0),
    }
    if cached is not None:
        result["cacheReadTokens"] = cached
    if thoughts is not None:
        result["reasoningTokens"] = thoughts
    return result


def _signature(value: object) -> str | None:
    """A thought signature in standard base64, as the API sends it (the SDK's JSON gives the URL-safe alphabet)."""
    if value is None or isinstance(value, str):
        return value.replace("-", "+").replace("_", "/") if value else None
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode() or None
    raise malformed(f"thoughtSignature must be a string, got {type(value).__name__}")


def _not_one_turn(what: str) -> LlmError:
    return malformed(
        f"{what}: the response has several candidates (candidateCount above 1), not one turn; only one candidate "
        "can be converted"
    )


class GeminiConverter(TurnState):
    """Turns ``GenerateContentResponse`` chunks (as dicts) into block-protocol chunks (see the module docstring).

    One block is open at a time (a block that comes while a streamed call is incomplete is held back, as
    :mod:`.held` does), so the output is valid under ``Policy.STRICT``. ``usage`` and ``finish`` are sent by
    :meth:`end`: Gemini's stream has no end marker, and its last chunks may bring the finish reason and the usage
    apart.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)  # over: "an error chunk", which ends it; ended: end() has run
        self.blocks: list[dict[str, Any] | None] = []  # per block: its thought signatures, whether its id was Gemini's
        self.current: ProviderBlock | None = None  # the text or reasoning block the next part of its kind extends
        self.current_index = -1
        self.length = 0  # characters in the current block
        self.call: ProviderBlock | None = None  # a streamed call whose arguments are still coming
        self.call_index = -1
        self.writer: ArgumentWriter | None = None
        self.ids: set[str] = set()
        self.response: dict[str, Any] = {}
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.safety: Any = None
        self.prompt_feedback: Mapping[str, Any] | None = None

    # --- Events ---------------------------------------------------------------------------------------

    def begins_turn(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` is the first of another turn: a chunk whose ``responseId`` is not this turn's, after its
        ``finishReason`` (Gemini's stream has no end event: the chunks after the finish reason with the same
        ``responseId``, its usage, are this turn's), or after an error chunk. Without a ``responseId`` on both,
        turns cannot be told apart."""
        found, known = get(event, "responseId"), self.response.get("responseId")
        if self.over is not None:  # after an error chunk, any response but this one's
            return isinstance(found, str) and found != known
        feedback = self.prompt_feedback
        if self.finish_reason is None and (feedback is None or get(feedback, "blockReason") is None):
            return False
        return isinstance(found, str) and known is not None and found != known

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        """Convert one ``GenerateContentResponse``; returns the protocol chunks it completes."""
        if event.get("error") is not None:
            raise self.failed("an error chunk", stream_failure(event, "in the stream"))
        if self.begins_turn(event):
            raise another_turn(f"{EVENT} with a new responseId after a finishReason", "from_gemini_chunks")
        if self.ended:
            raise malformed(f"{EVENT} after the end of the stream")
        found, known = get(event, "responseId"), self.response.get("responseId")
        if isinstance(found, str) and known is not None and found != known:
            raise malformed(f"response {clip(found, 80)!r} began before response {clip(known, 80)!r} ended")
        for key in ("responseId", "modelVersion"):
            value = get(event, key)
            if key not in self.response and isinstance(value, str):
                self.response[key] = value
        feedback = get(event, "promptFeedback")
        if feedback is not None:
            self.prompt_feedback = as_object(feedback, "'promptFeedback'")
        usage = get(event, "usageMetadata")
        if usage is not None:
            self.usage = gemini_usage(as_object(usage, "'usageMetadata'")) or self.usage
        candidates = _list(get(event, "candidates"), "'candidates'")
        if len(candidates) > 1:
            raise _not_one_turn(f"{len(candidates)} candidates in one chunk")
        for candidate in candidates:
            self._candidate(as_object(candidate, "a candidate"))
        return self.queue.take()

    def _candidate(self, candidate: Mapping[str, Any]) -> None:
        index = get(candidate, "index")
        if index not in (None, 0):
            raise _not_one_turn(f"candidate {quote(index, 40)}")
        content = get(candidate, "content")
        if content is not None:
            for part in _list(get(as_object(content, "'content'"), "parts"), "'content.parts'"):
                self._part(as_object(part, "a part"))
        for key in CANDIDATE_KEPT:
            value = get(candidate, key)
            if value is not None:
                self._keep(key, as_object(value, f"'{key}'"))
        safety = get(candidate, "safetyRatings")
        if safety is not None:
            self.safety = jsonable(safety)
        reason = get(candidate, "finishReason")
        if reason is not None:
            if not isinstance(reason, str) or not reason:
                raise malformed(f"finishReason must be a non-empty string, got {quote(reason)}")
            self.finish_reason = reason
            self.queue.ended = "the finishReason"  # only usage (or an empty part) may follow (convert.ended_turn)
        message = get(candidate, "finishMessage")
        if isinstance(message, str):
            self.finish_message = message

    def _part(self, part: Mapping[str, Any]) -> None:
        signature = _signature(get(part, "thoughtSignature"))
        call = get(part, "functionCall")
        if call is not None:
            self._function_call(as_object(call, "'functionCall'"), signature)
            return
        text = get(part, "text")
        if text is not None:
            if not isinstance(text, str):
                raise malformed(f"a part's text must be a string, got {type(text).__name__}")
            if text:
                self._text("reasoning" if get(part, "thought") is True else "text", text, signature)
            elif signature is not None:  # an empty part that carries a signature (the last chunk of a stream)
                self._keep_part("thoughtSignature", part)
            return
        kind = next((key for key, value in part.items() if value is not None and key not in _PART_METADATA), None)
        if kind is not None or signature is not None:
            self._keep_part(kind or "thoughtSignature", part)

    def _keep_part(self, kind: str, part: Mapping[str, Any]) -> None:
        self.current = None  # the text after it is a new block: the part goes back between the two
        self._keep(kind, part)

    def _keep(self, kind: str, item: Mapping[str, Any]) -> None:
        self.keep(kind, self.queue.made, jsonable(item), kind)

    def _push(self, block: ProviderBlock, text: str) -> int:
        self.queue.push(block, text)
        self.blocks.append(None)
        return self.queue.made - 1

    def _entry(self, index: int) -> dict[str, Any]:
        entry = self.blocks[index]
        if entry is None:
            entry = self.blocks[index] = {}
        return entry

    def _text(self, kind: str, text: str, signature: str | None) -> None:
        block = self.current
        if block is None or block.kind != kind:
            block = self.current = ProviderBlock("text" if kind == "text" else "reasoning")
            self.current_index = self._push(block, text)
            self.length = 0
        else:
            self.queue.add(block, text)
        start = self.length
        self.length += len(text)
        if signature is not None:
            self.keeper.charge(len(signature))  # signatures are kept for replay: counted as the kept items are
            self._entry(self.current_index).setdefault("signatures", []).append([start, self.length, signature])

    def _function_call(self, call: Mapping[str, Any], signature: str | None) -> None:
        self.current = None
        name = get(call, "name")
        args = get(call, "args")
        partial = get(call, "partialArgs")
        going_on = get(call, "willContinue") is True
        if self.call is not None:
            if name is None or name == self.call.name:  # the streamed call goes on
                if args is not None:
                    raise malformed(
                        f"functionCall {quote(self.call.name)} got whole 'args' while its arguments streamed"
                    )
                self._partial(partial)
                if signature is not None and "signature" not in self._entry(self.call_index):
                    self.keeper.charge(len(signature))
                    self._entry(self.call_index)["signature"] = signature
                if not going_on:
                    self._end_call()
                return
            self._end_call()  # a call of another name: the streamed one is over
        if name is None or name == "":
            if args is not None or partial:
                raise malformed("a functionCall without a name")
            return  # the end of a streamed call that is already over
        if not isinstance(name, str):
            raise malformed(f"functionCall.name must be a string, got {type(name).__name__}")
        given = get(call, "id")
        call_id = given if isinstance(given, str) and given and given not in self.ids else self._new_id()
        self.ids.add(call_id)
        block = ProviderBlock("tool-call", call_id, name)
        self.calls += 1
        if args is not None:
            try:
                arguments = orjson.dumps(as_object(args, "'functionCall.args'")).decode()
            except TypeError as exc:
                raise malformed(f"functionCall {quote(name)}: its args are not JSON ({exc})") from exc
            index = self._push(block, arguments)
        else:
            index = self._push(block, "")
            self.call, self.call_index, self.writer = block, index, ArgumentWriter()
            self._partial(partial)
            if not going_on:
                self._end_call()
        if signature is not None:
            self.keeper.charge(len(signature))
            self._entry(index)["signature"] = signature
        if call_id == given:
            self._entry(index)["id"] = True  # Gemini's own: sent back with the function's response

    def _new_id(self) -> str:
        response = self.response.get("responseId")
        call_id = f"call_{response}_{self.calls}" if response else f"call_{self.calls}"
        while call_id in self.ids:
            call_id += "_"
        return call_id

    def _partial(self, partial: object) -> None:
        call, writer = self.call, self.writer
        assert call is not None and writer is not None
        for arg in _list(partial, "'functionCall.partialArgs'"):
            text = writer.write(as_object(arg, "a partialArgs entry"), get)
            if text:
                self.queue.add(call, text)

    def _end_call(self) -> None:
        call, writer = self.call, self.writer
        assert call is not None and writer is not None
        text = writer.finish()
        if text:
            self.queue.add(call, text)
        self.call = self.writer = None

    # --- The end --------------------------------------------------------------------------------------

    def _finish(self) -> WireFinishReason:
        feedback = self.prompt_feedback
        blocked = get(feedback, "blockReason") if feedback is not None else None
        if blocked is not None:
            detail = get(feedback, "blockReasonMessage") if feedback is not None else None
            shown = f"{blocked}: {detail}" if isinstance(detail, str) and detail else str(blocked)
            return {
                "kind": "error",
                "failure": {
                    "message": f"the provider blocked the prompt ({clip(shown, 1000)})",
                    "code": "PROMPT_BLOCKED",
                },
            }
        reason = self.finish_reason
        if reason is None:
            raise LlmError("the stream ended without a finishReason", ErrorCode.STREAM_CLOSED)
        if reason == "STOP":
            return {"kind": "stop"}
        if reason == "MAX_TOKENS":
            return {"kind": "max-tokens"}
        message = f"the provider stopped with finishReason {clip(reason, 200)!r}"
        if self.finish_message:
            message += f": {clip(self.finish_message, 1000)}"
        return {"kind": "error", "failure": {"message": message, "code": reason.upper()}}

    def close(self) -> list[StreamChunk]:
        """The stream is over: end the blocks, then ``usage`` (when the provider sent it) and ``finish``.

        Raises ``STREAM_CLOSED`` when neither a finish reason nor a blocked prompt came, ``EMPTY_RESPONSE`` for a
        ``STOP`` with no content at all. A streamed call whose last part did not say it was the last is complete
        at ``STOP``; at ``MAX_TOKENS`` or an error it is interrupted.
        """
        finish = self._finish()
        complete = finish["kind"] in ("stop", "tool-calls")
        if complete and self.call is not None:
            self.queue.ended = None  # the input is over: what closes the call's arguments is the converter's own
            self._end_call()
        response = dict(self.response)
        for key, value in (
            ("finishReason", self.finish_reason),
            ("finishMessage", self.finish_message),
            ("safetyRatings", self.safety),
            ("promptFeedback", None if self.prompt_feedback is None else jsonable(self.prompt_feedback)),
        ):
            if value is not None:
                response[key] = value
        return self.closed(finish, self.keeper.state(gemini={"blocks": list(self.blocks), "response": response}))


@sync_or_async
def from_gemini_chunks(
    chunks: Iterable[Any] | AsyncIterable[Any], *, limits: Limits | None = None
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Convert a Gemini ``streamGenerateContent`` stream: ``GenerateContentResponse`` s as dicts (camelCase as the
    API sends them, or snake_case as the SDK's ``model_dump()`` gives them) or the ``google-genai`` SDK's objects,
    sync or async (the same kind of iterator comes back).

    The block-protocol chunks come out as the input goes in; ``usage`` and ``finish`` when the input ends. Send
    the output through :func:`streamfsm.validate` / :func:`streamfsm.avalidate` to check and assemble it.

    ``limits`` (pass those the machine is given) bound the content held back until a tool call's arguments are
    complete: ``LIMIT_EXCEEDED`` once it passes them (the machine does not see it yet).
    """
    return convert(GeminiConverter(limits), chunks, EVENT, gemini_event)

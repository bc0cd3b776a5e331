"""Shared pieces of the provider converters: block numbering, held-back blocks, usage and failures.

A converter is sans-IO: it is fed one provider event at a time and returns the chunks that event
completes. Provider formats let content interleave (OpenAI streams parallel tool calls by index and may
send text between them); the block protocol under ``Policy.STRICT`` does not. The :class:`BlockQueue`
keeps one block open at a time: the first block streams live, later ones are held back (buffered) and
started, with everything they buffered as one delta, once the open block can end.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Literal, Protocol

import orjson

from ._errors import ErrorCode, LlmError
from ._wire import CallId, StreamChunk, WireBlock, WireFailure, WireFinishReason

__all__ = [
    "BlockQueue",
    "Converter",
    "ProviderBlock",
    "as_event",
    "classify_failure",
    "clip",
    "convert",
    "error_detail",
    "finish_reason",
    "malformed",
    "non_negative_int",
    "words",
]

Kind = Literal["text", "reasoning", "tool-call"]


def malformed(message: str) -> LlmError:
    """A provider sent something that is not its documented format."""
    return LlmError(message, ErrorCode.MALFORMED_RESPONSE)


#: The most of a provider's words a message keeps: an error's message, its kind (the classification reads no more).
MAX_MESSAGE = 4096


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters not kept]"


#: The largest count the protocol carries (a JSON number that is still an exact integer).
MAX_COUNT = 2**53 - 1


def event_object(data: str, who: str) -> Mapping[str, Any]:
    """One provider event's data: a JSON object, or ``MALFORMED_RESPONSE`` saying what it is instead."""
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise LlmError(f"{who}: an event is not JSON ({exc}): {data[:80]!r}", ErrorCode.MALFORMED_RESPONSE) from exc
    if not isinstance(parsed, Mapping):
        raise LlmError(f"{who}: an event is not a JSON object: {data[:80]!r}", ErrorCode.MALFORMED_RESPONSE)
    return parsed


def non_negative_int(value: object, field: str) -> int:
    """A token count: an int from 0 to 2^53-1 (an integral float is accepted: some providers send them)."""
    # The range test comes first: it also refuses NaN and infinity, on which int() would raise.
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_COUNT:
        raise malformed(f"usage field {field!r} must be an integer from 0 to 2^53-1, got {value!r}")
    if int(value) != value:
        raise malformed(f"usage field {field!r} must be an integer, got {value!r}")
    return int(value)


class ProviderBlock:
    """One content block of the provider's response, as it is being converted."""

    __slots__ = ("call_id", "depth", "ended", "index", "kind", "name", "parts", "scanned", "started", "state")

    def __init__(self, kind: Kind, call_id: str = "", name: str = "") -> None:
        self.kind: Kind = kind
        self.call_id = call_id
        self.name = name
        self.parts: list[str] = []
        self.index = -1  # the block protocol's index, once started
        self.started = False
        self.ended = False
        # Tool arguments: how far the JSON object is known to be complete (scanned lazily, only when asked).
        self.scanned = 0
        self.depth = 0
        self.state = 0  # 0 before the value, 1 in it, 2 in a string, 3 after a backslash, 4 complete

    def delta(self, text: str) -> StreamChunk:
        """The chunk carrying ``text`` for this (started) block."""
        if self.kind == "tool-call":
            return {"type": "tool-call-delta", "index": self.index, "id": CallId(self.call_id), "argumentsDelta": text}
        if self.kind == "text":
            return {"type": "text-delta", "index": self.index, "text": text}
        return {"type": "reasoning-delta", "index": self.index, "text": text}

    def opening(self, arguments: str) -> StreamChunk:
        """The first delta of a tool call: the only one that must carry the name."""
        return {
            "type": "tool-call-delta",
            "index": self.index,
            "id": CallId(self.call_id),
            "name": self.name,
            "argumentsDelta": arguments,
        }

    def arguments_complete(self) -> bool:
        """Whether the arguments so far are one complete JSON object or array.

        Scans only the parts added since the last call, so asking after every delta stays linear.
        """
        state, depth = self.state, self.depth
        parts = self.parts
        for number in range(self.scanned, len(parts)):
            for char in parts[number]:
                if state == 4:
                    if not char.isspace():
                        state = 1  # more than one value: not complete (the machine will say why)
                elif state == 2:
                    if char == "\\":
                        state = 3
                    elif char == '"':
                        state = 1
                elif state == 3 or char == '"':
                    state = 2
                elif char in "{[":
                    depth += 1
                    state = 1
                elif char in "}]":
                    depth -= 1
                    if depth == 0:
                        state = 4
        self.scanned, self.state, self.depth = len(parts), state, depth
        return state == 4

    def close(self) -> list[StreamChunk]:
        """The chunks that end this (started) block: its ``block-end`` with the complete block.

        A tool call that got no arguments first gets ``{}`` as its delta: the provider's "no arguments".
        """
        out: list[StreamChunk] = []
        text = "".join(self.parts)
        block: WireBlock
        if self.kind == "tool-call":
            if not text:
                text = "{}"
                self.parts.append(text)
                out.append(self.delta(text))
            block = {"type": "tool-call", "id": CallId(self.call_id), "name": self.name, "arguments": text}
        elif self.kind == "text":
            block = {"type": "text", "text": text}
        else:
            block = {"type": "reasoning", "text": text}
        self.ended = True
        out.append({"type": "block-end", "index": self.index, "block": block})
        return out


class BlockQueue:
    """Numbers blocks in order and keeps at most one open; later blocks wait, buffered, until it may end.

    A text or reasoning block may end as soon as another block has content. A tool call may end once its
    arguments are a complete JSON value, or when the response ends. Empty arguments become ``{}``, the
    provider's way of saying "no arguments".
    """

    __slots__ = ("blocks", "next_index", "out")

    def __init__(self) -> None:
        # Not yet ended; blocks[0] is the open one once started. A deque: ending the first of many held blocks is O(1).
        self.blocks: deque[ProviderBlock] = deque()
        self.next_index = 0
        self.out: list[StreamChunk] = []

    @property
    def count(self) -> int:
        """How many blocks were started."""
        return self.next_index

    def add(self, block: ProviderBlock, text: str) -> None:
        """Append content to ``block`` (which must be in the queue): live if it is open, buffered otherwise."""
        block.parts.append(text)
        if block.started:
            if text:
                self.out.append(block.delta(text))
            return
        self._advance()

    def push(self, block: ProviderBlock, text: str) -> None:
        """A new block, with its first content."""
        self.blocks.append(block)
        block.parts.append(text)
        self._advance()

    def last(self) -> ProviderBlock | None:
        """The most recent block still in the queue."""
        return self.blocks[-1] if self.blocks else None

    def _advance(self) -> None:
        blocks = self.blocks
        while blocks:
            head = blocks[0]
            if not head.started:
                self._start(head)
            if len(blocks) == 1:
                return
            if head.kind == "tool-call" and not head.arguments_complete():
                return
            self.out.extend(blocks.popleft().close())

    def _start(self, block: ProviderBlock) -> None:
        block.index = self.next_index
        self.next_index += 1
        block.started = True
        out = self.out
        out.append({"type": "block-start", "index": block.index, "blockType": block.kind})
        held = "".join(block.parts)
        block.parts = [held] if held else []
        if block.kind == "tool-call":
            out.append(block.opening(held))
        elif held:
            out.append(block.delta(held))

    def close_all(self, *, keep_cut_calls: bool) -> None:
        """End every block (starting held ones). With ``keep_cut_calls``, a tool call whose arguments are
        not complete (none came, or they were cut off) is left open: the response was cut (``max-tokens``, an
        error) and the call is interrupted, not a call to run."""
        while self.blocks:
            head = self.blocks[0]
            if not head.started:
                self._start(head)
            if keep_cut_calls and head.kind == "tool-call" and not head.arguments_complete():
                # Blocks after it cannot start under STRICT while it stays open; they were cut as well.
                self.blocks.clear()
                return
            self.out.extend(self.blocks.popleft().close())

    def take(self) -> list[StreamChunk]:
        """The chunks produced since the last call."""
        out, self.out = self.out, []
        return out


def finish_reason(reason: str, known: Mapping[str, WireFinishReason], field: str) -> WireFinishReason:
    """The protocol's finish for a provider's stop reason: ``known`` mapped, anything else an ``error`` whose code
    is the reason upper-cased (``content_filter`` → ``CONTENT_FILTER``)."""
    finish = known.get(reason)
    if finish is None:
        shown = clip(reason, 200)
        failure: WireFailure = {"message": f"the provider stopped with {field} {shown!r}", "code": reason.upper()}
        finish = {"kind": "error", "failure": failure}
    return finish


# --- Driving a converter ------------------------------------------------------------------------------


class Converter(Protocol):
    """What :func:`convert` drives: a sans-IO converter fed one provider event at a time."""

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        """The protocol chunks one event completes."""
        ...

    def end(self) -> list[StreamChunk]:
        """The input is over: the chunks that end the stream."""
        ...


def as_event(value: object, what: str) -> Mapping[str, Any]:
    """A provider event as a mapping: dicts as they are, SDK objects (pydantic models) dumped."""
    if isinstance(value, Mapping):
        return value
    # The openai and anthropic SDKs' to_dict() gives the API's own names and leaves out what the provider did not send.
    to_dict = getattr(value, "to_dict", None)
    model_dump = getattr(value, "model_dump", None)
    dumped: object = None
    if callable(to_dict):
        dumped = to_dict()
    elif callable(model_dump):
        dumped = model_dump(mode="json", by_alias=True)
    if isinstance(dumped, Mapping):
        return dumped
    raise malformed(f"{what} must be an object, got {type(value).__name__}")


def convert(
    converter: Converter, events: Iterable[Any] | AsyncIterable[Any], what: str
) -> Iterator[StreamChunk] | AsyncIterator[StreamChunk]:
    """Drive ``converter`` over ``events`` (sync or async, dicts or SDK objects): the same kind of iterator back."""
    if isinstance(events, AsyncIterable):
        return _convert_async(converter, events, what)
    return _convert_sync(converter, events, what)


def _convert_sync(converter: Converter, events: Iterable[Any], what: str) -> Iterator[StreamChunk]:
    for event in events:
        yield from converter.feed(as_event(event, what))
    yield from converter.end()


async def _convert_async(converter: Converter, events: AsyncIterable[Any], what: str) -> AsyncIterator[StreamChunk]:
    async for event in events:
        for chunk in converter.feed(as_event(event, what)):
            yield chunk
    for chunk in converter.end():
        yield chunk


# --- Failures ---------------------------------------------------------------------------------------

# The provider wordings DeepSeek Harness (dsh-llm 0.1.1) recognises as a context overflow and as an exhausted quota,
# each followed by Anthropic's own wording, which those do not match.
_CONTEXT = (
    re.compile(
        r"(?:^|[^a-z0-9])context[\s_-](?:length|window)[\s_-](?:exceed(?:ed|s)?|overflow(?:ed)?|limit[\s_-]exceeded)"
        r"(?:$|[^a-z0-9])",
        re.I,
    ),
    re.compile(r"\b(?:maximum|max)(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)\b", re.I),
    re.compile(
        r"\b(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:large|long)\s+for\s+(?:(?:this|the)\s+)?"
        r"(?:model(?:'s)?\s+)?context(?:\s+window)?\b",
        re.I,
    ),
    re.compile(r"\b(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+model\b", re.I),
    re.compile(
        r"\b(?:input|prompt|request|messages?)\b.{0,40}\b(?:exceed(?:s|ed)?|overflows?|is\s+larger\s+than)\b.{0,40}"
        r"\b(?:the\s+)?(?:model(?:'s)?\s+)?context(?:\s+(?:length|window))?\b",
        re.I,
    ),
    re.compile(r"\bprompt is too long: \d+ tokens > \d+ maximum\b", re.I),
)
_QUOTA = (
    re.compile(r"\binsufficient[\s_-]+(?:quota|balance|credits?)\b", re.I),
    re.compile(r"\b(?:quota|usage[\s_-]+limit)[\s_-]+(?:exceeded|exhausted|reached)\b", re.I),
    re.compile(r"\bexceed(?:ed|s)?[\s_-]+(?:(?:your|the)[\s_-]+)?(?:current[\s_-]+)?quota\b", re.I),
    re.compile(r"\b(?:balance|credits?)[\s_-]+(?:exhausted|depleted)\b", re.I),
    re.compile(r"\bout[\s_-]+of[\s_-]+(?:credits?|budget)\b", re.I),
    re.compile(r"\bcredit balance is too low\b", re.I),
)


# An error sent inside a stream has no status: its type (or code) says what it is, in these words.
_STREAM_KINDS = (
    ("rate_limit", ErrorCode.RATE_LIMIT),
    ("overloaded", ErrorCode.SERVER),
    ("server", ErrorCode.SERVER),
    ("api_error", ErrorCode.SERVER),
    ("authentication", ErrorCode.AUTH),
    ("permission", ErrorCode.AUTH),
    ("invalid_request", ErrorCode.INVALID_REQUEST),
    ("not_found", ErrorCode.INVALID_REQUEST),
    ("too_large", ErrorCode.INVALID_REQUEST),
)


def _stream_kind(text: str) -> ErrorCode | None:
    words = re.sub(r"[\s-]+", "_", text.lower())
    return next((code for word, code in _STREAM_KINDS if word in words), None)


def classify_failure(status: int | None, message: str, kind: str = "") -> ErrorCode:
    """The code of a provider failure, from its HTTP status, its message and its kind (error code and type).

    The wording wins where it is specific (a context overflow or an exhausted quota is reported as 400 or
    429 by different providers); otherwise the status decides (SPEC §3). ``status=None`` is an error the
    provider sent inside a stream: its kind decides, and only when that names nothing known, the words of its
    message (so an ``invalid_request_error`` whose message mentions a server is not a server failure).
    """
    kind, message = clip(kind), clip(message)
    detail = f"{kind} {message}"
    if any(pattern.search(detail) for pattern in _CONTEXT):
        return ErrorCode.CONTEXT_WINDOW_EXCEEDED
    if status == 402 or any(pattern.search(detail) for pattern in _QUOTA):
        return ErrorCode.QUOTA
    if status is None:
        return _stream_kind(kind) or _stream_kind(message) or ErrorCode.PROVIDER_HTTP_ERROR
    if status in (401, 403):
        return ErrorCode.AUTH
    if status == 429:
        return ErrorCode.RATE_LIMIT
    if status in (400, 413, 422):
        return ErrorCode.INVALID_REQUEST
    if status >= 500:
        return ErrorCode.SERVER
    return ErrorCode.PROVIDER_HTTP_ERROR


def error_detail(body: object) -> tuple[str, str]:
    """(message, kind) of a provider error body — ``{"error": {...}}``, ``{"message": ...}`` or ``{"error": "..."}``;
    the kind is its ``code`` and ``type``, as far as it has them. Each is cut to :data:`MAX_MESSAGE` characters."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            message = words(error.get("message") or error.get("msg") or "")
            kind = " ".join(words(error[key]) for key in ("code", "type") if error.get(key))
            return message, clip(kind)
        if isinstance(error, str):
            return clip(error), ""
    return "", ""


def words(value: object) -> str:
    """A provider's value as text for a message, cut to :data:`MAX_MESSAGE` characters (JSON for a non-string)."""
    if isinstance(value, str):
        return clip(value)
    try:
        text = orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):  # nested past orjson's depth, or not JSON at all
        text = f"<{type(value).__name__}>"
    return clip(text)

"""The flat chunk stream of seed 001: what an agent loop's consumers see, and a validator for it.

An agent loop (:class:`streamfsm.AgentLoop`) turns the block protocol into five flat chunks, exactly as the
seed names them: ``text`` (a piece of the answer), ``tool_call`` (a complete call), ``tool_result`` (what a
tool returned), ``error`` (recoverable: the attempt is retried; or not: the run ends) and ``done`` (the last
chunk). In Python they are frozen pydantic models with snake_case attributes; ``to_wire()`` gives the
seed's camelCase dict.

Theory of operation of the validator (:class:`FlatValidator`), sans-IO like the block machine: chunks go
in one at a time; each is checked against the state the earlier ones left, and the first rule it breaks
raises an :class:`LlmError` with a stable code and the chunk's position. State:

- *turns*: a turn is one model response. A turn begins at the start of the stream, after a recoverable
  ``error`` (the failed attempt is void and the turn starts again) and at the first ``text`` or
  ``tool_call`` after a ``tool_result``. Tool-call indexes count 0, 1, 2, ... within a turn.
- *calls*: every ``tool_call`` id, and whether it has been answered. A ``tool_result`` answers a call that
  came before it, once. A recoverable ``error`` voids the unanswered calls of the attempt it ends.
- *fatal*: after a non-recoverable ``error`` only ``done`` with reason ``error`` may come.
- *done*: the last chunk, exactly once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, Generator, Iterable, Mapping
from typing import Annotated, Any, Literal, NoReturn, TypeAlias

from pydantic import ConfigDict, Field, ValidationError, field_validator

from ._arguments import parse_arguments
from ._errors import ErrorCode, LlmError
from ._models import SafetyCheck, Usage, WireModel
from ._quote import quote
from ._wire import FinishKind

__all__ = [
    "DONE_REASONS",
    "DoneChunk",
    "DoneReason",
    "ErrorChunk",
    "FlatChunk",
    "FlatValidator",
    "TextChunk",
    "TokenUsage",
    "ToolCallChunk",
    "ToolResultChunk",
    "avalidate_flat",
    "done_reason",
    "error_from_wire",
    "error_to_wire",
    "parse_flat",
    "validate_flat",
]

DoneReason: TypeAlias = Literal["stop", "tool_use", "length", "cancel", "error"]

#: The ``done`` reason of each block-protocol finish kind.
DONE_REASONS: dict[FinishKind, DoneReason] = {
    "stop": "stop",
    "tool-calls": "tool_use",
    "max-tokens": "length",
    "aborted": "cancel",
    "error": "error",
}


def done_reason(kind: str) -> DoneReason:
    """The flat ``done`` reason of a finish kind; a kind the protocol does not know (HARNESS) ends a turn as stop."""
    return DONE_REASONS.get(kind, "stop")  # type: ignore[call-overload, no-any-return]


class TokenUsage(WireModel):
    """Token counts as the seed reports them: ``{promptTokens, completionTokens, totalTokens}``.

    From a block-protocol :class:`Usage` (whose counts are disjoint): ``prompt_tokens`` is the input
    with the cache reads and writes added back, ``completion_tokens`` the output (reasoning included),
    ``total_tokens`` their sum.
    """

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)

    @classmethod
    def from_usage(cls, usage: Usage) -> TokenUsage:
        """The seed's counts of one stream's usage."""
        prompt = usage.input_tokens + (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
        return cls(
            prompt_tokens=prompt, completion_tokens=usage.output_tokens, total_tokens=prompt + usage.output_tokens
        )

    def __add__(self, other: TokenUsage) -> TokenUsage:
        """Counts of two streams added up."""
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )

    def to_wire(self) -> dict[str, Any]:
        """``{"promptTokens", "completionTokens", "totalTokens"}``."""
        return {
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "totalTokens": self.total_tokens,
        }


class TextChunk(WireModel):
    """A piece of the answer's text, as the model streams it (``{type: "text", content}``)."""

    type: Literal["text"] = "text"
    content: str

    def to_wire(self) -> dict[str, Any]:
        """``{"type": "text", "content": ...}``."""
        return {"type": "text", "content": self.content}


class ToolCallChunk(WireModel):
    """A complete tool call (``{type: "tool_call", id, name, arguments, index}``).

    ``arguments`` is the raw JSON text of an object; ``index`` counts the calls of one turn from 0.
    ``safety_checks``: the checks the provider flagged the call with (its arguments' ``pending_safety_checks``,
    see :class:`SafetyCheck`); a loop runs the call only once the application acknowledged them. Empty for
    almost every call.
    """

    type: Literal["tool_call"] = "tool_call"
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str
    index: int = Field(ge=0)
    safety_checks: tuple[SafetyCheck, ...] = ()

    @field_validator("safety_checks", mode="before")
    @classmethod
    def _checks(cls, value: object) -> object:
        return tuple(value) if isinstance(value, list) else value

    def to_wire(self) -> dict[str, Any]:
        """``{"type": "tool_call", "id", "name", "arguments", "index"}``, and ``safetyChecks`` when it has any."""
        wire = {"type": "tool_call", "id": self.id, "name": self.name, "arguments": self.arguments, "index": self.index}
        if self.safety_checks:
            wire["safetyChecks"] = [check.to_wire() for check in self.safety_checks]
        return wire


class ToolResultChunk(WireModel):
    """What a tool returned (``{type: "tool_result", id, toolCallId, result, isError}``).

    ``result`` is JSON data: the tool's return value, or ``{"error": true, "message": ...}`` when the
    call failed (``is_error``).
    """

    type: Literal["tool_result"] = "tool_result"
    id: str = Field(min_length=1)
    tool_call_id: str = Field(min_length=1)
    result: Any = None
    is_error: bool = False

    def to_wire(self) -> dict[str, Any]:
        """``{"type": "tool_result", "id", "toolCallId", "result", "isError"}`` (``result`` as it is, even null)."""
        return {
            "type": "tool_result",
            "id": self.id,
            "toolCallId": self.tool_call_id,
            "result": self.result,
            "isError": self.is_error,
        }


def error_to_wire(error: LlmError) -> dict[str, Any]:
    """An :class:`LlmError` as JSON: ``{"message", "code"}`` and, when set, ``status``, ``retryAfterMs``,
    ``requestId``, ``chunkIndex``."""
    wire: dict[str, Any] = {"message": error.message, "code": str(error.code)}
    for key, value in (
        ("status", error.status),
        ("retryAfterMs", error.retry_after_ms),
        ("requestId", error.request_id),
        ("chunkIndex", error.chunk_index),
    ):
        if value is not None:
            wire[key] = value
    return wire


def error_from_wire(wire: Mapping[str, Any]) -> LlmError:
    """The :class:`LlmError` that :func:`error_to_wire` wrote (``message`` and a non-empty ``code`` required)."""
    message, code = wire.get("message"), wire.get("code")
    if not isinstance(message, str) or not isinstance(code, str) or not code:
        raise ValueError("an error needs a string 'message' and a non-empty string 'code'")
    fields: dict[str, Any] = {}
    for key, name, kind in (
        ("status", "status", int),
        ("retryAfterMs", "retry_after_ms", int),
        ("requestId", "request_id", str),
        ("chunkIndex", "chunk_index", int),
    ):
        value = wire.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"error.{key} must be {kind.__name__}, got {type(value).__name__}")
        fields[name] = value
    return LlmError(message, code, **fields)


class ErrorChunk(WireModel):
    """A failure (``{type: "error", error, recoverable, retryAfter?}``).

    ``recoverable``: the attempt failed and will be retried in ``retry_after`` milliseconds; the output the
    attempt streamed so far is void (a UI clears it) and the turn starts again. Not recoverable: the run
    ends, and only ``done`` with reason ``error`` follows. ``error`` is the :class:`LlmError` itself,
    unchanged; on the wire it is :func:`error_to_wire`'s dict.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    type: Literal["error"] = "error"
    error: LlmError
    recoverable: bool
    retry_after: int | None = Field(default=None, ge=0)

    @field_validator("error", mode="before")
    @classmethod
    def _error(cls, value: object) -> object:
        if isinstance(value, Mapping):
            return error_from_wire(value)
        return value

    def to_wire(self) -> dict[str, Any]:
        """``{"type": "error", "error": {...}, "recoverable"}``, and ``retryAfter`` (ms) when set."""
        wire: dict[str, Any] = {"type": "error", "error": error_to_wire(self.error), "recoverable": self.recoverable}
        if self.retry_after is not None:
            wire["retryAfter"] = self.retry_after
        return wire


class DoneChunk(WireModel):
    """The last chunk (``{type: "done", reason, usage?}``).

    ``reason``: ``stop``, ``tool_use`` (the run stopped at its turn limit with the model still calling
    tools), ``length`` (max tokens), ``cancel`` (aborted, timed out, over budget) or ``error``. ``usage``: the
    run's tokens as its responses reported them, a response cancelled or cut off after its ``usage`` came
    included; None when none reported any (unknown, which is not 0).
    """

    type: Literal["done"] = "done"
    reason: DoneReason
    usage: TokenUsage | None = None

    def to_wire(self) -> dict[str, Any]:
        """``{"type": "done", "reason"}`` and ``usage`` when there is one."""
        wire: dict[str, Any] = {"type": "done", "reason": self.reason}
        if self.usage is not None:
            wire["usage"] = self.usage.to_wire()
        return wire


FlatChunk: TypeAlias = Annotated[
    TextChunk | ToolCallChunk | ToolResultChunk | ErrorChunk | DoneChunk, Field(discriminator="type")
]
_FLAT_TYPES = (TextChunk, ToolCallChunk, ToolResultChunk, ErrorChunk, DoneChunk)
_BY_TYPE: dict[str, type[WireModel]] = {
    "text": TextChunk,
    "tool_call": ToolCallChunk,
    "tool_result": ToolResultChunk,
    "error": ErrorChunk,
    "done": DoneChunk,
}
#: The wire keys of each chunk type: other keys are ignored, as in the block protocol.
_KEYS: dict[str, frozenset[str]] = {
    name: frozenset(field.alias or key for key, field in cls.model_fields.items()) for name, cls in _BY_TYPE.items()
}


def parse_flat(chunk: object) -> TextChunk | ToolCallChunk | ToolResultChunk | ErrorChunk | DoneChunk:
    """A flat chunk from its wire dict (camelCase; extra keys ignored); a flat chunk object is returned as it is.

    Raises ``LlmError(INVALID_CHUNK)`` naming the field for anything else. Field types are strict: an
    ``index`` is an ``int``, not a ``bool`` nor a string.
    """
    if isinstance(chunk, _FLAT_TYPES):
        return chunk
    if not isinstance(chunk, Mapping):
        raise LlmError(f"a flat chunk must be a mapping, got {type(chunk).__name__}", ErrorCode.INVALID_CHUNK)
    kind = chunk.get("type")
    cls = _BY_TYPE.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise LlmError(
            f"unknown flat chunk type {quote(kind)}; expected one of {', '.join(_BY_TYPE)}", ErrorCode.INVALID_CHUNK
        )
    keys = _KEYS[kind]  # type: ignore[index]
    try:
        parsed = cls.model_validate({k: v for k, v in chunk.items() if k in keys}, strict=True)
    except ValidationError as exc:
        raise LlmError(f"invalid {kind} chunk: {_describe(exc)}", ErrorCode.INVALID_CHUNK) from None
    return parsed  # type: ignore[return-value]


def _describe(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in error['loc']) or '(chunk)'}: {error['msg']}" for error in exc.errors())


class FlatValidator:
    """Checks a flat chunk stream, one chunk at a time (sans-IO). See the module docstring for the rules.

    :meth:`feed` returns the chunk as an object (wire dicts are parsed) or raises :class:`LlmError` with
    ``chunk_index``; :meth:`close` says the input is over. Codes, the first that applies:
    ``CHUNK_AFTER_DONE`` → ``INVALID_CHUNK`` → ``CHUNK_AFTER_ERROR`` / ``DONE_REASON_MISMATCH`` (after a
    non-recoverable error) → ``tool_call``: ``INDEX_OUT_OF_ORDER`` → ``TOOL_CALL_CONFLICT`` →
    ``TOOL_ARGUMENTS_INVALID``; ``tool_result``: ``TOOL_RESULT_UNMATCHED`` → ``TOOL_RESULT_DUPLICATE``;
    at :meth:`close`: ``STREAM_TRUNCATED``. After an error every later call raises the same code.
    """

    __slots__ = (
        "_answered",
        "_attempt",
        "_calls",
        "_error",
        "_fatal",
        "_index",
        "_results",
        "_turn_ids",
        "_turn_open",
        "chunk_count",
        "done",
    )

    def __init__(self) -> None:
        #: Chunks accepted so far.
        self.chunk_count = 0
        #: The ``done`` chunk, once it came.
        self.done: DoneChunk | None = None
        self._error: LlmError | None = None
        self._fatal = False
        # Every tool-call id still in force -> whether a result answered it.
        self._calls: dict[str, bool] = {}
        self._answered = 0
        # The unanswered calls of the attempt in progress (voided by a recoverable error).
        self._attempt: list[str] = []
        self._turn_ids: set[str] = set()
        self._turn_open = True
        self._index = 0
        self._results: set[str] = set()

    def feed(self, chunk: object) -> TextChunk | ToolCallChunk | ToolResultChunk | ErrorChunk | DoneChunk:
        """Check one chunk (a flat chunk object or its wire dict); returns it as an object."""
        if self._error is not None:
            raise self._again()
        n = self.chunk_count
        if self.done is not None:
            self._fail(ErrorCode.CHUNK_AFTER_DONE, f"a chunk after done({self.done.reason})", n)
        try:
            flat = parse_flat(chunk)
        except LlmError as exc:
            self._fail(ErrorCode.INVALID_CHUNK, exc.message, n)
        if self._fatal:
            if not isinstance(flat, DoneChunk):
                self._fail(
                    ErrorCode.CHUNK_AFTER_ERROR,
                    f"{flat.type} after a non-recoverable error; expected done(error)",
                    n,
                )
            if flat.reason != "error":
                self._fail(
                    ErrorCode.DONE_REASON_MISMATCH,
                    f"done({flat.reason}) after a non-recoverable error; expected done(error)",
                    n,
                )
        if isinstance(flat, TextChunk):
            if not self._turn_open:
                self._new_turn()
        elif isinstance(flat, ToolCallChunk):
            self._on_call(flat, n)
        elif isinstance(flat, ToolResultChunk):
            self._on_result(flat, n)
        elif isinstance(flat, ErrorChunk):
            if flat.recoverable:
                # The attempt is void: its calls can no longer be answered, and the turn starts again.
                for call_id in self._attempt:
                    self._calls.pop(call_id, None)
                self._new_turn()
            else:
                self._fatal = True
        else:
            self.done = flat
        self.chunk_count = n + 1
        return flat

    def close(self) -> DoneChunk:
        """The input is over: the ``done`` chunk, or ``LlmError(STREAM_TRUNCATED)`` if none came."""
        if self._error is not None:
            raise self._again()
        if self.done is None:
            self._fail(
                ErrorCode.STREAM_TRUNCATED,
                f"the flat stream ended after {self.chunk_count} chunk(s) without done",
                self.chunk_count,
            )
        return self.done

    @property
    def unanswered(self) -> list[str]:
        """Ids of the tool calls in force that no result has answered yet, in the order they came."""
        return [call_id for call_id, answered in self._calls.items() if not answered]

    def _new_turn(self) -> None:
        self._turn_open = True
        self._index = 0
        self._turn_ids.clear()
        self._attempt.clear()

    def _on_call(self, call: ToolCallChunk, n: int) -> None:
        if not self._turn_open:
            self._new_turn()
        if call.index != self._index:
            self._fail(
                ErrorCode.INDEX_OUT_OF_ORDER,
                f"tool_call {quote(call.id)} has index {call.index}; expected {self._index} "
                "(calls so far in this turn)",
                n,
            )
        if call.id in self._turn_ids:
            self._fail(ErrorCode.TOOL_CALL_CONFLICT, f"tool_call id {quote(call.id)} is used twice in one turn", n)
        if self._calls.get(call.id) is False:
            self._fail(
                ErrorCode.TOOL_CALL_CONFLICT,
                f"tool_call id {quote(call.id)} is reused while its earlier call is unanswered",
                n,
            )
        _, why = parse_arguments(call.arguments)
        if why:
            self._fail(ErrorCode.TOOL_ARGUMENTS_INVALID, f"tool_call {quote(call.id)}: {why}", n)
        self._index += 1
        self._turn_ids.add(call.id)
        self._calls.pop(call.id, None)  # a reuse in a later turn: the new call is the one in force
        self._calls[call.id] = False
        self._attempt.append(call.id)

    def _on_result(self, result: ToolResultChunk, n: int) -> None:
        answered = self._calls.get(result.tool_call_id)
        if answered is None:
            self._fail(
                ErrorCode.TOOL_RESULT_UNMATCHED,
                f"tool_result {quote(result.id)} answers {quote(result.tool_call_id)}, which no earlier tool_call "
                "(still in force) has as its id",
                n,
            )
        if answered:
            self._fail(
                ErrorCode.TOOL_RESULT_DUPLICATE, f"tool_call {quote(result.tool_call_id)} was already answered", n
            )
        if result.id in self._results:
            self._fail(ErrorCode.TOOL_RESULT_DUPLICATE, f"tool_result id {quote(result.id)} is used twice", n)
        self._calls[result.tool_call_id] = True
        self._results.add(result.id)
        # Results come after a completed turn: its calls stand, and the next text or call starts a new turn.
        self._attempt.clear()
        self._turn_open = False

    def _fail(self, code: ErrorCode, message: str, n: int) -> NoReturn:
        self._error = LlmError(message, code, chunk_index=n)
        raise self._error

    def _again(self) -> LlmError:
        assert self._error is not None
        return LlmError(
            f"the flat validator already failed: {self._error.message}",
            str(self._error.code),
            chunk_index=self._error.chunk_index,
        )


def validate_flat(chunks: Iterable[object]) -> Generator[FlatChunk, None, None]:
    """Pass a flat stream through, each chunk (as an object) once it is accepted; raises :class:`LlmError`.

    At the end of the input a ``done`` must have come (``STREAM_TRUNCATED`` otherwise).
    """
    validator = FlatValidator()
    for chunk in chunks:
        yield validator.feed(chunk)
    validator.close()


async def avalidate_flat(chunks: AsyncIterable[object]) -> AsyncGenerator[FlatChunk, None]:
    """:func:`validate_flat` for an async iterable (an :class:`AgentRun`, say); closes the upstream on error."""
    validator = FlatValidator()
    iterator = aiter(chunks)
    try:
        async for chunk in iterator:
            yield validator.feed(chunk)
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
    validator.close()

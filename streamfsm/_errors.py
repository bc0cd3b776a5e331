"""The one error type of streamfsm, and the stable codes it carries (SPEC §3)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._models import LlmFailure

__all__ = ["RETRYABLE_CODES", "ErrorCode", "LlmError"]


class ErrorCode(StrEnum):
    """Every stable error code of SPEC §3. Members compare equal to their string value.

    Codes are published once and never changed: match on them, never on messages.
    """

    # Protocol codes, in the order of precedence that decides between them.
    CHUNK_AFTER_FINISH = "CHUNK_AFTER_FINISH"
    INVALID_CHUNK = "INVALID_CHUNK"
    BLOCKS_INTERLEAVED = "BLOCKS_INTERLEAVED"
    CHUNK_AFTER_USAGE = "CHUNK_AFTER_USAGE"
    INDEX_OUT_OF_ORDER = "INDEX_OUT_OF_ORDER"
    BLOCK_NOT_OPEN = "BLOCK_NOT_OPEN"
    BLOCK_TYPE_MISMATCH = "BLOCK_TYPE_MISMATCH"
    TOOL_CALL_CONFLICT = "TOOL_CALL_CONFLICT"
    BLOCK_CONTENT_MISMATCH = "BLOCK_CONTENT_MISMATCH"
    TOOL_ARGUMENTS_INVALID = "TOOL_ARGUMENTS_INVALID"
    USAGE_DUPLICATE = "USAGE_DUPLICATE"
    BLOCK_NOT_CLOSED = "BLOCK_NOT_CLOSED"
    USAGE_MISSING = "USAGE_MISSING"
    FINISH_REASON_MISMATCH = "FINISH_REASON_MISMATCH"
    STREAM_TRUNCATED = "STREAM_TRUNCATED"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    # Flat-stream codes (seed 001's text/tool_call/tool_result/error/done stream; with chunk_index). The flat
    # validator also uses INVALID_CHUNK, INDEX_OUT_OF_ORDER, TOOL_CALL_CONFLICT, TOOL_ARGUMENTS_INVALID and
    # STREAM_TRUNCATED, in the same sense as above.
    CHUNK_AFTER_DONE = "CHUNK_AFTER_DONE"
    CHUNK_AFTER_ERROR = "CHUNK_AFTER_ERROR"
    DONE_REASON_MISMATCH = "DONE_REASON_MISMATCH"
    TOOL_RESULT_UNMATCHED = "TOOL_RESULT_UNMATCHED"
    TOOL_RESULT_DUPLICATE = "TOOL_RESULT_DUPLICATE"
    # Adapter and runtime codes (no chunk_index).
    PROVIDER_HTTP_ERROR = "PROVIDER_HTTP_ERROR"
    AUTH = "AUTH"
    RATE_LIMIT = "RATE_LIMIT"
    SERVER = "SERVER"
    INVALID_REQUEST = "INVALID_REQUEST"
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    QUOTA = "QUOTA"
    TIMEOUT = "TIMEOUT"
    TRANSPORT = "TRANSPORT"
    STREAM_CLOSED = "STREAM_CLOSED"
    ABORTED = "ABORTED"
    EMPTY_RESPONSE = "EMPTY_RESPONSE"
    MALFORMED_RESPONSE = "MALFORMED_RESPONSE"
    UNSUPPORTED_OPTION = "UNSUPPORTED_OPTION"
    UNSUPPORTED_REASONING_EFFORT = "UNSUPPORTED_REASONING_EFFORT"
    INVALID_MODEL_REASONING = "INVALID_MODEL_REASONING"
    UNKNOWN = "UNKNOWN"
    #: An agent loop's budget (output tokens or text length) was passed: the run was stopped.
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"


#: Codes a caller may retry by default (SPEC §3).
RETRYABLE_CODES: frozenset[ErrorCode] = frozenset(
    {
        ErrorCode.RATE_LIMIT,
        ErrorCode.SERVER,
        ErrorCode.TIMEOUT,
        ErrorCode.TRANSPORT,
        ErrorCode.EMPTY_RESPONSE,
    }
)

_KNOWN = {c.value: c for c in ErrorCode}


class LlmError(Exception):
    """A failure with a stable ``code``.

    ``code`` is an :class:`ErrorCode` when it is one of the published codes; an adapter may
    pass any other non-empty string (for example a provider's own finish reason), which is
    kept as given. Protocol errors carry ``chunk_index``: the 0-based position of the
    offending chunk (for ``STREAM_TRUNCATED``, the number of chunks received), and the machine's view:
    ``state``, the state the chunk met, and ``expected``, the chunk types that state accepts under the
    policy (``streamfsm._machine.accepts``).
    """

    code: str
    message: str
    status: int | None
    retry_after_ms: int | None
    request_id: str | None
    chunk_index: int | None
    state: str | None
    expected: tuple[str, ...] | None

    def __init__(
        self,
        message: str,
        code: str,
        *,
        status: int | None = None,
        retry_after_ms: int | None = None,
        request_id: str | None = None,
        chunk_index: int | None = None,
        state: str | None = None,
        expected: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = _KNOWN.get(code, code)
        self.status = status
        self.retry_after_ms = retry_after_ms
        self.request_id = request_id
        self.chunk_index = chunk_index
        self.state = state
        self.expected = expected

    @property
    def retryable(self) -> bool:
        """Whether the code is one of the codes retryable by default."""
        return self.code in RETRYABLE_CODES

    @property
    def failure(self) -> LlmFailure:
        """This error as the wire's ``failure`` object (what a ``finish`` of kind ``error`` carries)."""
        from ._models import LlmFailure

        return LlmFailure(
            message=self.message or str(self.code),
            code=str(self.code),
            status=self.status if self.status is not None and 100 <= self.status <= 599 else None,
            provider_retry_after_ms=self.retry_after_ms,
            request_id=self.request_id,
        )

    @staticmethod
    def wrap(exc: BaseException, where: str) -> LlmError:
        """``exc`` as an :class:`LlmError`: itself if it is one; any other exception (a foreign one: an upstream's,
        an adapter's, a bug's) as ``UNKNOWN``, its message ``"{where}: {type name}: {text}"``, with ``exc`` as its
        ``__cause__``. ``where`` says who failed (``"the upstream failed after 3 chunk(s)"``)."""
        if isinstance(exc, LlmError):
            return exc
        error = LlmError(f"{where}: {type(exc).__name__}: {exc}", ErrorCode.UNKNOWN)
        error.__cause__ = exc
        return error

    def __str__(self) -> str:
        where = f" (chunk {self.chunk_index})" if self.chunk_index is not None else ""
        return f"[{self.code}] {self.message}{where}"

    def __repr__(self) -> str:
        fields = [f"{self.message!r}", f"code={str(self.code)!r}"]
        for name in ("status", "retry_after_ms", "request_id", "chunk_index", "state", "expected"):
            value = getattr(self, name)
            if value is not None:
                fields.append(f"{name}={value!r}")
        return f"LlmError({', '.join(fields)})"

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only fields would be lost by Exception's default pickling.
        return (
            _rebuild,
            (
                self.message,
                str(self.code),
                self.status,
                self.retry_after_ms,
                self.request_id,
                self.chunk_index,
                self.state,
                self.expected,
            ),
        )


def _rebuild(
    message: str,
    code: str,
    status: int | None,
    retry_after_ms: int | None,
    request_id: str | None,
    chunk_index: int | None,
    state: str | None = None,
    expected: tuple[str, ...] | None = None,
) -> LlmError:
    return LlmError(
        message,
        code,
        status=status,
        retry_after_ms=retry_after_ms,
        request_id=request_id,
        chunk_index=chunk_index,
        state=state,
        expected=expected,
    )

"""Classification of provider failures: what went wrong, as an :class:`ErrorCode`, with what the provider said.

One rule for every wire API and for both ways a provider fails: an HTTP response with an error status
(:func:`http_failure`: the status, ``retry-after``, the request id) and an error sent inside a stream
(:func:`stream_failure`). The code comes from :func:`classify_failure`: the wording of a context overflow, an
exhausted quota or a key not taken first, then the HTTP status (SPEC §3); a Google API error's
``google.rpc.RetryInfo`` gives the delay when no header does, and makes a "quota" a ``RATE_LIMIT`` (the provider
says when to try again). An error inside a stream that gives a status (a
``code`` or ``status`` from 100 to 599, as a number or a string of digits) is classified as an HTTP response
of that status; only one without a status is classified by the words of its type, then of its message.
Everything kept of the provider's words is cut to :data:`MAX_MESSAGE` characters (the request's secrets
redacted before the cut, :func:`clip`), and the wording is looked for in those only.
"""

from __future__ import annotations

import datetime
import email.utils
import math
import re
import time
from collections.abc import Mapping
from typing import Any

import orjson

from .._errors import ErrorCode, LlmError
from .._shape import MAX_INT
from .secrets import redact_active

__all__ = [
    "MAX_MESSAGE",
    "classify_failure",
    "clip",
    "error_detail",
    "error_status",
    "google_retry_delay_ms",
    "http_failure",
    "request_id",
    "responses_failure",
    "retry_after_ms",
    "stream_failure",
    "words",
]

#: The most of a provider's words a message keeps: an error's message, its kind (the classification reads no more).
MAX_MESSAGE = 4096


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were.

    The secrets of the request being made (:func:`.secrets.redact_active`) are replaced first: a cut must not
    keep part of one, which no redaction after it could recognise.
    """
    if len(text) <= limit:
        return text
    text = redact_active(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters not kept]"


# --- Classification -----------------------------------------------------------------------------------

# The provider wordings DeepSeek Harness (dsh-llm 0.1.1) recognises as a context overflow and as an exhausted quota,
# each followed by Anthropic's own wording, which those do not match (and, for a context overflow, Bedrock's).
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
    re.compile(r"\binput is too long for requested model\b", re.I),
    re.compile(r"\binput token count\b.{0,40}\bexceeds the maximum number of tokens allowed\b", re.I),  # Gemini
)
_QUOTA = (
    re.compile(r"\binsufficient[\s_-]+(?:quota|balance|credits?)\b", re.I),
    re.compile(r"\b(?:quota|usage[\s_-]+limit)[\s_-]+(?:exceeded|exhausted|reached)\b", re.I),
    re.compile(r"\bexceed(?:ed|s)?[\s_-]+(?:(?:your|the)[\s_-]+)?(?:current[\s_-]+)?quota\b", re.I),
    re.compile(r"\b(?:balance|credits?)[\s_-]+(?:exhausted|depleted)\b", re.I),
    re.compile(r"\bout[\s_-]+of[\s_-]+(?:credits?|budget)\b", re.I),
    re.compile(r"\bcredit balance is too low\b", re.I),
)
# A key the provider does not take, where it answers 400 rather than 401 (Gemini: "API key not valid").
_KEY = re.compile(r"\bAPI key (?:not valid|invalid|expired)\b", re.I)


# An error sent inside a stream without a status: its type (or code) says what it is, in these words.
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
    provider sent inside a stream without a status: its kind decides, and only when that names nothing known,
    the words of its message (so an ``invalid_request_error`` whose message mentions a server is not a server
    failure).
    """
    kind, message = clip(kind), clip(message)
    detail = f"{kind} {message}"
    if any(pattern.search(detail) for pattern in _CONTEXT):
        return ErrorCode.CONTEXT_WINDOW_EXCEEDED
    if status == 402 or any(pattern.search(detail) for pattern in _QUOTA):
        return ErrorCode.QUOTA
    if _KEY.search(detail):
        return ErrorCode.AUTH
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


def error_status(body: object) -> int | None:
    """The HTTP status an error body gives in its ``code`` (or else its ``status``): an integer from 100 to 599,
    or a string of those digits (``"500"``, as an OpenAI-compatible proxy sends it); None when it gives none."""
    error = body.get("error", body) if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        return None
    for key in ("code", "status"):
        value = error.get(key)
        if isinstance(value, str):
            digits = value.strip()
            # At most three digits: int() of a long string of digits is not free, and none is a status.
            value = int(digits) if 0 < len(digits) <= 3 and digits.isascii() and digits.isdigit() else None
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def stream_failure(event: Mapping[str, Any], where: str) -> LlmError:
    """The coded error of an error the provider sent inside the stream (``event`` holds it, under ``error``).

    A ``code`` (or ``status``) from 100 to 599 is its HTTP status (kept on the error), classified before any
    word of its message is; without one, its type and then its message decide (:func:`classify_failure`).
    ``where`` says how it came, after "the provider sent an error" (``"in the stream"``, ``"event"``).
    """
    message, kind = error_detail(event)
    status = error_status(event)
    error = event.get("error", event)
    delay = google_retry_delay_ms(event)
    return LlmError(
        f"the provider sent an error {where}: {message or words(error)}",
        _retryable(classify_failure(status, message, kind), delay),
        status=status,
        retry_after_ms=delay,
    )


def google_retry_delay_ms(body: object) -> int | None:
    """The delay a Google API error asks for in its ``details``: a ``google.rpc.RetryInfo``'s ``retryDelay``
    (``"34.4s"``), in milliseconds; None when it gives none."""
    error = body.get("error", body) if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    if not isinstance(details, list):
        return None
    for detail in details[:16]:
        if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = detail.get("retryDelay")
            seconds = _number(delay[:-1]) if isinstance(delay, str) and delay.endswith("s") else None
            if seconds is not None:
                return min(int(seconds * 1000), MAX_INT)
    return None


def _retryable(code: ErrorCode, delay: int | None) -> ErrorCode:
    """A quota the provider says to retry after a delay is a rate limit (Gemini's per-minute limits are worded
    "You exceeded your current quota" but come with a ``RetryInfo``)."""
    return ErrorCode.RATE_LIMIT if delay is not None and code == ErrorCode.QUOTA else code


def http_failure(
    who: str, status: int, headers: Mapping[str, str], body: bytes, reason: str, note: str = ""
) -> LlmError:
    """The coded error of an HTTP response with an error status (≥ 400), from the first bytes of its ``body``.

    Its message is the body's error message (else its text, cut to 500 characters, else the ``reason`` phrase),
    followed by ``note``; it carries ``status``, ``retry_after_ms`` and ``request_id``.
    """
    try:
        parsed: object = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], Mapping):
        parsed = parsed[0]  # a Google API answers a streamed request's error as a one-element list
    message, kind = error_detail(parsed)
    if not message:
        message = clip(body.decode("utf-8", "replace").strip(), 500) or reason
    delay = google_retry_delay_ms(parsed)
    header_delay = retry_after_ms(headers)
    return LlmError(
        f"{who}: HTTP {status}: {message}{note}",
        _retryable(classify_failure(status, message, kind), delay),
        status=status,
        retry_after_ms=delay if header_delay is None else header_delay,
        request_id=request_id(headers),
    )


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


def retry_after_ms(headers: Mapping[str, str]) -> int | None:
    """The delay a provider asks for: ``retry-after-ms``, or ``retry-after`` in seconds or as an HTTP date.

    A value that is no delay (negative, not a number) is ignored; one past the protocol's integers is capped.
    ``headers`` are looked up as given: pass ``httpx.Headers`` (or any mapping with lower-case names).
    """
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        delay = _number(raw_ms)
        if delay is not None:
            return min(int(delay), MAX_INT)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _number(raw)
    if seconds is None:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # "-0000": UTC, the sender's own zone unknown (RFC 5322 §3.3)
            when = when.replace(tzinfo=datetime.UTC)
        seconds = max(0.0, when.timestamp() - time.time())
    return min(int(seconds * 1000), MAX_INT)


def _number(text: str) -> float | None:
    """A finite number ≥ 0, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 <= value < math.inf else None  # NaN fails both tests


def request_id(headers: Mapping[str, str]) -> str | None:
    """The provider's id of the request, for support tickets."""
    value = headers.get("x-request-id") or headers.get("request-id")
    return str(value) if value else None


#: The error ``code`` s of a failed response (``ResponseError.code``) that name no kind the classification knows,
#: with the kind they are (when the error has no ``type`` of its own): the request's fault, or the server's.
_FAILED_KINDS = {
    "invalid_prompt": "invalid_request_error",
    "data_residency_mismatch": "invalid_request_error",
    "bio_policy": "invalid_request_error",
    "misalignment_policy_violation": "invalid_request_error",
    "vector_store_timeout": "server_error",
}
#: ... and the prefixes of the rest: every image error is the request's (``invalid_image_url``, ``image_too_large``).
_REQUEST_PREFIXES = ("invalid_", "image_", "empty_image", "unsupported_image", "failed_to_download_image")


def responses_failure(response: Mapping[str, Any]) -> LlmError:
    """A failed OpenAI Responses response (``response.failed``) as an error: its ``error`` classified as a stream's,
    an error ``code`` of :data:`_FAILED_KINDS` (or with a request prefix) read as the kind it is."""
    error = response.get("error")
    if not isinstance(error, Mapping):
        error = {"message": "the response failed without saying why"}
    code = error.get("code")
    if isinstance(code, str) and not error.get("type"):
        kind = _FAILED_KINDS.get(code) or ("invalid_request_error" if code.startswith(_REQUEST_PREFIXES) else None)
        if kind is not None:
            error = {**error, "type": kind}
    return stream_failure({"error": error}, "in response.failed")

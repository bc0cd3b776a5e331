"""Keys in HTTP headers: a value that cannot be sent is refused by name, and a key never reaches a message.

A header value is sent as it is given, or not at all: visible ASCII characters, with single spaces or tabs
only between them (RFC 9110 §5.5, as h11 checks it, less the obsolete non-ASCII bytes, which httpx cannot
encode). Anything else — the line break at the end of a key read from a file, a control character, a space at
either end, a non-ASCII letter — is refused before any request, with a message that says what is wrong and
where, never the value (the HTTP stack's own message quotes the whole header, key included).

What is secret: the API key, and the value of every header whose name says it carries a credential
(``authorization``, ``cookie``, names with ``key``, ``token``, ``secret``, ``auth``, ``password``). The
:class:`Redactor` replaces each of them with ``[redacted]`` in an error's message and request id, in every
form a message may quote them in (as given, stripped, escaped as ``repr`` and JSON do, and each run of 8 or
more characters between the characters a key cannot hold), and cuts the error's chain of causes when any
cause still shows one. A form shorter than 8 characters (a test key, ``api_key="k"``: too short to be a secret,
and found inside any word) is replaced only where it stands alone, with no letter, digit or underscore on
either side: ``k`` is redacted in ``key=k`` and left in ``chunk``.

A message cut short (:func:`.classify.clip`: the 4,096-, 500- and 200-character cuts of what a provider said)
could keep part of a secret that the cut splits, which no later redaction would recognise. So a request's
secrets are redacted *before* any cut: :meth:`HttpAdapter._converted <.base.HttpAdapter._converted>` makes its
:class:`Redactor` the active one (:func:`redacting`) while the request and the converter run, and ``clip``
replaces the secrets (:func:`redact_active`) in a text it is about to cut; so does every quote of a value in a
message (:func:`streamfsm._quote.quote`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping

from .._errors import ErrorCode, LlmError
from .._quote import REDACTION, redact_active

__all__ = [
    "REDACTED",
    "Redactor",
    "check_api_key",
    "check_headers",
    "is_secret_header",
    "redact_active",
    "redacting",
]

#: What a secret becomes in a message.
REDACTED = "[redacted]"

_VALUE = re.compile(r"[\x21-\x7e]+(?:[ \t]+[\x21-\x7e]+)*")
_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # an RFC 9110 token
_SECRET_NAME = re.compile(r"auth|key|token|secret|cookie|password", re.I)
_SEPARATOR = re.compile(r"[^\x21-\x7e]+")  # what splits a key into the parts a message may quote apart
_MIN_PART = 8


def _problem(value: str, *, spaces: bool) -> str | None:
    """What makes ``value`` impossible to send (in words, with its position), or None."""
    if _VALUE.fullmatch(value) and (spaces or (" " not in value and "\t" not in value)):
        return None
    for position, char in enumerate(value):
        code = ord(char)
        where = f"at position {position} of {len(value)}"
        if position == len(value) - 1:
            where += " (its last character)"
        if char in "\r\n":
            return f"a line break {where}"
        if code < 0x20 or code == 0x7F:
            return f"a control character {where}"
        if code > 0x7E:
            return f"a non-ASCII character {where}"
        if char in " \t" and (not spaces or position == 0 or position == len(value) - 1):
            return f"a space or tab {where}"
    return "nothing that can be sent"  # the empty value, where one is required


def check_api_key(key: str | None) -> None:
    """Refuse a key that cannot be sent in a header: ``LlmError(AUTH)``, naming the problem, not the key."""
    if key is None or key == "":
        return
    if not isinstance(key, str):
        raise LlmError(f"the API key must be a string, got {type(key).__name__}", ErrorCode.AUTH)
    problem = _problem(key, spaces=False)
    if problem is not None:
        hint = ", as a file read with open().read() ends: strip it" if key.rstrip("\r\n") != key else ""
        raise LlmError(f"the API key cannot be sent in an HTTP header: it holds {problem}{hint}", ErrorCode.AUTH)


def check_headers(headers: Mapping[str, str]) -> None:
    """Refuse a header whose name or value cannot be sent: ``LlmError(INVALID_REQUEST)`` naming the header."""
    for name, value in headers.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            shown = name[:40] if isinstance(name, str) else type(name).__name__
            raise LlmError(
                f"the header name {shown!r} cannot be sent: a name is letters, digits and !#$%&'*+-.^_`|~",
                ErrorCode.INVALID_REQUEST,
            )
        if not isinstance(value, str):
            raise LlmError(
                f"the header {name!r} must be a string, got {type(value).__name__}", ErrorCode.INVALID_REQUEST
            )
        problem = None if value == "" else _problem(value, spaces=True)
        if problem is not None:
            raise LlmError(
                f"the value of the header {name!r} cannot be sent in HTTP: it holds {problem}",
                ErrorCode.INVALID_REQUEST,
            )


def is_secret_header(name: str) -> bool:
    """Whether a header's name says it carries a credential."""
    return bool(_SECRET_NAME.search(name))


def _forms(secret: str) -> set[str]:
    """Every form in which a message may quote ``secret``."""
    forms = {secret, secret.strip(), repr(secret)[1:-1], json.dumps(secret)[1:-1]}
    forms.add(repr(secret.encode("utf-8", "backslashreplace"))[2:-1])
    forms.update(part for part in _SEPARATOR.split(secret) if len(part) >= _MIN_PART)
    if " " in secret.strip():  # "Bearer <token>": the token alone too
        forms.update(part for part in secret.split() if len(part) >= _MIN_PART)
    return {form for form in forms if form}


class Redactor:
    """Replaces secrets with :data:`REDACTED` in texts and errors."""

    __slots__ = ("_long", "_short", "forms")

    def __init__(self, secrets: Iterable[str | None]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if isinstance(secret, str) and secret:
                forms |= _forms(secret)
        #: Every form of every secret, the longest first: a part never splits a whole.
        self.forms = sorted(forms, key=len, reverse=True)
        self._long = [form for form in self.forms if len(form) >= _MIN_PART]  # replaced wherever they are
        short = [re.escape(form) for form in self.forms if len(form) < _MIN_PART]  # only where they stand alone
        self._short = re.compile(rf"(?<!\w)(?:{'|'.join(short)})(?!\w)") if short else None

    def text(self, text: str) -> str:
        """``text`` with every secret replaced."""
        for form in self._long:
            if form in text:
                text = text.replace(form, REDACTED)
        return text if self._short is None else self._short.sub(REDACTED, text)

    def shows(self, text: str) -> bool:
        """Whether ``text`` holds a secret."""
        return any(form in text for form in self._long) or (self._short is not None and bool(self._short.search(text)))

    def error(self, error: LlmError) -> LlmError:
        """``error`` with no secret in its message or request id; its causes dropped if any of them shows one."""
        if not self.forms:
            return error
        message = self.text(error.message)
        if message != error.message:
            error.message = message
            error.args = (message,)
        if error.request_id is not None:
            error.request_id = self.text(error.request_id)
        seen: set[int] = set()
        pending = [link for link in (error.__cause__, error.__context__) if link is not None]
        while pending:
            link = pending.pop()
            if id(link) in seen:
                continue
            seen.add(id(link))
            described = _describe(link)
            if described is None or self.shows(described):
                error.__cause__ = None
                error.__context__ = None
                error.__suppress_context__ = True
                break
            pending.extend(x for x in (link.__cause__, link.__context__) if x is not None)
        return error


@contextlib.contextmanager
def redacting(redactor: Redactor) -> Iterator[None]:
    """Make ``redactor`` the active one (:func:`redact_active`, and :func:`streamfsm._quote.quote`) for the duration
    of the block, in this context (a task's own: another request's redactor is never seen)."""
    longest = len(redactor.forms[0]) if redactor.forms else 0
    token = REDACTION.set((redactor.text, longest) if redactor.forms else None)
    try:
        yield
    finally:
        REDACTION.reset(token)


def _describe(error: BaseException) -> str | None:
    """What a traceback may show of ``error``; None when it cannot be told (a broken ``__str__``)."""
    try:
        return f"{error}\n{error!r}\n{error.args!r}"
    except Exception:
        return None

"""Parity: a streamed answer held against the non-streamed answer to the same request (:func:`parity`).

Both sides are :class:`StreamResult` s: the stream assembled by the machine, the non-streamed body read by the
wire API's reader (``from_openai_completion``, ...). What is compared, and how:

- structure: reasoning present or not, the tool calls (how many, their names in order), the finish kind, usage
  present or not;
- content: the text, and each tool call's arguments as parsed JSON (``{"a": 1}`` is ``{ "a":1 }``).

A server may answer the same request differently twice (sampling, batching). Given a second non-streamed answer
(``again``) that differs from the first in content, the content is *unknown*: content differences are not
divergences. Structure is still compared: the stream must match the structure of one of the non-streamed answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._arguments import parse_arguments
from ._models import StreamResult, ToolCallBlock

__all__ = ["Difference", "Parity", "parity"]

#: How far a compared text is shown in a difference (characters of each side).
SHOWN: int = 200


@dataclass(frozen=True, slots=True)
class Difference:
    """One field on which the streamed and the non-streamed answer differ.

    ``field`` names it (``text``, ``reasoning``, ``tool_calls``, ``tool_calls[0].name``,
    ``tool_calls[0].arguments``, ``finish``, ``usage``); ``streamed`` and ``non_streamed`` are its two values as
    JSON values (a tool call's arguments parsed; of two texts, :data:`SHOWN` characters of each from a little before
    the first that differs); ``content`` is True for a difference of content (text, arguments), False for one of
    structure; ``at`` is, for texts, the position of the first character that differs.
    """

    field: str
    streamed: Any
    non_streamed: Any
    content: bool
    at: int | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"field", "streamed", "nonStreamed", "content"}``, and ``"at"`` for texts."""
        out = {"field": self.field, "streamed": self.streamed, "nonStreamed": self.non_streamed}
        return {**out, "content": self.content} if self.at is None else {**out, "content": self.content, "at": self.at}

    def __str__(self) -> str:
        where = "" if self.at is None else f" (from character {self.at})"
        return f"{self.field}{where}: streamed {_shown(self.streamed)}, non-streamed {_shown(self.non_streamed)}"


@dataclass(frozen=True, slots=True)
class Parity:
    """What :func:`parity` found: the differences that count, and whether content could be compared.

    ``content`` is ``"same"`` or ``"differs"`` when it was compared, ``"unknown"`` when the server answered the
    request differently twice (then content differences are left out of :attr:`differences`, kept in
    :attr:`unknown`). :attr:`ok` is True when nothing differs.
    """

    differences: tuple[Difference, ...]
    content: Literal["same", "differs", "unknown"]
    unknown: tuple[Difference, ...] = ()

    @property
    def ok(self) -> bool:
        """No difference counts: the stream gave what the non-streamed request gives."""
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        """``{"content": ..., "differences": [...], "unknown": [...]}``."""
        return {
            "content": self.content,
            "differences": [d.to_json() for d in self.differences],
            "unknown": [d.to_json() for d in self.unknown],
        }


def parity(
    streamed: StreamResult, non_streamed: StreamResult, *, again: StreamResult | None = None, input_tokens: bool = False
) -> Parity:
    """Compare a streamed answer with the non-streamed answer to the same request; the differences as data.

    ``again`` is a second non-streamed answer to the same request: when it differs from ``non_streamed`` in
    content, the server is nondeterministic for this request and content parity is ``"unknown"``; the stream's
    structure must then match either non-streamed answer's. ``input_tokens=True`` compares the input token
    counts too (structure: the same prompt is the same count).
    """
    structure = _structure(streamed, non_streamed, input_tokens)
    if structure and again is not None and not _structure(streamed, again, input_tokens):
        structure = []  # the stream has the structure of the other non-streamed answer
    content = _content(streamed, non_streamed)
    if content and again is not None and _content(non_streamed, again):
        return Parity(tuple(structure), "unknown", tuple(content))
    return Parity((*structure, *content), "differs" if content else "same")


def _structure(streamed: StreamResult, other: StreamResult, input_tokens: bool) -> list[Difference]:
    found: list[Difference] = []
    if bool(streamed.reasoning) != bool(other.reasoning):
        found.append(Difference("reasoning", bool(streamed.reasoning), bool(other.reasoning), False))
    mine, theirs = streamed.tool_calls, other.tool_calls
    if len(mine) != len(theirs):
        found.append(Difference("tool_calls", _names(mine), _names(theirs), False))
    else:
        found.extend(
            Difference(f"tool_calls[{i}].name", a.name, b.name, False)
            for i, (a, b) in enumerate(zip(mine, theirs, strict=True))
            if a.name != b.name
        )
    if streamed.finish.kind != other.finish.kind:
        found.append(Difference("finish", streamed.finish.kind, other.finish.kind, False))
    if (streamed.usage is None) != (other.usage is None):
        found.append(Difference("usage", streamed.usage is not None, other.usage is not None, False))
    elif input_tokens and streamed.usage is not None and other.usage is not None:
        counted = streamed.usage.input_tokens, other.usage.input_tokens
        if counted[0] != counted[1]:
            found.append(Difference("usage.input_tokens", *counted, False))
    return found


def _content(streamed: StreamResult, other: StreamResult) -> list[Difference]:
    found: list[Difference] = []
    if streamed.text != other.text:
        found.append(_text_difference(streamed.text, other.text))
    for i, (a, b) in enumerate(zip(streamed.tool_calls, other.tool_calls, strict=False)):
        mine, theirs = _arguments(a), _arguments(b)
        if mine != theirs:
            found.append(Difference(f"tool_calls[{i}].arguments", mine, theirs, True))
    return found


def _names(calls: Sequence[ToolCallBlock]) -> list[str]:
    return [call.name for call in calls]


def _arguments(call: ToolCallBlock) -> Any:
    """The arguments parsed, or their text when they are not a JSON object."""
    parsed, _ = parse_arguments(call.arguments)
    return call.arguments if parsed is None else parsed


def _text_difference(mine: str, theirs: str) -> Difference:
    """The texts from a little before the first character that differs, :data:`SHOWN` characters of each."""
    at = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), min(len(mine), len(theirs)))
    start = max(at - 20, 0)
    return Difference("text", _cut(mine, start), _cut(theirs, start), True, at)


def _cut(text: str, start: int) -> str:
    end = start + SHOWN
    return ("\u2026" if start else "") + text[start:end] + ("\u2026" if len(text) > end else "")


def _shown(value: Any) -> str:
    import json

    return repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

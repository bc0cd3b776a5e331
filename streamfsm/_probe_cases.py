"""The probe's cases, as data: what each sends, and how it is run (:class:`ProbeCase`, :data:`PROBE_CASES`).

A case is a request (messages, system prompt, tools, tool choice, output limit, reasoning effort) and a mode:
``exchange`` streams it and sends it again non-streamed, then compares the two; ``abort`` closes the stream
after its first chunks and checks that the next request still streams whole; ``concurrent`` streams it
``streams`` times at once. The built-in cases are :data:`BUILTIN` (plain dicts, validated as the user's
``--cases FILE`` is: :func:`load_probe_cases`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._adapter import Message, ToolSchema
from ._errors import ErrorCode, LlmError

__all__ = ["BUILTIN", "PROBE_CASES", "TOOLS", "ProbeCase", "load_probe_cases"]


def _asking(name: str, description: str, parameter: str, about: str) -> ToolSchema:
    """A tool of one required string parameter, as the built-in cases' tools are."""
    properties = {parameter: {"type": "string", "description": about}}
    return ToolSchema(
        name=name,
        description=description,
        parameters={"type": "object", "properties": properties, "required": [parameter]},
    )


#: The tools the built-in cases declare; a user's case names them (``"tools": ["get_weather"]``) or gives its own.
TOOLS: Final[Mapping[str, ToolSchema]] = {
    "get_weather": _asking("get_weather", "The current weather in a city.", "city", "The city, e.g. Paris"),
    "get_time": _asking(
        "get_time", "The current local time in a time zone.", "timezone", "An IANA time zone, e.g. Europe/Paris"
    ),
}


class ProbeCase(BaseModel):
    """One case of the probe: a request, and how it is run.

    ``tools`` holds tool schemas, or names of :data:`TOOLS`; ``tool_choice`` is ``"auto"``, ``"required"`` (some
    tool) or a tool's name (that one), sent in each wire API's own form; ``temperature`` defaults to 0 (a server
    answers the same request the same way more often). ``mode``: ``exchange`` (streamed, then non-streamed, compared),
    ``abort`` (the stream closed after ``abort_after`` chunks, then the request streamed again, whole) or
    ``concurrent`` (streamed ``streams`` times at once, each checked). ``needs_reasoning``: the case is skipped,
    saying so, when neither answer has reasoning. ``input_tokens``: the two answers' input token counts are
    compared too (the same prompt is the same count, streamed or not).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    messages: tuple[Message, ...] = Field(min_length=1)
    system: str | None = None
    tools: tuple[ToolSchema, ...] = ()
    tool_choice: str | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=0.0, ge=0)
    reasoning_effort: str | None = None
    mode: Literal["exchange", "abort", "concurrent"] = "exchange"
    abort_after: int = Field(default=3, ge=1)
    streams: int = Field(default=4, ge=2, le=64)
    needs_reasoning: bool = False
    input_tokens: bool = False

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ProbeCase:
        """A case from its JSON form: ``tools`` may name :data:`TOOLS`; ``messages`` may be one string (a user turn).

        Raises ``ValueError`` saying what is wrong.
        """
        data = dict(data)
        if isinstance(data.get("messages"), str):
            data["messages"] = [{"role": "user", "content": data["messages"]}]
        tools = data.get("tools")
        if isinstance(tools, list):
            data["tools"] = [_tool(tool) for tool in tools]
        case = cls.model_validate(data)
        names = {tool.name for tool in case.tools}
        if case.tool_choice not in (None, "auto", "required", *names):
            choice = case.tool_choice
            raise ValueError(f"case {case.name!r}: tool_choice {choice!r} is not auto, required or a tool's name")
        return case


def _tool(tool: Any) -> Any:
    if isinstance(tool, str):
        if tool not in TOOLS:
            raise ValueError(f"unknown tool {tool!r}: give its schema, or one of {', '.join(TOOLS)}")
        return TOOLS[tool]
    return tool


_ASK_WEATHER: Final = "What is the weather in Paris right now? Use the tool."

#: The built-in cases, in the order they run (see docs/guides/probing.md for what each finds).
BUILTIN: Final[Sequence[Mapping[str, Any]]] = (
    {"name": "text", "description": "a short plain answer", "messages": "Say hello in five words."},
    {
        "name": "usage",
        "description": "usage in the stream, its input tokens those of the non-streamed answer",
        "messages": "Name three colours, comma-separated.",
        "input_tokens": True,
    },
    {
        "name": "tool-forced",
        "description": "one named function, forced",
        "messages": _ASK_WEATHER,
        "tools": ["get_weather"],
        "tool_choice": "get_weather",
    },
    {
        "name": "tools-auto",
        "description": "two tools, the model chooses",
        "messages": _ASK_WEATHER,
        "tools": ["get_weather", "get_time"],
        "tool_choice": "auto",
    },
    {
        "name": "tools-parallel",
        "description": "two calls in one turn",
        "messages": "Call get_weather for Paris and get_weather for Tokyo, both at once, in one turn.",
        "tools": ["get_weather", "get_time"],
        "tool_choice": "required",
    },
    {
        "name": "max-tokens",
        "description": "an answer cut by the output limit",
        "messages": "Count from 1 to 200, one number per line.",
        "max_tokens": 16,
    },
    {
        "name": "long-text",
        "description": "hundreds of tokens",
        "messages": "Write about 400 words on the history of the bicycle.",
    },
    {
        "name": "tool-result",
        "description": "a second turn after a tool result",
        "messages": [
            {"role": "user", "content": _ASK_WEATHER},
            {
                "role": "assistant",
                "blocks": [
                    {"type": "tool-call", "id": "call_probe_1", "name": "get_weather", "arguments": '{"city":"Paris"}'}
                ],
            },
            {"role": "tool", "tool_call_id": "call_probe_1", "content": '{"temperature_c": 18, "sky": "clear"}'},
        ],
        "tools": ["get_weather"],
    },
    {
        "name": "reasoning",
        "description": "an answer with reasoning (skipped where the model does not reason)",
        "messages": "Is 391 a prime number? Think it through, then answer yes or no.",
        "reasoning_effort": "low",
        "temperature": None,  # reasoning models take none (Anthropic's thinking wants its default)
        "needs_reasoning": True,
    },
    {
        "name": "abort",
        "description": "the client closes mid-stream; the next request still streams whole",
        "messages": "Write about 300 words on the history of the bicycle.",
        "mode": "abort",
    },
    {
        "name": "concurrent",
        "description": "several streams at once, each valid",
        "messages": "Say hello in five words.",
        "mode": "concurrent",
    },
)

#: The built-in cases, validated.
PROBE_CASES: Final[tuple[ProbeCase, ...]] = tuple(ProbeCase.from_data(data) for data in BUILTIN)


def load_probe_cases(path: str | Path) -> list[ProbeCase]:
    """The cases of a JSON file: a list of case objects (or ``{"cases": [...]}``), each as :meth:`ProbeCase.from_data`.

    Raises :class:`LlmError` ``INVALID_REQUEST``, in one line, for a file that cannot be read or a case that is
    not valid.
    """
    import orjson

    try:
        data = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise LlmError(f"{path}: cannot read the cases: {exc}", ErrorCode.INVALID_REQUEST) from exc
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        data = data["cases"]
    if not isinstance(data, list) or not data:
        raise LlmError(f"{path}: expected a non-empty list of cases", ErrorCode.INVALID_REQUEST)
    cases = []
    for number, item in enumerate(data):
        if not isinstance(item, dict):
            raise LlmError(f"{path}: case {number} is not an object", ErrorCode.INVALID_REQUEST)
        try:
            cases.append(ProbeCase.from_data(item))
        except (ValidationError, ValueError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else None
            why = str(exc) if first is None else f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
            raise LlmError(f"{path}: case {number}: {why}", ErrorCode.INVALID_REQUEST) from exc
    return cases

"""The Gemini API over HTTP: ``POST {base_url}/{api_version}/models/{model}:streamGenerateContent?alt=sse``.

:class:`GeminiAdapter` builds the request (``contents`` with roles ``user`` and ``model``, ``functionCall`` and
``functionResponse`` parts, ``systemInstruction``, ``tools.functionDeclarations``, ``generationConfig``), sends
the key in ``x-goog-api-key``, and converts the events with :class:`~.gemini.GeminiConverter`. An earlier model
turn goes back as Gemini sent it: its parts in order, each thought signature on its own part, and every part the
converter kept (code execution, inline data, ...) where it came (:func:`gemini_contents`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping
from typing import Any, Unpack
from urllib.parse import quote

from .._adapter import (
    AssistantMessage,
    GenerateOptions,
    ToolResultMessage,
)
from .._errors import ErrorCode, LlmError
from .._models import ReasoningBlock, TextBlock, ToolCallBlock
from .._wire import StreamChunk
from .base import HttpAdapter, HttpSettings
from .gemini import CANDIDATE_KEPT, GeminiConverter
from .replay import by_position, kept_blocks

__all__ = ["DEFAULT_THINKING_BUDGETS", "DEFAULT_THINKING_LEVELS", "GeminiAdapter", "gemini_contents"]

#: Reasoning efforts sent as ``thinkingBudget`` (tokens; 0 turns thinking off where the model allows it, -1 lets
#: the model decide).
DEFAULT_THINKING_BUDGETS: Mapping[str, int] = {"off": 0, "low": 1024, "medium": 8192, "high": 24576, "dynamic": -1}
#: Reasoning efforts sent as ``thinkingLevel`` to the models that take one (Gemini 3 and later).
DEFAULT_THINKING_LEVELS: tuple[str, ...] = ("minimal", "low", "medium", "high")


def _text_parts(text: str, entry: Mapping[str, Any], thought: bool) -> list[dict[str, Any]]:
    """A text or reasoning block as parts: cut where a signed part began and ended, its signature on it."""
    ranges = entry.get("signatures")
    cuts: list[tuple[int, int, str]] = []
    if isinstance(ranges, list):
        for item in ranges:
            if isinstance(item, list) and len(item) == 3:
                start, end, signature = item
                if type(start) is int and type(end) is int and isinstance(signature, str):
                    cuts.append((start, end, signature))

    def part(piece: str) -> dict[str, Any]:
        return {"text": piece, "thought": True} if thought else {"text": piece}

    parts: list[dict[str, Any]] = []
    at = 0
    for start, end, signature in cuts:
        if not at <= start <= end <= len(text):
            continue  # the text is not the one the signatures were given with: leave the signature out
        if start > at:
            parts.append(part(text[at:start]))
        parts.append({**part(text[start:end]), "thoughtSignature": signature})
        at = end
    if at < len(text):
        parts.append(part(text[at:]))
    return parts


def _model_parts(message: AssistantMessage, calls: dict[str, tuple[str, bool]]) -> list[dict[str, Any]]:
    """The parts of a model turn; ``calls`` learns each call's name and whether its id was Gemini's."""
    state = message.replay_state
    gemini = state.get("gemini") if isinstance(state, Mapping) else None
    ours = isinstance(gemini, Mapping)  # a turn this API made: its signatures and kept parts go back with it
    entries = gemini.get("blocks") if isinstance(gemini, Mapping) else None
    metadata: list[Any] = entries if isinstance(entries, list) else []
    kept = [item for item in kept_blocks(state) if item.type not in CANDIDATE_KEPT] if ours else []
    slots = by_position(kept, len(message.blocks))
    parts: list[dict[str, Any]] = []
    for position, block in enumerate(message.blocks):
        parts.extend(dict(item.data) for item in slots[position])
        found = metadata[position] if position < len(metadata) else None
        entry: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if isinstance(block, TextBlock):
            parts.extend(_text_parts(block.text, entry, thought=False))
        elif isinstance(block, ReasoningBlock):
            if ours:  # thought summaries go back only with the turn they came in (another API's reasoning: not)
                parts.extend(_text_parts(block.text, entry, thought=True))
        elif isinstance(block, ToolCallBlock):
            try:
                args = block.parsed_arguments
            except ValueError as exc:
                raise LlmError(f"cannot send tool call {block.id!r} back: {exc}", ErrorCode.INVALID_REQUEST) from exc
            given = entry.get("id") is True
            call: dict[str, Any] = {"name": block.name, "args": args}
            if given:
                call["id"] = block.id
            part: dict[str, Any] = {"functionCall": call}
            if isinstance(entry.get("signature"), str):
                part["thoughtSignature"] = entry["signature"]
            parts.append(part)
            calls[block.id] = (block.name, given)
    parts.extend(dict(item.data) for item in slots[-1])
    return parts


def gemini_contents(options: GenerateOptions) -> list[dict[str, Any]]:
    """The request's ``contents``: user turns, model turns (as :func:`_model_parts` rebuilds them) and function
    responses (``{"output": ...}``, or ``{"error": ...}`` for a failed call), those of one turn in one content.

    Gemini names a function response by the function's name: a tool result whose call no earlier model turn
    made is ``INVALID_REQUEST``. A call's id is sent back only where Gemini gave it.
    """
    calls: dict[str, tuple[str, bool]] = {}
    out: list[dict[str, Any]] = []
    for message in options.messages:
        if isinstance(message, AssistantMessage):
            parts = _model_parts(message, calls)
            if parts:
                out.append({"role": "model", "parts": parts})
        elif isinstance(message, ToolResultMessage):
            known = calls.get(message.tool_call_id)
            if known is None:
                raise LlmError(
                    f"a tool result answers call {message.tool_call_id!r}, which no earlier model turn made: Gemini "
                    "needs the function's name",
                    ErrorCode.INVALID_REQUEST,
                )
            name, given = known
            response: dict[str, Any] = {
                "name": name,
                "response": {"error" if message.is_error else "output": message.content},
            }
            if given:
                response["id"] = message.tool_call_id
            previous = out[-1] if out else None
            if previous is not None and previous["role"] == "user" and "functionResponse" in previous["parts"][-1]:
                previous["parts"].append({"functionResponse": response})
            else:
                out.append({"role": "user", "parts": [{"functionResponse": response}]})
        else:
            out.append({"role": "user", "parts": [{"text": message.content}]})
    return out


def _takes_budget_only(model: str) -> bool:
    """Whether ``model`` is of a family that knows ``thinkingBudget`` only (Gemini 1.x and 2.x)."""
    name = model.rsplit("/", 1)[-1]
    return name.startswith(("gemini-1", "gemini-2"))


class GeminiAdapter(HttpAdapter):
    """Streaming from the Gemini API (``POST {base_url}/{api_version}/models/{model}:streamGenerateContent?alt=sse``).

    The key goes in ``x-goog-api-key``. ``model`` is a model id (``gemini-2.5-flash``) or a resource name
    (``models/...``, ``tunedModels/...``). Tools are declared with their JSON Schema as ``schema_field``
    (``parametersJsonSchema`` by default; ``parameters`` takes Gemini's OpenAPI subset instead).

    Reasoning efforts are the model's opaque ids, sent as ``generationConfig.thinkingConfig``: for Gemini 1.x and
    2.x models (the id, after any ``models/``, starts with ``gemini-1`` or ``gemini-2``) as ``thinkingBudget`` from
    ``thinking_budgets``; for any other model (Gemini 3 and later) as ``thinkingLevel`` when the effort is one of
    ``thinking_levels``, else as ``thinkingBudget`` from ``thinking_budgets``. An effort in neither is
    ``UNSUPPORTED_REASONING_EFFORT``. With ``include_thoughts`` (the default) thinking that is not off also asks
    for ``includeThoughts``, so that the thought summaries stream as reasoning. A model whose thinking cannot be
    turned off refuses a budget of 0 itself (``INVALID_REQUEST``).

    The other arguments are the shared :class:`HttpSettings`. Supports every option but ``session_id``.
    """

    default_provider = "gemini"

    def __init__(
        self,
        *,
        base_url: str = "https://generativelanguage.googleapis.com",
        api_version: str = "v1beta",
        thinking_budgets: Mapping[str, int] | None = None,
        thinking_levels: Collection[str] = DEFAULT_THINKING_LEVELS,
        include_thoughts: bool = True,
        schema_field: str = "parametersJsonSchema",
        **settings: Unpack[HttpSettings],
    ) -> None:
        super().__init__(base_url, **settings)
        if not api_version or "/" in api_version:
            raise ValueError(f"api_version must be one path segment such as 'v1beta', got {api_version!r}")
        self.api_version = api_version
        self.thinking_budgets = dict(DEFAULT_THINKING_BUDGETS if thinking_budgets is None else thinking_budgets)
        self.thinking_levels = tuple(thinking_levels)
        self.include_thoughts = include_thoughts
        self.schema_field = schema_field

    def provider_headers(self) -> dict[str, str]:
        """The key, as ``x-goog-api-key``."""
        return {"x-goog-api-key": self.api_key} if self.api_key else {}

    def path(self, model: str) -> str:
        """The request's path (after ``base_url``) for ``model``."""
        name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        return f"/{self.api_version}/{quote(name, safe='/')}:streamGenerateContent?alt=sse"

    def thinking_config(self, model: str, effort: str | None) -> dict[str, Any] | None:
        """``generationConfig.thinkingConfig`` for ``effort`` on ``model`` (see the class docstring); None for none."""
        if effort is None:
            return None
        if not _takes_budget_only(model) and effort in self.thinking_levels:
            config: dict[str, Any] = {"thinkingLevel": effort}
            if self.include_thoughts:
                config["includeThoughts"] = True
            return config
        budget = self.thinking_budgets.get(effort)
        if budget is None:
            known = (
                sorted(self.thinking_budgets)
                if _takes_budget_only(model)
                else sorted({*self.thinking_budgets, *self.thinking_levels})
            )
            raise LlmError(
                f"{self.provider}: reasoning effort {effort!r} has no thinking budget or level for model {model!r} "
                f"(known: {known})",
                ErrorCode.UNSUPPORTED_REASONING_EFFORT,
            )
        config = {"thinkingBudget": budget}
        if budget != 0 and self.include_thoughts:
            config["includeThoughts"] = True
        return config

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body of a ``streamGenerateContent`` request for ``options``."""
        body: dict[str, Any] = {"contents": gemini_contents(options)}
        if options.system is not None:
            body["systemInstruction"] = {"parts": [{"text": options.system}]}
        if options.tools is not None:
            declarations = []
            for tool in options.tools:
                declaration: dict[str, Any] = {"name": tool.name}
                if tool.description:
                    declaration["description"] = tool.description
                declaration[self.schema_field] = tool.parameters
                declarations.append(declaration)
            body["tools"] = [{"functionDeclarations": declarations}]
        config: dict[str, Any] = {}
        if options.temperature is not None:
            config["temperature"] = options.temperature
        if options.max_tokens is not None:
            config["maxOutputTokens"] = options.max_tokens
        if options.stop is not None:
            config["stopSequences"] = list(options.stop)
        thinking = self.thinking_config(options.model, options.reasoning_effort)
        if thinking is not None:
            config["thinkingConfig"] = thinking
        if config:
            body["generationConfig"] = config
        return body

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """POST the request and convert its events (see :class:`~.gemini.GeminiConverter`).

        The options are checked at once (``UNSUPPORTED_OPTION``; ``UNSUPPORTED_REASONING_EFFORT`` for an effort
        with no thinking budget or level; ``INVALID_REQUEST`` for a tool result whose call is unknown); then the
        stream raises :class:`LlmError`: HTTP failures by status, an ``error`` object in the stream by its code,
        ``MALFORMED_RESPONSE`` for an event that is not a JSON object, ``STREAM_CLOSED`` when the body ends
        without a finish reason, ``TRANSPORT``/``TIMEOUT``, ``ABORTED``.
        """
        self.check_options(options)
        body = self.request_body(options)
        # Gemini's stream has no end marker: the body's end is the stream's, and the converter says if it was whole.
        return self._converted(GeminiConverter(options.limits), self.path(options.model), body, options.signal, None)

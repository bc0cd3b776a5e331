"""The result models the machine builds from values it has checked: without validating them again."""

from __future__ import annotations

from typing import Any, Final, TypeVar

from pydantic import BaseModel

from ._arguments import ORJSON_MAX
from ._models import (
    FinishReason,
    ImageBlock,
    ReasoningBlock,
    StreamResult,
    TextBlock,
    ToolCallBlock,
    Usage,
    _Blank,
)

__all__ = [
    "CALL_FIELDS",
    "PLAIN_FINISH",
    "construct",
    "image_block",
    "result",
    "text_block",
    "tool_call",
    "usage_model",
]

M = TypeVar("M", bound=BaseModel)
_BLANK: Final = _Blank  # a Final name is a C static in the compiled module, an import a dict lookup
#: The finish reasons without a failure: frozen, so one instance of each serves every stream. Every
#: field is given, as a failure's reason gives them (``model_fields_set`` is the same on every path).
PLAIN_FINISH: Final = {kind: FinishReason(kind=kind, failure=None) for kind in ("stop", "tool-calls", "max-tokens")}


def construct(cls: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """Build a model from values the machine has already validated, skipping validation.

    ``values`` holds every field (defaults included); other keys fill ``cached_property`` slots
    (``ToolCallBlock.parsed_arguments``). What pydantic's ``model_construct`` does, minus its
    default handling, which costs more than the validation it skips. The model is filled as a
    ``_Blank`` by plain assignments and then given its class (see ``_Blank``): one ``object.__setattr__``
    call costs more than all of those. ``fields_set`` is the class's fields (every one is given), made once.
    """
    obj: Any = _BLANK()
    obj.__dict__ = values
    # Shared by every instance of the class: frozen models never change it, and copies copy it.
    obj.__pydantic_fields_set__ = fields_set
    obj.__pydantic_extra__ = None
    obj.__pydantic_private__ = None
    obj.__class__ = cls
    return obj  # type: ignore[no-any-return]


def usage_model(inputs: Any, outputs: Any, cache_read: Any, cache_write: Any, reasoning: Any) -> Usage:
    """The :class:`Usage` of a usage chunk's checked counts (ints; None for one not given), passed as they are.

    Its fields are a copy of a template with every field (one copy of a small dict costs less than building it key
    by key), the counts given set over it."""
    values = _USAGE.copy()
    values["input_tokens"] = inputs
    values["output_tokens"] = outputs
    if cache_read is not None:
        values["cache_read_tokens"] = cache_read
    if cache_write is not None:
        values["cache_write_tokens"] = cache_write
    if reasoning is not None:
        values["reasoning_tokens"] = reasoning
    return construct(Usage, values, _USAGE_FIELDS)


def text_block(kind: str, text: str) -> TextBlock | ReasoningBlock:
    """The completed text or reasoning block (``kind``) of ``text``."""
    if kind == "text":
        return construct(TextBlock, {"type": "text", "text": text}, _TEXT_FIELDS)
    return construct(ReasoningBlock, {"type": "reasoning", "text": text}, _TEXT_FIELDS)


def result(blocks: list[Any], usage: Any, finish: Any, interrupted: list[Any], replay_state: Any) -> StreamResult:
    """The :class:`StreamResult` of a finished stream."""
    values = {
        "blocks": blocks,
        "usage": usage,
        "finish": finish,
        "interrupted": interrupted,
        "replay_state": replay_state,
    }
    return construct(StreamResult, values, _RESULT_FIELDS)


def tool_call(cid: str, name: str, arguments: str, parsed: dict[str, Any] | None) -> ToolCallBlock:
    """The completed tool call, with the arguments the machine parsed to check them (None: not a JSON object,
    kept raw).

    Big arguments (over ``ORJSON_MAX`` characters) are not kept parsed: the raw text and the parsed
    object would double the memory a big call holds. ``parsed_arguments`` parses them on first use.
    """
    values: dict[str, Any] = {"type": "tool-call", "id": cid, "name": name, "arguments": arguments}
    if parsed is not None and len(arguments) <= ORJSON_MAX:
        values["parsed_arguments"] = parsed
    return construct(ToolCallBlock, values, CALL_FIELDS)


def image_block(attachment: Any) -> ImageBlock:
    """An image block of its (checked, copied) attachment."""
    return construct(ImageBlock, {"type": "image", "attachment": attachment}, _IMAGE_FIELDS)


#: The fields of a usage, as a template to copy (most usage chunks give two counts of five).
_USAGE: Final[dict[str, Any]] = dict.fromkeys(
    ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
)
#: The fields sets of the models built for every stream (as C statics: no lookup).
_TEXT_FIELDS: Final = set(TextBlock.__pydantic_fields__)
_USAGE_FIELDS: Final = set(Usage.__pydantic_fields__)
_RESULT_FIELDS: Final = set(StreamResult.__pydantic_fields__)
CALL_FIELDS: Final = set(ToolCallBlock.__pydantic_fields__)
_IMAGE_FIELDS: Final = set(ImageBlock.__pydantic_fields__)

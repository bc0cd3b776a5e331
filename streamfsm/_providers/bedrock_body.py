"""A non-streamed Bedrock ``Converse`` answer read as a :class:`~streamfsm.StreamResult`.

``converse(...)`` answers with ``output.message.content`` (Converse ``ContentBlock`` s), ``stopReason`` and
``usage``; ``converse_stream(...)`` streams the same blocks as ``contentBlockStart``/``Delta``/``Stop`` events.
The body is given as that stream, each block whole in one delta (a tool call's ``input`` as its JSON text), and
converted by :class:`BedrockConverter`: the result is the stream's, by the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from .._config import Limits
from .._models import StreamResult
from .bedrock import BedrockConverter, client_failure
from .convert import BodyReader, answer, as_object, malformed

__all__ = ["converse_chunks", "converse_events", "from_bedrock_response"]


def _json_text(value: object, what: str) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError as exc:  # orjson.JSONEncodeError is one
        raise malformed(f"{what} is not JSON data ({exc})") from exc


def _block_events(index: int, block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One ``ContentBlock`` as the ``contentBlockStart`` (where the stream has one) and ``contentBlockDelta`` s its
    stream would have sent; the stop is added by the caller."""
    out: list[dict[str, Any]] = []

    def start(value: Mapping[str, Any]) -> None:
        out.append({"contentBlockStart": {"contentBlockIndex": index, "start": value}})

    def delta(value: Mapping[str, Any]) -> None:
        out.append({"contentBlockDelta": {"contentBlockIndex": index, "delta": value}})

    for kind, value in block.items():
        if kind == "text":
            delta({"text": value})
        elif kind == "toolUse":
            call = as_object(value, "a toolUse block")
            start({"toolUse": {key: item for key, item in call.items() if key != "input"}})
            given = call.get("input")
            if given is not None and given != {}:
                delta({"toolUse": {"input": _json_text(given, "a toolUse input")}})
        elif kind == "reasoningContent":
            reasoning = as_object(value, "a reasoningContent block")
            text = reasoning.get("reasoningText")
            if text is not None:
                text = as_object(text, "reasoningContent.reasoningText")
                delta({"reasoningContent": {"text": text.get("text")}})
                if text.get("signature") is not None:
                    delta({"reasoningContent": {"signature": text["signature"]}})
            if reasoning.get("redactedContent") is not None:
                delta({"reasoningContent": {"redactedContent": reasoning["redactedContent"]}})
        elif kind == "citationsContent":  # the stream's text deltas, then one citation delta each
            cited = as_object(value, "a citationsContent block")
            parts = cited.get("content") or []
            text = (
                "".join(p.get("text", "") for p in parts if isinstance(p, Mapping)) if isinstance(parts, list) else ""
            )
            delta({"text": text})
            for citation in cited.get("citations") or []:
                delta({"citation": citation})
        elif kind == "toolResult":
            result = as_object(value, "a toolResult block")
            start({"toolResult": {key: item for key, item in result.items() if key != "content"}})
            delta({"toolResult": result.get("content") or []})
        else:  # image, and kinds added since: kept whole, as the stream's start of such a block is
            start({kind: value})
    return out


def converse_events(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ConverseStream events a ``converse`` answer would have been streamed as.

    A botocore error response (``{"Error": {"Code", "Message"}, ...}``, what a ``ClientError`` holds) raises its
    coded :class:`~streamfsm.LlmError`, as the stream's exception event does.
    """
    failure = client_failure(body)
    if failure is not None:
        raise failure
    output = as_object(body.get("output"), "a Converse body's 'output'")
    message = as_object(output.get("message"), "a Converse body's 'output.message'")
    content = message.get("content")
    if not isinstance(content, list):
        raise malformed(f"a Converse body's 'output.message.content' must be a list, got {type(content).__name__}")
    events: list[Mapping[str, Any]] = [{"messageStart": {"role": message.get("role", "assistant")}}]
    for index, block in enumerate(content):
        events += _block_events(index, as_object(block, "a content block"))
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
    stop: dict[str, Any] = {"stopReason": body.get("stopReason")}
    if body.get("additionalModelResponseFields") is not None:
        stop["additionalModelResponseFields"] = body["additionalModelResponseFields"]
    events.append({"messageStop": stop})
    metadata = {key: body[key] for key in ("usage", "metrics", "trace", "performanceConfig") if key in body}
    if metadata:
        events.append({"metadata": metadata})
    return events


#: ``converse_chunks(body, limits)``: the chunks of the converse answer, as its stream would convert to them.
converse_chunks: Final = BodyReader(BedrockConverter, converse_events, "a Converse body")


def from_bedrock_response(body: Any, *, limits: Limits | None = None) -> StreamResult:
    """Read a non-streamed Bedrock ``converse`` answer into the :class:`~streamfsm.StreamResult` its stream would
    assemble to.

    ``body``: what boto3's ``converse(...)`` returns (a dict; blobs as bytes, or as base64 in the JSON form):
    ``output.message.content``, ``stopReason``, ``usage``. Its content blocks are read as
    :func:`from_bedrock_events` reads streamed ones: ``text`` is text, ``reasoningContent.reasoningText``
    reasoning (its signature in the replay state), ``toolUse`` a tool call (its ``input`` as the arguments,
    compact JSON), ``citationsContent`` text with its citations kept; ``redactedContent``, a server tool's
    ``toolUse`` and ``toolResult``, ``image`` and kinds added since are kept for replay. ``stopReason`` and
    ``usage`` are mapped as in a stream.

    Raises :class:`~streamfsm.LlmError`: ``MALFORMED_RESPONSE`` for a body that is not one (no
    ``output.message.content``, no ``stopReason``), the code of the exception for a botocore error response
    (``{"Error": {"Code": "ThrottlingException", ...}}``), ``EMPTY_RESPONSE`` for an ``end_turn`` with no content,
    and the machine's codes (``LIMIT_EXCEEDED`` past ``limits``).
    """
    return answer(converse_chunks(body, limits), limits)

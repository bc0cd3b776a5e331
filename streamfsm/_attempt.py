"""One model request, sans-IO: the response's block-protocol chunks in, flat chunks and tool calls out.

An :class:`Attempt` feeds each chunk to a machine of its own (every chunk validated, blocks assembled) and
says what the consumer sees of it (:meth:`Attempt.step`). It also names the response's tool calls: the id
the model gave a call, unless that is empty or already used in the run (the conversation's calls, and the
calls before it in this response), in which case the loop gives the call an id of its own,
``call_<turn>_<index>`` (``index``: the call's position in the turn, from 0; ``_2``, ``_3``, ... added if the
model used that id too). The flat ``tool_call`` and ``tool_result`` chunks, the tool's run and the
conversation sent back on the next request (the assistant message's call and its tool result) all use it.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

from ._adapter import AssistantMessage
from ._config import Limits, Policy
from ._errors import ErrorCode, LlmError
from ._flat import TextChunk, ToolCallChunk
from ._machine import StreamAssembler
from ._models import LlmFailure, StreamResult, ToolCallBlock, Usage
from ._tool_calls import check_arguments, safety_checks
from ._tool_phase import TurnCall
from ._wire import CallId

__all__ = ["Attempt", "finish_error"]


class Attempt:
    """Attempt ``number`` at turn ``turn``'s response; ``taken``: the call ids the run has used (read only)."""

    __slots__ = ("_ids", "_taken", "asm", "calls", "failure", "feed", "number", "result", "streamed", "turn")

    def __init__(self, policy: Policy | str, limits: Limits, turn: int, number: int, taken: Container[str]) -> None:
        # Arguments that are not a JSON object are the model's mistake, not a broken stream: kept raw, so that
        # the call gets an error result (check_arguments) and the model can try again.
        self.asm = StreamAssembler(policy, limits, raw_arguments=True)
        self.feed = self.asm.feed
        self.turn = turn
        self.number = number
        # Text and reasoning blocks open now that have streamed some text (a block without deltas counts at its end).
        self.streamed: set[int] = set()
        #: The response's completed tool calls, in the order they completed (``calls[n].index == n``).
        self.calls: list[TurnCall] = []
        #: The assembled response, once the stream completed (its finish may still be an error).
        self.result: StreamResult | None = None
        #: Why the attempt failed: the adapter raised, the stream broke the protocol, or it finished with ``error``.
        self.failure: LlmError | None = None
        self._taken = taken
        self._ids: set[str] = set()

    def step(self, chunk: Mapping[str, Any]) -> TextChunk | ToolCallChunk | int | None:
        """Feed one chunk (raises the machine's :class:`LlmError`); the flat chunk it makes, if any, or the
        number of reasoning characters it streamed (reasoning is not in the flat stream, but in the budget)."""
        self.feed(chunk)
        kind = chunk["type"]
        if kind == "text-delta" or kind == "reasoning-delta":
            text = chunk["text"]
            if text:
                self.streamed.add(chunk["index"])
                return TextChunk(content=text) if kind == "text-delta" else len(text)
            return None
        if kind == "block-end":
            block = chunk["block"]
            block_type = block["type"]
            if block_type == "text" or block_type == "reasoning":
                index = chunk["index"]
                if index in self.streamed:
                    self.streamed.discard(index)
                elif block["text"]:
                    return TextChunk(content=block["text"]) if block_type == "text" else len(block["text"])
            elif block_type == "tool-call":
                return self._call(chunk["index"], block)
        return None

    def complete(self) -> None:
        """The stream ended: assemble the response (raises the machine's :class:`LlmError` if it is cut short).
        A finish of kind ``error`` is the attempt's failure (its ``failure`` as the error)."""
        result = self.result = self.asm.close()
        if result.finish.kind == "error":
            self.failure = finish_error(result.finish.failure, ErrorCode.UNKNOWN)

    @property
    def usage(self) -> Usage | None:
        """The usage the response sent, whether or not it completed (None: none came, so it is unknown)."""
        if self.result is not None:
            return self.result.usage
        return self.asm.snapshot().usage  # cut off, failed or stopped: what was received all the same

    def turn_calls(self) -> list[TurnCall]:
        """The completed calls in call order (their blocks' order), as the turn's tool phase runs them."""
        return sorted(self.calls, key=lambda call: call.block_index)

    def message(self) -> AssistantMessage:
        """The completed response as the conversation keeps it: each call with its id and its kept arguments."""
        assert self.result is not None
        message = AssistantMessage.from_result(self.result)
        calls = iter(self.turn_calls())
        blocks = tuple(
            _as_kept(block, next(calls)) if isinstance(block, ToolCallBlock) else block for block in message.blocks
        )
        return message.model_copy(update={"blocks": blocks})

    def _call(self, block_index: int, block: Mapping[str, Any]) -> ToolCallChunk:
        index = len(self.calls)
        call_id = self._name(block["id"], index)
        arguments, refusal = check_arguments(block["name"], block["arguments"])
        checks, unreadable = safety_checks(arguments)
        if refusal is None and unreadable is not None:
            refusal = f"not run: the provider flagged this call with safety checks, but {unreadable}"
        call = ToolCallBlock(id=CallId(call_id), name=block["name"], arguments=arguments)
        self.calls.append(TurnCall(index, block_index, call, refusal, checks))
        return ToolCallChunk(id=call_id, name=block["name"], arguments=arguments, index=index, safety_checks=checks)

    def _name(self, proposed: str, index: int) -> str:
        """The id of the call at ``index``: ``proposed``, unless it is empty or used (see the module docstring)."""
        used = self._ids
        call_id = proposed
        if not call_id or call_id in self._taken or call_id in used:
            call_id = own = f"call_{self.turn}_{index}"
            n = 1
            while call_id in self._taken or call_id in used:
                n += 1
                call_id = f"{own}_{n}"
        used.add(call_id)
        return call_id


def finish_error(failure: LlmFailure | None, default: ErrorCode) -> LlmError:
    """The error a finish of kind ``error`` or ``aborted`` stands for: its ``failure``, else ``default``."""
    if failure is None:
        return LlmError(f"the stream finished with {default.value}", default)
    return LlmError(
        failure.message,
        failure.code,
        status=failure.status,
        retry_after_ms=failure.provider_retry_after_ms,
        request_id=failure.request_id,
    )


def _as_kept(block: ToolCallBlock, call: TurnCall) -> ToolCallBlock:
    kept = call.block
    if kept.id == block.id and kept.arguments == block.arguments and kept.name == block.name:
        return block
    return kept

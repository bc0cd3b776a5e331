"""What the agent-loop tests share: a scripted adapter, a fake clock, turn builders, a runner.

Every test runs in no real time: the adapter yields scripted chunks (no network), back-off sleeps go to
the fake clock, and the only real waits are the millisecond timeouts of the timeout tests.
"""

from __future__ import annotations

import asyncio
import json
import threading
import traceback
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import streamfsm as sf

Chunk = dict[str, Any]


# -- block-protocol turns -----------------------------------------------------------------------


def usage(input_tokens: int = 10, output_tokens: int = 5) -> Chunk:
    """A ``usage`` chunk."""
    return {"type": "usage", "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens}}


def finish(kind: str, failure: dict[str, Any] | None = None) -> Chunk:
    """A ``finish`` chunk."""
    reason: dict[str, Any] = {"kind": kind}
    if failure is not None:
        reason["failure"] = failure
    return {"type": "finish", "reason": reason}


class Turn:
    """Builds one response's chunks, blocks numbered as they are added."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.index = 0

    def text(self, *pieces: str) -> Turn:
        """A text block streamed in ``pieces``."""
        n = self.index
        self.index += 1
        self.chunks.append({"type": "block-start", "index": n, "blockType": "text"})
        for piece in pieces:
            self.chunks.append({"type": "text-delta", "index": n, "text": piece})
        self.chunks.append({"type": "block-end", "index": n, "block": {"type": "text", "text": "".join(pieces)}})
        return self

    def reasoning(self, text: str) -> Turn:
        """A reasoning block in one delta."""
        n = self.index
        self.index += 1
        self.chunks += [
            {"type": "block-start", "index": n, "blockType": "reasoning"},
            {"type": "reasoning-delta", "index": n, "text": text},
            {"type": "block-end", "index": n, "block": {"type": "reasoning", "text": text}},
        ]
        return self

    def call(self, call_id: str, name: str, arguments: dict[str, Any] | str) -> Turn:
        """A tool-call block whose arguments come in two deltas."""
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        n = self.index
        self.index += 1
        half = len(raw) // 2
        self.chunks += [
            {"type": "block-start", "index": n, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": n, "id": call_id, "name": name, "argumentsDelta": raw[:half]},
            {"type": "tool-call-delta", "index": n, "id": call_id, "argumentsDelta": raw[half:]},
            {
                "type": "block-end",
                "index": n,
                "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": raw},
            },
        ]
        return self

    def end(self, kind: str = "stop", *, output_tokens: int = 5, input_tokens: int = 10) -> list[Chunk]:
        """The chunks, with usage and a finish."""
        return [*self.chunks, usage(input_tokens, output_tokens), finish(kind)]


#: The seed's two parallel file reads as the flat stream shows them (``to_wire()``): both calls, then both
#: results of a ``file_edit`` tool that answers ``{"content": "export const name = '<path>'"}``.
SEED_READS: list[Chunk] = [
    {
        "type": "tool_call",
        "id": "call_1",
        "name": "file_edit",
        "arguments": '{"action": "read", "path": "src/index.ts"}',
        "index": 0,
    },
    {
        "type": "tool_call",
        "id": "call_2",
        "name": "file_edit",
        "arguments": '{"action": "read", "path": "src/app.ts"}',
        "index": 1,
    },
    {
        "type": "tool_result",
        "id": "result_1",
        "toolCallId": "call_1",
        "result": {"content": "export const name = 'src/index.ts'"},
        "isError": False,
    },
    {
        "type": "tool_result",
        "id": "result_2",
        "toolCallId": "call_2",
        "result": {"content": "export const name = 'src/app.ts'"},
        "isError": False,
    },
]


def answer(*pieces: str, output_tokens: int = 5) -> list[Chunk]:
    """A response that is only text, finishing with ``stop``."""
    return Turn().text(*pieces).end("stop", output_tokens=output_tokens)


def calls(*items: tuple[str, str, dict[str, Any] | str], text: str | None = None) -> list[Chunk]:
    """A response that calls tools, finishing with ``tool-calls``."""
    turn = Turn()
    if text is not None:
        turn.text(text)
    for call_id, name, arguments in items:
        turn.call(call_id, name, arguments)
    return turn.end("tool-calls")


# -- the scripted adapter -----------------------------------------------------------------------


@dataclass
class Fail:
    """An attempt that yields ``after`` (chunks) and then raises ``error``."""

    error: BaseException
    after: Sequence[Item] = ()


@dataclass
class Hang:
    """An attempt that yields ``before`` and then waits until it is cancelled (``released`` is never set)."""

    before: Sequence[Item] = ()
    released: asyncio.Event | None = None


@dataclass
class Tick:
    """Inside a scripted response: move the fake clock by ``seconds`` before the next chunk."""

    seconds: float


@dataclass
class WaitFor:
    """Inside a scripted response: wait until ``event`` is set before the next chunk."""

    event: asyncio.Event


Item = Chunk | Tick | WaitFor
Script = list[Item] | list[Chunk] | Fail | Hang


@dataclass
class ScriptedAdapter(sf.LlmAdapter):
    """An adapter whose every request gets the next scripted response (no network).

    Records each request's options, how many attempts it served, and how each stream ended (``closed``:
    the adapter's ``finally`` ran; ``cancelled``: it saw a ``CancelledError``).
    """

    script: list[Script] = field(default_factory=list)
    clock: FakeClock | None = None
    requests: list[sf.GenerateOptions] = field(default_factory=list)
    closed: int = 0
    cancelled: int = 0
    supported_options: ClassVar[frozenset[str]] = frozenset({"system", "tools", "temperature", "max_tokens", "signal"})

    def __hash__(self) -> int:
        return id(self)

    async def stream(self, options: sf.GenerateOptions) -> AsyncIterator[sf.StreamChunk]:
        """The next scripted response, one chunk per event-loop step."""
        self.requests.append(options)
        if not self.script:
            raise AssertionError("the script has no response left")
        step = self.script.pop(0)
        try:
            if isinstance(step, Fail):
                async for chunk in self._play(step.after):
                    yield chunk
                raise step.error
            if isinstance(step, Hang):
                async for chunk in self._play(step.before):
                    yield chunk
                await (step.released or asyncio.Event()).wait()
                return
            async for chunk in self._play(step):
                yield chunk
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.closed += 1

    async def _play(self, items: Iterable[Any]) -> AsyncIterator[sf.StreamChunk]:
        for item in items:
            if isinstance(item, Tick):
                assert self.clock is not None
                self.clock.now += item.seconds
                continue
            if isinstance(item, WaitFor):
                await item.event.wait()
                continue
            await asyncio.sleep(0)
            yield item


class FakeClock:
    """An injected clock (seconds) and sleep: sleeping moves the clock at once and records the delay."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def make_loop(
    script: Iterable[Script],
    tools: Iterable[sf.Tool | Callable[..., Any]] = (),
    *,
    clock: FakeClock | None = None,
    **kwargs: Any,
) -> tuple[sf.AgentLoop, ScriptedAdapter, FakeClock]:
    """An agent loop over a scripted adapter and a fake clock."""
    clock = clock or FakeClock()
    adapter = ScriptedAdapter(list(script), clock)
    kwargs.setdefault("model", "scripted-model")
    loop = sf.AgentLoop(adapter, tools, clock=clock, sleep=clock.sleep, **kwargs)
    return loop, adapter, clock


def run(coro: Any) -> Any:
    """Run a coroutine to the end (pytest-asyncio is not used here)."""
    return asyncio.run(coro)


async def collect(agent_run: sf.AgentRun) -> list[Any]:
    """Every chunk of a run, each checked by the flat validator as it comes."""
    validator = sf.FlatValidator()
    out = []
    async for chunk in agent_run:
        out.append(validator.feed(chunk))
    validator.close()
    return out


def wire(chunks: Iterable[Any]) -> list[dict[str, Any]]:
    """``to_wire()`` of every chunk."""
    return [chunk.to_wire() for chunk in chunks]


def kinds(chunks: Iterable[Any]) -> list[str]:
    """The type of every chunk."""
    return [chunk.type for chunk in chunks]


def run_bounded(coro_fn: Callable[[], Any], bound: float = 20.0, on_hang: Callable[[], Any] | None = None) -> Any:
    """Run ``coro_fn()`` with ``asyncio.run`` in a thread of its own, and return what it returns.

    For runs that used to hang or to kill the program: a run still going after ``bound`` seconds (a generous
    bound, never reached by a run that works) fails the test instead of hanging it (``on_hang`` is called
    first, to let the run's tools end); an exception the run raised, a ``KeyboardInterrupt`` or
    ``SystemExit`` included, fails it as an ``AssertionError`` instead of stopping the test session. The event
    loop's thread is not the main thread here.
    """
    outcome: list[Any] = []

    def main() -> None:
        try:
            outcome.append((True, asyncio.run(coro_fn())))
        except BaseException as exc:
            outcome.append((False, exc))

    thread = threading.Thread(target=main, name="run_bounded", daemon=True)
    thread.start()
    thread.join(bound)
    if thread.is_alive():
        if on_hang is not None:
            on_hang()
        raise AssertionError(f"the run did not end within {bound:g} s: it hangs")
    ok, value = outcome[0]
    if not ok:
        # Not chained: pytest would treat a chained KeyboardInterrupt as the user's own.
        raise AssertionError("the run raised:\n" + "".join(traceback.format_exception(value)))
    return value

"""``streamfsm demo``: the seed example through the agent loop, no network needed.

A scripted adapter streams the seed articles' example (a text block, then a ``bash`` tool call) through
:class:`AgentLoop`: the text appears as it arrives, the tool call is executed, the model answers, usage and
finish are shown. Then an adapter that breaks the protocol is run, and the machine rejects it with its coded
error. With ``--base-url URL --model NAME`` and a key in ``STREAMFSM_API_KEY`` (or ``OPENAI_API_KEY`` /
``DEEPSEEK_API_KEY``) the same loop talks to a real OpenAI-compatible endpoint instead. Its options are
declared on the command's ``demo`` subcommand (``streamfsm._cli.build_parser``), which calls :func:`run`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

import streamfsm as sf
from streamfsm._check import printable

_USAGE: dict[str, Any] = {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 50}}

#: The seed articles' example: a text block, then a tool call whose arguments arrive in pieces.
EXAMPLE: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "Let me check "},
    {"type": "text-delta", "index": 0, "text": "the project files."},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Let me check the project files."}},
    {"type": "block-start", "index": 1, "blockType": "tool-call"},
    {"type": "tool-call-delta", "index": 1, "id": "call-123", "name": "bash", "argumentsDelta": '{"comm'},
    {"type": "tool-call-delta", "index": 1, "id": "call-123", "argumentsDelta": 'and":"ls streamfsm'},
    {"type": "tool-call-delta", "index": 1, "id": "call-123", "argumentsDelta": '"}'},
    {
        "type": "block-end",
        "index": 1,
        "block": {"type": "tool-call", "id": "call-123", "name": "bash", "arguments": '{"command":"ls streamfsm"}'},
    },
    _USAGE,
    {"type": "finish", "reason": {"kind": "tool-calls"}},
]

#: The model's answer once it has the tool's result.
ANSWER: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "The package is "},
    {"type": "text-delta", "index": 0, "text": "in streamfsm/: the machine, "},
    {"type": "text-delta", "index": 0, "text": "the adapters and the agent loop."},
    {
        "type": "block-end",
        "index": 0,
        "block": {
            "type": "text",
            "text": "The package is in streamfsm/: the machine, the adapters and the agent loop.",
        },
    },
    {"type": "usage", "usage": {"inputTokens": 180, "outputTokens": 20}},
    {"type": "finish", "reason": {"kind": "stop"}},
]

#: The example with a mistake adapters make: a delta addressed to a block that already ended.
BROKEN: list[dict[str, Any]] = [*EXAMPLE[:4], {"type": "text-delta", "index": 0, "text": "!"}, *EXAMPLE[4:]]


class ScriptedAdapter(sf.LlmAdapter):
    """Plays recorded responses, one per request, pausing between chunks as a provider would."""

    supported_options = frozenset({"system", "tools", "signal"})

    def __init__(self, responses: list[list[dict[str, Any]]], delay: float) -> None:
        self.responses = list(responses)
        self.delay = delay

    async def stream(self, options: sf.GenerateOptions) -> AsyncIterator[sf.StreamChunk]:
        """The next recorded response."""
        for chunk in self.responses.pop(0):
            if self.delay:
                await asyncio.sleep(self.delay)
            yield chunk  # type: ignore[misc]


#: The package's folder: the demo's "project" is the package itself, wherever it is installed (a checkout, or
#: site-packages, whose other folders are nobody's business): ``ls`` shows ``streamfsm``, and ``ls streamfsm`` and
#: the folders under it list what they hold.
PACKAGE = Path(__file__).resolve().parent


@sf.tool
def bash(command: str) -> str:
    """Run a shell command in the project. (The demo only lists folders: ``ls <folder>``.)"""
    words = shlex.split(command)
    if not words or words[0] != "ls" or len(words) > 2:
        raise sf.ToolError(f"the demo only runs `ls <folder>`, not {command!r}")
    folder = (PACKAGE.parent / (words[1] if len(words) == 2 else ".")).resolve()
    if folder == PACKAGE.parent:
        return PACKAGE.name
    if not folder.is_dir() or PACKAGE not in (folder, *folder.parents):
        raise sf.ToolError(f"no folder {words[-1]!r} in the project")
    return "\n".join(sorted(p.name for p in folder.iterdir() if not p.name.startswith((".", "__pycache__"))))


async def show(loop: sf.AgentLoop, prompt: str, out: TextIO) -> sf.DoneChunk | None:
    """Run one prompt through the loop, printing the flat stream as it comes.

    Everything a model (or a tool) sent is shown through ``printable``: its control characters, C1 controls
    and bidirectional controls escaped (``\\x1b``, ``\\u202e``), so that an endpoint cannot retitle, clear or
    reorder the terminal; the model's text keeps its line ends and tabs.
    """
    run = loop.run(prompt)
    done: sf.DoneChunk | None = None
    async for chunk in run:
        if isinstance(chunk, sf.TextChunk):
            out.write(printable(chunk.content, lines=True))
        elif isinstance(chunk, sf.ToolCallChunk):
            call = printable(f"{chunk.id}: {chunk.name}({chunk.arguments})")
            out.write(f"\n  → tool call {call}\n")
        elif isinstance(chunk, sf.ToolResultChunk):
            shown = printable(str(chunk.result).replace("\n", ", "))
            out.write(f"  ← {'error' if chunk.is_error else 'result'}: {shown[:100]}\n")
        elif isinstance(chunk, sf.ErrorChunk):
            error = chunk.error
            where = f" at chunk {error.chunk_index}" if error.chunk_index is not None else ""
            retry = f", retrying in {chunk.retry_after} ms" if chunk.recoverable else ""
            out.write(f"\n  rejected: {printable(str(error.code))}{where}{retry}\n  {printable(error.message)}\n")
        elif isinstance(chunk, sf.DoneChunk):
            done = chunk
            usage = chunk.usage
            tokens = (
                f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens" if usage else "no usage"
            )
            reason = printable(str(chunk.reason))
            out.write(f"\n  done: {reason}; {tokens}; {run.metrics.tool_call_count} tool call(s)\n")
        out.flush()
    return done


async def demo(args: argparse.Namespace, out: TextIO) -> int:
    """The scripted demo, or the real endpoint when ``--base-url`` is given."""
    system = "You are in a Python project. Use the bash tool (ls only) to look around, then answer in one sentence."
    if args.base_url:
        key = next(
            (os.environ[k] for k in ("STREAMFSM_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY") if k in os.environ),
            None,
        )
        if key is None or not args.model:
            sys.stderr.write(
                "--base-url needs --model and a key in STREAMFSM_API_KEY (or OPENAI_API_KEY/DEEPSEEK_API_KEY)\n"
            )
            return 2
        adapter: sf.LlmAdapter = sf.OpenAICompatibleAdapter(args.base_url, api_key=key)
        out.write(f"streamfsm demo: {printable(args.model)} at {printable(args.base_url)}, through the agent loop\n\n")
        loop = sf.AgentLoop(adapter, [bash], options=sf.GenerateOptions(model=args.model, system=system))
        done = await show(loop, "What is in the streamfsm folder?", out)
        return 0 if done is not None and done.reason == "stop" else 1

    delay = 0.0 if args.fast else 0.12
    out.write("streamfsm demo: the seed example through the agent loop (a scripted adapter, no network)\n\n")
    loop = sf.AgentLoop(
        ScriptedAdapter([EXAMPLE, ANSWER], delay), [bash], options=sf.GenerateOptions(model="demo", system=system)
    )
    done = await show(loop, "What is in the streamfsm folder?", out)
    if done is None or done.reason != "stop":
        return 1

    out.write("\nnow an adapter that breaks the protocol (a text-delta after its block ended):\n")
    broken = sf.AgentLoop(ScriptedAdapter([BROKEN], 0.0), [bash], model="demo")
    done = await show(broken, "What is in the streamfsm folder?", out)
    return 0 if done is not None and done.reason == "error" else 1


def run(args: argparse.Namespace) -> int:
    """Run the demo with the ``demo`` subcommand's options (``--fast``, ``--base-url``, ``--model``) to standard
    output; its exit status. A Ctrl-C is the command's to answer (``streamfsm._cli.main``: exit 130)."""
    return asyncio.run(demo(args, sys.stdout))

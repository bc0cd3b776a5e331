"""``python -m streamfsm``: a demo that needs no network.

It streams the seed articles' example through the machine chunk by chunk (text appears as it
arrives, the tool call's arguments are parsed partially on the way), prints the assembled result,
then feeds a broken stream and shows the coded error the machine rejects it with.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import streamfsm as sf

EXAMPLE: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "Let me check "},
    {"type": "text-delta", "index": 0, "text": "the project files."},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Let me check the project files."}},
    {"type": "block-start", "index": 1, "blockType": "tool-call"},
    {"type": "tool-call-delta", "index": 1, "id": "call-123", "name": "bash", "argumentsDelta": '{"comm'},
    {"type": "tool-call-delta", "index": 1, "id": "call-123", "argumentsDelta": 'and":"ls -la'},
    {"type": "tool-call-delta", "index": 1, "id": "call-123", "argumentsDelta": ' src"}'},
    {
        "type": "block-end",
        "index": 1,
        "block": {"type": "tool-call", "id": "call-123", "name": "bash", "arguments": '{"command":"ls -la src"}'},
    },
    {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 50}},
    {"type": "finish", "reason": {"kind": "tool-calls"}},
]

#: The same stream with a mistake an adapter makes: a delta addressed to a block that already ended.
BROKEN: list[dict[str, Any]] = [*EXAMPLE[:4], {"type": "text-delta", "index": 0, "text": "!"}, *EXAMPLE[4:]]


def _paced(chunks: list[dict[str, Any]], delay: float) -> Iterator[dict[str, Any]]:
    for chunk in chunks:
        if delay:
            time.sleep(delay)
        yield chunk


def main(argv: list[str] | None = None) -> int:
    """Run the demo; ``--fast`` skips the pauses between chunks."""
    args = sys.argv[1:] if argv is None else argv
    delay = 0.0 if "--fast" in args else 0.15
    out = sys.stdout
    out.write("streamfsm demo: the seed example, one chunk at a time\n\n")
    asm = sf.StreamAssembler(policy=sf.Policy.STRICT)
    for chunk in _paced(EXAMPLE, delay):
        asm.feed(chunk)
        kind = chunk["type"]
        if kind == "text-delta":
            out.write(chunk["text"])
        elif kind == "block-end" and chunk["block"]["type"] == "text":
            out.write("\n")
        elif kind == "tool-call-delta":
            (tool,) = asm.snapshot().open
            out.write(f"  tool {tool.name}: arguments so far {tool.partial_arguments}\n")
        out.flush()
    result = asm.close()
    (call,) = result.tool_calls
    assert result.usage is not None
    out.write(
        f"\nassembled: text {result.text!r}\n"
        f"           tool call {call.id} {call.name}({call.parsed_arguments})\n"
        f"           usage {result.usage.input_tokens} in / {result.usage.output_tokens} out,"
        f" finish {result.finish.kind}\n"
    )
    out.write("\nnow a broken stream (a text-delta after its block ended):\n")
    try:
        sf.assemble(BROKEN)
    except sf.LlmError as err:
        out.write(f"  rejected: {err.code} at chunk {err.chunk_index}\n  {err.message}\n")
    else:  # pragma: no cover - the machine must reject it
        out.write("  accepted?! this is a bug\n")
        return 1
    out.write("\nthe machine (Mermaid):\n\n")
    out.write(sf.diagram(sf.Policy.STRICT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

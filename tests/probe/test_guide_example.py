"""The guide's example for a server's own test suite (docs/guides/probing.md), run against the scripted server."""

from __future__ import annotations

import re
from pathlib import Path

from ..sse_server import SSEServer
from .scripted import ScriptedModel, serve

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "probing.md"


def example() -> str:
    found = re.findall(
        r"<!-- test: not-run: tests/probe/test_guide_example.py[^>]*-->\n```python\n(.*?)```",
        GUIDE.read_text(encoding="utf-8"),
        re.DOTALL,
    )
    assert len(found) == 1, "the guide no longer has the example"
    code: str = found[0]
    return code


def test_the_guides_example_passes_on_a_conforming_server_and_fails_on_a_broken_one(server: SSEServer) -> None:
    code = example().replace("http://localhost:8000/v1", server.url)
    assert server.url in code
    space: dict[str, object] = {}
    exec(compile(code, str(GUIDE), "exec"), space)
    test = space["test_streaming_matches_non_streaming"]
    assert callable(test)
    server.answer = serve(ScriptedModel(reasons=True), "conforming")
    test()
    server.answer = serve(ScriptedModel(reasons=True), "shared-index")
    try:
        test()
    except AssertionError as exc:
        assert "tools-parallel: invalid TOOL_ARGUMENTS_INVALID tool call 'call_0'" in str(exc)
    else:
        raise AssertionError("the example passed a server that merges two calls")

"""``python -m benchmarks.docs [--check]``: the docs site's performance page, written from ``RESULTS.md``.

The page is ``docs/project/performance.md``: a fixed introduction (how to reproduce the figures and how to read
them, no figure of its own), then ``benchmarks/RESULTS.md`` as ``python -m benchmarks`` wrote it, and the plots
copied beside it. ``python -m benchmarks`` calls :func:`write` after a full run; ``tests/test_docs.py`` checks
that the committed page is what :func:`render` gives, so no figure on the page is ever typed by hand.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
PAGE = HERE.parent / "docs" / "project" / "performance.md"
#: The plots ``RESULTS.md`` shows, copied next to the page (mkdocs serves only what is under ``docs/``).
PLOTS = ("ns_per_chunk.png", "corpus.png")

INTRO = """\
# Performance

<!-- Written by `python -m benchmarks.docs` from benchmarks/RESULTS.md; do not edit by hand. -->

Every figure on this page comes from one run of the benchmark harness in `benchmarks/`, copied here as it
wrote them. To measure on your own machine:

```sh
pip install -e '.[bench]'      # the peers: anthropic, openai, google-genai, pydantic-ai, langchain; matplotlib; msgspec
python -m benchmarks           # minutes; writes benchmarks/RESULTS.md (its run time at the end), the plots, this page
python -m benchmarks --smoke   # seconds: every workload and peer at tiny sizes, to check the harness runs
python -m benchmarks.docs      # this page again from benchmarks/RESULTS.md
```

`python -m benchmarks --only typical,recordings --no-peers --corpus none` times a few workloads alone;
`python -m benchmarks.corpus [--quick]` runs the corpus section alone. Two more commands count instructions
under valgrind's callgrind, which do not move with a noisy machine as times do:
`python -m benchmarks.instructions` (a 5-chunk stream, a typical chunk, and the bare dict loop's typical chunk) and
`python -m benchmarks.instructions_jsonl` (a chunk of `validate_jsonl` and `assemble_jsonl` next to
`orjson.loads`, on the session logs, the providers' recordings and the typical turn, for the compiled and the pure
machine, with their times side by side in one process, `validate_jsonl` with each parser of JSON lines: msgspec,
which the `fast` extra installs, and orjson; `--time` for the times alone);
`python -m benchmarks.blank_lines` counts what a blank line costs `assemble_jsonl` against a
valid one, per byte (a target row of `python -m benchmarks`).

## How to read it

- **Per chunk, against a bare loop.** Each workload is timed as nanoseconds per chunk, and every figure is
  also given as a ratio to a *bare dict loop* over the same chunks in the same process: read `type`,
  append the text and argument deltas, join them at the end. It checks nothing; it is the floor of any
  Python code that touches every chunk. The ratio is what survives a slow or a fast machine.
- **Floors, not peers.** `bare loop + result models` also builds the pydantic models streamfsm returns, as
  cheaply as streamfsm builds them, and checks nothing: what the results alone cost.
- **Peers**, each fed the same stream in its own format, and each content-checked like streamfsm: the
  anthropic and openai SDKs' stream accumulators, pydantic-ai's parts manager (which validates nothing) and
  langchain-core's `AIMessageChunk` addition. The wire-API converters are timed next to their SDK's own
  handling of the same events.
- **Targets.** The harness checks a set of targets and marks each PASS or FAIL. The fixed-cost row also
  says what the result models alone cost (the `bare loop + result models` floor, which checks nothing) and
  what plain slotted objects would cost instead: a 5-chunk stream returns three pydantic models, and the
  target is to be read against that floor. JSON lines on short streams pay the same fixed cost next to a parse
  by orjson that is itself cheap.
- **The corpus section** times `streamfsm check` as a user runs it, whole processes with the interpreter's
  start, over generated corpora: see [Corpora](../guides/corpora.md) for what the workers do.
- **Noise.** The machine the run names shares its cores; between runs the same figure, the bare loop's
  included, moves a lot. Compare ratios from one run, not times from two.

"""


def _body(results: str) -> str:
    """``RESULTS.md`` without its own title and note, no commit hash, the plots beside the page."""
    lines = results.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    text = "\n".join(lines).strip("\n")
    text = re.sub(r"\n*Written by `python -m benchmarks[^`]*`; do not edit by hand\.\n*", "\n\n", text, count=1)
    # The harness names the commit it measured; the docs carry no commit ids (CHANGELOG.md holds the history).
    text = re.sub(r", commit [0-9a-f]{7,40}\b", "", text)
    return text.strip("\n") + "\n"


def render(results: str | None = None) -> str:
    """The performance page for ``results`` (default: the committed ``benchmarks/RESULTS.md``)."""
    return INTRO + _body(RESULTS.read_text(encoding="utf-8") if results is None else results)


def write() -> list[Path]:
    """Write the page and copy the plots next to it; returns the files written."""
    PAGE.write_text(render(), encoding="utf-8")
    written = [PAGE]
    for name in PLOTS:
        if (HERE / name).exists():
            (PAGE.parent / name).write_bytes((HERE / name).read_bytes())
            written.append(PAGE.parent / name)
    return written


def stale() -> list[Path]:
    """The files :func:`write` would change (empty when the committed page is current)."""
    out = [] if PAGE.exists() and PAGE.read_text(encoding="utf-8") == render() else [PAGE]
    for name in PLOTS:
        source, copy = HERE / name, PAGE.parent / name
        if source.exists() and (not copy.exists() or copy.read_bytes() != source.read_bytes()):
            out.append(copy)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    about = __doc__.split("\n\n")[0] if __doc__ else None
    p = argparse.ArgumentParser(prog="python -m benchmarks.docs", description=about)
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if the page is not what it would write")
    args = p.parse_args(argv)
    if args.check:
        old = stale()
        for path in old:
            print(f"stale: {path.relative_to(HERE.parent)} (run python -m benchmarks.docs)")
        return 1 if old else 0
    for path in write():
        print(f"wrote {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

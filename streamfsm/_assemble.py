"""``assemble``: a whole stream of chunk dicts in one call, compiled with the machine.

The entry point most callers use, and the one a short stream pays most for: interpreted, its frame (the call with
keyword arguments, the locals, the exception block) costs about 2,600 instructions, a tenth of a 5-chunk stream.
Compiled, it costs what a compiled call does. What it does on a failure is the other entry points' (``_upstream``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._config import Limits, Policy
from ._machine import StreamAssembler
from ._models import StreamResult
from ._upstream import close_upstream, misused, not_sync, wrap_upstream

__all__ = ["assemble"]


def assemble(
    chunks: Iterable[Mapping[str, Any]],
    *,
    policy: Policy | str = Policy.STRICT,
    limits: Limits | None = None,
) -> StreamResult:
    """Validate and assemble a whole stream of chunk dicts; raises :class:`LlmError` at the first violation.

    An exception the upstream iterator raises is an :class:`LlmError`: one it raises itself as it is,
    any other ``Exception`` as ``LlmError(UNKNOWN)`` raised from it (see :func:`avalidate`).
    """
    asm = StreamAssembler(policy, limits)
    if type(chunks) is list:  # read by index: no iterator to make, nothing it raises, nothing to close
        asm.feed_many(chunks)
        return asm.close()
    try:
        iterator = iter(chunks)
    except TypeError:
        not_sync(chunks, "assemble", "await sf.aassemble(...)")
        raise
    try:
        asm.feed_many(iterator)
    except BaseException as exc:
        misused(exc, chunks, "assemble")
        close_upstream(iterator, quietly=True)
        # feed_many (the compiled loop) lets the source's own exceptions through and says which ones they were.
        wrap_upstream(exc, not asm.source_failed, asm.chunk_count)
        raise
    close_upstream(iterator)
    return asm.close()

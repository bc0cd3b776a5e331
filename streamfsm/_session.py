"""DeepSeek Harness session logs: the recorded streams inside them (``assistant/chunk`` lines)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._shape import InvalidLine

__all__ = ["RecordedStream", "read_session"]


@dataclass(frozen=True, slots=True)
class RecordedStream:
    """One stream recorded in a session log: its chunks and the log lines they came from (1-based)."""

    path: str
    #: 0-based position of this stream in its log.
    number: int
    chunks: list[Any] = field(repr=False)
    lines: list[int] = field(repr=False)
    turn: int | None = None
    step: int | None = None

    @property
    def finished(self) -> bool:
        """Whether the recording ends with a finish chunk (a cut-off log does not)."""
        last = self.chunks[-1] if self.chunks else None
        return isinstance(last, dict) and last.get("type") == "finish"


def read_session(path: str | os.PathLike[str]) -> Iterator[RecordedStream]:
    """Yield the streams recorded in a DeepSeek Harness session log, one per ``finish``.

    Every ``assistant/chunk`` line contributes its ``data.chunk``; a stream ends at its ``finish``.
    Chunks after the last finish form a last, unfinished stream (which the machine reports as
    ``STREAM_TRUNCATED``). A line that is not JSON is kept in the stream it falls in as an
    :class:`InvalidLine`, so that it is reported at its position rather than silently skipped.
    """
    name = os.fspath(path)
    chunks: list[Any] = []
    lines: list[int] = []
    turn: int | None = None
    step: int | None = None
    number = 0
    with open(name, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                chunks.append(InvalidLine(raw.decode("utf-8", "backslashreplace").strip(), str(exc)))
                lines.append(lineno)
                continue
            if not isinstance(record, dict) or record.get("type") != "assistant/chunk":
                continue
            data = record.get("data")
            chunk = data.get("chunk") if isinstance(data, dict) else None
            if not chunks and isinstance(data, dict):
                turn, step = data.get("turn"), data.get("step")
            chunks.append(chunk)
            lines.append(lineno)
            if isinstance(chunk, dict) and chunk.get("type") == "finish":
                yield RecordedStream(name, number, chunks, lines, turn, step)
                number += 1
                chunks, lines = [], []
    if chunks:
        yield RecordedStream(name, number, chunks, lines, turn, step)

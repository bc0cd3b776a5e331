"""A batch's reports on their way back from a worker process: packed, and in bounded pieces.

A worker checks its batch's files a stream at a time (:class:`~._check.FileCheck`). Its answer holds at most
:data:`PIECE` stream reports; the streams past them (a file of 60,000 turns) are written, :data:`PIECE` at a time as
they are checked, to a spool file in the folder the run gives (``spool``), and the main process reads them back a
piece at a time as the caller reads the file's streams (:class:`SpooledCheck`, a :class:`~._check.FileCheck`), then
deletes it. So neither process holds a file's reports: a worker holds a piece, the main process the pieces of the
batches in its window. A Dask cluster's workers may not share a folder with the main process: their answers
(:func:`shipped_batch`) keep every report, within the cluster's batches.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any, Final

from ._check import FileCheck, FileReport, StreamReport
from ._config import Policy
from ._models import StreamResult
from ._sources import is_url

__all__ = ["PIECE", "Packed", "SpooledCheck", "packed_batch", "shipped_batch", "unpack"]

#: Stream reports a worker's answer holds at most, and a piece of a spool file.
PIECE: Final = 512
#: The fields of a stream's report, in order: what travels back from a worker for each stream.
_FIELDS: Final = tuple(f.name for f in dataclasses.fields(StreamReport))
#: A file's report as it travels: its path, format, error, the fields of the streams that travel in the answer, and
#: the spool file that holds the rest (``None``: none).
Packed = tuple[str, str | None, str | None, list[tuple[Any, ...]], str | None]


def _fields(report: StreamReport) -> tuple[Any, ...]:
    """A stream's report as a plain tuple: a third of the time to unpickle in the main process (a frozen dataclass's
    own pickling sets each field through a Python loop), which for small files is most of the main process's work."""
    return tuple(getattr(report, f) for f in _FIELDS)


def _relative(name: str) -> bool:
    return not is_url(name) and not os.path.isabs(name)


def packed_batch(
    names: Sequence[str],
    fmt: str = "auto",
    policy: Policy | str = Policy.STRICT,
    root: str | None = None,
    spool: str | None = None,
) -> list[Packed]:
    """Each name's report, in order, packed: what one task of a worker does.

    With ``root`` (the caller's working folder, for a cluster whose workers work elsewhere), a relative local path is
    read from there and reported as it was given. With ``spool`` (a folder), the streams past :data:`PIECE` in the
    answer go to a spool file there. A check that raises is that file's error.
    """
    out: list[Packed] = []
    room = PIECE  # the stream reports the answer may still hold
    for name in names:
        source = os.path.join(root, name) if root is not None and _relative(name) else name
        check = FileCheck(source, fmt, policy, name=name)
        streams: list[tuple[Any, ...]] = []
        spooled: Any = None
        try:
            for report, _ in check.streams():
                streams.append(_fields(report))
                if spool is not None and len(streams) > room:
                    if spooled is None:
                        spooled = tempfile.NamedTemporaryFile(dir=spool, suffix=".pickle", delete=False)  # noqa: SIM115
                    pickle.dump(streams, spooled, protocol=pickle.HIGHEST_PROTOCOL)
                    streams, room = [], PIECE
            if spooled is not None and streams:
                pickle.dump(streams, spooled, protocol=pickle.HIGHEST_PROTOCOL)
                streams = []
        except Exception as exc:  # a bug, or memory: this file's error, not the end of the run
            if spooled is not None:
                spooled.close()
                os.unlink(spooled.name)
            out.append((name, None, f"the check failed: {type(exc).__name__}: {exc}", [], None))
            continue
        if spooled is not None:
            spooled.close()
        room -= len(streams)
        fmt_told = check.format if check.error is None else None
        out.append((name, fmt_told, check.error, streams, spooled.name if spooled is not None else None))
    return out


def shipped_batch(
    names: Sequence[str], fmt: str = "auto", policy: Policy | str = Policy.STRICT, root: str | None = None
) -> bytes:
    """:func:`packed_batch` as one pickle, what a cluster's task returns: Dask serialises a list it is given item by
    item, which made its client spend more on a small file's report than a check of the file costs."""
    return pickle.dumps(packed_batch(names, fmt, policy, root), protocol=pickle.HIGHEST_PROTOCOL)


class SpooledCheck(FileCheck):
    """A file a worker checked whose streams were spooled: read back a piece at a time, as a :class:`FileCheck` is
    read, once; the spool file is deleted as it ends (and with the run's folder, if never read)."""

    __slots__ = ("_spool",)

    def __init__(self, packed: Packed) -> None:
        path, fmt, error, _, spool = packed
        super().__init__(path, name=path)
        self.format, self.error, self._spool = fmt, error, spool

    def streams(self) -> Iterator[tuple[StreamReport, StreamResult | None]]:
        """Each stream's report, read from the spool a piece at a time."""
        assert self._spool is not None
        try:
            with open(self._spool, "rb") as spooled:
                while True:
                    try:
                        piece = pickle.load(spooled)
                    except EOFError:
                        return
                    for fields in piece:
                        yield StreamReport(*fields), None
        finally:
            os.unlink(self._spool)


def unpack(packed: list[Packed]) -> list[FileReport | FileCheck]:
    """The reports of a worker's answer: a :class:`FileReport` each, a :class:`SpooledCheck` for a spooled file."""
    out: list[FileReport | FileCheck] = []
    for one in packed:
        path, fmt, error, streams, spool = one
        if spool is None:
            out.append(FileReport(path, fmt, [StreamReport(*s) for s in streams], error))
        else:
            out.append(SpooledCheck(one))
    return out

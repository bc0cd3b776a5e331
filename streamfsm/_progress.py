"""The command's progress bar: files checked out of how many, redrawn at most every :data:`REDRAW` seconds on a
terminal, the report lines printed meanwhile held and written above it (:func:`progress`).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import IO, Final, cast

from ._check import (
    printable,
)
from ._cli_report import Style, is_terminal, tail, terminal_width

__all__ = ["HELD_LINES", "REDRAW", "Bar", "progress"]


#: How often the progress bar is redrawn, and the lines printed meanwhile written (seconds): a terminal that
#: redraws for every file of a corpus of small ones spends more time drawing than the command spends checking.
REDRAW: Final = 0.1
#: Lines held between redraws at most (one file of many streams, or a slow one, does not hold its report).
HELD_LINES: Final = 2000


class Bar:
    """A one-line progress bar on a terminal (standard error), redrawn at most every :data:`REDRAW` seconds.

    While it is shown, what the command writes to a terminal (standard error, and standard output when it is one)
    is held, in order, and written in one go just before a redraw, above the bar: one redraw and one write for the
    lines of many files, never one per line.
    """

    def __init__(self, total: int, stream: IO[str], style: Style, label: str = "checking") -> None:
        self.total, self.done, self.path, self.label = total, 0, "", label
        self._stream, self._style = stream, style
        self._started = time.monotonic()
        self._due = self._started  # drawn at the first file, then at most every REDRAW seconds
        self._drawn = 0  # the columns of the bar on the terminal (0: not drawn)
        self._marks = "\u2501\u2500"
        try:  # a terminal whose encoding has no box-drawing characters gets ASCII
            self._marks.encode(getattr(stream, "encoding", None) or "ascii")
        except (LookupError, UnicodeEncodeError):
            self._marks = "#-"
        self._held: list[tuple[IO[str], str]] = []
        self._lines = 0

    def holder(self, real: IO[str]) -> _Held:
        """A stand-in for ``real`` (``sys.stdout``, ``sys.stderr``) whose writes are held until the next redraw."""
        return _Held(self, real)

    def hold(self, real: IO[str], text: str) -> None:
        self._held.append((real, text))
        self._lines += text.count("\n")
        if self._lines >= HELD_LINES or time.monotonic() >= self._due:
            self.redraw()

    def advance(self, path: str) -> None:
        """One more file checked (``path``)."""
        self.done += 1
        self.path = path
        if time.monotonic() >= self._due:
            self.redraw()

    def redraw(self) -> None:
        """Write what is held, above the bar, and draw the bar again."""
        self._clear()
        self._write_held()
        line, self._drawn = self._line()
        self._stream.write(line)
        self._stream.flush()
        self._due = time.monotonic() + REDRAW

    def close(self) -> None:
        """Take the bar off the terminal and write what is held."""
        self._clear()
        self._write_held()
        self._stream.flush()

    def _clear(self) -> None:
        # Spaces over the bar, not an erase sequence: a console that takes no ANSI sequences clears it too.
        if self._drawn:
            self._stream.write(f"\r{' ' * self._drawn}\r")
            self._drawn = 0

    def _write_held(self) -> None:
        held, self._held, self._lines = self._held, [], 0
        self._stream.flush()  # the bar is off the terminal before the lines go where it was
        previous: IO[str] | None = None
        for real, text in held:
            if previous is not None and real is not previous:
                previous.flush()  # standard output and error in the order they were written
            real.write(text)
            previous = real
        if previous is not None:
            previous.flush()

    def _line(self) -> tuple[str, int]:
        """``checking ━━━━━━━━━━───── 1234/3000 0:01 path`` (its label first), cut to the terminal's width, and its
        columns."""
        width = max(
            terminal_width(self._stream) - 1, 20
        )  # the last column: a line that fills it wraps on some terminals
        seconds = int(time.monotonic() - self._started)
        count = f"{self.done}/{self.total} {seconds // 60}:{seconds % 60:02d}"
        cells = max(min(40, width - len(count) - 30), 10)
        full = cells * self.done // max(self.total, 1)
        done, left = self._marks[0], self._marks[1]
        bar = self._style(done * full, "cyan") + self._style(left * (cells - full), "dim")
        room = width - len(self.label) - 1 - cells - len(count) - 2
        path, columns = _cut_to_cells(tail(printable(self.path), max(room, 0)), room) if room > 1 else ("", 0)
        text = f"{self.label} {bar} {count}" + (f" {self._style(path, 'dim')}" if path else "")
        return text, len(self.label) + 1 + cells + 1 + len(count) + (1 + columns if path else 0)


class _Held:
    """A text stream whose writes wait for the progress bar's next redraw (see :class:`Bar`)."""

    def __init__(self, bar: Bar, real: IO[str]) -> None:
        self._bar, self._real = bar, real

    def write(self, text: str) -> int:
        self._bar.hold(self._real, text)
        return len(text)

    def flush(self) -> None:
        """Held until the bar's next redraw, on purpose."""

    def isatty(self) -> bool:
        return is_terminal(self._real)

    def fileno(self) -> int:
        return self._real.fileno()

    @property
    def encoding(self) -> str:
        return str(getattr(self._real, "encoding", "utf-8"))


def _cut_to_cells(text: str, cells: int) -> tuple[str, int]:
    """The end of ``text`` in at most ``cells`` terminal columns (East Asian wide characters take two), and the
    columns it takes."""
    import unicodedata

    used = 0
    for i in range(len(text) - 1, -1, -1):
        width = 2 if unicodedata.east_asian_width(text[i]) in "WF" else 1
        if used + width > cells:
            return text[i + 1 :], used
        used += width
    return text, used


@contextlib.contextmanager
def progress(total: int, enabled: bool, color: bool, label: str = "checking") -> Iterator[Bar | None]:
    """A progress bar on standard error (``label`` before it), or ``None``; what is printed meanwhile on the terminal
    goes above it."""
    if not enabled:
        yield None
        return
    bar = Bar(total, sys.stderr, Style(color), label)
    out, err = sys.stdout, sys.stderr
    try:
        if is_terminal(out):
            sys.stdout = cast("IO[str]", bar.holder(out))
        sys.stderr = cast("IO[str]", bar.holder(err))
        yield bar
    finally:
        sys.stdout, sys.stderr = out, err
        bar.close()

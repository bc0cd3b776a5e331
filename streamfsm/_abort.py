"""Cancellation: an ``AbortController``/``AbortSignal`` pair, as in the web platform, for asyncio.

The controller's owner calls :meth:`AbortController.abort`; whoever holds the signal learns of it by
polling :attr:`AbortSignal.aborted`, by a listener, or by awaiting :meth:`AbortSignal.wait`.
``abort()`` may be called from any thread: listeners run in the aborting thread, and waiters are
woken in their own event loops.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

from ._errors import ErrorCode, LlmError

__all__ = ["AbortController", "AbortSignal"]


class AbortSignal:
    """Tells its holders whether, and why, the operation was aborted. Made by :class:`AbortController`."""

    __slots__ = ("_listeners", "_lock", "_reason", "_waiters")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._listeners: list[Callable[[], None]] = []
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def aborted(self) -> bool:
        """Whether :meth:`AbortController.abort` was called."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """The reason given to ``abort()``, or None while not aborted."""
        return self._reason

    def error(self) -> LlmError:
        """The :class:`LlmError` (``ABORTED``) an operation raises when this signal ends it."""
        return LlmError(f"aborted: {self._reason}" if self._reason else "aborted", ErrorCode.ABORTED)

    def throw_if_aborted(self) -> None:
        """Raise ``LlmError(ABORTED)`` if the signal was aborted."""
        if self._reason is not None:
            raise self.error()

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` once when the signal aborts (at once if it already has).

        Returns a function that removes the listener. The listener runs in the thread that calls
        ``abort()``; use ``loop.call_soon_threadsafe`` in it to reach an event loop.
        """
        with self._lock:
            if self._reason is None:
                self._listeners.append(listener)
                return lambda: self._remove(listener)
        listener()
        return lambda: None

    def _remove(self, listener: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    async def wait(self) -> None:
        """Return when the signal aborts (at once if it already has)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._reason is not None:
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        try:
            await future
        finally:
            with self._lock, contextlib.suppress(ValueError):
                self._waiters.remove((loop, future))

    def _abort(self, reason: str) -> bool:
        with self._lock:
            if self._reason is not None:
                return False
            self._reason = reason
            listeners, self._listeners = self._listeners, []
            waiters = list(self._waiters)
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # its loop was closed under it: nobody is waiting any more
                loop.call_soon_threadsafe(_resolve, future)
        # Every listener hears of it, even when one fails; the first failure is raised afterwards.
        failures: list[Exception] = []
        for listener in listeners:
            try:
                listener()
            except Exception as exc:
                failures.append(exc)
        if failures:
            raise failures[0]
        return True

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self.aborted}, reason={self._reason!r})"


class AbortController:
    """Owns an :class:`AbortSignal` and aborts it.

    Pass ``controller.signal`` in ``GenerateOptions(signal=...)``; call ``controller.abort()`` to tear the
    request down at once (the stream then raises ``LlmError(ABORTED)``).
    """

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: str = "aborted by the caller") -> bool:
        """Abort the signal; returns False if it was already aborted (the first reason is kept).

        Every listener is called; if any raised, the first exception is raised once all have run.
        """
        return self.signal._abort(reason or "aborted by the caller")


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)

"""The frame of every converter: what the six wire APIs' converters share, so that each writes only what its API says.

:class:`TurnState` is the base class of the six converters. A converter subclasses it, takes ``limits`` as its one
constructor argument (``super().__init__(limits)``), and writes ``feed`` (its API's events) and ``close`` (what
its API's end gives, ending with :meth:`TurnState.closed`). Its ``from_*`` function is :func:`~.convert.convert`
around it, typed by :func:`~.convert.sync_or_async`: one function for sync and async events.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._wire import StreamChunk, WireFinishReason, WireUsage
from .convert import closing, stop_or_calls
from .held import BlockQueue
from .replay import Keeper, json_size

if TYPE_CHECKING:
    from .._config import Limits
    from .._errors import LlmError

__all__ = ["TurnState"]


class TurnState:
    """What every converter has of its turn, spelled once: the base class of the six converters.

    - ``over`` is what ended the turn on the wire (its end event, or the error event that failed it, by the API's
      name), ``None`` while the turn may go on: after it, nothing of this turn may come but what the API sends
      after its end. ``ended`` is whether :meth:`end` has run: :meth:`end` is the after-end guard (a second call
      gives nothing) around the converter's own :meth:`close`.
    - ``queue`` is the :class:`~.held.BlockQueue` the turn's blocks go through, one open at a time, what it holds
      back bounded by ``limits`` (the machine's, given to the constructor; None: the defaults). A converter whose
      API never interleaves blocks (Anthropic's) numbers its own and leaves the queue empty.
    - ``keeper`` holds what the turn keeps for replay (:class:`~.replay.Keeper`, :meth:`keep`).
    - ``usage`` is the turn's usage as the protocol counts it (None until the provider gives one), ``calls`` the
      client tool calls that make the API's ``stop`` a ``tool-calls`` finish (a converter whose API says
      ``tool-calls`` itself leaves it 0).
    - :meth:`failed` is an error event that ends the turn; :meth:`closed` is what every ``close`` ends with.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        self.over: str | None = None
        self.ended = False
        self.queue = BlockQueue(limits)
        self.keeper = Keeper()
        self.usage: WireUsage | None = None
        self.calls = 0

    def end(self) -> list[StreamChunk]:
        """The input is over: the chunks that end the stream (:meth:`close`'s), once; a second call gives nothing."""
        if self.ended:
            return []
        self.ended = True
        return self.close()

    def close(self) -> list[StreamChunk]:
        """The chunks that end the stream, as the converter's wire API says (called once, by :meth:`end`)."""
        raise NotImplementedError

    def failed(self, over: str, error: LlmError) -> LlmError:
        """The error event ``over`` (by the API's name) ended the turn with ``error``, which is given back to raise:
        a recording may hold another turn after it."""
        self.over = over
        return error

    def keep(self, kind: str, at: int, data: Mapping[str, Any], what: str) -> None:
        """Keep ``data`` whole for replay, of type ``kind``, after ``at`` blocks; its size counted first (``what``
        names it if it is not JSON data)."""
        self.keeper.charge(json_size(data, what))
        self.keeper.keep(kind, at, data, charged=True)

    def closed(self, finish: WireFinishReason, replay_state: Any, *, empty: bool | None = None) -> list[StreamChunk]:
        """What every ``close`` ends with, the turn's ``finish`` read: a ``stop`` with client tool calls is
        ``tool-calls`` (:func:`~.convert.stop_or_calls`); the queue's blocks ended (a call cut off kept open unless
        the turn was complete, :meth:`~.held.BlockQueue.finish`); a ``stop`` with no content refused (``empty``,
        by default: no block made and nothing kept); then the ``usage`` and the ``finish`` with ``replay_state``."""
        finish = stop_or_calls(finish, self.calls)
        if empty is None:
            empty = self.queue.made == 0 and not self.keeper.items
        return self.queue.finish(finish, empty=empty) + closing(self.usage, finish, replay_state)

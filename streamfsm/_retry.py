"""Retry and limits: how often a run tries a failed request again, and how far a run may go.

:class:`RetryPolicy` decides whether a failed attempt is retried and after how long: exponential back-off with
full jitter (AWS's "exponential backoff and jitter"), never sooner than the provider asked. :class:`AgentLimits`
bounds a run (turns, timeouts, tool threads, budgets); :class:`TextBudget` counts the characters a run streams;
the errors a run is stopped with when a limit is passed are made here (:func:`timed_out`,
:func:`over_text_budget`, :func:`over_token_budget`).
"""

from __future__ import annotations

from random import Random

from pydantic import BaseModel, ConfigDict, Field

from ._config import DEFAULT_LIMITS, Limits
from ._errors import RETRYABLE_CODES, ErrorCode, LlmError

__all__ = ["AgentLimits", "RetryPolicy", "TextBudget", "over_text_budget", "over_token_budget", "timed_out"]


class RetryPolicy(BaseModel):
    """Exponential back-off with full jitter for failed attempts (the seed's ``maxRetries``/``retryDelay``/
    ``retryMultiplier``).

    Retry ``n`` (1, 2, ...) has a ceiling of ``delay_ms * multiplier ** (n - 1)``, at most ``max_delay_ms``
    (:meth:`backoff_ms`). With ``jitter`` (the default) it waits a whole number of milliseconds drawn
    uniformly from 0 to the ceiling (``round(uniform(0, ceiling))``: AWS's "full jitter"), so that clients
    that failed together do not retry together; without, the ceiling itself. Either way it waits at least
    the ``retry_after_ms`` the provider asked for. An error whose ``retry_after_ms`` is more than
    ``max_delay_ms`` is not retried: the provider said a retry within the bound would fail again.
    Only codes in ``retryable_codes`` are retried (by default :data:`RETRYABLE_CODES`).
    ``RetryPolicy(max_retries=0)`` never retries.

    ``seed``: the draws come from ``random.Random(seed)``, one source per run (:meth:`rng`), one draw per
    retry: a seeded run's delays are the same every time (for tests). ``None`` (the default): each run's
    source is seeded by the operating system.
    """

    model_config = ConfigDict(frozen=True)

    max_retries: int = Field(default=3, ge=0)
    delay_ms: int = Field(default=1000, ge=0)
    multiplier: float = Field(default=2.0, ge=1.0)
    max_delay_ms: int = Field(default=30_000, ge=0)
    jitter: bool = True
    seed: int | None = None
    retryable_codes: frozenset[str] = RETRYABLE_CODES

    def backoff_ms(self, retry: int) -> int:
        """The ceiling of the back-off before retry number ``retry`` (1-based), ignoring any ``retry_after_ms``:
        the back-off itself without jitter."""
        try:
            delay = self.delay_ms * self.multiplier ** max(0, retry - 1)
        except OverflowError:  # the power passed the largest float: any delay but 0 is past the cap
            return self.max_delay_ms if self.delay_ms else 0
        return int(min(delay, self.max_delay_ms))

    def rng(self) -> Random:
        """A new source of draws: ``random.Random(seed)`` (seeded by the operating system when ``seed`` is None)."""
        return Random(self.seed)

    def next_delay_ms(self, error: LlmError, retry: int, rng: Random | None = None) -> int | None:
        """Milliseconds to wait before retry number ``retry`` after ``error``, or None: do not retry.

        ``rng``: the source of the jitter's draw (a run passes its own, from :meth:`rng`); None: a new one
        from :meth:`rng`, so that with a ``seed`` every call draws the same first number.
        """
        if retry > self.max_retries or error.code not in self.retryable_codes:
            return None
        asked = error.retry_after_ms
        if asked is not None and asked > self.max_delay_ms:
            return None
        delay = self.backoff_ms(retry)
        if self.jitter:
            delay = round((rng if rng is not None else self.rng()).uniform(0, delay))
        return delay if asked is None else max(delay, asked)


class AgentLimits(BaseModel):
    """How far a run may go. Timeouts are seconds; ``None`` means no limit.

    - ``max_turns``: model responses per run. When the last one still asks for tools, its tools run and
      the run ends with ``done(tool_use)``.
    - ``turn_timeout``: one model response, all its attempts and back-off included (not its tools).
    - ``run_timeout``: the whole run.
    - ``tool_timeout``: one tool call, unless the tool sets its own ``timeout``. A tool that passes it
      gives an error result; the run goes on.
    - ``tool_threads``: sync tool calls of one run running at once, each in a thread of its own (a call
      waits for a free one within its timeout; a call left behind no longer counts).
    - ``tool_cancel_grace``: how long a cancelled tool call (timed out, or its run stopped) is waited for
      before it is left behind, still running, and reported (``tool_abandoned``).
    - ``max_output_tokens``: output tokens of the run, checked as each response ends.
    - ``max_text_chars``: characters of text and reasoning streamed by the run, checked at every delta;
      a text chunk that passes it is cut at the limit.
    - ``stream``: the :class:`Limits` of each response's machine.

    A timeout or budget stops the run as an abort does: ``done(cancel)``, with :attr:`AgentRun.error`
    ``TIMEOUT`` or ``BUDGET_EXCEEDED``.
    """

    model_config = ConfigDict(frozen=True)

    max_turns: int = Field(default=10, ge=1)
    turn_timeout: float | None = Field(default=None, gt=0)
    run_timeout: float | None = Field(default=None, gt=0)
    tool_timeout: float | None = Field(default=60.0, gt=0)
    tool_threads: int = Field(default=8, ge=1)
    tool_cancel_grace: float = Field(default=1.0, gt=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    max_text_chars: int | None = Field(default=None, ge=0)
    stream: Limits = DEFAULT_LIMITS


class TextBudget:
    """The characters of text and reasoning a run has streamed, against ``limit`` (None: no limit)."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0

    def take(self, n: int) -> int:
        """Count ``n`` more characters: how many of them fit (``n`` when all do; fewer: the budget is passed,
        and spent)."""
        limit = self.limit
        if limit is None or n <= limit - self.used:
            self.used += n
            return n
        fit = max(0, limit - self.used)
        self.used = limit
        return fit

    def error(self) -> LlmError:
        """What stops a run that passed the budget."""
        return over_text_budget(self.limit or 0)


def over_text_budget(budget: int) -> LlmError:
    """A run's text and reasoning passed ``budget`` characters."""
    return LlmError(f"the run's text and reasoning passed its budget of {budget} characters", ErrorCode.BUDGET_EXCEEDED)


def over_token_budget(used: int, budget: int) -> LlmError:
    """A run used ``used`` output tokens, more than ``budget``."""
    return LlmError(f"the run used {used} output tokens; its budget is {budget}", ErrorCode.BUDGET_EXCEEDED)


def timed_out(what: str, seconds: float) -> LlmError:
    """``what`` (a turn, the run) took more than ``seconds``."""
    return LlmError(f"{what} timed out after {seconds:g} s", ErrorCode.TIMEOUT)

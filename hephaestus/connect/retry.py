"""How hard the client retries transient Connect failures (exponential backoff with jitter)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from hephaestus.connect.errors import ConnectError
from hephaestus.errors import first_line

_log = logging.getLogger("hephaestus.connect")


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, ConnectError) and exc.transient


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` counts the first try. Waits grow `initial_wait * multiplier**n`, capped at
    `max_wait`, plus up to `jitter` seconds at random so workers retrying together spread out.

    With the defaults the waits are about 0.5, 1, 2, 4, 8 s: ~16 s, enough for a Connect
    rebalance to settle, short enough that a dead cluster fails a run quickly.
    """

    attempts: int = 6
    initial_wait: float = 0.5
    max_wait: float = 8.0
    multiplier: float = 2.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be at least 1")
        if min(self.initial_wait, self.max_wait, self.jitter) < 0 or self.multiplier < 1:
            raise ValueError("RetryPolicy waits must be >= 0 and multiplier >= 1")

    @classmethod
    def immediate(cls, attempts: int = 6) -> RetryPolicy:
        """No waiting at all: for tests that count attempts, not seconds."""
        return cls(attempts=attempts, initial_wait=0.0, max_wait=0.0, jitter=0.0)

    @property
    def budget_s(self) -> float:
        """The longest a call keeps retrying (waits between attempts, jitter left out): past
        this without any answer, the cluster counts as unreachable (see `edge.Breaker`)."""
        waits = (min(self.initial_wait * self.multiplier**n, self.max_wait) for n in range(self.attempts - 1))
        return sum(waits)

    def retrying(self) -> Retrying:
        # tenacity's `multiplier` is our initial wait; our `multiplier` is its `exp_base`.
        wait = wait_exponential_jitter(
            multiplier=self.initial_wait, max=self.max_wait, exp_base=self.multiplier, jitter=self.jitter
        )
        return Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait,
            retry=retry_if_exception(_transient),
            reraise=True,
            before_sleep=self._say,
        )

    def _say(self, state: RetryCallState) -> None:
        """A line on stderr before each wait: a retrying run is not a hung one."""
        failed = state.outcome.exception() if state.outcome else None
        if failed is not None and state.next_action is not None:
            # the hint after " — " comes with the final error; here only what happened
            _log.warning(
                "%s; trying again in %.1f s (attempt %d of %d)",
                first_line(failed).split(" — ")[0],
                state.next_action.sleep,
                state.attempt_number + 1,
                self.attempts,
            )

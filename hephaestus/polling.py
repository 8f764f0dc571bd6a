"""One bounded poll: ask again until an answer comes or the time is up. Pure but for the
clock and the sleep, both injectable (tests pass a fake clock; nothing waits for real)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Bound:
    """Ask for `timeout_s` at most; the waits start at `first_s` and double up to `interval_s`
    (what is usually ready at once is not kept waiting a whole interval)."""

    timeout_s: float
    interval_s: float = 1.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    first_s: float | None = None  # None: every wait is `interval_s`


def until(probe: Callable[[], T | None], bound: Bound) -> T | None:
    """`probe()` until it returns something (returned) or `bound.timeout_s` has passed (None).
    The probe runs at least once, and once more at the deadline: a slow last wait still counts."""
    deadline = bound.clock() + bound.timeout_s
    wait = bound.interval_s if bound.first_s is None else min(bound.first_s, bound.interval_s)
    while True:
        found = probe()
        if found is not None:
            return found
        left = deadline - bound.clock()
        if left <= 0:
            return None
        bound.sleep(min(wait, left))
        wait = min(wait * 2, bound.interval_s)

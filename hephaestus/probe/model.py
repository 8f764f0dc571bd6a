"""Freshness, judged from what was read back (pure).

A probe's time is the source database's `now()` when the source's heartbeat wrote it. Freshness
is measured on that same clock: the source database's `now()`, read in the same pass, minus the
probe time the sink database holds. Skew between the hosts' clocks never enters the number; it
is shown beside it (the sink database's `now()` minus the source's, read a moment apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

State = Literal["fresh", "stale", "waiting", "unknown", "edited"]
SKEW_SHOWN_S = 1.0  # below this, clocks count as agreeing (two reads a moment apart)


@dataclass(frozen=True)
class Route:
    """One sink's probe path, from the live configs; `why`: the sink carries none (unknown)."""

    cluster: str
    sink: str
    source: str = ""  # the source connector that writes the probe topic: its row's key
    source_db: str = ""
    sink_db: str = ""
    schema: str = "public"  # of the sink's probe table (its target table's schema)
    table: str = ""  # the source table the sink's data comes from (schema.table)
    why: str = ""


@dataclass(frozen=True)
class SourceRow:
    probed_at: float  # epoch seconds, the source database's clock
    seq: int
    since: float  # when this source first probed (its row was created)


@dataclass(frozen=True)
class SinkRow:
    probed_at: float
    seq: int
    unpublished: tuple[str, ...] = ()  # captured tables the publication lacked at that probe


@dataclass(frozen=True)
class Reading:
    """What one pass read for a route: both rows and both databases' `now()`, or why not."""

    source_now: float = 0.0
    sink_now: float = 0.0
    at_source: SourceRow | None = None
    at_sink: SinkRow | None = None
    error: str = ""


@dataclass(frozen=True)
class Freshness:
    route: Route
    state: State
    seconds: float | None  # None: no number (unknown, waiting); inf: nothing arrives at all
    why: str = ""
    skew_s: float = 0.0  # the sink database's clock minus the source's
    max_s: float = 0.0  # the threshold it was judged against

    @property
    def stale(self) -> bool:
        """What `status` exits 2 for: data known not to arrive in time, or a probe tampered with."""
        return self.state in ("stale", "edited")

    @property
    def shows_skew(self) -> bool:
        return abs(self.skew_s) >= SKEW_SHOWN_S

    def describe(self) -> str:
        number = "" if self.seconds is None else " (never)" if math.isinf(self.seconds) else f" {self.seconds:.0f}s"
        skew = f"; clocks: {self.route.sink_db} reads {self.skew_s:+.1f}s from {self.route.source_db}"
        return f"{self.state}{number}" + (f": {self.why}" if self.why else "") + (skew if self.shows_skew else "")


def judge(route: Route, reading: Reading, max_s: float) -> Freshness:
    """The route's freshness against `max_s`; every state but `fresh` says why."""
    return replace(_judged(route, reading, max_s), max_s=max_s)


def _judged(route: Route, reading: Reading, max_s: float) -> Freshness:
    if route.why or reading.error:
        return Freshness(route, "unknown", None, route.why or reading.error)
    src, dst = reading.at_source, reading.at_sink
    skew = reading.sink_now - reading.source_now
    if src is None:
        why = (
            f"no probe row for {route.source} in {route.source_db}: its heartbeat has not run (is the source running?)"
        )
        return Freshness(route, "waiting", None, why, skew)
    if src.probed_at > reading.source_now + SKEW_SHOWN_S:
        return Freshness(
            route, "edited", None, f"the probe row in {route.source_db} is from the future: edited by hand?"
        )
    if dst is None:
        return _waiting(route, reading, src, max_s, skew)
    if dst.seq > src.seq or dst.probed_at > src.probed_at:
        why = f"the probe at {route.sink_db} (#{dst.seq}) is ahead of the source's (#{src.seq}): edited by hand?"
        return Freshness(route, "edited", None, why, skew)
    return _measured(route, reading, dst, max_s, skew)


def _waiting(route: Route, reading: Reading, src: SourceRow, max_s: float, skew: float) -> Freshness:
    """No probe has arrived yet: waiting while the source has probed for no longer than `max_s`."""
    probing = reading.source_now - src.since
    if probing <= max_s:
        return Freshness(
            route, "waiting", None, f"no probe arrived yet ({route.source} probing for {probing:.0f}s)", skew
        )
    why = f"no probe arrived at {route.sink_db} in {probing:.0f}s of probing"
    return Freshness(route, "stale", math.inf, why, skew)


def _measured(route: Route, reading: Reading, dst: SinkRow, max_s: float, skew: float) -> Freshness:
    age = max(reading.source_now - dst.probed_at, 0.0)
    if route.table and route.table in dst.unpublished:
        why = f"{route.table} is not in {route.source}'s publication: its rows stop at the source"
        return Freshness(route, "stale", math.inf, why, skew)
    if age > max_s:
        why = f"the newest probe at {route.sink_db} is {age:.0f}s old (max {max_s:g}s)"
        return Freshness(route, "stale", age, why, skew)
    return Freshness(route, "fresh", age, "", skew)

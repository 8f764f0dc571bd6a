"""Replication health, measured (issue 31): which records a sink has not consumed yet, and how
long the oldest of them has waited."""

from __future__ import annotations

from hephaestus.fleet.lag import lag, lag_age, waiting
from hephaestus.kafka import Span

SPANS = {"t": (Span("t", 0, 0, 10), Span("t", 1, 5, 5), Span("t", 2, 20, 30))}


def test_the_first_waiting_record_of_each_lagging_partition() -> None:
    committed = {("t", 0): 4, ("t", 1): 5, ("t", 2): 3}  # partition 2's log moved past the commit
    assert waiting(["t"], SPANS, committed) == {("t", 0): 4, ("t", 2): 20}
    assert waiting(["t"], SPANS, {}) == {("t", 0): 0, ("t", 2): 20}, "nothing committed: from the log start"
    assert waiting(["t"], SPANS, {("t", 0): 10, ("t", 2): 30}) == {}
    assert lag(["t"], SPANS, committed) == 6 + 10


def test_the_age_is_the_oldest_waiting_records() -> None:
    positions = {("t", 0): 4, ("t", 2): 20}
    now = 1_000_000
    assert lag_age(positions, {("t", 0): now - 90_000, ("t", 2): now - 5_000}, now) == 90.0
    assert lag_age(positions, {("t", 2): now - 5_000}, now) == 5.0, "an unread partition is left out"
    assert lag_age(positions, {}, now) is None and lag_age({}, {("t", 0): 1}, now) is None
    assert lag_age(positions, {("t", 0): now + 3_000}, now) == 0.0, "a clock ahead of ours is no negative wait"

"""How far behind a sink is (pure): the records past its consumer group's committed offsets,
and where the oldest of them waits. `status`, the exporter and a rollout's gates read lag the
same way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hephaestus.kafka import Span


@dataclass(frozen=True)
class HealthSample:
    name: str
    state: str = ""  # "" when Connect did not list it
    tasks: tuple[str, ...] = ()
    lag: int | None = None  # a sink's records waiting
    lag_age_s: float | None = None  # how long its oldest waiting record has waited
    dlq_end: int | None = None  # its DLQ's end offsets, summed
    slot_wal: int | None = None  # a source's slot: WAL retained
    confirmed_lsn: int | None = None
    error: str = ""  # what could not be measured
    # Freshness (hephaestus.probe), both on the source database's clock: the newest probe at the
    # sink's database, and the source's now() when sampled; `probe_why`: why there is none.
    probe_at: float | None = None
    source_now: float | None = None
    probe_why: str = ""


def waiting(
    topics: Sequence[str], spans: Mapping[str, Sequence[Span]], committed: Mapping[tuple[str, int], int]
) -> dict[tuple[str, int], int]:
    """The first record not yet consumed of every partition of `topics` that has one: where the
    group committed, or the log start where it committed nothing or the log moved past it."""
    firsts = {
        (s.topic, s.partition): max(committed.get((s.topic, s.partition), s.start), s.start)
        for t in topics
        for s in spans.get(t, ())
    }
    ends = {(s.topic, s.partition): s.end for t in topics for s in spans.get(t, ())}
    return {tp: first for tp, first in firsts.items() if first < ends[tp]}


def lag_age(
    positions: Mapping[tuple[str, int], int], stamps: Mapping[tuple[str, int], int], now_ms: int
) -> float | None:
    """Seconds the oldest waiting record has waited, by the timestamps of the records at
    `positions` (None when nothing waits, or none of them could be read). A record's timestamp
    is its producer's (CreateTime) unless the topic says LogAppendTime: a record produced long
    before it reached Kafka reads older than its wait."""
    found = [stamps[tp] for tp in positions if tp in stamps]
    return max((now_ms - min(found)) / 1000, 0.0) if found else None


def lag(topics: Sequence[str], spans: Mapping[str, Sequence[Span]], committed: Mapping[tuple[str, int], int]) -> int:
    """Records of `topics` past the group's committed offsets (from the log start where the
    group committed nothing)."""
    return sum(
        max(s.end - max(committed.get((s.topic, s.partition), s.start), s.start), 0)
        for t in topics
        for s in spans.get(t, ())
    )

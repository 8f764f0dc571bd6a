"""Replication health of some connectors at one moment (edge: Connect, Kafka, PostgreSQL):
what a rollout's gates judge (`reconciler.rollout.rules`).

- every connector: its state and its tasks' (one status listing);
- a sink: its consumer group's lag and the age of its oldest unconsumed record, over the
  topics it is configured to read *and* every topic its group has committed offsets for (a
  `topics` typo leaves the old topic's records waiting: read only the new, configured topic
  and the sink would look idle and healthy); its DLQ's end offsets (growth is counted from a
  sample taken before the write: Connect writes a DLQ record with the failed record's own
  timestamp, so a count by time would miss records that were already old);
- a source: its replication slot's retained WAL and confirmed position.

What cannot be read is said in `error` (a gate never passes a measure it did not take).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from hephaestus import kafka
from hephaestus.classes import POSTGRES_SOURCE
from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.errors import HephaestusError
from hephaestus.fleet.lag import HealthSample, lag, lag_age, waiting
from hephaestus.fleet.slots import Slot
from hephaestus.fleet.sources import source_ref
from hephaestus.fleet.topics import DLQ_KEY, topics_of

SlotReader = Callable[[str], Sequence[Slot]]  # a database's logical slots
# The probes of some sinks (hephaestus.probe.read.arrivals): per sink, (newest probe at its
# database, the source's now()) on the source's clock, or why not; given the cluster's client.
Arrivals = Callable[
    [ConnectClient, Mapping[str, Mapping[str, str]]], Mapping[str, tuple[float | None, float | None, str]]
]


@dataclass(frozen=True)
class HealthProbe:
    """Where health is read from: Connect (the client given), Kafka when the cluster names
    its bootstrap, the source databases the project has a DSN for."""

    bootstrap: str | None = None
    slots: SlotReader | None = None
    clock: Callable[[], float] = time.time
    arrivals: Arrivals | None = None  # read only when a rollout gates freshness


def sample(
    client: ConnectClient, probe: HealthProbe, configs: Mapping[str, Mapping[str, str]]
) -> dict[str, HealthSample]:
    """The health of each connector named in `configs` (its config as written by this run)."""
    try:
        listed = client.statuses()
    except ConnectError as exc:
        return {n: HealthSample(n, error=f"Connect: {exc}") for n in configs}
    found = {n: _state(n, listed.get(n)) for n in configs}
    sinks = {n: c for n, c in configs.items() if c.get("connector.class") != POSTGRES_SOURCE and _is_sink(c)}
    if sinks and probe.bootstrap:
        found = _with_kafka(found, probe.bootstrap, sinks, probe.clock)
    sources = {n: c for n, c in configs.items() if c.get("connector.class") == POSTGRES_SOURCE}
    if sources and probe.slots is not None:
        found = _with_slots(found, probe.slots, sources)
    if sinks and probe.arrivals is not None:
        found = _with_probes(found, probe.arrivals(client, sinks))
    return found


def _with_probes(
    found: dict[str, HealthSample], arrived: Mapping[str, tuple[float | None, float | None, str]]
) -> dict[str, HealthSample]:
    for name, (at, now, why) in arrived.items():
        found[name] = replace(found[name], probe_at=at, source_now=now, probe_why=why)
    return found


def _is_sink(config: Mapping[str, str]) -> bool:
    return bool(config.get("topics") or config.get("topics.regex"))


def _state(name: str, st: object) -> HealthSample:
    if st is None:
        return HealthSample(name)
    return HealthSample(name, getattr(st, "state", ""), tuple(t.state for t in getattr(st, "tasks", ())))


def _with_kafka(
    found: dict[str, HealthSample], bootstrap: str, sinks: Mapping[str, Mapping[str, str]], clock: Callable[[], float]
) -> dict[str, HealthSample]:
    try:
        groups = kafka.committed(bootstrap, [f"connect-{n}" for n in sinks])
        committed = {n: groups.get(f"connect-{n}", {}) for n in sinks}
        topics = {n: sorted({*topics_of(c), *(t for t, _ in committed[n])}) for n, c in sinks.items()}
        dlqs = {n: c[DLQ_KEY] for n, c in sinks.items() if c.get(DLQ_KEY, "").strip()}
        spans = kafka.spans(bootstrap, sorted({*dlqs.values(), *(t for ts in topics.values() for t in ts)}))
        firsts = {n: waiting(topics[n], spans, committed[n]) for n in sinks}
        stamps = kafka.timestamps(bootstrap, {tp: o for f in firsts.values() for tp, o in f.items()})
    except HephaestusError as exc:
        return {n: replace(h, error=f"Kafka: {exc}") if n in sinks else h for n, h in found.items()}
    now_ms = int(clock() * 1000)
    for n in sinks:
        dlq = sum(s.end for s in spans.get(dlqs[n], ())) if n in dlqs else None
        age = lag_age(firsts[n], stamps, now_ms)
        found[n] = replace(found[n], lag=lag(topics[n], spans, committed[n]), lag_age_s=age, dlq_end=dlq)
    return found


def _with_slots(
    found: dict[str, HealthSample], read: SlotReader, sources: Mapping[str, Mapping[str, str]]
) -> dict[str, HealthSample]:
    for name, config in sources.items():
        try:
            ref = source_ref(name, config)
            slot = next((s for s in read(ref.database) if s.name == ref.slot), None)
        except HephaestusError as exc:
            found[name] = replace(found[name], error=f"slot: {exc}")
            continue
        if slot is not None:
            found[name] = replace(found[name], slot_wal=slot.retained_bytes, confirmed_lsn=slot.confirmed_lsn)
    return found

"""One connector's health as `status` shows it (pure): its state, what heal spent on it, what
its DLQ holds, how far behind it is, and the problems that make it unhealthy."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConnectorView:
    cluster: str
    name: str
    kind: str  # source, sink, unknown
    state: str
    tasks: tuple[tuple[int, str], ...]
    restarts: int = 0  # what heal spent of its budget
    budget: int = 0
    dlq_depth: int | None = None  # sinks with a DLQ: all it holds (a plain figure)
    dlq_unresolved: int | None = None  # of those, parked since the last replay or purge (a problem)
    consumer_lag: int | None = None  # sinks: records of their topics not yet committed
    lag_age_s: float | None = None  # sinks: how long the oldest of those has waited (None: no lag, or unread)
    slot: str | None = None  # sources
    slot_retained: int | None = None
    slot_verdict: str | None = None
    slot_unconfirmed: int | None = None  # WAL bytes the source read or was sent but has not confirmed
    slot_confirmed_lsn: int | None = None  # its confirmed position (a gauge's rate says whether it moves)
    problems: tuple[str, ...] = ()
    desired: str = ""  # the state git asks for (RUNNING, PAUSED, STOPPED); "" when no file says
    schema: tuple[str, ...] = ()  # what its source's schema drift does to its data (hephaestus.drift)
    cause: str = ""  # a failed task's cause no restart fixes (fleet.causes), e.g. a not-null violation
    freshness: str = ""  # sinks: its probe's freshness, described (hephaestus.probe); "" when not judged
    freshness_s: float | None = None  # seconds (inf: nothing arrives), None without a number
    freshness_max_s: float | None = None  # the threshold it is judged against
    probe_source: str = ""  # the source connector whose probe it reads back
    probe_database: str = ""  # the sink database it reads it back in
    plugin_version: str = ""  # the version its plugin runs (Connect 4.1+, KIP-891; "" unknown)
    task_versions: tuple[tuple[int, str], ...] = ()  # each task's

    @property
    def healthy(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class ClusterView:
    cluster: str
    url: str
    connectors: tuple[ConnectorView, ...]
    errors: tuple[str, ...] = ()  # what could not be read (the cluster, Kafka, a database)
    # False when Connect's listing could not be read: its connectors' health is then unknown,
    # never "0 of 0 healthy" (issue 48).
    reached: bool = True
    # Plugin classes its workers hold in different versions (issue 50); None: not checked (no
    # sample, never a false 0).
    skewed: tuple[str, ...] | None = None

    @property
    def unhealthy(self) -> tuple[ConnectorView, ...]:
        return tuple(c for c in self.connectors if not c.healthy)


def problems_of(v: ConnectorView) -> tuple[str, ...]:
    # A connector paused or stopped on git's word is where it should be; anywhere else is not.
    expected = v.desired or "RUNNING"
    found = [] if v.state == expected else [f"connector {v.state}" + (f", git wants {expected}" if v.desired else "")]
    found += [f"task {i} {state}" for i, state in v.tasks if state != expected]
    if v.cause:
        found.append(f"permanent: {v.cause}: no restart fixes it")
    if v.state == expected == "RUNNING" and not v.tasks:
        found.append("no tasks")
    if v.budget and v.restarts >= v.budget:
        found.append(f"heal's restart budget exhausted ({v.restarts}/{v.budget})")
    # A record replayed (or purged) was dealt with: only what was parked since needs someone.
    pending = v.dlq_depth if v.dlq_unresolved is None else v.dlq_unresolved
    if pending:
        found.append(f"{pending} unresolved record(s) in its dead-letter queue")
    if v.slot_verdict not in (None, "ok"):
        found.append(f"slot {v.slot} {v.slot_verdict}")
    return (*found, *v.schema)

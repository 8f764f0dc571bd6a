"""`hephaestus dlq`: find each sink's dead-letter queue, and show, replay or purge it (edge:
Connect for the sinks' configs, Kafka for the records).

A replay remembers how far it got as the committed offsets of the consumer group
`hephaestus-dlq-replay.<connector>` (never a member: offsets are set through the admin API), so
a second replay sends only what was parked since. A purge deletes below an offset; both are
written to the audit log before (intent) and after (outcome).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from hephaestus import kafka
from hephaestus.clients import ClientFactory, connect_client
from hephaestus.dlq.model import Dlq, Replay, dlq_topics, end_positions, own_headers, replay_of, start_positions
from hephaestus.errors import HephaestusError, InputError
from hephaestus.kafka import Record
from hephaestus.lock import new_run_id
from hephaestus.project import Cluster, Project
from hephaestus.reconciler.audit import Journal, journal_for
from hephaestus.records import Decoded, SchemaRegistry, decode


def replay_group(connector: str) -> str:
    return f"hephaestus-dlq-replay.{connector}"


def bootstrap_of(cluster: Cluster) -> str:
    if not cluster.kafka_bootstrap:
        raise InputError(
            "project file",
            f"cluster {cluster.name} has no kafka_bootstrap: dead-letter queues are read from Kafka",
            field=f"clusters.{cluster.name}.kafka_bootstrap",
        )
    return cluster.kafka_bootstrap


class NoSuchDlq(HephaestusError):
    """The cluster has no sink of that name with a dead-letter queue (a cluster that cannot be
    read is another error: it is reported, not searched past)."""


def find(
    cluster: Cluster, connector: str | None = None, *, client_factory: ClientFactory = connect_client
) -> list[Dlq]:
    """The DLQs of the cluster's sinks in this deployment's `select` (one Connect listing, one
    batched offsets call), with the timestamp of the oldest record each holds."""
    with client_factory(cluster) as client:
        configs = {n: c.config for n, c in client.fleet().items() if c.type == "sink" and cluster.selects(n)}
    topics = dlq_topics(configs)
    if connector is not None:
        if connector not in topics:
            raise NoSuchDlq(
                f"{connector} is not a sink of cluster {cluster.name} with a dead-letter queue"
                + ("" if connector in configs else " (no such sink in this deployment's select)")
            )
        topics = {connector: topics[connector]}
    bootstrap = bootstrap_of(cluster)
    spans = kafka.spans(bootstrap, sorted(set(topics.values())))
    oldest = _oldest(bootstrap, [s for ss in spans.values() for s in ss if s.depth])
    return [
        Dlq(
            cluster.name,
            name,
            topic,
            spans[topic],
            min(
                (oldest[(s.topic, s.partition)] for s in spans[topic] if (s.topic, s.partition) in oldest), default=None
            ),
        )
        for name, topic in topics.items()
    ]


def _oldest(bootstrap: str, spans: Sequence[kafka.Span]) -> dict[tuple[str, int], int]:
    first = kafka.read(
        bootstrap,
        {(s.topic, s.partition): s.start for s in spans},
        {(s.topic, s.partition): s.start + 1 for s in spans},
    )
    return {(r.topic, r.partition): r.timestamp_ms for r in first if r.timestamp_ms is not None}


@dataclass(frozen=True)
class Shown:
    record: Record
    key: Decoded
    value: Decoded


@contextmanager
def _registry(cluster: Cluster) -> Iterator[SchemaRegistry | None]:
    registry = SchemaRegistry(cluster.schema_registry_url) if cluster.schema_registry_url else None
    try:
        yield registry
    finally:
        if registry is not None:
            registry.close()


def locate(clusters: Sequence[Cluster], connector: str) -> tuple[Cluster, Dlq]:
    """The one cluster with the sink and its DLQ (found by the live configs; read once)."""
    for c in clusters:
        try:
            (dlq,) = find(c, connector)
        except NoSuchDlq:
            continue
        return c, dlq
    raise NoSuchDlq(
        f"no cluster{'' if len(clusters) == 1 else 's'} "
        f"({', '.join(c.name for c in clusters)}) has a sink {connector} with a dead-letter queue"
    )


def show(cluster: Cluster, dlq: Dlq, limit: int) -> list[Shown]:
    froms = {(s.topic, s.partition): s.start for s in dlq.spans}
    with _registry(cluster) as registry:
        records = [
            Shown(r, decode(r.key, registry), decode(r.value, registry))
            for r in kafka.read(bootstrap_of(cluster), froms, end_positions(dlq.spans, None), limit)
        ]
    return records


@dataclass(frozen=True)
class ReplayResult:
    dlq: Dlq
    replays: tuple[Replay, ...]  # what was (or, in a dry run, would be) sent, and what cannot be
    sent: int
    dry_run: bool

    @property
    def refused(self) -> tuple[Replay, ...]:
        return tuple(r for r in self.replays if r.problem)


def replay(project: Project, cluster: Cluster, dlq: Dlq, until: int | None, dry_run: bool) -> ReplayResult:
    """Send back what the DLQ parked since the last replay (up to offset `until`). Records that
    cannot go back (no origin headers) stop the replay before anything is sent."""
    connector = dlq.connector
    bootstrap = bootstrap_of(cluster)
    group = replay_group(connector)
    froms = start_positions(dlq.spans, kafka.committed(bootstrap, [group]).get(group, {}))
    ends = end_positions(dlq.spans, until)
    replays = tuple(replay_of(r) for r in kafka.read(bootstrap, froms, ends))
    result = ReplayResult(dlq, replays, 0, dry_run)
    if dry_run or not replays or result.refused:
        return result
    with _journal(project, cluster) as journal:
        detail = f"{len(replays)} records from {dlq.topic} (up to offsets {_positions(ends)})"
        journal.event(connector, "dlq-replay", "intent", detail)
        sent = kafka.produce(
            bootstrap, [(r.topic, r.record.key, r.record.value, own_headers(r.record)) for r in replays]
        )
        kafka.commit(bootstrap, group, _after(replays, froms))
        journal.event(connector, "dlq-replay", "ok", detail)
    return replace(result, sent=sent)


def _after(replays: Sequence[Replay], froms: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    done = dict(froms)
    for r in replays:
        key = (r.record.topic, r.record.partition)
        done[key] = max(done[key], r.record.offset + 1)
    return done


def purge(project: Project, cluster: Cluster, dlq: Dlq, before: int) -> Dlq:
    """Delete the DLQ's records below offset `before` in every partition; the DLQ afterwards."""
    connector = dlq.connector
    positions = {(s.topic, s.partition): min(before, s.end) for s in dlq.spans if min(before, s.end) > s.start}
    if positions:
        with _journal(project, cluster) as journal:
            detail = f"records of {dlq.topic} below offsets {_positions(positions)}"
            journal.event(connector, "dlq-purge", "intent", detail)
            kafka.delete_before(bootstrap_of(cluster), positions)
            journal.event(connector, "dlq-purge", "ok", detail)
    (after,) = find(cluster, connector)
    return after


def _positions(positions: dict[tuple[str, int], int]) -> str:
    return ", ".join(f"[{p}] {o}" for (_, p), o in sorted(positions.items()))


def _journal(project: Project, cluster: Cluster) -> Journal:
    journal = journal_for(project, cluster.name, new_run_id())
    journal.check()  # an operation that cannot be audited is not done
    return journal

"""`hephaestus dlq`: find each sink's dead-letter queue, and show, replay or purge it (edge:
Connect for the sinks' configs, Kafka for the records).

A replay streams the DLQ twice: first to check every record can go back (origin headers, and
a topic the sink reads: a record naming any other topic, `connect-configs` say, stops the
replay), then to send them in Kafka transactions that also move the consumer group
`hephaestus-dlq-replay.<connector>` past what they sent. A replay killed half-way has sent
each committed chunk once and nothing else; a rerun sends only what was not committed, or
parked since. Replays and purges pass the one gate, take the cluster's lock and are written to
the audit log before (intent) and after (outcome, or failure with how far it got).

A rollout's rollback replays what its sinks parked while it ran the same way
(`replay_parked`, handed to the reconciler from above): one partition's window, never records
parked before it (`model.positions`), inside the reconcile's lock and audit journal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from hephaestus import kafka
from hephaestus.clients import ClientFactory, connect_client
from hephaestus.dlq.model import Bounds, Dlq, Replay, end_positions, own_headers, positions, replay_of
from hephaestus.errors import HephaestusError, InputError
from hephaestus.fleet.topics import dlq_topics, replay_group, unresolved
from hephaestus.kafka import Record
from hephaestus.project import Cluster, Project
from hephaestus.reconciler.rollout.executor import Parked
from hephaestus.records import Decoded, SchemaRegistry, decode
from hephaestus.safety import views
from hephaestus.safety.effects import Effect, of_purge, of_replay
from hephaestus.safety.gate import Allow, Cleared, Item, check
from hephaestus.state.audit import Journal
from hephaestus.state.backend import connect_lock, journal_for
from hephaestus.state.lock import new_run_id


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
    batched offsets call), with the timestamp of the oldest record each holds and how many
    were parked since the last replay or purge (one group-offsets request per sink)."""
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
    oldest = kafka.timestamps(
        bootstrap, {(s.topic, s.partition): s.start for ss in spans.values() for s in ss if s.depth}
    )
    replayed = kafka.committed(bootstrap, [replay_group(n) for n in topics])
    return [
        Dlq(
            cluster.name,
            name,
            topic,
            spans[topic],
            min(
                (oldest[(s.topic, s.partition)] for s in spans[topic] if (s.topic, s.partition) in oldest), default=None
            ),
            configs[name],
            unresolved(spans[topic], replayed.get(replay_group(name), {})),
        )
        for name, topic in topics.items()
    ]


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
    count: int  # records to send (a dry run), or sent
    targets: tuple[str, ...]  # "topic[partition]" they go (or went) to
    dry_run: bool


@dataclass(frozen=True)
class ReplayCheck:
    """The first pass over what a replay would send: how many, where, and what cannot go."""

    count: int = 0
    targets: frozenset[str] = frozenset()
    unheaded: tuple[Replay, ...] = ()  # no origin headers (first few)
    foreign: tuple[Replay, ...] = ()  # a topic the sink does not read (first few)
    problems: int = 0


def _check(records: Iterator[Record], reads: Callable[[str], bool]) -> ReplayCheck:
    """One streaming pass: nothing is held but counts and the first few refusals."""
    count, problems = 0, 0
    targets: set[str] = set()
    unheaded: list[Replay] = []
    foreign: list[Replay] = []
    for r in records:
        found = replay_of(r)
        count += 1
        if not found.problem and reads(found.topic):
            targets.add(f"{found.topic}[{found.partition}]")
            continue
        problems += 1
        kept = unheaded if found.problem else foreign
        if len(kept) < 3:
            kept.append(found)
    return ReplayCheck(count, frozenset(targets), tuple(unheaded), tuple(foreign), problems)


def replay_effects(dlq: Dlq, checked: ReplayCheck) -> tuple[Effect, ...]:
    """A replay re-delivers (onto upserted rows; an insert-mode sink writes them twice); a record
    that cannot go back, or would go to a topic the sink does not read, stops it whole."""
    found = of_replay(dlq.config)
    if checked.unheaded:
        first = checked.unheaded[0]
        found += (Effect("redelivery", f"offset {first.record.offset}: {first.problem}", invariant=True),)
    if checked.foreign:
        first = checked.foreign[0]
        why = f"offset {first.record.offset} names topic {first.topic!r}, which {dlq.connector} does not read"
        found += (Effect("redelivery", why, invariant=True),)
    return found


BATCH = 500  # records per Kafka transaction, whoever asks for the replay


def replay(
    project: Project,
    cluster: Cluster,
    dlq: Dlq,
    bounds: Bounds,
    dry_run: bool,
    allow: Allow,
    lock_timeout_s: float,
    batch: int = BATCH,
) -> ReplayResult:
    """Send back what the DLQ parked since the last replay, within `bounds`, once the gate
    cleared it; nothing is sent when any record cannot go back."""
    bootstrap = bootstrap_of(cluster)
    span, checked, cleared = _judged(bootstrap, dlq, bounds, allow)
    result = ReplayResult(dlq, checked.count, tuple(sorted(checked.targets)), dry_run)
    if dry_run or not checked.count:
        return result
    run_id = new_run_id()
    with (
        connect_lock(project, [cluster], "dlq replay", lock_timeout_s, run_id),
        _journal(project, cluster, run_id) as j,
    ):
        sent = _send(bootstrap, dlq, span, cleared, j, batch)
    return replace(result, count=sent)


def replay_parked(parked: Parked, journal: Journal) -> int:
    """What a rollout's rollback gives back: the records one sink parked while the rollout ran
    (`reconciler.rollout.executor`), the way `dlq replay --partition --from --until` sends them:
    the same gate (with no allowance: nothing destructive is automatic), exactly once, into
    the reconcile's audit journal, under the cluster lock the reconcile already holds."""
    spans = kafka.spans(parked.bootstrap, [parked.topic]).get(parked.topic, ())
    dlq = Dlq(parked.cluster, parked.sink, parked.topic, spans, config=parked.config)
    bounds = Bounds(until=parked.end - 1, since=parked.first, partition=parked.partition)
    span, checked, cleared = _judged(parked.bootstrap, dlq, bounds, Allow())
    return _send(parked.bootstrap, dlq, span, cleared, journal, BATCH) if checked.count else 0


Window = tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]  # from, up to (not incl.)


def _judged(bootstrap: str, dlq: Dlq, bounds: Bounds, allow: Allow) -> tuple[Window, ReplayCheck, Cleared]:
    """The records within `bounds` not yet replayed, checked in one pass and judged at the gate."""
    group = replay_group(dlq.connector)
    span = positions(dlq.spans, kafka.committed(bootstrap, [group]).get(group, {}), bounds)
    checked = _check(kafka.read(bootstrap, *span), lambda t: views.reads_topic(dlq.config, t))
    item = Item(dlq.cluster, dlq.connector, "dlq replay", replay_effects(dlq, checked))
    return span, checked, check([item], allow, CONSENT)


CONSENT = frozenset({"redelivery"})  # what `dlq replay` is: re-delivering parked records


def _send(bootstrap: str, dlq: Dlq, span: Window, cleared: Cleared, journal: Journal, batch: int) -> int:
    if dlq.connector not in cleared.names():
        raise HephaestusError(f"replay of {dlq.connector}: not cleared by the gate (a bug): nothing sent")
    froms, ends = span
    records = (
        (replace(r.record, headers=tuple(own_headers(r.record))), r.topic, r.partition)
        for r in map(replay_of, kafka.read(bootstrap, froms, ends))
    )
    detail = f"records of {dlq.topic} from offsets {_positions(froms)} up to {_positions(ends)}"
    journal.event(dlq.connector, "dlq-replay", "intent", detail)
    try:
        txn = f"hephaestus-dlq-replay.{dlq.cluster}.{dlq.connector}"
        sent = kafka.replay(bootstrap, txn, replay_group(dlq.connector), records, batch)
    except HephaestusError as exc:
        journal.event(dlq.connector, "dlq-replay", "failed", str(exc))
        raise
    journal.event(dlq.connector, "dlq-replay", "ok", f"{sent} {detail}")
    return sent


def purge(project: Project, cluster: Cluster, dlq: Dlq, before: int, lock_timeout_s: float) -> Dlq:
    """Delete the DLQ's records below offset `before` in every partition (the gate consents: it
    is what a purge is), under the cluster's lock; the DLQ afterwards."""
    connector = dlq.connector
    positions = {(s.topic, s.partition): min(before, s.end) for s in dlq.spans if min(before, s.end) > s.start}
    cleared = check([Item(cluster.name, connector, "dlq purge", of_purge())], Allow(), frozenset({"records-deleted"}))
    if positions and connector in cleared.names():
        with (
            connect_lock(project, [cluster], "dlq purge", lock_timeout_s, run_id := new_run_id()),
            _journal(project, cluster, run_id) as journal,
        ):
            detail = f"records of {dlq.topic} below offsets {_positions(positions)}"
            journal.event(connector, "dlq-purge", "intent", detail)
            try:
                kafka.delete_before(bootstrap_of(cluster), positions)
            except HephaestusError as exc:
                journal.event(connector, "dlq-purge", "failed", str(exc))
                raise
            journal.event(connector, "dlq-purge", "ok", detail)
    (after,) = find(cluster, connector)
    return after


def _positions(positions: dict[tuple[str, int], int]) -> str:
    return ", ".join(f"[{p}] {o}" for (_, p), o in sorted(positions.items()))


def _journal(project: Project, cluster: Cluster, run_id: str) -> Journal:
    journal = journal_for(project, cluster.name, run_id)
    journal.check()  # an operation that cannot be audited is not done
    return journal

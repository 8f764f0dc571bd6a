"""`hephaestus status`: every managed connector's health in one pass (edge: Connect, Kafka,
PostgreSQL, heal's state).

Bounded cost, whatever the fleet's size: per cluster one Connect listing, one Kafka metadata
call, two batched offset calls and one group-offsets request per sink (sent together, awaited
once); per project database one query of its slots; one read of heal's state per cluster. The
clusters are read side by side (PROBES at a time): one that does not answer delays no other.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from hephaestus import kafka
from hephaestus.connect.models import LiveConnector
from hephaestus.drift.model import UNKNOWN, DriftReport, Finding
from hephaestus.drift.pipelines import Runs
from hephaestus.drift.read import schema_report
from hephaestus.errors import HephaestusError, InputError, InputErrors
from hephaestus.fleet.causes import classify, deciding
from hephaestus.fleet.desired import load_desired
from hephaestus.fleet.lag import lag, lag_age, waiting
from hephaestus.fleet.read import Listings, Read, listings, read_all
from hephaestus.fleet.slots import Limits, Slot, judge
from hephaestus.fleet.topics import dlq_topics, replay_group, topics_of, unresolved
from hephaestus.probe.model import Freshness, Route
from hephaestus.probe.read import freshness, limits
from hephaestus.probe.routes import routes
from hephaestus.project import Cluster, Project
from hephaestus.state.backend import heal_store
from hephaestus.status.model import ClusterView, ConnectorView, problems_of
from hephaestus.status.versions import PluginRead, with_plugins

PROBES = 4  # clusters read at once: each waits on its own Connect and Kafka, not on the others
LOOK_S = 5.0  # a look's bound on each request to Connect and each Kafka call (graph --live)


def fleet_status(
    project: Project,
    clusters: Sequence[Cluster],
    listed: Listings | None = None,
    read: Read | None = None,
    schema: DriftReport | None = None,
    *,
    timeout_s: float = kafka.TIMEOUT_S,
    plugins: PluginRead | None = None,
) -> list[ClusterView]:
    """`timeout_s` bounds each Kafka call (lag, DLQ ends, the lag's age); `plugins` reads each
    worker's plugins (issue 50: skew and unheld pins are errors), none when not given."""
    listed = listings(clusters) if listed is None else listed
    by_database, errors = read_all(project) if read is None else read
    slots = {s.name: s for found in by_database.values() for s in found}
    schema = schema_report(project, runs_of(clusters, listed)) if schema is None else schema

    def one(c: Cluster) -> ClusterView:
        return _with_schema(_cluster(project, c, listed[c.name], slots, list(errors), timeout_s), schema)

    if len(clusters) < 2:  # nothing to overlap: no thread
        views = [one(c) for c in clusters]
    else:
        with ThreadPoolExecutor(max_workers=min(PROBES, len(clusters)), thread_name_prefix="status") as pool:
            views = list(pool.map(one, clusters))
    views = with_plugins(views, clusters, listed, plugins) if plugins is not None else views
    return with_freshness(project, clusters, listed, views)


def look(project: Project, clusters: Sequence[Cluster], bound_s: float = LOOK_S) -> list[ClusterView]:
    """`status`'s views from one look at the clusters (graph --live): each Connect asked once,
    with no retry, no wait for a starting worker and at most `bound_s` per request; each Kafka
    call bounded alike; the clusters read side by side. What did not answer in time is its
    cluster's error (unknown), never a wait."""
    bounded = [replace(c, timeout_s=min(c.timeout_s, bound_s)) for c in clusters]
    return fleet_status(project, clusters, listings(bounded, glance=True), timeout_s=bound_s)


def with_freshness(
    project: Project, clusters: Sequence[Cluster], listed: Listings, views: list[ClusterView]
) -> list[ClusterView]:
    """Each sink's freshness (hephaestus.probe), read back once for every selected cluster: a
    stale one is a problem; a probe that could not be read is its cluster's error (unknown)."""
    found = [r for c in clusters for r in _routes(c, listed.get(c.name))]
    judged = {(f.route.cluster, f.route.sink): f for f in freshness(project, found, limits(project))}
    return [_fresh(v, judged) for v in views]


def _routes(cluster: Cluster, listed: Mapping[str, LiveConnector] | HephaestusError | None) -> list[Route]:
    if not isinstance(listed, Mapping):
        return []
    return [r for r in routes(cluster.name, {n: c.config for n, c in listed.items()}) if cluster.selects(r.sink)]


def _fresh(view: ClusterView, judged: Mapping[tuple[str, str], Freshness]) -> ClusterView:
    connectors = []
    for c in view.connectors:
        f = judged.get((view.cluster, c.name))
        if f is not None:
            problem = (f"freshness {f.describe()}",) if f.stale else ()
            c = replace(
                c,
                freshness=f.describe(),
                freshness_s=f.seconds,
                freshness_max_s=f.max_s,
                probe_source=f.route.source,
                probe_database=f.route.sink_db,
                problems=(*c.problems, *problem),
            )
        connectors.append(c)
    unread = [
        f"freshness of {f.route.sink}: {f.why}"
        for f in judged.values()
        if f.route.cluster == view.cluster and not f.route.why and f.state == "unknown"
    ]
    return replace(view, connectors=tuple(connectors), errors=(*view.errors, *unread))


def runs_of(clusters: Sequence[Cluster], listed: Listings) -> Runs:
    """Which connectors schema drift is judged for: those a selected cluster lists."""
    names = {c.name: found for c in clusters if not isinstance(found := listed.get(c.name), HephaestusError) and found}

    def runs(cluster: str, connector: str) -> bool:
        return connector in names.get(cluster, {})

    return runs


def _with_schema(view: ClusterView, schema: DriftReport) -> ClusterView:
    """Each connector's schema problems (what its policy does not ignore); a database that could
    not be read is the cluster's error: unknown, never healthy."""
    shown = [f for f in schema.shown if f.code != UNKNOWN]
    connectors = tuple(
        replace(c, schema=mine, problems=(*c.problems, *mine))
        if (mine := tuple(f.describe() for f in shown if c.name in (*f.sinks, *f.sources)))
        else c
        for c in view.connectors
    )
    names = {c.name for c in view.connectors}
    unknown = [f"schema: {f.describe()}" for f in schema.findings if f.code == UNKNOWN and _touches(f, names)]
    return replace(view, connectors=connectors, errors=(*view.errors, *dict.fromkeys(unknown)))


def _touches(f: Finding, names: set[str]) -> bool:
    return f.pipeline == "*" or bool(names & {*f.sinks, *f.sources})


def _cluster(
    project: Project,
    cluster: Cluster,
    listed: Mapping[str, LiveConnector] | HephaestusError,
    slots: Mapping[str, Slot],
    slot_errors: list[str],
    timeout_s: float = kafka.TIMEOUT_S,
) -> ClusterView:
    if isinstance(listed, HephaestusError):
        return ClusterView(cluster.name, cluster.url, (), (f"cluster {cluster.name}: {listed}",), reached=False)
    live = {n: c for n, c in listed.items() if cluster.selects(n)}
    errors = list(slot_errors)
    limits = Limits.of(project.policy)
    views = [_view(cluster.name, c, slots, limits) for _, c in sorted(live.items())]
    views = _with_desired(cluster, views, errors)
    views = _with_heal(project, cluster, views, errors)
    views = _with_kafka(cluster, live, views, errors, timeout_s)
    return ClusterView(
        cluster.name, cluster.url, tuple(replace(v, problems=problems_of(v)) for v in views), tuple(errors)
    )


def _view(cluster: str, c: LiveConnector, slots: Mapping[str, Slot], limits: Limits) -> ConnectorView:
    view = _slotted(cluster, c, slots, limits)
    return replace(view, cause=cause) if (cause := _permanent(c)) else view


def _permanent(c: LiveConnector) -> str:
    """The cause of a failure no restart fixes, read from its trace (fleet.causes), or ""."""
    found = classify(deciding(c.failure_traces))
    return found.text if found is not None and found.permanent else ""


def _slotted(cluster: str, c: LiveConnector, slots: Mapping[str, Slot], limits: Limits) -> ConnectorView:
    tasks = tuple((t.id, t.state) for t in c.tasks)
    if c.type != "source" or not c.config.get("slot.name"):
        return ConnectorView(cluster, c.name, c.type, c.state, tasks)
    slot = slots.get(c.config["slot.name"])
    # The connector names its slot, so it is no orphan; its size and activity still count.
    return ConnectorView(
        cluster,
        c.name,
        c.type,
        c.state,
        tasks,
        slot=c.config["slot.name"],
        slot_retained=slot.retained_bytes if slot else None,
        slot_verdict=judge(slot, [c.name], limits).verdict if slot else None,
        slot_unconfirmed=slot.lag_bytes if slot else None,
        slot_confirmed_lsn=slot.confirmed_lsn if slot else None,
    )


def _with_desired(cluster: Cluster, views: list[ConnectorView], errors: list[str]) -> list[ConnectorView]:
    """The state each connector's file asks for: a connector paused on purpose is healthy."""
    try:
        wanted = {n: d.state for n, d in load_desired(cluster, include_custom=True).items()}
    except (
        InputError,
        InputErrors,
    ) as exc:  # a bad file is reconcile's error to name; status still shows the live side
        errors.append(f"connector files: {exc}")
        wanted = {}
    return [replace(v, desired=wanted.get(v.name, "")) for v in views]


def _with_heal(
    project: Project, cluster: Cluster, views: list[ConnectorView], errors: list[str]
) -> list[ConnectorView]:
    budget = project.heal.max_restarts
    try:
        records = heal_store(project, None).peek(cluster.name)
    except (HephaestusError, InputError) as exc:
        errors.append(f"heal state: {exc}")
        records = {}
    return [replace(v, restarts=records[v.name].count if v.name in records else 0, budget=budget) for v in views]


def _with_kafka(
    cluster: Cluster,
    live: Mapping[str, LiveConnector],
    views: list[ConnectorView],
    errors: list[str],
    timeout_s: float,
) -> list[ConnectorView]:
    if not cluster.kafka_bootstrap:
        return views
    sinks = {n: c.config for n, c in live.items() if c.type == "sink"}
    dlqs = dlq_topics(sinks)
    topics = {n: topics_of(cfg) for n, cfg in sinks.items()}
    try:
        spans = kafka.spans(
            cluster.kafka_bootstrap,
            sorted({*dlqs.values(), *(t for ts in topics.values() for t in ts)}),
            timeout_s=timeout_s,
        )
        # One request for both: each sink's own group, and the group `dlq replay` moves.
        groups = kafka.committed(
            cluster.kafka_bootstrap,
            [*(f"connect-{n}" for n in sinks), *(replay_group(n) for n in dlqs)],
            timeout_s=timeout_s,
        )
    except HephaestusError as exc:
        errors.append(f"kafka: {exc}")
        return views
    committed = {n: groups.get(f"connect-{n}", {}) for n in sinks}
    firsts = {n: waiting(topics[n], spans, committed[n]) for n in sinks}
    stamps = _stamps(cluster.kafka_bootstrap, firsts, errors, timeout_s)
    now_ms = int(time.time() * 1000)
    return [
        replace(
            v,
            dlq_depth=sum(s.depth for s in spans[dlqs[v.name]]) if v.name in dlqs else None,
            dlq_unresolved=(
                unresolved(spans[dlqs[v.name]], groups.get(replay_group(v.name), {})) if v.name in dlqs else None
            ),
            consumer_lag=lag(topics[v.name], spans, committed[v.name]) if topics.get(v.name) else None,
            lag_age_s=lag_age(firsts[v.name], stamps, now_ms),
        )
        if v.name in sinks
        else v
        for v in views
    ]


def _stamps(
    bootstrap: str, firsts: Mapping[str, Mapping[tuple[str, int], int]], errors: list[str], timeout_s: float
) -> dict[tuple[str, int], int]:
    """The timestamp of the first waiting record of every lagging partition: one consumer, one
    record a partition, whatever the number of sinks."""
    positions = {tp: o for found in firsts.values() for tp, o in found.items()}
    try:
        return kafka.timestamps(bootstrap, positions, timeout_s=timeout_s)
    except HephaestusError as exc:
        errors.append(f"kafka: the age of the lag: {exc}")
        return {}

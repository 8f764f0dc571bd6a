"""One heal run over the project's clusters (edge: Connect REST, the state store, Slack)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectClient, ConnectError, LiveConnector
from hephaestus.connect.ready import ReadyOptions, Target, root_cause, wait_ready
from hephaestus.connect.redact import sensitive_values
from hephaestus.drift.model import DriftReport, Finding
from hephaestus.drift.read import schema_report
from hephaestus.fleet.causes import deciding
from hephaestus.heal import schema
from hephaestus.heal.policy import Decision, HealConfig, Observed, decide
from hephaestus.notify import slack
from hephaestus.project import Cluster, Project
from hephaestus.safety.effects import of_restart, of_state
from hephaestus.safety.gate import Allow, Cleared, judge, passed
from hephaestus.safety.gate import Item as GateItem
from hephaestus.safety.values import NO_RESOLVER, Resolver
from hephaestus.settings import HealSettings
from hephaestus.state.backend import DEFAULT_TIMEOUT_S, connect_lock, heal_store
from hephaestus.state.heal import HealStore

# "permanent": FAILED for a cause no restart fixes (heal.causes), so never restarted: failing.
FAILING = frozenset({"restart", "backoff", "exhausted", "refused", "permanent", schema.HELD})
POLL_S = 1.0  # how often restarted connectors are looked at while heal waits for them
START_S = 30.0  # how long a restarted connector may take to be RUNNING at all


@dataclass(frozen=True)
class HealOptions:
    config: HealConfig = HealConfig()
    dry_run: bool = False
    # How long a restarted connector must stay RUNNING to count as healed.
    restart_wait_s: float = HealSettings().restart_wait_s
    allow: Allow = Allow()  # --allow-destructive: a restart's destructive effects (a re-snapshot) may go
    resolve: Resolver = field(default=NO_RESOLVER, compare=False)
    schema: DriftReport = field(default=DriftReport(), compare=False)  # the sources' schema drift (heal.schema)

    @property
    def ready(self) -> ReadyOptions:
        # A poison record fails a task again a moment after it starts: RUNNING for the whole
        # wait, after the restart itself took effect (START_S), is what healed means.
        return ReadyOptions(timeout_s=self.restart_wait_s + START_S, stable_s=self.restart_wait_s, poll_s=POLL_S)


@dataclass(frozen=True)
class ConnectorHeal:
    name: str
    verdict: str
    reason: str
    healed: bool | None = None  # after a restart: RUNNING again within restart_wait_s?
    failed_tasks: tuple[int, ...] = ()
    trace: str = ""  # first lines, secrets masked
    cause: str = ""  # the rule of heal.causes its trace matched (e.g. not-null-violation), if any


@dataclass(frozen=True)
class ClusterHeal:
    cluster: str
    url: str
    items: tuple[ConnectorHeal, ...] = ()
    error: str = ""
    notified: tuple[str, ...] = field(default=())

    @property
    def still_failing(self) -> bool:
        # A restarted connector counts as healed only when seen RUNNING again (never in a dry run).
        return any(i.verdict in FAILING and i.healed is not True for i in self.items)


def observe(c: LiveConnector, mended: bool = False) -> Observed:
    return Observed(c.name, c.state, tuple(t.state for t in c.tasks), _trace(c), mended)


def _trace(c: LiveConnector, causes: int = 3) -> str:
    """The trace's first line and its last `Caused by:` lines: the root cause, not stack frames."""
    raw = deciding(c.failure_traces)
    return root_cause(raw, sensitive_values(c.config), causes, sep="\n") if raw else ""


def heal_cluster(
    client: ConnectClient,
    cluster: Cluster,
    store: HealStore,
    options: HealOptions,
    webhook: str | None,
    now: Callable[[], float] = time.time,
) -> ClusterHeal:
    try:
        # Another deployment's connectors (outside `select`) are its own to heal.
        fleet = {n: c for n, c in client.fleet().items() if cluster.selects(n)}
    except ConnectError as exc:
        return ClusterHeal(cluster.name, cluster.url, error=str(exc))
    records = store.load(cluster.name)
    broken = schema.broken(options.schema, fleet)
    decisions = [
        decide(observe(c, options.schema.in_step(n)), records.get(n), now(), options.config)
        for n, c in fleet.items()
        if n not in broken
    ]
    items, refused = _acted(client, cluster, fleet, decisions, broken, options)
    if options.dry_run:
        return ClusterHeal(cluster.name, cluster.url, tuple(items))
    items = _await_healed(client, items, options)
    # A restart the gate refused was not made: its connector keeps the record it had.
    kept = {d.name: records.get(d.name) if d.name in refused else d.record for d in decisions}
    kept.update({n: records.get(n) for n in broken})  # a held sink keeps what heal spent on it
    store.save(cluster.name, {n: r for n, r in kept.items() if r is not None})
    by_name = {i.name: i for i in items}
    notified = tuple(d.name for d in decisions if d.notify and _notify(webhook, cluster, by_name[d.name]))
    return ClusterHeal(cluster.name, cluster.url, tuple(items), notified=notified)


def _acted(
    client: ConnectClient,
    cluster: Cluster,
    fleet: Mapping[str, LiveConnector],
    decisions: Sequence[Decision],
    broken: Mapping[str, Finding],
    options: HealOptions,
) -> tuple[list[ConnectorHeal], dict[str, str]]:
    """The restarts and the pauses judged at the gate together, then made (each on its own:
    one refused never holds back another); what the gate refused, by name."""
    pauses = [_pause(cluster, fleet[n], options) for n in schema.to_pause(broken, fleet)]
    restarts = [_restart(cluster, fleet[d.name], options) for d in decisions if d.verdict == "restart"]
    verdict = judge([*restarts, *pauses], options.allow)
    cleared = passed(verdict, cluster.name)
    refused = {r.name: r.message for r in verdict.refusals}
    items = [_act(client, fleet[d.name], d, options, cleared, refused.get(d.name, "")) for d in decisions]
    paused = {p.name for p in pauses} & cleared.names()
    items += [_hold(client, fleet[n], f, options, n in paused) for n, f in broken.items()]
    return items, refused


def _restart(cluster: Cluster, c: LiveConnector, options: HealOptions) -> GateItem:
    """A restart of FAILED tasks: what it does to data (a source that snapshots on each start
    reads every table again), judged at the one gate."""
    return GateItem(cluster.name, c.name, "restart", of_restart(c.config, options.resolve))


def _pause(cluster: Cluster, c: LiveConnector, options: HealOptions) -> GateItem:
    """A pause of a sink its source's schema change breaks, judged at the one gate like every write."""
    return GateItem(cluster.name, c.name, "pause", of_state(c.config, c.state, "PAUSED", options.resolve))


def _hold(client: ConnectClient, c: LiveConnector, f: Finding, options: HealOptions, pause: bool) -> ConnectorHeal:
    """A broken sink: never restarted; paused first when its policy says so (not in a dry run)."""
    failed = tuple(t.id for t in c.tasks if t.state == "FAILED")
    if not pause or options.dry_run:
        return ConnectorHeal(c.name, schema.HELD, schema.reason(f, False), None, failed, _trace(c))
    try:
        client.pause(c.name)
    except ConnectError as exc:
        return ConnectorHeal(
            c.name, schema.HELD, f"{schema.reason(f, False)}; pause failed: {exc}", None, failed, _trace(c)
        )
    return ConnectorHeal(c.name, schema.HELD, schema.reason(f, True), None, failed, _trace(c))


def _act(
    client: ConnectClient, c: LiveConnector, d: Decision, options: HealOptions, cleared: Cleared, refused: str
) -> ConnectorHeal:
    failed = tuple(t.id for t in c.tasks if t.state == "FAILED")
    trace = _trace(c) if d.verdict != "healthy" else ""
    item = ConnectorHeal(c.name, d.verdict, d.reason, None, failed, trace, d.cause.rule if d.cause else "")
    if d.verdict == "restart" and c.name not in cleared.names():
        return replace(item, verdict="refused", reason=f"{d.reason}; not restarted: {refused}", healed=False)
    if d.verdict != "restart" or options.dry_run:
        return item  # a permanent cause among them: never restarted
    try:
        client.restart(c.name, include_tasks=True, only_failed=True)
    except ConnectError as exc:  # counted all the same (Strimzi does too): no tight retry loop
        return replace(item, reason=f"{d.reason}; restart call failed: {exc}", healed=False)
    return item


def _await_healed(client: ConnectClient, items: Sequence[ConnectorHeal], options: HealOptions) -> list[ConnectorHeal]:
    """A restarted connector is healed when it is RUNNING and stays so for the stability
    window (the shared readiness waiter): a poison record fails a task again a moment after
    it starts, so an early RUNNING proves nothing."""
    pending = [Target(i.name) for i in items if i.verdict == "restart" and i.healed is None]
    verdicts = wait_ready(client, pending, options.ready)
    return [replace(i, healed=verdicts[i.name].ok) if i.name in verdicts else i for i in items]


_NOTICE = {"exhausted": "restart budget exhausted", "permanent": "a permanent error, not restarted"}


def _notify(webhook: str | None, cluster: Cluster, item: ConnectorHeal) -> bool:
    """Built from the item already computed: its failed tasks and masked trace."""
    what = _NOTICE.get(item.verdict, "failed again after a restart")
    tasks = ", ".join(str(t) for t in item.failed_tasks) or "-"
    esc = slack.escape  # names, reasons and traces come from the cluster
    text = (
        f"hephaestus heal: `{esc(item.name)}` on cluster *{cluster.name}*: {what} ({esc(item.reason)}); "
        f"failed tasks: {tasks}\n```{esc(item.trace or 'no trace')}```"
    )
    return slack.post(webhook, text)


def heal_project(
    project: Project,
    clusters: Sequence[Cluster],
    dry_run: bool,
    state_file: Path | None,
    client_factory: ClientFactory = connect_client,
    lock_timeout_s: float = DEFAULT_TIMEOUT_S,
    allow: Allow = Allow(),
) -> list[ClusterHeal]:
    names = {c.name for c in clusters}
    found = schema_report(project, lambda c, n: c in names and project.clusters[c].selects(n))
    options = HealOptions(
        HealConfig.of(project.heal), dry_run, project.heal.restart_wait_s, allow, project.resolver(), found
    )
    webhook = None if dry_run else project.webhook()
    # The cluster lock, whatever state file is used: two heal runs (or a heal and a
    # reconcile) never act on one cluster at once. A dry run acts on nothing.
    lock = nullcontext() if dry_run else connect_lock(project, clusters, "heal", lock_timeout_s)
    with lock, heal_store(project, state_file) as store:
        results = []
        for cluster in clusters:  # one at a time: the store is one session
            with client_factory(cluster) as client:
                results.append(heal_cluster(client, cluster, store, options, webhook))
    return results

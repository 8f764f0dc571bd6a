"""The edges around the pure planner (`reconciler.planner`): each cluster read once, before it
is planned (its listing, Kafka identity, ownership and fingerprints; then, with git known, the
plugins' secret keys where a value is masked, the health of what the plan leaves alone, the
publications its sources need, Kafka's topics when a sink starts to read some), and after it
the redactor taught what the plan shows; after an apply, the secrets' fingerprints recorded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from functools import partial
from typing import TypeVar

from hephaestus import kafka
from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectClient, ConnectError, LiveConnector
from hephaestus.drift.model import DriftReport
from hephaestus.drift.read import schema_report
from hephaestus.errors import HephaestusError, InputError
from hephaestus.fleet import pluginread
from hephaestus.fleet.model import Desired, Live, config_hash
from hephaestus.project import Cluster, Project
from hephaestus.publications import db as pubdb
from hephaestus.publications.change import PublicationChange
from hephaestus.reconciler import health, rotation, sealed
from hephaestus.reconciler.outcome import Basis, Secrets, StepResult
from hephaestus.reconciler.plan import Plan, Policy, Step, Unhealthy
from hephaestus.reconciler.planner import KafkaTopics, Needs, Seal, Seen, Wanted, needs
from hephaestus.safety.seal import new_salt
from hephaestus.secrets import REDACTOR, is_sensitive
from hephaestus.state import ownership
from hephaestus.state.backend import prints_store
from hephaestus.state.ownership import Claim, owns
from hephaestus.state.prints import Prints, PrintsUnavailable, fingerprints
from hephaestus.urls import normalised_url

T = TypeVar("T")


@dataclass(frozen=True)
class Clients:
    """Each cluster's Connect client, or why none could be made (its password's variable unset
    here): the cluster's error names it, as `import` does (issue 48)."""

    made: Mapping[str, ConnectClient]
    why: Mapping[str, str] = field(default_factory=dict)

    def get(self, name: str) -> ConnectClient | None:
        return self.made.get(name)

    def missing(self, name: str) -> str:
        return self.why.get(name, "no client was made")


@dataclass(frozen=True)
class Read:
    """One cluster as read at the start of a run, before git's files are known."""

    cluster: Cluster
    fleet: Mapping[str, LiveConnector] | None = None
    kafka: str | None = None
    claims: Mapping[str, Claim] = field(default_factory=dict, hash=False)  # the ownership record here
    prints: tuple[str, Prints] = ("", {})  # the salt and the secrets' fingerprints recorded (state.prints)
    error: str = ""


def read(clients: Clients, cluster: Cluster, store: ownership.OwnershipStore, project: Project) -> Read:
    """A selected cluster: its listing (waiting for a starting worker, retrying what is
    transient), its Kafka identity, what this deployment owns there."""
    client = clients.get(cluster.name)
    if client is None:
        return Read(cluster, error=clients.missing(cluster.name))
    try:
        fleet = client.fleet()
        claims = store.owned(project.name, cluster.name)
        prints = prints_store(project).read(project.name, cluster.name)
    except (ConnectError, ownership.OwnershipUnavailable, PrintsUnavailable) as exc:
        return Read(cluster, error=str(exc))
    return Read(cluster, fleet, _kafka(client), claims, prints)


def glance(clients: Clients, cluster: Cluster) -> Read:
    """Another cluster of the project, for the fleet's rules only: one listing, asked once."""
    client = clients.get(cluster.name)
    if client is None:
        return Read(cluster, error=clients.missing(cluster.name))
    try:
        return Read(cluster, client.glance(), _kafka(client))
    except ConnectError as exc:
        return Read(cluster, error=str(exc))


def _kafka(client: ConnectClient) -> str | None:
    try:
        return client.kafka_cluster_id()
    except ConnectError:
        return None  # a proxy that hides GET /: the fleet's rules take it as any Kafka


def targeted(found: Mapping[str, T], globs: Sequence[str]) -> dict[str, T]:
    return {n: v for n, v in found.items() if not globs or any(fnmatchcase(n, g) for g in globs)}


def check_targets(
    globs: Sequence[str],
    clusters: Sequence[Cluster],
    reads: Mapping[str, Read],
    desired: Mapping[str, Mapping[str, Desired]],
) -> None:
    """A --target that names nothing in git or live (in any selected cluster's select) is a mistake."""
    names = {n for c in clusters for n in desired.get(c.name, {})}
    names |= {n for c in clusters for n in (reads[c.name].fleet or {}) if c.selects(n)}
    if any(reads[c.name].fleet is None for c in clusters):
        return  # a cluster could not be read: its error is the report
    empty = [g for g in globs if not targeted(dict.fromkeys(names), [g])]
    if empty:
        raise InputError("--target", f"{empty[0]!r} matches no connector in git or live on the selected clusters")


@dataclass(frozen=True)
class SealedCluster:
    """A sealed plan's part for one cluster, as the planner sees it (`planner.Seal`)."""

    seal: sealed.Sealed
    name: str

    def identity(self, url: str, kafka: str | None) -> str:
        return sealed.identity(self.seal, self.name, url, kafka)

    def steps(self, desired: Mapping[str, Desired], live: Mapping[str, Live]) -> tuple[Step, ...]:
        return sealed.steps(self.seal, self.name, desired, live)

    def publications(self) -> tuple[PublicationChange, ...]:
        return sealed.publications(self.seal, self.name)

    def adopt(self) -> tuple[str, ...]:
        return sealed.adopt(self.seal, self.name)

    def stale(self, p: Plan, basis: Basis) -> str:
        return sealed.stale(self.seal, self.name, p, basis)


def seen(
    client: ConnectClient,
    project: Project,
    r: Read,
    wanted: Wanted,
    policy: Policy,
    seal: Seal | None,
    factory: ClientFactory = connect_client,
) -> Seen:
    """Everything the cluster's plan needs, read once; what the steps need (`planner.needs`)
    is read only when they need it (each worker through `factory`). `r.fleet` is the listing."""
    assert r.fleet is not None
    cluster = r.cluster
    # Connectors outside `select` belong to another deployment sharing the cluster: never
    # planned, so never deleted (e.g. stag_* connectors seen by the local_* deployment).
    mine = targeted({n: c for n, c in r.fleet.items() if cluster.selects(n)}, wanted.targets)
    basis, masked = _basis(client, r, mine, wanted, policy)
    every = {n: Live(n, c.config, c.type, c.state) for n, c in r.fleet.items()} | dict(basis.live)
    found = Seen(
        cluster=cluster.name, url=cluster.url, shared=not cluster.select, every=every, basis=basis, masked=masked
    )
    need = needs(found, wanted, policy, seal)
    if need is None:
        return found
    return replace(
        _needed(client, project, r, found, need, wanted, mine),
        plugins=pluginread.read(r.cluster, client, factory) if need.plugins else None,
    )


def _needed(
    client: ConnectClient,
    project: Project,
    r: Read,
    found: Seen,
    need: Needs,
    wanted: Wanted,
    mine: Mapping[str, LiveConnector],
) -> Seen:
    """What the plan's steps need read: the health of what they leave alone, the sources'
    publications (a sealed plan's preconditions), Kafka's topics when a sink starts to read."""
    pubs = pubdb.published(project, wanted.desired, found.basis.live)
    published = {f"{d}/{pub}": v for (d, pub), v in sorted(pubs.state.items())}
    return replace(
        found,
        basis=replace(found.basis, published=published),
        health=_health(client, need, wanted, mine),
        publications=pubs,
        topics=_topics(r.cluster, need, wanted),
        schema=DriftReport() if wanted.drift_only else _schema(project, r.cluster, wanted),
        draft=need.draft,
    )


def _schema(project: Project, cluster: Cluster, wanted: Wanted) -> DriftReport:
    """The schema drift of the pipelines git's connectors of this cluster run (hephaestus.drift):
    what their policies report, unknowns included (never read as fine). --drift-only leaves it
    out with the health: it asks whether git and Connect agree, not whether the data flows."""
    runs = {n for n in wanted.desired if cluster.selects(n)}
    return schema_report(project, lambda c, n: c == cluster.name and n in runs)


def _basis(
    client: ConnectClient, r: Read, mine: Mapping[str, LiveConnector], wanted: Wanted, policy: Policy
) -> tuple[Basis, dict[str, tuple[str, ...]]]:
    """The connectors in scope, their masked secrets taken as git's when unchanged, what this
    deployment owns of them, the fingerprints: a sealed plan's preconditions."""
    typed = {n: _typed(client, c) for n, c in mine.items() if n in wanted.desired}
    masked = {n: _masked(c, typed[n]) for n, c in mine.items() if n in wanted.desired}
    secrets = _secrets(r, wanted, policy, {n: rotation.secret_keys(mine[n].config, t) for n, t in typed.items()})
    live = {n: _live(c, wanted.desired.get(n), masked.get(n, ()), secrets) for n, c in mine.items()}
    owned = frozenset(n for n, c in r.claims.items() if n in live and owns(c, partial(config_hash, live[n].config)))
    return Basis(normalised_url(r.cluster.url), r.kafka, live, owned, secrets=secrets), masked


def _health(
    client: ConnectClient, need: Needs, wanted: Wanted, mine: Mapping[str, LiveConnector]
) -> tuple[Unhealthy, ...]:
    """The health of the managed connectors the plan does not write (those written are judged
    by readiness after the write)."""
    if wanted.drift_only:
        return ()
    kept = {n: d for n, d in wanted.desired.items() if n in need.kept}
    statuses = health.past_grace(client, kept, {n: c.status for n, c in mine.items()}, wanted.unassigned_grace_s)
    return health.findings(kept, statuses, wanted.unassigned_grace_s)


def _topics(cluster: Cluster, need: Needs, wanted: Wanted) -> KafkaTopics | None:
    """The topics Kafka has and those ksqlDB migrations write, read once and only when a sink
    starts to read topics."""
    if not need.topics:
        return None
    if not cluster.kafka_bootstrap:
        return KafkaTopics(unchecked="no kafka_bootstrap")
    try:
        names = kafka.topic_names(cluster.kafka_bootstrap)
    except HephaestusError as exc:
        return KafkaTopics(error=str(exc))
    return KafkaTopics(names, written=wanted.migrations() if wanted.migrations else {})


def _secrets(r: Read, wanted: Wanted, policy: Policy, typed: Mapping[str, frozenset[str]]) -> Secrets | None:
    """The fingerprints now, under the recorded salt (a new one when none: the apply records
    it); None for a dry run with nothing recorded, which has nothing to compare. `typed`: the
    keys printed besides those named like secrets (rotation.secret_keys)."""
    salt, before = r.prints
    if wanted.dry_run and not salt:
        return None
    salt = salt or new_salt()
    return Secrets(
        salt, rotation.current(wanted.desired, policy.resolve, fingerprints(salt).value, before, typed), before
    )


def _typed(client: ConnectClient, c: LiveConnector) -> frozenset[str]:
    """The keys the plugin types PASSWORD, asked only when a value looks masked (a fleet
    without masks costs no request; once per class)."""
    return client.secret_keys_known(c.connector_class) if rotation.masked_keys(c.config) else frozenset()


def _masked(c: LiveConnector, typed: frozenset[str]) -> tuple[str, ...]:
    """Keys whose live value is a mask of a secret: named like one, or typed PASSWORD."""
    return tuple(k for k in rotation.masked_keys(c.config) if k in typed or is_sensitive(k))


def _live(c: LiveConnector, desired: Desired | None, masked: tuple[str, ...], secrets: Secrets | None) -> Live:
    lv = Live(c.name, c.config, c.type, c.state, c.version)
    if desired is None or not masked:
        return lv
    now = dict(secrets.now.get(c.name, {})) if secrets else {}
    before = dict(secrets.before.get(c.name, {})) if secrets else {}
    return rotation.unmasked(lv, desired, masked, now, before)


def learn_secrets(client: ConnectClient, p: Plan, desired: Mapping[str, Desired], live: Mapping[str, Live]) -> None:
    """Teach the redactor what this plan may show: ask the live plugins which keys are
    PASSWORD-typed (once per class, and only for classes with a diff or an unhealthy
    connector whose trace is shown: a no-op stays one listing), then every secret value of
    the desired configs, and of the live ones again only if a plugin named new secret keys
    (fleet() learnt them under the keys known then). Name patterns still apply when a plugin
    cannot be asked."""
    unhealthy = {u.name for u in p.health}
    shown = {s.connector_class for s in p.steps if (s.changes or s.name in unhealthy) and s.connector_class}
    keys_before = REDACTOR.key_count
    for cls in sorted(shown):
        client.secret_keys_known(cls)
    relearn = REDACTOR.key_count != keys_before
    for config in (*(d.config for d in desired.values()), *(lv.config for lv in live.values() if relearn)):
        REDACTOR.learn_config(config)


def remember(project: Project, cluster: Cluster, p: Plan, results: Sequence[StepResult], basis: Basis | None) -> str:
    """After an apply: each connector's fingerprints as rotation.settled says ("" or what failed)."""
    secrets = basis.secrets if basis else None
    if secrets is None:
        return ""
    ok = frozenset(r.name for r in results if r.ok)
    # config/validate of each write taught the redactor its plugin's PASSWORD keys (connect.parse)
    now = rotation.with_typed(p, secrets.now, ok, is_sensitive, fingerprints(secrets.salt).value)
    found = rotation.settled(p, now, secrets.before, ok)
    try:
        prints_store(project).write(project.name, cluster.name, found, secrets.salt)
    except (PrintsUnavailable, InputError) as exc:
        return f"applied, but the secrets' fingerprints were not recorded: {exc}"
    return ""

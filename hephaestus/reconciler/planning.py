"""Planning one cluster from what was read (edge: health polls Connect, publications are read
from the source databases): git's plan or a sealed plan's steps, with the health of the
connectors it does not write, the publication changes its sources need, and what the plan
was computed from (`Basis`: a sealed plan's preconditions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import TypeVar

from hephaestus import kafka
from hephaestus.connect import ConnectClient, LiveConnector
from hephaestus.errors import HephaestusError, InputError
from hephaestus.project import Cluster, Project, normalised_url
from hephaestus.reconciler import health, pubdb, publications, rotation, sealed, sinktopics
from hephaestus.reconciler.model import Desired, Live, config_hash
from hephaestus.reconciler.outcome import Basis, ClusterOutcome, Secrets, StepResult
from hephaestus.reconciler.plan import Plan, Policy, Scope, Step, changes_of, is_ksqldb_managed, plan, step_effects
from hephaestus.safety.seal import new_salt
from hephaestus.safety.values import Resolver
from hephaestus.secrets import REDACTOR, is_sensitive
from hephaestus.state.backend import prints_store
from hephaestus.state.ownership import Claim, owns
from hephaestus.state.prints import Prints, PrintsUnavailable, fingerprints

T = TypeVar("T")


@dataclass(frozen=True)
class Read:
    """One cluster as read at the start of a run."""

    cluster: Cluster
    fleet: Mapping[str, LiveConnector] | None = None
    kafka: str | None = None
    claims: Mapping[str, Claim] = field(default_factory=dict, hash=False)  # the ownership record here
    prints: tuple[str, Prints] = ("", {})  # the salt and the secrets' fingerprints recorded (state.prints)
    error: str = ""


@dataclass(frozen=True)
class Wanted:
    """What git wants of one cluster, and how the run looks at it."""

    desired: Mapping[str, Desired]
    held: frozenset[str]  # custom connectors this run leaves out
    targets: tuple[str, ...]
    drift_only: bool
    dry_run: bool
    unassigned_grace_s: float


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


def planned(
    client: ConnectClient, project: Project, read: Read, wanted: Wanted, policy: Policy, seal: sealed.Sealed | None
) -> ClusterOutcome:
    """The cluster planned (or its sealed steps taken), not yet judged by the gate."""
    cluster = read.cluster
    if read.error or read.fleet is None:
        return ClusterOutcome(cluster.name, cluster.url, None, error=read.error)
    # Connectors outside `select` belong to another deployment sharing the cluster: never
    # planned, so never deleted (e.g. stag_* connectors seen by the local_* deployment).
    mine = targeted({n: c for n, c in read.fleet.items() if cluster.selects(n)}, wanted.targets)
    typed = {n: _typed(client, c) for n, c in mine.items() if n in wanted.desired}
    masked = {n: _masked(c, typed[n]) for n, c in mine.items() if n in wanted.desired}
    secrets = _secrets(read, wanted, policy, {n: rotation.secret_keys(mine[n].config, t) for n, t in typed.items()})
    live = {n: _live(c, wanted.desired.get(n), masked.get(n, ()), secrets) for n, c in mine.items()}
    owned = frozenset(n for n, c in read.claims.items() if n in live and owns(c, config_hash(live[n].config)))
    basis = Basis(normalised_url(cluster.url), read.kafka, live, owned, secrets=secrets)
    if seal is not None and (foreign := sealed.identity(seal, cluster.name, basis.url, read.kafka)):
        return ClusterOutcome(cluster.name, cluster.url, None, error=foreign, basis=basis)
    scope = Scope(owned, wanted.held, strangers(cluster, wanted.desired, wanted.held, live, owned))
    if seal is None:
        p = _rotated(plan(cluster.name, wanted.desired, live, policy, scope), secrets, policy)
        unknown = [
            w for n, k in masked.items() for w in rotation.unrecorded(n, wanted.desired[n], k, _before(secrets, n))
        ]
        p = replace(p, warnings=(*p.warnings, *unknown))
    else:
        p = _sealed(seal, cluster, wanted, live, owned, policy)
    p = with_health(client, p, wanted, mine)
    learn_secrets(client, p, wanted.desired, live)
    unread = _unread(p, wanted, policy) if secrets else ()
    p = replace(p, warnings=(*p.warnings, *(u.warning() for u in unread)))
    p, problems, published = with_publications(project, p, wanted.desired, live, keep=seal is not None)
    basis = replace(basis, published=published)
    if seal is not None:
        stale = sealed.stale(seal, cluster.name, p, basis)
        p = replace(p, refusals=(stale,) if stale else ())
    every = {n: Live(n, c.config, c.type, c.state) for n, c in read.fleet.items()} | live
    p = with_topics(cluster, p, every, policy.resolve)
    error = "" if wanted.dry_run else rotation.unread_error(unread)  # a dry run records nothing: loses nothing
    return ClusterOutcome(cluster.name, cluster.url, p, invalid=problems, basis=basis, error=error)


def with_topics(cluster: Cluster, p: Plan, live: Mapping[str, Live], resolve: Resolver) -> Plan:
    """The plan checked against the topics Kafka has (`reconciler.sinktopics`): listed once, and
    only when a sink starts to read topics; an unreadable Kafka is a warning, never a crash."""
    if not (sinktopics.starting(p, live) or sinktopics.regexes(p)):
        return p
    if not cluster.kafka_bootstrap:
        return sinktopics.unchecked(p, live, "no kafka_bootstrap")
    try:
        existing = kafka.topic_names(cluster.kafka_bootstrap)
    except HephaestusError as exc:
        return replace(p, warnings=(*p.warnings, f"topics not checked: {exc}"))
    return sinktopics.checked(p, live, existing, resolve)


def _secrets(read: Read, wanted: Wanted, policy: Policy, typed: Mapping[str, frozenset[str]]) -> Secrets | None:
    """The fingerprints now, under the recorded salt (a new one when none: the apply records
    it); None for a dry run with nothing recorded, which has nothing to compare. `typed`: the
    keys printed besides those named like secrets (rotation.secret_keys)."""
    salt, before = read.prints
    if wanted.dry_run and not salt:
        return None
    salt = salt or new_salt()
    return Secrets(
        salt, rotation.current(wanted.desired, policy.resolve, fingerprints(salt).value, before, typed), before
    )


def _before(secrets: Secrets | None, name: str) -> dict[str, str]:
    return dict(secrets.before.get(name, {})) if secrets else {}


def _typed(client: ConnectClient, c: LiveConnector) -> frozenset[str]:
    """The keys the plugin types PASSWORD, asked only when a value looks masked (a fleet
    without masks costs no request; once per class)."""
    return client.secret_keys_known(c.connector_class) if rotation.masked_keys(c.config) else frozenset()


def _masked(c: LiveConnector, typed: frozenset[str]) -> tuple[str, ...]:
    """Keys whose live value is a mask of a secret: named like one, or typed PASSWORD."""
    return tuple(k for k in rotation.masked_keys(c.config) if k in typed or is_sensitive(k))


def _unread(p: Plan, wanted: Wanted, policy: Policy) -> tuple[rotation.Unread, ...]:
    """The secrets of the connectors planned whose file is here and could not be read."""
    planned = {s.name for s in p.steps}
    return rotation.unreadable({n: d for n, d in wanted.desired.items() if n in planned}, policy.resolve)


def _live(c: LiveConnector, desired: Desired | None, masked: tuple[str, ...], secrets: Secrets | None) -> Live:
    lv = Live(c.name, c.config, c.type, c.state)
    if desired is None or not masked:
        return lv
    now = dict(secrets.now.get(c.name, {})) if secrets else {}
    return rotation.unmasked(lv, desired, masked, now, _before(secrets, c.name))


def _rotated(p: Plan, secrets: Secrets | None, policy: Policy) -> Plan:
    return rotation.with_restarts(p, secrets.now, secrets.before, policy.resolve) if secrets else p


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


def _sealed(
    seal: sealed.Sealed, cluster: Cluster, wanted: Wanted, live: dict[str, Live], owned: frozenset[str], policy: Policy
) -> Plan:
    """A sealed plan's steps, as sealed; their changes and effects are judged again from the
    live side (which the preconditions then hold equal to what the plan saw)."""
    steps = [_with_changes(s, live, policy) for s in sealed.steps(seal, cluster.name, wanted.desired, live)]
    return Plan(
        cluster.name,
        tuple(replace(s, effects=step_effects(s, live, policy.resolve)) for s in steps),
        publications=sealed.publications(seal, cluster.name),
        adopt=sealed.adopt(seal, cluster.name),
    )


def _with_changes(step: Step, live: Mapping[str, Live], policy: Policy) -> Step:
    before = live.get(step.renamed_from or step.name)
    if before is None or step.action == "delete":
        return step
    return replace(step, changes=changes_of(before.config, step.config, policy.ignore_keys))


def with_publications(
    project: Project, p: Plan, desired: Mapping[str, Desired], live: Mapping[str, Live], keep: bool = False
) -> tuple[Plan, publications.Problems, dict[str, object]]:
    """The plan with the publication changes its sources need (`keep`: a sealed plan's own),
    read from each source database the project names (one it does not name is left alone, with
    a warning); and what was read, for the preconditions."""
    found = publications.sources(desired, live)
    state: dict[tuple[str, str], publications.Published] = {}
    warnings: list[str] = []
    problems: publications.Problems = {}
    for database, pub in sorted({(s.database, s.publication) for s in found}):
        users = [s.connector for s in found if (s.database, s.publication) == (database, pub)]
        named = {t for s in found if s.connector in users for t in (*s.tables, s.signal_table) if t}
        if database not in project.databases:
            warnings.append(
                f"publication {pub} of database {database} not checked ({', '.join(users)}): "
                f"add {database} to the project's databases for publication upkeep"
            )
            continue
        try:
            state[(database, pub)] = pubdb.read(project.dsn(database, "publication upkeep"), database, pub, named)
        except HephaestusError as exc:
            problems.update({u: {"publication.name": (f"cannot read publication {pub}: {exc}",)} for u in users})
    changes, wrong = publications.upkeep(found, state)
    read: dict[str, object] = {f"{d}/{pub}": v for (d, pub), v in sorted(state.items())}
    p = replace(p, publications=p.publications if keep else changes, warnings=(*p.warnings, *warnings))
    return p, {**problems, **wrong}, read


def strangers(
    cluster: Cluster,
    desired: Mapping[str, Desired],
    held: frozenset[str],
    live: Mapping[str, Live],
    owned: frozenset[str],
) -> tuple[str, ...]:
    """A cluster without `select` whose fleet holds connectors neither in git nor owned (nor
    ksqlDB's) may be shared with another deployment: say so, once, in the plan."""
    if cluster.select:
        return ()
    found = sorted(
        n for n in live if n not in desired and n not in held and n not in owned and not is_ksqldb_managed(n)
    )
    if not found:
        return ()
    shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
    return (
        f"cluster {cluster.name} has no `select` and {len(found)} live connectors are neither in git "
        f"nor owned ({shown}): if another deployment shares this cluster, give this one a select",
    )


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


def with_health(client: ConnectClient, p: Plan, wanted: Wanted, mine: Mapping[str, LiveConnector]) -> Plan:
    """The plan with the health of the managed connectors it does not write (those written
    are judged by readiness after the write)."""
    if wanted.drift_only:
        return p
    writes = {s.name for s in p.writes}
    kept = {n: d for n, d in wanted.desired.items() if wanted.dry_run or n not in writes}
    statuses = health.past_grace(client, kept, {n: c.status for n, c in mine.items()}, wanted.unassigned_grace_s)
    return replace(p, health=health.findings(kept, statuses, wanted.unassigned_grace_s))

"""One reconcile run over the project's clusters, concurrently (edge: orchestrates I/O).

Inputs for every cluster are loaded and validated before any cluster is touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Protocol, TypeVar

from hephaestus import ownership
from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectClient, ConnectError, LiveConnector
from hephaestus.connect.ready import ReadyOptions
from hephaestus.errors import HephaestusError
from hephaestus.lock import DEFAULT_TIMEOUT_S, connect_lock, new_run_id
from hephaestus.notify import slack
from hephaestus.project import Cluster, Project
from hephaestus.reconciler import apply, health, pubdb, publications
from hephaestus.reconciler.audit import Journal, journal_for
from hephaestus.reconciler.desired import held_back, load_desired
from hephaestus.reconciler.model import DEFAULT_IGNORE_KEYS
from hephaestus.reconciler.outcome import ClusterOutcome, StepResult
from hephaestus.reconciler.plan import Desired, Live, Plan, Policy, Scope, is_ksqldb_managed, plan
from hephaestus.reconciler.saved import Expected, stale
from hephaestus.secrets import REDACTOR

T = TypeVar("T")


class Hooks(Protocol):
    """Work around an apply that the reconciler does not own (e.g. incremental snapshots)."""

    def prepare(self, cluster: Cluster, plan: Plan) -> None:
        """After validation, before any write; raise HephaestusError to apply nothing."""

    def after(self, cluster: Cluster, plan: Plan, results: Sequence[StepResult]) -> tuple[StepResult, ...]:
        """After the writes settled: follow-up steps, reported per connector."""


@dataclass(frozen=True)
class RunOptions:
    dry_run: bool = False
    force: bool = False
    deploy_custom: bool = False
    apply: apply.ApplyOptions = apply.ApplyOptions()
    drift_only: bool = False  # leave the health of managed connectors out of the report
    unassigned_grace_s: float = 60.0
    lock_timeout_s: float = DEFAULT_TIMEOUT_S
    allow_destructive: bool = False
    targets: tuple[str, ...] = ()  # --target globs: plan and apply only these connectors
    expected: Mapping[str, Expected] | None = None  # a saved (or just shown) plan to hold the run to


def policy_of(project: Project, force: bool, allow_destructive: bool = False) -> Policy:
    p = project.policy
    return Policy(
        frozenset((*DEFAULT_IGNORE_KEYS, *p.get("ignore_keys", ()))),
        p.get("max_deletes", 10),
        p.get("max_delete_share", 0.5),
        force,
        allow_destructive,
    )


def apply_options_of(project: Project, progress: apply.Progress | None = None) -> apply.ApplyOptions:
    p = project.policy
    ready = ReadyOptions(timeout_s=p.get("ready_timeout_s", 180.0), stable_s=p.get("stability_window_s", 10.0))
    return apply.ApplyOptions(
        concurrency=p.get("concurrency", 4),
        ready=ready,
        write_concurrency=p.get("write_concurrency", apply.WRITE_CONCURRENCY),
        progress=progress,
        initial_state=p.get("initial_state", "RUNNING"),
        batch_size=p.get("batch_size", 0),
        batch_interval_s=p.get("batch_interval_s", 0.0),
        max_failures=p.get("max_failures", 1),
    )


def reconcile(
    project: Project,
    clusters: Sequence[Cluster],
    options: RunOptions,
    client_factory: ClientFactory = connect_client,
    hooks: Hooks | None = None,
) -> list[ClusterOutcome]:
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="git") as loader:
        # git's files load while a dry run's listings travel (a read; an apply reads only under its lock)
        inputs = loader.submit(_inputs, clusters, options)
        if not options.dry_run:
            inputs.result()  # every input checked before a lock is taken or a cluster touched
        return _run(project, clusters, options, client_factory, hooks, inputs)


def _inputs(
    clusters: Sequence[Cluster], options: RunOptions
) -> tuple[dict[str, dict[str, Desired]], dict[str, frozenset[str]]]:
    desired = {c.name: _targeted(load_desired(c, options.deploy_custom), options.targets) for c in clusters}
    return desired, {c.name: held_back(c, options.deploy_custom) for c in clusters}


def _run(
    project: Project,
    clusters: Sequence[Cluster],
    options: RunOptions,
    client_factory: ClientFactory,
    hooks: Hooks | None,
    inputs: Future[tuple[dict[str, dict[str, Desired]], dict[str, frozenset[str]]]],
) -> list[ClusterOutcome]:
    policy = policy_of(project, options.force, options.allow_destructive)
    run_id = new_run_id()
    store = ownership.store_for(project)

    def one(cluster: Cluster) -> ClusterOutcome:
        with client_factory(cluster) as client:
            early = _early(client) if options.dry_run else None
            desired, held = inputs.result()
            ctx = _Ctx(project, cluster, policy, options, run_id, store, hooks)
            out = _cluster(client, ctx, desired[cluster.name], held[cluster.name], early)
            if hooks and out.applied and out.plan:
                out = replace(out, followups=hooks.after(cluster, out.plan, out.results))
            out = replace(out, requests=client.requests, writes=client.writes)
        _notify(project, out)
        return out

    # A dry run writes nothing, so it needs no lock (and never waits behind an apply).
    lock = (
        nullcontext()
        if options.dry_run
        else connect_lock(project, clusters, "reconcile", options.lock_timeout_s, run_id)
    )
    with lock, ThreadPoolExecutor(max_workers=max(1, len(clusters))) as pool:
        return list(pool.map(one, clusters))


def _early(client: ConnectClient) -> dict[str, LiveConnector] | ConnectError:
    try:
        return client.fleet()
    except ConnectError as exc:
        return exc


@dataclass(frozen=True)
class _Ctx:
    project: Project
    cluster: Cluster
    policy: Policy
    options: RunOptions
    run_id: str
    store: ownership.Store
    hooks: Hooks | None


def _cluster(
    client: ConnectClient,
    ctx: _Ctx,
    desired: dict[str, Desired],
    held: frozenset[str],
    early: dict[str, LiveConnector] | ConnectError | None = None,
) -> ClusterOutcome:
    """Plan one cluster; unless a dry run, or refused, or an input is invalid: apply it."""
    base, live = _planned(client, ctx, desired, held, early)
    p = base.plan
    if p is None or ctx.options.dry_run or p.refused or base.invalid:
        return base
    if p.in_sync:  # adopting what git declares writes the record only, never Connect
        return replace(base, error=_record_ownership(ctx, p, ()))
    invalid = apply.validate_all(client, p, ctx.options.apply.concurrency)
    if invalid:
        return replace(base, invalid=invalid)
    return _applied(client, ctx, base, p, live)


def _planned(
    client: ConnectClient,
    ctx: _Ctx,
    desired: dict[str, Desired],
    held: frozenset[str],
    early: dict[str, LiveConnector] | ConnectError | None,
) -> tuple[ClusterOutcome, dict[str, Live]]:
    """The cluster read (its fleet and what this deployment owns there) and planned; a plan
    held to a saved or shown one is refused if anything moved since."""
    cluster = ctx.cluster
    try:
        if isinstance(early, ConnectError):
            raise early
        fleet = early if early is not None else client.fleet()
        claims = ctx.store.owned(ctx.project.name, cluster.name)
    except (ConnectError, ownership.OwnershipUnavailable) as exc:
        return ClusterOutcome(cluster.name, cluster.url, None, error=str(exc)), {}
    # Connectors outside `select` belong to another deployment sharing the cluster: never
    # planned, so never deleted (e.g. stag_* connectors seen by the local_* deployment).
    mine = _targeted({n: c for n, c in fleet.items() if cluster.selects(n)}, ctx.options.targets)
    live = {n: Live(n, c.config, c.type, c.state) for n, c in mine.items()}
    owned = frozenset(n for n in claims if n in live)
    scope = Scope(owned, held, _strangers(cluster, desired, held, live, owned))
    p = _with_health(client, plan(cluster.name, desired, live, ctx.policy, scope), desired, mine, ctx.options)
    _learn_secrets(client, p, desired, live)
    p, problems = _publications(ctx.project, p, desired, live)
    configs = {n: lv.config for n, lv in live.items()}
    base = ClusterOutcome(
        cluster.name, cluster.url, p, invalid=problems, live=configs, ignore_keys=ctx.policy.ignore_keys
    )
    expected = (ctx.options.expected or {}).get(cluster.name)
    if expected is not None:
        base = replace(base, plan=replace(p, refused=stale(expected, dict(base.live_hashes), p) or p.refused))
    return base, live


def _applied(client: ConnectClient, ctx: _Ctx, base: ClusterOutcome, p: Plan, live: dict[str, Live]) -> ClusterOutcome:
    """Under the audit journal: the prepare hooks, the publication changes, then Connect; a
    failure before Connect is written to leaves it untouched ("nothing applied")."""
    try:
        journal = _journal(ctx, live)
    except HephaestusError as exc:  # the audit database is not in the project file
        return replace(base, error=f"nothing applied: {exc}")
    with journal:
        try:
            journal.check()
            if ctx.hooks:
                ctx.hooks.prepare(ctx.cluster, p)
        except HephaestusError as exc:  # an unwritable audit log, a source not ready for a snapshot …
            return replace(base, error=f"nothing applied: {exc}")
        prepared = _alter_publications(ctx.project, p)
        if not all(r.ok for r in prepared):
            return replace(base, prepared=prepared, error="nothing written to Connect: a publication change failed")
        results = apply.execute(client, p, ctx.options.apply, journal)
        errors = [apply.record_outcomes(journal, p, results), _record_ownership(ctx, p, results)]
    return replace(base, applied=True, prepared=prepared, results=results, error="; ".join(e for e in errors if e))


def _targeted(found: Mapping[str, T], globs: Sequence[str]) -> dict[str, T]:
    return {n: v for n, v in found.items() if not globs or any(fnmatchcase(n, g) for g in globs)}


def _publications(
    project: Project, p: Plan, desired: dict[str, Desired], live: dict[str, Live]
) -> tuple[Plan, publications.Problems]:
    """The plan with the publication changes its sources need, read from each source database
    the project names (one it does not name is left alone, with a warning)."""
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
    return replace(p, publications=changes, warnings=(*p.warnings, *warnings)), {**problems, **wrong}


def _alter_publications(project: Project, p: Plan) -> tuple[StepResult, ...]:
    """Each planned change, in order, stopping at the first that fails (nothing after it runs)."""
    done: list[StepResult] = []
    for ch in p.publications:
        try:
            pubdb.alter(project.dsn(ch.database, "publication upkeep"), ch)
        except HephaestusError as exc:
            return (*done, StepResult(ch.name, "publication", False, str(exc)))
        done.append(StepResult(ch.name, "publication", True, ch.describe().split(": ", 1)[1], wrote=True))
    return tuple(done)


def _journal(ctx: _Ctx, live: dict[str, Live]) -> Journal:
    return journal_for(ctx.project, ctx.cluster.name, ctx.run_id, {n: c.config for n, c in live.items()})


def _strangers(
    cluster: Cluster, desired: dict[str, Desired], held: frozenset[str], live: dict[str, Live], owned: frozenset[str]
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


def _record_ownership(ctx: _Ctx, p: Plan, results: tuple[StepResult, ...]) -> str:
    """What this run created, wrote, renamed or adopted is now owned; what it deleted or
    renamed away is not. Recorded after Connect confirmed each write (a crash before this
    leaves a connector unowned: never deleted by mistake, adopted by the next apply)."""
    wrote = {r.name: r for r in results if r.wrote}
    how = {"create": "created", "rename": "renamed"}  # an update of an unowned one is in p.adopt
    claims = [(s.name, how[s.action]) for s in p.writes if s.action in how and s.name in wrote]
    claims += [(n, "adopted") for n in p.adopt]
    released = [s.name for s in p.writes if s.action == "delete" and s.name in wrote]
    released += [s.renamed_from for s in p.writes if s.action == "rename" and s.name in wrote]
    if not claims and not released:
        return ""
    scope = ownership.scope_of(ctx.cluster.select)
    try:
        for kind in sorted({h for _, h in claims}):
            ctx.store.claim(
                ctx.project.name,
                ctx.cluster.name,
                ownership.claims_of([n for n, h in claims if h == kind], scope, kind, ctx.run_id),
            )
        ctx.store.release(ctx.project.name, ctx.cluster.name, released)
    except ownership.OwnershipUnavailable as exc:
        return f"applied, but the ownership record was not updated: {exc}"
    return ""


def _learn_secrets(client: ConnectClient, p: Plan, desired: dict[str, Desired], live: dict[str, Live]) -> None:
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
        try:
            client.secret_keys(cls)
        except ConnectError:
            continue
    relearn = REDACTOR.key_count != keys_before
    for config in (*(d.config for d in desired.values()), *(lv.config for lv in live.values() if relearn)):
        REDACTOR.learn_config(config)


def _with_health(
    client: ConnectClient, p: Plan, desired: dict[str, Desired], mine: dict[str, LiveConnector], options: RunOptions
) -> Plan:
    """The plan with the health of the managed connectors it does not write (those written
    are judged by readiness after the write)."""
    if options.drift_only:
        return p
    kept = {n: d for n, d in desired.items() if options.dry_run or n not in {s.name for s in p.writes}}
    statuses = health.past_grace(client, kept, {n: c.status for n, c in mine.items()}, options.unassigned_grace_s)
    return replace(p, health=health.findings(kept, statuses, options.unassigned_grace_s))


def _notify(project: Project, out: ClusterOutcome) -> None:
    """Deletions and failures go to Slack when a webhook is configured (names and reasons
    come from the cluster: escaped; the whole text passes the redactor in `slack.post`)."""
    esc = slack.escape
    lines = [f"deleted `{esc(r.name)}`" for r in out.results if r.ok and r.action == "delete"]
    lines += [f"FAILED {r.action} `{esc(r.name)}`: {esc(r.detail)}" for r in (*out.results, *out.followups) if not r.ok]
    lines += [f"invalid config `{esc(n)}`: {esc(', '.join(sorted(k)))}" for n, k in out.invalid.items()]
    if out.error:
        lines.append(f"error: {esc(out.error)}")
    if lines:
        slack.post(project.webhook(), f"hephaestus reconcile on cluster *{out.cluster}*:\n" + "\n".join(lines))

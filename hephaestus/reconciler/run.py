"""One reconcile run over the project's clusters (edge: orchestrates I/O).

1. **Inputs.** Every connector file of the selected clusters is loaded and validated before any
   cluster is touched (the other clusters' files too, for the fleet's rules: best effort).
2. **Read**, under the selected clusters' lock when applying, each selected cluster at once (its
   listing, its Kafka identity, what this deployment owns there); the project's other clusters
   are glanced at (one listing, asked once) only when a plan adds a claim the fleet's rules judge.
3. **Plan** each selected cluster: what its plan needs read once (`reconciler.planning`), then
   planned purely from git, or a sealed plan's steps taken once its identity and
   preconditions hold (`reconciler.planner`).
4. **Judge** every step of every cluster at the one gate (`reconciler.gating`).
5. **Apply** each cluster the gate cleared, concurrently (`reconciler.apply`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectClient
from hephaestus.connect.ready import ReadyOptions
from hephaestus.errors import HephaestusError, InputError, InputErrors
from hephaestus.fleet.desired import held_back, load_desired
from hephaestus.fleet.model import DEFAULT_IGNORE_KEYS, Desired
from hephaestus.project import Cluster, Project
from hephaestus.reconciler import (
    apply,
    crossing,
    crossread,
    gating,
    moves,
    notice,
    planner,
    planning,
    prepare,
    probetables,
    sealed,
    topicwrite,
)
from hephaestus.reconciler.claims import OwnershipClaims
from hephaestus.reconciler.journal import StepJournal
from hephaestus.reconciler.outcome import Basis, ClusterOutcome, StepResult
from hephaestus.reconciler.plan import Plan, Policy
from hephaestus.reconciler.planner import Wanted
from hephaestus.reconciler.planning import Clients, Read, check_targets, remember, targeted
from hephaestus.reconciler.rollout import checks, executor
from hephaestus.safety.gate import Allow, Cleared, Verdict, clear
from hephaestus.settings import UNASSIGNED_GRACE_S, RolloutSettings
from hephaestus.state import ownership
from hephaestus.state.backend import DEFAULT_TIMEOUT_S, connect_lock, journal_for, ownership_store
from hephaestus.state.lock import new_run_id


class Hooks(Protocol):
    """Work around an apply that the reconciler does not own (e.g. incremental snapshots)."""

    def prepare(self, cluster: Cluster, plan: Plan) -> None:
        """After validation, before any write; raise HephaestusError to apply nothing."""

    def after(self, cluster: Cluster, plan: Plan, results: Sequence[StepResult]) -> tuple[StepResult, ...]:
        """After the writes settled: follow-up steps, reported per connector."""


@dataclass(frozen=True, kw_only=True)  # keywords only: bools side by side
class RunOptions:
    dry_run: bool = False
    force: bool = False
    deploy_custom: bool = False
    apply: apply.ApplyOptions = apply.ApplyOptions()
    drift_only: bool = False  # leave the health of managed connectors out of the report
    unassigned_grace_s: float = UNASSIGNED_GRACE_S
    lock_timeout_s: float = DEFAULT_TIMEOUT_S
    allow: Allow = Allow()  # --allow-destructive[=CODE,…]
    targets: tuple[str, ...] = ()  # --target globs: plan and apply only these connectors
    sealed: sealed.Sealed | None = None  # a sealed plan (saved, or shown and approved): its steps, exactly
    rollout: Mapping[str, Any] = field(default_factory=dict)  # rollout keys given as flags (--canary …)
    # {topic: the ksqlDB migration that writes it}, asked only when a sink starts to read a topic
    # Kafka lacks (issue 48: a migration is a producer, as a source is).
    migrations: Callable[[], Mapping[str, str]] | None = field(default=None, compare=False)


def policy_of(project: Project, force: bool, allow: Allow = Allow()) -> Policy:
    p = project.policy
    return Policy(
        ignore_keys=frozenset((*DEFAULT_IGNORE_KEYS, *p.ignore_keys)),
        max_deletes=p.max_deletes,
        max_delete_share=p.max_delete_share,
        force=force,
        allow=allow,
        resolve=project.resolver(),
    )


def apply_options_of(project: Project, progress: apply.Progress | None = None) -> apply.ApplyOptions:
    p = project.policy
    ready = ReadyOptions(timeout_s=p.ready_timeout_s, stable_s=p.stability_window_s)
    return apply.ApplyOptions(
        concurrency=p.concurrency,
        ready=ready,
        write_concurrency=p.write_concurrency,
        progress=progress,
        initial_state=p.initial_state,
        batch_size=p.batch_size,
        batch_interval_s=p.batch_interval_s,
        max_failures=p.max_failures,
    )


Inputs = tuple[dict[str, dict[str, Desired]], dict[str, frozenset[str]], list[str]]


def reconcile(
    project: Project,
    clusters: Sequence[Cluster],
    options: RunOptions,
    client_factory: ClientFactory = connect_client,
    hooks: Hooks | None = None,
    give_back: executor.GiveBack | None = None,  # a rollback's replay of what sinks parked (dlq's)
) -> list[ClusterOutcome]:
    policy = policy_of(project, options.force, options.allow)
    run_id = new_run_id()
    every = list(project.clusters.values())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="git") as loader:
        # git's files load while a dry run's listings travel (a read; an apply reads only under its lock)
        inputs = loader.submit(_inputs, every, clusters, options)
        if not options.dry_run:
            inputs.result()  # every input checked before a lock is taken or a cluster touched
        lock = (
            nullcontext()
            if options.dry_run
            else connect_lock(project, clusters, "reconcile", options.lock_timeout_s, run_id)
        )
        with lock, ExitStack() as stack, ThreadPoolExecutor(max_workers=max(1, len(every))) as pool:
            clients = _clients(stack, clusters, client_factory)
            store = ownership_store(project)
            reads = {r.cluster.name: r for r in pool.map(lambda c: planning.read(clients, c, store, project), clusters)}
            desired, held, unloaded = inputs.result()
            check_targets(options.targets, clusters, reads, desired)
            peers = crossread.peers(project, store, run_id, clients, reads)
            run = _Reconcile(project, options, policy, run_id, store, hooks, give_back, peers, client_factory)
            outs = list(pool.map(lambda c: run.planned(clients.get(c.name), reads[c.name], desired, held), clusters))
            outs = crossread.moved(outs, clients, reads, desired, policy, client_factory)
            others = [c for c in every if c.name not in reads] if _claims(outs) else []
            glances = _clients(stack, others, client_factory)
            reads |= {r.cluster.name: r for r in pool.map(lambda c: planning.glance(glances, c), others)}
            outs, verdict = run.judged(outs, reads, desired, unloaded)
            outs = list(pool.map(lambda o: run.finish(clients.get(o.cluster), o, verdict), outs))
    for out in outs:
        notice.post(project, out)
    return outs


def _inputs(every: Sequence[Cluster], chosen: Sequence[Cluster], options: RunOptions) -> Inputs:
    """git's connectors: every selected cluster's checked (any error stops the run); the
    others' read for the fleet's rules, a cluster whose files do not load left out by name."""
    names = {c.name for c in chosen}
    desired = {c.name: targeted(load_desired(c, options.deploy_custom), options.targets) for c in chosen}
    held = {c.name: held_back(c, options.deploy_custom) for c in chosen}
    unloaded = []
    for c in every:
        if c.name in names:
            continue
        try:
            desired[c.name] = load_desired(c, False)
        except (InputError, InputErrors) as exc:
            unloaded.append(f"{c.name} ({str(exc).splitlines()[0]})")
    return desired, held, unloaded


def _clients(stack: ExitStack, every: Sequence[Cluster], factory: ClientFactory) -> Clients:
    made, why = {}, {}
    for c in every:
        try:
            made[c.name] = stack.enter_context(factory(c))
        except HephaestusError as exc:  # its credentials are not set here: read as unreadable, and why
            why[c.name] = str(exc)
    return Clients(made, why)


def _claims(outs: Sequence[ClusterOutcome]) -> bool:
    """Whether a plan writes something that could make a second writer (a create, a rename, a
    config change): only then are the project's other clusters read."""
    return any(s.action in ("create", "rename", "move", "update") for o in outs if o.plan for s in o.plan.writes)


@dataclass(frozen=True)
class _Pass:
    """What an apply goes by: the gate's pass, and the cluster's rollout (None: all at once)."""

    cleared: Cleared
    rollout: RolloutSettings | None


@dataclass(frozen=True)
class _Reconcile:
    project: Project
    options: RunOptions
    policy: Policy
    run_id: str
    store: ownership.OwnershipStore
    hooks: Hooks | None
    give_back: executor.GiveBack | None = None
    peers: Mapping[str, moves.Peer] = field(default_factory=dict)  # the clusters a move may leave
    factory: ClientFactory = connect_client  # each worker's client, when its plugins are read

    def wanted(
        self, name: str, desired: Mapping[str, Mapping[str, Desired]], held: Mapping[str, frozenset[str]]
    ) -> Wanted:
        o = self.options
        return Wanted(desired[name], held[name], o.targets, o.drift_only, o.dry_run, o.unassigned_grace_s, o.migrations)

    def planned(
        self,
        client: ConnectClient | None,
        read: Read,
        desired: Mapping[str, Mapping[str, Desired]],
        held: Mapping[str, frozenset[str]],
    ) -> ClusterOutcome:
        """Read once what the plan needs, plan purely, then teach the redactor what it shows."""
        if client is None or read.error or read.fleet is None:
            return ClusterOutcome(read.cluster.name, read.cluster.url, None, error=read.error or "no client")
        wanted = self.wanted(read.cluster.name, desired, held)
        seal = planning.SealedCluster(self.options.sealed, read.cluster.name) if self.options.sealed else None
        seen = planning.seen(client, self.project, read, wanted, self.policy, seal, self.factory)
        out = planner.planned(seen, wanted, self.policy, seal)
        if out.plan is not None:
            planning.learn_secrets(client, out.plan, wanted.desired, seen.basis.live)
        return out

    def judged(
        self,
        outs: list[ClusterOutcome],
        reads: Mapping[str, Read],
        desired: Mapping[str, Mapping[str, Desired]],
        unloaded: list[str],
    ) -> tuple[list[ClusterOutcome], Verdict]:
        """Every plan at the one gate, with the whole project's fleet; a refusal set on its plan."""
        views = [_view(reads[n], desired.get(n, {}), next((o for o in outs if o.cluster == n), None)) for n in reads]
        plans, verdict = gating.judged(views, self.policy)
        blind = [f"{r.cluster.name} ({r.error})" for r in reads.values() if r.fleet is None] + unloaded
        judged = [_judged(o, plans.get(o.cluster), blind, self.options.sealed) for o in outs]
        return crossing.held(judged), verdict

    def finish(self, client: ConnectClient | None, base: ClusterOutcome, verdict: Verdict) -> ClusterOutcome:
        """Unless a dry run, refused or invalid: validate all, then apply what the gate cleared."""
        p = base.plan
        cluster = self.project.clusters[base.cluster]
        rollout = self.project.rollout_of(cluster, self.options.rollout)  # once: shown, and followed
        out = base
        if client is not None and p is not None and not (self.options.dry_run or p.refused or base.invalid):
            out = self._applied(client, cluster, base, p, _Pass(clear(verdict, p.cluster), rollout))
        shown = checks.shown(rollout, cluster, p) if rollout is not None and p is not None and p.writes else ("", ())
        return replace(
            out,
            # The plan's own error (a secret not read) outlives the apply's: both are the run's.
            error="; ".join(dict.fromkeys(e for e in (base.error, out.error) if e)),
            rollout=shown[0],
            stages=shown[1],
            requests=client.requests if client is not None else 0,
            writes=client.writes if client is not None else 0,
        )

    def _applied(
        self, client: ConnectClient, cluster: Cluster, base: ClusterOutcome, p: Plan, go: _Pass
    ) -> ClusterOutcome:
        if p.in_sync:  # adopting what git declares writes the record only, never Connect
            errors = (self._record(cluster, p, (), base.basis), remember(self.project, cluster, p, (), base.basis))
            return replace(base, error="; ".join(e for e in errors if e))
        invalid = apply.validate_all(client, p, self.options.apply.concurrency)
        if invalid:
            return replace(base, invalid=invalid)
        out = self._written(client, cluster, base, p, go)
        if self.hooks and out.applied:
            out = replace(out, followups=self.hooks.after(cluster, p, out.results))
        return out

    def _written(
        self, client: ConnectClient, cluster: Cluster, base: ClusterOutcome, p: Plan, go: _Pass
    ) -> ClusterOutcome:
        """Under the audit journal: the prepare hooks, the publication changes, then Connect; a
        failure before Connect is written to leaves it untouched ("nothing applied")."""
        live = base.basis.live if base.basis else {}
        try:
            journal = StepJournal(
                journal_for(self.project, cluster.name, self.run_id), {n: c.config for n, c in live.items()}
            )
        except HephaestusError as exc:  # the audit database is not in the project file
            return replace(base, error=f"nothing applied: {exc}")
        with journal:
            try:
                journal.check()
                if self.hooks:
                    self.hooks.prepare(cluster, p)
            except HephaestusError as exc:  # an unwritable audit log, a source not ready for a snapshot …
                return replace(base, error=f"nothing applied: {exc}")
            made = probetables.ensure_all(self.project, cluster.name, p)
            if not all(r.ok for r in made):
                return replace(base, prepared=made, error="nothing written to Connect: a probe table could not be made")
            prepared = (*made, *prepare.alter_all(self.project, p, go.cleared))
            if not all(r.ok for r in prepared):
                return replace(base, prepared=prepared, error="nothing written to Connect: a publication change failed")
            marks = OwnershipClaims(self.store, self.project, cluster, self.run_id, live)
            topics = topicwrite.maker(cluster, p, journal)
            options = replace(self.options.apply, claims=marks, topics=topics, peers=self.peers)
            rolled = self._executed(client, cluster, base, p, options, journal, go)
            results = rolled.results
            errors = [apply.record_outcomes(journal, p, results), self._record(cluster, p, results, base.basis, rolled)]
            errors.append(remember(self.project, cluster, p, results, base.basis))
        error = "; ".join(e for e in errors if e)
        return replace(
            base,
            applied=True,
            prepared=prepared,
            results=results,
            error=error,
            report=rolled.report,
            rollback=rolled.rollback,
        )

    def _executed(
        self,
        client: ConnectClient,
        cluster: Cluster,
        base: ClusterOutcome,
        p: Plan,
        options: apply.ApplyOptions,
        journal: StepJournal,
        go: _Pass,
    ) -> executor.Rolled:
        """All at once, or stage by stage when the cluster has a rollout (`rollout:`, a flag)."""
        cleared = go.cleared
        if go.rollout is None:
            return executor.Rolled(apply.execute(client, p, options, journal, cleared))
        watch = executor.Watch(go.rollout, checks.probe_of(self.project, cluster, go.rollout), give_back=self.give_back)
        gate = checks.undo_gate(client, cluster.name, self.policy, base.basis.kafka if base.basis else None)
        live = base.basis.live if base.basis else {}
        return executor.execute(client, p, options, journal, cleared, watch, live, gate)

    def _record(
        self,
        cluster: Cluster,
        p: Plan,
        results: tuple[StepResult, ...],
        basis: Basis | None = None,
        rolled: executor.Rolled | None = None,
    ) -> str:
        """What this run created, renamed, moved in or adopted is now owned (what it deleted or
        renamed away was released before the write). Recorded after Connect confirmed each write
        (a crash before this leaves it unowned: never deleted by mistake, adopted next time)."""
        wrote = {r.name for r in results if r.wrote}
        how = {"create": "created", "rename": "renamed", "move": "moved"}  # an unowned one updated: p.adopt
        undone = rolled.undone if rolled else frozenset()
        claims = [(s.name, how[s.action]) for s in p.writes if s.action in how and s.name in wrote - undone]
        claims += [(n, "adopted") for n in p.adopt] + [(n, "restored") for n in (rolled.restored if rolled else ())]
        scope = ownership.scope_of(cluster.select)
        try:
            claims += self._settled_marks(cluster, basis, p)
            for kind in sorted({h for _, h in claims}):
                names = [n for n, h in claims if h == kind]
                self.store.claim(self.project.name, cluster.name, ownership.claims_of(names, scope, kind, self.run_id))
        except ownership.OwnershipUnavailable as exc:
            return f"applied, but the ownership record was not updated: {exc}"
        return ""

    def _settled_marks(self, cluster: Cluster, basis: Basis | None, p: Plan) -> list[tuple[str, str]]:
        """Releases an earlier run never saw through: a mark whose connector is gone, or runs
        another config (not the one marked: someone else's, or changed by hand), is forgotten;
        one still running the config it had is ours again (`kept`), before this run's writes
        move its fingerprint."""
        if basis is None:
            return []
        owned = self.store.owned(self.project.name, cluster.name).items()
        marks = {n for n, c in owned if c.how.startswith((ownership.RELEASING, ownership.MOVING))}
        # A mark of this run's move stays (a move stopped part-way is the next run's to finish).
        gone = sorted(n for n in marks if n not in basis.owned and n not in {s.name for s in p.of("move")})
        self.store.release(self.project.name, cluster.name, gone)
        return [(n, "kept") for n in sorted(marks & basis.owned - {s.name for s in p.of("delete")})]


def _view(read: Read, desired: Mapping[str, Desired], out: ClusterOutcome | None) -> gating.GatedCluster:
    live = {n: c.config for n, c in (read.fleet or {}).items()}
    owned = out.basis.owned if out is not None and out.basis is not None else frozenset()
    return gating.GatedCluster(
        read.cluster.name, live, desired, owned, read.kafka, out.plan if out is not None else None
    )


def _judged(o: ClusterOutcome, p: Plan | None, blind: list[str], seal: sealed.Sealed | None) -> ClusterOutcome:
    if p is None or o.plan is None:
        return o
    moved = sealed.effects_moved(seal, o.cluster, p) if seal else ""
    refusals = o.plan.refusals or ((moved,) if moved else ()) or p.refusals
    warn = (f"the fleet's rules did not see {', '.join(blind)}: its connectors were not checked for second writers",)
    return replace(o, plan=replace(p, refusals=refusals, warnings=(*p.warnings, *(warn if blind else ()))))

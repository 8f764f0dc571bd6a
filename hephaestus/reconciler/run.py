"""One reconcile run over the project's clusters, concurrently (edge: orchestrates I/O).

Inputs for every cluster are loaded and validated before any cluster is touched.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.errors import HephaestusError
from hephaestus.clients import ClientFactory, connect_client
from hephaestus.notify import slack
from hephaestus.project import Cluster, Project
from hephaestus.reconciler import apply, audit
from hephaestus.reconciler.desired import held_back, load_desired, selected
from hephaestus.reconciler.outcome import ClusterOutcome, StepResult
from hephaestus.reconciler.plan import Desired, Live, Plan, Policy, plan



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


def policy_of(project: Project, force: bool) -> Policy:
    p = project.policy
    return Policy(frozenset(p.get("ignore_keys", ())), p.get("max_deletes", 10),
                  p.get("max_delete_share", 0.5), force)


def apply_options_of(project: Project, progress: apply.Progress | None = None) -> apply.ApplyOptions:
    p = project.policy
    return apply.ApplyOptions(concurrency=p.get("concurrency", 4), ready_timeout_s=p.get("ready_timeout_s", 180.0),
                              progress=progress, initial_state=p.get("initial_state", "RUNNING"))


def reconcile(project: Project, clusters: Sequence[Cluster], options: RunOptions,
              client_factory: ClientFactory = connect_client,
              hooks: Hooks | None = None) -> list[ClusterOutcome]:
    desired = {c.name: load_desired(c, options.deploy_custom) for c in clusters}
    held = {c.name: held_back(c, options.deploy_custom) for c in clusters}
    policy = policy_of(project, options.force)
    run_id = uuid.uuid4().hex[:12]

    def one(cluster: Cluster) -> ClusterOutcome:
        with client_factory(cluster) as client:
            out = _cluster(client, cluster, desired[cluster.name], held[cluster.name], policy, options, project,
                           run_id, hooks)
            if hooks and out.applied and out.plan:
                out = replace(out, followups=hooks.after(cluster, out.plan, out.results))
            out = replace(out, requests=client.requests, writes=client.writes)
        _notify(project, out)
        return out

    with ThreadPoolExecutor(max_workers=max(1, len(clusters))) as pool:
        return list(pool.map(one, clusters))


def _cluster(client: ConnectClient, cluster: Cluster, desired: dict[str, Desired], held: frozenset[str],
             policy: Policy, options: RunOptions, project: Project, run_id: str,
             hooks: Hooks | None) -> ClusterOutcome:
    try:
        fleet = client.fleet()
    except ConnectError as exc:
        return ClusterOutcome(cluster.name, cluster.url, None, error=str(exc))
    # Connectors outside `select` belong to another deployment sharing the cluster: never
    # planned, so never deleted (e.g. stag_* connectors seen by the local_* deployment).
    live = {n: Live(n, c.config, c.type) for n, c in fleet.items() if selected(n, cluster.select)}
    p = plan(cluster.name, desired, live, policy, held)
    base = ClusterOutcome(cluster.name, cluster.url, p)
    if options.dry_run or p.in_sync or p.refused:
        return base
    invalid = apply.validate_all(client, p, options.apply.concurrency)
    if invalid:
        return replace(base, invalid=invalid)
    if hooks:
        try:
            hooks.prepare(cluster, p)
        except HephaestusError as exc:
            return replace(base, error=f"nothing applied: {exc}")
    results = apply.execute(client, p, options.apply)
    if project.audit_log:
        for step, result in zip(p.writes, results):
            before = live[step.name].config if step.name in live else None
            audit.record(project.audit_log, run_id, cluster.name, step, before, result)
    return replace(base, applied=True, results=results)


def _notify(project: Project, out: ClusterOutcome) -> None:
    """Deletions and failures go to Slack when a webhook is configured."""
    lines = [f"deleted `{r.name}`" for r in out.results if r.ok and r.action == "delete"]
    lines += [f"FAILED {r.action} `{r.name}`: {r.detail}" for r in (*out.results, *out.followups) if not r.ok]
    lines += [f"invalid config `{n}`: {', '.join(sorted(k))}" for n, k in out.invalid.items()]
    if out.error:
        lines.append(f"error: {out.error}")
    if lines:
        slack.post(project.webhook(), f"hephaestus reconcile on cluster *{out.cluster}*:\n" + "\n".join(lines))

"""What a progressive rollout needs from the project around it (edge): where its health is
read (`fleet.health.HealthProbe`), and the gate its rollback passes, judged on the cluster as it is
when the rollback starts, with no allowance (a destructive rollback is never automatic) and
the delete policy waived only for what the rollback deletes (the sinks this run created).

And what an apply checks before a cluster's first write (`RolloutHooks.prepare`, reconcile's
hook: after validation, before the publications and Connect are written):

- a canary named by globs that name none of the cluster's writes is refused: the canary is
  judged per cluster (each rolls out on its own workers and databases, concurrently), so a
  glob that names connectors of another cluster only makes no canary here;
- a rollout cut short (kill -9, a pod evicted) left connectors written and never judged: the
  audit journal's last entry of each is an intent (outcomes are journalled once the run's
  writes settled, and under the cluster's lock no other run is writing). Those this apply
  does not write again are judged against the gates first; one failing stops the apply before
  it writes anything (their configs before that run died with it: reverting in git is the
  rollback, and goes first, as the canary); once they pass, their verdict is journalled.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from hephaestus import pg
from hephaestus.clients import connect_client
from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.errors import HephaestusError, InputError
from hephaestus.fleet import health
from hephaestus.fleet.health import HealthProbe
from hephaestus.fleet.model import Live
from hephaestus.fleet.read import read_slots
from hephaestus.fleet.slots import Slot
from hephaestus.project import Cluster, Project
from hephaestus.reconciler import gating
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import TARGET_STATES, Plan, Policy, step_effects
from hephaestus.reconciler.rollout import executor
from hephaestus.reconciler.rollout.rules import RUNNING, Failure, describe, failures, stages, unnamed
from hephaestus.safety.gate import Allow, Cleared, passed
from hephaestus.settings import RolloutSettings
from hephaestus.state.backend import FileBackend, PgBackend, backend_for, journal_for
from hephaestus.state.lock import new_run_id


def probe_of(project: Project, cluster: Cluster, rollout: RolloutSettings | None = None) -> HealthProbe:
    def slots(database: str) -> Sequence[Slot]:
        if database not in project.databases:
            return []  # a source whose database this project has no DSN for: its slot is not gated
        return read_slots(project.dsn(database, "rollout health"), database)

    def probes(client: ConnectClient, sinks: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        from hephaestus.probe.read import arrivals

        try:
            live = {n: c.config for n, c in client.glance().items()}
        except ConnectError as exc:
            return {n: (None, None, f"Connect: {exc}") for n in sinks}
        return arrivals(project, cluster.name, live, sinks)

    # Probes are read only when the rollout gates freshness (a listing and a query per database).
    gated = rollout is not None and rollout.max_freshness_s is not None
    return HealthProbe(cluster.kafka_bootstrap, slots, arrivals=probes if gated else None)


def shown(rollout: RolloutSettings, cluster: Cluster, p: Plan) -> tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    """What a dry run shows of the rollout: its shape and gates, and each stage's connectors."""
    found = tuple((s.label, tuple(x.name for x in s.steps)) for s in stages(p.writes, rollout))
    return describe(rollout, bool(cluster.kafka_bootstrap)), found


def undo_gate(client: ConnectClient, cluster: str, policy: Policy, kafka: str | None) -> executor.UndoGate:
    def judge(back: Plan) -> tuple[Plan, Cleared, tuple[str, ...]]:
        try:
            listed = client.fleet()
        except ConnectError as exc:
            raise HephaestusError(f"rollback: cannot read cluster {cluster}: {exc}") from exc
        live = {n: Live(n, c.config, c.type, c.state) for n, c in listed.items()}
        steps = tuple(replace(s, effects=step_effects(s, live, policy.resolve)) for s in back.steps)
        view = gating.GatedCluster(
            cluster, {n: lv.config for n, lv in live.items()}, {}, frozenset(), kafka, replace(back, steps=steps)
        )
        plans, verdict = gating.judged([view], replace(policy, allow=Allow(), force=True))
        cleared = passed(verdict, cluster)
        kept = tuple(s for s in plans[cluster].steps if s.name in cleared.names())
        return replace(back, steps=kept), cleared, tuple(r.message for r in verdict.refused(cluster))

    return judge


# --- before a cluster's first write -----------------------------------------------------


def check_canary(project: Project, cluster: Cluster, flags: Mapping[str, Any], p: Plan) -> None:
    """Refuse a canary whose globs name none of this cluster's writes (InputError naming the
    flag, or the project file's key, and the globs)."""
    rollout = project.rollout_of(cluster, flags)
    globs = unnamed(p.writes, rollout) if rollout is not None else ()
    if not globs:
        return
    file, key = _canary_from(project, cluster, flags)
    why = (
        f"{', '.join(repr(g) for g in globs)} names none of the {len(p.writes)} writes on cluster {cluster.name}: "
        "its canary would be skipped and every write go out in the waves (a canary on another cluster proves "
        "nothing here); name one of them, or give a count (0: no canary)"
    )
    raise InputError(file, why, field=key)


def _canary_from(project: Project, cluster: Cluster, flags: Mapping[str, Any]) -> tuple[str, str]:
    """Where the canary was set: the flag, the cluster's `rollout:`, or the project's."""
    if "canary" in flags:
        return "--canary", ""
    if cluster.rollout is not None and "canary" in cluster.rollout.given:
        return project.file, f"clusters.{cluster.name}.rollout.canary"
    return project.file, "rollout.canary"


class Around(Protocol):
    """Other hooks of the apply (run.Hooks: incremental snapshots), run after these."""

    def prepare(self, cluster: Cluster, plan: Plan) -> None: ...

    def after(self, cluster: Cluster, plan: Plan, results: Sequence[StepResult]) -> tuple[StepResult, ...]: ...


@dataclass(frozen=True)
class RolloutHooks:
    """reconcile's hooks (run.Hooks) when it applies: the checks above, then `inner`'s."""

    project: Project
    flags: Mapping[str, Any]  # the rollout flags of the run (a sealed plan's, with --plan)
    inner: Around | None = None

    def prepare(self, cluster: Cluster, plan: Plan) -> None:
        check_canary(self.project, cluster, self.flags, plan)
        rollout = self.project.rollout_of(cluster, self.flags)
        if rollout is not None and rollout.on_failure != "continue":  # continue: a failed gate stops nothing
            taken_up(self.project, cluster, rollout, plan)
        if self.inner is not None:
            self.inner.prepare(cluster, plan)  # after: a snapshot's prepare publishes tables

    def after(self, cluster: Cluster, plan: Plan, results: Sequence[StepResult]) -> tuple[StepResult, ...]:
        return self.inner.after(cluster, plan, results) if self.inner is not None else ()


def taken_up(project: Project, cluster: Cluster, rollout: RolloutSettings, p: Plan) -> None:
    """The connectors a run cut short wrote and never judged, that this plan does not write
    again: judged against the gates before anything is written (HephaestusError when one
    fails), then journalled as judged, so that the next run does not judge them again."""
    left = unsettled(project, cluster.name)
    writing = {s.name for s in p.writes} | {s.renamed_from for s in p.writes if s.renamed_from}
    if not set(left) - writing:
        return
    watch = executor.Watch(rollout, probe_of(project, cluster, rollout))
    with connect_client(cluster) as client:
        live = client.fleet()
        names = sorted(n for n in left if n in live and n not in writing)
        wanted = {n: live[n].state if live[n].state in TARGET_STATES else RUNNING for n in names}
        found = judged(client, watch, {n: live[n].config for n in names}, wanted) if names else []
    if found:
        raise HephaestusError(_cut_short(found, left))
    settle(project, cluster.name, {n: left[n] for n in names})


def _cut_short(found: Sequence[Failure], left: Mapping[str, str]) -> str:
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (
        f"{found[0].name}: {found[0].why}{more}: written by run {', '.join(sorted({left[f.name] for f in found}))}, "
        "which ended before its rollout judged it: nothing is written while it fails; its config before that run "
        "died with it: revert it in git (the revert goes first, as the canary)"
    )


def judged(
    client: ConnectClient, watch: executor.Watch, configs: Mapping[str, Mapping[str, str]], wanted: Mapping[str, str]
) -> list[Failure]:
    """A rollout stage's analysis window, over connectors already written: a hard failure at
    once, a soft one when still there at the window's end; DLQ growth counted from the first
    sample (what they held before the write is not known)."""
    r = watch.settings
    before = health.sample(client, watch.probe, configs)
    deadline = watch.clock() + r.analysis_s
    while True:
        found = failures(r, before, health.sample(client, watch.probe, configs), wanted)
        hard = [f for f in found if f.hard]
        if hard or watch.clock() >= deadline:
            return hard or (found if r.analysis_s > 0 else [])
        watch.sleep(min(r.interval_s, max(deadline - watch.clock(), 0.0)))


def settle(project: Project, cluster: str, names: Mapping[str, str]) -> None:
    """Their verdict in the journal: the last entry of each is no longer an intent."""
    with journal_for(project, cluster, new_run_id()) as journal:
        for name, run in sorted(names.items()):
            journal.event(name, "judge", "ok", f"passed the rollout gate, after run {run} ended before judging it")


# The last journal entry of each connector of one cluster (the table keeps them in order of id).
_LAST = (
    "SELECT DISTINCT ON (connector) connector, entry FROM hephaestus_audit "
    "WHERE cluster = %s AND connector IS NOT NULL ORDER BY connector, id DESC"
)


def unsettled(project: Project, cluster: str) -> dict[str, str]:
    """{connector: the run that wrote it} for each connector of `cluster` whose last journal
    entry is an intent. Without a journal: none (a run cut short then leaves no trace)."""
    backend = backend_for(project, "audit")
    if isinstance(backend, PgBackend):
        with pg.session(backend.dsn, "audit journal (hephaestus_audit)", application="hephaestus") as conn:
            last = {str(n): e for n, e in conn.execute(_LAST, [cluster]).fetchall() if isinstance(e, dict)}
    elif isinstance(backend, FileBackend) and backend.audit_log is not None:
        last = _from_file(backend.audit_log, cluster)
    else:
        return {}
    return {n: str(e.get("run_id", "")) for n, e in sorted(last.items()) if e.get("outcome") == "intent"}


def last_entries(lines: Iterable[str], cluster: str) -> dict[str, dict[str, Any]]:
    """The last entry of each connector of `cluster`, in the order the lines were written (a
    line a crash cut short is no entry)."""
    found: dict[str, dict[str, Any]] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("cluster") == cluster and entry.get("connector"):
            found[str(entry["connector"])] = entry
    return found


def _from_file(path: Path, cluster: str) -> dict[str, dict[str, Any]]:
    try:
        with path.open(encoding="utf-8", errors="replace") as lines:  # line by line: a log grows
            return last_entries(lines, cluster)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise HephaestusError(f"audit log {path} cannot be read: {exc.strerror or exc}") from exc

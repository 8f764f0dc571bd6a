"""What a progressive rollout needs from the project around it (edge): where its health is
read (`fleet.health.Probe`), and the gate its rollback passes, judged on the cluster as it is
when the rollback starts, with no allowance (a destructive rollback is never automatic) and
the delete policy waived only for what the rollback deletes (the sinks this run created)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.errors import HephaestusError
from hephaestus.fleet.health import Probe
from hephaestus.fleet.read import read_slots
from hephaestus.fleet.slots import Slot
from hephaestus.project import Cluster, Project
from hephaestus.reconciler import gating, progressive
from hephaestus.reconciler.model import Live
from hephaestus.reconciler.plan import Plan, Policy, step_effects
from hephaestus.reconciler.rollout import describe, stages
from hephaestus.safety.gate import Allow, Cleared, passed
from hephaestus.settings import RolloutSettings


def probe_of(project: Project, cluster: Cluster) -> Probe:
    def slots(database: str) -> Sequence[Slot]:
        if database not in project.databases:
            return []  # a source whose database this project has no DSN for: its slot is not gated
        return read_slots(project.dsn(database, "rollout health"), database)

    return Probe(cluster.kafka_bootstrap, slots)


def shown(rollout: RolloutSettings, cluster: Cluster, p: Plan) -> tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    """What a dry run shows of the rollout: its shape and gates, and each stage's connectors."""
    found = tuple((s.label, tuple(x.name for x in s.steps)) for s in stages(p.writes, rollout))
    return describe(rollout, bool(cluster.kafka_bootstrap)), found


def undo_gate(client: ConnectClient, cluster: str, policy: Policy, kafka: str | None) -> progressive.UndoGate:
    def judge(back: Plan) -> tuple[Plan, Cleared, tuple[str, ...]]:
        try:
            listed = client.fleet()
        except ConnectError as exc:
            raise HephaestusError(f"rollback: cannot read cluster {cluster}: {exc}") from exc
        live = {n: Live(n, c.config, c.type, c.state) for n, c in listed.items()}
        steps = tuple(replace(s, effects=step_effects(s, live, policy.resolve)) for s in back.steps)
        view = gating.Cluster(
            cluster, {n: lv.config for n, lv in live.items()}, {}, frozenset(), kafka, replace(back, steps=steps)
        )
        plans, verdict = gating.judged([view], replace(policy, allow=Allow(), force=True))
        cleared = passed(verdict, cluster)
        kept = tuple(s for s in plans[cluster].steps if s.name in cleared.names())
        return replace(back, steps=kept), cleared, tuple(r.message for r in verdict.refused(cluster))

    return judge

"""Every cluster's plan judged together at the one gate (pure).

The plans of a run are computed per cluster; what they do to data is judged over the whole
project: the fleet's rules (`safety.fleet`: second writers, a table's keys taken over) see
every cluster's live connectors and git's, and the gate (`safety.gate`) decides, for every
step of every cluster, whether it may go. A cluster with a refusal is applied not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from hephaestus.reconciler.plan import Desired, Plan, Policy, Step
from hephaestus.safety import effects, fleet, gate, views
from hephaestus.safety.effects import Effect


@dataclass(frozen=True)
class GatedCluster:
    """What the gate knows of one cluster: its live listing (all of it: another deployment's
    connectors are second writers too), git's connectors in its select, what this deployment
    owns there, the Kafka cluster behind it, and its plan when this run planned it."""

    name: str
    live: Mapping[str, Mapping[str, str]] = field(hash=False)
    desired: Mapping[str, Desired] = field(hash=False)
    owned: frozenset[str] = frozenset()
    kafka: str | None = None
    plan: Plan | None = None


def judged(clusters: Sequence[GatedCluster], policy: Policy) -> tuple[dict[str, Plan], gate.Verdict]:
    """The plans with the fleet's effects added and the gate's refusals set, and the verdict."""
    changes = [c for v in clusters if v.plan for c in _changes(v.name, v.plan)]
    members = _members(clusters, {c.key for c in changes})
    found = fleet.judge(members, changes, policy.resolve, {v.name: v.kafka for v in clusters})
    plans = {v.name: _with_fleet(v.plan, found) for v in clusters if v.plan}
    items = [i for v in clusters if v.plan for i in items_of(plans[v.name], v.desired)]
    deletes = [_deletes(plans[v.name], v) for v in clusters if v.plan]
    verdict = gate.judge(
        items,
        policy.allow,
        deletes=deletes,
        policy=gate.DeletePolicy(policy.max_deletes, policy.max_delete_share, policy.force),
    )
    return {n: replace(p, refusals=tuple(r.message for r in verdict.refused(n))) for n, p in plans.items()}, verdict


def _changes(cluster: str, p: Plan) -> list[fleet.FleetChange]:
    found = [
        fleet.FleetChange(cluster, s.name, None if s.action == "delete" else s.config, s.renamed_from)
        for s in p.writes
        if s.action not in ("state", "restart")  # no config moves: no second writer made
    ]
    # A move leaves the cluster it comes from: not a second writer beside itself.
    return found + [fleet.FleetChange(s.moved_from, s.name, None) for s in p.of("move")]


def _members(clusters: Sequence[GatedCluster], changed: set[fleet.Key]) -> list[fleet.Member]:
    """The fleet before the run: every live connector, and every connector git declares that
    does not run yet (planned), except those this run writes."""
    live = [fleet.Member(v.name, n, c, v.kafka) for v in clusters for n, c in sorted(v.live.items())]
    planned = [
        fleet.Member(v.name, n, d.config, v.kafka)
        for v in clusters
        for n, d in sorted(v.desired.items())
        if n not in v.live and (v.name, n) not in changed
    ]
    return live + planned


def _with_fleet(p: Plan | None, found: Mapping[fleet.Key, tuple[Effect, ...]]) -> Plan:
    assert p is not None
    steps = tuple(replace(s, effects=(*s.effects, *found.get((p.cluster, s.name), ()))) for s in p.steps)
    return replace(p, steps=steps)


def items_of(p: Plan, desired: Mapping[str, Desired]) -> list[gate.Item]:
    """The plan's writes, publication changes and back-fills as the gate's items."""
    items = [gate.Item(p.cluster, s.name, s.action, s.effects, _allow(s, desired), True) for s in p.writes]
    for ch in p.publications:
        found = effects.of_publication_drop(ch.drop) if ch.drop else ()
        allowed = [_allow_of(desired, c) for c in ch.connectors]
        allow = allowed[0] if allowed and all(a == allowed[0] for a in allowed) else gate.Allow()
        items.append(gate.Item(p.cluster, f"publication {ch.name}", "alter", found, allow, True))
    # A back-fill's signal is a write too: its re-emitted rows reach every sink of its tables.
    items += [
        gate.Item(p.cluster, f"back-fill {b.source}", "back-fill", b.effects, _allow_of(desired, b.source), True)
        for b in p.backfills
    ]
    return items


def _allow(step: Step, desired: Mapping[str, Desired]) -> gate.Allow:
    return _allow_of(desired, step.name)


def _allow_of(desired: Mapping[str, Desired], name: str) -> gate.Allow:
    d = desired.get(name)
    return d.allow if d is not None else gate.Allow()


def _deletes(p: Plan, v: GatedCluster) -> gate.Deletes:
    owned_sinks = sum(1 for n in v.owned if n in v.live and views.is_sink(v.live[n]))
    return gate.Deletes(
        p.cluster, len(p.of("delete")), owned_sinks, any(views.is_sink(d.config) for d in v.desired.values())
    )

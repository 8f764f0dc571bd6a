"""Which connectors of a run move between clusters (issue 49), over every cluster's plan. Pure.

A connector moves when its file goes from `connectors/A/` to `connectors/B/`: git wants it on B,
B does not run it, A runs it, this deployment owns it there, and A's folder no longer has it.
Each cluster was planned alone, so B planned a create and A a delete (a sink) or nothing it
may touch (a source, `protected`). Both become one step on B: `move`, which stops it on A,
carries its offsets (a source's position in its slot, a sink's consumer group) to B, starts it
there and deletes it on A (`reconciler.moves`). A's plan leaves it alone.

A move that a killed run left part-way is taken up again: B then runs it too, and B's ownership
record says `moving from A` (written before the move's first write). A connector of that name on
B that this deployment does not own is another team's: the move is refused, never merged.

A move fails closed (an invariant effect, `move-unsafe`, refused whatever is allowed) when the two
clusters do not share one Kafka cluster (a source's offsets name positions in topics B would not
read, a sink's consumer group lives in that Kafka) or when B's worker does not run the version of
the plugin that A's does (its offsets, and how it reads them, may differ).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from hephaestus import versions
from hephaestus.fleet.model import Desired, Live
from hephaestus.reconciler.outcome import ClusterOutcome
from hephaestus.reconciler.plan import Held, Plan, Policy, Step, changes_of
from hephaestus.safety import effects
from hephaestus.safety.effects import Effect
from hephaestus.state.ownership import MOVING, Claim


@dataclass(frozen=True)
class Move:
    name: str
    source: str  # the cluster it leaves
    target: str  # the cluster it goes to
    live: Live  # as A runs it
    on_target: Live | None = None  # B runs it already: an earlier run stopped part-way, or a stranger
    ours: bool = False  # B's runs are this deployment's (`moving from A`): ours to finish


@dataclass(frozen=True)
class Facts:
    """What a move's checks read (`reconciler.run`): each cluster's Kafka identity and its
    plugins' versions by class (None: not read, or could not be)."""

    kafka: Mapping[str, str | None]
    versions: Mapping[str, Mapping[str, frozenset[str]] | None]  # {class: versions installed}


def found(outs: Sequence[ClusterOutcome], desired: Mapping[str, Mapping[str, Desired]]) -> tuple[Move, ...]:
    """The moves among the planned clusters (a cluster not planned in this run moves nothing)."""
    moves = []
    for b in outs:
        if b.plan is None or b.basis is None:
            continue
        for s in b.plan.steps:
            if s.action in ("create", "move") or s.name in b.basis.live:
                moves += _from(s.name, b, outs, desired)
    return tuple(moves)


def _from(
    name: str,
    b: ClusterOutcome,
    outs: Sequence[ClusterOutcome],
    desired: Mapping[str, Mapping[str, Desired]],
) -> list[Move]:
    assert b.basis is not None
    if name not in desired[b.cluster]:
        return []
    leaving = [a for a in outs if a is not b and _leaves(a, name, desired)]
    if len(leaving) != 1:
        return []  # none, or owned on two others: git's plan stands (the fleet's rules see both)
    a = leaving[0]
    assert a.basis is not None
    # B's record says `moving from A` from before the move's first write: a connector there that
    # this deployment does not own is someone else's.
    ours = name in b.basis.owned
    return [Move(name, a.cluster, b.cluster, a.basis.live[name], b.basis.live.get(name), ours)]


def _leaves(a: ClusterOutcome, name: str, desired: Mapping[str, Mapping[str, Desired]]) -> bool:
    return a.basis is not None and name in a.basis.owned and name in a.basis.live and name not in desired[a.cluster]


def clusters(moves: Sequence[Move]) -> frozenset[str]:
    """The clusters whose plugins' versions the checks need."""
    return frozenset(c for m in moves for c in (m.source, m.target))


def paired(
    outs: Sequence[ClusterOutcome],
    moves: Sequence[Move],
    desired: Mapping[str, Mapping[str, Desired]],
    facts: Facts,
    policy: Policy,
) -> list[ClusterOutcome]:
    """Each move one step on B (its effects judged from A's config), and left alone on A."""
    into = {(m.target, m.name): m for m in moves}
    away = {(m.source, m.name) for m in moves}
    out = []
    for o in outs:
        if o.plan is None:
            out.append(o)
            continue
        steps = [_step(s, into.get((o.cluster, s.name)), desired, facts, policy) for s in o.plan.steps]
        kept = tuple(s for s in steps if (o.cluster, s.name) not in away)
        mine = {n for (c, n) in into if c == o.cluster}
        p = replace(o.plan, steps=kept, adopt=tuple(n for n in o.plan.adopt if n not in mine))
        out.append(replace(o, plan=p))
    return out


def _step(s: Step, m: Move | None, desired: Mapping[str, Mapping[str, Desired]], facts: Facts, policy: Policy) -> Step:
    if m is None:
        return s
    d = desired[m.target][m.name]
    return Step(
        "move",
        m.name,
        config=d.config,
        changes=changes_of(m.live.config, d.config, policy.ignore_keys),
        reason=f"{m.source}→{m.target}, offsets kept{', slot handed over' if m.live.type == 'source' else ''}",
        connector_class=d.config.get("connector.class", ""),
        origin=d.origin,
        live_state=m.live.state,
        moved_from=m.source,
        target_state=d.state,
        effects=_effects(m, d, facts, policy),
    )


def _effects(m: Move, d: Desired, facts: Facts, policy: Policy) -> tuple[Effect, ...]:
    """A rename's effects (stopped, offsets carried, started: A's config against git's), and
    what makes it unsafe to move at all."""
    found = effects.of_rename(m.live.config, d.config, policy.resolve)
    return found + tuple(Effect(*why, invariant=True) for why in _unsafe(m, facts))


def _unsafe(m: Move, facts: Facts) -> list[tuple[str, str]]:
    found = []
    if m.on_target is not None and not m.ours:
        found.append(("not-owned", f"{m.target} already runs {m.name} and this deployment does not own it"))
    ka, kb = facts.kafka.get(m.source), facts.kafka.get(m.target)
    if ka is None or ka != kb:  # unknown on either side is not the same
        why = f"{m.source} and {m.target} do not share a Kafka cluster ({ka or '?'}, {kb or '?'})"
        found.append(("move-unsafe", why))
    cls = m.live.config.get("connector.class", "")
    try:
        need = versions.requirement(m.live.config.get("connector.plugin.version"))
    except ValueError as exc:
        return [*found, ("move-unsafe", f"connector.plugin.version: {exc}")]
    va, vb = (_version(facts, c, cls, need) or "not installed" for c in (m.source, m.target))
    if va != vb or va == "not installed":
        found.append(("move-unsafe", f"{cls} is {va} on {m.source}, {vb} on {m.target}"))
    return found


def _version(facts: Facts, cluster: str, cls: str, need: versions.Requirement) -> str | None:
    """The version the connector runs there, as Connect resolves its pin (KIP-891)."""
    versions = facts.versions.get(cluster)
    return None if versions is None else need.chosen(versions.get(cls, frozenset()))


def held(outs: Sequence[ClusterOutcome]) -> list[ClusterOutcome]:
    """A move writes to the cluster it leaves too (stop, delete): while that cluster's plan is
    refused (by the gate, or a sealed plan gone stale there), nothing may be written there, so
    the move is held and the rest of this cluster's plan goes."""
    refused = {o.cluster for o in outs if o.plan is not None and o.plan.refusals}
    return [replace(o, plan=_held(o.plan, refused)) if o.plan is not None else o for o in outs]


def _held(p: Plan, refused: set[str]) -> Plan:
    held = [s for s in p.of("move") if s.moved_from in refused]
    if not held:
        return p
    why = "{}'s plan is refused, and a move writes to the cluster it leaves"
    return replace(
        p,
        steps=tuple(s for s in p.steps if s not in held),
        held=(*p.held, *(Held(s.name, why.format(s.moved_from)) for s in held)),
    )


def unfinished(outs: Sequence[ClusterOutcome], claims: Mapping[str, Mapping[str, Claim]]) -> list[ClusterOutcome]:
    """A copy a killed move left on B (marked `moving from A`) that this run does not move: held.
    Started alone, without the offsets the move would have written, a source snapshots again."""
    return [replace(o, plan=_unmoved(o.plan, claims.get(o.cluster, {}))) if o.plan is not None else o for o in outs]


def _unmoved(p: Plan, claims: Mapping[str, Claim]) -> Plan:
    held = [s for s in p.writes if s.action != "move" and claims.get(s.name, _NONE).how.startswith(MOVING)]
    if not held:
        return p
    why = "{} left part-way; reconcile both clusters in one run to finish it"
    return replace(
        p,
        steps=tuple(s for s in p.steps if s not in held),
        held=(*p.held, *(Held(s.name, why.format(claims[s.name].how)) for s in held)),
    )


_NONE = Claim("", "", "", "")

"""plan(desired, live, policy) -> Plan: what a reconcile would do. Pure: no I/O.

Every PUT restarts the connector, so a false diff is a bug: configs are compared as Connect
stores them (strings, `name` ignored, placeholders literal) minus the ignorable keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Literal

from hephaestus.classes import JDBC_SINK_CLASSES
from hephaestus.drift.model import Finding
from hephaestus.fleet.model import Desired, Live, comparable
from hephaestus.fleet.sources import SourceRef
from hephaestus.publications import change as publications
from hephaestus.reconciler import renames
from hephaestus.safety import effects
from hephaestus.safety.effects import Effect
from hephaestus.safety.gate import Allow, first_and_more
from hephaestus.safety.values import NO_RESOLVER, Resolver
from hephaestus.settings import MAX_DELETE_SHARE, MAX_DELETES

__all__ = ["Desired", "Live", "comparable", "Plan", "Policy", "Step", "KeyChange", "plan"]


Action = Literal[
    "create", "update", "rename", "move", "delete", "state", "restart", "protected", "unmanaged", "unchanged"
]
WRITES: frozenset[Action] = frozenset({"create", "update", "rename", "move", "delete", "state", "restart"})
ACTIONS: tuple[Action, ...] = (
    "create",
    "update",
    "rename",
    "move",  # from another cluster of the project, offsets kept (reconciler.crossing)
    "delete",
    "state",
    "restart",  # a secret rotated behind its placeholder (reconciler.rotation)
    "protected",
    "unmanaged",
    "unchanged",
)
TARGET_STATES = frozenset({"RUNNING", "PAUSED", "STOPPED"})


@dataclass(frozen=True)
class KeyChange:
    key: str
    before: str | None  # None: the key is new
    after: str | None  # None: the key goes away


@dataclass(frozen=True)
class Step:
    action: Action
    name: str
    _: KW_ONLY  # the rest by name: its origin, states and reason are strings side by side
    config: Mapping[str, str] = field(default_factory=dict, hash=False)  # desired (create/update)
    changes: tuple[KeyChange, ...] = ()
    reason: str = ""
    connector_class: str = ""
    origin: str = ""  # the file in git, for messages
    live_state: str = ""  # the state Connect reported before the run (an update keeps it)
    renamed_from: str = ""  # a rename: the live connector whose offsets this one takes over
    moved_from: str = ""  # a move: the cluster it leaves, offsets and slot handed over (issue 49)
    target_state: str = ""  # git's `state` (RUNNING/PAUSED/STOPPED): what the step leaves it in
    # What it does to data (safety.effects; the fleet's rules add theirs): derived, so left
    # out of equality.
    effects: tuple[Effect, ...] = field(default=(), compare=False)

    @property
    def risk(self) -> str:
        """The class shown beside the step: destructive (an effect the gate holds), create,
        delete, restart (every config write restarts the connector), or none."""
        if any(e.destructive for e in self.effects):
            return "destructive"
        risks = {"create": "create", "delete": "delete", "update": "restart", "rename": "restart", "move": "restart"}
        return risks.get(self.action, "")


@dataclass(frozen=True, kw_only=True)  # keywords only: counts, a share and a bool side by side
class Policy:
    ignore_keys: frozenset[str] = frozenset()
    max_deletes: int = MAX_DELETES
    max_delete_share: float = MAX_DELETE_SHARE
    force: bool = False
    allow: Allow = Allow()  # --allow-destructive[=CODE,…]
    # Resolves `${file:…}` placeholders where the workers' secrets file is readable here.
    resolve: Resolver = field(default=NO_RESOLVER, compare=False)


@dataclass(frozen=True)
class Unhealthy:
    """A connector git manages that Connect reports FAILED, with FAILED tasks, or UNASSIGNED
    beyond the grace period: drift of the running state, not of the config."""

    name: str
    reason: str  # masked


@dataclass(frozen=True)
class Need:
    """Topics a sink reads that do not exist yet, written by `source`: created before the sink
    with the source's `topic.creation.default.*` settings."""

    sink: str
    _: KW_ONLY  # the rest by name: the source is a name beside the sink's, the counts side by side
    topics: tuple[str, ...]
    source: str
    partitions: int = -1  # -1: the broker's default
    replication: int = -1
    config: tuple[tuple[str, str], ...] = ()  # other topic.creation.default.* keys (cleanup.policy …)

    def describe(self) -> str:
        return f"needs topics {', '.join(self.topics)} (written by {self.source}): created before the sink"


@dataclass(frozen=True)
class Backfill:
    """An incremental snapshot of tables a source already captures, sent after the writes: the
    rows a publication gap lost, or the columns a widened sink did not write before (issue 45)."""

    ref: SourceRef  # the source that re-reads them: its database, slot and signal table
    tables: tuple[str, ...]
    why: str
    # What re-emitting every row does to the sinks that read them (safety.effects.of_backfill),
    # judged at the gate like a step's: derived, so left out of equality.
    effects: tuple[Effect, ...] = field(default=(), compare=False)

    @property
    def source(self) -> str:
        return self.ref.connector

    def describe(self) -> str:
        return f"back-fill {', '.join(self.tables)} through {self.source}: {self.why}"


@dataclass(frozen=True)
class Held:
    """A sink held back this run while the rest of its cluster's plan is written (issue 48): it
    reads a topic that does not exist yet. `migration`: the ksqlDB migration that writes it (the
    sink waits for it); none, and nothing in git writes it."""

    name: str
    why: str
    migration: str = ""

    def describe(self) -> str:
        return f"held {self.name}: {self.why}"


@dataclass(frozen=True)
class Plan:
    cluster: str
    steps: tuple[Step, ...]
    # Why the gate refused it, one reason per refusal (safety.gate: effects, fleet rules, the
    # delete policy; a sealed plan gone stale): none, and the plan may be applied.
    refusals: tuple[str, ...] = ()
    health: tuple[Unhealthy, ...] = ()  # managed connectors not running as they should
    adopt: tuple[str, ...] = ()  # in git and live but not yet owned: recorded as owned by an apply
    warnings: tuple[str, ...] = ()
    publications: tuple[publications.PublicationChange, ...] = ()  # applied before the connector writes
    needs: tuple[Need, ...] = ()  # topics created just before their sink (reconciler.sinktopics)
    backfills: tuple[Backfill, ...] = ()  # sent once the writes are done (reconciler.backfill)
    schema: tuple[Finding, ...] = ()  # what the sources' schema drift does to data (hephaestus.drift)
    held: tuple[Held, ...] = ()  # sinks not written this run: their topics do not exist yet

    def needs_of(self, sink: str) -> tuple[Need, ...]:
        return tuple(n for n in self.needs if n.sink == sink)

    def of(self, *actions: Action) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.action in actions)

    @property
    def refused(self) -> str:
        """One readable line: the first refusal, and how many more ("" when none)."""
        return first_and_more(self.refusals)

    @property
    def writes(self) -> tuple[Step, ...]:
        return self.of(*WRITES)

    @property
    def in_sync(self) -> bool:
        return not self.writes and not self.publications and not self.backfills

    @property
    def healthy(self) -> bool:
        return not self.health

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {a: 0 for a in ACTIONS}
        for s in self.steps:
            out[s.action] += 1
        return out


@dataclass(frozen=True)
class Scope:
    """What this deployment may touch on the cluster, beyond git's desired connectors."""

    owned: frozenset[str] = frozenset()  # live connectors the ownership record gives us
    held: frozenset[str] = frozenset()  # names in git this run leaves out (custom, no flag)
    warnings: tuple[str, ...] = ()  # found by the caller (e.g. an unscoped shared cluster)


def plan(
    cluster: str, desired: Mapping[str, Desired], live: Mapping[str, Live], policy: Policy, scope: Scope = Scope()
) -> Plan:
    """Every connector's step with its own effects (the fleet's rules and the gate come after,
    over every cluster: `reconciler.gating`)."""
    found = renames.find(desired, live, scope.owned, policy.ignore_keys)
    olds = set(found.pairs.values()) | set(found.blocked.values())
    steps = [_desired_step(d, live.get(name), policy, _old(name, found, live)) for name, d in desired.items()]
    steps += [
        _absent_step(lv, lv.name in scope.held, lv.name in scope.owned)
        for name, lv in live.items()
        if name not in desired and name not in olds
    ]
    judged = [_with_effects(s, live, policy.resolve) for s in sorted(steps, key=lambda s: s.name)]
    adopt = tuple(sorted(n for n in desired if n in live and n not in scope.owned and n not in found.blocked))
    return Plan(cluster, tuple(judged), adopt=adopt, warnings=(*scope.warnings, *found.warnings))


def _old(name: str, found: renames.Renames, live: Mapping[str, Live]) -> Live | None:
    old = found.pairs.get(name) or found.blocked.get(name)
    return live[old] if old else None


def _with_effects(step: Step, live: Mapping[str, Live], resolve: Resolver) -> Step:
    if step.action not in WRITES:
        return step
    return replace(step, effects=step_effects(step, live, resolve))


def step_effects(step: Step, live: Mapping[str, Live], resolve: Resolver) -> tuple[Effect, ...]:
    """What one write does to data, from the live connector(s) it acts on (safety.effects)."""
    current = live.get(step.name)
    if step.action in ("create", "move"):
        return ()  # a move's: from the cluster it leaves (reconciler.crossing)
    if step.action == "delete":
        return effects.of_delete(current.config) if current else ()
    if step.action == "rename":
        old = live.get(step.renamed_from)
        found = effects.of_rename(old.config, step.config, resolve) if old else ()
        # Its restart (stopped, offsets carried, started) is judged as an update's: a state git
        # asks for after it adds no effect a stop and a start have not.
        return found + (_overwrite(step) if current else ())
    if current is None:
        return ()  # gone since: a sealed plan's preconditions say so
    found = effects.of_update(current.config, step.config, resolve, current.version) if step.action == "update" else ()
    if step.target_state and step.target_state != current.state and current.state in TARGET_STATES:
        found += effects.of_state(step.config, current.state, step.target_state, resolve)
    return found


def _overwrite(step: Step) -> tuple[Effect, ...]:
    why = f"{step.name} already runs and this deployment does not own it: a rename never overwrites it"
    return (Effect("not-owned", why, invariant=True),)


def changes_of(before: Mapping[str, str], after: Mapping[str, str], ignore: frozenset[str]) -> tuple[KeyChange, ...]:
    """What a write changes, compared as Connect stores configs (`name` and ignored keys out)."""
    return diff(comparable(before, ignore), comparable(after, ignore))


def diff(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[KeyChange, ...]:
    keys = sorted(set(before) | set(after))
    return tuple(KeyChange(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k))


def _desired_step(d: Desired, current: Live | None, policy: Policy, old: Live | None) -> Step:
    cls = d.config.get("connector.class", "")
    if old is not None:  # a rename: the new name takes over the old one's offsets
        changes = changes_of(old.config, d.config, policy.ignore_keys)
        reason = f"from {old.name}, offsets kept"
        return Step(
            "rename",
            d.name,
            config=d.config,
            changes=changes,
            reason=reason,
            connector_class=cls,
            origin=d.origin,
            live_state=old.state,
            renamed_from=old.name,
            target_state=d.state,
        )
    if current is None:
        return Step("create", d.name, config=d.config, connector_class=cls, origin=d.origin, target_state=d.state)
    changes = changes_of(current.config, d.config, policy.ignore_keys)
    # A state is converged only from a state Connect settled in: FAILED/UNASSIGNED is health.
    moves = bool(d.state) and current.state in TARGET_STATES and current.state != d.state
    action: Action = "update" if changes else "state" if moves else "unchanged"
    reason = f"{current.state} → {d.state}" if moves else ""
    return Step(
        action,
        d.name,
        config=d.config,
        changes=changes,
        reason=reason,
        connector_class=cls,
        origin=d.origin,
        live_state=current.state,
        target_state=d.state,
    )


def _absent_step(lv: Live, held: bool, owned: bool) -> Step:
    """A live connector git does not have: delete only an owned sink, which loses no data."""
    cls = lv.config.get("connector.class", "")
    if held:
        return Step(
            "unmanaged",
            lv.name,
            reason="custom connector: reconciled only with --deploy-custom-sinks",
            connector_class=cls,
        )
    if is_ksqldb_managed(lv.name):
        return Step("unmanaged", lv.name, reason="ksqlDB-managed (ALL-CAPS name)", connector_class=cls)
    if cls in JDBC_SINK_CLASSES and owned:
        return Step(
            "delete",
            lv.name,
            reason="JDBC sink absent from git",
            connector_class=cls,
            effects=effects.of_delete(lv.config),
        )
    if cls in JDBC_SINK_CLASSES:
        return Step(
            "unmanaged",
            lv.name,
            connector_class=cls,
            reason="JDBC sink absent from git, not owned by this deployment (`hephaestus import` adopts it)",
        )
    if lv.type == "source":
        return Step(
            "protected",
            lv.name,
            connector_class=cls,
            reason="a source is never deleted: its slot and offsets would be lost",
        )
    return Step("unmanaged", lv.name, reason=f"not a JDBC sink ({cls or 'unknown class'})", connector_class=cls)


def is_ksqldb_managed(name: str) -> bool:
    return any(c.isalpha() for c in name) and name == name.upper()

"""plan(desired, live, policy) -> Plan: what a reconcile would do. Pure: no I/O.

Every PUT restarts the connector, so a false diff is a bug: configs are compared as Connect
stores them (strings, `name` ignored, placeholders literal) minus the ignorable keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from hephaestus.classes import JDBC_SINK_CLASSES
from hephaestus.reconciler import publications, renames
from hephaestus.reconciler.model import Desired, Live, comparable
from hephaestus.reconciler.risk import Risk, assess

__all__ = ["Desired", "Live", "comparable", "Plan", "Policy", "Step", "KeyChange", "plan"]


Action = Literal["create", "update", "rename", "delete", "state", "protected", "unmanaged", "unchanged"]
WRITES: frozenset[Action] = frozenset({"create", "update", "rename", "delete", "state"})
ACTIONS: tuple[Action, ...] = ("create", "update", "rename", "delete", "state", "protected", "unmanaged", "unchanged")
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
    config: Mapping[str, str] = field(default_factory=dict, hash=False)  # desired (create/update)
    changes: tuple[KeyChange, ...] = ()
    reason: str = ""
    connector_class: str = ""
    origin: str = ""  # the file in git, for messages
    live_state: str = ""  # the state Connect reported before the run (an update keeps it)
    renamed_from: str = ""  # a rename: the live connector whose offsets this one takes over
    target_state: str = ""  # git's `state` (RUNNING/PAUSED/STOPPED): what the step leaves it in
    # Derived from the rest (reconciler.risk), so left out of equality.
    risk: Risk = field(default="", compare=False)  # create, delete, restart (every update), destructive
    risk_reasons: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # (key, why) if destructive


@dataclass(frozen=True)
class Policy:
    ignore_keys: frozenset[str] = frozenset()
    max_deletes: int = 10
    max_delete_share: float = 0.5
    force: bool = False
    allow_destructive: bool = False  # --allow-destructive: every destructive step may go


@dataclass(frozen=True)
class Unhealthy:
    """A connector git manages that Connect reports FAILED, with FAILED tasks, or UNASSIGNED
    beyond the grace period: drift of the running state, not of the config."""

    name: str
    reason: str  # masked


@dataclass(frozen=True)
class Plan:
    cluster: str
    steps: tuple[Step, ...]
    refused: str = ""  # why the plan must not be applied (without --force)
    health: tuple[Unhealthy, ...] = ()  # managed connectors not running as they should
    adopt: tuple[str, ...] = ()  # in git and live but not yet owned: recorded as owned by an apply
    warnings: tuple[str, ...] = ()
    publications: tuple[publications.Change, ...] = ()  # applied before the connector writes

    def of(self, *actions: Action) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.action in actions)

    @property
    def writes(self) -> tuple[Step, ...]:
        return self.of(*WRITES)

    @property
    def in_sync(self) -> bool:
        return not self.writes and not self.publications

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
    found = renames.find(desired, live, scope.owned, policy.ignore_keys)
    olds = set(found.pairs.values())
    steps = [
        _desired_step(d, live.get(name), policy, live[found.pairs[name]] if name in found.pairs else None)
        for name, d in sorted(desired.items())
    ]
    steps += [
        _absent_step(lv, lv.name in scope.held, lv.name in scope.owned)
        for name, lv in sorted(live.items())
        if name not in desired and name not in olds
    ]
    steps = sorted((_assessed(s, live) for s in steps), key=lambda s: s.name)
    adopt = tuple(sorted(n for n in desired if n in live and n not in scope.owned))
    refused = "; ".join(found.refused) or "; ".join(
        r
        for r in (_refusal(steps, desired, live, scope.owned, policy), _destructive_refusal(steps, desired, policy))
        if r
    )
    return Plan(cluster, tuple(steps), refused, adopt=adopt, warnings=(*scope.warnings, *found.warnings))


def _assessed(step: Step, live: Mapping[str, Live]) -> Step:
    if step.action == "unchanged":  # nothing to risk (most of a fleet, most days)
        return step
    before = live.get(step.renamed_from or step.name)
    found = assess(
        step.action,
        step.connector_class,
        before.config if before else {},
        step.config,
        tuple(c.key for c in step.changes),
    )
    return replace(step, risk=found.risk, risk_reasons=found.reasons)


def _destructive_refusal(steps: list[Step], desired: Mapping[str, Desired], policy: Policy) -> str:
    """Destructive steps go only with --allow-destructive or the file's `allow_destructive`."""
    held = [
        s
        for s in steps
        if s.risk == "destructive"
        and not policy.allow_destructive
        and not (s.name in desired and desired[s.name].allow_destructive)
    ]
    if not held:
        return ""
    first = held[0]
    more = f" and {len(held) - 1} more" if len(held) > 1 else ""
    return (
        f"destructive change to {first.name} ({first.risk_reasons[0][0]}: {first.risk_reasons[0][1]}){more}; "
        "rerun with --allow-destructive, or set allow_destructive: true in its file"
    )


def diff(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[KeyChange, ...]:
    keys = sorted(set(before) | set(after))
    return tuple(KeyChange(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k))


def _desired_step(d: Desired, current: Live | None, policy: Policy, old: Live | None = None) -> Step:
    cls = d.config.get("connector.class", "")
    if old is not None:  # a rename: the new name takes over the old one's offsets
        changes = diff(comparable(old.config, policy.ignore_keys), comparable(d.config, policy.ignore_keys))
        return Step(
            "rename",
            d.name,
            d.config,
            changes,
            f"from {old.name}, offsets kept",
            cls,
            d.origin,
            old.state,
            renamed_from=old.name,
        )
    if current is None:
        return Step("create", d.name, d.config, connector_class=cls, origin=d.origin, target_state=d.state)
    changes = diff(comparable(current.config, policy.ignore_keys), comparable(d.config, policy.ignore_keys))
    # A state is converged only from a state Connect settled in: FAILED/UNASSIGNED is health.
    moves = bool(d.state) and current.state in TARGET_STATES and current.state != d.state
    action: Action = "update" if changes else "state" if moves else "unchanged"
    reason = f"{current.state} → {d.state}" if moves else ""
    return Step(action, d.name, d.config, changes, reason, cls, d.origin, current.state, target_state=d.state)


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
        return Step("delete", lv.name, reason="JDBC sink absent from git", connector_class=cls)
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


def _refusal(
    steps: list[Step], desired: Mapping[str, Desired], live: Mapping[str, Live], owned: frozenset[str], policy: Policy
) -> str:
    """Deletes are counted against the owned sinks, never the whole live fleet; a sink kind
    gone from git (an emptied or missing folder) is refused whatever the counts."""
    deletes = sum(1 for s in steps if s.action == "delete")
    if policy.force or deletes == 0:
        return ""
    owned_sinks = sum(1 for n, lv in live.items() if n in owned and _is_sink(lv.config))
    if not any(_is_sink(d.config) for d in desired.values()):
        return (
            f"git has no JDBC sink for this cluster (its sink folder is empty or missing) while "
            f"{owned_sinks} owned sinks run: deleting {deletes} of them needs --force"
        )
    if deletes > policy.max_deletes:
        return f"would delete {deletes} connectors (more than {policy.max_deletes}); rerun with --force"
    if deletes / owned_sinks > policy.max_delete_share:
        return (
            f"would delete {deletes} of {owned_sinks} owned sinks "
            f"(more than {policy.max_delete_share:.0%}); rerun with --force"
        )
    return ""


def _is_sink(config: Mapping[str, str]) -> bool:
    return config.get("connector.class") in JDBC_SINK_CLASSES

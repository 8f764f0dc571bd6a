"""plan(desired, live, policy) -> Plan: what a reconcile would do. Pure: no I/O.

Every PUT restarts the connector, so a false diff is a bug: configs are compared as Connect
stores them (strings, `name` ignored, placeholders literal) minus the ignorable keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

JDBC_SINK_CLASSES = frozenset({
    "io.confluent.connect.jdbc.JdbcSinkConnector",
    "io.debezium.connector.jdbc.JdbcSinkConnector",
})

Action = Literal["create", "update", "delete", "protected", "unmanaged", "unchanged"]
WRITES: frozenset[Action] = frozenset({"create", "update", "delete"})


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


@dataclass(frozen=True)
class Policy:
    ignore_keys: frozenset[str] = frozenset()
    max_deletes: int = 10
    max_delete_share: float = 0.5
    force: bool = False


@dataclass(frozen=True)
class Desired:
    name: str
    config: Mapping[str, str] = field(hash=False)
    origin: str = ""


@dataclass(frozen=True)
class Live:
    name: str
    config: Mapping[str, str] = field(hash=False)
    type: str = ""  # "source" / "sink" as Connect reports it
    state: str = ""  # RUNNING / PAUSED / STOPPED / FAILED … as Connect reports it


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

    def of(self, *actions: Action) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.action in actions)

    @property
    def writes(self) -> tuple[Step, ...]:
        return self.of(*WRITES)

    @property
    def in_sync(self) -> bool:
        return not self.writes

    @property
    def healthy(self) -> bool:
        return not self.health

    def counts(self) -> dict[str, int]:
        out = {a: 0 for a in ("create", "update", "delete", "protected", "unmanaged", "unchanged")}
        for s in self.steps:
            out[s.action] += 1
        return out


def plan(cluster: str, desired: Mapping[str, Desired], live: Mapping[str, Live],
         policy: Policy, held: frozenset[str] = frozenset()) -> Plan:
    """`held`: names in git that this run leaves out (custom connectors without the flag)."""
    steps = [_desired_step(d, live.get(name), policy) for name, d in sorted(desired.items())]
    steps += [_absent_step(l, l.name in held) for name, l in sorted(live.items()) if name not in desired]
    steps.sort(key=lambda s: s.name)
    return Plan(cluster, tuple(steps), _refusal(steps, len(live), policy))


def comparable(config: Mapping[str, str], ignore: frozenset[str]) -> dict[str, str]:
    """The config as it should be compared: `name` (Connect adds it) and ignorable keys out."""
    return {k: v for k, v in config.items() if k != "name" and k not in ignore}


def diff(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[KeyChange, ...]:
    keys = sorted(set(before) | set(after))
    return tuple(KeyChange(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k))


def _desired_step(d: Desired, current: Live | None, policy: Policy) -> Step:
    cls = d.config.get("connector.class", "")
    if current is None:
        return Step("create", d.name, d.config, connector_class=cls, origin=d.origin)
    changes = diff(comparable(current.config, policy.ignore_keys), comparable(d.config, policy.ignore_keys))
    action: Action = "update" if changes else "unchanged"
    return Step(action, d.name, d.config, changes, connector_class=cls, origin=d.origin, live_state=current.state)


def _absent_step(l: Live, held: bool = False) -> Step:
    """A live connector git does not have: delete only what cannot lose data."""
    cls = l.config.get("connector.class", "")
    if held:
        return Step("unmanaged", l.name, reason="custom connector: reconciled only with --deploy-custom-sinks",
                    connector_class=cls)
    if is_ksqldb_managed(l.name):
        return Step("unmanaged", l.name, reason="ksqlDB-managed (ALL-CAPS name)", connector_class=cls)
    if cls in JDBC_SINK_CLASSES:
        return Step("delete", l.name, reason="JDBC sink absent from git", connector_class=cls)
    if l.type == "source":
        return Step("protected", l.name, connector_class=cls,
                    reason="a source is never deleted: its slot and offsets would be lost")
    return Step("unmanaged", l.name, reason=f"not a JDBC sink ({cls or 'unknown class'})",
                connector_class=cls)


def is_ksqldb_managed(name: str) -> bool:
    return any(c.isalpha() for c in name) and name == name.upper()


def _refusal(steps: list[Step], live_count: int, policy: Policy) -> str:
    deletes = sum(1 for s in steps if s.action == "delete")
    if policy.force or deletes == 0:
        return ""
    if deletes > policy.max_deletes:
        return f"would delete {deletes} connectors (more than {policy.max_deletes}); rerun with --force"
    if live_count and deletes / live_count > policy.max_delete_share:
        return (f"would delete {deletes} of {live_count} live connectors "
                f"(more than {policy.max_delete_share:.0%}); rerun with --force")
    return ""

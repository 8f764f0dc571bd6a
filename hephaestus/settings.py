"""The project file's settings sections, typed, each default declared once (pure).

`policy:`, `heal:`, `lock:`, `state:` and `rollout:` of hephaestus.yaml become frozen dataclasses
when the project is loaded; every job reads their attributes instead of parsing a dict of its own.
The defaults here are the only ones: `schema_defaults()` exports them, the JSON schema carries
them (so an editor shows them), and a test holds the two equal.

The deployment's state (the cluster lock, the ownership record, heal's records, the audit
journal) lives in one database, `state: {database: NAME}`. Earlier releases chose it three
times (`lock.database`, `heal.state.database`, `audit.database`): those keys still work for
this release, each for its own part as before, and the project loader warns about them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar

# Reconcile's defaults, each written once: `policy:` (PolicySettings) and the options a run
# builds without a project (reconciler.apply.ApplyOptions, reconciler.run.RunOptions,
# connect.ready.ReadyOptions) take these.
WRITE_CONCURRENCY = 64  # measured: 100 updates take 7 s at 64 in flight, 36 s one at a time (bench/README.md)
CONCURRENCY = 4  # config/validate calls at once
INITIAL_STATE = "RUNNING"  # what a created connector starts as
READY_TIMEOUT_S = 180.0
STABILITY_WINDOW_S = 10.0
UNASSIGNED_GRACE_S = 60.0  # a task UNASSIGNED this long after a rebalance counts as unhealthy
# The delete policy (safety.gate, reconciler.plan and `policy:` take these): more deletes, or
# a larger share of the owned sinks, in one run is refused unless forced.
MAX_DELETES = 10
MAX_DELETE_SHARE = 0.5
LEDGER_KEEP = 48  # offsets backup: records kept per connector (two days of an hourly CronJob)
GIB = 1 << 30
MIB = 1 << 20

S = TypeVar("S")
Part = Literal["lock", "ownership", "heal", "audit"]


@dataclass(frozen=True, kw_only=True)  # keywords only: counts and seconds side by side
class PolicySettings:
    """`policy:`: how reconcile diffs, paces and judges, and the slots' limits."""

    ignore_keys: tuple[str, ...] = ()
    max_deletes: int = MAX_DELETES
    max_delete_share: float = MAX_DELETE_SHARE
    concurrency: int = CONCURRENCY
    write_concurrency: int = WRITE_CONCURRENCY
    ready_timeout_s: float = READY_TIMEOUT_S
    initial_state: str = INITIAL_STATE
    stability_window_s: float = STABILITY_WINDOW_S
    unassigned_grace_s: float = UNASSIGNED_GRACE_S
    batch_size: int = 0
    batch_interval_s: float = 0.0
    max_failures: int | None = None  # None: a paced rollout stops at its first failed batch
    slot_max_retained_bytes: int = GIB  # held by a slot that is being read
    slot_idle_max_retained_bytes: int = 64 * MIB  # held by one nobody reads


@dataclass(frozen=True, kw_only=True)  # keywords only: counts and seconds side by side
class HealSettings:
    """`heal:`: Strimzi's autoRestart, with a budget (see heal.policy)."""

    max_restarts: int = 10
    unassigned_grace_s: float = 300.0  # UNASSIGNED is normal for a moment during a rebalance
    backoff_unit_s: float = 60.0
    restart_wait_s: float = 60.0
    exclude: tuple[str, ...] = ()
    state_file: str = ".hephaestus/heal-state.json"  # `heal.state.file`, without a state database


@dataclass(frozen=True)
class LockSettings:
    """`lock:`: how long a run waits for a cluster's lock held by another."""

    timeout_s: float = 300.0  # longer than a heal run (restart_wait_s 60 s) and a typical apply


@dataclass(frozen=True)
class StateSettings:
    """`state:`: the database of the deployment's state; none: files on this machine."""

    database: str | None = None
    # The keys of earlier releases, each for its own part (one release more, with a warning).
    lock_database: str | None = None
    heal_database: str | None = None
    audit_database: str | None = None

    def database_of(self, part: Part) -> str | None:
        """The database that keeps `part` (None: a file), as earlier releases chose it when
        `state.database` is not set: the lock and ownership in the lock's database, else heal's."""
        if self.database:
            return self.database
        if part == "heal":
            return self.heal_database
        if part == "audit":
            return self.audit_database
        return self.lock_database or self.heal_database


OnFailure = Literal["rollback", "pause", "continue"]


@dataclass(frozen=True, kw_only=True)  # keywords only: counts and seconds side by side
class RolloutSettings:
    """`rollout:` (top level, and per cluster over it): progressive delivery. A canary first,
    then waves, each watched for an analysis window against the gates below; the next starts
    only when the last passed (and, with a lag budget, once the lag it caused is back under
    it). A failed gate rolls back every connector the run changed (`on_failure`)."""

    canary: int | tuple[str, ...] = 1  # how many writes go first, or globs naming them
    waves: tuple[int, ...] = (25, 100)  # after the canary: cumulative percent of the rest
    analysis_s: float = 30.0  # each wave watched this long once ready
    interval_s: float = 5.0  # between two health samples
    on_failure: OnFailure = "rollback"
    # The gates, per connector of the wave: a sink's lag (records; None: not gated) and the
    # age of its oldest unconsumed record (sinks commit every offset.flush.interval.ms: 60 s
    # by default, so a healthy sink's committed lag can read that old), its DLQ's growth
    # during the window, a source slot's retained WAL.
    max_lag: int | None = None
    max_lag_age_s: float = 120.0
    max_dlq_growth: int = 0
    max_slot_wal_bytes: int = GIB
    # Freshness (docs/freshness.md): a sink carrying the probe passes only once a probe its
    # source wrote after the stage's writes has arrived at its database; failing when none has
    # within this many seconds (None: not gated). Pick the analysis window longer than the
    # probe's interval: a probe still on its way at the window's end fails the gate too.
    max_freshness_s: float | None = None
    # Pacing: a wave starts only once the summed lag of the sinks written so far is under
    # this (None: not paced), waiting at most pace_timeout_s (then the gate fails).
    lag_budget: int | None = None
    pace_timeout_s: float = 600.0
    # A rollback replays what each sink it put back parked in its DLQ while the rollout ran
    # (false: names those records and the `dlq replay` that sends them; the run exits 1).
    replay_parked: bool = True


@dataclass(frozen=True)
class RolloutKeys:
    """One `rollout:` as written (the project's, a cluster's, the flags'), typed at load: the
    keys it sets, each over the same key of the one under it. Which keys matter, not only
    their values: a cluster that sets `canary` alone keeps the project's waves."""

    values: RolloutSettings = RolloutSettings()
    given: frozenset[str] = frozenset()

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> RolloutKeys:
        """From a section the schema checked (or the flags): the keys it names, typed."""
        return cls(of(RolloutSettings, raw), frozenset(raw) & _ROLLOUT_KEYS)

    def over(self, under: RolloutSettings) -> RolloutSettings:
        return dataclasses.replace(under, **{k: getattr(self.values, k) for k in self.given})


def rollout(*layers: RolloutKeys | None) -> RolloutSettings | None:
    """The rollout the layers make, each over the ones before it; None when none is given (an
    apply then only waits for each connector to be ready)."""
    found = [layer for layer in layers if layer is not None]
    if not found:
        return None
    return functools.reduce(lambda made, layer: layer.over(made), found, RolloutSettings())


@dataclass(frozen=True, kw_only=True)
class FreshnessSettings:
    """`freshness:`: how old the newest probe at a sink may be (docs/freshness.md). A pipeline
    staler than `max_s` makes `status` exit 2; a definition's `freshness.max_s` overrides it."""

    max_s: float = 120.0


SECTIONS: dict[str, type] = {
    "policy": PolicySettings,
    "rollout": RolloutSettings,
    "heal": HealSettings,
    "lock": LockSettings,
    "state": StateSettings,
    "freshness": FreshnessSettings,
}
# Fields that are not a key of their section in the file (filled from elsewhere by the loader).
NOT_KEYS = {"heal": {"state_file"}, "state": {"lock_database", "heal_database", "audit_database"}}


_ROLLOUT_KEYS = frozenset(f.name for f in fields(RolloutSettings))


def of(kind: type[S], raw: Mapping[str, Any]) -> S:
    """`kind` from a section the schema already checked: absent keys take their default."""
    made = {f.name: _typed(f.type, raw[f.name]) for f in fields(kind) if f.name in raw}  # type: ignore[arg-type]
    return kind(**made)


def _typed(annotation: object, value: Any) -> Any:
    """YAML gives lists and ints where the settings keep tuples and floats."""
    if annotation == "float" and isinstance(value, int):
        return float(value)
    if ("tuple" in str(annotation)) and isinstance(value, list):
        return tuple(value)
    return value


def schema_defaults() -> dict[str, dict[str, Any]]:
    """{section: {key: default}}, as the JSON schema must declare them (None is not declared:
    it means "absent")."""
    out: dict[str, dict[str, Any]] = {}
    for section, kind in SECTIONS.items():
        skipped = NOT_KEYS.get(section, set())
        defaults = {f.name: _json(f.default) for f in fields(kind) if f.name not in skipped}
        out[section] = {k: v for k, v in defaults.items() if v is not None}
    return out


def _json(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value if value is not dataclasses.MISSING else None

"""Replication slots judged (pure): who owns each, how much WAL it holds back, and whether that
is a problem.

A logical slot keeps every WAL segment from its `restart_lsn` on. A slot nobody reads (its
connector stopped, deleted, or never created) grows until the source database's disk fills:
the most common Debezium production incident. So a slot retaining WAL is a problem when it
is over the limit, when it is inactive (no walsender) beyond a smaller limit, when no live
connector names it (an orphan) beyond that limit, or when PostgreSQL already gave up on it
(`wal_status = lost`: its connector can never resume).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from hephaestus.safety import views
from hephaestus.safety.values import Resolver, Value, may_equal
from hephaestus.settings import PolicySettings

Verdict = Literal["ok", "over_limit", "inactive", "orphan", "lost"]
DEFAULT_MAX_RETAINED = PolicySettings().slot_max_retained_bytes
DEFAULT_IDLE_MAX_RETAINED = PolicySettings().slot_idle_max_retained_bytes


@dataclass(frozen=True)
class Slot:
    """One row of `pg_replication_slots` of a database (logical slots only)."""

    database: str
    name: str
    plugin: str
    active: bool
    retained_bytes: int | None  # current WAL position - restart_lsn
    lag_bytes: int | None  # current WAL position - confirmed_flush_lsn
    wal_status: str | None  # reserved, extended, unreserved, lost (PostgreSQL 13+)
    dbname: str = ""  # the database's own name (current_database()), as a source's database.dbname names it
    # confirmed_flush_lsn as a byte position: sampled twice (two checks, or a gauge's rate), it
    # says whether the source still confirms what it read. Debezium confirms at offset commits
    # (every 60 s by default) and, on a quiet database, only with heartbeat.action.query.
    confirmed_lsn: int | None = None


@dataclass(frozen=True)
class Limits:
    max_retained: int = DEFAULT_MAX_RETAINED
    idle_max_retained: int = DEFAULT_IDLE_MAX_RETAINED

    @classmethod
    def of(cls, policy: PolicySettings) -> Limits:
        return cls(policy.slot_max_retained_bytes, policy.slot_idle_max_retained_bytes)


@dataclass(frozen=True)
class Judged:
    slot: Slot
    owner: str | None  # "cluster/connector" naming the slot, None for an orphan
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class Use:
    """A PostgreSQL source that uses, or could use, a slot: live on a cluster in any state, or
    declared in git (planned)."""

    where: str  # "cluster/connector" (git's: "cluster/connector (in git)")
    slot: Value  # slot.name, Debezium's default `debezium` when absent; a placeholder as written
    dbname: Value | None


def uses(configs: Iterable[tuple[str, Mapping[str, str]]], resolve: Resolver) -> list[Use]:
    """Every PostgreSQL source among (where, config), its slot and database resolved as the
    plugin resolves them (safety.views)."""
    found = []
    for where, config in configs:
        if views.is_source(config):
            s = views.source(config, resolve)
            found.append(Use(where, s.slot, s.server[2]))
    return found


def owners(slot: Slot, found: Iterable[Use]) -> list[str]:
    """The sources that could use this slot: its name may be theirs (a placeholder that cannot
    be resolved here may be anything) and its database may be theirs (one not named may be any)."""
    return sorted({u.where for u in found if may_equal(u.slot, slot.name) and _same_db(u.dbname, slot.dbname)})


def _same_db(theirs: Value | None, dbname: str) -> bool:
    return not dbname or theirs is None or may_equal(theirs, dbname)


def judge(slot: Slot, owned_by: list[str], limits: Limits) -> Judged:
    owner = ", ".join(owned_by) or None
    held = slot.retained_bytes or 0
    if slot.wal_status == "lost":
        return Judged(
            slot,
            owner,
            "lost",
            "PostgreSQL removed WAL this slot needs: its connector cannot resume (recreate it with a new snapshot)",
        )
    if held > limits.max_retained:
        return Judged(slot, owner, "over_limit", f"retains {size(held)} (limit {size(limits.max_retained)})")
    if owner is None and held > limits.idle_max_retained:
        return Judged(slot, owner, "orphan", f"no connector could use it and it retains {size(held)}")
    if not slot.active and held > limits.idle_max_retained:
        return Judged(
            slot,
            owner,
            "inactive",
            f"nothing reads it and it retains {size(held)} (limit when idle {size(limits.idle_max_retained)})",
        )
    return Judged(slot, owner, "ok", "")


def size(n: int) -> str:
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"


def droppable(judged: Judged, blind: bool) -> str:
    """Why a slot may never be dropped ("" when it may): a source on any cluster, live in any
    state or planned in git, could use it; a walsender reads it; or what could use it is not
    known (a cluster or a connector folder could not be read)."""
    if judged.owner is not None:
        return f"{judged.owner} could use it (delete or change that connector first)"
    if judged.slot.active:
        return "it is active: a walsender is reading it"
    if blind:
        return "not every cluster and connector folder of the project could be read: who uses it is unknown"
    return ""

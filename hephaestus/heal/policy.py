"""When to restart a failing connector: Strimzi's autoRestart, with a budget and a record (pure).

The n-th restart waits min(n² + n, 60) backoff units (minutes by default) after the previous
one: 0, 2, 6, 12, 20, 30, 42, 56, then every 60. The count is incremented even when the
restart call fails, and resets once the connector has stayed healthy for the current backoff.
A FAILED connector whose trace names a permanent cause (heal.causes: a constraint violated, a
table or column missing, a login refused) is not restarted at all: no restart fixes it, and
each one would only spend the budget and replay the same record.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Literal

from hephaestus.fleet.causes import MENDABLE, Cause, classify
from hephaestus.settings import HealSettings
from hephaestus.state.records import HealRecord as Record

Verdict = Literal["healthy", "skipped", "grace", "restart", "backoff", "exhausted", "permanent"]


_D = HealSettings()  # the defaults, declared once


@dataclass(frozen=True)
class HealConfig:
    max_restarts: int = _D.max_restarts
    unassigned_grace_s: float = _D.unassigned_grace_s
    backoff_unit_s: float = _D.backoff_unit_s
    exclude: tuple[str, ...] = _D.exclude

    @classmethod
    def of(cls, s: HealSettings) -> HealConfig:
        return cls(s.max_restarts, s.unassigned_grace_s, s.backoff_unit_s, s.exclude)


@dataclass(frozen=True)
class Observed:
    """The connector's status, as heal needs it."""

    name: str
    state: str
    task_states: tuple[str, ...]
    trace: str = ""
    mended: bool = False  # its pipeline's schema was compared and is in step (hephaestus.drift)


@dataclass(frozen=True)
class Decision:
    name: str
    verdict: Verdict
    record: Record | None  # None: forget this connector
    reason: str
    notify: bool = False
    cause: Cause | None = None  # a FAILED connector's cause, when a rule of heal.causes names it


def backoff_s(count: int, cfg: HealConfig) -> float:
    return min(count * count + count, 60) * cfg.backoff_unit_s


def decide(seen: Observed, record: Record | None, now: float, cfg: HealConfig) -> Decision:
    rec = record or Record()
    if any(fnmatchcase(seen.name, g) for g in cfg.exclude) or seen.state in ("PAUSED", "STOPPED"):
        return Decision(seen.name, "skipped", record, f"{seen.state.lower()} or excluded: left alone")
    failed = seen.state == "FAILED" or "FAILED" in seen.task_states
    unassigned = seen.state == "UNASSIGNED" or "UNASSIGNED" in seen.task_states
    if not failed and unassigned:
        return _unassigned(seen, rec, now, cfg)
    if not failed:
        return _healthy(seen, rec, now, cfg)
    return _failed(seen, rec, now, cfg)


def _failed(seen: Observed, rec: Record, now: float, cfg: HealConfig) -> Decision:
    """FAILED: restarted as Strimzi does, unless the trace names a permanent cause."""
    cause = classify(seen.trace)
    if cause is not None and cause.permanent and not (seen.mended and cause.rule in MENDABLE):
        return _permanent(seen, rec, cfg, cause)
    why = f"FAILED ({cause.text})" if cause else "FAILED"
    if cause is not None and cause.permanent:  # the schema it failed on is in step again
        why = f"FAILED ({cause.text}; the schema is in step again)"
    return replace(_failing(seen, rec, now, cfg, why), cause=cause)


def _unassigned(seen: Observed, rec: Record, now: float, cfg: HealConfig) -> Decision:
    since = rec.unassigned_since if rec.unassigned_since is not None else now
    rec = replace(rec, unassigned_since=since)
    if now - since < cfg.unassigned_grace_s:
        return Decision(
            seen.name, "grace", rec, f"UNASSIGNED for {now - since:.0f}s (grace {cfg.unassigned_grace_s:.0f}s)"
        )
    return _failing(seen, rec, now, cfg, f"UNASSIGNED for {now - since:.0f}s")


def _healthy(seen: Observed, rec: Record, now: float, cfg: HealConfig) -> Decision:
    if rec.count == 0 or rec.last_restart is None or now - rec.last_restart >= backoff_s(rec.count, cfg):
        return Decision(seen.name, "healthy", None, "running")
    return Decision(
        seen.name,
        "healthy",
        replace(rec, unassigned_since=None),
        f"running since restart {rec.count}; the count resets after {backoff_s(rec.count, cfg):.0f}s",
    )


def _failing(seen: Observed, rec: Record, now: float, cfg: HealConfig, why: str) -> Decision:
    # One Slack message when a restart did not help (the first time in this episode) and one
    # when the budget runs out — the same message when both happen at once.
    first_relapse = rec.count > 0 and rec.notified < 0
    if rec.count >= cfg.max_restarts:
        notify = rec.notified < rec.count
        return Decision(
            seen.name,
            "exhausted",
            replace(rec, notified=rec.count),
            f"{why}; restart budget of {cfg.max_restarts} exhausted",
            notify,
        )
    marked = replace(rec, notified=rec.count) if first_relapse else rec
    wait = 0.0 if rec.last_restart is None else backoff_s(rec.count, cfg) - (now - rec.last_restart)
    if wait > 0:
        return Decision(seen.name, "backoff", marked, f"{why}; restart {rec.count + 1} in {wait:.0f}s", first_relapse)
    restarted = replace(marked, count=rec.count + 1, last_restart=now, unassigned_since=None)
    return Decision(
        seen.name, "restart", restarted, f"{why}; restart {rec.count + 1} of {cfg.max_restarts}", first_relapse
    )


def _permanent(seen: Observed, rec: Record, cfg: HealConfig, cause: Cause) -> Decision:
    # Not restarted, so the count stays as it is. One message per episode: none went out yet
    # at this count (a relapse's or the budget's message already named the trace).
    notify = rec.notified < rec.count
    return Decision(
        seen.name,
        "permanent",
        replace(rec, notified=rec.count) if notify else rec,
        f"FAILED; permanent: {cause.text}; no restart fixes it ({rec.count} of {cfg.max_restarts} restarts spent)",
        notify,
        cause,
    )

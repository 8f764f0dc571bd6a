"""A progressive rollout (pure): which writes go in which stage, what the gates say of a
health sample, and the steps that put back what a failed rollout changed.

Stages: the canary (a count of the first writes, or the writes its globs name with every
planned source they read), then waves, each a cumulative percent of the rest, in the
dependency order of `reconciler.waves` (a sink never goes before a source it reads); deletes
last, once every other stage passed (a delete is the one write a rollback cannot fully undo:
the connector comes back, its task history does not).

Gates, per connector of a stage, on a sample taken after it is ready (`fleet.health`):
- hard, failing at once: the connector or a task FAILED, a DLQ grown by more than allowed since
  before the write;
- soft, failing when still so at the end of the analysis window (a restart lags for a moment
  by design, a rebalance leaves tasks UNASSIGNED for a moment, Kafka or a database may not
  answer one sample): not yet in the state the step leaves it in, a sink's lag and lag age, a
  source slot's retained WAL, a measure that could not be taken.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from hephaestus.classes import POSTGRES_SOURCE as SOURCE
from hephaestus.fleet.lag import HealthSample
from hephaestus.fleet.model import Live
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import TARGET_STATES, Action, Step, changes_of
from hephaestus.reconciler.waves import reads, topic_prefix, waves
from hephaestus.settings import RolloutSettings

RUNNING = "RUNNING"


@dataclass(frozen=True)
class Stage:
    label: str  # "canary", "wave 1", …, "deletes"
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Failure:
    name: str
    why: str
    hard: bool  # fails the gate at once (else only when still so at the window's end)


def stages(writes: Sequence[Step], r: RolloutSettings) -> tuple[Stage, ...]:
    """The writes in stages, each in dependency order."""
    deletes = tuple(s for s in writes if s.action == "delete")
    ordered = [s for w in waves([s for s in writes if s.action != "delete"]) for s in w]
    canary = _canary(ordered, r.canary)
    rest = [s for s in ordered if s not in canary]
    found = [Stage("canary", tuple(canary))] if canary else []
    found += [Stage(f"wave {i}", part) for i, part in enumerate(_cut(rest, r.waves), 1)]
    return (*found, *((Stage("deletes", deletes),) if deletes else ()))


def _canary(ordered: list[Step], canary: int | tuple[str, ...]) -> list[Step]:
    if isinstance(canary, int):
        return ordered[:canary]
    named = [s for s in ordered if any(fnmatchcase(s.name, g) for g in canary)]
    sources = [s for s in ordered if s.connector_class == SOURCE]
    needed = {src.name for s in named for src in sources if src is not s and reads(s, [topic_prefix(src.config)])}
    return [s for s in ordered if s in named or s.name in needed]


def unnamed(writes: Sequence[Step], r: RolloutSettings) -> tuple[str, ...]:
    """The canary's globs when they name none of the writes a canary can take (any but a
    delete, which goes last): then the canary would be skipped without a word, and every write
    go out in the waves. () for a count, for a cluster with nothing but deletes to write, and
    once one glob names one write."""
    if isinstance(r.canary, int):
        return ()
    takeable = [s.name for s in writes if s.action != "delete"]
    if not takeable or any(fnmatchcase(n, g) for n in takeable for g in r.canary):
        return ()
    return r.canary


def _cut(rest: list[Step], shares: Sequence[int]) -> list[tuple[Step, ...]]:
    marks = sorted({*shares, 100})
    ends = [math.ceil(len(rest) * m / 100) for m in marks]
    parts = [tuple(rest[a:b]) for a, b in zip([0, *ends], ends, strict=False)]
    return [p for p in parts if p]


def failures(
    r: RolloutSettings, before: Mapping[str, HealthSample], now: Mapping[str, HealthSample], wanted: Mapping[str, str]
) -> list[Failure]:
    """What the gates find wrong in `now` (`before`: sampled before the stage's writes;
    `wanted`: the state each step leaves its connector in)."""
    return [
        f for name, want in wanted.items() for f in _judge(r, before.get(name), now.get(name, HealthSample(name)), want)
    ]


def _judge(r: RolloutSettings, before: HealthSample | None, h: HealthSample, want: str) -> list[Failure]:
    if h.error:  # inconclusive, not failed: only when still so at the window's end
        return [Failure(h.name, f"not measured: {h.error}", False)]
    state = _state(h, want)
    if state or want != RUNNING:
        # FAILED is final; UNASSIGNED, RESTARTING or not yet listed is a rebalance passing by
        failed = h.state == "FAILED" or "FAILED" in h.tasks
        return [Failure(h.name, state, failed)] if state else []
    found = []
    grown = (h.dlq_end or 0) - (before.dlq_end or 0 if before else 0)
    if h.dlq_end is not None and grown > r.max_dlq_growth:
        found.append(Failure(h.name, f"its DLQ grew by {grown} records (allowed {r.max_dlq_growth})", True))
    if r.max_lag is not None and (h.lag or 0) > r.max_lag:
        found.append(Failure(h.name, f"lag {h.lag} records (allowed {r.max_lag})", False))
    if h.lag_age_s is not None and h.lag_age_s > r.max_lag_age_s:
        found.append(
            Failure(
                h.name, f"its oldest waiting record is {h.lag_age_s:.0f}s old (allowed {r.max_lag_age_s:.0f}s)", False
            )
        )
    if h.slot_wal is not None and h.slot_wal > r.max_slot_wal_bytes:
        found.append(
            Failure(h.name, f"its slot holds {h.slot_wal} bytes of WAL (allowed {r.max_slot_wal_bytes})", False)
        )
    return found + _fresh(r, before, h)


def _fresh(r: RolloutSettings, before: HealthSample | None, h: HealthSample) -> list[Failure]:
    """A probe written after the writes (on the source's clock: later than the source's now()
    sampled before them) must have arrived at the sink's database within `max_freshness_s`. A
    change after which the sink carries the probe no more can be judged by it no more: failed."""
    carried = before is not None and (before.source_now is not None or bool(before.probe_why))
    if r.max_freshness_s is None:
        return []
    if h.source_now is None and not h.probe_why:  # no probe read for it now
        return [Failure(h.name, "its change stops carrying the freshness probe", True)] if carried else []
    if h.probe_why:
        return [Failure(h.name, f"freshness not measured: {h.probe_why}", False)]
    since = before.source_now if before is not None else None
    if since is None or h.source_now is None:
        return [Failure(h.name, "freshness not measured before its change", False)]
    if h.probe_at is not None and h.probe_at > since:
        return []
    waited = h.source_now - since
    if waited > r.max_freshness_s:
        why = f"no probe written after its change arrived in {waited:.0f}s (allowed {r.max_freshness_s:g}s)"
        return [Failure(h.name, why, True)]
    return [Failure(h.name, f"waiting for a probe written after its change ({waited:.0f}s)", False)]


def _state(h: HealthSample, want: str) -> str:
    """Why the connector is not in the state wanted ("" when it is)."""
    if not h.state:
        return "not listed by Connect"
    if h.state != want:
        return f"{h.state} (wanted {want})"
    bad = [t for t in h.tasks if t != RUNNING]
    if want == RUNNING and (bad or not h.tasks):
        return f"RUNNING, tasks {list(h.tasks)}"
    return ""


def total_lag(now: Mapping[str, HealthSample], names: Sequence[str]) -> int:
    """The summed lag of these sinks (what pacing holds under the budget)."""
    return sum(now[n].lag or 0 for n in names if n in now)


def undo(step: Step, result: StepResult, before: Mapping[str, Live]) -> Step | None:
    """The step that puts back what `step` did (None: nothing to put back, or a created source,
    which is never deleted). `before`: the cluster's connectors as read before the run."""
    if not (result.wrote or result.detail.startswith("unknown")) or step.action == "restart":
        return None  # never sent, or refused by Connect; a restart changed no config
    old = before.get(step.renamed_from or step.name)
    left = step.target_state or step.live_state
    if step.action == "create":
        if step.connector_class == SOURCE:
            return None
        return Step(
            "delete",
            step.name,
            config=step.config,
            reason="rollback: created by this run",
            connector_class=step.connector_class,
        )
    if old is None:
        return None
    state = old.state if old.state in TARGET_STATES else ""
    if step.action == "delete":
        return Step(
            "create",
            step.name,
            config=old.config,
            reason="rollback: deleted by this run",
            connector_class=step.connector_class,
            target_state=state or RUNNING,
        )
    if step.action == "rename":
        return Step(
            "rename",
            old.name,
            config=old.config,
            changes=changes_of(step.config, old.config, frozenset()),
            reason=f"rollback: back from {step.name}",
            connector_class=step.connector_class,
            live_state=left,
            renamed_from=step.name,
            target_state=state,
        )
    action: Action = "state" if step.action == "state" else "update"
    return Step(
        action,
        step.name,
        config=old.config,
        changes=changes_of(step.config, old.config, frozenset()),
        reason="rollback",
        connector_class=step.connector_class,
        live_state=left,
        target_state=state,
    )


def describe(r: RolloutSettings, measured: bool) -> str:
    """One line: the stages' shape and the gates (what a dry run shows)."""
    canary = f"canary {r.canary}" if isinstance(r.canary, int) else f"canary {', '.join(r.canary)}"
    gates = ["tasks RUNNING on the new config"]
    if measured:
        gates += [f"lag ≤ {r.max_lag}"] if r.max_lag is not None else []
        gates += [f"lag age ≤ {r.max_lag_age_s:g}s", f"DLQ growth ≤ {r.max_dlq_growth}"]
    gates += [f"slot WAL ≤ {r.max_slot_wal_bytes}"]
    gates += [f"a probe after the change within {r.max_freshness_s:g}s"] if r.max_freshness_s is not None else []
    pace = f"; paced: lag budget {r.lag_budget}" if r.lag_budget is not None else ""
    blind = "" if measured else " (no kafka_bootstrap: lag and DLQ not measured)"
    waves_ = ", ".join(f"{w}%" for w in sorted({*r.waves, 100}))
    return (
        f"{canary}, then waves to {waves_}; each watched {r.analysis_s:g}s; gates: {', '.join(gates)}{blind}"
        f"{pace}; on failure: {r.on_failure}"
    )

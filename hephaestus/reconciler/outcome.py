"""What a reconcile did, per cluster and per connector (values the renderers read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from hephaestus.reconciler.model import comparable, config_hash
from hephaestus.reconciler.plan import Plan


@dataclass(frozen=True)
class StepResult:
    name: str
    action: str
    ok: bool
    detail: str = ""  # final state, or why it failed
    wrote: bool = False  # Connect confirmed the write (ready or not): what ownership follows


@dataclass(frozen=True)
class ClusterOutcome:
    cluster: str
    url: str
    plan: Plan | None
    applied: bool = False
    invalid: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict, hash=False)
    results: tuple[StepResult, ...] = ()
    error: str = ""  # the cluster could not be read or reconciled at all
    followups: tuple[StepResult, ...] = ()  # e.g. incremental-snapshot signals
    prepared: tuple[StepResult, ...] = ()  # database steps before the writes (publication changes)
    requests: int = 0  # HTTP requests this run sent to the cluster (writes: non-GET, not validate)
    writes: int = 0
    # The live configs the plan was computed from, fingerprinted only when a saved or shown
    # plan needs them (hashing 5,000 masked configs is a third of a no-op plan's own time).
    live: Mapping[str, Mapping[str, str]] = field(default_factory=dict, compare=False, repr=False)
    ignore_keys: frozenset[str] = frozenset()

    @cached_property
    def live_hashes(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((n, config_hash(comparable(c, self.ignore_keys)) or "") for n, c in self.live.items()))

    @property
    def failed(self) -> bool:
        return bool(
            self.error or self.invalid or any(not r.ok for r in (*self.prepared, *self.results, *self.followups))
        )

    @property
    def refused(self) -> bool:
        return self.plan is not None and bool(self.plan.refused) and not self.applied

    @property
    def unhealthy(self) -> bool:
        return self.plan is not None and not self.plan.healthy

    @property
    def drift(self) -> bool:
        return self.plan is not None and not self.plan.in_sync

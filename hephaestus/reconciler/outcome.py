"""What a reconcile did, per cluster and per connector (values the renderers read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hephaestus.fleet.model import Live
from hephaestus.reconciler.plan import Held, Plan


@dataclass(frozen=True)
class StepResult:
    name: str
    action: str
    ok: bool
    detail: str = ""  # final state, or why it failed
    wrote: bool = False  # Connect confirmed the write (ready or not): what ownership follows


@dataclass(frozen=True)
class Basis:
    """What one cluster's plan was computed from, on the live side: a sealed plan holds its
    fingerprints as the preconditions an apply checks."""

    url: str  # normalised, without credentials
    kafka: str | None  # Connect's kafka_cluster_id
    live: Mapping[str, Live] = field(hash=False)  # the connectors in scope (select, --target)
    owned: frozenset[str] = frozenset()
    published: Mapping[str, object] = field(default_factory=dict, hash=False)  # "db/pub" -> what was read
    secrets: Secrets | None = field(default=None, hash=False)  # fingerprints now and at the last apply


@dataclass(frozen=True)
class Secrets:
    """The secrets' keyed fingerprints (reconciler.rotation): computed now under `salt`, and as
    recorded by the last apply (state.prints); what an apply records when it is done."""

    salt: str
    now: Mapping[str, dict[str, str]] = field(hash=False)
    before: Mapping[str, dict[str, str]] = field(hash=False)


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
    basis: Basis | None = field(default=None, compare=False, repr=False)  # what the plan was computed from
    # A progressive rollout (`rollout:`): its shape and gates, the stages planned, what each
    # stage's gate said, and the steps that put back what a failed one changed.
    rollout: str = ""
    stages: tuple[tuple[str, tuple[str, ...]], ...] = ()
    report: tuple[str, ...] = ()
    rollback: tuple[StepResult, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(
            self.error
            or self.invalid
            or any(not r.ok for r in (*self.prepared, *self.results, *self.followups, *self.rollback))
        )

    @property
    def refused(self) -> bool:
        return self.plan is not None and bool(self.plan.refused) and not self.applied

    @property
    def held(self) -> tuple[Held, ...]:
        """Sinks held back while the rest was written (their topics do not exist yet)."""
        return self.plan.held if self.plan is not None else ()

    @property
    def unhealthy(self) -> bool:
        return self.plan is not None and not self.plan.healthy

    @property
    def drift(self) -> bool:
        """Something to write, or a source schema change that needs someone (issue 45)."""
        return self.plan is not None and (not self.plan.in_sync or bool(self.plan.schema) or bool(self.plan.held))

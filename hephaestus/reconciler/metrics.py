"""Prometheus metrics of one reconcile run (published by the CLI through notify.metrics)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

from hephaestus.notify.metrics import Metrics
from hephaestus.reconciler.outcome import ClusterOutcome


def metrics_of(outcomes: Sequence[ClusterOutcome], dry_run: bool, now: float | None = None) -> Metrics:
    m = Metrics()
    for o in outcomes:
        labels = {"cluster": o.cluster}
        m.set(
            "reconcile_failed",
            "1 when the last reconcile of the cluster failed (a step, a validation, or the cluster itself).",
            1 if o.failed else 0,
            labels,
        )
        m.set(
            "reconcile_drift", "1 when the last plan of the cluster had changes to make.", 1 if o.drift else 0, labels
        )
        m.set("reconcile_writes", "Writes the last reconcile sent to the cluster.", o.writes, labels)
        planned = Counter(str(s.action) for s in (o.plan.steps if o.plan else ()))
        for kind, n in sorted(planned.items()):
            m.set("reconcile_planned_steps", "Steps of the last plan, by action.", n, {**labels, "action": kind})
        done = Counter((r.action, "ok" if r.ok else "failed") for r in o.results)
        for (action, result), n in sorted(done.items()):
            m.set(
                "reconcile_applied_steps",
                "Steps the last apply ran, by action and result.",
                n,
                {**labels, "action": action, "result": result},
            )
    m.set("reconcile_dry_run", "1 when the last run was a dry run.", 1 if dry_run else 0)
    m.set("reconcile_last_run_timestamp_seconds", "When the last reconcile ended (Unix time).", now or time.time())
    return m

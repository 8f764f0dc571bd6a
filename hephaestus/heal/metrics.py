"""Prometheus metrics of one heal run (published by the CLI through notify.metrics)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from hephaestus.heal.run import FAILING, ClusterHeal
from hephaestus.notify.metrics import Metrics


def metrics_of(results: Sequence[ClusterHeal], now: float | None = None) -> Metrics:
    m = Metrics()
    for r in results:
        labels = {"cluster": r.cluster}
        failing = [i for i in r.items if i.verdict in FAILING and i.healed is not True]
        m.set(
            "heal_restarts",
            "Connectors restarted by the last heal run.",
            sum(1 for i in r.items if i.verdict == "restart"),
            labels,
        )
        m.set("heal_failed_connectors", "Connectors still failing after the last heal run.", len(failing), labels)
        m.set(
            "heal_failed_tasks",
            "FAILED tasks seen by the last heal run.",
            sum(len(i.failed_tasks) for i in r.items),
            labels,
        )
        m.set(
            "heal_budget_exhausted",
            "Connectors whose restart budget is exhausted.",
            sum(1 for i in r.items if i.verdict == "exhausted"),
            labels,
        )
        m.set(
            "heal_permanent",
            "Connectors FAILED for a permanent cause (a constraint, a missing table, a login): not restarted.",
            sum(1 for i in r.items if i.verdict == "permanent"),
            labels,
        )
        m.set("heal_cluster_up", "1 when the cluster's status could be read.", 0 if r.error else 1, labels)
    m.set("heal_last_run_timestamp_seconds", "When the last heal run ended (Unix time).", now or time.time())
    return m

"""Prometheus gauges of `status` and `slots` (names `hephaestus_<name>`), for a textfile, a
Pushgateway or the exporter."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from hephaestus.drift.model import CODES, UNKNOWN, DriftReport
from hephaestus.fleet.read import SlotReport
from hephaestus.notify.metrics import Metrics
from hephaestus.status.model import ClusterView, ConnectorView


def slot_metrics(found: SlotReport, into: Metrics | None = None) -> Metrics:
    m = into or Metrics()
    for j in found.judged:
        labels = {"database": j.slot.database, "slot": j.slot.name}
        if j.slot.retained_bytes is not None:
            m.set(
                "slot_retained_bytes",
                "WAL bytes the replication slot holds back (restart_lsn).",
                j.slot.retained_bytes,
                labels,
            )
        m.set("slot_active", "1 when a walsender reads the slot.", 1 if j.slot.active else 0, labels)
        m.set(
            "slot_ok",
            "0 when the slot is over its limit, inactive or orphaned while retaining WAL, or lost.",
            1 if j.verdict == "ok" else 0,
            {**labels, "verdict": j.verdict},
        )
    m.set("slots_errors", "Databases or clusters slots could not read in the last check.", len(found.errors))
    return m


def schema_metrics(found: DriftReport, into: Metrics | None = None) -> Metrics:
    """`schema_drift{pipeline, effect}`: 1 while a source's schema change has that effect on the
    pipeline's data (0 for each pipeline in step, so an alert resolves); `unknown` when its
    databases could not be read."""
    m = into or Metrics()
    on = {(f.pipeline, f.code) for f in found.shown}
    for pipeline in sorted({*found.pipelines, *(p for p, _ in on)}):
        for code in (*CODES, UNKNOWN):
            labels = {"pipeline": pipeline, "effect": code}
            m.set("schema_drift", _SCHEMA_HELP, 1 if (pipeline, code) in on else 0, labels)
    return m


_SCHEMA_HELP = "1 while a source schema change has this effect on the pipeline's data (drift: issue 45)."


# Each connector's gauges: (name, help, value of a ConnectorView or None to leave it out).
_CONNECTOR_GAUGES: tuple[tuple[str, str, Callable[[ConnectorView], float | None]], ...] = (
    (
        "connector_healthy",
        "1 when the connector and all its tasks are RUNNING and nothing else is wrong.",
        lambda c: 1 if c.healthy else 0,
    ),
    (
        "connector_failed_tasks",
        "Tasks of the connector FAILED (a paused or stopped one is in connector_tasks{state}).",
        lambda c: sum(s == "FAILED" for _, s in c.tasks),
    ),
    ("connector_heal_restarts", "Restarts heal has spent on the connector (its budget's use).", lambda c: c.restarts),
    ("connector_heal_budget", "Restarts heal may spend on the connector (0: no budget).", lambda c: c.budget),
    (
        "sink_dlq_records",
        "Records in the sink's dead-letter queue, replayed or not (a plain figure).",
        lambda c: c.dlq_depth,
    ),
    (
        "sink_dlq_unresolved_records",
        "Records the sink's dead-letter queue parked since the last replay or purge (what needs attention).",
        lambda c: c.dlq_unresolved,
    ),
    ("sink_consumer_lag_records", "Records of the sink's topics not yet committed by it.", lambda c: c.consumer_lag),
    (
        "sink_consumer_lag_age_seconds",
        "How long the oldest record the sink has not yet committed has waited (by its timestamp).",
        lambda c: c.lag_age_s,
    ),
    ("source_slot_retained_bytes", "WAL bytes the source's slot holds back.", lambda c: c.slot_retained),
    (
        "source_slot_unconfirmed_bytes",
        "WAL bytes past the source slot's confirmed position (read or sent, not yet confirmed).",
        lambda c: c.slot_unconfirmed,
    ),
    (
        "source_slot_confirmed_lsn_bytes",
        "The source slot's confirmed position in bytes: its rate is 0 while the source confirms nothing.",
        lambda c: c.slot_confirmed_lsn,
    ),
)


STATES = ("RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED", "RESTARTING")


def _state(m: Metrics, c: ConnectorView, labels: dict[str, str]) -> None:
    """One series per state, 1 for the connector's (kube-state-metrics' way): an alert can ask
    for `state="FAILED"` for N minutes without the series coming and going."""
    for state in (*STATES, *(() if c.state in STATES else (c.state,))):
        m.set(
            "connector_state",
            "1 for the connector's current state, 0 for the others.",
            1 if c.state == state else 0,
            {**labels, "state": state},
        )


def _tasks(m: Metrics, c: ConnectorView, labels: dict[str, str]) -> None:
    """`connector_tasks{state}`: how many of its tasks are in each state, 0 included, so a
    PAUSED task is counted as paused and never as failed, and no series comes and goes."""
    for state in (*STATES, *sorted({s for _, s in c.tasks} - set(STATES))):
        m.set(
            "connector_tasks",
            "Tasks of the connector in each state (0 for the states none is in).",
            sum(s == state for _, s in c.tasks),
            {**labels, "state": state},
        )


def _versions(m: Metrics, c: ConnectorView, labels: dict[str, str]) -> None:
    """`task_plugin_version{task, version}` 1: the plugin version each task runs (Connect 4.1+,
    KIP-891); a query counts the versions a connector runs at once. None known: no sample."""
    for task, version in c.task_versions:
        if version:
            m.set(
                "task_plugin_version",
                "1 for the plugin version each task runs (Connect 4.1+).",
                1,
                {**labels, "task": str(task), "version": version},
            )


def _skew(m: Metrics, view: ClusterView) -> None:
    """`plugin_skew` 1 when the cluster's workers hold different versions of some plugin; the
    classes are named by `hephaestus plugins` (a label per class would come and go)."""
    if view.reached and view.skewed is not None:
        m.set(
            "plugin_skew",
            "1 when the cluster's workers hold different versions of a plugin (hephaestus plugins names it).",
            1 if view.skewed else 0,
            {"cluster": view.cluster},
        )


def _freshness(m: Metrics, c: ConnectorView) -> None:
    """`pipeline_freshness_seconds{source, sink, database}` (+Inf: nothing arrives at all) and
    the threshold it is judged against; no sample while it has no number (unknown, waiting)."""
    if c.freshness_s is None:
        return
    labels = {"source": c.probe_source, "sink": c.name, "database": c.probe_database}
    m.set("pipeline_freshness_seconds", _FRESH_HELP, c.freshness_s, labels)
    m.set(
        "pipeline_freshness_max_seconds",
        "The freshness over which the pipeline is stale.",
        c.freshness_max_s or 0,
        labels,
    )


_FRESH_HELP = "Age of the newest freshness probe read back at the sink database, on the source database's clock."


def status_metrics(views: Sequence[ClusterView], into: Metrics | None = None, now: float | None = None) -> Metrics:
    m = into or Metrics()
    for view in views:
        up = 1 if view.reached else 0
        m.set("cluster_up", "1 when the cluster's status could be read.", up, {"cluster": view.cluster})
        for c in view.connectors:
            labels = {"cluster": c.cluster, "connector": c.name, "kind": c.kind}
            for name, documentation, value_of in _CONNECTOR_GAUGES:
                value = value_of(c)
                if value is not None:  # unknown (no DLQ, no lag read, not a source): no sample
                    m.set(name, documentation, value, labels)
            _state(m, c, labels)
            _tasks(m, c, labels)
            _versions(m, c, labels)
            _freshness(m, c)
        _skew(m, view)
    m.set(
        "status_last_check_timestamp_seconds",
        "When the last status check ended (Unix time; 0: never).",
        time.time() if now is None else now,
    )
    return m

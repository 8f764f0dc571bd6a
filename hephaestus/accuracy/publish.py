"""Where a report goes besides stdout: Slack (mismatches) and Prometheus (per-table gauges)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from hephaestus.accuracy.model import AccuracyReport, TableResult
from hephaestus.accuracy.render import slack_text
from hephaestus.errors import HephaestusError
from hephaestus.notify import slack
from hephaestus.notify.metrics import Metrics
from hephaestus.project import Project

log = logging.getLogger("hephaestus.accuracy")

LABELS = ("source_database", "source_table", "sink_database", "sink_table")
PUSH_JOB = "hephaestus_dwh_accuracy"


def notify(project: Project, report: AccuracyReport) -> bool:
    """Post mismatches and errors when a webhook is configured; never fails the run."""
    message = slack_text(report)
    if message is None or project.slack_webhook is None:
        return False
    try:
        url = project.slack_webhook.resolve("the Slack webhook")
    except HephaestusError as exc:
        log.warning("slack notification skipped: %s", exc)
        return False
    return slack.post(url, message)


def metrics_of(report: AccuracyReport, now: float | None = None) -> Metrics:
    metrics = Metrics()
    for r in report.results:
        _table(metrics, r)
    metrics.set(
        "accuracy_last_run_timestamp_seconds",
        "When the accuracy run ended (Unix time).",
        time.time() if now is None else now,
    )
    metrics.set("accuracy_run_duration_seconds", "Wall time of the accuracy run.", report.seconds)
    metrics.set("accuracy_tables_mismatched", "Tables beyond tolerance in the last run.", report.count("mismatch"))
    metrics.set("accuracy_tables_failed", "Tables that could not be compared in the last run.", report.count("error"))
    return metrics


def _table(metrics: Metrics, r: TableResult) -> None:
    values = (r.pair.source.database, str(r.pair.source.table), r.pair.sink.database, str(r.pair.sink.table))
    labels = dict(zip(LABELS, values, strict=True))
    metrics.set(
        "accuracy_match",
        "1 when the sink matches its source (within tolerance), 0 otherwise.",
        1 if r.verdict in ("match", "within_tolerance") else 0,
        labels,
    )
    if r.counts is not None:
        metrics.set("accuracy_source_rows", "Rows compared on the source side.", r.counts.source, labels)
        metrics.set("accuracy_sink_rows", "Rows compared on the sink side.", r.counts.sink, labels)
        metrics.set("accuracy_delta_rows", "Sink rows minus source rows.", r.counts.delta, labels)
    if r.lag_bytes is not None:
        metrics.set(
            "accuracy_replication_lag_bytes", "WAL bytes the source slot has not confirmed.", r.lag_bytes, labels
        )
    if r.diff is not None:
        for kind in ("missing", "extra", "different"):
            metrics.set(
                f"accuracy_{kind}_rows", f"Keys {kind} at the sink (--deep).", getattr(r.diff, kind).total, labels
            )


def publish_metrics(report: AccuracyReport, textfile: Path | None, pushgateway: str | None) -> None:
    if textfile is None and not pushgateway:
        return
    metrics_of(report).publish(textfile, pushgateway, PUSH_JOB)

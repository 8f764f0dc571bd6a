"""`hephaestus exporter`: a long-running Prometheus endpoint for the fleet (prometheus-client).

A background loop checks the fleet every `interval` seconds (one Connect listing per cluster,
shared by the status and slot gauges) and swaps in a fresh registry; a scrape only reads the
last one, so scrapes cost nothing and never multiply the load on Connect. A gauge of a
connector that is gone disappears with the next check.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from hephaestus.fleet.read import configs_of, listings, read_all, report
from hephaestus.notify.metrics import Metrics
from hephaestus.project import Project
from hephaestus.status.metrics import slot_metrics, status_metrics
from hephaestus.status.run import fleet_status

log = logging.getLogger("hephaestus.exporter")


def check(project: Project) -> Metrics:
    """One round: every cluster listed once, its status and the slots, as one registry."""
    start = time.monotonic()
    clusters = list(project.clusters.values())
    listed = listings(clusters)
    read = read_all(project)  # the slots too: one query per database per check, shared
    metrics = status_metrics(fleet_status(project, clusters, listed, read))
    slot_metrics(report(project, listed=configs_of(listed), read=read), into=metrics)
    metrics.set(
        "exporter_check_duration_seconds", "How long the last check of the fleet took.", time.monotonic() - start
    )
    return metrics


class Latest:
    """A prometheus-client collector serving the last check's samples."""

    def __init__(self) -> None:
        self.metrics: Metrics | None = None

    def collect(self) -> Iterator[Any]:
        if self.metrics is not None:
            yield from self.metrics.registry.collect()


def serve(project: Project, address: str, port: int, interval: float) -> None:
    """Check, serve, repeat, until the process is stopped."""
    from prometheus_client import CollectorRegistry, start_http_server

    latest = Latest()
    registry = CollectorRegistry()
    registry.register(latest)
    server, thread = start_http_server(port, address, registry=registry)
    log.info("serving metrics on http://%s:%d/metrics, checking every %gs", address, port, interval)
    try:
        while True:
            started = time.monotonic()
            try:
                latest.metrics = check(project)
            except Exception as exc:  # noqa: BLE001 - a failed round keeps the last good one, logged
                log.warning("fleet check failed: %s", type(exc).__name__)
            time.sleep(max(interval - (time.monotonic() - started), 0))
    finally:
        server.shutdown()
        thread.join(5)

"""Prometheus metrics of one run (prometheus-client): a registry per run, written as a textfile
for node-exporter's textfile collector and/or pushed to a Pushgateway.

Jobs are short-lived (Helm hooks, cron), so nothing is scraped from them: a run fills its own
registry and publishes it once at the end. Like Slack, a failure to publish is logged and
never fails the job.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hephaestus.secrets import REDACTOR

if TYPE_CHECKING:
    from prometheus_client import Gauge

log = logging.getLogger("hephaestus.notify")


class Metrics:
    """Gauges named `<namespace>_<name>`, in a registry of their own."""

    def __init__(self, namespace: str = "hephaestus") -> None:
        self.namespace = namespace
        from prometheus_client import CollectorRegistry  # 30 ms (http.server …): only a run that publishes pays

        self.registry = CollectorRegistry()
        self._gauges: dict[str, Gauge] = {}

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        """The gauge `name` (created on first use; later calls return the same one)."""
        if name not in self._gauges:
            from prometheus_client import Gauge

            self._gauges[name] = Gauge(
                name, documentation, list(labels), namespace=self.namespace, registry=self.registry
            )
        return self._gauges[name]

    def set(self, name: str, documentation: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        """Set a gauge, labelled or not, in one call."""
        gauge = self.gauge(name, documentation, tuple(labels or ()))
        safe = {k: REDACTOR(v) for k, v in (labels or {}).items()}  # label values come from clusters
        (gauge.labels(**safe) if safe else gauge).set(value)

    def publish(self, textfile: Path | None, pushgateway: str | None, job: str) -> None:
        """Where a run's metrics go: a textfile and/or a Pushgateway (either, both or neither)."""
        if textfile:
            self.write_textfile(textfile)
        if pushgateway:
            self.push(pushgateway, job=job)

    def write_textfile(self, path: Path) -> bool:
        """Write the exposition format atomically (node-exporter must never read half a file)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            from prometheus_client import write_to_textfile

            write_to_textfile(str(path), self.registry)
        except OSError as exc:
            log.warning("metrics not written to %s: %s", path, exc.strerror or exc)
            return False
        return True

    def push(self, url: str, job: str, grouping: Mapping[str, str] | None = None) -> bool:
        """PUT the registry to a Pushgateway (replacing what this job last pushed)."""
        try:
            from prometheus_client import push_to_gateway

            push_to_gateway(url, job=job, registry=self.registry, grouping_key=dict(grouping or {}), timeout=10)
        except Exception as exc:  # noqa: BLE001 - any transport failure: log, carry on
            log.warning("metrics not pushed to the pushgateway: %s", _reason(exc))
            return False
        return True


def _reason(exc: Exception) -> str:
    # Errors may quote the URL; a Pushgateway URL can carry basic-auth credentials.
    return type(exc).__name__

"""`hephaestus exporter`: a long-running Prometheus endpoint for the fleet (prometheus-client).

Each cluster is checked by a loop of its own, every `interval` seconds (one Connect listing,
asked once: a worker that does not answer now, or is still starting, is down now), and the
databases' slots by another; a slow or hung cluster delays no other. A scrape composes the
page from the last check of each, and never calls Connect: scrapes cost nothing and never
multiply the load on Connect.

What a scrape says of a cluster: `cluster_up 0` before its first check, when its last check
could not read it, and when it was not checked within two intervals (its connector gauges
are then left out rather than shown stale). A gauge of a connector that is gone disappears
with the next check.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from hephaestus.connect.models import LiveConnector
from hephaestus.drift.model import DriftReport
from hephaestus.drift.read import schema_report
from hephaestus.errors import HephaestusError
from hephaestus.fleet.pluginread import of_listing
from hephaestus.fleet.read import Read, SlotReport, configs_of, listings, read_all, report
from hephaestus.notify.metrics import Metrics
from hephaestus.project import Cluster, Project
from hephaestus.status.metrics import schema_metrics, slot_metrics, status_metrics
from hephaestus.status.model import ClusterView
from hephaestus.status.run import fleet_status, runs_of

log = logging.getLogger("hephaestus.exporter")

STALE_INTERVALS = 2  # a cluster not checked within this many intervals reads as down
SLOTS = "slots"  # the key of the slots' loop beside the clusters' names

Listed = Mapping[str, LiveConnector] | HephaestusError


@dataclass(frozen=True)
class Checked:
    """What one check found: a cluster's listing and view, or the databases' slots."""

    at: float  # monotonic, when it ended
    wall: float  # Unix time, when it ended
    took: float  # seconds
    view: ClusterView | None = None
    listed: Listed | None = None
    slots: SlotReport | None = None
    read: Read | None = None
    schema: DriftReport | None = None  # schema drift, read in the databases' loop


class Exporter:
    """The last check of each cluster and of the slots, and the page composed from them."""

    def __init__(self, project: Project, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.project = project
        self.interval = interval
        self.clock = clock
        self._last: dict[str, Checked] = {}
        self._lock = threading.Lock()
        self._page: tuple[tuple[tuple[str, float], ...], Metrics] | None = None

    def _fresh(self) -> dict[str, Checked]:
        now = self.clock()
        with self._lock:
            return {k: c for k, c in self._last.items() if now - c.at <= STALE_INTERVALS * self.interval}

    def _store(self, key: str, checked: Checked) -> None:
        with self._lock:
            self._last[key] = checked

    def check_cluster(self, cluster: Cluster) -> None:
        start = self.clock()
        listed = listings([cluster], glance=True)[cluster.name]
        slots = self._fresh().get(SLOTS)
        read: Read = slots.read if slots and slots.read else ({}, [])
        schema = slots.schema if slots and slots.schema else DriftReport()
        (view,) = fleet_status(self.project, [cluster], {cluster.name: listed}, read, schema, plugins=of_listing)
        self._store(cluster.name, Checked(self.clock(), time.time(), self.clock() - start, view, listed))

    def check_slots(self, read: Read | None = None) -> None:
        """The slots, judged against every cluster's last fresh listing: one not listed (yet)
        makes ownership unknowable, so no slot is then called an orphan."""
        start = self.clock()
        fresh = self._fresh()
        listed = {c: _listed(fresh.get(c)) for c in self.project.clusters}
        read = read_all(self.project) if read is None else read
        found = report(self.project, listed=configs_of(listed), read=read)
        schema = schema_report(self.project, runs_of(list(self.project.clusters.values()), listed))
        checked = Checked(self.clock(), time.time(), self.clock() - start, slots=found, read=read, schema=schema)
        self._store(SLOTS, checked)

    def check_all(self) -> Metrics:
        """One round of everything: the slots read first (the sources' gauges use them), the
        clusters concurrently, then the slots judged against their listings."""
        start = self.clock()
        read = read_all(self.project)
        self._store(SLOTS, Checked(self.clock(), time.time(), self.clock() - start, read=read))
        clusters = list(self.project.clusters.values())
        with ThreadPoolExecutor(max_workers=max(len(clusters), 1), thread_name_prefix="check") as pool:
            list(pool.map(lambda c: self._guarded(c.name, lambda: self.check_cluster(c)), clusters))
        self._guarded(SLOTS, lambda: self.check_slots(read))
        return self.page()

    def _guarded(self, key: str, check: Callable[[], None]) -> None:
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - a failed check keeps nothing stale: its cluster reads down
            log.warning("check of %s failed: %s", key, type(exc).__name__)
            with self._lock:
                self._last.pop(key, None)

    def page(self) -> Metrics:
        """The gauges of every fresh check; every cluster of the project has its `cluster_up`.
        Composed again only when a check ended or went stale since the last scrape."""
        fresh = self._fresh()
        key = tuple(sorted((k, c.at) for k, c in fresh.items()))
        if self._page is None or self._page[0] != key:
            self._page = (key, self._compose(fresh))
        return self._page[1]

    def _compose(self, fresh: Mapping[str, Checked]) -> Metrics:
        views = [c.view for k, c in sorted(fresh.items()) if k != SLOTS and c.view is not None]
        m = status_metrics(views, now=max((c.wall for c in fresh.values()), default=0.0))  # 0: never
        for name in sorted(self.project.clusters):
            if name not in fresh:
                m.set("cluster_up", "1 when the cluster's status could be read.", 0, {"cluster": name})
            else:
                _cluster_gauges(m, name, fresh[name])
            _budget(m, self.project, self.project.clusters[name])
        slots = fresh.get(SLOTS)
        if slots is not None and slots.slots is not None:
            slot_metrics(slots.slots, into=m)
            _took(m, SLOTS, slots)
        if slots is not None and slots.schema is not None:
            schema_metrics(slots.schema, into=m)
        else:
            m.set("slots_errors", "Databases or clusters slots could not read in the last check.", 1)
        return m

    def loop(self, key: str, check: Callable[[], None], stop: threading.Event) -> None:
        """Check, then wait out the rest of the interval, until stopped."""
        while not stop.is_set():
            started = self.clock()
            self._guarded(key, check)
            stop.wait(max(self.interval - (self.clock() - started), 0))


def _listed(checked: Checked | None) -> Listed:
    if checked is None or checked.listed is None:
        return HephaestusError("not checked within two intervals")
    return checked.listed


def _cluster_gauges(m: Metrics, name: str, checked: Checked) -> None:
    m.set(
        "cluster_last_check_timestamp_seconds",
        "When the last check of the cluster ended (Unix time).",
        checked.wall,
        {"cluster": name},
    )
    _took(m, name, checked)


def _took(m: Metrics, name: str, checked: Checked) -> None:
    m.set(
        "exporter_check_duration_seconds",
        "How long the last check took, by what was checked (a cluster, or the slots).",
        checked.took,
        {"check": name},
    )


def _budget(m: Metrics, project: Project, cluster: Cluster) -> None:
    rollout = project.rollout_of(cluster)
    if rollout is not None and rollout.lag_budget is not None:
        m.set(
            "rollout_lag_budget_records",
            "The cluster's progressive-rollout lag budget: the sinks' lag an alert may compare to.",
            rollout.lag_budget,
            {"cluster": cluster.name},
        )


def check(project: Project) -> Metrics:
    """One round of every check, now (what a scrape after it would read)."""
    return Exporter(project, interval=3600.0).check_all()


class Page:
    """A prometheus-client collector: each scrape composes the page from the last checks."""

    def __init__(self, exporter: Exporter) -> None:
        self.exporter = exporter

    def collect(self) -> Iterator[Any]:
        yield from self.exporter.page().registry.collect()


def serve(project: Project, address: str, port: int, interval: float, stop: threading.Event | None = None) -> None:
    """Check every cluster and the slots in loops of their own; serve until stopped (the
    process, or `stop` set)."""
    from prometheus_client import CollectorRegistry, start_http_server

    exporter = Exporter(project, interval)
    registry = CollectorRegistry()
    registry.register(Page(exporter))
    server, thread = start_http_server(port, address, registry=registry)
    log.info("serving metrics on http://%s:%d/metrics, checking every %gs", address, port, interval)
    stop = stop or threading.Event()
    loops = [(SLOTS, exporter.check_slots)] + [
        (c.name, (lambda c=c: exporter.check_cluster(c))) for c in project.clusters.values()
    ]
    workers = [threading.Thread(target=exporter.loop, args=(k, f, stop), name=k, daemon=True) for k, f in loops]
    for w in workers:
        w.start()
    try:
        stop.wait()
    finally:
        stop.set()
        server.shutdown()
        thread.join(5)

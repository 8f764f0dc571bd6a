"""What `status` and the exporter say of plugin versions (issue 50): the version each connector and
task runs (Connect 4.1+, KIP-891, from the listing), and, per cluster, skew between its workers and
a pin a worker holds nothing for, as errors (each worker asked at its own address:
`fleet.pluginread`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from hephaestus.connect.models import LiveConnector
from hephaestus.errors import HephaestusError
from hephaestus.fleet import plugins
from hephaestus.fleet.plugins import Workers
from hephaestus.project import Cluster
from hephaestus.status.model import ClusterView, ConnectorView

PluginRead = Callable[[Cluster, Mapping[str, LiveConnector]], Workers]


def with_plugins(
    views: Sequence[ClusterView],
    clusters: Sequence[Cluster],
    listed: Mapping[str, Mapping[str, LiveConnector] | HephaestusError],
    read: PluginRead,
) -> list[ClusterView]:
    by_name = {c.name: c for c in clusters}
    return [_view(v, by_name[v.cluster], listed.get(v.cluster), read) for v in views]


def _view(
    v: ClusterView, cluster: Cluster, listing: Mapping[str, LiveConnector] | HephaestusError | None, read: PluginRead
) -> ClusterView:
    if listing is None or isinstance(listing, HephaestusError):
        return v  # not reached: its error says so already
    w = read(cluster, listing)
    mine = {n: c for n, c in listing.items() if cluster.selects(n)}
    found = plugins.findings(
        cluster.name, w, {n: c.config for n, c in mine.items()}, {n: c.version for n, c in mine.items()}
    )
    connectors = tuple(
        replace(
            c, plugin_version=mine[c.name].version, task_versions=tuple((t.id, t.version) for t in mine[c.name].tasks)
        )
        if c.name in mine
        else c
        for c in v.connectors
    )
    skewed = None if w.unchecked() else tuple(s.plugin for s in plugins.skew(w.held))
    return replace(v, connectors=connectors, errors=(*v.errors, *(f"plugins: {f}" for f in found)), skewed=skewed)


def _runs(view: ConnectorView, c: LiveConnector) -> ConnectorView:
    return replace(view, plugin_version=c.version, task_versions=tuple((t.id, t.version) for t in c.tasks))

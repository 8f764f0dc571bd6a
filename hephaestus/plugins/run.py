"""`hephaestus plugins` (edge): each selected cluster read once, its workers at their own address."""

from __future__ import annotations

from collections.abc import Sequence

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectError
from hephaestus.fleet import pluginread
from hephaestus.fleet.plugins import Workers
from hephaestus.plugins.report import ClusterPlugins, runs_of
from hephaestus.project import Cluster


def report(clusters: Sequence[Cluster], factory: ClientFactory = connect_client) -> list[ClusterPlugins]:
    return [_cluster(c, factory) for c in clusters]


def _cluster(cluster: Cluster, factory: ClientFactory) -> ClusterPlugins:
    """The connectors in this deployment's `select`, and every worker's plugins."""
    empty = Workers(cluster.name)
    try:
        with factory(cluster) as client:
            fleet = {n: c for n, c in client.fleet().items() if cluster.selects(n)}
            workers = pluginread.read(cluster, client, factory)
    except ConnectError as exc:
        return ClusterPlugins(cluster.name, cluster.url, empty, error=str(exc))
    return ClusterPlugins(cluster.name, cluster.url, workers, runs_of(fleet))

"""Moves between clusters at the edges (issue 49): the plugins' versions a move's checks read, only
when the run has a move (`reconciler.crossing` pairs them, purely), and each selected cluster as a
move leaving it sees it: its Connect client and its ownership record."""

from __future__ import annotations

from collections.abc import Mapping

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectClient
from hephaestus.fleet import pluginread, plugins
from hephaestus.fleet.model import Desired, Live
from hephaestus.project import Cluster, Project
from hephaestus.reconciler import crossing, moves
from hephaestus.reconciler.claims import OwnershipClaims
from hephaestus.reconciler.outcome import ClusterOutcome
from hephaestus.reconciler.plan import Policy
from hephaestus.reconciler.planning import Clients, Read
from hephaestus.state import ownership


def moved(
    outs: list[ClusterOutcome],
    clients: Clients,
    reads: Mapping[str, Read],
    desired: Mapping[str, Mapping[str, Desired]],
    policy: Policy,
    factory: ClientFactory = connect_client,
) -> list[ClusterOutcome]:
    """The connectors whose files moved between two selected clusters, each one `move` step
    (`reconciler.crossing`); the plugins' versions are read only when there is one. A copy a
    killed move left that this run does not move is held."""
    found = crossing.found(outs, desired)
    if found:
        read = {c: versions(clients.get(c), reads[c].cluster, factory) for c in sorted(crossing.clusters(found))}
        facts = crossing.Facts({n: r.kafka for n, r in reads.items()}, read)
        outs = crossing.paired(outs, found, desired, facts, policy)
    # After the pairing: a copy a killed move left, that this run does not move, is held.
    return crossing.unfinished(outs, {n: r.claims for n, r in reads.items()})


def versions(
    client: ConnectClient | None, cluster: Cluster, factory: ClientFactory = connect_client
) -> dict[str, frozenset[str]] | None:
    """{connector class: the versions every worker holds} (`fleet.pluginread`: each worker asked at
    its own address, as a plan's pin check does). A class the workers hold in different versions is
    left out, so a move of it fails closed as one whose version cannot be told; None: not asked, or
    a worker not read or before KIP-891 (a move then fails closed)."""
    if client is None:
        return None
    w = pluginread.read(cluster, client, factory)
    if w.unchecked():
        return None
    skewed = {s.plugin for s in plugins.skew(w.held)}
    first = next(iter(w.held.values()), {})  # without skew, every worker holds what the first does
    return {c: v for c, v in first.items() if c not in skewed}


def peers(
    project: Project, store: ownership.OwnershipStore, run_id: str, clients: Clients, reads: Mapping[str, Read]
) -> dict[str, moves.Peer]:
    """Each selected cluster as a move leaving it sees it: its client and ownership record."""
    found = {}
    for name, client in clients.made.items():
        live = {n: Live(n, c.config, c.type, c.state) for n, c in (reads[name].fleet or {}).items()}
        marks = OwnershipClaims(store, project, project.clusters[name], run_id, live)
        found[name] = moves.Peer(client, marks)
    return found

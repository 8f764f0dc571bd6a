"""`hephaestus offsets get|reset|set`: a connector's offsets through Connect's offsets API
(Kafka 3.6+), as a planned, confirmed, locked and audited operation.

Connect alters offsets only of a STOPPED connector, so a change is: stop, alter (PATCH) or
reset (DELETE), then back to the state it had. A sink's offsets are its consumer group's
positions: a reset re-delivers every record still in its topics (an upsert sink rewrites the
same rows). A source's offsets are tied to its replication slot: moving them skips or replays
WAL the slot may no longer hold, so a source is refused unless forced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect.errors import ConnectError
from hephaestus.errors import HephaestusError
from hephaestus.lock import connect_lock, new_run_id, timeout_of
from hephaestus.project import Cluster, Project
from hephaestus.reconciler.audit import journal_for

RESUME = {"RUNNING": "resume", "PAUSED": "pause"}


@dataclass(frozen=True)
class OffsetsPlan:
    cluster: Cluster
    connector: str
    kind: str  # source / sink
    state: str  # what it goes back to
    action: str  # reset / set
    current: list[dict[str, Any]]
    wanted: list[dict[str, Any]]  # for set

    def describe(self) -> str:
        back = {"RUNNING": "resume", "PAUSED": "pause again", "STOPPED": "leave STOPPED"}.get(self.state, "resume")
        what = (
            "delete every offset (a sink re-reads its topics from the start)"
            if self.action == "reset"
            else f"set {len(self.wanted)} partition offset(s)"
        )
        return f"{self.connector} ({self.kind}, {self.state}): stop, {what}, {back}"


def locate(
    project: Project, clusters: Sequence[Cluster], connector: str, *, client_factory: ClientFactory = connect_client
) -> tuple[Cluster, Any]:
    """The one cluster running `connector` inside its `select`, and its live status."""
    for cluster in clusters:
        if not cluster.selects(connector):
            continue
        with client_factory(cluster) as client:
            fleet = client.fleet()
        if connector in fleet:
            return cluster, fleet[connector]
    raise HephaestusError(f"no cluster runs {connector} in this deployment's select")


def get(cluster: Cluster, connector: str, *, client_factory: ClientFactory = connect_client) -> dict[str, Any]:
    with client_factory(cluster) as client:
        return client.offsets(connector)


def plan(
    project: Project,
    clusters: Sequence[Cluster],
    connector: str,
    action: str,
    wanted: list[dict[str, Any]],
    force: bool,
) -> OffsetsPlan:
    cluster, live = locate(project, clusters, connector)
    if live.type == "source" and not force:
        raise HephaestusError(
            f"{connector} is a source: its offsets are tied to its replication slot's position "
            "(moving them skips or replays WAL the slot may not hold); --force to do it anyway"
        )
    current = get(cluster, connector).get("offsets", [])
    return OffsetsPlan(cluster, connector, live.type, live.state, action, current, wanted)


def apply(
    project: Project, p: OffsetsPlan, lock_timeout_s: float | None, *, client_factory: ClientFactory = connect_client
) -> None:
    """Under the cluster's lock, audited: stop, alter or reset, then back to the state it had."""
    run_id = new_run_id()
    with (
        connect_lock(project, [p.cluster], "offsets", timeout_of(project, lock_timeout_s), run_id),
        journal_for(project, p.cluster.name, run_id) as journal,
        client_factory(p.cluster) as client,
    ):
        journal.check()
        journal.event(p.connector, f"offsets-{p.action}", "intent", p.describe())
        try:
            client.stop(p.connector)
            if p.action == "reset":
                client.reset_offsets(p.connector)
            else:
                client.alter_offsets(p.connector, p.wanted)
            if p.state in RESUME:
                getattr(client, RESUME[p.state])(p.connector)
        except ConnectError as exc:
            journal.event(p.connector, f"offsets-{p.action}", "failed", str(exc))
            raise HephaestusError(
                f"offsets of {p.connector} not {p.action}: {exc} (it may be left STOPPED: check `hephaestus status`)"
            ) from exc
        journal.event(p.connector, f"offsets-{p.action}", "ok", p.describe())

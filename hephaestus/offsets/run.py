"""`hephaestus offsets get|reset|set`: a connector's offsets through Connect's offsets API
(Kafka 3.6+), as a planned, confirmed, locked and audited operation.

Connect alters offsets only of a STOPPED connector, so a change is: stop, alter (PATCH) or
reset (DELETE), then back to the state it had. A sink's offsets are its consumer group's
positions: a reset re-delivers every record still in its topics (an upsert sink rewrites the
same rows; an insert-mode one writes them twice). A source's offsets are tied to its
replication slot: moving them skips or replays WAL the slot may no longer hold, a reset
re-snapshots, and the stop drops a slot with `slot.drop.on.stop`. Each is an effect the one
gate judges (`judge`): only the action's own effect goes without --allow-destructive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect.errors import ConnectError
from hephaestus.errors import HephaestusError
from hephaestus.project import Cluster, Project
from hephaestus.safety.effects import Effect, of_offsets
from hephaestus.safety.gate import Allow, Cleared, Item, check
from hephaestus.state.backend import connect_lock, journal_for, timeout_of
from hephaestus.state.lock import new_run_id

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
    effects: tuple[Effect, ...] = ()

    def describe(self) -> str:
        back = {"RUNNING": "resume", "PAUSED": "pause again", "STOPPED": "leave STOPPED"}.get(self.state, "resume")
        what = (
            "delete every offset (a sink re-reads its topics from the start)"
            if self.action == "reset"
            else f"set {len(self.wanted)} partition offset(s)"
        )
        return f"{self.connector} ({self.kind}, {self.state}): stop, {what}, {back}"

    def item(self) -> Item:
        return Item(self.cluster.name, self.connector, f"offsets {self.action}", self.effects)


# What each action itself is: asking for it consents to it (a sink's re-delivery onto upserted
# rows); everything else it does (duplicates in an insert-mode table, a source's slot or
# snapshot) needs --allow-destructive.
CONSENT = {
    "reset": frozenset({"offsets-reset", "redelivery"}),
    "set": frozenset({"offsets-rewound", "offsets-lost", "redelivery"}),
}


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
    *,
    client_factory: ClientFactory = connect_client,
) -> OffsetsPlan:
    """What the change does to data (safety.effects.of_offsets), judged later by the gate."""
    cluster, live = locate(project, clusters, connector, client_factory=client_factory)
    current = get(cluster, connector, client_factory=client_factory).get("offsets", [])
    found = of_offsets(live.config, action, positions(current), positions(wanted), project.resolver())
    return OffsetsPlan(cluster, connector, live.type, live.state, action, current, wanted, found)


def positions(offsets: list[dict[str, Any]]) -> dict[str, Any]:
    """A sink's positions by partition (Connect's `kafka_topic`/`kafka_partition`/`kafka_offset`)."""
    out = {}
    for o in offsets:
        part, off = o.get("partition"), o.get("offset")
        if isinstance(part, dict) and isinstance(off, dict) and "kafka_offset" in off:
            out[f"{part.get('kafka_topic')}[{part.get('kafka_partition')}]"] = off["kafka_offset"]
    return out


def judge(p: OffsetsPlan, allow: Allow) -> Cleared:
    """The one gate: Refused (exit 2) unless every effect is the action's own or allowed."""
    return check([p.item()], allow, CONSENT[p.action])


def apply(
    project: Project,
    p: OffsetsPlan,
    cleared: Cleared,
    lock_timeout_s: float | None,
    *,
    client_factory: ClientFactory = connect_client,
) -> None:
    """Under the cluster's lock, audited: stop, alter or reset, then back to the state it had."""
    if p.item() not in cleared.items:
        raise HephaestusError(f"offsets of {p.connector}: not cleared by the gate (a bug): nothing changed")
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

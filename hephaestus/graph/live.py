"""What `--live` lays over the lineage (pure): each connector's health as `hephaestus status`
read it, its last change in the audit journal, and the clusters that could not be read.

The views are read by their fields, not imported: `graph` and `status` are sibling features
(neither imports the other); the command hands `status`'s views in. Fields a view may lack
(an older or newer `status`) are left out of the facts, not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from hephaestus.fleet.slots import size
from hephaestus.graph.connectors import connector_id
from hephaestus.graph.model import CONNECTORS, Health, Lineage, Node, Overlay, RecordedChange

UNREADABLE = "UNREADABLE"
ABSENT = "ABSENT"


class ConnectorLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def tasks(self) -> tuple[tuple[int, str], ...]: ...
    @property
    def problems(self) -> tuple[str, ...]: ...


class ClusterLike(Protocol):
    @property
    def cluster(self) -> str: ...
    @property
    def connectors(self) -> Sequence[ConnectorLike]: ...
    @property
    def errors(self) -> tuple[str, ...]: ...


def _count(value: Any) -> str:
    return str(value)


def _seconds(value: Any) -> str:
    return f"{float(value):.0f} s"


def _bytes(value: Any) -> str:
    return size(int(value))


# (field of status's ConnectorView, what the panel calls it, how it is shown)
_FACTS = (
    ("consumer_lag", "consumer lag (records)", _count),
    ("lag_age_s", "oldest waiting record", _seconds),
    ("dlq_depth", "DLQ records", _count),
    ("dlq_unresolved", "DLQ records unresolved", _count),
    ("slot", "replication slot", _count),
    ("slot_retained", "slot WAL retained", _bytes),
    ("slot_unconfirmed", "slot WAL unconfirmed", _bytes),
    ("slot_verdict", "slot verdict", _count),
    ("freshness", "freshness (probe)", _count),  # docs/freshness.md: "fresh 3s", "stale (never): …"
)


def health_of(view: ConnectorLike) -> Health:
    facts = [(label, show(v)) for key, label, show in _FACTS if (v := getattr(view, key, None)) not in (None, "")]
    if budget := getattr(view, "budget", 0):
        facts.append(("heal's restarts", f"{getattr(view, 'restarts', 0)} of {budget}"))
    return Health(view.state, tuple(view.tasks), tuple(view.problems), tuple(facts))


def unreadable(view: ClusterLike) -> str:
    """Why the cluster's Connect could not be read ("" when it was): status answers such a
    cluster with no connectors and the error `cluster <name>: …`."""
    if view.connectors:
        return ""
    return next((e for e in view.errors if e.startswith(f"cluster {view.cluster}:")), "")


def overlay(
    lineage: Lineage,
    views: Sequence[ClusterLike],
    changes: Mapping[tuple[str, str], RecordedChange],
    errors: Sequence[str] = (),
) -> Overlay:
    """Each connector node's health (UNREADABLE when its cluster could not be read, ABSENT when
    the cluster was read and it is not there) and last change."""
    down = {v.cluster: why for v in views if (why := unreadable(v))}
    read = {v.cluster: {c.name: c for c in v.connectors} for v in views if v.cluster not in down}
    by_name = {c.name: c for found in read.values() for c in found.values()}
    health = {}
    for node in lineage.nodes:
        if node.kind in CONNECTORS and (h := _health(node, read, by_name, down)) is not None:
            health[node.id] = h
    found = {connector_id(cluster, name): c for (cluster, name), c in changes.items()}
    mine = {n.id: found[n.id] for n in lineage.nodes if n.id in found}
    problems = tuple(e for v in views for e in v.errors if v.cluster not in down) + tuple(errors)
    return Overlay(health, mine, down, problems)


def _health(
    node: Node,
    read: Mapping[str, Mapping[str, ConnectorLike]],
    by_name: Mapping[str, ConnectorLike],
    down: Mapping[str, str],
) -> Health | None:
    if node.cluster in down:
        return Health(UNREADABLE, problems=(down[node.cluster],))
    if node.cluster in read:
        view = read[node.cluster].get(node.label)
        return health_of(view) if view else Health(ABSENT, problems=("in git, not on its cluster",))
    # A connector a ksqlDB migration declares runs on whichever Connect cluster ksqlDB uses.
    view = by_name.get(node.label)
    return health_of(view) if view else None


def change_of(entry: Mapping[str, Any]) -> RecordedChange | None:
    """An audit record as a change: an outcome (ok, failed), not an intent."""
    outcome = str(entry.get("outcome", ""))
    if not outcome or outcome == "intent":
        return None
    return RecordedChange(
        str(entry.get("ts", "")),
        str(entry.get("action", "")),
        outcome,
        str(entry.get("run_id", "")),
        str(entry.get("detail", "")),
    )

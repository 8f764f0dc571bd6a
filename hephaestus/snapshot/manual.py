"""`hephaestus snapshot`: send an incremental-snapshot signal by hand, or read its outcome."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectorNotFound
from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import qualified, source_ref
from hephaestus.project import Cluster, Project
from hephaestus.safety.effects import Effect
from hephaestus.safety.gate import Cleared, Item, check
from hephaestus.snapshot import db, notifications
from hephaestus.snapshot.signal import Signal, check_capturable, execute_snapshot, stop_snapshot
from hephaestus.snapshot.source import dsn_for
from hephaestus.state.backend import connect_lock, journal_for, timeout_of
from hephaestus.state.lock import new_run_id


@dataclass(frozen=True)
class Located:
    cluster: Cluster
    config: dict[str, str]


def locate(
    project: Project, clusters: Sequence[Cluster], connector: str, *, client_factory: ClientFactory = connect_client
) -> Located:
    """The cluster that runs `connector` in its `select`, and its live config."""
    outside = [c.name for c in clusters if not c.selects(connector)]
    if outside and len(outside) == len(clusters):
        raise HephaestusError(
            f"connector {connector!r} is outside the select of cluster(s) {', '.join(outside)}: "
            "another deployment's to snapshot"
        )
    for cluster in (c for c in clusters if c.selects(connector)):
        with client_factory(cluster) as client:
            try:
                return Located(cluster, client.get_config(connector))
            except ConnectorNotFound:
                continue
    names = ", ".join(c.name for c in clusters)
    raise HephaestusError(f"connector {connector!r} not found on cluster(s) {names}")


def judged(found: Located, connector: str, tables: Sequence[str], stop: bool) -> Cleared:
    """The one gate: an incremental snapshot re-reads the tables named (that is what it is
    asked to do); stopping one changes no data."""
    effects = () if stop else (Effect("resnapshot", f"{', '.join(tables) or 'every captured table'} read again"),)
    return check([Item(found.cluster.name, connector, "snapshot", effects)], consent=frozenset({"resnapshot"}))


def send(
    project: Project,
    found: Located,
    connector: str,
    tables: Sequence[str],
    where: str | None,
    stop: bool,
    slot_timeout_s: float,
    cleared: Cleared,
    lock_timeout_s: float | None = None,
) -> Signal:
    """Under the cluster's lock (one actor per cluster, like every writer): check everything,
    wait for the slot, then insert one signal row (once the gate cleared it), audited."""
    with connect_lock(project, [found.cluster], "snapshot", timeout_of(project, lock_timeout_s)):
        if connector not in cleared.names():
            raise HephaestusError(f"snapshot of {connector}: not cleared by the gate (a bug): no signal sent")
        wanted = [qualified(t) for t in tables]
        if not stop:
            check_capturable(found.config, wanted, connector)
        ref = source_ref(connector, found.config)
        with db.connect(dsn_for(project, ref.database)) as conn:
            db.check_tables(conn, [] if stop else wanted, ref.signal_table, ref.publication)
            db.wait_slot_active(conn, ref.slot, slot_timeout_s)
            signal = stop_snapshot(ref.database, wanted) if stop else execute_snapshot(ref.database, wanted, where)
            _insert_audited(
                project, found.cluster.name, connector, lambda: db.insert_signal(conn, ref.signal_table, signal), signal
            )
        return signal


def _insert_audited(project: Project, cluster: str, connector: str, insert: Callable[[], None], signal: Signal) -> None:
    """The intent before the row, the outcome after (a signal that cannot be audited is not sent)."""
    with journal_for(project, cluster, new_run_id()) as journal:
        journal.check()
        detail = f"{signal.type} {signal.id}: {signal.data}"
        journal.event(connector, "snapshot-signal", "intent", detail)
        try:
            insert()
        except HephaestusError as exc:
            journal.event(connector, "snapshot-signal", "failed", str(exc))
            raise
        journal.event(connector, "snapshot-signal", "ok", detail)


def status(
    found: Located, connector: str, signal_id: str, timeout_s: float, wait: bool
) -> notifications.SnapshotReport:
    topic = found.config.get("notification.sink.topic.name")
    if not topic or "sink" not in found.config.get("notification.enabled.channels", ""):
        raise HephaestusError(
            f"{connector} has no notification sink topic: enable "
            "notification.enabled.channels=sink (generated sources have it)"
        )
    if not found.cluster.kafka_bootstrap:
        raise HephaestusError(f"cluster {found.cluster.name} has no kafka_bootstrap in the project file")
    return notifications.read(
        found.cluster.kafka_bootstrap, topic, signal_id, timeout_s, wait, found.cluster.schema_registry_url
    )

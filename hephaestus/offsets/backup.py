"""`hephaestus offsets backup`: the offsets ledger's scheduled record (issue 49; edge: Connect,
PostgreSQL, the state store).

For every connector this deployment owns on each cluster: Connect's offsets (a sink's are its
consumer group's positions), and for a Debezium PostgreSQL source its slot's `restart_lsn` and
`confirmed_flush_lsn`, read after the offsets so that the slot is never behind the record by
more than what was confirmed in between. One run is audited per cluster; retention keeps each
connector's newest records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from hephaestus import pg
from hephaestus.classes import POSTGRES_SOURCE
from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectClient
from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import source_ref
from hephaestus.project import Cluster, Project
from hephaestus.safety import views
from hephaestus.state.backend import journal_for, ledger_store, ownership_store
from hephaestus.state.ledgerdoc import Record, SlotAt, lsn_of
from hephaestus.state.lock import new_run_id

_SLOT = (
    "SELECT restart_lsn::text, confirmed_flush_lsn::text FROM pg_replication_slots "
    "WHERE slot_name = %s AND database = current_database()"
)


@dataclass(frozen=True)
class Backed:
    records: tuple[Record, ...]
    problems: tuple[str, ...]  # per connector: what could not be recorded, and why


def backup(
    project: Project,
    clusters: Sequence[Cluster],
    keep: int,
    *,
    client_factory: ClientFactory = connect_client,
) -> Backed:
    """Record every owned connector of `clusters`; a connector that cannot be read is a problem
    named in the result, never a gap taken for a record."""
    run_id, taken = new_run_id(), datetime.now(UTC).isoformat(timespec="seconds")
    owned = ownership_store(project)
    records: list[Record] = []
    problems: list[str] = []
    for cluster in clusters:
        mine = sorted(n for n in owned.owned(project.name, cluster.name) if cluster.selects(n))
        found, wrong = _cluster(project, cluster, mine, run_id, taken, client_factory)
        records += found
        problems += wrong
    ledger_store(project).add(project.name, records, keep)
    for cluster in clusters:
        with journal_for(project, cluster.name, run_id) as journal:
            n = sum(1 for r in records if r.cluster == cluster.name)
            journal.event("", "offsets-backup", "ok", f"{n} connectors recorded in the offsets ledger")
    return Backed(tuple(records), tuple(problems))


def _cluster(
    project: Project, cluster: Cluster, mine: Sequence[str], run_id: str, taken: str, client_factory: ClientFactory
) -> tuple[list[Record], list[str]]:
    records, problems = [], []
    with client_factory(cluster) as client:
        fleet = client.fleet()
        for name in (n for n in mine if n in fleet):
            try:
                records.append(_record(project, cluster, client, name, fleet[name].config, run_id, taken))
            except HephaestusError as exc:
                problems.append(f"{cluster.name}/{name}: not recorded: {exc}")
    return records, problems


def _record(
    project: Project,
    cluster: Cluster,
    client: ConnectClient,
    name: str,
    config: Mapping[str, str],
    run_id: str,
    taken: str,
) -> Record:
    offsets = client.offsets(name).get("offsets")
    if not isinstance(offsets, list):
        raise HephaestusError("Connect's offsets answer holds no list of offsets")
    kind = "source" if views.is_source(config) else "sink"
    slot = slot_of(project, name, config) if config.get("connector.class") == POSTGRES_SOURCE else None
    return Record(project.name, cluster.name, name, kind, taken, run_id, tuple(offsets), slot)


def slot_of(project: Project, name: str, config: Mapping[str, str]) -> SlotAt | None:
    """The source's slot as it is now; None when it does not exist. Its database must be one of
    the project file's `databases:` (HephaestusError naming it otherwise)."""
    ref = source_ref(name, config)
    with pg.session(project.dsn(ref.database, f"the offsets ledger of {name}"), f"database {ref.database}") as conn:
        row = conn.execute(_SLOT, [ref.slot]).fetchone()
    if row is None or row[0] is None or row[1] is None:
        return None
    return SlotAt(ref.database, ref.slot, lsn_of(str(row[0])), lsn_of(str(row[1])))

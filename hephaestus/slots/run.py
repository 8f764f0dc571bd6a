"""`hephaestus slots` (edge: PostgreSQL for the slots, Connect for who names them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hephaestus import pg
from hephaestus.clients import ClientFactory, connect_client
from hephaestus.errors import HephaestusError
from hephaestus.project import Cluster, Project
from hephaestus.safety.effects import Effect, of_slot_drop
from hephaestus.safety.gate import Allow, Cleared, Item, check
from hephaestus.slots.model import Judged, Limits, Slot, droppable, judge, owners, uses
from hephaestus.state.backend import journal_for
from hephaestus.state.lock import new_run_id

_SLOTS = """
SELECT slot_name, plugin, active,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
                       restart_lsn)::bigint,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
                       confirmed_flush_lsn)::bigint,
       to_jsonb(s) ->> 'wal_status', current_database()
FROM pg_replication_slots s WHERE slot_type = 'logical' AND database = current_database() ORDER BY slot_name
"""


@dataclass(frozen=True)
class SlotReport:
    judged: tuple[Judged, ...]
    errors: tuple[str, ...]  # a database or cluster that could not be read

    @property
    def problems(self) -> tuple[Judged, ...]:
        return tuple(j for j in self.judged if j.verdict != "ok")


def read_slots(dsn: str, database: str) -> list[Slot]:
    with pg.session(dsn, f"database {database}", application="hephaestus slots") as conn:
        rows = conn.execute(_SLOTS).fetchall()
    return [
        Slot(
            database,
            str(r[0]),
            str(r[1]),
            bool(r[2]),
            _int(r[3]),
            _int(r[4]),
            None if r[5] is None else str(r[5]),
            str(r[6]),
        )
        for r in rows
    ]


def _int(value: object) -> int | None:
    return None if value is None else max(int(str(value)), 0)


def live_configs(
    project: Project, *, client_factory: ClientFactory = connect_client
) -> tuple[dict[str, dict[str, dict[str, str]]], list[str]]:
    """Every cluster's live configs (one listing each): ownership is judged on the whole fleet."""
    configs: dict[str, dict[str, dict[str, str]]] = {}
    errors: list[str] = []
    for cluster in project.clusters.values():
        try:
            with client_factory(cluster) as client:
                configs[cluster.name] = {n: c.config for n, c in client.fleet().items()}
        except HephaestusError as exc:
            errors.append(f"cluster {cluster.name}: {exc}")
    return configs, errors


def git_configs(project: Project) -> tuple[list[tuple[str, dict[str, str]]], list[str]]:
    """Every connector file of every cluster (custom ones too), wherever its name falls: a
    source declared in git may not run yet, and will use its slot when it does."""
    from hephaestus.errors import InputError, InputErrors
    from hephaestus.reconciler.desired import load_desired

    found: list[tuple[str, dict[str, str]]] = []
    errors: list[str] = []
    for cluster in project.clusters.values():
        every = Cluster(cluster.name, cluster.url, cluster.connectors, (), cluster.helm_values)  # no select: all files
        try:
            desired = load_desired(every, include_custom=True) if cluster.connectors.is_dir() else {}
        except (InputError, InputErrors) as exc:
            errors.append(f"connector files of cluster {cluster.name}: {str(exc).splitlines()[0]}")
            continue
        found += [(f"{cluster.name}/{n} (in git)", dict(d.config)) for n, d in sorted(desired.items())]
    return found, errors


Read = tuple[dict[str, list[Slot]], list[str]]  # slots by database, and what could not be read


def read_all(project: Project, databases: Sequence[str] = ()) -> Read:
    """The slots of the project's databases (or of `databases`): one query per database."""
    found: dict[str, list[Slot]] = {}
    errors: list[str] = []
    for database in databases or sorted(project.databases):
        try:
            found[database] = read_slots(project.dsn(database, "slots"), database)
        except HephaestusError as exc:
            errors.append(str(exc))
    return found, errors


def report(
    project: Project,
    databases: Sequence[str] = (),
    listed: tuple[dict[str, dict[str, dict[str, str]]], list[str]] | None = None,
    read: Read | None = None,
) -> SlotReport:
    """Every logical slot of the project's databases (or of `databases`), judged; `listed` and
    `read`: the clusters' configs and the slots when already read (the exporter reads each
    once per check). A cluster that cannot be listed makes ownership unknowable: no slot is
    then called an orphan."""
    configs, errors = live_configs(project) if listed is None else (listed[0], list(listed[1]))
    declared, unreadable = git_configs(project)
    found, unread = read_all(project, databases) if read is None else read
    errors += unread + unreadable
    live = [(f"{c}/{n}", config) for c, by_name in sorted(configs.items()) for n, config in sorted(by_name.items())]
    known = uses([*live, *declared], project.resolver())
    limits = Limits.of(project.policy)
    judged = [_unknowable(judge(s, owners(s, known), limits), bool(errors)) for slots in found.values() for s in slots]
    return SlotReport(tuple(judged), tuple(errors))


def _unknowable(j: Judged, blind: bool) -> Judged:
    if blind and j.verdict == "orphan":
        return Judged(
            j.slot,
            j.owner,
            "inactive" if not j.slot.active else "ok",
            j.reason.replace(
                "no connector could use it", "no connector of the readable clusters and files could use it"
            ),
        )
    return j


def clear_drop(found: SlotReport, database: str, name: str, allow: Allow) -> tuple[Judged, Cleared]:
    """The one gate for `--drop-orphan`: the slot dropped is what the command asks (consented),
    a slot any source could still use is never dropped (a fleet rule), whatever is allowed."""
    matches = [j for j in found.judged if j.slot.name == name and (not database or j.slot.database == database)]
    if len(matches) != 1:
        where = "not found in the project's databases" if not matches else "in several databases: pass --database"
        raise HephaestusError(f"slot {name}: {where}")
    (j,) = matches
    effects = of_slot_drop(name)
    why = droppable(j, bool(found.errors))
    if why:
        effects += (Effect("slot-dropped", why, invariant=True),)
    return j, check(
        [Item(f"database {j.slot.database}", name, "slot drop", effects)], allow, frozenset({"slot-dropped"})
    )


def drop(project: Project, database: str, name: str, judged: Judged, cleared: Cleared) -> None:
    """Drop an orphan slot the gate cleared, audited before and after."""
    if name not in cleared.names() or cleared.cluster != f"database {database}":
        raise HephaestusError(f"slot {name}: not cleared by the gate (a bug): nothing dropped")
    with journal_for(project, f"database {database}", new_run_id()) as journal:
        journal.check()
        detail = f"slot {name} of database {database} ({judged.reason or 'retaining no WAL'})"
        journal.event(name, "slot-drop", "intent", detail)
        try:
            with pg.session(project.dsn(database, "slots"), f"slot {name} not dropped") as conn:
                conn.execute("SELECT pg_drop_replication_slot(%s)", [name])
        except pg.DatabaseError as exc:
            journal.event(name, "slot-drop", "failed", pg.text(exc.__cause__ or exc))
            raise
        journal.event(name, "slot-drop", "ok", detail)

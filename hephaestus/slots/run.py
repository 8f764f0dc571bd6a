"""`hephaestus slots` (edge: PostgreSQL for the slots, Connect for who names them)."""

from __future__ import annotations

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.fleet.read import SlotReport
from hephaestus.fleet.slots import Judged, droppable
from hephaestus.project import Project
from hephaestus.safety.effects import Effect, of_slot_drop
from hephaestus.safety.gate import Allow, Cleared, Item, check
from hephaestus.state.backend import journal_for
from hephaestus.state.lock import new_run_id


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

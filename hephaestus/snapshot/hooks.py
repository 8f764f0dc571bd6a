"""Incremental snapshots around a reconcile (`--send-incremental-snapshot`).

Before the writes: for every updated source whose table.include.list gained tables, check the
tables (exist, primary key, signal table). Every reconcile then adds them to the publication
(publications.change), before the connector update. After the writes: once the updated
source runs and a *new* walsender holds its slot, insert one execute-snapshot signal for the
new tables only.

Back-fills (issue 45) ride the same hooks on every apply, asked for or not: the plan names
them (`reconciler.backfill`: a table re-added to its publication, a sink's field list widened);
after the writes, one execute-snapshot signal per back-fill, once its source runs.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import POSTGRES_SOURCE, SourceRef, source_ref
from hephaestus.project import Cluster, Project
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Backfill, Plan, Step
from hephaestus.snapshot import db
from hephaestus.snapshot.signal import check_capturable, execute_snapshot, newly_captured
from hephaestus.snapshot.source import dsn_for


@dataclass(frozen=True)
class Pending:
    ref: SourceRef
    dsn: str
    tables: tuple[str, ...]
    old_pid: int | None  # the walsender before the update: the signal must reach the new one
    backfill: bool = False  # a plan's back-fill: its source need not have been written


def new_tables(step: Step) -> list[str]:
    if step.action != "update" or step.config.get("connector.class") != POSTGRES_SOURCE:
        return []
    change = next((c for c in step.changes if c.key == "table.include.list"), None)
    if change is None:
        return []
    return newly_captured({"table.include.list": change.before or ""}, step.config)


class SnapshotHooks:
    def __init__(self, project: Project, slot_timeout_s: float = 120.0, new_tables: bool = True) -> None:
        self.project = project
        self.slot_timeout_s = slot_timeout_s
        self.new_tables = new_tables  # --send-incremental-snapshot: tables a source starts to capture
        self._pending: dict[str, list[Pending]] = {}
        self._lock = threading.Lock()  # clusters are reconciled concurrently

    def prepare(self, cluster: Cluster, plan: Plan) -> None:
        pending = [self._check(step, tables) for step in plan.steps if self.new_tables and (tables := new_tables(step))]
        written = {s.name for s in plan.writes}
        pending += [self._backfill(b, b.source in written) for b in plan.backfills]
        with self._lock:
            self._pending[cluster.name] = pending

    def _check(self, step: Step, tables: list[str]) -> Pending:
        check_capturable(step.config, tables, step.name)
        ref = source_ref(step.name, step.config)
        dsn = dsn_for(self.project, ref.database)
        with db.connect(dsn) as conn:
            db.check_tables(conn, tables, ref.signal_table, ref.publication)
            return Pending(ref, dsn, tuple(tables), db.slot_pid(conn, ref.slot))

    def _backfill(self, b: Backfill, restarted: bool) -> Pending:
        """The source's walsender now, when this apply restarts it (the signal waits for the next)."""
        dsn = dsn_for(self.project, b.ref.database)
        with db.connect(dsn) as conn:
            return Pending(b.ref, dsn, b.tables, db.slot_pid(conn, b.ref.slot) if restarted else None, backfill=True)

    def after(self, cluster: Cluster, plan: Plan, results: Sequence[StepResult]) -> tuple[StepResult, ...]:
        with self._lock:
            pending = self._pending.pop(cluster.name, [])
        ok = {r.name for r in results if r.ok}
        failed = {r.name for r in results if not r.ok}
        return tuple(
            self._signal(p)
            if (p.ref.connector not in failed if p.backfill else p.ref.connector in ok)
            else StepResult(p.ref.connector, _kind(p), False, "source update failed: no signal sent")
            for p in pending
        )

    def _signal(self, p: Pending) -> StepResult:
        try:
            with db.connect(p.dsn) as conn:
                db.wait_slot_active(conn, p.ref.slot, self.slot_timeout_s, not_pid=p.old_pid)
                signal = execute_snapshot(p.ref.database, p.tables)
                db.insert_signal(conn, p.ref.signal_table, signal)
        except HephaestusError as exc:
            return StepResult(p.ref.connector, _kind(p), False, str(exc))
        return StepResult(p.ref.connector, _kind(p), True, f"signal {signal.id}: {', '.join(p.tables)}")


def _kind(p: Pending) -> str:
    return "back-fill" if p.backfill else "snapshot"

"""Incremental snapshots around a reconcile (`--send-incremental-snapshot`).

Before the writes: for every updated source whose table.include.list gained tables, check the
tables (exist, primary key, signal table). Every reconcile then adds them to the publication
(reconciler.publications), before the connector update. After the writes: once the updated
source runs and a *new* walsender holds its slot, insert one execute-snapshot signal for the
new tables only.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import POSTGRES_SOURCE, SourceRef, source_ref
from hephaestus.project import Cluster, Project
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.snapshot import db
from hephaestus.snapshot.signal import check_capturable, execute_snapshot, newly_captured
from hephaestus.snapshot.source import dsn_for


@dataclass(frozen=True)
class Pending:
    ref: SourceRef
    dsn: str
    tables: tuple[str, ...]
    old_pid: int | None  # the walsender before the update: the signal must reach the new one


def new_tables(step: Step) -> list[str]:
    if step.action != "update" or step.config.get("connector.class") != POSTGRES_SOURCE:
        return []
    change = next((c for c in step.changes if c.key == "table.include.list"), None)
    if change is None:
        return []
    return newly_captured({"table.include.list": change.before or ""}, step.config)


class SnapshotHooks:
    def __init__(self, project: Project, slot_timeout_s: float = 120.0) -> None:
        self.project = project
        self.slot_timeout_s = slot_timeout_s
        self._pending: dict[str, list[Pending]] = {}
        self._lock = threading.Lock()  # clusters are reconciled concurrently

    def prepare(self, cluster: Cluster, plan: Plan) -> None:
        pending = [self._check(step, tables) for step in plan.steps if (tables := new_tables(step))]
        with self._lock:
            self._pending[cluster.name] = pending

    def _check(self, step: Step, tables: list[str]) -> Pending:
        check_capturable(step.config, tables, step.name)
        ref = source_ref(step.name, step.config)
        dsn = dsn_for(self.project, ref.database)
        with db.connect(dsn) as conn:
            db.check_tables(conn, tables, ref.signal_table, ref.publication)
            return Pending(ref, dsn, tuple(tables), db.slot_pid(conn, ref.slot))

    def after(self, cluster: Cluster, plan: Plan, results: Sequence[StepResult]) -> tuple[StepResult, ...]:
        with self._lock:
            pending = self._pending.pop(cluster.name, [])
        ok = {r.name for r in results if r.ok}
        return tuple(
            self._signal(p)
            if p.ref.connector in ok
            else StepResult(p.ref.connector, "snapshot", False, "source update failed: no signal sent")
            for p in pending
        )

    def _signal(self, p: Pending) -> StepResult:
        try:
            with db.connect(p.dsn) as conn:
                db.wait_slot_active(conn, p.ref.slot, self.slot_timeout_s, not_pid=p.old_pid)
                signal = execute_snapshot(p.ref.database, p.tables)
                db.insert_signal(conn, p.ref.signal_table, signal)
        except HephaestusError as exc:
            return StepResult(p.ref.connector, "snapshot", False, str(exc))
        return StepResult(p.ref.connector, "snapshot", True, f"signal {signal.id}: {', '.join(p.tables)}")

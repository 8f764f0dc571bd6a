"""A reconcile's incremental snapshot (snapshot.hooks) through the PostgreSQL edge's seam: the
new tables checked before any write, and after it one signal once a *new* walsender holds the
slot; a source update that failed sends none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import POSTGRES_SOURCE
from hephaestus.project import Cluster, Database, Project
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import KeyChange, Plan, Step
from hephaestus.snapshot.hooks import SnapshotHooks, new_tables
from tests.unit.pgfake import Server, on

CONFIG = {
    "connector.class": POSTGRES_SOURCE,
    "database.dbname": "bob",
    "slot.name": "bob_slot",
    "table.include.list": "public.users,public.orders",
    "signal.data.collection": "public.dbz_signal",
}
CLUSTER = Cluster("c", "http://c.test:8083", Path("c"))


def plan(config: dict[str, str] = CONFIG) -> Plan:
    change = KeyChange("table.include.list", "public.users", config["table.include.list"])
    return Plan("c", (Step("update", "bob_source", config=config, changes=(change,)),))


def server(pids: list[int | None], pk: bool = True) -> Server:
    """The source database: every table exists, `pk` says whether they have a primary key, and
    the slot's walsender is each of `pids` in turn (the last one stays)."""

    def slot(text: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
        if "FROM pg_replication_slots" not in text:
            return None
        pid = pids.pop(0) if len(pids) > 1 else pids[0]
        return [(pid,)]

    return Server(
        handlers=[
            on(r"^SELECT to_regclass", [("t",)]),
            on(r"FROM pg_index", [(1,)] if pk else []),
            slot,
            on(r"^INSERT INTO", []),
        ]
    )


def hooks() -> SnapshotHooks:
    project = Project("p.yaml", {"c": CLUSTER}, {"bob": Database("bob", "dbname=bob")})
    return SnapshotHooks(project, slot_timeout_s=1.0)


def test_only_the_tables_an_update_adds_are_new() -> None:
    assert new_tables(plan().steps[0]) == ["public.orders"]
    assert new_tables(Step("create", "x", config=CONFIG)) == []


def reconciled(db: Server, updated: bool) -> tuple[StepResult, list[str]]:
    """Hooks around a reconcile whose source update succeeded (or not): the snapshot's result,
    and the INSERTs the source database saw."""
    h = hooks()
    with pg.seam(db.connect):
        h.prepare(CLUSTER, plan())
        update = StepResult("bob_source", "update", updated, "RUNNING" if updated else "FAILED")
        (result,) = h.after(CLUSTER, plan(), [update])
    return result, [s for s in db.statements if s.startswith("INSERT INTO")]


def test_after_the_update_one_signal_goes_once_a_new_walsender_holds_the_slot() -> None:
    result, inserts = reconciled(server([111, 111, 222]), True)
    assert result.ok and result.detail.endswith(": public.orders"), result
    assert len(inserts) == 1 and '"public"."dbz_signal"' in inserts[0]


def test_a_failed_update_sends_no_signal() -> None:
    result, inserts = reconciled(server([111]), False)
    assert not result.ok and result.detail == "source update failed: no signal sent"
    assert not inserts


def test_a_slot_the_old_walsender_keeps_times_out_and_nothing_is_sent() -> None:
    result, inserts = reconciled(server([111]), True)
    assert not result.ok and "did not become active" in result.detail
    assert not inserts


def test_a_new_table_without_a_primary_key_stops_the_run_before_any_write() -> None:
    with pg.seam(server([111], pk=False).connect), pytest.raises(HephaestusError, match="has no primary key"):
        hooks().prepare(CLUSTER, plan())

"""`accuracy --deep --repair`'s executors (hephaestus.accuracy.mend) where a table cannot be
repaired, through the PostgreSQL seam: nothing to repair, a sink that never catches up (the
bounded wait), and a read that fails while planning. The databases are test_accuracy_shared's
(tests/unit/pgfake.py underneath: a statement they do not know fails the test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from hephaestus import pg
from hephaestus.accuracy import mend
from hephaestus.accuracy import repair as rp
from hephaestus.accuracy.run import AccuracyOptions
from hephaestus.generator.definitions import load_definitions
from hephaestus.project import load_project
from tests.unit.test_accuracy_shared import Db, Snapshotter, drifted, factory, world, writes


class Clock:
    """A fake monotonic clock: sleeping moves it on, nothing waits for real."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def repair(tmp_path: Path, dbs: dict[str, Db], how: mend.RepairOptions, signal: Any) -> rp.RepairReport:
    project = load_project(tmp_path / "hephaestus.yaml")
    defs = load_definitions(tmp_path / "definitions")
    with pg.seam(factory(dbs)):
        return mend.repair(project, defs, AccuracyOptions(deep=True), how, signal)


def test_tables_that_match_are_not_repaired_nor_compared_again(tmp_path: Path) -> None:
    dbs = world(tmp_path, ("a",), {"a": {"1": "ann"}, "auth": {"1": "ann"}})
    signal = Snapshotter(dbs)
    done = repair(tmp_path, dbs, mend.RepairOptions(), signal)
    assert done.tables == () and done.after is None and done.exit_code == 0
    assert signal.sent == [] and writes(dbs) == []


class Lost(Snapshotter):
    """A signal Debezium never acts on (its connector stopped): the sink never changes."""

    def __call__(self, connector: str, table: str, where: str) -> str:
        self.sent.append(where)
        return f"signal-{len(self.sent)}"


def test_a_sink_that_never_catches_up_stops_the_tables_repair_after_its_first_batch(tmp_path: Path) -> None:
    dbs = world(tmp_path, ("a",), drifted())
    clock = Clock()
    how = mend.RepairOptions(batch_keys=2, timeout_s=5, interval_s=1, clock=clock, sleep=clock.sleep)
    signal = Lost(dbs)
    done = repair(tmp_path, dbs, how, signal)
    (table,) = done.tables
    assert signal.sent == ["\"id\" IN (E'2', E'4')"], "no further batch sent"
    assert table.signals == ("signal-1",) and table.extra_deleted == 0
    assert table.error == (
        "signal signal-1: 2 of 2 keys still differ at the sink after 5s "
        "(is the source connector running, and its sink?): no further batch sent"
    )
    assert clock.slept == pytest.approx([0.2, 0.4, 0.8, 1, 1, 1, 0.6]) and done.exit_code == 1  # bounded: 5 s in all
    assert writes(dbs) == []


class Cancelled(Db):
    """A source whose read-back of some keys is cancelled (statement_timeout)."""

    def __init__(self, tables: dict[str, dict[object, str]], slots: tuple[str, ...]) -> None:
        super().__init__(tables, slots)
        self.handlers.insert(0, self.cancel)

    def cancel(self, text: str, params: list[Any]) -> None:
        if " IN (" in text:
            raise psycopg.errors.QueryCanceled("canceling statement due to statement timeout\nCONTEXT: x")


def test_a_read_that_fails_while_planning_leaves_that_table_unrepaired_naming_why(tmp_path: Path) -> None:
    """With --delete-extra the plan reads which extras the source holds; that read fails."""
    dbs = world(tmp_path, ("a",), drifted())
    dbs["a"] = Cancelled(dbs["a"].tables, dbs["a"].slots)
    signal = Snapshotter(dbs)
    done = repair(tmp_path, dbs, mend.RepairOptions(delete_extra=True, timeout_s=1, interval_s=0), signal)
    (table,) = done.tables
    assert table == rp.TableRepair(
        "a.public.users → auth.public.users", error="canceling statement due to statement timeout"
    )
    assert signal.sent == [] and writes(dbs) == [] and done.exit_code == 1

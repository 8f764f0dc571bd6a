"""`hephaestus slots` as json, with its metrics, and `--drop-orphan`, end to end in-process on
test_status_run.py's world: Connect on the loopback double, PostgreSQL through the seam
(tests/unit/pgfake.py: `bob_slot`, the source's, over its limit, and `old`, inactive, no
source's). `pg_drop_replication_slot(name)` answers a void row, as PostgreSQL's does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hephaestus.cli import run
from tests.connect_double import ConnectDouble
from tests.unit import test_status_run
from tests.unit.pgfake import Server, on

world = test_status_run.world
DROP = "SELECT pg_drop_replication_slot(%s)"
World = tuple[Path, ConnectDouble, Server]


def test_slots_as_json_lists_each_slot_with_its_owner(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    project, _, _ = world
    assert run(["slots", "--project", str(project), "-o", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    by_slot = {s["slot"]: s for s in doc["slots"]}
    assert (by_slot["bob_slot"]["owner"], by_slot["bob_slot"]["verdict"]) == ("c/bob_source", "over_limit"), doc
    assert (by_slot["old"]["owner"], by_slot["old"]["active"]) == (None, False) and doc["errors"] == []


def test_slots_writes_its_metrics_for_the_textfile_collector(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, _, _ = world
    textfile = tmp_path / "slots.prom"
    assert run(["slots", "--project", str(project), "--metrics-textfile", str(textfile)]) == 2
    text = textfile.read_text()
    assert 'hephaestus_slot_active{database="bob",slot="bob_slot"} 1.0' in text, text
    assert 'hephaestus_slot_active{database="bob",slot="old"} 0.0' in text


def test_an_orphan_slot_is_dropped_once_and_said_so(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    project, _, database = world
    database.handlers.append(on(r"^SELECT pg_drop_replication_slot", [("",)]))
    code = run(["slots", "--project", str(project), "--drop-orphan", "old", "--yes"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out == "dropped slot old of database bob\n" and database.statements.count(DROP) == 1


def test_a_slot_a_source_uses_is_never_dropped(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    project, _, database = world
    code = run(["slots", "--project", str(project), "--drop-orphan", "bob_slot", "--yes"])
    assert code == 2 and "refused" in capsys.readouterr().err
    assert DROP not in database.statements

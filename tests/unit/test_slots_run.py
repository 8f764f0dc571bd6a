"""`slots` and the schema dump through the PostgreSQL edge's seam (tests/pgfake.py) and the
Connect double: which slot is whose, what an unreadable database does, and a drop audited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from hephaestus import pg, pgschema
from hephaestus.connect import ConnectClient
from hephaestus.errors import HephaestusError
from hephaestus.fleet import read
from hephaestus.http import RetryPolicy
from hephaestus.project import Cluster, Database, Project
from hephaestus.safety.gate import Allow, Refused
from hephaestus.slots import run
from tests.connect_double import ConnectDouble
from tests.unit.pgfake import GIB, SOURCE, Server, on


def row(name: str, active: bool, retained: int | None, db: str = "bob") -> tuple[Any, ...]:
    return (name, "pgoutput", active, retained, retained, "reserved", db, 4_096)


def world(tmp_path: Path, rows: list[tuple[Any, ...]]) -> tuple[Project, Server, ConnectDouble]:
    double = ConnectDouble()
    cluster = Cluster("c", "http://c.test:8083", tmp_path / "connectors")
    project = Project("p.yaml", {"c": cluster}, {"bob": Database("bob", "dbname=bob")}, base=tmp_path)
    server = Server(handlers=[on(r"FROM pg_replication_slots", rows), on(r"pg_drop_replication_slot", [("",)])])
    return project, server, double


def factory(double: ConnectDouble) -> Any:
    def make(cluster: Cluster) -> ConnectClient:
        return ConnectClient(cluster.url, transport=httpx.MockTransport(double), retry=RetryPolicy.immediate(1))

    return make


def test_a_slot_named_by_a_live_source_is_its_and_one_nobody_names_is_an_orphan(tmp_path: Path) -> None:
    project, server, double = world(tmp_path, [row("bob_slot", True, 10), row("old_slot", False, GIB)])
    double.add("bob_source", SOURCE, type="source")
    with pg.seam(server.connect):
        listed = read.live_configs(project, client_factory=factory(double))
        found = read.report(project, listed=listed)
    verdicts = {j.slot.name: (j.owner, j.verdict) for j in found.judged}
    assert verdicts == {"bob_slot": ("c/bob_source", "ok"), "old_slot": (None, "orphan")}
    assert server.connects[0]["application_name"] == "hephaestus slots" and found.errors == ()


def test_a_source_declared_in_git_owns_its_slot_before_it_runs(tmp_path: Path) -> None:
    project, server, double = world(tmp_path, [row("bob_slot", False, 5)])
    (tmp_path / "connectors" / "source").mkdir(parents=True)
    (tmp_path / "connectors" / "source" / "bob_source.json").write_text(
        json.dumps({"name": "bob_source", "config": SOURCE})
    )
    with pg.seam(server.connect):
        found = read.report(project, listed=read.live_configs(project, client_factory=factory(double)))
    (judged,) = found.judged
    assert judged.owner == "c/bob_source (in git)" and judged.verdict != "orphan"


def test_an_unreadable_database_is_reported_and_no_slot_is_called_an_orphan_while_blind(tmp_path: Path) -> None:
    project, server, double = world(tmp_path, [row("old_slot", False, GIB)])
    down = Server(refuse="could not connect: Connection refused")
    with pg.seam(down.connect):
        found, errors = read.read_all(project)
    assert found == {} and errors == ["database bob: could not connect: Connection refused"]
    with pg.seam(server.connect):
        blind = read.report(project, listed=({}, ["cluster c: unreachable"]))
    (judged,) = blind.judged
    assert judged.verdict == "inactive" and "readable clusters" in judged.reason


def test_an_orphan_is_dropped_only_through_the_gate_and_audited_before_and_after(tmp_path: Path) -> None:
    project, server, double = world(tmp_path, [row("bob_slot", False, GIB), row("old_slot", False, GIB)])
    double.add("bob_source", SOURCE, state="STOPPED", type="source")
    project = Project("p.yaml", project.clusters, project.databases, audit_log=tmp_path / "a.jsonl", base=tmp_path)
    with pg.seam(server.connect):
        found = read.report(project, listed=read.live_configs(project, client_factory=factory(double)))
        with pytest.raises(Refused, match="bob_slot"):  # a source could still use it: whatever is allowed
            run.clear_drop(found, "bob", "bob_slot", Allow(every=True))
        judged, cleared = run.clear_drop(found, "bob", "old_slot", Allow())  # --drop-orphan is the consent
        run.drop(project, "bob", "old_slot", judged, cleared)
    assert "SELECT pg_drop_replication_slot(%s)" in server.statements
    outcomes = [json.loads(line)["outcome"] for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert outcomes == ["intent", "ok"]


def test_a_drop_the_database_refuses_is_audited_as_failed(tmp_path: Path) -> None:
    project, server, double = world(tmp_path, [row("old_slot", False, GIB)])
    project = Project("p.yaml", project.clusters, project.databases, audit_log=tmp_path / "a.jsonl", base=tmp_path)
    with pg.seam(server.connect):
        found = read.report(project, listed=read.live_configs(project, client_factory=factory(double)))
        judged, cleared = run.clear_drop(found, "bob", "old_slot", Allow(every=True))
    server.handlers = []  # the drop statement is now unknown: the fake refuses it
    with pg.seam(server.connect), pytest.raises(HephaestusError, match="^slot old_slot not dropped: "):
        run.drop(project, "bob", "old_slot", judged, cleared)
    entries = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [e["outcome"] for e in entries] == ["intent", "failed"]


def test_the_schema_dump_builds_a_catalog_with_keys_in_key_order() -> None:
    columns = [("public", "users", "id", "text"), ("public", "users", "org", "text"), ("public", "t", "x", "int")]
    keys = [("public", "users", "org"), ("public", "users", "id")]
    server = Server(handlers=[on(r"FROM information_schema.columns", columns), on(r"FROM pg_index", keys)])
    with pg.seam(server.connect):
        catalog = pgschema.dump("host=db", "bob")
    assert server.connects[0]["dbname"] == "bob"
    users = next(t for ref, t in catalog.tables.items() if ref.table == "users")
    assert users.primary_key == ("org", "id") and [c.name for c in users.columns] == ["id", "org"]


def test_a_schema_that_cannot_be_read_names_the_database() -> None:
    server = Server(refuse='FATAL: database "bob" does not exist')
    with pg.seam(server.connect), pytest.raises(HephaestusError, match="^cannot read schema of database 'bob': FATAL"):
        pgschema.dump("host=db", "bob")

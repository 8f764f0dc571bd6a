"""Where the deployment's state lives: one backend per project, files or PostgreSQL (the
latter through the PostgreSQL edge's seam; tests/stack covers the real server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hephaestus import pg
from hephaestus.project import Database, Project
from hephaestus.settings import StateSettings
from hephaestus.state import schema
from hephaestus.state.audit import AuditUnavailable, Journal
from hephaestus.state.backend import FileBackend, PgBackend, backend_for, heal_store, journal_for, ownership_store
from hephaestus.state.heal import HealBusy, HealFile, HealTable
from hephaestus.state.lock import FileLock, Holder, LockBusy, PgLock
from hephaestus.state.ownership import Claim, OwnershipFile, OwnershipTable, OwnershipUnavailable, claims_of
from tests.unit.pgfake import Server, on

PARTS = ("lock", "ownership", "heal", "audit")


@pytest.fixture(autouse=True)
def fresh() -> None:
    schema.forget()


def project(tmp_path: Path, state: StateSettings = StateSettings(), audit_log: Path | None = None) -> Project:
    dbs = {"s": Database("s", "host=db dbname=s")}
    return Project("p.yaml", {}, dbs, audit_log=audit_log, base=tmp_path, state=state)


def test_without_a_database_every_part_is_a_file_on_this_machine(tmp_path: Path) -> None:
    p = project(tmp_path, audit_log=tmp_path / "audit.jsonl")
    assert {backend_for(p, part) for part in PARTS} == {FileBackend(tmp_path / ".hephaestus", tmp_path / "audit.jsonl")}
    assert isinstance(ownership_store(p), OwnershipFile)
    heal = heal_store(p, None)
    assert isinstance(heal, HealFile) and heal.path == tmp_path / ".hephaestus/heal-state.json"
    assert journal_for(p, "c", "r").path == tmp_path / "audit.jsonl"
    lock = backend_for(p, "lock").lock("connect http://c:8083")
    assert isinstance(lock, FileLock) and lock.path.parent == tmp_path / ".hephaestus/locks"


def test_a_state_database_keeps_every_part(tmp_path: Path) -> None:
    p = project(tmp_path, StateSettings("s"), audit_log=tmp_path / "audit.jsonl")
    assert {backend_for(p, part) for part in PARTS} == {PgBackend("host=db dbname=s")}
    assert isinstance(ownership_store(p), OwnershipTable) and isinstance(heal_store(p, None), HealTable)
    journal = journal_for(p, "c", "r")
    assert (journal.dsn, journal.path) == ("host=db dbname=s", None), "the database wins over audit_log"
    assert isinstance(backend_for(p, "lock").lock("k"), PgLock)


def test_a_state_file_given_on_the_command_line_wins_over_the_database(tmp_path: Path) -> None:
    heal = heal_store(project(tmp_path, StateSettings("s")), tmp_path / "h.json")
    assert isinstance(heal, HealFile) and heal.path == tmp_path / "h.json"


def test_a_state_database_missing_from_the_project_is_named(tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"database 'nowhere' is not in p.yaml \(databases:\): the ownership record"):
        ownership_store(project(tmp_path, StateSettings("nowhere")))


def test_an_unreachable_ownership_table_is_unavailable_not_empty() -> None:
    server = Server(refuse="could not connect to server: Connection refused")
    with pg.seam(server.connect), pytest.raises(OwnershipUnavailable, match=r"^ownership record \(database\): could"):
        OwnershipTable("dbname=s").owned("p", "c")


def test_ownership_claims_go_to_the_table_in_one_transaction() -> None:
    server = Server(handlers=[on(r"^INSERT INTO hephaestus_ownership", [])])
    seen: list[list[list[str]]] = []

    class Cursor:
        def __enter__(self) -> Cursor:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def executemany(self, query: str, rows: list[list[str]]) -> None:
            # The statement as the table's columns and key need it (a strict server would refuse
            # anything else; so does this stand-in).
            assert query == (
                "INSERT INTO hephaestus_ownership (project, cluster, connector, scope, how, run_id) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (project, cluster, connector) DO UPDATE "
                "SET scope = excluded.scope, how = excluded.how, run_id = excluded.run_id, since = now()"
            ), query
            seen.append(rows)

    def connect(dsn: str, **options: object) -> object:
        conn = server.connect(dsn, **options)
        conn.cursor = Cursor  # type: ignore[attr-defined]
        return conn

    with pg.seam(connect):
        OwnershipTable("dbname=s").claim("p", "c", claims_of(["b", "a"], "*", "created", "r1"))
    assert seen[0] == [["p", "c", "a", "*", "created", "r1"], ["p", "c", "b", "*", "created", "r1"]]
    assert server.connects[0]["autocommit"] is False
    assert server.versions["ownership"] == 1


def test_a_heal_run_finds_the_heal_lock_held_and_restarts_nothing() -> None:
    server = Server(handlers=[on(r"pg_try_advisory_lock", [(False,)]), on(r"FROM hephaestus_lock_holders", [])])
    with pg.seam(server.connect), pytest.raises(HealBusy, match="another heal run holds the heal lock"):
        HealTable("dbname=s").__enter__()


def test_a_held_cluster_lock_names_its_holder() -> None:
    row = ("run9", "heal", "pod-1", 7, "2026-12-02T05:00:00+00:00")
    server = Server(handlers=[on(r"pg_try_advisory_lock", [(False,)]), on(r"FROM hephaestus_lock_holders", [row])])
    lock = PgLock("dbname=s", "connect http://c:8083")
    with pg.seam(server.connect), pytest.raises(LockBusy, match="locked by run run9 \\(heal\\) on pod-1 pid 7"):
        with lock.held(Holder("me", "reconcile").now(), 0.0):
            pass
    assert server.connects[0]["options"] == pg.KEEPALIVES


def test_an_audit_table_that_refuses_stops_the_run_before_any_write() -> None:
    server = Server(refuse="FATAL: role does not exist")
    with pg.seam(server.connect), pytest.raises(AuditUnavailable, match="audit table hephaestus_audit cannot be"):
        Journal(None, "r", "c", "dbname=s").check()


def test_a_clean_exit_unlocks_before_the_session_ends() -> None:
    """The server ends a closed session on its own time: the unlock is what frees the lock at once."""
    server = Server(
        handlers=[
            on(r"pg_try_advisory_lock", [(True,)]),
            on(r"^INSERT INTO hephaestus_lock_holders", []),
            on(r"pg_advisory_unlock", [(True,)]),
        ]
    )
    with pg.seam(server.connect), PgLock("dbname=s", "heal").held(Holder("r", "heal").now(), 0.0):
        assert not any("pg_advisory_unlock" in s for s in server.statements)
    assert server.statements[-1] == "SELECT pg_advisory_unlock(%s, hashtext(%s))"


def test_the_ownership_table_reads_each_row_as_a_claim_of_its_project_and_cluster() -> None:
    from datetime import UTC, datetime

    since = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)
    rows = [("a", "*", "created", "r1", since), ("b", "x_*", "releasing 0123", "r2", since)]
    seen: list[list[object]] = []

    def owned(text: str, params: list[object]) -> list[tuple[object, ...]] | None:
        if not text.startswith("SELECT connector, scope, how, run_id, since FROM hephaestus_ownership"):
            return None
        assert text.endswith("FROM hephaestus_ownership WHERE project = %s AND cluster = %s"), text
        seen.append(params)
        return rows

    server = Server(handlers=[owned])
    with pg.seam(server.connect):
        claims = OwnershipTable("dbname=s").owned("proj", "c")
    assert seen == [["proj", "c"]]
    assert claims == {
        "a": Claim("a", "*", "created", "r1", "2026-12-02T05:00:00+00:00"),
        "b": Claim("b", "x_*", "releasing 0123", "r2", "2026-12-02T05:00:00+00:00"),
    }


def test_a_release_deletes_only_the_named_connectors_of_its_project_and_cluster() -> None:
    seen: list[list[object]] = []

    def delete(text: str, params: list[object]) -> list[tuple[object, ...]] | None:
        if not text.startswith("DELETE FROM hephaestus_ownership WHERE project = %s AND cluster = %s"):
            return None
        seen.append(params)
        return []

    server = Server(handlers=[delete])
    with pg.seam(server.connect):
        OwnershipTable("dbname=s").release("proj", "c", iter(["a", "b"]))
    assert seen == [["proj", "c", ["a", "b"]]] and "connector = ANY(%s)" in server.statements[-1]

"""The PostgreSQL edge (hephaestus.pg) and the state tables' migrations, through the seam."""

from __future__ import annotations

import psycopg
import pytest

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.secrets import REDACTOR
from hephaestus.state import schema
from tests.unit.pgfake import Server

CANARY = "pg-canary-5f1e"


@pytest.fixture(autouse=True)
def fresh() -> None:
    schema.forget()


def test_a_connection_gets_the_timeout_the_name_and_keepalives_only_when_asked() -> None:
    server = Server()
    with pg.seam(server.connect):
        pg.connect("dbname=x", "x").close()
        pg.connect("dbname=x", "x", keepalives=True, application="hephaestus heal", autocommit=False).close()
    plain, held = server.connects
    assert plain == {"dsn": "dbname=x", "autocommit": True, "connect_timeout": 10, "application_name": "hephaestus"}
    assert held["options"] == pg.KEEPALIVES and held["autocommit"] is False
    assert held["application_name"] == "hephaestus heal"


def test_a_refused_connection_is_one_redacted_line_naming_what_failed() -> None:
    REDACTOR.learn(CANARY)
    server = Server(refuse=f'connection to server failed: password "{CANARY}" rejected\nDETAIL: more\nHINT: x')
    with pg.seam(server.connect), pytest.raises(pg.DatabaseError) as caught:
        pg.connect("dbname=x", "lock database: cannot connect")
    text = str(caught.value)
    assert text.startswith("lock database: cannot connect: connection to server failed: password ") and "\n" not in text
    assert CANARY not in text and text.endswith(" rejected")
    assert isinstance(caught.value, HephaestusError)


def test_errors_in_a_session_take_the_callers_error_class_and_close_the_connection() -> None:
    class Unavailable(HephaestusError):
        pass

    server = Server()
    with pg.seam(server.connect), pytest.raises(Unavailable, match=r"^record: the fake does not know: SELECT 1$"):
        with pg.session("dbname=x", "record", error=Unavailable) as conn:
            conn.execute("SELECT 1")
    assert conn.closed


def test_an_error_that_is_not_the_drivers_passes_through_untouched() -> None:
    with pytest.raises(KeyError), pg.errors("x"):
        raise KeyError("k")


def test_a_new_database_runs_every_migration_once_per_process() -> None:
    server = Server()
    with pg.seam(server.connect):
        for _ in range(3):
            with pg.session("dbname=s", "state") as conn:
                schema.ensure(conn, "ownership")
    creates = [s for s in server.statements if s.startswith("CREATE TABLE IF NOT EXISTS hephaestus_ownership")]
    assert len(creates) == 1 and server.versions == {"ownership": len(schema.MIGRATIONS["ownership"])}
    assert server.statements[0] == f"SELECT pg_advisory_xact_lock({schema.DDL_LOCK}, 0)" or server.statements[
        0
    ].startswith("SELECT pg_advisory_xact_lock")


def test_a_database_at_the_latest_version_runs_no_ddl_but_the_version_table() -> None:
    server = Server(versions={part: len(steps) for part, steps in schema.MIGRATIONS.items()})
    with pg.seam(server.connect), pg.session("dbname=s", "state") as conn:
        for part in schema.MIGRATIONS:
            schema.ensure(conn, part)
    tables = [s for s in server.statements if s.startswith("CREATE TABLE IF NOT EXISTS hephaestus_")]
    assert tables == [s for s in tables if s.startswith("CREATE TABLE IF NOT EXISTS hephaestus_schema")]


def test_a_database_migrated_by_a_newer_release_is_refused() -> None:
    server = Server(versions={"audit": len(schema.MIGRATIONS["audit"]) + 1})
    with pg.seam(server.connect), pg.session("dbname=s", "state") as conn:
        with pytest.raises(pg.DatabaseError, match="the audit tables are at version 2, this hephaestus knows 1"):
            schema.ensure(conn, "audit")
    assert server.versions["audit"] == 2, "a newer release's version is never written back down"


def test_every_part_has_migrations_and_version_one_is_what_earlier_releases_created() -> None:
    assert set(schema.MIGRATIONS) == {"lock", "ownership", "prints", "heal", "audit", "ledger"}
    for steps in schema.MIGRATIONS.values():
        assert steps[0].startswith("CREATE TABLE IF NOT EXISTS hephaestus_")


def test_a_driver_error_class_is_psycopgs_root() -> None:
    assert pg.driver_errors() == (psycopg.Error,)

"""The state database's heal records and fingerprints (hephaestus.state.heal.HealTable,
hephaestus.state.prints.PrintsTable) through the PostgreSQL seam (tests/unit/pgfake.py): the
statements each sends, what it reads back, and what a failure becomes.

From PostgreSQL's documentation: `pg_try_advisory_lock` answers a boolean, a session's advisory
locks end with it, a `jsonb` column reads back as a dict (psycopg), a table that does not exist
is `UndefinedTable`; `executemany` runs one statement per row of parameters."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from hephaestus import pg
from hephaestus.errors import InputError
from hephaestus.state.heal import HealBusy, HealTable
from hephaestus.state.prints import PrintsTable, PrintsUnavailable
from hephaestus.state.records import HealRecord
from tests.unit import pgfake
from tests.unit.pgfake import Server, on

LOCK = [on(r"^SELECT pg_try_advisory_lock", [(True,)]), on(r"^INSERT INTO hephaestus_lock_holders", [])]
UNLOCK = on(r"^SELECT pg_advisory_unlock", [(True,)])
SELECT = "SELECT connector, record FROM hephaestus_heal_state WHERE cluster = %s"


class Heal(Server):
    """A state database holding heal's rows `{(cluster, connector): record}`."""

    def __init__(self, rows: dict[tuple[str, str], object]) -> None:
        super().__init__(handlers=[*LOCK, UNLOCK, self.answer])
        self.rows = rows

    def answer(self, text: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
        if text == SELECT:
            return [(n, r) for (c, n), r in sorted(self.rows.items()) if c == params[0]]
        if text == "DELETE FROM hephaestus_heal_state WHERE cluster = %s":
            self.rows = {k: v for k, v in self.rows.items() if k[0] != params[0]}
            return []
        if text.startswith("INSERT INTO hephaestus_heal_state (cluster, connector, record) VALUES"):
            self.rows[(params[0], params[1])] = params[2].obj  # a Jsonb wraps the object
            return []
        return None


def test_heal_records_are_saved_as_one_row_per_connector_and_read_back() -> None:
    db = Heal({("c", "old"): {"count": 9}, ("other", "x"): {"count": 1}})
    with pg.seam(db.connect), HealTable("dbname=s") as table:
        table.save("c", {"a": HealRecord(2, 10.5, None, 1)})
        got = table.load("c")
    assert got == {"a": HealRecord(2, 10.5, None, 1)}
    assert db.rows == {("c", "a"): {"count": 2, "last_restart": 10.5, "unassigned_since": None, "notified": 1}} | {
        ("other", "x"): {"count": 1}
    }, "the cluster's rows replaced, another cluster's kept"
    assert db.statements[-1].startswith("SELECT pg_advisory_unlock"), "unlocked before the session ends"
    lock, heal = db.connects
    assert lock["application_name"].startswith("hephaestus heal ") and lock["options"] == pg.KEEPALIVES
    assert heal["application_name"] == "hephaestus heal" and "options" not in heal


def test_a_row_that_is_no_object_is_left_out_and_unknown_fields_are_ignored() -> None:
    db = Heal({("c", "a"): {"count": 3, "later": "field"}, ("c", "b"): "garbage"})
    with pg.seam(db.connect), HealTable("dbname=s") as table:
        assert table.load("c") == {"a": HealRecord(count=3)}


def test_peek_reads_on_its_own_session_without_the_heal_lock() -> None:
    db = Heal({("c", "a"): {"count": 1}})
    with pg.seam(db.connect):
        assert HealTable("dbname=s").peek("c") == {"a": HealRecord(count=1)}
    assert db.statements == [SELECT] and db.connects[0]["application_name"] == "hephaestus status"


def test_peek_before_heal_ever_ran_is_no_records_and_another_error_is_named() -> None:
    def missing(text: str, params: list[Any]) -> None:
        raise psycopg.errors.UndefinedTable('relation "hephaestus_heal_state" does not exist')

    with pg.seam(Server(handlers=[missing]).connect):
        assert HealTable("dbname=s").peek("c") == {}
    with pg.seam(Server(refuse="FATAL: password authentication failed").connect), pytest.raises(pg.DatabaseError) as e:
        HealTable("dbname=s").peek("c")
    assert str(e.value) == "heal state database: FATAL: password authentication failed"


def test_a_heal_state_database_that_fails_after_the_lock_releases_the_lock() -> None:
    def refuse_heal(text: str, params: list[Any]) -> None:
        if "hephaestus_heal_state" in text:
            raise psycopg.errors.InsufficientPrivilege("permission denied for schema public")

    db = Server(handlers=[*LOCK, UNLOCK, refuse_heal])
    with pg.seam(db.connect), pytest.raises(pg.DatabaseError, match="^heal state database: permission denied"):
        HealTable("dbname=s").__enter__()
    assert db.statements[-1].startswith("SELECT pg_advisory_unlock")


def test_a_held_heal_lock_is_busy() -> None:
    db = Server(handlers=[on(r"pg_try_advisory_lock", [(False,)]), on(r"FROM hephaestus_lock_holders", [])])
    with pg.seam(db.connect), pytest.raises(HealBusy):
        HealTable("dbname=s").__enter__()


def test_the_heal_table_is_used_as_a_context_manager() -> None:
    with pytest.raises(AssertionError, match="use the store as a context manager"):
        HealTable("dbname=s").load("c")


# -- fingerprints

READ_PRINTS = "SELECT connector, prints FROM hephaestus_prints WHERE project = %s AND cluster = %s"


class Cursor:
    def __init__(self, conn: pgfake.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def executemany(self, query: str, rows: list[list[Any]]) -> None:
        for params in rows:
            self.conn.execute(query, params)


class WithCursor(pgfake.Connection):
    def cursor(self) -> Cursor:
        return Cursor(self)


class Prints(Server):
    def __init__(self, rows: list[tuple[Any, ...]] | None = None) -> None:
        super().__init__(
            handlers=[on("^" + READ_PRINTS.replace("(", r"\(").replace(")", r"\)"), rows or []), self.upsert]
        )
        self.written: list[tuple[str, list[Any]]] = []

    def upsert(self, text: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
        if not text.startswith("INSERT INTO hephaestus_prints"):
            return None
        self.written.append((text.split(" ON CONFLICT ")[1], [*params[:3], params[3].obj]))
        return []

    def connect(self, dsn: str, **options: Any) -> pgfake.Connection:
        self.connects.append({"dsn": dsn, **options})
        return WithCursor(self)


def test_prints_are_read_with_the_salt_kept_apart() -> None:
    db = Prints([("", {"salt": "ab12"}), ("src", {"resolved:pw": "f1"})])
    with pg.seam(db.connect):
        assert PrintsTable("dbname=s").read("p", "c") == ("ab12", {"src": {"resolved:pw": "f1"}})
    assert db.connects[0]["autocommit"] is False


def test_a_salt_that_is_not_hex_is_corrupt() -> None:
    with pg.seam(Prints([("", {"salt": "not hex"})]).connect), pytest.raises(InputError, match="salt is corrupt"):
        PrintsTable("dbname=s").read("p", "c")


def test_prints_are_written_salt_first_and_only_once_then_each_connector_replaced() -> None:
    db = Prints()
    with pg.seam(db.connect):
        PrintsTable("dbname=s").write("p", "c", {"b": {"git:pw": "2"}, "a": {"git:pw": "1"}, "": {"salt": "x"}}, "ab")
    assert db.written == [
        ("(project, cluster, connector) DO NOTHING", ["p", "c", "", {"salt": "ab"}]),
        (
            "(project, cluster, connector) DO UPDATE SET prints = excluded.prints, updated_at = now()",
            ["p", "c", "a", {"git:pw": "1"}],
        ),
        (
            "(project, cluster, connector) DO UPDATE SET prints = excluded.prints, updated_at = now()",
            ["p", "c", "b", {"git:pw": "2"}],
        ),
    ]


def test_an_unreachable_prints_table_is_unavailable() -> None:
    with pg.seam(Server(refuse="connection refused").connect), pytest.raises(PrintsUnavailable) as raised:
        PrintsTable("dbname=s").read("p", "c")
    assert str(raised.value) == "fingerprint record (database): connection refused"

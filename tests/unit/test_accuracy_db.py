"""An accuracy run's databases (hephaestus.accuracy.db) through the PostgreSQL seam
(tests/unit/pgfake.py): the session each side opens, the catalogue reads, the probes, slot lag,
and the statements one side of a comparison sends, with what it makes of the answers.

The answers' shapes are PostgreSQL's: `pg_attribute`/`pg_index` rows, `pg_wal_lsn_diff` as a
numeric (NULL for a slot never flushed), a `sum` of bigints as a numeric (psycopg: Decimal),
`hash_record_extended` missing before PostgreSQL 14 (UndefinedFunction), an empty run of a
SELECT still describing its columns (`cursor.description`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import psycopg
import pytest

from hephaestus import pg
from hephaestus.accuracy import db, queries
from hephaestus.accuracy.queries import TableQuery
from hephaestus.errors import HephaestusError
from hephaestus.generator.model import TableRef
from hephaestus.project import Database, Project
from tests.unit import pgfake
from tests.unit.pgfake import Server, on

USERS = TableRef("public", "users")


class Recorder(Server):
    """A database answering from `answers` (statement → rows), recording each statement's params."""

    def __init__(self, answers: dict[str, list[tuple[Any, ...]]]) -> None:
        super().__init__(handlers=[self.answer])
        self.answers = answers
        self.sent: list[tuple[str, list[Any]]] = []

    def answer(self, text: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
        self.sent.append((text, params))
        return self.answers.get(text)


def conn_of(server: Server) -> db.Connection:
    return server.connect("dbname=x")  # type: ignore[return-value]


# -- where a database is, and the session a side opens


def test_two_names_for_one_database_are_one_place_and_an_unknown_name_is_itself() -> None:
    dbs = {
        "a": Database("a", "host=h port=5433 dbname=bob"),
        "b": Database("b", "dbname=bob port=5433 host=h"),
        "c": Database("c", "host=h dbname=eve"),
    }
    place = db.place_of(Project("p.yaml", {}, dbs))
    assert place("a") == place("b") == ("h", "5433", "bob")
    assert place("c") == ("h", "", "eve") and place("Other") == "other"


def test_a_dsn_libpq_cannot_parse_is_its_own_place_left_for_the_connection_to_refuse() -> None:
    place = db.place_of(Project("p.yaml", {}, {"a": Database("a", "host='unterminated")}))
    assert place("a") == "host='unterminated"


def test_dsn_for_is_none_for_a_database_not_in_the_project() -> None:
    project = Project("p.yaml", {}, {"a": Database("a", "dbname=a")})
    assert db.dsn_for(project, "a") == "dbname=a" and db.dsn_for(project, "zz") is None


def test_a_side_is_a_read_only_repeatable_read_session_with_pinned_text_forms() -> None:
    server = Server(handlers=[on(r"^SELECT set_config\('TimeZone'", [("UTC",)])])
    with pg.seam(server.connect):
        conn = db.connect("dbname=bob", "bob")
    assert server.connects == [
        {"dsn": "dbname=bob", "autocommit": False, "connect_timeout": 10, "application_name": "hephaestus accuracy"}
    ]
    assert conn.isolation_level == psycopg.IsolationLevel.REPEATABLE_READ and conn.read_only is True
    assert server.statements == [" ".join(db._SESSION.split())]


def test_a_side_that_cannot_connect_names_its_database() -> None:
    with pg.seam(Server(refuse="connection refused\nDETAIL: d").connect), pytest.raises(pg.DatabaseError) as raised:
        db.connect("dbname=bob", "bob")
    assert str(raised.value) == "cannot connect to database bob: connection refused"


# -- a table's shape


COLUMNS = " ".join(db._COLUMNS.split())
PRIMARY_KEY = " ".join(db._PRIMARY_KEY.split())


def test_inspect_reads_columns_in_order_their_collations_types_and_the_key_in_key_order() -> None:
    server = Recorder(
        {
            COLUMNS: [("id", "integer", None), ("name", "text", "en_US.utf8"), ("at", "timestamp(3)", None)],
            PRIMARY_KEY: [("name",), ("id",)],
        }
    )
    info = db.inspect(conn_of(server), "bob", USERS)
    assert info == db.TableInfo(
        ("id", "name", "at"),
        {"id": None, "name": "en_US.utf8", "at": None},
        ("name", "id"),
        {"id": "integer", "name": "text", "at": "timestamp(3)"},
    )
    assert server.sent == [(COLUMNS, ["public", "users"]), (PRIMARY_KEY, ["public", "users"])]


def test_inspect_of_a_table_that_does_not_exist_names_it_and_its_database() -> None:
    server = Recorder({COLUMNS: []})
    with pytest.raises(HephaestusError, match=r"^table public\.users does not exist in database bob$"):
        db.inspect(conn_of(server), "bob", USERS)
    assert [text for text, _ in server.sent] == [COLUMNS], "no key read for a missing table"


class Column:
    def __init__(self, name: str) -> None:
        self.name = name


class Described(pgfake.Connection):
    """A connection whose results describe their columns, as a cursor's `description` does."""

    columns: tuple[str, ...] = ()

    def execute(self, query: Any, params: list[Any] | None = None) -> pgfake.Result:
        result = super().execute(query, params)
        result.description = [Column(n) for n in self.columns]  # type: ignore[attr-defined]
        return result


def expectation(columns: tuple[str, ...]) -> tuple[Described, Server]:
    server = Server(handlers=[on(r"^SELECT \* FROM \(", [])])
    conn = Described(server)
    conn.columns = columns
    return conn, server


def test_an_expectations_columns_come_from_an_empty_run_of_it_comment_and_percent_kept_apart() -> None:
    conn, server = expectation(("id", "total"))
    query = "SELECT id, sum(n) AS total FROM t WHERE s LIKE 'a%' GROUP BY id -- per id"
    info = db.inspect_expectation(conn, "ks", query)  # type: ignore[arg-type]
    assert info == db.TableInfo(("id", "total"), {"id": None, "total": None}, ())
    (sent,) = server.statements
    assert sent == f"SELECT * FROM ({query.replace('%', '%%')} ) AS heph_expected LIMIT 0"


def test_an_expectation_returning_a_column_twice_is_refused_naming_it() -> None:
    conn, _ = expectation(("id", "n", "id", "n", "x"))
    with pytest.raises(HephaestusError, match=r"^the expectation on ks returns column\(s\) id, n more than once$"):
        db.inspect_expectation(conn, "ks", "SELECT 1")  # type: ignore[arg-type]


# -- the hash probes and slot lag


def test_the_probes_read_each_servers_hash_of_the_fixed_values() -> None:
    server = Recorder({queries.HASH_PROBE: [(Decimal("-42"),)], queries.RECORD_PROBE: [(7,)]})
    assert db.hash_probe(conn_of(server)) == db.HashProbe(-42, 7)


def test_a_server_without_the_record_hash_probes_none_for_it_and_keeps_its_snapshot() -> None:
    """PostgreSQL < 14 has no hash_record_extended: the probe's savepoint is rolled back."""

    def older(text: str, params: list[Any]) -> list[tuple[Any, ...]]:
        if text == queries.RECORD_PROBE:
            raise psycopg.errors.UndefinedFunction("function hash_record_extended(record, integer) does not exist")
        return [(5,)]

    conn = conn_of(Server(handlers=[older]))
    assert db.hash_probe(conn) == db.HashProbe(5, None)
    assert not conn.closed


def test_a_probe_with_no_row_is_none() -> None:
    assert db.hash_probe(conn_of(Recorder({queries.HASH_PROBE: [], queries.RECORD_PROBE: []}))) == db.HashProbe(
        None, None
    )


def test_slots_are_the_current_databases() -> None:
    listing = "SELECT slot_name FROM pg_replication_slots WHERE database = current_database()"
    server = Recorder({listing: [("a_slot",), ("b_slot",)]})
    assert db.slots(conn_of(server)) == ["a_slot", "b_slot"]


LAG = " ".join(db._LAG.split())


@pytest.mark.parametrize(
    ("rows", "lag"),
    [
        ([(Decimal("1048576"),)], 1048576),
        ([(Decimal("-16"),)], 0),  # confirmed ahead of a standby's replay: nothing behind
        ([(None,)], None),  # never flushed
        ([], None),  # the slot is gone
    ],
)
def test_slot_lag_is_the_unconfirmed_wal_in_bytes(rows: list[tuple[Any, ...]], lag: int | None) -> None:
    server = Recorder({LAG: rows})
    assert db.slot_lag(conn_of(server), "bob_slot") == lag
    assert server.sent == [(LAG, ["bob_slot"])]


# -- one side of a comparison


HASH = 'hashtextextended(ROW("id"::text, "name"::text)::text, 0)'
NO_SORT = "SELECT set_config('enable_sort', 'off', false)"


def side(answers: dict[str, list[tuple[Any, ...]]], expect: str = "") -> tuple[db.PgSide, Recorder]:
    server = Recorder({NO_SORT: [("off",)], **answers})
    query = TableQuery(USERS, ("id",), ("id", "name"), expect=expect)
    return db.PgSide(conn_of(server), query), server


def test_a_side_turns_sorting_off_for_its_own_queries_and_counts_its_queries() -> None:
    count = 'SELECT count(*) FROM "public"."users" WHERE TRUE'
    pg_side, server = side({count: [(12,)]})
    assert pg_side.count() == 12 and pg_side.queries == 1
    assert server.sent == [(NO_SORT, []), (count, [])]


def test_checksums_fill_every_segment_the_database_found_no_rows_in_with_zeros() -> None:
    statement = (
        'SELECT CASE WHEN ("id") < (%s) THEN CASE WHEN ("id") < (%s) THEN 0 ELSE 1 END '
        'ELSE CASE WHEN ("id") < (%s) THEN 2 ELSE 3 END END AS seg, '
        f'count(*), coalesce(sum({HASH}), 0) FROM "public"."users" WHERE ("id") >= (%s) GROUP BY 1'
    )
    pg_side, server = side({statement: [(0, 3, Decimal("-9")), (3, 1, Decimal("12345678901234567890"))]})
    got = pg_side.checksums((("a",), None), [("f",), ("m",), ("t",)])
    assert got == [(3, -9), (0, 0), (0, 0), (1, 12345678901234567890)]
    assert server.sent[-1] == (statement, ["m", "f", "t", "a"])


def test_checkpoints_are_every_steps_key_of_the_range() -> None:
    statement = (
        'SELECT "id" FROM (SELECT "id", row_number() OVER (ORDER BY "id") AS heph_rn FROM "public"."users" '
        'WHERE ("id") < (%s)) s WHERE heph_rn > 1 AND (heph_rn - 1) %% 100 = 0 ORDER BY heph_rn'
    )
    pg_side, server = side({statement: [("c",), ("k",)]})
    assert pg_side.checkpoints((None, ("z",)), 100) == [("c",), ("k",)]
    assert server.sent[-1] == (statement, ["z"])


def sample(percent: str) -> str:
    return f'SELECT "id" FROM "public"."users" TABLESAMPLE SYSTEM ({percent}) WHERE TRUE ORDER BY "id"'


def test_sampled_cuts_split_the_sampled_keys_evenly() -> None:
    keys = [(str(i),) for i in range(8)]
    pg_side, _ = side({sample("0.2"): keys})
    assert pg_side.sampled_cuts(4, 1_000_000) == [("2",), ("4",), ("6",)]


def test_a_small_table_is_sampled_whole_and_too_few_keys_cut_nothing() -> None:
    pg_side, server = side({sample("100.0"): [("a",), ("b",)]})
    assert pg_side.sampled_cuts(4, 0) == []
    assert server.sent[-1] == (sample("100.0"), [])


def test_an_expectation_has_no_pages_to_sample() -> None:
    pg_side, server = side({}, expect="SELECT 1 AS id, 'a' AS name")
    assert pg_side.sampled_cuts(4, 10) == [] and server.sent == [(NO_SORT, [])] and pg_side.queries == 0


def test_row_hashes_are_keyed_by_the_key_columns() -> None:
    statement = f'SELECT "id", {HASH} FROM "public"."users" WHERE TRUE'
    pg_side, _ = side({statement: [("a", -1), ("b", Decimal("2"))]})
    assert pg_side.row_hashes((None, None)) == {("a",): "-1", ("b",): "2"}


def test_first_keys_are_the_ranges_first_in_key_order() -> None:
    statement = 'SELECT "id" FROM "public"."users" WHERE ("id") >= (%s) AND ("id") < (%s) ORDER BY "id" LIMIT 7'
    pg_side, server = side({statement: [("a",), ("aa",)]})
    assert pg_side.first_keys((("a",), ("b",)), 7) == [("a",), ("aa",)]
    assert server.sent[-1] == (statement, ["a", "b"])


def test_a_statement_the_side_did_not_expect_fails_as_the_database_would() -> None:
    pg_side, _ = side({})
    with pytest.raises(psycopg.errors.SyntaxError):
        pg_side.count()

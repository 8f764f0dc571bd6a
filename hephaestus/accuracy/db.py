"""The databases of an accuracy run (edge: psycopg): connections, table shapes, slot lag, and
one side of a comparison."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from hephaestus import pg
from hephaestus.accuracy import queries
from hephaestus.accuracy.model import Key
from hephaestus.accuracy.queries import Query, Range, TableQuery
from hephaestus.errors import HephaestusError
from hephaestus.generator.model import TableRef
from hephaestus.project import Project

Connection = psycopg.Connection[tuple[object, ...]]

# Values hash by their text form, which these settings shape: pin them on both sides.
_SESSION = (
    "SELECT set_config('TimeZone', 'UTC', false), set_config('DateStyle', 'ISO, YMD', false), "
    "set_config('IntervalStyle', 'postgres', false), set_config('extra_float_digits', '1', false), "
    "set_config('bytea_output', 'hex', false)"
)

_COLUMNS = """
SELECT a.attname, format_type(a.atttypid, NULL),
       CASE WHEN a.attcollation = 0 THEN NULL
            WHEN c.collname = 'default' THEN (SELECT datcollate FROM pg_database WHERE datname = current_database())
            ELSE c.collname END
FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation
WHERE a.attrelid = to_regclass(format('%%I.%%I', %s::text, %s::text)) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""

_PRIMARY_KEY = """
SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indisprimary AND i.indrelid = to_regclass(format('%%I.%%I', %s::text, %s::text))
ORDER BY array_position(i.indkey::int2[], a.attnum)
"""

# A standby has no current WAL position of its own: use what it has replayed.
_LAG = """
SELECT pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
                       confirmed_flush_lsn)::bigint
FROM pg_replication_slots WHERE slot_name = %s
"""


def dsn_for(project: Project, database: str) -> str | None:
    """The project's DSN for `database` with its password resolved (None: not in the project).
    Without a password reference libpq's own means apply (PGPASSWORD, ~/.pgpass)."""
    return project.dsn(database) if database in project.databases else None


def place_of(project: Project) -> Callable[[str], object]:
    """What a database name stands for: the server and database its project DSN names (two
    names for one database are one place), else the name (another deployment's database)."""

    def place(name: str) -> object:
        found = project.databases.get(name)
        if found is None:
            return name.casefold()
        try:
            parts = conninfo_to_dict(found.dsn)
        except psycopg.ProgrammingError:  # unparsable here: the connection will say so
            return found.dsn
        return (parts.get("host") or "", parts.get("port") or "", parts.get("dbname") or name)

    return place


def connect(dsn: str, database: str) -> Connection:
    """A read-only REPEATABLE READ session: every query of a side sees one snapshot."""
    conn = pg.connect(
        dsn, f"cannot connect to database {database}", autocommit=False, application="hephaestus accuracy"
    )
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    conn.read_only = True
    conn.execute(_SESSION)
    return conn


@dataclass(frozen=True)
class TableInfo:
    columns: tuple[str, ...]
    collations: dict[str, str | None]
    primary_key: tuple[str, ...]
    types: dict[str, str] = field(default_factory=dict)  # column -> type name without modifiers


def inspect(conn: Connection, database: str, table: TableRef) -> TableInfo:
    """Columns (in table order), their collations and the primary key of a live table."""
    rows = conn.execute(_COLUMNS, [table.schema, table.table]).fetchall()
    if not rows:
        raise HephaestusError(f"table {table} does not exist in database {database}")
    key = conn.execute(_PRIMARY_KEY, [table.schema, table.table]).fetchall()
    return TableInfo(
        tuple(str(r[0]) for r in rows),
        {str(r[0]): _opt(r[2]) for r in rows},
        tuple(str(r[0]) for r in key),
        {str(r[0]): str(r[1]) for r in rows},
    )


def inspect_expectation(conn: Connection, database: str, query: str) -> TableInfo:
    """The columns an expectation's SELECT returns, read from an empty run of it (types and
    collations unknown: its rows hash by their text form)."""
    # The newline ends a trailing `-- comment` of the query before the parenthesis.
    cur = conn.execute(
        sql.SQL("SELECT * FROM ({}\n) AS heph_expected LIMIT 0").format(sql.SQL(query.replace("%", "%%"))), []
    )
    names = tuple(c.name for c in cur.description or ())
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise HephaestusError(f"the expectation on {database} returns column(s) {', '.join(twice)} more than once")
    return TableInfo(names, {n: None for n in names}, ())


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class HashProbe:
    """This server's fast hash of a fixed text, and its record hash of one value of each type
    hashed natively (None for what it lacks: PostgreSQL < 11, < 14)."""

    text: int | None
    record: int | None


def hash_probe(conn: Connection) -> HashProbe:
    return HashProbe(_probe(conn, queries.HASH_PROBE), _probe(conn, queries.RECORD_PROBE))


def _probe(conn: Connection, query: str) -> int | None:
    try:
        with conn.transaction():  # a savepoint: a missing function must not end the snapshot
            row = conn.execute(query).fetchone()
    except psycopg.errors.UndefinedFunction:
        return None
    return None if row is None else int(str(row[0]))


def slots(conn: Connection) -> list[str]:
    rows = conn.execute("SELECT slot_name FROM pg_replication_slots WHERE database = current_database()")
    return [str(r[0]) for r in rows.fetchall()]


def slot_lag(conn: Connection, slot: str) -> int | None:
    """Bytes of WAL the slot has not confirmed (None when the slot is gone or never flushed)."""
    row = conn.execute(_LAG, [slot]).fetchone()
    return None if row is None or row[0] is None else max(int(str(row[0])), 0)


class PgSide:
    """One side of a comparison on a live table (implements `bisect.Side`)."""

    def __init__(self, conn: Connection, query: TableQuery) -> None:
        self.conn = conn
        self.query = query
        self.queries = 0
        # The planner reads a per-range GROUP BY as one group per key and sorts a million rows
        # (spilling to disk) where hashing a few dozen groups does. Only our own queries follow.
        conn.execute("SELECT set_config('enable_sort', 'off', false)")

    def _fetch(self, q: Query) -> list[tuple[object, ...]]:
        self.queries += 1
        return self.conn.execute(q[0], q[1]).fetchall()

    def count(self) -> int:
        return int(str(self._fetch(queries.count(self.query))[0][0]))

    def checksums(self, rng: Range, cuts: Sequence[Key]) -> list[tuple[int, int]]:
        out = [(0, 0)] * (len(cuts) + 1)
        for seg, rows, total in self._fetch(queries.checksums(self.query, rng, cuts)):
            out[int(str(seg))] = (int(str(rows)), int(str(total)))
        return out

    def checkpoints(self, rng: Range, step: int) -> list[Key]:
        return [tuple(r) for r in self._fetch(queries.checkpoints(self.query, rng, step))]

    def sampled_cuts(self, parts: int, rows: int) -> list[Key]:
        """About `parts - 1` cut points of the whole table from a page sample (~500 rows a part);
        none for an expectation (a query has no pages to sample: the caller cuts exactly)."""
        if self.query.expect:
            return []
        keys = [tuple(r) for r in self._fetch(queries.sampled_keys(self.query, min(100.0, 5e4 * parts / max(rows, 1))))]
        if len(keys) < parts:
            return []
        return [keys[len(keys) * i // parts] for i in range(1, parts)]

    def row_hashes(self, rng: Range) -> dict[Key, str]:
        return {tuple(r[:-1]): str(r[-1]) for r in self._fetch(queries.row_hashes(self.query, rng))}

    def first_keys(self, rng: Range, limit: int) -> list[Key]:
        return [tuple(r) for r in self._fetch(queries.first_keys(self.query, rng, limit))]

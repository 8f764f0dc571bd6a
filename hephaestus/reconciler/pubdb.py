"""Publications in the source databases (edge: psycopg): read one, apply a planned change."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hephaestus.errors import HephaestusError, first_line
from hephaestus.reconciler.publications import Change, Published


def read(dsn: str, database: str, publication: str, named: Iterable[str]) -> Published:
    """The publication's tables, and which of the `named` tables (captured, signal) do not exist."""
    names = sorted(named)
    with _connect(dsn, database) as conn:
        absent = frozenset(
            str(r[0])
            for r in conn.execute(
                "SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(format('%%I.%%I', split_part(t, '.', 1), "
                "split_part(t, '.', 2))) IS NULL",
                [names],
            ).fetchall()
        )
        row = conn.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s", [publication]).fetchone()
        if row is None:
            return Published(False, absent=absent)
        tables = conn.execute(
            "SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = %s", [publication]
        ).fetchall()
    return Published(True, frozenset(str(t[0]) for t in tables), bool(row[0]), absent)


def alter(dsn: str, change: Change) -> None:
    """One transaction per publication: all of its tables change, or none."""
    from psycopg import sql

    pub = sql.Identifier(change.publication)
    with _connect(dsn, change.database) as conn, conn.transaction():
        for verb, tables in (("ADD", change.add), ("DROP", change.drop)):
            if tables:
                conn.execute(
                    sql.SQL("ALTER PUBLICATION {} " + verb + " TABLE {}").format(
                        pub, sql.SQL(", ").join(table_ident(t) for t in tables)
                    )
                )


def table_ident(name: str) -> Any:
    """`users` or `public.users` as the quoted identifier `"public"."users"` (also for snapshots)."""
    from psycopg import sql

    schema, _, table = name.rpartition(".")
    return sql.Identifier(schema or "public", table)


class _connect:
    """A short autocommit session; every psycopg error becomes one line naming the database."""

    def __init__(self, dsn: str, database: str) -> None:
        self.dsn, self.database = dsn, database

    def __enter__(self) -> Any:
        import psycopg  # only a project with source databases pays for the import

        try:
            self.conn = psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=10, application_name="hephaestus publications"
            )
        except psycopg.Error as exc:
            raise HephaestusError(f"database {self.database}: {first_line(exc)}") from exc
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        import psycopg

        self.conn.close()
        if isinstance(exc, psycopg.Error):
            raise HephaestusError(f"database {self.database}: {first_line(exc)}") from exc

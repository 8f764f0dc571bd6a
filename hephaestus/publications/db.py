"""Publications in the source databases (edge: psycopg): read what the sources need, apply a
planned change (reconcile's apply runs it: `reconciler.prepare`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.fleet.model import Desired, Live
from hephaestus.pg import table_ident
from hephaestus.project import Project
from hephaestus.publications import change as publications
from hephaestus.publications.change import PublicationChange, Publications, Published


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


def alter(dsn: str, change: PublicationChange) -> None:
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


def _connect(dsn: str, database: str) -> AbstractContextManager[Any]:
    """A short autocommit session; every driver error becomes one line naming the database."""
    return pg.session(dsn, f"database {database}", application="hephaestus publications")


def published(project: Project, desired: Mapping[str, Desired], live: Mapping[str, Live]) -> Publications:
    """Each publication the sources need, read from the source database the project names (one
    it does not name is left alone, with a warning; one that cannot be read stops its sources)."""
    found = publications.sources(desired, live)
    state: dict[tuple[str, str], Published] = {}
    warnings: list[str] = []
    problems: publications.Problems = {}
    for database, pub in sorted({(s.database, s.publication) for s in found}):
        users = [s.connector for s in found if (s.database, s.publication) == (database, pub)]
        named = {t for s in found if s.connector in users for t in (*s.tables, s.signal_table) if t}
        if database not in project.databases:
            warnings.append(
                f"publication {pub} of database {database} not checked ({', '.join(users)}): "
                f"add {database} to the project's databases for publication upkeep"
            )
            continue
        try:
            state[(database, pub)] = read(project.dsn(database, "publication upkeep"), database, pub, named)
        except HephaestusError as exc:
            problems.update({u: {"publication.name": (f"cannot read publication {pub}: {exc}",)} for u in users})
    return Publications(state, tuple(warnings), problems)

"""A stand-in for a psycopg connection, handed to the PostgreSQL edge's seam (hephaestus.pg).

As strict as the server where the code under test relies on it: a statement it does not know
raises (so a changed query fails the test instead of passing on a guess), a closed connection
refuses work, and errors are real `psycopg.Error` subclasses (the edge maps those). It keeps
the state the state package's tables need: the schema versions and the statements run.
Behaviours follow PostgreSQL 17's documentation (transactions, advisory locks).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg


@dataclass
class Result:
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows


Handler = Callable[[str, list[Any]], list[tuple[Any, ...]] | None]

GIB = 1 << 30
# A Debezium source of the database `bob` and its slot, as the slot tests read it.
SOURCE = {
    "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "database.dbname": "bob",
    "slot.name": "bob_slot",
    "topic.prefix": "bob",
}


@dataclass
class Server:
    """One database: what every connection to it sees."""

    versions: dict[str, int] = field(default_factory=dict)
    statements: list[str] = field(default_factory=list)
    handlers: list[Handler] = field(default_factory=list)
    refuse: str | None = None  # connecting raises OperationalError with this message
    connects: list[dict[str, Any]] = field(default_factory=list)

    def connect(self, dsn: str, **options: Any) -> Connection:
        if self.refuse is not None:
            raise psycopg.OperationalError(self.refuse)
        self.connects.append({"dsn": dsn, **options})
        return Connection(self)


@dataclass
class Info:
    host: str = "fake"
    port: int = 5432
    dbname: str = "state"


class Connection:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.closed = False
        self.info = Info(dbname=str(id(server)))
        # An AdaptContext, as psycopg.sql needs to render identifiers (default encoding).
        self.adapters = psycopg.adapters
        self.connection = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.closed = True

    @contextmanager
    def transaction(self) -> Iterator[None]:
        yield

    def execute(self, query: Any, params: list[Any] | None = None) -> Result:
        if self.closed:
            raise psycopg.OperationalError("the connection is closed")
        rendered = query.as_string(self) if hasattr(query, "as_string") else str(query)
        text = " ".join(rendered.split())
        self.server.statements.append(text)
        return Result(self._answer(text, list(params or [])))

    def _answer(self, text: str, params: list[Any]) -> list[tuple[Any, ...]]:
        for handler in self.server.handlers:
            rows = handler(text, params)
            if rows is not None:
                return rows
        if text.startswith(("SELECT pg_advisory_xact_lock", "CREATE TABLE IF NOT EXISTS")):
            return []
        if text.startswith("SELECT version FROM hephaestus_schema"):
            at = self.server.versions.get(params[0])
            return [] if at is None else [(at,)]
        if text.startswith("INSERT INTO hephaestus_schema"):
            self.server.versions[params[0]] = params[1]
            return []
        raise psycopg.errors.SyntaxError(f"the fake does not know: {text[:80]}")


def on(pattern: str, rows: list[tuple[Any, ...]]) -> Handler:
    """A handler answering statements that match `pattern` with `rows`."""
    return lambda text, params: rows if re.search(pattern, text) else None

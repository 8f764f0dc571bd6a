"""The source database side of a snapshot (edge: psycopg): checks, publication, slot, signal row."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ContextDecorator

import psycopg
from psycopg import sql

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import SIGNAL_TABLE_DDL
from hephaestus.pg import table_ident as _ident
from hephaestus.polling import Bound, until
from hephaestus.snapshot.signal import Signal


def _db_errors(what: str) -> ContextDecorator:
    """A driver error (lost connection, no privilege, a changed table) becomes one clean error,
    its DETAIL kept (a check's reason is there); used as a decorator."""
    return pg.errors(f"source database: {what} failed", HephaestusError, whole=True)


def connect(dsn: str) -> psycopg.Connection[tuple[object, ...]]:
    conn: psycopg.Connection[tuple[object, ...]] = pg.connect(
        dsn, "cannot connect to the source database", application="hephaestus snapshot"
    )
    return conn


@_db_errors("checking the tables")
def check_tables(
    conn: psycopg.Connection[tuple[object, ...]], tables: Sequence[str], signal_table: str, publication: str
) -> None:
    """Everything a signal needs, checked before anything is written."""
    if not _exists(conn, signal_table):
        ddl = SIGNAL_TABLE_DDL.format(table=signal_table, publication=publication)
        raise HephaestusError(f"signal table {signal_table} does not exist; create it with: {ddl}")
    for table in tables:
        if not _exists(conn, table):
            raise HephaestusError(f"table {table} does not exist in the source database")
        if not _has_primary_key(conn, table):
            raise HephaestusError(
                f"table {table} has no primary key: an incremental snapshot chunks by "
                "key and Debezium would skip it (NO_PRIMARY_KEY)"
            )


def _exists(conn: psycopg.Connection[tuple[object, ...]], table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s)", [str(_ident(table).as_string(conn))]).fetchone()
    return bool(row and row[0])


def _has_primary_key(conn: psycopg.Connection[tuple[object, ...]], table: str) -> bool:
    query = "SELECT 1 FROM pg_index i WHERE i.indisprimary AND i.indrelid = to_regclass(%s)"
    return conn.execute(query, [str(_ident(table).as_string(conn))]).fetchone() is not None


@_db_errors("reading the replication slot")
def slot_pid(conn: psycopg.Connection[tuple[object, ...]], slot: str) -> int | None:
    row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", [slot]).fetchone()
    return int(str(row[0])) if row and row[0] is not None else None


@_db_errors("waiting for the replication slot")
def wait_slot_active(
    conn: psycopg.Connection[tuple[object, ...]],
    slot: str,
    timeout_s: float,
    not_pid: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    interval_s: float = 0.5,
) -> int:
    """Poll until a walsender holds the slot (and, after a restart, a new one): its pid."""

    def holder() -> int | None:
        pid = slot_pid(conn, slot)
        return pid if pid is not None and pid != not_pid else None

    found = until(holder, Bound(timeout_s, interval_s, clock))
    if found is None:
        raise HephaestusError(
            f"replication slot {slot} did not become active within {timeout_s:.0f}s "
            "(is the source connector running?); no signal was written"
        )
    return found


@_db_errors("inserting the signal")
def insert_signal(conn: psycopg.Connection[tuple[object, ...]], signal_table: str, signal: Signal) -> None:
    query = sql.SQL("INSERT INTO {} (id, type, data) VALUES (%s, %s, %s)").format(_ident(signal_table))
    conn.execute(query, list(signal.row()))

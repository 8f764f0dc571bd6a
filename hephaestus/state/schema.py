"""The state tables, created and migrated in one place, versioned (edge: PostgreSQL).

Each part of the deployment's state (the lock holders, the ownership record and its fingerprints, heal's
records, the audit journal) has a list of migrations; `hephaestus_schema` remembers how many of them a
database has run. Version 1 of every part is the `CREATE TABLE IF NOT EXISTS` that earlier
releases ran on every connection, so a database they created is taken over as it is.

`CREATE TABLE IF NOT EXISTS` is not safe against itself: two sessions creating one table at
the same moment can fail with a unique violation on `pg_type` (two runs starting together
did, in CI). So every migration runs under one transaction-level advisory lock. A process
migrates a database once: later connections find it in `_done` and skip the round trips.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from hephaestus.pg import DatabaseError

DDL_LOCK = 0x48455044  # "HEPD": table creation, apart from every cluster lock

MIGRATIONS: dict[str, tuple[str, ...]] = {
    "lock": (
        """CREATE TABLE IF NOT EXISTS hephaestus_lock_holders (
  key text PRIMARY KEY, run_id text NOT NULL, host text NOT NULL, pid integer NOT NULL,
  command text NOT NULL, since timestamptz NOT NULL)""",
    ),
    "ownership": (
        """CREATE TABLE IF NOT EXISTS hephaestus_ownership (
  project text NOT NULL, cluster text NOT NULL, connector text NOT NULL, scope text NOT NULL,
  how text NOT NULL, run_id text NOT NULL, since timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project, cluster, connector))""",
    ),
    "heal": (
        """CREATE TABLE IF NOT EXISTS hephaestus_heal_state (
  cluster text NOT NULL, connector text NOT NULL, record jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (cluster, connector))""",
    ),
    "prints": (
        """CREATE TABLE IF NOT EXISTS hephaestus_prints (
  project text NOT NULL, cluster text NOT NULL, connector text NOT NULL, prints jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (project, cluster, connector))""",
    ),
    "ledger": (
        """CREATE TABLE IF NOT EXISTS hephaestus_offsets_ledger (
  id bigserial PRIMARY KEY, project text NOT NULL, cluster text NOT NULL, connector text NOT NULL,
  taken_at timestamptz NOT NULL, record jsonb NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS hephaestus_offsets_ledger_by_connector "
        "ON hephaestus_offsets_ledger (project, connector, taken_at)",
    ),
    "audit": (
        "CREATE TABLE IF NOT EXISTS hephaestus_audit (id bigserial PRIMARY KEY, "
        "ts timestamptz NOT NULL DEFAULT now(), run_id text NOT NULL, cluster text NOT NULL, "
        "connector text, entry jsonb NOT NULL)",
    ),
}
_VERSIONS = """CREATE TABLE IF NOT EXISTS hephaestus_schema (
  part text PRIMARY KEY, version integer NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())"""

_done: set[tuple[str, str]] = set()
_guard = threading.Lock()


def ensure(conn: Any, part: str) -> None:
    """Bring `part`'s tables in the connected database to the latest version."""
    key = (_database_of(conn), part)
    with _guard:
        if key in _done:
            return
    _migrate(conn, part)
    with _guard:
        _done.add(key)


def _migrate(conn: Any, part: str) -> None:
    steps = MIGRATIONS[part]
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", [DDL_LOCK])
        conn.execute(_VERSIONS)
        row = conn.execute("SELECT version FROM hephaestus_schema WHERE part = %s", [part]).fetchone()
        at = int(row[0]) if row else 0
        if at > len(steps):  # a newer release migrated it: its tables may mean what we cannot read
            raise DatabaseError(
                f"state database: the {part} tables are at version {at}, this hephaestus knows "
                f"{len(steps)}: run a release at least as new as the one that migrated them"
            )
        for ddl in steps[at:]:
            conn.execute(ddl)
        conn.execute(
            "INSERT INTO hephaestus_schema (part, version) VALUES (%s, %s) ON CONFLICT (part) "
            "DO UPDATE SET version = excluded.version, updated_at = now()",
            [part, len(steps)],
        )


def _database_of(conn: Any) -> str:
    """Which database a connection is on, without its password (the key of `_done`)."""
    info = getattr(conn, "info", None)
    where = f"{getattr(info, 'host', '')}:{getattr(info, 'port', '')}/{getattr(info, 'dbname', '')}"
    return hashlib.sha256(where.encode()).hexdigest()[:16]


def forget() -> None:
    """Tests: migrate again on the next connection (a test dropped the tables)."""
    with _guard:
        _done.clear()

"""Where heal remembers restart counts between cron runs, under a lock (edge).

A PostgreSQL table in a configured database for the cron job (pods come and go), a local JSON
file for one-off runs. The lock is taken without waiting: a second heal run at the same time
finds it held and restarts nothing, so no connector is restarted twice.
"""

from __future__ import annotations

import fcntl
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import IO, Protocol

import psycopg
from psycopg.types.json import Jsonb

from hephaestus.errors import HephaestusError, InputError
from hephaestus.heal.policy import Record
from hephaestus.lock import create_table
from hephaestus.yamlsrc import clip, load_json, save_json

Records = dict[str, Record]


class HealBusy(HephaestusError):
    """Another heal run holds the lock."""


class StateStore(Protocol):
    def __enter__(self) -> StateStore: ...
    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
    def load(self, cluster: str) -> Records: ...
    def peek(self, cluster: str) -> Records: ...
    def save(self, cluster: str, records: Records) -> None: ...


def _record(raw: dict[str, object]) -> Record:
    return Record(**{k: v for k, v in raw.items() if k in Record.__dataclass_fields__})  # type: ignore[arg-type]


class FileStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: IO[str] | None = None

    def __enter__(self) -> FileStore:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.path.with_suffix(".lock"), "w")  # noqa: SIM115 - held until exit
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._lock.close()
            raise HealBusy(f"another heal run holds {self.path.with_suffix('.lock')}") from exc
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._lock:
            self._lock.close()  # closing releases the flock

    def _all(self) -> dict[str, dict[str, dict[str, object]]]:
        if not self.path.exists():
            return {}
        data = load_json(self.path)  # unreadable, not JSON, a directory: an InputError naming it
        problem = _shape_problem(data)
        if problem:
            # Guessing would restart what the budget forbids, or forget a backoff: stop instead.
            raise InputError(str(self.path), f"heal state is corrupt ({problem}): repair or delete the file")
        checked: dict[str, dict[str, dict[str, object]]] = data
        return checked

    def load(self, cluster: str) -> Records:
        return {name: _record(raw) for name, raw in self._all().get(cluster, {}).items()}

    def peek(self, cluster: str) -> Records:
        """The records as last saved, without the heal lock (the file is replaced atomically):
        for `status`, which must not wait for, or block, a heal run."""
        return self.load(cluster)

    def save(self, cluster: str, records: Records) -> None:
        data = self._all()
        data[cluster] = {name: asdict(r) for name, r in sorted(records.items())}
        save_json(self.path, data)


def _shape_problem(data: object) -> str | None:
    """What is wrong with a state file's data ({cluster: {connector: record}}), if anything."""
    if not isinstance(data, dict):
        return "expected an object of clusters"
    for cluster, records in data.items():
        if not isinstance(records, dict) or not all(isinstance(r, dict) for r in records.values()):
            return f"cluster {clip(cluster)}: expected an object of connector records"
        for name, raw in records.items():
            bad = [k for k, kinds in _FIELDS.items() if k in raw and not _is(raw[k], kinds)]
            if bad:
                return f"{clip(cluster)}/{clip(name)}: {bad[0]} has the wrong type"
    return None


def _is(value: object, kinds: tuple[type, ...]) -> bool:
    return isinstance(value, kinds) and not isinstance(value, bool)


# Record's fields and the JSON types each may hold (None: JSON null).
_FIELDS: dict[str, tuple[type, ...]] = {
    "count": (int,),
    "last_restart": (int, float, type(None)),
    "unassigned_since": (int, float, type(None)),
    "notified": (int,),
}


_DDL = """CREATE TABLE IF NOT EXISTS hephaestus_heal_state (
  cluster text NOT NULL, connector text NOT NULL, record jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (cluster, connector))"""
_LOCK_KEY = 0x4E45_414C  # one advisory lock for every heal run against this database


class PgStore:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None

    def __enter__(self) -> PgStore:
        try:
            self._conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise HephaestusError(f"heal state database: {exc}") from exc
        row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK_KEY]).fetchone()
        if not row or not row[0]:
            self._conn.close()
            raise HealBusy("another heal run holds the heal lock (pg advisory lock)")
        create_table(self._conn, _DDL)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._conn:
            self._conn.close()  # ending the session releases the advisory lock

    def _db(self) -> psycopg.Connection[tuple[object, ...]]:
        assert self._conn is not None, "use the store as a context manager"
        return self._conn

    def peek(self, cluster: str) -> Records:
        """The records as last saved, on a connection of its own and without the heal lock."""
        try:
            with psycopg.connect(self.dsn, autocommit=True, connect_timeout=10) as conn:
                rows = conn.execute(
                    "SELECT connector, record FROM hephaestus_heal_state WHERE cluster = %s", [cluster]
                ).fetchall()
        except psycopg.errors.UndefinedTable:
            return {}  # heal never ran against this database
        except psycopg.Error as exc:
            raise HephaestusError(f"heal state database: {exc}") from exc
        return {str(name): _record(raw) for name, raw in rows if isinstance(raw, dict)}

    def load(self, cluster: str) -> Records:
        rows = (
            self._db()
            .execute("SELECT connector, record FROM hephaestus_heal_state WHERE cluster = %s", [cluster])
            .fetchall()
        )
        return {str(name): _record(raw) for name, raw in rows if isinstance(raw, dict)}

    def save(self, cluster: str, records: Records) -> None:
        with self._db().transaction():
            self._db().execute("DELETE FROM hephaestus_heal_state WHERE cluster = %s", [cluster])
            for name, record in records.items():
                self._db().execute(
                    "INSERT INTO hephaestus_heal_state (cluster, connector, record) VALUES (%s, %s, %s)",
                    [cluster, name, Jsonb(asdict(record))],
                )

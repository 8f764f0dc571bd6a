"""Where heal remembers restart counts between cron runs, under a lock (edge).

A PostgreSQL table in the state database for the cron job (pods come and go), a local JSON
file for one-off runs. The heal lock is the state's lock (state.lock) of the key `heal`,
taken without waiting, inside the clusters' locks that heal waits for (`--lock-timeout`):
a second heal of the same clusters waits for the first and then runs on what it left, so
no connector is restarted twice; one of other clusters that finds the records held stops
with exit 1 rather than wait.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from hephaestus import pg
from hephaestus.errors import HephaestusError, InputError
from hephaestus.state import schema
from hephaestus.state.lock import FileLock, Holder, Lock, LockBusy, PgLock, new_run_id
from hephaestus.state.records import HealRecord as Record
from hephaestus.yamlsrc import load_json, named, save_json

Records = dict[str, Record]


class HealBusy(HephaestusError):
    """Another heal run holds the lock."""


class HealStore(Protocol):
    def __enter__(self) -> HealStore: ...
    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
    def load(self, cluster: str) -> Records: ...
    def peek(self, cluster: str) -> Records: ...
    def save(self, cluster: str, records: Records) -> None: ...


def _record(raw: dict[str, object]) -> Record:
    return Record(**{k: v for k, v in raw.items() if k in Record.__dataclass_fields__})  # type: ignore[arg-type]


class _Locked:
    """Holds the heal lock from `__enter__` to `__exit__`, never waiting for it."""

    _stack: ExitStack | None = None

    def _hold(self, lock: Lock, busy: str) -> None:
        stack = ExitStack()
        try:
            stack.enter_context(lock.held(Holder(new_run_id(), "heal").now(), 0.0))
        except LockBusy as exc:
            raise HealBusy(busy) from exc
        self._stack = stack

    def _release(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None


class HealFile(_Locked):
    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> HealFile:
        lock = FileLock(self.path.parent, f"heal {self.path}", self.path.with_suffix(".lock"))
        self._hold(lock, f"another heal run holds {lock.path}")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._release()  # closing the lock file releases the flock

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
            return f"cluster {named(cluster)}: expected an object of connector records"
        for name, raw in records.items():
            bad = [k for k, kinds in _FIELDS.items() if k in raw and not _is(raw[k], kinds)]
            if bad:
                return f"{named(cluster)}/{named(name)}: {bad[0]} has the wrong type"
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


class HealTable(_Locked):
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: Any = None

    def __enter__(self) -> HealTable:
        self._hold(PgLock(self.dsn, "heal"), "another heal run holds the heal lock (pg advisory lock)")
        try:
            self._conn = pg.connect(self.dsn, "heal state database", application="hephaestus heal")
            with pg.errors("heal state database"):
                schema.ensure(self._conn, "heal")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._release()  # ending the lock's session releases the advisory lock

    def _db(self) -> Any:
        assert self._conn is not None, "use the store as a context manager"
        return self._conn

    def peek(self, cluster: str) -> Records:
        """The records as last saved, on a connection of its own and without the heal lock."""
        from psycopg.errors import UndefinedTable

        try:
            with pg.session(self.dsn, "heal state database", application="hephaestus status") as conn:
                return _rows(conn, cluster)
        except pg.DatabaseError as exc:
            if isinstance(exc.__cause__, UndefinedTable):
                return {}  # heal never ran against this database
            raise

    def load(self, cluster: str) -> Records:
        with pg.errors("heal state database"):
            return _rows(self._db(), cluster)

    def save(self, cluster: str, records: Records) -> None:
        from psycopg.types.json import Jsonb

        with pg.errors("heal state database"), self._db().transaction():
            self._db().execute("DELETE FROM hephaestus_heal_state WHERE cluster = %s", [cluster])
            for name, record in records.items():
                self._db().execute(
                    "INSERT INTO hephaestus_heal_state (cluster, connector, record) VALUES (%s, %s, %s)",
                    [cluster, name, Jsonb(asdict(record))],
                )


def _rows(conn: Any, cluster: str) -> Records:
    """A cluster's records as the table holds them (a row that is no JSON object is left out)."""
    rows = conn.execute("SELECT connector, record FROM hephaestus_heal_state WHERE cluster = %s", [cluster])
    return {str(name): _record(raw) for name, raw in rows.fetchall() if isinstance(raw, dict)}

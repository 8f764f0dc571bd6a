"""One actor per cluster: reconcile, heal, snapshot and ksql runs against the same cluster
take its lock first (edge: PostgreSQL or a local file).

The mechanism is a PostgreSQL *session* advisory lock in the project's lock database
(`lock: {database: NAME}`, else heal's state database): it is held exactly as long as the
holder's connection lives, so a crashed holder (a killed pod, kill -9) loses it when its
connection drops — no lease to expire, no clock to trust. TCP keepalives are set on the
server side of the session so a holder that vanished without closing (a node gone) is
noticed within about a minute. Every pod of a deployment reaches that database, so Helm
hooks and the heal CronJob serialise across pods. Without a lock database a file lock
(flock) is the fallback: it serialises runs on one machine only.

A lock is keyed by what it protects (`connect http://host:port`), not by project or state
file, so two project files pointing at the same cluster serialise too. Who holds it (run id,
host, pid, command, since) is recorded beside it, for the message a waiting run prints.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from hephaestus.errors import HephaestusError
from hephaestus.polling import Bound, until
from hephaestus.project import Cluster, Project, normalised_url

POLL_S = 0.5
# Server-side keepalives for the holder's session: a holder that vanished is dropped (and
# its lock released) after about idle + interval × count = 10 + 5 × 4 = 30 s.
_KEEPALIVES = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=4"
_CLASS_ID = 0x48455048  # "HEPH": the advisory lock namespace of hephaestus
_DDL_CLASS_ID = 0x48455044  # "HEPD": table creation, apart from every cluster lock
_DDL = """CREATE TABLE IF NOT EXISTS hephaestus_lock_holders (
  key text PRIMARY KEY, run_id text NOT NULL, host text NOT NULL, pid integer NOT NULL,
  command text NOT NULL, since timestamptz NOT NULL)"""


def create_table(conn: Any, ddl: str) -> None:
    """Run a `CREATE TABLE IF NOT EXISTS`. It is not safe against itself: two sessions creating
    one table at the same moment can fail with a unique violation on `pg_type` (two
    hephaestus runs starting together did, in CI). So the DDL of every hephaestus table is
    serialised on one transaction-level advisory lock."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", [_DDL_CLASS_ID])
        conn.execute(ddl)


class LockBusy(HephaestusError):
    """Another run held the cluster's lock for longer than we were willing to wait."""


@dataclass(frozen=True)
class Holder:
    run_id: str
    command: str
    host: str = socket.gethostname()
    pid: int = os.getpid()
    since: str = ""

    def now(self) -> Holder:
        return Holder(self.run_id, self.command, self.host, self.pid, datetime.now(UTC).isoformat(timespec="seconds"))

    def describe(self) -> str:
        return f"run {self.run_id} ({self.command}) on {self.host} pid {self.pid} since {self.since}"


def resource_key(kind: str, url: str) -> str:
    """`connect http://host:port/path`: one cluster, one key, however it is spelled."""
    return f"{kind} {normalised_url(url)}"


DEFAULT_TIMEOUT_S = 300.0  # longer than a heal run (restart_wait_s 60 s) and a typical apply


def timeout_of(project: Project, flag: float | None) -> float:
    """--lock-timeout, else the project file's lock.timeout_s, else the default."""
    return float(flag if flag is not None else project.lock.get("timeout_s", DEFAULT_TIMEOUT_S))


def new_run_id() -> str:
    """The id a run is known by in the lock holder record and the audit log."""
    return uuid.uuid4().hex[:12]


def urls_lock(
    project: Project, kind: str, urls: Sequence[str], command: str, timeout_s: float, run_id: str | None = None
) -> AbstractContextManager[None]:
    """The locks of the servers (`kind`: connect, ksqldb) a run acts on."""
    keys = [resource_key(kind, url) for url in urls]
    return locked(project, keys, Holder(run_id or new_run_id(), command), timeout_s)


def connect_lock(
    project: Project, clusters: Sequence[Cluster], command: str, timeout_s: float, run_id: str | None = None
) -> AbstractContextManager[None]:
    """The locks of the Connect clusters a run acts on."""
    return urls_lock(project, "connect", [c.url for c in clusters], command, timeout_s, run_id)


@contextmanager
def locked(project: Project, keys: Sequence[str], holder: Holder, timeout_s: float) -> Iterator[None]:
    """Hold every key (taken in sorted order, so two runs never wait on each other crosswise)."""
    dsn = state_dsn(project)
    with ExitStack() as stack:
        for key in sorted(set(keys)):
            lock = PgLock(dsn, key) if dsn else FileLock(project.base / ".hephaestus" / "locks", key)
            stack.enter_context(lock.held(holder.now(), timeout_s))
        yield


def state_dsn(project: Project) -> str | None:
    """The deployment's shared database (lock, ownership record), if it names one."""
    database = project.lock.get("database") or project.heal.get("state", {}).get("database")
    return project.dsn(database, "the cluster lock") if database else None


def _busy(key: str, holder: Holder | None, timeout_s: float) -> LockBusy:
    who = holder.describe() if holder else "another run (holder not recorded)"
    return LockBusy(
        f"{key} is locked by {who}; gave up after waiting {timeout_s:.0f}s "
        "(--lock-timeout); a crashed holder's lock is released when its session ends"
    )


def _taken(attempt: Callable[[], bool], timeout_s: float) -> bool:
    """Try to take a lock held elsewhere every POLL_S until `timeout_s` has passed."""
    return until(lambda: attempt() or None, Bound(timeout_s, POLL_S)) is not None


class PgLock:
    def __init__(self, dsn: str, key: str) -> None:
        self.dsn = dsn
        self.key = key

    @contextmanager
    def held(self, holder: Holder, timeout_s: float) -> Iterator[None]:
        import psycopg  # only runs that take a lock pay for the import

        try:
            conn = psycopg.connect(
                self.dsn,
                autocommit=True,
                connect_timeout=10,
                options=_KEEPALIVES,
                application_name=f"hephaestus {holder.command} {holder.run_id}",
            )
        except psycopg.Error as exc:
            raise HephaestusError(f"lock database: cannot connect: {str(exc).splitlines()[0]}") from exc
        with conn:
            create_table(conn, _DDL)
            if not _taken(lambda: self._try(conn), timeout_s):
                raise _busy(self.key, self._holder(conn), timeout_s)
            conn.execute(
                "INSERT INTO hephaestus_lock_holders VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET run_id = excluded.run_id, host = excluded.host, "
                "pid = excluded.pid, command = excluded.command, since = excluded.since",
                [self.key, holder.run_id, holder.host, holder.pid, holder.command, holder.since],
            )
            yield  # closing the connection ends the session and releases the lock

    def _try(self, conn: Any) -> bool:
        row = conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", [_CLASS_ID, self.key]).fetchone()
        return bool(row and row[0])

    def _holder(self, conn: Any) -> Holder | None:
        row = conn.execute(
            "SELECT run_id, command, host, pid, since FROM hephaestus_lock_holders WHERE key = %s", [self.key]
        ).fetchone()
        if row is None:
            return None
        since = row[4].isoformat(timespec="seconds") if hasattr(row[4], "isoformat") else str(row[4])
        return Holder(str(row[0]), str(row[1]), str(row[2]), int(row[3]), since)


class FileLock:
    def __init__(self, folder: Path, key: str) -> None:
        self.path = folder / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".lock")
        self.key = key

    @contextmanager
    def held(self, holder: Holder, timeout_s: float) -> Iterator[None]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = self.path.open("a+", encoding="utf-8")
        except OSError as exc:
            raise HephaestusError(f"lock file {self.path}: {exc.strerror or exc}") from exc
        with handle:
            if not _taken(lambda: self._try(handle), timeout_s):
                raise _busy(self.key, self._holder(handle), timeout_s)
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps({"key": self.key, **asdict(holder)}))
            handle.flush()
            yield  # closing the file releases the flock (and a dead process's is released too)

    def _try(self, handle: IO[str]) -> bool:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _holder(self, handle: IO[str]) -> Holder | None:
        try:
            handle.seek(0)
            raw = json.loads(handle.read() or "null")
            return Holder(raw["run_id"], raw["command"], raw["host"], int(raw["pid"]), raw["since"])
        except (ValueError, KeyError, TypeError):
            return None

"""One actor per cluster: reconcile, heal, snapshot and ksql runs against the same cluster
take its lock first (edge: PostgreSQL or a local file; chosen by state.backend).

The mechanism is a PostgreSQL *session* advisory lock in the deployment's state database
(`state: {database: NAME}`): it is held exactly as long as the holder's connection lives, so a
crashed holder (a killed pod, kill -9) loses it when its connection drops — no lease to
expire, no clock to trust. The PostgreSQL edge sets server-side keepalives on that session,
so a holder that vanished without closing (a node gone) is noticed within about a minute.
Every pod of a deployment reaches that database, so Helm hooks and the heal CronJob
serialise across pods. Without a state database a file lock (flock) is the fallback: it
serialises runs on one machine only.

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
from typing import IO, Any, Protocol

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.polling import Bound, until
from hephaestus.state import schema
from hephaestus.urls import normalised_url

POLL_S = 0.5
_CLASS_ID = 0x48455048  # "HEPH": the advisory lock namespace of hephaestus


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


def new_run_id() -> str:
    """The id a run is known by in the lock holder record and the audit log."""
    return uuid.uuid4().hex[:12]


class Lock(Protocol):
    key: str

    def held(self, holder: Holder, timeout_s: float) -> AbstractContextManager[None]: ...


@contextmanager
def hold(locks: Sequence[Lock], holder: Holder, timeout_s: float) -> Iterator[None]:
    """Hold every lock (taken in key order, so two runs never wait on each other crosswise)."""
    with ExitStack() as stack:
        for lock in sorted({lock.key: lock for lock in locks}.values(), key=lambda lock: lock.key):
            stack.enter_context(lock.held(holder.now(), timeout_s))
        yield


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
        application = f"hephaestus {holder.command} {holder.run_id}"
        conn = pg.connect(self.dsn, "lock database: cannot connect", keepalives=True, application=application)
        with conn:
            with pg.errors("lock database"):  # only the lock's own calls: the run inside is not ours to label
                self._take(conn, holder, timeout_s)
            try:
                yield
            finally:
                self._release(conn)  # then closing the connection ends the session

    def _release(self, conn: Any) -> None:
        """Unlock before the connection closes: the server ends a closed session on its own time,
        so a run that takes the lock right after a clean exit could still find it held (one did,
        with tests side by side). A crashed holder's lock still goes with its session."""
        try:
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [_CLASS_ID, self.key])
        except pg.driver_errors():
            pass  # the session is gone, and its lock with it

    def _take(self, conn: Any, holder: Holder, timeout_s: float) -> None:
        schema.ensure(conn, "lock")
        if not _taken(lambda: self._try(conn), timeout_s):
            raise _busy(self.key, self._holder(conn), timeout_s)
        conn.execute(
            "INSERT INTO hephaestus_lock_holders VALUES (%s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (key) DO UPDATE SET run_id = excluded.run_id, host = excluded.host, "
            "pid = excluded.pid, command = excluded.command, since = excluded.since",
            [self.key, holder.run_id, holder.host, holder.pid, holder.command, holder.since],
        )

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
    def __init__(self, folder: Path, key: str, path: Path | None = None) -> None:
        self.path = path or folder / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".lock")
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

"""Where the deployment's state lives, chosen once (edge: files or PostgreSQL).

A backend makes the four parts of the state: the cluster lock, the ownership record, heal's
records and the audit journal. Files keep them on one machine (under the project's
`.hephaestus/`, the journal where `audit_log` says); a PostgreSQL database keeps them for a
fleet of runners (Helm hooks, the heal CronJob, CI) that come and go. `state: {database}`
names that database for every part; the keys of earlier releases choose it per part
(settings.StateSettings.database_of).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hephaestus.project import Cluster, Project
from hephaestus.settings import LockSettings, Part
from hephaestus.state import prints
from hephaestus.state.audit import Journal
from hephaestus.state.heal import HealFile, HealStore, HealTable
from hephaestus.state.ledger import LedgerFile, LedgerStore, LedgerTable
from hephaestus.state.lock import FileLock, Holder, Lock, PgLock, hold, new_run_id, resource_key
from hephaestus.state.ownership import OwnershipFile, OwnershipStore, OwnershipTable

DEFAULT_TIMEOUT_S = LockSettings().timeout_s
_LABELS: dict[Part, str] = {
    "lock": "the cluster lock",
    "ownership": "the ownership record",
    "heal": "heal's state store",
    "audit": "the audit log",
}


class Backend(Protocol):
    def lock(self, key: str) -> Lock: ...
    def ownership(self) -> OwnershipStore: ...
    def prints(self) -> prints.PrintsStore: ...
    def heal(self, file: Path) -> HealStore: ...
    def ledger(self) -> LedgerStore: ...
    def journal(self, run_id: str, cluster: str) -> Journal: ...


@dataclass(frozen=True)
class FileBackend:
    """One machine: flocks and JSON files in `folder`, the journal in `audit_log` (none: no log)."""

    folder: Path
    audit_log: Path | None = None

    def lock(self, key: str) -> Lock:
        return FileLock(self.folder / "locks", key)

    def ownership(self) -> OwnershipStore:
        return OwnershipFile(self.folder / "ownership.json")

    def prints(self) -> prints.PrintsStore:
        return prints.PrintsFile(self.folder / "prints.json")

    def heal(self, file: Path) -> HealStore:
        return HealFile(file)

    def ledger(self) -> LedgerStore:
        return LedgerFile(self.folder / "ledger.json")

    def journal(self, run_id: str, cluster: str) -> Journal:
        return Journal(self.audit_log, run_id, cluster)


@dataclass(frozen=True)
class PgBackend:
    """A fleet: advisory locks and tables (state.schema) in one database."""

    dsn: str

    def lock(self, key: str) -> Lock:
        return PgLock(self.dsn, key)

    def ownership(self) -> OwnershipStore:
        return OwnershipTable(self.dsn)

    def prints(self) -> prints.PrintsStore:
        return prints.PrintsTable(self.dsn)

    def heal(self, file: Path) -> HealStore:
        return HealTable(self.dsn)

    def ledger(self) -> LedgerStore:
        return LedgerTable(self.dsn)

    def journal(self, run_id: str, cluster: str) -> Journal:
        return Journal(None, run_id, cluster, self.dsn)


def backend_for(project: Project, part: Part) -> Backend:
    """The backend that keeps `part` of this project's state."""
    database = project.state.database_of(part)
    if database:
        return PgBackend(project.dsn(database, _LABELS[part]))
    return FileBackend(project.base / ".hephaestus", project.audit_log)


def timeout_of(project: Project, flag: float | None) -> float:
    """--lock-timeout, else the project file's lock.timeout_s (its default included)."""
    return float(flag if flag is not None else project.lock.timeout_s)


def urls_lock(
    project: Project, kind: str, urls: Sequence[str], command: str, timeout_s: float, run_id: str | None = None
) -> AbstractContextManager[None]:
    """The locks of the servers (`kind`: connect, ksqldb) a run acts on."""
    backend = backend_for(project, "lock")
    locks = [backend.lock(resource_key(kind, url)) for url in urls]
    return hold(locks, Holder(run_id or new_run_id(), command), timeout_s)


def connect_lock(
    project: Project, clusters: Sequence[Cluster], command: str, timeout_s: float, run_id: str | None = None
) -> AbstractContextManager[None]:
    """The locks of the Connect clusters a run acts on."""
    return urls_lock(project, "connect", [c.url for c in clusters], command, timeout_s, run_id)


def ownership_store(project: Project) -> OwnershipStore:
    """The ownership record, where the cluster lock is."""
    return backend_for(project, "ownership").ownership()


def prints_store(project: Project) -> prints.PrintsStore:
    """The secrets' fingerprints (state.prints), kept where the ownership record is."""
    return backend_for(project, "ownership").prints()


def ledger_store(project: Project) -> LedgerStore:
    """The offsets ledger (issue 49), kept where the ownership record is."""
    return backend_for(project, "ownership").ledger()


def heal_store(project: Project, state_file: Path | None) -> HealStore:
    """--state-file, else the state database, else heal.state.file (default .hephaestus/heal-state.json)."""
    if state_file is not None:
        return HealFile(state_file)
    return backend_for(project, "heal").heal(project.base / project.heal.state_file)


def journal_for(project: Project, cluster: str, run_id: str) -> Journal:
    """The project's audit trail for one cluster: the state database's table, else `audit_log`."""
    return backend_for(project, "audit").journal(run_id, cluster)

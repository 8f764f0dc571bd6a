"""The ownership record: which live connectors this deployment put there or adopted (edge).

Only an owned JDBC sink absent from git may be deleted, so the record must be shared by every
runner of the deployment (Helm hooks, the heal CronJob, CI's dry run), outlive their pods and
be readable without writing. It lives where the cluster lock lives, for the same reason: the
runs that serialise on one lock are the runs that share one fleet. That is a table in the
state database (`state: {database}`), else a JSON file beside the file locks (one
machine). Why not a marker key in each connector's config, nor a compacted topic: see
ARCHITECTURE.md ("Ownership").

A record is keyed by (project, cluster, connector); the scope (`select` at claim time) and
how it was claimed are kept beside it. Claims and releases happen under the cluster lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from hephaestus import pg
from hephaestus.errors import HephaestusError, InputError
from hephaestus.state import schema
from hephaestus.yamlsrc import exclusive, load_json, save_json


class OwnershipUnavailable(HephaestusError):
    """The record cannot be read or written: nothing is deleted or claimed on a guess."""


@dataclass(frozen=True)
class Claim:
    connector: str
    scope: str  # the cluster's `select` when claimed ("*": everything)
    how: str  # created / adopted / imported / renamed
    run_id: str
    since: str = ""


class OwnershipStore(Protocol):
    def owned(self, project: str, cluster: str) -> dict[str, Claim]: ...
    def claim(self, project: str, cluster: str, claims: Iterable[Claim]) -> None: ...
    def release(self, project: str, cluster: str, names: Iterable[str]) -> None: ...


def scope_of(select: tuple[str, ...]) -> str:
    return ",".join(sorted(select)) or "*"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class OwnershipFile:
    """{project: {cluster: {connector: claim}}} in one JSON file, replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # clusters are reconciled in threads: one edit at a time

    def owned(self, project: str, cluster: str) -> dict[str, Claim]:
        return {n: _claim(n, raw, self.path) for n, raw in self._all().get(project, {}).get(cluster, {}).items()}

    def claim(self, project: str, cluster: str, claims: Iterable[Claim]) -> None:
        with self._edit(project, cluster) as records:
            for c in claims:
                records[c.connector] = {k: v for k, v in asdict(c).items() if k != "connector"}

    def release(self, project: str, cluster: str, names: Iterable[str]) -> None:
        with self._edit(project, cluster) as records:
            for name in names:
                records.pop(name, None)

    @contextmanager
    def _edit(self, project: str, cluster: str) -> Iterator[dict[str, Any]]:
        # The thread lock for this process's clusters, the file's for other processes' runs.
        with self._lock, self._exclusive():
            yield from self._edited(project, cluster)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        try:
            with exclusive(self.path):
                yield
        except OSError as exc:
            raise OwnershipUnavailable(f"ownership record {self.path}: {exc.strerror or exc}") from exc

    def _edited(self, project: str, cluster: str) -> Iterator[dict[str, Any]]:
        data = self._all()
        records = data.setdefault(project, {}).setdefault(cluster, {})
        yield records
        try:
            save_json(self.path, data)
        except OSError as exc:
            raise OwnershipUnavailable(f"ownership record {self.path}: {exc.strerror or exc}") from exc

    def _all(self) -> dict[str, dict[str, dict[str, Any]]]:
        if not self.path.exists():
            return {}
        data = load_json(self.path)
        ok = isinstance(data, dict) and all(
            isinstance(c, dict) and all(isinstance(r, dict) for r in c.values()) for c in data.values()
        )
        if not ok:  # guessing could turn a sink we own into one we delete, or the reverse
            raise InputError(str(self.path), "ownership record is corrupt: repair it or restore it from backup")
        checked: dict[str, dict[str, dict[str, Any]]] = data
        return checked


def _claim(name: str, raw: Any, where: Path | str) -> Claim:
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("scope", "how", "run_id")):
        raise InputError(str(where), f"ownership record of {name!r} is corrupt")
    return Claim(name, raw["scope"], raw["how"], raw["run_id"], str(raw.get("since", "")))


class OwnershipTable:
    """One row per owned connector; every call is its own short transaction."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def owned(self, project: str, cluster: str) -> dict[str, Claim]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT connector, scope, how, run_id, since FROM hephaestus_ownership "
                "WHERE project = %s AND cluster = %s",
                [project, cluster],
            ).fetchall()
        return {str(r[0]): Claim(str(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4].isoformat()) for r in rows}

    def claim(self, project: str, cluster: str, claims: Iterable[Claim]) -> None:
        rows = [[project, cluster, c.connector, c.scope, c.how, c.run_id] for c in claims]
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO hephaestus_ownership (project, cluster, connector, scope, how, run_id) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (project, cluster, connector) DO UPDATE "
                "SET scope = excluded.scope, how = excluded.how, run_id = excluded.run_id, "
                "since = now()",
                rows,
            )

    def release(self, project: str, cluster: str, names: Iterable[str]) -> None:
        with self._conn() as conn:
            conn.execute(
                "DELETE FROM hephaestus_ownership WHERE project = %s AND cluster = %s AND connector = ANY(%s)",
                [project, cluster, list(names)],
            )

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        # Committed on a clean exit; every driver error is the record being unavailable.
        with pg.session(self.dsn, "ownership record (database)", error=OwnershipUnavailable, autocommit=False) as conn:
            schema.ensure(conn, "ownership")
            yield conn


def claims_of(names: Iterable[str], scope: str, how: str, run_id: str) -> list[Claim]:
    return [Claim(n, scope, how, run_id, now()) for n in sorted(set(names))]


# A claim being released: written before a delete (or a rename away) is sent, with the
# fingerprint of the config it had. Until the release is confirmed the connector counts as
# owned only while it still runs that very config: a delete whose outcome was never known is
# finished by the next run, and another team's connector created under the same name since (its
# config differs) is never taken for ours.
RELEASING = "releasing "
# A connector moving in from another cluster of the project (issue 49), marked before the move's
# first write; the run's record replaces it with `moved`, or forgets it when nothing came.
MOVING = "moving from "


def releasing(claim: Claim, fingerprint: str, run_id: str) -> Claim:
    return Claim(claim.connector, claim.scope, RELEASING + fingerprint, run_id, now())


def owns(claim: Claim, fingerprint: Callable[[], str | None]) -> bool:
    """Whether a claim gives this deployment the live connector whose config has the
    fingerprint `fingerprint()` computes: asked only of a claim being released (issue 47: at
    5,000 connectors, fingerprinting every config cost ~200 ms for the few released ones)."""
    if not claim.how.startswith(RELEASING):
        return True
    found = fingerprint()
    return found is not None and claim.how == RELEASING + found

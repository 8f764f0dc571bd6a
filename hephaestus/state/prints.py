"""Keyed fingerprints of each connector's secret values, kept with the ownership record (edge).

Two things a reconcile cannot see in Connect's answer need a memory of the last apply:

- a secret that rotated behind a placeholder (`${file:…:pw}` unchanged, the file's value new):
  the fingerprint of the value the workers resolve (`resolved:<key>`);
- a PASSWORD-typed value that Connect answers masked (`****`): the fingerprint of the value git
  held when it was last written (`git:<key>`), so a change in git is still seen.

Never a value: each is stretched with scrypt under the deployment's random salt, then HMAC'd
with HEPHAESTUS_PLAN_KEY when set (safety.seal.Fingerprints). A file beside the ownership record
on one machine, a table in the state database for a fleet.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from hephaestus import pg
from hephaestus.errors import HephaestusError, InputError
from hephaestus.safety.seal import Fingerprints, plan_key
from hephaestus.state import schema
from hephaestus.yamlsrc import exclusive, load_json, save_json

Prints = dict[str, dict[str, str]]  # connector -> {"resolved:<key>" | "git:<key>": fingerprint}
_SALT = ""  # the connector name under which the deployment's salt is kept (no connector has it)


class PrintsUnavailable(HephaestusError):
    """The fingerprint record cannot be read or written (its file, its database)."""


class PrintsStore(Protocol):
    def read(self, project: str, cluster: str) -> tuple[str, Prints]: ...
    def write(self, project: str, cluster: str, found: Prints, salt: str) -> None: ...


def fingerprints(salt: str) -> Fingerprints:
    return Fingerprints(salt, plan_key())


class PrintsFile:
    """{project: {cluster: {"": {"salt": …}, connector: {…}}}} in one JSON file, replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # clusters are reconciled in threads

    def read(self, project: str, cluster: str) -> tuple[str, Prints]:
        """The salt ("" when none was made yet) and the recorded fingerprints."""
        records = self._all().get(project, {}).get(cluster, {})
        return _split(records, str(self.path))

    def write(self, project: str, cluster: str, found: Prints, salt: str) -> None:
        """Each connector's fingerprints replaced by these, computed under `salt` (recorded
        the first time; a run computes with the recorded one, under the cluster's lock)."""
        with self._lock:
            try:
                with exclusive(self.path):
                    data = self._all()
                    records = data.setdefault(project, {}).setdefault(cluster, {})
                    records.setdefault(_SALT, {"salt": salt})
                    records.update({n: dict(p) for n, p in found.items() if n != _SALT})
                    save_json(self.path, data)
            except OSError as exc:
                raise PrintsUnavailable(f"fingerprint record {self.path}: {exc.strerror or exc}") from exc

    def _all(self) -> dict[str, dict[str, dict[str, dict[str, str]]]]:
        if not self.path.exists():
            return {}
        data = load_json(self.path)
        if not _shaped(data):  # a guess could restart every connector, or miss a rotation
            raise InputError(str(self.path), "fingerprint record is corrupt: delete it (the next apply records anew)")
        checked: dict[str, dict[str, dict[str, dict[str, str]]]] = data
        return checked


def _shaped(data: Any) -> bool:
    return isinstance(data, dict) and all(
        isinstance(c, dict) and all(isinstance(r, dict) and all(_strings(p) for p in r.values()) for r in c.values())
        for c in data.values()
    )


def _strings(found: Any) -> bool:
    return isinstance(found, dict) and all(isinstance(v, str) for v in found.values())


def _split(records: Mapping[str, Mapping[str, str]], where: str) -> tuple[str, Prints]:
    salt = records.get(_SALT, {}).get("salt", "")
    if salt and not _hex(salt):
        raise InputError(where, "fingerprint record's salt is corrupt: delete the record")
    return salt, {n: dict(p) for n, p in records.items() if n != _SALT}


def _hex(text: str) -> bool:
    try:
        bytes.fromhex(text)
    except ValueError:
        return False
    return True


class PrintsTable:
    """One row per connector (the salt under the empty name); each call its own transaction."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def read(self, project: str, cluster: str) -> tuple[str, Prints]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT connector, prints FROM hephaestus_prints WHERE project = %s AND cluster = %s",
                [project, cluster],
            ).fetchall()
        return _split({str(r[0]): dict(r[1]) for r in rows}, "state database: hephaestus_prints")

    def write(self, project: str, cluster: str, found: Prints, salt: str) -> None:
        from psycopg.types.json import Jsonb  # only a deployment with a state database pays for it

        salts = [[project, cluster, _SALT, Jsonb({"salt": salt})]]
        rows = [[project, cluster, n, Jsonb(dict(p))] for n, p in sorted(found.items()) if n != _SALT]
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(_UPSERT + " DO NOTHING", salts)  # made once, then kept
            cur.executemany(_UPSERT + " DO UPDATE SET prints = excluded.prints, updated_at = now()", rows)

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        with pg.session(self.dsn, "fingerprint record (database)", error=PrintsUnavailable, autocommit=False) as conn:
            schema.ensure(conn, "prints")
            yield conn


_UPSERT = (
    "INSERT INTO hephaestus_prints (project, cluster, connector, prints) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (project, cluster, connector)"
)

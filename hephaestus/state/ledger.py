"""The offsets ledger's store (edge: a file on one machine, a table in the state database),
kept where the ownership record is (issue 49). Each write adds one run's records and applies
the retention: each connector's newest `keep`."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.state import schema
from hephaestus.state.ledgerdoc import Record, as_doc, from_doc, kept, record_of
from hephaestus.yamlsrc import exclusive, load_json, save_json


class LedgerUnavailable(HephaestusError):
    """The ledger cannot be read or written (its file, its database)."""


class LedgerStore(Protocol):
    where: str

    def read(self, project: str, connector: str | None = None) -> list[Record]: ...
    def add(self, project: str, records: Sequence[Record], keep: int) -> None: ...


class LedgerFile:
    """One JSON document per project (offsets.ledger's format), replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)
        self._lock = threading.Lock()

    def read(self, project: str, connector: str | None = None) -> list[Record]:
        if not self.path.exists():
            return []
        found = from_doc(load_json(self.path), project, self.where)
        return [r for r in found if connector is None or r.connector == connector]

    def add(self, project: str, records: Sequence[Record], keep: int) -> None:
        with self._lock:
            try:
                with exclusive(self.path):
                    save_json(self.path, as_doc(project, kept([*self.read(project), *records], keep)))
            except OSError as exc:
                raise LedgerUnavailable(f"offsets ledger {self.path}: {exc.strerror or exc}") from exc


class LedgerTable:
    """One row per record; a write inserts the run's rows and deletes what retention drops."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.where = "state database: hephaestus_offsets_ledger"

    def read(self, project: str, connector: str | None = None) -> list[Record]:
        query = "SELECT id, record FROM hephaestus_offsets_ledger WHERE project = %s"
        args: list[Any] = [project]
        if connector is not None:
            query, args = query + " AND connector = %s", [project, connector]
        with self._conn() as conn:
            rows = conn.execute(query + " ORDER BY taken_at, id", args).fetchall()
        return [record_of(r[1], project, self.where, f"id {r[0]}") for r in rows]

    def add(self, project: str, records: Sequence[Record], keep: int) -> None:
        from psycopg.types.json import Jsonb  # only a deployment with a state database pays for it

        docs = as_doc(project, records)["records"]
        rows = [[project, r.cluster, r.connector, r.taken_at, Jsonb(d)] for r, d in zip(records, docs, strict=True)]
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(_INSERT, rows)
            cur.execute(_RETAIN, [project, max(keep, 1)])

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        with pg.session(self.dsn, "offsets ledger (database)", error=LedgerUnavailable, autocommit=False) as conn:
            schema.ensure(conn, "ledger")
            yield conn


_INSERT = (
    "INSERT INTO hephaestus_offsets_ledger (project, cluster, connector, taken_at, record) VALUES (%s, %s, %s, %s, %s)"
)
_RETAIN = """DELETE FROM hephaestus_offsets_ledger WHERE id IN (
  SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY cluster, connector ORDER BY taken_at DESC, id DESC) AS n
                  FROM hephaestus_offsets_ledger WHERE project = %s) ranked WHERE n > %s)"""

"""Append-only audit log: the intent before each write, the outcome after (edge: a JSONL file,
or the table `hephaestus_audit` of the state database). It takes plain records: what a
record says about a reconcile step is the reconciler's business (reconciler.journal).

Intent first, so a run killed between the two still leaves a trace of what it set out to do;
a log that cannot be written stops the run before its first write, since an unaudited
change is exactly what an audit log exists to rule out. In a pod, a file sits on a volume
that may die with it: the database keeps the trail where the Helm chart's jobs all see it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.secrets import REDACTOR
from hephaestus.state import schema

_lock = threading.Lock()


class AuditUnavailable(HephaestusError):
    """The audit log cannot be written: nothing (more) is applied."""


class Journal:
    """The audit records of one cluster in one run: into the database of `dsn` when given, else
    the file `path`; neither keeps no log. Close it (or use `with`) to end its connection."""

    def __init__(self, path: Path | None, run_id: str, cluster: str, dsn: str | None = None) -> None:
        self.path = path
        self.run_id = run_id
        self.cluster = cluster
        self.dsn = dsn
        self._conn: Any = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def check(self) -> None:
        """Raise AuditUnavailable unless the log can be appended to (called before any write)."""
        self._append([])

    def event(
        self, connector: str, action: str, outcome: str, detail: str, more: Mapping[str, Any] | None = None
    ) -> None:
        """One record: who did `action` to `connector` with what `outcome` (`more`: the
        writer's own fields)."""
        head = {"ts": datetime.now(UTC).isoformat(timespec="seconds"), "run_id": self.run_id}
        entry = {**head, "cluster": self.cluster, "connector": connector, "action": action}
        self._append([{**entry, **(more or {}), "outcome": outcome, "detail": detail}])

    def _append(self, entries: list[dict[str, Any]]) -> None:
        if self.dsn is not None:
            self._insert(entries)
            return
        if self.path is None:
            return
        text = REDACTOR("".join(json.dumps(e, sort_keys=True) + "\n" for e in entries))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _lock, self.path.open("a", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise AuditUnavailable(f"audit log {self.path} cannot be written: {exc.strerror or exc}") from exc

    def _insert(self, entries: list[dict[str, Any]]) -> None:
        """One row per entry, redacted as the file's lines are; one connection per journal
        (steps run on several threads: the lock serialises them on it)."""
        assert self.dsn is not None
        from psycopg.types.json import Jsonb  # only a deployment auditing to a database pays for the import

        rows = [json.loads(REDACTOR(json.dumps(e, sort_keys=True))) for e in entries]
        what = "audit table hephaestus_audit cannot be written"
        with _lock, pg.errors(what, AuditUnavailable):
            if self._conn is None:
                self._conn = pg.connect(self.dsn, what, application="hephaestus audit", error=AuditUnavailable)
                schema.ensure(self._conn, "audit")
            for r in rows:
                self._conn.execute(
                    "INSERT INTO hephaestus_audit (run_id, cluster, connector, entry) VALUES (%s, %s, %s, %s)",
                    [r["run_id"], r["cluster"], r["connector"], Jsonb(r)],
                )

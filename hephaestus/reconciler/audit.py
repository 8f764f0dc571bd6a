"""Append-only audit log: the intent before each write, the outcome after (edge: a JSONL file,
or the table `hephaestus_audit` of the project's `audit: {database: …}`).

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

from hephaestus.errors import HephaestusError, first_line
from hephaestus.lock import create_table
from hephaestus.project import Project
from hephaestus.reconciler.model import config_hash
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Step
from hephaestus.secrets import REDACTOR

_lock = threading.Lock()


class AuditUnavailable(HephaestusError):
    """The audit log cannot be written: nothing (more) is applied."""


TABLE = (
    "CREATE TABLE IF NOT EXISTS hephaestus_audit (id bigserial PRIMARY KEY, "
    "ts timestamptz NOT NULL DEFAULT now(), run_id text NOT NULL, cluster text NOT NULL, "
    "connector text, entry jsonb NOT NULL)"
)


def journal_for(
    project: Project, cluster: str, run_id: str, before: Mapping[str, Mapping[str, str]] | None = None
) -> Journal:
    """The project's audit trail for one cluster: its `audit: {database}` table, else `audit_log`."""
    dsn = project.dsn(project.audit_database, "the audit log") if project.audit_database else None
    return Journal(project.audit_log, run_id, cluster, before or {}, dsn)


class Journal:
    """The audit records of one cluster in one run: into the database of `dsn` when given, else
    the file `path`; neither keeps no log. Close it (or use `with`) to end its connection."""

    def __init__(
        self,
        path: Path | None,
        run_id: str,
        cluster: str,
        before: Mapping[str, Mapping[str, str]],
        dsn: str | None = None,
    ) -> None:
        self.path = path
        self.run_id = run_id
        self.cluster = cluster
        self.before = before
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

    def intent(self, step: Step) -> None:
        self._append([self._entry(step, "intent", "")])

    def outcome(self, step: Step, result: StepResult) -> None:
        self._append([self._entry(step, "ok" if result.ok else "failed", result.detail)])

    def event(self, connector: str, action: str, outcome: str, detail: str) -> None:
        """An operation that is not a config write (a DLQ replay or purge, a dropped slot)."""
        self._append(
            [
                {
                    "ts": datetime.now(UTC).isoformat(timespec="seconds"),
                    "run_id": self.run_id,
                    "cluster": self.cluster,
                    "connector": connector,
                    "action": action,
                    "outcome": outcome,
                    "detail": detail,
                }
            ]
        )

    def _entry(self, step: Step, outcome: str, detail: str) -> dict[str, Any]:
        return {
            "ts": datetime.now(UTC).isoformat(timespec="seconds"),
            "run_id": self.run_id,
            "cluster": self.cluster,
            "connector": step.name,
            "action": step.action,
            "renamed_from": step.renamed_from or None,
            "config_hash_before": config_hash(self.before.get(step.renamed_from or step.name)),
            "config_hash_after": None if step.action == "delete" else config_hash(step.config),
            "changed_keys": [c.key for c in step.changes],
            "outcome": outcome,
            "detail": detail,
        }

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
        assert self.dsn is not None
        """One row per entry, redacted as the file's lines are; one connection per journal
        (steps run on several threads: the lock serialises them on it)."""
        import psycopg  # only a deployment auditing to a database pays for the import
        from psycopg.types.json import Jsonb

        rows = [json.loads(REDACTOR(json.dumps(e, sort_keys=True))) for e in entries]
        try:
            with _lock:
                if self._conn is None:
                    self._conn = psycopg.connect(
                        self.dsn, connect_timeout=10, autocommit=True, application_name="hephaestus audit"
                    )
                    create_table(self._conn, TABLE)
                for r in rows:
                    self._conn.execute(
                        "INSERT INTO hephaestus_audit (run_id, cluster, connector, entry) VALUES (%s, %s, %s, %s)",
                        [r["run_id"], r["cluster"], r["connector"], Jsonb(r)],
                    )
        except psycopg.Error as exc:
            raise AuditUnavailable(f"audit table hephaestus_audit cannot be written: {first_line(exc)}") from exc

"""The audit trail read back (edge: the JSONL file, or the table `hephaestus_audit` of the
state database), read-only: each connector's last outcome.

`state.audit` writes; this module reads, and creates nothing: a database without the table
has no entries yet. A trail that cannot be read is the caller's warning, never its failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.project import Project
from hephaestus.state.backend import FileBackend, PgBackend, backend_for

Entries = dict[tuple[str, str], dict[str, Any]]  # (cluster, connector) → its last outcome's entry

_EXISTS = "SELECT to_regclass('hephaestus_audit') IS NOT NULL"
_LAST = (
    "SELECT DISTINCT ON (cluster, connector) cluster, connector, entry FROM hephaestus_audit "
    "WHERE cluster = ANY(%s) AND connector IS NOT NULL AND entry->>'outcome' <> 'intent' "
    "ORDER BY cluster, connector, id DESC"
)


def last_outcomes(project: Project, clusters: Sequence[str]) -> tuple[Entries, tuple[str, ...]]:
    """Each connector's last outcome (ok, failed: never an intent); and what could not be read."""
    try:
        backend = backend_for(project, "audit")
        if isinstance(backend, PgBackend):
            return from_table(backend.dsn, clusters), ()
        if isinstance(backend, FileBackend) and backend.audit_log is not None:
            return from_file(backend.audit_log, clusters), ()
    except HephaestusError as exc:
        return {}, (f"audit journal: {exc}",)
    return {}, ()


def from_file(path: Path, clusters: Sequence[str]) -> Entries:
    try:
        with path.open(encoding="utf-8", errors="replace") as lines:
            return last_of(_records(lines), clusters)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise HephaestusError(f"{path} cannot be read: {exc.strerror or exc}") from exc


def _records(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash mid-write
        if isinstance(record, dict):
            yield record


def is_outcome(entry: dict[str, Any]) -> bool:
    outcome = str(entry.get("outcome", ""))
    return bool(outcome) and outcome != "intent"


def last_of(records: Iterable[dict[str, Any]], clusters: Sequence[str]) -> Entries:
    """The last outcome per (cluster, connector), in the order the records were written."""
    wanted = set(clusters)
    found: Entries = {}
    for r in records:
        key = (str(r.get("cluster", "")), str(r.get("connector", "")))
        if key[0] in wanted and key[1] and is_outcome(r):
            found[key] = r
    return found


def from_table(dsn: str, clusters: Sequence[str]) -> Entries:
    with pg.session(dsn, "audit journal (hephaestus_audit)", application="hephaestus") as conn:
        exists = conn.execute(_EXISTS).fetchone()
        if not exists or not exists[0]:
            return {}
        rows = conn.execute(_LAST, [list(clusters)]).fetchall()
    return {(c, n): e for c, n, e in rows if isinstance(e, dict) and is_outcome(e)}

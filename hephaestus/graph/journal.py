"""The last change of each connector, read from the audit journal (edge: the JSONL file, or
the table `hephaestus_audit` of the state database), read-only.

`state.audit` only appends; reading is this module's, and it creates nothing: a database
without the table has no changes yet. A journal that cannot be read is a warning on the page,
never a failed graph.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.graph.live import change_of
from hephaestus.graph.model import Change
from hephaestus.project import Project
from hephaestus.state.backend import FileBackend, PgBackend, backend_for

Changes = dict[tuple[str, str], Change]

_EXISTS = "SELECT to_regclass('hephaestus_audit') IS NOT NULL"
_LAST = (
    "SELECT DISTINCT ON (cluster, connector) cluster, connector, entry FROM hephaestus_audit "
    "WHERE cluster = ANY(%s) AND connector IS NOT NULL AND entry->>'outcome' <> 'intent' "
    "ORDER BY cluster, connector, id DESC"
)


def last_changes(project: Project, clusters: Sequence[str]) -> tuple[Changes, tuple[str, ...]]:
    """(cluster, connector) → its last change; and what could not be read."""
    try:
        backend = backend_for(project, "audit")
        if isinstance(backend, PgBackend):
            return _from_table(backend.dsn, clusters), ()
        if isinstance(backend, FileBackend) and backend.audit_log is not None:
            return _from_file(backend.audit_log, clusters), ()
    except HephaestusError as exc:
        return {}, (f"audit journal: {exc}",)
    return {}, ()


def _from_file(path: Path, clusters: Sequence[str]) -> Changes:
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


def last_of(records: Iterable[dict[str, Any]], clusters: Sequence[str]) -> Changes:
    """The last outcome per (cluster, connector), in the order the records were written."""
    wanted = set(clusters)
    found: Changes = {}
    for r in records:
        key = (str(r.get("cluster", "")), str(r.get("connector", "")))
        if key[0] in wanted and key[1] and (change := change_of(r)) is not None:
            found[key] = change
    return found


def _from_table(dsn: str, clusters: Sequence[str]) -> Changes:
    with pg.session(dsn, "audit journal (hephaestus_audit)", application="hephaestus graph") as conn:
        exists = conn.execute(_EXISTS).fetchone()
        if not exists or not exists[0]:
            return {}
        rows = conn.execute(_LAST, [list(clusters)]).fetchall()
    found: Changes = {}
    for cluster, connector, entry in rows:
        if isinstance(entry, dict) and (change := change_of(entry)) is not None:
            found[(cluster, connector)] = change
    return found

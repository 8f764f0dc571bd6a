"""Read table columns and primary keys from a live PostgreSQL (through the PostgreSQL edge), and
`catalog refresh`: each catalog read again from its database, written only when it changed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hephaestus import pg
from hephaestus.errors import HephaestusError, InputError
from hephaestus.generator.catalogdiff import TableChange, changes
from hephaestus.generator.catalogs import catalog_json, load_catalogs
from hephaestus.generator.model import Catalog, Column, TableRef, TableSchema
from hephaestus.project import Project
from hephaestus.yamlsrc import save_json

_COLUMNS = """
SELECT c.table_schema, c.table_name, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t USING (table_catalog, table_schema, table_name)
WHERE t.table_type = 'BASE TABLE'
  AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
  AND c.table_schema NOT LIKE 'pg_toast%%'
ORDER BY c.table_schema, c.table_name, c.ordinal_position
"""

# Key columns in key order (array_position over indkey), not in table order.
_PRIMARY_KEYS = """
SELECT n.nspname, cl.relname, a.attname
FROM pg_index i
JOIN pg_class cl ON cl.oid = i.indrelid
JOIN pg_namespace n ON n.oid = cl.relnamespace
JOIN pg_attribute a ON a.attrelid = cl.oid AND a.attnum = ANY(i.indkey)
WHERE i.indisprimary
ORDER BY n.nspname, cl.relname, array_position(i.indkey::int2[], a.attnum)
"""


def dump(dsn: str, database: str) -> Catalog:
    """The catalog of `database` (the DSN's dbname is overridden by `database`)."""
    with pg.session(dsn, f"cannot read schema of database {database!r}", dbname=database) as conn:
        columns = conn.execute(_COLUMNS).fetchall()
        keys = conn.execute(_PRIMARY_KEYS).fetchall()
    cols: dict[TableRef, list[Column]] = {}
    for schema, table, name, type_ in columns:
        cols.setdefault(TableRef(schema, table), []).append(Column(name, type_))
    pks: dict[TableRef, list[str]] = {}
    for schema, table, name in keys:
        pks.setdefault(TableRef(schema, table), []).append(name)
    tables = {ref: TableSchema(tuple(c), tuple(pks.get(ref, []))) for ref, c in cols.items()}
    return Catalog(f"{database}.json", database, tables)


@dataclass(frozen=True)
class Refreshed:
    path: Path
    text: str  # the catalog as the database holds it now, as `catalog dump` writes it
    changes: tuple[TableChange, ...]
    stale: bool  # the file's bytes differ from `text` (or there is no file yet)
    line: str  # what to print for it


@dataclass(frozen=True)
class Found:
    catalogs: tuple[Refreshed, ...]
    lines: tuple[str, ...]  # what to print: each catalog's changes, or a warning


def refreshed(project: Project, folder: Path, named: Sequence[str]) -> Found:
    """Every catalog in `folder` (or only `named`), read again; nothing written. Every database
    is read before the caller writes: one that cannot be read raises, and nothing is written."""
    current = load_catalogs(folder) if folder.is_dir() else {}
    _in_project(project, named)
    wanted = list(dict.fromkeys(named)) or sorted(current)
    lines = [
        f"warning: {current[d].file}: database {d} is not in {project.file} (databases:): not refreshed"
        for d in wanted
        if d not in project.databases
    ]
    found = [_one(project, folder, d, current.get(d)) for d in wanted if d in project.databases]
    lines += [r.line for r in found] or [f"no catalogs in {folder} (name a database with --database)"]
    return Found(tuple(found), tuple(lines))


def _in_project(project: Project, named: Sequence[str]) -> None:
    """A database named on the command line must be one the project can connect to."""
    for database in named:
        if database not in project.databases:
            known = ", ".join(sorted(project.databases)) or "none"
            why = f"database {database!r} is not in the project file (databases: {known})"
            raise InputError(project.file, why, field=f"databases.{database}")


def _one(project: Project, folder: Path, database: str, old: Catalog | None) -> Refreshed:
    new = dump(project.dsn(database, "catalog refresh"), database)
    text = catalog_json(new)
    if old is None:
        path = folder / f"{database}.json"
        return Refreshed(path, text, (), True, f"{path}: new catalog ({len(new.tables)} tables)")
    path, found = Path(old.file), changes(old, new)
    # Bytes, not only the tables: a hand-formatted file is rewritten as `dump` writes it, so the
    # next refresh (and `git diff`) is quiet.
    stale = path.read_bytes() != text.encode()
    words = "; ".join(str(c) for c in found) or ("reformatted" if stale else "unchanged")
    return Refreshed(path, text, found, stale, f"{path}: {words}")


def write(found: Sequence[Refreshed]) -> None:
    """Each stale catalog, atomically (a crash leaves the old file or the new one, never half)."""
    for r in found:
        if not r.stale:
            continue
        try:
            save_json(r.path, json.loads(r.text))  # the same bytes: both indent 2, keys sorted
        except OSError as exc:
            raise HephaestusError(f"cannot write catalog {r.path}: {exc.strerror or exc}") from exc

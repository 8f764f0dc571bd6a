"""Load schema snapshots (schemas/<db>.json), so generation needs no live database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hephaestus.errors import InputError, InputErrors
from hephaestus.generator.model import Column, Snapshot, TableRef, TableSchema
from hephaestus.jsonschemas import Checker
from hephaestus.yamlsrc import PathElem, YamlDoc, clip, format_path, load_json, packaged_validator, schema_errors_of

# Files in schemas/ that are not snapshots.
NOT_SNAPSHOTS = {"definitions.schema.json", "project.schema.json"}
# PostgreSQL cuts names at 63 bytes (NAMEDATALEN - 1): a longer one names nothing that exists.
PG_NAME_MAX = 63


def too_long(name: str) -> str:
    """Why a database, table or column name cannot be PostgreSQL's, or "" when it can be."""
    if len(name.encode("utf-8")) <= PG_NAME_MAX:
        return ""
    return f"name {clip(name)} is longer than {PG_NAME_MAX} bytes (PostgreSQL's limit)"


def _validator() -> Checker:
    return packaged_validator("hephaestus.generator", "snapshot.schema.json")


def load_snapshots(directory: Path) -> dict[str, Snapshot]:
    """Snapshots by database name; every file validated, all errors reported together."""
    out: dict[str, Snapshot] = {}
    errors: list[InputError] = []
    for path in sorted(directory.glob("*.json")):
        if path.name in NOT_SNAPSHOTS:
            continue
        try:
            snap = parse_snapshot(str(path), load_json(path))
        except InputErrors as many:
            errors.extend(many.errors)
            continue
        except InputError as one:  # unreadable, not JSON, too deep, a directory named *.json
            errors.append(one)
            continue
        first = out.setdefault(snap.database, snap)
        if first is not snap:  # the second file would silently replace the first
            errors.append(
                InputError(snap.file, f"database {clip(snap.database)} is also in {first.file}", field="database")
            )
    if errors:
        raise InputErrors(errors)
    return out


def parse_snapshot(file: str, data: Any) -> Snapshot:
    """Schema-check one snapshot (every violation at once, values cut short), then build it."""
    errors = schema_errors_of(YamlDoc(file, data), _validator()) or _long_names(file, data)
    if errors:
        raise InputErrors(errors)
    tables = {TableRef.parse(name): _table(t) for name, t in data["tables"].items()}
    return Snapshot(file, data["database"], tables)


def _long_names(file: str, data: dict[str, Any]) -> list[InputError]:
    """Names too long for PostgreSQL (generation quotes them whole in its messages)."""
    names: list[tuple[list[PathElem], str]] = [(["database"], data["database"])]
    for table, raw in data["tables"].items():
        names += [(["tables", table], part) for part in table.split(".")]
        names += [(["tables", table, "columns", i, "name"], c["name"]) for i, c in enumerate(raw["columns"])]
        names += [(["tables", table, "primary_key", i], k) for i, k in enumerate(raw["primary_key"])]
    return [InputError(file, too_long(name), field=format_path(path)) for path, name in names if too_long(name)]


def _table(raw: dict[str, Any]) -> TableSchema:
    columns = tuple(Column(c["name"], c["type"]) for c in raw["columns"])
    return TableSchema(columns, tuple(raw["primary_key"]))


def snapshot_json(snapshot: Snapshot) -> str:
    """The file `schemas dump` writes: sorted tables, columns in table order."""
    tables = {
        str(ref): {
            "columns": [{"name": c.name, "type": c.type} for c in t.columns],
            "primary_key": list(t.primary_key),
        }
        for ref, t in sorted(snapshot.tables.items())
    }
    return json.dumps({"database": snapshot.database, "tables": tables}, indent=2, sort_keys=True) + "\n"

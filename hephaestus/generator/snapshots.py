"""Load schema snapshots (schemas/<db>.json), so generation needs no live database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from hephaestus.errors import InputError, InputErrors
from hephaestus.generator.model import Column, Snapshot, TableRef, TableSchema
from hephaestus.yamlsrc import format_path, packaged_validator

# Files in schemas/ that are not snapshots.
NOT_SNAPSHOTS = {"definitions.schema.json"}


def _validator() -> jsonschema.protocols.Validator:
    return packaged_validator("hephaestus.generator", "snapshot.schema.json")


def load_snapshots(directory: Path) -> dict[str, Snapshot]:
    """Snapshots by database name; every file validated, all errors reported together."""
    out: dict[str, Snapshot] = {}
    errors: list[InputError] = []
    for path in sorted(directory.glob("*.json")):
        if path.name in NOT_SNAPSHOTS:
            continue
        try:
            snap = parse_snapshot(str(path), _read_json(path))
        except InputErrors as many:
            errors.extend(many.errors)
            continue
        out[snap.database] = snap
    if errors:
        raise InputErrors(errors)
    return out


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputErrors([InputError(str(path), f"invalid JSON: {exc.msg}", line=exc.lineno)]) from exc


def parse_snapshot(file: str, data: Any) -> Snapshot:
    errors = [InputError(file, e.message, field=format_path(list(e.absolute_path)) or "(root)")
              for e in _validator().iter_errors(data)]
    if errors:
        raise InputErrors(errors)
    tables = {TableRef.parse(name): _table(t) for name, t in data["tables"].items()}
    return Snapshot(file, data["database"], tables)


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

"""Load table catalogs (catalogs/<db>.json: tables, columns, primary keys, as `catalog dump`
writes them), so generation needs no live database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hephaestus.errors import InputError, InputErrors
from hephaestus.generator.model import Catalog, Column, TableRef, TableSchema
from hephaestus.jsonschemas import Checker
from hephaestus.yamlsrc import PathElem, YamlDoc, format_path, load_json, named, packaged_validator, schema_errors_of

# JSON Schemas are not catalogs: before the rename, schemas/ held both (the deprecated layout).
NOT_CATALOGS = ".schema.json"
# PostgreSQL cuts names at 63 bytes (NAMEDATALEN - 1): a longer one names nothing that exists.
PG_NAME_MAX = 63
SHORT = PG_NAME_MAX // 4  # UTF-8 takes at most 4 bytes a character


def too_long(name: str) -> str:
    """Why a database, table or column name cannot be PostgreSQL's, or "" when it can be."""
    if len(name.encode("utf-8")) <= PG_NAME_MAX:
        return ""
    return f"name {named(name)} is longer than {PG_NAME_MAX} bytes (PostgreSQL's limit)"


def _validator() -> Checker:
    return packaged_validator("hephaestus.generator", "catalog.schema.json")


def load_catalogs(directory: Path) -> dict[str, Catalog]:
    """Catalogs by database name; every file validated, all errors reported together."""
    out: dict[str, Catalog] = {}
    errors: list[InputError] = []
    for path in sorted(directory.glob("*.json")):
        if path.name.endswith(NOT_CATALOGS):
            continue
        try:
            snap = parse_catalog(str(path), load_json(path))
        except InputErrors as many:
            errors.extend(many.errors)
            continue
        except InputError as one:  # unreadable, not JSON, too deep, a directory named *.json
            errors.append(one)
            continue
        first = out.setdefault(snap.database, snap)
        if first is not snap:  # the second file would silently replace the first
            errors.append(
                InputError(snap.file, f"database {named(snap.database)} is also in {first.file}", field="database")
            )
    if errors:
        raise InputErrors(errors)
    return out


def parse_catalog(file: str, data: Any) -> Catalog:
    """Schema-check one catalog (every violation at once, values cut short), then build it."""
    errors = schema_errors_of(YamlDoc(file, data), _validator()) or _long_names(file, data)
    if errors:
        raise InputErrors(errors)
    tables = {TableRef.parse(name): _table(t) for name, t in data["tables"].items()}
    return Catalog(file, data["database"], tables)


def _long_names(file: str, data: dict[str, Any]) -> list[InputError]:
    """Names too long for PostgreSQL (generation quotes them whole in its messages). A name of
    at most SHORT characters fits whatever they are: only longer ones are encoded and measured."""
    found: list[tuple[list[PathElem], str]] = [(["database"], data["database"])]
    for table, raw in data["tables"].items():
        found += [(["tables", table], part) for part in table.split(".") if len(part) > SHORT]
        found += [
            (["tables", table, "columns", i, "name"], c["name"])
            for i, c in enumerate(raw["columns"])
            if len(c["name"]) > SHORT
        ]
        found += [(["tables", table, "primary_key", i], k) for i, k in enumerate(raw["primary_key"]) if len(k) > SHORT]
    return [InputError(file, why, field=format_path(path)) for path, name in found if (why := too_long(name))]


def _table(raw: dict[str, Any]) -> TableSchema:
    columns = tuple(Column(c["name"], c["type"]) for c in raw["columns"])
    return TableSchema(columns, tuple(raw["primary_key"]))


def catalog_json(catalog: Catalog) -> str:
    """The file `catalog dump` writes: sorted tables, columns in table order."""
    tables = {
        str(ref): {
            "columns": [{"name": c.name, "type": c.type} for c in t.columns],
            "primary_key": list(t.primary_key),
        }
        for ref, t in sorted(catalog.tables.items())
    }
    return json.dumps({"database": catalog.database, "tables": tables}, indent=2, sort_keys=True) + "\n"

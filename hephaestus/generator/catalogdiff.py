"""What changed between two catalogs of one database (pure): tables added or gone, and per table
the columns added, gone or retyped and a changed primary key, in words a review reads."""

from __future__ import annotations

from hephaestus.generator.model import Catalog, TableSchema


def changes(old: Catalog, new: Catalog) -> tuple[str, ...]:
    """One line per table that changed, tables in name order."""
    found = [f"{ref} added" for ref in sorted(new.tables.keys() - old.tables.keys())]
    found += [f"{ref} gone" for ref in sorted(old.tables.keys() - new.tables.keys())]
    for ref in sorted(old.tables.keys() & new.tables.keys()):
        if parts := _table(old.tables[ref], new.tables[ref]):
            found.append(f"{ref} {', '.join(parts)}")
    return tuple(found)


def _table(old: TableSchema, new: TableSchema) -> list[str]:
    before = {c.name: c.type for c in old.columns}
    after = {c.name: c.type for c in new.columns}
    parts = [f"+{c.name} ({c.type})" for c in new.columns if c.name not in before]
    parts += [f"-{c.name}" for c in old.columns if c.name not in after]
    parts += [f"~{n} ({before[n]} -> {after[n]})" for n in after if n in before and before[n] != after[n]]
    if old.primary_key != new.primary_key:
        parts.append(f"primary key ({', '.join(old.primary_key)}) -> ({', '.join(new.primary_key)})")
    return parts

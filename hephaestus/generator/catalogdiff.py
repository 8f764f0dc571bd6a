"""What changed between two catalogs of one database (pure): tables added or gone, and per table
the columns added, gone, retyped or moved and a changed primary key. Values, so a schema-drift
check can act on them; `str()` gives the words a review reads (`public.users +phone (text)`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hephaestus.generator.model import Catalog, Column, TableRef, TableSchema

What = Literal["added", "gone", "changed"]


@dataclass(frozen=True)
class Retyped:
    column: str
    old: str
    new: str


@dataclass(frozen=True)
class TableChange:
    """One table's change. A table added or gone carries nothing else: its columns are in the
    file, and listing them all would bury the change in the review."""

    table: TableRef
    what: What
    added: tuple[Column, ...] = ()  # in the new table's order
    removed: tuple[str, ...] = ()  # in the old table's order
    retyped: tuple[Retyped, ...] = ()
    # The columns both versions have, in another order (a column dropped and added again moves
    # to the end): the sinks' field lists follow the source's order, so their configs change.
    reordered: bool = False
    primary_key: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # (old, new) when it changed

    def __str__(self) -> str:
        return f"{self.table} {', '.join(self.parts()) if self.what == 'changed' else self.what}"

    def parts(self) -> tuple[str, ...]:
        found = [f"+{c.name} ({c.type})" for c in self.added] + [f"-{name}" for name in self.removed]
        found += [f"~{r.column} ({r.old} -> {r.new})" for r in self.retyped]
        found += ["columns reordered"] if self.reordered else []
        if self.primary_key is not None:
            found.append(f"primary key ({', '.join(self.primary_key[0])}) -> ({', '.join(self.primary_key[1])})")
        return tuple(found)


def changes(old: Catalog, new: Catalog) -> tuple[TableChange, ...]:
    """Tables added, then gone, then changed, each group in name order; () when alike."""
    found = [TableChange(ref, "added") for ref in sorted(new.tables.keys() - old.tables.keys())]
    found += [TableChange(ref, "gone") for ref in sorted(old.tables.keys() - new.tables.keys())]
    for ref in sorted(old.tables.keys() & new.tables.keys()):
        if (change := table_change(ref, old.tables[ref], new.tables[ref])) is not None:
            found.append(change)
    return tuple(found)


def table_change(ref: TableRef, old: TableSchema, new: TableSchema) -> TableChange | None:
    """How one table changed, or None when its columns, their order and its key are the same."""
    before = {c.name: c.type for c in old.columns}
    after = {c.name: c.type for c in new.columns}
    change = TableChange(
        ref,
        "changed",
        added=tuple(c for c in new.columns if c.name not in before),
        removed=tuple(c.name for c in old.columns if c.name not in after),
        retyped=tuple(
            Retyped(c.name, before[c.name], c.type) for c in new.columns if before.get(c.name, c.type) != c.type
        ),
        reordered=[n for n in before if n in after] != [n for n in after if n in before],
        primary_key=None if old.primary_key == new.primary_key else (old.primary_key, new.primary_key),
    )
    return None if change == TableChange(ref, "changed") else change

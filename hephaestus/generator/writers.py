"""Which sinks of the definitions write each target table (pure).

A table several pipelines fill (two source databases' `users` into one `auth.public.users`,
a captured table and a ksqlDB topic into one warehouse table) is a legitimate fan-in, but it
holds the union of their rows: no one of them can call a row there "not mine". `validate`
names such a table; `accuracy --delete-extra` refuses to delete from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hephaestus.generator.model import Definition, TableRef


@dataclass(frozen=True)
class TableWriter:
    """One sink of one definition: what it copies into which table, and where it is declared."""

    database: str
    table: TableRef
    source: str  # `bob.public.users`, or the topic a topic sink reads
    origin: str  # `definitions/bob.yaml:27 at pipelines[0].sinks[0]`

    def __str__(self) -> str:
        return f"{self.source} ({self.origin})"


@dataclass(frozen=True)
class SharedTable:
    database: str
    table: TableRef
    writers: tuple[TableWriter, ...]

    def describe(self) -> str:
        listed = "; ".join(map(str, self.writers))
        return f"{self.database}.{self.table} is written by {len(self.writers)} pipelines: {listed}"


def writers(defs: Sequence[Definition]) -> list[TableWriter]:
    """Every sink of every definition (pipelines' and topic sinks'), in definition order."""
    return [w for d in defs for w in (*_pipeline_writers(d), *_topic_writers(d))]


def _pipeline_writers(d: Definition) -> list[TableWriter]:
    return [
        TableWriter(s.database, s.table, f"{d.database}.{p.source_table}", origin(d, s.path))
        for p in d.pipelines
        for s in p.sinks
    ]


def _topic_writers(d: Definition) -> list[TableWriter]:
    return [TableWriter(s.database, s.table, f"topic {t.topic}", origin(d, s.path)) for t in d.topics for s in t.sinks]


def origin(d: Definition, path: str) -> str:
    line = d.line(path)
    return f"{d.file}{'' if line is None else f':{line}'} at {path}"


Place = Callable[[str], object]  # a database name -> what identifies the database it names


def shared(found: Sequence[TableWriter], place: Place = str.casefold) -> list[SharedTable]:
    """The tables more than one writer fills, in order of their first writer. Names compare
    case-insensitively: a sink that does not quote identifiers writes `Users` into `users`,
    and a table wrongly called shared costs a warning where one missed costs rows."""
    groups: dict[object, list[TableWriter]] = {}
    for w in found:
        groups.setdefault(table_key(w.database, w.table, place), []).append(w)
    return [SharedTable(g[0].database, g[0].table, tuple(g)) for g in groups.values() if len(g) > 1]


def table_key(database: str, table: TableRef, place: Place = str.casefold) -> object:
    return (place(database), table.schema.casefold(), table.table.casefold())

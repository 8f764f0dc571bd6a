"""Publication upkeep (pure): what each source database's publication must gain or lose so
that every Debezium PostgreSQL source in git streams exactly what its table.include.list names.

Sources are generated with `publication.autocreate.mode=disabled` (the reference created
publications by SQL migration), so Debezium never touches the publication: a table added to an
include list streams nothing until someone adds it there. Every reconcile plans that:

- add every captured table the publication lacks (before the connector update that captures it);
- drop a table only when this run removes it from a source's include list and no other source
  in git on the same publication still captures it; dropping never touches the table's data,
  and a table someone published by hand is never dropped;
- refuse, naming the DDL, a publication that does not exist or lacks a source's signal table
  (Debezium would silently ignore every signal) — hephaestus does not create either — and a
  captured table the database lacks (ALTER PUBLICATION would fail half-way through an apply).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hephaestus.fleet.model import Desired, Live
from hephaestus.fleet.sources import POSTGRES_SOURCE, SIGNAL_TABLE_DDL, captured, source_ref
from hephaestus.safety.views import probe_named

Problems = dict[str, dict[str, tuple[str, ...]]]  # connector -> key -> messages (as config/validate)


@dataclass(frozen=True)
class PublicationSource:
    """A source connector in git as its publication sees it."""

    connector: str
    database: str
    publication: str
    signal_table: str
    tables: frozenset[str]
    dropped: frozenset[str] = frozenset()  # captured live, no longer in git's include list


@dataclass(frozen=True)
class Published:
    """A publication as the database holds it."""

    exists: bool
    tables: frozenset[str] = frozenset()
    all_tables: bool = False  # FOR ALL TABLES: every table is in it, nothing to add or drop
    absent: frozenset[str] = frozenset()  # tables the sources name that the database lacks


@dataclass(frozen=True)
class PublicationChange:
    database: str
    publication: str
    add: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    connectors: tuple[str, ...] = ()  # the sources it is for

    @property
    def name(self) -> str:
        return f"{self.database}/{self.publication}"

    def describe(self) -> str:
        parts = ([f"add {', '.join(self.add)}"] if self.add else []) + (
            [f"drop {', '.join(self.drop)}"] if self.drop else []
        )
        return f"publication {self.name}: {'; '.join(parts)} (for {', '.join(self.connectors)})"


def sources(desired: Mapping[str, Desired], live: Mapping[str, Live]) -> list[PublicationSource]:
    """Every PostgreSQL source in git, with what this run drops from its include list."""
    found = []
    for name, d in sorted(desired.items()):
        if d.config.get("connector.class") != POSTGRES_SOURCE:
            continue
        ref = source_ref(name, d.config)
        tables = frozenset(captured(d.config))
        before = frozenset(captured(live[name].config)) if name in live else frozenset()
        found.append(PublicationSource(name, ref.database, ref.publication, ref.signal_table, tables, before - tables))
    return found


def upkeep(
    found: Iterable[PublicationSource], state: Mapping[tuple[str, str], Published]
) -> tuple[tuple[PublicationChange, ...], Problems]:
    """The changes, and the problems that stop the cluster's apply; publications absent from
    `state` (not readable here) are left alone."""
    groups: dict[tuple[str, str], list[PublicationSource]] = {}
    for s in found:
        groups.setdefault((s.database, s.publication), []).append(s)
    changes, problems = [], {}
    for key, group in sorted(groups.items()):
        if key in state:
            change, wrong = _one(key, group, state[key])
            changes += [change] if change else []
            problems.update(wrong)
    return tuple(changes), problems


def _one(
    key: tuple[str, str], group: list[PublicationSource], pub: Published
) -> tuple[PublicationChange | None, Problems]:
    database, publication = key
    wanted = frozenset().union(*(s.tables for s in group))
    if not pub.exists:
        tables = ", ".join(sorted(wanted | {s.signal_table for s in group}))
        message = (
            f"publication {publication} does not exist in database {database}: create it with "
            f"CREATE PUBLICATION {publication} FOR TABLE {tables};"
        )
        missing: Problems = {s.connector: {"publication.name": (message,)} for s in group}
        return None, missing
    problems = {s.connector: p for s in group if (p := _source_problems(s, pub))}
    if pub.all_tables:
        return None, problems
    dropped = frozenset().union(*(s.dropped for s in group)) - wanted - {s.signal_table for s in group}
    # The probe's table is made just before (reconciler.probetables): absent now, added all the same.
    add, drop = sorted(wanted - pub.tables - _made_later(pub.absent)), sorted(dropped & pub.tables)
    if not add and not drop:
        return None, problems
    users = tuple(s.connector for s in group if s.tables & set(add) or s.dropped & set(drop))
    return PublicationChange(database, publication, tuple(add), tuple(drop), users), problems


def _made_later(absent: frozenset[str]) -> frozenset[str]:
    """The absent tables no one makes: all but the freshness probe's, which reconcile makes."""
    return frozenset(t for t in absent if not probe_named(t))


def _them(names: Sequence[str]) -> str:
    return "them" if len(names) > 1 else "it"


def _source_problems(s: PublicationSource, pub: Published) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    absent = sorted(s.tables & _made_later(pub.absent))
    if absent:
        found["table.include.list"] = (
            f"{', '.join(absent)} not in database {s.database}: create {_them(absent)} "
            f"or take {_them(absent)} out of the definition",
        )
    if s.signal_table in pub.absent:
        found["signal.data.collection"] = (
            f"signal table {s.signal_table} does not exist in database {s.database}; "
            "create it with " + SIGNAL_TABLE_DDL.format(table=s.signal_table, publication=s.publication),
        )
    elif s.signal_table and not pub.all_tables and s.signal_table not in pub.tables:
        found["signal.data.collection"] = (
            f"signal table {s.signal_table} is not in publication {s.publication} of database {s.database}: Debezium "
            f"ignores every signal until it is; run ALTER PUBLICATION {s.publication} ADD TABLE {s.signal_table};",
        )
    return found


@dataclass(frozen=True)
class Publications:
    """The publications the sources need, as read from their databases (`publications.db`)."""

    state: Mapping[tuple[str, str], Published] = field(default_factory=dict, hash=False)
    warnings: tuple[str, ...] = ()  # a database the project does not name: left alone
    problems: Problems = field(default_factory=dict, hash=False)  # could not be read

"""What a Debezium PostgreSQL source connector's config says about its database (pure): which
database, slot, publication, signal table and tables it captures. Reconcile (publication
upkeep) and the snapshot jobs read sources the same way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hephaestus.classes import POSTGRES_SOURCE as POSTGRES_SOURCE  # re-exported
from hephaestus.errors import HephaestusError
from hephaestus.secrets import is_placeholder

SIGNAL_TABLE_DDL = (
    "CREATE TABLE {table} (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, "
    "data VARCHAR(2048)); ALTER PUBLICATION {publication} ADD TABLE {table};"
)


@dataclass(frozen=True)
class SourceRef:
    connector: str
    database: str
    slot: str
    publication: str
    signal_table: str


def qualified(table: str) -> str:
    """`users` → `public.users` (Debezium's PostgreSQL data-collection form)."""
    return table if "." in table else f"public.{table}"


def captured(config: Mapping[str, str]) -> list[str]:
    return [qualified(t.strip()) for t in config.get("table.include.list", "").split(",") if t.strip()]


def source_ref(name: str, config: Mapping[str, str]) -> SourceRef:
    """The database is `database.dbname`, or — when that is a `${file:…}` placeholder only
    Connect can resolve — `topic.prefix`, which the generator sets to the database name."""
    dbname = config.get("database.dbname", "")
    database = config.get("topic.prefix", "") if not dbname or is_placeholder(dbname) else dbname
    if not database:
        raise HephaestusError(f"{name}: cannot tell its database (no literal database.dbname, no topic.prefix)")
    return SourceRef(
        name,
        database,
        config.get("slot.name", "debezium"),
        config.get("publication.name", "dbz_publication"),
        qualified(config.get("signal.data.collection", "")),
    )

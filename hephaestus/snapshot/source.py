"""Which database, slot, publication and signal table a source connector uses (pure + lookup)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hephaestus.errors import HephaestusError
from hephaestus.project import Project
from hephaestus.secrets import is_placeholder
from hephaestus.snapshot.signal import qualified


@dataclass(frozen=True)
class SourceRef:
    connector: str
    database: str
    slot: str
    publication: str
    signal_table: str


def source_ref(name: str, config: Mapping[str, str]) -> SourceRef:
    """The database is `database.dbname`, or — when that is a `${file:…}` placeholder only
    Connect can resolve — `topic.prefix`, which the generator sets to the database name."""
    dbname = config.get("database.dbname", "")
    database = config.get("topic.prefix", "") if not dbname or is_placeholder(dbname) else dbname
    if not database:
        raise HephaestusError(f"{name}: cannot tell its database (no literal database.dbname, no topic.prefix)")
    return SourceRef(name, database, config.get("slot.name", "debezium"),
                     config.get("publication.name", "dbz_publication"),
                     qualified(config.get("signal.data.collection", "")))


def dsn_for(project: Project, database: str) -> str:
    return project.dsn(database, "hephaestus needs it to signal its source")

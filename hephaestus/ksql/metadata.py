"""The ksql-migrations bookkeeping, as SQL text and values. Pure.

A stream of migration events (one row per state transition, keyed by version) and a table
that keeps the latest event per key (`LATEST_BY_OFFSET … GROUP BY version_key`). Each
transition writes two rows: key `CURRENT` and key `<version>`. Column names, value formats
("1" for version 1, "<none>" for no previous version, epoch milliseconds as strings, "N/A"
for no error) are those of Confluent's ksql-migrations, so either tool can take over.

One state is hephaestus's own: UNDONE, the row of a version `ksql undo` ran the undo file of
(ksql-migrations has no undo). CURRENT then points back to the version below, or to no version
("<none>") when the first one was undone. ksql-migrations' `apply` and `validate` never read an
undone version's row (they follow CURRENT and `previous`); its `info` fails on one
(`MigrationState.valueOf`) until the version is applied again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from hephaestus.ksql.sqltext import literal

CURRENT = "CURRENT"
NONE_VERSION = "<none>"
NO_ERROR = "N/A"
DEFAULT_STREAM = "MIGRATION_EVENTS"
DEFAULT_TABLE = "MIGRATION_SCHEMA_VERSIONS"
COLUMNS = (
    "VERSION_KEY",
    "VERSION",
    "NAME",
    "STATE",
    "CHECKSUM",
    "STARTED_ON",
    "COMPLETED_ON",
    "PREVIOUS",
    "ERROR_REASON",
)
_INFO_COLUMNS = "version, checksum, previous, state, name, started_on, completed_on, error_reason"


class State(str, Enum):
    PENDING = "PENDING"  # only shown by `info`: a local file never applied
    RUNNING = "RUNNING"
    MIGRATED = "MIGRATED"
    ERROR = "ERROR"
    UNDONE = "UNDONE"  # hephaestus only: `ksql undo` ran its undo file; `apply` applies it again


@dataclass(frozen=True)
class Names:
    """One cluster's metadata stream and table and their Kafka topics."""

    stream: str = DEFAULT_STREAM
    table: str = DEFAULT_TABLE
    stream_topic: str = ""
    table_topic: str = ""
    replicas: int = 1

    def with_topics(self, service_id: str) -> Names:
        """Default topics as ksql-migrations names them: `<service id>ksql_<name>`."""
        return Names(
            self.stream,
            self.table,
            self.stream_topic or f"{service_id}ksql_{self.stream}",
            self.table_topic or f"{service_id}ksql_{self.table}",
            self.replicas,
        )


@dataclass(frozen=True)
class VersionInfo:
    """One row of the versions table, or one transition to record."""

    version: int
    name: str
    state: State
    checksum: str
    started_on: str
    completed_on: str
    previous: str  # a version number as text, or NONE_VERSION
    error_reason: str = NO_ERROR

    def values(self, key: str) -> tuple[str, ...]:
        """The row to insert under `key` (CURRENT or the version), in COLUMNS order."""
        return (
            key,
            str(self.version),
            self.name,
            self.state.value,
            self.checksum,
            self.started_on,
            self.completed_on,
            self.previous,
            self.error_reason,
        )


def create_stream(names: Names) -> str:
    return (
        f"CREATE STREAM {names.stream} (\n"
        "  version_key STRING KEY,\n  version STRING,\n  name STRING,\n  state STRING,\n"
        "  checksum STRING,\n  started_on STRING,\n  completed_on STRING,\n  previous STRING,\n"
        "  error_reason STRING\n"
        f") WITH (\n  KAFKA_TOPIC={literal(names.stream_topic)},\n  VALUE_FORMAT='JSON',\n"
        f"  PARTITIONS=1,\n  REPLICAS={names.replicas}\n);"
    )


def create_table(names: Names) -> str:
    latest = ",\n".join(f"  LATEST_BY_OFFSET({c}) AS {c}" for c in (c.lower() for c in COLUMNS[1:]))
    return (
        f"CREATE TABLE {names.table}\n  WITH (KAFKA_TOPIC={literal(names.table_topic)})\n"
        f"  AS SELECT\n  version_key,\n{latest}\n  FROM {names.stream}\n  GROUP BY version_key;"
    )


def insert(names: Names, event: VersionInfo, key: str) -> str:
    values = ", ".join(literal(v) for v in event.values(key))
    return f"INSERT INTO {names.stream} ({', '.join(COLUMNS)}) VALUES ({values});"


def insert_no_current(names: Names, undone: VersionInfo) -> str:
    """CURRENT pointing to no version: the first version was undone. Either tool reads only
    CURRENT's version then ("<none>": nothing migrated); the rest says what happened when."""
    values = (CURRENT, NONE_VERSION, "", State.UNDONE.value, "", undone.started_on, undone.completed_on)
    row = (*values, NONE_VERSION, NO_ERROR)
    return f"INSERT INTO {names.stream} ({', '.join(COLUMNS)}) VALUES ({', '.join(literal(v) for v in row)});"


def select_current(names: Names) -> str:
    return f"SELECT version FROM {names.table} WHERE version_key = {literal(CURRENT)};"


def select_versions(names: Names, versions: list[str]) -> str:
    keys = ", ".join(literal(v) for v in versions)
    return f"SELECT {_INFO_COLUMNS} FROM {names.table} WHERE version_key IN ({keys});"


def version_info(row: Mapping[str, Any]) -> VersionInfo:
    """A pull-query row (column names as ksqlDB returns them: upper case)."""

    def text(column: str) -> str:
        value = row.get(column)
        return "" if value is None else str(value)

    return VersionInfo(
        int(text("VERSION")),
        text("NAME"),
        State(text("STATE")),
        text("CHECKSUM"),
        text("STARTED_ON"),
        text("COMPLETED_ON"),
        text("PREVIOUS") or NONE_VERSION,
        text("ERROR_REASON") or NO_ERROR,
    )

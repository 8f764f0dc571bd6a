"""How much a step can hurt (pure): create, delete, restart, or destructive.

Every PUT of a config restarts the connector and its tasks (Connect's ConnectorsResource
writes the config topic; the herder restarts on the new config), so every update is at least a
`restart`. An update is `destructive` when one of its changed keys loses or duplicates data or
history. The table below is the one place that says which keys, and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from hephaestus.classes import JDBC_SINK_CLASSES as JDBC_SINKS
from hephaestus.classes import POSTGRES_SOURCE as POSTGRES

Risk = Literal["", "create", "delete", "restart", "destructive"]


# Debezium PostgreSQL source (Debezium 3.x connector reference, "Connector properties"):
SOURCE_KEYS: dict[str, str] = {
    # The slot holds the stream's position: a new name starts a new slot from "now" (the
    # changes in between are lost) or re-snapshots; the old slot keeps retaining WAL.
    "slot.name": "a new replication slot: changes since the old slot's position are lost or re-snapshotted, "
    "and the old slot keeps retaining WAL",
    # Which tables' changes the server sends; publication.autocreate.mode=disabled here.
    "publication.name": "another publication: tables it lacks stop streaming",
    # Topic names and the key of the stored offsets derive from it: new topics, offsets not found.
    "topic.prefix": "new topic names and offsets key: consumers see a new stream, the source re-snapshots",
    # Another database behind the same slot name and offsets: the position means nothing there.
    "database.dbname": "another database: stored offsets and the slot belong to the old one",
    "database.hostname": "another server: stored offsets and the slot belong to the old one",
    # The decoding plugin is fixed when a slot is created; the slot must be recreated.
    "plugin.name": "another logical decoding plugin: the existing slot cannot be read",
    "connector.class": "another connector: its offsets and semantics do not carry over",
}
# Snapshot modes that read the tables again (duplicates downstream), per Debezium's
# snapshot.mode documentation: `always` on every start, `when_needed` when offsets look stale,
# `recovery` rebuilds the schema history from a snapshot.
RESNAPSHOT_MODES = frozenset({"always", "when_needed", "recovery"})

# JDBC sinks (Debezium JDBC sink and Confluent JDBC sink references):
SINK_KEYS: dict[str, str] = {
    # Which rows are which: a new key writes duplicates or updates the wrong rows.
    "primary.key.mode": "another primary-key mode: rows are matched differently (duplicates or overwrites)",
    "primary.key.fields": "another primary key: rows are matched differently (duplicates or overwrites)",
    "pk.mode": "another primary-key mode: rows are matched differently (duplicates or overwrites)",
    "pk.fields": "another primary key: rows are matched differently (duplicates or overwrites)",
    # Where rows go: the new table misses every row written before.
    "collection.name.format": "another target table: rows written so far stay in the old one",
    "table.name.format": "another target table: rows written so far stay in the old one",
    # insert vs upsert vs update: an insert-only sink fails or duplicates on replays.
    "insert.mode": "another write mode: replays may fail or duplicate rows",
    # Deletes start or stop reaching the table.
    "delete.enabled": "deletes start or stop reaching the table",
    "topics.regex": "another topic pattern: topics it no longer matches stop being replicated",
    "connector.class": "another connector: its consumer group offsets and semantics do not carry over",
}


@dataclass(frozen=True)
class Assessed:
    risk: Risk
    reasons: tuple[tuple[str, str], ...] = ()  # (key, why) that made it destructive


def assess(
    action: str, cls: str, before: Mapping[str, str], after: Mapping[str, str], changed: tuple[str, ...]
) -> Assessed:
    """The class of one step, with the keys that put it there."""
    if action in ("create", "delete"):
        return Assessed(action)  # type: ignore[arg-type]
    if action not in ("update", "rename"):
        return Assessed("")
    reasons = _destructive(before.get("connector.class", cls) or cls, before, after, changed)
    return Assessed("destructive" if reasons else "restart", reasons)


def _destructive(
    cls: str, before: Mapping[str, str], after: Mapping[str, str], changed: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    if cls == POSTGRES:
        found = [(k, SOURCE_KEYS[k]) for k in changed if k in SOURCE_KEYS]
        mode = after.get("snapshot.mode", "")
        if "snapshot.mode" in changed and mode in RESNAPSHOT_MODES:
            found.append(("snapshot.mode", f"`{mode}` reads the tables again: every row is emitted twice"))
        return tuple(found)
    if cls in JDBC_SINKS:
        found = [(k, SINK_KEYS[k]) for k in changed if k in SINK_KEYS]
        lost = _topics(before) - _topics(after)
        if "topics" in changed and lost:
            found.append(("topics", f"stops reading {', '.join(sorted(lost))}: its rows stop arriving"))
        return tuple(found)
    return ()


def _topics(config: Mapping[str, str]) -> set[str]:
    return {t.strip() for t in config.get("topics", "").split(",") if t.strip()}

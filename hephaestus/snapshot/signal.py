"""Debezium incremental-snapshot signals, as values (pure).

A signal is one row in the source's signal table: (id, type, data). Debezium reads it from
the WAL like any change, and answers with notifications carrying the same id.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import POSTGRES_SOURCE, captured

SIGNAL_ID_MAX = 42  # the signal table's id is VARCHAR(42)
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


@dataclass(frozen=True)
class Signal:
    id: str
    type: str  # execute-snapshot | stop-snapshot
    data: str  # JSON text, as Debezium reads it

    def row(self) -> tuple[str, str, str]:
        return (self.id, self.type, self.data)


def ulid(now_ms: int | None = None, randomness: bytes | None = None) -> str:
    """A ULID: 48-bit millisecond time + 80 random bits, Crockford base32 (26 chars, sortable)."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    rand = os.urandom(10) if randomness is None else randomness
    value = (ms << 80) | int.from_bytes(rand, "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def signal_id(source_id: str, suffix: str | None = None) -> str:
    """`<source>-<ULID>` as in the reference, the source part cut so the whole fits VARCHAR(42)."""
    tail = suffix or ulid()
    return f"{source_id[: SIGNAL_ID_MAX - len(tail) - 1]}-{tail}"


def execute_snapshot(source_id: str, tables: Sequence[str], where: str | None = None) -> Signal:
    data: dict[str, object] = {"data-collections": list(tables), "type": "incremental"}
    if where:
        data["additional-conditions"] = [{"data-collection": t, "filter": where} for t in tables]
    return Signal(signal_id(source_id), "execute-snapshot", json.dumps(data))


def stop_snapshot(source_id: str, tables: Sequence[str]) -> Signal:
    data: dict[str, object] = {"type": "incremental"}
    if tables:
        data["data-collections"] = list(tables)
    return Signal(signal_id(source_id), "stop-snapshot", json.dumps(data))


def newly_captured(before: Mapping[str, str] | None, after: Mapping[str, str]) -> list[str]:
    """Tables an update adds to a source's capture list (the reference's GetNewCapturedCapture)."""
    old = set(captured(before or {}))
    return [t for t in captured(after) if t not in old]


def check_capturable(config: Mapping[str, str], tables: Sequence[str], connector: str) -> None:
    """Refuse a signal Debezium would silently skip: a table the source does not capture."""
    if config.get("connector.class") != POSTGRES_SOURCE:
        raise HephaestusError(f"{connector} is not a Debezium PostgreSQL source")
    if "signal.data.collection" not in config:
        raise HephaestusError(f"{connector} has no signal.data.collection: it cannot receive signals")
    missing = [t for t in tables if t not in captured(config)]
    if missing:
        raise HephaestusError(
            f"{connector} does not capture {', '.join(missing)} (table.include.list); "
            "Debezium would skip it with UNKNOWN_SCHEMA: add it to the definition first"
        )

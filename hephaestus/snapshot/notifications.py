"""Debezium notifications for a signal (edge: confluent-kafka reads the notification topic).

Debezium never fails on a bad signal — it reports it. Reading these is how a user learns that
a back-fill silently did nothing (a table skipped as UNKNOWN_SCHEMA or NO_PRIMARY_KEY).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from hephaestus import kafka
from hephaestus.errors import HephaestusError
from hephaestus.records import SchemaRegistry, decode

GOOD_SCAN = frozenset({"SUCCEEDED", "EMPTY"})


@dataclass(frozen=True)
class Notification:
    id: str
    type: str  # STARTED, IN_PROGRESS, TABLE_SCAN_COMPLETED, COMPLETED, ABORTED, PAUSED, RESUMED …
    collection: str
    status: str  # for TABLE_SCAN_COMPLETED: SUCCEEDED, EMPTY, NO_PRIMARY_KEY, UNKNOWN_SCHEMA …


@dataclass(frozen=True)
class SnapshotReport:
    signal_id: str
    events: tuple[Notification, ...]

    @property
    def completed(self) -> bool:
        return any(e.type in ("COMPLETED", "ABORTED") for e in self.events)

    @property
    def failed_tables(self) -> tuple[Notification, ...]:
        return tuple(e for e in self.events if e.type == "TABLE_SCAN_COMPLETED" and e.status not in GOOD_SCAN)


def parse(raw: bytes | None, registry: SchemaRegistry | None = None) -> Notification | None:
    """One notification record: JSON (with or without the schema envelope) or Confluent Avro
    (the reference's converters); anything else is not a notification of ours."""
    decoded = decode(raw, registry)
    if decoded.kind not in ("json", "avro") or not isinstance(decoded.value, dict):
        return None
    value: dict[str, Any] = decoded.value
    value = value.get("payload", value) if "schema" in value else value
    if not isinstance(value, dict) or value.get("aggregate_type") != "Incremental Snapshot":
        return None
    extra = value.get("additional_data") or {}
    return Notification(
        str(value.get("id", "")),
        str(value.get("type", "")),
        str(extra.get("data_collection", extra.get("data_collections", ""))),
        str(extra.get("status", "")),
    )


def read(
    bootstrap: str, topic: str, signal_id: str, timeout_s: float, until_done: bool, registry_url: str | None = None
) -> SnapshotReport:
    """Every notification of `signal_id` from the start of `topic`; with `until_done`, wait
    (bounded) until the snapshot COMPLETED. Avro records are decoded with the registry."""
    registry = SchemaRegistry(registry_url) if registry_url else None
    try:
        return _read(bootstrap, topic, signal_id, timeout_s, until_done, registry)
    finally:
        if registry is not None:
            registry.close()


def _read(
    bootstrap: str, topic: str, signal_id: str, timeout_s: float, until_done: bool, registry: SchemaRegistry | None
) -> SnapshotReport:
    events: list[Notification] = []
    deadline = time.monotonic() + timeout_s
    for note in _records(bootstrap, topic, deadline, registry):
        if isinstance(note, Notification) and note.id == signal_id:
            events.append(note)
        report = SnapshotReport(signal_id, tuple(events))
        if report.completed or (note is CAUGHT_UP and not until_done):
            return report
    return SnapshotReport(signal_id, tuple(events))


CAUGHT_UP = "caught up"  # what _records yields at the end of the topic


def _records(
    bootstrap: str, topic: str, deadline: float, registry: SchemaRegistry | None = None
) -> Iterator[Notification | str | None]:
    """Yields each record's notification (None: a record that is not one of ours), and
    CAUGHT_UP at the end of the topic (another notification kind, or a record that cannot be
    read, must not end the read early)."""
    consumer = kafka.consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"hephaestus-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    try:
        partitions = _partitions(consumer, topic)
        consumer.assign(partitions)
        at_end: set[int] = set()
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None and err.code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition() or 0)
                if len(at_end) == len(partitions):  # every partition read to its end
                    yield CAUGHT_UP
            elif err is not None:
                raise HephaestusError(f"reading {topic}: {err.str()}")
            else:
                at_end.discard(msg.partition())
                yield parse(msg.value(), registry)
    finally:
        consumer.close()


def _partitions(consumer: Any, topic: str) -> list[TopicPartition]:
    try:
        meta = consumer.list_topics(topic, timeout=10)
    except KafkaException as exc:
        raise HephaestusError(f"cannot reach Kafka to read {topic}: {exc}") from exc
    found = meta.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise HephaestusError(f"notification topic {topic} not found: has the source sent any notification yet?")
    return [TopicPartition(topic, p, 0) for p in found.partitions]

"""Read topics directly (confluent-kafka), independent of hephaestus: count what Debezium emitted."""

from __future__ import annotations

import json
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.stack.support import wait_until


def read_topic(bootstrap: str, topic: str, timeout: float = 20.0) -> list[dict[str, Any] | None]:
    """Every record value of `topic` from the beginning to its current end (None for tombstones)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics[topic]
        consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
        values: list[dict[str, Any] | None] = []
        at_end: set[int] = set()
        while len(at_end) < len(meta.partitions):
            msg = consumer.poll(timeout)
            assert msg is not None, f"no end of {topic} within {timeout}s"
            err = msg.error()
            if err is not None and err.code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition())
                continue
            assert err is None, err
            raw = msg.value()
            values.append(json.loads(raw) if raw else None)
        return values
    finally:
        consumer.close()


def ops(values: list[dict[str, Any] | None]) -> list[tuple[str, str]]:
    """(op, key) of each Debezium change event: r = snapshot read, c = insert, u, d."""
    out = []
    for v in values:
        if v is None:
            continue
        payload = v.get("payload", v)
        row = payload.get("after") or payload.get("before") or {}
        out.append((payload["op"], str(next(iter(row.values()), ""))))
    return out


def delete_topics(bootstrap: str, topics: list[str], timeout: float = 60.0) -> None:
    """Delete `topics` and wait until the broker lists none of them: a topic of the same name
    created before then (a worker's internal topic) could meet the old one's metadata."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics(topics, operation_timeout=timeout).values():
        future.result(timeout)
    wait_until(
        lambda: not set(topics) & set(admin.list_topics(timeout=10).topics),
        timeout=timeout,
        message=f"topics {topics} deleted",
    )

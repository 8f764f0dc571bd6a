"""Reading a signal's Debezium notifications (hephaestus.snapshot.notifications.read) through
the Kafka edge's seam (tests/unit/kafkafake.py): what is read, when the read ends, and what a
missing topic, an unreachable cluster or a broken record becomes.

The consumer below adds to kafkafake's what this read relies on, from confluent-kafka 2.x's
documented API and librdkafka's: `Consumer.list_topics(topic)` (a topic the broker lacks comes
back with an error, UNKNOWN_TOPIC_OR_PART), and with `enable.partition.eof` a `_PARTITION_EOF`
event once a partition is read to its end. The records are Debezium 3.x's notifications
(`aggregate_type` "Incremental Snapshot", `additional_data.data_collection` and `status`)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from hephaestus import kafka
from hephaestus.errors import HephaestusError
from hephaestus.snapshot import notifications as n
from tests.unit import kafkafake

TOPIC = "bob.notifications"


class Consumer(kafkafake.Consumer):
    def list_topics(self, topic: str, timeout: float) -> Any:
        if self.c.unreachable:
            raise kafkafake.broker_error("all brokers down")
        parts = {p: object() for t, p in self.c.logs if t == topic}
        error = None if parts else KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
        return SimpleNamespace(topics={topic: SimpleNamespace(partitions=parts, error=error)})

    def assign(self, parts: list[TopicPartition]) -> None:
        queue: list[kafkafake.Msg] = []
        for tp in parts:
            queue += [m for m in self.c.logs.get((tp.topic, tp.partition), []) if m.offset_ >= tp.offset]
            queue.append(kafkafake.Msg(tp.topic, tp.partition, -1, error_=KafkaError(KafkaError._PARTITION_EOF)))
        self.queue = queue


class Cluster(kafkafake.Cluster):
    def consumer(self, config: dict[str, Any]) -> kafkafake.Consumer:
        self.configs.append(config)
        return Consumer(self, config)

    def put(self, partition: int, *values: bytes) -> None:
        log = self.logs.setdefault((TOPIC, partition), [])
        log += [kafkafake.Msg(TOPIC, partition, len(log), value_=v) for v in values]


def note(signal: str, kind: str, table: str = "", status: str = "") -> bytes:
    extra = {"data_collection": table, "status": status} if table else {}
    doc = {"id": signal, "aggregate_type": "Incremental Snapshot", "type": kind, "additional_data": extra}
    return json.dumps(doc).encode()


def read(cluster: Cluster, timeout_s: float = 5.0, until_done: bool = False, **kw: Any) -> n.SnapshotReport:
    with kafka.seam(consumer=cluster.consumer):
        return n.read("b:9092", TOPIC, "sig-1", timeout_s, until_done, **kw)


def test_a_read_takes_the_signals_notifications_from_every_partition_until_caught_up() -> None:
    cluster = Cluster()
    cluster.put(0, note("sig-1", "STARTED"), note("other", "COMPLETED"), b"not json")
    cluster.put(1, note("sig-1", "TABLE_SCAN_COMPLETED", "public.t", "NO_PRIMARY_KEY"))
    got = read(cluster)
    assert got == n.SnapshotReport(
        "sig-1",
        (
            n.Notification("sig-1", "STARTED", "", ""),
            n.Notification("sig-1", "TABLE_SCAN_COMPLETED", "public.t", "NO_PRIMARY_KEY"),
        ),
    )
    assert not got.completed and got.failed_tables == (got.events[1],)
    (config,) = cluster.configs
    assert config["group.id"].startswith("hephaestus-") and config["auto.offset.reset"] == "earliest"
    assert config["enable.partition.eof"] is True and config["enable.auto.commit"] is False


def test_until_done_stops_at_the_signals_completion() -> None:
    cluster = Cluster()
    cluster.put(0, note("sig-1", "STARTED"), note("sig-1", "COMPLETED"), note("sig-1", "late"))
    got = read(cluster, until_done=True)
    assert [e.type for e in got.events] == ["STARTED", "COMPLETED"] and got.completed


def test_until_done_without_a_completion_reads_until_the_time_is_up() -> None:
    cluster = Cluster()
    cluster.put(0, note("sig-1", "STARTED"))
    got = read(cluster, timeout_s=0.05, until_done=True)
    assert [e.type for e in got.events] == ["STARTED"] and not got.completed
    assert cluster.polls > 2, "kept polling past the end of the topic"


def test_a_registry_given_is_closed_after_the_read() -> None:
    cluster = Cluster()
    cluster.put(0, note("sig-1", "ABORTED"))
    assert read(cluster, registry_url="http://registry.invalid:8081").completed


def test_a_topic_the_broker_lacks_is_named() -> None:
    with pytest.raises(HephaestusError, match=r"^notification topic bob\.notifications not found: has the source"):
        read(Cluster())


def test_an_unreachable_cluster_is_named() -> None:
    with pytest.raises(HephaestusError, match=r"^cannot reach Kafka to read bob\.notifications: "):
        read(Cluster(unreachable=True))


def test_a_record_the_broker_cannot_serve_stops_the_read_naming_the_topic() -> None:
    cluster = Cluster()
    cluster.put(0, note("sig-1", "STARTED"))
    broken = KafkaError(KafkaError._MSG_TIMED_OUT, "Local: Message timed out")
    cluster.logs[(TOPIC, 0)].append(kafkafake.Msg(TOPIC, 0, 1, error_=broken))
    with pytest.raises(HephaestusError, match=r"^reading bob\.notifications: Local: Message timed out$"):
        read(cluster)

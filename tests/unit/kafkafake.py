"""Fakes of confluent-kafka's clients, for the Kafka edge's seam (hephaestus.kafka.seam).

As strict as the client where the edge relies on it (confluent-kafka 2.x's documented API):
admin calls answer with futures keyed by what was asked, a consumer polls records only from
the partitions assigned to it and only from the assigned offset on, a producer refuses work
outside a transaction, and `abort_transaction` undoes what the transaction produced.
A broker-side failure is a real `KafkaException` wrapping a `KafkaError`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition


def done(value: Any) -> Future[Any]:
    f: Future[Any] = Future()
    f.set_result(value)
    return f


def failed(exc: BaseException) -> Future[Any]:
    f: Future[Any] = Future()
    f.set_exception(exc)
    return f


def broker_error(text: str) -> KafkaException:
    return KafkaException(KafkaError(KafkaError._TRANSPORT, text))


@dataclass
class Msg:
    topic_: str
    partition_: int
    offset_: int
    value_: bytes | None = b"v"
    key_: bytes | None = b"k"
    headers_: list[tuple[str, bytes]] = field(default_factory=list)
    ts: int = 1_700_000_000_000
    error_: KafkaError | None = None

    def topic(self) -> str:
        return self.topic_

    def partition(self) -> int:
        return self.partition_

    def offset(self) -> int:
        return self.offset_

    def value(self) -> bytes | None:
        return self.value_

    def key(self) -> bytes | None:
        return self.key_

    def headers(self) -> list[tuple[str, bytes]]:
        return self.headers_

    def timestamp(self) -> tuple[int, int]:
        return (1, self.ts)

    def error(self) -> KafkaError | None:
        return self.error_


@dataclass
class Cluster:
    """A broker's state: topics' records by partition, log starts, groups' offsets."""

    logs: dict[tuple[str, int], list[Msg]] = field(default_factory=dict)
    starts: dict[tuple[str, int], int] = field(default_factory=dict)
    groups: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    produced: list[tuple[str, int, bytes | None]] = field(default_factory=list)
    unreachable: bool = False
    fail_commit_after: int | None = None  # commits that succeed before one fails
    commits: list[int] = field(default_factory=list)  # the records of each committed transaction
    polls: int = 0  # every consumer's polls, all told
    configs: list[dict[str, Any]] = field(default_factory=list)
    # Topics created through the admin API: (topic, partitions, replication factor, config).
    created: list[tuple[str, int, int, dict[str, str]]] = field(default_factory=list)
    refuse_create: dict[str, str] = field(default_factory=dict)  # topic -> the broker's error
    on_create: Callable[[str], None] | None = None  # called as each topic is created

    def add(self, topic: str, partition: int, count: int, start: int = 0) -> None:
        self.logs[(topic, partition)] = [Msg(topic, partition, o) for o in range(start, start + count)]
        self.starts[(topic, partition)] = start

    def end(self, tp: tuple[str, int]) -> int:
        return self.starts.get(tp, 0) + len(self.logs.get(tp, []))

    def admin(self, config: dict[str, Any]) -> Admin:
        self.configs.append(config)
        return Admin(self)

    def consumer(self, config: dict[str, Any]) -> Consumer:
        self.configs.append(config)
        return Consumer(self, config)

    def producer(self, config: dict[str, Any]) -> Producer:
        self.configs.append(config)
        return Producer(self)


class Admin:
    def __init__(self, cluster: Cluster) -> None:
        self.c = cluster

    def list_topics(self, timeout: float) -> Any:
        if self.c.unreachable:
            raise broker_error("all brokers down")
        topics: dict[str, Any] = {}
        for t, p in self.c.logs:
            topics.setdefault(t, SimpleNamespace(partitions={}, error=None)).partitions[p] = object()
        return SimpleNamespace(topics=topics)

    def create_topics(self, asked: list[Any], request_timeout: float, operation_timeout: float) -> dict[str, Any]:
        out: dict[str, Future[Any]] = {}
        for t in asked:
            if self.c.unreachable or t.topic in self.c.refuse_create:
                out[t.topic] = failed(broker_error(self.c.refuse_create.get(t.topic, "all brokers down")))
            elif any(topic == t.topic for topic, _ in self.c.logs):
                exists = KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, f"Topic '{t.topic}' already exists.")
                out[t.topic] = failed(KafkaException(exists))
            else:
                for p in range(max(t.num_partitions, 1)):
                    self.c.add(t.topic, p, 0)
                self.c.created.append((t.topic, t.num_partitions, t.replication_factor, dict(t.config)))
                if self.c.on_create:
                    self.c.on_create(t.topic)
                out[t.topic] = done(None)
        return out

    def list_offsets(self, asked: dict[TopicPartition, Any], request_timeout: float) -> dict[Any, Future[Any]]:
        out = {}
        for tp, spec in asked.items():
            key = (tp.topic, tp.partition)
            offset = self.c.starts.get(key, 0) if type(spec).__name__ == "EarliestSpec" else self.c.end(key)
            out[tp] = done(SimpleNamespace(offset=offset))
        return out

    def list_consumer_group_offsets(self, asked: list[Any], request_timeout: float) -> dict[str, Future[Any]]:
        (group,) = asked
        positions = self.c.groups.get(group.group_id, {})
        tps = [TopicPartition(t, p, o) for (t, p), o in sorted(positions.items())]
        return {group.group_id: done(SimpleNamespace(topic_partitions=tps))}

    def delete_records(self, parts: list[TopicPartition], request_timeout: float) -> dict[Any, Future[Any]]:
        out = {}
        for tp in parts:
            key = (tp.topic, tp.partition)
            if key not in self.c.logs:
                out[tp] = failed(broker_error(f"unknown topic {tp.topic}"))
                continue
            self.c.logs[key] = [m for m in self.c.logs[key] if m.offset_ >= tp.offset]
            self.c.starts[key] = tp.offset
            out[tp] = done(SimpleNamespace(low_watermark=tp.offset))
        return out


class Consumer:
    def __init__(self, cluster: Cluster, config: dict[str, Any]) -> None:
        self.c = cluster
        self.group = config["group.id"]
        self.queue: list[Msg] = []
        self.closed = False

    def assign(self, parts: list[TopicPartition]) -> None:
        self.queue = [
            m for tp in parts for m in self.c.logs.get((tp.topic, tp.partition), []) if m.offset_ >= tp.offset
        ]

    def poll(self, timeout: float) -> Msg | None:
        assert not self.closed, "poll on a closed consumer"
        self.c.polls += 1
        return self.queue.pop(0) if self.queue else None

    def consumer_group_metadata(self) -> str:
        return self.group

    def close(self) -> None:
        self.closed = True


class Producer:
    def __init__(self, cluster: Cluster) -> None:
        self.c = cluster
        self.open: list[tuple[str, int, bytes | None]] | None = None
        self.offsets: list[TopicPartition] = []
        self.commits = 0
        self.initialised = False

    def init_transactions(self, timeout: float) -> None:
        self.initialised = True

    def begin_transaction(self) -> None:
        assert self.initialised and self.open is None, "begin_transaction outside init or inside a transaction"
        self.open = []

    def produce(self, topic: str, key: Any, value: Any, headers: Any, partition: int) -> None:
        assert self.open is not None, "produce outside a transaction"
        self.open.append((topic, partition, value))

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], meta: str, timeout: float) -> None:
        assert self.open is not None
        self.offsets = offsets
        self._meta = meta

    def commit_transaction(self, timeout: float) -> None:
        assert self.open is not None
        if self.c.fail_commit_after is not None and self.commits >= self.c.fail_commit_after:
            raise broker_error("transaction coordinator gone")
        self.c.produced.extend(self.open)
        self.c.commits.append(len(self.open))
        group = self.c.groups.setdefault(self._meta, {})
        group.update({(tp.topic, tp.partition): tp.offset for tp in self.offsets})
        self.open, self.commits = None, self.commits + 1

    def abort_transaction(self, timeout: float) -> None:
        self.open = None  # nothing produced in it becomes visible


Factory = Callable[[dict[str, Any]], Any]

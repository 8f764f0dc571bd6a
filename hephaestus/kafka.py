"""Kafka where hephaestus reads or writes it (edge: confluent-kafka's admin, consumer, producer).

One place for the broker calls of `dlq`, `status` and the exporter, each batched: offsets of
many partitions in one `list_offsets`, group positions requested together and awaited once.
Every failure is a HephaestusError naming what was asked; librdkafka's own messages name only
brokers and topics, never credentials (the bootstrap string holds none).

The edge makes every client (`admin`, `consumer`, `producer`), so the test seam is one:
`seam(admin=…, consumer=…, producer=…)` hands in fakes, as `httpx.MockTransport` does for
HTTP and `pg.seam` for PostgreSQL. confluent-kafka is imported when a client is first made.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hephaestus.errors import HephaestusError

TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Span:
    """What one partition holds: offsets [start, end)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def depth(self) -> int:
        return max(self.end - self.start, 0)


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


Factory = Callable[[dict[str, Any]], Any]
_fakes: dict[str, Factory] = {}  # the seam: a client kind -> its fake's factory


def _client(kind: str, config: dict[str, Any]) -> Any:
    if kind in _fakes:
        return _fakes[kind](config)
    import confluent_kafka
    from confluent_kafka.admin import AdminClient

    made: dict[str, Factory] = {
        "admin": AdminClient,
        "consumer": confluent_kafka.Consumer,
        "producer": confluent_kafka.Producer,
    }
    return made[kind](config)


def consumer(config: dict[str, Any]) -> Any:
    """A consumer of `config` (librdkafka's keys)."""
    return _client("consumer", config)


@contextmanager
def seam(**fakes: Factory) -> Iterator[None]:
    """Tests: the clients of the kinds given (admin, consumer, producer) come from these."""
    unknown = set(fakes) - {"admin", "consumer", "producer"}
    assert not unknown, f"no such Kafka client: {unknown}"
    before = dict(_fakes)
    _fakes.update(fakes)
    try:
        yield
    finally:
        _fakes.clear()
        _fakes.update(before)


def _admin(bootstrap: str, timeout_s: float = TIMEOUT_S) -> Any:
    # log_level 4: librdkafka warnings and worse; its info lines (a client destroyed with a
    # background event unserved) would reach stderr on every read. The logger: its lines go
    # to Python's logging, not stderr, and only when polled, which nothing does. An unreachable
    # broker wrote a line every 50 ms to stderr; the failure is raised and named once instead.
    config = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": int(timeout_s * 1000),
        "log_level": 4,
        "logger": _RDKAFKA,
    }
    return _client("admin", config)


_RDKAFKA = logging.getLogger("hephaestus.kafka.librdkafka")


def _wait(futures: Mapping[Any, Any], what: str, timeout_s: float = TIMEOUT_S) -> dict[Any, Any]:
    from confluent_kafka import KafkaException

    out = {}
    for key, future in futures.items():
        try:
            out[key] = future.result(timeout=timeout_s)
        except KafkaException as exc:
            raise HephaestusError(f"Kafka: {what}: {exc.args[0].str() if exc.args else exc}") from exc
        except Exception as exc:  # noqa: BLE001 - a timeout or a closed client: name what was asked
            raise HephaestusError(f"Kafka: {what}: {type(exc).__name__}: {exc}") from exc
    return out


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: -1 partitions or replication factor take the broker's default."""

    name: str
    partitions: int = -1
    replication: int = -1
    config: tuple[tuple[str, str], ...] = ()


def topic_names(bootstrap: str) -> frozenset[str]:
    """Every topic the cluster has, in one metadata call."""
    try:
        meta = _admin(bootstrap).list_topics(timeout=TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - KafkaException on an unreachable cluster
        raise HephaestusError(f"cannot reach Kafka at {bootstrap}: {exc}") from exc
    return frozenset(meta.topics)


def create_topics(bootstrap: str, topics: Sequence[NewTopic]) -> tuple[dict[str, str], dict[str, str]]:
    """Create each topic: (done, failed), each topic → what the broker said. "already exists"
    is done (another writer was first: the same end); nothing raised past the admin call."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic as Asked  # type: ignore[attr-defined]

    asked = [
        Asked(t.name, num_partitions=t.partitions, replication_factor=t.replication, config=dict(t.config))
        for t in topics
    ]
    admin = _admin(bootstrap)  # held until every answer is in: a client collected cancels its futures
    try:
        futures = admin.create_topics(asked, request_timeout=TIMEOUT_S, operation_timeout=TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - KafkaException on an unreachable cluster, a bad argument
        return {}, {t.name: f"cannot reach Kafka at {bootstrap}: {exc}" for t in topics}
    done, failed = {}, {}
    for name, future in futures.items():
        try:
            future.result(timeout=TIMEOUT_S)
            done[name] = "created"
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if error is not None and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                done[name] = "already exists"
            else:
                failed[name] = _kafka_text(exc)
        except Exception as exc:  # noqa: BLE001 - a timeout or a closed client
            failed[name] = f"{type(exc).__name__}: {exc}"
    return done, failed


def spans(bootstrap: str, topics: Sequence[str], *, timeout_s: float = TIMEOUT_S) -> dict[str, tuple[Span, ...]]:
    """Start and end offsets of every partition of `topics` (a missing topic: no partitions),
    in one metadata call and one batched offsets call per end, each waited for `timeout_s`."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    admin = _admin(bootstrap, timeout_s)
    try:
        meta = admin.list_topics(timeout=timeout_s)
    except Exception as exc:  # noqa: BLE001 - KafkaException on an unreachable cluster
        raise HephaestusError(f"cannot reach Kafka at {bootstrap} within {timeout_s:g} s: {exc}") from exc
    parts = [
        TopicPartition(t, p) for t in sorted(set(topics)) if t in meta.topics for p in sorted(meta.topics[t].partitions)
    ]
    if not parts:
        return {t: () for t in topics}
    specs = (OffsetSpec.earliest(), OffsetSpec.latest())  # type: ignore[no-untyped-call]
    ends = [
        _wait(admin.list_offsets(dict.fromkeys(parts, spec), request_timeout=timeout_s), "list offsets", timeout_s)
        for spec in specs
    ]
    found: dict[str, list[Span]] = {t: [] for t in topics}
    for tp in parts:
        start, end = (_offset_of(e, tp) for e in ends)
        found[tp.topic].append(Span(tp.topic, tp.partition, start, end))
    return {t: tuple(v) for t, v in found.items()}


def _offset_of(results: dict[Any, Any], tp: Any) -> int:
    for key, value in results.items():
        if key.topic == tp.topic and key.partition == tp.partition:
            return int(value.offset)
    raise HephaestusError(f"Kafka: no offset for {tp.topic}[{tp.partition}]")


def committed(
    bootstrap: str, groups: Sequence[str], *, timeout_s: float = TIMEOUT_S
) -> dict[str, dict[tuple[str, int], int]]:
    """Each consumer group's committed offsets by (topic, partition); an unknown group: {}."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    if not groups:
        return {}
    admin = _admin(bootstrap, timeout_s)
    futures = {
        g: next(
            iter(
                admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=timeout_s).values()
            )
        )
        for g in groups
    }
    out: dict[str, dict[tuple[str, int], int]] = {}
    for group, result in _wait(futures, "list consumer group offsets", timeout_s).items():
        out[group] = {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or () if tp.offset >= 0}
    return out


def delete_before(bootstrap: str, positions: Mapping[tuple[str, int], int]) -> None:
    """Delete every record below each partition's offset (the log start moves up to it)."""
    from confluent_kafka import TopicPartition

    admin = _admin(bootstrap)
    parts = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
    _wait(admin.delete_records(parts, request_timeout=TIMEOUT_S), "delete records")


def read(
    bootstrap: str,
    froms: Mapping[tuple[str, int], int],
    ends: Mapping[tuple[str, int], int],
    limit: int | None = None,
    *,
    timeout_s: float = TIMEOUT_S,
) -> Iterator[Record]:
    """Records of each partition from its offset up to (not including) its end, partition after
    partition; at most `limit` in all. Bounded: a partition that stops yielding for three
    `timeout_s` ends the read."""
    from confluent_kafka import TopicPartition

    todo = {tp: o for tp, o in froms.items() if o < ends.get(tp, 0)}
    if not todo:
        return
    reader = consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"hephaestus-read-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    try:
        reader.assign([TopicPartition(t, p, o) for (t, p), o in todo.items()])
        yield from _drain(reader, todo, ends, limit, timeout_s)
    finally:
        reader.close()


def timestamps(
    bootstrap: str, positions: Mapping[tuple[str, int], int], *, timeout_s: float = TIMEOUT_S
) -> dict[tuple[str, int], int]:
    """The timestamp of the record at each (topic, partition)'s offset: one consumer, one record a
    partition (a partition whose offset holds no record, or no timestamp, is left out)."""
    found = read(bootstrap, positions, {tp: o + 1 for tp, o in positions.items()}, timeout_s=timeout_s)
    return {(r.topic, r.partition): r.timestamp_ms for r in found if r.timestamp_ms is not None}


def _drain(
    consumer: Any,
    todo: dict[tuple[str, int], int],
    ends: Mapping[tuple[str, int], int],
    limit: int | None,
    timeout_s: float,
) -> Iterator[Record]:
    count, deadline = 0, time.monotonic() + timeout_s * 3
    while todo and (limit is None or count < limit) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error() is not None:
            raise HephaestusError(f"Kafka: reading {msg.topic()}: {msg.error().str()}")
        tp = (msg.topic(), msg.partition())
        if tp not in todo:
            continue
        if msg.offset() >= ends[tp]:  # past the end: the offsets before it hold no record (a
            del todo[tp]  # transaction's marker, a compacted or expired record), so it is done
            continue
        todo[tp] = msg.offset() + 1
        if todo[tp] >= ends[tp]:
            del todo[tp]
        count += 1
        deadline = time.monotonic() + timeout_s * 3
        kind, ts = msg.timestamp()
        yield Record(
            msg.topic(),
            msg.partition(),
            msg.offset(),
            ts if kind else None,
            msg.key(),
            msg.value(),
            tuple(msg.headers() or ()),
        )


Outgoing = tuple[Record, str, int]  # a record read, and the topic and partition it goes to


def replay(
    bootstrap: str,
    transactional_id: str,
    group: str,
    records: Iterator[Outgoing],
    chunk: int = 500,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Copy records, in transactions of `chunk`: each transaction writes its records (key, value,
    the record's own headers, to the topic and partition given) and, in the same transaction,
    moves `group`'s committed offsets past the records it read. A run killed or failing
    half-way leaves every committed chunk sent once and every other one not at all (aborted,
    invisible to read_committed consumers): a rerun starts after the last committed chunk. The
    transactional id fences a second replay of the same records running at once."""
    from confluent_kafka import KafkaException

    producer = _client(
        "producer",
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "enable.idempotence": True,
            "acks": "all",
        },
    )
    group_of = consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    sent = 0
    try:
        producer.init_transactions(TIMEOUT_S * 3)
        for batch in _chunks(records, chunk):
            _transaction(producer, group_of, group, batch)
            sent += len(batch)
            if progress:
                progress(sent)
    except KafkaException as exc:
        raise HephaestusError(f"Kafka: replay stopped after {sent} record(s) committed: {_kafka_text(exc)}") from exc
    finally:
        group_of.close()
    return sent


def _transaction(producer: Any, group_of: Any, group: str, batch: list[Outgoing]) -> None:
    from confluent_kafka import KafkaException, TopicPartition

    producer.begin_transaction()
    try:
        for record, topic, partition in batch:
            headers = [(k, v or b"") for k, v in record.headers]
            producer.produce(topic, key=record.key, value=record.value, headers=headers, partition=partition)
        read = {}
        for record, _, _ in batch:
            read[(record.topic, record.partition)] = record.offset + 1
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(read.items())]
        producer.send_offsets_to_transaction(offsets, group_of.consumer_group_metadata(), TIMEOUT_S * 3)
        producer.commit_transaction(TIMEOUT_S * 3)
    except KafkaException:
        producer.abort_transaction(TIMEOUT_S * 3)
        raise


def _chunks(records: Iterator[Outgoing], size: int) -> Iterator[list[Outgoing]]:
    batch: list[Outgoing] = []
    for r in records:
        batch.append(r)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _kafka_text(exc: Exception) -> str:
    return exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)

"""The Kafka edge (hephaestus.kafka) through its seam: what each call asks the brokers, and how
their failures reach the user. tests/stack covers a real Kafka 4 broker."""

from __future__ import annotations

import logging

import pytest

from hephaestus import kafka
from hephaestus.errors import HephaestusError
from tests.unit.kafkafake import Cluster


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.add("dlq", 0, 5, start=2)
    c.add("dlq", 1, 0)
    c.add("other", 0, 3)
    return c


def seam(c: Cluster) -> object:
    return kafka.seam(admin=c.admin, consumer=c.consumer, producer=c.producer)


def test_spans_read_every_partitions_start_and_end_and_a_missing_topic_has_none(cluster: Cluster) -> None:
    with seam(cluster):
        found = kafka.spans("b:9092", ["dlq", "absent"])
    assert found == {
        "dlq": (kafka.Span("dlq", 0, 2, 7), kafka.Span("dlq", 1, 0, 0)),
        "absent": (),
    }
    assert [s.depth for s in found["dlq"]] == [5, 0]
    assert cluster.configs[0] == {
        "bootstrap.servers": "b:9092",
        "socket.timeout.ms": 10_000,
        "log_level": 4,
        "logger": logging.getLogger("hephaestus.kafka.librdkafka"),
    }


def test_no_known_topic_asks_for_no_offsets(cluster: Cluster) -> None:
    with seam(cluster):
        assert kafka.spans("b:9092", ["absent"]) == {"absent": ()}


def test_an_unreachable_cluster_is_named(cluster: Cluster) -> None:
    cluster.unreachable = True
    with seam(cluster), pytest.raises(HephaestusError, match="^cannot reach Kafka at b:9092 within 10 s: "):
        kafka.spans("b:9092", ["dlq"])


def test_committed_offsets_per_group_and_an_unknown_group_is_empty(cluster: Cluster) -> None:
    cluster.groups["connect-sink"] = {("dlq", 0): 4, ("dlq", 1): -1001}
    with seam(cluster):
        assert kafka.committed("b:9092", ["connect-sink", "nobody"]) == {"connect-sink": {("dlq", 0): 4}, "nobody": {}}
        assert kafka.committed("b:9092", []) == {}


def test_delete_before_moves_the_log_start_and_a_broker_refusal_names_the_call(cluster: Cluster) -> None:
    with seam(cluster):
        kafka.delete_before("b:9092", {("dlq", 0): 5})
        assert kafka.spans("b:9092", ["dlq"])["dlq"][0] == kafka.Span("dlq", 0, 5, 7)
        with pytest.raises(HephaestusError, match="^Kafka: delete records: unknown topic nope"):
            kafka.delete_before("b:9092", {("nope", 0): 1})


def test_read_yields_each_partition_from_its_offset_to_its_end_and_stops_at_the_limit(cluster: Cluster) -> None:
    ends = {("dlq", 0): 6, ("other", 0): 3}
    with seam(cluster):
        got = [(r.topic, r.offset) for r in kafka.read("b:9092", {("dlq", 0): 3, ("other", 0): 1}, ends)]
        assert got == [("dlq", 3), ("dlq", 4), ("dlq", 5), ("other", 1), ("other", 2)]
        assert len(list(kafka.read("b:9092", {("dlq", 0): 2}, ends, limit=2))) == 2
        assert list(kafka.read("b:9092", {("dlq", 0): 6}, ends)) == [], "nothing to read: no consumer"
    reader = cluster.configs[0]
    assert reader["enable.auto.commit"] is False and reader["group.id"].startswith("hephaestus-read-")


def test_a_record_error_while_reading_is_named(cluster: Cluster) -> None:
    from confluent_kafka import KafkaError

    cluster.logs[("dlq", 0)][0].error_ = KafkaError(KafkaError._TRANSPORT, "broker gone")
    with seam(cluster), pytest.raises(HephaestusError, match="^Kafka: reading dlq: broker gone"):
        list(kafka.read("b:9092", {("dlq", 0): 2}, {("dlq", 0): 7}))


def outgoing(cluster: Cluster, n: int) -> list[kafka.Outgoing]:
    with seam(cluster):
        records = list(kafka.read("b:9092", {("dlq", 0): 2}, {("dlq", 0): 2 + n}))
    return [(r, "users", 0) for r in records]


def test_a_replay_commits_chunks_with_the_groups_offsets_in_the_same_transaction(cluster: Cluster) -> None:
    seen: list[int] = []
    with seam(cluster):
        sent = kafka.replay("b:9092", "tx-1", "replayer", iter(outgoing(cluster, 5)), chunk=2, progress=seen.append)
    assert sent == 5 and seen == [2, 4, 5]
    assert [(t, p) for t, p, _ in cluster.produced] == [("users", 0)] * 5
    assert cluster.groups["replayer"] == {("dlq", 0): 7}, "the group moved past every record sent"
    producer_config = next(c for c in cluster.configs if "transactional.id" in c)
    assert producer_config["enable.idempotence"] is True and producer_config["acks"] == "all"


def test_a_replay_failing_half_way_keeps_committed_chunks_and_sends_the_rest_never(cluster: Cluster) -> None:
    cluster.fail_commit_after = 1
    records = outgoing(cluster, 5)
    with seam(cluster), pytest.raises(HephaestusError, match=r"^Kafka: replay stopped after 2 record\(s\) committed"):
        kafka.replay("b:9092", "tx-1", "replayer", iter(records), chunk=2)
    assert len(cluster.produced) == 2 and cluster.groups["replayer"] == {("dlq", 0): 4}


def test_the_seam_refuses_a_client_kind_that_does_not_exist() -> None:
    with pytest.raises(AssertionError), kafka.seam(broker=lambda c: None):
        pass


def test_a_partition_whose_offsets_up_to_the_end_hold_no_record_ends_the_read_at_once(cluster: Cluster) -> None:
    """A transaction's commit marker (or a compacted record) takes an offset no consumer sees:
    the read ends at the first record past the end instead of polling until its deadline."""
    cluster.logs[("dlq", 0)] = [m for m in cluster.logs[("dlq", 0)] if m.offset_ != 3]  # offset 3: a marker
    with seam(cluster):
        got = list(kafka.read("b:9092", {("dlq", 0): 3}, {("dlq", 0): 4}))
    assert got == [] and cluster.polls == 1, cluster.polls

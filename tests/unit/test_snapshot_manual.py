"""`hephaestus snapshot` by hand (hephaestus.snapshot.manual): the connector located on its
cluster (the strict Connect double), the signal row written through the PostgreSQL seam
(tests/unit/pgfake.py) under the cluster's lock and audited, and a signal's outcome read through
the Kafka seam (test_snapshot_notifications.py's consumer).

The catalogue answers are PostgreSQL's: `to_regclass` NULL for a table that does not exist,
`pg_index.indisprimary`, `pg_replication_slots.active_pid` NULL while no walsender holds the
slot. The signal row's columns (id, type, data) are Debezium 3.x's signalling table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from hephaestus import kafka, pg
from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.errors import HephaestusError
from hephaestus.project import Cluster, Database, Project
from hephaestus.snapshot import manual
from tests.connect_double import ConnectDouble
from tests.unit.pgfake import Server
from tests.unit.test_snapshot_notifications import TOPIC, note, read
from tests.unit.test_snapshot_notifications import Cluster as Kafka

SOURCE = {
    "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "database.dbname": "bob",
    "topic.prefix": "bob",
    "slot.name": "bob_slot",
    "publication.name": "bob_pub",
    "signal.data.collection": "public.dbz_signals",
    "table.include.list": "public.users",
    "notification.enabled.channels": "sink",
    "notification.sink.topic.name": TOPIC,
}
INSERT = 'INSERT INTO "public"."dbz_signals" (id, type, data) VALUES (%s, %s, %s)'


def project(tmp_path: Path, **kw: Any) -> tuple[Project, Cluster]:
    cluster = Cluster("c", "http://c.test", tmp_path, ("bob_*",), **kw)
    dbs = {"bob": Database("bob", "dbname=bob")}
    return Project("p.yaml", {"c": cluster}, dbs, audit_log=tmp_path / "audit.jsonl", base=tmp_path), cluster


# -- where the connector runs


def factory(doubles: dict[str, ConnectDouble]) -> Any:
    def make(cluster: Cluster) -> ConnectClient:
        transport = httpx.MockTransport(doubles[cluster.name])
        return ConnectClient(cluster.url, transport=transport, retry=RetryPolicy.immediate(1))

    return make


def test_the_connector_is_located_on_the_selecting_cluster_that_runs_it(tmp_path: Path) -> None:
    first, second = Cluster("a", "http://a.test", tmp_path, ("bob_*",)), Cluster("b", "http://b.test", tmp_path)
    doubles = {"a": ConnectDouble(), "b": ConnectDouble()}
    doubles["b"].add("bob_src", SOURCE)
    got = manual.locate(Project("p.yaml", {}, {}), [first, second], "bob_src", client_factory=factory(doubles))
    assert got.cluster is second and got.config["slot.name"] == "bob_slot"


def test_a_connector_no_cluster_runs_is_named_with_the_clusters_asked(tmp_path: Path) -> None:
    first, second = Cluster("a", "http://a.test", tmp_path), Cluster("b", "http://b.test", tmp_path)
    doubles = {"a": ConnectDouble(), "b": ConnectDouble()}
    with pytest.raises(HephaestusError, match=r"^connector 'bob_src' not found on cluster\(s\) a, b$"):
        manual.locate(Project("p.yaml", {}, {}), [first, second], "bob_src", client_factory=factory(doubles))


# -- the signal row


class Source(Server):
    """The source database: `users` with a key, the signal table, the slot held by a walsender."""

    def __init__(self, fail_insert: bool = False) -> None:
        super().__init__(handlers=[self.answer])
        self.tables = {'"public"."users"', '"public"."dbz_signals"'}
        self.inserted: list[list[Any]] = []
        self.fail_insert = fail_insert

    def answer(self, text: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
        if text == "SELECT to_regclass(%s)":
            return [(params[0] if params[0] in self.tables else None,)]
        if text == "SELECT 1 FROM pg_index i WHERE i.indisprimary AND i.indrelid = to_regclass(%s)":
            return [(1,)]
        if text == "SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s":
            return [(4242,)] if params == ["bob_slot"] else []
        if text == INSERT:
            if self.fail_insert:
                raise psycopg.errors.QueryCanceled("canceling statement due to lock timeout")
            self.inserted.append(params)
            return []
        return None


def audit(tmp_path: Path) -> list[tuple[str, str]]:
    rows = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    return [(r["action"], r["outcome"]) for r in rows]


def send(tmp_path: Path, db: Server, tables: list[str], stop: bool = False, cleared_for: str = "bob_src") -> Any:
    p, cluster = project(tmp_path)
    found = manual.Located(cluster, dict(SOURCE))
    cleared = manual.judged(found, cleared_for, tables, stop)
    with pg.seam(db.connect):
        return manual.send(p, found, "bob_src", tables, "id > 5", stop, 1.0, cleared, lock_timeout_s=0)


def test_a_signal_is_checked_then_written_once_and_audited_before_and_after(tmp_path: Path) -> None:
    db = Source()
    signal = send(tmp_path, db, ["users"])
    assert db.statements == [
        "SELECT to_regclass(%s)",
        "SELECT to_regclass(%s)",
        "SELECT 1 FROM pg_index i WHERE i.indisprimary AND i.indrelid = to_regclass(%s)",
        "SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s",
        INSERT,
    ]
    assert db.inserted == [[signal.id, "execute-snapshot", signal.data]]
    assert json.loads(signal.data) == {
        "data-collections": ["public.users"],
        "type": "incremental",
        "additional-conditions": [{"data-collection": "public.users", "filter": "id > 5"}],
    }
    assert audit(tmp_path) == [("snapshot-signal", "intent"), ("snapshot-signal", "ok")]
    assert db.connects[0]["application_name"] == "hephaestus snapshot"


def test_a_stop_checks_only_the_signal_table_and_names_no_table_when_none_is_given(tmp_path: Path) -> None:
    db = Source()
    signal = send(tmp_path, db, [], stop=True)
    assert signal.type == "stop-snapshot" and json.loads(signal.data) == {"type": "incremental"}
    assert db.statements.count("SELECT to_regclass(%s)") == 1 and db.inserted == [[signal.id, signal.type, signal.data]]


def test_a_signal_row_the_database_refuses_is_audited_as_failed(tmp_path: Path) -> None:
    db = Source(fail_insert=True)
    with pytest.raises(HephaestusError) as raised:
        send(tmp_path, db, ["users"])
    assert str(raised.value) == "source database: inserting the signal failed: canceling statement due to lock timeout"
    assert audit(tmp_path) == [("snapshot-signal", "intent"), ("snapshot-signal", "failed")]


def test_a_signal_the_gate_did_not_clear_is_not_sent(tmp_path: Path) -> None:
    db = Source()
    with pytest.raises(
        HephaestusError, match=r"^snapshot of bob_src: not cleared by the gate \(a bug\): no signal sent$"
    ):
        send(tmp_path, db, ["users"], cleared_for="other_src")
    assert db.connects == [] and not (tmp_path / "audit.jsonl").exists()


# -- the signal's outcome


def test_the_outcome_is_read_from_the_sources_notification_topic(tmp_path: Path) -> None:
    kafka_cluster = Kafka()
    kafka_cluster.put(0, note("sig-1", "COMPLETED"))
    _, cluster = project(tmp_path, kafka_bootstrap="b:9092")
    with kafka.seam(consumer=kafka_cluster.consumer):
        got = manual.status(manual.Located(cluster, dict(SOURCE)), "bob_src", "sig-1", 5.0, True)
    assert got == read(kafka_cluster, until_done=True) and got.completed


def test_a_source_without_a_notification_sink_is_named(tmp_path: Path) -> None:
    _, cluster = project(tmp_path, kafka_bootstrap="b:9092")
    config = {**SOURCE, "notification.enabled.channels": "log"}
    with pytest.raises(HephaestusError, match=r"^bob_src has no notification sink topic: enable "):
        manual.status(manual.Located(cluster, config), "bob_src", "sig-1", 5.0, False)


def test_a_cluster_without_kafka_bootstrap_is_named(tmp_path: Path) -> None:
    _, cluster = project(tmp_path)
    with pytest.raises(HephaestusError, match=r"^cluster c has no kafka_bootstrap in the project file$"):
        manual.status(manual.Located(cluster, dict(SOURCE)), "bob_src", "sig-1", 5.0, False)

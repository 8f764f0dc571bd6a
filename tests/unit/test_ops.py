"""Operations offline: record decoding (JSON, Confluent Avro through a strict Schema Registry
double, text, binary), DLQ replay rules, slot verdicts, status problems and lag."""

from __future__ import annotations

import io
import json
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import httpx
import pytest

from hephaestus.dlq.model import end_positions, errors_of, masked, own_headers, replay_of, start_positions
from hephaestus.fleet.lag import lag
from hephaestus.fleet.slots import Limits, Slot, droppable, judge, owners, size, uses
from hephaestus.fleet.topics import dlq_topics, topics_of
from hephaestus.kafka import Record, Span
from hephaestus.records import SchemaRegistry, decode
from hephaestus.safety.values import Resolver
from hephaestus.secrets import REDACTOR
from hephaestus.settings import PolicySettings
from hephaestus.snapshot.notifications import parse
from hephaestus.status.model import ConnectorView, problems_of
from tests.schema_registry_double import transport

NOTIFICATION = {
    "type": "record",
    "name": "Notification",
    "namespace": "io.debezium.notification",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "aggregate_type", "type": "string"},
        {"name": "type", "type": "string"},
        {"name": "additional_data", "type": {"type": "map", "values": "string"}},
        {"name": "timestamp", "type": "long"},
    ],
}


def registry_double(schemas: dict[int, dict[str, Any]], seen: list[str]) -> SchemaRegistry:
    return SchemaRegistry("http://registry.test", transport=transport(schemas, seen))


def avro(schema_id: int, schema: dict[str, Any], value: dict[str, Any]) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), value)
    return b"\x00" + struct.pack(">I", schema_id) + body.getvalue()


def test_avro_is_decoded_with_the_registry_each_schema_fetched_once() -> None:
    seen: list[str] = []
    registry = registry_double({7: NOTIFICATION}, seen)
    note = {
        "id": "sig-1",
        "aggregate_type": "Incremental Snapshot",
        "type": "TABLE_SCAN_COMPLETED",
        "additional_data": {"data_collection": "public.t", "status": "SUCCEEDED"},
        "timestamp": 1,
    }
    raw = avro(7, NOTIFICATION, note)
    assert decode(raw, registry).value == note and decode(raw, registry).kind == "avro"
    assert parse(raw, registry).status == "SUCCEEDED"  # type: ignore[union-attr]
    assert seen == ["GET /schemas/ids/7"]


def test_what_cannot_be_decoded_is_described_never_raised() -> None:
    seen: list[str] = []
    registry = registry_double({}, seen)
    missing = decode(
        avro(9, NOTIFICATION, {"id": "x", "aggregate_type": "a", "type": "t", "additional_data": {}, "timestamp": 0}),
        registry,
    )
    assert missing.kind == "binary" and "schema id 9; schema registry: schema 9: HTTP 404" in missing.value
    assert decode(b"\x00\x00\x00\x00\x01garbage", None).value.startswith("Avro (schema id 1; no schema registry")
    assert decode(b"\xff\xfe" * 40).value.startswith("base64:") and "(80 bytes)" in decode(b"\xff\xfe" * 40).value
    assert decode(b"plain words").kind == "text" and decode(None).kind == "null"
    assert decode(b'{"a": 1}').value == {"a": 1}
    assert parse(b"\xff\xfe not json") is None  # was a UnicodeDecodeError


def record(offset: int, headers: dict[str, bytes]) -> Record:
    return Record("dlq.s", 0, offset, 1000, b"k", b'{"v": 1}', tuple(headers.items()))


ORIGIN = {
    "__connect.errors.topic": b"it.bob.public.users",
    "__connect.errors.partition": b"2",
    "__connect.errors.offset": b"41",
    "__connect.errors.stage": b"TRANSFORMATION",
    "__connect.errors.exception.stacktrace": b"long trace",
    "trace-id": b"abc",
}


def test_a_dlq_record_goes_back_to_its_original_topic_and_partition_with_its_own_headers() -> None:
    r = record(5, ORIGIN)
    assert (replay_of(r).topic, replay_of(r).partition, replay_of(r).problem) == ("it.bob.public.users", 2, "")
    assert own_headers(r) == [("trace-id", b"abc")]
    assert errors_of(r) == {
        "topic": "it.bob.public.users",
        "partition": "2",
        "offset": "41",
        "stage": "TRANSFORMATION",
    }  # no stack trace
    assert "context.headers.enable was off" in replay_of(record(6, {"trace-id": b"abc"})).problem


def test_a_replay_starts_after_the_last_one_and_never_before_the_log_start() -> None:
    spans = [Span("d", 0, 10, 20), Span("d", 1, 0, 5)]
    assert start_positions(spans, {("d", 0): 4, ("d", 1): 3}) == {("d", 0): 10, ("d", 1): 3}
    assert end_positions(spans, None) == {("d", 0): 20, ("d", 1): 5}
    assert end_positions(spans, 12) == {("d", 0): 13, ("d", 1): 5}


def test_only_sinks_naming_a_dlq_have_one_and_secrets_in_records_are_masked() -> None:
    assert dlq_topics(
        {"a": {"errors.deadletterqueue.topic.name": "dlq.a"}, "b": {}, "c": {"errors.deadletterqueue.topic.name": " "}}
    ) == {"a": "dlq.a"}
    REDACTOR.learn("x.password", "hunter2-canary")
    shown = masked({"payload": {"after": {"password": "p1", "note": "was hunter2-canary", "n": 3}}})
    assert shown == {"payload": {"after": {"password": "****", "note": "was ****", "n": 3}}}


SLOT = Slot("bob", "local_manabie_bob", "pgoutput", True, 10, 5, "reserved")
LIMITS = Limits(max_retained=1000, idle_max_retained=100)


@pytest.mark.parametrize(
    "change, owned, verdict",
    [
        ({}, ["c/src"], "ok"),
        ({"retained_bytes": 1001}, ["c/src"], "over_limit"),
        ({"active": False, "retained_bytes": 101}, ["c/src"], "inactive"),
        ({"active": False, "retained_bytes": 100}, ["c/src"], "ok"),
        ({"retained_bytes": 101}, [], "orphan"),
        ({"retained_bytes": 100}, [], "ok"),
        ({"wal_status": "lost"}, ["c/src"], "lost"),
    ],
)
def test_slot_verdicts(change: dict[str, Any], owned: list[str], verdict: str) -> None:
    from dataclasses import replace

    assert judge(replace(SLOT, **change), owned, LIMITS).verdict == verdict


def test_a_slot_is_owned_by_every_source_that_could_use_it_and_only_orphans_drop(tmp_path: Path) -> None:
    """Issue 29: a STOPPED source on Debezium's default slot name, or with a placeholder, still owns it."""
    pg = "io.debezium.connector.postgresql.PostgresConnector"
    secrets = tmp_path / "connect.properties"
    secrets.write_text("slot=resolved_slot\n")
    configs = [
        ("a/named", {"connector.class": pg, "slot.name": "x", "database.dbname": "bob"}),
        ("a/not_a_source", {"slot.name": "x"}),
        ("b/default", {"connector.class": pg, "database.dbname": "bob"}),  # no slot.name: `debezium`
        ("b/other_db", {"connector.class": pg, "slot.name": "x", "database.dbname": "eureka"}),
        ("c/hidden (in git)", {"connector.class": pg, "slot.name": "${file:/nowhere/s.properties:slot}"}),
        ("c/resolved", {"connector.class": pg, "slot.name": f"${{file:{secrets}:slot}}", "database.dbname": "bob"}),
    ]
    known = uses(configs, Resolver())
    at = replace(SLOT, dbname="bob")
    assert owners(replace(at, name="x"), known) == ["a/named", "c/hidden (in git)"]
    assert owners(replace(at, name="debezium"), known) == ["b/default", "c/hidden (in git)"]
    assert owners(replace(at, name="resolved_slot"), known) == ["c/hidden (in git)", "c/resolved"]
    assert owners(replace(at, name="x", dbname="eureka"), known) == ["b/other_db", "c/hidden (in git)"]
    plain = uses(configs[:2], Resolver())
    assert owners(replace(at, name="zzz"), plain) == []
    assert "a/s1 could use it" in droppable(judge(SLOT, ["a/s1"], LIMITS), False)
    assert "active" in droppable(judge(SLOT, [], LIMITS), False)
    idle = judge(replace(SLOT, active=False), [], LIMITS)
    assert droppable(idle, False) == ""
    assert "could be read" in droppable(idle, True)  # a cluster or a folder unread: who uses it is unknown
    assert (size(512), size(50 << 20), size(3 << 30)) == ("512 B", "50.0 MiB", "3.0 GiB")
    assert Limits.of(PolicySettings(slot_max_retained_bytes=5)) == Limits(5, 64 << 20)


def test_status_names_every_problem_of_a_connector() -> None:
    ok = ConnectorView("c", "s", "sink", "RUNNING", ((0, "RUNNING"),), restarts=1, budget=10, dlq_depth=0)
    assert problems_of(ok) == ()
    bad = ConnectorView(
        "c",
        "s",
        "sink",
        "RUNNING",
        ((0, "RUNNING"), (1, "FAILED")),
        restarts=10,
        budget=10,
        dlq_depth=3,
        slot="x",
        slot_verdict="inactive",
    )
    assert problems_of(bad) == (
        "task 1 FAILED",
        "heal's restart budget exhausted (10/10)",
        "3 unresolved record(s) in its dead-letter queue",
        "slot x inactive",
    )
    assert problems_of(replace(ok, slot="x", slot_verdict="ok")) == (), "a slot judged ok is no problem"
    # Replayed or purged up to the end: the records are kept, and are no one's problem.
    assert problems_of(replace(ok, dlq_depth=5, dlq_unresolved=0)) == ()
    assert problems_of(replace(ok, dlq_depth=5, dlq_unresolved=2)) == (
        "2 unresolved record(s) in its dead-letter queue",
    )
    assert problems_of(ConnectorView("c", "s", "source", "RUNNING", ())) == ("no tasks",)
    assert problems_of(ConnectorView("c", "s", "source", "STOPPED", ())) == ("connector STOPPED",)


@pytest.mark.parametrize(
    "live, tasks, desired, problems",
    [
        ("PAUSED", ((0, "PAUSED"),), "PAUSED", ()),
        ("STOPPED", (), "STOPPED", ()),
        ("RUNNING", ((0, "RUNNING"),), "RUNNING", ()),
        ("RUNNING", ((0, "RUNNING"),), "PAUSED", ("connector RUNNING, git wants PAUSED", "task 0 RUNNING")),
        ("PAUSED", ((0, "PAUSED"),), "", ("connector PAUSED", "task 0 PAUSED")),
        ("PAUSED", ((0, "FAILED"),), "PAUSED", ("task 0 FAILED",)),
        ("STOPPED", (), "RUNNING", ("connector STOPPED, git wants RUNNING",)),
    ],
)
def test_status_judges_a_connector_against_the_state_git_asks_for(
    live: str, tasks: tuple[tuple[int, str], ...], desired: str, problems: tuple[str, ...]
) -> None:
    assert problems_of(ConnectorView("c", "s", "sink", live, tasks, desired=desired)) == problems


def test_consumer_lag_counts_past_the_committed_offsets_or_the_log_start() -> None:
    spans = {"t": (Span("t", 0, 5, 50), Span("t", 1, 0, 10))}
    assert lag(["t"], spans, {("t", 0): 40}) == 10 + 10
    assert lag(["t"], spans, {("t", 0): 2, ("t", 1): 10}) == 45  # below the log start: from the start
    assert topics_of({"topics": "a, b,,"}) == ("a", "b") and topics_of({"topics.regex": "x.*"}) == ()


def test_a_reconcile_run_publishes_its_outcome_per_cluster() -> None:
    from hephaestus.reconciler.metrics import metrics_of
    from hephaestus.reconciler.outcome import ClusterOutcome, StepResult
    from hephaestus.reconciler.plan import Plan, Step

    plan = Plan("c", (Step("create", "a"), Step("create", "b"), Step("unchanged", "z")))
    outcome = ClusterOutcome(
        "c",
        "http://c",
        plan,
        applied=True,
        writes=2,
        results=(StepResult("a", "create", True), StepResult("b", "create", False, "boom")),
    )
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in metrics_of(
            [outcome, ClusterOutcome("d", "http://d", None, error="down")], False, now=5.0
        ).registry.collect()
        for s in f.samples
    }
    assert samples[("hephaestus_reconcile_failed", (("cluster", "c"),))] == 1
    assert samples[("hephaestus_reconcile_failed", (("cluster", "d"),))] == 1
    assert samples[("hephaestus_reconcile_drift", (("cluster", "c"),))] == 1
    assert samples[("hephaestus_reconcile_planned_steps", (("action", "create"), ("cluster", "c")))] == 2
    assert (
        samples[("hephaestus_reconcile_applied_steps", (("action", "create"), ("cluster", "c"), ("result", "failed")))]
        == 1
    )
    assert samples[("hephaestus_reconcile_writes", (("cluster", "c"),))] == 2
    assert samples[("hephaestus_reconcile_last_run_timestamp_seconds", ())] == 5.0


def test_a_record_that_is_not_a_notification_of_ours_does_not_end_the_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once, a first record of another kind read as "caught up" and the report came back empty."""
    from hephaestus.snapshot import notifications as n

    note = n.Notification("sig", "COMPLETED", "", "")
    monkeypatch.setattr(n, "_records", lambda *a, **k: iter([None, note, n.CAUGHT_UP]))
    assert n.read("kafka:9092", "t", "sig", 5, until_done=False).events == (note,)


def test_the_registry_is_asked_again_after_a_transient_failure_and_never_shows_its_password() -> None:
    """On the shared HTTP edge: a 503 (a registry restarting) or no answer is asked again (a
    GET); a 404 is final; the URL's user info is the basic auth and is masked in messages."""
    from hephaestus.http import RetryPolicy

    answers = [503, "reset", 200]
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization", ""))
        answer = answers.pop(0) if answers else 404
        if answer == "reset":
            raise httpx.ReadError("connection reset", request=request)
        body = {"schema": json.dumps(NOTIFICATION)} if answer == 200 else {"error_code": 50301}
        return httpx.Response(int(answer), json=body)

    registry = SchemaRegistry(
        "http://reader:s3cret-pw@registry.test",
        transport=httpx.MockTransport(handle),
        retry=RetryPolicy.immediate(3),
    )
    assert registry.schema(7) == fastavro.parse_schema(NOTIFICATION)
    assert len(seen) == 3 and all(h.startswith("Basic ") for h in seen)
    missing = decode(b"\x00" + struct.pack(">I", 8) + b"\x00", registry)
    assert "schema registry: schema 8: HTTP 404" in missing.value and len(seen) == 4  # not retried
    assert "s3cret-pw" not in REDACTOR("http://reader:s3cret-pw@registry.test")

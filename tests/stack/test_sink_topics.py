"""A sink never starts before its topics exist (issue 33, part 3; strimzi#2752), on the real
stack: a sink whose topic nothing writes is refused (and the broker never auto-creates it); a
fresh fleet's empty table gets its topic created, as its source would, before the sink starts,
and a row inserted afterwards arrives at the sink."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient

from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Fleet:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    fleet.edit_project(policy={"ready_timeout_s": 120, "stability_window_s": 2})
    return fleet


def topics(stack: Stack) -> set[str]:
    return set(AdminClient({"bootstrap.servers": stack.bootstrap}).list_topics(timeout=10).topics)


def audit(fleet: Fleet) -> list[dict[str, str]]:
    return [json.loads(line) for line in (fleet.root / "audit.jsonl").read_text().splitlines()]


def test_an_empty_tables_topic_is_created_before_its_sink_and_a_row_then_arrives(
    fleet: Fleet, stack: Stack, connect: ConnectClient
) -> None:
    fleet.probe_off()  # one data topic: the probe's own would be a second need
    bob, auth = stack.dsn(fleet.dbs["bob"]), stack.dsn(fleet.dbs["auth"])
    assert read_rows(bob, "SELECT count(*) FROM users") == [(0,)]  # nothing for Debezium to write yet
    topic = fleet.topic("users")
    assert topic not in topics(stack)
    sink = fleet.name("platforms", "auth")

    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    (cluster,) = report["clusters"]
    (need,) = cluster["needs"]
    assert need["sink"] == sink and need["topics"] == [topic]

    # The audit trail: the topic created (by us: nothing had made it) before the sink's outcome.
    trail = [(e["connector"], e["action"], e["outcome"], e["detail"]) for e in audit(fleet)]
    made = trail.index((sink, "create-topic", "ok", "created"))
    assert made < next(i for i, e in enumerate(trail) if e[:3] == (sink, "create", "ok"))
    assert trail.index((sink, "create-topic", "intent", "")) < made
    assert topic in topics(stack)
    assert connect.status(sink)["connector"]["state"] == "RUNNING"  # type: ignore[index]

    execute(bob, "INSERT INTO users (user_id, name, email) VALUES ('u-late', 'Late Comer', 'l@example.com')")
    query = "SELECT name FROM users WHERE user_id = 'u-late'"
    wait_until(lambda: read_rows(auth, query) == [("Late Comer",)] or None, timeout=120, message="the row at auth")


def test_a_sink_reading_a_topic_nothing_writes_is_held_and_the_topic_never_made(
    fleet: Fleet, stack: Stack, connect: ConnectClient
) -> None:
    assert fleet.reconcile()[0] == 0
    existing = next((fleet.root / "connectors/platforms/sink").glob("*.json"))
    doc = json.loads(existing.read_text())
    typo = f"it.hephaestus.{fleet.dbs['bob']}_typo.public.users"  # outside the source's namespace
    name = doc["name"] + "_typo"
    config = {**doc["config"], "topics": typo, "collection.name.format": "users_typo"}
    (existing.parent / f"{name}.json").write_text(json.dumps({"name": name, "config": config}))

    code, report = fleet.reconcile()
    (cluster,) = report["clusters"]
    assert code == 2, json.dumps(report, indent=1)  # issue 48: an apply in part, the sink held back
    (held,) = cluster["held"]
    assert held["name"] == name and typo in held["why"] and held["migration"] is None
    assert "create them, or deploy what writes them first" in held["why"] and cluster["refused"] is None
    assert connect.status(name) is None  # not created
    assert typo not in topics(stack)  # and so the broker never auto-created it

"""Dead-letter queues on the real stack: a record the sink's pipeline rejects is parked, found,
shown, replayed once the pipeline is fixed, and read back from the sink database.

The rejection happens in a transform (a Groovy filter that throws on one row), not in the
database: Connect's DLQ takes converter and transform failures, and the Debezium JDBC sink
(3.6) fails its task on a write the table refuses instead of reporting the record (routing
those to the DLQ came with debezium/dbz#984, after 3.6). The test shows both.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterator
from typing import Any

import fastavro
import pytest
from confluent_kafka import Producer

from tests.schema_registry_double import served
from tests.stack.fleet import Fleet
from tests.stack.support import execute, json_in, read_rows, wait_until


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Iterator[Fleet]:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    fleet.poisoned(True)
    yield fleet


def dlq(fleet: Fleet, *args: str) -> tuple[int, str]:
    return fleet.cli("dlq", *args, "--project", str(fleet.root / "hephaestus.yaml"))


def names(fleet: Fleet) -> list[str]:
    return [r[0] for r in read_rows(fleet.stack.dsn(fleet.dbs["auth"]), "SELECT name FROM users ORDER BY user_id")]


def test_a_rejected_record_is_parked_shown_replayed_after_the_fix_and_read_back(fleet: Fleet) -> None:
    bob = fleet.stack.dsn(fleet.dbs["bob"])
    assert fleet.reconcile()[0] == 0
    sink = fleet.name("platforms", "to_" + fleet.dbs["auth"])
    execute(
        bob,
        "INSERT INTO users (user_id, name, email) VALUES ('u-1', 'fine', 'a@x'), "
        "('u-2', 'poison', 'secret-canary@x'), ('u-3', 'also fine', 'c@x')",
    )
    wait_until(lambda: names(fleet) == ["fine", "also fine"] or None, timeout=120, message="the good rows")

    code, out = dlq(fleet, "list", "-o", "json")
    (found,) = [d for d in json.loads(out)["dlqs"] if d["connector"] == sink]
    wait_until(
        lambda: json.loads(dlq(fleet, "list", "-o", "json")[1])["dlqs"][0]["depth"] == 1 or None,
        timeout=60,
        message="one parked record",
    )
    code, out = dlq(fleet, "list")
    assert code == 2 and f"{sink}: 1 record(s) in dlq.{sink}" in out, out

    code, out = dlq(fleet, "show", "--connector", sink, "-o", "json")
    (record,) = json.loads(out)["records"]
    assert code == 0 and record["value"] == {"format": "json"}, out  # a row is data: only when asked
    code, out = dlq(fleet, "show", "--connector", sink, "-o", "json", "--values")
    assert code == 0, out
    (record,) = json.loads(out)["records"]
    assert record["error"]["topic"] == fleet.topic("users") and record["error"]["stage"], record
    assert record["value"]["format"] == "json" and record["value"]["value"]["payload"]["after"]["name"] == "poison"
    assert record["value"]["value"]["payload"]["after"]["email"] == "secret-canary@x"

    assert dlq(fleet, "replay", "--connector", sink, "--dry-run")[1].endswith(
        f"would replay 1 record(s) to {fleet.topic('users')}[0]\n"
    )
    fleet.poisoned(False)
    assert fleet.reconcile()[0] == 0
    code, out = dlq(fleet, "replay", "--connector", sink)  # a write asks first, and says how not to
    assert code == 1 and "without a terminal" in out and "pass --auto-approve" in out, out
    code, out = dlq(fleet, "replay", "--connector", sink, "--auto-approve")
    assert code == 0 and "replayed 1 record(s)" in out, out
    wait_until(
        lambda: names(fleet) == ["fine", "poison", "also fine"] or None,
        timeout=120,
        message="the replayed row in the sink database",
    )
    code, out = dlq(fleet, "replay", "--connector", sink, "--yes")
    assert code == 0 and "replayed 0 record(s) (nothing parked since the last replay)" in out, out
    # Delivered and read back: the record is still in the DLQ, and is no one's problem.
    code, out = dlq(fleet, "list", "-o", "json")
    (found,) = [d for d in json.loads(out)["dlqs"] if d["connector"] == sink]
    assert code == 0 and (found["depth"], found["unresolved"]) == (1, 0), out
    code, out = fleet.cli("status", "--project", str(fleet.root / "hephaestus.yaml"), "-o", "json")
    (view,) = [c for c in json_in(out)["clusters"][0]["connectors"] if c["name"] == sink]
    assert (view["dlq_depth"], view["dlq_unresolved"], view["healthy"]) == (1, 0, True), view

    code, out = dlq(fleet, "purge", "--connector", sink, "--before", "1", "--yes")
    assert code == 0 and f"{sink}: 0 record(s) left" in out, out
    assert dlq(fleet, "list")[0] == 0
    audit = (fleet.root / "audit.jsonl").read_text()
    assert '"action": "dlq-replay"' in audit and '"action": "dlq-purge"' in audit


ROW = {
    "type": "record",
    "name": "Value",
    "fields": [{"name": "user_id", "type": "string"}, {"name": "name", "type": ["null", "string"]}],
}
NOTE = {
    "type": "record",
    "name": "Notification",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "aggregate_type", "type": "string"},
        {"name": "type", "type": "string"},
        {"name": "additional_data", "type": {"type": "map", "values": "string"}},
        {"name": "timestamp", "type": "long"},
    ],
}


def avro(schema_id: int, schema: dict[str, Any], value: dict[str, Any]) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), value)
    return b"\x00" + struct.pack(">I", schema_id) + body.getvalue()


def test_avro_records_are_decoded_in_dlq_show_and_snapshot_status(fleet: Fleet) -> None:
    """The stack's converters write JSON, so the Avro records are produced by the test (as
    Connect's DLQ reporter and Debezium's notification sink would write them under Avro
    converters); the Schema Registry is tests/schema_registry_double.py on loopback."""
    import yaml

    assert fleet.reconcile()[0] == 0
    sink = fleet.name("platforms", "to_" + fleet.dbs["auth"])
    source = fleet.name("platforms", "source_connector")
    config = json.loads(next((fleet.root / "connectors/platforms/source").glob("*.json")).read_text())["config"]
    with served({1: ROW, 2: NOTE}) as url:
        clusters = yaml.safe_load((fleet.root / "hephaestus.yaml").read_text())["clusters"]
        clusters["platforms"]["schema_registry_url"] = url
        fleet.edit_project(clusters=clusters)
        producer = Producer({"bootstrap.servers": fleet.stack.bootstrap})
        producer.produce(
            f"dlq.{sink}",
            key=b"u-a",
            value=avro(1, ROW, {"user_id": "u-a", "name": "Ann"}),
            headers=[
                ("__connect.errors.topic", fleet.topic("users").encode()),
                ("__connect.errors.partition", b"0"),
                ("__connect.errors.stage", b"VALUE_CONVERTER"),
            ],
        )
        topic = config["notification.sink.topic.name"]
        producer.produce(topic, value=b"\xff\xfe not a notification")
        for kind, extra in (
            ("STARTED", {}),
            ("TABLE_SCAN_COMPLETED", {"data_collection": "public.users", "status": "SUCCEEDED"}),
            ("COMPLETED", {}),
        ):
            producer.produce(
                topic,
                value=avro(
                    2,
                    NOTE,
                    {
                        "id": "sig-avro",
                        "aggregate_type": "Incremental Snapshot",
                        "type": kind,
                        "additional_data": extra,
                        "timestamp": 1,
                    },
                ),
            )
        assert producer.flush(30) == 0

        code, out = dlq(fleet, "show", "--connector", sink, "-o", "json", "--values")
        assert code == 0, out
        (shown,) = json.loads(out)["records"]
        assert shown["value"] == {"format": "avro", "value": {"user_id": "u-a", "name": "Ann"}}
        assert shown["key"] == {"format": "text", "value": "u-a"} and shown["error"]["stage"] == "VALUE_CONVERTER"

        code, out = fleet.cli(
            "snapshot",
            "status",
            "--project",
            str(fleet.root / "hephaestus.yaml"),
            "--connector",
            source,
            "--id",
            "sig-avro",
            "-o",
            "json",
        )
    assert code == 0, out
    report = json_in(out)
    assert report["completed"] and [e["type"] for e in report["events"]] == [
        "STARTED",
        "TABLE_SCAN_COMPLETED",
        "COMPLETED",
    ]
    assert report["events"][1]["status"] == "SUCCEEDED"

"""Avro end to end on the real stack: Apicurio Registry 2.4.2 (in-memory, started by dev/stack)
and Apicurio's AvroConverter in Connect, set to write Confluent's wire format; hephaestus
decodes through the registry's Confluent-compatible API (`/apis/ccompat/v7`).

A definition with `converter: {format: avro, flavour: apicurio}` and no URL takes its
cluster's from the project file. Rows replicate and are read back at the sink; Debezium's
notifications (Avro too: the notification sink writes with the source's value converter) are
decoded by `snapshot status`; a record parked by a failing transform is shown decoded,
replayed once the transform is fixed, and read back; `accuracy` counts as before; and the
registry double of the unit tests is held to the real registry's answers.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition

from hephaestus.records import SchemaRegistry, decode
from tests import schema_registry_double
from tests.stack.fleet import Fleet
from tests.stack.support import Stack, execute, json_in, read_rows, wait_until

APICURIO = "io.apicurio.registry.utils.converter.AvroConverter"


@pytest.fixture
def fleet(bob_fleet: Fleet, stack: Stack) -> Iterator[Fleet]:
    assert stack.registry_url, "dev/stack/up starts the schema registry"
    fleet = bob_fleet
    clusters = yaml.safe_load((fleet.root / "hephaestus.yaml").read_text())["clusters"]
    clusters["platforms"]["schema_registry_url"] = stack.registry_url
    fleet.edit_project(clusters=clusters)
    definition = fleet.definition("bob")
    definition["converter"] = {"format": "avro", "flavour": "apicurio"}  # the URL: the project file's
    fleet.write_definition("bob", definition)
    fleet.only_users_to_auth()
    yield fleet


def reconciled(fleet: Fleet) -> None:
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)


def names(fleet: Fleet) -> list[str]:
    return [r[0] for r in read_rows(fleet.stack.dsn(fleet.dbs["auth"]), "SELECT name FROM users ORDER BY user_id")]


def raw_values(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-avro-raw", "enable.partition.eof": True})
    try:
        meta = consumer.list_topics(topic, timeout=20).topics[topic]
        consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
        found: list[bytes] = []
        ended = 0
        while ended < len(meta.partitions):
            msg = consumer.poll(10)
            assert msg is not None, f"no end of {topic} within 10 s"
            value = msg.value()
            if msg.error():
                ended += 1
            elif value is not None:
                found.append(value)
        return found
    finally:
        consumer.close()


def test_an_avro_pipeline_replicates_in_confluents_wire_format_and_accuracy_counts_it(fleet: Fleet) -> None:
    config = json.loads(next((fleet.root / "connectors/platforms/source").glob("*.json")).read_text())["config"]
    assert config["value.converter"] == APICURIO
    assert config["value.converter.apicurio.registry.url"] == fleet.stack.registry_apicurio_url
    reconciled(fleet)
    execute(
        fleet.stack.dsn(fleet.dbs["bob"]),
        "INSERT INTO users (user_id, name, email) VALUES ('u-1', 'Ann', 'a@x'), ('u-2', 'Bo ü 🙂', 'b@x')",
    )
    wait_until(lambda: names(fleet) == ["Ann", "Bo ü 🙂"] or None, timeout=180, message="the rows at the sink")

    # What Connect wrote: the magic byte and a 4-byte id, then Avro; hephaestus' own decoder
    # reads it through the registry's Confluent API.
    values = raw_values(fleet.stack.bootstrap, fleet.topic("users"))
    assert values and all(v[0] == 0 and len(v) > 5 for v in values), values[:1]
    assert fleet.stack.registry_url
    registry = SchemaRegistry(fleet.stack.registry_url)
    try:
        decoded = [decode(v, registry) for v in values]
    finally:
        registry.close()
    assert {d.kind for d in decoded} == {"avro"}, decoded[:1]
    assert {(d.value or {})["after"]["name"] for d in decoded} == {"Ann", "Bo ü 🙂"}

    code, report = fleet.accuracy("--deep")
    assert code == 0, report
    (users,) = report["tables"]
    assert users["verdict"] == "match" and users["source"]["rows"] == users["sink"]["rows"] == 2, users


def test_snapshot_status_decodes_debeziums_avro_notifications(fleet: Fleet) -> None:
    reconciled(fleet)
    execute(fleet.stack.dsn(fleet.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('u-1', 'Ann')")
    wait_until(lambda: names(fleet) == ["Ann"] or None, timeout=180, message="the row at the sink")
    source = fleet.name("platforms", "source_connector")
    project = ["--project", str(fleet.root / "hephaestus.yaml"), "--connector", source]
    code, out = fleet.cli("snapshot", "send", *project, "users")
    sent = re.search(r"^sent execute-snapshot (\S+) to ", out, re.MULTILINE)
    assert code == 0 and sent, out
    signal_id = sent[1]
    code, out = fleet.cli("snapshot", "status", *project, "--id", signal_id, "--wait", "--timeout", "120", "-o", "json")
    assert code == 0, out
    status = json_in(out)
    assert status["completed"], status
    scans = [e for e in status["events"] if e["type"] == "TABLE_SCAN_COMPLETED"]
    assert scans and all(e["status"] == "SUCCEEDED" for e in scans), status
    note = config_topic(fleet, source)
    assert all(v[0] == 0 for v in raw_values(fleet.stack.bootstrap, note)), "the notifications are Avro"


def config_topic(fleet: Fleet, source: str) -> str:
    path = fleet.root / "connectors/platforms/source" / f"{source}.json"
    return str(json.loads(path.read_text())["config"]["notification.sink.topic.name"])


def test_an_avro_record_parked_by_a_transform_is_shown_replayed_and_read_back(fleet: Fleet) -> None:
    fleet.poisoned(True)
    reconciled(fleet)
    sink = fleet.name("platforms", "to_" + fleet.dbs["auth"])
    execute(
        fleet.stack.dsn(fleet.dbs["bob"]),
        "INSERT INTO users (user_id, name, email) VALUES ('u-1', 'fine', 'a@x'), ('u-2', 'poison', 'p@x')",
    )
    wait_until(lambda: names(fleet) == ["fine"] or None, timeout=180, message="the good row")
    dlq = ["--project", str(fleet.root / "hephaestus.yaml"), "--connector", sink]
    wait_until(
        lambda: json.loads(fleet.cli("dlq", "show", *dlq, "-o", "json")[1])["depth"] == 1 or None,
        timeout=60,
        message="one parked record",
    )
    code, out = fleet.cli("dlq", "show", *dlq, "-o", "json", "--values")
    (record,) = json.loads(out)["records"]
    assert code == 0 and record["value"]["format"] == "avro", out
    assert record["value"]["value"]["after"]["name"] == "poison", record
    assert record["key"]["format"] == "avro" and record["key"]["value"] == {"user_id": "u-2"}, record

    fleet.poisoned(False)
    reconciled(fleet)
    code, out = fleet.cli("dlq", "replay", *dlq, "--auto-approve")
    assert code == 0 and "replayed 1 record(s)" in out, out
    wait_until(lambda: names(fleet) == ["fine", "poison"] or None, timeout=180, message="the replayed row")
    code, out = fleet.cli("dlq", "list", "--project", str(fleet.root / "hephaestus.yaml"), "-o", "json")
    (found,) = [d for d in json.loads(out)["dlqs"] if d["connector"] == sink]
    assert code == 0 and (found["depth"], found["unresolved"]) == (1, 0), out


def _probe(url: str, method: str, path: str) -> tuple[int, dict[str, Any], str]:
    response = httpx.request(method, url + path, timeout=10)
    return response.status_code, response.json(), response.headers.get("content-type", "")


def test_the_registry_double_answers_as_the_real_registry_does(fleet: Fleet) -> None:
    """Every call the double serves, asked of both: same status, same body shape, same error
    code, same content type (Confluent's API as Apicurio's ccompat layer serves it)."""
    reconciled(fleet)
    execute(fleet.stack.dsn(fleet.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('u-1', 'Ann')")
    wait_until(lambda: names(fleet) == ["Ann"] or None, timeout=180, message="the row at the sink")
    url = fleet.stack.registry_url
    assert url
    (value, *_) = raw_values(fleet.stack.bootstrap, fleet.topic("users"))
    (schema_id,) = struct.unpack(">I", value[1:5])
    status, real, _ = _probe(url, "GET", f"/schemas/ids/{schema_id}")
    assert status == 200, real
    schemas = {schema_id: json.loads(real["schema"])}
    probes = [
        ("GET", f"/schemas/ids/{schema_id}"),
        ("GET", "/schemas/ids/987654321"),
        ("POST", f"/schemas/ids/{schema_id}"),
        ("DELETE", f"/schemas/ids/{schema_id}"),
        ("GET", "/schemas/ids/abc"),
    ]
    for method, path in probes:
        status, body, kind = _probe(url, method, path)
        d_status, d_body = schema_registry_double.answer(schemas, method, path)
        assert (status, sorted(body)) == (d_status, sorted(d_body)), (method, path, body, d_body)
        if status == 200:
            assert json.loads(body["schema"]) == json.loads(d_body["schema"])
            assert body.get("schemaType", "AVRO") == "AVRO" and body["references"] == d_body["references"] == []
        elif status == 404 and body["error_code"] == 40403:  # the one code a client may act on
            assert d_body["error_code"] == 40403, d_body
        assert kind.split(";")[0] in ("application/vnd.schemaregistry.v1+json", "application/json"), kind

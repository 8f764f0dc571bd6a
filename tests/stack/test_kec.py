"""The data-warehouse (KEC) stack on the real stack, on its own (third) Connect cluster.

definitions/kec.yaml as shipped, pointed at fresh databases: invoicemgmt is captured only
(`sinks: []`), and a JDBC sink reads the topic ksqlDB would write into kec_dwh.fact_invoice.
No ksqlDB server can be had here, so the test stands in for it: it computes each invoice's
row from the source tables (in Python, not with the expectation's SQL) and produces it in
ksqlDB's shape (the raw invoice_id as key, the Connect JSON envelope as value, as
ksql_migrations/kec/V000002 writes it). Everything after the topic is real: the sink writes
the warehouse (read back), and `hephaestus accuracy` checks it against the declared expectation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from tests.stack.fleet import Fleet, make_fleet
from tests.stack.kafka import ops, read_topic
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until

INVOICES, PAYMENTS = 30, 45
FIELDS = (
    ("invoice_id", "string", False),
    ("student_id", "string", True),
    ("amount_cents", "int64", True),
    ("paid_cents", "int64", True),
    ("status", "string", True),
    ("resource_path", "string", True),
)


def facts(fleet: Fleet) -> dict[str, dict[str, Any]]:
    """What ksqlDB's FACT_INVOICE holds: each invoice with the sum of its live payments."""
    dsn = fleet.stack.dsn(fleet.dbs["invoicemgmt"])
    paid: dict[str, int] = {}
    for invoice_id, amount in read_rows(dsn, "SELECT invoice_id, amount_cents FROM payments WHERE deleted_at IS NULL"):
        paid[invoice_id] = paid.get(invoice_id, 0) + amount
    rows = read_rows(dsn, "SELECT invoice_id, student_id, amount_cents, status, resource_path FROM invoices")
    return {
        r[0]: {
            "invoice_id": r[0],
            "student_id": r[1],
            "amount_cents": r[2],
            "paid_cents": paid.get(r[0], 0),
            "status": r[3],
            "resource_path": r[4],
        }
        for r in rows
    }


def produce(fleet: Fleet, topic: str, rows: list[dict[str, Any]]) -> None:
    schema = {
        "type": "struct",
        "optional": False,
        "fields": [{"field": f, "type": t, "optional": o} for f, t, o in FIELDS],
    }
    producer = Producer({"bootstrap.servers": fleet.stack.bootstrap})
    for row in rows:
        producer.produce(topic, key=row["invoice_id"].encode(), value=json.dumps({"schema": schema, "payload": row}))
    assert producer.flush(30) == 0


def warehouse(fleet: Fleet) -> dict[str, dict[str, Any]]:
    rows = read_rows(
        fleet.stack.dsn(fleet.dbs["kec_dwh"]),
        "SELECT invoice_id, student_id, amount_cents, paid_cents, status, resource_path FROM fact_invoice",
    )
    return {r[0]: dict(zip((f for f, _, _ in FIELDS), r, strict=False)) for r in rows}


def test_capture_only_source_a_ksqldb_topic_into_the_warehouse_and_accuracy_by_expectation(
    tmp_path: Path,
    stack3: Stack,
    fresh_db: Callable[..., str],
    connect3: ConnectClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fleet = make_fleet(tmp_path, stack3, fresh_db, capsys, ["kec"], {"kec": connect3})
    source = stack3.dsn(fleet.dbs["invoicemgmt"])
    execute(
        source,
        f"""
        INSERT INTO invoices (invoice_id, student_id, amount_cents, status, resource_path)
            SELECT 'i-' || g, 's-' || (g % 7), 1000 * g, CASE WHEN g % 5 = 0 THEN 'void' ELSE 'open' END, '-1'
            FROM generate_series(1, {INVOICES}) g;
        INSERT INTO payments (payment_id, invoice_id, amount_cents, resource_path, deleted_at)
            SELECT 'p-' || g, 'i-' || (g % {INVOICES} + 1), 100 * g, '-1', CASE WHEN g % 9 = 0 THEN now() END
            FROM generate_series(1, {PAYMENTS}) g;
    """,
    )
    # ksqlDB's output topic exists before its sink (a sink reading a topic nothing writes is refused).
    sink_config = json.loads(next((tmp_path / "connectors/kec/sink").glob("*.json")).read_text())["config"]
    out_topic = sink_config["topics"]
    admin = AdminClient({"bootstrap.servers": stack3.bootstrap})
    admin.create_topics([NewTopic(out_topic, num_partitions=1, replication_factor=1)])[out_topic].result(30)
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    (cluster,) = report["clusters"]
    assert sorted((s["name"].endswith("source_connector"), s["action"]) for s in cluster["steps"]) == [
        (False, "create"),
        (True, "create"),
    ]
    assert all(connect3.status(n)["connector"]["state"] == "RUNNING" for n in fleet.connector_names("kec"))  # type: ignore[index]

    # Capture-only: Debezium snapshots both tables into their topics, and no sink reads them.
    for table, n in (("invoices", INVOICES), ("payments", PAYMENTS)):
        topic = fleet.topic(table, "invoicemgmt")
        wait_until(
            lambda: len([o for o in ops(read_topic(stack3.bootstrap, topic)) if o[0] == "r"]) >= n or None,
            timeout=180,
            message=f"{n} snapshot events in {topic}",
        )

    # ksqlDB's output topic, as the sink reads it (the rewritten definition gives it this test's name).
    assert out_topic == f"it.hephaestus.{fleet.dbs['invoicemgmt']}.kec.fact_invoice"
    expected = facts(fleet)
    produce(fleet, out_topic, list(expected.values()))
    wait_until(lambda: len(warehouse(fleet)) == INVOICES or None, timeout=180, message=f"{INVOICES} warehouse rows")
    assert warehouse(fleet) == expected  # read back: every value, typed as the table types it

    code, report = fleet.accuracy("--deep")
    assert code == 0, json.dumps(report, indent=1)
    (row,) = report["tables"]
    assert row["verdict"] == "match" and row["source"]["rows"] == row["sink"]["rows"] == INVOICES
    assert row["source"]["table"] == "expect.fact_invoice" and row["source"]["expect"].startswith("SELECT")
    assert row["deep"]["different"]["total"] == 0

    # A payment ksqlDB has not folded in yet, and a warehouse row changed by hand: both named.
    execute(source, "INSERT INTO payments (payment_id, invoice_id, amount_cents) VALUES ('p-new', 'i-3', 7)")
    execute(stack3.dsn(fleet.dbs["kec_dwh"]), "UPDATE fact_invoice SET status = 'tampered' WHERE invoice_id = 'i-9'")
    code, report = fleet.accuracy("--deep")
    assert code == 2, json.dumps(report, indent=1)
    assert report["tables"][0]["deep"]["different"] == {"total": 2, "keys": ["i-3", "i-9"]}

    # ksqlDB emits the new state of both: the sink upserts by the value's key, and all match.
    expected = facts(fleet)
    produce(fleet, out_topic, [expected["i-3"], expected["i-9"]])
    wait_until(lambda: warehouse(fleet) == expected or None, timeout=120, message="the two rows upserted")
    assert fleet.accuracy("--deep")[0] == 0

"""The offsets ledger on the real stack (issue 49): PostgreSQL (the source database and the
state database that keeps the ledger), Kafka, Connect and Debezium.

Disaster recovery of one source: its offsets recorded, then lost (reset and the connector
deleted, as a cluster rebuilt with an empty offsets topic has it), rows written meanwhile;
`offsets restore` creates it STOPPED, puts the recorded offsets back and starts it: no snapshot
record after the restore, every row of the outage at the sink once. Then loss: once the slot
has released the recorded position, a restore to it is refused `offsets-lost` with nothing
written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hephaestus.state.ledgerdoc import lsn_of
from tests.stack.fleet import Fleet, make_fleet
from tests.stack.kafka import read_topic
from tests.stack.support import ConnectClient, Stack, execute, read_rows, unique_suffix, wait_until


@pytest.fixture
def fleet(
    tmp_path: Path,
    stack: Stack,
    fresh_db: Callable[..., str],
    connect: ConnectClient,
    capsys: pytest.CaptureFixture[str],
) -> Fleet:
    fleet = make_fleet(tmp_path, stack, fresh_db, capsys, ["bob"], {"platforms": connect})
    fleet.only_users_to_auth()
    doc_dbs = dict(json.loads(json.dumps(_project(fleet)["databases"])))
    # The ledger in the stack's own database, under a project name of this test's own (as
    # test_ownership shares it): the table keys every record by project.
    fleet.edit_project(
        name=f"ledger-{unique_suffix()}",
        policy={"ready_timeout_s": 120, "stability_window_s": 2},
        state={"database": "state"},
        # No password in a project file: libpq reads the stack role's from PGPASSWORD.
        databases={
            **doc_dbs,
            "state": {"dsn": f"host={stack.pg_host} port={stack.pg_port} user={stack.pg_user} dbname=postgres"},
        },
    )
    return fleet


def _project(fleet: Fleet) -> dict[str, Any]:
    import yaml

    loaded: dict[str, Any] = yaml.safe_load((fleet.root / "hephaestus.yaml").read_text())
    return loaded


def offsets(fleet: Fleet, *args: str) -> tuple[int, str]:
    return fleet.cli("offsets", args[0], "--project", str(fleet.root / "hephaestus.yaml"), *args[1:])


def slot_lsns(stack: Stack, fleet: Fleet) -> tuple[int, int]:
    rows = read_rows(
        stack.dsn(fleet.dbs["bob"]),
        "SELECT restart_lsn::text, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
        [fleet.slot()],
    )
    (restart, confirmed), = rows  # fmt: skip
    return lsn_of(restart), lsn_of(confirmed)


def insert(bob: str, start: int, n: int) -> None:
    rows = ", ".join(f"('ledger-{i}', 'User {i}', 'u{i}@example.com')" for i in range(start, start + n))
    execute(bob, f"INSERT INTO users (user_id, name, email) VALUES {rows}")


def arrived(auth: str, n: int) -> bool | None:
    return read_rows(auth, "SELECT count(*) FROM users WHERE user_id LIKE 'ledger-%%'") == [(n,)] or None


def test_a_lost_source_is_restored_from_the_ledger_without_a_snapshot_and_a_stale_record_is_refused(
    fleet: Fleet, stack: Stack, connect: ConnectClient
) -> None:
    bob, auth = stack.dsn(fleet.dbs["bob"]), stack.dsn(fleet.dbs["auth"])
    insert(bob, 0, 20)
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    source, topic = fleet.name("platforms", "source"), fleet.topic("users")
    wait_until(lambda: arrived(auth, 20), timeout=180, message="the first rows at auth")

    # Stopped first, its tasks commit their offsets: the record is where the slot was left.
    assert connect._call("PUT", f"/connectors/{source}/stop").status_code in (200, 202, 204)
    wait_until(lambda: (connect.status(source) or {}).get("connector", {}).get("state") == "STOPPED" or None,
               timeout=60, message="the source STOPPED")  # fmt: skip
    code, out = offsets(fleet, "backup")
    assert code == 0, out
    code, out = offsets(fleet, "history", source, "-o", "json")
    (record,) = json.loads(out[out.index("{") : out.rindex("}") + 1])["records"]
    assert record["slot"]["name"] == fleet.slot() and record["offsets"], record

    # The loss: its offsets deleted and the connector gone, as a rebuilt cluster has it.
    assert connect._call("DELETE", f"/connectors/{source}/offsets").status_code == 200
    connect.delete(source)
    wait_until(lambda: connect.status(source) is None or None, timeout=60, message="the source deleted")
    snapshot_records = sum(1 for v in read_topic(stack.bootstrap, topic) if v and v.get("op") == "r")
    insert(bob, 20, 50)  # written during the outage

    code, out = offsets(fleet, "restore", source, "--auto-approve")
    assert code == 0, out
    connect.track(source)
    connect.wait_running(source, timeout=120)
    wait_until(lambda: arrived(auth, 70), timeout=180, message="the outage's rows at auth")
    values = read_topic(stack.bootstrap, topic)
    assert sum(1 for v in values if v and v.get("op") == "r") == snapshot_records, "no snapshot after the restore"
    distinct = read_rows(auth, "SELECT count(*), count(DISTINCT user_id) FROM users WHERE user_id LIKE 'ledger-%%'")
    assert distinct == [(70, 70)]

    # Loss: once the slot has released the recorded position, a restore to it is refused.
    recorded = max(o["offset"]["lsn"] for o in record["offsets"])
    more = iter(range(1000, 2000))

    def released() -> bool | None:
        insert(bob, next(more), 1)  # WAL and commits for Debezium to confirm at its offset flushes
        return slot_lsns(stack, fleet)[0] > recorded or None

    wait_until(released, timeout=300, interval=2.0, message="the slot releasing the recorded position")
    code, out = offsets(fleet, "restore", source, "--at", record["taken_at"][:19], "--auto-approve")
    assert code == 2, out
    assert "offsets-lost" in out and "no longer holds the recorded position" in out
    assert (connect.status(source) or {}).get("connector", {}).get("state") == "RUNNING"  # nothing written

"""The offsets ledger on the real stack (issue 49): PostgreSQL (the source database and the
state database that keeps the ledger), Kafka, Connect and Debezium.

Disaster recovery of one source: its offsets recorded, then lost (reset and the connector
deleted, as a cluster rebuilt with an empty offsets topic has it), rows written meanwhile;
`offsets restore` creates it STOPPED, puts the recorded offsets back and starts it: no snapshot
record after the restore, every row of the outage at the sink once. Then loss: once the slot
has released the recorded position, a restore to it is refused `offsets-lost` with nothing
written.

Disaster recovery of a whole cluster: Connect cluster 2 stopped, its internal topics deleted and
the worker started again (a cluster recreated empty), rows written meanwhile; `offsets restore
--cluster` brings its source and sink back from the ledger: no snapshot, each row of the outage
in the topic once, `accuracy --deep` a match."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hephaestus.state.ledgerdoc import lsn_of
from tests.stack.faults import internal_topics, restart_stack, stop_worker
from tests.stack.fleet import Fleet, make_fleet
from tests.stack.kafka import delete_topics, ops, read_topic
from tests.stack.support import ConnectClient, Stack, execute, read_rows, unique_suffix, wait_until


@pytest.fixture
def fleet(bob_fleet: Fleet, stack: Stack) -> Fleet:
    return with_ledger(bob_fleet, stack)


def with_ledger(fleet: Fleet, stack: Stack) -> Fleet:
    """bob's users -> auth only, the ledger kept in the stack's own database."""
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
    # A record's value is {schema, payload} (JSON with schemas): `ops` reads the op in the payload.
    snapshot = sorted(key for op, key in ops(read_topic(stack.bootstrap, topic)) if op == "r")
    assert snapshot == sorted(f"ledger-{i}" for i in range(20)), "the first start's snapshot"
    insert(bob, 20, 50)  # written during the outage

    code, out = offsets(fleet, "restore", source, "--auto-approve")
    assert code == 0, out
    connect.track(source)
    connect.wait_running(source, timeout=120)
    wait_until(lambda: arrived(auth, 70), timeout=180, message="the outage's rows at auth")
    changes = ops(read_topic(stack.bootstrap, topic))
    assert sorted(key for op, key in changes if op == "r") == snapshot, "no snapshot after the restore"
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


# --- a whole cluster lost and recreated empty ---------------------------------------------------

# bob's definition names its cluster `platforms`; this project points it at Connect cluster 2.
CLUSTER2 = "platforms"


@pytest.fixture
def fleet2(
    tmp_path: Path,
    stack2: Stack,
    fresh_db: Callable[..., str],
    connect2: ConnectClient,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Fleet]:
    """bob's source and its auth sink on Connect cluster 2, the ledger on; at teardown worker 2 is
    up and started again whatever the test left (stopped, half-started): connect2's teardown
    deletes the connectors through it, and the exclusive tests after this one share it."""
    yield with_ledger(make_fleet(tmp_path, stack2, fresh_db, capsys, ["bob"], {CLUSTER2: connect2}), stack2)
    restart_stack(stack2, 2)


@pytest.mark.exclusive  # Connect cluster 2's worker is stopped and started again
def test_a_cluster_recreated_empty_is_restored_from_the_ledger_without_a_snapshot(
    fleet2: Fleet, stack2: Stack, connect2: ConnectClient
) -> None:
    fleet, bob, auth = fleet2, stack2.dsn(fleet2.dbs["bob"]), stack2.dsn(fleet2.dbs["auth"])
    names = fleet.connector_names(CLUSTER2)
    insert(bob, 0, 20)
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    wait_until(lambda: arrived(auth, 20), timeout=180, message="the first rows at auth")
    code, out = offsets(fleet, "backup", "--cluster", CLUSTER2)
    assert code == 0 and f"{len(names)} connectors recorded, 0 not" in out, out
    topic = fleet.topic("users")
    snapshot = [key for op, key in ops(read_topic(stack2.bootstrap, topic)) if op == "r"]
    assert sorted(snapshot) == sorted(f"ledger-{i}" for i in range(20)), "the first start's snapshot"

    # The disaster: cluster 2 stopped and its internal topics (config, offsets, status) deleted,
    # so that it comes back empty, as a cluster rebuilt; rows written meanwhile.
    stop_worker(stack2, 2)
    delete_topics(stack2.bootstrap, internal_topics(stack2, 2))
    insert(bob, 20, 50)
    restart_stack(stack2, 2)
    assert not set(connect2.names()) & set(names), "a recreated cluster knows none of its connectors"

    code, out = offsets(fleet, "restore", "--cluster", CLUSTER2, "--auto-approve")
    assert code == 0, out
    assert out.count("create it STOPPED from git") == len(names), out
    for name in names:
        connect2.wait_running(name, timeout=120)
    wait_until(lambda: arrived(auth, 70), timeout=180, message="the outage's rows at auth")

    # No snapshot after the restore, and each row of the outage in the topic once: the source
    # resumed where the ledger had it, neither before (twice) nor after (lost).
    changes = ops(read_topic(stack2.bootstrap, topic))
    assert sorted(key for op, key in changes if op == "r") == sorted(snapshot), "no snapshot after the restore"
    outage = sorted(key for op, key in changes if op == "c")
    assert outage == sorted(f"ledger-{i}" for i in range(20, 70)), outage
    counted = read_rows(auth, "SELECT count(*), count(DISTINCT user_id) FROM users WHERE user_id LIKE 'ledger-%%'")
    assert counted == [(70, 70)]
    code, accuracy = fleet.accuracy("--deep")
    assert code == 0, json.dumps(accuracy, indent=1)
    (users,) = accuracy["tables"]
    assert users["verdict"] == "match" and users["source"]["rows"] == users["sink"]["rows"] == 70, users
    assert all(users["deep"][k]["total"] == 0 for k in ("missing", "different", "extra")), users["deep"]
    # The runbook's last check: git and the recreated cluster agree, every connector healthy.
    code, out = fleet.cli("reconcile", "--dry-run", "--exit-code", "--project", str(fleet.root / "hephaestus.yaml"))
    assert code == 0, out

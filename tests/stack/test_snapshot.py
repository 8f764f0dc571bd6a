"""Incremental snapshots on real Debezium: back-fill new tables without recreating the source."""

from __future__ import annotations

import json

import pytest

from tests.stack.fleet import Fleet
from tests.stack.kafka import ops, read_topic
from tests.stack.support import ConnectClient, Stack, execute, json_in, read_rows, wait_until


@pytest.fixture
def users_only(bob_fleet: Fleet, stack: Stack) -> Fleet:
    return setup_users_only(bob_fleet, stack)


def setup_users_only(fleet: Fleet, stack: Stack) -> Fleet:
    """bob capturing only users (-> auth); students exist, hold rows, and are not published."""
    fleet.only_users_to_auth()
    bob = stack.dsn(fleet.dbs["bob"])
    execute(bob, "ALTER PUBLICATION debezium_publication DROP TABLE students")
    execute(bob, "INSERT INTO users (user_id, name) VALUES ('u-1', 'One')")
    code, report = fleet.reconcile()
    assert code == 0, report
    wait_until(
        lambda: read_rows(stack.dsn(fleet.dbs["auth"]), "SELECT 1 FROM users WHERE user_id='u-1'"),
        timeout=120,
        message="u-1 in auth",
    )
    execute(
        bob, "INSERT INTO students (student_id, current_grade) SELECT 's-' || g, g % 12 FROM generate_series(1, 50) g"
    )
    return fleet


def add_students_pipeline(fleet: Fleet) -> None:
    definition = fleet.definition("bob")
    definition["pipelines"].append({"source_table": "students", "sinks": [{"database": fleet.dbs["fatima"]}]})
    fleet.write_definition("bob", definition)
    fleet.generate()


def test_new_table_back_filled_by_signal_without_recreating(users_only: Fleet, connect: ConnectClient) -> None:
    fleet = users_only
    users_topic = fleet.topic("users")
    before = ops(read_topic(fleet.stack.bootstrap, users_topic))
    add_students_pipeline(fleet)
    code, report = fleet.reconcile("--send-incremental-snapshot")
    assert code == 0, json.dumps(report, indent=1)
    cluster = report["clusters"][0]
    source = fleet.name("platforms", "source_connector")
    actions = {s["name"]: s["action"] for s in cluster["steps"]}
    assert actions[source] == "update", "the source is updated, never recreated"
    (signal,) = [r for r in cluster["results"] if r["action"] == "snapshot"]
    assert signal["ok"] and signal["name"] == source and "public.students" in signal["detail"]
    signal_id = signal["detail"].split()[1].rstrip(":")
    assert len(signal_id) <= 42

    fatima = fleet.stack.dsn(fleet.dbs["fatima"])
    wait_until(
        lambda: read_rows(fatima, "SELECT count(*) FROM students")[0][0] == 50,
        timeout=180,
        message="50 back-filled students in fatima",
    )
    published = read_rows(
        fleet.stack.dsn(fleet.dbs["bob"]),
        "SELECT tablename FROM pg_publication_tables WHERE pubname = 'debezium_publication'",
    )
    assert ("students",) in published

    code, out = fleet.cli(
        "snapshot",
        "status",
        "--project",
        str(fleet.root / "hephaestus.yaml"),
        "--connector",
        source,
        "--id",
        signal_id,
        "--wait",
        "--timeout",
        "120",
        "-o",
        "json",
    )
    assert code == 0, out
    status = json_in(out)
    assert status["completed"]
    scans = [e for e in status["events"] if e["type"] == "TABLE_SCAN_COMPLETED"]
    assert scans and all(e["status"] == "SUCCEEDED" for e in scans)
    # Tables the source already captured were not snapshotted again: no new events on users.
    assert ops(read_topic(fleet.stack.bootstrap, users_topic)) == before


def test_manual_signal_with_where_and_refusals(users_only: Fleet, connect: ConnectClient) -> None:
    fleet = users_only
    source = fleet.name("platforms", "source_connector")
    project = ["--project", str(fleet.root / "hephaestus.yaml"), "--connector", source]
    code, out = fleet.cli("snapshot", *project, "students")
    assert code == 1 and "does not capture public.students" in out, out
    bob = fleet.stack.dsn(fleet.dbs["bob"])
    signals = lambda: read_rows(bob, "SELECT count(*) FROM dbz_signals WHERE type = 'execute-snapshot'")[0][0]  # noqa: E731
    assert signals() == 0, "a refused signal writes nothing"

    execute(bob, "INSERT INTO users (user_id, name) VALUES ('u-2', 'Two'), ('u-3', 'Three')")
    auth = fleet.stack.dsn(fleet.dbs["auth"])
    wait_until(lambda: read_rows(auth, "SELECT count(*) FROM users")[0][0] == 3, timeout=120, message="3 users")
    execute(auth, "DELETE FROM users")
    code, out = fleet.cli("snapshot", *project, "users", "--where", "user_id = 'u-2'")
    assert code == 0, out
    assert signals() == 1
    wait_until(
        lambda: read_rows(auth, "SELECT user_id FROM users") == [("u-2",)], timeout=120, message="only u-2 back-filled"
    )


def test_slot_never_active_writes_no_signal(users_only: Fleet, connect: ConnectClient) -> None:
    fleet = users_only
    source = fleet.name("platforms", "source_connector")
    assert connect.http.put(f"/connectors/{source}/stop").status_code in (202, 204)
    bob = fleet.stack.dsn(fleet.dbs["bob"])
    wait_until(
        lambda: (
            read_rows(bob, "SELECT active FROM pg_replication_slots WHERE slot_name = %s", [fleet.slot()]) == [(False,)]
        ),
        timeout=60,
        message="slot inactive",
    )
    code, out = fleet.cli(
        "snapshot",
        "--project",
        str(fleet.root / "hephaestus.yaml"),
        "--connector",
        source,
        "users",
        "--slot-timeout",
        "3",
    )
    assert code == 1 and "did not become active" in out and "no signal was written" in out
    assert read_rows(bob, "SELECT count(*) FROM dbz_signals")[0][0] == 0


def test_missing_signal_table_names_its_ddl(users_only: Fleet, connect: ConnectClient) -> None:
    fleet = users_only
    add_students_pipeline(fleet)
    execute(fleet.stack.dsn(fleet.dbs["bob"]), "DROP TABLE dbz_signals")
    code, report = fleet.reconcile("--send-incremental-snapshot")
    assert code == 1
    source = fleet.name("platforms", "source_connector")
    # Publication upkeep finds it first, in every reconcile (dry runs too): nothing is applied.
    (error,) = report["clusters"][0]["invalid"][source]["signal.data.collection"]
    assert "signal table public.dbz_signals does not exist" in error and "CREATE TABLE public.dbz_signals" in error
    assert not report["clusters"][0]["applied"] and report["clusters"][0]["results"] == []
    live = connect.config(source)
    assert "public.students" not in live["table.include.list"], "the source was not updated"


def test_table_without_primary_key_refused(users_only: Fleet, stack: Stack) -> None:
    from hephaestus.errors import HephaestusError
    from hephaestus.snapshot import db

    bob = stack.dsn(users_only.dbs["bob"])
    execute(bob, "CREATE TABLE nopk (a int)")
    with db.connect(bob) as conn, pytest.raises(HephaestusError, match="has no primary key"):
        db.check_tables(conn, ["public.nopk"], "public.dbz_signals", "debezium_publication")


def published(fleet: Fleet) -> set[str]:
    rows = read_rows(
        fleet.stack.dsn(fleet.dbs["bob"]),
        "SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = 'debezium_publication'",
    )
    return {str(r[0]) for r in rows}


def test_every_reconcile_keeps_the_publication_in_step_with_the_include_lists(users_only: Fleet) -> None:
    """No --send-incremental-snapshot: a table added to the include list is published before the
    source update (and its new rows stream); one removed is unpublished, its data untouched; a
    table published by hand stays; a publication without the signal table stops the apply."""
    fleet = users_only
    bob = fleet.stack.dsn(fleet.dbs["bob"])
    assert "public.students" not in published(fleet)
    add_students_pipeline(fleet)
    code, report = fleet.reconcile("--dry-run", "--exit-code")
    assert code == 2 and report["clusters"][0]["publications"] == [
        {
            "database": fleet.dbs["bob"],
            "publication": "debezium_publication",
            "add": ["public.students"],
            "drop": [],
            "for": [fleet.name("platforms", "source_connector")],
        }
    ], report
    assert "public.students" not in published(fleet), "a dry run changes nothing"

    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    (pub,) = [r for r in report["clusters"][0]["results"] if r["action"] == "publication"]
    assert pub["ok"] and pub["detail"].startswith("add public.students")
    assert "public.students" in published(fleet)
    execute(bob, "INSERT INTO students (student_id, current_grade) VALUES ('s-new', 3)")
    fatima = fleet.stack.dsn(fleet.dbs["fatima"])
    wait_until(
        lambda: read_rows(fatima, "SELECT 1 FROM students WHERE student_id = 's-new'"),
        timeout=120,
        message="a row inserted after the reconcile streams to fatima",
    )

    definition = fleet.definition("bob")
    definition["pipelines"] = [p for p in definition["pipelines"] if p["source_table"] != "students"]
    fleet.write_definition("bob", definition)
    fleet.generate()
    code, report = fleet.reconcile()  # students leave capture: a destructive effect, held by the gate
    (cluster,) = report["clusters"]
    assert code == 2 and "capture-dropped" in cluster["refused"], json.dumps(report, indent=1)
    assert "public.students" in published(fleet), "a refused plan changes nothing"
    code, report = fleet.reconcile("--allow-destructive=capture-dropped,topics-stopped")
    assert code == 0, json.dumps(report, indent=1)
    assert published(fleet) == {"public.users", "public.locations", "public.dbz_signals", "public.hephaestus_probe"}, (
        "students unpublished; locations (published by the migration, captured by no source) kept"
    )
    assert read_rows(bob, "SELECT count(*) FROM students")[0][0] == 51, "unpublishing drops no data"

    execute(bob, "ALTER PUBLICATION debezium_publication DROP TABLE dbz_signals")
    code, out = fleet.cli("reconcile", "--auto-approve", "--project", str(fleet.root / "hephaestus.yaml"), "--dry-run")
    assert code == 1 and "ALTER PUBLICATION debezium_publication ADD TABLE public.dbz_signals;" in out, out

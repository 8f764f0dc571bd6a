"""Steps for features/incremental_snapshot_new_table.feature (real Debezium)."""

from __future__ import annotations

import json
from typing import Any

from pytest_bdd import given, scenarios, then, when

from tests.stack import test_snapshot
from tests.stack.fleet import Fleet
from tests.stack.kafka import ops, read_topic
from tests.stack.support import REPO, Stack, read_rows, wait_until

scenarios(str(REPO / "features" / "incremental_snapshot_new_table.feature"))


@given("bob's source captures only users, and bob.students already holds 50 rows", target_fixture="ctx")
def users_only(bob_fleet: Fleet, stack: Stack) -> dict[str, Any]:
    fleet = test_snapshot.setup_users_only(bob_fleet, stack)
    topic = fleet.topic("users")
    return {"fleet": fleet, "users_topic": topic, "users_before": ops(read_topic(stack.bootstrap, topic))}


@when("students -> fatima is added to the definition and connectors are regenerated")
def add_pipeline(ctx: dict[str, Any]) -> None:
    test_snapshot.add_students_pipeline(ctx["fleet"])


@when("the upsert job runs with --sendIncrementalSnapshot")
def upsert(ctx: dict[str, Any]) -> None:
    fleet: Fleet = ctx["fleet"]
    code, out = fleet.cli(
        "job",
        "run",
        "upsert_kafka_connect",
        "--project",
        str(fleet.root / "hephaestus.yaml"),
        "--sendIncrementalSnapshot",
        "-o",
        "json",
    )
    assert code == 0, out
    ctx["report"] = json.loads(out[out.index("{") : out.rindex("}") + 1])["clusters"][0]


@then("the source connector was updated, not recreated")
def updated(ctx: dict[str, Any]) -> None:
    source = ctx["fleet"].name("platforms", "source_connector")
    actions = {s["name"]: s["action"] for s in ctx["report"]["steps"]}
    assert actions[source] == "update"
    (signal,) = [r for r in ctx["report"]["results"] if r["action"] == "snapshot"]
    assert signal["ok"]
    ctx["signal_id"] = signal["detail"].split()[1].rstrip(":")


@then("50 students read back from fatima.students")
def back_filled(ctx: dict[str, Any]) -> None:
    fleet: Fleet = ctx["fleet"]
    dsn = fleet.stack.dsn(fleet.dbs["fatima"])
    wait_until(
        lambda: read_rows(dsn, "SELECT count(*) FROM students")[0][0] == 50,
        timeout=180,
        message="50 students in fatima",
    )


@then("the snapshot status of the signal is COMPLETED with SUCCEEDED tables")
def completed(ctx: dict[str, Any]) -> None:
    fleet: Fleet = ctx["fleet"]
    code, out = fleet.cli(
        "snapshot",
        "status",
        "--project",
        str(fleet.root / "hephaestus.yaml"),
        "--connector",
        fleet.name("platforms", "source_connector"),
        "--id",
        ctx["signal_id"],
        "--wait",
    )
    assert code == 0, out
    assert "COMPLETED" in out and "TABLE_SCAN_COMPLETED public.students SUCCEEDED" in out


@then("no new events were emitted for bob.users")
def no_duplicates(ctx: dict[str, Any]) -> None:
    assert ops(read_topic(ctx["fleet"].stack.bootstrap, ctx["users_topic"])) == ctx["users_before"]

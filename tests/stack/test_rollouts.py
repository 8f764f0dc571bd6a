"""Rollouts on the real stack: a destructive change (a source's slot.name) refused without the
flag and applied with it; a saved plan applied after a live edit is refused, applied when not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, execute, json_in, read_rows, wait_until


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Iterator[Fleet]:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    fleet.edit_project(policy={"ready_timeout_s": 120, "stability_window_s": 2})
    assert fleet.reconcile()[0] == 0
    yield fleet


def source_file(fleet: Fleet) -> Path:
    return next((fleet.root / "connectors/platforms/source").glob("*.json"))


def test_a_slot_name_change_is_refused_without_the_flag_and_applied_with_it(
    fleet: Fleet, connect: ConnectClient
) -> None:
    path = source_file(fleet)
    doc = json.loads(path.read_text())
    old_slot, new_slot = doc["config"]["slot.name"], doc["config"]["slot.name"] + "_v2"
    doc["config"]["slot.name"] = new_slot
    # A new slot starts at the server's current position, after the stored offsets: without a
    # re-snapshot the task fails ("trying to read change stream starting at …"). `when_needed`
    # snapshots only then (its effect is the new slot's, not a re-read of every start).
    doc["config"]["snapshot.mode"] = "when_needed"
    path.write_text(json.dumps(doc))

    code, report = fleet.reconcile()
    (cluster,) = report["clusters"]
    (step,) = [s for s in cluster["steps"] if s["action"] == "update"]
    assert code == 2 and step["risk"] == "destructive"
    assert [e["effect"] for e in step["effects"]] == ["slot-changed"]
    assert f"destructive update of {doc['name']} (slot-changed: slot.name" in cluster["refused"]
    assert connect.status(doc["name"]) is not None
    live = connect.config(doc["name"])
    assert live["slot.name"] == old_slot  # nothing written

    code, report = fleet.reconcile("--allow-destructive")
    assert code == 0, json.dumps(report, indent=1)
    assert connect.config(doc["name"])["slot.name"] == new_slot
    bob = fleet.stack.dsn(fleet.dbs["bob"])
    wait_until(
        lambda: (
            read_rows(bob, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", [new_slot])[0][0] == 1
            or None
        ),
        timeout=60,
        message="the new slot",
    )
    # The old slot is left behind (never dropped by a reconcile), and no longer this source's.
    # (Ownership is judged over the whole Connect cluster: a neighbour's source whose slot and
    # database are unresolvable placeholders, as test_gate's, could use any slot, so "no owner
    # at all" depends on who runs beside; this source must not be among the owners.)
    code, out = fleet.cli("slots", "--project", str(fleet.root / "hephaestus.yaml"), "-o", "json")
    orphan = [s for s in json_in(out)["slots"] if s["slot"] == old_slot]
    assert orphan and doc["name"] not in (orphan[0]["owner"] or ""), orphan
    fleet.cli("slots", "--project", str(fleet.root / "hephaestus.yaml"), "--drop-orphan", old_slot, "--yes")


def test_a_saved_plan_is_refused_after_a_live_edit_and_applied_when_nothing_moved(
    fleet: Fleet, connect: ConnectClient
) -> None:
    sink_path = next((fleet.root / "connectors/platforms/sink").glob("*.json"))
    doc = json.loads(sink_path.read_text())
    doc["config"]["batch.size"] = "77"
    sink_path.write_text(json.dumps(doc))
    saved = fleet.root / "plan.json"
    project = str(fleet.root / "hephaestus.yaml")
    code, out = fleet.cli("reconcile", "--project", project, "--dry-run", "-o", "markdown", "--out", str(saved))
    plan_id = json.loads(saved.read_text())["id"]
    assert code == 0 and f"Plan `{plan_id}` sealed" in out and "restart" in out, out

    live = connect.config(doc["name"])
    connect.put_config(doc["name"], {**live, "batch.size": "5"})  # someone edits it by hand
    code, out = fleet.cli("reconcile", "--project", project, "--plan", str(saved))
    assert code == 2 and f"the live config or state of {doc['name']} changed since the plan" in out, out
    assert connect.config(doc["name"])["batch.size"] == "5"

    # The hand edit restarts the sink: plan once it is RUNNING again, or its state moves under the plan.
    connect.wait_running(doc["name"], timeout=120)
    code, out = fleet.cli("reconcile", "--project", project, "--dry-run", "--out", str(saved))
    assert code == 0, out  # over the plan it sealed before: a plan's head names it (the probe's made it > 4 KiB)
    code, out = fleet.cli("reconcile", "--project", project, "--plan", str(saved))
    assert code == 0, out
    assert connect.config(doc["name"])["batch.size"] == "77"


def test_a_paused_connector_stays_paused_across_reconciles_and_heal_and_a_revert_resumes_it(
    fleet: Fleet, connect: ConnectClient
) -> None:
    sink_path = next((fleet.root / "connectors/platforms/sink").glob("*.json"))
    doc = json.loads(sink_path.read_text())
    sink_path.write_text(json.dumps({**doc, "state": "paused"}))
    code, report = fleet.reconcile()
    (step,) = [s for s in report["clusters"][0]["steps"] if s["action"] == "state"]
    assert code == 0 and step["name"] == doc["name"] and step["reason"] == "RUNNING → PAUSED"
    assert connect.status(doc["name"])["connector"]["state"] == "PAUSED"  # type: ignore[index]

    code, report = fleet.reconcile()
    assert code == 0 and report["clusters"][0]["writes"] == 0
    project = str(fleet.root / "hephaestus.yaml")
    code, out = fleet.cli("heal", "--project", project, "--state-file", str(fleet.root / "heal.json"))
    assert code == 0, out
    assert connect.status(doc["name"])["connector"]["state"] == "PAUSED"  # type: ignore[index]

    # status judges it against git: paused on purpose is healthy, and it says what git wants.
    code, out = fleet.cli("status", "--project", project, "-o", "json")
    listed = json.loads(out[out.index("{") : out.rindex("}") + 1])  # stdout, then any stderr line
    (seen,) = [c for c in listed["clusters"][0]["connectors"] if c["name"] == doc["name"]]
    assert code == 0 and seen["healthy"] and seen["state"] == seen["desired"] == "PAUSED", out

    # Rows written while it is paused wait in Kafka; a `git revert` of the pause (no `state`
    # in the file: running) resumes it, as a planned `state` step, and they arrive.
    execute(fleet.stack.dsn(fleet.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('while-paused', 'p')")
    sink_path.write_text(json.dumps(doc))
    code, report = fleet.reconcile()
    (step,) = [s for s in report["clusters"][0]["steps"] if s["action"] == "state"]
    assert code == 0 and step["reason"] == "PAUSED → RUNNING", json.dumps(report, indent=1)
    assert connect.status(doc["name"])["connector"]["state"] == "RUNNING"  # type: ignore[index]
    auth = fleet.stack.dsn(fleet.dbs["auth"])
    query = "SELECT count(*) FROM users WHERE user_id = 'while-paused'"
    wait_until(lambda: read_rows(auth, query)[0][0] == 1 or None, timeout=120, message="the row held while paused")


def test_a_sinks_offsets_reset_re_delivers_its_rows(fleet: Fleet, connect: ConnectClient) -> None:
    bob, auth = fleet.stack.dsn(fleet.dbs["bob"]), fleet.stack.dsn(fleet.dbs["auth"])
    execute(bob, "INSERT INTO users (user_id, name) SELECT 'r-' || g, 'n' || g FROM generate_series(1, 25) g")

    def count() -> int:
        return int(read_rows(auth, "SELECT count(*) FROM users")[0][0])

    wait_until(lambda: count() == 25 or None, timeout=120, message="25 rows at the sink")
    execute(auth, "TRUNCATE users")
    sink = fleet.name("platforms", "to_" + fleet.dbs["auth"])
    project = str(fleet.root / "hephaestus.yaml")
    code, out = fleet.cli("offsets", "reset", "--project", project, "--connector", sink, "--yes")
    assert code == 0 and "stop, delete every offset" in out, out
    wait_until(
        lambda: count() == int(read_rows(bob, "SELECT count(*) FROM users")[0][0]) or None,
        timeout=120,
        message="the sink re-delivered every row",
    )
    assert connect.status(sink)["connector"]["state"] == "RUNNING"  # type: ignore[index]
    assert '"action": "offsets-reset"' in (fleet.root / "audit.jsonl").read_text()

"""Ownership on the real stack (issue 14): import a hand-made fleet, refuse an emptied sink
folder, two deployments on one Connect cluster, and a sink rename that keeps its offsets."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.stack.faults import WorkerLog
from tests.stack.fleet import Fleet, dump_yaml, make_fleet
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until


@pytest.fixture
def bob(bob_fleet: Fleet) -> Fleet:
    return bob_fleet


def edit_project(fleet: Fleet, **changes: Any) -> None:
    import yaml

    path = fleet.root / "hephaestus.yaml"
    doc = yaml.safe_load(path.read_text())
    doc.update(changes)
    path.write_text(dump_yaml(doc))


def steps(report: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["action"] for c in report["clusters"] for s in c["steps"]}


def test_a_fleet_made_by_hand_is_imported_and_then_plans_zero_writes(bob: Fleet, connect: ConnectClient) -> None:
    bob.probe_off()  # made by hand: no one made the probe's tables (reconcile would, and say so)
    generated = {p.relative_to(bob.root): p.read_bytes() for p in sorted((bob.root / "connectors").rglob("*.json"))}
    for raw in generated.values():  # made by hand over REST; git never had it
        doc = json.loads(raw)
        connect.put_config(doc["name"], doc["config"])
    shutil.rmtree(bob.root / "connectors")
    for raw in generated.values():
        connect.wait_running(json.loads(raw)["name"], timeout=120)

    code, out = bob.cli("import", "--project", str(bob.root / "hephaestus.yaml"))
    assert code == 0, out
    assert {rel: (bob.root / rel).read_bytes() for rel in generated} == generated, "the generator's bytes"
    code, report = bob.reconcile("--dry-run", "--exit-code")
    assert code == 0, json.dumps(report, indent=1)
    (cluster,) = report["clusters"]
    assert cluster["counts"]["unchanged"] == len(generated) and cluster["writes"] == 0 and cluster["adopt"] == []
    log = WorkerLog(bob.stack)
    code, report = bob.reconcile()
    assert code == 0 and report["clusters"][0]["writes"] == 0 and log.writes(bob.dbs.values()) == []


def test_an_emptied_sink_folder_is_refused_whatever_the_policy(bob: Fleet, connect: ConnectClient) -> None:
    edit_project(
        bob, policy={"max_deletes": 100, "max_delete_share": 1.0, "ready_timeout_s": 120, "stability_window_s": 5}
    )
    assert bob.reconcile()[0] == 0
    sinks = bob.connector_names("platforms", "sink")
    for path in (bob.root / "connectors/platforms/sink").glob("*.json"):
        path.unlink()
    code, report = bob.reconcile()
    assert code == 2 and "git has no JDBC sink for this cluster" in report["clusters"][0]["refused"]
    assert report["clusters"][0]["writes"] == 0 and set(sinks) <= set(connect.names())
    (bob.root / "connectors/platforms/sink").rmdir()  # the folder missing altogether: the same
    code, report = bob.reconcile()
    assert code == 2 and "its sink folder is empty or missing" in report["clusters"][0]["refused"]
    assert set(sinks) <= set(connect.names())
    code, report = bob.reconcile("--force")
    assert code == 0 and not set(sinks) & set(connect.names())


def test_two_deployments_on_one_cluster_never_touch_each_other(
    tmp_path: Path,
    stack: Stack,
    fresh_db: Callable[..., str],
    connect: ConnectClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a = make_fleet(tmp_path / "a", stack, fresh_db, capsys, ["bob"], {"platforms": connect})
    b = make_fleet(tmp_path / "b", stack, fresh_db, capsys, ["bob"], {"platforms": connect})
    state = {"dsn": f"host={stack.pg_host} port={stack.pg_port} user={stack.pg_user} dbname=postgres"}
    for name, fleet in (("team-a", a), ("team-b", b)):  # one shared state database: the record in PostgreSQL
        import yaml

        doc = yaml.safe_load((fleet.root / "hephaestus.yaml").read_text())
        edit_project(
            fleet,
            name=name,
            state={"database": "state"},
            databases={**doc["databases"], "state": state},
            heal={"restart_wait_s": 3},
        )
    assert a.reconcile()[0] == 0 and b.reconcile()[0] == 0
    theirs = b.connector_names("platforms")
    gone = a.name("platforms", "_to_" + a.dbs["fatima"] + "_students")
    (a.root / "connectors/platforms/sink" / f"{gone}.json").unlink()
    code, report = a.reconcile()
    assert code == 0 and [n for n, act in steps(report).items() if act == "delete"] == [gone]
    assert gone not in connect.names() and set(theirs) <= set(connect.names())
    assert not set(theirs) & set(steps(report)), "B's connectors are not even in A's plan"

    broken = f"it_hephaestus_{b.dbs['bob']}_to_nowhere_sink"  # in B's select; fails at once
    connect.put_config(
        broken,
        {
            "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
            "topics": "nothing",
            "connection.url": "jdbc:postgresql://127.0.0.1:1/x",
            "connection.username": "x",
            "connection.password": "x",
        },
    )
    wait_until(lambda: "FAILED" in json.dumps(connect.status(broken)) or None, timeout=60, message="FAILED")
    log = WorkerLog(stack)
    code, out = a.cli("heal", "--project", str(a.root / "hephaestus.yaml"), "-o", "json")
    assert broken not in out and log.writes([broken]) == []
    code, out = b.cli("heal", "--project", str(b.root / "hephaestus.yaml"), "-o", "json")
    assert broken in out and [w.method for w in log.writes([broken])] == ["POST"]

    # A third project file without `select` on the same cluster owns nothing: it deletes nothing.
    c = tmp_path / "c"
    (c / "connectors/platforms/sink").mkdir(parents=True)
    (c / "hephaestus.yaml").write_text(
        dump_yaml(
            {
                "clusters": {"platforms": {"url": connect.url, "connectors": "connectors/platforms"}},
                "policy": {"max_delete_share": 1.0},
            }
        )
    )
    # The stack is shared with tests running at the same time, whose connectors come and go:
    # what must survive is this test's two deployments' (and the plan must delete nothing).
    ours = set(a.connector_names("platforms")) | set(b.connector_names("platforms"))
    before = set(connect.names()) & ours
    code, out = a.cli("reconcile", "--auto-approve", "--project", str(c / "hephaestus.yaml"))
    assert "warning: cluster platforms has no `select`" in out and "not owned by this deployment" in out
    assert " 0 to delete" in out and " 0 writes]" in out, out
    assert before and before <= set(connect.names()), out


def test_a_renamed_sink_keeps_its_offsets_and_rows_arrive_once(bob: Fleet, connect: ConnectClient) -> None:
    bob.only_users_to_auth()
    # The offsets summed below are the data topic's alone: a probe tick between two reads (the
    # sink reads the probe's topic too) made the sum one more than u3 under a loaded run.
    bob.probe_off()
    source_dsn, sink_dsn = bob.stack.dsn(bob.dbs["bob"]), bob.stack.dsn(bob.dbs["auth"])
    execute(source_dsn, "INSERT INTO users (user_id, name) VALUES ('u1', 'Ann'), ('u2', 'Bo')")
    assert bob.reconcile()[0] == 0
    old = bob.name("platforms", "_to_" + bob.dbs["auth"] + "_users")
    wait_until(
        lambda: len(read_rows(sink_dsn, "SELECT 1 FROM users WHERE user_id IN ('u1', 'u2')")) == 2 or None,
        timeout=120,
        message="u1, u2 replicated",
    )
    # Changed at the sink behind the pipeline's back: a new sink that re-read the topic from
    # the start would write 'Ann' over it again.
    execute(sink_dsn, "UPDATE users SET name = 'changed at the sink' WHERE user_id = 'u1'")

    new = old.replace("_sink_connector", "_v2_sink_connector")
    folder = bob.root / "connectors/platforms/sink"
    doc = json.loads((folder / f"{old}.json").read_text())
    (folder / f"{old}.json").unlink()
    (folder / f"{new}.json").write_text(json.dumps({**doc, "name": new}))
    connect.track(new)
    wait_until(
        lambda: connect.http.get(f"/connectors/{old}/offsets").json().get("offsets") or None,
        timeout=60,
        message="the old sink committed offsets",
    )
    code, report = bob.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    assert steps(report)[new] == "rename" and old not in steps(report)
    (result,) = report["clusters"][0]["results"]
    assert (
        result["ok"]
        and result["detail"].startswith(f"renamed from {old}, ")
        and result["detail"].endswith(" offset partitions carried over; RUNNING")
    ), result
    assert old not in connect.names() and connect.wait_running(new)
    carried = connect.offsets(new)
    assert carried and all(o["offset"]["kafka_offset"] > 0 for o in carried)

    execute(source_dsn, "INSERT INTO users (user_id, name) VALUES ('u3', 'Cy')")
    wait_until(
        lambda: read_rows(sink_dsn, "SELECT name FROM users WHERE user_id = 'u3'") or None,
        timeout=120,
        message="u3 replicated by the renamed sink",
    )
    assert read_rows(sink_dsn, "SELECT name FROM users WHERE user_id = 'u1'") == [("changed at the sink",)]

    def committed() -> int:
        return sum(o["offset"]["kafka_offset"] for o in connect.offsets(new))

    start = sum(o["offset"]["kafka_offset"] for o in carried)
    wait_until(lambda: committed() > start or None, timeout=90, message="the renamed sink commits u3")
    assert committed() == start + 1, "the new consumer group went on from the old one's offsets"
    assert bob.reconcile("--dry-run", "--exit-code")[0] == 0

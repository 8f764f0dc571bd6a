"""Operations on the real stack: replication slots (a stopped source's slot filling up, then
orphaned and dropped), `status` on a healthy fleet and with a FAILED task, and the exporter's
/metrics carrying the same numbers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, execute, read_rows, wait_until

MIB = 1 << 20


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Iterator[Fleet]:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    fleet.edit_project(
        policy={"ready_timeout_s": 120, "stability_window_s": 2, "slot_idle_max_retained_bytes": 16 * MIB}
    )
    assert fleet.reconcile()[0] == 0
    yield fleet


def run_json(fleet: Fleet, *args: str) -> tuple[int, dict[str, Any]]:
    code, out = fleet.cli(*args, "--project", str(fleet.root / "hephaestus.yaml"), "-o", "json")
    assert "{" in out, out
    return code, json.loads(out[out.index("{") : out.rindex("}") + 1])


def our_slot(fleet: Fleet) -> dict[str, Any]:
    code, doc = run_json(fleet, "slots")
    (found,) = [s for s in doc["slots"] if s["slot"] == fleet.slot()]
    return {**found, "exit": code}


def test_a_stopped_sources_slot_is_reported_filling_then_orphaned_then_dropped(
    fleet: Fleet, connect: ConnectClient
) -> None:
    source = fleet.name("platforms", "source_connector")
    slot = our_slot(fleet)
    owners = f"platforms/{source}, platforms/{source} (in git)"  # live, and declared in git
    assert slot["exit"] == 0 and slot["active"] and slot["owner"] == owners, slot

    connect.http.put(f"/connectors/{source}/stop").raise_for_status()
    wait_until(lambda: not our_slot(fleet)["active"] or None, timeout=60, message="the slot inactive")
    bob = fleet.stack.dsn(fleet.dbs["bob"])
    for _ in range(60):  # ~60 MiB of WAL nobody reads (a logical message is never compressed)
        execute(bob, "SELECT pg_logical_emit_message(false, 'hephaestus-test', repeat('x', 1048576))")
    slot = our_slot(fleet)
    assert slot["exit"] == 2 and slot["verdict"] == "inactive" and slot["retained_bytes"] > 50 * MIB, slot

    connect.delete(source)
    slot = our_slot(fleet)  # git still declares it: the next reconcile would create it on this slot
    assert slot["verdict"] == "inactive" and slot["owner"] == f"platforms/{source} (in git)", slot
    code, out = fleet.cli(
        "slots", "--project", str(fleet.root / "hephaestus.yaml"), "--drop-orphan", fleet.slot(), "--yes"
    )
    assert code == 2 and "could use it" in out and "never allowed" in out, out
    next((fleet.root / "connectors/platforms/source").glob("*.json")).unlink()
    slot = our_slot(fleet)
    assert slot["exit"] == 2 and slot["verdict"] == "orphan" and slot["owner"] is None, slot
    code, out = fleet.cli(
        "slots", "--project", str(fleet.root / "hephaestus.yaml"), "--drop-orphan", fleet.slot(), "--yes"
    )
    assert code == 0 and f"dropped slot {fleet.slot()}" in out, out
    assert read_rows(bob, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", [fleet.slot()]) == [(0,)]
    assert '"action": "slot-drop"' in (fleet.root / "audit.jsonl").read_text()


def test_a_slot_a_live_connector_names_is_never_dropped(fleet: Fleet) -> None:
    code, out = fleet.cli(
        "slots", "--project", str(fleet.root / "hephaestus.yaml"), "--drop-orphan", fleet.slot(), "--yes"
    )
    assert code == 2 and "could use it" in out and "never allowed" in out, out
    assert read_rows(
        fleet.stack.dsn(fleet.dbs["bob"]),
        "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s",
        [fleet.slot()],
    ) == [(1,)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_status_is_healthy_then_names_a_failed_task_and_the_exporter_says_the_same(fleet: Fleet) -> None:
    sink = fleet.name("platforms", "to_" + fleet.dbs["auth"])
    code, doc = run_json(fleet, "status")
    assert code == 0, doc
    (cluster,) = doc["clusters"]
    by_name = {c["name"]: c for c in cluster["connectors"]}
    assert by_name[sink]["healthy"] and by_name[sink]["dlq_depth"] == 0 and by_name[sink]["consumer_lag"] is not None
    sources = [c for c in cluster["connectors"] if c["kind"] == "source" and c["slot"]]
    assert sources and all(c["slot_confirmed_lsn"] > 0 and c["slot_unconfirmed"] >= 0 for c in sources), sources

    # The sink's table disappears: its next write fails the task (schema.evolution=none).
    execute(fleet.stack.dsn(fleet.dbs["auth"]), "DROP TABLE users")
    execute(fleet.stack.dsn(fleet.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('u-x', 'x')")

    # Schema drift names the missing table at once (issue 45); the failed task follows at the flush.
    def failed_task() -> bool | None:
        code, doc = run_json(fleet, "status")
        names = [p for c in doc["clusters"][0]["connectors"] for p in c["problems"]]
        return (code == 2 and "task 0 FAILED" in names) or None

    wait_until(failed_task, timeout=120, message="status exit 2 naming the failed task")
    code, doc = run_json(fleet, "status")
    (failed,) = [c for c in doc["clusters"][0]["connectors"] if not c["healthy"]]
    assert failed["name"] == sink and "task 0 FAILED" in failed["problems"], failed
    assert any(p.startswith("sink-write-fails public.users: sink table") for p in failed["problems"]), failed
    # The row it failed on is not committed: it waits, and its age is read from its timestamp.
    assert failed["consumer_lag"] >= 1 and failed["lag_age_s"] is not None and failed["lag_age_s"] >= 0, failed
    code, out = fleet.cli("status", "--project", str(fleet.root / "hephaestus.yaml"))
    assert code == 2 and sink in out and "task 0 FAILED" in out, out

    with exporter(fleet) as port:
        labels = (("cluster", "platforms"), ("connector", sink), ("kind", "sink"))
        slot = (("database", fleet.dbs["bob"]), ("slot", fleet.slot()))
        # The cluster and the slots are checked by loops of their own: wait for both.
        wait_until(
            lambda: (
                (
                    _get(port, "hephaestus_connector_healthy", labels) is not None
                    and _get(port, "hephaestus_slot_active", slot) is not None
                )
                or None
            ),
            timeout=60,
            message="the exporter's first checks",
        )
        samples = scrape(port)
        assert samples[("hephaestus_connector_healthy", labels)] == 0
        assert samples[("hephaestus_connector_failed_tasks", labels)] == 1
        assert samples[("hephaestus_sink_dlq_records", labels)] == failed["dlq_depth"]
        assert samples[("hephaestus_connector_heal_restarts", labels)] == failed["restarts"]
        assert samples[("hephaestus_cluster_up", (("cluster", "platforms"),))] == 1
        assert samples[("hephaestus_slot_active", slot)] == 1


@contextmanager
def exporter(fleet: Fleet) -> Iterator[int]:
    """The exporter over the fleet's project, checking every 5 s; yields its port."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hephaestus",
            "exporter",
            "--project",
            str(fleet.root / "hephaestus.yaml"),
            "--listen",
            f"127.0.0.1:{port}",
            "--interval",
            "5",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_paused_sink_and_a_stopped_source_are_reported_paused_and_stopped_never_failed(
    fleet: Fleet, connect: ConnectClient
) -> None:
    """Issue 48: `connector_failed_tasks` counted a PAUSED task as failed, so the dashboard's
    "Failed tasks" showed a connector paused by hand."""
    sink = fleet.name("platforms", "to_" + fleet.dbs["auth"])
    source = fleet.name("platforms", "source_connector")
    connect.http.put(f"/connectors/{sink}/pause").raise_for_status()
    connect.http.put(f"/connectors/{source}/stop").raise_for_status()

    def settled() -> bool | None:
        paused, stopped = connect.status(sink) or {}, connect.status(source) or {}
        return (
            paused.get("connector", {}).get("state") == "PAUSED"
            and [t["state"] for t in paused.get("tasks", [])] == ["PAUSED"]
            and stopped.get("connector", {}).get("state") == "STOPPED"
            and stopped.get("tasks") == []  # Connect drops a stopped connector's tasks
        ) or None

    wait_until(settled, timeout=120, message="the sink PAUSED with its task, the source STOPPED without tasks")

    def of(name: str, kind: str, **more: str) -> tuple[tuple[str, str], ...]:
        return tuple(sorted({"cluster": "platforms", "connector": name, "kind": kind, **more}.items()))

    with exporter(fleet) as port:
        wait_until(
            lambda: _get(port, "hephaestus_connector_state", of(sink, "sink", state="PAUSED")) == 1 or None,
            timeout=60,
            message="the exporter's first check, with the sink PAUSED",
        )
        samples = scrape(port)
    assert samples[("hephaestus_connector_failed_tasks", of(sink, "sink"))] == 0
    assert samples[("hephaestus_connector_tasks", of(sink, "sink", state="PAUSED"))] == 1
    assert samples[("hephaestus_connector_tasks", of(sink, "sink", state="FAILED"))] == 0
    assert samples[("hephaestus_connector_failed_tasks", of(source, "source"))] == 0
    assert samples[("hephaestus_connector_state", of(source, "source", state="STOPPED"))] == 1
    # A stopped connector has no tasks: every state of its task series reads 0, none goes missing.
    for state in ("RUNNING", "PAUSED", "STOPPED", "FAILED"):
        assert samples[("hephaestus_connector_tasks", of(source, "source", state=state))] == 0, state


def _get(port: int, name: str, labels: tuple[tuple[str, str], ...]) -> float | None:
    try:
        return scrape(port).get((name, labels))
    except httpx.HTTPError:
        time.sleep(0.2)
        return None

"""`status`, the exporter's check and `slots` end to end, with Connect on the loopback double,
PostgreSQL and Kafka through the edges' seams: each cluster listed once, a failed task named
in every output, heal's counts, DLQ depth, consumer lag and the source's slot joined in."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hephaestus import kafka, pg
from hephaestus.cli import run
from hephaestus.project import load_project
from hephaestus.state import schema
from hephaestus.status import exporter
from tests.connect_double import ConnectDouble
from tests.unit.kafkafake import Cluster
from tests.unit.pgfake import GIB, SOURCE, Server, on

SINK = {
    "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
    "topics": "bob.public.users",
    "errors.deadletterqueue.topic.name": "dlq.users",
}


@pytest.fixture
def world(
    served: tuple[ConnectDouble, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, ConnectDouble, Server]]:
    schema.forget()
    double, url = served
    double.connectors.clear()
    double.add("bob_source", SOURCE, type="source")
    sink = double.add("users_sink", SINK)
    sink.task_states = ["FAILED"]
    broker = Cluster()
    broker.add("bob.public.users", 0, 10)
    broker.add("dlq.users", 0, 3)
    broker.groups["connect-users_sink"] = {("bob.public.users", 0): 4}
    broker.groups["hephaestus-dlq-replay.users_sink"] = {("dlq.users", 0): 2}  # a replay sent 2 of the 3
    broker.logs[("bob.public.users", 0)][4].ts = int(time.time() * 1000) - 90_000  # the first waiting: 90 s old
    rows = [
        ("bob_slot", "pgoutput", True, 2 * GIB, 10, "reserved", "bob", 7_000_000),
        ("old", "pgoutput", False, GIB, 1, None, "bob", 5_000),
    ]
    database = Server(handlers=[on(r"FROM pg_replication_slots", rows)])
    (tmp_path / "heal-state.json").write_text(json.dumps({"c": {"users_sink": {"count": 3, "notified": 3}}}))
    (tmp_path / "c" / "sink").mkdir(parents=True)  # git's connector folder: nothing in it
    project = tmp_path / "hephaestus.yaml"
    project.write_text(
        f"clusters: {{c: {{url: '{url}', connectors: c, kafka_bootstrap: 'b:9092'}}}}\n"
        "databases: {bob: {dsn: 'dbname=bob'}}\nheal: {max_restarts: 5, state: {file: heal-state.json}}\n"
    )
    monkeypatch.chdir(tmp_path)
    with kafka.seam(admin=broker.admin, consumer=broker.consumer), pg.seam(database.connect):
        yield project, double, database


def test_status_names_the_failed_task_with_its_restarts_dlq_lag_and_the_sources_slot(
    world: tuple[Path, ConnectDouble, Server], capsys: pytest.CaptureFixture[str]
) -> None:
    project, double, _ = world
    assert run(["status", "--project", str(project), "-o", "json"]) == 2
    (cluster,) = json.loads(capsys.readouterr().out)["clusters"]
    by_name = {c["name"]: c for c in cluster["connectors"]}
    sink, source = by_name["users_sink"], by_name["bob_source"]
    assert (sink["healthy"], sink["restarts"], sink["budget"]) == (False, 3, 5)
    assert (sink["dlq_depth"], sink["dlq_unresolved"], sink["consumer_lag"]) == (3, 1, 6)
    assert "1 unresolved record(s) in its dead-letter queue" in sink["problems"]
    assert 89 <= sink["lag_age_s"] < 120, sink["lag_age_s"]
    assert (source["slot"], source["slot_retained"], source["slot_verdict"]) == ("bob_slot", 2 * GIB, "over_limit")
    assert (source["slot_unconfirmed"], source["slot_confirmed_lsn"]) == (10, 7_000_000)
    assert cluster["errors"] == []
    assert [p for m, p in double.log if m == "GET" and p == "/connectors"] == ["/connectors"], "one listing"


def test_status_text_shows_the_unhealthy_and_an_unreadable_database_is_an_error(
    world: tuple[Path, ConnectDouble, Server], capsys: pytest.CaptureFixture[str]
) -> None:
    project, _, database = world
    database.refuse = "could not connect: Connection refused"
    code = run(["status", "--project", str(project)])
    out = capsys.readouterr().out
    assert code == 1 and "users_sink" in out and "0:FAILED" in out and "3/5" in out, out
    assert "error: database bob: could not connect: Connection refused" in out


def test_the_exporters_check_says_what_status_says(world: tuple[Path, ConnectDouble, Server]) -> None:
    project, _, _ = world
    from prometheus_client import generate_latest

    samples = _samples(generate_latest(exporter.check(load_project(project)).registry).decode())
    sink = (("cluster", "c"), ("connector", "users_sink"), ("kind", "sink"))
    assert samples[("hephaestus_connector_healthy", sink)] == 0.0
    assert samples[("hephaestus_sink_dlq_records", sink)] == 3.0
    assert samples[("hephaestus_sink_dlq_unresolved_records", sink)] == 1.0
    assert samples[("hephaestus_connector_heal_budget", sink)] == 5.0
    assert samples[("hephaestus_sink_consumer_lag_age_seconds", sink)] >= 89
    assert samples[("hephaestus_connector_heal_restarts", sink)] == 3.0
    assert samples[("hephaestus_slots_errors", ())] == 0.0
    source = (("cluster", "c"), ("connector", "bob_source"), ("kind", "source"))
    assert samples[("hephaestus_source_slot_confirmed_lsn_bytes", source)] == 7_000_000.0
    assert samples[("hephaestus_source_slot_unconfirmed_bytes", source)] == 10.0
    assert any(name == "hephaestus_slot_active" for name, _ in samples)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_slots_lists_every_slot_with_its_owner_and_exits_2_on_a_problem(
    world: tuple[Path, ConnectDouble, Server], capsys: pytest.CaptureFixture[str]
) -> None:
    project, _, _ = world
    assert run(["slots", "--project", str(project)]) == 2
    out = capsys.readouterr().out
    assert "bob_slot" in out and "c/bob_source" in out and "OVER_LIMIT" in out
    assert "old" in out and "orphan" in out and "2 of 2 slot(s) need attention" in out


def test_paused_and_stopped_tasks_have_their_own_series_and_only_failed_ones_count_as_failed() -> None:
    """Issue 48: `connector_failed_tasks` counted every task not RUNNING, so the dashboard's
    "Failed tasks" showed a paused connector as failed."""
    from prometheus_client import generate_latest

    from hephaestus.status.metrics import status_metrics
    from hephaestus.status.model import ClusterView, ConnectorView

    paused = ConnectorView("c", "paused_sink", "sink", "PAUSED", ((0, "PAUSED"), (1, "PAUSED")), desired="PAUSED")
    broken = ConnectorView("c", "broken_sink", "sink", "RUNNING", ((0, "RUNNING"), (1, "FAILED"), (2, "UNASSIGNED")))
    stopped = ConnectorView("c", "stopped_source", "source", "STOPPED", (), desired="STOPPED")
    view = ClusterView("c", "http://c", (paused, broken, stopped))
    samples = _samples(generate_latest(status_metrics([view], now=1.0).registry).decode())

    def labels(c: ConnectorView, **more: str) -> tuple[tuple[str, str], ...]:
        return tuple(sorted({"cluster": "c", "connector": c.name, "kind": c.kind, **more}.items()))

    assert samples[("hephaestus_connector_failed_tasks", labels(paused))] == 0
    assert samples[("hephaestus_connector_failed_tasks", labels(broken))] == 1
    assert samples[("hephaestus_connector_failed_tasks", labels(stopped))] == 0
    tasks = {
        (dict(k)["connector"], dict(k)["state"]): v
        for (n, k), v in samples.items()
        if n == "hephaestus_connector_tasks"
    }
    assert tasks[("paused_sink", "PAUSED")] == 2 and tasks[("paused_sink", "FAILED")] == 0
    assert (
        tasks[("broken_sink", "RUNNING")],
        tasks[("broken_sink", "FAILED")],
        tasks[("broken_sink", "UNASSIGNED")],
    ) == (
        1,
        1,
        1,
    )
    # Every state has its series, 0 included, so an alert's series does not come and go.
    assert {s for c, s in tasks if c == "stopped_source"} >= {"RUNNING", "PAUSED", "STOPPED", "FAILED"}
    assert sum(v for (c, _), v in tasks.items() if c == "stopped_source") == 0
    # A stopped connector has no tasks in Connect: its state series says STOPPED.
    assert samples[("hephaestus_connector_state", labels(stopped, state="STOPPED"))] == 1


def test_a_cluster_not_reached_is_unknown_never_0_of_0_healthy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 48: `status` printed "0 of 0 healthy" for a cluster it could not reach. Connect is a
    closed loopback port, asked once (no retry waits)."""
    from hephaestus.connect import ConnectClient
    from hephaestus.fleet import read
    from hephaestus.http import RetryPolicy
    from hephaestus.status import run as status_run

    def once(cluster: Any) -> ConnectClient:
        return ConnectClient(cluster.url, name=cluster.name, retry=RetryPolicy.immediate(1))

    monkeypatch.setattr(status_run, "listings", lambda clusters: read.listings(clusters, client_factory=once))
    (tmp_path / "c").mkdir()
    project = tmp_path / "hephaestus.yaml"
    project.write_text(f"clusters: {{down: {{url: 'http://127.0.0.1:{closed_port()}', connectors: c}}}}\n")
    monkeypatch.chdir(tmp_path)

    assert run(["status", "--project", str(project)]) == 1
    out = capsys.readouterr().out
    assert "healthy" not in out.replace("health unknown", ""), out
    assert "down (http://127.0.0.1:" in out and "not reached, health unknown" in out, out
    assert "error: cluster down:" in out and "running and reachable" in out, out

    assert run(["status", "--project", str(project), "-o", "json"]) == 1
    (cluster,) = json.loads(capsys.readouterr().out)["clusters"]
    assert cluster["reached"] is False and cluster["connectors"] == [] and cluster["errors"], cluster


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

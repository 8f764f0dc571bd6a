"""heal and a sink its source's schema breaks (issue 45; heal.schema), served by the strict
Connect double: never restarted, paused first when the policy says pause (through the gate),
left paused, its record kept; a sink with no breaking finding is healed as before."""

from __future__ import annotations

from pathlib import Path

import httpx

from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.drift.model import DriftReport, Finding
from hephaestus.heal.run import HealOptions, heal_cluster
from hephaestus.project import Cluster
from hephaestus.state.heal import HealFile
from hephaestus.state.records import HealRecord
from tests.connect_double import ConnectDouble

SINK = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": "t"}


def broken(*sinks: str, action: str = "pause", code: str = "sink-write-fails") -> DriftReport:
    return DriftReport((Finding(code, "p", "users.email", "NOT NULL and gone", sinks=sinks, action=action),))


def run(
    tmp_path: Path, double: ConnectDouble, schema: DriftReport, dry_run: bool = False
) -> tuple[list[tuple[str, str]], list[str]]:
    cluster = Cluster("c", "http://c.test", tmp_path)
    client = ConnectClient(cluster.url, transport=httpx.MockTransport(double), retry=RetryPolicy.immediate(1))
    with HealFile(tmp_path / "heal.json") as store:
        options = HealOptions(dry_run=dry_run, restart_wait_s=0.0, schema=schema)
        out = heal_cluster(client, cluster, store, options, None, now=lambda: 1000.0)
    return [(i.name, i.verdict) for i in out.items], [i.reason for i in out.items]


def test_a_broken_running_sink_is_paused_not_restarted(tmp_path: Path) -> None:
    double = ConnectDouble()
    double.add("s", SINK)
    double.add("ok", SINK).task_states = ["FAILED"]
    verdicts, reasons = run(tmp_path, double, broken("s"))
    assert sorted(verdicts) == [("ok", "restart"), ("s", "held")]
    assert sorted(double.writes()) == [("POST", "/connectors/ok/restart"), ("PUT", "/connectors/s/pause")]
    assert any(r.startswith("paused before it fails: sink-write-fails users.email") for r in reasons)


def test_a_broken_failed_sink_is_never_restarted_and_keeps_its_record(tmp_path: Path) -> None:
    double = ConnectDouble()
    double.add("s", SINK).task_states = ["FAILED"]
    with HealFile(tmp_path / "heal.json") as store:
        store.save("c", {"s": HealRecord(count=2, last_restart=1.0)})
    verdicts, reasons = run(tmp_path, double, broken("s", action="report"))
    assert verdicts == [("s", "held")] and reasons[0].startswith("not restarted: sink-write-fails")
    assert double.writes() == []
    with HealFile(tmp_path / "heal.json") as store:
        assert store.load("c")["s"].count == 2


def test_a_dry_run_pauses_nothing_and_a_paused_sink_is_not_paused_again(tmp_path: Path) -> None:
    double = ConnectDouble()
    double.add("s", SINK)
    assert run(tmp_path, double, broken("s"), dry_run=True)[0] == [("s", "held")] and double.writes() == []
    double.connectors["s"].state = "PAUSED"
    assert run(tmp_path, double, broken("s"))[0] == [("s", "held")] and double.writes() == []


def test_other_effects_and_other_clusters_sinks_change_nothing(tmp_path: Path) -> None:
    double = ConnectDouble()
    double.add("s", SINK)
    schema = DriftReport((*broken("elsewhere").findings, *broken("s", code="column-not-replicated").findings))
    assert run(tmp_path, double, schema)[0] == [("s", "healthy")] and double.writes() == []


def test_a_stopped_broken_sink_is_not_paused(tmp_path: Path) -> None:
    double = ConnectDouble()
    double.add("s", SINK)
    double.connectors["s"].state = "STOPPED"
    assert run(tmp_path, double, broken("s"))[0] == [("s", "held")] and double.writes() == []

"""Every job acts only on what its deployment selects (issue 14): heal restarts, snapshot
signals. Served by the strict Connect double."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.errors import HephaestusError
from hephaestus.heal.run import HealOptions, heal_cluster
from hephaestus.project import Cluster, Project
from hephaestus.snapshot import manual
from hephaestus.state.heal import HealFile
from tests.connect_double import ConnectDouble

SINK = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": "t"}


def test_heal_restarts_only_what_the_cluster_selects(tmp_path: Path) -> None:
    double = ConnectDouble()
    for name in ("mine_a", "theirs_b"):
        double.add(name, SINK).task_states = ["FAILED"]
    cluster = Cluster("c", "http://c.test", tmp_path, ("mine_*",))
    client = ConnectClient(cluster.url, transport=httpx.MockTransport(double), retry=RetryPolicy.immediate(1))
    with HealFile(tmp_path / "heal.json") as store:
        out = heal_cluster(client, cluster, store, HealOptions(restart_wait_s=0.0), None, now=lambda: 1000.0)
    assert [(i.name, i.verdict) for i in out.items] == [("mine_a", "restart")]
    assert double.writes() == [("POST", "/connectors/mine_a/restart")]
    assert double.connectors["theirs_b"].task_states == ["FAILED"]


def test_a_manual_snapshot_refuses_a_connector_outside_select(tmp_path: Path) -> None:
    cluster = Cluster("c", "http://127.0.0.1:9", tmp_path, ("mine_*",))
    project = Project("p.yaml", {"c": cluster}, {})
    with pytest.raises(HephaestusError, match="'theirs_src' is outside the select of cluster.s. c: another"):
        manual.locate(project, [cluster], "theirs_src")  # refused before any request (port 9: nothing there)

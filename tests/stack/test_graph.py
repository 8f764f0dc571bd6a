"""`hephaestus graph --live` against the real stack: bob's users → auth, reconciled, then drawn
with each connector's health read from Connect, Kafka and PostgreSQL, its last change from the
audit journal, the databases named as the project names them (the workers' secrets file
resolves the JDBC URL here), a second cluster that cannot be read shown as such, and no value
of the secrets file in the page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from hephaestus.secrets import properties
from tests.stack.fleet import Fleet, dump_yaml
from tests.stack.support import Stack

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Iterator[Fleet]:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    assert fleet.reconcile()[0] == 0
    yield fleet


def page_data(html: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="lineage-data">(.*?)</script>', html, re.DOTALL)
    assert found
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_graph_live_draws_the_reconciled_fleet_with_its_health(fleet: Fleet, stack: Stack) -> None:
    path = fleet.root / "hephaestus.yaml"
    project = yaml.safe_load(path.read_text())
    project["clusters"]["platforms"]["secrets_file"] = str(stack.secrets_file)
    # A cluster nothing listens for: its connectors are drawn, marked unreadable.
    project["clusters"]["gone"] = {"url": "http://127.0.0.1:9", "connectors": "connectors/gone"}
    path.write_text(dump_yaml(project))
    sink, source = fleet.name("platforms", "sink_connector"), fleet.name("platforms", "source_connector")
    gone = fleet.root / "connectors" / "gone" / "sink"
    gone.mkdir(parents=True)
    config = json.loads((fleet.root / "connectors" / "platforms" / "sink" / f"{sink}.json").read_text())["config"]
    (gone / "far_sink.json").write_text(json.dumps({"name": "far_sink", "config": config}))

    out = fleet.root / "graph.html"
    code, text = fleet.cli("graph", "--project", str(path), "--output", str(out), "--live")
    assert code == 0, text
    assert "warning: cluster gone could not be read" in text, text
    html = out.read_text()
    data = page_data(html)
    nodes = {n["id"]: n for n in data["nodes"]}

    s = nodes[f"connector:platforms/{sink}"]
    assert s["health"]["state"] == "RUNNING" and s["health"]["healthy"], s["health"]
    assert "consumer lag (records)" in dict(s["health"]["facts"])
    assert s["change"]["action"] == "create" and s["change"]["outcome"] == "ok"
    assert s["database"] == fleet.dbs["auth"], "the JDBC URL resolved and named as the project names it"
    src = nodes[f"connector:platforms/{source}"]
    assert dict(src["health"]["facts"])["replication slot"] == fleet.slot()
    assert f"table:{fleet.dbs['bob']}/public.users" in nodes
    assert nodes["connector:gone/far_sink"]["health"]["state"] == "UNREADABLE"
    assert list(data["unreadable"]) == ["gone"]

    secrets = properties(stack.secrets_file.read_text())
    for key in (f"{fleet.dbs['bob']}_password", f"{fleet.dbs['auth']}_password"):
        assert secrets[key] not in html, key

"""The freshness probe on the real stack (issue 46): bob.users -> auth.users with a 2 s probe.
Steady state reads fresh in the exporter's gauge; a sink paused by hand, and the table taken
out of the publication, turn it stale, `status` exits 2 naming the sink. Each probe is read back
from the sink database."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from hephaestus.project import load_project
from hephaestus.status.exporter import check
from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until

INTERVAL_S = 2
MAX_S = 15


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Fleet:
    found = bob_fleet
    definition = found.definition("bob")
    definition["probe"] = {"enabled": True, "interval_s": INTERVAL_S}
    found.write_definition("bob", definition)
    found.only_users_to_auth()
    found.edit_project(freshness={"max_s": MAX_S})
    code, report = found.reconcile()
    assert code == 0, report
    return found


def _sink_name(fleet: Fleet) -> str:
    (name,) = [n for n in fleet.connector_names("platforms", "sink") if "users" in n]
    return name


def _seconds(fleet: Fleet) -> float | None:
    metrics = check(load_project(fleet.root / "hephaestus.yaml")).registry
    labels = {"sink": _sink_name(fleet), "database": fleet.dbs["auth"], "source": fleet.name("platforms", "source")}
    return metrics.get_sample_value("hephaestus_pipeline_freshness_seconds", labels)


def _status(fleet: Fleet) -> tuple[int, dict[str, Any]]:
    code, out = fleet.cli("status", "--project", str(fleet.root / "hephaestus.yaml"), "-o", "json")
    return code, json.loads(out[out.index("{") : out.rindex("}") + 1])


def _mine(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(v for c in report["clusters"] for v in c["connectors"] if v["name"] == name)
    return found


def _fresh(fleet: Fleet) -> bool:
    value = _seconds(fleet)
    return value is not None and value <= INTERVAL_S + 10


def test_fresh_in_steady_state_then_stale_when_the_sink_is_paused(
    fleet: Fleet, connect: ConnectClient, tmp_path: Path
) -> None:
    wait_until(lambda: _fresh(fleet), timeout=180, message="the probe arrives at auth")
    rows = read_rows(fleet.stack.dsn(fleet.dbs["auth"]), "SELECT probe_sink, probe_seq FROM hephaestus_probe")
    assert [r[0] for r in rows] == [_sink_name(fleet)] and rows[0][1] >= 1
    code, report = _status(fleet)
    assert code == 0, report
    assert _mine(report, _sink_name(fleet))["freshness"].startswith("fresh")

    connect.http.put(f"/connectors/{_sink_name(fleet)}/pause").raise_for_status()
    wait_until(lambda: (_seconds(fleet) or 0) > MAX_S, timeout=MAX_S + 6 * INTERVAL_S + 60, message="stale")
    code, report = _status(fleet)
    assert code == 2, report
    mine = _mine(report, _sink_name(fleet))
    assert mine["freshness"].startswith("stale") and any("freshness stale" in p for p in mine["problems"])
    _fires_on_scraped_series(fleet, tmp_path)


# The labels Prometheus adds to every series it scrapes from the chart's exporter.
TARGET = {"job": "deploy-hephaestus-exporter", "namespace": "data", "instance": "exporter:9401"}


def _fires_on_scraped_series(fleet: Fleet, tmp_path: Path) -> None:
    """The chart's PipelineStale expression, evaluated by promtool over the series this exporter
    serves now (its /metrics text, parsed): it selects this sink's series (its `for` is the
    golden promtool test's, tests/golden/monitoring)."""
    import yaml
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from tests.unit.test_helm import render
    from tests.unit.test_monitoring import ALL_ON, _tool, promtool_run, rules_of

    text = generate_latest(check(load_project(fleet.root / "hephaestus.yaml")).registry).decode()
    wanted = ("hephaestus_pipeline_freshness_seconds", "hephaestus_pipeline_freshness_max_seconds")
    found = [
        (s.name, {**s.labels, **TARGET}, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name in wanted and s.labels.get("sink") == _sink_name(fleet)
    ]
    assert sorted(n for n, _, _ in found) == sorted(wanted), text
    expr = rules_of(render(_tool("helm"), *ALL_ON))["HephaestusPipelineStale"]["expr"]
    (labels, seconds) = next((lb, v) for n, lb, v in found if n == wanted[0])
    test = {
        "rule_files": [],
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": _series(n, lb), "values": f"{_value(v)}x3"} for n, lb, v in found],
                "promql_expr_test": [
                    {
                        "expr": expr,
                        "eval_time": "2m",
                        "exp_samples": [{"labels": _series(wanted[0], labels), "value": seconds}],
                    }
                ],
            }
        ],
    }
    (tmp_path / "scraped.test.yaml").write_text(yaml.safe_dump(test))
    result = promtool_run(_tool("promtool"), "test", "rules", "scraped.test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def _series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _value(value: float) -> str:
    return "+Inf" if math.isinf(value) else repr(value)  # every digit: the expected sample is the same float


def test_a_table_out_of_the_publication_goes_stale(fleet: Fleet) -> None:
    wait_until(lambda: _fresh(fleet), timeout=180, message="the probe arrives at auth")
    publication = fleet.definition("bob").get("source", {}).get("publication", "debezium_publication")
    execute(fleet.stack.dsn(fleet.dbs["bob"]), f"ALTER PUBLICATION {publication} DROP TABLE public.users")
    wait_until(lambda: math.isinf(_seconds(fleet) or 0), timeout=120, message="stale: users unpublished")
    code, report = _status(fleet)
    assert code == 2
    assert "not in" in _mine(report, _sink_name(fleet))["freshness"]


DROP_ALL = {"transforms": "dropall", "transforms.dropall.type": "org.apache.kafka.connect.transforms.Filter"}
ROLLOUT = {"canary": 1, "waves": [100], "analysis_s": 30, "interval_s": 2, "max_freshness_s": 15, "max_lag_age_s": 60}


def test_a_canary_that_drops_every_record_is_rolled_back_by_freshness_alone(
    bob_fleet: Fleet, stack: Stack, connect: ConnectClient
) -> None:
    """A filter that matches all: no lag, no DLQ, every task RUNNING; only the probe tells."""
    fleet = bob_fleet
    definition = fleet.definition("bob")
    definition["probe"] = {"enabled": True, "interval_s": INTERVAL_S}
    definition["pipelines"] = definition["pipelines"][:2]  # users -> auth, eureka; students -> eureka, fatima
    fleet.write_definition("bob", definition)
    fleet.generate()
    fleet.edit_project(policy={"ready_timeout_s": 120, "stability_window_s": 2}, freshness={"max_s": MAX_S})
    code, report = fleet.reconcile()
    assert code == 0, report
    sinks = fleet.connector_names("platforms", "sink")
    before = {n: connect.config(n) for n in sinks}

    definition["sink_defaults"] = {**definition.get("sink_defaults", {}), "options": DROP_ALL}
    fleet.write_definition("bob", definition)
    fleet.generate()
    canary = sorted(sinks)[0]
    fleet.edit_project(rollout={**ROLLOUT, "canary": [canary]})
    code, report = fleet.reconcile("--allow-destructive=records-filtered")
    (cluster,) = report["clusters"]
    assert code == 1, json.dumps(cluster, indent=1)
    results = {r["name"]: r for r in cluster["results"]}
    assert "no probe written after its change arrived" in results[canary]["detail"], results[canary]
    assert [(r["action"], r["name"], r["ok"]) for r in cluster["rollout"]["rollback"]][0] == ("update", canary, True)
    assert {n: connect.config(n) for n in sinks} == before  # the canary put back, the rest never written

    execute(fleet.stack.dsn(fleet.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('after', 'A')")
    for db in ("auth", "eureka"):  # the canary's table and another sink's: rows still arrive
        dsn, query = fleet.stack.dsn(fleet.dbs[db]), "SELECT count(*) FROM users WHERE user_id = 'after'"
        wait_until(lambda: read_rows(dsn, query)[0][0] == 1 or None, timeout=120, message=f"after in {db}")  # noqa: B023

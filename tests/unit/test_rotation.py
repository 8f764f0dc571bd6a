"""Secrets the live config cannot show (issue 33): a value rotated behind its `${file:…}`
placeholder is restarted for, and a PASSWORD value Connect answers masked is unknown, not
drift. Over the strict Connect double; the fingerprints in state.prints hold no value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hephaestus.fleet.model import Desired, Live
from hephaestus.reconciler import rotation
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
OLD, NEW = "canary-rot-old-31c9", "canary-rot-new-77e2"


def world(project: Project, served: tuple[ConnectDouble, str], secret: str = OLD) -> tuple[ConnectDouble, Path]:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    double.plugin_keys = {}
    secrets = project.root / "secrets.properties"
    secrets.write_text(f"sink_pw={secret}\n")
    folder = project.root / "connectors/c/sink"
    folder.mkdir(parents=True)
    config = {"connector.class": SINK, "topics": "t", "connection.password": f"${{file:{secrets}:sink_pw}}"}
    (folder / "s0.json").write_text(json.dumps({"name": "s0", "config": config}))
    (folder / "s1.json").write_text(json.dumps({"name": "s1", "config": {"connector.class": SINK, "topics": "u"}}))
    (project.root / "hephaestus.yaml").write_text(
        f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\n    secrets_file: {secrets}\n"
        "policy: {stability_window_s: 0}\naudit_log: audit.jsonl\n"
    )
    return double, secrets


def cli(project: Project, *args: str) -> Any:
    return project.cli("reconcile", "--project", str(project.root / "hephaestus.yaml"), *args)


def plan_of(project: Project) -> dict[str, dict[str, Any]]:
    out = cli(project, "--dry-run", "-o", "json")
    return {s["name"]: s for s in json.loads(out.out)["clusters"][0]["steps"]}


def test_a_rotated_secret_restarts_its_connector_once(project: Project, served: tuple[ConnectDouble, str]) -> None:
    double, secrets = world(project, served)
    assert cli(project, "--auto-approve").code == 0
    assert cli(project, "--dry-run", "--exit-code").code == 0  # recorded: nothing moved

    secrets.write_text(f"sink_pw={NEW}\n")  # the workers' file rotated; git unchanged
    double.log.clear()
    steps = plan_of(project)
    assert steps["s0"]["action"] == "restart" and steps["s0"]["reason"] == "secret rotated (connection.password)"
    assert "s1" not in steps or steps["s1"]["action"] == "unchanged"
    text = cli(project, "--dry-run")
    assert "^ restart s0  (secret rotated (connection.password))" in text.out and "1 to restart" in text.out
    assert NEW not in text.out + text.err and double.writes() == []

    assert cli(project, "--auto-approve").code == 0
    assert double.writes() == [("POST", "/connectors/s0/restart")]
    assert cli(project, "--dry-run", "--exit-code").code == 0  # a second run plans nothing

    recorded = (project.root / ".hephaestus/prints.json").read_text()
    assert OLD not in recorded and NEW not in recorded and "sink_pw" not in recorded
    audit = [json.loads(line) for line in (project.root / "audit.jsonl").read_text().splitlines()]
    restarts = [(e["outcome"], e["reason"]) for e in audit if e.get("action") == "restart"]
    why = "secret rotated (connection.password)"
    assert restarts == [("intent", why), ("ok", why)]
    assert OLD not in json.dumps(audit) and NEW not in json.dumps(audit)


def test_a_failed_restart_stays_pending(project: Project, served: tuple[ConnectDouble, str]) -> None:
    double, secrets = world(project, served)
    assert cli(project, "--auto-approve").code == 0
    secrets.write_text(f"sink_pw={NEW}\n")
    double.on_start["s0"] = ["FAILED"]  # the restart does not come back RUNNING
    assert cli(project, "--auto-approve").code == 1
    double.on_start.clear()
    assert plan_of(project)["s0"]["action"] == "restart"  # not recorded: asked again


def test_a_dry_run_never_records(project: Project, served: tuple[ConnectDouble, str]) -> None:
    world(project, served)
    assert cli(project, "--dry-run").code == 0
    assert not (project.root / ".hephaestus/prints.json").exists()


def test_a_masked_live_password_is_unknown_not_drift_and_a_real_change_is_applied(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double, secrets = world(project, served)
    double.plugin_keys = {"connection.password": "PASSWORD", "topics": "LIST"}
    assert cli(project, "--auto-approve").code == 0
    double.connectors["s0"].config["connection.password"] = "********"  # as some platforms answer
    double.log.clear()
    assert cli(project, "--dry-run", "--exit-code").code == 0  # not drift: nothing to write

    path = project.root / "connectors/c/sink/s0.json"
    doc = json.loads(path.read_text())
    doc["config"]["connection.password"] = f"${{file:{secrets}:other_pw}}"
    path.write_text(json.dumps(doc))
    steps = plan_of(project)
    assert steps["s0"]["action"] == "update" and [c["key"] for c in steps["s0"]["changes"]] == ["connection.password"]
    assert cli(project, "--auto-approve").code == 0
    assert double.connectors["s0"].config["connection.password"] == f"${{file:{secrets}:other_pw}}"


def test_a_mask_with_nothing_recorded_is_taken_as_gits_value_and_said(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double, _ = world(project, served)
    double.plugin_keys = {"connection.password": "PASSWORD"}
    assert cli(project, "--auto-approve").code == 0
    (project.root / ".hephaestus/prints.json").unlink()
    double.connectors["s0"].config["connection.password"] = "[hidden]"
    out = cli(project, "--dry-run", "--exit-code")
    assert out.code == 0 and "s0: Connect answers connection.password masked and no apply recorded it" in out.out


def test_a_mask_of_a_key_that_is_no_secret_is_a_value_like_any() -> None:
    live = Live("s", {"topics": "****", "connection.password": "****"})
    desired = Desired("s", {"topics": "t", "connection.password": "x"})
    assert rotation.masked_keys(live.config) == ("connection.password", "topics")
    kept = rotation.unmasked(live, desired, ("connection.password",), {}, {})
    assert kept.config == {"topics": "****", "connection.password": "x"}


@pytest.mark.parametrize("value", ["***", "********", "[hidden]", "<redacted>", "HIDDEN", "[masked]"])
def test_what_reads_as_a_mask(value: str) -> None:
    assert rotation.is_mask(value)


@pytest.mark.parametrize("value", ["**", "pw***", "${file:/s:pw}", "hidden-pw", ""])
def test_what_does_not(value: str) -> None:
    assert not rotation.is_mask(value)

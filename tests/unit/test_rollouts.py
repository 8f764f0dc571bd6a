"""Rollouts offline: risk classes, waves and batches, saved plans and their stale check, the
approval rules, --target; over the strict Connect double served on loopback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hephaestus.classes import POSTGRES_SOURCE as POSTGRES
from hephaestus.reconciler.plan import Desired, Live, Policy, Scope, Step, plan
from hephaestus.reconciler.waves import batches, topic_prefix, waves
from hephaestus.safety.gate import allow_of
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project, gated

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
SRC = {
    "connector.class": POSTGRES,
    "slot.name": "s1",
    "topic.prefix": "bob",
    "snapshot.mode": "initial",
    "transforms": "route",
    "transforms.route.replacement": "local.manabie.$1.$2.$3",
}
SNK = {
    "connector.class": SINK,
    "topics": "local.manabie.bob.public.users,local.manabie.bob.public.x",
    "primary.key.fields": "id",
}


@pytest.mark.parametrize(
    "before, change, risk, codes",
    [
        (SRC, {"slot.name": "s2"}, "destructive", ["slot-changed"]),
        (SRC, {"topic.prefix": "b2"}, "destructive", ["offsets-lost", "resnapshot", "topics-renamed"]),
        (SRC, {"snapshot.mode": "always"}, "destructive", ["resnapshot"]),
        (SRC, {"snapshot.mode": "no_data"}, "restart", []),
        (SRC, {"heartbeat.interval.ms": "5"}, "restart", []),
        (SNK, {"topics": "local.manabie.bob.public.users"}, "destructive", ["topics-stopped"]),
        (SNK, {"topics": SNK["topics"] + ",local.manabie.bob.public.y"}, "restart", []),
        (SNK, {"primary.key.fields": "id,org"}, "destructive", ["keys-changed"]),
        (SNK, {"collection.name.format": "other"}, "destructive", ["target-changed"]),
        (SNK, {"delete.enabled": "true"}, "destructive", ["deletes-changed"]),
        (SNK, {"batch.size": "10"}, "restart", []),
        ({"connector.class": "io.Other", "slot.name": "a"}, {"slot.name": "b"}, "restart", []),
    ],
)
def test_the_risk_class_follows_the_effects(
    before: dict[str, str], change: dict[str, str], risk: str, codes: list[str]
) -> None:
    after = {**before, **change}
    p = plan("c", {"x": Desired("x", after)}, {"x": Live("x", before, "sink")}, Policy(), Scope(frozenset({"x"})))
    (found,) = p.writes
    assert found.risk == risk and sorted({e.code for e in found.effects}) == codes
    assert all(e.why for e in found.effects)


def test_a_destructive_step_is_refused_unless_allowed_by_flag_code_or_file() -> None:
    live = {"src": Live("src", SRC, "source", "RUNNING")}
    moved = {"src": Desired("src", {**SRC, "slot.name": "s2"})}
    owned = Scope(frozenset({"src"}))
    refused = gated("c", moved, live, Policy(), owned)
    (found,) = refused.writes
    assert found.risk == "destructive" and refused.refused.startswith("destructive update of src (slot-changed: ")
    assert "--allow-destructive=slot-changed" in refused.refused
    assert gated("c", moved, live, Policy(allow=allow_of(True)), owned).refused == ""
    assert gated("c", moved, live, Policy(allow=allow_of("slot-changed")), owned).refused == ""
    assert gated("c", moved, live, Policy(allow=allow_of("resnapshot")), owned).refused != ""
    allowed = {"src": Desired("src", {**SRC, "slot.name": "s2"}, allow=allow_of(True))}
    assert gated("c", allowed, live, Policy(), owned).refused == ""
    by_code = {"src": Desired("src", {**SRC, "slot.name": "s2"}, allow=allow_of(["slot-changed"]))}
    assert gated("c", by_code, live, Policy(), owned).refused == ""


def step(name: str, action: str, config: dict[str, str]) -> Step:
    return Step(action, name, config=config, connector_class=config.get("connector.class", ""))  # type: ignore[arg-type]


def test_waves_put_deletes_first_then_sources_then_the_sinks_reading_them() -> None:
    other = {"connector.class": SINK, "topics": "elsewhere.t"}
    regex = {"connector.class": SINK, "topics.regex": "local.*"}
    steps = [
        step("a_sink", "create", SNK),
        step("b_other", "update", other),
        step("c_src", "create", SRC),
        step("d_gone", "delete", {"connector.class": SINK}),
        step("e_regex", "create", regex),
    ]
    assert [[s.name for s in w] for w in waves(steps)] == [["d_gone"], ["b_other", "c_src"], ["a_sink", "e_regex"]]
    assert [[s.name for s in w] for w in waves(steps[:2])] == [["a_sink", "b_other"]]  # no planned source
    assert topic_prefix(SRC) == "local.manabie.bob." and topic_prefix({"topic.prefix": "p"}) == "p."
    assert [[s.name for s in b] for b in batches(steps, 2)] == [["a_sink", "b_other"], ["c_src", "d_gone"], ["e_regex"]]
    assert batches(steps, 0) == [steps]


def world(project: Project, served: tuple[ConnectDouble, str], n: int = 4) -> ConnectDouble:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    double.on_start.clear()
    folder = project.root / "connectors/c/sink"
    folder.mkdir(parents=True)
    for i in range(n):
        name = f"s{i}"
        (folder / f"{name}.json").write_text(
            json.dumps({"name": name, "config": {"connector.class": SINK, "topics": f"t{i}"}})
        )
    (project.root / "hephaestus.yaml").write_text(
        f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\npolicy: {{stability_window_s: 0}}\n"
    )
    return double


def cli(project: Project, *args: str) -> Any:
    return project.cli("reconcile", "--project", str(project.root / "hephaestus.yaml"), *args)


def test_without_a_terminal_an_apply_needs_auto_approve(project: Project, served: tuple[ConnectDouble, str]) -> None:
    double = world(project, served)
    refused = cli(project)
    assert refused.code == 1 and "--auto-approve" in refused.err and double.writes() == []
    assert cli(project, "--dry-run").code == 0 and double.writes() == []
    assert cli(project, "--auto-approve").code == 0 and len(double.writes()) == 4


def test_on_a_terminal_only_yes_applies(
    project: Project, served: tuple[ConnectDouble, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    double = world(project, served)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("click.prompt", lambda *a, **k: "y")
    no = cli(project)
    assert no.code == 1 and "apply cancelled" in no.err and double.writes() == []
    assert "+ create s0" in no.out  # the plan was shown before the question
    monkeypatch.setattr("click.prompt", lambda *a, **k: "yes")
    assert cli(project).code == 0 and len(double.writes()) == 4


def test_what_was_approved_is_what_applies(
    project: Project, served: tuple[ConnectDouble, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    double = world(project, served, 1)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)

    def meanwhile(*a: Any, **k: Any) -> str:  # someone creates s0 by hand while the user reads the plan
        double.add("s0", {"connector.class": SINK, "topics": "other"})
        return "yes"

    monkeypatch.setattr("click.prompt", meanwhile)
    out = cli(project)
    assert out.code == 2 and "stale plan: the live config or state of s0 changed" in out.out + out.err
    assert double.writes() == []


def test_a_saved_plan_applies_as_saved_or_is_refused_naming_what_moved(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double = world(project, served, 2)
    saved = project.root / "plan.json"
    dry = cli(project, "--dry-run", "-o", "markdown", "--out", str(saved))
    doc = json.loads(saved.read_text())
    assert dry.code == 0 and f"Plan `{doc['id']}` sealed" in dry.out
    assert [w["name"] for w in doc["body"]["clusters"]["c"]["steps"]] == ["s0", "s1"] and double.writes() == []

    (project.root / "connectors/c/sink/s1.json").write_text(
        json.dumps({"name": "s1", "config": {"connector.class": SINK, "topics": "t9"}})
    )
    moved = cli(project, "--plan", str(saved))
    assert moved.code == 2 and "s1.json" in moved.err and "stale" in moved.err and double.writes() == []

    cli(project, "--dry-run", "--out", str(saved))
    double.add("s0", {"connector.class": SINK, "topics": "t0", "x": "live edit"})
    live = cli(project, "--plan", str(saved))
    assert live.code == 2 and "the live config or state of s0 changed since the plan" in live.out
    assert double.writes() == []

    double.connectors.clear()
    cli(project, "--dry-run", "--out", str(saved))
    applied = cli(project, "--plan", str(saved))
    assert applied.code == 0 and sorted(double.connectors) == ["s0", "s1"] and len(double.writes()) == 2


def test_target_plans_and_applies_only_its_connectors(project: Project, served: tuple[ConnectDouble, str]) -> None:
    double = world(project, served)
    assert cli(project, "--auto-approve", "--target", "s1", "--target", "s3").code == 0
    assert sorted(double.connectors) == ["s1", "s3"]


def test_a_paced_rollout_stops_after_a_failed_batch_and_reports_the_rest(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double = world(project, served, 5)
    double.on_start["s1"] = ["FAILED"] * 50  # its task fails as soon as it starts
    out = cli(project, "--auto-approve", "--batch-size", "2", "-o", "json")
    results = {r["name"]: r for c in json.loads(out.out)["clusters"] for r in c["results"]}
    assert out.code == 1
    assert results["s0"]["ok"] and not results["s1"]["ok"]
    assert all("rollout stopped after 1 batch(es)" in results[n]["detail"] for n in ("s2", "s3", "s4"))
    assert sorted(double.connectors) == ["s0", "s1"]


def test_a_desired_state_is_planned_and_converged_with_pause_resume_stop(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double = world(project, served, 3)
    for i, state in enumerate(("paused", "stopped", "running")):
        path = project.root / f"connectors/c/sink/s{i}.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "state": state}))
    assert cli(project, "--auto-approve").code == 0
    assert [double.connectors[f"s{i}"].state for i in range(3)] == ["PAUSED", "STOPPED", "RUNNING"]
    again = cli(project, "--dry-run", "--exit-code")
    assert again.code == 0, again.out  # converged: nothing to do

    double.connectors["s0"].state = "RUNNING"  # resumed by hand
    double.log.clear()
    dry = cli(project, "--dry-run", "-o", "json")
    (step,) = [s for s in json.loads(dry.out)["clusters"][0]["steps"] if s["action"] == "state"]
    assert step["name"] == "s0" and step["reason"] == "RUNNING → PAUSED"
    assert cli(project, "--auto-approve").code == 0
    assert double.connectors["s0"].state == "PAUSED" and double.writes() == [("PUT", "/connectors/s0/pause")]


def test_a_file_without_state_means_running_and_unmanaged_opts_out(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double = world(project, served, 2)
    assert cli(project, "--auto-approve").code == 0
    for name in ("s0", "s1"):
        double.connectors[name].state, double.connectors[name].task_states = "PAUSED", ["PAUSED"]
    opted = project.root / "connectors/c/sink/s1.json"
    opted.write_text(json.dumps({**json.loads(opted.read_text()), "state": "unmanaged"}))
    double.log.clear()
    dry = cli(project, "--dry-run", "-o", "json")
    steps = {s["name"]: s for s in json.loads(dry.out)["clusters"][0]["steps"]}
    assert steps["s0"]["action"] == "state" and steps["s0"]["reason"] == "PAUSED → RUNNING"
    assert steps.get("s1", {}).get("action", "unchanged") == "unchanged" and double.writes() == []
    assert "* resume s0  (PAUSED → RUNNING)" in cli(project, "--dry-run").out  # the text plan says so
    assert cli(project, "--auto-approve").code == 0
    assert double.writes() == [("PUT", "/connectors/s0/resume")]
    assert double.connectors["s0"].state == "RUNNING" and double.connectors["s1"].state == "PAUSED"


def test_an_unmanaged_connector_is_created_in_the_projects_initial_state(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double = world(project, served, 2)
    opted = project.root / "connectors/c/sink/s1.json"
    opted.write_text(json.dumps({**json.loads(opted.read_text()), "state": "unmanaged"}))
    file = project.root / "hephaestus.yaml"
    file.write_text(
        file.read_text().replace("{stability_window_s: 0}", "{stability_window_s: 0, initial_state: PAUSED}")
    )
    assert cli(project, "--auto-approve").code == 0
    assert double.connectors["s0"].state == "RUNNING" and double.connectors["s1"].state == "PAUSED"
    assert cli(project, "--dry-run", "--exit-code").code == 0  # and left so


@pytest.mark.parametrize("state", ["Paused!", "PAUSED", "", None])
def test_a_bad_state_is_an_error_naming_the_file_and_field(
    project: Project, served: tuple[ConnectDouble, str], state: object
) -> None:
    double = world(project, served, 1)
    path = project.root / "connectors/c/sink/s0.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "state": state}))
    out = cli(project, "--dry-run")
    assert out.code == 1 and "s0.json" in out.err and "state" in out.err and double.writes() == []
    assert "running, paused, stopped or unmanaged" in out.err


def test_offsets_reset_stops_resets_and_resumes_a_sink_and_refuses_a_source(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double = world(project, served, 0)
    upsert = {"insert.mode": "upsert", "primary.key.mode": "record_key"}
    sink = double.add("snk", {"connector.class": SINK, "topics": "t", **upsert})
    sink.offsets = [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 7}}]
    double.add("src", {"connector.class": POSTGRES}, type="source")
    project_file = str(project.root / "hephaestus.yaml")
    got = project.cli("offsets", "get", "--project", project_file, "--connector", "snk")
    assert got.code == 0 and json.loads(got.out)["offsets"][0]["offset"] == {"kafka_offset": 7}

    assert (
        project.cli("offsets", "reset", "--project", project_file, "--connector", "snk").code == 1
    )  # no tty, no --auto-approve
    double.log.clear()
    done = project.cli("offsets", "reset", "--project", project_file, "--connector", "snk", "--yes")
    assert done.code == 0, done.err
    assert double.writes() == [
        ("PUT", "/connectors/snk/stop"),
        ("DELETE", "/connectors/snk/offsets"),
        ("PUT", "/connectors/snk/resume"),
    ]
    assert sink.offsets == [] and sink.state == "RUNNING"

    double.log.clear()
    refused = project.cli("offsets", "reset", "--project", project_file, "--connector", "src", "--yes")
    assert refused.code == 2 and double.writes() == []
    assert "destructive offsets reset of src (resnapshot: snapshot.mode=initial snapshots" in refused.err

    wanted = project.root / "offsets.json"
    wanted.write_text(
        json.dumps(
            {"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 3}}]}
        )
    )
    assert (
        project.cli(
            "offsets", "set", "--project", project_file, "--connector", "snk", "--file", str(wanted), "--yes"
        ).code
        == 0
    )
    assert sink.offsets[0]["offset"] == {"kafka_offset": 3} and sink.state == "RUNNING"

"""Saved plans, pure parts: what the file keeps, the stale checks and their messages, and what
the steps' fingerprint depends on (reconciler/saved.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from hephaestus.errors import HephaestusError, InputError
from hephaestus.project import Project, load_project
from hephaestus.reconciler.outcome import ClusterOutcome
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.reconciler.publications import Change
from hephaestus.reconciler.saved import Expected, StalePlan, load, save, stale, steps_hash

SINK = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": "t"}
PLAN = Plan(
    "c",
    (Step("create", "a", SINK), Step("update", "b", SINK), Step("unchanged", "z", SINK)),
    publications=(Change("bob", "pub", ("public.x",), ("public.y",)),),
)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    for cluster in ("c", "d"):
        folder = tmp_path / "connectors" / cluster / "sink"
        folder.mkdir(parents=True)
        for i in range(7):
            (folder / f"s{i}.json").write_text(json.dumps({"name": f"s{i}", "config": SINK}))
    (tmp_path / "hephaestus.yaml").write_text(
        "clusters:\n  c: {url: 'http://c:8083', connectors: connectors/c}\n"
        "  d: {url: 'http://d:8083', connectors: connectors/d}\n"
    )
    return load_project(tmp_path / "hephaestus.yaml")


def saved(project: Project, outcomes: list[ClusterOutcome] | None = None) -> tuple[Path, str]:
    path = Path(project.file).parent / "plan.json"
    live = {"a": {"x": "1"}}
    outcomes = outcomes or [ClusterOutcome("c", "http://c:8083", PLAN, live=live)]
    return path, save(path, project, outcomes, {"force": True}, [project.clusters["c"]])


def test_a_saved_plan_keeps_the_fingerprints_and_reads_back(project: Project) -> None:
    path, plan_id = saved(project)
    doc = json.loads(path.read_text())
    assert doc["hephaestus_plan"] == 1 and doc["id"] == plan_id and len(plan_id) == 12
    assert doc["clusters"]["c"]["writes"] == [
        {"action": "create", "name": "a", "risk": ""},
        {"action": "update", "name": "b", "risk": ""},
    ]
    assert len(doc["git"]) == 7 and doc["options"] == {"force": True}
    loaded = load(path, project)
    assert (loaded.id, loaded.clusters, loaded.options) == (plan_id, ("c",), {"force": True})
    assert loaded.expected == {
        "c": Expected(dict(ClusterOutcome("c", "", None, live={"a": {"x": "1"}}).live_hashes), steps_hash(PLAN))
    }


def test_no_plan_is_saved_when_a_cluster_could_not_be_planned(project: Project) -> None:
    with pytest.raises(HephaestusError, match="no plan saved"):
        saved(project, [ClusterOutcome("c", "u", None, error="down")])
    assert not (Path(project.file).parent / "plan.json").exists()


@pytest.mark.parametrize("content", ['{"hephaestus_plan": 2}', "[1]", '{"id": "x"}'])
def test_a_file_that_is_no_plan_is_an_input_error_naming_it(project: Project, tmp_path: Path, content: str) -> None:
    path = tmp_path / "other.json"
    path.write_text(content)
    with pytest.raises(InputError, match=r"not a hephaestus plan file \(format 1\)") as err:
        load(path, project)
    assert err.value.file == str(path)


def test_a_plan_whose_files_moved_is_stale_naming_the_project_first_then_five(project: Project) -> None:
    path, plan_id = saved(project)
    root = Path(project.file).parent
    for i in range(7):
        (root / f"connectors/c/sink/s{i}.json").write_text("{}")
    with pytest.raises(StalePlan, match=rf"plan {plan_id} is stale: .*s0.json, .*s4.json and 2 more changed") as err:
        load(path, project)
    assert err.value.exit_code == 2 and "s5.json" not in str(err.value)
    (root / "hephaestus.yaml").write_text((root / "hephaestus.yaml").read_text() + "\n")
    with pytest.raises(StalePlan, match=rf"stale: {root / 'hephaestus.yaml'}, .*s0.json, .* and 3 more"):
        load(path, project)


def test_five_moved_files_are_all_named(project: Project) -> None:
    path, _ = saved(project)
    for i in range(5):
        (Path(project.file).parent / f"connectors/c/sink/s{i}.json").write_text("{}")
    with pytest.raises(StalePlan) as err:
        load(path, project)
    assert "s4.json changed since" in str(err.value) and "more" not in str(err.value)


def test_a_plan_for_a_cluster_gone_from_the_project_is_stale(project: Project) -> None:
    path, plan_id = saved(project)
    doc = json.loads(path.read_text())
    doc["clusters"]["gone"] = doc["clusters"]["c"]
    path.write_text(json.dumps(doc))
    with pytest.raises(StalePlan, match=f"plan {plan_id}: its clusters are not all in"):
        load(path, project)


def test_stale_names_moved_live_configs_then_changed_steps() -> None:
    live = {f"s{i}": "h" for i in range(8)}
    expected = Expected(live, steps_hash(PLAN))
    assert stale(expected, live, PLAN) == ""
    one = stale(expected, {**live, "s3": "other"}, PLAN)
    assert one == "stale plan: the live config of s3 changed since the plan; make a new plan"
    many = stale(expected, {f"s{i}": "x" for i in range(8)}, PLAN)
    assert "of s0, s1, s2, s3, s4 and 3 more changed since the plan" in many
    other = replace(PLAN, steps=(Step("create", "a", SINK),))
    assert stale(expected, live, other).startswith("stale plan: the steps differ")


@pytest.mark.parametrize(
    "change",
    [
        lambda p: replace(p, steps=(replace(p.steps[0], action="update"), *p.steps[1:])),
        lambda p: replace(p, steps=(replace(p.steps[0], name="a2"), *p.steps[1:])),
        lambda p: replace(p, steps=(replace(p.steps[0], renamed_from="old"), *p.steps[1:])),
        lambda p: replace(p, steps=(replace(p.steps[0], config={**SINK, "topics": "u"}), *p.steps[1:])),
        lambda p: replace(p, steps=p.steps[1:]),
        lambda p: replace(p, publications=(replace(p.publications[0], add=()),)),
        lambda p: replace(p, publications=(replace(p.publications[0], drop=()),)),
        lambda p: replace(p, publications=(replace(p.publications[0], publication="p2"),)),
        lambda p: replace(p, publications=(replace(p.publications[0], database="d2"),)),
    ],
)
def test_the_steps_fingerprint_covers_every_write_and_publication_change(change: object) -> None:
    assert steps_hash(change(PLAN)) != steps_hash(PLAN)  # type: ignore[operator]


def test_the_steps_fingerprint_ignores_what_is_no_write() -> None:
    reordered = replace(PLAN, steps=(Step("create", "a", dict(reversed(list(SINK.items())))), PLAN.steps[1]))
    assert steps_hash(reordered) == steps_hash(PLAN)

"""A sealed plan's rollout (reconciler.sealed, reconciler.workflow): the flags it was made with
and the rollout they make per cluster, under the seal; taken from the plan when applied, and
a flag that would change them refused with --plan (mutation-tested core)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hephaestus.errors import InputError
from hephaestus.project import Project, load_project
from hephaestus.reconciler import sealed, workflow
from hephaestus.reconciler.outcome import ClusterOutcome
from hephaestus.safety import seal
from tests.unit.test_core_seal import BASIS, PLAN, URL

FLAGS = {"canary": ("a*", "b"), "on_failure": "pause", "analysis_s": 0.5, "lag_budget": 7}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    for cluster in ("c", "d"):
        (tmp_path / "connectors" / cluster / "sink").mkdir(parents=True)
    (tmp_path / "hephaestus.yaml").write_text(
        f"clusters:\n  c: {{url: '{URL}', connectors: connectors/c, rollout: {{max_lag: 9}}}}\n"
        "  d: {url: 'http://d:8083', connectors: connectors/d}\n"
        "rollout: {waves: [50, 100]}\n"
    )
    return load_project(tmp_path / "hephaestus.yaml")


def made(project: Project, flags: dict[str, Any]) -> sealed.Sealed:
    outcomes = [ClusterOutcome("c", URL, PLAN, basis=BASIS), ClusterOutcome("d", "http://d:8083", PLAN, basis=BASIS)]
    return sealed.build(project, outcomes, sealed.PlanScope(), list(project.clusters.values()), flags)


def saved(project: Project, s: sealed.Sealed) -> Path:
    path = Path(project.file).parent / "plan.json"
    sealed.write(path, s)
    return path


def test_the_flags_and_each_clusters_rollout_are_sealed_as_json(project: Project) -> None:
    s = made(project, FLAGS)
    assert s.body["rollout"] == {"canary": ["a*", "b"], "on_failure": "pause", "analysis_s": 0.5, "lag_budget": 7}
    c = s.body["clusters"]["c"]["rollout"]
    assert (c["canary"], c["waves"], c["max_lag"], c["on_failure"], c["analysis_s"]) == (
        ["a*", "b"],
        [50, 100],
        9,
        "pause",
        0.5,
    )
    assert s.body["clusters"]["d"]["rollout"]["max_lag"] is None
    loaded = sealed.load(saved(project, s), project)
    assert dict(loaded.rollout) == s.body["rollout"] and loaded.id == s.id
    assert project.rollout_of(project.clusters["c"], loaded.rollout) == project.rollout_of(project.clusters["c"], FLAGS)


def test_without_a_rollout_anywhere_none_is_sealed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    (tmp_path / "connectors/c").mkdir(parents=True)
    (tmp_path / "hephaestus.yaml").write_text(f"clusters:\n  c: {{url: '{URL}', connectors: connectors/c}}\n")
    project = load_project(tmp_path / "hephaestus.yaml")
    s = sealed.build(
        project, [ClusterOutcome("c", URL, PLAN, basis=BASIS)], sealed.PlanScope(), [project.clusters["c"]]
    )
    assert s.body["rollout"] == {} and s.body["clusters"]["c"]["rollout"] is None
    assert dict(sealed.load(saved(project, s), project).rollout) == {}


def resealed(path: Path, change: Any) -> None:
    """A hand edit with the content hash recomputed (no key: the seal guards against accidents)."""
    doc = json.loads(path.read_text())
    change(doc["body"])
    doc["seal"] = seal.seal(doc["body"])
    doc["id"] = doc["seal"][7:19]
    path.write_text(json.dumps(doc))


def test_a_sealed_rollout_that_its_flags_no_longer_make_is_stale(project: Project) -> None:
    path = saved(project, made(project, FLAGS))
    resealed(path, lambda b: b["clusters"]["d"]["rollout"].update(analysis_s=30.0))
    with pytest.raises(sealed.StalePlan) as err:
        sealed.load(path, project)
    assert str(err.value).endswith("is stale: the rollout of cluster d is not the one planned; make a new plan")
    resealed(path, lambda b: b["clusters"]["d"].update(rollout=None))
    with pytest.raises(sealed.StalePlan, match="the rollout of cluster d is not"):
        sealed.load(path, project)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda b: b.pop("rollout"), "body"),
        (lambda b: b["rollout"].update(on_failure="ignore"), "body.rollout.on_failure"),
        (lambda b: b["rollout"].update(canary=-1), "body.rollout.canary"),
        (lambda b: b["rollout"].update(canary=[]), "body.rollout.canary"),
        (lambda b: b["rollout"].update(canary=True), "body.rollout.canary"),
        (lambda b: b["rollout"].update(analysis_s=-1), "body.rollout.analysis_s"),
        (lambda b: b["rollout"].update(lag_budget=0.5), "body.rollout.lag_budget"),
        (lambda b: b["clusters"]["c"].pop("rollout"), "body.clusters.c"),
        (lambda b: b["clusters"]["c"].update(rollout="canary"), "body.clusters.c.rollout"),
    ],
)
def test_a_hand_made_rollout_is_checked_for_shape(project: Project, change: Any, where: str) -> None:
    path = saved(project, made(project, FLAGS))
    resealed(path, change)
    with pytest.raises(InputError, match="not a well-formed plan") as err:
        sealed.load(path, project)
    assert err.value.field == where


@pytest.mark.parametrize(
    ("key", "flag"),
    [
        ("replay_parked", "--replay-parked"),  # a rollout flag added later: refused as well
        ("canary", "--canary"),
        ("on_failure", "--on-failure"),
        ("analysis_s", "--analysis-window"),
        ("lag_budget", "--lag-budget"),
    ],
)
def test_each_rollout_flag_is_refused_with_a_plan(tmp_path: Path, key: str, flag: str) -> None:
    project = Project(str(tmp_path / "p.yaml"), {}, {}, base=tmp_path)
    (tmp_path / "plan.json").write_text("{}")
    request = workflow.RunRequest(given=sealed.PlanScope(), plan_file=tmp_path / "plan.json", rollout={key: 0})
    with pytest.raises(InputError) as err:
        workflow.prepare(project, request, None, lambda line: None)
    assert (err.value.file, str(err.value)) == (
        flag,
        f"{flag}: the plan fixes what it covers and how it rolls out: {flag} cannot be given with --plan",
    )


def test_a_plan_is_applied_with_its_flags_and_a_run_without_one_with_the_given(project: Project) -> None:
    path = saved(project, made(project, FLAGS))
    request = workflow.RunRequest(given=sealed.PlanScope(), plan_file=path)
    prepared = workflow.prepare(project, request, None, lambda line: None)
    assert dict(prepared.options.rollout) == {
        "canary": ["a*", "b"],
        "on_failure": "pause",
        "analysis_s": 0.5,
        "lag_budget": 7,
    }
    given = workflow.RunRequest(given=sealed.PlanScope(), rollout={"on_failure": "continue"})
    assert dict(workflow.prepare(project, given, None, lambda line: None).options.rollout) == {"on_failure": "continue"}

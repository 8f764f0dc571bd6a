"""The typed settings of the project file: defaults declared once, the schema carrying them,
and the one `state: {database}` with the keys of earlier releases still honoured."""

from __future__ import annotations

import json
import logging
from dataclasses import fields
from pathlib import Path

import pytest

from hephaestus.errors import InputError
from hephaestus.project import load_project
from hephaestus.settings import (
    NOT_KEYS,
    SECTIONS,
    HealSettings,
    LockSettings,
    PolicySettings,
    RolloutKeys,
    RolloutSettings,
    StateSettings,
    schema_defaults,
)
from tests.unit.conftest import REPO

SCHEMA = json.loads((REPO / "hephaestus" / "project.schema.json").read_text())
PARTS = ("lock", "ownership", "heal", "audit")
# Keys of a section that are not settings of their own (earlier releases' database keys, and
# heal's `state` object, whose `file` becomes HealSettings.state_file).
SCHEMA_ONLY = {"lock": {"database"}, "heal": {"state"}}


def section(name: str) -> dict[str, dict[str, object]]:
    props: dict[str, dict[str, object]] = SCHEMA["properties"][name]["properties"]
    return props


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_the_schema_and_the_models_have_the_same_keys(name: str) -> None:
    keys = {f.name for f in fields(SECTIONS[name])} - NOT_KEYS.get(name, set())
    assert set(section(name)) - SCHEMA_ONLY.get(name, set()) == keys


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_the_schema_declares_the_models_defaults(name: str) -> None:
    declared = {k: v["default"] for k, v in section(name).items() if "default" in v}
    assert declared == schema_defaults()[name], "copy settings.schema_defaults() into project.schema.json"


def test_heals_state_file_default_is_the_schemas() -> None:
    assert section("heal")["state"]["properties"]["file"]["default"] == HealSettings().state_file  # type: ignore[index]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hephaestus.yaml"
    path.write_text("clusters: {c: {url: 'http://c:8083', connectors: c}}\ndatabases: {s: {dsn: 'dbname=s'}}\n" + text)
    return path


def test_absent_sections_take_the_defaults(tmp_path: Path) -> None:
    project = load_project(write(tmp_path, ""))
    assert (project.policy, project.heal, project.lock, project.state) == (
        PolicySettings(),
        HealSettings(),
        LockSettings(),
        StateSettings(),
    )


def test_sections_are_typed_as_the_models_say(tmp_path: Path) -> None:
    text = (
        "policy: {ignore_keys: [a], max_deletes: 3, ready_timeout_s: 5, max_failures: 2}\n"
        "heal: {exclude: [x_*], backoff_unit_s: 1, state: {file: h.json}}\nlock: {timeout_s: 7}\n"
    )
    project = load_project(write(tmp_path, text))
    assert project.policy == PolicySettings(ignore_keys=("a",), max_deletes=3, ready_timeout_s=5.0, max_failures=2)
    assert project.heal == HealSettings(exclude=("x_*",), backoff_unit_s=1.0, state_file="h.json")
    assert isinstance(project.policy.ready_timeout_s, float) and project.lock == LockSettings(7.0)


def test_one_state_database_keeps_every_part(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        project = load_project(write(tmp_path, "state: {database: s}\n"))
    assert {p: project.state.database_of(p) for p in PARTS} == dict.fromkeys(PARTS, "s")
    assert "deprecated" not in caplog.text


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("lock: {database: s}\n", {"lock": "s", "ownership": "s", "heal": None, "audit": None}),
        ("heal: {state: {database: s}}\n", {"lock": "s", "ownership": "s", "heal": "s", "audit": None}),
        ("audit: {database: s}\n", {"lock": None, "ownership": None, "heal": None, "audit": "s"}),
    ],
)
def test_the_keys_of_earlier_releases_still_choose_their_part_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str, where: dict[str, str | None]
) -> None:
    with caplog.at_level(logging.WARNING):
        project = load_project(write(tmp_path, text))
    assert {p: project.state.database_of(p) for p in PARTS} == where
    assert "is deprecated: use `state: {database: s}`" in caplog.text


def test_the_state_database_wins_over_the_keys_of_earlier_releases(tmp_path: Path) -> None:
    text = "databases: {s: {}, old: {}}\nstate: {database: s}\nlock: {database: old}\naudit: {database: old}\n"
    path = tmp_path / "hephaestus.yaml"
    path.write_text("clusters: {c: {url: 'http://c:8083', connectors: c}}\n" + text)
    project = load_project(path)
    assert {p: project.state.database_of(p) for p in PARTS} == dict.fromkeys(PARTS, "s")


def test_heals_decisions_take_the_settings_given() -> None:
    from hephaestus.heal.policy import HealConfig

    s = HealSettings(max_restarts=2, unassigned_grace_s=5.0, backoff_unit_s=1.0, exclude=("x_*",))
    assert HealConfig.of(s) == HealConfig(2, 5.0, 1.0, ("x_*",))
    assert HealConfig.of(HealSettings()) == HealConfig()


def rollout_project(tmp_path: Path, project: str, cluster: str) -> Path:
    path = tmp_path / "hephaestus.yaml"
    own = f", rollout: {cluster}" if cluster else ""
    path.write_text(f"clusters: {{c: {{url: 'http://c:8083', connectors: c{own}}}}}\n{project}")
    return path


def test_rollout_is_typed_at_load_and_keeps_which_keys_were_written(tmp_path: Path) -> None:
    project = load_project(rollout_project(tmp_path, "rollout: {waves: [50, 100], analysis_s: 3}\n", "{canary: [a_*]}"))
    assert project.rollout == RolloutKeys(
        RolloutSettings(waves=(50, 100), analysis_s=3.0), frozenset({"waves", "analysis_s"})
    )
    assert project.clusters["c"].rollout == RolloutKeys(RolloutSettings(canary=("a_*",)), frozenset({"canary"}))
    assert project.rollout is not None and isinstance(project.rollout.values.analysis_s, float)


def test_a_clusters_rollout_keys_go_over_the_projects_and_the_flags_over_both(tmp_path: Path) -> None:
    project = load_project(rollout_project(tmp_path, "rollout: {waves: [50, 100], canary: 2}\n", "{canary: 0}"))
    c = project.clusters["c"]
    assert project.rollout_of(c) == RolloutSettings(waves=(50, 100), canary=0)
    assert project.rollout_of(c, {"canary": ["x"], "analysis_s": 1}) == RolloutSettings(
        waves=(50, 100), canary=("x",), analysis_s=1.0
    )


@pytest.mark.parametrize(("project", "cluster"), [("", "{}"), ("rollout: {}\n", "")])
def test_an_empty_rollout_section_takes_the_defaults(tmp_path: Path, project: str, cluster: str) -> None:
    loaded = load_project(rollout_project(tmp_path, project, cluster))
    assert loaded.rollout_of(loaded.clusters["c"]) == RolloutSettings()


def test_without_a_rollout_section_or_flag_there_is_none(tmp_path: Path) -> None:
    loaded = load_project(rollout_project(tmp_path, "", ""))
    assert loaded.rollout_of(loaded.clusters["c"]) is None and loaded.rollout_of(loaded.clusters["c"], {}) is None
    assert loaded.rollout_of(loaded.clusters["c"], {"on_failure": "pause"}) == RolloutSettings(on_failure="pause")


@pytest.mark.parametrize(
    ("project", "cluster", "where"),
    [
        ("rollout: {waves: [50, 20]}\n", "", "rollout.waves"),
        ("", "{waves: [30, 30]}", "clusters.c.rollout.waves"),
    ],
)
def test_waves_that_do_not_ascend_are_an_error_naming_the_file_and_field(
    tmp_path: Path, project: str, cluster: str, where: str
) -> None:
    path = rollout_project(tmp_path, project, cluster)
    with pytest.raises(InputError) as err:
        load_project(path)
    assert (err.value.file, err.value.field) == (str(path), where)
    assert "must ascend" in str(err.value)


def test_a_run_without_a_project_defaults_as_an_empty_policy_does() -> None:
    """Issue 44: each default is written once (settings); the options a run builds without a
    project file agree with `policy:` left empty, key by key."""
    from hephaestus.connect.ready import ReadyOptions
    from hephaestus.reconciler.apply import ApplyOptions
    from hephaestus.reconciler.run import RunOptions
    from hephaestus.settings import PolicySettings

    policy, applied, ready = PolicySettings(), ApplyOptions(), ReadyOptions()
    assert (applied.concurrency, applied.write_concurrency, applied.initial_state) == (
        policy.concurrency,
        policy.write_concurrency,
        policy.initial_state,
    )
    assert (applied.batch_size, applied.batch_interval_s, applied.max_failures) == (
        policy.batch_size,
        policy.batch_interval_s,
        policy.max_failures,
    )
    assert (ready.timeout_s, ready.stable_s) == (policy.ready_timeout_s, policy.stability_window_s)
    assert RunOptions().unassigned_grace_s == policy.unassigned_grace_s

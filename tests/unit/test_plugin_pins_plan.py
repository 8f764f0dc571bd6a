"""A plugin version bump in git as reconcile plans and judges it (issue 50) over the strict Connect
double: the step's `plugin-upgrade` effect beside the version it runs, every worker's plugins read
only when a write sets or moves a pin, a pin some worker holds nothing for refused before any
write (`plugin-missing`, which no flag allows), a pin Connect would refuse, unchecked workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from hephaestus.errors import InputErrors
from hephaestus.reconciler.outcome import ClusterOutcome
from hephaestus.reconciler.run import RunOptions
from hephaestus.safety.gate import Allow
from tests.connect_double import error
from tests.unit.conftest import Project, Result
from tests.unit.test_core_run import FAST, SINK, World, cfg

PIN = "connector.plugin.version"


def world(tmp_path: Path, pin: str, held: tuple[str, ...] = ("3.5.0.Final", "3.6.0.Final")) -> World:
    """`s` runs unpinned (the newest held); git pins it to `pin`."""
    w = World(tmp_path, "c")
    d = w.doubles["c"]
    d.plugins = [p for p in d.plugins if p[0] != SINK] + [(SINK, "sink", v) for v in held]
    d.add("s", cfg())
    w.own("c", "s")
    w.git("c", "s", cfg(**{PIN: pin}))
    return w


def only(outs: list[ClusterOutcome]) -> ClusterOutcome:
    (out,) = outs
    assert out.plan is not None
    return out


def plugin_reads(w: World) -> int:
    return sum(1 for m, p in w.doubles["c"].log if p == "/connector-plugins")


def test_a_pin_every_worker_holds_is_an_upgrade_step_beside_the_version_it_runs(tmp_path: Path) -> None:
    w = world(tmp_path, "3.5.0.Final")
    out = only(w.run(RunOptions(dry_run=True, apply=FAST)))
    (step,) = out.plan.writes if out.plan else ()
    assert [(e.code, e.why, e.destructive) for e in step.effects] == [
        ("plugin-upgrade", f"{PIN}: latest → 3.5.0.Final (runs 3.6.0.Final)", False)
    ]
    assert plugin_reads(w) == 1 and not out.plan.refusals  # type: ignore[union-attr]
    out = only(w.run())
    assert out.results[0].ok and w.doubles["c"].running(w.doubles["c"].connectors["s"].config) == "3.5.0.Final"


def test_a_pin_no_worker_holds_is_refused_before_any_write_naming_the_worker(tmp_path: Path) -> None:
    w = world(tmp_path, "3.9.0.Final")
    out = only(w.run(RunOptions(apply=FAST, allow=Allow(every=True))))  # no flag lets it through
    assert f"{PIN}=3.9.0.Final: worker w1:8083 holds no {SINK} that fits" in out.plan.refused  # type: ignore[union-attr]
    assert w.doubles["c"].writes() == []


def test_a_range_that_matches_nothing_is_refused(tmp_path: Path) -> None:
    w = world(tmp_path, "[4.0,)")
    out = only(w.run())
    assert "plugin-missing" in out.plan.refused and w.doubles["c"].writes() == []  # type: ignore[union-attr]


def test_a_hand_edited_pin_connect_would_refuse_is_bad_input_naming_file_and_field(tmp_path: Path) -> None:
    w = world(tmp_path, "[3.5,")
    with pytest.raises(InputErrors) as caught:
        w.run()
    assert str(caught.value).endswith(
        "sink/s.json at config.connector.plugin.version: '[3.5,' is not a version nor a range such as [3.5,3.6)"
    )
    assert w.doubles["c"].writes() == [] and w.doubles["c"].log == []  # nothing asked, nothing written


def test_a_worker_that_lists_no_versions_leaves_the_pin_unchecked_and_refused(tmp_path: Path) -> None:
    w = world(tmp_path, "3.5.0.Final")
    w.doubles["c"].plugins = [(c, t, "") for c, t, _ in w.doubles["c"].plugins]
    out = only(w.run())
    assert "its pins cannot be checked: worker w1:8083 lists no plugin versions" in out.plan.refused  # type: ignore[union-attr]
    assert w.doubles["c"].writes() == []


def test_a_plan_that_moves_no_pin_reads_no_plugins(tmp_path: Path) -> None:
    w = world(tmp_path, "3.5.0.Final")
    w.git("c", "s", cfg(**{"batch.size": "9"}))  # a change, no pin
    w.git("c", "t", cfg(topics="t2"))  # a create, no pin
    out = only(w.run(RunOptions(dry_run=True, apply=FAST)))
    assert sorted(s.action for s in out.plan.writes) == ["create", "update"]  # type: ignore[union-attr]
    assert plugin_reads(w) == 0


def test_an_unchanged_pin_reads_no_plugins(tmp_path: Path) -> None:
    w = world(tmp_path, "3.5.0.Final")
    w.doubles["c"].connectors["s"].config[PIN] = "3.5.0.Final"
    w.git("c", "s", cfg(**{PIN: "3.5.0.Final", "batch.size": "9"}))
    out = only(w.run(RunOptions(dry_run=True, apply=FAST)))
    (step,) = out.plan.writes if out.plan else ()
    assert [e.code for e in step.effects] == [] and plugin_reads(w) == 0


# --- pins written by definitions (generate) --------------------------------------------------


def test_a_definition_pins_its_connectors_through_their_options(project: Project) -> None:
    from tests.unit.test_input_yaml import GOOD, configs, only

    text = GOOD + "source:\n  options: {connector.plugin.version: 3.6.1.Final}\n"
    text += "sink_defaults:\n  options: {connector.plugin.version: '[3.6,3.7)'}\n"
    got = configs(only(project, text), project)
    assert got["local_manabie_bob_source_connector"][PIN] == "3.6.1.Final"
    assert got["local_manabie_bob_to_auth_users_sink_connector"][PIN] == "[3.6,3.7)"


def test_a_definition_pin_connect_would_refuse_names_file_line_and_field(project: Project) -> None:
    from tests.unit.test_input_yaml import GOOD, refused

    text = GOOD.replace(
        "      - database: auth\n",
        "      - database: auth\n        options: {value.converter.plugin.version: '(3.5)'}\n",
    )
    err = refused(project, text)
    assert "bob.yaml:9" in err and "pipelines[0].sinks[0].options.value.converter.plugin.version" in err, err
    assert "a one-version range is written [VERSION]" in err


def generated(project: Project, text: str) -> Result:
    """bob.yaml alone, generated with the project file beside it."""
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    (project.definitions / "bob.yaml").write_text(text)
    return project.generate("--project", str(project.root / "hephaestus.yaml"))


def test_the_project_file_pins_a_class_fleet_wide_unless_a_definition_pins_it_nearer(project: Project) -> None:
    from tests.unit.test_input_yaml import GOOD, configs

    pg = "io.debezium.connector.postgresql.PostgresConnector"
    (project.root / "hephaestus.yaml").write_text(
        "clusters:\n  platforms: {url: 'http://127.0.0.1:9', connectors: connectors/platforms}\n"
        f"plugins:\n  versions:\n    {pg}: '[3.6,3.7)'\n    {SINK}: 3.6.0.Final\n"
    )
    text = GOOD + "sink_defaults:\n  options: {connector.plugin.version: 3.5.0.Final}\n"
    got = configs(generated(project, text), project)
    assert got["local_manabie_bob_source_connector"][PIN] == "[3.6,3.7)"  # the project file's
    assert got["local_manabie_bob_to_auth_users_sink_connector"][PIN] == "3.5.0.Final"  # its definition's


def test_a_fleet_wide_pin_connect_would_refuse_names_the_project_file_and_key(project: Project) -> None:
    from tests.unit.test_input_yaml import GOOD

    (project.root / "hephaestus.yaml").write_text(
        "clusters:\n  platforms: {url: 'http://127.0.0.1:9', connectors: connectors/platforms}\n"
        f"plugins:\n  versions:\n    {SINK}: '[3.6'\n"
    )
    result = generated(project, GOOD)
    assert result.code == 1 and project.files() == {}
    assert f"hephaestus.yaml at plugins.versions.{SINK}: '[3.6' is not a version nor a range" in result.err


def test_a_worker_that_does_not_answer_leaves_the_pin_unchecked_and_refused(tmp_path: Path) -> None:
    w = world(tmp_path, "3.5.0.Final")
    d = w.doubles["c"]
    d.task_workers = ["w1:8083", "w9:8083"]
    d.connectors["s"].task_states = ["RUNNING", "RUNNING"]
    d.faults.append(lambda req, dbl: error(503, "starting") if req.url.host == "w9" else None)
    out = only(w.run())
    assert "its pins cannot be checked: worker w9:8083 not read (" in out.plan.refused  # type: ignore[union-attr]
    assert d.writes() == []

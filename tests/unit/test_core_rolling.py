"""What an apply checks before a cluster's first write when it rolls out (reconciler.rollout.rules'
`unnamed`, reconciler.rollout.checks' hooks): a canary its globs would skip is refused, per cluster,
naming where it was set; a rollout cut short left connectors written and never judged (the
journal's last entry of each is an intent): they are judged before anything is written, and
their verdict journalled (mutation-tested core)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hephaestus import pg
from hephaestus.errors import HephaestusError, InputError
from hephaestus.fleet.health import HealthProbe
from hephaestus.fleet.lag import HealthSample
from hephaestus.project import Cluster, Database, Project
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.reconciler.rollout import checks, executor
from hephaestus.reconciler.rollout.rules import unnamed
from hephaestus.settings import RolloutKeys, RolloutSettings, StateSettings
from tests.unit.pgfake import Server, on

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
R = RolloutSettings()


def step(name: str, action: str = "update") -> Step:
    return Step(action, name, config={"connector.class": SINK, "topics": "t"}, connector_class=SINK)  # type: ignore[arg-type]


# --- a canary its globs would skip ------------------------------------------------------------


def test_globs_that_name_no_write_are_returned_and_one_named_write_is_enough() -> None:
    writes = [step("a_sink"), step("b_sink")]
    assert unnamed(writes, replace(R, canary=("typo*", "x"))) == ("typo*", "x")
    assert unnamed(writes, replace(R, canary=("typo*", "b_*"))) == ()
    assert unnamed(writes, replace(R, canary=("b_sink",))) == ()
    assert unnamed(writes, replace(R, canary=("B_SINK",))) == ("B_SINK",)  # names are case-sensitive


def test_a_count_and_a_cluster_with_nothing_to_write_but_deletes_have_nothing_to_name() -> None:
    assert unnamed([step("a")], replace(R, canary=0)) == ()
    assert unnamed([step("a")], replace(R, canary=5)) == ()
    assert unnamed([], replace(R, canary=("a",))) == ()
    # a delete goes last, never in the canary: a glob naming only it names no write the canary takes
    assert unnamed([step("old", "delete")], replace(R, canary=("old",))) == ()
    assert unnamed([step("old", "delete"), step("a")], replace(R, canary=("old",))) == ("old",)


def project_of(tmp_path: Path, rollout: dict[str, Any] | None = None, **clusters: dict[str, Any] | None) -> Project:
    found = {
        n: Cluster(n, f"http://{n}:8083", tmp_path / "connectors" / n, rollout=_keys(r)) for n, r in clusters.items()
    }
    return Project(str(tmp_path / "hephaestus.yaml"), found, {}, base=tmp_path, rollout=_keys(rollout))


def _keys(raw: dict[str, Any] | None) -> RolloutKeys | None:
    return None if raw is None else RolloutKeys.of(raw)


def plan(cluster: str, *names: str) -> Plan:
    return Plan(cluster, tuple(step(n) for n in names))


def test_the_canary_is_judged_per_cluster_and_the_error_names_the_flag_and_the_globs(tmp_path: Path) -> None:
    project = project_of(tmp_path, c=None, d=None)
    flags = {"canary": ("*_auth*",)}
    checks.check_canary(project, project.clusters["c"], flags, plan("c", "x_auth", "y"))  # names x_auth
    with pytest.raises(InputError) as err:  # named on c only: no canary on d
        checks.check_canary(project, project.clusters["d"], flags, plan("d", "y", "z"))
    assert (err.value.file, err.value.field) == ("--canary", "")
    assert str(err.value) == (
        "--canary: '*_auth*' names none of the 2 writes on cluster d: its canary would be skipped and every "
        "write go out in the waves (a canary on another cluster proves nothing here); name one of them, or give "
        "a count (0: no canary)"
    )


def test_a_canary_of_the_project_file_is_named_by_its_key(tmp_path: Path) -> None:
    project = project_of(tmp_path, {"canary": ["typo"]}, c=None, d={"canary": ["typo", "nope\x1b[31m"]})
    with pytest.raises(InputError) as err:
        checks.check_canary(project, project.clusters["c"], {}, plan("c", "a"))
    assert (err.value.file, err.value.field) == (project.file, "rollout.canary")
    with pytest.raises(InputError) as err:
        checks.check_canary(project, project.clusters["d"], {}, plan("d", "a"))
    assert (err.value.file, err.value.field) == (project.file, "clusters.d.rollout.canary")
    assert "'typo', 'nope\\x1b[31m' names none of the 1 writes" in str(err.value)  # no raw escape
    with pytest.raises(InputError) as err:  # the flag over both
        checks.check_canary(project, project.clusters["d"], {"canary": ("z",)}, plan("d", "a"))
    assert err.value.file == "--canary"


def test_without_a_rollout_or_with_a_count_nothing_is_checked(tmp_path: Path) -> None:
    project = project_of(tmp_path, c=None)
    checks.check_canary(project, project.clusters["c"], {}, plan("c", "a"))
    checks.check_canary(project, project.clusters["c"], {"canary": 0}, plan("c", "a"))
    checks.check_canary(project, project.clusters["c"], {"on_failure": "pause"}, plan("c", "a"))  # canary 1


# --- the journal read back --------------------------------------------------------------------


def entry(connector: str, outcome: str, run: str = "r1", cluster: str = "c") -> dict[str, Any]:
    return {"cluster": cluster, "connector": connector, "action": "update", "outcome": outcome, "run_id": run}


def test_the_last_entry_of_each_connector_of_the_cluster_in_the_order_written() -> None:
    lines = [
        json.dumps(entry("a", "intent")),
        json.dumps(entry("a", "ok")),
        json.dumps(entry("b", "intent", "r2")),
        json.dumps(entry("b", "intent", "r9", cluster="other")),
        json.dumps({"cluster": "c", "connector": "", "outcome": "intent"}),  # a run's own line, no connector
        json.dumps(["not", "an", "entry"]),
        '{"cluster": "c", "connector": "a", "outc',  # cut short by a crash
    ]
    assert checks.last_entries(lines, "c") == {"a": entry("a", "ok"), "b": entry("b", "intent", "r2")}


def test_unsettled_are_the_connectors_whose_last_entry_is_an_intent_in_the_file(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    project = Project("p.yaml", {}, {}, audit_log=log, base=tmp_path)
    assert checks.unsettled(project, "c") == {}  # no file yet
    log.write_text("".join(json.dumps(e) + "\n" for e in [entry("b", "intent", "r2"), entry("a", "intent")]))
    assert checks.unsettled(project, "c") == {"a": "r1", "b": "r2"}
    assert checks.unsettled(Project("p.yaml", {}, {}, base=tmp_path), "c") == {}  # no journal: no trace
    log.unlink()
    log.mkdir()
    with pytest.raises(HephaestusError, match=r"audit log .*audit.jsonl cannot be read: Is a directory"):
        checks.unsettled(project, "c")


def test_unsettled_are_read_from_the_journal_table(tmp_path: Path) -> None:
    project = Project("p.yaml", {}, {"s": Database("s", "host=db dbname=s")}, base=tmp_path, state=StateSettings("s"))
    rows = [("a", entry("a", "intent")), ("b", entry("b", "ok")), ("c", "not a dict")]
    database = Server(handlers=[on(r"DISTINCT ON \(connector\)", rows)])
    with pg.seam(database.connect):
        assert checks.unsettled(project, "c") == {"a": "r1"}
    (statement,) = database.statements
    assert statement == (
        "SELECT DISTINCT ON (connector) connector, entry FROM hephaestus_audit "
        "WHERE cluster = %s AND connector IS NOT NULL ORDER BY connector, id DESC"
    )


# --- connectors a run cut short wrote: judged, before anything is written ---------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def sampled(monkeypatch: pytest.MonkeyPatch, samples: Sequence[dict[str, Any]]) -> list[int]:
    from hephaestus.fleet import health

    taken: list[int] = []

    def sample(client: object, probe: object, configs: dict[str, Any]) -> dict[str, HealthSample]:
        taken.append(1)
        got = {"state": "RUNNING", "tasks": ("RUNNING",), **samples[min(len(taken), len(samples)) - 1]}
        return {n: HealthSample(n, **got) for n in configs}

    monkeypatch.setattr(health, "sample", sample)
    return taken


@pytest.mark.parametrize(
    ("samples", "found", "taken"),
    [
        ([{}], [], 5),  # baseline, then at 0, 1, 2, 3 s
        ([{"dlq_end": 5}, {"dlq_end": 5}], [], 5),  # what the DLQ held before is not its growth
        ([{"dlq_end": 5}, {"dlq_end": 7}], [("its DLQ grew by 2 records (allowed 0)", True)], 2),
        ([{}, {"state": "FAILED"}], [("FAILED (wanted RUNNING)", True)], 2),
        ([{"lag_age_s": 500.0}], [("its oldest waiting record is 500s old (allowed 120s)", False)], 5),
        ([{"lag_age_s": 500.0}, {"lag_age_s": 500.0}, {"lag_age_s": 1.0}], [], 5),
    ],
)
def test_the_judgement_is_a_stages_analysis_window(
    monkeypatch: pytest.MonkeyPatch, samples: list[dict[str, Any]], found: list[tuple[str, bool]], taken: int
) -> None:
    counted = sampled(monkeypatch, samples)
    clock = Clock()
    watch = executor.Watch(RolloutSettings(analysis_s=3, interval_s=1), HealthProbe(), clock.sleep, clock)
    got = checks.judged(None, watch, {"s": {"topics": "t"}}, {"s": "RUNNING"})  # type: ignore[arg-type]
    assert [(f.name, f.why, f.hard) for f in got] == [("s", why, hard) for why, hard in found]
    assert len(counted) == taken


def test_without_a_window_one_sample_and_only_what_failed_for_sure(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = sampled(monkeypatch, [{"lag_age_s": 900.0}])
    clock = Clock()
    watch = executor.Watch(RolloutSettings(analysis_s=0), HealthProbe(), clock.sleep, clock)
    assert checks.judged(None, watch, {"s": {}}, {"s": "RUNNING"}) == []  # type: ignore[arg-type]
    assert (len(counted), clock.now) == (2, 0.0)


def test_settled_connectors_get_an_outcome_after_their_intent(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    project = Project("p.yaml", {}, {}, audit_log=log, base=tmp_path)
    log.write_text(json.dumps(entry("a", "intent", "dead")) + "\n")
    checks.settle(project, "c", {"b": "r2", "a": "dead"})
    got = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert [(e["cluster"], e["connector"], e["action"], e["outcome"], e["detail"]) for e in got] == [
        ("c", "a", "judge", "ok", "passed the rollout gate, after run dead ended before judging it"),
        ("c", "b", "judge", "ok", "passed the rollout gate, after run r2 ended before judging it"),
    ]
    assert got[0]["run_id"] == got[1]["run_id"] != "dead"
    assert checks.unsettled(project, "c") == {}


class Inner:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def prepare(self, cluster: Cluster, plan: Plan) -> None:
        self.calls.append(f"prepare {cluster.name}")

    def after(self, cluster: Cluster, plan: Plan, results: Sequence[StepResult]) -> tuple[StepResult, ...]:
        return (StepResult("x", "snapshot", True, "sent"),)


def test_the_hooks_check_before_the_others_and_hand_their_results_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = project_of(tmp_path, c=None)
    cluster = project.clusters["c"]
    inner = Inner()
    taken: list[str] = []
    monkeypatch.setattr(checks, "taken_up", lambda p, c, r, plan: taken.append(r.on_failure))
    hooks = checks.RolloutHooks(project, {"canary": ("typo",)}, inner)
    with pytest.raises(InputError, match="--canary"):
        hooks.prepare(cluster, plan("c", "a"))
    assert inner.calls == [] and taken == []  # refused before a snapshot's prepare publishes anything
    checks.RolloutHooks(project, {"on_failure": "pause"}, inner).prepare(cluster, plan("c", "a"))
    checks.RolloutHooks(project, {"on_failure": "continue"}, inner).prepare(cluster, plan("c", "a"))
    checks.RolloutHooks(project, {}, inner).prepare(cluster, plan("c", "a"))  # no rollout
    assert taken == ["pause"] and inner.calls == ["prepare c"] * 3
    assert checks.RolloutHooks(project, {}, inner).after(cluster, plan("c"), ()) == inner.after(cluster, plan("c"), ())
    assert checks.RolloutHooks(project, {}).after(cluster, plan("c"), ()) == ()
    checks.RolloutHooks(project, {}).prepare(cluster, plan("c", "a"))

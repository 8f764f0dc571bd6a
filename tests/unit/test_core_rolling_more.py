"""reconciler.rollout.checks exactly, past test_core_rolling.py: what a rollout cut short left
unjudged is read from the journal (file or table), judged on the live cluster (the strict
Connect double on loopback) before anything is written, the error naming each failing
connector and the runs that wrote them, and the verdict journalled. Written so that mutants of
`taken_up`, `_cut_short`, `judged`, `settle`, `unsettled`, `last_entries` and `_from_file` die."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hephaestus import pg
from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.errors import HephaestusError
from hephaestus.fleet.health import HealthProbe
from hephaestus.project import Cluster, Database, Project
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.reconciler.rollout import checks, executor
from hephaestus.reconciler.rollout.rules import Failure
from hephaestus.settings import RolloutSettings, StateSettings
from tests.connect_double import ConnectDouble
from tests.unit.pgfake import Server, on
from tests.unit.test_core_rolling import Clock, entry

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CFG = {"connector.class": SINK, "topics": "t"}
R = RolloutSettings(analysis_s=0)
TAIL = (
    "which ended before its rollout judged it: nothing is written while it fails; its config before that run "
    "died with it: revert it in git (the revert goes first, as the canary)"
)


@pytest.fixture
def double(served: tuple[ConnectDouble, str]) -> Iterator[ConnectDouble]:
    d, _ = served
    d.connectors.clear()
    d.faults.clear()
    d.on_start.clear()
    d.log.clear()
    yield d


def project_of(tmp_path: Path, url: str, lines: list[dict[str, Any]]) -> tuple[Project, Cluster, Path]:
    log = tmp_path / "audit.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in lines))
    cluster = Cluster("c", url, tmp_path / "connectors" / "c", timeout_s=2)
    return Project("p.yaml", {"c": cluster}, {}, audit_log=log, base=tmp_path), cluster, log


def journalled(log: Path, skip: int) -> list[tuple[str, str, str, str]]:
    got = [json.loads(line) for line in log.read_text().splitlines()[skip:]]
    assert all(isinstance(e["run_id"], str) and len(e["run_id"]) == 12 for e in got)
    return [(e["connector"], e["action"], e["outcome"], e["detail"]) for e in got]


def sink_step(name: str, action: str = "update", **extra: Any) -> Step:
    return Step(action, name, config=CFG, connector_class=SINK, **extra)  # type: ignore[arg-type]


# --- taken_up --------------------------------------------------------------------------------


def test_left_unjudged_and_not_written_again_is_judged_then_journalled(
    tmp_path: Path, served: tuple[ConnectDouble, str], double: ConnectDouble
) -> None:
    lines = [
        entry("a", "intent", "r1"),
        entry("p", "intent", "r2"),
        entry("again", "intent", "r1"),  # this plan writes it again
        entry("old", "intent", "r1"),  # this plan renames it away
        entry("gone", "intent", "r1"),  # not live any more
        entry("done", "intent", "r1"),
        entry("done", "ok", "r1"),
    ]
    project, cluster, log = project_of(tmp_path, served[1], lines)
    for n in ("a", "again", "old", "done"):
        double.add(n, CFG)
    double.add("p", CFG, "PAUSED")  # judged on the state it was left in
    p = Plan("c", (sink_step("again"), sink_step("new", "rename", renamed_from="old")))
    checks.taken_up(project, cluster, R, p)
    assert journalled(log, len(lines)) == [
        ("a", "judge", "ok", "passed the rollout gate, after run r1 ended before judging it"),
        ("p", "judge", "ok", "passed the rollout gate, after run r2 ended before judging it"),
    ]
    assert double.writes() == []
    assert checks.unsettled(project, "c") == {"again": "r1", "gone": "r1", "old": "r1"}


def test_a_failing_one_stops_the_apply_naming_it_and_the_runs(
    tmp_path: Path, served: tuple[ConnectDouble, str], double: ConnectDouble
) -> None:
    lines = [entry("a", "intent", "r2"), entry("b", "intent", "r1"), entry("c", "intent", "r1"), entry("d", "intent")]
    project, cluster, log = project_of(tmp_path, served[1], lines)
    for n in ("a", "b", "c", "d"):
        double.add(n, CFG).task_states = ["FAILED"]
    double.connectors["d"].task_states = ["RUNNING"]
    double.connectors["b"].state = "FAILED"  # a state not to be wanted: judged on RUNNING
    with pytest.raises(HephaestusError) as err:
        checks.taken_up(project, cluster, R, Plan("c", ()))
    assert str(err.value) == f"a: RUNNING, tasks ['FAILED'] (and 2 more): written by run r1, r2, {TAIL}"
    assert len(log.read_text().splitlines()) == len(lines)  # nothing journalled


def test_one_failing_names_its_run_alone(
    tmp_path: Path, served: tuple[ConnectDouble, str], double: ConnectDouble
) -> None:
    project, cluster, _ = project_of(tmp_path, served[1], [entry("a", "intent", "r7"), entry("b", "intent", "r8")])
    double.add("a", CFG).task_states = ["FAILED"]
    double.add("b", CFG)
    with pytest.raises(HephaestusError) as err:
        checks.taken_up(project, cluster, R, Plan("c", ()))
    assert str(err.value) == f"a: RUNNING, tasks ['FAILED']: written by run r7, {TAIL}"


def test_with_everything_left_written_again_the_cluster_is_not_read(
    tmp_path: Path, served: tuple[ConnectDouble, str], double: ConnectDouble
) -> None:
    project, cluster, log = project_of(tmp_path, served[1], [entry("a", "intent"), entry("old", "intent")])
    checks.taken_up(project, cluster, R, Plan("c", (sink_step("a"), sink_step("new", "rename", renamed_from="old"))))
    assert double.log == [] and len(log.read_text().splitlines()) == 2


def test_left_but_all_gone_is_read_and_judges_nothing(
    tmp_path: Path, served: tuple[ConnectDouble, str], double: ConnectDouble
) -> None:
    project, cluster, log = project_of(tmp_path, served[1], [entry("gone", "intent")])
    double.add("x", CFG).task_states = ["FAILED"]  # not left by the run: not judged
    checks.taken_up(project, cluster, R, Plan("c", ()))
    assert double.log == [("GET", "/health"), ("GET", "/connectors")]  # listed, no status read
    assert len(log.read_text().splitlines()) == 1


# --- judged: a stage's analysis window ------------------------------------------------------


def test_the_window_is_sampled_every_interval_the_last_wait_cut_to_its_end(double: ConnectDouble) -> None:
    client = ConnectClient(
        "http://connect", name="c", transport=httpx.MockTransport(double), retry=RetryPolicy.immediate(1)
    )
    double.add("s", CFG).task_states = ["UNASSIGNED"]  # soft: failing only at the window's end
    clock = Clock()
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        clock.sleep(s)

    watch = executor.Watch(RolloutSettings(analysis_s=2.5, interval_s=1), HealthProbe(), sleep, clock)
    got = checks.judged(client, watch, {"s": CFG}, {"s": "RUNNING"})
    assert got == [Failure("s", "RUNNING, tasks ['UNASSIGNED']", False)]
    assert slept == [1, 1, 0.5]


# --- the journal read back ------------------------------------------------------------------


def test_a_line_cut_short_mid_file_is_skipped_not_the_end() -> None:
    lines = ['{"cluster": "c", "conn', json.dumps(entry("a", "intent")), "", json.dumps(entry("b", "ok"))]
    assert checks.last_entries(lines, "c") == {"a": entry("a", "intent"), "b": entry("b", "ok")}


def test_an_entry_without_a_connector_or_of_another_cluster_is_none() -> None:
    lines = [json.dumps({"cluster": "c", "outcome": "intent"}), json.dumps(entry("a", "intent", cluster="d")), "3"]
    assert checks.last_entries(lines, "c") == {}


def test_bytes_that_are_not_utf8_do_not_stop_the_read(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    log.write_bytes(json.dumps(entry("a", "intent", "r\u00e9"), ensure_ascii=False).encode("latin-1") + b"\n")
    project = Project("p.yaml", {}, {}, audit_log=log, base=tmp_path)
    assert checks.unsettled(project, "c") == {"a": "r\ufffd"}


def test_an_unreadable_log_says_why(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    log.mkdir()
    project = Project("p.yaml", {}, {}, audit_log=log, base=tmp_path)
    with pytest.raises(HephaestusError) as err:
        checks.unsettled(project, "c")
    assert str(err.value) == f"audit log {log} cannot be read: Is a directory"
    under = tmp_path / "file"
    under.write_text("")
    bad = Project("p.yaml", {}, {}, audit_log=under / "audit.jsonl", base=tmp_path)
    with pytest.raises(HephaestusError) as err:
        checks.unsettled(bad, "c")
    assert str(err.value) == f"audit log {under / 'audit.jsonl'} cannot be read: Not a directory"


def test_only_the_last_entry_being_an_intent_counts_and_a_missing_run_is_empty(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    lines = [entry("a", "intent"), entry("a", "failed"), {"cluster": "c", "connector": "b", "outcome": "intent"}]
    log.write_text("".join(json.dumps(e) + "\n" for e in lines))
    assert checks.unsettled(Project("p.yaml", {}, {}, audit_log=log, base=tmp_path), "c") == {"b": ""}


def table(rows: list[tuple[Any, Any]]) -> tuple[Project, Server]:
    project = Project(
        "p.yaml", {}, {"s": Database("s", "host=db dbname=s")}, base=Path("/nowhere"), state=StateSettings("s")
    )
    return project, Server(handlers=[on(r"DISTINCT ON \(connector\)", rows)])


def test_the_table_is_read_for_the_cluster_asked_as_hephaestus() -> None:
    project, database = table(
        [("b", entry("b", "intent", "r2")), ("a", {**entry("a", "intent"), "run_id": 7}), (3, entry("3", "intent"))]
    )
    seen: list[list[Any]] = []
    database.handlers.insert(0, lambda sql, params: seen.append(params))
    with pg.seam(database.connect):
        assert checks.unsettled(project, "prod") == {"3": "r1", "a": "7", "b": "r2"}
    assert seen == [["prod"]]
    (connect,) = database.connects
    assert connect["dsn"] == "host=db dbname=s" and connect.get("application_name") == "hephaestus"


def test_a_table_that_cannot_be_read_names_the_journal() -> None:
    project, database = table([])
    database.refuse = "connection refused"
    with pg.seam(database.connect), pytest.raises(HephaestusError) as err:
        checks.unsettled(project, "c")
    assert "audit journal (hephaestus_audit)" in str(err.value)
    assert "connection refused" in str(err.value)

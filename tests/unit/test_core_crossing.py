"""Moves between clusters (issue 49: reconciler.crossing plans them purely, reconciler.moves
runs them) over two clusters served by the strict Connect double: the plan, the exact sequence
of writes on each cluster, the ownership records, the checks that fail closed, and a move that
a killed run left part-way taken up at the first step not done (mutation-tested core)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from hephaestus.reconciler.outcome import ClusterOutcome, StepResult
from hephaestus.reconciler.render import text
from hephaestus.reconciler.run import RunOptions
from hephaestus.state import ownership
from hephaestus.state.backend import ownership_store
from tests.connect_double import error
from tests.unit.test_core_run import FAST, SINK, World, cfg

SOURCE = "io.debezium.connector.postgresql.PostgresConnector"
OFFSETS = [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 42}}]
SLOT = [{"partition": {"server": "bob"}, "offset": {"lsn": 24023128, "txId": 501}}]


def moving(tmp_path: Path, config: dict[str, str] | None = None, kind: str = "sink") -> World:
    """`s` runs on a (owned there, its offsets stored); its file is now in b's folder."""
    w = World(tmp_path, "a", "b")
    config = config or cfg()
    w.doubles["a"].add("s", config, type=kind).offsets = list(SLOT if kind == "source" else OFFSETS)
    w.own("a", "s")
    w.git("b", "s", config, kind="source" if kind == "source" else "sink")
    return w


def by_cluster(outs: list[ClusterOutcome]) -> dict[str, ClusterOutcome]:
    return {o.cluster: o for o in outs}


def writes(w: World) -> dict[str, list[tuple[str, str]]]:
    return {n: d.writes() for n, d in w.doubles.items()}


def hows(w: World, cluster: str) -> dict[str, str]:
    return {n: c.how for n, c in ownership_store(w.project).owned("default", cluster).items()}


def test_a_file_moved_to_another_cluster_is_planned_as_one_move(tmp_path: Path) -> None:
    w = moving(tmp_path)
    outs = by_cluster(w.run(RunOptions(dry_run=True, apply=FAST)))
    a, b = outs["a"].plan, outs["b"].plan
    assert a is not None and b is not None
    assert a.steps == ()  # neither a delete of a sink nor anything else: the move is b's
    (step,) = b.steps
    assert (step.action, step.name, step.moved_from, step.reason) == ("move", "s", "a", "a→b, offsets kept")
    assert step.live_state == "RUNNING" and step.risk == "restart" and not b.refusals and not a.refusals
    assert "> move s  (a→b, offsets kept)" in text(list(outs.values()))
    assert "1 to move in" in text(list(outs.values()))
    assert writes(w) == {"a": [], "b": []}


def test_a_move_stops_carries_the_offsets_starts_and_deletes_on_the_old_cluster(tmp_path: Path) -> None:
    w = moving(tmp_path)
    outs = by_cluster(w.run())
    assert outs["b"].results == (
        StepResult("s", "move", True, "moved from a, 1 offset partitions carried over; RUNNING", True),
    )
    assert outs["a"].results == () and outs["a"].error == "" and outs["b"].error == ""
    assert writes(w) == {
        "a": [("PUT", "/connectors/s/stop"), ("DELETE", "/connectors/s")],
        "b": [("POST", "/connectors"), ("PATCH", "/connectors/s/offsets"), ("PUT", "/connectors/s/resume")],
    }
    moved = w.doubles["b"].connectors["s"]
    assert moved.offsets == OFFSETS and moved.state == "RUNNING" and "s" not in w.doubles["a"].connectors
    assert hows(w, "a") == {} and hows(w, "b") == {"s": "moved"}
    (done,) = [e for e in w.audit() if e["outcome"] == "ok"]
    assert (done["cluster"], done["connector"], done["action"], done["moved_from"]) == ("b", "s", "move", "a")
    again = by_cluster(w.run(RunOptions(dry_run=True, apply=FAST)))  # converged: nothing left to do
    assert [s.action for o in again.values() if o.plan for s in o.plan.steps] == ["unchanged"]


def test_a_source_moves_with_its_position_in_the_slot(tmp_path: Path) -> None:
    config = {"connector.class": SOURCE, "slot.name": "bob", "topic.prefix": "bob", "slot.drop.on.stop": "false"}
    w = moving(tmp_path, config, kind="source")
    outs = by_cluster(w.run())
    (step,) = outs["b"].plan.steps if outs["b"].plan else ()
    assert step.reason == "a→b, offsets kept, slot handed over" and not step.effects
    assert outs["b"].results[0].ok and w.doubles["b"].connectors["s"].offsets == SLOT
    assert "s" not in w.doubles["a"].connectors


def test_a_source_that_drops_its_slot_on_stop_is_refused_unless_allowed(tmp_path: Path) -> None:
    config = {"connector.class": SOURCE, "slot.name": "bob", "topic.prefix": "bob", "slot.drop.on.stop": "true"}
    w = moving(tmp_path, config, kind="source")
    outs = by_cluster(w.run())
    assert outs["b"].plan is not None and "slot-dropped" in outs["b"].plan.refused
    assert writes(w) == {"a": [], "b": []}


def refused(w: World) -> str:
    outs = by_cluster(w.run())
    b = outs["b"].plan
    assert b is not None and b.refusals and not outs["b"].applied, b
    assert writes(w) == {"a": [], "b": []} and w.doubles["a"].connectors["s"].state == "RUNNING"
    assert hows(w, "a") == {"s": "test"}
    return b.refused


def test_a_move_between_clusters_on_two_kafkas_fails_closed(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["b"].kafka_cluster_id = "another-kafka"
    why = refused(w)
    assert "move-unsafe" in why and "do not share a Kafka cluster (dbl-kafka-cluster-0, another-kafka)" in why


def test_a_move_onto_another_plugin_version_fails_closed(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["b"].plugins = [p if p[0] != SINK else (SINK, "sink", "3.6.0.Final") for p in w.doubles["b"].plugins]
    assert f"{SINK} is 3.5.0.Final on a, 3.6.0.Final on b" in refused(w)
    assert unsafe(w) == ["move-unsafe"]


def test_a_move_onto_a_worker_without_the_plugin_fails_closed(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["b"].plugins = [p for p in w.doubles["b"].plugins if p[0] != SINK]
    assert "is 3.5.0.Final on a, not installed on b" in refused(w)


def test_each_worker_of_both_clusters_is_read_and_skew_on_either_fails_closed(tmp_path: Path) -> None:
    w = moving(tmp_path)
    b = w.doubles["b"]
    b.task_workers = ["w1:8083", "w9:8083"]
    b.add("other", cfg(topics="o")).task_states = ["RUNNING", "RUNNING"]  # its tasks name both workers
    newer = [{"class": SINK, "type": "sink", "version": "3.6.0.Final"}]
    asked: list[str] = []

    def w9(req: httpx.Request, d: Any) -> httpx.Response | None:
        asked.append(f"{req.url.host} {req.url.path}")
        return (
            httpx.Response(200, json=newer) if req.url.host == "w9" and req.url.path == "/connector-plugins" else None
        )

    b.faults.append(w9)
    assert f"{SINK} is 3.5.0.Final on a, not installed on b" in refused(w)  # held unequally: not told
    assert {"w1 /connector-plugins", "w9 /connector-plugins"} <= set(asked)


def test_versions_that_cannot_be_read_fail_closed(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["b"].faults.append(lambda req, d: error(500, "boom") if req.url.path == "/connector-plugins" else None)
    assert "not installed on b" in refused(w)


def test_allow_destructive_does_not_let_an_unsafe_move_through(tmp_path: Path) -> None:
    from hephaestus.safety.gate import Allow

    w = moving(tmp_path)
    w.doubles["b"].kafka_cluster_id = "another-kafka"
    outs = by_cluster(w.run(RunOptions(apply=FAST, allow=Allow(every=True))))
    assert outs["b"].plan is not None and "move-unsafe" in outs["b"].plan.refused
    assert writes(w) == {"a": [], "b": []}


def test_a_move_onto_a_name_another_team_runs_on_the_new_cluster_is_refused(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["b"].add("s", cfg(topics="theirs"))
    why = refused(w)
    assert "not-owned" in why and "b already runs s and this deployment does not own it" in why
    assert w.doubles["b"].connectors["s"].config["topics"] == "theirs" and hows(w, "b") == {}


def test_a_move_left_after_the_create_is_taken_up_at_the_offsets(tmp_path: Path) -> None:
    """Killed after `create STOPPED` on b: a is STOPPED, b holds it STOPPED without offsets,
    b's record says `moving from a` (written before the first write)."""
    w = moving(tmp_path)
    w.doubles["a"].connectors["s"].state = "STOPPED"
    w.doubles["a"].connectors["s"].task_states = []
    w.doubles["b"].add("s", cfg(), state="STOPPED")
    scope = ownership.scope_of(())
    ownership_store(w.project).claim("default", "b", ownership.claims_of(["s"], scope, "moving from a", "r0"))
    outs = by_cluster(w.run())
    assert outs["b"].results[0].ok, outs["b"].results
    assert writes(w) == {
        "a": [("PUT", "/connectors/s/stop"), ("DELETE", "/connectors/s")],
        "b": [("PATCH", "/connectors/s/offsets"), ("PUT", "/connectors/s/resume")],
    }
    assert w.doubles["b"].connectors["s"].offsets == OFFSETS and hows(w, "b") == {"s": "moved"} and hows(w, "a") == {}


def test_a_move_left_after_the_start_only_deletes_on_the_old_cluster(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["a"].connectors["s"].state = "STOPPED"
    w.doubles["b"].add("s", cfg()).offsets = [{**OFFSETS[0], "offset": {"kafka_offset": 99}}]
    scope = ownership.scope_of(())
    ownership_store(w.project).claim("default", "b", ownership.claims_of(["s"], scope, "moving from a", "r0"))
    outs = by_cluster(w.run())
    assert outs["b"].results[0].detail.startswith("moved from a, already started here by an earlier run")
    # b's own progress is kept: A's older position is never written over it
    assert w.doubles["b"].connectors["s"].offsets[0]["offset"] == {"kafka_offset": 99}
    assert writes(w) == {"a": [("PUT", "/connectors/s/stop"), ("DELETE", "/connectors/s")], "b": []}


def test_a_failure_before_the_offsets_moved_is_rolled_back_and_the_mark_forgotten(tmp_path: Path) -> None:
    w = moving(tmp_path)

    def patch_fails(req: httpx.Request, d: Any) -> httpx.Response | None:
        return error(500, "offsets topic unavailable") if req.method == "PATCH" else None

    w.doubles["b"].faults.append(patch_fails)
    outs = by_cluster(w.run())
    (result,) = outs["b"].results
    assert not result.ok and "failed before the offsets moved" in result.detail
    assert "rolled back: s is RUNNING on a again" in result.detail
    assert "s" not in w.doubles["b"].connectors and w.doubles["a"].connectors["s"].state == "RUNNING"
    assert hows(w, "b") == {} and hows(w, "a") == {"s": "test"}  # the next run moves it again
    w.doubles["b"].faults.clear()
    assert by_cluster(w.run())["b"].results[0].ok and "s" in w.doubles["b"].connectors


def test_a_failed_delete_on_the_old_cluster_is_finished_by_the_next_run(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["a"].faults.append(lambda req, d: error(500, "busy") if req.method == "DELETE" else None)
    outs = by_cluster(w.run())
    assert not outs["b"].results[0].ok and "left STOPPED on a (the next run deletes it)" in outs["b"].results[0].detail
    assert w.doubles["b"].connectors["s"].state == "RUNNING" and w.doubles["a"].connectors["s"].state == "STOPPED"
    w.doubles["a"].faults.clear()
    outs = by_cluster(w.run())
    assert outs["b"].results[0].ok and "s" not in w.doubles["a"].connectors and hows(w, "a") == {}
    assert w.doubles["b"].connectors["s"].offsets == OFFSETS  # not rewound to a's stale copy


def test_a_move_from_a_cluster_not_in_the_run_is_not_a_move(tmp_path: Path) -> None:
    w = moving(tmp_path)
    outs = by_cluster(w.run(RunOptions(dry_run=True, apply=FAST), clusters=["b"]))
    b = outs["b"].plan
    assert b is not None and [s.action for s in b.steps] == ["create"]


def test_a_move_from_a_cluster_whose_plan_is_refused_is_held_and_the_rest_goes(tmp_path: Path) -> None:
    w = moving(tmp_path)
    # a's own plan is refused: its only change drops its sink's deletes (a destructive effect)
    w.git("a", "keep", cfg(topics="k", **{"delete.enabled": "false"}))
    w.doubles["a"].add("keep", cfg(topics="k", **{"delete.enabled": "true", "primary.key.mode": "record_key"}))
    w.own("a", "keep")
    w.git("b", "other", cfg(topics="o"))
    outs = by_cluster(w.run())
    a, b = outs["a"].plan, outs["b"].plan
    assert a is not None and a.refusals and b is not None and not b.refusals
    assert [h.name for h in b.held] == ["s"] and "a's plan is refused" in b.held[0].why
    assert [(r.name, r.ok) for r in outs["b"].results] == [("other", True)]
    assert writes(w)["a"] == [] and w.doubles["a"].connectors["s"].state == "RUNNING"


def test_a_sealed_move_applies_as_planned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hephaestus.reconciler import sealed

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.yaml").write_text("# the project file a plan is sealed with\n")
    w = moving(tmp_path)
    planned = w.run(RunOptions(dry_run=True, apply=FAST))
    plan = sealed.build(w.project, planned, sealed.PlanScope(), list(w.project.clusters.values()))
    (step,) = plan.cluster("b")["steps"]  # type: ignore[index]
    assert (step["action"], step["moved_from"]) == ("move", "a")
    outs = by_cluster(w.run(RunOptions(apply=FAST, sealed=plan)))
    assert [(r.action, r.ok) for r in outs["b"].results] == [("move", True)] and outs["a"].results == ()
    assert "s" not in w.doubles["a"].connectors and w.doubles["b"].connectors["s"].offsets == OFFSETS


def test_a_sealed_move_whose_connector_changed_on_the_old_cluster_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hephaestus.reconciler import sealed

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.yaml").write_text("# the project file a plan is sealed with\n")
    w = moving(tmp_path)
    planned = w.run(RunOptions(dry_run=True, apply=FAST))
    plan = sealed.build(w.project, planned, sealed.PlanScope(), list(w.project.clusters.values()))
    w.doubles["a"].connectors["s"].config["batch.size"] = "7"  # changed by hand on a since the review
    outs = by_cluster(w.run(RunOptions(apply=FAST, sealed=plan)))
    assert outs["a"].plan is not None and "stale plan" in outs["a"].plan.refused
    assert writes(w) == {"a": [], "b": []}


def test_a_copy_a_killed_move_left_is_held_when_only_its_new_cluster_is_reconciled(tmp_path: Path) -> None:
    """b alone would start the copy without the offsets the move writes: a source snapshots again."""
    w = moving(tmp_path)
    w.doubles["a"].connectors["s"].state = "STOPPED"
    w.doubles["b"].add("s", cfg(), state="STOPPED")
    path = w.project.clusters["b"].connectors / "sink" / "s.json"
    path.write_text(json.dumps({"name": "s", "state": "running", "config": cfg()}))  # git asks it to run
    scope = ownership.scope_of(())
    ownership_store(w.project).claim("default", "b", ownership.claims_of(["s"], scope, "moving from a", "r0"))
    (out,) = w.run(clusters=["b"])
    assert out.plan is not None and [(h.name, h.why) for h in out.plan.held] == [
        ("s", "moving from a left part-way; reconcile both clusters in one run to finish it")
    ]
    assert writes(w) == {"a": [], "b": []} and w.doubles["b"].connectors["s"].state == "STOPPED"


def test_a_move_step_carries_git_s_file_class_and_what_changes_on_the_way(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.git("b", "s", cfg(**{"batch.size": "7"}))  # moved and changed in one commit
    b = by_cluster(w.run(RunOptions(dry_run=True, apply=FAST)))["b"].plan
    assert b is not None
    (step,) = b.steps
    assert step.connector_class == SINK and step.origin.endswith("sink/s.json") and step.target_state == "RUNNING"
    assert [(c.key, c.before, c.after) for c in step.changes] == [("batch.size", None, "7")]
    by_cluster(w.run())
    assert w.doubles["b"].connectors["s"].config["batch.size"] == "7"  # B runs git's config


def test_a_stranger_on_the_new_cluster_is_not_adopted_by_the_refused_move(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["b"].add("s", cfg(topics="theirs"))
    b = by_cluster(w.run(RunOptions(dry_run=True, apply=FAST)))["b"].plan
    assert b is not None and b.adopt == ()
    (step,) = b.steps
    assert [(e.code, e.invariant) for e in step.effects if e.invariant] == [("not-owned", True)]


def test_a_kafka_identity_one_cluster_hides_fails_closed(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["b"].faults.append(lambda req, d: error(404, "HTTP 404 Not Found") if req.url.path == "/" else None)
    assert "a and b do not share a Kafka cluster (dbl-kafka-cluster-0, ?)" in refused(w)
    assert unsafe(w) == ["move-unsafe"]


def test_a_kafka_identity_the_old_cluster_hides_fails_closed(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["a"].faults.append(lambda req, d: error(404, "HTTP 404 Not Found") if req.url.path == "/" else None)
    assert "a and b do not share a Kafka cluster (?, dbl-kafka-cluster-0)" in refused(w)


def unsafe(w: World) -> list[str]:
    """The invariant effects of b's move step, as a dry run plans it."""
    b = by_cluster(w.run(RunOptions(dry_run=True, apply=FAST)))["b"].plan
    assert b is not None
    return [e.code for s in b.steps for e in s.effects if e.invariant]


def test_a_plugin_neither_cluster_has_fails_closed(tmp_path: Path) -> None:
    w = moving(tmp_path)
    for d in w.doubles.values():
        d.plugins = [p for p in d.plugins if p[0] != SINK]
    assert f"{SINK} is not installed on a, not installed on b" in refused(w)


def test_a_cluster_not_read_stays_in_the_report_beside_a_move(tmp_path: Path) -> None:
    w = World(tmp_path, "c", "a", "b")  # the unread one first: the others are still paired
    w.doubles["a"].add("s", cfg()).offsets = list(OFFSETS)
    w.own("a", "s")
    w.git("b", "s", cfg())
    w.doubles["c"].faults.append(lambda req, d: error(500, "down"))
    outs = by_cluster(w.run(RunOptions(dry_run=True, apply=FAST)))
    assert sorted(outs) == ["a", "b", "c"] and outs["c"].plan is None and outs["c"].error
    assert [s.action for s in outs["b"].plan.steps] == ["move"] if outs["b"].plan else False


def test_a_newer_version_beside_the_old_one_on_the_new_cluster_is_what_an_unpinned_one_would_run(
    tmp_path: Path,
) -> None:
    w = moving(tmp_path)
    w.doubles["b"].plugins.append((SINK, "sink", "3.6.0.Final"))  # KIP-891: both installed on b
    assert f"{SINK} is 3.5.0.Final on a, 3.6.0.Final on b" in refused(w)


def test_a_connector_pinned_to_a_version_both_clusters_hold_moves(tmp_path: Path) -> None:
    w = moving(tmp_path, cfg(**{"connector.plugin.version": "3.5.0.Final"}))
    w.doubles["b"].plugins.append((SINK, "sink", "3.6.0.Final"))
    outs = by_cluster(w.run())
    assert [(r.action, r.ok) for r in outs["b"].results] == [("move", True)], outs["b"]
    assert w.doubles["b"].running(w.doubles["b"].connectors["s"].config) == "3.5.0.Final"


def test_a_pin_that_is_no_version_fails_closed(tmp_path: Path) -> None:
    w = moving(tmp_path)
    w.doubles["a"].connectors["s"].config["connector.plugin.version"] = "[3.5"  # edited by hand on a
    assert "connector.plugin.version: '[3.5' is not a version nor a range" in refused(w)

"""reconciler.rollout.executor exactly: the stages of a rollout written, watched and paced; a failed
gate's `rollback`, `pause` and `continue`; the rollback's own gate, its steps, what it reports and
what it hands back (gone, restored). Connect is the strict double (tests/connect_double.py) behind
httpx.MockTransport, Kafka the fake behind the edge's seam (tests/unit/kafkafake.py), time a
clock the test moves. Written so that mutants of `execute`, `_Rollout` and the helpers die."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hephaestus import kafka
from hephaestus.classes import POSTGRES_SOURCE
from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.connect.ready import ReadyOptions
from hephaestus.errors import HephaestusError
from hephaestus.fleet.health import HealthProbe
from hephaestus.fleet.model import Live, config_hash
from hephaestus.reconciler.apply import ApplyOptions
from hephaestus.reconciler.journal import StepJournal
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.reconciler.rollout import executor
from hephaestus.reconciler.rollout.rules import Failure, Stage
from hephaestus.settings import RolloutSettings
from hephaestus.state.audit import Journal
from tests.connect_double import ConnectDouble
from tests.unit.conftest import cleared
from tests.unit.kafkafake import Cluster, Msg

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
FAST = ReadyOptions(timeout_s=0.2, stable_s=0, poll_s=0.001)
FAILED = "FAILED (wanted RUNNING)"


def cfg(tasks: str = "1", **extra: str) -> dict[str, str]:
    return {"connector.class": SINK, "topics": "t", "tasks.max": tasks, **extra}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class World:
    """Sinks live at tasks.max 1; a config whose tasks.max is in `bad` makes its tasks FAIL
    once read twice (ready first, then failing the gate)."""

    def __init__(self, broker: Cluster | None = None) -> None:
        self.double = ConnectDouble(self._fault)
        self.bad: set[str] = {"2"}
        self.unassigned: set[str] = {"4"}  # ready, then its tasks UNASSIGNED for good: a soft failure
        self.clock = Clock()
        self.broker = broker
        self.client = ConnectClient(
            "http://connect",
            name="c",
            transport=httpx.MockTransport(self.double),
            retry=RetryPolicy.immediate(1),
            settle_s=0.0,
            poll_s=0.0,
        )
        self.before: dict[str, Live] = {}

    def _fault(self, request: httpx.Request, double: ConnectDouble) -> None:
        if request.method == "PUT" and request.url.path.endswith("/config"):
            name, body = request.url.path.split("/")[2], json.loads(request.content)
        elif request.method == "POST" and request.url.path == "/connectors":
            name, body = json.loads(request.content)["name"], json.loads(request.content)["config"]
        else:
            return
        if body.get("tasks.max") in self.bad:
            double.on_start[name] = ["RUNNING", "FAILED"]
        elif body.get("tasks.max") in self.unassigned:
            double.on_start[name] = ["RUNNING"] + ["UNASSIGNED"] * 99
        else:
            double.on_start.pop(name, None)

    def live(self, name: str, config: dict[str, str], state: str = "RUNNING") -> None:
        self.double.add(name, config, state)
        self.before[name] = Live(name, {**config, "name": name}, "sink", state)

    def writes(self) -> list[tuple[str, str]]:
        return self.double.writes()

    def run(
        self,
        plan: Plan,
        gate: executor.UndoGate | None = None,
        give: Any = None,
        log: Path | None = None,
        **settings: Any,
    ) -> executor.Rolled:
        r = RolloutSettings(**{"canary": 1, "waves": (100,), "analysis_s": 0, "interval_s": 1, **settings})
        bootstrap = "b:9092" if self.broker is not None else None
        watch = executor.Watch(r, HealthProbe(bootstrap), self.clock.sleep, self.clock, give)
        journal = StepJournal(Journal(log, "run", "c"), {n: lv.config for n, lv in self.before.items()})
        return executor.execute(
            self.client,
            plan,
            ApplyOptions(ready=FAST),
            journal,
            cleared(plan),
            watch,
            self.before,
            gate or passing,
        )


def passing(back: Plan) -> tuple[Plan, Any, tuple[str, ...]]:
    return back, cleared(back), ()


def update(name: str, tasks: str = "2", **extra: Any) -> Step:
    return Step("update", name, config=cfg(tasks), connector_class=SINK, **extra)


def plan(*steps: Step) -> Plan:
    return Plan("c", steps)


@pytest.fixture
def world() -> World:
    return World()


BAD = "RUNNING, tasks ['FAILED']"
WAVE_FAILED = f"wave 1: failed its gate: s1: {BAD}"


def ok(name: str, action: str = "update", detail: str = "RUNNING") -> StepResult:
    return StepResult(name, action, True, detail, True)


def failed(name: str, detail: str, action: str = "update", wrote: bool = True) -> StepResult:
    return StepResult(name, action, False, detail, wrote)


def fleet(world: World, *names: str) -> None:
    for n in names:
        world.live(n, cfg())


# --- stages that pass ------------------------------------------------------------------------


def test_stages_that_pass_are_reported_each_with_its_count(world: World) -> None:
    fleet(world, "s0", "s1", "s2")
    got = world.run(plan(update("s0", "3"), update("s1", "3"), update("s2", "3")))
    assert got == executor.Rolled((ok("s0"), ok("s1"), ok("s2")), (), ("canary: 1 passed", "wave 1: 2 passed"))
    assert world.writes() == [("PUT", f"/connectors/s{i}/config") for i in range(3)]
    assert world.clock.slept == []  # no window: one sample, no wait


# --- a failed gate: rollback (the default), pause, continue ----------------------------------


def test_a_failed_wave_rolls_back_every_connector_the_run_changed(world: World) -> None:
    fleet(world, "s0", "s1", "s2")
    got = world.run(plan(update("s0", "3"), update("s1"), update("s2", "3")))
    reason = f"s1: {BAD}"
    assert got.results == (
        failed("s0", f"rolled back ({reason})"),  # it passed its stage: rolled back for the wave's failure
        failed("s1", f"failed the rollout gate: {BAD}; rolled back"),
        failed("s2", f"rolled back ({reason})"),
    )
    assert got.rollback == (ok("s0"), ok("s1"), ok("s2"))
    assert got.report == ("canary: 1 passed", WAVE_FAILED, "rolled back 3 of 3 connector(s) changed in this run")
    assert (got.undone, got.restored) == (frozenset(), ())
    assert [world.double.connectors[n].config["tasks.max"] for n in ("s0", "s1", "s2")] == ["1", "1", "1"]


def test_pause_holds_the_rest_and_keeps_what_was_written(world: World) -> None:
    fleet(world, "s0", "s1", "s2")
    got = world.run(plan(update("s0"), update("s1", "3"), update("s2", "3")), on_failure="pause")
    held = f"not applied: the rollout stopped at canary (s0: {BAD})"
    assert got == executor.Rolled(
        (
            failed("s0", f"failed the rollout gate: {BAD}"),
            failed("s1", held, wrote=False),
            failed("s2", held, wrote=False),
        ),
        (),
        (f"canary: failed its gate: s0: {BAD}", "paused: what was written stays; rerun to go on, or revert in git"),
    )
    assert world.writes() == [("PUT", "/connectors/s0/config")]


def test_continue_reports_the_failing_and_goes_on(world: World) -> None:
    fleet(world, "s0", "s1", "s2")
    got = world.run(plan(update("s0"), update("s1", "3"), update("s2")), on_failure="continue")
    assert got == executor.Rolled(
        (failed("s0", f"failed the rollout gate: {BAD}"), ok("s1"), failed("s2", f"failed the rollout gate: {BAD}")),
        (),
        (f"canary: failed its gate: s0: {BAD}", f"wave 1: failed its gate: s2: {BAD}"),
    )
    assert len(world.writes()) == 3


def test_writes_connect_refused_fail_the_stage_not_ready_and_are_not_put_back(world: World) -> None:
    fleet(world, "s0", "s1", "s2")

    def refuse(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        if request.method == "PUT" and request.url.path in ("/connectors/s1/config", "/connectors/s2/config"):
            return httpx.Response(500, json={"error_code": 500, "message": "nope"})
        return None

    world.double.faults.append(refuse)
    got = world.run(plan(update("s0", "3"), update("s1", "3"), update("s2", "3")))
    why = "Kafka Connect 'c': PUT /connectors/{}/config failed (HTTP 500): nope — see the log of the Connect worker at http://connect"
    reason = f"s1: not ready: {why.format('s1')} (and 1 more)"
    assert got.results == (
        failed("s0", f"rolled back ({reason})"),
        failed("s1", why.format("s1"), wrote=False),  # never written: not failed by the gate, not rolled back
        failed("s2", why.format("s2"), wrote=False),
    )
    assert got.rollback == (ok("s0"),)
    assert got.report == (
        "canary: 1 passed",
        f"wave 1: failed its gate: {reason}",
        "rolled back 1 of 1 connector(s) changed in this run",
    )


# --- the rollback's gate, steps and report ---------------------------------------------------


def test_a_rollback_its_gate_cannot_judge_is_not_taken(world: World) -> None:
    fleet(world, "s0", "s1")

    def boom(back: Plan) -> tuple[Plan, Any, tuple[str, ...]]:
        raise HephaestusError("rollback: cannot read cluster c")

    got = world.run(plan(update("s0", "3"), update("s1")), gate=boom)
    assert got == executor.Rolled(
        (ok("s0"), failed("s1", f"failed the rollout gate: {BAD}")),
        (),
        ("canary: 1 passed", WAVE_FAILED, "rollback not taken: rollback: cannot read cluster c"),
    )
    assert len(world.writes()) == 2


def test_what_the_rollbacks_gate_refuses_is_named_and_the_rest_put_back(world: World) -> None:
    fleet(world, "s0", "s1")
    judged: list[tuple[str, tuple[str, ...]]] = []

    def refuse(back: Plan) -> tuple[Plan, Any, tuple[str, ...]]:
        judged.append((back.cluster, tuple(f"{s.action} {s.name}" for s in back.steps)))
        kept = Plan("c", tuple(s for s in back.steps if s.name != "s0"))
        return kept, cleared(kept), ("destructive update of s0 (x)", "second")

    got = world.run(plan(update("s0", "3"), update("s1")), gate=refuse)
    assert judged == [("c", ("update s0", "update s1"))]
    assert got.results == (ok("s0"), failed("s1", f"failed the rollout gate: {BAD}; rolled back"))
    assert got.rollback == (ok("s1"),)
    assert got.report == (
        "canary: 1 passed",
        WAVE_FAILED,
        "rollback not taken, the gate refused it: destructive update of s0 (x)",
        "rollback not taken, the gate refused it: second",
        "rolled back 1 of 2 connector(s) changed in this run",
    )
    assert world.double.connectors["s0"].config["tasks.max"] == "3"


def test_a_rollback_step_whose_connector_then_fails_the_gate_is_failed(world: World) -> None:
    fleet(world, "s0", "s1")
    world.bad = {"2", "1"}  # the old config fails too, once put back
    got = world.run(plan(update("s0", "3"), update("s1")))
    then = f"RUNNING; then failed the gate: {BAD}"
    assert got.rollback == (failed("s0", then), failed("s1", then))
    assert got.results == (ok("s0"), failed("s1", f"failed the rollout gate: {BAD}"))  # nothing held: not rolled back
    assert got.report == ("canary: 1 passed", WAVE_FAILED, "rolled back 0 of 2 connector(s) changed in this run")


def test_the_rollback_goes_in_one_batch_unpaced_unreported_and_past_a_failure(world: World) -> None:
    fleet(world, "s0", "s1")

    def no_delete(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        return httpx.Response(500, json={"error_code": 500, "message": "no"}) if request.method == "DELETE" else None

    world.double.faults.append(no_delete)
    slept: list[float] = []
    shown: list[tuple[str, int, int]] = []
    options = ApplyOptions(
        ready=FAST,
        batch_size=1,
        max_failures=1,
        batch_interval_s=7.0,
        sleep=slept.append,
        progress=lambda r, i, n: shown.append((r.name, i, n)),
    )
    p = plan(Step("create", "n", config=cfg("3"), connector_class=SINK), update("s0", "3"), update("s1"))
    watch = executor.Watch(
        RolloutSettings(canary=1, waves=(100,), analysis_s=0), HealthProbe(), world.clock.sleep, world.clock
    )
    journal = StepJournal(Journal(None, "run", "c"), {})
    got = executor.execute(world.client, p, options, journal, cleared(p), watch, world.before, passing)
    refused = "Kafka Connect 'c': DELETE /connectors/n failed (HTTP 500): no — see the log of the Connect worker at http://connect"
    # the delete (its own wave, first) failed: the updates after it are put back all the same
    assert got.rollback == (failed("n", refused, "delete", wrote=False), ok("s0"), ok("s1"))
    assert got.report[-1] == "rolled back 2 of 3 connector(s) changed in this run"
    assert slept == [7.0, 7.0]  # the run's own batches only
    assert shown == [("n", 1, 3), ("s0", 2, 3), ("s1", 3, 3)]  # the run's own steps only
    assert got.undone == frozenset()  # n is still there


def test_sinks_created_are_deleted_sources_kept_and_masked_configs_left(world: World) -> None:
    world.live("s0", cfg(**{"connection.password": "********", "api.key": "********"}))
    world.live("s1", cfg())
    src = Step(
        "create", "src", config={"connector.class": POSTGRES_SOURCE, "tasks.max": "1"}, connector_class=POSTGRES_SOURCE
    )
    # a value that reads as a mask in what it sent is no reason to leave a created sink behind
    created = Step("create", "n", config=cfg("3", **{"connection.password": "********"}), connector_class=SINK)
    got = world.run(plan(src, created, update("s0", "3"), update("s1")), canary=3)
    reason = f"s1: {BAD}"
    assert got.results == (
        ok("src", "create"),
        failed("n", f"rolled back ({reason})", "create"),
        ok("s0"),
        failed("s1", f"failed the rollout gate: {BAD}; rolled back"),
    )
    assert got.rollback == (ok("n", "delete", "deleted"), ok("s1"))
    assert got.report == (
        "canary: 3 passed",
        WAVE_FAILED,
        "left: src (a source this run created is never deleted)",
        "not rolled back: s0 (Connect answered api.key, connection.password masked)",
        "rolled back 2 of 3 connector(s) changed in this run",
    )
    assert (got.undone, got.restored) == (frozenset({"n"}), ())
    assert "n" not in world.double.connectors and "src" in world.double.connectors


def test_a_rename_put_back_reverts_it_under_its_old_name(world: World) -> None:
    fleet(world, "old", "s1", "gone")
    renamed = Step("rename", "new", config=cfg("3"), connector_class=SINK, renamed_from="old")
    dropped = Step("delete", "gone", config=cfg(), connector_class=SINK)
    got = world.run(plan(renamed, update("s1"), dropped))
    assert got.results == (
        failed("new", f"rolled back (s1: {BAD})", "rename"),
        failed("s1", f"failed the rollout gate: {BAD}; rolled back"),
        failed("gone", f"not applied: the rollout stopped at wave 1 (s1: {BAD})", "delete", wrote=False),
    )
    assert got.rollback == (
        ok("old", "rename", "renamed from new, 0 offset partitions carried over; RUNNING"),
        ok("s1"),
    )
    assert (got.undone, got.restored) == (frozenset({"new"}), ("old",))
    assert sorted(world.double.connectors) == ["gone", "old", "s1"]


def test_a_delete_written_before_its_stage_failed_is_created_again(world: World) -> None:
    fleet(world, "a", "b")

    def no_delete_b(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        if request.method == "DELETE" and request.url.path == "/connectors/b":
            return httpx.Response(500, json={"error_code": 500, "message": "no"})
        return None

    world.double.faults.append(no_delete_b)
    got = world.run(
        plan(
            Step("delete", "a", config=cfg(), connector_class=SINK),
            Step("delete", "b", config=cfg(), connector_class=SINK),
        )
    )
    why = "Kafka Connect 'c': DELETE /connectors/b failed (HTTP 500): no — see the log of the Connect worker at http://connect"
    assert got.report[0] == f"deletes: failed its gate: b: not ready: {why}"
    assert got.rollback == (ok("a", "create"),)
    assert got.results == (
        failed("a", f"rolled back (b: not ready: {why})", "delete", wrote=True),
        failed("b", why, "delete", False),
    )
    assert (got.undone, got.restored) == (frozenset(), ("a",))
    assert world.double.connectors["a"].config["tasks.max"] == "1"


# --- the analysis window ---------------------------------------------------------------------


def test_a_soft_failure_fails_the_stage_when_still_there_at_the_windows_end(world: World) -> None:
    fleet(world, "s0", "s1")
    got = world.run(plan(update("s0", "4"), update("s1", "3")), analysis_s=2.5, on_failure="pause")
    soft = "RUNNING, tasks ['UNASSIGNED']"
    assert got.report == (
        f"canary: failed its gate: s0: {soft}",
        "paused: what was written stays; rerun to go on, or revert in git",
    )
    assert got.results[0] == failed("s0", f"failed the rollout gate: {soft}")
    assert world.clock.slept == [1, 1, 0.5]  # every interval, the last wait cut to the window's end


def test_without_a_window_a_soft_failure_passes(world: World) -> None:
    fleet(world, "s0")
    got = world.run(plan(update("s0", "4")))
    assert got == executor.Rolled((ok("s0"),), (), ("canary: 1 passed",))
    assert world.clock.slept == []


def test_a_hard_failure_fails_the_stage_at_once(world: World) -> None:
    fleet(world, "s0")
    got = world.run(plan(update("s0")), analysis_s=30, on_failure="pause")
    assert got.report[0] == f"canary: failed its gate: s0: {BAD}"
    assert world.clock.slept == []


def test_a_window_with_nothing_wrong_is_watched_to_its_end(world: World) -> None:
    fleet(world, "s0")
    got = world.run(plan(update("s0", "3")), analysis_s=2, interval_s=5)
    assert got.report == ("canary: 1 passed",)
    assert world.clock.slept == [2]


def test_a_deleted_connector_is_not_watched(world: World) -> None:
    fleet(world, "s0", "d")
    got = world.run(plan(update("s0", "3"), Step("delete", "d", config=cfg(), connector_class=SINK)), analysis_s=1)
    assert got == executor.Rolled(
        (ok("s0"), ok("d", "delete", "deleted")), (), ("canary: 1 passed", "deletes: 1 passed")
    )
    # a deleted connector is not listed: watched, it would fail its window ("not listed by Connect")


# --- with Kafka: DLQ growth from before the write, pacing, what the rollback gives back ------

DLQ = "errors.deadletterqueue.topic.name"


@pytest.fixture
def broker() -> Iterator[Cluster]:
    b = Cluster()
    b.add("t", 0, 10)
    with kafka.seam(admin=b.admin, consumer=b.consumer, producer=b.producer):
        yield b


def lagging(broker: Cluster, *names: str, at: int = 2) -> None:
    for n in names:
        broker.groups[f"connect-{n}"] = {("t", 0): at}


def test_what_a_dlq_held_before_the_write_is_not_growth(broker: Cluster) -> None:
    world = World(broker)
    world.live("s0", cfg(**{DLQ: "dlq.s0"}))
    broker.add("dlq.s0", 0, 5)
    lagging(broker, "s0", at=10)
    got = world.run(plan(Step("update", "s0", config=cfg("3", **{DLQ: "dlq.s0"}), connector_class=SINK)))
    assert got == executor.Rolled((ok("s0"),), (), ("canary: 1 passed",))


PACING = "pacing: the lag of the sinks written so far is 8, over the budget 5"


def test_a_wave_waits_for_the_lag_and_fails_its_gate_when_it_stays_over_the_budget(broker: Cluster) -> None:
    world = World(broker)
    fleet(world, "s0", "s1")
    lagging(broker, "s0", "s1")
    src = Step(
        "create", "src", config={"connector.class": POSTGRES_SOURCE, "tasks.max": "1"}, connector_class=POSTGRES_SOURCE
    )
    got = world.run(plan(src, update("s0", "3"), update("s1", "3")), canary=2, lag_budget=5, pace_timeout_s=3)
    assert got.report == (
        "canary: 2 passed",
        f"wave 1: failed its gate: {PACING}",
        "left: src (a source this run created is never deleted)",
        "rolled back 1 of 1 connector(s) changed in this run",
    )
    assert got.results == (
        ok("src", "create"),
        failed("s0", f"rolled back ({PACING})"),
        failed("s1", f"not applied: the rollout stopped at wave 1 ({PACING})", wrote=False),
    )
    assert world.clock.slept == [1, 1, 1]


def test_a_wave_goes_once_the_lag_is_under_the_budget(broker: Cluster) -> None:
    world = World(broker)
    fleet(world, "s0", "s1")
    lagging(broker, "s0", "s1", at=4)  # 6 over 5: wait

    def sleep(s: float) -> None:
        world.clock.slept.append(s)
        world.clock.now += s
        lagging(broker, "s0", at=5)  # 5: not over it

    world.clock.sleep = sleep  # type: ignore[method-assign]
    got = world.run(plan(update("s0", "3"), update("s1", "3")), lag_budget=5, interval_s=2)
    assert got.report == ("canary: 1 passed", "wave 1: 1 passed")
    assert world.clock.slept == [2]


def test_no_budget_no_pacing(broker: Cluster) -> None:
    world = World(broker)
    fleet(world, "s0", "s1")
    lagging(broker, "s0", "s1", at=0)
    got = world.run(plan(update("s0", "3"), update("s1", "3")))
    assert got.report == ("canary: 1 passed", "wave 1: 1 passed") and world.clock.slept == []


def test_what_a_sink_put_back_parked_while_the_rollout_ran_is_given_back(broker: Cluster) -> None:
    world = World(broker)
    for n in ("s0", "s1"):
        world.live(n, cfg(**{DLQ: f"dlq.{n}"}))
        broker.add(f"dlq.{n}", 0, 5)
    lagging(broker, "s0", "s1", at=10)

    def parks(request: httpx.Request, double: ConnectDouble) -> None:
        if request.method == "PUT" and request.url.path == "/connectors/s1/config" and b'"2"' in request.content:
            broker.logs[("dlq.s1", 0)].extend(Msg("dlq.s1", 0, o) for o in range(5, 8))
        if request.method == "PUT" and request.url.path == "/connectors/s0/config" and b'"3"' in request.content:
            broker.logs[("dlq.s0", 0)].extend(Msg("dlq.s0", 0, o) for o in range(5, 7))

    world.double.faults.append(parks)
    sent: list[executor.Parked] = []
    p = plan(
        *(
            Step("update", n, config=cfg(t, **{DLQ: f"dlq.{n}"}), connector_class=SINK)
            for n, t in (("s0", "3"), ("s1", "2"))
        )
    )
    got = world.run(p, give=lambda parked, journal: sent.append(parked) or 3, max_dlq_growth=2)
    assert got.rollback == (
        ok("s0"),
        ok("s1"),
        StepResult(
            "s0",
            "dlq-replay",
            True,
            "replayed 3 record(s): 2 record(s) in dlq.s0[0], offsets 5-6, parked while the rollout ran",
        ),
        StepResult(
            "s1",
            "dlq-replay",
            True,
            "replayed 3 record(s): 3 record(s) in dlq.s1[0], offsets 5-7, parked while the rollout ran",
        ),
    )
    assert [(x.sink, x.topic, x.partition, x.first, x.end, x.bootstrap) for x in sent] == [
        ("s0", "dlq.s0", 0, 5, 7, "b:9092"),
        ("s1", "dlq.s1", 0, 5, 8, "b:9092"),
    ]
    assert {c.get("bootstrap.servers") for c in broker.configs} == {"b:9092"}


# --- the pieces ------------------------------------------------------------------------------


def test_the_reason_is_the_first_failure_and_how_many_more() -> None:
    stage = Stage("wave 1", ())
    one = [Failure("a", "x", True)]
    assert executor._reason(stage, one) == "a: x"
    assert executor._reason(stage, [*one, Failure("b", "y", False)]) == "a: x (and 1 more)"
    assert executor._reason(stage, [*one, Failure("b", "y", False), Failure("c", "z", True)]) == "a: x (and 2 more)"
    assert executor._reason(stage, [Failure("", "pacing: p", True)]) == "pacing: p"


def test_why_a_connector_failed_the_rollbacks_gate() -> None:
    found = [Failure("a", "x", True), Failure("b", "y", True)]
    assert (executor._why(found, "b"), executor._why(found, "c"), executor._why([], "a")) == ("y", "", "")


def test_a_rollback_step_is_failed_only_when_its_connector_then_failed() -> None:
    r = ok("s0")
    assert executor._gated(r, "") is r
    assert executor._gated(r, "w") == failed("s0", "RUNNING; then failed the gate: w")


def test_a_result_rolled_back_says_why_when_it_had_held() -> None:
    assert executor._undone(ok("s0"), "why") == failed("s0", "rolled back (why)")
    assert executor._undone(failed("s0", "gate"), "why") == failed("s0", "gate; rolled back")
    assert executor._undone(ok("s0"), "why").ok is False


def test_a_rollback_with_nothing_to_watch_waits_no_window(world: World) -> None:
    got = world.run(plan(Step("create", "n", config=cfg("2"), connector_class=SINK)), analysis_s=5)
    assert got.rollback == (ok("n", "delete", "deleted"),)
    assert got.undone == frozenset({"n"})
    assert world.clock.slept == []  # the canary failed at once; the delete is not watched


def test_a_connector_put_back_from_a_state_no_step_leaves_is_watched_as_a_create_starts(world: World) -> None:
    fleet(world, "s0", "s1")
    world.before["s0"] = Live("s0", {**cfg(), "name": "s0"}, "sink", "UNASSIGNED")  # read mid-rebalance
    got = world.run(plan(update("s0", "3"), update("s1")))
    assert got.rollback == (ok("s0"), ok("s1"))


def test_a_rename_the_rollback_could_not_put_back_stays_reported_as_written(world: World) -> None:
    fleet(world, "old", "s1")

    def no_old(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        if request.method == "POST" and json.loads(request.content).get("name") == "old":
            return httpx.Response(500, json={"error_code": 500, "message": "no"})
        return None

    world.double.faults.append(no_old)
    renamed = Step("rename", "new", config=cfg("3"), connector_class=SINK, renamed_from="old")
    got = world.run(plan(renamed, update("s1")))
    assert [r.ok for r in got.rollback] == [False, True]
    assert got.results == (
        ok("new", "rename", "renamed from old, 0 offset partitions carried over; RUNNING"),
        failed("s1", f"failed the rollout gate: {BAD}; rolled back"),
    )
    assert (got.undone, got.restored) == (frozenset(), ())


def journalled(log: Path) -> list[tuple[str, str, str, str, list[str]]]:
    """The rollback's entries in the audit journal: (connector, action, outcome, reason, keys)."""
    got = [json.loads(line) for line in log.read_text().splitlines()]
    return [(e["connector"], e["action"], e["outcome"], e["reason"], e["changed_keys"]) for e in got if e["reason"]]


def test_each_rollback_step_is_journalled_with_why_it_was_taken(world: World, tmp_path: Path) -> None:
    fleet(world, "old", "s1")
    log = tmp_path / "audit.jsonl"
    renamed = Step("rename", "new", config=cfg("3"), connector_class=SINK, renamed_from="old")
    created = Step("create", "n", config=cfg("3"), connector_class=SINK)
    world.run(plan(renamed, created, update("s1")), log=log, canary=2)
    keys = ["tasks.max"]  # the live config names itself, git's does not: `name` is no change
    got = journalled(log)
    assert got[0] == ("n", "delete", "intent", "rollback: created by this run", [])  # deletes go first
    # The rest of a wave is written concurrently: which of its intents is journalled first varies.
    assert sorted(got[1:]) == [
        ("n", "delete", "ok", "rollback: created by this run", []),
        ("old", "rename", "intent", "rollback: back from new", keys),
        ("old", "rename", "ok", "rollback: back from new", keys),
        ("s1", "update", "intent", "rollback", keys),
        ("s1", "update", "ok", "rollback", keys),
    ]
    assert got.index(("old", "rename", "intent", "rollback: back from new", keys)) < got.index(
        ("old", "rename", "ok", "rollback: back from new", keys)
    )


def test_a_rollback_is_journalled_with_the_config_it_takes_away_as_its_before(tmp_path: Path) -> None:
    log, live = tmp_path / "audit.jsonl", {**cfg(), "name": "s1"}
    journal = StepJournal(Journal(log, "run", "c"), {"s1": live})
    forward, back = update("s1"), Step("update", "s1", config=live, connector_class=SINK, reason="rollback")
    for step, result in ((forward, failed("s1", BAD)), (back, ok("s1"))):
        journal.intent(step)
        journal.outcome(step, result)
    journal.outcome(Step("state", "s1", config={}, connector_class=SINK), ok("s1", "state"))  # no config write
    hashes = [(e["config_hash_before"], e["config_hash_after"]) for e in map(json.loads, log.read_text().splitlines())]
    old, new = config_hash(live), config_hash(cfg("2"))
    assert hashes[:4] == [(old, new), (old, new), (new, old), (new, old)]
    assert hashes[4][0] == old  # a state change writes no config: "before" stays what the rollback put back


def test_a_delete_put_back_is_journalled_as_such(world: World, tmp_path: Path) -> None:
    fleet(world, "a", "b")

    def no_delete_b(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        if request.method == "DELETE" and request.url.path == "/connectors/b":
            return httpx.Response(500, json={"error_code": 500, "message": "no"})
        return None

    world.double.faults.append(no_delete_b)
    log = tmp_path / "audit.jsonl"
    world.run(plan(*(Step("delete", n, config=cfg(), connector_class=SINK) for n in "ab")), log=log)
    assert journalled(log) == [
        ("a", "create", "intent", "rollback: deleted by this run", []),
        ("a", "create", "ok", "rollback: deleted by this run", []),
    ]


def test_a_stage_of_deletes_takes_no_sample_before_its_writes(world: World) -> None:
    fleet(world, "d")
    got = world.run(plan(Step("delete", "d", config=cfg(), connector_class=SINK)))
    assert got == executor.Rolled((ok("d", "delete", "deleted"),), (), ("deletes: 1 passed",))
    assert world.double.log == [("DELETE", "/connectors/d"), ("GET", "/connectors")]  # the window's one sample

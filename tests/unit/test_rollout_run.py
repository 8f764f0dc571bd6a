"""A progressive rollout through the CLI, Connect on the strict loopback double and Kafka through
the edge's seam (tests/unit/kafkafake.py): a good change passes stage by stage; a change whose
every task runs but whose records go to the DLQ (or whose sink stops reading its topic) is
caught by the canary and put back, the rest of the fleet never written (the double's log);
`pause` and `continue`; a created sink deleted again; a destructive rollback not taken."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hephaestus import kafka
from hephaestus.state.ownership import claims_of
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project
from tests.unit.kafkafake import Cluster, Msg
from tests.unit.test_gate_paths import SNK, SRC, World

SECRET = "hunter2-canary-rollout"  # a literal password in a live config: restored, never shown
# Git holds no plaintext credential (every command refuses one): a placeholder Connect resolves.
PASSWORD = "${file:/opt/connect/secrets.properties:sink_password}"
NAMES = [f"s{i}" for i in range(4)]


def sink(name: str, tasks: str = "1", password: str = PASSWORD) -> dict[str, str]:
    return {
        **SNK,
        "topics": "t",
        "tasks.max": tasks,
        "connection.password": password,
        "errors.deadletterqueue.topic.name": f"dlq.{name}",
        "errors.tolerance": "all",
        "collection.name.format": f"{name}_users",  # each its own table: no second writer
    }


class Rollout(World):
    def __init__(self, project: Project, double: ConnectDouble, url: str, broker: Cluster) -> None:
        super().__init__(project, double, url)
        self.broker = broker
        self.settings(canary=1, waves=[50, 100], analysis_s=0.2, interval_s=0.1)

    def settings(self, **rollout: Any) -> None:
        self.file.write_text(
            f"clusters:\n  c:\n    url: {self.url}\n    connectors: connectors/c\n    timeout_s: 2\n"
            "    kafka_bootstrap: 'b:9092'\n"
            f"audit_log: audit.jsonl\npolicy: {{stability_window_s: 0}}\nrollout: {json.dumps(rollout)}\n"
        )

    def fleet(self, tasks: str = "2") -> None:
        """Four owned sinks at tasks.max 1, caught up; git wants `tasks`."""
        for n in NAMES:
            self.live(n, sink(n))
            self.git(n, sink(n, tasks))
            self.broker.groups[f"connect-{n}"] = {("t", 0): 10}

    def on_put(self, name: str, then: Any) -> None:
        """`then()` once Connect took a config for `name` (the new config's effect on Kafka)."""

        def fault(request: httpx.Request, double: ConnectDouble) -> None:
            if request.method == "PUT" and request.url.path == f"/connectors/{name}/config":
                then()

        self.double.faults.append(fault)

    def run(self, *args: str) -> tuple[int, dict[str, Any], str]:
        got = self.reconcile("--auto-approve", "-o", "json", *args)
        report = json.loads(got.out[got.out.index("{") : got.out.rindex("}") + 1])
        (cluster,) = report["clusters"]
        return got.code, cluster, got.out + got.err

    def puts(self) -> list[str]:
        return [p for m, p in self.double.log if m in ("PUT", "POST", "DELETE") and "validate" not in p]


@pytest.fixture
def world(project: Project, served: tuple[ConnectDouble, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Rollout]:
    double, url = served
    double.connectors.clear()
    double.on_start.clear()
    double.faults.clear()
    monkeypatch.delenv("HEPH_C_URL", raising=False)
    (project.root / "connectors/c/sink").mkdir(parents=True)
    monkeypatch.chdir(project.root)
    broker = Cluster()
    broker.add("t", 0, 10)
    with kafka.seam(admin=broker.admin, consumer=broker.consumer):
        yield Rollout(project, double, url, broker)


def dlq_fills(w: Rollout, name: str) -> None:
    w.broker.logs.setdefault((f"dlq.{name}", 0), []).extend(Msg(f"dlq.{name}", 0, i) for i in range(5))


def test_a_good_change_passes_every_gate_stage_by_stage(world: Rollout) -> None:
    world.fleet()
    code, cluster, _ = world.run()
    assert code == 0
    assert cluster["rollout"]["report"] == ["canary: 1 passed", "wave 1: 2 passed", "wave 2: 1 passed"]
    assert [s["connectors"] for s in cluster["rollout"]["stages"]] == [["s0"], ["s1", "s2"], ["s3"]]
    puts = world.puts()  # a wave's writes go concurrently: in order stage by stage only
    assert (puts[0], puts[3]) == ("/connectors/s0/config", "/connectors/s3/config")
    assert sorted(puts[1:3]) == ["/connectors/s1/config", "/connectors/s2/config"]
    assert all(world.double.connectors[n].config["tasks.max"] == "2" for n in NAMES)


def test_a_canary_whose_records_go_to_the_dlq_is_rolled_back_and_nothing_else_is_written(world: Rollout) -> None:
    world.fleet()
    world.live("s0", sink("s0", password=SECRET))  # made by hand: git's placeholder replaces it
    world.on_put(
        "s0", lambda: dlq_fills(world, "s0") if world.double.connectors["s0"].config["tasks.max"] == "1" else None
    )
    code, cluster, out = world.run()
    assert code == 1
    results = {r["name"]: r for r in cluster["results"]}
    assert results["s0"]["detail"] == "failed the rollout gate: its DLQ grew by 5 records (allowed 0); rolled back"
    assert all(
        results[n]["detail"].startswith("not applied: the rollout stopped at canary (s0: its DLQ") for n in NAMES[1:]
    )
    rollback = [(r["action"], r["name"], r["ok"]) for r in cluster["rollout"]["rollback"]]
    # What it parked cannot go back (these records lack Connect's origin headers): named, failed.
    assert rollback == [("update", "s0", True), ("dlq-replay", "s0", False)]
    assert "no __connect.errors.topic/partition header" in cluster["rollout"]["rollback"][1]["detail"]
    assert cluster["rollout"]["report"][-1] == "rolled back 1 of 1 connector(s) changed in this run"
    assert world.puts() == ["/connectors/s0/config", "/connectors/s0/config"]  # the change, then back
    back = {k: v for k, v in world.double.connectors["s0"].config.items() if k != "name"}
    assert back == sink("s0", password=SECRET)  # read back: the config before the run
    audit = (world.project.root / "audit.jsonl").read_text()
    assert SECRET not in out and SECRET not in audit
    # The rollback's intent and outcome, between the change's intent and its outcome (each
    # run's outcomes are journalled once its writes settled).
    events = [json.loads(line)["outcome"] for line in audit.splitlines() if '"s0"' in line]
    assert events == ["intent", "intent", "ok", "failed"]


ROTATED = "${file:/opt/connect/secrets.properties:sink_password_2}"


def test_a_config_connect_answered_masked_is_never_written_back(world: Rollout) -> None:
    world.fleet()
    for n in NAMES:
        world.git(n, sink(n))  # in sync: an apply records the secrets' fingerprints, writes nothing
    assert world.run()[0] == 0 and world.puts() == []
    world.double.plugin_keys = {"connection.password": "PASSWORD"}
    try:
        world.double.connectors["s0"].config["connection.password"] = "********"  # a platform's mask
        world.git("s0", sink("s0", "2", password=ROTATED))  # a real change
        world.on_put("s0", lambda: dlq_fills(world, "s0"))
        code, cluster, _ = world.run()
    finally:
        world.double.plugin_keys = {}
    assert code == 1
    assert cluster["rollout"]["report"][1:] == [
        "not rolled back: s0 (Connect answered connection.password masked)",
        "rolled back 0 of 1 connector(s) changed in this run",
    ]
    assert world.puts() == ["/connectors/s0/config"]  # the change only: no PUT of the mask
    assert world.double.connectors["s0"].config["connection.password"] == ROTATED


def test_a_sink_that_stops_reading_its_topic_is_caught_by_its_lag_age(world: Rollout) -> None:
    """A `topics` typo, let through with its allowance: every task RUNNING, nothing read. The
    lag is counted on the topic its group committed on, not only on the (empty) one it now
    names. Going back stops reading the new topic, destructive in its own right: not taken."""
    world.fleet(tasks="1")
    world.git("s0", {**sink("s0"), "topics": "t_typo"})
    world.broker.add("t_typo", 0, 0)  # it exists (empty): the plan's topic check lets the typo through
    old = int(time.time() * 1000) - 300_000
    world.on_put("s0", lambda: world.broker.logs[("t", 0)].extend(Msg("t", 0, 10 + i, ts=old) for i in range(3)))
    code, cluster, _ = world.run("--allow-destructive=topics-stopped")
    assert code == 1
    (s0,) = [r for r in cluster["results"] if r["name"] == "s0"]
    assert re.search(r"its oldest waiting record is 30\ds old \(allowed 120s\)", s0["detail"]), s0["detail"]
    (line,) = [x for x in cluster["rollout"]["report"] if x.startswith("rollback not taken")]
    assert "topics-stopped" in line and world.puts() == ["/connectors/s0/config"]


def test_pause_leaves_the_canary_as_written_and_the_rest_untouched(world: Rollout) -> None:
    world.fleet()
    world.on_put("s0", lambda: dlq_fills(world, "s0"))
    code, cluster, _ = world.run("--on-failure", "pause")
    assert code == 1 and cluster["rollout"]["rollback"] == []
    assert world.puts() == ["/connectors/s0/config"]
    assert world.double.connectors["s0"].config["tasks.max"] == "2"
    assert cluster["rollout"]["report"][-1].startswith("paused")


def test_continue_reports_the_failing_canary_and_goes_on(world: Rollout) -> None:
    world.fleet()
    world.on_put("s0", lambda: dlq_fills(world, "s0"))
    code, cluster, _ = world.run("--on-failure", "continue")
    assert code == 1
    assert sorted(world.puts()) == [f"/connectors/{n}/config" for n in NAMES]
    assert [r["ok"] for r in cluster["results"]] == [False, True, True, True]


def test_a_sink_created_by_a_failed_rollout_is_deleted_and_not_claimed(world: Rollout) -> None:
    world.settings(canary=1, waves=[100], analysis_s=0.2, interval_s=0.1)
    world.git("a_new", sink("a_new"))
    world.double.on_start["a_new"] = ["RUNNING", "FAILED"]
    code, cluster, _ = world.run()
    assert code == 1
    assert [(r["action"], r["name"], r["ok"]) for r in cluster["rollout"]["rollback"]] == [("delete", "a_new", True)]
    assert "a_new" not in world.double.connectors
    assert "a_new" not in world.store().owned("default", "c")


def test_a_destructive_rollback_is_not_taken_and_the_report_says_so(world: Rollout) -> None:
    world.settings(canary=1, waves=[100], analysis_s=0.2, interval_s=0.1)
    world.double.add("src", SRC, type="source")
    world.store().claim("default", "c", claims_of(["src"], "*", "created", "r0"))
    world.git("src", {**SRC, "slot.name": "local_org_bob_v2"}, kind="source")
    world.double.on_start["src"] = ["RUNNING", "FAILED"]
    code, cluster, _ = world.run("--allow-destructive")
    assert code == 1 and cluster["rollout"]["rollback"] == []
    (line,) = [x for x in cluster["rollout"]["report"] if x.startswith("rollback not taken")]
    assert line.startswith("rollback not taken, the gate refused it: destructive update of src (slot-changed")
    assert world.double.connectors["src"].config["slot.name"] == "local_org_bob_v2"


def test_a_dry_run_shows_the_stages_and_the_gates_and_writes_nothing(world: Rollout) -> None:
    world.fleet()
    got = world.reconcile("--dry-run", "--canary", "s3", "--lag-budget", "1000")
    assert got.code == 0 and world.puts() == []
    assert "rollout: canary s3, then waves to 50%, 100%; each watched 0.2s; gates: tasks RUNNING" in got.out
    assert "paced: lag budget 1000; on failure: rollback" in got.out
    assert "  canary: 1: s3" in got.out and "  wave 1: 2: s0, s1" in got.out


def test_without_a_rollout_an_apply_writes_everything_at_once_as_before(world: Rollout) -> None:
    world.file.write_text(world.file.read_text().split("rollout:")[0])
    world.fleet()
    world.on_put("s0", lambda: dlq_fills(world, "s0"))
    code, cluster, _ = world.run()
    assert code == 0 and cluster["rollout"] is None
    assert sorted(world.puts()) == [f"/connectors/{n}/config" for n in NAMES]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(
    ("samples", "found", "samples_taken"),
    [
        # lag age over at first, back under before the window ends: passes
        ([{"lag_age_s": 500.0}, {"lag_age_s": 500.0}, {"lag_age_s": 1.0}], [], 4),
        # still over at the end: fails, soft
        ([{"lag_age_s": 500.0}] * 4, [("its oldest waiting record is 500s old (allowed 120s)", False)], 4),
        # a hard failure ends the window at once
        ([{"lag_age_s": 1.0}, {"state": "FAILED"}], [("FAILED (wanted RUNNING)", True)], 2),
        # Kafka did not answer one sample: inconclusive, then measured
        ([{"error": "Kafka: timed out"}, {"lag_age_s": 1.0}], [], 4),
        # a rebalance passing by: tasks UNASSIGNED for a sample
        ([{"tasks": ("UNASSIGNED",)}, {"lag_age_s": 1.0}], [], 4),
    ],
)
def test_the_analysis_window(
    samples: list[dict[str, Any]], found: list[tuple[str, bool]], samples_taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hephaestus.fleet import health
    from hephaestus.fleet.lag import HealthSample
    from hephaestus.reconciler import apply
    from hephaestus.reconciler.plan import Step
    from hephaestus.reconciler.rollout import executor
    from hephaestus.settings import RolloutSettings

    taken: list[int] = []

    def sample(client: object, probe: object, configs: dict[str, Any]) -> dict[str, HealthSample]:
        taken.append(1)
        got = {"state": "RUNNING", "tasks": ("RUNNING",), **samples[min(len(taken), len(samples)) - 1]}
        return {"s": HealthSample("s", **got)}

    monkeypatch.setattr(health, "sample", sample)
    clock = Clock()
    watch = executor.Watch(RolloutSettings(analysis_s=3, interval_s=1), health.HealthProbe(), clock.sleep, clock)
    rollout = executor._Rollout(None, None, watch, apply.ApplyOptions())  # type: ignore[arg-type]
    got = rollout.analysed([Step("update", "s", config={"topics": "t"})], {})
    assert [(f.why, f.hard) for f in got] == found
    assert len(taken) == samples_taken


def test_without_an_analysis_window_one_sample_and_only_what_failed_for_sure(monkeypatch: pytest.MonkeyPatch) -> None:
    from hephaestus.fleet import health
    from hephaestus.fleet.lag import HealthSample
    from hephaestus.reconciler import apply
    from hephaestus.reconciler.plan import Step
    from hephaestus.reconciler.rollout import executor
    from hephaestus.settings import RolloutSettings

    state: dict[str, Any] = {"state": "RUNNING", "tasks": ("UNASSIGNED",), "lag_age_s": 900.0}
    monkeypatch.setattr(health, "sample", lambda client, probe, configs: {"s": HealthSample("s", **state)})
    clock = Clock()
    watch = executor.Watch(RolloutSettings(analysis_s=0), health.HealthProbe(), clock.sleep, clock)
    rollout = executor._Rollout(None, None, watch, apply.ApplyOptions())  # type: ignore[arg-type]
    assert rollout.analysed([Step("update", "s", config={"topics": "t"})], {}) == []
    state["tasks"] = ("FAILED",)
    assert [f.why for f in rollout.analysed([Step("update", "s", config={"topics": "t"})], {})] == [
        "RUNNING, tasks ['FAILED']"
    ]


def test_a_sources_health_is_its_slot_read_from_its_database(world: Rollout) -> None:
    from hephaestus.errors import HephaestusError
    from hephaestus.fleet import health
    from hephaestus.fleet.slots import Slot
    from tests.unit.test_core_apply import client

    world.double.add("src", SRC, type="source")
    slot = Slot("bob", "local_org_bob", "pgoutput", True, 5000, 10, "reserved", "bob", 42)
    read: list[str] = []

    def slots(database: str) -> list[Slot]:
        read.append(database)
        return [slot, Slot("bob", "other", "pgoutput", True, 10**12, 0, None)]

    got = health.sample(client(world.double), health.HealthProbe(None, slots), {"src": SRC})["src"]
    assert (got.state, got.slot_wal, got.confirmed_lsn, got.error, read) == ("RUNNING", 5000, 42, "", ["bob"])

    def down(database: str) -> list[Slot]:
        raise HephaestusError("database bob: connection refused")

    got = health.sample(client(world.double), health.HealthProbe(None, down), {"src": SRC})["src"]
    assert got.error == "slot: database bob: connection refused"


def test_a_plugin_bump_whose_canary_fails_is_pinned_back_and_the_rest_is_never_written(world: Rollout) -> None:
    """Issue 50: the canary runs the new version, its tasks fail, and it is put back to the config
    it had (its old pin: none, the version it ran); the other sinks are never written."""
    pin = "connector.plugin.version"
    cls = SNK["connector.class"]
    world.double.plugins.append((cls, "sink", "3.6.0.Final"))  # installed beside 3.5.0.Final
    for n in NAMES:
        world.live(n, {**sink(n), pin: "3.5.0.Final"})
        world.git(n, {**sink(n), pin: "3.6.0.Final"})
        world.broker.groups[f"connect-{n}"] = {("t", 0): 10}

    def new_version_fails(request: httpx.Request, double: ConnectDouble) -> None:
        if request.method == "PUT" and request.url.path == "/connectors/s0/config":
            bumped = json.loads(request.content).get(pin) == "3.6.0.Final"
            double.on_start["s0"] = ["FAILED"] * 50 if bumped else []

    world.double.faults.append(new_version_fails)
    code, cluster, _ = world.run()
    assert code == 1
    (step,) = [s for s in cluster["steps"] if s["name"] == "s0"]
    assert [e["effect"] for e in step["effects"]] == ["plugin-upgrade"]
    assert [(r["action"], r["name"], r["ok"]) for r in cluster["rollout"]["rollback"]] == [("update", "s0", True)]
    assert world.puts() == ["/connectors/s0/config", "/connectors/s0/config"]  # bumped, then back
    assert world.double.connectors["s0"].config[pin] == "3.5.0.Final"
    assert world.double.running(world.double.connectors["s0"].config) == "3.5.0.Final"
    assert all(world.double.connectors[n].config[pin] == "3.5.0.Final" for n in NAMES[1:])

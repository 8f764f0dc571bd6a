"""A progressive rollout's pure rules (reconciler.rollout.rules): which writes go in which stage,
what the gates say of a health sample, and the step that puts back each kind of write."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hephaestus.fleet.lag import HealthSample
from hephaestus.fleet.model import Live
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Step
from hephaestus.reconciler.rollout.rules import describe, failures, stages, total_lag, undo
from hephaestus.settings import RolloutSettings

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
SOURCE = "io.debezium.connector.postgresql.PostgresConnector"
R = RolloutSettings()


def sink(name: str, action: str = "update", topics: str = "other.t") -> Step:
    return Step(action, name, config={"connector.class": SINK, "topics": topics}, connector_class=SINK)  # type: ignore[arg-type]


def source(name: str, prefix: str) -> Step:
    return Step("update", name, config={"connector.class": SOURCE, "topic.prefix": prefix}, connector_class=SOURCE)


def labels(found: tuple[object, ...]) -> list[tuple[str, list[str]]]:
    return [(s.label, [x.name for x in s.steps]) for s in found]  # type: ignore[attr-defined]


def test_a_count_canary_goes_first_then_cumulative_waves_then_deletes() -> None:
    writes = [sink("d", "delete"), *(sink(f"s{i}") for i in range(9))]
    found = labels(stages(writes, replace(R, canary=1, waves=(25, 50))))
    assert found == [
        ("canary", ["s0"]),
        ("wave 1", ["s1", "s2"]),  # 25% of the 8 left
        ("wave 2", ["s3", "s4"]),  # up to 50%
        ("wave 3", ["s5", "s6", "s7", "s8"]),  # 100% is always the last
        ("deletes", ["d"]),
    ]


def test_no_canary_and_one_wave_is_everything_at_once() -> None:
    assert labels(stages([sink("a"), sink("b")], replace(R, canary=0, waves=(100,)))) == [("wave 1", ["a", "b"])]


def test_a_glob_canary_takes_the_planned_source_its_sinks_read_and_keeps_it_first() -> None:
    writes = [sink("a_sink", topics="bob.public.users"), sink("b_sink"), source("bob_source", "bob")]
    found = labels(stages(writes, replace(R, canary=("a_*",), waves=(100,))))
    assert found == [("canary", ["bob_source", "a_sink"]), ("wave 1", ["b_sink"])]


def test_a_count_canary_never_puts_a_sink_before_the_source_it_reads() -> None:
    writes = [sink("a_sink", topics="bob.public.users"), source("z_source", "bob")]
    assert labels(stages(writes, replace(R, canary=1, waves=(100,)))) == [
        ("canary", ["z_source"]),
        ("wave 1", ["a_sink"]),
    ]


def h(name: str = "s", **kw: object) -> HealthSample:
    return HealthSample(name, **{"state": "RUNNING", "tasks": ("RUNNING",), **kw})  # type: ignore[arg-type]


def whys(
    before: dict[str, HealthSample], now: dict[str, HealthSample], want: str = "RUNNING", r: RolloutSettings = R
) -> list[tuple[str, bool]]:
    return [(f.why, f.hard) for f in failures(r, before, now, {n: want for n in now})]


def test_a_healthy_sample_passes_every_gate() -> None:
    assert whys({"s": h(dlq_end=5)}, {"s": h(lag=10, lag_age_s=3.0, dlq_end=5, slot_wal=100)}) == []


@pytest.mark.parametrize(
    ("now", "why"),
    [
        (h(state="FAILED"), "FAILED (wanted RUNNING)"),
        (h(tasks=("RUNNING", "FAILED")), "RUNNING, tasks ['RUNNING', 'FAILED']"),
        (h(dlq_end=8), "its DLQ grew by 3 records (allowed 0)"),
    ],
)
def test_hard_failures(now: HealthSample, why: str) -> None:
    assert whys({"s": h(dlq_end=5)}, {"s": now}) == [(why, True)]


@pytest.mark.parametrize(
    ("now", "why"),
    [
        (h(tasks=("UNASSIGNED",)), "RUNNING, tasks ['UNASSIGNED']"),  # a rebalance passing by
        (h(state="UNASSIGNED", tasks=()), "UNASSIGNED (wanted RUNNING)"),
        (h(tasks=()), "RUNNING, tasks []"),
        (HealthSample("s"), "not listed by Connect"),
    ],
)
def test_a_connector_not_yet_running_fails_only_at_the_windows_end(now: HealthSample, why: str) -> None:
    assert whys({}, {"s": now}) == [(why, False)]


def test_a_measure_not_taken_is_inconclusive_until_the_window_ends() -> None:
    assert whys({}, {"s": h(error="Kafka: down")}) == [("not measured: Kafka: down", False)]


def test_soft_failures_lag_lag_age_and_slot_wal() -> None:
    r = replace(R, max_lag=100, max_lag_age_s=60, max_slot_wal_bytes=1000)
    now = {"s": h(lag=101, lag_age_s=61.0, slot_wal=1001)}
    assert [hard for _, hard in whys({}, now, r=r)] == [False, False, False]
    assert [w.split(" ")[0] for w, _ in whys({}, now, r=r)] == ["lag", "its", "its"]
    assert whys({}, {"s": h(lag=100, lag_age_s=60.0, slot_wal=1000)}, r=r) == []  # at the limit: passes


def test_a_dlq_that_did_not_exist_before_counts_from_zero_and_growth_up_to_the_limit_passes() -> None:
    assert whys({}, {"s": h(dlq_end=2)}) == [("its DLQ grew by 2 records (allowed 0)", True)]
    assert whys({"s": h(dlq_end=1)}, {"s": h(dlq_end=3)}, r=replace(R, max_dlq_growth=2)) == []


def test_a_paused_connector_is_judged_on_its_state_only() -> None:
    assert whys({}, {"s": h(state="PAUSED", tasks=("PAUSED",), lag=10**9, dlq_end=10)}, want="PAUSED") == []
    assert whys({}, {"s": h()}, want="PAUSED") == [("RUNNING (wanted PAUSED)", False)]


def test_total_lag_sums_the_named_sinks_only() -> None:
    assert total_lag({"a": h("a", lag=3), "b": h("b", lag=None), "c": h("c", lag=7)}, ["a", "b", "x"]) == 3


OLD = {"connector.class": SINK, "topics": "t", "tasks.max": "1"}
NEW = {**OLD, "tasks.max": "4"}
WROTE = StepResult("s", "update", True, "RUNNING", wrote=True)


def test_an_update_goes_back_to_the_config_and_state_read_before_the_run() -> None:
    step = Step("update", "s", config=NEW, connector_class=SINK, live_state="PAUSED", target_state="RUNNING")
    back = undo(step, WROTE, {"s": Live("s", OLD, "sink", "PAUSED")})
    assert back is not None and (back.action, dict(back.config), back.target_state) == ("update", OLD, "PAUSED")
    assert back.live_state == "RUNNING" and [c.key for c in back.changes] == ["tasks.max"]


def test_a_created_sink_is_deleted_and_a_created_source_left() -> None:
    created = StepResult("s", "create", False, "FAILED", wrote=True)
    back = undo(sink("s", "create"), created, {})
    assert back is not None and back.action == "delete"
    assert undo(replace(source("src", "bob"), action="create"), created, {}) is None


def test_a_delete_is_created_again_and_a_rename_goes_back_to_its_old_name() -> None:
    gone = undo(sink("s", "delete"), WROTE, {"s": Live("s", OLD, "sink", "STOPPED")})
    assert gone is not None and (gone.action, dict(gone.config), gone.target_state) == ("create", OLD, "STOPPED")
    step = Step("rename", "new", config=NEW, connector_class=SINK, live_state="RUNNING", renamed_from="old")
    back = undo(step, WROTE, {"old": Live("old", OLD, "sink", "RUNNING")})
    assert back is not None and (back.action, back.name, back.renamed_from, dict(back.config)) == (
        "rename",
        "old",
        "new",
        OLD,
    )


def test_a_state_change_goes_back_to_the_state_before() -> None:
    step = Step("state", "s", config=OLD, connector_class=SINK, live_state="RUNNING", target_state="PAUSED")
    back = undo(step, WROTE, {"s": Live("s", OLD, "sink", "RUNNING")})
    assert back is not None and (back.action, back.target_state, back.live_state) == ("state", "RUNNING", "PAUSED")


def test_what_was_never_written_is_not_put_back_and_an_unknown_outcome_is() -> None:
    step = Step("update", "s", config=NEW, connector_class=SINK)
    before = {"s": Live("s", OLD, "sink", "RUNNING")}
    assert undo(step, StepResult("s", "update", False, "not applied: x"), before) is None
    assert undo(step, StepResult("s", "update", False, "unknown: timed out"), before) is not None
    assert undo(step, WROTE, {}) is None  # nothing read before: nothing to go back to


def test_describe_names_the_shape_the_gates_and_what_is_not_measured() -> None:
    r = replace(R, canary=("a_*",), waves=(50,), max_lag=10, lag_budget=500)
    assert describe(r, True) == (
        "canary a_*, then waves to 50%, 100%; each watched 30s; gates: tasks RUNNING on the new config, "
        "lag ≤ 10, lag age ≤ 120s, DLQ growth ≤ 0, slot WAL ≤ 1073741824; paced: lag budget 500; on failure: rollback"
    )
    assert "(no kafka_bootstrap: lag and DLQ not measured)" in describe(R, False)
    assert "lag age" not in describe(R, False)


def test_a_glob_canary_takes_only_the_sources_its_sinks_read() -> None:
    writes = [sink("a_sink", topics="bob.public.users"), source("bob_source", "bob"), source("eve_source", "eve")]
    found = labels(stages(writes, replace(R, canary=("a_*",), waves=(100,))))
    assert found == [("canary", ["bob_source", "a_sink"]), ("wave 1", ["eve_source"])]


def test_every_failure_names_its_connector() -> None:
    r = replace(R, max_lag=0, max_slot_wal_bytes=0)
    found = failures(r, {}, {"s": h(lag=5, lag_age_s=900.0, slot_wal=5, dlq_end=1)}, {"s": "RUNNING"})
    assert [f.name for f in found] == ["s"] * 4


def test_the_gates_name_the_connector_and_judge_one_absent_from_the_sample() -> None:
    found = failures(R, {}, {"s": h(error="Kafka: down")}, {"s": "RUNNING", "gone": "RUNNING"})
    assert [(f.name, f.why) for f in found] == [("s", "not measured: Kafka: down"), ("gone", "not listed by Connect")]


def test_a_lag_not_measured_passes_even_a_zero_lag_gate() -> None:
    assert whys({}, {"s": h(lag=None)}, r=replace(R, max_lag=0)) == []
    assert whys({}, {"s": h(lag=1)}, r=replace(R, max_lag=0)) == [("lag 1 records (allowed 0)", False)]


def test_a_rollback_never_asks_for_a_state_connect_did_not_settle_in_and_says_why_it_writes() -> None:
    step = Step("update", "s", config=NEW, connector_class=SINK, live_state="FAILED")
    back = undo(step, WROTE, {"s": Live("s", OLD, "sink", "FAILED")})
    assert back is not None and back.target_state == "" and back.reason == "rollback"
    assert back.connector_class == SINK and back.changes and back.live_state == "FAILED"
    created = undo(sink("s", "create"), WROTE, {})
    assert created is not None and (created.reason, created.connector_class) == ("rollback: created by this run", SINK)
    gone = undo(sink("s", "delete"), WROTE, {"s": Live("s", OLD, "sink", "FAILED")})
    assert gone is not None and (gone.target_state, gone.reason) == ("RUNNING", "rollback: deleted by this run")
    assert (gone.name, gone.connector_class, created.name) == ("s", SINK, "s")
    step = Step("rename", "new", config=NEW, connector_class=SINK, live_state="RUNNING", renamed_from="old")
    renamed = undo(step, WROTE, {"old": Live("old", OLD, "sink", "PAUSED")})
    assert renamed is not None and (renamed.reason, renamed.target_state, renamed.live_state) == (
        "rollback: back from new",
        "PAUSED",
        "RUNNING",
    )
    assert renamed.connector_class == SINK and [c.key for c in renamed.changes] == ["tasks.max"]

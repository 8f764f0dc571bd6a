"""Issue 43, item 6, exactly: what a rollback gives back of what its sinks parked
(reconciler.rollout.executor: the marks before each write, the windows after the rollback, the
results and the command named) and which records a replay within bounds takes
(dlq.model.positions). Written so mutants of either die."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hephaestus import kafka
from hephaestus.dlq.model import Bounds, ParkedBefore, positions
from hephaestus.errors import HephaestusError
from hephaestus.fleet import health
from hephaestus.kafka import Span
from hephaestus.reconciler import apply
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Step
from hephaestus.reconciler.rollout import executor
from hephaestus.settings import RolloutSettings
from tests.unit.kafkafake import Cluster

DLQ = "errors.deadletterqueue.topic.name"


# --- dlq.model.positions ------------------------------------------------------------------------

SPANS = (Span("d", 0, 2, 10), Span("d", 1, 0, 4))


def test_without_bounds_a_replay_takes_every_partition_from_the_last_replay_to_the_end() -> None:
    assert Bounds() == Bounds(None, None, None)
    assert positions(SPANS, {("d", 0): 5}, Bounds()) == ({("d", 0): 5, ("d", 1): 0}, {("d", 0): 10, ("d", 1): 4})


def test_a_partition_and_an_until_narrow_it() -> None:
    assert positions(SPANS, {}, Bounds(until=2, partition=1)) == ({("d", 1): 0}, {("d", 1): 3})
    assert positions(SPANS, {}, Bounds(partition=0)) == ({("d", 0): 2}, {("d", 0): 10})
    with pytest.raises(HephaestusError) as e:
        positions(SPANS, {}, Bounds(partition=2))
    assert str(e.value) == "the dead-letter queue has no partition 2"


@pytest.mark.parametrize(
    ("committed", "since", "froms"),
    [
        (5, 5, 5),  # replayed up to `since`: from it
        (7, 5, 7),  # replayed past it (a rerun after a replay killed half-way): from there
        (2, 10, 10),  # older records, but nothing from `since` on: nothing to pass over
        (2, 11, 11),
    ],
)
def test_from_an_offset_when_nothing_older_is_left_unreplayed(committed: int, since: int, froms: int) -> None:
    got = positions(SPANS[:1], {("d", 0): committed}, Bounds(since=since))
    assert got == ({("d", 0): froms}, {("d", 0): 10})


def test_from_an_offset_with_older_records_never_replayed_is_refused_naming_them() -> None:
    with pytest.raises(ParkedBefore) as e:
        positions(SPANS, {("d", 0): 3}, Bounds(since=6))
    assert e.value.exit_code == 2
    assert str(e.value) == (
        "d[0] holds records parked before offset 6 and never replayed (offsets 3-5): a replay's position "
        "is one per partition, so replaying from 6 would count them as replayed; replay them too "
        "(leave out --from), or purge them first (`dlq purge`)"
    )
    with pytest.raises(
        ParkedBefore, match=r"^d\[1\] holds records parked before offset 1 and never replayed \(offsets 0-0\)"
    ):
        positions(SPANS, {("d", 0): 9}, Bounds(since=1))  # partition 0 is past it; partition 1 is not


def test_a_purge_below_the_offset_clears_the_way() -> None:
    purged = (Span("d", 0, 5, 10),)  # `dlq purge --before 5`: the log starts at 5
    assert positions(purged, {}, Bounds(since=5)) == ({("d", 0): 5}, {("d", 0): 10})
    with pytest.raises(ParkedBefore, match=r"\(offsets 5-5\)"):
        positions(purged, {}, Bounds(since=6))


# --- reconciler.rollout.executor: Parked --------------------------------------------------------


def test_the_records_named_and_the_command_that_replays_exactly_them() -> None:
    p = executor.Parked("c", "b:9092", "s0", "dlq.s0", 1, 3, 8, {"topics": "t"})
    assert p.where() == "5 record(s) in dlq.s0[1], offsets 3-7"
    assert p.command() == "hephaestus dlq replay --cluster c --connector s0 --partition 1 --from 3 --until 7"
    assert p == executor.Parked("c", "b:9092", "s0", "dlq.s0", 1, 3, 8)  # the config is not its identity
    assert hash(p) == hash(executor.Parked("c", "b:9092", "s0", "dlq.s0", 1, 3, 8))


def test_a_hostile_name_is_quoted_for_the_shell_it_is_pasted_into() -> None:
    p = executor.Parked("prod eu", "b", "s0; rm -rf ~", "d", 0, 0, 1)
    assert p.command() == (
        "hephaestus dlq replay --cluster 'prod eu' --connector 's0; rm -rf ~' --partition 0 --from 0 --until 0"
    )


# --- reconciler.rollout.executor: marks and windows ---------------------------------------------


def step(action: str, name: str, dlq: str | None = "dlq.s", **extra: Any) -> Step:
    config = {"topics": "t", **({DLQ: dlq} if dlq is not None else {})}
    return Step(action, name, config=config, **extra)  # type: ignore[arg-type]


def test_only_sinks_changed_or_renamed_in_place_with_a_dlq_are_marked_by_its_trimmed_topic() -> None:
    steps = [
        step("update", "u", " dlq.u "),
        step("rename", "r", "dlq.r"),
        step("create", "c"),  # deleted by a rollback: nothing reads its records back
        step("delete", "d"),
        step("update", "blank", "  "),
        step("update", "none", None),
    ]
    assert executor._dlqs(steps) == {"u": "dlq.u", "r": "dlq.r"}


@pytest.fixture
def broker() -> Iterator[Cluster]:
    b = Cluster()
    b.add("dlq.s", 0, 4)
    b.add("dlq.s", 1, 2, start=1)
    with kafka.seam(admin=b.admin, consumer=b.consumer, producer=b.producer):
        yield b


def rollout(bootstrap: str | None = "b:9092", give: Any = None, **settings: Any) -> executor._Rollout:
    watch = executor.Watch(RolloutSettings(**settings), health.HealthProbe(bootstrap), give_back=give)
    return executor._Rollout(None, None, watch, apply.ApplyOptions())  # type: ignore[arg-type]


def test_a_mark_is_each_partitions_end_read_before_the_write(broker: Cluster) -> None:
    r = rollout()
    r.mark([step("update", "s"), step("update", "gone", "dlq.absent")])
    assert r.marks == {
        "s": executor._Mark("dlq.s", "b:9092", {0: 4, 1: 3}),
        "gone": executor._Mark("dlq.absent", "b:9092", {}),
    }


def test_nothing_is_marked_without_kafka_or_a_dlq(broker: Cluster) -> None:
    r = rollout(bootstrap=None)
    r.mark([step("update", "s")])
    without = rollout()
    without.mark([step("update", "s", None)])
    assert (r.marks, without.marks, broker.configs) == ({}, {}, [])


def test_a_mark_kafka_did_not_answer_makes_what_was_parked_unknown(broker: Cluster) -> None:
    broker.unreachable = True
    r = rollout()
    r.mark([step("update", "s")])
    error = r.marks["s"].error
    assert error.startswith("cannot reach Kafka at b:9092 within 10 s: ") and "all brokers down" in error, error
    got = r.given_back("c", [step("update", "s")], [StepResult("s", "update", True)], Journal())
    why = f"what it parked while the rollout ran is unknown: dlq.s could not be read before the write: {error}"
    assert got == [StepResult("s", "dlq-replay", False, why)]


class Journal:
    journal = "the run's audit journal"


def test_each_partition_that_grew_is_a_window_from_its_mark_a_new_one_from_0(broker: Cluster) -> None:
    r = rollout()
    r.mark([step("update", "s")])
    broker.logs[("dlq.s", 0)] += broker.logs[("dlq.s", 0)][:2]  # two more in partition 0
    broker.add("dlq.s", 2, 1)  # a partition added meanwhile
    back = step("update", "s")
    assert r._parked("c", back) == [
        executor.Parked("c", "b:9092", "s", "dlq.s", 0, 4, 6),
        executor.Parked("c", "b:9092", "s", "dlq.s", 2, 0, 1),
    ]
    assert r._parked("c", back)[0].config == back.config  # replayed into the config put back


def test_a_rename_put_back_is_found_by_the_name_it_was_written_under(broker: Cluster) -> None:
    r = rollout()
    r.mark([step("rename", "new")])
    broker.add("dlq.s", 0, 5)
    (p,) = r._parked("c", step("rename", "old", renamed_from="new"))
    assert (p.sink, p.first, p.end) == ("old", 4, 5)


def test_only_sinks_put_back_and_marked_are_given_back(broker: Cluster) -> None:
    sent: list[tuple[executor.Parked, object]] = []
    r = rollout(give=lambda p, j: sent.append((p, j)) or 7)
    r.mark([step("update", "s"), step("update", "t")])
    broker.add("dlq.s", 0, 6)
    back = [step("update", "s"), step("update", "t"), step("update", "unmarked")]
    done = [StepResult("s", "update", True), StepResult("t", "update", False), StepResult("unmarked", "update", True)]
    assert r.given_back("c", back, done, Journal()) == [
        StepResult(
            "s",
            "dlq-replay",
            True,
            "replayed 7 record(s): 2 record(s) in dlq.s[0], offsets 4-5, parked while the rollout ran",
        )
    ]
    assert sent == [(executor.Parked("c", "b:9092", "s", "dlq.s", 0, 4, 6), Journal.journal)]


PARKED = executor.Parked("c", "b", "s", "d", 0, 4, 6)
COMMAND = "`hephaestus dlq replay --cluster c --connector s --partition 0 --from 4 --until 5`"


def test_what_is_not_replayed_is_named_with_why_and_the_command() -> None:
    def refuse(p: executor.Parked, j: object) -> int:
        raise HephaestusError("the gate said no")

    def never(p: executor.Parked, j: object) -> int:
        raise AssertionError("replayed although replay_parked is false")

    what = "2 record(s) in d[0], offsets 4-5, parked while the rollout ran"
    got = [
        rollout(give=never, replay_parked=False)._give_back(PARKED, Journal()),
        rollout(give=None, replay_parked=False)._give_back(PARKED, Journal()),
        rollout(give=None)._give_back(PARKED, Journal()),
        rollout(give=refuse)._give_back(PARKED, Journal()),
    ]
    assert got == [
        StepResult("s", "dlq-replay", False, f"not replayed (rollout replay_parked is false): {what}: {COMMAND}"),
        StepResult("s", "dlq-replay", False, f"not replayed (rollout replay_parked is false): {what}: {COMMAND}"),
        StepResult("s", "dlq-replay", False, f"not replayed (this run cannot replay them): {what}: {COMMAND}"),
        StepResult("s", "dlq-replay", False, f"not replayed: the gate said no; {what}: {COMMAND}"),
    ]


def test_replaying_parked_records_is_the_default() -> None:
    assert RolloutSettings().replay_parked is True

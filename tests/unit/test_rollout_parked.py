"""Issue 43, item 6: a rollback puts back what the canary did to data, not only its config.
What a sink parked in its DLQ while the rollout ran (from the DLQ's end before its write to its
end once put back) is replayed through `dlq replay`'s path (the gate, exactly once, audited),
and nothing parked before; with `replay_parked: false`, or when it cannot go, it is named with
the exact command, and the run exits 1. Through the CLI, Connect on the strict loopback double,
Kafka through the edge's seam (tests/unit/kafkafake.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from hephaestus import kafka
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project
from tests.unit.kafkafake import Cluster, Msg
from tests.unit.test_rollout_run import NAMES, Rollout, sink

DLQ = ("dlq.s0", 0)
GROUP = "hephaestus-dlq-replay.s0"


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
    with kafka.seam(admin=broker.admin, consumer=broker.consumer, producer=broker.producer):
        yield Rollout(project, double, url, broker)


def parked(offset: int, row: int) -> Msg:
    """A record as Connect's DLQ reporter writes it: its origin in the error headers."""
    headers = [("__connect.errors.topic", b"t"), ("__connect.errors.partition", b"0"), ("trace", b"x")]
    return Msg("dlq.s0", 0, offset, value_=b'{"id": %d}' % row, headers_=headers)


def park(w: Rollout, count: int, row: int = 100) -> None:
    log = w.broker.logs.setdefault(DLQ, [])
    log.extend(parked(len(log) + w.broker.starts.get(DLQ, 0), row + i) for i in range(count))


def canary_parks(w: Rollout, count: int = 5) -> None:
    """s0's new config (tasks.max 2) parks `count` records as it is written; the rollback's
    write (back to tasks.max 1) parks none."""
    w.fleet()
    w.on_put("s0", lambda: park(w, count) if w.double.connectors["s0"].config["tasks.max"] == "1" else None)


def replays(cluster: dict[str, Any]) -> list[tuple[bool, str]]:
    return [(r["ok"], r["detail"]) for r in cluster["rollout"]["rollback"] if r["action"] == "dlq-replay"]


def audit(w: Rollout) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (w.project.root / "audit.jsonl").read_text().splitlines()]


def test_the_rollback_replays_exactly_what_the_canary_parked_and_not_what_was_parked_before(world: Rollout) -> None:
    park(world, 3, row=1)  # parked before the rollout, and replayed since: resolved
    world.broker.groups[GROUP] = {DLQ: 3}
    canary_parks(world)
    code, cluster, _ = world.run()
    assert code == 1  # a rollback is a failed apply, replayed or not
    assert [(r["action"], r["ok"]) for r in cluster["rollout"]["rollback"]] == [("update", True), ("dlq-replay", True)]
    assert replays(cluster) == [
        (True, "replayed 5 record(s): 5 record(s) in dlq.s0[0], offsets 3-7, parked while the rollout ran")
    ]
    # Read back from the broker: the five went to their origin, once, and the group moved past them.
    assert world.broker.produced == [("t", 0, b'{"id": %d}' % (100 + i)) for i in range(5)]
    assert world.broker.groups[GROUP] == {DLQ: 8}
    events = [(e["connector"], e["action"], e["outcome"], e["run_id"]) for e in audit(world)]
    run_id = events[0][3]
    assert [e for e in events if e[1] == "dlq-replay"] == [
        ("s0", "dlq-replay", "intent", run_id),
        ("s0", "dlq-replay", "ok", run_id),
    ]
    got = world.cli("dlq", "list")
    assert got.code == 0, got.out + got.err  # nothing parked is left unresolved
    again = world.cli("dlq", "replay", "--connector", "s0", "--yes")  # someone replays by hand after
    assert again.code == 0 and "replayed 0 record(s)" in again.out and len(world.broker.produced) == 5


def test_a_parked_record_naming_a_topic_the_sink_does_not_read_stops_the_whole_replay(world: Rollout) -> None:
    canary_parks(world, 3)
    hostile = parked(0, 9)
    hostile.headers_[0] = ("__connect.errors.topic", b"connect-configs")

    def park_hostile() -> None:
        if world.double.connectors["s0"].config["tasks.max"] == "1":
            world.broker.logs[DLQ].append(replace(hostile, offset_=3))

    world.on_put("s0", park_hostile)
    code, cluster, _ = world.run()
    ((ok, detail),) = replays(cluster)
    assert code == 1 and not ok and world.broker.produced == [] and GROUP not in world.broker.groups
    assert "offset 3 names topic 'connect-configs', which s0 does not read" in detail, detail
    assert detail.endswith("`hephaestus dlq replay --cluster c --connector s0 --partition 0 --from 0 --until 3`")


def test_older_records_never_replayed_stop_the_replay_and_the_window_is_named(world: Rollout) -> None:
    park(world, 3, row=1)  # parked before the rollout and never replayed: not the rollback's to send
    canary_parks(world)
    code, cluster, _ = world.run()
    assert code == 1 and world.broker.produced == [] and GROUP not in world.broker.groups
    ((ok, detail),) = replays(cluster)
    assert not ok
    assert "dlq.s0[0] holds records parked before offset 3 and never replayed (offsets 0-2)" in detail, detail
    assert detail.endswith(
        "; 5 record(s) in dlq.s0[0], offsets 3-7, parked while the rollout ran: "
        "`hephaestus dlq replay --cluster c --connector s0 --partition 0 --from 3 --until 7`"
    ), detail


def test_with_replay_parked_false_the_records_and_the_exact_command_are_named(world: Rollout) -> None:
    world.settings(canary=1, waves=[50, 100], analysis_s=0.2, interval_s=0.1, replay_parked=False)
    park(world, 3, row=1)
    world.broker.groups[GROUP] = {DLQ: 3}
    canary_parks(world)
    code, cluster, out = world.run()
    assert code == 1 and world.broker.produced == []
    command = "hephaestus dlq replay --cluster c --connector s0 --partition 0 --from 3 --until 7"
    assert replays(cluster) == [
        (
            False,
            "not replayed (rollout replay_parked is false): 5 record(s) in dlq.s0[0], offsets 3-7, "
            f"parked while the rollout ran: `{command}`",
        )
    ]
    # The command named sends those five and no others.
    got = world.cli(*command.split()[1:], "--yes")
    assert got.code == 0, got.out + got.err
    assert world.broker.produced == [("t", 0, b'{"id": %d}' % (100 + i)) for i in range(5)]
    assert world.broker.groups[GROUP] == {DLQ: 8}


def test_a_replay_killed_half_way_is_named_and_its_command_sends_only_the_rest(world: Rollout) -> None:
    canary_parks(world, 600)  # two transactions of 500: the second one fails
    world.broker.fail_commit_after = 1
    code, cluster, _ = world.run()
    ((ok, detail),) = replays(cluster)
    assert code == 1 and not ok
    assert detail.startswith("not replayed: Kafka: replay stopped after 500 record(s) committed"), detail
    assert "--partition 0 --from 0 --until 599`" in detail
    assert len(world.broker.produced) == 500 and world.broker.groups[GROUP] == {DLQ: 500}
    assert [e["outcome"] for e in audit(world) if e["action"] == "dlq-replay"] == ["intent", "failed"]
    world.broker.fail_commit_after = None
    got = world.cli(*detail.split("`")[1].split()[1:], "--yes")
    assert got.code == 0 and "replayed 100 record(s)" in got.out, got.out + got.err
    values = [v for _, _, v in world.broker.produced]
    assert values == [b'{"id": %d}' % (100 + i) for i in range(600)], "each record sent once"


def test_an_insert_mode_sink_gets_nothing_replayed_without_an_allowance(world: Rollout) -> None:
    """Duplicates are a destructive effect: a rollback takes none by itself."""
    world.fleet()
    for n in NAMES:
        world.live(n, {**sink(n), "insert.mode": "insert"})
        world.git(n, {**sink(n, "2"), "insert.mode": "insert"})
    world.on_put("s0", lambda: park(world, 2) if world.double.connectors["s0"].config["tasks.max"] == "1" else None)
    code, cluster, _ = world.run()
    ((ok, detail),) = replays(cluster)
    assert code == 1 and not ok and world.broker.produced == []
    assert detail.startswith("not replayed: ") and "duplicates" in detail, detail

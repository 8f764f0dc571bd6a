"""Readiness verdicts (connect.ready) against a scripted client and a fake clock: one listing
per poll, the stability window, task configs, FAILED with its root cause, timeouts and an
unreachable cluster (mutation-tested core)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import cast

import pytest

from hephaestus.connect import ConnectClient
from hephaestus.connect.errors import Call, ConnectError, ConnectUnavailable
from hephaestus.connect.models import ConnectorStatus, TaskState
from hephaestus.connect.ready import (
    UNREACHABLE,
    ReadyOptions,
    ReadyVerdict,
    Target,
    failure,
    root_cause,
    runs_config,
    wait_ready,
)

CALL = Call("dwh", "http://connect", "GET", "/connectors")
SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
TRACE = (
    "org.apache.kafka.connect.errors.ConnectException: boom\n"
    "\tat org.Foo.bar(Foo.java:1)\n"
    "Caused by: java.sql.SQLException: first\n"
    "\tat org.Foo.baz(Foo.java:2)\n"
    "  Caused by: org.postgresql.util.PSQLException: relation missing\n"
)


def status(
    name: str,
    state: str = "RUNNING",
    tasks: Sequence[str] = ("RUNNING",),
    trace: str | None = None,
    task_traces: Mapping[int, str] | None = None,
) -> ConnectorStatus:
    traces = task_traces or {}
    return ConnectorStatus(
        name, "sink", state, "w", trace, tuple(TaskState(i, s, "w", traces.get(i)) for i, s in enumerate(tasks))
    )


Listing = Mapping[str, ConnectorStatus] | Exception


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Fake:
    """`statuses()` answers the next listing (the last one again when the script runs out);
    each listing is one poll, one second later on the clock."""

    def __init__(
        self,
        clock: Clock,
        *listings: Listing,
        tasks: Mapping[str, Sequence[list[dict[str, str]] | Exception]] | None = None,
    ) -> None:
        self.clock = clock
        self.listings = list(listings)
        self.polls = 0
        self.tasks = {k: list(v) for k, v in (tasks or {}).items()}
        self.task_calls: list[str] = []

    def statuses(self) -> dict[str, ConnectorStatus]:
        self.polls += 1
        self.clock.now += 1.0
        listing = self.listings.pop(0) if len(self.listings) > 1 else self.listings[0]
        if isinstance(listing, Exception):
            raise listing
        return dict(listing)

    def task_configs(self, name: str, once: bool = False) -> list[dict[str, str]]:
        assert once, "a readiness poll asks once: a retry inside it holds every other verdict"
        self.task_calls.append(name)
        script = self.tasks[name]
        answer = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def wait(
    fake: Fake, targets: Sequence[Target], options: ReadyOptions, seen: list[ReadyVerdict] | None = None
) -> dict[str, ReadyVerdict]:
    on = seen.append if seen is not None else None
    return wait_ready(cast(ConnectClient, fake), targets, options, on, clock=fake.clock)


def opts(timeout_s: float = 100, stable_s: float = 0, stale_s: float = 0) -> ReadyOptions:
    return ReadyOptions(timeout_s=timeout_s, stable_s=stable_s, poll_s=0, stale_s=stale_s)


# --- root_cause, failure, runs_config -------------------------------------------------------


def test_root_cause_is_the_first_line_and_the_last_cause() -> None:
    assert root_cause(TRACE) == (
        "org.apache.kafka.connect.errors.ConnectException: boom | "
        "Caused by: org.postgresql.util.PSQLException: relation missing"
    )
    assert root_cause(TRACE, causes=2, sep=" / ") == (
        "org.apache.kafka.connect.errors.ConnectException: boom / Caused by: java.sql.SQLException: first"
        " / Caused by: org.postgresql.util.PSQLException: relation missing"
    )
    assert root_cause("  only line\n\tat x") == "only line"


@pytest.mark.parametrize("trace", [None, "", "  \n  "])
def test_no_trace(trace: str | None) -> None:
    assert root_cause(trace) == "no trace"


def test_root_cause_lines_are_cut_and_masked() -> None:
    long = "E" * 400
    assert root_cause(f"{long}\nCaused by: {'c' * 400}") == f"{'E' * 300} | Caused by: {'c' * 289}"
    assert (
        root_cause("bad password hunter2\nCaused by: hunter2 again", ["hunter2"])
        == "bad password **** | Caused by: **** again"
    )


def test_failure_of_the_connector_itself() -> None:
    assert failure(status("a"), ()) is None
    assert failure(status("a", "RUNNING", ("RUNNING", "UNASSIGNED")), ()) is None
    st = status("a", "FAILED", (), trace="boom qx-never-learnt-93\nCaused by: why")
    assert failure(st, ["qx-never-learnt-93"]) == "FAILED (connector): boom **** | Caused by: why"


def test_failure_of_tasks_names_them_and_takes_the_first_trace_there_is() -> None:
    st = status(
        "a",
        "RUNNING",
        ("FAILED", "RUNNING", "FAILED"),
        trace="connector trace",
        task_traces={2: "task two\nCaused by: root hunter2"},
    )
    assert failure(st, ["hunter2"]) == "FAILED (task 0, 2): task two | Caused by: root ****"
    no_task_trace = status("a", "RUNNING", ("FAILED",), trace="connector trace")
    assert failure(no_task_trace, ()) == "FAILED (task 0): connector trace"
    both = status("a", "FAILED", ("FAILED",), trace="c", task_traces={0: "t"})
    assert failure(both, ()) == "FAILED (connector): t"


def test_runs_config_compares_copies_of_the_connector_config() -> None:
    desired = {"connector.class": SINK, "tasks.max": "2", "name": "a", "connection.password": "${file:/s:pw}"}
    copy = {"connector.class": SINK, "tasks.max": "2", "name": "a-task-0", "connection.password": "resolved"}
    assert runs_config([copy, copy], desired)
    assert not runs_config([copy, {**copy, "tasks.max": "1"}], desired)
    assert not runs_config([{**copy, "tasks.max": "1"}], desired)
    assert not runs_config([{"connector.class": SINK}], desired)
    assert runs_config([{"task.class": "x"}], desired), "no copy of the config: cannot tell"
    assert not runs_config([], desired), "no task at all is not running the config"


# --- wait_ready ---------------------------------------------------------------------------


def test_option_defaults() -> None:
    assert ReadyOptions() == ReadyOptions(timeout_s=180.0, stable_s=10.0, poll_s=0.5, stale_s=5.0, first_poll_s=0.1)
    assert Target("a") == Target("a", frozenset({"RUNNING"}), None)


def test_ready_after_the_stability_window_with_one_listing_per_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    clock = Clock()
    fake = Fake(clock, {"a": status("a"), "b": status("b", "PAUSED", ("PAUSED",))})
    seen: list[ReadyVerdict] = []
    verdicts = wait(
        fake,
        [Target("a"), Target("b", frozenset({"PAUSED"}))],
        ReadyOptions(timeout_s=100, stable_s=2, poll_s=0.25, stale_s=0),
        seen,
    )
    # a: RUNNING from poll 1 (t=1), stable for 2 s at poll 3; b: PAUSED as asked at poll 1.
    assert verdicts == {"a": ReadyVerdict("a", True, "RUNNING"), "b": ReadyVerdict("b", True, "PAUSED")}
    assert seen == [ReadyVerdict("b", True, "PAUSED"), ReadyVerdict("a", True, "RUNNING")]
    assert fake.polls == 3 and sleeps == [0.1, 0.2]


def test_pauses_double_from_the_first_up_to_poll_s(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    fake = Fake(Clock(), {"a": status("a")})
    wait(fake, [Target("a")], ReadyOptions(timeout_s=100, stable_s=6, poll_s=0.5, stale_s=0, first_poll_s=0.1))
    assert sleeps == [0.1, 0.2, 0.4, 0.5, 0.5, 0.5]
    sleeps.clear()
    wait(Fake(Clock(), {"a": status("a")}), [Target("a")], ReadyOptions(timeout_s=100, stable_s=2, poll_s=0.05))
    assert sleeps == [0.05, 0.05]  # never longer than poll_s


def test_nothing_to_wait_for_lists_nothing() -> None:
    fake = Fake(Clock(), {})
    assert wait(fake, [], opts()) == {} and fake.polls == 0


def test_timeout_says_what_was_last_seen() -> None:
    clock = Clock()
    fake = Fake(clock, {"a": status("a")})
    verdicts = wait(fake, [Target("a")], opts(timeout_s=3, stable_s=5))
    assert verdicts == {"a": ReadyVerdict("a", False, "not ready after 3s (RUNNING for 2s of the 5s stability window)")}
    assert fake.polls == 3


def test_timeout_of_a_connector_never_listed() -> None:
    fake = Fake(Clock(), {})
    assert wait(fake, [Target("a")], opts(timeout_s=2)) == {
        "a": ReadyVerdict("a", False, "not ready after 2s (not listed yet)")
    }


def test_a_state_other_than_the_target_is_not_ready() -> None:
    fake = Fake(Clock(), {"a": status("a", "RUNNING", ("RUNNING", "UNASSIGNED"))})
    assert wait(fake, [Target("a")], opts(timeout_s=1)) == {
        "a": ReadyVerdict("a", False, "not ready after 1s (RUNNING, tasks ['RUNNING', 'UNASSIGNED'])")
    }
    fake = Fake(Clock(), {"a": status("a")})
    assert wait(fake, [Target("a", frozenset({"STOPPED"}))], opts(timeout_s=1)) == {
        "a": ReadyVerdict("a", False, "not ready after 1s (RUNNING, tasks ['RUNNING'])")
    }
    fake = Fake(Clock(), {"a": status("a", "PAUSED", ("PAUSED",))})
    assert wait(fake, [Target("a")], opts(timeout_s=1))["a"].ok is False


def test_running_counts_for_a_target_of_several_states_only_when_stable() -> None:
    fake = Fake(Clock(), {"a": status("a")})
    verdicts = wait(fake, [Target("a", frozenset({"RUNNING", "PAUSED"}))], opts(stable_s=1))
    assert verdicts == {"a": ReadyVerdict("a", True, "RUNNING")} and fake.polls == 2


@pytest.mark.parametrize("gap", [None, status("a", "RUNNING", ("UNASSIGNED",))])
def test_the_stability_window_restarts_after_a_gap(gap: ConnectorStatus | None) -> None:
    up = {"a": status("a")}
    down = {} if gap is None else {"a": gap}
    fake = Fake(Clock(), up, down, up, up)
    # Up at t=1, gap at t=2, up again from t=3: stable for 1 s only at t=4.
    assert wait(fake, [Target("a")], opts(stable_s=1)) == {"a": ReadyVerdict("a", True, "RUNNING")}
    assert fake.polls == 4


def test_failed_ends_the_wait_with_the_masked_root_cause() -> None:
    config = {"connector.class": SINK, "connection.password": "hunter2"}
    st = status("a", "RUNNING", ("FAILED",), task_traces={0: "login hunter2 refused"})
    fake = Fake(Clock(), {"a": st}, tasks={"a": [[config]]})
    seen: list[ReadyVerdict] = []
    assert wait(fake, [Target("a", config=config)], opts(), seen) == {
        "a": ReadyVerdict("a", False, "FAILED (task 0): login **** refused")
    }
    assert seen == [ReadyVerdict("a", False, "FAILED (task 0): login **** refused")]
    assert fake.polls == 1 and fake.task_calls == []


def test_failed_after_a_while_running() -> None:
    fake = Fake(Clock(), {"a": status("a")}, {"a": status("a", "FAILED", (), trace="dead")})
    assert wait(fake, [Target("a")], opts(stable_s=5)) == {"a": ReadyVerdict("a", False, "FAILED (connector): dead")}


def test_a_failed_right_after_the_write_may_be_stale_and_counts_after_stale_s() -> None:
    dead = {"a": status("a", "FAILED", (), trace="old failure")}
    fake = Fake(Clock(), dead)
    # Listed FAILED from t=1: the state of before the write until t=1+3.
    assert wait(fake, [Target("a")], opts(stale_s=3)) == {
        "a": ReadyVerdict("a", False, "FAILED (connector): old failure")
    }
    assert fake.polls == 4
    fake = Fake(Clock(), dead)
    assert wait(fake, [Target("a")], opts(timeout_s=2, stale_s=3)) == {
        "a": ReadyVerdict(
            "a", False, "not ready after 2s (FAILED (connector): old failure (maybe from before the write))"
        )
    }


def test_a_failed_after_another_state_was_seen_counts_at_once() -> None:
    fake = Fake(
        Clock(), {"a": status("a", "RUNNING", ("UNASSIGNED",))}, {"a": status("a", "FAILED", (), trace="new failure")}
    )
    assert wait(fake, [Target("a")], opts(stale_s=30)) == {
        "a": ReadyVerdict("a", False, "FAILED (connector): new failure")
    }
    assert fake.polls == 2
    # Not listed at all is not "another state": the stale window still applies after it.
    fake = Fake(Clock(), {}, {"a": status("a", "FAILED", (), trace="x")})
    assert wait(fake, [Target("a")], opts(timeout_s=3, stale_s=30))["a"].detail.startswith("not ready after 3s")


def test_ready_waits_for_the_tasks_to_run_the_new_config() -> None:
    new = {"connector.class": SINK, "tasks.max": "2"}
    old = {**new, "tasks.max": "1"}
    fake = Fake(Clock(), {"a": status("a")}, tasks={"a": [[old], [old], [new]]})
    assert wait(fake, [Target("a", config=new)], opts(stable_s=1)) == {"a": ReadyVerdict("a", True, "RUNNING")}
    # Old config at t=1 and t=2, new at t=3 (the window starts), stable at t=4; once seen,
    # the task configs are not read again.
    assert fake.polls == 4 and fake.task_calls == ["a", "a", "a"]


def test_tasks_never_on_the_new_config_time_out_saying_so() -> None:
    new = {"connector.class": SINK, "tasks.max": "2"}
    fake = Fake(Clock(), {"a": status("a")}, tasks={"a": [[{**new, "tasks.max": "1"}]]})
    assert wait(fake, [Target("a", config=new)], opts(timeout_s=2)) == {
        "a": ReadyVerdict("a", False, "not ready after 2s (RUNNING, tasks not yet on the new config)")
    }


def test_unreadable_task_configs_are_not_ready_yet() -> None:
    new = {"connector.class": SINK}
    fake = Fake(Clock(), {"a": status("a")}, tasks={"a": [ConnectUnavailable("down", CALL, 503)]})
    assert wait(fake, [Target("a", config=new)], opts(timeout_s=1)) == {
        "a": ReadyVerdict("a", False, "not ready after 1s (not reported yet)")
    }
    fake = Fake(Clock(), {"a": status("a")}, tasks={"a": [ConnectUnavailable("down", CALL, 503), [new]]})
    assert wait(fake, [Target("a", config=new)], opts())["a"].ok and fake.task_calls == ["a", "a"]


@pytest.mark.parametrize(
    ("exc", "why"),
    [
        (ConnectUnavailable("no route", CALL, transient=True), "no route"),
        (ConnectError("", CALL), "ConnectError"),
    ],
)
def test_an_unreachable_cluster_ends_every_wait_at_once(exc: ConnectError, why: str) -> None:
    fake = Fake(Clock(), {"a": status("a")}, exc)
    seen: list[ReadyVerdict] = []
    verdicts = wait(fake, [Target("a"), Target("b")], opts(stable_s=10), seen)
    expected = {n: ReadyVerdict(n, False, f"{UNREACHABLE} ({why})") for n in ("a", "b")}
    assert verdicts == expected and seen == list(expected.values())
    assert fake.polls == 2

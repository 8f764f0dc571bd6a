"""Renames with the offsets API (reconciler.moves) against the strict Connect double: the
exact sequence, the end state, and the roll-back at each failure (mutation-tested core)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hephaestus.errors import HephaestusError
from hephaestus.reconciler import moves
from hephaestus.reconciler.apply import execute
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Desired, Live, Policy, Scope, Step, plan
from tests.connect_double import ConnectDouble, error
from tests.unit.conftest import cleared
from tests.unit.test_core_apply import SINK, bodies, cfg, client, no_journal, opts

OFFSETS = [
    {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 42}},
    {"partition": {"kafka_topic": "t", "kafka_partition": 1}, "offset": {"kafka_offset": 7}},
]


def world(state: str = "RUNNING", offsets: list[dict[str, Any]] | None = None) -> tuple[ConnectDouble, list[Any]]:
    seen: list[Any] = []
    double = ConnectDouble(bodies(seen))
    double.add("old", cfg(), state=state).offsets = list(OFFSETS if offsets is None else offsets)
    return double, seen


def rename(double: ConnectDouble, seen_state: str | None = None, **options: Any) -> tuple[StepResult, ...]:
    live = {
        n: Live(n, c.config, c.type, c.state if seen_state is None else seen_state)
        for n, c in double.connectors.items()
    }
    p = plan("c", {"new": Desired("new", cfg())}, live, Policy(), Scope(frozenset({"old"})))
    assert [(s.action, s.renamed_from) for s in p.steps] == [("rename", "old")]
    return execute(client(double), p, opts(**options), no_journal(), cleared(p))


def writes(seen: list[Any]) -> list[tuple[str, str, Any]]:
    return [(m, p, b) for m, p, b in seen if m != "GET" and not p.endswith("/validate")]


def test_a_rename_moves_the_offsets_then_starts_the_new_one_and_deletes_the_old() -> None:
    double, seen = world()
    progress: list[StepResult] = []
    assert rename(double, progress=lambda r, d, t: progress.append(r)) == (
        StepResult("new", "rename", True, "renamed from old, 2 offset partitions carried over; RUNNING", True),
    )
    assert [r.detail for r in progress] == ["renamed from old, 2 offset partitions carried over; RUNNING"]
    assert writes(seen) == [
        ("PUT", "/connectors/old/stop", None),
        ("POST", "/connectors", {"name": "new", "config": cfg(), "initial_state": "STOPPED"}),
        ("PATCH", "/connectors/new/offsets", {"offsets": OFFSETS}),
        ("PUT", "/connectors/new/resume", None),
        ("DELETE", "/connectors/old", None),
    ]
    assert ("GET", "/connectors/old/offsets", None) in seen
    assert list(double.connectors) == ["new"] and double.connectors["new"].offsets == OFFSETS
    assert double.connectors["new"].state == "RUNNING"


@pytest.mark.parametrize("state", ["PAUSED", "STOPPED"])
def test_the_new_connector_ends_in_the_state_of_the_old_one(state: str) -> None:
    double, seen = world(state)
    (result,) = rename(double)
    assert result == StepResult(
        "new", "rename", True, f"renamed from old, 2 offset partitions carried over; {state}", True
    )
    assert double.connectors["new"].state == state and double.connectors["new"].offsets == OFFSETS
    assert ("PUT", "/connectors/new/resume", None) not in writes(seen)


@pytest.mark.parametrize(("seen", "initial", "end"), [("FAILED", "RUNNING", "RUNNING"), ("", "PAUSED", "PAUSED")])
def test_an_old_one_not_in_a_target_state_ends_in_the_initial_state(seen: str, initial: str, end: str) -> None:
    double, _ = world()
    (result,) = rename(double, seen_state=seen, initial_state=initial)
    assert result.ok and double.connectors["new"].state == end


def test_an_unreadable_offsets_answer_is_rolled_back() -> None:
    double, _ = world()
    double.faults.insert(
        0,
        lambda r, d: (
            httpx.Response(200, json=["not", "offsets"])
            if r.method == "GET" and r.url.path == "/connectors/old/offsets"
            else None
        ),
    )
    (result,) = rename(double)
    assert result.detail.startswith(
        "rename from old failed before the offsets moved: Kafka Connect 'c': GET "
        "/connectors/old/offsets failed: unexpected answer: expected a JSON object"
    )
    assert result.detail.endswith("; rolled back: old is RUNNING again")
    double.faults[0] = lambda r, d: (
        httpx.Response(200, json={"offsets": {"x": 1}})
        if r.method == "GET" and r.url.path == "/connectors/old/offsets"
        else None
    )
    (result,) = rename(double)
    assert result.detail == (
        "rename from old failed before the offsets moved: unexpected offsets answer: 'offsets' "
        "is dict, not a list; rolled back: old is RUNNING again"
    )


def test_an_unknown_old_state_is_rolled_back_to_running() -> None:
    double, _ = world()
    double.faults.insert(0, failing("POST", "/connectors"))
    (result,) = rename(double, seen_state="")
    assert result.detail.endswith("rolled back: old is RUNNING again")


def test_no_offsets_yet_means_no_patch() -> None:
    double, seen = world(offsets=[{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": None}])
    (result,) = rename(double)
    assert result.ok and not any(m == "PATCH" for m, _, _ in seen)


def failing(method: str, path: str) -> Any:
    def fault(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        if request.method == method and request.url.path == path:
            return error(500, "boom")
        return None

    return fault


@pytest.mark.parametrize(
    ("method", "path", "new_exists"),
    [
        ("POST", "/connectors", False),
        ("PATCH", "/connectors/new/offsets", False),
        ("GET", "/connectors/old/offsets", False),
    ],
)
def test_a_failure_before_the_offsets_moved_is_rolled_back(method: str, path: str, new_exists: bool) -> None:
    double, seen = world()
    double.faults.insert(0, failing(method, path))
    (result,) = rename(double)
    assert not result.ok and not result.wrote
    assert result.detail.startswith("rename from old failed before the offsets moved: ")
    assert result.detail.endswith("rolled back: old is RUNNING again")
    assert ("new" in double.connectors) is new_exists
    assert double.connectors["old"].state == "RUNNING" and double.connectors["old"].offsets == OFFSETS
    created = method != "POST" and path != "/connectors/old/offsets"
    assert (("DELETE", "/connectors/new", None) in writes(seen)) is created  # only what it created


def test_a_paused_old_one_is_rolled_back_to_paused() -> None:
    double, _ = world("PAUSED")
    double.faults.insert(0, failing("POST", "/connectors"))
    (result,) = rename(double)
    assert result.detail.endswith("rolled back: old is PAUSED again") and double.connectors["old"].state == "PAUSED"


def test_a_failed_roll_back_says_what_may_be_left() -> None:
    double, _ = world()
    double.faults.insert(0, failing("PATCH", "/connectors/new/offsets"))
    double.faults.insert(0, failing("DELETE", "/connectors/new"))
    (result,) = rename(double)
    assert "roll-back failed too" in result.detail and "old may be STOPPED, new may exist" in result.detail


def test_after_the_offsets_moved_a_failure_is_reported_not_undone() -> None:
    double, _ = world()
    double.faults.insert(0, failing("DELETE", "/connectors/old"))
    (result,) = rename(double)
    assert not result.ok and result.detail.startswith(
        "renamed from old, 2 offset partitions carried over, but the old connector old is left STOPPED: "
    )
    assert double.connectors["new"].state == "RUNNING" and double.connectors["old"].state == "STOPPED"
    double2, _ = world()
    double2.faults.insert(0, failing("PUT", "/connectors/new/resume"))
    (result,) = rename(double2)
    assert "but new did not start (STOPPED; old STOPPED too)" in result.detail
    assert double2.connectors["new"].offsets == OFFSETS and "old" in double2.connectors


def test_a_stop_that_fails_changes_nothing() -> None:
    double, seen = world()
    double.faults.insert(0, failing("PUT", "/connectors/old/stop"))
    (result,) = rename(double)
    assert not result.ok and list(double.connectors) == ["old"] and double.connectors["old"].state == "RUNNING"
    assert writes(seen) == []  # the refused stop itself never reached the server


# --- moves between clusters (issue 49): moves.move over two doubles -----------------------------


class Marks:
    """An ownership record as a move sees it, in memory; `refuse` makes every write fail."""

    def __init__(self, refuse: bool = False) -> None:
        self.log: list[tuple[str, str]] = []
        self.refuse = refuse

    def _note(self, what: str, name: str) -> None:
        if self.refuse:
            raise HephaestusError("ownership record: disk full")
        self.log.append((what, name))

    def release(self, name: str) -> None:
        self._note("release", name)

    def forget(self, name: str) -> None:
        self._note("forget", name)

    def moving(self, name: str, source: str) -> None:
        self._note(f"moving from {source}", name)


def move_step(live_state: str = "RUNNING") -> Step:
    return Step("move", "s", config=cfg(), connector_class=SINK, live_state=live_state, moved_from="a")


def two(a_state: str | None = "RUNNING", b_state: str | None = None) -> tuple[ConnectDouble, ConnectDouble]:
    a, b = ConnectDouble(), ConnectDouble()
    if a_state is not None:
        a.add("s", cfg(), state=a_state).offsets = list(OFFSETS)
    if b_state is not None:
        b.add("s", cfg(), state=b_state)
    return a, b


@pytest.mark.parametrize("state", ["PAUSED", "STOPPED", "RUNNING"])
def test_a_move_ends_in_the_state_asked_for(state: str) -> None:
    a, b = two()
    here, there = Marks(), Marks()
    detail = moves.move(client(b), move_step(), state, moves.Peer(client(a), there), here)
    assert detail == "moved from a, 2 offset partitions carried over"
    assert b.connectors["s"].state == state and b.connectors["s"].offsets == OFFSETS and "s" not in a.connectors
    assert here.log == [("moving from a", "s")] and there.log == [("release", "s"), ("forget", "s")]


def test_a_move_with_no_ownership_records_still_moves() -> None:
    a, b = two()
    assert moves.move(client(b), move_step(), "RUNNING", moves.Peer(client(a))).startswith("moved from a")
    assert "s" not in a.connectors and b.connectors["s"].state == "RUNNING"


def test_no_mark_no_move() -> None:
    a, b = two()
    with pytest.raises(moves.RenameFailed, match="^not applied: ownership record: disk full$"):
        moves.move(client(b), move_step(), "RUNNING", moves.Peer(client(a)), Marks(refuse=True))
    assert a.writes() == [] and b.writes() == [] and a.connectors["s"].state == "RUNNING"


def test_gone_from_the_old_cluster_and_stopped_here_is_started() -> None:
    a, b = two(a_state=None, b_state="STOPPED")
    detail = moves.move(client(b), move_step(), "PAUSED", moves.Peer(client(a)))
    assert detail == "moved from a by an earlier run, which deleted it there"
    assert b.connectors["s"].state == "PAUSED" and a.writes() == []


def test_gone_from_the_old_cluster_and_running_here_is_left_alone() -> None:
    a, b = two(a_state=None, b_state="RUNNING")
    moves.move(client(b), move_step(), "RUNNING", moves.Peer(client(a)))
    assert b.writes() == [] and a.writes() == []


def test_on_neither_cluster_there_is_nothing_to_move() -> None:
    a, b = two(a_state=None)
    here = Marks()
    with pytest.raises(moves.RenameFailed, match="^s runs on neither a nor here: nothing to move$"):
        moves.move(client(b), move_step(), "RUNNING", moves.Peer(client(a)), here)
    assert here.log == [("moving from a", "s"), ("forget", "s")]  # nothing came of it here


def patch_fails(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
    return error(500, "offsets topic unavailable") if request.method == "PATCH" else None


def test_a_copy_an_earlier_run_made_here_is_kept_when_the_offsets_fail_again() -> None:
    a, b = two(a_state="STOPPED", b_state="STOPPED")
    b.faults.append(patch_fails)
    here = Marks()
    with pytest.raises(moves.RenameFailed, match="failed before the offsets moved") as caught:
        moves.move(client(b), move_step("STOPPED"), "RUNNING", moves.Peer(client(a)), here)
    assert "rolled back: s is STOPPED on a again" in str(caught.value)
    assert b.connectors["s"].state == "STOPPED" and ("DELETE", "/connectors/s") not in b.writes()
    assert here.log == [("moving from a", "s")]  # its copy is still here: the mark stays


@pytest.mark.parametrize(("live", "said"), [("PAUSED", "PAUSED"), ("", "RUNNING")])
def test_a_roll_back_puts_the_old_one_back_in_its_state(live: str, said: str) -> None:
    a, b = two()
    b.faults.append(patch_fails)
    with pytest.raises(moves.RenameFailed, match=f"rolled back: s is {said} on a again"):
        moves.move(client(b), move_step(live), "RUNNING", moves.Peer(client(a)), Marks())
    assert a.connectors["s"].state == said and "s" not in b.connectors


def test_a_start_that_fails_after_the_offsets_moved_is_reported_not_undone() -> None:
    a, b = two()
    b.faults.append(lambda req, d: error(500, "rebalancing") if req.url.path.endswith("/resume") else None)
    with pytest.raises(moves.RenameFailed, match="carried over, but s did not start here .STOPPED here and on a"):
        moves.move(client(b), move_step(), "RUNNING", moves.Peer(client(a)), Marks())
    assert b.connectors["s"].offsets == OFFSETS and a.connectors["s"].state == "STOPPED"

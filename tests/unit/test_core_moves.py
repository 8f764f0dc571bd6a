"""Renames with the offsets API (reconciler.moves) against the strict Connect double: the
exact sequence, the end state, and the roll-back at each failure (mutation-tested core)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hephaestus.reconciler.apply import execute
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Desired, Live, Policy, Scope, plan
from tests.connect_double import ConnectDouble, error
from tests.unit.conftest import cleared
from tests.unit.test_core_apply import bodies, cfg, client, no_journal, opts

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

"""`status` names a failed task's cause no restart fixes (fleet.causes, issue 45), read from the
real traces of tests/unit/data/traces; a transient one is only its FAILED task."""

from __future__ import annotations

from pathlib import Path

from hephaestus.connect.models import LiveConnector, TaskState
from hephaestus.fleet.slots import Limits
from hephaestus.settings import PolicySettings
from hephaestus.status.model import problems_of
from hephaestus.status.run import _view

TRACES = Path(__file__).parent / "data" / "traces"


def sink(state: str, trace: str | None) -> LiveConnector:
    task = TaskState(0, state, "w:8083", trace)
    return LiveConnector("s", "sink", "RUNNING", "w:8083", None, (task,), {"connector.class": "x"})


def test_a_not_null_violation_is_named_permanent() -> None:
    v = _view("c", sink("FAILED", (TRACES / "jdbc-sink-not-null.txt").read_text()), {}, Limits.of(PolicySettings()))
    assert v.cause.startswith("not-null constraint violated")
    assert problems_of(v)[-1] == f"permanent: {v.cause}: no restart fixes it" and "task 0 FAILED" in problems_of(v)


def test_a_transient_failure_and_a_running_task_name_no_cause() -> None:
    limits = Limits.of(PolicySettings())
    refused = (TRACES / "jdbc-sink-connection-refused.txt").read_text()
    assert _view("c", sink("FAILED", refused), {}, limits).cause == ""
    assert _view("c", sink("RUNNING", (TRACES / "jdbc-sink-not-null.txt").read_text()), {}, limits).cause == ""
    assert _view("c", sink("FAILED", None), {}, limits).cause == ""

"""Applying a plan (reconciler.apply): what is validated, written, waited for and journalled,
and how each failure of a write is reported (mutation-tested core). The cluster is the strict
Connect double (tests/connect_double.py) behind httpx.MockTransport, or a stub client where
a failure must be exact."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.connect.errors import Call, ClusterUnreachable, ConnectError, OutcomeUnknown
from hephaestus.connect.ready import ReadyOptions, Target
from hephaestus.reconciler.apply import (
    ApplyOptions,
    _target,
    execute,
    record_outcomes,
    validate_all,
)
from hephaestus.reconciler.journal import StepJournal
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Desired, Live, Plan, Policy, Scope, Step, plan
from hephaestus.state.audit import AuditUnavailable, Journal
from tests.connect_double import ConnectDouble, Fault
from tests.unit.conftest import cleared

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
OTHER = "com.example.OtherSink"
CALL = Call("c", "http://connect", "POST", "/connectors", "a")
FAST = ReadyOptions(timeout_s=0.2, stable_s=0, poll_s=0.001)


def cfg(cls: str = SINK, **extra: str) -> dict[str, str]:
    return {"connector.class": cls, "topics": "t", **extra}


def client(double: ConnectDouble) -> ConnectClient:
    return ConnectClient(
        "http://connect",
        name="c",
        transport=httpx.MockTransport(double),
        retry=RetryPolicy.immediate(1),
        settle_s=0.0,
        poll_s=0.0,
    )


def opts(**kwargs: Any) -> ApplyOptions:
    return ApplyOptions(**{"ready": FAST, **kwargs})


def no_journal() -> Journal:
    return StepJournal(Journal(None, "run", "c"), {})


def bodies(sink: list[tuple[str, str, Any]]) -> Fault:
    """A fault that lets everything through and records (method, path, body)."""

    def fault(request: httpx.Request, double: ConnectDouble) -> None:
        sink.append((request.method, request.url.path, json.loads(request.content) if request.content else None))

    return fault


class Recording(Journal):
    """A journal that keeps what it is told in memory and refuses the names in `refuse`."""

    def __init__(self, refuse: frozenset[str] = frozenset(), refuse_outcomes: bool = False) -> None:
        super().__init__(None, "run", "c", {})
        self.refuse = refuse
        self.refuse_outcomes = refuse_outcomes
        self.intents: list[str] = []
        self.outcomes: list[tuple[str, StepResult]] = []

    def intent(self, step: Step) -> None:
        if step.name in self.refuse:
            raise AuditUnavailable("audit log x cannot be written: No space left on device")
        self.intents.append(step.name)

    def outcome(self, step: Step, result: StepResult) -> None:
        if self.refuse_outcomes:
            raise AuditUnavailable("audit log x cannot be written: Read-only file system")
        self.outcomes.append((step.name, result))


class Stub:
    """A client whose writes raise what a test says (by connector name)."""

    def __init__(self, raises: dict[str, Exception]) -> None:
        self.raises = raises
        self.sent: list[str] = []

    def _write(self, name: str, answer: Any) -> Any:
        self.sent.append(name)
        if name in self.raises:
            raise self.raises[name]
        return answer

    def create(self, name: str, config: dict[str, str], initial_state: str | None = None) -> str:
        return cast(str, self._write(name, "created"))

    def put_config(self, name: str, config: dict[str, str]) -> bool:
        return cast(bool, self._write(name, False))

    def delete(self, name: str) -> str:
        return cast(str, self._write(name, "deleted"))

    def statuses(self) -> dict[str, Any]:
        return {}


# --- validation ------------------------------------------------------------------------------


def test_only_creates_and_updates_are_validated_each_under_its_name() -> None:
    seen: list[tuple[str, str, Any]] = []
    double = ConnectDouble(bodies(seen))
    double.add("upd", cfg(**{"batch.size": "1"}))
    double.add("same", cfg())
    double.add("gone", cfg())
    desired = {
        "new": Desired("new", cfg()),
        "upd": Desired("upd", cfg(OTHER, **{"batch.size": "2"})),
        "same": Desired("same", cfg()),
    }
    live = {n: Live(n, c.config, "sink") for n, c in double.connectors.items()}
    p = plan("c", desired, live, Policy())
    assert validate_all(client(double), p, 2) == {}
    validated = sorted((path, body["name"]) for method, path, body in seen)
    assert validated == [
        (f"/connector-plugins/{OTHER}/config/validate", "upd"),
        (f"/connector-plugins/{SINK}/config/validate", "new"),
    ]


def test_validation_errors_and_failures_are_reported_per_connector() -> None:
    def answers(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        body = json.loads(request.content or b"{}")
        if body.get("connector.class") == OTHER:
            return httpx.Response(500, json={"error_code": 500, "message": "x.BadRequestException: no class"})
        if body.get("name") == "bad":
            configs = [{"definition": {"name": "topics"}, "value": {"name": "topics", "errors": ["Missing topics"]}}]
            return httpx.Response(200, json={"name": SINK, "error_count": 1, "configs": configs})
        if body.get("name") == "odd":  # errors listed but not counted: Connect's count decides
            configs = [{"definition": {"name": "topics"}, "value": {"name": "topics", "errors": ["stale"]}}]
            return httpx.Response(200, json={"name": SINK, "error_count": 0, "configs": configs})
        return None

    desired = {n: Desired(n, cfg(OTHER if n == "unknown" else SINK)) for n in ("ok", "bad", "odd", "unknown")}
    invalid = validate_all(client(ConnectDouble(answers)), plan("c", desired, {}, Policy()), 4)
    assert set(invalid) == {"bad", "unknown"}
    assert invalid["bad"] == {"topics": ("Missing topics",)}
    (why,) = invalid["unknown"]["connector.class"]
    assert "BadRequestException: no class" in why and why.startswith("Kafka Connect 'c': PUT /connector-plugins/")
    assert list(invalid["unknown"]) == ["connector.class"]


def slow_writes(double: ConnectDouble, peak: list[int]) -> httpx.MockTransport:
    """The double, each non-GET request taking 10 ms: `peak` records the most at once."""
    inflight = [0]
    lock = threading.Lock()

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return double(request)
        with lock:
            inflight[0] += 1
            peak[0] = max(peak[0], inflight[0])
        time.sleep(0.01)
        with lock:
            inflight[0] -= 1
        return double(request)

    return httpx.MockTransport(handle)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_bounds_validation_and_writes(concurrency: int) -> None:
    double = ConnectDouble()
    p = plan("c", {n: Desired(n, cfg()) for n in "abcd"}, {}, Policy())
    peak = [0]
    connect = ConnectClient("http://connect", transport=slow_writes(double, peak), retry=RetryPolicy.immediate(1))
    assert validate_all(connect, p, concurrency) == {}
    assert (peak[0] == 1) is (concurrency == 1)
    peak[0] = 0
    results = execute(connect, p, opts(concurrency=8, write_concurrency=concurrency), no_journal(), cleared(p))
    assert all(r.ok for r in results) and (peak[0] == 1) is (concurrency == 1)


# --- writes and readiness --------------------------------------------------------------------


def test_defaults() -> None:
    assert ApplyOptions() == ApplyOptions(
        concurrency=4, ready=ReadyOptions(), progress=None, initial_state="RUNNING", write_concurrency=64
    )


def test_create_update_delete_each_reported_with_its_action_and_final_state() -> None:
    seen: list[tuple[str, str, Any]] = []
    double = ConnectDouble(bodies(seen))
    double.add("upd", cfg(**{"batch.size": "1"}), state="PAUSED")
    double.add("old", cfg(topics="old"))
    desired = {"new": Desired("new", cfg()), "upd": Desired("upd", cfg(**{"batch.size": "2"}))}
    live = {n: Live(n, c.config, "sink", c.state) for n, c in double.connectors.items()}
    p = plan("c", desired, live, Policy(force=True), Scope(frozenset(live)))
    progress: list[tuple[StepResult, int, int]] = []
    results = execute(
        client(double), p, opts(progress=lambda r, d, t: progress.append((r, d, t))), no_journal(), cleared(p)
    )
    assert results == (
        StepResult("new", "create", True, "RUNNING", True),
        StepResult("old", "delete", True, "deleted", True),
        StepResult("upd", "update", True, "PAUSED", True),
    )
    # The delete is not waited for: reported first; then each as it becomes ready.
    assert [done for _, done, _ in progress] == [1, 2, 3] and {total for _, _, total in progress} == {3}
    assert progress[0][0] == StepResult("old", "delete", True, "deleted", True)
    assert {r for r, _, _ in progress[1:]} == {results[0], results[2]}
    writes = [(m, path, body) for m, path, body in seen if m != "GET" and not path.endswith("/validate")]
    assert ("POST", "/connectors", {"name": "new", "config": cfg()}) in writes
    assert ("PUT", "/connectors/upd/config", cfg(**{"batch.size": "2"})) in writes
    assert ("DELETE", "/connectors/old", None) in writes and "upd" in double.connectors


def test_a_delete_of_a_connector_already_gone_is_ok() -> None:
    p = Plan("c", (Step("delete", "ghost", connector_class=SINK),))
    assert execute(client(ConnectDouble()), p, opts(), no_journal(), cleared(p)) == (
        StepResult("ghost", "delete", True, "already gone", True),
    )


@pytest.mark.parametrize("initial", ["PAUSED", "STOPPED"])
def test_creates_start_in_the_initial_state_asked_for(initial: str) -> None:
    seen: list[tuple[str, str, Any]] = []
    double = ConnectDouble(bodies(seen))
    p = plan("c", {"a": Desired("a", cfg())}, {}, Policy())
    assert execute(client(double), p, opts(initial_state=initial), no_journal(), cleared(p)) == (
        StepResult("a", "create", True, initial, True),
    )
    assert ("POST", "/connectors", {"name": "a", "config": cfg(), "initial_state": initial}) in seen


def test_a_create_that_fails_after_starting_is_a_failure() -> None:
    double = ConnectDouble()
    double.on_start["a"] = ["RUNNING", "FAILED"]
    p = plan("c", {"a": Desired("a", cfg())}, {}, Policy())
    (result,) = execute(
        client(double), p, opts(ready=ReadyOptions(timeout_s=1, stable_s=0.05, poll_s=0.001)), no_journal(), cleared(p)
    )
    assert result == StepResult(
        "a",
        "create",
        False,
        "FAILED (task 0): org.apache.kafka.connect.errors.ConnectException: boom | Caused by: the root",
        wrote=True,
    )


@pytest.mark.parametrize(
    ("step", "target"),
    [
        (Step("create", "a", config=cfg()), Target("a", frozenset({"RUNNING"}), None)),
        (Step("update", "a", config=cfg(), live_state="PAUSED"), Target("a", frozenset({"PAUSED"}), cfg())),
        (Step("update", "a", config=cfg(), live_state="STOPPED"), Target("a", frozenset({"STOPPED"}), cfg())),
        (Step("update", "a", config=cfg(), live_state="RUNNING"), Target("a", frozenset({"RUNNING"}), cfg())),
        # A FAILED or UNASSIGNED connector is updated to run (the new config is the fix).
        (Step("update", "a", config=cfg(), live_state="FAILED"), Target("a", frozenset({"RUNNING"}), cfg())),
        (Step("update", "a", config=cfg(), live_state=""), Target("a", frozenset({"RUNNING"}), cfg())),
        (Step("create", "a", config=cfg(), live_state="PAUSED"), Target("a", frozenset({"RUNNING"}), None)),
        # A rename ends in the old one's state, on the new config.
        (
            Step("rename", "a", config=cfg(), live_state="PAUSED", renamed_from="o"),
            Target("a", frozenset({"PAUSED"}), cfg()),
        ),
        (
            Step("rename", "a", config=cfg(), live_state="FAILED", renamed_from="o"),
            Target("a", frozenset({"RUNNING"}), cfg()),
        ),
    ],
)
def test_readiness_targets(step: Step, target: Target) -> None:
    got = _target(step, ApplyOptions())
    assert (got, got.config) == (target, target.config)


def test_a_create_may_be_asked_to_start_stopped() -> None:
    got = _target(Step("create", "a", config=cfg()), ApplyOptions(initial_state="STOPPED"))
    assert got.states == frozenset({"STOPPED"}) and got.config is None


# --- failures of a write -----------------------------------------------------------------------


def test_each_failure_of_a_write_is_reported_and_the_others_go_on() -> None:
    stub = Stub(
        {
            "refused": ConnectError("boom", CALL, 500),
            "dead": ClusterUnreachable("no answer for longer than the retry budget", CALL),
            "maybe": OutcomeUnknown("the write may have been applied", CALL),
        }
    )
    desired = {n: Desired(n, cfg()) for n in ("dead", "maybe", "refused")}
    p = plan("c", desired, {}, Policy())
    results = execute(cast(ConnectClient, stub), p, opts(), Recording(), cleared(p))
    assert results == (
        StepResult("dead", "create", False, "unknown: cluster unreachable (not sent)"),
        StepResult("maybe", "create", False, "unknown: the write may have been applied"),
        StepResult("refused", "create", False, str(ConnectError("boom", CALL, 500))),
    )


def test_no_journal_no_write() -> None:
    stub = Stub({})
    p = Plan("c", (Step("update", "a", config=cfg()), Step("delete", "b", connector_class=SINK)))
    journal = Recording(refuse=frozenset({"a"}))
    results = execute(cast(ConnectClient, stub), p, opts(), journal, cleared(p))
    assert results == (
        StepResult("a", "update", False, "not applied: audit log x cannot be written: No space left on device"),
        StepResult("b", "delete", True, "deleted", True),
    )
    assert stub.sent == ["b"] and journal.intents == ["b"]


def test_outcomes_go_to_the_journal_in_plan_order() -> None:
    p = Plan("c", (Step("create", "a", config=cfg()), Step("unchanged", "u"), Step("delete", "b")))
    results = (StepResult("a", "create", True, "RUNNING"), StepResult("b", "delete", False, "boom"))
    journal = Recording()
    assert record_outcomes(journal, p, results) == ""
    assert journal.outcomes == [("a", results[0]), ("b", results[1])]


def test_an_outcome_the_journal_refuses_is_reported_not_raised(tmp_path: Path) -> None:
    p = Plan("c", (Step("create", "a", config=cfg()),))
    results = (StepResult("a", "create", True, "RUNNING"),)
    assert (
        record_outcomes(Recording(refuse_outcomes=True), p, results)
        == "audit log x cannot be written: Read-only file system"
    )
    (tmp_path / "file").write_text("")
    refused = record_outcomes(StepJournal(Journal(tmp_path / "file" / "audit.jsonl", "r", "c"), {}), p, results)
    assert refused.startswith(f"audit log {tmp_path / 'file' / 'audit.jsonl'} cannot be written")


def test_journal_file_records_intent_then_outcome(tmp_path: Path) -> None:
    log = tmp_path / "audit" / "log.jsonl"
    journal = StepJournal(Journal(log, "run1", "c"), {})
    double = ConnectDouble()
    p = plan("c", {"a": Desired("a", cfg())}, {}, Policy())
    results = execute(client(double), p, opts(), journal, cleared(p))
    assert record_outcomes(journal, p, results) == ""
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["connector"], e["action"], e["outcome"], e["detail"]) for e in entries] == [
        ("a", "create", "intent", ""),
        ("a", "create", "ok", "RUNNING"),
    ]

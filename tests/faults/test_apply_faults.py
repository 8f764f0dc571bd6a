"""A reconcile under faults, end to end through the CLI, against the strict Connect double
served on loopback: readiness, health, a dead cluster, the audit journal, refused plans."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hephaestus.cli import run
from hephaestus.state.ownership import OwnershipFile, claims_of
from tests.connect_double import ConnectDouble, serve
from tests.loopback import slack_receiver

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
SOURCE = "io.debezium.connector.postgresql.PostgresConnector"

pytestmark = pytest.mark.faults


# Git holds no plaintext credential (every command refuses such a file): the canary is the value
# the Connect workers' secrets file gives the placeholder, readable here (`secrets_file`), so
# hephaestus holds it while it works and must show it nowhere.
SECRETS = Path(tempfile.gettempdir()) / "hephaestus-faults-secrets.properties"
PASSWORD = "${file:" + str(SECRETS) + ":auth_password}"


def sink(topic: str = "t", **extra: str) -> dict[str, str]:
    return {"connector.class": SINK, "topics": topic, "connection.password": PASSWORD, **extra}


class Setup:
    def __init__(self, root: Path, url: str, double: ConnectDouble, capsys: pytest.CaptureFixture[str]) -> None:
        self.root, self.url, self.double, self.capsys = root, url, double, capsys
        self.folder = root / "connectors" / "c" / "sink"
        self.folder.mkdir(parents=True)
        self.policy: dict[str, Any] = {"stability_window_s": 0.3, "ready_timeout_s": 20, "unassigned_grace_s": 0.5}

    def file(self, name: str, config: dict[str, str]) -> None:
        (self.folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config}))

    def own(self, *names: str) -> None:
        OwnershipFile(self.root / ".hephaestus/ownership.json").claim(
            "default", "c", claims_of(names, "*", "test", "r0")
        )

    def project(self, **extra: Any) -> Path:
        SECRETS.write_text("auth_password=pw-canary-1\n")
        doc = {
            "clusters": {
                "c": {"url": self.url, "connectors": "connectors/c", "timeout_s": 2, "secrets_file": str(SECRETS)}
            },
            "policy": self.policy,
            "audit_log": "audit/audit.jsonl",
            **extra,
        }
        path = self.root / "hephaestus.yaml"
        path.write_text(json.dumps(doc))
        return path

    def cli(self, *args: str, **extra: Any) -> tuple[int, str]:
        code = run([*args, "--project", str(self.project(**extra))])
        out = self.capsys.readouterr()
        return code, out.out + out.err

    def reconcile(self, *args: str, **extra: Any) -> tuple[int, dict[str, Any]]:
        code, out = self.cli("reconcile", "--auto-approve", "-o", "json", *args, **extra)
        return code, json.loads(out[out.index("{") : out.rindex("}") + 1])

    def audit(self) -> list[dict[str, Any]]:
        path = self.root / "audit" / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def setup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Setup]:
    double = ConnectDouble()
    with serve(double) as url:
        yield Setup(tmp_path, url, double, capsys)


# --- readiness --------------------------------------------------------------------------


def test_running_then_failed_inside_the_window_fails_the_step_with_its_root_cause(setup: Setup) -> None:
    setup.file("b", sink())
    setup.double.on_start["b"] = ["RUNNING", "RUNNING", "FAILED"]
    setup.policy["stability_window_s"] = 30  # far longer than the double takes to fail
    code, report = setup.reconcile()
    results = {r["name"]: r for r in report["clusters"][0]["results"]}
    assert code == 1
    assert not results["b"]["ok"] and results["b"]["detail"].startswith("FAILED (task 0)")
    assert "Caused by: the root" in results["b"]["detail"]


def test_ready_means_running_for_the_window(setup: Setup) -> None:
    setup.file("a", sink())
    code, report = setup.reconcile()
    assert code == 0 and report["clusters"][0]["results"] == [
        {"name": "a", "action": "create", "ok": True, "detail": "RUNNING", "wrote": True}
    ]


def test_an_update_waits_for_tasks_on_the_new_config(setup: Setup) -> None:
    setup.double.add("a", sink())
    setup.file("a", sink(**{"batch.size": "7"}))
    stale = [2]

    def old_tasks(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        # The first task listings after the PUT still show the old generation's config.
        if request.url.path.endswith("/tasks") and stale[0]:
            stale[0] -= 1
            return httpx.Response(200, json=[{"id": {"connector": "a", "task": 0}, "config": sink()}])
        return None

    setup.double.faults.append(old_tasks)
    code, report = setup.reconcile()
    assert code == 0 and stale == [0]
    assert [r["detail"] for r in report["clusters"][0]["results"]] == ["RUNNING"]


# --- health in the validate job -----------------------------------------------------------


def test_validate_reports_a_failed_managed_connector_in_every_format(setup: Setup) -> None:
    setup.file("a", sink())
    setup.double.add("a", sink()).task_states = ["FAILED"]
    setup.double.connectors["a"].trace = "java.sql.SQLException: relation missing\nCaused by: no table pw-canary-1"
    code, report = setup.reconcile("--dry-run", "--exit-code")
    assert code == 2
    (health,) = report["clusters"][0]["health"]
    assert health["name"] == "a" and "FAILED (task 0)" in health["reason"] and "pw-canary-1" not in health["reason"]
    for fmt in ("text", "markdown"):
        code, out = setup.cli("reconcile", "--auto-approve", "--dry-run", "--exit-code", "-o", fmt)
        assert code == 2 and "relation missing" in out and "pw-canary-1" not in out
    assert setup.cli("reconcile", "--auto-approve", "--dry-run", "--exit-code", "--drift-only")[0] == 0
    assert setup.double.writes() == []


def test_validate_job_exits_2_on_a_failed_connector(setup: Setup) -> None:
    setup.file("a", sink())
    setup.double.add("a", sink()).state = "FAILED"
    project = setup.project()
    code = run(["job", "run", "validate_kafka_connectors", "--project", str(project)])
    assert code == 2 and "FAILED (connector)" in setup.capsys.readouterr().out


def test_unassigned_is_reported_only_past_the_grace(setup: Setup) -> None:
    setup.file("a", sink())
    setup.file("b", sink())
    setup.double.add("a", sink()).task_states = ["UNASSIGNED"]
    setup.double.add("b", sink()).task_states = ["UNASSIGNED"]
    setup.double.on_start["b"] = []
    setup.double.connectors["b"].script = ["UNASSIGNED", "RUNNING"]  # reassigned during the grace
    code, report = setup.reconcile("--dry-run", "--exit-code")
    assert code == 2 and [h["name"] for h in report["clusters"][0]["health"]] == ["a"]


def test_an_apply_that_leaves_a_managed_connector_failed_exits_1(setup: Setup) -> None:
    setup.file("a", sink())
    setup.double.add("a", sink()).state = "FAILED"
    setup.file("b", sink())
    code, report = setup.reconcile()
    assert code == 1 and report["clusters"][0]["health"][0]["name"] == "a"


# --- a dead cluster -----------------------------------------------------------------------


def test_a_cluster_dying_mid_apply_ends_every_step_unknown_with_bounded_requests(setup: Setup) -> None:
    for i in range(30):
        setup.file(f"s{i:02}", sink())
    dead = [False]

    def die(request: httpx.Request, double: ConnectDouble) -> Exception | None:
        if request.method == "POST" and len(double.writes()) >= 5:
            dead[0] = True
        return httpx.ConnectError("refused") if dead[0] else None

    setup.double.faults.append(die)
    # Four writes in flight, so most are still queued when the cluster dies (with the default
    # 64 every write is already sent: each is then `unknown`, as the first assertion says).
    setup.policy["write_concurrency"] = 4
    code, report = setup.reconcile()
    results = report["clusters"][0]["results"]
    assert code == 1 and len(results) == 30
    # The server took the writes and dropped the connection: each may have landed, and no
    # re-read could tell. Once nothing answered for the retry budget, the rest were not sent.
    assert all(r["ok"] is False and r["detail"].startswith("unknown: ") for r in results)
    assert any(r["detail"] == "unknown: cluster unreachable (not sent)" for r in results)
    assert not any("RUNNING" in r["detail"] for r in results)


# --- the audit journal --------------------------------------------------------------------


def test_intent_is_recorded_before_the_write_and_the_outcome_after(setup: Setup) -> None:
    setup.file("a", sink())
    assert setup.reconcile()[0] == 0
    entries = setup.audit()
    assert [(e["connector"], e["outcome"]) for e in entries] == [("a", "intent"), ("a", "ok")]
    assert "pw-canary-1" not in json.dumps(entries)


def test_an_unwritable_audit_log_stops_the_run_before_its_first_write(setup: Setup) -> None:
    setup.file("a", sink())
    (setup.root / "audit").mkdir()
    (setup.root / "audit" / "audit.jsonl").mkdir()  # a directory: unwritable as a file, even for root
    code, report = setup.reconcile()
    assert code == 1 and "nothing applied" in report["clusters"][0]["error"]
    assert setup.double.writes() == []


def test_an_audit_log_lost_after_the_writes_still_reports_and_notifies(setup: Setup, tmp_path: Path) -> None:
    setup.file("a", sink())
    log = setup.root / "audit" / "audit.jsonl"

    def break_log(request: httpx.Request, double: ConnectDouble) -> None:
        if request.method == "POST" and request.url.path == "/connectors" and log.exists():
            log.unlink()
            log.mkdir()  # from now on the outcome cannot be appended
        return None

    setup.double.faults.append(break_log)
    with slack_receiver() as slack:
        os.environ["HEPH_TEST_WEBHOOK"] = slack.url
        try:
            code, report = setup.reconcile(slack={"webhook_env": "HEPH_TEST_WEBHOOK"})
        finally:
            del os.environ["HEPH_TEST_WEBHOOK"]
    cluster = report["clusters"][0]
    assert code == 1 and cluster["results"][0]["ok"] and "audit log" in cluster["error"]
    assert any("audit log" in t for t in slack.texts())


# --- refused plans ------------------------------------------------------------------------


def test_a_refused_plan_exits_2_and_deletes_nothing(setup: Setup) -> None:
    for i in range(3):
        setup.double.add(f"s{i}", sink())
    setup.own("s0", "s1", "s2")
    setup.file("s0", sink())  # two of three owned sinks gone from git: 67 % > 50 %
    code, report = setup.reconcile()
    assert code == 2 and "would delete 2 of 3" in report["clusters"][0]["refused"]
    assert setup.double.writes() == [] and set(setup.double.connectors) == {"s0", "s1", "s2"}
    assert setup.cli("reconcile", "--auto-approve", "--dry-run")[0] == 2
    code, report = setup.reconcile("--force")
    assert code == 0 and set(setup.double.connectors) == {"s0"}

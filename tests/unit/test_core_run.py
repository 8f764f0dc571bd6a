"""One reconcile run (reconciler.run) over clusters served by the strict Connect double:
what is planned, when nothing may be written, what is applied, what the outcome and the Slack
message say (mutation-tested core)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.connect.ready import ReadyOptions
from hephaestus.errors import HephaestusError
from hephaestus.notify import slack as slack_mod
from hephaestus.project import Cluster, Project, SecretRef
from hephaestus.reconciler.apply import ApplyOptions
from hephaestus.reconciler.outcome import ClusterOutcome, StepResult
from hephaestus.reconciler.plan import Plan, Policy, Unhealthy
from hephaestus.reconciler.run import RunOptions, apply_options_of, policy_of, reconcile
from hephaestus.settings import PolicySettings, StateSettings, of
from hephaestus.state import ownership
from hephaestus.state.backend import DEFAULT_TIMEOUT_S, ownership_store
from tests.connect_double import ConnectDouble

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
FAST = ApplyOptions(ready=ReadyOptions(timeout_s=0.5, stable_s=0, poll_s=0.001))


def cfg(**extra: str) -> dict[str, str]:
    return {"connector.class": SINK, "topics": "t", **extra}


class World:
    """A project on disk (connector folders per cluster) and one Connect double per cluster."""

    def __init__(
        self,
        root: Path,
        *names: str,
        policy: dict[str, Any] | None = None,
        audit: bool = True,
        select: Sequence[str] = (),
    ) -> None:
        self.root = root
        self.doubles = {n: ConnectDouble() for n in names}
        self.clients: dict[str, ConnectClient] = {}
        self.validating = 0
        self.peak_validating = 0  # the most validations at once (each takes 10 ms)
        self._lock = threading.Lock()
        clusters = {n: Cluster(n, f"http://{n}.test:8083", root / "connectors" / n, tuple(select)) for n in names}
        for c in clusters.values():
            for kind in ("sink", "custom"):
                (c.connectors / kind).mkdir(parents=True)
        self.project = Project(
            "p.yaml", clusters, {}, of(PolicySettings, policy or {}), root / "audit.jsonl" if audit else None, base=root
        )

    def git(self, cluster: str, name: str, config: dict[str, str], kind: str = "sink") -> None:
        path = self.project.clusters[cluster].connectors / kind / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"name": name, "config": config}))

    def client(self, cluster: Cluster) -> ConnectClient:
        double = self.doubles[cluster.name]

        def handle(request: httpx.Request) -> httpx.Response:
            if not request.url.path.endswith("/validate"):
                return double(request)
            with self._lock:
                self.validating += 1
                self.peak_validating = max(self.peak_validating, self.validating)
            time.sleep(0.01)
            with self._lock:
                self.validating -= 1
            return double(request)

        c = ConnectClient(
            cluster.url,
            name=cluster.name,
            transport=httpx.MockTransport(handle),
            retry=RetryPolicy.immediate(1),
            settle_s=0.0,
            poll_s=0.0,
        )
        self.clients[cluster.name] = c
        return c

    def run(
        self, options: RunOptions = RunOptions(apply=FAST), hooks: Any = None, clusters: Sequence[str] | None = None
    ) -> list[ClusterOutcome]:
        chosen = [self.project.clusters[n] for n in (clusters or self.project.clusters)]
        return reconcile(self.project, chosen, options, self.client, hooks)

    def own(self, cluster: str, *names: str) -> None:
        ownership_store(self.project).claim("default", cluster, ownership.claims_of(names, "*", "test", "r0"))

    def owned(self, cluster: str) -> list[str]:
        return sorted(ownership_store(self.project).owned("default", cluster))

    def audit(self) -> list[dict[str, Any]]:
        path = self.root / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def slack(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str | None, str]]:
    posted: list[tuple[str | None, str]] = []

    def post(webhook: str | None, text: str) -> bool:
        posted.append((webhook, text))
        return True

    monkeypatch.setattr(slack_mod, "post", post)
    return posted


# --- settings from the project file --------------------------------------------------------------


def test_policy_and_apply_options_defaults() -> None:
    project = Project("p.yaml", {}, {}, PolicySettings())
    assert policy_of(project, False) == Policy(
        ignore_keys=frozenset({"__internal.*"}), max_deletes=10, max_delete_share=0.5, force=False
    )
    assert policy_of(project, True).force is True
    assert apply_options_of(project) == ApplyOptions(
        concurrency=4, ready=ReadyOptions(timeout_s=180.0, stable_s=10.0), progress=None, initial_state="RUNNING"
    )
    assert RunOptions() == RunOptions(
        dry_run=False,
        force=False,
        deploy_custom=False,
        apply=ApplyOptions(),
        drift_only=False,
        unassigned_grace_s=60.0,
        lock_timeout_s=DEFAULT_TIMEOUT_S,
    )


def test_policy_and_apply_options_from_the_project_file() -> None:
    policy = {
        "ignore_keys": ["x.managed", "y"],
        "max_deletes": 3,
        "max_delete_share": 0.25,
        "concurrency": 2,
        "write_concurrency": 3,
        "ready_timeout_s": 30.0,
        "stability_window_s": 2.0,
        "initial_state": "PAUSED",
    }
    project = Project("p.yaml", {}, {}, of(PolicySettings, policy))
    assert policy_of(project, False) == Policy(
        ignore_keys=frozenset({"__internal.*", "x.managed", "y"}), max_deletes=3, max_delete_share=0.25, force=False
    )

    def progress(result: StepResult, done: int, total: int) -> None:
        pass

    assert apply_options_of(project, progress) == ApplyOptions(
        concurrency=2,
        write_concurrency=3,
        ready=ReadyOptions(timeout_s=30.0, stable_s=2.0),
        progress=progress,
        initial_state="PAUSED",
    )


# --- what a run does ---------------------------------------------------------------------------


def test_a_dry_run_plans_writes_nothing_and_takes_no_lock(tmp_path: Path, slack: list[Any]) -> None:
    w = World(tmp_path, "c")
    w.git("c", "new", cfg())
    w.git("c", "keep", cfg(topics="k"))
    w.doubles["c"].add("old", cfg(topics="old"))
    w.doubles["c"].add("keep", cfg(topics="k"))
    w.own("c", "old", "keep")
    record = (tmp_path / ".hephaestus" / "ownership.json").read_text()
    (out,) = w.run(RunOptions(dry_run=True, apply=FAST))
    assert out.plan is not None and not out.applied and out.results == ()
    assert [(s.name, s.action) for s in out.plan.steps] == [("keep", "unchanged"), ("new", "create"), ("old", "delete")]
    assert w.doubles["c"].writes() == [] and (out.requests, out.writes) == (3, 0)  # /health, the listing, / (Kafka id)
    assert not (tmp_path / ".hephaestus" / "locks").exists() and w.audit() == [] and slack == []
    assert (tmp_path / ".hephaestus" / "ownership.json").read_text() == record


def test_an_apply_writes_waits_journals_and_counts(tmp_path: Path, slack: list[Any]) -> None:
    w = World(tmp_path, "c")
    w.git("c", "new", cfg())
    w.git("c", "upd", cfg(**{"batch.size": "2"}))
    w.doubles["c"].add("upd", cfg(**{"batch.size": "1"}))
    w.doubles["c"].add("same", cfg())
    w.doubles["c"].add("old", cfg(topics="old"))
    w.git("c", "same", cfg(topics="same"))
    w.doubles["c"].add("same", cfg(topics="same"))
    w.own("c", "old", "upd", "gone")
    (out,) = w.run()
    assert out.applied and out.error == "" and out.invalid == {}
    assert (out.cluster, out.url) == ("c", "http://c.test:8083") and out.plan is not None and out.plan.cluster == "c"
    assert out.results == (
        StepResult("new", "create", True, "RUNNING", True),
        StepResult("old", "delete", True, "deleted", True),
        StepResult("upd", "update", True, "RUNNING", True),
    )
    # Created and adopted (in git, live, unowned) are now owned; deleted is not; a record of a
    # connector gone from the cluster stays (harmless: nothing is deleted on it).
    assert w.owned("c") == ["gone", "new", "same", "upd"]
    hows = ownership_store(w.project).owned("default", "c")
    assert (hows["new"].how, hows["same"].how, hows["upd"].how) == ("created", "adopted", "test")
    assert sorted(w.doubles["c"].writes()) == [
        ("DELETE", "/connectors/old"),
        ("POST", "/connectors"),
        ("PUT", "/connectors/upd/config"),
    ]
    assert (out.requests, out.writes) == (w.clients["c"].requests, 3) and out.requests > 3
    entries = w.audit()
    assert [(e["connector"], e["outcome"]) for e in entries if e["outcome"] != "intent"] == [
        ("new", "ok"),
        ("old", "ok"),
        ("upd", "ok"),
    ]
    assert len({e["run_id"] for e in entries}) == 1 and len(entries[0]["run_id"]) == 12
    assert {e["cluster"] for e in entries} == {"c"}
    (lock,) = (tmp_path / ".hephaestus" / "locks").iterdir()  # an apply takes the cluster's lock
    holder = json.loads(lock.read_text())
    assert (holder["key"], holder["run_id"], holder["command"]) == (
        "connect http://c.test:8083",
        entries[0]["run_id"],
        "reconcile",
    )
    assert slack == [(None, "hephaestus reconcile on cluster *c*:\ndeleted `old`")]


def test_in_sync_validates_and_writes_nothing(tmp_path: Path, slack: list[Any]) -> None:
    w = World(tmp_path, "c")
    w.git("c", "same", cfg())
    w.doubles["c"].add("same", cfg())
    (out,) = w.run()
    assert not out.applied and out.plan is not None and out.plan.in_sync and out.plan.adopt == ("same",)
    assert w.doubles["c"].log == [("GET", "/health"), ("GET", "/connectors"), ("GET", "/")]
    assert slack == [] and out.error == ""
    assert w.owned("c") == ["same"]  # adopted: the record only, no request to Connect
    (again,) = w.run()
    assert again.plan is not None and again.plan.adopt == () and w.doubles["c"].writes() == []


def test_a_refused_plan_applies_nothing(tmp_path: Path) -> None:
    w = World(tmp_path, "c", policy={"max_deletes": 1})
    w.git("c", "keep", cfg(topics="keep"))
    for n in ("a", "b", "keep"):
        w.doubles["c"].add(n, cfg(topics=n))
    w.own("c", "a", "b")
    (out,) = w.run()
    assert out.plan is not None and "would delete 2 connectors" in out.plan.refused
    assert not out.applied and w.doubles["c"].writes() == []
    (forced,) = w.run(RunOptions(force=True, apply=FAST))
    assert forced.applied and list(w.doubles["c"].connectors) == ["keep"] and w.owned("c") == ["keep"]


def test_an_invalid_config_applies_nothing_and_is_notified(tmp_path: Path, slack: list[Any]) -> None:
    w = World(tmp_path, "c")
    w.git("c", "bad", cfg())
    w.git("c", "good", cfg(topics="u"))

    def invalid(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        if request.url.path.endswith("/validate") and json.loads(request.content)["name"] == "bad":
            configs = [{"definition": {"name": k}, "value": {"name": k, "errors": ["nope"]}} for k in ("x", "a")]
            return httpx.Response(200, json={"name": SINK, "error_count": 2, "configs": configs})
        return None

    w.doubles["c"].faults.append(invalid)
    (out,) = w.run()
    assert out.invalid == {"bad": {"x": ("nope",), "a": ("nope",)}} and not out.applied
    assert w.doubles["c"].writes() == [] and w.audit() == []
    assert slack == [(None, "hephaestus reconcile on cluster *c*:\ninvalid config `bad`: a, x")]


def test_an_unreadable_cluster_is_an_error_of_that_cluster_only(tmp_path: Path, slack: list[Any]) -> None:
    w = World(tmp_path, "down", "up")
    w.git("up", "a", cfg())
    w.doubles["down"].faults.append(lambda r, d: httpx.ConnectError("refused"))
    down, up = w.run()
    assert (down.cluster, down.url, down.plan) == ("down", "http://down.test:8083", None)
    assert down.error.startswith("Kafka Connect 'down': GET /connectors failed") and "refused" in down.error
    assert up.applied and up.results == (StepResult("a", "create", True, "RUNNING", True),)
    assert slack == [(None, f"hephaestus reconcile on cluster *down*:\nerror: {down.error}")]


def test_failures_are_notified_with_the_webhook(
    tmp_path: Path, slack: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    w = World(tmp_path, "c")
    monkeypatch.setenv("HOOK", "https://hooks.example/x")
    w.project = Project(
        "p.yaml",
        w.project.clusters,
        {},
        PolicySettings(max_delete_share=1.0),
        None,
        SecretRef(env="HOOK"),
        base=tmp_path,
    )
    w.git("c", "a", cfg())
    w.git("c", "b", cfg(topics="u"))
    w.doubles["c"].add("old", cfg(topics="old"))
    w.own("c", "old")
    w.doubles["c"].faults.append(
        lambda r, d: (
            httpx.Response(500, json={"error_code": 500, "message": "boom"})
            if r.method == "POST" and b'"b"' in r.content
            else None
        )
    )
    (out,) = w.run()
    assert out.results[0] == StepResult("a", "create", True, "RUNNING", True)
    assert not out.results[1].ok and out.failed
    assert slack == [
        (
            "https://hooks.example/x",
            f"hephaestus reconcile on cluster *c*:\ndeleted `old`\nFAILED create `b`: {out.results[1].detail}",
        )
    ]


def test_an_unwritable_audit_log_applies_nothing(tmp_path: Path, slack: list[Any]) -> None:
    w = World(tmp_path, "c")
    (tmp_path / "audit.jsonl").mkdir()
    w.git("c", "a", cfg())
    (out,) = w.run()
    assert out.error.startswith("nothing applied: audit log ") and not out.applied
    assert w.doubles["c"].writes() == []
    assert slack == [(None, f"hephaestus reconcile on cluster *c*:\nerror: {out.error}")]


# --- hooks ---------------------------------------------------------------------------------------


class Hooks:
    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.prepared: list[tuple[str, Plan]] = []
        self.after_calls: list[tuple[str, Plan, tuple[StepResult, ...]]] = []

    def prepare(self, cluster: Cluster, plan: Plan) -> None:
        self.prepared.append((cluster.name, plan))
        if self.refuse:
            raise HephaestusError("publication update failed")

    def after(self, cluster: Cluster, plan: Plan, results: Sequence[StepResult]) -> tuple[StepResult, ...]:
        self.after_calls.append((cluster.name, plan, tuple(results)))
        return (StepResult("a", "snapshot", False, "signal refused"),)


def test_hooks_run_around_an_apply_and_their_followups_are_reported(tmp_path: Path, slack: list[Any]) -> None:
    w = World(tmp_path, "c")
    w.git("c", "a", cfg())
    hooks = Hooks()
    (out,) = w.run(hooks=hooks)
    assert [name for name, _ in hooks.prepared] == ["c"] and hooks.prepared[0][1] == out.plan
    assert out.plan is not None and hooks.after_calls == [("c", out.plan, out.results)]
    assert out.followups == (StepResult("a", "snapshot", False, "signal refused"),)
    assert slack == [(None, "hephaestus reconcile on cluster *c*:\nFAILED snapshot `a`: signal refused")]


def test_a_hook_refusing_to_prepare_applies_nothing(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git("c", "a", cfg())
    hooks = Hooks(refuse=True)
    (out,) = w.run(hooks=hooks)
    assert out.error == "nothing applied: publication update failed" and not out.applied
    assert w.doubles["c"].writes() == [] and hooks.after_calls == []


def test_no_hooks_after_a_dry_run_or_an_in_sync_plan(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git("c", "a", cfg())
    hooks = Hooks()
    w.run(RunOptions(dry_run=True, apply=FAST), hooks=hooks)
    assert hooks.prepared == [] and hooks.after_calls == []


# --- what is planned ---------------------------------------------------------------------------


def test_custom_connectors_are_planned_only_with_deploy_custom(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git("c", "custom_a", cfg(), kind="custom")
    w.doubles["c"].add("custom_a", cfg(topics="old"))
    w.git("c", "custom_new", cfg(), kind="custom")
    (out,) = w.run(RunOptions(dry_run=True, apply=FAST))
    assert out.plan is not None
    assert [(s.name, s.action, s.reason) for s in out.plan.steps] == [
        ("custom_a", "unmanaged", "custom connector: reconciled only with --deploy-custom-sinks")
    ]
    assert out.plan.warnings == ()  # held back: in git, so no stranger
    (out,) = w.run(RunOptions(dry_run=True, deploy_custom=True, apply=FAST))
    assert out.plan is not None
    assert [(s.name, s.action) for s in out.plan.steps] == [("custom_a", "update"), ("custom_new", "create")]


def test_connectors_outside_select_are_never_touched(tmp_path: Path) -> None:
    w = World(tmp_path, "c", select=["local_*"])
    w.git("c", "local_a", cfg())
    w.doubles["c"].add("stag_b", cfg(topics="b"))
    w.doubles["c"].add("local_old", cfg(topics="old"))
    w.own("c", "stag_b", "local_old")  # owned once, now outside select: still never seen
    (out,) = w.run()
    assert out.plan is not None and [(s.name, s.action) for s in out.plan.steps] == [
        ("local_a", "create"),
        ("local_old", "delete"),
    ]
    assert "stag_b" in w.doubles["c"].connectors


def test_the_plan_is_computed_with_the_live_state_and_type(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git("c", "upd", cfg(topics="new"))
    w.doubles["c"].add("upd", cfg(), state="PAUSED")
    (out,) = w.run(RunOptions(dry_run=True, apply=FAST))
    assert out.plan is not None
    (step,) = out.plan.steps
    assert (step.action, step.live_state, step.origin) == (
        "update",
        "PAUSED",
        str(tmp_path / "connectors/c/sink/upd.json"),
    )


# --- health of managed connectors ---------------------------------------------------------------


def failed_world(tmp_path: Path) -> World:
    w = World(tmp_path, "c")
    w.git("c", "sick", cfg())
    w.git("c", "upd", cfg(topics="new"))
    w.git("c", "lost", cfg())
    for n in ("sick", "upd", "lost"):
        w.doubles["c"].add(n, cfg())
    w.doubles["c"].connectors["sick"].task_states = ["FAILED"]
    w.doubles["c"].connectors["sick"].trace = "boom"
    w.doubles["c"].connectors["upd"].task_states = ["FAILED"]
    w.doubles["c"].connectors["upd"].trace = "old"
    w.doubles["c"].connectors["lost"].task_states = ["UNASSIGNED"]
    w.doubles["c"].add("unmanaged", cfg()).task_states = ["FAILED"]
    return w


def test_health_reports_managed_connectors_not_written(tmp_path: Path) -> None:
    w = failed_world(tmp_path)
    opts = RunOptions(apply=FAST, unassigned_grace_s=0.0, force=True)
    (dry,) = w.run(RunOptions(dry_run=True, apply=FAST, unassigned_grace_s=0.0))
    assert dry.plan is not None and dry.plan.health == (
        Unhealthy("lost", "UNASSIGNED for more than 0s (tasks ['UNASSIGNED'])"),
        Unhealthy("sick", "FAILED (task 0): boom"),
        Unhealthy("upd", "FAILED (task 0): old"),
    )
    (out,) = w.run(opts)
    assert out.plan is not None and [u.name for u in out.plan.health] == ["lost", "sick"], (
        "a connector being written is judged by its readiness, not its old state"
    )
    assert out.unhealthy


def test_drift_only_leaves_health_out(tmp_path: Path) -> None:
    w = failed_world(tmp_path)
    (out,) = w.run(RunOptions(dry_run=True, drift_only=True, apply=FAST, unassigned_grace_s=0.0))
    assert out.plan is not None and out.plan.health == () and not out.unhealthy


def test_no_clusters_no_outcomes(tmp_path: Path) -> None:
    w = World(tmp_path)
    assert w.run(RunOptions(dry_run=True)) == []


def test_validation_runs_with_the_concurrency_asked_for(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    for n in "abcd":
        w.git("c", n, cfg())
    w.run(RunOptions(apply=ApplyOptions(concurrency=1, ready=FAST.ready)))
    assert w.peak_validating == 1


def test_a_live_source_is_protected_as_connect_reports_its_type(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.doubles["c"].add("src", {"connector.class": "io.debezium.connector.postgresql.PostgresConnector"})

    def as_source(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        if request.url.path != "/connectors" or request.method != "GET":
            return None
        listing = json.loads(double._list(request).content)
        for entry in listing.values():
            for part in ("info", "status"):
                if part in entry:
                    entry[part]["type"] = "source"
        return httpx.Response(200, json=listing)

    w.doubles["c"].faults.append(as_source)
    (out,) = w.run(RunOptions(dry_run=True, apply=FAST))
    assert out.plan is not None and [(s.name, s.action) for s in out.plan.steps] == [("src", "protected")]


def test_unassigned_that_recovers_within_the_grace_is_not_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = World(tmp_path, "c")
    w.git("c", "a", cfg())
    w.doubles["c"].add("a", cfg()).task_states = ["UNASSIGNED"]
    relisted: list[str] = []

    def recover(request: httpx.Request, double: ConnectDouble) -> None:
        if request.url.params.get_list("expand") == ["status"]:  # the re-listing, not the fleet read
            relisted.append(request.url.path)
            double.connectors["a"].task_states = ["RUNNING"]

    w.doubles["c"].faults.append(recover)
    monkeypatch.setattr(time, "sleep", lambda s: None)
    (out,) = w.run(RunOptions(dry_run=True, apply=FAST, unassigned_grace_s=60.0))
    assert out.plan is not None and out.plan.health == () and relisted == ["/connectors"]


def test_every_plugin_with_a_diff_is_asked_for_its_secret_keys_even_after_a_failure(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    other = "com.example.OtherSink"
    w.git("c", "a", cfg(topics="new"))
    w.git("c", "b", {"connector.class": other, "topics": "new"})
    w.doubles["c"].add("a", cfg())
    w.doubles["c"].add("b", {"connector.class": other, "topics": "old"})
    asked: list[str] = []

    def plugins(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        path = request.url.path
        if request.method == "GET" and path.startswith("/connector-plugins/") and path.endswith("/config"):
            asked.append(path)
            return httpx.Response(500, json={"error_code": 500, "message": "plugin config unavailable"})
        return None

    w.doubles["c"].faults.append(plugins)
    (out,) = w.run(RunOptions(dry_run=True, apply=FAST))
    assert out.error == "" and asked == [f"/connector-plugins/{other}/config", f"/connector-plugins/{SINK}/config"]


# --- ownership ---------------------------------------------------------------------------------


def test_a_cluster_without_select_warns_about_connectors_neither_in_git_nor_owned(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git("c", "a", cfg(topics="a"))
    w.git("c", "h", cfg(topics="h"), kind="custom")
    for n in ("a", "h", "o", "KSQL_SINK", *(f"s{i}" for i in range(6))):
        w.doubles["c"].add(n, cfg(topics=n))
    w.own("c", "o")
    (out,) = w.run(RunOptions(dry_run=True, apply=FAST))
    assert out.plan is not None and out.plan.warnings == (
        "cluster c has no `select` and 6 live connectors are neither in git nor owned (s0, s1, s2, s3, s4, …): "
        "if another deployment shares this cluster, give this one a select",
    )
    del w.doubles["c"].connectors["s5"]
    (out,) = w.run(RunOptions(dry_run=True, apply=FAST))
    assert out.plan is not None and out.plan.warnings == (
        "cluster c has no `select` and 5 live connectors are neither in git nor owned (s0, s1, s2, s3, s4): "
        "if another deployment shares this cluster, give this one a select",
    )
    for i in range(5):
        del w.doubles["c"].connectors[f"s{i}"]
    (out,) = w.run(RunOptions(dry_run=True, apply=FAST))
    assert out.plan is not None and out.plan.warnings == ()
    scoped = World(tmp_path / "scoped", "c", select=["z*"])
    scoped.doubles["c"].add("zz", cfg())
    (out,) = scoped.run(RunOptions(dry_run=True, apply=FAST))
    assert out.plan is not None and out.plan.warnings == ()


def test_a_rename_moves_ownership_and_a_failed_one_keeps_it(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.doubles["c"].add("old", cfg(topics="r"))
    w.own("c", "old", "keep")
    w.git("c", "new", cfg(topics="r"))
    w.doubles["c"].faults.append(
        lambda r, d: httpx.Response(500, json={"error_code": 500, "message": "no"}) if r.method == "POST" else None
    )
    (failed,) = w.run()
    assert [r.action for r in failed.results] == ["rename"] and not failed.results[0].ok
    assert w.owned("c") == ["keep", "old"] and list(w.doubles["c"].connectors) == ["old"]
    w.doubles["c"].faults.clear()
    (out,) = w.run()
    assert out.results[0].ok and out.error == "" and list(w.doubles["c"].connectors) == ["new"]
    claims = ownership_store(w.project).owned("default", "c")
    assert sorted(claims) == ["keep", "new"] and claims["new"].how == "renamed"


def test_a_delete_alone_releases_its_claim(tmp_path: Path) -> None:
    w = World(tmp_path, "c", policy={"max_delete_share": 1.0})
    w.git("c", "keep", cfg(topics="k"))
    w.doubles["c"].add("keep", cfg(topics="k"))
    w.doubles["c"].add("gone", cfg(topics="g"))
    w.own("c", "keep", "gone")
    (out,) = w.run()
    assert [(r.action, r.ok) for r in out.results] == [("delete", True)] and w.owned("c") == ["keep"]


@pytest.fixture
def claims_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ownership record cannot be written (a full disk, a PostgreSQL gone away)."""

    def refuse(*args: Any) -> None:
        raise ownership.OwnershipUnavailable("ownership record: disk full")

    monkeypatch.setattr(ownership.OwnershipFile, "claim", refuse)


@pytest.mark.usefixtures("claims_refused")
def test_an_ownership_record_that_cannot_be_written_is_reported_after_the_apply(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git("c", "a", cfg())
    (out,) = w.run()
    assert out.applied and out.results[0].ok and "a" in w.doubles["c"].connectors
    assert out.error == "applied, but the ownership record was not updated: ownership record: disk full"


def test_an_unreadable_ownership_record_stops_that_cluster_before_any_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = World(tmp_path, "c")
    w.git("c", "a", cfg())

    def unreadable(*args: Any) -> None:
        raise ownership.OwnershipUnavailable("ownership record (database): connection refused")

    monkeypatch.setattr(ownership.OwnershipFile, "owned", unreadable)
    (out,) = w.run()
    assert out.plan is None and out.error == "ownership record (database): connection refused"
    assert w.doubles["c"].writes() == []


def test_an_update_of_an_owned_connector_changes_no_claim(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git("c", "upd", cfg(**{"batch.size": "2"}))
    w.doubles["c"].add("upd", cfg())
    w.own("c", "upd")
    record = (tmp_path / ".hephaestus/ownership.json").read_text()
    (out,) = w.run()
    assert out.results[0].ok and out.error == "" and (tmp_path / ".hephaestus/ownership.json").read_text() == record


@pytest.mark.usefixtures("claims_refused")
def test_both_an_audit_and_an_ownership_failure_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hephaestus.reconciler import run as run_mod

    w = World(tmp_path, "c")
    w.git("c", "a", cfg())
    monkeypatch.setattr(run_mod.apply, "record_outcomes", lambda *args: "audit log x cannot be written")
    (out,) = w.run()
    assert out.error == (
        "audit log x cannot be written; applied, but the ownership record was not updated: ownership record: disk full"
    )


def test_an_audit_database_missing_from_the_project_stops_the_cluster_before_any_write(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.project = replace(w.project, state=StateSettings(audit_database="nowhere"))
    w.git("c", "a", cfg())
    (out,) = w.run()
    assert out.error.startswith("nothing applied: database 'nowhere' is not in p.yaml") and not out.applied
    assert "a" not in w.doubles["c"].connectors


def test_an_unreachable_audit_database_stops_the_cluster_before_any_write(tmp_path: Path) -> None:
    from hephaestus.project import Database

    w = World(tmp_path, "c")
    w.project = replace(
        w.project,
        state=StateSettings(audit_database="audit"),
        databases={"audit": Database("audit", "host=127.0.0.1 port=9 dbname=audit connect_timeout=2", None)},
    )
    w.git("c", "a", cfg())
    (out,) = w.run()
    assert out.error.startswith("nothing applied: audit table hephaestus_audit cannot be written:"), out.error
    assert "a" not in w.doubles["c"].connectors


def test_a_source_whose_database_is_not_in_the_project_gets_a_warning_not_a_publication_change(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git(
        "c",
        "src",
        {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "topic.prefix": "bob",
            "publication.name": "pub",
            "table.include.list": "public.users",
        },
        kind="source",
    )
    w.git("c", "a", cfg())
    (out,) = w.run(RunOptions(dry_run=True))
    assert out.plan is not None and out.plan.publications == ()
    assert (
        "publication pub of database bob not checked (src): add bob to the project's databases for publication upkeep"
    ) in out.plan.warnings


# --- publication upkeep, as the run orchestrates it (the SQL itself: tests/stack/test_snapshot.py)

POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"


@pytest.fixture
def upkeep_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[World, list[Any]]:
    """A source of bob capturing public.users and public.t; bob's publication lacks public.t.
    `calls` records each publication read and change, with the Connect writes made before it."""
    from hephaestus.project import Database
    from hephaestus.publications import db as pubdb
    from hephaestus.publications.change import Published

    w = World(tmp_path, "c")
    w.project = replace(w.project, databases={"bob": Database("bob", "dbname=bob", None)})
    w.git(
        "c",
        "src",
        {
            "connector.class": POSTGRES,
            "topic.prefix": "bob",
            "publication.name": "pub",
            "signal.data.collection": "public.sig",
            "table.include.list": "public.users,public.t",
        },
        kind="source",
    )
    w.git("c", "a", cfg())
    calls: list[Any] = []

    def read(dsn: str, database: str, publication: str, named: Any) -> Published:
        calls.append(("read", dsn, database, publication, sorted(named)))
        return Published(True, frozenset({"public.users", "public.sig"}))

    def alter(dsn: str, change: Any) -> None:
        calls.append(("alter", dsn, change, len(w.doubles["c"].writes())))

    monkeypatch.setattr(pubdb, "read", read)
    monkeypatch.setattr(pubdb, "alter", alter)
    return w, calls


def test_publication_changes_are_applied_before_any_connector_write(upkeep_world: tuple[World, list[Any]]) -> None:
    from hephaestus.publications.change import PublicationChange

    w, calls = upkeep_world
    (out,) = w.run()
    change = PublicationChange("bob", "pub", ("public.t",), (), ("src",))
    assert calls == [
        ("read", "dbname=bob", "bob", "pub", ["public.sig", "public.t", "public.users"]),
        ("alter", "dbname=bob", change, 0),
    ], "read, then altered with no Connect write before it"
    assert out.prepared == (StepResult("bob/pub", "publication", True, "add public.t (for src)", True),)
    assert out.applied and not out.failed and {"src", "a"} <= set(w.doubles["c"].connectors)


def test_a_dry_run_plans_the_publication_change_and_runs_none(upkeep_world: tuple[World, list[Any]]) -> None:
    w, calls = upkeep_world
    (out,) = w.run(RunOptions(dry_run=True))
    assert [c[0] for c in calls] == ["read"] and out.prepared == () and not out.applied
    assert out.plan is not None and [ch.add for ch in out.plan.publications] == [("public.t",)]
    assert out.drift


def test_a_failed_publication_change_writes_nothing_to_connect(
    upkeep_world: tuple[World, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hephaestus.publications import db as pubdb

    w, _ = upkeep_world

    def refuse(dsn: str, change: Any) -> None:
        raise HephaestusError("database bob: permission denied for publication pub")

    monkeypatch.setattr(pubdb, "alter", refuse)
    (out,) = w.run()
    assert out.prepared == (
        StepResult("bob/pub", "publication", False, "database bob: permission denied for publication pub"),
    )
    assert out.error == "nothing written to Connect: a publication change failed" and out.failed
    assert w.doubles["c"].writes() == [] and not out.applied


def test_a_publication_that_cannot_be_read_stops_that_source_naming_why(
    upkeep_world: tuple[World, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hephaestus.publications import db as pubdb

    w, _ = upkeep_world

    def unreadable(dsn: str, database: str, publication: str, named: Any) -> Any:
        raise HephaestusError("database bob: connection refused")

    monkeypatch.setattr(pubdb, "read", unreadable)
    (out,) = w.run()
    assert out.invalid == {
        "src": {"publication.name": ("cannot read publication pub: database bob: connection refused",)}
    }
    assert w.doubles["c"].writes() == [] and not out.applied and out.failed


def test_a_source_database_missing_from_the_project_does_not_stop_the_upkeep_of_the_next(
    upkeep_world: tuple[World, list[Any]],
) -> None:
    """`aaa` sorts before bob and is not in the project: warned about, and bob still checked."""
    w, calls = upkeep_world
    w.git(
        "c",
        "other",
        {
            "connector.class": POSTGRES,
            "topic.prefix": "aaa",
            "publication.name": "pub",
            "table.include.list": "public.x",
        },
        kind="source",
    )
    (out,) = w.run(RunOptions(dry_run=True))
    assert [c[:3] for c in calls] == [("read", "dbname=bob", "bob")]
    assert out.plan is not None and [ch.database for ch in out.plan.publications] == ["bob"]
    assert any(m.startswith("publication pub of database aaa not checked (other)") for m in out.plan.warnings)


def test_a_delete_that_failed_is_finished_by_the_next_run_and_never_another_teams(tmp_path: Path) -> None:
    """Issue 29: the claim is marked releasing (with the config's fingerprint) before the DELETE;
    a delete that failed, whatever its outcome, leaves the mark; a later run deletes the
    connector while it still runs the config it had, and never a connector of the same name
    with another config."""
    from hephaestus.state.ownership import releasing

    w = World(tmp_path, "c")
    w.git("c", "keep", cfg(topics="k"))
    w.doubles["c"].add("keep", cfg(topics="k"))
    w.doubles["c"].add("gone", cfg(topics="x"))
    w.own("c", "keep", "gone")
    w.doubles["c"].faults.append(lambda r, d: httpx.ReadTimeout("lost") if r.method == "DELETE" else None)
    (out,) = w.run()
    assert [r.ok for r in out.results] == [False]
    assert ownership_store(w.project).owned("default", "c")["gone"].how.startswith("releasing ")
    w.doubles["c"].faults.clear()
    (again,) = w.run()
    assert [(r.name, r.ok) for r in again.results] == [("gone", True)]
    assert "gone" not in w.doubles["c"].connectors and w.owned("c") == ["keep"]

    w.doubles["c"].add("twin", cfg(topics="x"))  # a mark left behind, then another team's connector
    (claim,) = ownership.claims_of(["twin"], "*", "created", "r")
    ownership_store(w.project).claim("default", "c", [releasing(claim, "0" * 16, "r")])
    (third,) = w.run()
    assert third.results == () and "twin" in w.doubles["c"].connectors
    assert [s.action for s in third.plan.steps if s.name == "twin"] == ["unmanaged"]  # type: ignore[union-attr]
    assert "twin" not in w.owned("c")  # a mark whose connector runs another config: forgotten


def test_a_mark_on_a_connector_still_running_its_config_is_claimed_again(tmp_path: Path) -> None:
    from hephaestus.fleet.model import config_hash
    from hephaestus.state.ownership import releasing

    w = World(tmp_path, "c")
    w.git("c", "kept", cfg(topics="k"))
    w.doubles["c"].add("kept", cfg(topics="k"))
    (claim,) = ownership.claims_of(["kept"], "*", "created", "r")
    fingerprint = config_hash(w.doubles["c"].connectors["kept"].config) or ""
    ownership_store(w.project).claim("default", "c", [releasing(claim, fingerprint, "r")])
    w.git("c", "kept", cfg(topics="k", **{"batch.size": "5"}))
    (out,) = w.run()
    assert out.results[0].ok and ownership_store(w.project).owned("default", "c")["kept"].how == "kept"

"""Issue 43, item 3: the canary can no longer be skipped without a word. Through the CLI against
the strict Connect double on loopback: a canary whose globs name none of a cluster's writes
is refused with nothing written (an apply, a dry run, a plan to seal); a sealed plan rolls
out as it was reviewed (its rollout flags sealed), and a flag that would change that is an
error with --plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hephaestus.reconciler import sealed
from hephaestus.safety import seal
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project
from tests.unit.test_gate_paths import SNK, World

NAMES = [f"s{i}" for i in range(4)]


def sink(name: str, tasks: str = "1") -> dict[str, str]:
    return {**SNK, "topics": "t", "tasks.max": tasks, "collection.name.format": f"{name}_users"}


class Fleet(World):
    """Four owned sinks at tasks.max 1; git wants 2. No kafka_bootstrap: the gates read Connect."""

    def __init__(self, project: Project, double: ConnectDouble, url: str) -> None:
        super().__init__(project, double, url)
        self.settings()
        for n in NAMES:
            self.live(n, sink(n))
            self.git(n, sink(n, "2"))

    def settings(self, rollout: str = "", policy: str = "") -> None:
        self.file.write_text(
            f"clusters:\n  c:\n    url: {self.url}\n    connectors: connectors/c\n    timeout_s: 2\n"
            f"audit_log: audit.jsonl\npolicy: {{stability_window_s: 0{policy}}}\n{rollout}"
        )

    def puts(self) -> list[str]:
        return [p for m, p in self.double.writes()]

    def tasks(self) -> list[str]:
        return [self.double.connectors[n].config["tasks.max"] for n in NAMES]


@pytest.fixture
def fleet(project: Project, served: tuple[ConnectDouble, str], monkeypatch: pytest.MonkeyPatch) -> Fleet:
    double, url = served
    double.connectors.clear()
    double.on_start.clear()
    double.faults.clear()
    monkeypatch.delenv("HEPH_C_URL", raising=False)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    monkeypatch.chdir(project.root)
    return Fleet(project, double, url)


def said(got: Any) -> str:
    return str(got.out + got.err)


# --- a canary that names nothing ----------------------------------------------------------------


def test_a_canary_glob_that_names_no_write_is_refused_and_nothing_is_written(fleet: Fleet) -> None:
    got = fleet.reconcile("--auto-approve", "--canary", "s9*", "--analysis-window", "0")
    assert got.code == 1, said(got)
    assert fleet.puts() == [] and fleet.tasks() == ["1"] * 4
    assert "nothing applied: --canary: 's9*' names none of the 4 writes on cluster c" in said(got)


def test_a_canary_glob_of_the_project_file_that_names_no_write_is_refused_naming_its_key(fleet: Fleet) -> None:
    fleet.settings("rollout: {canary: ['s9*'], analysis_s: 0}\n")
    got = fleet.reconcile("--auto-approve")
    assert got.code == 1 and fleet.puts() == []
    assert f"{fleet.file} at rollout.canary: 's9*' names none of the 4 writes on cluster c" in said(got)


def test_a_dry_run_refuses_it_too_and_seals_no_plan(fleet: Fleet) -> None:
    plan = fleet.project.root / "plan.json"
    got = fleet.reconcile("--dry-run", "--canary", "s9*", "--out", str(plan))
    assert got.code == 1 and not plan.exists()
    assert "error: --canary: 's9*' names none of the 4 writes on cluster c" in said(got)
    assert fleet.reconcile("--dry-run", "--canary", "s2").code == 0


def test_a_canary_glob_that_names_a_write_goes_first(fleet: Fleet) -> None:
    got = fleet.reconcile("--auto-approve", "--canary", "s2", "--analysis-window", "0", "-o", "json")
    assert got.code == 0, said(got)
    assert fleet.puts()[0] == "/connectors/s2/config" and fleet.tasks() == ["2"] * 4


@pytest.mark.parametrize("count", ["²", "1000001", "9" * 5000])
def test_a_canary_count_that_is_no_count_is_refused(fleet: Fleet, count: str) -> None:
    got = fleet.reconcile("--auto-approve", "--canary", count)
    assert got.code == 1 and fleet.puts() == []
    assert "unexpected" not in said(got)


def test_on_a_terminal_it_is_refused_before_the_question(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def prompt(*args: Any, **kwargs: Any) -> str:
        asked.append("asked")
        return "yes"

    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("click.prompt", prompt)
    got = fleet.reconcile("--canary", "s9*")
    assert got.code == 1 and asked == [] and fleet.puts() == []
    assert "--canary: 's9*' names none of the 4 writes on cluster c" in said(got)
    got = fleet.reconcile("--canary", "s1", "--on-failure", "pause", "--analysis-window", "0")
    assert got.code == 0 and asked == ["asked"] and fleet.puts()[0] == "/connectors/s1/config", said(got)


# --- a sealed plan rolls out as reviewed ------------------------------------------------------


def sealed_plan(fleet: Fleet, *flags: str) -> Path:
    path = fleet.project.root / "plan.json"
    got = fleet.reconcile("--dry-run", "--out", str(path), *flags)
    assert got.code == 0, said(got)
    return path


REVIEWED = ("--canary", "1", "--on-failure", "rollback", "--analysis-window", "0.3")


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (("--on-failure", "continue", "--analysis-window", "0"), "--on-failure, --analysis-window"),
        (("--canary", "4"), "--canary"),
        (("--lag-budget", "5"), "--lag-budget"),
        (("--analysis-window", "0"), "--analysis-window"),
    ],
)
def test_flags_that_would_change_a_sealed_rollout_are_refused(fleet: Fleet, flags: tuple[str, ...], named: str) -> None:
    path = sealed_plan(fleet, *REVIEWED)
    fleet.double.on_start["s0"] = ["RUNNING", "FAILED"]
    got = fleet.reconcile("--plan", str(path), *flags)
    assert got.code == 1 and fleet.puts() == []
    assert f"the plan fixes what it covers and how it rolls out: {named} cannot be given with --plan" in said(got)


def test_a_sealed_canary_then_rollback_is_what_applies(fleet: Fleet) -> None:
    """The project file has no `rollout:`: the flags reviewed are the whole rollout. Applied
    with --plan alone, the canary fails its gate and is put back; the rest is never written."""
    path = sealed_plan(fleet, *REVIEWED)
    body = json.loads(path.read_text())["body"]
    assert body["rollout"] == {"canary": 1, "on_failure": "rollback", "analysis_s": 0.3}
    assert body["clusters"]["c"]["rollout"]["on_failure"] == "rollback"
    fleet.double.on_start["s0"] = ["RUNNING", "FAILED"]
    got = fleet.reconcile("--plan", str(path), "-o", "json")
    assert got.code == 1, said(got)
    assert fleet.puts() == ["/connectors/s0/config", "/connectors/s0/config"]  # the change, then back
    assert fleet.tasks() == ["1"] * 4
    (cluster,) = json.loads(got.out[got.out.index("{") : got.out.rindex("}") + 1])["clusters"]
    assert cluster["rollout"]["report"][0] == "canary: failed its gate: s0: RUNNING, tasks ['FAILED']"
    assert [(r["action"], r["name"], r["wrote"]) for r in cluster["rollout"]["rollback"]] == [("update", "s0", True)]


def test_a_sealed_plan_without_a_rollout_applies_all_at_once(fleet: Fleet) -> None:
    path = sealed_plan(fleet)
    assert json.loads(path.read_text())["body"]["clusters"]["c"]["rollout"] is None
    got = fleet.reconcile("--plan", str(path), "-o", "json")
    assert got.code == 0 and sorted(fleet.puts()) == [f"/connectors/{n}/config" for n in NAMES]


def test_a_plan_whose_rollout_was_edited_is_refused(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(seal.KEY_ENV, "ci-secret")
    path = sealed_plan(fleet, *REVIEWED)
    doc = json.loads(path.read_text())
    doc["body"]["rollout"].update(on_failure="continue", analysis_s=0)
    path.write_text(json.dumps(doc))
    got = fleet.reconcile("--plan", str(path))
    assert got.code == 1 and fleet.puts() == [] and "edited or truncated" in said(got)
    doc["seal"] = seal.seal(doc["body"])  # the content hash recomputed: the signature still holds it
    doc["id"] = doc["seal"][7:19]
    path.write_text(json.dumps(doc))
    got = fleet.reconcile("--plan", str(path))
    assert got.code == 1 and fleet.puts() == [] and "signature does not match" in said(got)


def test_a_plan_of_the_format_before_sealed_rollouts_is_refused(fleet: Fleet) -> None:
    path = sealed_plan(fleet, *REVIEWED)
    doc = json.loads(path.read_text())
    doc["hephaestus_plan"] = 2
    del doc["body"]["rollout"]
    for c in doc["body"]["clusters"].values():
        del c["rollout"]
    doc["seal"] = seal.seal(doc["body"])
    doc["id"] = doc["seal"][7:19]
    path.write_text(json.dumps(doc))
    got = fleet.reconcile("--plan", str(path))
    assert got.code == 1 and fleet.puts() == []
    assert f"{path}: a plan of format 2, not {sealed.FORMAT}: make a new plan" in said(got)

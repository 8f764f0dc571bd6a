"""Reconcile's workflow decisions (reconciler.workflow), apart from the CLI that prints them:
the exit policy Helm hooks and cron read, and what the approval prompt may let through."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hephaestus.errors import HephaestusError, InputError
from hephaestus.project import Project
from hephaestus.reconciler import workflow
from hephaestus.reconciler.plan import Held
from hephaestus.reconciler.sealed import PlanScope
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project as ScratchProject
from tests.unit.test_gate_paths import SNK, World


@dataclass
class Outcome:
    """What the exit policy reads of a ClusterOutcome."""

    failed: bool = False
    refused: str = ""
    unhealthy: bool = False
    drift: bool = False
    plan: Any = None
    cluster: str = "c"
    held: tuple[Held, ...] = ()


@pytest.mark.parametrize(
    ("outcome", "dry_run", "drift_exit", "code"),
    [
        (Outcome(), False, False, 0),
        (Outcome(failed=True, refused="x"), False, False, 1),  # a failure outranks a refusal
        (Outcome(refused="resnapshot"), False, False, 2),
        (Outcome(refused="resnapshot"), True, False, 2),
        (Outcome(unhealthy=True), False, False, 1),  # an apply that left a connector down
        (Outcome(unhealthy=True), True, False, 0),
        (Outcome(unhealthy=True), True, True, 2),
        (Outcome(drift=True), True, True, 2),
        (Outcome(drift=True), True, False, 0),
        (Outcome(drift=True), False, True, 0),  # --exit-code is a dry run's
        # Issue 48: an apply in part (a sink held back, the rest written) is exit 2; in a dry
        # run, a sink that only waits for a ksqlDB migration is drift (the deploy runs those
        # first), one whose topic nothing writes is refused as before.
        (Outcome(held=(Held("s", "why", "kec V000002__f.sql:3"),)), False, False, 2),
        (Outcome(held=(Held("s", "why", "kec V000002__f.sql:3"),)), True, False, 0),
        (Outcome(held=(Held("s", "why", "kec V000002__f.sql:3"),), drift=True), True, True, 2),
        (Outcome(held=(Held("s", "why"),)), True, False, 2),
        (Outcome(held=(Held("s", "why"),)), False, False, 2),
        (Outcome(held=(Held("s", "why"),), failed=True), False, False, 1),
    ],
)
def test_the_exit_policy(outcome: Outcome, dry_run: bool, drift_exit: bool, code: int) -> None:
    assert workflow.exit_code([Outcome(), outcome], dry_run, drift_exit) == code  # type: ignore[list-item]


def prepared(tmp_path: Path) -> workflow.PreparedRun:
    project = Project(str(tmp_path / "p.yaml"), {}, {}, base=tmp_path)
    return workflow.prepare(project, workflow.RunRequest(given=PlanScope()), None, lambda line: None)


def test_without_a_terminal_nothing_is_applied_unasked(tmp_path: Path) -> None:
    p = prepared(tmp_path)
    assert p.needs_approval
    pending = Outcome(plan=type("P", (), {"in_sync": False})())
    with pytest.raises(HephaestusError, match="without a terminal to confirm them: pass --auto-approve"):
        workflow.approve(Project("p.yaml", {}, {}), p, lambda o: [pending], None)  # type: ignore[list-item, return-value]


def test_adopting_is_a_write_asked_about_and_without_a_terminal_needs_auto_approve(tmp_path: Path) -> None:
    """An in-sync plan that adopts was exit 0 and recorded nothing unless --auto-approve: on a
    terminal it was never asked about, so `N to adopt` was shown and never done."""
    p = prepared(tmp_path)
    adopting = Outcome(plan=type("P", (), {"in_sync": True, "adopt": ("a",)})())
    with pytest.raises(HephaestusError, match="without a terminal to confirm them: pass --auto-approve"):
        workflow.approve(Project("p.yaml", {}, {}), p, lambda o: [adopting], None)  # type: ignore[list-item, return-value]
    asked: list[object] = []
    with pytest.raises(HephaestusError, match="apply cancelled"):
        workflow.approve(Project("p.yaml", {}, {}), p, lambda o: [adopting], lambda s: asked.append(s) or "no")  # type: ignore[list-item, return-value, func-returns-value]
    assert asked == [[adopting]]


def test_without_a_terminal_nothing_to_apply_is_exit_0_and_a_refusal_exit_2(tmp_path: Path) -> None:
    """Issue 48: a cron or CI run with nothing to change exited 1, "would apply changes"."""
    p = prepared(tmp_path)
    calm = workflow.approve(Project("p.yaml", {}, {}), p, lambda o: [Outcome()], None)  # type: ignore[list-item, return-value]
    assert (calm.sealed, calm.exit_code) == (None, 0)
    refused = workflow.approve(Project("p.yaml", {}, {}), p, lambda o: [Outcome(refused="x")], None)  # type: ignore[list-item, return-value]
    assert (refused.sealed, refused.exit_code) == (None, 2)


def test_a_plan_with_nothing_to_apply_is_not_asked_about_and_a_refused_one_exits_2(tmp_path: Path) -> None:
    p = prepared(tmp_path)
    asked: list[object] = []
    calm = workflow.approve(Project("p.yaml", {}, {}), p, lambda o: [Outcome()], asked.append)  # type: ignore[arg-type, list-item, return-value]
    assert (calm.sealed, calm.exit_code, calm.shown) == (None, 0, [Outcome()]) and asked == []
    refused = workflow.approve(Project("p.yaml", {}, {}), p, lambda o: [Outcome(refused="x")], asked.append)  # type: ignore[list-item, return-value]
    # What was refused is handed back to be shown: on a terminal it exited 2 in silence.
    assert (refused.sealed, refused.exit_code, refused.shown) == (None, 2, [Outcome(refused="x")]) and asked == []


def test_anything_but_yes_cancels(tmp_path: Path) -> None:
    p = prepared(tmp_path)
    pending = Outcome(plan=type("P", (), {"in_sync": False})())
    for answer in ("no", "y", "YES please", ""):
        with pytest.raises(HephaestusError, match="apply cancelled: nothing was changed"):
            workflow.approve(Project("p.yaml", {}, {}), p, lambda o: [pending], lambda shown: answer)  # type: ignore[list-item, return-value]


def test_the_preview_is_a_dry_run_of_the_same_options(tmp_path: Path) -> None:
    p = prepared(tmp_path)
    seen: list[Any] = []
    workflow.approve(Project("p.yaml", {}, {}), p, lambda o: seen.append(o) or [Outcome()], lambda s: "no")  # type: ignore[func-returns-value, return-value]
    assert seen[0].dry_run and not p.options.dry_run and seen[0].targets == p.options.targets


def test_out_needs_a_dry_run_and_never_overwrites_an_input(tmp_path: Path) -> None:
    project = Project(str(tmp_path / "p.yaml"), {}, {}, audit_log=tmp_path / "audit.jsonl", base=tmp_path)
    with pytest.raises(InputError, match="use it with --dry-run"):
        workflow.check_out(tmp_path / "plan.json", project, False)
    for target in ("p.yaml", "audit.jsonl", ".hephaestus/x.json"):
        with pytest.raises(InputError, match="would overwrite an input"):
            workflow.check_out(tmp_path / target, project, True)
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a hephaestus plan"):
        workflow.check_out(tmp_path / "notes.txt", project, True)
    workflow.check_out(tmp_path / "plan.json", project, True)


def test_a_sealed_plan_fixes_its_scope(tmp_path: Path) -> None:
    project = Project(str(tmp_path / "p.yaml"), {}, {}, base=tmp_path)
    (tmp_path / "plan.json").write_text("{}")
    request = workflow.RunRequest(given=PlanScope(targets=("a*",)), plan_file=tmp_path / "plan.json")
    with pytest.raises(InputError, match="--target cannot be given with --plan"):
        workflow.prepare(project, request, None, lambda line: None)


# --- the apply after `yes` ----------------------------------------------------------------------


@pytest.fixture
def world(project: ScratchProject, served: tuple[ConnectDouble, str], monkeypatch: pytest.MonkeyPatch) -> World:
    double, url = served
    double.connectors.clear()
    double.on_start.clear()
    double.faults.clear()
    monkeypatch.delenv("HEPH_C_URL", raising=False)
    monkeypatch.delenv("HEPHAESTUS_PLAN_KEY", raising=False)
    return World(project, double, url)


def test_after_yes_on_a_terminal_the_apply_counts_what_it_left_alone(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan a `yes` approves is sealed, and a sealed plan holds only its writes: the
    apply's summary said "0 unchanged" (and 0 protected, 0 unmanaged) though the plan shown
    just before counted them."""
    for name in ("kept1", "kept2"):
        world.live(name, {**SNK, "topics": name})
        world.git(name, {**SNK, "topics": name})
    world.live("moved", {**SNK, "topics": "m", "tasks.max": "1"})
    world.git("moved", {**SNK, "topics": "m", "tasks.max": "2"})
    world.live("theirs", {**SNK, "topics": "t"}, own=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("click.prompt", lambda *a, **k: "yes")
    got = world.reconcile()
    assert got.code == 0, got.out + got.err
    shown, applied = got.out.split("Do you want", 1)[0], got.out
    summary = "0 to create, 1 to update, 0 to delete, 0 protected, 1 unmanaged, 2 unchanged"
    assert summary in shown
    assert applied.count(summary) == 2, applied  # the plan shown, then the apply's
    assert world.double.connectors["moved"].config["tasks.max"] == "2"


def test_a_sealed_plan_applied_counts_what_it_left_alone_too(world: World) -> None:
    for name in ("kept1", "kept2"):
        world.live(name, {**SNK, "topics": name})
        world.git(name, {**SNK, "topics": name})
    world.live("moved", {**SNK, "topics": "m", "tasks.max": "1"})
    world.git("moved", {**SNK, "topics": "m", "tasks.max": "2"})
    plan = world.project.root / "plan.json"
    assert world.reconcile("--dry-run", "--out", str(plan)).code == 0
    got = world.reconcile("--plan", str(plan))
    assert got.code == 0, got.out + got.err
    assert "0 to create, 1 to update, 0 to delete, 0 protected, 0 unmanaged, 2 unchanged" in got.out


def test_a_refused_plan_on_a_terminal_is_shown_before_exit_2(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal on a terminal was exit 2 with nothing printed: the plan is shown, with its reason."""
    for name in ("gone1", "gone2", "gone3"):  # owned, no longer in git: 3 of 4 sinks, over the share
        world.live(name, {**SNK, "topics": name})
    world.git("kept", {**SNK, "topics": "k"})
    world.live("kept", {**SNK, "topics": "k"})
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("click.prompt", lambda *a, **k: pytest.fail("a refused plan is not asked about"))
    got = world.reconcile()
    assert got.code == 2, got.out + got.err
    assert "- delete gone1" in got.out and "refused: would delete 3 of 4 owned sinks" in got.out

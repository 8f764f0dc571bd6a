"""Reconcile's workflow: plan, review, approve, apply (Terraform's, for Connect).

The CLI parses flags into a `RunRequest`, calls `prepare` and `approve`, and prints; every
decision is made here: which sealed plan rules, whether `--out` may be written, the options
of the run, whether a plan shown on a terminal may apply, and the exit code.

- `--dry-run` plans and changes nothing; `--out plan.json` seals that plan (its steps, what it
  was computed from, the options) for `--plan`.
- `--plan plan.json` executes exactly those steps once the seal and every precondition hold,
  or nothing (a stale plan exits 2; an edited, truncated or foreign one exits 1), rolled out
  as sealed: a flag that would change its scope or its rollout is an error.
- Otherwise, on a terminal the plan is shown and applied only after `yes`; without a terminal
  `--auto-approve` is required (the jobs of Helm hooks and cron pass it: they are automation).
  The plan shown is sealed in memory and applied as a saved one is: if anything moved between
  showing and applying, nothing is applied.

This module is the CLI's one door into the reconciler (an import-linter contract): what
commands/ needs from it (the run, a plan sealed to a file, the rollout's hooks, the output,
the metrics, and the types it annotates with) is named here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from hephaestus import outputs
from hephaestus.errors import EXIT_DRIFT, EXIT_ERROR, EXIT_OK, HephaestusError, InputError
from hephaestus.project import Cluster, Project
from hephaestus.reconciler import apply, metrics, render, run, sealed
from hephaestus.reconciler.apply import Progress
from hephaestus.reconciler.outcome import ClusterOutcome, StepResult
from hephaestus.reconciler.rollout import checks
from hephaestus.reconciler.rollout.checks import RolloutHooks
from hephaestus.reconciler.rollout.executor import GiveBack, Parked
from hephaestus.reconciler.run import RunOptions, apply_options_of
from hephaestus.reconciler.sealed import PlanScope
from hephaestus.safety.gate import allow_of
from hephaestus.state.backend import timeout_of

__all__ = [
    "Approval",
    "ClusterOutcome",
    "GiveBack",
    "Parked",
    "PlanScope",
    "PreparedRun",
    "Progress",
    "RolloutHooks",
    "RunOptions",
    "RunRequest",
    "StepResult",
    "approve",
    "check_canaries",
    "check_out",
    "exit_code",
    "hooks_of",
    "options_of",
    "prepare",
    "publish",
    "reconcile",
    "save",
    "show",
]

T = TypeVar("T")

# Options whose value decides what a plan covers: fixed by a sealed plan (flag as typed).
_SCOPE = {
    "clusters": "--cluster",
    "targets": "--target",
    "force": "--force",
    "allow_destructive": "--allow-destructive",
    "deploy_custom": "--deploy-custom-sinks",
    "send_snapshot": "--send-incremental-snapshot",
}
# The rollout's keys given as flags: reviewed with the plan ("canary, then rollback"), sealed;
# any other rollout key a flag gives is refused with --plan too, by its own name.
_ROLLOUT = {
    "canary": "--canary",
    "on_failure": "--on-failure",
    "analysis_s": "--analysis-window",
    "lag_budget": "--lag-budget",
}


@dataclass(frozen=True, kw_only=True)  # keywords only: its flags are bools and numbers side by side
class RunRequest:
    """What the user asked for, parsed: the flags that are not the plan's scope."""

    given: sealed.PlanScope
    dry_run: bool = False
    drift_exit: bool = False  # --exit-code
    drift_only: bool = False
    plan_file: Path | None = None
    out: Path | None = None
    lock_timeout_s: float | None = None
    batch_size: int | None = None
    batch_interval_s: float | None = None
    max_failures: int | None = None
    rollout: Mapping[str, Any] = field(default_factory=dict)  # --canary, --on-failure, … (over `rollout:`)


@dataclass(frozen=True)
class PreparedRun:
    """A run ready to go: the options that rule (a sealed plan's, else the given), the clusters."""

    scope: sealed.PlanScope
    clusters: list[Cluster]
    options: RunOptions
    seal: sealed.Sealed | None

    @property
    def needs_approval(self) -> bool:
        return self.seal is None and not self.options.dry_run


def prepare(
    project: Project, request: RunRequest, progress: apply.Progress | None, note: Callable[[str], None]
) -> PreparedRun:
    """Check the request (nothing is read from Connect until it holds) and build the run."""
    allow_of(request.given.allow_destructive)  # an unknown effect is an error before anything is read
    seal = _sealed_plan(project, request, note)
    scope = seal.options if seal is not None else request.given
    clusters = project.select(scope.clusters)
    if request.out:
        check_out(request.out, project, request.dry_run)
    return PreparedRun(scope, clusters, options_of(project, request, scope, seal, progress), seal)


def _sealed_plan(project: Project, request: RunRequest, note: Callable[[str], None]) -> sealed.Sealed | None:
    """The sealed plan of --plan, checked (seal, signature, shape, files); its options rule."""
    if not request.plan_file:
        return None
    if request.out:
        raise InputError("--out", "a sealed plan is applied as it is: --out makes a new one (with --dry-run)")
    given = request.given.as_dict()
    changed = [flag for key, flag in _SCOPE.items() if given[key] not in ((), [], False, "")]
    changed += [_ROLLOUT.get(key, "--" + key.replace("_", "-")) for key in request.rollout]
    if changed:
        raise InputError(
            changed[0],
            f"the plan fixes what it covers and how it rolls out: {', '.join(changed)} cannot be given with --plan",
        )
    plan = sealed.load(request.plan_file, project)
    note(f"applying plan {plan.id} ({request.plan_file})")
    return plan


def check_out(out: Path, project: Project, dry_run: bool) -> None:
    """--out seals a dry run's plan; it never overwrites an input, nor a file that is no plan."""
    if not dry_run:
        raise InputError("--out", "--out saves a plan: use it with --dry-run (then apply it with --plan)")
    outputs.check(out, project, "--out", outputs.PLAN)


def options_of(
    project: Project,
    request: RunRequest,
    scope: sealed.PlanScope,
    seal: sealed.Sealed | None,
    progress: apply.Progress | None,
) -> RunOptions:
    """The run's options: the project's policy, overridden by the flags given."""
    applying = apply_options_of(project, progress)
    applying = replace(
        applying,
        batch_size=_given(request.batch_size, applying.batch_size),
        batch_interval_s=_given(request.batch_interval_s, applying.batch_interval_s),
        max_failures=_given(request.max_failures, applying.max_failures),
    )
    return RunOptions(
        dry_run=request.dry_run,
        force=scope.force,
        deploy_custom=scope.deploy_custom,
        apply=applying,
        drift_only=request.drift_only,
        unassigned_grace_s=project.policy.unassigned_grace_s,
        lock_timeout_s=timeout_of(project, request.lock_timeout_s),
        allow=allow_of(scope.allow_destructive),
        targets=tuple(scope.targets),
        sealed=seal,
        rollout=seal.rollout if seal is not None else request.rollout,
    )


def _given(flag: T | None, policy: T) -> T:
    return policy if flag is None else flag


Outcomes = Sequence[ClusterOutcome]


@dataclass(frozen=True)
class Approval:
    """What the review of a plan decided: apply `sealed`, or stop with `exit_code`."""

    sealed: sealed.Sealed | None = None
    exit_code: int = EXIT_OK
    # What was planned when nothing is applied (in sync, refused, held): shown all the same,
    # so a refusal on a terminal says why (it exited 2 in silence).
    shown: Outcomes = ()


def approve(
    project: Project,
    prepared: PreparedRun,
    preview: Callable[[RunOptions], Outcomes],
    ask: Callable[[Outcomes], str] | None,
) -> Approval:
    """Show the plan and ask for `yes` (Terraform's prompt); what was shown is sealed and is
    what may apply. `ask` is None without a terminal: then nothing is applied unasked, and a
    plan with nothing to apply is exit 0 as with one (issue 48: it was exit 1, "would apply")."""
    shown = preview(replace(prepared.options, dry_run=True))
    check_canaries(project, shown, prepared.options.rollout)
    # Adopting writes this deployment's ownership record (what it may later delete): a write to ask
    # about like any other, though Connect is not written.
    if all(o.plan is None or (o.plan.in_sync and not o.plan.adopt) or o.refused or o.failed for o in shown):
        stopped = any(o.refused or o.failed or o.held for o in shown)
        return Approval(exit_code=exit_code(shown, False, False) if stopped else EXIT_OK, shown=shown)
    if ask is None:
        raise HephaestusError(
            "reconcile would apply changes without a terminal to confirm them: pass "
            "--auto-approve (the `job run` jobs do), or review with --dry-run --out and "
            "apply with --plan"
        )
    if ask(shown).strip() != "yes":
        raise HephaestusError("apply cancelled: nothing was changed")
    return Approval(sealed.build(project, shown, prepared.scope, prepared.clusters, prepared.options.rollout))


def check_canaries(project: Project, outcomes: Outcomes, flags: Mapping[str, Any]) -> None:
    """A dry run's plans (a preview, a plan to seal) refused as their apply would be: a canary
    whose globs name none of a cluster's writes (checks.check_canary)."""
    for o in outcomes:
        if o.plan is not None and o.cluster in project.clusters:
            checks.check_canary(project, project.clusters[o.cluster], flags, o.plan)


def exit_code(outcomes: Outcomes, dry_run: bool, drift_exit: bool) -> int:
    """The exit policy (Helm hooks and cron read it): 1 a failure, 2 a refusal, or an apply in
    part (a sink held back, the rest written: issue 48), or with --dry-run --exit-code drift or
    an unhealthy managed connector; 1 when an apply left a managed connector unhealthy; else 0.
    A dry run whose sink only waits for a ksqlDB migration is drift, not a refusal: the deploy
    runs the migrations first."""
    if any(o.failed for o in outcomes):
        return EXIT_ERROR
    if any(o.refused for o in outcomes) or any(not (dry_run and h.migration) for o in outcomes for h in o.held):
        return EXIT_DRIFT
    unhealthy = any(o.unhealthy for o in outcomes)
    if not dry_run and unhealthy:
        return EXIT_ERROR  # the apply did not leave git's connectors running
    if dry_run and drift_exit and (unhealthy or any(o.drift for o in outcomes)):
        return EXIT_DRIFT
    return EXIT_OK


def reconcile(
    project: Project,
    prepared: PreparedRun,
    options: RunOptions,
    hooks: RolloutHooks | None,
    give_back: GiveBack | None,
) -> list[ClusterOutcome]:
    """The run (run.reconcile) over the prepared clusters, with `options` (a preview's or the apply's)."""
    return run.reconcile(project, prepared.clusters, options, hooks=hooks, give_back=give_back)


def hooks_of(project: Project, prepared: PreparedRun, inner: checks.Around | None) -> RolloutHooks:
    """An apply's hooks: the rollout's checks before a cluster's first write, then `inner`'s."""
    return RolloutHooks(project, prepared.options.rollout, inner)


def save(out: Path, project: Project, outcomes: Outcomes, prepared: PreparedRun) -> sealed.Sealed:
    """--out: the dry run's plan sealed into `out` (checked by prepare), for --plan."""
    plan = sealed.build(project, outcomes, prepared.scope, prepared.clusters, prepared.options.rollout)
    sealed.write(out, plan)
    return plan


def show(outcomes: Outcomes, output: str, style: render.Style = render.plain) -> str:
    """The outcomes as --output asks: json, markdown (a PR comment), else text in `style`."""
    if output == "json":
        return render.as_json(outcomes)
    if output == "markdown":
        return render.markdown(outcomes)
    return render.text(outcomes, style)


def publish(outcomes: Outcomes, dry_run: bool, textfile: Path | None, pushgateway: str | None) -> None:
    """The run's metrics to a node-exporter textfile and/or a Pushgateway, when either is given."""
    if textfile or pushgateway:
        metrics.metrics_of(outcomes, dry_run).publish(textfile, pushgateway, "hephaestus_reconcile")

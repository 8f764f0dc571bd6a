"""`hephaestus reconcile`: parse, call the reconciler's workflow, print.

The workflow (plan, review, approve, apply; sealed plans; the exit policy) is
hephaestus.reconciler.workflow; this module owns the flags, the prompt and the output.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hephaestus.commands.common import (
    COUNT,
    SECONDS,
    Aliased,
    allow_option,
    approve_option,
    check_textfile,
    cluster_option,
    colour_wanted,
    lock_timeout_option,
    metrics_textfile_option,
    output_option,
    project_option,
    pushgateway_option,
)

if TYPE_CHECKING:  # the workflow's modules load only when the command runs
    from hephaestus.project import Project
    from hephaestus.reconciler.workflow import (
        ClusterOutcome,
        Parked,
        PreparedRun,
        Progress,
        RolloutHooks,
        RunOptions,
        StepResult,
    )
    from hephaestus.snapshot.hooks import SnapshotHooks
    from hephaestus.state.audit import Journal


@click.command()
@project_option
@cluster_option
@click.option("--dry-run", is_flag=True, help="Plan only: read the live clusters, change nothing.")
@click.option("--exit-code", is_flag=True, help="With --dry-run: exit 2 when anything would change.")
@output_option
@click.option("--force", is_flag=True, help="Apply a plan that deletes more than the policy allows.")
@allow_option
@click.option("--target", "targets", multiple=True, metavar="GLOB", help="Plan and apply only these connectors.")
@approve_option
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --dry-run: seal the plan into this file, for `--plan` (never an input file).",
)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Apply this sealed plan exactly, or nothing if anything moved since.",
)
@click.option(
    "--batch-size",
    type=COUNT,
    default=None,
    help="Write this many connectors at a time, each batch ready before the next (0: all).",
)
@click.option("--batch-interval", type=SECONDS, default=None, metavar="SECONDS", help="Pause between batches.")
@click.option(
    "--max-failures",
    type=click.IntRange(1, 1_000_000),
    default=None,
    help="Stop the rollout after this many batches with a failure (a wave is a batch without "
    "--batch-size; default 1 with --batch-size, else never).",
)
@click.option(
    "--canary",
    "canary",
    multiple=True,
    metavar="COUNT|GLOB",
    help="Progressive rollout: write these first (a count, or globs), watch them, then the waves.",
)
@click.option(
    "--on-failure",
    type=click.Choice(["rollback", "pause", "continue"]),
    default=None,
    help="When a rollout's gate fails: put back what the run changed (default), stop, or go on.",
)
@click.option(
    "--analysis-window", type=SECONDS, default=None, metavar="SECONDS", help="Watch each rollout wave this long."
)
@click.option("--lag-budget", type=COUNT, default=None, help="Start a wave only when the rollout's sinks lag less.")
@click.option(
    "--deploy-custom-sinks",
    "--deployCustomSinkConnector",
    "deploy_custom",
    cls=Aliased,
    is_flag=True,
    help="Also reconcile connectors/<cluster>/custom/.",
)
@click.option(
    "--send-incremental-snapshot",
    "--sendIncrementalSnapshot",
    "send_snapshot",
    cls=Aliased,
    is_flag=True,
    help="Back-fill tables newly captured by an updated source (incremental snapshot).",
)
@click.option(
    "--drift-only", is_flag=True, help="Report config drift only: leave FAILED/UNASSIGNED managed connectors out."
)
@lock_timeout_option
@metrics_textfile_option
@pushgateway_option
def reconcile(
    project_file: Path,
    clusters: tuple[str, ...],
    dry_run: bool,
    exit_code: bool,
    output: str,
    force: bool,
    allow_destructive: str | None,
    targets: tuple[str, ...],
    auto_approve: bool,
    out: Path | None,
    plan_file: Path | None,
    batch_size: int | None,
    batch_interval: float | None,
    max_failures: int | None,
    canary: tuple[str, ...],
    on_failure: str | None,
    analysis_window: float | None,
    lag_budget: int | None,
    deploy_custom: bool,
    send_snapshot: bool,
    drift_only: bool,
    lock_timeout: float | None,
    metrics_textfile: Path | None,
    pushgateway: str | None,
) -> None:
    """Diff git's connectors against live Kafka Connect and converge (or just show, --dry-run).

    Exit 0 ok; 1 a step failed, bad input, or an edited or foreign plan; 2 a refused plan
    (deletes over the policy, a destructive change, a fleet rule, a stale saved plan), or with
    --dry-run --exit-code drift or an unhealthy managed connector."""
    from hephaestus.project import load_project
    from hephaestus.reconciler import workflow

    project = load_project(project_file)
    check_textfile(project, metrics_textfile)
    given = workflow.PlanScope(
        clusters=clusters,
        targets=targets,
        force=force,
        allow_destructive=allow_destructive or "",
        deploy_custom=deploy_custom,
        send_snapshot=send_snapshot,
    )
    flags = _rollout_flags(canary, on_failure, analysis_window, lag_budget)
    request = workflow.RunRequest(
        given=given,
        dry_run=dry_run,
        drift_exit=exit_code,
        drift_only=drift_only,
        plan_file=plan_file,
        out=out,
        lock_timeout_s=lock_timeout,
        batch_size=batch_size,
        batch_interval_s=batch_interval,
        max_failures=max_failures,
        rollout=flags,
    )
    progress = _progress() if sys.stderr.isatty() else None
    prepared = workflow.prepare(project, request, progress, lambda line: click.echo(line, err=True))
    # Compiled once per run, by the first cluster whose sink starts to read a missing topic.
    migrations = cache(partial(_migrations, project))
    prepared = replace(prepared, options=replace(prepared.options, migrations=migrations))
    hooks = None if dry_run else _hooks(project, prepared)
    options = prepared.options
    if prepared.needs_approval and not auto_approve:
        approval = workflow.approve(project, prepared, lambda o: _run(project, prepared, o, None), _asker(output))
        if approval.sealed is None:
            _render(approval.shown, output)
            sys.exit(approval.exit_code)
        options = replace(options, sealed=approval.sealed)
    outcomes = _run(project, prepared, options, hooks)
    _publish(outcomes, dry_run, metrics_textfile, pushgateway)
    _render(outcomes, output)
    if dry_run:  # refused as the apply would be, and never sealed
        workflow.check_canaries(project, outcomes, options.rollout)
    if out:
        _save(out, project, outcomes, prepared)
    sys.exit(workflow.exit_code(outcomes, dry_run, exit_code))


def _migrations(project: Project) -> dict[str, str]:
    """The topics the project's ksqlDB migrations write: a sink reading one waits for it."""
    from hephaestus.ksql.producers import topics_written

    return topics_written(project)


def _rollout_flags(
    canary: tuple[str, ...], on_failure: str | None, window: float | None, budget: int | None
) -> dict[str, object]:
    """The rollout keys given as flags (any of them makes the apply a progressive rollout)."""
    found: dict[str, object] = {}
    if canary:
        # ASCII digits only: "²" is a digit to str.isdigit and no number to int()
        count = len(canary) == 1 and canary[0].isascii() and canary[0].isdigit()
        found["canary"] = _count(canary[0]) if count else canary
    given = {"on_failure": on_failure, "analysis_s": window, "lag_budget": budget}
    return found | {k: v for k, v in given.items() if v is not None}


def _count(text: str) -> int:
    if len(text) > 7 or int(text) > 1_000_000:
        raise click.BadParameter(f"{text} writes: a canary of at most 1000000", param_hint="--canary")
    return int(text)


def _save(out: Path, project: Project, outcomes: Sequence[ClusterOutcome], prepared: PreparedRun) -> None:
    from hephaestus.reconciler.workflow import save

    sealed = save(out, project, outcomes, prepared)
    click.echo(f"\nPlan `{sealed.id}` sealed into {out}: apply it with `hephaestus reconcile --plan {out}`.")


def _hooks(project: Project, prepared: PreparedRun) -> RolloutHooks:
    """An apply's hooks: the rollout's checks before a cluster's first write, then the
    incremental snapshots': the plan's back-fills always, newly captured tables when asked for."""
    from hephaestus.reconciler.workflow import hooks_of

    return hooks_of(project, prepared, _snapshot_hooks(project, prepared.scope.send_snapshot))


def _snapshot_hooks(project: Project, new_tables: bool) -> SnapshotHooks:
    from hephaestus.snapshot.hooks import SnapshotHooks  # psycopg: only when it is used

    return SnapshotHooks(project, new_tables=new_tables)


def _run(
    project: Project, prepared: PreparedRun, options: RunOptions, hooks: RolloutHooks | None
) -> list[ClusterOutcome]:
    from hephaestus.reconciler.workflow import reconcile as run_reconcile

    return run_reconcile(project, prepared, options, hooks, _replay_parked)


def _replay_parked(parked: Parked, journal: Journal) -> int:
    """A rollback replays what its sinks parked (dlq), loaded only when one does."""
    from hephaestus.dlq.run import replay_parked

    return replay_parked(parked, journal)


def _asker(output: str) -> Callable[[Sequence[ClusterOutcome]], str] | None:
    """Show the plan and read the answer; None without a terminal to ask on."""
    if not sys.stdin.isatty():
        return None

    def ask(shown: Sequence[ClusterOutcome]) -> str:
        _render(shown, output)
        prompt = "\nDo you want to perform these actions? Only 'yes' will be accepted"
        answer: str = click.prompt(prompt, default="", show_default=False)
        return answer

    return ask


def _render(outcomes: Sequence[ClusterOutcome], output: str) -> None:
    from hephaestus.reconciler.workflow import show

    click.echo(show(outcomes, output, _colour), nl=False)


def _publish(outcomes: Sequence[ClusterOutcome], dry_run: bool, textfile: Path | None, pushgateway: str | None) -> None:
    from hephaestus.reconciler.workflow import publish

    publish(outcomes, dry_run, textfile, pushgateway)


def _progress() -> Progress:
    """One line per finished connector on a terminal, so a long apply shows it is moving."""
    from rich.console import Console
    from rich.text import Text

    from hephaestus.terminal import printable

    console = Console(stderr=True, highlight=False)

    def show(result: StepResult, done: int, total: int) -> None:
        # The detail is Connect's (an error, a trace): text, never rich markup or a raw escape.
        line = Text(f"[{done}/{total}] ")
        line.append("ok" if result.ok else "FAILED", style="green" if result.ok else "red")
        line.append(printable(f" {result.action} {result.name}: {result.detail}"))
        console.print(line)

    return show


_COLOURS = {
    "create": "green",
    "update": "yellow",
    "rename": "blue",
    "move": "blue",
    "delete": "red",
    "protected": "magenta",
    "unmanaged": "cyan",
    "error": "red",
    "header": "bright_white",
}


def _colour(text: str, action: str) -> str:
    # click.echo strips these codes when stdout is not a terminal.
    colour = _COLOURS.get(action) if colour_wanted() else None
    return click.style(text, fg=colour, bold=action in ("header", "error")) if colour else text


commands: list[click.Command] = [reconcile]

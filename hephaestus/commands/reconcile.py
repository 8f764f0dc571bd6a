"""`hephaestus reconcile`: plan, review, approve, apply (Terraform's workflow for Connect).

- `--dry-run` plans and changes nothing; `--out plan.json` saves that plan with fingerprints of
  everything it was computed from.
- `--plan plan.json` applies exactly that plan, or refuses (exit 2) naming what moved since.
- Otherwise, on a terminal the plan is shown and applied only after `yes`; without a terminal
  `--auto-approve` is required (the jobs of Helm hooks and cron pass it: they are automation).
  The plan approved is held like a saved one: if anything moved between showing and applying,
  nothing is applied.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from hephaestus.commands.common import (
    EXIT_DRIFT,
    EXIT_ERROR,
    EXIT_OK,
    cluster_option,
    colour_wanted,
    lock_timeout_option,
    metrics_textfile_option,
    output_option,
    project_option,
    pushgateway_option,
)
from hephaestus.errors import HephaestusError


@click.command()
@project_option
@cluster_option
@click.option("--dry-run", is_flag=True, help="Plan only: read the live clusters, change nothing.")
@click.option("--exit-code", is_flag=True, help="With --dry-run: exit 2 when anything would change.")
@output_option
@click.option("--force", is_flag=True, help="Apply a plan that deletes more than the policy allows.")
@click.option(
    "--allow-destructive",
    is_flag=True,
    help="Apply destructive changes (a new slot, another target table, …; see the plan's risk column).",
)
@click.option("--target", "targets", multiple=True, metavar="GLOB", help="Plan and apply only these connectors.")
@click.option("--auto-approve", is_flag=True, help="Apply without asking (required without a terminal).")
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --dry-run: save the plan here, for `--plan`.",
)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Apply this saved plan exactly, or refuse if anything moved since.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=0),
    default=None,
    help="Write this many connectors at a time, each batch ready before the next (0: all).",
)
@click.option(
    "--batch-interval", type=click.FloatRange(min=0), default=None, metavar="SECONDS", help="Pause between batches."
)
@click.option(
    "--max-failures",
    type=click.IntRange(min=1),
    default=None,
    help="Stop the rollout after this many batches with a failure (default 1).",
)
@click.option(
    "--deploy-custom-sinks",
    "--deployCustomSinkConnector",
    "deploy_custom",
    is_flag=True,
    help="Also reconcile connectors/<cluster>/custom/ (the reference's flag).",
)
@click.option(
    "--send-incremental-snapshot",
    "--sendIncrementalSnapshot",
    "send_snapshot",
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
    allow_destructive: bool,
    targets: tuple[str, ...],
    auto_approve: bool,
    out: Path | None,
    plan_file: Path | None,
    batch_size: int | None,
    batch_interval: float | None,
    max_failures: int | None,
    deploy_custom: bool,
    send_snapshot: bool,
    drift_only: bool,
    lock_timeout: float | None,
    metrics_textfile: Path | None,
    pushgateway: str | None,
) -> None:
    """Diff git's connectors against live Kafka Connect and converge (or just show, --dry-run).

    Exit 0 ok; 1 a step failed, or a managed connector is FAILED/UNASSIGNED after an apply;
    2 a refused plan (deletes over the policy, a destructive change, a stale saved plan), or
    with --dry-run --exit-code drift or an unhealthy managed connector."""
    from hephaestus.project import load_project

    project = load_project(project_file)
    if out and not dry_run:
        raise HephaestusError("--out saves a plan: use it with --dry-run (then apply it with --plan)")
    given = {
        "force": force,
        "allow_destructive": allow_destructive,
        "targets": list(targets),
        "deploy_custom": deploy_custom,
        "clusters": list(clusters),
    }
    saved, expected = _given_or_saved(project, given, plan_file)
    options = _options(project, saved, dry_run, drift_only, lock_timeout, batch_size, batch_interval, max_failures)
    selected = project.select(tuple(saved["clusters"]))
    hooks = _snapshot_hooks(project) if send_snapshot and not dry_run else None
    if not dry_run and expected is None and not auto_approve:
        expected = _approved(project, selected, options, output)
        if expected is None:
            sys.exit(EXIT_OK)  # nothing to do, and said so
    outcomes = _run(project, selected, replace(options, expected=expected), hooks)
    _publish(outcomes, dry_run, metrics_textfile, pushgateway)
    _render(outcomes, output)
    if out:
        from hephaestus.reconciler.saved import save

        plan_id = save(out, project, outcomes, saved, selected)
        click.echo(f"\nPlan `{plan_id}` saved to {out}: apply it with `hephaestus reconcile --plan {out}`.")
    sys.exit(_exit(outcomes, dry_run, exit_code))


def _given_or_saved(project: Any, given: dict[str, Any], plan_file: Path | None) -> tuple[dict[str, Any], Any]:
    """The options given, or those of the saved plan and what it expects to find live."""
    if not plan_file:
        return given, None
    from hephaestus.reconciler.saved import load

    loaded = load(plan_file, project)  # StalePlan (exit 2) when git or the project moved
    click.echo(f"applying plan {loaded.id} ({plan_file})", err=True)
    return loaded.options, loaded.expected


def _snapshot_hooks(project: Any) -> Any:
    from hephaestus.snapshot.hooks import SnapshotHooks  # psycopg: only when it is used

    return SnapshotHooks(project)


def _options(
    project: Any,
    saved: dict[str, Any],
    dry_run: bool,
    drift_only: bool,
    lock_timeout: float | None,
    batch_size: int | None,
    batch_interval: float | None,
    max_failures: int | None,
) -> Any:
    from hephaestus.lock import timeout_of
    from hephaestus.reconciler.run import RunOptions, apply_options_of

    applying = apply_options_of(project, _progress() if sys.stderr.isatty() else None)
    applying = replace(
        applying,
        batch_size=applying.batch_size if batch_size is None else batch_size,
        batch_interval_s=applying.batch_interval_s if batch_interval is None else batch_interval,
        max_failures=applying.max_failures if max_failures is None else max_failures,
    )
    return RunOptions(
        dry_run=dry_run,
        force=saved["force"],
        deploy_custom=saved["deploy_custom"],
        apply=applying,
        drift_only=drift_only,
        unassigned_grace_s=project.policy.get("unassigned_grace_s", 60.0),
        lock_timeout_s=timeout_of(project, lock_timeout),
        allow_destructive=saved["allow_destructive"],
        targets=tuple(saved["targets"]),
    )


def _run(project: Any, clusters: Any, options: Any, hooks: Any) -> list[Any]:
    from hephaestus.reconciler.run import reconcile as run_reconcile

    return run_reconcile(project, clusters, options, hooks=hooks)


def _approved(project: Any, clusters: Any, options: Any, output: str) -> Any:
    """Show the plan and ask for `yes` (Terraform's prompt); what was shown is what may apply.
    None when there is nothing to apply (the plan shown says why)."""
    if not sys.stdin.isatty():
        raise HephaestusError(
            "reconcile would apply changes without a terminal to confirm them: pass "
            "--auto-approve (the `job run` jobs do), or review with --dry-run --out and "
            "apply with --plan"
        )
    from hephaestus.reconciler.saved import Expected, steps_hash

    preview = _run(project, clusters, replace(options, dry_run=True), None)
    _render(preview, output)
    if all(o.plan is None or o.plan.in_sync or o.refused or o.failed for o in preview):
        if any(o.refused or o.failed for o in preview):
            sys.exit(_exit(preview, True, False))
        return None
    answer = click.prompt(
        "\nDo you want to perform these actions? Only 'yes' will be accepted", default="", show_default=False
    )
    if answer.strip() != "yes":
        raise HephaestusError("apply cancelled: nothing was changed")
    return {o.cluster: Expected(dict(o.live_hashes), steps_hash(o.plan)) for o in preview if o.plan}


def _render(outcomes: list[Any], output: str) -> None:
    from hephaestus.reconciler import render

    if output == "json":
        click.echo(render.as_json(outcomes), nl=False)
    elif output == "markdown":
        click.echo(render.markdown(outcomes), nl=False)
    else:
        click.echo(render.text(outcomes, _colour), nl=False)


def _publish(outcomes: list[Any], dry_run: bool, textfile: Path | None, pushgateway: str | None) -> None:
    if not (textfile or pushgateway):
        return
    from hephaestus.reconciler.metrics import metrics_of

    metrics_of(outcomes, dry_run).publish(textfile, pushgateway, "hephaestus_reconcile")


def _progress() -> Any:
    """One line per finished connector on a terminal, so a long apply shows it is moving."""
    from rich.console import Console
    from rich.text import Text

    from hephaestus.terminal import printable

    console = Console(stderr=True, highlight=False)

    def show(result: Any, done: int, total: int) -> None:
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


def _exit(outcomes: list[Any], dry_run: bool, exit_code: bool) -> int:
    if any(o.failed for o in outcomes):
        return EXIT_ERROR
    if any(o.refused for o in outcomes):
        return EXIT_DRIFT
    unhealthy = any(o.unhealthy for o in outcomes)
    if not dry_run and unhealthy:
        return EXIT_ERROR  # the apply did not leave git's connectors running
    if dry_run and exit_code and (unhealthy or any(o.drift for o in outcomes)):
        return EXIT_DRIFT
    return EXIT_OK


commands: list[click.Command] = [reconcile]

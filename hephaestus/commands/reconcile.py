"""`hephaestus reconcile`: plan, review, approve, apply (Terraform's workflow for Connect).

- `--dry-run` plans and changes nothing; `--out plan.json` seals that plan (its steps, what it
  was computed from, the options) for `--plan`.
- `--plan plan.json` executes exactly those steps once the seal and every precondition hold,
  or nothing (a stale plan exits 2; an edited, truncated or foreign one exits 1).
- Otherwise, on a terminal the plan is shown and applied only after `yes`; without a terminal
  `--auto-approve` is required (the jobs of Helm hooks and cron pass it: they are automation).
  The plan shown is sealed in memory and applied as a saved one is: if anything moved between
  showing and applying, nothing is applied.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from hephaestus.commands.common import (
    COUNT,
    EXIT_DRIFT,
    EXIT_ERROR,
    EXIT_OK,
    SECONDS,
    allow_option,
    cluster_option,
    colour_wanted,
    lock_timeout_option,
    metrics_textfile_option,
    output_option,
    project_option,
    pushgateway_option,
)
from hephaestus.errors import HephaestusError, InputError


@click.command()
@project_option
@cluster_option
@click.option("--dry-run", is_flag=True, help="Plan only: read the live clusters, change nothing.")
@click.option("--exit-code", is_flag=True, help="With --dry-run: exit 2 when anything would change.")
@output_option
@click.option("--force", is_flag=True, help="Apply a plan that deletes more than the policy allows.")
@allow_option
@click.option("--target", "targets", multiple=True, metavar="GLOB", help="Plan and apply only these connectors.")
@click.option("--auto-approve", is_flag=True, help="Apply without asking (required without a terminal).")
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
    allow_destructive: str | None,
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

    Exit 0 ok; 1 a step failed, bad input, or an edited or foreign plan; 2 a refused plan
    (deletes over the policy, a destructive change, a fleet rule, a stale saved plan), or with
    --dry-run --exit-code drift or an unhealthy managed connector."""
    from hephaestus.project import load_project
    from hephaestus.reconciler.sealed import Options
    from hephaestus.safety.gate import allow_of

    project = load_project(project_file)
    given = Options(clusters, targets, force, allow_destructive or "", deploy_custom, send_snapshot)
    allow_of(given.allow_destructive)  # an unknown effect is an error before anything is read
    seal = _sealed_plan(project, plan_file, given, out)
    scope = seal.options if seal is not None else given
    selected = project.select(scope.clusters)
    if out:
        _check_out(out, project, dry_run)
    options = _options(
        project, scope, seal, dry_run, drift_only, lock_timeout, batch_size, batch_interval, max_failures
    )
    hooks = _snapshot_hooks(project) if scope.send_snapshot and not dry_run else None
    if not dry_run and seal is None and not auto_approve:
        options = replace(options, sealed=_approved(project, selected, options, scope, output))
    outcomes = _run(project, selected, options, hooks)
    _publish(outcomes, dry_run, metrics_textfile, pushgateway)
    _render(outcomes, output)
    if out:
        _save(out, project, outcomes, scope, selected)
    sys.exit(_exit(outcomes, dry_run, exit_code))


# Options whose value decides what a plan covers: fixed by a sealed plan.
_SCOPE = {
    "clusters": "--cluster",
    "targets": "--target",
    "force": "--force",
    "allow_destructive": "--allow-destructive",
    "deploy_custom": "--deploy-custom-sinks",
    "send_snapshot": "--send-incremental-snapshot",
}


def _sealed_plan(project: Any, plan_file: Path | None, given: Any, out: Path | None) -> Any:
    """The sealed plan of --plan, checked (seal, signature, shape, files); its options rule."""
    if not plan_file:
        return None
    if out:
        raise InputError("--out", "a sealed plan is applied as it is: --out makes a new one (with --dry-run)")
    changed = [flag for key, flag in _SCOPE.items() if given.as_dict()[key] not in ((), [], False, "")]
    if changed:
        raise InputError(changed[0], f"the plan fixes what it covers: {', '.join(changed)} cannot be given with --plan")
    from hephaestus.reconciler.sealed import load

    sealed = load(plan_file, project)
    click.echo(f"applying plan {sealed.id} ({plan_file})", err=True)
    return sealed


def _check_out(out: Path, project: Any, dry_run: bool) -> None:
    """--out seals a dry run's plan; it never overwrites an input, nor a file that is no plan."""
    if not dry_run:
        raise InputError("--out", "--out saves a plan: use it with --dry-run (then apply it with --plan)")
    target = out.resolve()
    inputs = {
        Path(project.file).resolve(),
        *(c.secrets_file.resolve() for c in project.clusters.values() if c.secrets_file),
    }
    if project.audit_log:
        inputs.add(project.audit_log.resolve())
    folders = [c.connectors.resolve() for c in project.clusters.values()] + [(project.base / ".hephaestus").resolve()]
    if target in inputs or any(f == target or f in target.parents for f in folders):
        raise InputError(str(out), "--out would overwrite an input of hephaestus: name a file of its own")
    if target.exists() and not _is_plan(target):
        raise InputError(str(out), "--out would overwrite a file that is not a hephaestus plan")


def _is_plan(path: Path) -> bool:
    try:
        head = path.read_bytes()[:4096]
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"hephaestus_plan"' in head


def _save(out: Path, project: Any, outcomes: list[Any], scope: Any, selected: Any) -> None:
    from hephaestus.reconciler.sealed import build, write

    sealed = build(project, outcomes, scope, selected)
    write(out, sealed)
    click.echo(f"\nPlan `{sealed.id}` sealed into {out}: apply it with `hephaestus reconcile --plan {out}`.")


def _snapshot_hooks(project: Any) -> Any:
    from hephaestus.snapshot.hooks import SnapshotHooks  # psycopg: only when it is used

    return SnapshotHooks(project)


def _options(
    project: Any,
    scope: Any,
    seal: Any,
    dry_run: bool,
    drift_only: bool,
    lock_timeout: float | None,
    batch_size: int | None,
    batch_interval: float | None,
    max_failures: int | None,
) -> Any:
    from hephaestus.lock import timeout_of
    from hephaestus.reconciler.run import RunOptions, apply_options_of
    from hephaestus.safety.gate import allow_of

    applying = apply_options_of(project, _progress() if sys.stderr.isatty() else None)
    applying = replace(
        applying,
        batch_size=applying.batch_size if batch_size is None else batch_size,
        batch_interval_s=applying.batch_interval_s if batch_interval is None else batch_interval,
        max_failures=applying.max_failures if max_failures is None else max_failures,
    )
    return RunOptions(
        dry_run=dry_run,
        force=scope.force,
        deploy_custom=scope.deploy_custom,
        apply=applying,
        drift_only=drift_only,
        unassigned_grace_s=project.policy.get("unassigned_grace_s", 60.0),
        lock_timeout_s=timeout_of(project, lock_timeout),
        allow=allow_of(scope.allow_destructive),
        targets=tuple(scope.targets),
        sealed=seal,
    )


def _run(project: Any, clusters: Any, options: Any, hooks: Any) -> list[Any]:
    from hephaestus.reconciler.run import reconcile as run_reconcile

    return run_reconcile(project, clusters, options, hooks=hooks)


def _approved(project: Any, clusters: Any, options: Any, scope: Any, output: str) -> Any:
    """Show the plan and ask for `yes` (Terraform's prompt); what was shown is sealed and is
    what may apply. Exits when there is nothing to apply (the plan shown says why)."""
    if not sys.stdin.isatty():
        raise HephaestusError(
            "reconcile would apply changes without a terminal to confirm them: pass "
            "--auto-approve (the `job run` jobs do), or review with --dry-run --out and "
            "apply with --plan"
        )
    from hephaestus.reconciler.sealed import build

    preview = _run(project, clusters, replace(options, dry_run=True), None)
    _render(preview, output)
    if all(o.plan is None or o.plan.in_sync or o.refused or o.failed for o in preview):
        sys.exit(_exit(preview, True, False) if any(o.refused or o.failed for o in preview) else EXIT_OK)
    answer = click.prompt(
        "\nDo you want to perform these actions? Only 'yes' will be accepted", default="", show_default=False
    )
    if answer.strip() != "yes":
        raise HephaestusError("apply cancelled: nothing was changed")
    return build(project, preview, scope, clusters)


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

"""The thin click layer: parse flags, call the core, render, map errors to exit codes.

The only module that prints or exits. Exit codes are stable because Helm hooks and cron
read them: 0 ok, 1 error, 2 drift/refused when a flag asks for it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from hephaestus import __version__
from hephaestus.errors import HephaestusError

from hephaestus.commands import register
from hephaestus.commands.common import EXIT_DRIFT, EXIT_ERROR, EXIT_OK, cluster_option, lock_timeout_option
from hephaestus.commands.common import metrics_textfile_option, pushgateway_option
from hephaestus.commands.common import output_option as _output_opt
from hephaestus.commands.common import project_option as _project_opt

_dir = click.Path(file_okay=False, path_type=Path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hephaestus")
@click.option("--verbose", "-v", is_flag=True, help="Log each HTTP request (method, path, status; never bodies).")
def cli(verbose: bool) -> None:
    """GitOps reconciler and job runner for Kafka Connect + Debezium fleets."""
    import logging  # not for --version and --help

    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="hephaestus: %(levelname)s %(name)s: %(message)s", force=True)
    for noisy in ("httpx", "httpcore", "slack_sdk"):  # their DEBUG lines carry headers and URLs
        logging.getLogger(noisy).setLevel(logging.WARNING)


@cli.command()
@click.option("--definitions", type=_dir, default=Path("definitions"), show_default=True,
              help="Folder of definition YAML files (one per source database).")
@click.option("--schemas", type=_dir, default=Path("schemas"), show_default=True,
              help="Folder of schema snapshots (<database>.json).")
@click.option("--out", type=_dir, default=Path("connectors"), show_default=True,
              help="Connector folder: writes <cluster>/source and <cluster>/sink.")
@click.option("--check", is_flag=True, help="Write nothing; list what would change; exit 2 if anything would.")
def generate(definitions: Path, schemas: Path, out: Path, check: bool) -> None:
    """Fan definitions out to connector JSON files (custom/ is never touched)."""
    from hephaestus.generator import run_generate, sync_definitions_schema

    result = run_generate(definitions, schemas, out, check)
    changes = [f"{line.split(' ', 1)[0]} {out / line.split(' ', 1)[1]}" for line in result.changes.lines()]
    if sync_definitions_schema(schemas, check):
        changes.append(f"update {schemas / 'definitions.schema.json'}")
    if changes:
        click.echo("\n".join(changes))  # one write: 4,500 echo calls cost 0.1 s
    verb = "would change" if check else "changed"
    click.echo(f"{len(result.connectors)} connectors, {len(changes)} files {verb}", err=True)
    if check and changes:
        sys.exit(EXIT_DRIFT)


@cli.group()
def schemas() -> None:
    """Schema snapshots of live databases (what generation reads)."""


@schemas.command("dump")
@click.option("--dsn", required=True, envvar="HEPHAESTUS_DSN",
              help="libpq connection string (or env HEPHAESTUS_DSN); its dbname is replaced.")
@click.option("--database", "databases", required=True, multiple=True, help="Database to dump (repeatable).")
@click.option("--out", type=_dir, default=Path("schemas"), show_default=True)
def schemas_dump(dsn: str, databases: tuple[str, ...], out: Path) -> None:
    """Write schemas/<database>.json (tables, columns, primary keys) from PostgreSQL."""
    from hephaestus import pgschema
    from hephaestus.generator.snapshots import snapshot_json

    out.mkdir(parents=True, exist_ok=True)
    for database in databases:
        snap = pgschema.dump(dsn, database)
        (out / f"{database}.json").write_text(snapshot_json(snap))
        click.echo(f"wrote {out / f'{database}.json'} ({len(snap.tables)} tables)")


@cli.command()
@_project_opt
@cluster_option
@click.option("--dry-run", is_flag=True, help="Plan only: read the live clusters, change nothing.")
@click.option("--exit-code", is_flag=True, help="With --dry-run: exit 2 when anything would change.")
@_output_opt
@click.option("--force", is_flag=True, help="Apply a plan that deletes more than the policy allows.")
@click.option("--deploy-custom-sinks", "--deployCustomSinkConnector", "deploy_custom", is_flag=True,
              help="Also reconcile connectors/<cluster>/custom/ (the reference's flag).")
@click.option("--send-incremental-snapshot", "--sendIncrementalSnapshot", "send_snapshot", is_flag=True,
              help="Back-fill tables newly captured by an updated source (incremental snapshot).")
@click.option("--drift-only", is_flag=True,
              help="Report config drift only: leave FAILED/UNASSIGNED managed connectors out.")
@lock_timeout_option
@metrics_textfile_option
@pushgateway_option
def reconcile(project_file: Path, clusters: tuple[str, ...], dry_run: bool, exit_code: bool,
              output: str, force: bool, deploy_custom: bool, send_snapshot: bool, drift_only: bool,
              lock_timeout: float | None, metrics_textfile: Path | None, pushgateway: str | None) -> None:
    """Diff git's connectors against live Kafka Connect and converge (or just show, --dry-run).

    Exit 0 ok; 1 a step failed, or a managed connector is FAILED/UNASSIGNED after an apply;
    2 a refused plan, or with --dry-run --exit-code drift or an unhealthy managed connector."""
    from hephaestus.project import load_project
    from hephaestus.reconciler import render
    from hephaestus.lock import timeout_of
    from hephaestus.reconciler.run import RunOptions, apply_options_of, reconcile as run_reconcile

    project = load_project(project_file)
    options = RunOptions(dry_run=dry_run, force=force, deploy_custom=deploy_custom,
                         apply=apply_options_of(project, _progress() if sys.stderr.isatty() else None),
                         drift_only=drift_only, unassigned_grace_s=project.policy.get("unassigned_grace_s", 60.0),
                         lock_timeout_s=timeout_of(project, lock_timeout))
    hooks = None
    if send_snapshot and not dry_run:
        from hephaestus.snapshot.hooks import SnapshotHooks  # psycopg: only when it is used

        hooks = SnapshotHooks(project)
    outcomes = run_reconcile(project, project.select(clusters), options, hooks=hooks)
    if metrics_textfile or pushgateway:
        from hephaestus.reconciler.metrics import metrics_of

        metrics = metrics_of(outcomes, dry_run)
        if metrics_textfile:
            metrics.write_textfile(metrics_textfile)
        if pushgateway:
            metrics.push(pushgateway, job="hephaestus_reconcile")
    if output == "json":
        click.echo(render.as_json(outcomes), nl=False)
    elif output == "markdown":
        click.echo(render.markdown(outcomes), nl=False)
    else:
        click.echo(render.text(outcomes, _colour), nl=False)
    sys.exit(_reconcile_exit(outcomes, dry_run, exit_code))


def _progress() -> Any:
    """One line per finished connector on a terminal, so a long apply shows it is moving."""
    from rich.console import Console

    console = Console(stderr=True, highlight=False)

    def show(result: Any, done: int, total: int) -> None:
        mark = "[green]ok[/]" if result.ok else "[red]FAILED[/]"
        console.print(f"[{done}/{total}] {mark} {result.action} {result.name}: {result.detail}", markup=True)
    return show


_COLOURS = {"create": "green", "update": "yellow", "rename": "blue", "delete": "red", "protected": "magenta",
            "unmanaged": "cyan", "error": "red", "header": "bright_white"}


def _colour(text: str, action: str) -> str:
    # click.echo strips these codes when stdout is not a terminal.
    colour = _COLOURS.get(action)
    return click.style(text, fg=colour, bold=action in ("header", "error")) if colour else text


def _reconcile_exit(outcomes: list[Any], dry_run: bool, exit_code: bool) -> int:
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


@cli.group()
def job() -> None:
    """Named jobs, as Helm hooks and cron run them."""


@job.command("list")
def job_list() -> None:
    """List the jobs and what each runs, then the reference's job names and what they map to."""
    from hephaestus.jobs import ALIASES, JOBS

    for j in JOBS.values():
        click.echo(f"{j.name:28} hephaestus {' '.join(j.argv):40} {j.help}")
    click.echo("\nthe reference's job names:")
    for a in ALIASES.values():
        click.echo(f"{a.name:42} = {a.job:26} hephaestus {' '.join(a.argv)}")


@job.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def job_run(name: str, args: tuple[str, ...]) -> None:
    """Run job NAME (ours or the reference's name for it); extra ARGS are passed to its command."""
    from hephaestus.jobs import command_line

    argv = command_line(name)
    if argv is None:
        raise HephaestusError(f"no job {name!r}; `hephaestus job list` shows them")
    cli.main(args=[*argv, *args], prog_name="hephaestus", standalone_mode=False)


register(cli)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; everything it prints passes the redactor."""
    from hephaestus.commands.streams import redacted_output

    with redacted_output():
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    """HephaestusError is caught here, once."""
    try:
        cli.main(args=argv, prog_name="hephaestus", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return EXIT_ERROR  # usage errors too: 2 means drift here
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_ERROR
    except HephaestusError as exc:
        click.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - a bug: one line for the user, never a raw traceback
        click.echo(f"error: unexpected {type(exc).__name__}: {exc} (a bug in hephaestus; "
                   "HEPHAESTUS_TRACEBACK=1 shows where)", err=True)
        if os.environ.get("HEPHAESTUS_TRACEBACK") == "1":
            import traceback

            traceback.print_exc()  # to the redacted stderr
        return EXIT_ERROR
    return EXIT_OK


def main() -> None:
    """Console entry point."""
    sys.exit(run())

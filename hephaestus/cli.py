"""The thin click layer: parse flags, call the core, render, map errors to exit codes.

The only module that prints or exits. Exit codes are stable because Helm hooks and cron
read them: 0 ok, 1 error, 2 drift/refused when a flag asks for it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from hephaestus import __version__
from hephaestus.commands import register
from hephaestus.commands.common import EXIT_DRIFT, EXIT_ERROR, EXIT_OK
from hephaestus.errors import HephaestusError

_dir = click.Path(file_okay=False, path_type=Path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hephaestus")
@click.option("--verbose", "-v", is_flag=True, help="Log each HTTP request (method, path, status; never bodies).")
def cli(verbose: bool) -> None:
    """GitOps reconciler and job runner for Kafka Connect + Debezium fleets."""
    import logging  # not for --version and --help

    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="hephaestus: %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    for noisy in ("httpx", "httpcore", "slack_sdk"):  # their DEBUG lines carry headers and URLs
        logging.getLogger(noisy).setLevel(logging.WARNING)


@cli.command()
@click.option(
    "--definitions",
    type=_dir,
    default=Path("definitions"),
    show_default=True,
    help="Folder of definition YAML files (one per source database).",
)
@click.option(
    "--schemas",
    type=_dir,
    default=Path("schemas"),
    show_default=True,
    help="Folder of schema snapshots (<database>.json).",
)
@click.option(
    "--out",
    type=_dir,
    default=Path("connectors"),
    show_default=True,
    help="Connector folder: writes <cluster>/source and <cluster>/sink.",
)
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
@click.option(
    "--dsn",
    required=True,
    envvar="HEPHAESTUS_DSN",
    help="libpq connection string (or env HEPHAESTUS_DSN); its dbname is replaced.",
)
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
        click.echo(
            f"error: unexpected {type(exc).__name__}: {exc} (a bug in hephaestus; HEPHAESTUS_TRACEBACK=1 shows where)",
            err=True,
        )
        if os.environ.get("HEPHAESTUS_TRACEBACK") == "1":
            import traceback

            traceback.print_exc()  # to the redacted stderr
        return EXIT_ERROR
    return EXIT_OK


def main() -> None:
    """Console entry point."""
    sys.exit(run())

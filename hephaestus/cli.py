"""The thin click layer: parse flags, call the core, render, map errors to exit codes.

The only module that prints or exits. Exit codes are stable because Helm hooks and cron
read them: 0 ok, 1 error, 2 drift/refused when a flag asks for it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hephaestus import __version__
from hephaestus.errors import HephaestusError

EXIT_OK, EXIT_ERROR, EXIT_DRIFT = 0, 1, 2

_dir = click.Path(file_okay=False, path_type=Path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hephaestus")
def cli() -> None:
    """GitOps reconciler and job runner for Kafka Connect + Debezium fleets."""


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
    for line in changes:
        click.echo(line)
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


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; HephaestusError is caught here, once."""
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
    return EXIT_OK


def main() -> None:
    """Console entry point."""
    sys.exit(run())

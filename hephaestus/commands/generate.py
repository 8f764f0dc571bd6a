"""`hephaestus generate` (definitions → connector files) and `hephaestus schemas dump` (table
snapshots from PostgreSQL, what generation reads)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hephaestus.commands.common import EXIT_DRIFT, FOLDER, definitions_option, schemas_option

_dir = FOLDER


@click.command()
@definitions_option
@schemas_option
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
    from hephaestus.generator import run_generate, sync_editor_schemas

    result = run_generate(definitions, schemas, out, check)
    changes = [f"{line.split(' ', 1)[0]} {out / line.split(' ', 1)[1]}" for line in result.changes.lines()]
    changes += [f"update {path}" for path in sync_editor_schemas(schemas, check)]
    if changes:
        click.echo("\n".join(changes))  # one write: 4,500 echo calls cost 0.1 s
    verb = "would change" if check else "changed"
    click.echo(f"{len(result.connectors)} connectors, {len(changes)} files {verb}", err=True)
    if check and changes:
        sys.exit(EXIT_DRIFT)


@click.group()
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


commands = [generate, schemas]

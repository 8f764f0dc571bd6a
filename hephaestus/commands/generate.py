"""`hephaestus generate` (definitions → connector files) and `hephaestus catalog dump` (table
catalogs from PostgreSQL, what generation reads; `schemas dump` is its deprecated name)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from hephaestus.commands.common import (
    CATALOGS,
    EXIT_DRIFT,
    FOLDER,
    OLD_CATALOGS,
    catalogs_option,
    definitions_option,
    project_option,
    registries_of,
)

if TYPE_CHECKING:
    from hephaestus.generator.output import FileChanges

_dir = FOLDER


class _VerboseAtTop(click.Command):
    """`-v` is hephaestus's --verbose, given before the command (one meaning everywhere,
    tests/unit/test_spelling.py): `generate -v` is refused with where it goes."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "-v" in (args[: args.index("--")] if "--" in args else args):
            raise click.NoSuchOption(
                "-v", "No such option: -v (-v is --verbose in hephaestus: hephaestus -v generate)", ctx=ctx
            )
        return super().parse_args(ctx, args)


@click.command(cls=_VerboseAtTop)
@definitions_option
@catalogs_option
@click.option(
    "--out",
    type=_dir,
    default=Path("connectors"),
    show_default=True,
    help="Connector folder: writes <cluster>/source and <cluster>/sink for every cluster. "
    "Without it, a cluster the project file names is written to its `connectors:` folder.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; list the files that would change and sum them up; exit 2 if any would.",
)
@project_option
def generate(definitions: Path, catalogs: Path, out: Path, check: bool, project_file: Path) -> None:
    """Fan definitions out to connector JSON files (custom/ is never touched). An Avro
    definition naming no schema registry takes its cluster's from the project file. Prints a
    summary per cluster folder; `hephaestus -v generate` also lists each file written or removed."""
    from hephaestus.generator.run import Layout, run_generate, sync_editor_schemas

    given = click.get_current_context().get_parameter_source("out") is not ParameterSource.DEFAULT
    layout = Layout(out, {} if given else _folders(project_file))
    result = run_generate(definitions, catalogs, layout, check, registries_of(project_file), _pins(project_file))
    schemas = sync_editor_schemas(definitions.parent / "schemas", check)
    changes = [*result.changes.lines(), *(f"update {path}" for path in schemas)]
    # --check lists what is stale: few files, each one to look at. A write lists nothing by
    # default: a fleet's first generate would print a line per file (1,450), burying the summary.
    listed = check or _root_verbose()
    if changes and listed:
        click.echo("\n".join(changes))  # one write: 4,500 echo calls cost 0.1 s
    summary = [*_per_cluster(result.changes, check)]
    if schemas:
        summary.append(f"{schemas[0].parent}: {len(schemas)} {'to update' if check else 'updated'} (editor schemas)")
    verb = "would change" if check else "changed"
    hint = " (hephaestus -v generate lists them)" if changes and not listed else ""
    files = "file" if len(changes) == 1 else "files"
    summary.append(f"{len(result.connectors)} connectors, {len(changes)} {files} {verb}{hint}")
    click.echo("\n".join(summary), err=True)
    if check and changes:
        sys.exit(EXIT_DRIFT)


def _pins(project_file: Path) -> dict[str, str]:
    """The project file's fleet-wide plugin pins (`plugins.versions`); none without one."""
    if not project_file.is_file():
        return {}
    from hephaestus.project import load_project

    return dict(load_project(project_file).plugin_versions)


def _folders(project_file: Path) -> dict[str, Path]:
    """Each cluster's connectors folder, as the project file names it (reconcile reads there);
    none without a project file. A project file that does not load is an error, as in every
    command that reads it."""
    if not project_file.is_file():
        return {}
    from hephaestus.project import load_project

    return {name: c.connectors for name, c in load_project(project_file).clusters.items()}


def _per_cluster(changes: FileChanges, check: bool) -> Iterator[str]:
    """A line per cluster folder: what was (or, with --check, would be) done to its files."""
    words = (
        ("to create", "to update", "unchanged", "to remove")
        if check
        else ("created", "updated", "unchanged", "removed")
    )
    for folder, t in changes.by_folder().items():
        counts = (t.created, t.updated, t.unchanged, t.removed)
        yield f"{folder}: " + ", ".join(f"{n} {word}" for n, word in zip(counts, words, strict=True))


def _root_verbose() -> bool:
    """`hephaestus -v generate` lists the files too: generate makes no HTTP request for the
    top level's --verbose to log, and a user reaching for -v there means the same thing."""
    return bool(click.get_current_context().find_root().params.get("verbose"))


@click.group()
def catalog() -> None:
    """Table catalogs of live databases (what generation reads)."""


def _dump_command(name: str, out: Path, deprecated: str | None = None) -> click.Command:
    @click.command(name, deprecated=deprecated or False)
    @click.option(
        "--dsn",
        required=True,
        envvar="HEPHAESTUS_DSN",
        help="libpq connection string (or env HEPHAESTUS_DSN); its dbname is replaced.",
    )
    @click.option("--database", "databases", required=True, multiple=True, help="Database to dump (repeatable).")
    @click.option("--out", type=_dir, default=out, show_default=True)
    def dump(dsn: str, databases: tuple[str, ...], out: Path) -> None:
        """Write <out>/<database>.json (tables, columns, primary keys) from PostgreSQL."""
        from hephaestus import pgschema
        from hephaestus.generator.catalogs import catalog_json

        out.mkdir(parents=True, exist_ok=True)
        for database in databases:
            found = pgschema.dump(dsn, database)
            (out / f"{database}.json").write_text(catalog_json(found))
            click.echo(f"wrote {out / f'{database}.json'} ({len(found.tables)} tables)")

    return dump


catalog.add_command(_dump_command("dump", CATALOGS))


@catalog.command()
@project_option
@catalogs_option
@click.option(
    "--database",
    "databases",
    multiple=True,
    help="Refresh only this database's catalog (repeatable); default every catalog file.",
)
@click.option("--check", is_flag=True, help="Write nothing; list what is stale; exit 2 if anything is.")
def refresh(project_file: Path, catalogs: Path, databases: tuple[str, ...], check: bool) -> None:
    """Rewrite the catalogs (<catalogs>/<database>.json) from the live databases the project
    names, so a DBA's DDL shows as a diff in git and `generate` follows it. A catalog holds every
    base table of its database, as `catalog dump` writes it. Every database is read before any
    file is written: one that cannot be read writes nothing."""
    from hephaestus.pgschema import refreshed, write
    from hephaestus.project import load_project

    project = load_project(project_file)
    found = refreshed(project, catalogs, databases)
    for line in found.lines:
        click.echo(line, err=line.startswith("warning:"))
    stale = [r for r in found.catalogs if r.stale]
    if not check:
        write(stale)
    verb = "stale" if check else "rewritten"
    click.echo(f"{len(found.catalogs)} catalogs read, {len(stale)} {verb}", err=True)
    if check and stale:
        sys.exit(EXIT_DRIFT)


# The old name, for a release: it still writes where it wrote (schemas/), which generate reads
# (with a warning) while there is no catalogs/ folder, so an old script keeps working.
@click.group(deprecated="use `hephaestus catalog`", hidden=True)
def schemas() -> None:
    """Table catalogs (deprecated name of `catalog`)."""


schemas.add_command(_dump_command("dump", OLD_CATALOGS, deprecated="use `hephaestus catalog dump`"))

commands = [generate, catalog, schemas]

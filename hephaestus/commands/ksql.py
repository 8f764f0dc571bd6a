"""`hephaestus ksql init|apply|undo|info|validate|new`: ksqlDB migrations, like Confluent's ksql-migrations.

Files are `ksql_migrations/<cluster>/V000001__name.sql` (and `U000001__name.sql`, its undo);
the clusters, metadata names and migration folders come from the project file's `ksqldb:` section.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hephaestus.commands.common import EXIT_DRIFT, EXIT_OK, cluster_option, lock_timeout_option, project_option

if TYPE_CHECKING:
    from hephaestus.ksql.apply import KsqlTarget

_VERSION = click.IntRange(1, 999_999)


@click.group()
def ksql() -> None:
    """ksqlDB migrations: versioned ksql_migrations/<cluster>/V*.sql (and U*.sql, their undo) per ksqlDB cluster."""


@ksql.command("init")
@project_option
@cluster_option
@lock_timeout_option
def init_cmd(project_file: Path, clusters: tuple[str, ...], lock_timeout: float | None) -> None:
    """Create the migrations metadata stream and table (idempotent; checks GET /info first)."""
    from hephaestus.ksql import render, run
    from hephaestus.project import load_project

    project = load_project(project_file)
    selected = project.select_ksqldb(clusters)
    for result in run.init(project, selected, lock_timeout):
        _echo(render.init_text(result))


class _NoShortV(click.Command):
    """`-v` is hephaestus's --verbose (the top level's); ksql-migrations' `-v N` (its short
    --version, ApplyMigrationCommand/NewMigrationCommand in confluentinc/ksql) is refused with
    a hint rather than click's bare "No such option"."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        options = args[: args.index("--")] if "--" in args else args
        if any(a == "-v" or (a.startswith("-v") and a[2:].isdigit()) for a in options):
            raise click.NoSuchOption(
                "-v",
                "No such option: -v (use --version N; -v is --verbose in hephaestus: hephaestus -v ksql …)",
                ctx=ctx,
            )
        return super().parse_args(ctx, args)


@ksql.command("apply", cls=_NoShortV)
@project_option
@cluster_option
@click.option("--all", "-a", "all_", is_flag=True, help="Apply every pending migration.")
@click.option("--next", "-n", "next_", is_flag=True, help="Apply the next pending migration only.")
@click.option("--until", "-u", type=_VERSION, help="Apply pending migrations up to and including this version.")
@click.option("--version", "version", type=_VERSION, help="Apply only this version (no short form: -v is --verbose).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Show the files and statements that would run: reads the applied versions from the server; writes nothing.",
)
@click.option(
    "--define",
    "-d",
    "defines",
    multiple=True,
    metavar="NAME=VALUE",
    help="A variable for ${NAME} in every file, as if each began with DEFINE (repeatable).",
)
@lock_timeout_option
def apply_cmd(
    project_file: Path,
    clusters: tuple[str, ...],
    all_: bool,
    next_: bool,
    until: int | None,
    version: int | None,
    dry_run: bool,
    defines: tuple[str, ...],
    lock_timeout: float | None,
) -> None:
    """Apply pending migrations in version order: RUNNING, the statements, MIGRATED (or ERROR).

    Exit 2 when applied files changed or vanished (see `ksql validate`); nothing is applied then."""
    from hephaestus.ksql import apply as applying
    from hephaestus.ksql import render, run
    from hephaestus.ksql.session import open_client, open_reader
    from hephaestus.ksql.variables import parse_defines
    from hephaestus.project import load_project

    options = applying.KsqlApplyOptions(_target(all_, next_, until, version), dry_run)
    project = load_project(project_file)
    selected = project.select_ksqldb(clusters)
    prepared = run.prepare(selected, parse_defines(defines), defer_failures=True)
    factory = open_reader if dry_run else open_client
    for result in run.apply(project, prepared, options, lock_timeout, factory):
        _echo(render.apply_text(result))


@ksql.command("undo")
@project_option
@cluster_option
@click.option(
    "--until",
    "-u",
    type=click.IntRange(0, 999_999),
    required=True,
    help="Undo every migrated version above this one, newest first (it stays current; 0 undoes all).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Show the undo files and statements that would run: reads the applied versions; writes nothing.",
)
@click.option(
    "--define",
    "-d",
    "defines",
    multiple=True,
    metavar="NAME=VALUE",
    help="A variable for ${NAME} in every undo file, as if each began with DEFINE (repeatable).",
)
@lock_timeout_option
def undo_cmd(
    project_file: Path,
    clusters: tuple[str, ...],
    until: int,
    dry_run: bool,
    defines: tuple[str, ...],
    lock_timeout: float | None,
) -> None:
    """Undo migrated versions by their U<version>__<name>.sql files: RUNNING, the statements, UNDONE (or ERROR).

    Exit 1 when a version to undo has no undo file, or the current version is RUNNING or ERROR
    (nothing is sent); exit 2 when applied files changed or vanished (see `ksql validate`)."""
    from hephaestus.errors import HephaestusError
    from hephaestus.ksql import render, run
    from hephaestus.ksql.session import open_client, open_reader
    from hephaestus.ksql.undo import UndoOptions
    from hephaestus.ksql.variables import parse_defines
    from hephaestus.project import load_project

    project = load_project(project_file)
    selected = project.select_ksqldb(clusters)
    if not clusters and len(selected) > 1:  # an undo is never a fleet-wide default
        raise HephaestusError(f"several ksqlDB clusters ({', '.join(c.name for c in selected)}): pass --cluster")
    prepared = run.prepare(selected, parse_defines(defines), parse=False, undo=True)
    factory = open_reader if dry_run else open_client
    for result in run.undo(project, prepared, UndoOptions(until, dry_run), lock_timeout, factory):
        _echo(render.undo_text(result))


def _target(all_: bool, next_: bool, until: int | None, version: int | None) -> KsqlTarget:
    from hephaestus.ksql.apply import KsqlTarget

    chosen = [
        t
        for t, on in (
            (KsqlTarget("all"), all_),
            (KsqlTarget("next"), next_),
            (KsqlTarget("until", until or 0), until is not None),
            (KsqlTarget("version", version or 0), version is not None),
        )
        if on
    ]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --all, --next, --until N, --version N")
    return chosen[0]


@ksql.command("info")
@project_option
@cluster_option
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
def info_cmd(project_file: Path, clusters: tuple[str, ...], output: str) -> None:
    """Every version with its state (PENDING: a local file never applied)."""
    from hephaestus.ksql import render, run
    from hephaestus.project import load_project

    results = run.info(run.prepare(load_project(project_file).select_ksqldb(clusters), {}, parse=False))
    if output == "json":
        click.echo(render.info_json(list(results)))
        return
    for result in results:
        _echo(render.info_text(result))


@ksql.command("validate")
@project_option
@cluster_option
def validate_cmd(project_file: Path, clusters: tuple[str, ...]) -> None:
    """Check applied migrations against their files (MD5); exit 2 if one changed or is missing."""
    from hephaestus.ksql import render, run
    from hephaestus.project import load_project

    ok = True
    prepared = run.prepare(load_project(project_file).select_ksqldb(clusters), {}, parse=False)
    for result in run.validate(prepared):
        _echo(render.validate_text(result))
        ok = ok and result.ok
    sys.exit(EXIT_OK if ok else EXIT_DRIFT)


@ksql.command("new", cls=_NoShortV)
@project_option
@click.option("--cluster", help="The ksqlDB cluster (needed when the project has several).")
@click.option("--version", "version", type=_VERSION, help="Version number; default the next one (no short form).")
@click.option("--undo", is_flag=True, help="Create its empty undo file U<version>__<description>.sql beside it.")
@click.argument("description")
def new_cmd(project_file: Path, cluster: str | None, version: int | None, undo: bool, description: str) -> None:
    """Create an empty V<next>__<description>.sql in the cluster's migrations folder."""
    from hephaestus.errors import HephaestusError
    from hephaestus.ksql import files
    from hephaestus.project import load_project

    chosen = load_project(project_file).select_ksqldb((cluster,) if cluster else ())
    if len(chosen) != 1:
        raise HephaestusError(f"several ksqlDB clusters ({', '.join(c.name for c in chosen)}): pass --cluster")
    path = files.create(chosen[0].migrations, description, version, undo=undo)
    click.echo(f"created {path}")
    if undo:
        click.echo(f"created {files.undo_path(path)}")


def _echo(lines: list[str]) -> None:
    for line in lines:
        click.echo(line)


commands: list[click.Command] = [ksql]

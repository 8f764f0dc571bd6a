"""`hephaestus validate`: every input a user is about to commit, checked with no cluster, no
database and no network: the project file, the definitions against the table catalogs, each
cluster's connector files and each ksqlDB cluster's migration files. A problem is exit 1
naming file and line (the pre-commit hook `hephaestus-validate`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hephaestus.commands.common import catalogs_option, definitions_option, project_option, registries_of
from hephaestus.errors import HephaestusError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hephaestus.generator.model import Definition
    from hephaestus.project import Project


@click.command()
@project_option
@definitions_option
@catalogs_option
@click.option("--define", "-d", "defines", multiple=True, help="ksql variable name=value (repeatable).")
@click.option(
    "--allow-empty",
    is_flag=True,
    help="A folder with neither a project file nor definitions passes (else exit 1: nothing was checked).",
)
def validate(
    project_file: Path, definitions: Path, catalogs: Path, defines: tuple[str, ...], allow_empty: bool
) -> None:
    """Check the project file, definitions, connector files and ksql migrations offline."""
    _named(project_file)
    found: list[str] = []
    errors: list[str] = []
    checks: list[Callable[[], str]] = []
    if definitions.is_dir():
        checks.append(partial(_definitions, definitions, catalogs, project_file))
    project = _project(project_file, errors)
    if project is not None:  # read once, for both checks that need it
        checks += [partial(_connector_files, project), partial(_migrations, project, defines)]
    for check in checks:  # all run: a commit's problems at once
        try:
            found.append(check())
        except HephaestusError as exc:
            errors.append(str(exc))
    if errors:
        raise HephaestusError("\n".join(errors))
    if not checks and not allow_empty:  # a typo'd folder or a run elsewhere must not pass as checked
        raise HephaestusError(
            f"nothing to check here: no project file {project_file} and no definitions folder {definitions} "
            f"in {Path.cwd()} (run it in the repository's root, or pass --allow-empty)"
        )
    click.echo("ok: " + ("; ".join(f for f in found if f) or "nothing to check here"))


def _named(project_file: Path) -> None:
    """A project file named by --project or HEPHAESTUS_PROJECT must exist: a typo there checked
    nothing and passed (issue 48). The default one may be absent (a definitions-only folder)."""
    source = click.get_current_context().get_parameter_source("project_file")
    if source is not click.core.ParameterSource.DEFAULT and not project_file.is_file():
        by = "HEPHAESTUS_PROJECT" if source is click.core.ParameterSource.ENVIRONMENT else "--project"
        raise HephaestusError(f"{project_file}: no such project file (named by {by})")


def _project(project_file: Path, errors: list[str]) -> Project | None:
    if not project_file.is_file():
        return None
    from hephaestus.project import load_project

    try:
        return load_project(project_file)
    except HephaestusError as exc:
        errors.append(str(exc))
        return None


def _definitions(definitions: Path, catalogs: Path, project_file: Path) -> str:
    from hephaestus.generator.catalogs import load_catalogs
    from hephaestus.generator.definitions import load_definitions
    from hephaestus.generator.fanout import generate

    loaded = load_definitions(definitions, registries_of(project_file))
    found = f"{len(loaded)} definitions ({len(generate(loaded, load_catalogs(catalogs)))} connectors)"
    _warn_shared(loaded)
    return found


def _warn_shared(loaded: Sequence[Definition]) -> None:
    """A fan-in is legitimate, so not an error; but each pipeline's accuracy then sees the
    others' rows as extra, and `accuracy --delete-extra` refuses the table."""
    from hephaestus.generator.writers import shared, writers

    for table in shared(writers(loaded)):
        why = "accuracy compares each with the whole table and refuses --delete-extra on it"
        click.echo(f"warning: sink table {table.describe()}: {why}", err=True)


def _connector_files(project: Project) -> str:
    from hephaestus.fleet.desired import files_of, load_desired

    clusters = project.clusters.values()
    # Checks every file, plaintext credentials included (as every command that loads them does).
    selected = sum(len(load_desired(c, include_custom=True)) for c in clusters)
    files = len({p.resolve() for c in clusters for p in files_of(c)})  # clusters may share a folder
    return f"{project.file} ({files} connector files checked; {selected} selected by {len(clusters)} clusters)"


def _migrations(project: Project, defines: tuple[str, ...]) -> str:
    if not project.ksqldb:
        return ""
    from hephaestus.ksql import run
    from hephaestus.ksql.variables import parse_defines

    prepared = run.prepare(list(project.ksqldb.values()), parse_defines(defines))
    return f"{sum(len(p.compiled) for p in prepared)} ksql migrations"


commands = [validate]

"""`hephaestus validate`: every input a user is about to commit, checked with no cluster, no
database and no network: the project file, the definitions against the table snapshots, each
cluster's connector files and each ksqlDB cluster's migration files. A problem is exit 1
naming file and line (the pre-commit hook `hephaestus-validate`)."""

from __future__ import annotations

from pathlib import Path

import click

from hephaestus.commands.common import definitions_option, project_option, schemas_option
from hephaestus.errors import HephaestusError


@click.command()
@project_option
@definitions_option
@schemas_option
@click.option("--define", "-d", "defines", multiple=True, help="ksql variable name=value (repeatable).")
def validate(project_file: Path, definitions: Path, schemas: Path, defines: tuple[str, ...]) -> None:
    """Check the project file, definitions, connector files and ksql migrations offline."""
    found: list[str] = []
    errors: list[str] = []
    for check in (_definitions, _connector_files, _migrations):  # all run: a commit's problems at once
        try:
            found += check(project_file, definitions, schemas, defines)
        except HephaestusError as exc:
            if str(exc) not in errors:  # a broken project file is one error, not one per check
                errors.append(str(exc))
    if errors:
        raise HephaestusError("\n".join(errors))
    click.echo("ok: " + ("; ".join(found) or "nothing to check here"))


def _definitions(project_file: Path, definitions: Path, schemas: Path, defines: tuple[str, ...]) -> list[str]:
    if not definitions.is_dir():
        return []
    from hephaestus.generator.definitions import load_definitions
    from hephaestus.generator.fanout import generate
    from hephaestus.generator.snapshots import load_snapshots

    loaded = load_definitions(definitions)
    return [f"{len(loaded)} definitions ({len(generate(loaded, load_snapshots(schemas)))} connectors)"]


def _connector_files(project_file: Path, definitions: Path, schemas: Path, defines: tuple[str, ...]) -> list[str]:
    if not project_file.is_file():
        return []
    from hephaestus.project import load_project
    from hephaestus.reconciler.desired import load_desired

    project = load_project(project_file)
    files = sum(len(load_desired(c, include_custom=True)) for c in project.clusters.values())
    return [f"{project_file} ({files} connector files in {len(project.clusters)} clusters)"]


def _migrations(project_file: Path, definitions: Path, schemas: Path, defines: tuple[str, ...]) -> list[str]:
    if not project_file.is_file():
        return []
    from hephaestus.ksql import run
    from hephaestus.ksql.variables import parse_defines
    from hephaestus.project import load_project

    project = load_project(project_file)
    if not project.ksqldb:
        return []
    prepared = run.prepare(list(project.ksqldb.values()), parse_defines(defines))
    return [f"{sum(len(p.compiled) for p in prepared)} ksql migrations"]


commands = [validate]

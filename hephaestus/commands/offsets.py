"""`hephaestus offsets get|reset|set --connector N`: a connector's offsets, changed like a reconcile
(planned, confirmed, under the cluster's lock, audited)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hephaestus.commands.common import (
    allow_option,
    approve_option,
    cluster_option,
    confirm,
    lock_timeout_option,
    project_option,
)

_connector = click.option("--connector", required=True)


@click.group()
def offsets() -> None:
    """Read or change a connector's offsets (Connect's offsets API, Kafka 3.6+)."""


@offsets.command("get")
@project_option
@cluster_option
@_connector
def offsets_get(project_file: Path, clusters: tuple[str, ...], connector: str) -> None:
    """The connector's offsets as Connect reports them (JSON)."""
    from hephaestus.offsets.run import get, locate
    from hephaestus.project import load_project

    project = load_project(project_file)
    cluster, _ = locate(project, project.select(clusters), connector)
    click.echo(json.dumps(get(cluster, connector), indent=2, sort_keys=True))


def _change(
    project_file: Path,
    clusters: tuple[str, ...],
    connector: str,
    action: str,
    wanted: list[object],
    allow_destructive: str | None,
    auto_approve: bool,
    dry_run: bool,
    lock_timeout: float | None,
) -> None:
    from hephaestus.offsets import run as ops
    from hephaestus.project import load_project
    from hephaestus.safety.gate import allow_of

    allow = allow_of(allow_destructive)
    project = load_project(project_file)
    planned = ops.plan(project, project.select(clusters), connector, action, wanted)  # type: ignore[arg-type]
    click.echo(f"plan: {planned.describe()}")
    click.echo(f"  now: {json.dumps(planned.current, sort_keys=True)}")
    for effect in planned.effects:
        click.echo(f"  {'!' if effect.destructive else '·'} {effect.describe()}")
    cleared = ops.judge(planned, allow)  # Refused (exit 2): nothing changed
    if dry_run:
        return
    if not auto_approve:
        confirm("Do it?")
    ops.apply(project, planned, cleared, lock_timeout)
    click.echo(f"done: {planned.describe()}")


@offsets.command("reset")
@project_option
@cluster_option
@_connector
@allow_option
@click.option("--force", is_flag=True, hidden=True, help="Deprecated: --allow-destructive.")
@approve_option
@click.option("--dry-run", is_flag=True, help="Show the plan only.")
@lock_timeout_option
def offsets_reset(
    project_file: Path,
    clusters: tuple[str, ...],
    connector: str,
    allow_destructive: str | None,
    force: bool,
    auto_approve: bool,
    dry_run: bool,
    lock_timeout: float | None,
) -> None:
    """Delete the offsets: a sink re-delivers every record still in its topics."""
    allowed = "all" if force else allow_destructive
    _change(project_file, clusters, connector, "reset", [], allowed, auto_approve, dry_run, lock_timeout)


@offsets.command("set")
@project_option
@cluster_option
@_connector
@click.option(
    "--file",
    "offsets_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    required=True,
    help='JSON as `offsets get` prints it: {"offsets": [{"partition": …, "offset": …}, …]}.',
)
@allow_option
@click.option("--force", is_flag=True, hidden=True, help="Deprecated: --allow-destructive.")
@approve_option
@click.option("--dry-run", is_flag=True, help="Show the plan only.")
@lock_timeout_option
def offsets_set(
    project_file: Path,
    clusters: tuple[str, ...],
    connector: str,
    offsets_file: Path,
    allow_destructive: str | None,
    force: bool,
    auto_approve: bool,
    dry_run: bool,
    lock_timeout: float | None,
) -> None:
    """Set the offsets of the partitions the file names (the others keep theirs)."""
    from hephaestus.errors import InputError
    from hephaestus.yamlsrc import load_json

    doc = load_json(offsets_file)
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("offsets"), list)
        or not all(isinstance(o, dict) and "partition" in o and "offset" in o for o in doc["offsets"])
    ):
        raise InputError(
            str(offsets_file), 'expected {"offsets": [{"partition": {…}, "offset": {…}}, …]}', field="offsets"
        )
    allowed = "all" if force else allow_destructive
    _change(project_file, clusters, connector, "set", doc["offsets"], allowed, auto_approve, dry_run, lock_timeout)


commands: list[click.Command] = [offsets]

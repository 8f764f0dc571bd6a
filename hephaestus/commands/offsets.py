"""`hephaestus offsets get|reset|set --connector N`: a connector's offsets, changed like a reconcile
(planned, confirmed, under the cluster's lock, audited)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hephaestus.commands.common import (
    allow_option,
    approve_option,
    cluster_option,
    confirm,
    lock_timeout_option,
    project_option,
)
from hephaestus.errors import EXIT_ERROR
from hephaestus.settings import LEDGER_KEEP

if TYPE_CHECKING:
    from hephaestus.project import Cluster, Project
    from hephaestus.state.ledgerdoc import Record

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
        click.echo(f"  {effect.marked()}")
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


# --- the offsets ledger (issue 49) --------------------------------------------------------------


@offsets.command("backup")
@project_option
@cluster_option
@click.option(
    "--keep",
    type=click.IntRange(min=1, max=100_000),
    default=LEDGER_KEEP,
    show_default=True,
    help="Records kept per connector (the oldest go).",
)
def offsets_backup(project_file: Path, clusters: tuple[str, ...], keep: int) -> None:
    """Record every owned connector's offsets (and a source's slot position) in the ledger.

    Exit 0 every connector recorded; 1 one could not be (named), the others still recorded."""
    from hephaestus.offsets.backup import backup
    from hephaestus.project import load_project

    project = load_project(project_file)
    done = backup(project, project.select(clusters), keep)
    for r in done.records:
        click.echo(f"recorded {r.describe()}")
    for problem in done.problems:
        click.echo(f"error: {problem}", err=True)
    click.echo(f"{len(done.records)} connectors recorded, {len(done.problems)} not", err=True)
    if done.problems:
        sys.exit(EXIT_ERROR)


@offsets.command("history")
@project_option
@click.argument("connector")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
def offsets_history(project_file: Path, connector: str, output: str) -> None:
    """The ledger's records of one connector, oldest first."""
    from hephaestus.project import load_project
    from hephaestus.state.backend import ledger_store
    from hephaestus.state.ledgerdoc import as_doc

    project = load_project(project_file)
    found = ledger_store(project).read(project.name, connector)
    if output == "json":
        click.echo(json.dumps(as_doc(project.name, found), indent=2, sort_keys=True))
        return
    if not found:
        click.echo(f"no record of {connector} in the offsets ledger", err=True)
    for r in found:
        click.echo(r.describe())


@offsets.command("restore")
@project_option
@cluster_option
@click.argument("connector", required=False)
@click.option(
    "--at",
    "at",
    type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"]),
    default=None,
    help="The newest record taken at or before this time (UTC when no offset is given); default the newest.",
)
@click.option(
    "--ledger",
    "ledger_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Read the records from this ledger file (`offsets history -o json`) instead of the state store.",
)
@allow_option
@approve_option
@click.option("--dry-run", is_flag=True, help="Show the plan only.")
@lock_timeout_option
def offsets_restore(
    project_file: Path,
    clusters: tuple[str, ...],
    connector: str | None,
    at: datetime | None,
    ledger_file: Path | None,
    allow_destructive: str | None,
    auto_approve: bool,
    dry_run: bool,
    lock_timeout: float | None,
) -> None:
    """Put recorded offsets back: CONNECTOR, or with --cluster and no CONNECTOR every owned
    connector of that cluster the ledger records (disaster recovery: an emptied offsets topic).
    An absent connector is created STOPPED from git, given its offsets, then started.

    Exit 0 restored; 1 bad input (nothing written) or a failed step; 2 refused by the gate
    (offsets-lost: the slot no longer holds the recorded position), nothing written."""
    from hephaestus.offsets import restore as ops
    from hephaestus.project import load_project
    from hephaestus.safety.gate import allow_of

    allow = allow_of(allow_destructive)
    project = load_project(project_file)
    when = at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at
    cluster, chosen = _chosen(project, clusters, connector, when, ledger_file)
    planned = ops.plan(project, cluster, chosen)
    for r in planned:
        click.echo(f"plan: {r.describe()}")
        for effect in r.effects:
            click.echo(f"  {effect.marked()}")
    cleared = ops.judge(planned, allow)  # Refused (exit 2): nothing written
    if dry_run:
        return
    if not auto_approve:
        confirm(f"Restore {len(planned)} connector(s) on {cluster.name}?")
    ops.apply(project, cluster, planned, cleared, lock_timeout)
    click.echo(f"done: {len(planned)} connector(s) restored on {cluster.name}")


def _chosen(
    project: Project,
    clusters: tuple[str, ...],
    connector: str | None,
    when: datetime | None,
    ledger_file: Path | None,
) -> tuple[Cluster, list[Record]]:
    """The cluster and the records to restore on it: one connector's, or a cluster's."""
    from hephaestus.errors import InputError
    from hephaestus.offsets.restore import pick
    from hephaestus.state.backend import ledger_store
    from hephaestus.state.ledgerdoc import from_doc
    from hephaestus.yamlsrc import load_json

    if ledger_file is not None:
        records = from_doc(load_json(ledger_file), project.name, str(ledger_file))
    else:
        records = ledger_store(project).read(project.name, connector)
    if connector is not None:
        record = pick(records, connector, clusters[0] if len(clusters) == 1 else None, when)
        return project.select((record.cluster,))[0], [record]
    if len(clusters) != 1:
        raise InputError("--cluster", "name one cluster to restore all its connectors (or give a CONNECTOR)")
    cluster = project.select(clusters)[0]
    names = sorted({r.connector for r in records if r.cluster == cluster.name})
    if not names:
        raise InputError("offsets ledger", f"no record of any connector on {cluster.name}", field=cluster.name)
    return cluster, [pick(records, n, cluster.name, when) for n in names]


commands: list[click.Command] = [offsets]

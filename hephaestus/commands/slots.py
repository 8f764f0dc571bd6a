"""`hephaestus slots`: the source databases' replication slots, the WAL they hold back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hephaestus.commands.common import (
    EXIT_DRIFT,
    EXIT_ERROR,
    EXIT_OK,
    approve_option,
    confirm,
    metrics_textfile_option,
    project_option,
    pushgateway_option,
)

if TYPE_CHECKING:
    from hephaestus.fleet.read import SlotReport
    from hephaestus.project import Project


@click.command()
@project_option
@click.option("--database", "databases", multiple=True, help="Only this database (repeatable); default all.")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--drop-orphan",
    metavar="SLOT",
    help="Drop this slot: only an inactive one no source of any cluster (live in any state, or in git) could use.",
)
@approve_option
@metrics_textfile_option
@pushgateway_option
def slots(
    project_file: Path,
    databases: tuple[str, ...],
    output: str,
    drop_orphan: str | None,
    auto_approve: bool,
    metrics_textfile: Path | None,
    pushgateway: str | None,
) -> None:
    """Every logical replication slot: active, WAL retained, owner or orphan; exit 2 when one is
    over its limit, inactive or orphaned while retaining WAL, or lost; 1 on an error."""
    from hephaestus.fleet.read import report
    from hephaestus.project import load_project
    from hephaestus.slots import render

    project = load_project(project_file)
    found = report(project, databases)
    if drop_orphan:
        _drop(project, found, databases, drop_orphan, auto_approve)
        return
    _publish(project, found, metrics_textfile, pushgateway)
    if output == "json":
        click.echo(render.as_json(found), nl=False)
    else:
        click.echo(render.text(found), nl=False)
        click.echo(render.errors(found), nl=False, err=True)
    sys.exit(EXIT_ERROR if found.errors else EXIT_DRIFT if found.problems else EXIT_OK)


def _publish(project: Project, found: SlotReport, textfile: Path | None, pushgateway: str | None) -> None:
    from hephaestus.notify import slack
    from hephaestus.slots import render

    if found.problems:
        slack.post(project.webhook(), render.slack_text(found))
    if textfile or pushgateway:
        from hephaestus.status.metrics import slot_metrics

        slot_metrics(found).publish(textfile, pushgateway, "hephaestus_slots")


def _drop(project: Project, found: SlotReport, databases: tuple[str, ...], name: str, auto_approve: bool) -> None:
    from hephaestus.safety.gate import Allow
    from hephaestus.slots.run import clear_drop, drop

    j, cleared = clear_drop(found, databases[0] if len(databases) == 1 else "", name, Allow())
    if not auto_approve:
        confirm(f"Drop replication slot {name} of database {j.slot.database}?")
    drop(project, j.slot.database, name, j, cleared)
    click.echo(f"dropped slot {name} of database {j.slot.database}")


commands: list[click.Command] = [slots]

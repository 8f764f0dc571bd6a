"""`hephaestus slots`: the source databases' replication slots, the WAL they hold back."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from hephaestus.commands.common import (
    EXIT_DRIFT,
    EXIT_ERROR,
    EXIT_OK,
    metrics_textfile_option,
    project_option,
    pushgateway_option,
)


@click.command()
@project_option
@click.option("--database", "databases", multiple=True, help="Only this database (repeatable); default all.")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--drop-orphan",
    metavar="SLOT",
    help="Drop this slot: only an inactive one no source of any cluster (live in any state, or in git) could use.",
)
@click.option("--yes", is_flag=True, help="With --drop-orphan: do not ask for confirmation.")
@metrics_textfile_option
@pushgateway_option
def slots(
    project_file: Path,
    databases: tuple[str, ...],
    output: str,
    drop_orphan: str | None,
    yes: bool,
    metrics_textfile: Path | None,
    pushgateway: str | None,
) -> None:
    """Every logical replication slot: active, WAL retained, owner or orphan; exit 2 when one is
    over its limit, inactive or orphaned while retaining WAL, or lost; 1 on an error."""
    from hephaestus.fleet.read import report
    from hephaestus.project import load_project

    project = load_project(project_file)
    found = report(project, databases)
    if drop_orphan:
        _drop(project, found, databases, drop_orphan, yes)
        return
    _publish(project, found, metrics_textfile, pushgateway)
    if output == "json":
        click.echo(json.dumps({"slots": [_row(j) for j in found.judged], "errors": list(found.errors)}, indent=2))
    else:
        _text(found)
    sys.exit(EXIT_ERROR if found.errors else EXIT_DRIFT if found.problems else EXIT_OK)


def _row(j: Any) -> dict[str, Any]:
    s = j.slot
    return {
        "database": s.database,
        "slot": s.name,
        "plugin": s.plugin,
        "active": s.active,
        "retained_bytes": s.retained_bytes,
        "lag_bytes": s.lag_bytes,
        "wal_status": s.wal_status,
        "owner": j.owner,
        "verdict": j.verdict,
        "reason": j.reason,
    }


def _text(found: Any) -> None:
    from hephaestus.fleet.slots import size

    for j in found.judged:
        s = j.slot
        held = "-" if s.retained_bytes is None else size(s.retained_bytes)
        click.echo(
            f"{s.database:16} {s.name:40} {'active' if s.active else 'inactive':8} {held:>10} "
            f"{s.wal_status or '-':10} {j.owner or 'orphan'}"
            + (f"  {j.verdict.upper()}: {j.reason}" if j.verdict != "ok" else "")
        )
    for error in found.errors:
        click.echo(f"error: {error}", err=True)
    click.echo(f"{len(found.problems)} of {len(found.judged)} slot(s) need attention")


def _publish(project: Any, found: Any, textfile: Path | None, pushgateway: str | None) -> None:
    from hephaestus.notify import slack

    if found.problems:
        lines = [
            f"`{slack.escape(j.slot.database)}`/`{slack.escape(j.slot.name)}`: {j.verdict} ({slack.escape(j.reason)})"
            for j in found.problems
        ]
        slack.post(project.webhook(), "hephaestus slots: replication slots need attention\n" + "\n".join(lines))
    if textfile or pushgateway:
        from hephaestus.status.metrics import slot_metrics

        slot_metrics(found).publish(textfile, pushgateway, "hephaestus_slots")


def _drop(project: Any, found: Any, databases: tuple[str, ...], name: str, yes: bool) -> None:
    from hephaestus.safety.gate import Allow
    from hephaestus.slots.run import clear_drop, drop

    j, cleared = clear_drop(found, databases[0] if len(databases) == 1 else "", name, Allow())
    if not yes:
        click.confirm(f"Drop replication slot {name} of database {j.slot.database}?", abort=True)
    drop(project, j.slot.database, name, j, cleared)
    click.echo(f"dropped slot {name} of database {j.slot.database}")


commands: list[click.Command] = [slots]

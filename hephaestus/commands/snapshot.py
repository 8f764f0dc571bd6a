"""`hephaestus snapshot [send] --connector NAME TABLE…` and `hephaestus snapshot status`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from hephaestus.commands.common import (
    EXIT_DRIFT,
    EXIT_OK,
    SECONDS,
    cluster_option,
    lock_timeout_option,
    project_option,
)


class _DefaultToSend(click.Group):
    """`snapshot --connector X t1` means `snapshot send --connector X t1` (the issue's form).
    Only an option may start the short form: a word that is no command (`stauts`) is a usage
    error naming the commands, never a snapshot sent."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0].startswith("-") and args[0] not in ("-h", "--help"):
            args = ["send", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultToSend)
def snapshot() -> None:
    """Debezium incremental snapshots: back-fill tables without recreating the source."""


@snapshot.command("send")
@project_option
@cluster_option
@click.option("--connector", required=True, help="The Debezium PostgreSQL source connector.")
@click.argument("tables", nargs=-1)
@click.option("--where", help="Only rows matching this SQL condition (Debezium additional-conditions).")
@click.option("--stop", is_flag=True, help="Send stop-snapshot instead (for TABLES, or all when none).")
@click.option(
    "--slot-timeout", type=SECONDS, default=120.0, show_default=True, help="Seconds to wait for an active slot."
)
@lock_timeout_option
def send_cmd(
    project_file: Path,
    clusters: tuple[str, ...],
    connector: str,
    tables: tuple[str, ...],
    where: str | None,
    stop: bool,
    slot_timeout: float,
    lock_timeout: float | None,
) -> None:
    """Insert an execute-snapshot (or stop-snapshot) signal for TABLES of a source."""
    from hephaestus.errors import HephaestusError
    from hephaestus.project import load_project
    from hephaestus.snapshot import manual

    if not tables and not stop:
        raise HephaestusError("name at least one table to snapshot")
    project = load_project(project_file)
    found = manual.locate(project, project.select(clusters), connector)
    cleared = manual.judged(found, connector, tables, stop)
    signal = manual.send(project, found, connector, tables, where, stop, slot_timeout, cleared, lock_timeout)
    click.echo(f"sent {signal.type} {signal.id} to {connector}: {signal.data}")


@snapshot.command("status")
@project_option
@cluster_option
@click.option("--connector", required=True)
@click.option("--id", "signal_id", required=True, help="The signal id `snapshot send` printed.")
@click.option("--wait", is_flag=True, help="Wait until the snapshot COMPLETED (bounded by --timeout).")
@click.option(
    "--timeout", type=SECONDS, default=30.0, show_default=True, help="Seconds to read the notification topic."
)
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
def status_cmd(
    project_file: Path,
    clusters: tuple[str, ...],
    connector: str,
    signal_id: str,
    wait: bool,
    timeout: float,
    output: str,
) -> None:
    """STARTED / TABLE_SCAN_COMPLETED (status) / COMPLETED of one signal; exit 2 when a table
    was skipped (NO_PRIMARY_KEY, UNKNOWN_SCHEMA, …) or the snapshot has not completed."""
    from hephaestus.project import load_project
    from hephaestus.snapshot import manual

    project = load_project(project_file)
    found = manual.locate(project, project.select(clusters), connector)
    report = manual.status(found, connector, signal_id, timeout, wait)
    events = [{"type": e.type, "data_collection": e.collection, "status": e.status} for e in report.events]
    if output == "json":
        click.echo(json.dumps({"signal_id": signal_id, "completed": report.completed, "events": events}, indent=2))
    else:
        _text(signal_id, report.completed, events)
    sys.exit(EXIT_OK if report.completed and not report.failed_tables else EXIT_DRIFT)


def _text(signal_id: str, completed: bool, events: list[dict[str, Any]]) -> None:
    click.echo(f"signal {signal_id}: {'COMPLETED' if completed else 'not completed'}")
    for e in events:
        detail = f" {e['data_collection']}" if e["data_collection"] else ""
        click.echo(f"  {e['type']}{detail}{' ' + e['status'] if e['status'] else ''}")


commands: list[click.Command] = [snapshot]

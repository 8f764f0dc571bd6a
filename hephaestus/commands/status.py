"""`hephaestus status` (one screen for the fleet) and `hephaestus exporter` (its scrape target)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hephaestus.commands.common import (
    DAY_S,
    EXIT_DRIFT,
    EXIT_ERROR,
    EXIT_OK,
    Finite,
    cluster_option,
    metrics_textfile_option,
    project_option,
    pushgateway_option,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hephaestus.status.model import ClusterView


@click.command()
@project_option
@cluster_option
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--all", "show_all", is_flag=True, help="List healthy connectors too (text output).")
@metrics_textfile_option
@pushgateway_option
def status(
    project_file: Path,
    clusters: tuple[str, ...],
    output: str,
    show_all: bool,
    metrics_textfile: Path | None,
    pushgateway: str | None,
) -> None:
    """Every managed connector: state and tasks, heal's restarts, DLQ depth, consumer lag, slot;
    exit 0 healthy, 2 anything unhealthy, 1 something could not be read."""
    from hephaestus.project import load_project
    from hephaestus.status.run import fleet_status

    project = load_project(project_file)
    views = fleet_status(project, project.select(clusters))
    if metrics_textfile or pushgateway:
        from hephaestus.status.metrics import status_metrics

        status_metrics(views).publish(metrics_textfile, pushgateway, "hephaestus_status")
    if output == "json":
        click.echo(json.dumps({"clusters": [_dict(v) for v in views]}, indent=2))
    else:
        _tables(views, show_all)
    sys.exit(EXIT_ERROR if any(v.errors for v in views) else EXIT_DRIFT if any(v.unhealthy for v in views) else EXIT_OK)


def _dict(v: ClusterView) -> dict[str, Any]:
    return {
        "cluster": v.cluster,
        "url": v.url,
        "errors": list(v.errors),
        "connectors": [
            {**asdict(c), "tasks": [{"id": i, "state": s} for i, s in c.tasks], "healthy": c.healthy}
            for c in v.connectors
        ],
    }


def _tables(views: Sequence[ClusterView], show_all: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    from hephaestus.fleet.slots import size
    from hephaestus.terminal import printable

    # A pipe or a log (cron, a Helm hook) gets whole names, not names folded to 80 columns.
    # Names and traces come from the cluster: a "[" in them is text, not rich markup.
    console = Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else 1000)
    for v in views:
        table = Table(
            title=f"{v.cluster} ({v.url}): {len(v.connectors) - len(v.unhealthy)} of {len(v.connectors)} healthy",
            title_justify="left",
        )
        for column in ("connector", "state", "tasks", "restarts", "dlq", "lag", "slot", "problems"):
            table.add_column(column, overflow="fold")
        for c in v.connectors if show_all else v.unhealthy:
            tasks = " ".join(f"{i}:{s}" for i, s in c.tasks) or "-"
            slot = "-" if c.slot_retained is None else size(c.slot_retained)
            state = c.state if c.desired in ("", "RUNNING") else f"{c.state} (git: {c.desired})"
            lagging = _n(c.consumer_lag) + (f" ({c.lag_age_s:.0f}s old)" if c.lag_age_s is not None else "")
            cells = (c.name, state, tasks, f"{c.restarts}/{c.budget}", _n(c.dlq_depth), lagging, slot)
            table.add_row(*map(printable, (*cells, "; ".join(c.problems) or "ok")))
        console.print(table)
        for error in v.errors:
            console.print(f"error: {printable(error)}", style="red")


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


@click.command()
@project_option
@click.option("--port", type=click.IntRange(1, 65535), default=9401, show_default=True)
@click.option("--address", default="0.0.0.0", show_default=True, help="Interface to listen on.")
@click.option(
    "--interval",
    type=Finite(1, DAY_S),
    default=60,
    show_default=True,
    help="Seconds between two checks of the fleet (scrapes read the last check).",
)
def exporter(project_file: Path, port: int, address: str, interval: float) -> None:
    """Serve the fleet's status and slot gauges for Prometheus at /metrics (runs until stopped)."""
    from hephaestus.project import load_project
    from hephaestus.status.exporter import serve

    serve(load_project(project_file), address, port, interval)


commands: list[click.Command] = [status, exporter]

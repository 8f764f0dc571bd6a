"""`hephaestus status` (one screen for the fleet) and `hephaestus exporter` (its scrape target)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hephaestus.commands.common import (
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

    from rich.table import Table

    from hephaestus.status.model import ClusterView, ConnectorView


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
    from hephaestus.fleet.pluginread import of_listing

    views = fleet_status(project, project.select(clusters), plugins=of_listing)
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
        "reached": v.reached,
        "connectors": [
            {**asdict(c), "tasks": [{"id": i, "state": s} for i, s in c.tasks], "healthy": c.healthy}
            for c in v.connectors
        ],
    }


def _tables(views: Sequence[ClusterView], show_all: bool) -> None:
    from rich.console import Console

    from hephaestus.terminal import printable

    # A pipe or a log (cron, a Helm hook) gets whole names, not names folded to 80 columns.
    # Names and traces come from the cluster: a "[" in them is text, not rich markup.
    console = Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else 1000)
    for v in views:
        if v.reached:
            console.print(_table(v, show_all))
        else:  # nothing was read: its health is unknown, never "0 of 0 healthy"
            console.print(f"{printable(v.cluster)} ({printable(v.url)}): not reached, health unknown")
        for error in v.errors:
            console.print(f"error: {printable(error)}", style="red")


def _table(v: ClusterView, show_all: bool) -> Table:
    from rich.table import Table

    from hephaestus.fleet.slots import size
    from hephaestus.terminal import printable

    table = Table(
        title=f"{v.cluster} ({v.url}): {len(v.connectors) - len(v.unhealthy)} of {len(v.connectors)} healthy",
        title_justify="left",
    )
    for column in ("connector", "state", "tasks", "restarts", "dlq new/all", "lag", "slot", "fresh", "problems"):
        table.add_column(column, overflow="fold")
    for c in v.connectors if show_all else v.unhealthy:
        tasks = " ".join(f"{i}:{s}" for i, s in c.tasks) or "-"
        slot = "-" if c.slot_retained is None else size(c.slot_retained)
        state = c.state if c.desired in ("", "RUNNING") else f"{c.state} (git: {c.desired})"
        lagging = _n(c.consumer_lag) + (f" ({c.lag_age_s:.0f}s old)" if c.lag_age_s is not None else "")
        fresh = c.freshness.split(":", 1)[0] or "-"  # the state and its number; problems say why
        cells = (c.name, state, tasks, f"{c.restarts}/{c.budget}", _dlq(c), lagging, slot, fresh)
        table.add_row(*map(printable, (*cells, "; ".join(c.problems) or "ok")))
    return table


def _dlq(c: ConnectorView) -> str:
    """Unresolved over all it holds: a DLQ replayed to the end reads 0/N, nothing to do."""
    if c.dlq_depth is None:
        return "-"
    return f"{_n(c.dlq_unresolved)}/{c.dlq_depth}"


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


class Listen(click.ParamType):  # type: ignore[type-arg]
    """`HOST:PORT`, `:PORT` (every interface) or `[IPv6]:PORT`, as Prometheus' exporters take
    `--web.listen-address`."""

    name = "[host]:port"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, int]:
        if isinstance(value, tuple):
            return value
        host, sep, port = str(value).rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not sep or not port.isdigit() or not 1 <= int(port) <= 65535 or (":" in host and "[" not in str(value)):
            self.fail(f"{value!r} is not [host]:port (e.g. 0.0.0.0:9401, :9401, [::]:9401)", param, ctx)
        return host or "0.0.0.0", int(port)


LISTEN = "0.0.0.0:9401"


@click.command()
@project_option
@click.option(
    "--listen",
    type=Listen(),
    default=LISTEN,
    show_default=True,
    help="Address and port to serve /metrics on ([host]:port; :9401 is every interface).",
)
@click.option("--port", type=click.IntRange(1, 65535), default=None, hidden=True)  # deprecated: --listen
@click.option("--address", default=None, hidden=True)  # deprecated: --listen
@click.option(
    "--interval",
    type=Finite(5, 3600),
    default=60,
    show_default=True,
    help="Seconds between two checks of each cluster, 5 to 3600 (scrapes read the last check; "
    "a cluster not checked within two intervals reads as down).",
)
def exporter(
    project_file: Path, listen: tuple[str, int], port: int | None, address: str | None, interval: float
) -> None:
    """Serve the fleet's status and slot gauges for Prometheus at /metrics (runs until stopped).
    Each cluster is checked concurrently; a scrape before the first check reads cluster_up 0."""
    from hephaestus.project import load_project
    from hephaestus.status.exporter import serve

    if port is not None or address is not None:
        click.echo("hephaestus: --port and --address are deprecated: use --listen HOST:PORT", err=True)
    serve(load_project(project_file), address or listen[0], port or listen[1], interval)


commands: list[click.Command] = [status, exporter]

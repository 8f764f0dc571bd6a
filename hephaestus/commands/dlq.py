"""`hephaestus dlq list|show|replay|purge`: the sinks' dead-letter queues."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hephaestus.commands.common import (
    EXIT_DRIFT,
    EXIT_OK,
    OFFSET,
    allow_option,
    approve_option,
    cluster_option,
    confirm,
    lock_timeout_option,
    project_option,
)

if TYPE_CHECKING:
    from hephaestus.dlq.model import Dlq
    from hephaestus.project import Cluster

_json_opt = click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
_connector_opt = click.option("--connector", required=True, help="The sink whose dead-letter queue to use.")


@click.group()
def dlq() -> None:
    """Dead-letter queues: what the sinks parked instead of failing."""


@dlq.command("list")
@project_option
@cluster_option
@_json_opt
def dlq_list(project_file: Path, clusters: tuple[str, ...], output: str) -> None:
    """Each sink's DLQ topic, depth and oldest record; exit 2 when any holds records parked
    since its last replay or purge (what was replayed is kept, but needs no one)."""
    from hephaestus.dlq import render
    from hephaestus.dlq.run import find
    from hephaestus.project import load_project

    project = load_project(project_file)
    found = [d for c in project.select(clusters) for d in find(c)]
    click.echo(render.list_json(found) if output == "json" else render.list_text(found), nl=False)
    sys.exit(EXIT_DRIFT if any(d.pending for d in found) else EXIT_OK)


@dlq.command("show")
@project_option
@cluster_option
@_connector_opt
@click.option("--limit", type=click.IntRange(1, 1_000_000), default=20, show_default=True)
@click.option("--values", is_flag=True, help="Also print each record's key and value (secret fields always masked).")
@_json_opt
def dlq_show(
    project_file: Path, clusters: tuple[str, ...], connector: str, limit: int, values: bool, output: str
) -> None:
    """The parked records: Connect's error headers, and with --values the key and value decoded,
    secrets masked (a row is data: it is printed only when asked for)."""
    from hephaestus.dlq import render
    from hephaestus.dlq.run import show

    cluster, dlq_ = _located(project_file, clusters, connector)
    rows = render.record_rows(show(cluster, dlq_, limit), values)
    shown = render.show_json if output == "json" else render.show_text
    click.echo(shown(connector, dlq_, rows), nl=False)


def _located(project_file: Path, clusters: tuple[str, ...], connector: str) -> tuple[Cluster, Dlq]:
    """The one cluster with the sink, and its DLQ (`--cluster` narrows the search)."""
    from hephaestus.dlq.run import locate
    from hephaestus.project import load_project

    return locate(load_project(project_file).select(clusters), connector)


@dlq.command("replay")
@project_option
@cluster_option
@_connector_opt
@click.option("--until", type=OFFSET, help="Replay up to this DLQ offset (inclusive).")
@click.option(
    "--from",
    "since",
    type=OFFSET,
    help="Replay from this DLQ offset (refused while records below it were never replayed).",
)
@click.option("--partition", type=click.IntRange(0, 2**31 - 1), help="Replay this partition of the DLQ only.")
@click.option("--dry-run", is_flag=True, help="Count what would be replayed; send nothing.")
@click.option(
    "--batch",
    type=click.IntRange(1, 100_000),
    default=500,
    show_default=True,
    help="Records per transaction: what a replay killed half-way has sent is whole transactions.",
)
@allow_option
@approve_option
@lock_timeout_option
def dlq_replay(
    project_file: Path,
    clusters: tuple[str, ...],
    connector: str,
    until: int | None,
    since: int | None,
    partition: int | None,
    dry_run: bool,
    batch: int,
    allow_destructive: str | None,
    auto_approve: bool,
    lock_timeout: float | None,
) -> None:
    """Send parked records back to their original topic and partition (keys and headers kept),
    from where the last replay stopped; the sink's upsert then applies them. Only to a topic
    the sink reads; in transactions that record how far it got, under the cluster's lock.
    `--partition --from --until` take exactly what a rollout's rollback names."""
    from hephaestus.dlq import render
    from hephaestus.dlq.model import Bounds
    from hephaestus.dlq.run import replay
    from hephaestus.project import load_project
    from hephaestus.safety.gate import allow_of
    from hephaestus.state.backend import timeout_of

    allow = allow_of(allow_destructive)
    project = load_project(project_file)
    cluster, found = _located(project_file, clusters, connector)
    wait_s = timeout_of(project, lock_timeout)
    bounds = Bounds(until, since, partition)
    planned = replay(project, cluster, found, bounds, True, allow, wait_s, batch)
    if dry_run or not planned.count:
        click.echo(render.replayed(connector, planned, "would replay" if dry_run else "replayed"))
        return
    if not auto_approve:
        confirm(f"Replay {planned.count} record(s) of {connector}'s dead-letter queue to {', '.join(planned.targets)}?")
    # The batch given is the batch sent (it was once dropped here, and 500 went instead).
    sent = replay(project, cluster, found, bounds, False, allow, wait_s, batch)
    click.echo(render.replayed(connector, sent, "replayed"))


@dlq.command("purge")
@project_option
@cluster_option
@_connector_opt
@click.option("--before", type=OFFSET, required=True, help="Delete records below this offset.")
@approve_option
@lock_timeout_option
def dlq_purge(
    project_file: Path,
    clusters: tuple[str, ...],
    connector: str,
    before: int,
    auto_approve: bool,
    lock_timeout: float | None,
) -> None:
    """Delete parked records below an offset (after `dlq replay`, or once judged worthless)."""
    from hephaestus.dlq.run import purge
    from hephaestus.project import load_project
    from hephaestus.state.backend import timeout_of

    project = load_project(project_file)
    cluster, found = _located(project_file, clusters, connector)
    if not auto_approve:
        confirm(f"Delete the records of {connector}'s dead-letter queue below offset {before}?")
    after = purge(project, cluster, found, before, timeout_of(project, lock_timeout))
    click.echo(f"{connector}: {after.depth} record(s) left in {after.topic}")


commands: list[click.Command] = [dlq]

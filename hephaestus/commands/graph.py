"""`hephaestus graph`: the project's lineage, drawn into one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from hephaestus.commands.common import cluster_option, project_option

if TYPE_CHECKING:
    from hephaestus.graph.model import KsqlStatement
    from hephaestus.project import KsqlDB


@click.command()
@project_option
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("graph.html"),
    show_default=True,
    help="The HTML file to write (one file: opens offline, fetches nothing).",
)
@click.option(
    "--live",
    is_flag=True,
    help="Read the clusters too: each connector's state, lag, DLQ and slot (as `status`), and its last audited change.",
)
@cluster_option
def graph(project_file: Path, output: Path, live: bool, clusters: tuple[str, ...]) -> None:
    """Draw the lineage from git's desired state: source tables, sources, topics, ksqlDB streams
    and tables, sinks and the tables they write, over every cluster (or those named)."""
    from hephaestus import outputs
    from hephaestus.graph.run import draw, select
    from hephaestus.project import load_project

    project = load_project(project_file)
    outputs.check(output, project, "--output", outputs.GRAPH)  # before any cluster is read
    connect, ksqldb = select(project, clusters)
    statements, warnings = _statements(ksqldb)
    views = None
    if live:
        from hephaestus.status.run import look

        # A look, not a run: each cluster asked once, no retry, no wait for a starting worker,
        # each request and Kafka call bounded, the clusters side by side.
        views = look(project, connect)
    drawn = draw(project, connect, statements, output, views, warnings)
    for note in drawn.lineage.warnings:
        click.echo(f"note: {note}", err=True)
    unreadable = drawn.overlay.unreadable if drawn.overlay else {}
    for cluster, why in sorted(unreadable.items()):
        click.echo(f"warning: cluster {cluster} could not be read: {why}", err=True)
    for view in views or ():  # read, but not all of it: the page leaves that part out
        for error in () if view.cluster in unreadable else view.errors:
            click.echo(f"warning: cluster {view.cluster}: not read: {error}", err=True)
    connectors = sum(1 for n in drawn.lineage.nodes if n.kind in ("source", "sink"))
    click.echo(
        f"wrote {drawn.path} ({drawn.size // 1024} KiB): {connectors} connectors, {len(drawn.lineage.nodes)} nodes"
    )


def _statements(clusters: list[KsqlDB]) -> tuple[list[KsqlStatement], list[str]]:
    """Each ksqlDB cluster's migrations compiled as `ksql apply` runs them (DEFINEs resolved);
    a file that does not parse is left out with a note (`hephaestus validate` names its line)."""
    from hephaestus.graph.model import KsqlStatement
    from hephaestus.ksql.run import prepare

    statements, warnings = [], []
    for p in prepare(clusters, {}, defer_failures=True, undo=False):
        for version in sorted(p.compiled):
            compiled = p.compiled[version]
            if compiled.failure is not None:
                warnings.append(f"ksqlDB {p.cluster.name}: {compiled.failure} (left out of the graph)")
            origin = str(compiled.file.path)
            statements += [KsqlStatement(p.cluster.name, s.text, f"{origin}:{s.line}") for s in compiled.statements]
    return statements, warnings


commands: list[click.Command] = [graph]

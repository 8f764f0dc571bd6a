"""Options and exit codes shared by the CLI modules."""

from __future__ import annotations

import os
from pathlib import Path

import click

EXIT_OK, EXIT_ERROR, EXIT_DRIFT = 0, 1, 2


def colour_wanted() -> bool:
    """No colour when NO_COLOR is set to anything (no-color.org); rich reads it by itself, and
    click drops colour codes on its own when the output is not a terminal."""
    return not os.environ.get("NO_COLOR")


project_option = click.option(
    "--project",
    "project_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("hephaestus.yaml"),
    show_default=True,
    envvar="HEPHAESTUS_PROJECT",
    help="Project file naming the clusters and databases (env HEPHAESTUS_PROJECT).",
)

FOLDER = click.Path(file_okay=False, path_type=Path)

definitions_option = click.option(
    "--definitions",
    type=FOLDER,
    default=Path("definitions"),
    show_default=True,
    help="Folder of definition YAML files (one per source database).",
)

schemas_option = click.option(
    "--schemas",
    type=FOLDER,
    default=Path("schemas"),
    show_default=True,
    help="Folder of the table snapshots (<database>.json) that `schemas dump` writes.",
)

output_option = click.option(
    "--output", "-o", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True
)


def complete_clusters(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of --cluster: the names in the project file (Connect and ksqlDB). A
    project file that cannot be read completes nothing rather than failing the shell."""
    from hephaestus.errors import HephaestusError
    from hephaestus.project import load_project

    path = ctx.params.get("project_file") or Path(os.environ.get("HEPHAESTUS_PROJECT", "hephaestus.yaml"))
    try:
        project = load_project(Path(path))
    except (HephaestusError, OSError):
        return []
    return sorted(n for n in {*project.clusters, *project.ksqldb} if n.startswith(incomplete))


cluster_option = click.option(
    "--cluster",
    "clusters",
    multiple=True,
    shell_complete=complete_clusters,
    help="Only this cluster (repeatable); default all.",
)

metrics_textfile_option = click.option(
    "--metrics-textfile",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="HEPHAESTUS_METRICS_TEXTFILE",
    help="Write this run's metrics here for node-exporter's textfile collector (*.prom).",
)

pushgateway_option = click.option(
    "--pushgateway", envvar="HEPHAESTUS_PUSHGATEWAY", help="Push this run's metrics to this Prometheus Pushgateway."
)

lock_timeout_option = click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Wait this long for another run holding the cluster's lock, then exit 1 naming it "
    "(default: lock.timeout_s of the project file, else 300).",
)

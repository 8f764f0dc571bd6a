"""`hephaestus plugins`: per cluster and per worker, the plugins installed and their versions,
and the version each connector and task runs (issue 50, KIP-891)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hephaestus.commands.common import EXIT_ERROR, EXIT_OK, cluster_option, project_option


@click.command()
@project_option
@cluster_option
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
def plugins(project_file: Path, clusters: tuple[str, ...], output: str) -> None:
    """Each worker's plugins and versions, and what each connector in `select` runs; exit 1 on
    skew between workers, a pin a worker holds nothing for, or a worker not read."""
    from hephaestus.plugins import report
    from hephaestus.plugins.run import report as read
    from hephaestus.project import load_project

    project = load_project(project_file)
    found = read(project.select(clusters))
    click.echo(report.as_json(found) if output == "json" else report.text(found), nl=False)
    sys.exit(EXIT_ERROR if any(c.problems for c in found) else EXIT_OK)


commands: list[click.Command] = [plugins]

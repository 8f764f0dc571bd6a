"""`hephaestus heal`: restart FAILED connectors and tasks with backoff, a budget and a record."""

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
    allow_option,
    check_textfile,
    cluster_option,
    lock_timeout_option,
    metrics_textfile_option,
    project_option,
    pushgateway_option,
)

if TYPE_CHECKING:
    from hephaestus.heal.run import ClusterHeal


@click.command()
@project_option
@cluster_option
@click.option("--dry-run", is_flag=True, help="Show what would be restarted; restart and record nothing.")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--state-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Keep restart counts in this JSON file (default: heal.state of the project file, "
    "else .hephaestus/heal-state.json).",
)
@metrics_textfile_option
@pushgateway_option
@lock_timeout_option
@allow_option
def heal(
    project_file: Path,
    clusters: tuple[str, ...],
    dry_run: bool,
    output: str,
    state_file: Path | None,
    metrics_textfile: Path | None,
    pushgateway: str | None,
    lock_timeout: float | None,
    allow_destructive: str | None,
) -> None:
    """Restart FAILED connectors/tasks (and long-UNASSIGNED ones); exit 0 healthy or healed,
    2 something still failing, 1 error."""
    from hephaestus.heal.run import heal_project
    from hephaestus.project import load_project
    from hephaestus.safety.gate import allow_of
    from hephaestus.state.backend import timeout_of

    allow = allow_of(allow_destructive)
    project = load_project(project_file)
    check_textfile(project, metrics_textfile)
    results = heal_project(
        project,
        project.select(clusters),
        dry_run,
        state_file,
        lock_timeout_s=timeout_of(project, lock_timeout),
        allow=allow,
    )
    if not dry_run and (metrics_textfile or pushgateway):
        from hephaestus.heal.metrics import metrics_of

        metrics_of(results).publish(metrics_textfile, pushgateway, "hephaestus_heal")
    if output == "json":
        click.echo(json.dumps({"clusters": [_dict(r) for r in results]}, indent=2))
    else:
        for r in results:
            _text(r)
    sys.exit(
        EXIT_ERROR
        if any(r.error for r in results)
        else EXIT_DRIFT
        if any(r.still_failing for r in results)
        else EXIT_OK
    )


def _dict(r: ClusterHeal) -> dict[str, Any]:
    return {
        "cluster": r.cluster,
        "url": r.url,
        "error": r.error or None,
        "notified": list(r.notified),
        "connectors": [asdict(i) for i in r.items],
    }


def _text(r: ClusterHeal) -> None:
    click.echo(f"cluster {r.cluster} ({r.url})")
    if r.error:
        click.echo(f"  error: {r.error}")
    shown = [i for i in r.items if i.verdict != "healthy"]
    for i in shown:
        healed = "" if i.healed is None else (" -> RUNNING" if i.healed else " -> still failing")
        click.echo(f"  {i.verdict:9} {i.name}: {i.reason}{healed}")
    click.echo(f"  {len(r.items) - len(shown)} healthy")


commands: list[click.Command] = [heal]

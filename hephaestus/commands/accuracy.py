"""CLI of the accuracy feature: `hephaestus accuracy` (the `dwh_accuracy` job)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hephaestus.commands.common import metrics_textfile_option, project_option, pushgateway_option

if TYPE_CHECKING:
    from hephaestus.accuracy.model import Report


@click.command("accuracy")
@project_option
@click.option(
    "--definitions",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("definitions"),
    show_default=True,
    help="Folder of definition YAML files: every pipeline sink is a table pair.",
)
@click.option("--env", help="Env of the source slot to measure lag on ({env}_{org}_{db}).")
@click.option("--org", help="Org of the source slot to measure lag on.")
@click.option(
    "--table",
    "tables",
    multiple=True,
    help="Only pairs with this table (repeatable): users, public.users, auth.users …",
)
@click.option(
    "--deep", is_flag=True, help="Also compare row checksums by key range and list missing, extra and different keys."
)
@click.option(
    "--keys",
    "key_limit",
    type=click.IntRange(0, 1_000_000),
    default=100,
    show_default=True,
    help="With --deep: keys listed per kind and table.",
)
@click.option(
    "--concurrency", type=click.IntRange(1, 64), default=4, show_default=True, help="Tables compared at once."
)
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@metrics_textfile_option
@pushgateway_option
def accuracy(
    project_file: Path,
    definitions: Path,
    env: str | None,
    org: str | None,
    tables: tuple[str, ...],
    deep: bool,
    key_limit: int,
    concurrency: int,
    output: str,
    metrics_textfile: Path | None,
    pushgateway: str | None,
) -> None:
    """Prove each replicated table matches its source: row counts (and --deep checksums) on
    both sides. Exit 0 all match, 2 a mismatch beyond tolerance, 1 an error."""
    from hephaestus.accuracy import publish, render
    from hephaestus.accuracy.bisect import DeepOptions
    from hephaestus.accuracy.run import AccuracyOptions, run_accuracy
    from hephaestus.generator.definitions import load_definitions
    from hephaestus.project import load_project

    project = load_project(project_file)
    options = AccuracyOptions(env, org, tables, deep, DeepOptions(limit=key_limit), concurrency)
    report = run_accuracy(project, load_definitions(definitions), options)
    click.echo(render.as_json(report) if output == "json" else _text(report), nl=False)
    publish.notify(project, report)
    publish.publish_metrics(report, metrics_textfile, pushgateway)
    sys.exit(report.exit_code)


commands: list[click.Command] = [accuracy]


def _text(report: Report) -> str:
    """The table at the terminal's width and in colour on a terminal (NO_COLOR honoured);
    whole lines, no colour, in a pipe or a log (cron, a Helm hook)."""
    from hephaestus.accuracy import render
    from hephaestus.commands.common import colour_wanted

    tty = sys.stdout.isatty()
    return render.text(report, shutil.get_terminal_size().columns if tty else None, tty and colour_wanted())

"""CLI of the accuracy feature: `hephaestus accuracy` (the `dwh_accuracy` job)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hephaestus.commands.common import (
    SECONDS,
    check_textfile,
    lock_timeout_option,
    metrics_textfile_option,
    project_option,
    pushgateway_option,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hephaestus.accuracy.mend import RepairOptions
    from hephaestus.accuracy.model import AccuracyReport
    from hephaestus.accuracy.repair import RepairReport
    from hephaestus.accuracy.run import AccuracyOptions
    from hephaestus.generator.model import Definition
    from hephaestus.project import Project


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
@click.option(
    "--budget-s",
    type=SECONDS,
    default=None,
    help="Stop comparing after this many seconds and report what was compared (partial: exit 2).",
)
@click.option(
    "--repair",
    is_flag=True,
    help="With --deep: re-snapshot exactly the missing and different keys (Debezium incremental "
    "snapshot signals, in batches), wait for them, and compare again.",
)
@click.option(
    "--max-keys",
    type=click.IntRange(1, 1_000_000),
    default=10_000,
    show_default=True,
    help="With --repair: refuse (exit 2, nothing sent) when more keys than this differ.",
)
@click.option(
    "--batch-keys",
    type=click.IntRange(1, 100_000),
    default=500,
    show_default=True,
    help="With --repair: keys per snapshot signal (fewer when the signal row's 2048 characters are reached).",
)
@click.option(
    "--delete-extra",
    is_flag=True,
    help="With --repair: delete, by key at the sink, rows the source no longer has (kept otherwise).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --repair: compare and show the keys it would re-snapshot and the rows it would delete; "
    "send no signal, delete nothing (exit as --deep: 2 when something would be repaired).",
)
@click.option(
    "--repair-timeout",
    type=SECONDS,
    default=600.0,
    show_default=True,
    help="With --repair: seconds to wait for each batch to arrive at the sink.",
)
@click.option(
    "--slot-timeout", type=SECONDS, default=120.0, show_default=True, help="With --repair: as in `snapshot send`."
)
@lock_timeout_option
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
    budget_s: float | None,
    repair: bool,
    max_keys: int,
    batch_keys: int,
    delete_extra: bool,
    dry_run: bool,
    repair_timeout: float,
    slot_timeout: float,
    lock_timeout: float | None,
    output: str,
    metrics_textfile: Path | None,
    pushgateway: str | None,
) -> None:
    """Prove each replicated table matches its source: row counts (and --deep checksums) on
    both sides; --repair re-snapshots the keys that differ (--dry-run: shows them). Exit 0 all
    match, 2 a mismatch beyond tolerance (or a partial compare, or more keys than --max-keys),
    1 an error."""
    from hephaestus.accuracy import publish, render
    from hephaestus.accuracy.bisect import DeepOptions
    from hephaestus.accuracy.run import AccuracyOptions, run_accuracy
    from hephaestus.generator.definitions import load_definitions
    from hephaestus.project import load_project

    if (repair and not deep) or ((delete_extra or dry_run) and not repair):
        raise click.UsageError("--repair needs --deep, and --delete-extra and --dry-run need --repair")
    project = load_project(project_file)
    check_textfile(project, metrics_textfile)
    options = AccuracyOptions(env, org, tables, deep, DeepOptions(limit=key_limit), concurrency, budget_s)
    defs = load_definitions(
        definitions, lambda c: project.clusters[c].schema_registry_url if c in project.clusters else None
    )
    _warn_shared(project, defs, options)
    if dry_run or repair:  # the repair's machinery loads only when a repair is asked for
        from hephaestus.accuracy.mend import RepairOptions

        how = RepairOptions(max_keys, batch_keys, delete_extra, repair_timeout)
    if dry_run:  # writes nothing: no signal, no delete, no notification, no metrics
        sys.exit(_preview(project, defs, options, how, output))
    if repair:
        fixed = _repair(project, defs, options, how, slot_timeout, lock_timeout)
        report = fixed.final()
        click.echo(render.repair_json(fixed) if output == "json" else _repair_text(fixed), nl=False)
    else:
        report = run_accuracy(project, defs, options)
        click.echo(render.as_json(report) if output == "json" else _text(report), nl=False)
    publish.notify(project, report)
    publish.publish_metrics(report, metrics_textfile, pushgateway)
    sys.exit(fixed.exit_code if repair else report.exit_code)


commands: list[click.Command] = [accuracy]


def _warn_shared(project: Project, defs: Sequence[Definition], options: AccuracyOptions) -> None:
    """A table several pipelines fill holds the others' rows too: say why they show as extra."""
    from hephaestus.accuracy.run import shared_tables

    for table in dict.fromkeys(shared_tables(project, defs, options).values()):
        why = "each is compared with the whole table, so the others' rows count as extra (--delete-extra refused)"
        click.echo(f"warning: {table.describe()}: {why}", err=True)


def _preview(
    project: Project, defs: Sequence[Definition], options: AccuracyOptions, how: RepairOptions, output: str
) -> int:
    """`--repair --dry-run`: the real run's plan, shown; its exit code."""
    from hephaestus.accuracy import render
    from hephaestus.accuracy.mend import plan, preview
    from hephaestus.commands.common import colour_wanted

    shown = preview(plan(project, defs, options, how))
    tty = sys.stdout.isatty()
    width = shutil.get_terminal_size().columns if tty else None
    text = (
        render.preview_json(shown) if output == "json" else render.preview_text(shown, width, tty and colour_wanted())
    )
    click.echo(text, nl=False)
    return shown.exit_code


def _repair(
    project: Project,
    defs: Sequence[Definition],
    options: AccuracyOptions,
    how: RepairOptions,
    slot_timeout: float,
    lock_timeout: float | None,
) -> RepairReport:
    """The repair, its signals written by `snapshot send`'s own path: the connector located in
    its cluster's select, the gate's pass, the cluster lock, the audit (features do not import
    each other: the CLI wires them)."""
    from hephaestus.accuracy.mend import repair
    from hephaestus.snapshot import manual

    located: dict[str, manual.Located] = {}

    def signal(connector: str, table: str, where: str) -> str:
        if connector not in located:
            located[connector] = manual.locate(project, project.select(()), connector)
        found = located[connector]
        cleared = manual.judged(found, connector, [table], stop=False)
        sent = manual.send(project, found, connector, [table], where, False, slot_timeout, cleared, lock_timeout)
        return sent.id

    return repair(project, defs, options, how, signal)


def _repair_text(report: RepairReport) -> str:
    from hephaestus.accuracy import render
    from hephaestus.commands.common import colour_wanted

    tty = sys.stdout.isatty()
    return render.repair_text(report, shutil.get_terminal_size().columns if tty else None, tty and colour_wanted())


def _text(report: AccuracyReport) -> str:
    """The table at the terminal's width and in colour on a terminal (NO_COLOR honoured);
    whole lines, no colour, in a pipe or a log (cron, a Helm hook)."""
    from hephaestus.accuracy import render
    from hephaestus.commands.common import colour_wanted

    tty = sys.stdout.isatty()
    return render.text(report, shutil.get_terminal_size().columns if tty else None, tty and colour_wanted())

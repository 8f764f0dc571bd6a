"""Options and exit codes shared by the CLI modules."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hephaestus.errors import EXIT_DRIFT as EXIT_DRIFT  # the commands' exit codes, re-exported
from hephaestus.errors import EXIT_ERROR as EXIT_ERROR
from hephaestus.errors import EXIT_OK as EXIT_OK

if TYPE_CHECKING:
    from hephaestus.project import Project


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

CATALOGS, OLD_CATALOGS = Path("catalogs"), Path("schemas")  # the folder's name before the rename


def catalogs_option(command: Callable[..., None]) -> Callable[..., None]:
    """`--catalogs` (table catalogs, what generation reads), and `--schemas`, its deprecated name
    for a release: the command gets one `catalogs` folder either way."""

    @functools.wraps(command)
    def resolved(*args: Any, catalogs: Path | None, old_catalogs: Path | None, **kwargs: Any) -> None:
        command(*args, catalogs=catalogs_folder(catalogs or old_catalogs), **kwargs)

    with_old = click.option(
        "--schemas", "old_catalogs", type=FOLDER, default=None, hidden=True, callback=_warn_old_option
    )(resolved)
    return click.option(
        "--catalogs",
        type=FOLDER,
        default=None,
        help=f"Folder of the table catalogs (<database>.json) that `catalog dump` writes.  [default: {CATALOGS}]",
    )(with_old)


def _warn_old_option(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    if value is not None:
        click.echo("warning: --schemas is deprecated: use --catalogs", err=True)
    return value


def catalogs_folder(given: Path | None) -> Path:
    """The folder given, else catalogs/; a project still on the old layout (catalogs in schemas/,
    no catalogs/) is read from there with a warning, and catalogs left behind in schemas/ are
    named, as they are no longer read."""
    if given is not None:
        return given
    old = sorted(p.name for p in OLD_CATALOGS.glob("*.json") if not p.name.endswith(".schema.json"))
    if old and not CATALOGS.is_dir():
        click.echo(
            f"warning: reading table catalogs from {OLD_CATALOGS}/ (deprecated): move them to {CATALOGS}/", err=True
        )
        return OLD_CATALOGS
    if old:
        click.echo(
            f"warning: {OLD_CATALOGS}/ holds catalogs that are not read ({', '.join(old)}): move them to {CATALOGS}/",
            err=True,
        )
    return CATALOGS


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


class Finite(click.FloatRange):
    """A number within bounds, and finite: click's FloatRange lets `nan` through (every
    comparison with it is false) and `inf` where there is no maximum."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        found = float(super().convert(value, param, ctx))
        if not math.isfinite(found):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return found


DAY_S = 86_400.0
SECONDS = Finite(0, DAY_S)  # a wait or a pause: at most a day
COUNT = click.IntRange(0, 1_000_000)
OFFSET = click.IntRange(0, 2**63 - 1)  # a Kafka offset (a signed 64-bit long)

lock_timeout_option = click.option(
    "--lock-timeout",
    type=SECONDS,
    default=None,
    metavar="SECONDS",
    help="Wait this long for another run holding the cluster's lock, then exit 1 naming it "
    "(default: lock.timeout_s of the project file, else 300).",
)


allow_option = click.option(
    "--allow-destructive",
    "allow_destructive",
    is_flag=False,
    flag_value="all",
    default=None,
    metavar="[EFFECT,…]",
    help="Let destructive effects go: all of them, or only these (resnapshot, slot-dropped, duplicates, …).",
)


class Aliased(click.Option):
    """An option with one canonical spelling; its other names are aliases (the reference's, or an
    earlier release's): accepted, and named once in --help beside the canonical one."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        canonical, *aliases = self.opts
        self.opts = [canonical]
        try:
            record = super().get_help_record(ctx)
        finally:
            self.opts = [canonical, *aliases]
        if record is None or not aliases:
            return record
        return record[0], f"{record[1]} (alias: {', '.join(aliases)})"


# One approval flag for every command that asks before it writes, spelled as Terraform does;
# `--yes` (what offsets, slots and dlq took first) stays an alias.
approve_option = click.option(
    "--auto-approve",
    "--yes",
    "auto_approve",
    cls=Aliased,
    is_flag=True,
    help="Write without asking (required without a terminal).",
)


def confirm(question: str) -> None:
    """Ask before a write; without a terminal there is no one to ask: `--auto-approve` is required."""
    from hephaestus.errors import HephaestusError

    if not click.get_text_stream("stdin").isatty():
        raise HephaestusError("a write without a terminal to confirm it: pass --auto-approve")
    click.confirm(question, abort=True)


def registries_of(project_file: Path) -> Callable[[str], str | None]:
    """The project cluster's schema registry, the project file read only when a definition
    asks (generation needs no project otherwise); none without a project file."""
    loaded: list[dict[str, str | None]] = []

    def registry(cluster: str) -> str | None:
        if not loaded:
            from hephaestus.project import load_project

            found = load_project(project_file).clusters if project_file.is_file() else {}
            loaded.append({name: c.schema_registry_url for name, c in found.items()})
        return loaded[0].get(cluster)

    return registry


def check_textfile(project: Project, path: Path | None) -> None:
    """--metrics-textfile passes the one output guard before the run reads anything."""
    if path is not None:
        from hephaestus import outputs

        outputs.check(path, project, "--metrics-textfile", outputs.TEXTFILE)

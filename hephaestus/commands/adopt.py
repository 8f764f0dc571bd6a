"""`hephaestus import`: adopt live connectors (files in git + the ownership record)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hephaestus.commands.common import EXIT_OK, cluster_option, lock_timeout_option, project_option
from hephaestus.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hephaestus.adopt.run import ClusterImport


def _secret(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    pairs = {}
    for raw in values:
        key, sep, placeholder = raw.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{raw!r}: expected KEY=PLACEHOLDER", ctx, param)
        pairs[key] = placeholder
    return pairs


@click.command("import")
@project_option
@cluster_option
@click.option(
    "--select",
    "globs",
    multiple=True,
    metavar="GLOB",
    help="Only live connectors matching this glob (repeatable); within the cluster's select.",
)
@click.option(
    "--secret",
    "secrets",
    multiple=True,
    callback=_secret,
    metavar="KEY=PLACEHOLDER",
    help="Write this placeholder for KEY instead of refusing its plaintext value, "
    "e.g. connection.password='${file:/opt/secrets.properties:pg_password}' (repeatable).",
)
@click.option("--dry-run", is_flag=True, help="Show the files it would write and what it would own; change nothing.")
@click.option(
    "--show-config",
    is_flag=True,
    help="Also print each file's JSON, as it is (or, with --dry-run, would be) written; -o json always has it.",
)
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@lock_timeout_option
def import_(
    project_file: Path,
    clusters: tuple[str, ...],
    globs: tuple[str, ...],
    secrets: dict[str, str],
    dry_run: bool,
    show_config: bool,
    output: str,
    lock_timeout: float | None,
) -> None:
    """Adopt live connectors: write each to connectors/<cluster>/{source,sink}/<name>.json as the
    generator would and record it as owned, so reconcile then plans zero writes. A plaintext
    secret is refused (exit 1, nothing written) unless --secret names its placeholder."""
    from hephaestus.adopt.run import import_project
    from hephaestus.project import load_project
    from hephaestus.state.backend import timeout_of

    project = load_project(project_file)
    for key, placeholder in secrets.items():
        if not placeholder.startswith("${") or not placeholder.endswith("}"):
            raise InputError("--secret", f"{placeholder!r} is not a ${{provider:path:key}} placeholder", field=key)
    results = import_project(
        project, project.select(clusters), globs, secrets, dry_run, timeout_of(project, lock_timeout)
    )
    if output == "json":
        click.echo(json.dumps(_as_json(results, dry_run), indent=2))
        sys.exit(EXIT_OK)
    for r in results:
        _echo_text(r, dry_run, show_config)


def _as_json(results: Sequence[ClusterImport], dry_run: bool) -> dict[str, Any]:
    return {
        "dry_run": dry_run,
        "clusters": [
            {
                "cluster": r.cluster,
                "connectors": [{"name": i.name, "action": i.how, "document": i.document or None} for i in r.items],
            }
            for r in results
        ],
    }


def _echo_text(r: ClusterImport, dry_run: bool, show_config: bool) -> None:
    """A line per connector (the file, or why there is none, and its name); the JSON only on
    request: a fleet's dry run printed every config, thousands of lines to find the list in."""
    from hephaestus.generator.output import render_document

    click.echo(f"cluster {r.cluster}")
    for i in r.items:
        click.echo(f"  {'would ' if dry_run and i.how.startswith('write') else ''}{i.how}: {i.name}")
        if show_config and i.document:
            click.echo("    " + render_document(i.document).decode().rstrip().replace("\n", "\n    "))
    owned = sum(1 for i in r.items if i.how != "owned already")
    files = sum(1 for i in r.items if i.how.startswith("write"))
    click.echo(f"  {owned} {'to own' if dry_run else 'now owned'}, {files} files")


commands: list[click.Command] = [import_]

"""`hephaestus graph`: the project's lineage from git's desired state, optionally with what the
clusters say, drawn into one HTML file (edge: reads connector files, the audit journal;
writes the page).

The command hands in what sibling features read (ksqlDB's compiled migrations, `status`'s
views): a feature imports no other feature.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from hephaestus.errors import InputError
from hephaestus.fleet.desired import load_desired
from hephaestus.graph import journal, live, render
from hephaestus.graph.connectors import DbKey
from hephaestus.graph.lineage import build
from hephaestus.graph.model import DeclaredConnector, KsqlStatement, Lineage, Overlay
from hephaestus.project import Cluster, KsqlDB, Project
from hephaestus.secrets import REDACTOR


@dataclass(frozen=True)
class Drawn:
    path: Path
    lineage: Lineage
    overlay: Overlay | None
    size: int  # bytes written


def select(project: Project, names: tuple[str, ...]) -> tuple[list[Cluster], list[KsqlDB]]:
    """The Connect and ksqlDB clusters named (a name may be either, or both); all when none."""
    unknown = [n for n in names if n not in project.clusters and n not in project.ksqldb]
    if unknown:
        have = ", ".join([*project.clusters, *project.ksqldb])
        raise InputError(project.file, f"no cluster {unknown[0]!r} (have: {have})", field="clusters")
    connect = [c for n, c in project.clusters.items() if not names or n in names]
    ksqldb = [k for n, k in project.ksqldb.items() if not names or n in names]
    return connect, ksqldb


def connectors_of(clusters: Sequence[Cluster]) -> list[DeclaredConnector]:
    """Every connector file each cluster `select`s, custom ones included; a bad file stops the
    graph naming its file and field (InputErrors), as `validate` would."""
    found = []
    for cluster in clusters:
        if cluster.secrets_file is not None:
            REDACTOR.learn_file(cluster.secrets_file)
        for name, d in sorted(load_desired(cluster, include_custom=True).items()):
            REDACTOR.learn_config(d.config)
            found.append(DeclaredConnector(cluster.name, name, d.config, d.origin, d.state))
    return found


def lineage_of(project: Project, clusters: Sequence[Cluster], statements: Sequence[KsqlStatement]) -> Lineage:
    return build(connectors_of(clusters), statements, project.resolver(), databases(project))


def databases(project: Project) -> dict[DbKey, str]:
    """The project's databases by (host, port, database name), to name what connectors reach."""
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict

    found: dict[DbKey, str] = {}
    for name, db in project.databases.items():
        try:
            info = conninfo_to_dict(db.dsn)
        except (Error, ValueError):
            continue  # a DSN psycopg cannot read names no database here; the commands that connect say why
        host = str(info.get("host") or "localhost").split(",")[0].lower()
        port = str(info.get("port") or "5432").split(",")[0]
        found[(host, port, str(info.get("dbname") or name))] = name
    return found


def overlay_of(
    project: Project, clusters: Sequence[Cluster], lineage: Lineage, views: Sequence[live.ClusterLike]
) -> Overlay:
    """`status`'s views of the clusters, and each connector's last change in the journal."""
    changes, errors = journal.last_changes(project, [c.name for c in clusters])
    return live.overlay(lineage, views, changes, errors)


def draw(
    project: Project,
    clusters: Sequence[Cluster],
    statements: Sequence[KsqlStatement],
    output: Path,
    views: Sequence[live.ClusterLike] | None = None,
    warnings: Sequence[str] = (),
) -> Drawn:
    lineage = lineage_of(project, clusters, statements)
    lineage = Lineage(lineage.nodes, lineage.edges, (*warnings, *lineage.warnings))
    over = overlay_of(project, clusters, lineage, views) if views is not None else None
    now = datetime.now(UTC).isoformat(timespec="seconds")
    html = render.page(lineage, over, title=f"hephaestus graph: {Path(project.file).name}", generated=now)
    _write(output, html)
    return Drawn(output, lineage, over, len(html.encode()))


def _write(path: Path, text: str) -> None:
    """Whole or not at all: a reader never opens half a page."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # a page to open and share, like any file the user writes
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise InputError(str(path), f"cannot be written: {exc.strerror or exc}", field="--output") from exc

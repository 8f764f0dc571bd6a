"""Read the probes back (edge: psycopg): one short session per database, whatever the number of
routes through it; then judge each route (probe.model). A database the project does not name,
or that cannot be read, and a missing probe table make their routes `unknown`, never fresh."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.probe.model import Freshness, Reading, Route, SinkRow, SourceRow, judge
from hephaestus.probe.routes import routes
from hephaestus.project import Project
from hephaestus.safety.views import PROBE_TABLE


@dataclass(frozen=True)
class Side:
    """What one database holds: its `now()` and its probe rows, or why it could not be read."""

    now: float = 0.0
    rows: Mapping[tuple[str, str], Any] = field(default_factory=dict)
    error: str = ""


def freshness(project: Project, found: Sequence[Route], max_s: Mapping[str, float] | float) -> list[Freshness]:
    """Every route judged; `max_s`: one threshold, or one per sink (a definition's override)."""
    read = readings(project, found)
    return [judge(r, read.get(r.sink, Reading()), _limit(max_s, r.sink)) for r in found]


def readings(project: Project, found: Sequence[Route]) -> dict[str, Reading]:
    """What each carrying route's databases hold: one session per database."""
    carried = [r for r in found if not r.why]
    # Sinks first: a probe read there is then never newer than the source's row and clock.
    sinks = {(r.sink_db, r.schema): _read_sink(project, r.sink_db, r.schema, carried) for r in carried}
    sources = {db: _read_source(project, db) for db in {r.source_db for r in carried}}
    return {r.sink: _reading(r, sources, sinks) for r in carried}


def arrivals(
    project: Project, cluster: str, live: Mapping[str, Mapping[str, str]], sinks: Mapping[str, Mapping[str, str]]
) -> dict[str, tuple[float | None, float | None, str]]:
    """For a rollout's gate: per sink carrying the probe, the newest probe at its database and the
    source's now(), both on the source's clock, or why they could not be read. A sink that
    carries no probe is left out (not gated)."""
    found = [r for r in routes(cluster, {**live, **sinks}) if r.sink in sinks and not r.why]
    out: dict[str, tuple[float | None, float | None, str]] = {}
    for name, reading in readings(project, found).items():
        at = reading.at_sink.probed_at if reading.at_sink else None
        out[name] = (at, reading.source_now or None, reading.error)
    return out


def _limit(max_s: Mapping[str, float] | float, sink: str) -> float:
    return max_s if isinstance(max_s, float | int) else max_s.get(sink, max_s.get("*", 120.0))


def _reading(r: Route, sources: Mapping[str, Side], sinks: Mapping[tuple[str, str], Side]) -> Reading:
    if r.why:
        return Reading()
    src, dst = sources[r.source_db], sinks[(r.sink_db, r.schema)]
    if src.error or dst.error:
        return Reading(error=src.error or dst.error)
    return Reading(src.now, dst.now, src.rows.get((r.source, "")), dst.rows.get((r.source, r.sink)))


def _read_source(project: Project, database: str) -> Side:
    query = "SELECT probe_source, '', extract(epoch FROM probed_at), probe_seq, extract(epoch FROM probe_since) FROM {}"
    side = _read(project, database, "public", query, [])
    rows = {k: SourceRow(float(at), int(seq), float(since)) for k, (at, seq, since) in side.rows.items()}
    return Side(side.now, rows, side.error)


def _read_sink(project: Project, database: str, schema: str, routes: Iterable[Route]) -> Side:
    sinks = sorted({r.sink for r in routes if (r.sink_db, r.schema) == (database, schema)})
    query = (
        "SELECT probe_source, probe_sink, extract(epoch FROM probed_at), probe_seq, coalesce(unpublished, '') "
        "FROM {} WHERE probe_sink = ANY(%s)"
    )
    side = _read(project, database, schema, query, [sinks])
    rows = {
        k: SinkRow(float(at), int(seq), tuple(t for t in str(gaps).split(",") if t))
        for k, (at, seq, gaps) in side.rows.items()
    }
    return Side(side.now, rows, side.error)


def _read(project: Project, database: str, schema: str, query: str, params: list[Any]) -> Side:
    """`query`'s `{}` is the probe table in `schema`, quoted: the schema comes from a live sink
    config (its `collection.name.format`), which anyone with Connect's API can edit."""
    from psycopg import sql

    table = f"{schema}.{PROBE_TABLE}"
    if database not in project.databases:
        return Side(error=f"database {database or '?'} is not in the project's databases: its probes cannot be read")
    try:
        with pg.session(
            project.dsn(database, "freshness"), f"database {database}", application="hephaestus freshness"
        ) as conn:
            now = float(_one(conn, "SELECT extract(epoch FROM clock_timestamp())", []))
            if _one(conn, "SELECT to_regclass(format('%%I.%%I', %s::text, %s::text))", [schema, PROBE_TABLE]) is None:
                return Side(now, error=f"no probe table {table} in {database}: reconcile creates it")
            rows = conn.execute(sql.SQL(query).format(sql.Identifier(schema, PROBE_TABLE)), params).fetchall()
    except HephaestusError as exc:
        return Side(error=str(exc))
    return Side(now, {(str(r[0]), str(r[1])): r[2:] for r in rows})


def _one(conn: Any, query: str, params: list[Any]) -> Any:
    row = conn.execute(query, params).fetchone()
    return row[0] if row else None


def limits(project: Project) -> dict[str, float]:
    """`max_s` per sink: the project's (`*`), and each definition's override for its sinks."""
    from hephaestus.drift.read import home
    from hephaestus.generator import naming
    from hephaestus.generator.definitions import load_definitions

    out = {"*": project.freshness.max_s}
    folder = home(project)
    if folder is None:
        return out
    try:
        defs = load_definitions(folder / "definitions")
    except HephaestusError:  # reconcile and generate name a bad definition; status still reads probes
        return out
    for d in defs:
        if d.freshness_max_s is None:
            continue
        limit = float(d.freshness_max_s)
        for scope in naming.scopes(d):
            out.update({naming.sink_name(d, scope, p.source_table, s): limit for p in d.pipelines for s in p.sinks})
    return out

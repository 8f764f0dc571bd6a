"""Read what schema drift compares (edge: PostgreSQL, the definitions and catalogs in git):
per database one session, three queries (columns, primary keys, publications), whatever the
number of pipelines; a database that cannot be read makes its pipelines `unknown`, never fine."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from hephaestus import pg
from hephaestus.drift import pipelines, rules
from hephaestus.drift.model import UNKNOWN, Capture, DriftReport, Finding, LiveColumn, LiveTable, Pair
from hephaestus.drift.pipelines import Runs
from hephaestus.errors import HephaestusError
from hephaestus.project import Project

_COLUMNS = """
SELECT c.table_schema || '.' || c.table_name,
       c.column_name,
       CASE WHEN c.character_maximum_length IS NULL THEN c.data_type
            ELSE c.data_type || '(' || c.character_maximum_length || ')' END,
       c.is_nullable = 'YES',
       c.column_default IS NOT NULL OR c.is_identity = 'YES' OR c.is_generated = 'ALWAYS'
FROM information_schema.columns c
WHERE c.table_schema || '.' || c.table_name = ANY(%s)
ORDER BY 1, c.ordinal_position
"""

_KEYS = """
SELECT n.nspname || '.' || cl.relname, a.attname
FROM pg_index i
JOIN pg_class cl ON cl.oid = i.indrelid
JOIN pg_namespace n ON n.oid = cl.relnamespace
JOIN pg_attribute a ON a.attrelid = cl.oid AND a.attnum = ANY(i.indkey)
WHERE i.indisprimary AND n.nspname || '.' || cl.relname = ANY(%s)
ORDER BY 1, array_position(i.indkey::int2[], a.attnum)
"""

_PUBLISHED = """
SELECT p.pubname, p.puballtables, t.schemaname || '.' || t.tablename
FROM pg_publication p LEFT JOIN pg_publication_tables t ON t.pubname = p.pubname
WHERE p.pubname = ANY(%s)
"""


@dataclass(frozen=True)
class Shapes:
    """One database as the comparison needs it."""

    tables: dict[str, LiveTable] = field(default_factory=dict, hash=False)
    publications: dict[str, frozenset[str] | None] = field(default_factory=dict, hash=False)  # None: all tables


def schema_report(project: Project, runs: Runs) -> DriftReport:
    """Every pipeline the selected clusters run, compared; no definitions (beside the project
    file or in the working directory): nothing to compare (connectors not generated here)."""
    folder = home(project)
    if folder is None:
        return DriftReport()
    try:
        pairs, unknown = _pairs(project, folder, runs)
    except HephaestusError as exc:  # a definition or catalog that does not parse: named, unknown
        return DriftReport((Finding(UNKNOWN, "*", "definitions", f"cannot compare schemas: {exc}"),))
    named = [p for p in pairs if {p.source_db, p.sink_db} <= set(project.databases)]
    skipped = sorted({db for p in pairs for db in (p.source_db, p.sink_db)} - set(project.databases))
    found = compared(named, _read_all(project, named), unknown)
    return replace(found, unchecked=tuple(_unnamed(db) for db in skipped))


def _unnamed(database: str) -> str:
    return f"schema drift of database {database} not checked: add it to the project's databases"


def home(project: Project) -> Path | None:
    """Where `definitions/` and `catalogs/` are: beside the project file, else in the working
    directory (the chart mounts the project file apart from the image's /app, which holds them)."""
    return next((f for f in (Path(project.file).parent, Path.cwd()) if (f / "definitions").is_dir()), None)


def _pairs(project: Project, folder: Path, runs: Runs) -> tuple[list[Pair], list[Finding]]:
    from hephaestus.generator.catalogs import load_catalogs
    from hephaestus.generator.definitions import load_definitions

    clusters = project.clusters
    defs = load_definitions(
        folder / "definitions", lambda c: clusters[c].schema_registry_url if c in clusters else None
    )
    # A project still on the old layout keeps its catalogs in schemas/ (generate reads them there too).
    catalogs = folder / "catalogs" if (folder / "catalogs").is_dir() else folder / "schemas"
    return pipelines.pairs(defs, load_catalogs(catalogs), runs)


def compared(pairs: Sequence[Pair], shapes: dict[str, Shapes | str], unknown: Iterable[Finding] = ()) -> DriftReport:
    """The findings of every pair (pure); a pair whose database could not be read is unknown."""
    found = list(unknown)
    read: set[str] = set()
    for p in pairs:
        src, dst = shapes.get(p.source_db, "not read"), shapes.get(p.sink_db, "not read")
        if isinstance(src, str) or isinstance(dst, str):
            why = src if isinstance(src, str) else str(dst)
            found.append(
                Finding(
                    UNKNOWN,
                    p.name,
                    p.source_db if isinstance(src, str) else p.sink_db,
                    why,
                    sinks=p.sinks,
                    sources=p.sources,
                )
            )
            continue
        found += rules.compare(p, src.tables.get(str(p.source)), dst.tables.get(str(p.sink)), _capture(p, src))
        read.update((*p.sinks, *p.sources))
    return DriftReport(tuple(found), tuple(p.name for p in pairs), compared=frozenset(read))


def _capture(p: Pair, shapes: Shapes) -> Capture:
    if p.publication not in shapes.publications:
        return Capture(None, False)
    published = shapes.publications[p.publication]
    if published is None:  # FOR ALL TABLES
        return Capture(True, p.signal_table in shapes.tables)
    return Capture(str(p.source) in published, p.signal_table in published and p.signal_table in shapes.tables)


def _read_all(project: Project, pairs: Sequence[Pair]) -> dict[str, Shapes | str]:
    wanted: dict[str, tuple[set[str], set[str]]] = {}
    for p in pairs:
        wanted.setdefault(p.source_db, (set(), set()))[0].update({str(p.source), p.signal_table})
        wanted.setdefault(p.source_db, (set(), set()))[1].add(p.publication)
        wanted.setdefault(p.sink_db, (set(), set()))[0].add(str(p.sink))
    return {db: _read_one(project, db, tables, pubs) for db, (tables, pubs) in sorted(wanted.items())}


def _read_one(project: Project, database: str, tables: set[str], publications: set[str]) -> Shapes | str:
    try:
        dsn = project.dsn(database, "schema drift")
        with pg.session(dsn, f"database {database}", application="hephaestus schema") as conn:
            return _shapes(conn, sorted(tables), sorted(publications))
    except HephaestusError as exc:
        return f"cannot read database {database}: {exc}"


def _shapes(conn: pg.Connection, tables: list[str], publications: list[str]) -> Shapes:
    columns: dict[str, list[LiveColumn]] = {}
    for table, name, type_, nullable, default in conn.execute(_COLUMNS, [tables]).fetchall():
        columns.setdefault(str(table), []).append(LiveColumn(str(name), str(type_), bool(nullable), bool(default)))
    keys: dict[str, list[str]] = {}
    for table, name in conn.execute(_KEYS, [tables]).fetchall():
        keys.setdefault(str(table), []).append(str(name))
    published: dict[str, frozenset[str] | None] = {}
    for pub, everything, table in conn.execute(_PUBLISHED, [publications]).fetchall():
        have = published.setdefault(str(pub), None if everything else frozenset())
        published[str(pub)] = None if have is None else have | ({str(table)} if table else set())
    live = {t: LiveTable(tuple(cs), tuple(keys.get(t, ()))) for t, cs in columns.items()}
    return Shapes(live, published)

"""The freshness probe's tables, made before the connectors that need them are written (edge:
psycopg; docs/freshness.md).

A source whose include list captures the probe table needs it in its database (its heartbeat
writes there, and ALTER PUBLICATION needs the table); a sink that reads a probe topic needs it
in its database (else its task fails writing the probe). Each is created if missing, then read
back: a table of that name with other columns is refused (hephaestus owns the name, and a
sink writing into it would fail), and nothing is written to Connect. Each creation passes the
one gate (a table created holds no destructive effect).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from hephaestus import pg
from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import captured, source_ref
from hephaestus.probe.routes import probe_schema, probe_topic, sink_db
from hephaestus.project import Project
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan
from hephaestus.safety import gate, views

SOURCE_COLUMNS = (
    "probe_source text PRIMARY KEY",
    "probed_at timestamptz NOT NULL",
    "probe_seq bigint NOT NULL",
    "unpublished text",
    "probe_since timestamptz NOT NULL DEFAULT now()",
)
SINK_COLUMNS = (
    "probe_source text NOT NULL",
    "probe_sink text NOT NULL",
    "probed_at timestamptz NOT NULL",
    "probe_seq bigint NOT NULL",
    "unpublished text",
    "PRIMARY KEY (probe_source, probe_sink)",
)


@dataclass(frozen=True, order=True)
class ProbeTable:
    database: str
    schema: str
    side: str  # source, sink
    connector: str  # the first connector of the plan that needs it (its results name it)

    @property
    def name(self) -> str:
        return f"{self.schema}.{views.PROBE_TABLE}"


def needed(p: Plan) -> list[ProbeTable]:
    """The probe tables the plan's writes need, one per database and schema."""
    found: dict[tuple[str, str, str], ProbeTable] = {}
    for step in p.writes:
        if step.config is None:
            continue
        for t in _of(step.name, step.config):
            found.setdefault((t.database, t.schema, t.side), t)
    return sorted(found.values())


def _of(name: str, config: Mapping[str, str]) -> Iterator[ProbeTable]:
    if views.is_source(config):
        probe = next((t for t in captured(config) if views.probe_named(t)), None)
        if probe is not None:
            database = source_ref(name, config).database
            yield ProbeTable(database, probe.rsplit(".", 1)[0] if "." in probe else "public", "source", name)
    elif views.is_sink(config) and probe_topic(config) is not None:
        yield ProbeTable(sink_db(config), probe_schema(config), "sink", name)


def ensure_all(project: Project, cluster: str, p: Plan) -> tuple[StepResult, ...]:
    """Each table made (or found as it should be), in order, stopping at the first that fails;
    a result for each table made or failed (one in place, as every run finds it, says nothing)."""
    done: list[StepResult] = []
    for t in needed(p):
        try:
            gate.check([gate.Item(cluster, f"probe table {t.database}.{t.name}", "create-probe-table")])
            made = ensure(project, t)
        except HephaestusError as exc:
            why = f"{exc} (for {t.connector}; or turn the probe off in its definition: probe: {{enabled: false}})"
            return (*done, StepResult(f"{t.database}.{t.name}", "probe-table", False, why))
        if made == "created":
            done.append(
                StepResult(f"{t.database}.{t.name}", "probe-table", True, f"created (for {t.connector})", wrote=True)
            )
    return tuple(done)


def ensure(project: Project, t: ProbeTable) -> str:
    """ "created" or "in place"; a table of that name with other columns is an error."""
    from psycopg import sql

    columns = SOURCE_COLUMNS if t.side == "source" else SINK_COLUMNS
    ident = sql.Identifier(t.schema, views.PROBE_TABLE)
    dsn = project.dsn(t.database, "the freshness probe's table")
    with pg.session(dsn, f"database {t.database}", application="hephaestus probe") as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [t.name]).fetchone()
        existed = bool(row and row[0])
        if not existed:
            conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(ident, sql.SQL(", ".join(columns))))
            conn.execute(
                sql.SQL("COMMENT ON TABLE {} IS 'hephaestus freshness probe (docs/freshness.md)'").format(ident)
            )
        have = {r[0] for r in conn.execute(_COLUMNS, [t.schema, views.PROBE_TABLE]).fetchall()}
    wanted = {c.split(" ", 1)[0] for c in columns if not c.startswith("PRIMARY")}
    if wanted - have:
        raise HephaestusError(
            f"{t.database}.{t.name} exists without column(s) {', '.join(sorted(wanted - have))}: hephaestus owns "
            "this table name (the freshness probe); rename that table, or turn the probe off in the definition"
        )
    return "in place" if existed else "created"


_COLUMNS = "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s"

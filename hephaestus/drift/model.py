"""What schema drift is made of (pure): the live shape of a table, one pipeline's sink as the
comparison sees it, and what it finds."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from hephaestus.generator.model import TableRef, TableSchema

ADDED, BREAKING = "added", "breaking"  # the kinds of change a definition's policy names
# effect code -> the kind of change it is (schema_changes: {added: ..., breaking: ...})
CODES: dict[str, str] = {
    "column-not-replicated": ADDED,
    "sink-write-fails": BREAKING,
    "capture-dropped": BREAKING,
}
BREAKS_SINK = "sink-write-fails"  # the effect a paused sink waits out (heal pauses, reconcile holds)
UNKNOWN = "unknown"  # a database that could not be read: never "fine"


@dataclass(frozen=True)
class LiveColumn:
    name: str
    type: str  # information_schema's data_type, with a length where one applies: character varying(20)
    nullable: bool = True
    has_default: bool = False  # a default, an identity or a generated column: an insert without it works


@dataclass(frozen=True)
class LiveTable:
    columns: tuple[LiveColumn, ...]
    primary_key: tuple[str, ...] = ()

    def column(self, name: str) -> LiveColumn | None:
        return next((c for c in self.columns if c.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class Capture:
    """What a source database's publication holds of one table, and of the signal table."""

    published: bool | None  # None: the publication does not exist
    signal_ok: bool  # the signal table exists and is published: Debezium sees signals


@dataclass(frozen=True)
class Pair:
    """One pipeline's sink: a source table replicated into a sink table by `sinks`."""

    source_db: str
    source: TableRef
    sink_db: str
    sink: TableRef
    _: KW_ONLY
    catalog_source: TableSchema
    catalog_sink: TableSchema
    sinks: tuple[str, ...]  # the connectors that write it (in the selected clusters)
    sources: tuple[str, ...] = ()  # the connectors that capture it
    publication: str = ""
    signal_table: str = ""
    policy: tuple[tuple[str, str], ...] = ((ADDED, "report"), (BREAKING, "pause"))

    @property
    def name(self) -> str:
        return f"{self.source_db}.{self.source}->{self.sink_db}.{self.sink}"

    @property
    def fields(self) -> tuple[str, ...]:
        """What the generated sink writes: the source's catalogued columns the sink table has."""
        there = set(self.catalog_sink.column_names)
        return tuple(c for c in self.catalog_source.column_names if c in there)

    def action(self, code: str) -> str:
        return dict(self.policy).get(CODES.get(code, BREAKING), "report")


@dataclass(frozen=True)
class Finding:
    """One effect of a schema change on one pipeline's data."""

    code: str  # column-not-replicated, sink-write-fails, capture-dropped, unknown
    pipeline: str  # Pair.name
    subject: str  # table.column, or the table
    why: str
    _: KW_ONLY
    sinks: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    action: str = "report"  # what the pipeline's policy says to do: report, pause, ignore

    def describe(self) -> str:
        affected = ", ".join(self.sinks) or ", ".join(self.sources) or "no connector"
        return f"{self.code} {self.subject}: {self.why} (affects {affected})"


@dataclass(frozen=True)
class DriftReport:
    findings: tuple[Finding, ...] = ()
    pipelines: tuple[str, ...] = ()  # every pipeline compared (a gauge of 0 for each in step)
    unchecked: tuple[str, ...] = ()  # databases the project does not name: said, not compared
    compared: frozenset[str] = frozenset()  # the connectors whose pipelines were read and compared

    @property
    def checked(self) -> int:
        return len(self.pipelines)

    def in_step(self, connector: str) -> bool:
        """Compared, and no change breaks it: a schema it failed on has been mended."""
        return connector in self.compared and not any(f.code == BREAKS_SINK for f in self.of(connector))

    def of(self, connector: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if connector in f.sinks or connector in f.sources)

    @property
    def shown(self) -> tuple[Finding, ...]:
        """What is reported: a finding whose policy says ignore is left out."""
        return tuple(f for f in self.findings if f.action != "ignore")

"""Values the generator computes with. All frozen: the core never mutates its inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Flavour = Literal["debezium", "confluent"]
Kind = Literal["source", "sink"]


@dataclass(frozen=True, order=True)
class TableRef:
    """A PostgreSQL table; a bare name in a definition means schema `public`."""

    schema: str
    table: str

    @classmethod
    def parse(cls, text: str) -> TableRef:
        schema, _, table = text.rpartition(".")
        return cls(schema or "public", table)

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def slug(self) -> str:
        """Name part for connector names: bare for public, `schema_table` otherwise."""
        return self.table if self.schema == "public" else f"{self.schema}_{self.table}"


@dataclass(frozen=True)
class TenantFilter:
    field: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class AccuracySpec:
    """A sink's options for `hephaestus accuracy`; the generator ignores them.

    None filters mean "the default" (decided by the accuracy feature from the live columns).
    """

    source_filter: str | None = None
    sink_filter: str | None = None
    tolerance_rows: int = 0
    tolerance_percent: float = 0.0
    # A SELECT on the definition's database whose rows the sink table must hold: for a table
    # another system builds (ksqlDB), which no one source table equals.
    expect: str | None = None


@dataclass(frozen=True)
class SinkSpec:
    database: str
    table: TableRef
    flavour: Flavour
    delete: bool
    dlq: bool
    dlq_replication_factor: int
    tenant_filter: TenantFilter | None
    options: tuple[tuple[str, str], ...]
    path: str  # where in the definition file, for error messages
    accuracy: AccuracySpec = AccuracySpec()


@dataclass(frozen=True)
class Pipeline:
    source_table: TableRef
    sinks: tuple[SinkSpec, ...]
    path: str
    schema_changes: tuple[tuple[str, str], ...] | None = None  # over the definition's (drift.model)


@dataclass(frozen=True)
class TopicPipeline:
    """Sinks fed by a topic another system writes (ksqlDB's output), not by a captured table.

    `key` and `columns` are the record's field names as written (ksqlDB upper-cases them); the
    warehouse table's columns match them case-insensitively, as PostgreSQL folds unquoted names.
    """

    topic: str  # may hold {env} and {org}
    key: tuple[str, ...]
    columns: tuple[str, ...]
    sinks: tuple[SinkSpec, ...]
    path: str

    def topic_in(self, env: str, org: str) -> str:
        return self.topic.replace("{env}", env).replace("{org}", org)


@dataclass(frozen=True)
class SourceSpec:
    publication: str
    signal_table: TableRef
    heartbeat_table: TableRef
    heartbeat_interval_ms: int
    snapshot_mode: str
    snapshot_chunk_size: int
    notifications: bool
    options: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Converter:
    format: Literal["json", "avro"]
    schema_registry_url: str | None  # the URL the converter is given (Apicurio: its native API)
    flavour: Literal["confluent", "apicurio"] = "confluent"  # whose AvroConverter
    from_project: str = ""  # where the project file's URL came from, when it did (its field)


@dataclass(frozen=True)
class Definition:
    file: str
    cluster: str
    database: str
    envs: tuple[str, ...]
    orgs: tuple[str, ...]
    debezium_version: tuple[int, int]
    naming: Literal["literal", "helm"]
    secrets_file: str
    converter: Converter
    source: SourceSpec
    pipelines: tuple[Pipeline, ...]
    lines: dict[str, int] = field(default_factory=dict, compare=False, hash=False)
    compat: str = ""  # "reference": the reference system's exact configs (see definitions._COMPAT)
    topics: tuple[TopicPipeline, ...] = ()  # pipelines with `source_topic:` (the warehouse stack)
    state: str = ""  # running / paused / stopped: written beside each connector's config
    allow_destructive: bool = False  # written into each connector file: its destructive changes may go
    # What to do when a source table's schema drifts (drift.model: added -> report|ignore,
    # breaking -> pause|report); the defaults are the safe ones.
    schema_changes: tuple[tuple[str, str], ...] = (("added", "report"), ("breaking", "pause"))
    probe: bool = True  # the freshness probe rides this definition's connectors (generator.probe)
    probe_interval_s: int | None = None  # the heartbeat's interval while probing (None: heartbeat_interval_ms)
    freshness_max_s: float | None = None  # over the project's freshness.max_s for these pipelines

    def line(self, path: str) -> int | None:
        """Line of a field path in the definition file (None when unknown)."""
        return self.lines.get(path)


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True)
class TableSchema:
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class Catalog:
    """Tables of one database, as dumped by `hephaestus schemas dump`."""

    file: str
    database: str
    tables: dict[TableRef, TableSchema] = field(hash=False)


@dataclass(frozen=True)
class Origin:
    """Where in a definition a connector comes from, for error messages."""

    file: str
    field: str = ""
    line: int | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where} at {self.field}" if self.field else where


@dataclass(frozen=True)
class Connector:
    """One generated connector: what `POST /connectors` takes, plus where it lives."""

    cluster: str
    kind: Kind
    name: str
    config: dict[str, str] = field(hash=False)
    origin: Origin = Origin("")
    stem: str = ""  # file name without .json; defaults to the connector name
    state: str = ""  # running / paused / stopped, when the definition says
    allow_destructive: bool = False  # the definition's consent to destructive changes, kept in the file

    @property
    def relpath(self) -> str:
        return f"{self.cluster}/{self.kind}/{self.stem or self.name}.json"

    def document(self) -> dict[str, object]:
        """The file's content: the body `POST /connectors` accepts (and the desired state)."""
        doc: dict[str, object] = {"name": self.name, "config": self.config}
        if self.state:
            doc["state"] = self.state
        if self.allow_destructive:
            doc["allow_destructive"] = True
        return doc

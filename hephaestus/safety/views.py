"""What a connector's config means for its data, resolved (pure): Debezium's PostgreSQL source
and the JDBC sinks (Debezium's and Confluent's), with their plugins' defaults and enum parsing.

Where each default and parse rule comes from (Debezium 3.x sources; Confluent
kafka-connect-jdbc; Kafka's ConfigDef), as read for issue 29 (notes in ARCHITECTURE.md):

| key | default | read as |
|---|---|---|
| `slot.name` | `debezium` (`ReplicationConnection.Builder.DEFAULT_SLOT_NAME`) | text |
| `publication.name` | `dbz_publication` | text |
| `plugin.name` | `decoderbufs` | `LogicalDecoder.parse`: trimmed, any case |
| `snapshot.mode` | `initial` | `SnapshotMode.parse`: trimmed, any case |
| `slot.drop.on.stop` | `false` | boolean |
| `database.port` | `5432` | text |
| `skipped.operations` | `t` | list (`none`: nothing skipped) |
| `insert.mode` (Debezium sink) | `insert` | any case, NOT trimmed, no match → `insert` |
| `primary.key.mode` (Debezium sink) | `none` | any case, NOT trimmed, no match → `record_key` |
| `insert.mode`, `pk.mode` (Confluent) | `insert`, `none` | trimmed, all-lower or all-upper |
| `delete.enabled`, `truncate.enabled` | `false` | boolean |
| `collection.name.format` (alias `table.name.format`) | `${topic}`, its dots turned to `_` | text |
| sink consumer group | `connect-<name>` (`SinkUtils.consumerGroupId`), `consumer.override.group.id` | text |
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hephaestus.classes import CONFLUENT_SINK, JDBC_SINK_CLASSES, POSTGRES_SOURCE
from hephaestus.safety import transforms
from hephaestus.safety.values import (
    INVALID,
    Ref,
    Resolver,
    Value,
    boolean,
    known,
    listed,
    strict_enum,
    trimmed_enum,
    untrimmed_enum,
)

SNAPSHOT_MODES = frozenset(
    {"always", "initial", "no_data", "never", "initial_only", "when_needed", "configuration_based", "custom"}
)
# Modes that read the tables when the connector has no usable offsets (every mode but the
# schema-only ones: `no_data`, and `never`, its name before Debezium 3.3).
SNAPSHOT_WITHOUT_OFFSETS = frozenset({"always", "initial", "initial_only", "when_needed"})
CAPTURE_LISTS = ("table.include.list", "schema.include.list", "column.include.list")
EXCLUDE_LISTS = ("table.exclude.list", "schema.exclude.list", "column.exclude.list")


@dataclass(frozen=True)
class SourceView:
    server: tuple[Value | None, ...]  # hostname, port, dbname
    slot: Value
    plugin: str | None
    publication: Value
    prefix: Value | None
    naming: tuple[str, str]  # topic.delimiter, topic.naming.strategy
    snapshot: str | None  # the mode as Debezium parses it; None: unknown; INVALID: refused
    snapshot_data: bool | None  # configuration_based: snapshot.mode.configuration.based.snapshot.data
    drop_on_stop: bool | None
    capture: tuple[tuple[str, frozenset[str] | None], ...]  # include lists (empty: everything)
    exclude: tuple[tuple[str, frozenset[str] | None], ...]
    key_columns: Value | None
    skipped: frozenset[str] | None
    transforms: Mapping[transforms.Category, transforms.Signature]


def is_source(config: Mapping[str, str]) -> bool:
    return config.get("connector.class", "").strip() == POSTGRES_SOURCE


def is_sink(config: Mapping[str, str]) -> bool:
    return config.get("connector.class", "").strip() in JDBC_SINK_CLASSES


Get = Callable[..., Value | None]


def _reader(config: Mapping[str, str], resolve: Resolver) -> Get:
    def get(key: str, default: str | None = None) -> Value | None:
        return resolve(config.get(key, default))

    return get


def source(config: Mapping[str, str], resolve: Resolver) -> SourceView:
    get = _reader(config, resolve)
    return SourceView(
        (get("database.hostname"), get("database.port", "5432"), get("database.dbname")),
        get("slot.name") or "debezium",
        trimmed_enum(get("plugin.name"), ("decoderbufs", "pgoutput"), "decoderbufs"),
        get("publication.name") or "dbz_publication",
        get("topic.prefix"),
        (config.get("topic.delimiter", "."), config.get("topic.naming.strategy", "").strip()),
        trimmed_enum(get("snapshot.mode"), SNAPSHOT_MODES, "initial"),
        boolean(get("snapshot.mode.configuration.based.snapshot.data"), False),
        boolean(get("slot.drop.on.stop"), False),
        tuple((k, without_probe(listed(get(k)))) for k in CAPTURE_LISTS),
        tuple((k, listed(get(k))) for k in EXCLUDE_LISTS),
        get("message.key.columns"),
        _skipped(get("skipped.operations")),
        transforms.signatures(config),
    )


def _skipped(raw: Value | None) -> frozenset[str] | None:
    found = listed(raw) if raw is not None else frozenset({"t"})
    if found is None:
        return None
    return frozenset() if {s.lower() for s in found} == {"none"} else frozenset(s.lower() for s in found)


def snapshots_on_start(s: SourceView) -> bool:
    """Reads every table again whenever its tasks start (a config write restarts them): `always`,
    `configuration_based` with snapshot data on, a `custom` snapshotter or a mode not known
    here (it could be any of them)."""
    if s.snapshot == "configuration_based":
        return s.snapshot_data is not False
    return s.snapshot in ("always", "custom", None, INVALID)


def snapshots_without_offsets(s: SourceView) -> bool:
    """Reads every table when it starts with no stored offsets (a new topic prefix, a reset)."""
    return snapshots_on_start(s) or s.snapshot in SNAPSHOT_WITHOUT_OFFSETS


def namespace(config: Mapping[str, str], s: SourceView) -> str | None:
    """The topics a source writes, as one prefix: `topic.prefix` + the delimiter, through the
    chain's RegexRouters (a sample topic routed, its sample tail cut off); None when unknown."""
    prefix = known(s.prefix)
    if prefix is None:
        return None
    delimiter = s.naming[0]
    tail = f"{delimiter}__schema{delimiter}__table"
    topic = transforms.routed(config, prefix + tail)
    if topic is None:
        return None
    return topic[: -len(tail)] + delimiter if topic.endswith(tail) else topic


@dataclass(frozen=True)
class SinkView:
    cls: str
    database: Value | None  # where it writes: host:port/db of the JDBC URL, or the URL as written
    topics: frozenset[str] | None
    regex: Value | None
    table_format: str | None  # None: unknown (a placeholder)
    naming: str
    pk_mode: str | None
    pk_fields: frozenset[str] | None
    insert_mode: str | None
    deletes: bool | None
    truncates: bool | None
    fields: tuple[tuple[str, frozenset[str] | None], ...]
    drops_failures: bool | None  # errors.tolerance=all with no dead-letter queue
    group: Value | None
    transforms: Mapping[transforms.Category, transforms.Signature]

    def semantics(self) -> tuple[object, ...]:
        """How rows are matched and written: two writers of one table must agree on it."""
        return (self.pk_mode, self.pk_fields, self.insert_mode, self.deletes)


def sink(config: Mapping[str, str], resolve: Resolver) -> SinkView:
    get = _reader(config, resolve)
    confluent = config.get("connector.class", "").strip() == CONFLUENT_SINK
    pk_mode, insert = _sink_enums(get, confluent)
    fields = ("fields.whitelist", "field.exclude.list") if confluent else ("field.include.list", "field.exclude.list")
    return SinkView(
        config.get("connector.class", "").strip(),
        _database(get("connection.url")),
        listed(get("topics")),
        get("topics.regex") if config.get("topics.regex", "").strip() else None,
        _format(config, confluent),
        config.get("collection.naming.strategy", config.get("table.naming.strategy", "")).strip(),
        pk_mode,
        _data_keys(listed(get("pk.fields" if confluent else "primary.key.fields"))),
        insert,
        boolean(get("delete.enabled"), False),
        boolean(get("truncate.enabled"), False),
        tuple((k, without_probe(listed(get(k)), probe_field)) for k in fields),
        _drops_failures(config),
        get("consumer.override.group.id"),
        transforms.signatures(config),
    )


# The freshness probe (generator.probe): its table and key fields are reserved names. A data
# record's key never holds those fields, so naming them changes no data row's key; a sink's probe
# records land in the probe table, which every sink of a database writes, each its own rows.
PROBE_TABLE = "hephaestus_probe"
PROBE_SOURCE_KEY, PROBE_SINK_KEY = "probe_source", "probe_sink"
PROBE_KEYS = frozenset({PROBE_SOURCE_KEY, PROBE_SINK_KEY})


def probe_named(name: str) -> bool:
    """A table (`schema.table`) or topic (`….schema.table`) whose last part is the probe table."""
    return name.rsplit(".", 1)[-1] == PROBE_TABLE


def probe_field(name: str) -> bool:
    """A field list's entry qualified by the probe's (routed) topic: `hephaestus_probe:<column>`."""
    return name.startswith(f"{PROBE_TABLE}:")


def is_probe(topic: str, table: str | None) -> bool:
    """A probe topic routed into a probe table."""
    return probe_named(topic) and probe_named(table or "")


def without_probe(names: frozenset[str] | None, probe: Callable[[str], bool] = probe_named) -> frozenset[str] | None:
    """The names that are data (captured, read or written, the probe's move no data row), unless
    the probe's are all there is: an empty list would read as "every table" or "every field"."""
    if names is None:
        return None
    return frozenset(n for n in names if not probe(n)) or names


def _data_keys(fields: frozenset[str] | None) -> frozenset[str] | None:
    return fields - PROBE_KEYS if fields is not None else None


def _sink_enums(get: Get, confluent: bool) -> tuple[str | None, str | None]:
    modes, inserts = ("none", "kafka", "record_key", "record_value", "record_header"), ("insert", "upsert", "update")
    if confluent:
        return strict_enum(get("pk.mode"), modes[:4], "none"), strict_enum(get("insert.mode"), inserts, "insert")
    return (
        untrimmed_enum(get("primary.key.mode"), modes, "none", "record_key"),
        untrimmed_enum(get("insert.mode"), inserts, "insert", "insert"),
    )


def _format(config: Mapping[str, str], confluent: bool) -> str | None:
    keys = ("table.name.format",) if confluent else ("collection.name.format", "table.name.format")
    raw = next((config[k] for k in keys if k in config), "${topic}")
    if "${" in raw.replace("${topic}", "").replace("${source.", ""):
        return None  # a config provider's placeholder: the table could be anything
    return raw.strip()


def _drops_failures(config: Mapping[str, str]) -> bool | None:
    tolerance = config.get("errors.tolerance", "none").strip().lower()
    if "${" in tolerance:
        return None
    return tolerance == "all" and not config.get("errors.deadletterqueue.topic.name", "").strip()


_POSTGRES_URL = re.compile(r"^jdbc:postgresql://(?:[^@/]*@)?([^/:?]+)(?::(\d+))?/([^?;]*)", re.IGNORECASE)


def _database(url: Value | None) -> Value | None:
    """`host:port/db` of a PostgreSQL JDBC URL (credentials and parameters left out); any other
    URL as written without its parameters; a placeholder stays a placeholder."""
    value = known(url)
    if value is None:
        return url
    match = _POSTGRES_URL.match(value.strip())
    found = (
        f"postgresql://{match.group(1).lower()}:{match.group(2) or '5432'}/{match.group(3)}"
        if match
        else re.split(r"[?;]", value.strip(), maxsplit=1)[0]
    )
    return Ref(url.text, found) if isinstance(url, Ref) else found


def regex_reads(regex: str, topic: str) -> bool:
    """A `topics.regex` sink reads a topic its pattern matches whole (Java's `matches`)."""
    try:
        return re.fullmatch(regex, topic) is not None
    except re.error:
        return False


def reads_topic(config: Mapping[str, str], topic: str) -> bool:
    """Whether a sink reads `topic`: named in `topics`, or matched whole by `topics.regex`."""
    pattern = config.get("topics.regex", "").strip()
    return topic in (listed(config.get("topics")) or ()) or bool(pattern and regex_reads(pattern, topic))


def tables(config: Mapping[str, str], s: SinkView) -> dict[str, str | None]:
    """Per topic read, the table it lands in (lower case: PostgreSQL folds unquoted names);
    None when the table cannot be told here (a router that decides per record). A sink with no
    `connection.url` writes nowhere (Connect refuses it): no table."""
    out: dict[str, str | None] = {}
    if "connection.url" not in config:
        return out
    for topic in sorted(s.topics or ()):
        routed = transforms.routed(config, topic)
        if routed is None:
            out[topic] = None
            continue
        out[topic] = _table(s, routed)
    return out


# The Debezium sink's default strategies turn a topic's dots into underscores (`DefaultCollectionNamingStrategy`).
DEFAULT_NAMING = frozenset(
    {
        "",
        "io.debezium.sink.naming.DefaultCollectionNamingStrategy",
        "io.debezium.connector.jdbc.naming.DefaultTableNamingStrategy",
    }
)


def _table(s: SinkView, topic: str) -> str | None:
    if s.table_format is None or (s.cls != CONFLUENT_SINK and s.naming not in DEFAULT_NAMING):
        return None
    name = topic if s.cls == CONFLUENT_SINK else topic.replace(".", "_")
    return s.table_format.replace("${topic}", name).lower()

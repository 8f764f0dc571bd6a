"""Load and validate definitions/*.yaml into frozen Definitions (edge: reads files)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hephaestus.classes import PIN_KEYS
from hephaestus.errors import InputError, InputErrors
from hephaestus.generator import debezium
from hephaestus.generator.catalogs import too_long
from hephaestus.generator.model import (
    AccuracySpec,
    Converter,
    Definition,
    Pipeline,
    SinkSpec,
    SourceSpec,
    TableRef,
    TenantFilter,
    TopicPipeline,
)
from hephaestus.generator.source import apicurio_url
from hephaestus.jsonschemas import Checker
from hephaestus.versions import requirement
from hephaestus.yamlsrc import (
    PathElem,
    YamlDoc,
    cap_message,
    format_path,
    load_yaml,
    packaged_validator,
    schema_errors_of,
)

# A project cluster's schema registry (its Confluent-compatible URL), asked only for an Avro
# definition that names none; None when the project file names none (or there is no project).
Registries = Callable[[str], str | None]


def no_registries(cluster: str) -> str | None:
    return None


def load_definitions(directory: Path, registries: Registries = no_registries) -> list[Definition]:
    """Every *.yaml / *.yml in `directory`, all validated; all errors reported together."""
    files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not files:
        raise InputError(str(directory), "no definitions (*.yaml) found")
    defs: list[Definition] = []
    errors: list[InputError] = []
    for path in files:
        try:
            defs.append(parse_definition(load_yaml(path), registries))
        except InputErrors as many:
            errors.extend(many.errors)
        except InputError as one:  # unreadable, not YAML, duplicate keys, anchors, ...
            errors.append(one)
    if errors:
        raise InputErrors(errors)
    return defs


def parse_definition(doc: YamlDoc, registries: Registries = no_registries) -> Definition:
    """Schema-check one parsed file, then build the Definition."""
    schema_errors = schema_errors_of(doc, _validator()) or _long_names(doc) or _shapes(doc) or _pins(doc)
    if schema_errors:
        raise InputErrors(schema_errors)
    definition = _build(doc, registries)
    problems = debezium.check_definition(definition) + _topic_deletes(definition)
    if problems:
        # cap_message: a message may quote a value the schema leaves unbounded (snapshot_mode).
        raise InputErrors([InputError(doc.file, cap_message(msg), field=f, line=_line(doc, f)) for f, msg in problems])
    return definition


def _pins(doc: YamlDoc) -> list[InputError]:
    """A plugin pin in `options` (`connector.plugin.version`, a converter's) that Connect would
    refuse (issue 50), named where it is written."""
    found = []
    for path in _option_paths(doc.data):
        for key in sorted(k for k in PIN_KEYS if k in path[1]):
            try:
                requirement(connect_string(path[1][key]))
            except ValueError as exc:
                where = [*path[0], key]
                found.append(InputError(doc.file, str(exc), field=format_path(where), line=doc.line_of(where)))
    return found


def _option_paths(data: dict[str, Any]) -> Iterator[tuple[list[PathElem], dict[str, Any]]]:
    """Every `options` mapping of a schema-valid definition, with its path."""
    candidates: list[tuple[list[PathElem], Any]] = [(["source"], data.get("source", {}))]
    candidates.append((["sink_defaults"], data.get("sink_defaults", {})))
    for i, p in enumerate(data["pipelines"]):
        candidates += [(["pipelines", i, "sinks", j], s) for j, s in enumerate(p["sinks"])]
    for path, node in candidates:
        if isinstance(node, dict) and isinstance(node.get("options"), dict):
            yield [*path, "options"], node["options"]


def _long_names(doc: YamlDoc) -> list[InputError]:
    """Names (cluster, database, env, org, table, field) longer than PostgreSQL allows: the
    checks after the schema (fan-out, catalogs) quote names whole in their messages."""
    return [
        InputError(doc.file, too_long(part), field=format_path(path), line=doc.line_of(path))
        for path, value in _names(doc.data)
        for part in value.split(".")
        if too_long(part)
    ]


def _names(data: dict[str, Any]) -> Iterator[tuple[list[PathElem], str]]:
    """Every name in a schema-valid definition, with its path (table refs are schema.table)."""
    for key in ("cluster", "database"):
        yield [key], data[key]
    for key in ("envs", "orgs"):
        for i, value in enumerate(data[key]):
            yield [key, i], value
    for key in _SOURCE_NAMES:
        if key in data.get("source", {}):
            yield ["source", key], data["source"][key]
    yield from _sink_names(["sink_defaults"], data.get("sink_defaults", {}))
    for i, pipeline in enumerate(data["pipelines"]):
        if "source_table" in pipeline:
            yield ["pipelines", i, "source_table"], pipeline["source_table"]
        for j, sink in enumerate(pipeline["sinks"]):
            yield from _sink_names(["pipelines", i, "sinks", j], sink)


_SOURCE_NAMES = ("publication", "signal_table", "heartbeat_table")


def _sink_names(path: list[PathElem], sink: dict[str, Any]) -> Iterator[tuple[list[PathElem], str]]:
    for key in ("database", "table"):
        if key in sink:
            yield [*path, key], sink[key]
    if "tenant_filter" in sink:
        yield [*path, "tenant_filter", "field"], sink["tenant_filter"]["field"]


def _shapes(doc: YamlDoc) -> list[InputError]:
    """What the schema leaves to code, for messages that say what to write: a pipeline reads
    a table or a topic, and a topic's sinks name their table and never delete."""
    return [
        InputError(doc.file, msg, field=format_path(path), line=doc.line_of(path))
        for i, p in enumerate(doc.data["pipelines"])
        for path, msg in _shape(p, ["pipelines", i])
    ]


def _shape(p: dict[str, Any], at: list[PathElem]) -> Iterator[tuple[list[PathElem], str]]:
    if ("source_table" in p) == ("source_topic" in p):
        yield (
            at,
            (
                "a pipeline reads either source_table (a captured table) or source_topic "
                "(a topic ksqlDB writes)" + (", not both" if "source_table" in p else "")
            ),
        )
        return
    if "source_table" in p:
        yield from (([*at, k], f"{k} belongs to a source_topic pipeline") for k in ("key", "columns") if k in p)
        return
    if "schema_changes" in p:  # a topic has no source table whose schema could drift
        yield ([*at, "schema_changes"], "schema_changes belongs to a source_table pipeline")
    yield from (([*at, k], f"missing required key {k!r}: the topic's fields") for k in ("key", "columns") if k not in p)
    for j, sink in enumerate(p["sinks"]):
        if "table" not in sink:
            yield [*at, "sinks", j], "missing required key 'table': a topic sink names the warehouse table"


def _topic_deletes(d: Definition) -> list[tuple[str, str]]:
    # Also when `delete: true` comes from sink_defaults: the sink would drop deletes silently.
    return [
        (
            f"{s.path}.delete",
            "a topic sink upserts by the value's key fields (record_value): "
            "deletes cannot reach the table; set delete: false",
        )
        for t in d.topics
        for s in t.sinks
        if s.delete
    ]


def _validator() -> Checker:
    return packaged_validator("hephaestus.generator", "definitions.schema.json")


def _line(doc: YamlDoc, field: str) -> int | None:
    parts: list[str | int] = []
    for raw in field.replace("]", "").split("."):
        name, *idx = raw.split("[")
        parts.append(name)
        parts.extend(int(i) for i in idx)
    return doc.line_of(parts)


# `compat: reference`: the defaults under which the reference system's configs come out (its
# repo map: Debezium 2.4.1, snapshot.mode never, Avro with a registry on every CDC topic, the
# Confluent JDBC sink without a DLQ, no notifications). Anything written in the file wins.
_COMPAT = {
    "debezium_version": "2.4",
    "converter": {"format": "avro"},
    "source": {"snapshot_mode": "never", "notifications": False},
    "sink_defaults": {"flavour": "confluent", "dlq": False},
}


def _with_compat(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("compat") != "reference":
        return data
    merged = {**_COMPAT, **data}
    for key in ("converter", "source", "sink_defaults"):
        merged[key] = {**_COMPAT[key], **data.get(key, {})}  # type: ignore[dict-item]
    return merged


def _build(doc: YamlDoc, registries: Registries = no_registries) -> Definition:
    data = _with_compat(doc.data)
    defaults = data.get("sink_defaults", {})
    version = tuple(int(p) for p in data.get("debezium_version", "3.6").split("."))
    conv = data.get("converter", {})
    return Definition(
        file=doc.file,
        cluster=data["cluster"],
        database=data["database"],
        envs=tuple(data["envs"]),
        orgs=tuple(data["orgs"]),
        debezium_version=(version[0], version[1]),
        naming=data.get("naming", "literal"),
        secrets_file=data.get("secrets_file", "/config/kafka-connect-config.properties"),
        converter=_converter(conv, data["cluster"], registries),
        source=_source(data.get("source", {}), option_values(doc, ["source", "options"])),
        pipelines=tuple(
            _pipeline(doc, p, i, defaults, data.get("schema_changes", {}))
            for i, p in enumerate(data["pipelines"])
            if "source_topic" not in p
        ),
        lines=_lines(doc),
        compat=data.get("compat", ""),
        topics=tuple(_topic(doc, p, i, defaults) for i, p in enumerate(data["pipelines"]) if "source_topic" in p),
        state=data.get("state", ""),
        allow_destructive=data.get("allow_destructive", False),
        schema_changes=_schema_changes(data.get("schema_changes", {})),
        probe=data.get("probe", {}).get("enabled", True),
        probe_interval_s=data.get("probe", {}).get("interval_s"),
        freshness_max_s=data.get("freshness", {}).get("max_s"),
    )


def _schema_changes(raw: dict[str, str], over: dict[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """The policy for schema drift: the pipeline's keys, over the definition's (`over`), over the
    safe defaults (an added column: report; a breaking change: pause the sinks before they fail)."""
    merged = {"added": "report", "breaking": "pause", **(over or {}), **raw}
    return (("added", merged["added"]), ("breaking", merged["breaking"]))


def _converter(conv: dict[str, Any], cluster: str, registries: Registries) -> Converter:
    """The converter; an Avro one naming no registry takes the project's cluster's (Apicurio's
    converter the native API beside the Confluent-compatible URL the project names)."""
    found = Converter(conv.get("format", "json"), conv.get("schema_registry_url"), conv.get("flavour", "confluent"))
    if found.format != "avro" or found.schema_registry_url or not (url := registries(cluster)):
        return found
    given = apicurio_url(url) if found.flavour == "apicurio" else url
    return replace(found, schema_registry_url=given, from_project=f"clusters.{cluster}.schema_registry_url")


def _lines(doc: YamlDoc) -> dict[str, int]:
    """Lines of the fields that checks after the schema (fan-out, catalogs) may name."""
    paths: list[list[str | int]] = [["database"], ["cluster"]]
    for i, p in enumerate(doc.data["pipelines"]):
        paths += [["pipelines", i, k] for k in ("source_table", "source_topic", "key", "columns")]
        for j, _ in enumerate(p["sinks"]):
            paths += [["pipelines", i, "sinks", j, k] for k in ("database", "table")]
            paths.append(["pipelines", i, "sinks", j])
    found = {format_path(path): doc.line_of(path) for path in paths}
    return {k: v for k, v in found.items() if v is not None}


def _source(raw: dict[str, Any], options: dict[str, str]) -> SourceSpec:
    return SourceSpec(
        publication=raw.get("publication", "debezium_publication"),
        signal_table=TableRef.parse(raw.get("signal_table", "public.dbz_signals")),
        heartbeat_table=TableRef.parse(raw.get("heartbeat_table", "public.debezium_heartbeat")),
        heartbeat_interval_ms=raw.get("heartbeat_interval_ms", 20000),
        snapshot_mode=raw.get("snapshot_mode", "initial"),
        snapshot_chunk_size=raw.get("snapshot_chunk_size", 512),
        notifications=raw.get("notifications", True),
        options=tuple(sorted(options.items())),
    )


def _pipeline(
    doc: YamlDoc, raw: dict[str, Any], index: int, defaults: dict[str, Any], over: dict[str, str]
) -> Pipeline:
    source_table = TableRef.parse(raw["source_table"])
    sinks = _sinks(doc, raw, index, defaults, source_table)
    policy = _schema_changes(raw["schema_changes"], over) if "schema_changes" in raw else None
    return Pipeline(source_table, sinks, f"pipelines[{index}]", schema_changes=policy)


def _topic(doc: YamlDoc, raw: dict[str, Any], index: int, defaults: dict[str, Any]) -> TopicPipeline:
    # A topic sink names its table (checked after the schema): there is no source table to copy.
    sinks = _sinks(doc, raw, index, defaults, TableRef("public", ""))
    return TopicPipeline(
        raw["source_topic"], tuple(raw.get("key", ())), tuple(raw.get("columns", ())), sinks, f"pipelines[{index}]"
    )


def _sinks(
    doc: YamlDoc, raw: dict[str, Any], index: int, defaults: dict[str, Any], source_table: TableRef
) -> tuple[SinkSpec, ...]:
    default_options = option_values(doc, ["sink_defaults", "options"])
    return tuple(
        _sink(
            {**defaults, **s, "accuracy": {**defaults.get("accuracy", {}), **s.get("accuracy", {})}},
            {**default_options, **option_values(doc, ["pipelines", index, "sinks", j, "options"])},
            source_table,
            f"pipelines[{index}].sinks[{j}]",
        )
        for j, s in enumerate(raw["sinks"])
    )


def _sink(raw: dict[str, Any], options: dict[str, str], source_table: TableRef, path: str) -> SinkSpec:
    tenant = raw.get("tenant_filter")
    return SinkSpec(
        database=raw["database"],
        table=TableRef.parse(raw["table"]) if "table" in raw else source_table,
        flavour=raw.get("flavour", "debezium"),
        delete=raw.get("delete", False),
        dlq=raw.get("dlq", True),
        dlq_replication_factor=raw.get("dlq_replication_factor", 3),
        tenant_filter=TenantFilter(tenant["field"], tuple(tenant["values"])) if tenant else None,
        options=tuple(sorted(options.items())),
        path=path,
        accuracy=_accuracy(raw.get("accuracy", {})),
    )


def _accuracy(raw: dict[str, Any]) -> AccuracySpec:
    tolerance = raw.get("tolerance", {})
    return AccuracySpec(
        raw.get("source_filter"),
        raw.get("sink_filter"),
        tolerance.get("rows", 0),
        float(tolerance.get("percent", 0)),
        raw.get("expect"),
    )


def option_values(doc: YamlDoc, path: Sequence[PathElem]) -> dict[str, str]:
    """The `options` mapping at `path` (none: empty) as Connect strings, in the text written."""
    node: Any = doc.data
    for elem in path:
        if isinstance(node, dict):
            node = node.get(elem)
        elif isinstance(node, list) and isinstance(elem, int) and elem < len(node):
            node = node[elem]
    options = node if isinstance(node, dict) else {}
    return {k: connect_string(v, doc.text_of([*path, k])) for k, v in options.items()}


def connect_string(value: Any, written: str | None = None) -> str:
    """Connect stores strings. Booleans are spelled "true"/"false" (also when written True or
    TRUE). Any other unquoted value keeps the text written: YAML 1.2 reads `010` as the integer
    10 and `1e3` as 1000.0, but an option is passed to Connect as is, so "010" and "1e3" it is.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if written is not None:
        return written
    return str(value)

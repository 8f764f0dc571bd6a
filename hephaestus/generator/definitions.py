"""Load and validate definitions/*.yaml into frozen Definitions (edge: reads files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from hephaestus.errors import InputError, InputErrors
from hephaestus.generator import debezium
from hephaestus.generator.model import (
    AccuracySpec,
    Converter,
    Definition,
    Pipeline,
    SinkSpec,
    SourceSpec,
    TableRef,
    TenantFilter,
)
from hephaestus.yamlsrc import (
    YamlDoc,
    format_path,
    load_yaml,
    packaged_schema,
    packaged_validator,
    schema_errors_of,
)


def definitions_schema() -> dict[str, Any]:
    """The JSON Schema shipped in the package (also written to schemas/ for editors)."""
    return packaged_schema("hephaestus.generator", "definitions.schema.json")


def load_definitions(directory: Path) -> list[Definition]:
    """Every *.yaml / *.yml in `directory`, all validated; all errors reported together."""
    files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not files:
        raise InputError(str(directory), "no definitions (*.yaml) found")
    defs: list[Definition] = []
    errors: list[InputError] = []
    for path in files:
        try:
            defs.append(parse_definition(load_yaml(path)))
        except InputErrors as many:
            errors.extend(many.errors)
        except InputError as one:
            errors.append(one)
    if errors:
        raise InputErrors(errors)
    return defs


def parse_definition(doc: YamlDoc) -> Definition:
    """Schema-check one parsed file, then build the Definition."""
    schema_errors = schema_errors_of(doc, _validator())
    if schema_errors:
        raise InputErrors(schema_errors)
    definition = _build(doc)
    problems = debezium.check_definition(definition)
    if problems:
        raise InputErrors([InputError(doc.file, msg, field=f, line=_line(doc, f)) for f, msg in problems])
    return definition


def _validator() -> jsonschema.protocols.Validator:
    return packaged_validator("hephaestus.generator", "definitions.schema.json")


def _line(doc: YamlDoc, field: str) -> int | None:
    parts: list[str | int] = []
    for raw in field.replace("]", "").split("."):
        name, *idx = raw.split("[")
        parts.append(name)
        parts.extend(int(i) for i in idx)
    return doc.line_of(parts)


def _build(doc: YamlDoc) -> Definition:
    data = doc.data
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
        converter=Converter(conv.get("format", "json"), conv.get("schema_registry_url")),
        source=_source(data.get("source", {})),
        pipelines=tuple(_pipeline(p, i, defaults) for i, p in enumerate(data["pipelines"])),
        lines=_lines(doc),
    )


def _lines(doc: YamlDoc) -> dict[str, int]:
    """Lines of the fields that checks after the schema (fan-out, snapshots) may name."""
    paths: list[list[str | int]] = [["database"], ["cluster"]]
    for i, p in enumerate(doc.data["pipelines"]):
        paths.append(["pipelines", i, "source_table"])
        for j, _ in enumerate(p["sinks"]):
            paths += [["pipelines", i, "sinks", j, k] for k in ("database", "table")]
            paths.append(["pipelines", i, "sinks", j])
    found = {format_path(path): doc.line_of(path) for path in paths}
    return {k: v for k, v in found.items() if v is not None}


def _source(raw: dict[str, Any]) -> SourceSpec:
    return SourceSpec(
        publication=raw.get("publication", "debezium_publication"),
        signal_table=TableRef.parse(raw.get("signal_table", "public.dbz_signals")),
        heartbeat_table=TableRef.parse(raw.get("heartbeat_table", "public.debezium_heartbeat")),
        heartbeat_interval_ms=raw.get("heartbeat_interval_ms", 20000),
        snapshot_mode=raw.get("snapshot_mode", "initial"),
        snapshot_chunk_size=raw.get("snapshot_chunk_size", 512),
        notifications=raw.get("notifications", True),
        options=stringify_options(raw.get("options", {})),
    )


def _pipeline(raw: dict[str, Any], index: int, defaults: dict[str, Any]) -> Pipeline:
    source_table = TableRef.parse(raw["source_table"])
    sinks = tuple(
        _sink({**defaults, **s, "options": {**defaults.get("options", {}), **s.get("options", {})},
               "accuracy": {**defaults.get("accuracy", {}), **s.get("accuracy", {})}},
              source_table, f"pipelines[{index}].sinks[{j}]")
        for j, s in enumerate(raw["sinks"])
    )
    return Pipeline(source_table, sinks, f"pipelines[{index}]")


def _sink(raw: dict[str, Any], source_table: TableRef, path: str) -> SinkSpec:
    tenant = raw.get("tenant_filter")
    return SinkSpec(
        database=raw["database"],
        table=TableRef.parse(raw["table"]) if "table" in raw else source_table,
        flavour=raw.get("flavour", "debezium"),
        delete=raw.get("delete", False),
        dlq=raw.get("dlq", True),
        dlq_replication_factor=raw.get("dlq_replication_factor", 3),
        tenant_filter=TenantFilter(tenant["field"], tuple(tenant["values"])) if tenant else None,
        options=stringify_options(raw.get("options", {})),
        path=path,
        accuracy=_accuracy(raw.get("accuracy", {})),
    )


def _accuracy(raw: dict[str, Any]) -> AccuracySpec:
    tolerance = raw.get("tolerance", {})
    return AccuracySpec(raw.get("source_filter"), raw.get("sink_filter"),
                        tolerance.get("rows", 0), float(tolerance.get("percent", 0)))


def stringify_options(options: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Connect stores strings: booleans become "true"/"false", never "True"."""
    return tuple(sorted((k, connect_string(v)) for k, v in options.items()))


def connect_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

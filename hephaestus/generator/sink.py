"""JDBC sinks of one env x org x table x sink database (reference section 3), both flavours."""

from __future__ import annotations

from dataclasses import replace

from hephaestus.classes import CONFLUENT_SINK, DEBEZIUM_SINK
from hephaestus.generator import debezium, naming, probe
from hephaestus.generator.model import (
    Definition,
    SinkSpec,
    TableRef,
    TenantFilter,
    TopicPipeline,
)
from hephaestus.generator.naming import NamingScope
from hephaestus.generator.source import converters


def sink_config(
    d: Definition, s: NamingScope, source_table: TableRef, sink: SinkSpec, pk: tuple[str, ...], fields: tuple[str, ...]
) -> dict[str, str]:
    """One sink; `pk` and `fields` come from the table catalogs (checked by the caller)."""
    build = _confluent if sink.flavour == "confluent" else _debezium
    config = {
        "tasks.max": "1",
        "topics": naming.topic(d, s, source_table),
        "insert.mode": "upsert",
        "delete.enabled": "true" if sink.delete else "false",
        **build(d, source_table, sink, pk, fields),
        **converters(d),
        **_dlq(sink, naming.sink_name(d, s, source_table, sink)),
    }
    if probe.carried(d, sink) or probe.overridden(dict(sink.options), sink.dlq):
        config.update(sink.options)
        return config
    name, source = naming.sink_name(d, s, source_table, sink), probe.source_table(d)
    topics = (naming.topic(d, s, source_table), naming.topic(d, s, source))
    config.update(probe.sink_keys(config, name, *topics, sink.table))
    return probe.with_options(config, dict(sink.options))


def topic_sink_config(
    d: Definition, s: NamingScope, t: TopicPipeline, sink: SinkSpec, fields: tuple[str, ...]
) -> dict[str, str]:
    """A sink of a topic ksqlDB writes: flat rows (no Debezium envelope, so no unwrap), keyed by
    the value's fields (ksqlDB's KAFKA key format is raw bytes, read as a string), no deletes."""
    if sink.tenant_filter:  # the field as the record spells it (ksqlDB upper-cases names)
        spelled = next((c for c in t.columns if c.lower() == sink.tenant_filter.field), sink.tenant_filter.field)
        sink = replace(sink, tenant_filter=TenantFilter(spelled, sink.tenant_filter.values))
    config = {
        "tasks.max": "1",
        "topics": t.topic_in(s.env, s.org),
        "insert.mode": "upsert",
        "delete.enabled": "false",
        **(_confluent_topic if sink.flavour == "confluent" else _debezium_topic)(d, t, sink, fields),
        **converters(d),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        **_dlq(sink, naming.topic_sink_name(d, s, sink)),
    }
    for key in [k for k in config if k.startswith("key.converter.")]:  # the string key takes no settings
        del config[key]
    config.update(sink.options)
    return config


def _debezium_topic(d: Definition, t: TopicPipeline, sink: SinkSpec, fields: tuple[str, ...]) -> dict[str, str]:
    config = {
        "connector.class": DEBEZIUM_SINK,
        "connection.url": naming.secret(d, sink.database, "url"),
        "connection.username": naming.secret(d, sink.database, "username"),
        "connection.password": naming.secret(d, sink.database, "password"),
        "primary.key.mode": "record_value",
        "primary.key.fields": ",".join(t.key),
        "schema.evolution": "none",
        "collection.name.format": _target(sink.table),
        "field.include.list": ",".join(fields),
    }
    if sink.tenant_filter:
        config.update(_groovy_filter(sink.tenant_filter, flat=True))
    return config


def _confluent_topic(d: Definition, t: TopicPipeline, sink: SinkSpec, fields: tuple[str, ...]) -> dict[str, str]:
    config = {
        "connector.class": CONFLUENT_SINK,
        "connection.url": naming.secret(d, sink.database, "url"),
        "pk.mode": "record_value",
        "pk.fields": ",".join(t.key),
        "auto.create": "false",
        "auto.evolve": "false",
        "fields.whitelist": ",".join(fields),
        "table.name.format": _target(sink.table),
        # Confluent's sink quotes names as written: an upper-case ksqlDB field would miss the
        # folded (lower-case) column.
        "quote.sql.identifiers": "never",
    }
    if sink.tenant_filter:
        config.update({"transforms": "tenant", **_jsonpath_filter(sink.tenant_filter)})
    return config


def _debezium(
    d: Definition, source_table: TableRef, sink: SinkSpec, pk: tuple[str, ...], fields: tuple[str, ...]
) -> dict[str, str]:
    # Reads Debezium envelopes natively: no unwrap; record_key so that deletes can work.
    config = {
        "connector.class": DEBEZIUM_SINK,
        "connection.url": naming.secret(d, sink.database, "url"),
        "connection.username": naming.secret(d, sink.database, "username"),
        "connection.password": naming.secret(d, sink.database, "password"),
        "primary.key.mode": "record_key",
        "primary.key.fields": ",".join(pk),
        "schema.evolution": "none",
        "collection.name.format": _target(sink.table),
        "field.include.list": ",".join(fields),
    }
    if sink.tenant_filter:
        config.update(_groovy_filter(sink.tenant_filter))
    return config


def _confluent(
    d: Definition, source_table: TableRef, sink: SinkSpec, pk: tuple[str, ...], fields: tuple[str, ...]
) -> dict[str, str]:
    chain = ["unwrap", "tenant", "route"] if sink.tenant_filter else ["unwrap", "route"]
    config = {
        "connector.class": CONFLUENT_SINK,
        "connection.url": naming.secret(d, sink.database, "url"),
        # Confluent's sink deletes only by record key.
        "pk.mode": "record_key" if sink.delete else "record_value",
        "pk.fields": ",".join(pk),
        "auto.create": "false",
        "auto.evolve": "false",
        "fields.whitelist": ",".join(fields),
        "transforms": ",".join(chain),
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        **debezium.unwrap_keys(d.debezium_version, sink.delete),
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "([^.]+).([^.]+).([^.]+).([^.]+).([^.]+)"
        if d.compat == "reference"
        else r"([^.]+)\.([^.]+)\.([^.]+)\.([^.]+)\.([^.]+)",
        "transforms.route.replacement": "$5",
    }
    if sink.table != TableRef("public", source_table.table):
        config["table.name.format"] = _target(sink.table)
    if sink.tenant_filter:
        config.update(_jsonpath_filter(sink.tenant_filter))
    return config


def _target(table: TableRef) -> str:
    return table.table if table.schema == "public" else str(table)


def _groovy_filter(f: TenantFilter, flat: bool = False) -> dict[str, str]:
    # Deletes carry the row in `before`; tombstones (null value) pass so deletes stay whole.
    # A flat row (a topic sink's) holds the field itself.
    values = ", ".join(f"'{v}'" for v in f.values)
    row = "value" if flat else "(value.after ?: value.before)"
    condition = f"value == null || [{values}].contains({row}?.{f.field})"
    return {
        "transforms": "tenant",
        "transforms.tenant.type": "io.debezium.transforms.Filter",
        "transforms.tenant.language": "jsr223.groovy",
        "transforms.tenant.condition": condition,
    }


def _jsonpath_filter(f: TenantFilter) -> dict[str, str]:
    condition = " || ".join(f"@.{f.field} == '{v}'" for v in f.values)
    return {
        "transforms.tenant.type": "io.confluent.connect.transforms.Filter$Value",
        "transforms.tenant.filter.condition": f"$[?({condition})]",
        "transforms.tenant.filter.type": "include",
        "transforms.tenant.missing.or.null.behavior": "exclude",
    }


def _dlq(sink: SinkSpec, name: str) -> dict[str, str]:
    # Beyond the reference (it had none): a poison record parks in a topic instead of
    # killing the task. Messages stay out of the log: rows may hold personal data.
    if not sink.dlq:
        return {}
    return {
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": f"dlq.{name}",
        "errors.deadletterqueue.topic.replication.factor": str(sink.dlq_replication_factor),
        "errors.deadletterqueue.context.headers.enable": "true",
        "errors.log.enable": "true",
        "errors.log.include.messages": "false",
    }

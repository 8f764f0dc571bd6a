"""The Debezium PostgreSQL source of one env x org x database (reference section 2)."""

from __future__ import annotations

import re

from hephaestus.classes import POSTGRES_SOURCE as POSTGRES_CONNECTOR
from hephaestus.generator import naming, probe
from hephaestus.generator.model import Converter, Definition, TableRef
from hephaestus.generator.naming import NamingScope


def captured_tables(d: Definition) -> list[TableRef]:
    """The union of the definition's pipeline tables, sorted for stable output."""
    return sorted({p.source_table for p in d.pipelines})


def source_config(d: Definition, s: NamingScope) -> dict[str, str]:
    src = d.source
    db = d.database
    config = {
        "connector.class": POSTGRES_CONNECTOR,
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": naming.secret(d, db, "hostname"),
        "database.port": naming.secret(d, db, "port"),
        "database.user": naming.secret(d, db, "username"),
        "database.password": naming.secret(d, db, "password"),
        "database.dbname": naming.secret(d, db, "dbname"),
        "topic.prefix": db,
        "slot.name": naming.slot_name(d, s),
        "slot.drop.on.stop": "false",
        "publication.name": src.publication,
        "publication.autocreate.mode": "disabled",
        "snapshot.mode": src.snapshot_mode,
        "table.include.list": ",".join(str(t) for t in captured_tables(d)),
        "tombstones.on.delete": "true",
        "heartbeat.interval.ms": str(src.heartbeat_interval_ms),
        "heartbeat.action.query": _heartbeat_query(src.heartbeat_table),
        "signal.data.collection": str(src.signal_table),
        "incremental.snapshot.chunk.size": str(src.snapshot_chunk_size),
        **_route(s, d.compat == "reference"),
        **converters(d),
        **_notifications(d, s),
    }
    # A source probes when a sink of it carries the probe: a capture-only source has no reader.
    probed = not probe.carried(d) and any(not probe.carried(d, k) for p in d.pipelines for k in p.sinks)
    config.update(_probe(d, s) if probed else {})
    config.update(src.options)
    return config


def _probe(d: Definition, s: NamingScope) -> dict[str, str]:
    captured = captured_tables(d)
    keys = probe.source_keys(d, naming.source_name(d, s), captured)
    interval = d.probe_interval_s * 1000 if d.probe_interval_s else d.source.heartbeat_interval_ms
    return {
        "table.include.list": ",".join(sorted([*(str(t) for t in captured), keys["table"]])),
        "heartbeat.interval.ms": str(interval),
        "heartbeat.action.query": f"{_heartbeat_query(d.source.heartbeat_table)}; {keys['probe']}",
    }


def _heartbeat_query(table: TableRef) -> str:
    # An upsert keeps one row and moves the slot even when captured tables are idle.
    return (
        f"INSERT INTO {table} (id, updated_at) VALUES (1, now()) "
        "ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at"
    )


def _route(s: NamingScope, reference: bool) -> dict[str, str]:
    # db.schema.table -> env.org.db.schema.table; dots escaped (the reference's were not, and
    # compat keeps its string: another string is a config change, so a restart).
    return {
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "([^.]+).([^.]+).([^.]+)" if reference else r"([^.]+)\.([^.]+)\.([^.]+)",
        "transforms.route.replacement": f"{s.env}.{s.org}.$1.$2.$3",
    }


def _notifications(d: Definition, s: NamingScope) -> dict[str, str]:
    # Four dotted parts: the route regex (three parts, whole match) leaves this topic alone.
    if not d.source.notifications:
        return {}
    return {
        "notification.enabled.channels": "sink,log",
        "notification.sink.topic.name": f"__debezium_notifications.{s.env}.{s.org}.{d.database}",
    }


def converters(d: Definition) -> dict[str, str]:
    if d.converter.format == "avro":
        return {**_avro("key", d.converter), **_avro("value", d.converter)}
    cls = "org.apache.kafka.connect.json.JsonConverter"
    return {
        "key.converter": cls,
        "key.converter.schemas.enable": "true",
        "value.converter": cls,
        "value.converter.schemas.enable": "true",
    }


APICURIO_AVRO = "io.apicurio.registry.utils.converter.AvroConverter"
# Apicurio's converter, writing what Confluent's deserializers read: the magic byte and a
# 4-byte id in the payload (not in headers, its 2.x default), the id being the content id
# that the registry's Confluent-compatible API serves (/apis/ccompat/v7/schemas/ids/{id}).
_APICURIO = {
    "apicurio.registry.auto-register": "true",
    "apicurio.registry.find-latest": "true",
    "apicurio.registry.as-confluent": "true",
    "apicurio.registry.use-id": "contentId",
    "apicurio.registry.headers.enabled": "false",
}


def _avro(side: str, c: Converter) -> dict[str, str]:
    url = c.schema_registry_url or ""
    if c.flavour == "apicurio":
        keys = {"apicurio.registry.url": url, **_APICURIO}
        return {f"{side}.converter": APICURIO_AVRO, **{f"{side}.converter.{k}": v for k, v in keys.items()}}
    confluent = "io.confluent.connect.avro.AvroConverter"
    return {f"{side}.converter": confluent, f"{side}.converter.schema.registry.url": url}


_CCOMPAT = re.compile(r"^(?P<base>.+?)/apis/ccompat/v[0-9]+/?$")


def apicurio_url(compatible: str) -> str | None:
    """Apicurio's native API (what its converter talks to) beside its Confluent-compatible one
    (what the project file names, for decoding): None when the URL is not the latter."""
    found = _CCOMPAT.match(compatible)
    return f"{found['base']}/apis/registry/v2" if found else None

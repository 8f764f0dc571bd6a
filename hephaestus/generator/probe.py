"""The freshness probe's part of the generated configs (pure; issue 46, docs/freshness.md).

The probe rides Debezium's heartbeat: each heartbeat, the source connector itself runs its
`heartbeat.action.query`, which also upserts one row per source connector into the probe table
of the source database, with the database's `now()`, a sequence number and the captured tables
the publication lacks at that moment. The source captures the probe table like any other, into
its own topic; every sink of that source reads the topic too, tags each probe record's key with
its own name (`InsertField$Key`, for probe records only) and routes it into the probe table of
the sink database, beside the data. So a probe crosses the same slot, publication, source, topic,
converter, sink connector and transforms as the rows, and is read back where the rows land.

Why the sink's config changes the way it does (checked on the stack: Debezium JDBC sink 3.6):
- `collection.name.format` becomes `${topic}` (in the target's schema) and a RegexRouter names
  the data topic's table: one fixed name would write the probe into the user's table;
- `primary.key.fields` gains the probe's two key fields: the sink takes, from each record's key,
  the fields it names that the key holds (a data key holds none of these, a probe key only these);
- the field list gains the probe's columns, qualified by the probe's routed topic.
A filter the generator writes (the tenant filter) skips the probe topic (a negated predicate):
the probe has no tenant. A filter a user adds in `options` applies to it like to the data.
"""

from __future__ import annotations

import re

from hephaestus.generator.model import Definition, SinkSpec, TableRef
from hephaestus.safety.views import PROBE_SINK_KEY as SINK_KEY
from hephaestus.safety.views import PROBE_SOURCE_KEY as SOURCE_KEY
from hephaestus.safety.views import PROBE_TABLE as TABLE

COLUMNS = ("probed_at", "probe_seq", "unpublished")
ROUTE, DATA_ROUTE, TAG, IS_PROBE = "hephaestus_probe", "hephaestus_data", "hephaestus_probe_sink", "hephaestus_is_probe"
_KAFKA = "org.apache.kafka.connect.transforms."


def carried(d: Definition, sink: SinkSpec | None = None) -> str:
    """ "" when the definition's connectors carry the probe; else why not (freshness: unknown)."""
    if not d.probe:
        return "the definition turns the probe off (probe: {enabled: false})"
    if d.compat == "reference":
        return "compat: reference keeps the reference system's exact configs, which carry no probe"
    if sink is not None and sink.flavour == "confluent":
        return "the probe rides Debezium's JDBC sink only: Confluent's sink names one table for every topic it reads"
    return ""


def source_table(d: Definition) -> TableRef:
    return TableRef(d.source.heartbeat_table.schema, TABLE)


def source_keys(d: Definition, name: str, captured: list[TableRef]) -> dict[str, str]:
    """What a probing source adds: the probe table captured, and its upsert after the heartbeat's."""
    table = source_table(d)
    listed = ", ".join(_literal(str(t)) for t in captured)
    publication = _literal(d.source.publication)
    upsert = (
        f"INSERT INTO {table} ({SOURCE_KEY}, probed_at, probe_seq, unpublished) VALUES ({_literal(name)}, now(), 1, "
        f"(SELECT string_agg(t, ',' ORDER BY t) FROM unnest(ARRAY[{listed}]::text[]) AS t WHERE NOT EXISTS "
        f"(SELECT 1 FROM pg_publication_tables p WHERE p.pubname = {publication} "
        "AND p.schemaname || '.' || p.tablename = t))) "
        f"ON CONFLICT ({SOURCE_KEY}) DO UPDATE SET probed_at = EXCLUDED.probed_at, "
        f"probe_seq = {table}.probe_seq + 1, unpublished = EXCLUDED.unpublished"
    )
    # A DO block whose guard skips a missing probe table: a dropped probe never fails the source.
    guarded = f"DO $probe$ BEGIN IF to_regclass({_literal(str(table))}) IS NOT NULL THEN {upsert}; END IF; END $probe$"
    return {"probe": guarded, "table": str(table)}


def sink_keys(config: dict[str, str], name: str, data_topic: str, probe_topic: str, target: TableRef) -> dict[str, str]:
    """What a probing Debezium sink adds to (and changes in) `config`, the sink it generated."""
    schema = "" if target.schema == "public" else f"{target.schema}."
    chain = [a for a in config.get("transforms", "").split(",") if a]
    keys = {
        "topics": f"{config['topics']},{probe_topic}",
        "collection.name.format": f"{schema}${{topic}}",
        "primary.key.fields": f"{config['primary.key.fields']},{SOURCE_KEY},{SINK_KEY}",
        "field.include.list": ",".join([config["field.include.list"], *(f"{TABLE}:{c}" for c in COLUMNS)]),
        # The tag first: the predicate names the probe's topic before the routers rename it.
        "transforms": ",".join([*chain, TAG, DATA_ROUTE, ROUTE]),
        **_router(DATA_ROUTE, data_topic, target.table),
        **_router(ROUTE, probe_topic, TABLE),
        f"transforms.{TAG}.type": _KAFKA + "InsertField$Key",
        f"transforms.{TAG}.static.field": SINK_KEY,
        f"transforms.{TAG}.static.value": name,
        f"transforms.{TAG}.predicate": IS_PROBE,
        "predicates": IS_PROBE,
        f"predicates.{IS_PROBE}.type": _KAFKA + "predicates.TopicNameMatches",
        f"predicates.{IS_PROBE}.pattern": re.escape(probe_topic),
    }
    for alias in chain:  # the generator's filters (the tenant's) let the probe by
        keys[f"transforms.{alias}.predicate"] = IS_PROBE
        keys[f"transforms.{alias}.negate"] = "true"
    return keys


# Options that decide where records land or what keys them: a sink setting any of them carries
# no probe (it would land where they say, maybe in the user's table). Its freshness reads unknown.
OWNED = (
    "topics",
    "topics.regex",
    "collection.name.format",
    "table.name.format",
    "primary.key.fields",
    "primary.key.mode",
)


def overridden(options: dict[str, str], dlq: bool) -> bool:
    """Whether the options leave no room for the probe. Transforms of the user's meet the probe
    like the data (a filter dropping everything drops it too: the pipeline goes stale), but only
    beside a dead-letter queue: one that fails on the probe's shape then parks the probe, where
    without one it would fail the task. Guard such a transform with the probe's predicate
    (`transforms.<alias>.predicate: hephaestus_is_probe`, `negate: true`)."""
    return any(k in options for k in OWNED) or ("transforms" in options and not dlq)


def with_options(config: dict[str, str], options: dict[str, str]) -> dict[str, str]:
    """The user's options over a probing config; their `transforms` run first, then the probe's
    tag and routers (without the routers every record would land in a table named after its topic)."""
    merged = {**config, **options}
    if "transforms" in options:
        mine = (TAG, DATA_ROUTE, ROUTE)
        theirs = [a.strip() for a in options["transforms"].split(",") if a.strip() and a.strip() not in mine]
        merged["transforms"] = ",".join([*theirs, *mine])
    return merged


def _router(alias: str, topic: str, table: str) -> dict[str, str]:
    return {
        f"transforms.{alias}.type": _KAFKA + "RegexRouter",
        f"transforms.{alias}.regex": re.escape(topic),
        f"transforms.{alias}.replacement": table,
    }


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"

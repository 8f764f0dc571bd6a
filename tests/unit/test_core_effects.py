"""What each step does to data (safety.effects, safety.views, safety.values): every rule, with
the plugin's own defaults and parsing (mutation-tested core). Issue 29's findings are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from hephaestus.classes import CONFLUENT_SINK, DEBEZIUM_SINK, POSTGRES_SOURCE
from hephaestus.safety import effects, views
from hephaestus.safety.effects import KINDS, Effect
from hephaestus.safety.values import (
    INVALID,
    NO_RESOLVER,
    Ref,
    Resolver,
    boolean,
    known,
    listed,
    may_equal,
    same,
    strict_enum,
    trimmed_enum,
    untrimmed_enum,
)

SRC = {
    "connector.class": POSTGRES_SOURCE,
    "database.hostname": "db",
    "database.dbname": "bob",
    "slot.name": "s1",
    "topic.prefix": "bob",
    "plugin.name": "pgoutput",
    "snapshot.mode": "initial",
    "table.include.list": "public.a,public.b",
    "transforms": "route",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "([^.]+)\\.([^.]+)\\.([^.]+)",
    "transforms.route.replacement": "local.manabie.$1.$2.$3",
}
SNK = {
    "connector.class": DEBEZIUM_SINK,
    "connection.url": "jdbc:postgresql://db:5432/auth",
    "topics": "t1,t2",
    "insert.mode": "upsert",
    "primary.key.mode": "record_key",
    "primary.key.fields": "id",
    "collection.name.format": "users",
    "field.include.list": "id,name",
    "errors.tolerance": "all",
    "errors.deadletterqueue.topic.name": "dlq.s",
}


def codes(found: tuple[Effect, ...]) -> list[str]:
    return sorted({e.code for e in found})


def update(before: dict[str, str], **change: str) -> list[str]:
    return codes(effects.of_update(before, {**before, **change}))


# --- values: as the plugins read them --------------------------------------------------------


def test_enums_are_parsed_as_each_plugin_parses_them() -> None:
    modes = ("always", "initial")
    assert trimmed_enum(" ALWAYS ", modes, "initial") == "always"  # Debezium: trimmed, any case
    assert trimmed_enum(None, modes, "initial") == "initial"
    assert trimmed_enum("sometimes", modes, "initial") == INVALID
    assert trimmed_enum(Ref("${file:/x:y}"), modes, "initial") is None
    inserts = ("insert", "upsert")
    assert untrimmed_enum("UPSERT", inserts, "insert", "insert") == "upsert"  # the JDBC sink: any case
    assert untrimmed_enum("upsert ", inserts, "insert", "insert") == "insert"  # ... not trimmed: falls back
    assert untrimmed_enum(None, inserts, "x", "insert") == "x"
    assert untrimmed_enum(Ref("${a:b}"), inserts, "x", "insert") is None
    assert strict_enum(" upsert ", inserts, "insert") == "upsert"  # Confluent: trimmed
    assert strict_enum("UPSERT", inserts, "insert") == "upsert"
    assert strict_enum("Upsert", inserts, "insert") == INVALID  # mixed case refused
    assert strict_enum(None, inserts, "insert") == "insert"
    assert strict_enum(Ref("${a:b}"), inserts, "insert") is None


def test_booleans_and_lists_as_kafka_reads_them() -> None:
    assert (boolean(" TRUE", False), boolean("false", True), boolean(None, True)) == (True, False, True)
    assert boolean("yes", False) is None and boolean(Ref("${a:b}"), False) is None
    assert listed(" a , b,,c ") == frozenset({"a", "b", "c"})
    assert listed(None) == frozenset() and listed("") == frozenset() and listed(Ref("${a:b}")) is None


def test_a_placeholder_is_resolved_from_a_readable_secrets_file_else_it_could_be_anything(tmp_path: Path) -> None:
    secrets = tmp_path / "connect.properties"
    secrets.write_text("slot = resolved\nhost=db1\n")
    resolve = Resolver([secrets])
    assert resolve(None) is None and resolve("plain") == "plain"
    assert resolve("${file:secrets/connect.properties:slot}") == Ref(
        "${file:secrets/connect.properties:slot}", "resolved"
    )
    assert resolve(f"${{file:{secrets}:host}}:5432") == Ref(f"${{file:{secrets}:host}}:5432", "db1:5432")
    assert resolve("${file:/nowhere/x.properties:slot}") == Ref("${file:/nowhere/x.properties:slot}")
    assert resolve("${env:SLOT}") == Ref("${env:SLOT}")  # other providers are never resolved here
    assert resolve("${file:secrets/connect.properties:missing}") == Ref("${file:secrets/connect.properties:missing}")
    assert NO_RESOLVER("${file:secrets/connect.properties:slot}").value is None  # type: ignore[union-attr]
    assert known("a") == "a" and known(Ref("x", "v")) == "v" and known(Ref("x")) is None


def test_sameness_and_could_be_equal() -> None:
    assert same(Ref("${a:b}"), Ref("${a:b}")) and not same(Ref("${a:b}"), Ref("${a:c}"))
    assert same(Ref("${a:b}", "v"), "v") and same(Ref("${a:c}", "v"), Ref("${a:d}", "v"))
    assert not same(Ref("${a:b}"), "v") and same(None, None) and not same("a", None)
    assert may_equal(Ref("${a:b}"), "anything") and may_equal("x", Ref("${a:b}"))
    assert not may_equal("a", "b") and may_equal(Ref("${a:b}", "v"), "v") and not may_equal(Ref("${a:b}", "w"), "v")


# --- sources: what a config write does --------------------------------------------------------


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"snapshot.mode": "ALWAYS"}, ["resnapshot"]),
        ({"snapshot.mode": "always "}, ["resnapshot"]),  # issue 29: trimmed and any case, as Debezium reads it
        ({"snapshot.mode": "custom"}, ["resnapshot"]),
        ({"snapshot.mode": "configuration_based"}, []),  # snapshot.data off by default
        (
            {"snapshot.mode": "configuration_based", "snapshot.mode.configuration.based.snapshot.data": "true"},
            ["resnapshot"],
        ),
        ({"snapshot.mode": "${file:/x:mode}"}, ["resnapshot"]),  # could be anything
        ({"snapshot.mode": "when_needed"}, []),  # snapshots only without offsets or position
        ({"snapshot.mode": "no_data"}, []),
        ({"snapshot.mode": "initial_only"}, ["topics-stopped"]),
        ({"slot.name": "s2"}, ["slot-changed"]),
        ({"plugin.name": "decoderbufs"}, ["slot-changed"]),
        ({"database.hostname": "db2"}, ["slot-changed"]),
        ({"database.dbname": "other"}, ["slot-changed"]),
        ({"database.port": "5433"}, ["slot-changed"]),
        ({"publication.name": "p2"}, ["capture-dropped"]),
        ({"topic.prefix": "b2"}, ["offsets-lost", "resnapshot", "topics-renamed"]),
        ({"transforms.route.replacement": "prod.$1.$2.$3"}, ["topics-renamed"]),  # issue 29: renames every topic
        ({"transforms": ""}, ["topics-renamed"]),
        ({"topic.delimiter": "_"}, ["topics-renamed"]),
        ({"table.include.list": "public.a"}, ["capture-dropped"]),  # issue 29: a shrinking include list
        ({"table.include.list": "public.a,public.b,public.c"}, []),
        ({"table.include.list": ""}, []),  # everything is captured then
        ({"table.exclude.list": "public.b"}, ["capture-dropped"]),
        ({"column.exclude.list": "public.a.secret"}, ["capture-dropped"]),
        ({"message.key.columns": "public.a:name"}, ["keys-changed"]),  # issue 29
        ({"skipped.operations": "t,d"}, ["records-filtered"]),
        ({"skipped.operations": "none"}, []),
        ({"heartbeat.interval.ms": "1000"}, []),
    ],
)
def test_a_source_update_states_its_effects(change: dict[str, str], expected: list[str]) -> None:
    assert update(SRC, **change) == expected


def test_a_source_that_drops_its_slot_on_stop_loses_it_on_every_restart() -> None:
    dropping = {**SRC, "slot.drop.on.stop": "true"}
    assert update(dropping, **{"heartbeat.interval.ms": "5"}) == ["slot-dropped"]
    assert codes(effects.of_update({**SRC, "slot.drop.on.stop": "${file:/x:y}"}, SRC)) == ["slot-dropped"]
    assert update(SRC, **{"slot.drop.on.stop": "true"}) == []  # the old tasks stop with the old config
    always = {**SRC, "snapshot.mode": "always"}
    assert update(always, **{"heartbeat.interval.ms": "5"}) == ["resnapshot"]  # every start reads again


def test_filters_keys_and_unknown_transforms_of_a_source() -> None:
    chain = {**SRC, "transforms": "route,f", "transforms.f.type": "org.apache.kafka.connect.transforms.Filter"}
    assert update(chain, **{"transforms.f.negate": "true"}) == ["records-filtered"]
    keyed = {**SRC, "transforms": "route,k", "transforms.k.type": "org.apache.kafka.connect.transforms.ValueToKey"}
    assert update(keyed, **{"transforms.k.fields": "x"}) == ["keys-changed"]
    odd = {**SRC, "transforms": "route,o", "transforms.o.type": "com.example.Whatever"}
    assert update(odd, **{"transforms.o.x": "1"}) == ["transform-changed"]
    masked = {
        **SRC,
        "transforms": "route,m",
        "transforms.m.type": "org.apache.kafka.connect.transforms.MaskField$Value",
    }
    assert update(masked, **{"transforms.m.fields": "x"}) == ["capture-dropped"]
    unwrap = {**SRC, "transforms": "route,u", "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState"}
    assert update(unwrap, **{"transforms.u.add.fields": "op"}) == []
    assert update(unwrap, **{"transforms.u.delete.tombstone.handling.mode": "drop"}) == ["deletes-changed"]
    shaped = {
        **SRC,
        "transforms": "route,i",
        "transforms.i.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    }
    assert update(shaped, **{"transforms.i.static.field": "x"}) == []
    predicated = {**chain, "transforms.f.predicate": "p", "predicates": "p", "predicates.p.pattern": "a"}
    assert update(predicated, **{"predicates.p.pattern": "b"}) == ["records-filtered"]


def test_a_class_change_and_an_unknown_class() -> None:
    assert update(SRC, **{"connector.class": "io.Other"}) == ["offsets-lost"]
    assert update({"connector.class": "io.Other", "a": "1"}, a="2") == []


# --- sinks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"connection.url": "jdbc:postgresql://db:5432/other"}, ["target-changed"]),  # issue 29: another database
        ({"connection.url": "jdbc:postgresql://DB/auth?sslmode=require"}, []),  # the same database, other parameters
        ({"connection.url": "jdbc:postgresql://u:pw@db:5432/auth"}, []),  # credentials are not the target
        ({"connection.url": "${file:/s:url}"}, ["target-changed"]),
        ({"collection.name.format": "people"}, ["target-changed"]),
        ({"topics": "t1"}, ["topics-stopped"]),
        ({"topics": "t1,t2,t3"}, []),
        ({"primary.key.fields": "id,org"}, ["keys-changed"]),
        ({"primary.key.mode": "record_value"}, ["keys-changed"]),
        ({"insert.mode": "insert"}, ["keys-changed"]),
        ({"insert.mode": "upsert "}, ["keys-changed"]),  # not trimmed by the sink: runs as insert
        ({"insert.mode": "UPSERT"}, []),
        ({"delete.enabled": "true"}, ["deletes-changed"]),
        ({"truncate.enabled": "true"}, ["deletes-changed"]),
        ({"field.include.list": "id"}, ["capture-dropped"]),
        ({"errors.deadletterqueue.topic.name": ""}, ["records-filtered"]),  # failures dropped, no DLQ
        ({"consumer.override.group.id": "g2"}, ["offsets-lost"]),
        ({"batch.size": "10"}, []),
    ],
)
def test_a_sink_update_states_its_effects(change: dict[str, str], expected: list[str]) -> None:
    assert update(SNK, **change) == expected


def test_regex_sinks_and_routers_of_a_sink() -> None:
    regex = {**{k: v for k, v in SNK.items() if k != "topics"}, "topics.regex": "t.*"}
    assert update(regex, **{"topics.regex": "t1"}) == ["target-changed", "topics-stopped"]
    assert update(SNK, topics="", **{"topics.regex": "t.*"}) == ["topics-stopped"]
    routed = {**SNK, "transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter"}
    # A fixed table name: the router renames the topic, every record still lands in `users`.
    assert update(routed, **{"transforms.r.regex": "t1", "transforms.r.replacement": "x"}) == []
    by_topic = {**routed, "collection.name.format": "${topic}"}
    assert update(by_topic, **{"transforms.r.regex": "t1", "transforms.r.replacement": "x"}) == ["target-changed"]
    # A field list that names a topic: renaming that topic changes which fields are written.
    qualified = {**routed, "field.include.list": "t1:id,t1:name"}
    assert update(qualified, **{"transforms.r.regex": "t1", "transforms.r.replacement": "x"}) == ["target-changed"]


def test_a_flavour_change_is_judged_on_what_each_flavour_means() -> None:
    confluent = {
        "connector.class": CONFLUENT_SINK,
        "connection.url": "jdbc:postgresql://db:5432/auth",
        "topics": "t1,t2",
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "pk.fields": "id",
        "table.name.format": "users",
        "fields.whitelist": "id,name",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "dlq.s",
    }
    assert codes(effects.of_update(confluent, SNK)) == []  # the same semantics, spelled the Debezium way
    assert codes(effects.of_update(confluent, {**SNK, "primary.key.fields": "id,x"})) == ["keys-changed"]
    topic_named = {**SNK, "collection.name.format": "${topic}", "topics": "a.b"}
    assert codes(effects.of_update({**confluent, "table.name.format": "${topic}", "topics": "a.b"}, topic_named)) == [
        "target-changed"  # Debezium turns the topic's dots into underscores
    ]


def test_views_resolve_defaults() -> None:
    s = views.source({"connector.class": POSTGRES_SOURCE}, NO_RESOLVER)
    assert (s.slot, s.plugin, s.publication, s.snapshot, s.drop_on_stop) == (
        "debezium",
        "decoderbufs",
        "dbz_publication",
        "initial",
        False,
    )
    assert s.server == (None, "5432", None) and s.skipped == frozenset({"t"})
    k = views.sink(
        {"connector.class": DEBEZIUM_SINK, "connection.url": "jdbc:postgresql://h/d", "topics": "a.b"}, NO_RESOLVER
    )
    assert (k.pk_mode, k.insert_mode, k.deletes, k.database) == ("none", "insert", False, "postgresql://h:5432/d")
    assert views.tables({"connection.url": "x", "topics": "a.b"}, k) == {"a.b": "a_b"}
    assert views.namespace(SRC, views.source(SRC, NO_RESOLVER)) == "local.manabie.bob."
    assert views.namespace({}, views.source({"topic.prefix": "p"}, NO_RESOLVER)) == "p."


# --- the other step kinds ---------------------------------------------------------------------


def test_state_changes() -> None:
    dropping = {**SRC, "slot.drop.on.stop": "true"}
    assert codes(effects.of_state(dropping, "RUNNING", "STOPPED")) == ["slot-dropped"]  # issue 29
    assert codes(effects.of_state(dropping, "RUNNING", "PAUSED")) == []
    assert codes(effects.of_state({**SRC, "snapshot.mode": "always"}, "STOPPED", "RUNNING")) == ["resnapshot"]
    assert codes(effects.of_state({**SRC, "snapshot.mode": "always"}, "PAUSED", "RUNNING")) == []
    assert codes(effects.of_state(SNK, "RUNNING", "STOPPED")) == []


def test_deletes_offsets_replays_purges_slots_publications_restarts() -> None:
    assert codes(effects.of_delete(SNK)) == ["replication-stopped"] and effects.of_delete(SRC) == ()
    assert codes(effects.of_offsets(SNK, "reset", {}, {})) == ["offsets-reset", "redelivery"]
    insert_mode = {**SNK, "insert.mode": "insert"}
    assert codes(effects.of_offsets(insert_mode, "reset", {}, {})) == ["duplicates", "offsets-reset"]
    assert codes(effects.of_offsets(SNK, "set", {"t[0]": 9, "t[1]": 1}, {"t[0]": 3})) == [
        "offsets-rewound",
        "redelivery",
    ]
    assert codes(effects.of_offsets(SNK, "set", {"t[0]": 3}, {"t[0]": 9})) == ["offsets-lost"]
    assert codes(effects.of_offsets(SNK, "set", {}, {"t[5]": 1})) == ["offsets-lost"]
    assert codes(effects.of_offsets(SNK, "set", {"t[0]": 3}, {"t[0]": 3})) == []
    assert codes(effects.of_offsets(SNK, "set", {"t[0]": "x"}, {"t[0]": 3})) == []
    assert codes(effects.of_offsets(SRC, "reset", {}, {})) == ["offsets-reset", "resnapshot"]
    assert codes(effects.of_offsets({**SRC, "snapshot.mode": "no_data"}, "reset", {}, {})) == ["offsets-reset"]
    assert codes(effects.of_offsets({**SRC, "slot.drop.on.stop": "true"}, "set", {}, {})) == [
        "offsets-lost",
        "slot-dropped",
    ]
    assert codes(effects.of_replay(SNK)) == ["redelivery"] and codes(effects.of_replay(insert_mode)) == ["duplicates"]
    assert codes(effects.of_replay({})) == ["redelivery"]
    assert codes(effects.of_purge()) == ["records-deleted"] and codes(effects.of_slot_drop("s")) == ["slot-dropped"]
    assert "public.a" in effects.of_publication_drop(["public.a"])[0].why
    assert codes(effects.of_restart({**SRC, "snapshot.mode": "always"})) == ["resnapshot"]
    assert effects.of_restart(SRC) == () and effects.of_restart(SNK) == ()


def test_every_kind_says_what_it_means_and_which_need_consent() -> None:
    assert all(what for what, _ in KINDS.values())
    benign = {c for c, (_, destructive) in KINDS.items() if not destructive}
    assert benign == {"redelivery", "replication-stopped", "column-not-replicated", "plugin-upgrade"}
    assert Effect("redelivery", "x").destructive is False and Effect("redelivery", "x", invariant=True).destructive
    assert Effect("resnapshot", "why").describe() == "resnapshot: why"


# --- pinned: the views as resolved, to the letter (from mutation testing) ---------------------


def test_a_source_view_resolves_every_field() -> None:
    config = {
        **SRC,
        "plugin.name": " PGOUTPUT",
        "topic.delimiter": "_",
        "topic.naming.strategy": " io.x.Strategy ",
        "snapshot.mode": "configuration_based",
        "snapshot.mode.configuration.based.snapshot.data": "TRUE",
        "slot.drop.on.stop": "False",
        "schema.include.list": "public",
        "table.exclude.list": "public.z",
        "message.key.columns": "public.a:id",
        "skipped.operations": "T, d",
    }
    s = views.source(config, NO_RESOLVER)
    assert (s.server, s.slot, s.plugin, s.publication, s.prefix) == (
        ("db", "5432", "bob"),
        "s1",
        "pgoutput",
        "dbz_publication",
        "bob",
    )
    assert s.naming == ("_", "io.x.Strategy") and (s.snapshot, s.snapshot_data, s.drop_on_stop) == (
        "configuration_based",
        True,
        False,
    )
    assert s.capture == (
        ("table.include.list", frozenset({"public.a", "public.b"})),
        ("schema.include.list", frozenset({"public"})),
        ("column.include.list", frozenset()),
    )
    assert dict(s.exclude)["table.exclude.list"] == frozenset({"public.z"}) and s.key_columns == "public.a:id"
    assert s.skipped == frozenset({"t", "d"}) and views.source({**SRC, "slot.name": ""}, NO_RESOLVER).slot == "debezium"
    assert views.source({**SRC, "plugin.name": "decoderbufs"}, NO_RESOLVER).plugin == "decoderbufs"
    assert views.source({**SRC, "publication.name": "p"}, NO_RESOLVER).publication == "p"
    assert views.source({**SRC, "skipped.operations": "${file:/x:y}"}, NO_RESOLVER).skipped is None
    assert "T" not in views.source(SRC, NO_RESOLVER).skipped  # type: ignore[operator]
    assert update({**SRC, "topic.naming.strategy": "a"}, **{"topic.naming.strategy": "b"}) == ["topics-renamed"]


def test_the_namespace_when_a_router_renames_everything() -> None:
    collapsed = {**SRC, "transforms.route.regex": ".*", "transforms.route.replacement": "all"}
    assert views.namespace(collapsed, views.source(collapsed, NO_RESOLVER)) == "all"
    unwrap = {
        **SRC,
        "transforms": "unwrap,route",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    }
    assert views.namespace(unwrap, views.source(unwrap, NO_RESOLVER)) == "local.manabie.bob."  # a non-router first
    other = {**SRC, "transforms": "r2", "transforms.r2.type": "io.debezium.transforms.ByLogicalTableRouter"}
    assert views.namespace(other, views.source(other, NO_RESOLVER)) is None
    hidden = {**SRC, "topic.prefix": "${file:/no/where:p}"}
    assert views.namespace(hidden, views.source(hidden, NO_RESOLVER)) is None


def test_a_regex_router_without_its_keys_and_with_a_bad_regex() -> None:
    from hephaestus.safety import transforms

    bare = {"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter"}
    assert transforms.routed(bare, "t") == "t"  # an empty regex matches no topic
    assert transforms.routed({**bare, "transforms.r.regex": "t"}, "t") == ""  # no replacement: empty
    assert transforms.routed({**bare, "transforms.r.regex": "("}, "t") == "t"  # refused by Connect
    assert transforms.routed({**bare, "transforms.r.regex": "t", "transforms.r.replacement": "$9"}, "t") == "t"
    assert transforms.category(" org.apache.kafka.connect.transforms.ExtractField$Key ") == "key"
    assert transforms.category("org.apache.kafka.connect.transforms.ExtractField$key") == "unknown"


def test_a_predicate_adds_to_its_transforms_signature() -> None:
    chain = {
        **SRC,
        "transforms": "route,f",
        "transforms.f.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.f.predicate": "p",
        "predicates": "p",
        "predicates.p.pattern": "a",
    }
    assert update(chain, **{"transforms.f.negate": "true"}) == ["records-filtered"]
    assert update(chain, **{"predicates.p.pattern": "b"}) == ["records-filtered"]


def test_a_sink_view_resolves_every_field() -> None:
    k = views.sink({**SNK, "truncate.enabled": "TRUE", "field.exclude.list": "x"}, NO_RESOLVER)
    assert (k.database, k.topics, k.regex, k.table_format, k.naming) == (
        "postgresql://db:5432/auth",
        frozenset({"t1", "t2"}),
        None,
        "users",
        "",
    )
    assert (k.pk_mode, k.pk_fields, k.insert_mode, k.deletes, k.truncates, k.drops_failures) == (
        "record_key",
        frozenset({"id"}),
        "upsert",
        False,
        True,
        False,
    )
    assert k.fields == (("field.include.list", frozenset({"id", "name"})), ("field.exclude.list", frozenset({"x"})))
    assert views.sink({**SNK, "errors.tolerance": "${file:/x:y}"}, NO_RESOLVER).drops_failures is None
    assert views.sink({**SNK, "collection.name.format": "${file:/x:t}"}, NO_RESOLVER).table_format is None
    assert (
        views.sink({**SNK, "connection.url": "jdbc:mysql://h:3306/d?x=1"}, NO_RESOLVER).database
        == "jdbc:mysql://h:3306/d"
    )
    url = Ref("${file:/x:url}", "jdbc:postgresql://H/d")
    assert views.sink(
        {**SNK, "connection.url": "${file:/x:url}"}, lambda r: url if r == "${file:/x:url}" else r
    ).database == Ref(  # type: ignore[arg-type]
        "${file:/x:url}", "postgresql://h:5432/d"
    )


def test_the_table_each_topic_lands_in() -> None:
    k = views.sink({**SNK, "collection.name.format": "${topic}", "topics": "a.b,c"}, NO_RESOLVER)
    assert views.tables({**SNK, "topics": "a.b,c"}, k) == {"a.b": "a_b", "c": "c"}
    custom = views.sink({**SNK, "collection.naming.strategy": "io.x.Mine"}, NO_RESOLVER)
    assert views.tables(SNK, custom) == {"t1": None, "t2": None}
    confluent = views.sink({**SNK, "connector.class": CONFLUENT_SINK, "table.name.format": "${topic}"}, NO_RESOLVER)
    assert views.tables(SNK, confluent) == {"t1": "t1", "t2": "t2"}
    routed = {**SNK, "transforms": "r", "transforms.r.type": "io.debezium.transforms.ByLogicalTableRouter"}
    assert views.tables(routed, views.sink(routed, NO_RESOLVER)) == {"t1": None, "t2": None}
    hidden = views.sink({**SNK, "collection.name.format": "${file:/x:t}"}, NO_RESOLVER)
    assert views.tables(SNK, hidden) == {"t1": None, "t2": None}


def test_the_resolver_reads_by_name_and_survives_a_bad_file(tmp_path: Path) -> None:
    secrets = tmp_path / "connect.properties"
    secrets.write_bytes(b"bad=\xff\xfe\nslot=s9\n")
    resolve = Resolver([secrets])
    assert known(resolve("${file:/opt/elsewhere/connect.properties:slot}")) == "s9"  # mounted elsewhere
    assert known(resolve("${file:secrets/unknown.properties:slot}")) is None
    assert known(resolve("${file:slot}")) is None
    assert known(resolve("${file:secrets/connect.properties:bad}")) == "\ufffd\ufffd"


def test_edges_of_the_rules(tmp_path: Path) -> None:
    assert update(SNK, **{"connector.class": "io.Other"}) == ["offsets-lost"]
    assert effects.of_update({}, {"a": "1"}) == ()
    secrets = tmp_path / "connect.properties"
    secrets.write_text("slot=s1\n")
    hidden = {**SRC, "slot.name": "${file:secrets/connect.properties:slot}"}
    assert codes(effects.of_rename(SRC, hidden, Resolver([secrets]))) == []  # resolved: the same slot
    assert codes(effects.of_rename(SRC, hidden)) == ["slot-changed"]
    other_regex = {"transforms.route.regex": "(bob)\\.([^.]+)\\.([^.]+)"}  # the namespace is the same
    assert update(SRC, **other_regex) == ["topics-renamed"]  # but other topics may be routed elsewhere
    assert update(SNK, **{"topics.regex": "x"}) == []  # both set: Connect refuses it; no topic is lost
    excluded = {**SRC, "table.exclude.list": "public.z"}
    assert update(excluded, **{"table.exclude.list": ""}) == []  # fewer excluded: more captured
    assert update(excluded, **{"table.exclude.list": "${file:/x:e}"}) == ["capture-dropped"]
    assert update({**SRC, "table.exclude.list": "${file:/x:e}"}, **{"table.exclude.list": "public.z"}) == [
        "capture-dropped"
    ]
    assert update({**SRC, "table.include.list": "${file:/x:i}"}, **{"table.include.list": ""}) == ["capture-dropped"]
    assert update({**SRC, "skipped.operations": "${file:/x:s}"}, **{"skipped.operations": "t"}) == ["records-filtered"]
    assert update({**SNK, "errors.deadletterqueue.topic.name": ""}, **{"batch.size": "1"}) == []  # dropping before


def test_removing_every_filter_or_field_dropper_lets_more_through() -> None:
    chain = {**SRC, "transforms": "route,f", "transforms.f.type": "org.apache.kafka.connect.transforms.Filter"}
    assert update(chain, transforms="route") == []
    assert codes(effects.of_update(SRC, chain)) == ["records-filtered"]  # one added drops records
    masked = {**SNK, "transforms": "m", "transforms.m.type": "org.apache.kafka.connect.transforms.MaskField$Value"}
    assert update(masked, transforms="") == [] and codes(effects.of_update(SNK, masked)) == ["capture-dropped"]
    keyed = {**SNK, "transforms": "k", "transforms.k.type": "org.apache.kafka.connect.transforms.ValueToKey"}
    assert update(keyed, transforms="") == ["keys-changed"]  # a key transform gone changes the keys


def test_a_pin_moved_is_a_stated_upgrade_naming_both_ends_and_what_runs() -> None:
    pinned = {**SNK, "connector.plugin.version": "3.6.1.Final", "value.converter.plugin.version": "[4.0,)"}
    found = effects.of_update(SNK, pinned, running="3.5.2.Final")
    assert [(e.code, e.why, e.destructive) for e in found if e.code == "plugin-upgrade"] == [
        ("plugin-upgrade", "connector.plugin.version: latest → 3.6.1.Final (runs 3.5.2.Final)", False),
        ("plugin-upgrade", "value.converter.plugin.version: latest → [4.0,)", False),
    ]
    back = effects.of_update(pinned, {**pinned, "connector.plugin.version": " "})
    assert [e.why for e in back] == ["connector.plugin.version: 3.6.1.Final → latest"]
    assert effects.of_update(pinned, {**pinned, "connector.plugin.version": " 3.6.1.Final "}) == ()

"""What each generated connector contains: reference keys, both flavours, both Debezium generations."""

from __future__ import annotations

import json

import pytest

from tests.unit.conftest import Project

MINIMAL = """
cluster: platforms
database: bob
envs: [local]
orgs: [manabie]
secrets_file: /config/secrets.properties
{extra}
pipelines:
  - source_table: users
    sinks:
      - database: auth
{sink_extra}
"""


def generate_one(project: Project, extra: str = "", sink_extra: str = "") -> dict[str, dict[str, str]]:
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    project.write_definition("bob.yaml", MINIMAL.format(extra=extra, sink_extra=sink_extra))
    result = project.generate()
    assert result.code == 0, result.err
    return {json.loads(b)["name"]: json.loads(b)["config"] for b in project.files().values()}


def test_source_has_the_reference_keys(project: Project) -> None:
    src = generate_one(project)["local_manabie_bob_source_connector"]
    assert src["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert src["plugin.name"] == "pgoutput"
    assert src["slot.name"] == "local_manabie_bob"
    assert src["slot.drop.on.stop"] == "false"
    assert src["publication.name"] == "debezium_publication"
    assert src["publication.autocreate.mode"] == "disabled"
    assert src["table.include.list"] == "public.hephaestus_probe,public.users"  # the freshness probe's
    assert src["tombstones.on.delete"] == "true"
    assert src["heartbeat.interval.ms"] == "20000"
    assert "public.debezium_heartbeat" in src["heartbeat.action.query"]
    assert "INSERT INTO public.hephaestus_probe" in src["heartbeat.action.query"]
    assert src["signal.data.collection"] == "public.dbz_signals"
    assert src["incremental.snapshot.chunk.size"] == "512"
    assert src["transforms.route.type"] == "org.apache.kafka.connect.transforms.RegexRouter"
    assert src["transforms.route.replacement"] == "local.manabie.$1.$2.$3"
    assert src["database.password"] == "${file:/config/secrets.properties:bob_password}"
    assert src["notification.enabled.channels"] == "sink,log"


def test_debezium_sink_keys_and_field_intersection(project: Project) -> None:
    sink = generate_one(project)["local_manabie_bob_to_auth_users_sink_connector"]
    assert sink["connector.class"] == "io.debezium.connector.jdbc.JdbcSinkConnector"
    assert sink["topics"] == "local.manabie.bob.public.users,local.manabie.bob.public.hephaestus_probe"
    assert sink["insert.mode"] == "upsert"
    assert sink["primary.key.mode"] == "record_key"
    assert sink["primary.key.fields"] == "user_id,probe_source,probe_sink"
    assert sink["delete.enabled"] == "false"
    assert sink["collection.name.format"] == "${topic}"
    assert sink["transforms.hephaestus_data.replacement"] == "users"
    assert sink["connection.username"] == "${file:/config/secrets.properties:auth_username}"
    # bob.users has internal_note, auth.users does not: the intersection leaves it out.
    fields = sink["field.include.list"].split(",")
    assert "internal_note" not in fields and fields[0] == "user_id" and "deleted_at" in fields
    assert sink["transforms"] == "hephaestus_probe_sink,hephaestus_data,hephaestus_probe"
    off = generate_one(project, extra="probe: {enabled: false}")["local_manabie_bob_to_auth_users_sink_connector"]
    assert off["collection.name.format"] == "users" and off["primary.key.fields"] == "user_id"
    assert off["topics"] == "local.manabie.bob.public.users" and "transforms" not in off


def test_dead_letter_queue_by_default_and_switchable(project: Project) -> None:
    sink = generate_one(project)["local_manabie_bob_to_auth_users_sink_connector"]
    assert sink["errors.tolerance"] == "all"
    assert sink["errors.deadletterqueue.topic.name"] == "dlq.local_manabie_bob_to_auth_users_sink_connector"
    assert sink["errors.deadletterqueue.context.headers.enable"] == "true"
    assert sink["errors.deadletterqueue.topic.replication.factor"] == "3"
    off = generate_one(project, sink_extra="        dlq: false")
    assert "errors.tolerance" not in off["local_manabie_bob_to_auth_users_sink_connector"]


def test_confluent_sink_has_exactly_the_reference_keys_for_3x(project: Project) -> None:
    configs = generate_one(project, extra="sink_defaults: {flavour: confluent, dlq: false}")
    sink = configs["local_manabie_bob_to_auth_users_sink_connector"]
    assert sink == {
        "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "tasks.max": "1",
        "topics": "local.manabie.bob.public.users",
        "connection.url": "${file:/config/secrets.properties:auth_url}",
        "insert.mode": "upsert",
        "pk.mode": "record_value",
        "pk.fields": "user_id",
        "auto.create": "false",
        "auto.evolve": "false",
        "delete.enabled": "false",
        "fields.whitelist": "user_id,name,email,resource_path,created_at,updated_at,deleted_at",
        "transforms": "unwrap,route",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.delete.tombstone.handling.mode": "drop",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": r"([^.]+)\.([^.]+)\.([^.]+)\.([^.]+)\.([^.]+)",
        "transforms.route.replacement": "$5",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
    }


def test_debezium_2x_keeps_the_old_unwrap_keys(project: Project) -> None:
    configs = generate_one(
        project, extra='debezium_version: "2.4"\nsink_defaults: {flavour: confluent}\nsource: {snapshot_mode: never}'
    )
    sink = configs["local_manabie_bob_to_auth_users_sink_connector"]
    assert sink["transforms.unwrap.drop.tombstones"] == "true"
    assert sink["transforms.unwrap.delete.handling.mode"] == "drop"
    assert "transforms.unwrap.delete.tombstone.handling.mode" not in sink
    assert configs["local_manabie_bob_source_connector"]["snapshot.mode"] == "never"


def test_deletes_switchable_per_sink(project: Project) -> None:
    configs = generate_one(project, extra="sink_defaults: {flavour: confluent}", sink_extra="        delete: true")
    sink = configs["local_manabie_bob_to_auth_users_sink_connector"]
    assert sink["delete.enabled"] == "true"
    assert sink["pk.mode"] == "record_key"  # Confluent deletes only by record key
    assert sink["transforms.unwrap.delete.tombstone.handling.mode"] == "tombstone"


def test_avro_converter_with_registry(project: Project) -> None:
    configs = generate_one(project, extra="converter: {format: avro, schema_registry_url: 'http://sr:8081'}")
    src = configs["local_manabie_bob_source_connector"]
    assert src["value.converter"] == "io.confluent.connect.avro.AvroConverter"
    assert src["value.converter.schema.registry.url"] == "http://sr:8081"


APICURIO_KEYS = {
    "apicurio.registry.auto-register": "true",
    "apicurio.registry.find-latest": "true",
    "apicurio.registry.as-confluent": "true",
    "apicurio.registry.use-id": "contentId",  # the id the ccompat API serves: Confluent's readers find it
    "apicurio.registry.headers.enabled": "false",  # the id in the payload (magic byte), not in headers
}


def test_apicurios_converter_writes_confluents_wire_format(project: Project) -> None:
    configs = generate_one(
        project,
        extra="converter: {format: avro, flavour: apicurio, schema_registry_url: 'http://r:8080/apis/registry/v2'}",
    )
    src = configs["local_manabie_bob_source_connector"]
    for side in ("key", "value"):
        assert src[f"{side}.converter"] == "io.apicurio.registry.utils.converter.AvroConverter"
        assert src[f"{side}.converter.apicurio.registry.url"] == "http://r:8080/apis/registry/v2"
        assert {k: src[f"{side}.converter.{k}"] for k in APICURIO_KEYS} == APICURIO_KEYS
        assert f"{side}.converter.schema.registry.url" not in src


def _project_file(project: Project, registry: str) -> str:
    path = project.root / "hephaestus.yaml"
    (project.root / "c").mkdir(exist_ok=True)
    path.write_text(
        f"clusters: {{platforms: {{url: 'http://c:8083', connectors: c, schema_registry_url: '{registry}'}}}}\n"
    )
    return str(path)


@pytest.mark.parametrize(
    "flavour, registry, key, expected",
    [
        ("apicurio", "http://reg:8080/apis/ccompat/v7", "apicurio.registry.url", "http://reg:8080/apis/registry/v2"),
        ("apicurio", "https://r.x/a/apis/ccompat/v6/", "apicurio.registry.url", "https://r.x/a/apis/registry/v2"),
        ("confluent", "http://sr:8081", "schema.registry.url", "http://sr:8081"),
    ],
)
def test_an_avro_definition_naming_no_registry_takes_its_clusters_from_the_project_file(
    project: Project, flavour: str, registry: str, key: str, expected: str
) -> None:
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    project.write_definition(
        "bob.yaml", MINIMAL.format(extra=f"converter: {{format: avro, flavour: {flavour}}}", sink_extra="")
    )
    result = project.generate("--project", _project_file(project, registry))
    assert result.code == 0, result.err
    configs = {json.loads(b)["name"]: json.loads(b)["config"] for b in project.files().values()}
    assert {c[f"value.converter.{key}"] for c in configs.values()} == {expected}


def test_apicurio_from_a_project_url_that_is_not_its_confluent_api_is_refused(project: Project) -> None:
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    project.write_definition(
        "bob.yaml", MINIMAL.format(extra="converter: {format: avro, flavour: apicurio}", sink_extra="")
    )
    result = project.generate("--project", _project_file(project, "http://sr:8081"))
    assert result.code == 1 and not project.files()
    assert "bob.yaml" in result.err and "converter.schema_registry_url" in result.err, result.err
    assert "clusters.platforms.schema_registry_url is not Apicurio's Confluent-compatible API" in result.err


def test_a_topic_sinks_string_key_takes_no_converter_settings(project: Project) -> None:
    kec = project.definitions / "kec.yaml"
    kec.write_text(
        kec.read_text().replace(
            "converter:\n  format: json",
            "converter: {format: avro, flavour: apicurio, schema_registry_url: 'http://r/apis/registry/v2'}",
        )
    )
    assert (result := project.generate()).code == 0, result.err
    configs = {json.loads(b)["name"]: json.loads(b)["config"] for b in project.files().values()}
    sinks = [c for c in configs.values() if c.get("topics", "").endswith("fact_invoice")]
    assert sinks, configs.keys()
    for sink in sinks:
        assert sink["key.converter"] == "org.apache.kafka.connect.storage.StringConverter"
        assert not [k for k in sink if k.startswith("key.converter.")], sink
        assert sink["value.converter.apicurio.registry.url"] == "http://r/apis/registry/v2"


def test_options_are_connect_strings(project: Project) -> None:
    configs = generate_one(
        project, extra="source: {options: {provide.transaction.metadata: true, max.batch.size: 4096}}"
    )
    src = configs["local_manabie_bob_source_connector"]
    assert src["provide.transaction.metadata"] == "true"
    assert src["max.batch.size"] == "4096"


def test_tenant_filter_both_flavours(project: Project) -> None:
    tenant = "        tenant_filter: {field: resource_path, values: ['-2147483645']}"
    dbz = generate_one(project, sink_extra=tenant)["local_manabie_bob_to_auth_users_sink_connector"]
    assert dbz["transforms"] == "tenant,hephaestus_probe_sink,hephaestus_data,hephaestus_probe"
    # The probe has no tenant: the generator's filter lets the probe's topic by.
    assert (dbz["transforms.tenant.predicate"], dbz["transforms.tenant.negate"]) == ("hephaestus_is_probe", "true")
    assert dbz["transforms.tenant.type"] == "io.debezium.transforms.Filter"
    assert "'-2147483645'" in dbz["transforms.tenant.condition"]
    conf = generate_one(project, extra="sink_defaults: {flavour: confluent}", sink_extra=tenant)
    sink = conf["local_manabie_bob_to_auth_users_sink_connector"]
    assert sink["transforms"] == "unwrap,tenant,route"
    assert sink["transforms.tenant.filter.condition"] == "$[?(@.resource_path == '-2147483645')]"


def test_helm_naming_makes_one_templated_file(project: Project) -> None:
    configs = generate_one(project, extra="naming: helm")
    names = set(configs)
    env, org = "{{ .Values.global.environment }}", "{{ .Values.global.vendor }}"
    assert names == {f"{env}_{org}_bob_source_connector", f"{env}_{org}_bob_to_auth_users_sink_connector"}
    assert set(project.files()) == {
        "platforms/source/bob_source_connector.json",
        "platforms/sink/bob_to_auth_users_sink_connector.json",
    }
    assert configs[f"{env}_{org}_bob_source_connector"]["slot.name"] == f"{env}_{org}_bob"


def test_same_table_name_in_two_schemas_never_collides(project: Project) -> None:
    schema = json.loads((project.catalogs / "bob.json").read_text())
    schema["tables"]["archive.users"] = schema["tables"]["public.users"]
    (project.catalogs / "bob.json").write_text(json.dumps(schema))
    auth = json.loads((project.catalogs / "auth.json").read_text())
    auth["tables"]["archive.users"] = auth["tables"]["public.users"]
    (project.catalogs / "auth.json").write_text(json.dumps(auth))
    configs = generate_one(project, sink_extra="  - source_table: archive.users\n    sinks: [{database: auth}]")
    old = configs["local_manabie_bob_to_auth_users_sink_connector"]
    new = configs["local_manabie_bob_to_auth_archive_users_sink_connector"]
    probe = "local.manabie.bob.public.hephaestus_probe"
    assert old["topics"] == f"local.manabie.bob.public.users,{probe}"
    assert new["topics"] == f"local.manabie.bob.archive.users,{probe}"
    assert new["collection.name.format"] == "archive.${topic}"
    assert new["transforms.hephaestus_data.replacement"] == "users"
    src = configs["local_manabie_bob_source_connector"]
    assert src["table.include.list"] == "archive.users,public.hephaestus_probe,public.users"


@pytest.mark.parametrize("table", ["users_copy", "reporting.users"])
def test_renamed_target_table(project: Project, table: str) -> None:
    auth = json.loads((project.catalogs / "auth.json").read_text())
    auth["tables"][table if "." in table else f"public.{table}"] = auth["tables"]["public.users"]
    (project.catalogs / "auth.json").write_text(json.dumps(auth))
    configs = generate_one(project, sink_extra=f"        table: {table}")
    slug = table.replace(".", "_")
    sink = configs[f"local_manabie_bob_to_auth_users_as_{slug}_sink_connector"]
    schema, _, name = table.rpartition(".")
    assert sink["collection.name.format"] == (f"{schema}." if schema else "") + "${topic}"
    assert sink["transforms.hephaestus_data.replacement"] == name


def test_a_capture_only_table_is_in_the_source_with_no_sink(project: Project) -> None:
    """`sinks: []`: captured for ksqlDB (the data-warehouse stack), replicated nowhere."""
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    project.write_definition(
        "bob.yaml", MINIMAL.format(extra="", sink_extra="") + "  - source_table: students\n    sinks: []\n"
    )
    result = project.generate()
    assert result.code == 0, result.err
    configs = {json.loads(b)["name"]: json.loads(b)["config"] for b in project.files().values()}
    captured = configs["local_manabie_bob_source_connector"]["table.include.list"]
    assert captured == "public.hephaestus_probe,public.students,public.users"
    assert sorted(configs) == ["local_manabie_bob_source_connector", "local_manabie_bob_to_auth_users_sink_connector"]


def test_state_and_consent_of_a_definition_go_into_every_file_and_nothing_else(project: Project) -> None:
    generate_one(project, "state: paused\nallow_destructive: true")
    docs = [json.loads(b) for b in project.files().values()]
    assert len(docs) == 2 and all(d["state"] == "paused" and d["allow_destructive"] is True for d in docs)
    generate_one(project)
    assert all(set(json.loads(b)) == {"name", "config"} for b in project.files().values())


def test_consent_must_be_a_boolean(project: Project) -> None:
    project.write_definition("bob.yaml", MINIMAL.format(extra="allow_destructive: 'yes'", sink_extra=""))
    result = project.generate()
    assert result.code == 1 and "bob.yaml" in result.err and "allow_destructive" in result.err


def test_the_freshness_probe_when_a_definition_turns_it_on(project: Project) -> None:
    """generator.probe: the heartbeat writes the probe, the sink routes each topic to its table."""
    tenant = "        tenant_filter: {field: resource_path, values: ['-2147483645']}"
    configs = generate_one(project, extra="probe: {interval_s: 5}", sink_extra=tenant)
    src = configs["local_manabie_bob_source_connector"]
    assert src["table.include.list"] == "public.hephaestus_probe,public.users"
    assert "INSERT INTO public.hephaestus_probe" in src["heartbeat.action.query"]
    assert src["heartbeat.interval.ms"] == "5000"
    sink = configs["local_manabie_bob_to_auth_users_sink_connector"]
    assert sink["topics"] == "local.manabie.bob.public.users,local.manabie.bob.public.hephaestus_probe"
    assert sink["primary.key.fields"] == "user_id,probe_source,probe_sink"
    assert sink["collection.name.format"] == "${topic}"
    assert sink["transforms"] == "tenant,hephaestus_probe_sink,hephaestus_data,hephaestus_probe"
    assert sink["transforms.hephaestus_data.replacement"] == "users"
    # The probe has no tenant: the generator's filter lets the probe's topic by.
    assert (sink["transforms.tenant.predicate"], sink["transforms.tenant.negate"]) == ("hephaestus_is_probe", "true")
    assert sink["transforms.hephaestus_probe_sink.static.value"] == "local_manabie_bob_to_auth_users_sink_connector"
    kafka = "org.apache.kafka.connect.transforms."
    probe = {k: v for k, v in sink.items() if "hephaestus" in k or k in ("predicates", "field.include.list")}
    assert probe == {
        "field.include.list": "user_id,name,email,resource_path,created_at,updated_at,deleted_at,"
        "hephaestus_probe:probed_at,hephaestus_probe:probe_seq,hephaestus_probe:unpublished",
        "predicates": "hephaestus_is_probe",
        "predicates.hephaestus_is_probe.type": kafka + "predicates.TopicNameMatches",
        "predicates.hephaestus_is_probe.pattern": r"local\.manabie\.bob\.public\.hephaestus_probe",
        "transforms.hephaestus_probe_sink.type": kafka + "InsertField$Key",
        "transforms.hephaestus_probe_sink.static.field": "probe_sink",
        "transforms.hephaestus_probe_sink.static.value": "local_manabie_bob_to_auth_users_sink_connector",
        "transforms.hephaestus_probe_sink.predicate": "hephaestus_is_probe",
        "transforms.hephaestus_data.type": kafka + "RegexRouter",
        "transforms.hephaestus_data.regex": r"local\.manabie\.bob\.public\.users",
        "transforms.hephaestus_data.replacement": "users",
        "transforms.hephaestus_probe.type": kafka + "RegexRouter",
        "transforms.hephaestus_probe.regex": r"local\.manabie\.bob\.public\.hephaestus_probe",
        "transforms.hephaestus_probe.replacement": "hephaestus_probe",
    }
    query = src["heartbeat.action.query"].split("; ", 1)[1]
    assert query == (
        "DO $probe$ BEGIN IF to_regclass('public.hephaestus_probe') IS NOT NULL THEN "
        "INSERT INTO public.hephaestus_probe (probe_source, probed_at, probe_seq, unpublished) "
        "VALUES ('local_manabie_bob_source_connector', now(), 1, (SELECT string_agg(t, ',' ORDER BY t) "
        "FROM unnest(ARRAY['public.users']::text[]) AS t WHERE NOT EXISTS (SELECT 1 FROM pg_publication_tables p "
        "WHERE p.pubname = 'debezium_publication' AND p.schemaname || '.' || p.tablename = t))) "
        "ON CONFLICT (probe_source) DO UPDATE SET probed_at = EXCLUDED.probed_at, "
        "probe_seq = public.hephaestus_probe.probe_seq + 1, unpublished = EXCLUDED.unpublished; END IF; END $probe$"
    )


MINE = "        options: {transforms: mine, transforms.mine.type: x}"


@pytest.mark.parametrize(
    ("sink_extra", "extra"),
    [
        (MINE + "\n        dlq: false", ""),  # a transform of theirs that fails on the probe would fail the task
        ("        options: {collection.name.format: t}", ""),  # the probe would land in their table
        ("", "compat: reference\nconverter: {format: json}"),
        ("", "probe: {enabled: false}"),
    ],
)
def test_a_sink_that_cannot_carry_the_probe_is_left_as_it_was(project: Project, sink_extra: str, extra: str) -> None:
    sink = generate_one(project, extra=extra, sink_extra=sink_extra)["local_manabie_bob_to_auth_users_sink_connector"]
    assert "hephaestus_probe" not in sink["topics"] and "probe_sink" not in sink.get("primary.key.fields", "")


def test_a_transform_of_theirs_runs_first_and_meets_the_probe_beside_a_dlq(project: Project) -> None:
    sink = generate_one(project, sink_extra=MINE)["local_manabie_bob_to_auth_users_sink_connector"]
    assert sink["transforms"] == "mine,hephaestus_probe_sink,hephaestus_data,hephaestus_probe"
    listed = "        options: {transforms: ' a , hephaestus_data,b', transforms.a.type: x, transforms.b.type: y}"
    chain = generate_one(project, sink_extra=listed)["local_manabie_bob_to_auth_users_sink_connector"]["transforms"]
    assert chain == "a,b,hephaestus_probe_sink,hephaestus_data,hephaestus_probe"  # theirs first, the probe's once
    assert sink["errors.deadletterqueue.topic.name"]


def test_a_reserved_probe_table_name_is_documented_and_fixed() -> None:
    from hephaestus.generator import probe

    assert probe.TABLE == "hephaestus_probe" and (probe.SOURCE_KEY, probe.SINK_KEY) == ("probe_source", "probe_sink")


def test_a_freshness_threshold_that_would_make_every_pipeline_fresh_is_refused(project: Project) -> None:
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    project.write_definition("bob.yaml", MINIMAL.format(extra="freshness: {max_s: .inf}", sink_extra=""))
    result = project.generate()
    assert result.code == 1 and "freshness.max_s" in result.err and "maximum" in result.err, result.err

"""`hephaestus graph`: the lineage model (pure), the page it is drawn into (escaped, masked,
self-contained), the live overlay, and the command on the shipped example project."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from hephaestus import pg
from hephaestus.cli import run
from hephaestus.graph import journal, render
from hephaestus.graph.connectors import kind_of
from hephaestus.graph.lineage import build
from hephaestus.graph.live import ABSENT, UNREADABLE, change_of, overlay
from hephaestus.graph.model import DeclaredConnector, Edge, KsqlStatement, Lineage, RecordedChange
from hephaestus.state import auditread
from tests.connect_double import ConnectDouble, error, serve
from tests.unit.conftest import REPO
from tests.unit.pgfake import Server, on

PG_SOURCE = "io.debezium.connector.postgresql.PostgresConnector"
JDBC_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
HOSTILE = "</script><img src=x onerror=alert(1)>"


def source(name: str, tables: str, prefix: str = "bob", cluster: str = "platforms", **extra: str) -> DeclaredConnector:
    config = {"connector.class": PG_SOURCE, "database.dbname": prefix, "topic.prefix": prefix}
    return DeclaredConnector(cluster, name, {**config, "table.include.list": tables, **extra}, state="RUNNING")


def sink(
    name: str, cluster: str = "platforms", url: str = "jdbc:postgresql://wh:5432/dwh", **extra: str
) -> DeclaredConnector:
    config = {"connector.class": JDBC_SINK, "connection.url": url, **extra}
    return DeclaredConnector(cluster, name, config, state="RUNNING")


def edges(lineage: Lineage) -> set[tuple[str, str, str]]:
    return {(e.source, e.target, e.via) for e in lineage.edges}


def page_data(html: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="lineage-data">(.*?)</script>', html, re.DOTALL)
    assert found, "the page carries its data"
    return dict(json.loads(found.group(1)))


# --- the model -------------------------------------------------------------------------------


def test_a_sinks_path_runs_from_its_source_table_through_the_source_and_topic_to_its_target() -> None:
    lineage = build(
        [
            source("bob_source", "public.users,orders"),
            sink("users_sink", topics="bob.public.users", **{"collection.name.format": "users"}),
        ],
        dbs={("wh", "5432", "dwh"): "warehouse"},
    )
    users, orders = "table:bob/public.users", "table:bob/public.orders"
    src, snk = "connector:platforms/bob_source", "connector:platforms/users_sink"
    assert edges(lineage) == {
        (users, src, ""),
        (orders, src, ""),
        (src, "topic:bob.public.users", users),
        (src, "topic:bob.public.orders", orders),
        ("topic:bob.public.users", snk, ""),
        (snk, "table:warehouse/public.users", "topic:bob.public.users"),
    }
    # The source captures two tables: the sink's path is the one it reads, not both.
    assert lineage.path(snk) == {users, src, "topic:bob.public.users", snk, "table:warehouse/public.users"}
    assert lineage.path(orders) == {orders, src, "topic:bob.public.orders"}
    assert lineage.node(snk).database == "warehouse" and lineage.node(src).database == "bob"


def test_topics_regex_sinks_read_every_known_topic_they_match_whole() -> None:
    lineage = build(
        [
            source("bob_source", "public.users,public.orders,public.audit"),
            sink("both_sink", **{"topics.regex": r"bob\.public\.(users|orders)"}),
            sink("nothing_sink", **{"topics.regex": r"nowhere\..*"}),
        ]
    )
    both = "connector:platforms/both_sink"
    assert {e.source for e in lineage.edges if e.target == both} == {
        "topic:bob.public.users",
        "topic:bob.public.orders",
    }
    assert {"table:bob/public.users", "table:bob/public.orders"} <= lineage.path(both)
    assert "table:bob/public.audit" not in lineage.path(both)
    assert any("nothing_sink" in w and "matches no topic" in w for w in lineage.warnings)
    assert "topic:~nowhere\\..*" in lineage.path("connector:platforms/nothing_sink")


def test_a_source_whose_include_list_is_a_pattern_writes_the_known_topics_it_matches() -> None:
    lineage = build([source("bob_source", r"public\.user.*"), sink("s", topics="bob.public.users,bob.public.other")])
    pattern = "table:bob/public\\.user.*"
    assert ("connector:platforms/bob_source", "topic:bob.public.users", pattern) in edges(lineage)
    assert not any(e.target == "topic:bob.public.other" and e.via for e in lineage.edges)
    assert any("bob.public.other" in w and "written by nothing" in w for w in lineage.warnings)


def test_regex_routers_name_the_topics_as_kafka_routes_them() -> None:
    route = {
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "([^.]+)\\.([^.]+)\\.([^.]+)",
        "transforms.route.replacement": "local.manabie.$1.$2.$3",
    }
    lineage = build([source("bob_source", "public.users", **route), sink("s", topics="local.manabie.bob.public.users")])
    assert ("connector:platforms/bob_source", "topic:local.manabie.bob.public.users", "table:bob/public.users") in (
        edges(lineage)
    )
    assert lineage.warnings == ()


KSQL = [
    "CREATE STREAM IF NOT EXISTS BOB_USERS (PAYLOAD STRUCT<OP STRING>) "
    "WITH (KAFKA_TOPIC = 'bob.public.users', VALUE_FORMAT = 'JSON');",
    "CREATE STREAM gone WITH (KAFKA_TOPIC = 'bob.public.users') AS SELECT * FROM BOB_USERS;",
    "DROP STREAM IF EXISTS GONE;",
    "CREATE TABLE IF NOT EXISTS `Dim_User` WITH (KAFKA_TOPIC = 'dwh.dim_user', KEY_FORMAT = 'KAFKA') AS "
    "SELECT U.USER_ID, 'FROM nowhere' AS NOTE FROM BOB_USERS U LEFT JOIN bob_students S ON U.USER_ID = S.ID "
    "GROUP BY U.USER_ID EMIT CHANGES;",
    "CREATE TABLE INNER_STEP AS SELECT USER_ID FROM `Dim_User` EMIT CHANGES;",
    "CREATE SINK CONNECTOR IF NOT EXISTS DIM_USER_SINK WITH ('connector.class' = '" + JDBC_SINK + "', "
    "'topics' = 'dwh.dim_user', 'connection.url' = 'jdbc:postgresql://wh:5432/dwh', "
    "'connection.password' = 'canary-ksql-5d2e', 'collection.name.format' = 'public.dim_user');",
]


def test_ksql_streams_and_tables_sit_between_a_source_topic_and_a_sink() -> None:
    statements = [KsqlStatement("lmsdwh", text, f"V000001__x.sql:{i}") for i, text in enumerate(KSQL, 1)]
    lineage = build([source("bob_source", "public.users")], statements)
    ksql_sink = "connector:ksqldb lmsdwh/DIM_USER_SINK"
    assert {
        ("topic:bob.public.users", "ksql:lmsdwh/BOB_USERS", ""),
        ("ksql:lmsdwh/BOB_USERS", "ksql:lmsdwh/Dim_User", ""),
        ("ksql:lmsdwh/BOB_STUDENTS", "ksql:lmsdwh/Dim_User", ""),
        ("ksql:lmsdwh/Dim_User", "topic:dwh.dim_user", ""),
        ("topic:dwh.dim_user", ksql_sink, ""),
        (ksql_sink, "table:wh:5432/dwh/public.dim_user", "topic:dwh.dim_user"),
    } <= edges(lineage)
    ids = {n.id for n in lineage.nodes}
    assert "ksql:lmsdwh/GONE" not in ids and "ksql:lmsdwh/NOWHERE" not in ids, "dropped; a string is no FROM"
    assert "topic:INNER_STEP" not in ids, "a query's topic nothing reads stays out"
    assert {"table:bob/public.users", "connector:platforms/bob_source"} <= lineage.path(ksql_sink)
    config = dict(lineage.node(ksql_sink).config)
    assert config["connection.password"] == "****" and lineage.node(ksql_sink).kind == "sink"
    assert lineage.node("ksql:lmsdwh/BOB_STUDENTS").detail == "ksqlDB stream or table that no migration creates"


def test_clusters_share_one_topic_namespace() -> None:
    lineage = build(
        [
            source("bob_source", "public.users", cluster="platforms"),
            sink("users_to_dwh", cluster="lmsdwh", topics="bob.public.users"),
            sink("users_to_auth", cluster="platforms", topics="bob.public.users"),
        ]
    )
    assert [n.id for n in lineage.nodes if n.kind == "topic"] == ["topic:bob.public.users"]
    path = lineage.path("connector:lmsdwh/users_to_dwh")
    assert "connector:platforms/bob_source" in path and "connector:platforms/users_to_auth" not in path
    assert lineage.node("connector:lmsdwh/users_to_dwh").cluster == "lmsdwh"


def test_other_plugins_are_sources_or_sinks_by_their_class_then_by_reading_topics() -> None:
    mirror = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    assert kind_of({"connector.class": mirror, "topics": "a"}) == "source"
    assert kind_of({"connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": "a"}) == "sink"
    assert kind_of({"connector.class": "com.example.Thing", "topics.regex": "a.*"}) == "sink"
    assert kind_of({"connector.class": "com.example.Thing"}) == "source"
    s3 = DeclaredConnector(
        "c", "s3", {"connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": "bob.public.users"}
    )
    lineage = build([source("bob_source", "public.users"), s3])
    assert lineage.node("connector:c/s3").database == "", "no JDBC URL: no target known"
    assert not any(e.source == "connector:c/s3" for e in lineage.edges)
    assert "table:bob/public.users" in lineage.path("connector:c/s3")


def test_a_sinks_database_is_the_projects_name_whether_its_url_is_a_placeholder_or_literal() -> None:
    """The generator writes `${file:…:<database>_url}`: the key names the database, as the
    source's side names it; a literal URL of another address of a project database is that one."""
    dbs = {("127.0.0.1", "25432", "auth"): "auth", ("127.0.0.1", "25432", "kec"): "kec_dwh"}
    urls = {
        "to_auth": "${file:secrets/c.properties:auth_url}",
        "to_kec": "${file:secrets/c.properties:KEC_DWH_URL}",
        "to_wh": "${env:warehouse_url}",
        "inside": "jdbc:postgresql://postgres:5432/auth?ssl=true",
        "elsewhere": "jdbc:postgresql://wh:5432/dwh",
    }
    sinks = [sink(n, url=u, topics="bob.public.users", **{"collection.name.format": "users"}) for n, u in urls.items()]
    lineage = build([source("bob_source", "public.users"), *sinks], dbs=dbs)
    found = {n.label: n.database for n in lineage.nodes if n.kind == "sink"}
    assert found == {
        "to_auth": "auth",
        "to_kec": "kec_dwh",
        "to_wh": "warehouse",
        "inside": "auth",
        "elsewhere": "wh:5432/dwh",
    }
    tables = {n.id for n in lineage.nodes if n.kind == "table"}
    # A project database is PostgreSQL: a table without a schema lands in public, as a source names it.
    assert {"table:auth/public.users", "table:kec_dwh/public.users", "table:warehouse/users"} <= tables
    assert lineage.node("table:auth/public.users").label == "auth.public.users"


# --- the page --------------------------------------------------------------------------------


def test_hostile_names_stay_text_in_the_page() -> None:
    lineage = build(
        [
            source(f"src {HOSTILE}", f"public.{HOSTILE}", cluster=HOSTILE),
            sink("s<!--", topics=f"bob.public.{HOSTILE}", **{"collection.name.format": HOSTILE}),
        ]
    )
    html = render.page(lineage, None, title=HOSTILE, generated="now")
    assert HOSTILE not in html and "<img" not in html, "inert text (&lt; in HTML, \\u003c in the JSON)"
    assert html.count("</script>") == 4, "the data and three scripts, nothing more"
    assert "<!--" not in html
    labels = {n["label"] for n in page_data(html)["nodes"]}
    assert f"bob.public.{HOSTILE}" in labels and f"src {HOSTILE}" in labels, "the names round-trip unharmed"


def test_the_page_is_self_contained_and_allows_only_its_own_scripts() -> None:
    html = render.page(build([source("a", "t")]), None, title="t", generated="now")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "nothing fetched"
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy and "default-src &#x27;none&#x27;" in policy.group(1)
    assert "unsafe-inline" not in policy.group(1) and "unsafe-eval" not in policy.group(1)
    assert "sourceMappingURL" not in html


def test_the_vendored_files_are_those_the_readme_records_and_ship_in_the_wheel() -> None:
    vendor = REPO / "hephaestus" / "graph" / "vendor"
    readme = (vendor / "README.md").read_text()
    for name in ("cytoscape.min.js", "cytoscape-dagre.min.js"):
        digest = hashlib.sha256((vendor / name).read_bytes()).hexdigest()
        assert f"| `{name}` |" in readme and digest in readme, name
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["hephaestus"]
    shipped = {p.relative_to(REPO / "hephaestus") for pattern in patterns for p in (REPO / "hephaestus").glob(pattern)}
    needed = [*render.VENDORED, "app.js", "app.css", "app.html"]
    assert {Path("graph") / n for n in needed} <= shipped
    assert {p.relative_to(REPO / "hephaestus") for p in vendor.glob("*.LICENSE")} <= shipped


# --- live ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    name: str
    state: str
    tasks: tuple[tuple[int, str], ...] = ()
    problems: tuple[str, ...] = ()
    consumer_lag: int | None = None
    dlq_unresolved: int | None = None
    freshness: str = ""  # status's "" when not judged


@dataclass(frozen=True)
class ClusterView:
    cluster: str
    connectors: tuple[View, ...]
    errors: tuple[str, ...] = ()


def test_the_overlay_reads_status_views_unreadable_clusters_and_the_last_change() -> None:
    lineage = build(
        [
            source("bob_source", "public.users"),
            sink("a", topics="bob.public.users"),
            sink("far", cluster="down", topics="bob.public.users"),
        ]
    )
    views = [
        ClusterView("platforms", (View("a", "RUNNING", ((0, "FAILED"),), ("task 0 FAILED",), 12, 3, "stale 300s"),)),
        ClusterView("down", (), ("cluster down: Kafka Connect 'down': GET /connectors failed",)),
    ]
    change = RecordedChange("2026-01-01T00:00:00+00:00", "update", "ok", "r1")
    over = overlay(lineage, views, {("platforms", "a"): change}, ["audit journal: gone"])
    a = over.health["connector:platforms/a"]
    assert (a.state, a.healthy, a.tasks) == ("RUNNING", False, ((0, "FAILED"),))
    assert ("consumer lag (records)", "12") in a.facts and ("DLQ records unresolved", "3") in a.facts
    assert ("freshness (probe)", "stale 300s") in a.facts  # the probe read back (docs/freshness.md)
    assert over.health["connector:platforms/bob_source"].state == ABSENT
    assert over.health["connector:down/far"].state == UNREADABLE
    assert over.unreadable == {"down": "cluster down: Kafka Connect 'down': GET /connectors failed"}
    assert over.changes == {"connector:platforms/a": change} and over.errors == ("audit journal: gone",)


def test_the_last_change_is_the_last_outcome_never_an_intent(tmp_path: Path) -> None:
    records = [
        {"cluster": "c", "connector": "a", "action": "create", "outcome": "ok", "ts": "1", "run_id": "r1"},
        {"cluster": "c", "connector": "a", "action": "update", "outcome": "failed", "ts": "2", "detail": "boom"},
        {"cluster": "c", "connector": "a", "action": "delete", "outcome": "intent", "ts": "3"},
        {"cluster": "other", "connector": "a", "action": "update", "outcome": "ok", "ts": "4"},
    ]
    path = tmp_path / "audit.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"cut short')
    assert journal.changes_of(auditread.from_file(path, ["c"])) == {
        ("c", "a"): RecordedChange("2", "update", "failed", "", "boom")
    }
    assert change_of({"outcome": "intent"}) is None
    assert auditread.from_file(tmp_path / "none.jsonl", ["c"]) == {}


def test_the_journal_table_is_read_never_created() -> None:
    entry = {"cluster": "c", "connector": "a", "action": "update", "outcome": "ok", "ts": "5", "run_id": "r"}
    database = Server(handlers=[on(r"to_regclass", [(True,)]), on(r"DISTINCT ON", [("c", "a", entry)])])
    with pg.seam(database.connect):
        assert journal.changes_of(auditread.from_table("dbname=state", ["c"])) == {
            ("c", "a"): RecordedChange("5", "update", "ok", "r", "")
        }
    empty = Server(handlers=[on(r"to_regclass", [(False,)])])
    with pg.seam(empty.connect):
        assert auditread.from_table("dbname=state", ["c"]) == {}
    assert not any("CREATE" in s for s in [*database.statements, *empty.statements])


# --- the command -----------------------------------------------------------------------------


def write_project(root: Path, clusters: dict[str, str], files: dict[str, dict[str, Any]], extra: str = "") -> Path:
    lines = ["clusters:"] + [f"  {n}: {{url: '{u}', connectors: connectors/{n}}}" for n, u in clusters.items()]
    (root / "hephaestus.yaml").write_text("\n".join(lines) + "\n" + extra)
    for rel, doc in files.items():
        path = root / "connectors" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc))
    for name in clusters:
        (root / "connectors" / name / "sink").mkdir(parents=True, exist_ok=True)
    return root / "hephaestus.yaml"


def test_no_secret_reaches_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secrets = tmp_path / "connect.properties"
    secrets.write_text("dwh_password=canary-file-9b1d\ndwh_user=canary-user-5e2a\n")
    config = {
        **sink("s", topics="bob.public.users").config,
        "connection.url": "jdbc:postgresql://wh:5432/dwh?user=u",
        "connection.password": f"${{file:{secrets}:dwh_password}}",
        "connection.username": f"${{file:{secrets}:dwh_user}}",
        "errors.deadletterqueue.topic.name": "dlq.s",
    }
    files = {
        "c/source/bob_source.json": {"name": "bob_source", "config": source("x", "public.users").config},
        "c/sink/s.json": {"name": "s", "config": config},
    }
    project = write_project(tmp_path, {"c": "http://127.0.0.1:1"}, files)
    out = tmp_path / "out" / "graph.html"
    assert run(["graph", "--project", str(project), "--output", str(out)]) == 0, capsys.readouterr()
    html = out.read_text()
    for canary in ("canary-file-9b1d", "canary-user-5e2a"):
        assert canary not in html, canary
    shown = dict(next(n for n in page_data(html)["nodes"] if n["label"] == "s")["config"])
    # a placeholder is shown as written: it names where the value is, never the value
    assert shown["connection.password"] == config["connection.password"] and "dlq.s" in shown.values()

    # A file holding a credential itself is refused, as by validate and reconcile: no page at all.
    for key, value in (("connection.password", "canary-pw-3c1f9"), ("connection.url", "jdbc:x://wh/d?password=c-77aa")):
        (tmp_path / "connectors/c/sink/s.json").write_text(json.dumps({"name": "s", "config": {**config, key: value}}))
        out.unlink(missing_ok=True)
        assert run(["graph", "--project", str(project), "--output", str(out)]) == 1
        err = capsys.readouterr().err
        assert f"s.json at config.{key}: holds a plaintext secret" in err and value not in err, err
        assert not out.exists()


def test_a_bad_connector_file_or_an_unknown_cluster_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"c/sink/s.json": {"name": "s", "config": {"connector.class": JDBC_SINK, "tasks.max": 1}}}
    project = write_project(tmp_path, {"c": "http://127.0.0.1:1"}, files)
    assert run(["graph", "--project", str(project), "--output", str(tmp_path / "g.html")]) == 1
    err = capsys.readouterr().err
    assert "s.json at config.tasks.max: must be a string" in err, err
    assert not (tmp_path / "g.html").exists()
    assert run(["graph", "--project", str(project), "--cluster", "nope"]) == 1
    assert "no cluster 'nope' (have: c)" in capsys.readouterr().err


def test_live_shows_each_connectors_health_and_an_unreadable_cluster_as_such(
    served: tuple[ConnectDouble, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    double, url = served
    double.connectors.clear()
    double.add("bob_source", source("x", "public.users").config, type="source")
    double.add("users_sink", sink("x", topics="bob.public.users").config).task_states = ["FAILED"]
    files = {
        "up/source/bob_source.json": {"name": "bob_source", "config": source("x", "public.users").config},
        "up/sink/users_sink.json": {"name": "users_sink", "config": sink("x", topics="bob.public.users").config},
        "up/sink/not_live.json": {"name": "not_live", "config": sink("x", topics="bob.public.users").config},
        "down/sink/far.json": {"name": "far", "config": sink("x", topics="bob.public.users").config},
    }
    refused = ConnectDouble(lambda request, d: error(401, "Unauthorized"))
    with serve(refused) as down:
        project = write_project(tmp_path, {"up": url, "down": down}, files, "audit_log: audit.jsonl\n")
        entry = {"cluster": "up", "connector": "users_sink", "action": "update", "outcome": "ok", "ts": "t1"}
        (tmp_path / "audit.jsonl").write_text(json.dumps(entry) + "\n")
        out = tmp_path / "live.html"
        code = run(["graph", "--project", str(project), "--output", str(out), "--live"])
    captured = capsys.readouterr()
    assert code == 0, captured
    assert "warning: cluster down could not be read" in captured.err
    data = page_data(out.read_text())
    nodes = {n["id"]: n for n in data["nodes"]}
    assert nodes["connector:up/users_sink"]["health"]["tasks"] == [[0, "FAILED"]]
    assert nodes["connector:up/users_sink"]["health"]["healthy"] is False
    assert nodes["connector:up/users_sink"]["change"]["action"] == "update"
    assert nodes["connector:up/bob_source"]["health"]["healthy"] is True
    assert nodes["connector:up/not_live"]["health"]["state"] == ABSENT
    assert nodes["connector:down/far"]["health"]["state"] == UNREADABLE
    assert list(data["unreadable"]) == ["down"] and data["meta"]["live"] is True


def test_the_example_project_is_drawn_across_its_clusters_and_ksqldb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "graph.html"
    assert run(["graph", "--project", str(REPO / "hephaestus.yaml"), "--output", str(out)]) == 0
    assert re.match(r"wrote .*graph\.html \(\d+ KiB\): 12 connectors", capsys.readouterr().out)
    data = page_data(out.read_text())
    nodes = {n["id"]: n for n in data["nodes"]}
    lineage = Lineage((), tuple(Edge(e["source"], e["target"], e["via"]) for e in data["edges"]))
    fact_invoice = "connector:kec/local_manabie_kec_to_kec_dwh_fact_invoice_sink_connector"
    assert {"table:invoicemgmt/public.invoices", "table:invoicemgmt/public.payments"} <= lineage.path(fact_invoice)
    assert "connector:ksqldb lmsdwh/LMSDWH_DIM_USER_SINK" in nodes
    assert {n["cluster"] for n in nodes.values() if n["kind"] == "sink"} == {
        "platforms",
        "lmsdwh",
        "kec",
        "ksqldb lmsdwh",
    }
    assert data["warnings"] == []
    # One database is one name, the project's: a sink's `${file:…:auth_url}` is auth.
    projects = {"bob", "lmsdwh", "auth", "eureka", "fatima", "tokyo_jprep_dwh", "invoicemgmt", "kec_dwh"}
    assert {n["database"] for n in nodes.values() if n["database"]} <= projects
    assert nodes["table:auth/public.users"]["label"] == "auth.public.users"
    # …so the table ksqlDB's sink writes is the one the lmsdwh source reads: one node, one path.
    dim_user = "table:lmsdwh/public.dim_user"
    assert {e.source for e in lineage.edges if e.target == dim_user} == {"connector:ksqldb lmsdwh/LMSDWH_DIM_USER_SINK"}
    assert {e.target for e in lineage.edges if e.source == dim_user} == {
        "connector:lmsdwh/local_manabie_lmsdwh_source_connector"
    }


def test_the_freshness_probe_is_no_lineage() -> None:
    """Its table, topic and sink table stay off the graph; `--live` shows its freshness instead."""
    lineage = build(
        [
            source("bob_source", "public.users,public.hephaestus_probe"),
            sink("a", topics="bob.public.users,bob.public.hephaestus_probe"),
        ]
    )
    assert not [n.id for n in lineage.nodes if "hephaestus_probe" in n.id]
    assert [n.id for n in lineage.nodes if "users" in n.id]


class SilentBroker:
    """A Kafka admin whose brokers never answer: each metadata call records the timeout it was
    given and fails as librdkafka does when it runs out; two calls must be in flight together
    (the clusters probed side by side) or the barrier breaks."""

    def __init__(self, parties: int) -> None:
        self.configs: list[dict[str, Any]] = []
        self.timeouts: list[float] = []
        self.together: list[bool] = []
        self.barrier = threading.Barrier(parties, timeout=10)

    def admin(self, config: dict[str, Any]) -> SilentBroker:
        self.configs.append(config)
        return self

    def list_topics(self, timeout: float) -> Any:
        self.timeouts.append(timeout)
        try:
            self.barrier.wait()
            self.together.append(True)
        except threading.BrokenBarrierError:
            self.together.append(False)
        raise KafkaException(
            KafkaError(KafkaError._TRANSPORT, "Failed to get metadata: Local: Broker transport failure")
        )


def test_live_bounds_each_probe_reads_the_clusters_side_by_side_and_names_what_was_not_reached(
    served: tuple[ConnectDouble, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 48: `graph --live` took 31.7 s for 12 connectors, waiting on an unreachable Kafka
    address cluster after cluster, and said nothing of it. The bound each probe is given is
    observed (what Connect's client and each Kafka call were handed), not the wall clock."""
    from hephaestus import kafka
    from hephaestus.status import run as status_run

    double, url = served
    double.connectors.clear()
    files = {f"{c}/sink/{c}_sink.json": {"name": f"{c}_sink", "config": sink("x").config} for c in "abc"}
    for c in "ab":
        double.add(f"{c}_sink", sink("x").config)
    for rel, doc in files.items():
        (tmp_path / "connectors" / rel).parent.mkdir(parents=True)
        (tmp_path / "connectors" / rel).write_text(json.dumps(doc))
    (tmp_path / "hephaestus.yaml").write_text(
        "clusters:\n"
        + "".join(
            f"  {c}: {{url: '{url}', connectors: connectors/{c}, kafka_bootstrap: 'k:9092', select: ['{c}_*']}}\n"
            for c in "ab"
        )
        + f"  c: {{url: 'http://127.0.0.1:{closed_port()}', connectors: connectors/c}}\n"
    )
    handed: dict[str, float] = {}
    real = status_run.listings

    def listings(clusters: Any, **kw: Any) -> Any:
        handed.update({c.name: c.timeout_s for c in clusters})
        return real(clusters, **kw)

    monkeypatch.setattr(status_run, "listings", listings)
    broker = SilentBroker(parties=2)
    double.log.clear()
    with kafka.seam(admin=broker.admin):
        code = run(
            ["graph", "--project", str(tmp_path / "hephaestus.yaml"), "--output", str(tmp_path / "g.html"), "--live"]
        )
    captured = capsys.readouterr()
    assert code == 0, captured

    bound = status_run.LOOK_S
    assert handed == {"a": bound, "b": bound, "c": bound}, "each Connect request bounded (30 s by default)"
    assert broker.timeouts == [bound, bound] and all(c["socket.timeout.ms"] == bound * 1000 for c in broker.configs)
    assert broker.together == [True, True], "the clusters' probes ran side by side"
    # Each cluster asked once for its health and once for its listing (docs/graph.md).
    assert sorted(p for m, p in double.log) == ["/connectors", "/connectors", "/health", "/health"]

    err = captured.err
    for c in "ab":
        assert f"warning: cluster {c}: not read: kafka: cannot reach Kafka at k:9092 within {bound:g} s" in err, err
    assert "warning: cluster c could not be read: cluster c: Kafka Connect 'c': GET /health failed: no response" in err
    data = page_data((tmp_path / "g.html").read_text())
    assert list(data["unreadable"]) == ["c"]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

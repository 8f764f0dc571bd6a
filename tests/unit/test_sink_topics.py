"""A sink never starts before its topics exist (issue 33, part 3; strimzi#2752): the pure check
(which topics are missing, which source writes them, the refusal, the regex warning), and the
apply path over the Connect double with a fake Kafka admin (topics created with the source's
settings before the sink, "already exists" is done, a failure fails that sink only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hephaestus import kafka
from hephaestus.classes import POSTGRES_SOURCE as POSTGRES
from hephaestus.reconciler import sinktopics
from hephaestus.reconciler.plan import Desired, Held, Live, Plan, Policy, Scope, plan
from hephaestus.safety.values import NO_RESOLVER
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project
from tests.unit.kafkafake import Cluster

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
SRC = {
    "connector.class": POSTGRES,
    "slot.name": "s1",
    "topic.prefix": "bob",
    "transforms": "route",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "([^.]+)\\.([^.]+)\\.([^.]+)",
    "transforms.route.replacement": "local.manabie.$1.$2.$3",
    "topic.creation.default.partitions": "3",
    "topic.creation.default.replication.factor": "1",
    "topic.creation.default.cleanup.policy": "compact",
}
USERS = "local.manabie.bob.public.users"


def sink(topics: str) -> dict[str, str]:
    return {"connector.class": SINK, "topics": topics}


def planned(desired: dict[str, dict[str, str]], live: dict[str, Live] | None = None) -> tuple[Plan, dict[str, Live]]:
    live = live or {}
    wanted = {n: Desired(n, c) for n, c in desired.items()}
    return plan("c", wanted, live, Policy(), Scope(frozenset(live))), live


def test_only_the_topics_a_sink_starts_to_read_are_checked() -> None:
    before = Live("k", sink("a,b"), "sink", "RUNNING")
    p, live = planned({"n": sink("a, b"), "k": sink("a,b,c")}, {"k": before})
    assert sinktopics.starting(p, live) == {"n": ("a", "b"), "k": ("c",)}
    p, live = planned({"k": {**sink("a,b"), "batch.size": "9"}}, {"k": before})
    assert sinktopics.starting(p, live) == {}  # an update reading nothing new


def test_a_missing_topic_a_planned_source_writes_is_needed_with_its_settings() -> None:
    p, live = planned({"src": SRC, "k": sink(f"{USERS},there")})
    found = sinktopics.checked(p, live, frozenset({"there"}), NO_RESOLVER)
    (need,) = found.needs
    assert (need.sink, need.topics, need.source) == ("k", (USERS,), "src")
    assert (need.partitions, need.replication, need.config) == (3, 1, (("cleanup.policy", "compact"),))
    assert found.refusals == () and need.describe() == f"needs topics {USERS} (written by src): created before the sink"


def test_a_live_source_writes_too_and_absent_or_minus_one_settings_are_the_brokers() -> None:
    live_src = {**SRC, "topic.creation.default.partitions": "-1"}
    del live_src["topic.creation.default.replication.factor"]
    p, live = planned({"k": sink(USERS)}, {"src": Live("src", live_src, "source", "RUNNING")})
    (need,) = sinktopics.checked(p, live, frozenset(), NO_RESOLVER).needs
    assert (need.source, need.partitions, need.replication) == ("src", -1, -1)


def test_a_table_the_source_does_not_capture_is_not_its_topic() -> None:
    only_users = {**SRC, "table.include.list": "public.users,public.user_.*"}
    typo = "local.manabie.bob.public.userz"
    p, live = planned({"src": only_users, "k": sink(f"{USERS},{typo},local.manabie.bob.public.USER_groups")})
    found = sinktopics.checked(p, live, frozenset(), NO_RESOLVER)
    # A typo under its namespace: the sink is held (its needs go with it), the source is written.
    assert found.held == (Held("k", sinktopics.unwritten([typo])),) and found.refusals == ()
    assert found.needs == () and [s.name for s in found.writes] == ["src"]


def test_a_missing_topic_nothing_writes_holds_back_only_that_sink_naming_it_and_the_topics() -> None:
    """Issue 48: a refusal holds back only what depends on it; the source and the other sink go."""
    p, live = planned({"src": SRC, "k": sink(f"{USERS},typo.users,other.t"), "ok": sink("there")})
    found = sinktopics.checked(p, live, frozenset({"there"}), NO_RESOLVER)
    assert found.refusals == ()
    assert [h.describe() for h in found.held] == [
        "held k: reads topics that do not exist and that no source or ksqlDB migration writes: typo.users, "
        "other.t: create them, or deploy what writes them first"
    ]
    assert [s.name for s in found.writes] == ["ok", "src"] and found.needs == ()


MIGRATED = "local.manabie.kec.fact_invoice"
BY = "kec V000002__fact_invoice.sql:41"


def test_a_topic_a_ksqldb_migration_writes_holds_the_sink_waiting_for_that_migration() -> None:
    p, live = planned({"src": SRC, "k": sink(MIGRATED)})
    found = sinktopics.checked(p, live, frozenset(), NO_RESOLVER, {MIGRATED: BY})
    (held,) = found.held
    assert (held.name, held.migration) == ("k", BY) and found.refusals == ()
    assert f"which ksqlDB migration {BY} writes" in held.why and "hephaestus ksql apply" in held.why
    assert [s.name for s in found.writes] == ["src"]
    # Two topics of two migrations: both named, each once.
    p, live = planned({"k": sink(f"{MIGRATED},other")})
    (held,) = sinktopics.checked(p, live, frozenset(), NO_RESOLVER, {MIGRATED: BY, "other": "kec V3__o.sql:1"}).held
    assert held.why.startswith(f"reads {MIGRATED}, other, which ksqlDB migration {BY}, kec V3__o.sql:1 writes")
    # One topic a migration writes and one nothing writes: nothing to wait for, only to fix.
    p, live = planned({"k": sink(f"{MIGRATED},typo")})
    (held,) = sinktopics.checked(p, live, frozenset(), NO_RESOLVER, {MIGRATED: BY}).held
    assert held.migration == "" and held.why == sinktopics.unwritten(["typo"])


def test_a_sealed_plan_is_exact_so_a_sink_whose_topic_is_missing_refuses_it() -> None:
    p, live = planned({"src": SRC, "k": sink("typo.users")})
    found = sinktopics.checked(p, live, frozenset(), NO_RESOLVER, exact=True)
    assert found.held == () and found.refusals == (sinktopics.refusal("k", ["typo.users"]),)
    assert [s.name for s in found.writes] == ["k", "src"]


def test_a_regex_sink_matching_no_topic_is_a_warning_and_without_kafka_one_warning() -> None:
    p, live = planned({"r": {"connector.class": SINK, "topics.regex": "local\\..*"}})
    assert sinktopics.checked(p, live, frozenset({"other"}), NO_RESOLVER).warnings == (
        "sink r: its topics.regex 'local\\\\..*' matches no existing topic yet (it reads nothing until one does)",
    )
    assert sinktopics.checked(p, live, frozenset({"local.x"}), NO_RESOLVER).warnings == ()
    p, live = planned({"a": sink("x"), "b": sink("y")})
    assert sinktopics.unchecked(p, live, "no kafka_bootstrap").warnings == (
        "sinks a, b: their topics were not checked: no kafka_bootstrap",
    )


# Over the Connect double, with a fake Kafka admin.


@pytest.fixture()
def broker() -> Iterator[Cluster]:
    found = Cluster()
    found.add("there", 0, 0)
    with kafka.seam(admin=found.admin):
        yield found


def fleet(project: Project, served: tuple[ConnectDouble, str], connectors: dict[str, dict[str, str]]) -> ConnectDouble:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    double.on_start.clear()
    for name, config in connectors.items():
        folder = project.root / "connectors/c" / ("source" if config["connector.class"] == POSTGRES else "sink")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config}))
    (project.root / "hephaestus.yaml").write_text(
        f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\n    kafka_bootstrap: 127.0.0.1:1\n"
        "policy: {stability_window_s: 0}\naudit_log: audit.jsonl\n"
    )
    return double


def cli(project: Project, *args: str) -> Any:
    return project.cli("reconcile", "--project", str(project.root / "hephaestus.yaml"), "--output", "json", *args)


def audit(project: Project) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project.root / "audit.jsonl").read_text().splitlines()]


def test_a_sink_reading_a_topic_nothing_writes_is_held_the_rest_applied_and_exit_2(
    project: Project, served: tuple[ConnectDouble, str], broker: Cluster
) -> None:
    double = fleet(project, served, {"k": sink("typo.users"), "ok": sink("there")})
    out = cli(project, "--auto-approve")
    assert out.code == 2, out.err  # an apply in part: not 0
    (cluster,) = json.loads(out.out)["clusters"]
    assert [h["name"] for h in cluster["held"]] == ["k"] and "typo.users" in cluster["held"][0]["why"]
    assert cluster["refused"] is None
    assert [w for w in double.writes() if w[0] == "POST"] == [("POST", "/connectors")]
    assert set(double.connectors) == {"ok"} and broker.created == []


def test_a_sink_a_migration_feeds_waits_for_it_naming_it_and_a_dry_run_is_not_refused(
    project: Project, served: tuple[ConnectDouble, str], broker: Cluster
) -> None:
    double = fleet(project, served, {"k": sink(MIGRATED), "ok": sink("there")})
    folder = project.root / "ksql_migrations" / "kec"
    folder.mkdir(parents=True)
    (folder / "V000001__fact.sql").write_text(
        "CREATE STREAM S (ID INT) WITH (KAFKA_TOPIC='in', VALUE_FORMAT='JSON', PARTITIONS=1);\n"
        f"CREATE TABLE FACT_INVOICE WITH (KAFKA_TOPIC='{MIGRATED}', VALUE_FORMAT='JSON') AS\n"
        "  SELECT ID, COUNT(*) AS N FROM S GROUP BY ID;\n"
    )
    with (project.root / "hephaestus.yaml").open("a") as f:
        f.write("ksqldb:\n  kec:\n    url: http://127.0.0.1:1\n    migrations: ksql_migrations/kec\n")
    dry = cli(project, "--dry-run")
    assert dry.code == 0, dry.out + dry.err  # the deploy runs the migrations first
    (cluster,) = json.loads(dry.out)["clusters"]
    assert cluster["held"] == [{"name": "k", "migration": "kec V000001__fact.sql:2", "why": cluster["held"][0]["why"]}]
    assert cluster["counts"]["create"] == 1
    applied = cli(project, "--auto-approve")
    assert applied.code == 2, applied.out + applied.err
    assert set(double.connectors) == {"ok"}


def test_the_topic_is_created_with_the_sources_settings_before_the_sink(
    project: Project, served: tuple[ConnectDouble, str], broker: Cluster
) -> None:
    double = fleet(project, served, {"src": SRC, "k": sink(f"{USERS},there")})
    seen: list[tuple[str, list[tuple[str, str]]]] = []
    broker.on_create = lambda t: seen.append((t, double.writes()))
    shown = cli(project, "--dry-run")
    (cluster,) = json.loads(shown.out)["clusters"]
    assert cluster["needs"] == [
        {"sink": "k", "topics": [USERS], "source": "src", "why": f"needs topics {USERS} (written by src): "
         "created before the sink"}
    ]  # fmt: skip
    text = project.cli("reconcile", "--project", str(project.root / "hephaestus.yaml"), "--dry-run").out
    assert f"  + create k\n      needs topics {USERS} (written by src): created before the sink\n" in text
    out = cli(project, "--auto-approve")
    assert out.code == 0, out.out + out.err
    assert broker.created == [(USERS, 3, 1, {"cleanup.policy": "compact"})]
    assert seen == [(USERS, [("POST", "/connectors")])]  # the source only: the sink came after
    assert [p for _, p in double.writes()] == ["/connectors", "/connectors"]
    made = [(e["connector"], e["outcome"], e["detail"]) for e in audit(project) if e["action"] == "create-topic"]
    assert made == [("k", "intent", ""), ("k", "ok", "created")]


def test_already_exists_is_done_and_a_failure_fails_that_sink_only(
    project: Project, served: tuple[ConnectDouble, str], broker: Cluster
) -> None:
    other = "local.manabie.bob.public.other"
    double = fleet(project, served, {"src": SRC, "k": sink(USERS), "j": sink(other)})
    broker.refuse_create[other] = "policy violation: no topics today"
    original = broker.admin

    def admin(config: dict[str, Any]) -> Any:
        if len(broker.configs) == 1:  # after the plan's listing, the source's first record made its topic
            broker.add(USERS, 0, 1)
        return original(config)

    with kafka.seam(admin=admin):
        out = cli(project, "--auto-approve")
    assert out.code == 1
    results = {r["name"]: r for r in json.loads(out.out)["clusters"][0]["results"]}
    assert results["k"]["ok"] and results["src"]["ok"]
    assert not results["j"]["ok"] and results["j"]["detail"].startswith(f"not applied: topic {other} not created: ")
    assert "no topics today" in results["j"]["detail"]
    assert ("PUT", "/connectors/j/config") not in double.writes() and len(double.writes()) == 2
    made = [(e["connector"], e["outcome"], e["detail"]) for e in audit(project) if e["action"] == "create-topic"]
    assert ("k", "ok", "already exists") in made and ("j", "failed", "policy violation: no topics today") in made


def test_a_sources_creation_settings_are_read_as_connect_reads_them() -> None:
    bare = sinktopics.need("k", ("t",), "src", {"connector.class": POSTGRES})
    assert (bare.partitions, bare.replication, bare.config) == (-1, -1, ())  # the broker's defaults
    odd = {
        "topic.creation.default.partitions": "0",
        "topic.creation.default.replication.factor": "-5",
        "topic.creation.default.include": "x.*",  # which topics the group takes, not a topic setting
        "topic.creation.default.exclude": "y.*",
        "topic.creation.default.retention.ms": " ",  # blank: not set
        "topic.creation.default.min.insync.replicas": "1",
    }
    found = sinktopics.need("k", ("t",), "src", odd)
    assert (found.partitions, found.replication, found.config) == (-1, -1, (("min.insync.replicas", "1"),))


def test_a_pattern_python_cannot_read_is_given_the_benefit_of_the_doubt() -> None:
    p, live = planned(
        {
            "src": {**SRC, "table.include.list": "public.(users"},
            "k": sink(USERS),
            "r": {**sink(""), "topics.regex": "a(b"},
        }
    )
    found = sinktopics.checked(p, live, frozenset(), NO_RESOLVER)
    assert [n.sink for n in found.needs] == ["k"] and found.refusals == ()
    assert not any("topics.regex" in w for w in found.warnings)  # no warning on a guess


def test_only_a_source_writes_topics() -> None:
    odd_sink = {**sink("x"), "topic.prefix": "bob"}  # a sink's own keys never make it a writer
    p, live = planned({"k": sink("bob.public.users")}, {"odd": Live("odd", odd_sink, "sink", "RUNNING")})
    found = sinktopics.checked(p, live, frozenset(), NO_RESOLVER)
    assert found.held == (Held("k", sinktopics.unwritten(["bob.public.users"])),)

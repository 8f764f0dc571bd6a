"""The one gate (safety.gate) and the fleet's rules (safety.fleet): what is refused, with which
words, and what an allowance lets through (mutation-tested core)."""

from __future__ import annotations

import pytest

from hephaestus.classes import DEBEZIUM_SINK, POSTGRES_SOURCE
from hephaestus.errors import InputError
from hephaestus.safety import fleet
from hephaestus.safety.effects import Effect
from hephaestus.safety.gate import (
    Allow,
    Cleared,
    DeletePolicy,
    Deletes,
    Item,
    Refused,
    allow_of,
    allowable,
    check,
    clear,
    judge,
    passed,
)
from hephaestus.safety.values import NO_RESOLVER, Resolver

RESNAP = Effect("resnapshot", "snapshot.mode=always")
REDELIVER = Effect("redelivery", "again")
WRITER = Effect("second-writer", "slot s is also b's", invariant=True)


def test_allowances_parse_and_refuse_unknown_codes() -> None:
    assert allow_of(None) == Allow() and allow_of(False) == Allow() and allow_of("") == Allow()
    assert allow_of(True) == Allow(every=True) and allow_of("all") == Allow(every=True)
    assert allow_of("resnapshot, slot-dropped") == Allow(frozenset({"resnapshot", "slot-dropped"}))
    assert allow_of(["keys-changed"]) == Allow(frozenset({"keys-changed"}))
    for wrong in ("nope", "second-writer", "not-owned", "redelivery", ["resnapshot", "x"], []):
        with pytest.raises(InputError) as err:
            allow_of(wrong, "f.json", "allow_destructive")
        assert err.value.file == "f.json" and err.value.field == "allow_destructive"
    assert "resnapshot" in allowable() and "second-writer" not in allowable() and "redelivery" not in allowable()
    assert (Allow(frozenset({"a"})) | Allow(frozenset({"b"}))) == Allow(frozenset({"a", "b"}))
    assert (Allow() | Allow(every=True)).every and Allow(every=True).describe() == "all"
    assert Allow(frozenset({"b", "a"})).describe() == "a,b"


def test_a_destructive_effect_is_refused_unless_allowed_by_flag_code_file_or_consent() -> None:
    item = Item("c", "src", "update", (RESNAP, REDELIVER), from_file=True)
    (refusal,) = judge([item]).refusals
    assert (refusal.cluster, refusal.name) == ("c", "src")
    assert refusal.message == (
        "destructive update of src (resnapshot: snapshot.mode=always): rerun with --allow-destructive=resnapshot "
        "(or --allow-destructive), or set allow_destructive in its file"
    )
    assert judge([item], Allow(every=True)).refusals == ()
    assert judge([item], allow_of("resnapshot")).refusals == ()
    assert judge([item], allow_of("slot-dropped")).refusals != ()
    assert judge([Item("c", "src", "update", (RESNAP,), allow_of(True))]).refusals == ()
    assert judge([item], consent=frozenset({"resnapshot"})).refusals == ()
    plain = Item("c", "o", "offsets reset", (RESNAP,))
    assert judge([plain]).refusals[0].message.endswith("(or --allow-destructive)")  # no file to consent in


def test_a_fleet_rule_is_refused_whatever_is_allowed_or_consented() -> None:
    item = Item("c", "new", "create", (WRITER,), allow_of(True))
    for verdict in (judge([item], Allow(every=True)), judge([item], consent=frozenset({"second-writer"}))):
        (refusal,) = verdict.refusals
        assert refusal.message == (
            "create new refused: second-writer: slot s is also b's (a fleet rule: never allowed)"
        )


def test_the_verdict_reads_one_line_per_cluster() -> None:
    items = [Item("a", f"s{i}", "update", (RESNAP,)) for i in range(3)] + [Item("b", "x", "update", ())]
    verdict = judge(items)
    assert len(verdict.refused("a")) == 3 and verdict.refused("b") == () and verdict.reason("b") == ""
    assert verdict.reason("a").startswith("destructive update of s0 (") and verdict.reason("a").endswith(
        "(and 2 more refused)"
    )
    assert judge(items[:1]).reason("a").endswith("(or --allow-destructive)")


@pytest.mark.parametrize(
    "deletes, owned, git, policy, refused",
    [
        (10, 30, True, DeletePolicy(max_deletes=10), ""),
        (11, 30, True, DeletePolicy(max_deletes=10), "would delete 11 connectors (more than 10); rerun with --force"),
        (2, 4, True, DeletePolicy(max_share=0.5), ""),
        (
            3,
            4,
            True,
            DeletePolicy(max_share=0.5),
            "would delete 3 of 4 owned sinks (more than 50%); rerun with --force",
        ),
        (1, 4, True, DeletePolicy(max_deletes=0), "would delete 1 connectors (more than 0); rerun with --force"),
        (
            2,
            2,
            False,
            DeletePolicy(max_share=1.0),
            "git has no JDBC sink for this cluster (its sink folder is empty or missing) while 2 owned sinks run: "
            "deleting 2 of them needs --force",
        ),
        (30, 30, False, DeletePolicy(force=True), ""),
        (0, 0, False, DeletePolicy(max_deletes=0), ""),
        (
            1,
            0,
            True,
            DeletePolicy(max_share=0.5),
            "would delete 1 of 0 owned sinks (more than 50%); rerun with --force",
        ),
    ],
)
def test_the_delete_policy(deletes: int, owned: int, git: bool, policy: DeletePolicy, refused: str) -> None:
    verdict = judge([], deletes=[Deletes("c", deletes, owned, git)], policy=policy)
    assert verdict.reason("c") == refused
    assert all(r.name == "" for r in verdict.refusals)


def test_only_the_gate_hands_out_a_pass() -> None:
    with pytest.raises(TypeError, match="handed out by safety.gate.clear only"):
        Cleared("c", ())
    ok = Item("c", "a", "update", (REDELIVER,))
    bad = Item("c", "b", "update", (RESNAP,))
    other = Item("d", "x", "update", ())
    with pytest.raises(Refused, match="destructive update of b") as err:
        clear(judge([ok, bad, other]), "c")
    assert err.value.exit_code == 2
    assert clear(judge([ok, bad, other]), "d").names() == frozenset({"x"})
    assert passed(judge([ok, bad, other]), "c").names() == frozenset({"a"})
    assert check([ok]).names() == frozenset({"a"}) and check([ok]).cluster == "c" and check([]).items == ()
    with pytest.raises(Refused):
        check([bad])
    assert check([bad], consent=frozenset({"resnapshot"})).names() == frozenset({"b"})


# --- the fleet's rules ------------------------------------------------------------------------


def src(slot: str = "s1", prefix: str = "bob", db: str = "bob", **extra: str) -> dict[str, str]:
    return {
        "connector.class": POSTGRES_SOURCE,
        "database.hostname": "db",
        "database.dbname": db,
        "topic.prefix": prefix,
        **({"slot.name": slot} if slot else {}),
        **extra,
    }


def snk(topics: str = "t1", table: str = "users", db: str = "auth", **extra: str) -> dict[str, str]:
    return {
        "connector.class": DEBEZIUM_SINK,
        "connection.url": f"jdbc:postgresql://db/{db}",
        "topics": topics,
        "collection.name.format": table,
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "primary.key.fields": "id",
        **extra,
    }


def judged(
    before: list[fleet.Member], *changes: fleet.FleetChange, kafka: dict[str, str | None] | None = None
) -> dict[str, list[str]]:
    found = fleet.judge(before, list(changes), NO_RESOLVER, kafka or {})
    return {f"{c}/{n}": [f"{e.code}: {e.why}" for e in es] for (c, n), es in found.items()}


def test_two_sources_never_share_a_slot_counting_debeziums_default() -> None:
    live = [fleet.Member("a", "old", src(slot=""))]
    assert judged(live, fleet.FleetChange("b", "new", src(slot="", prefix="p2"))) == {
        "b/new": ["second-writer: replication slot debezium is also a/old's"]  # issue 29: the default name
    }
    assert judged(live, fleet.FleetChange("b", "new", src(slot="s2", prefix="p2"))) == {}
    assert judged(live, fleet.FleetChange("b", "new", src(slot="", prefix="p2", db="other"))) == {}  # another database
    # a rename takes the old one's place: no second writer
    assert judged(live, fleet.FleetChange("a", "new", src(slot=""), "old")) == {}
    # an update that keeps the slot it had is not judged again, even beside an old clash
    clash = [fleet.Member("a", "x", src()), fleet.Member("a", "y", src(prefix="p2"))]
    assert judged(clash, fleet.FleetChange("a", "x", src(**{"heartbeat.interval.ms": "5"}))) == {}


def test_two_sources_never_write_one_topic_namespace_on_one_kafka() -> None:
    routed = {
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "([^.]+)\\.([^.]+)\\.([^.]+)",
        "transforms.route.replacement": "local.org.$1.$2.$3",
    }
    live = [fleet.Member("a", "old", src(**routed), "k1")]
    assert judged(live, fleet.FleetChange("a", "new", src(slot="s2", **routed)), kafka={"a": "k1"}) == {
        "a/new": ["second-writer: topics local.org.bob.* are also written by a/old"]
    }
    other = {**routed, "transforms.route.replacement": "local.jprep.$1.$2.$3"}
    assert judged(live, fleet.FleetChange("a", "new", src(slot="s2", **other)), kafka={"a": "k1"}) == {}
    assert (
        judged(live, fleet.FleetChange("b", "new", src(slot="s2", **routed)), kafka={"b": "k2"}) == {}
    )  # another Kafka
    assert (
        judged(live, fleet.FleetChange("b", "new", src(slot="s2", **routed)), kafka={}) != {}
    )  # unknown: may be the same


def test_two_sinks_never_write_one_table_from_one_topic_or_with_other_keys() -> None:
    live = [fleet.Member("a", "old", snk())]
    assert judged(live, fleet.FleetChange("a", "new", snk())) == {
        "a/new": ["second-writer: table users is also written by a/old, from the same topic t1"]
    }
    assert judged(live, fleet.FleetChange("a", "new", snk(topics="t2"))) == {}  # a fan-in of the same semantics
    assert judged(live, fleet.FleetChange("a", "new", snk(topics="t2", **{"primary.key.fields": "id,org"}))) == {
        "a/new": ["second-writer: table users is also written by a/old, with other key semantics"]
    }
    assert judged(live, fleet.FleetChange("a", "new", snk(db="other"))) == {}
    assert judged(live, fleet.FleetChange("a", "new", snk(table="people"))) == {}
    regex = {k: v for k, v in snk().items() if k != "topics"} | {"topics.regex": "t.*"}
    assert judged(live, fleet.FleetChange("a", "new", regex)) == {
        "a/new": ["second-writer: table users is also written by a/old, from the same topic t1"]
    }
    twin = [fleet.Member("a", "r1", regex)]
    assert judged(twin, fleet.FleetChange("a", "r2", regex)) == {
        "a/r2": ["second-writer: topics.regex t.* is also read into the same tables by a/r1"]
    }
    nowhere = {k: v for k, v in snk().items() if k != "connection.url"}
    assert judged(live, fleet.FleetChange("a", "new", nowhere)) == {}  # no URL: writes nowhere (refused by Connect)


def test_a_sink_taking_over_a_table_with_other_keys_changes_its_keys() -> None:
    """Issue 29: a sink renamed without renamed_from while its primary key changes."""
    live = [fleet.Member("a", "old", snk())]
    other_keys = snk(**{"primary.key.fields": "id,org"})
    assert judged(live, fleet.FleetChange("a", "old", None), fleet.FleetChange("a", "new", other_keys)) == {
        "a/new": ["keys-changed: takes over the table old wrote, with other key semantics"]
    }
    assert judged(live, fleet.FleetChange("a", "old", None), fleet.FleetChange("a", "new", snk())) == {}
    assert judged(live, fleet.FleetChange("a", "new", other_keys, "old")) == {}  # a rename is judged as an update


def test_planned_members_count_and_resolved_placeholders_decide(tmp_path: object) -> None:
    from pathlib import Path

    secrets = Path(str(tmp_path)) / "s.properties"
    secrets.write_text("slot=shared\n")
    planned = [fleet.Member("b", "git_only", src(slot="shared", prefix="p9"))]
    hidden = src(slot="${file:secrets/s.properties:slot}")  # as the workers see it
    assert judged(planned, fleet.FleetChange("a", "new", hidden)) == {}  # unresolved: taken as written, unlike "shared"
    found = fleet.judge(planned, [fleet.FleetChange("a", "new", hidden)], Resolver([secrets]), {})
    assert [e.code for e in found[("a", "new")]] == ["second-writer"]
    assert fleet.after(planned, [fleet.FleetChange("b", "git_only", None)], {}) == []


def test_an_update_is_judged_on_the_claims_it_adds_only() -> None:
    routed = {
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "ns.$1",
    }
    clash = [fleet.Member("a", "x", src()), fleet.Member("a", "y", src(prefix="p2"))]  # already share slot s1
    assert judged(clash, fleet.FleetChange("a", "x", src(slot="s2", prefix="p2"))) == {
        "a/x": ["second-writer: topics p2.* are also written by a/y"]  # a new namespace, judged
    }
    moved = [fleet.Member("a", "x", src(slot="s1")), fleet.Member("a", "y", src(slot="s2", prefix="p2"))]
    assert judged(moved, fleet.FleetChange("a", "x", src(slot="s2"))) == {
        "a/x": ["second-writer: replication slot s2 is also a/y's"]
    }
    same_ns = [fleet.Member("a", "x", src(**routed)), fleet.Member("a", "y", src(slot="s2", prefix="q", **routed))]
    assert judged(same_ns, fleet.FleetChange("a", "x", src(**routed, **{"heartbeat.interval.ms": "5"}))) == {}
    sinks = [fleet.Member("a", "s", snk(topics="t1")), fleet.Member("a", "o", snk(topics="t2"))]
    assert judged(sinks, fleet.FleetChange("a", "s", snk(topics="t1,t2"))) == {
        "a/s": ["second-writer: table users is also written by a/o, from the same topic t2"]
    }
    assert judged(sinks, fleet.FleetChange("a", "s", snk(topics="t1", **{"batch.size": "1"}))) == {}
    keyed = [fleet.Member("a", "s", snk(topics="t1")), fleet.Member("a", "o", snk(topics="t2"))]
    assert judged(keyed, fleet.FleetChange("a", "s", snk(topics="t1", **{"primary.key.fields": "id,x"}))) == {
        "a/s": ["second-writer: table users is also written by a/o, with other key semantics"]
    }
    regex = {k: v for k, v in snk().items() if k != "topics"}
    r1, r2 = {**regex, "topics.regex": "q.*"}, {**regex, "topics.regex": "t.*"}
    assert judged([fleet.Member("a", "r", r1), *sinks[1:]], fleet.FleetChange("a", "r", r2)) == {
        "a/r": ["second-writer: table users is also written by a/o, from the same topic t2"]
    }
    assert (
        judged(
            [fleet.Member("a", "r", r2), fleet.Member("a", "o2", r2)],
            fleet.FleetChange("a", "r", {**r2, "batch.size": "1"}),
        )
        == {}
    )


def test_a_placeholder_slot_is_named_as_written_and_a_bad_regex_reads_nothing(tmp_path: object) -> None:
    hidden = src(slot="${file:secrets/s.properties:slot}")
    assert judged([fleet.Member("a", "x", hidden)], fleet.FleetChange("a", "y", {**hidden, "topic.prefix": "q"})) == {
        "a/y": ["second-writer: replication slot ${file:secrets/s.properties:slot} is also a/x's"]
    }
    bad = {k: v for k, v in snk().items() if k != "topics"} | {"topics.regex": "("}
    assert judged([fleet.Member("a", "o", snk())], fleet.FleetChange("a", "r", bad)) == {}
    hidden_regex = {k: v for k, v in snk().items() if k != "topics"} | {"topics.regex": "${file:/x:re}"}
    twin = [fleet.Member("a", "r1", hidden_regex)]
    assert judged(twin, fleet.FleetChange("a", "r2", hidden_regex)) == {
        "a/r2": ["second-writer: topics.regex ${file:/x:re} is also read into the same tables by a/r1"]
    }
    assert judged([fleet.Member("a", "o", snk(topics="t1,t2"))], fleet.FleetChange("a", "n", snk(topics="t0,t2"))) == {
        "a/n": ["second-writer: table users is also written by a/o, from the same topic t2"]
    }

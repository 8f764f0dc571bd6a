"""Which tables a plan back-fills (reconciler.backfill, pure; issue 45): a table re-added to its
publication that a live source already captured, and the source table of a sink whose field
list widens; merged per source, once per database; a new table is not back-filled here."""

from __future__ import annotations

from hephaestus.classes import POSTGRES_SOURCE
from hephaestus.fleet.model import Live
from hephaestus.publications.change import PublicationChange
from hephaestus.reconciler.backfill import planned
from hephaestus.reconciler.plan import KeyChange, Plan, Step
from hephaestus.safety.values import NO_RESOLVER

SRC = {
    "connector.class": POSTGRES_SOURCE,
    "database.dbname": "bob",
    "topic.prefix": "local.bob",
    "slot.name": "s",
    "publication.name": "pub",
    "signal.data.collection": "public.dbz_signals",
    "table.include.list": "public.users,public.students",
}
SINK = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": "local.bob.public.users"}
LIVE = {
    "a_src": Live("a_src", SRC, "source", "RUNNING"),
    "b_src": Live("b_src", SRC, "source", "RUNNING"),
    "sink": Live("sink", {**SINK, "field.include.list": "user_id,name"}, "sink", "RUNNING"),
}


def _plan(*steps: Step, pubs: tuple[PublicationChange, ...] = ()) -> Plan:
    return Plan("c", steps, publications=pubs)


def test_a_table_re_added_to_its_publication_is_back_filled_once_per_database() -> None:
    change = PublicationChange("bob", "pub", add=("public.users",), connectors=("b_src", "a_src"))
    (b,) = planned(_plan(pubs=(change,)), LIVE, LIVE, NO_RESOLVER)
    assert (b.source, b.tables, b.ref.database, b.ref.slot, b.ref.signal_table) == (
        "a_src",
        ("public.users",),
        "bob",
        "s",
        "public.dbz_signals",
    )
    assert "re-added to publication pub" in b.why and b.describe().startswith("back-fill public.users through a_src")


def test_a_table_a_source_starts_to_capture_is_not_back_filled_here() -> None:
    change = PublicationChange("bob", "pub", add=("public.locations",), connectors=("a_src",))
    assert planned(_plan(pubs=(change,)), LIVE, LIVE, NO_RESOLVER) == ()


def test_a_widened_field_list_back_fills_the_sinks_source_table() -> None:
    wide = {**SINK, "field.include.list": "user_id,name,phone"}
    step = Step(
        "update", "sink", config=wide, changes=(KeyChange("field.include.list", "user_id,name", "user_id,name,phone"),)
    )
    (b,) = planned(_plan(step), LIVE, LIVE, NO_RESOLVER)
    assert (b.source, b.tables, b.why) == ("a_src", ("public.users",), "sink now writes phone")


def test_a_narrowed_or_unlisted_field_list_back_fills_nothing() -> None:
    narrow = Step("update", "sink", config=SINK, changes=(KeyChange("field.include.list", "user_id,name", "user_id"),))
    added = Step("update", "sink", config=SINK, changes=(KeyChange("field.include.list", None, "user_id"),))
    other = Step("update", "sink", config=SINK, changes=(KeyChange("tasks.max", "1", "2"),))
    assert planned(_plan(narrow, added, other), LIVE, LIVE, NO_RESOLVER) == ()


def test_both_reasons_for_one_source_make_one_back_fill() -> None:
    change = PublicationChange("bob", "pub", add=("public.students",), connectors=("a_src",))
    step = Step("update", "sink", config=SINK, changes=(KeyChange("field.include.list", "user_id", "user_id,phone"),))
    (b,) = planned(_plan(step, pubs=(change,)), LIVE, LIVE, NO_RESOLVER)
    assert b.tables == ("public.students", "public.users") and "; sink now writes phone" in b.why


def test_a_source_whose_database_cannot_be_told_is_skipped() -> None:
    vague = {k: v for k, v in SRC.items() if k not in ("database.dbname", "topic.prefix")}
    live = {"a_src": Live("a_src", vague, "source", "RUNNING")}
    change = PublicationChange("bob", "pub", add=("public.users",), connectors=("a_src",))
    assert planned(_plan(pubs=(change,)), live, live, NO_RESOLVER) == ()


def test_each_sink_reading_a_back_filled_table_states_what_it_receives_again() -> None:
    insert = Live("ins", {**SINK, "insert.mode": "insert"}, "sink", "RUNNING")
    other = Live("other", {**SINK, "topics": "local.bob.public.students"}, "sink", "RUNNING")
    upsert = Live("sink", {**SINK, "insert.mode": "upsert", "primary.key.mode": "record_key"}, "sink", "RUNNING")
    live = {**LIVE, "ins": insert, "other": other, "sink": upsert}
    change = PublicationChange("bob", "pub", add=("public.users",), connectors=("a_src",))
    (b,) = planned(_plan(pubs=(change,)), live, live, NO_RESOLVER)
    assert [(e.code, e.why.split(":")[0]) for e in b.effects] == [("duplicates", "ins"), ("redelivery", "sink")]


def test_a_back_fill_into_an_insert_mode_sink_is_held_by_the_gate_unless_allowed() -> None:
    from hephaestus.reconciler.gating import GatedCluster, judged
    from hephaestus.reconciler.plan import Policy
    from hephaestus.safety.gate import Allow

    live = {**LIVE, "sink": Live("sink", {**SINK, "insert.mode": "insert"}, "sink", "RUNNING")}
    change = PublicationChange("bob", "pub", add=("public.users",), connectors=("a_src",))
    p = _plan(pubs=(change,))
    p = Plan("c", (), publications=(change,), backfills=planned(p, live, live, NO_RESOLVER))
    view = GatedCluster("c", {n: lv.config for n, lv in live.items()}, {}, plan=p)
    plans, _ = judged([view], Policy())
    assert (
        plans["c"].refusals and "back-fill a_src" in plans["c"].refusals[0] and "duplicates" in plans["c"].refusals[0]
    )
    plans, _ = judged([view], Policy(allow=Allow(codes=frozenset({"duplicates"}))))
    assert plans["c"].refusals == ()


def test_two_databases_two_back_fills_and_a_reason_said_once() -> None:
    other = {**SRC, "database.dbname": "eve", "topic.prefix": "local.eve"}
    live = {**LIVE, "e_src": Live("e_src", other, "source", "RUNNING")}
    changes = (
        PublicationChange("bob", "pub", add=("public.users",), connectors=("a_src",)),
        PublicationChange("eve", "pub", add=("public.users",), connectors=("e_src",)),
    )
    found = planned(_plan(pubs=changes), live, live, NO_RESOLVER)
    assert [(b.source, b.ref.database) for b in found] == [("a_src", "bob"), ("e_src", "eve")]
    two = {**SINK, "topics": "local.bob.public.users,local.bob.public.students"}
    step = Step("update", "sink", config=two, changes=(KeyChange("field.include.list", "a", "a,phone,fax"),))
    (b,) = planned(_plan(step), LIVE, LIVE, NO_RESOLVER)
    assert b.tables == ("public.users", "public.students") and b.why == "sink now writes phone, fax"


def test_a_later_widened_sink_counts_and_a_topic_nothing_writes_back_fills_nothing() -> None:
    quiet = Step("update", "quiet", config=SINK, changes=(KeyChange("tasks.max", "1", "2"),))
    orphan = Step(
        "update",
        "orphan",
        config={**SINK, "topics": "nowhere.t"},
        changes=(KeyChange("field.include.list", "a", "a,b"),),
    )
    wide = Step("update", "sink", config=SINK, changes=(KeyChange("field.include.list", "a", "a,b"),))
    (b,) = planned(_plan(quiet, orphan, wide), LIVE, LIVE, NO_RESOLVER)
    assert (b.source, b.why) == ("a_src", "sink now writes b")
    gone = Step("update", "sink", config=SINK, changes=(KeyChange("field.include.list", "a", None),))
    assert planned(_plan(gone), LIVE, LIVE, NO_RESOLVER) == ()

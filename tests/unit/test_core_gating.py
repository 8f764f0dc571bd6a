"""Every cluster's plan at the one gate (reconciler.gating): the fleet it sees, the items it
judges, the allowances it reads from files, the delete numbers (mutation-tested core)."""

from __future__ import annotations

import pytest

from hephaestus.classes import DEBEZIUM_SINK, POSTGRES_SOURCE
from hephaestus.errors import InputError
from hephaestus.publications.change import PublicationChange
from hephaestus.reconciler import gating
from hephaestus.reconciler.plan import Desired, Live, Plan, Policy, Scope, Step, plan
from hephaestus.safety.effects import Effect
from hephaestus.safety.gate import Allow, Item, Refused, allow_of, check, clear, judge

SRC = {
    "connector.class": POSTGRES_SOURCE,
    "database.hostname": "db",
    "database.dbname": "bob",
    "slot.name": "s1",
    "topic.prefix": "bob",
}
SNK = {
    "connector.class": DEBEZIUM_SINK,
    "connection.url": "jdbc:postgresql://db/auth",
    "topics": "t1",
    "collection.name.format": "users",
    "insert.mode": "upsert",
    "primary.key.mode": "record_key",
    "primary.key.fields": "id",
}


def view(
    name: str,
    live: dict[str, dict[str, str]],
    desired: dict[str, Desired],
    owned: frozenset[str] = frozenset(),
    kafka: str | None = "k",
    planned: bool = True,
) -> gating.GatedCluster:
    kind = {n: "source" if c.get("connector.class") == POSTGRES_SOURCE else "sink" for n, c in live.items()}
    lv = {n: Live(n, c, kind[n], "RUNNING") for n, c in live.items()}
    p = plan(name, desired, lv, Policy(), Scope(owned)) if planned else None
    return gating.GatedCluster(name, live, desired, owned, kafka, p)


def test_a_second_source_on_another_cluster_is_refused_there_only() -> None:
    a = view("a", {"old": SRC}, {"old": Desired("old", SRC)}, frozenset({"old"}))
    b = view("b", {}, {"new": Desired("new", {**SRC, "topic.prefix": "other"})})
    plans, verdict = gating.judged([a, b], Policy())
    assert plans["a"].refused == "" and plans["b"].refused.startswith(
        "create new refused: second-writer: replication slot s1 is also a/old's"
    )
    (step,) = plans["b"].writes
    assert [e.code for e in step.effects] == ["second-writer"] and [r.cluster for r in verdict.refusals] == ["b"]


def test_git_declared_connectors_of_every_cluster_count_and_a_cluster_not_planned_is_only_seen() -> None:
    seen = view("c", {}, {"git_only": Desired("git_only", SRC)}, planned=False)
    b = view("b", {}, {"new": Desired("new", {**SRC, "topic.prefix": "other"})})
    plans, _ = gating.judged([seen, b], Policy())
    assert set(plans) == {"b"} and "also c/git_only's" in plans["b"].refused
    # the same name live and in git counts once, as live
    both = view("c", {"x": {**SRC, "slot.name": "s9"}}, {"x": Desired("x", SRC)}, planned=False)
    plans, _ = gating.judged([both, b], Policy())
    assert plans["b"].refused == ""


def test_a_create_is_judged_as_a_change_not_as_a_member() -> None:
    a = view("a", {}, {"one": Desired("one", SRC)})
    plans, _ = gating.judged([a], Policy())
    assert plans["a"].refused == "" and [s.action for s in plans["a"].writes] == ["create"]


def test_a_delete_leaves_the_fleet_and_a_state_change_claims_nothing() -> None:
    keys = {**SNK, "primary.key.fields": "id,x"}
    kept = {**SNK, "topics": "k", "collection.name.format": "kept"}
    desired = {"keep": Desired("keep", kept), "new": Desired("new", keys)}
    a = view("a", {"old": SNK, "keep": kept}, desired, frozenset({"old", "keep"}))
    plans, _ = gating.judged([a], Policy(max_delete_share=1.0))
    assert "keys-changed: takes over the table old wrote" in plans["a"].refused
    paused = view(
        "a", {"x": SNK, "y": {**SNK, "topics": "t2"}}, {"x": Desired("x", SNK, state="PAUSED")}, frozenset({"x"})
    )
    plans, _ = gating.judged([paused], Policy())
    assert [s.action for s in plans["a"].writes] == ["state"] and plans["a"].refused == ""


def test_kafka_identity_decides_a_namespace_clash() -> None:
    a = view("a", {"old": SRC}, {"old": Desired("old", SRC)}, frozenset({"old"}), kafka="k1")
    new = {"new": Desired("new", {**SRC, "slot.name": "s2"})}
    assert gating.judged([a, view("b", {}, new, kafka="k2")], Policy())[0]["b"].refused == ""
    same = gating.judged([a, view("b", {}, new, kafka="k1")], Policy())[0]["b"].refused
    assert "topics bob.* are also written by a/old" in same


def test_items_carry_the_files_allowance_and_publication_changes() -> None:
    desired = {
        "a": Desired("a", SRC, allow=allow_of(True)),
        "b": Desired("b", SRC),
        "c": Desired("c", SRC, allow=allow_of(True)),
    }
    p = Plan(
        "x",
        (Step("update", "a", config=SRC), Step("create", "z", config=SRC)),
        publications=(
            PublicationChange("db", "pub", ("public.n",), ("public.o",), ("a", "c")),
            PublicationChange("db", "p2", (), ("public.o",), ("a", "b")),
            PublicationChange("db", "p3", ("public.n",), (), ()),
        ),
    )
    items = gating.items_of(p, desired)
    assert items[0] == Item("x", "a", "update", (), allow_of(True), True)
    assert items[1] == Item("x", "z", "create", (), Allow(), True)
    drop = Effect("capture-dropped", "public.o leave the publication: their changes stop streaming")
    assert items[2] == Item("x", "publication db/pub", "alter", (drop,), allow_of(True), True)
    assert items[3] == Item("x", "publication db/p2", "alter", (drop,), Allow(), True)  # not all of them consent
    assert items[4] == Item("x", "publication db/p3", "alter", (), Allow(), True)
    verdict = judge(items)
    assert [r.name for r in verdict.refusals] == ["publication db/p2"]
    assert verdict.refusals[0].message.endswith(", or set allow_destructive in its file")


def test_the_delete_numbers_count_owned_sinks_live_and_git_sinks() -> None:
    live = {"s1": SNK, "s2": {**SNK, "topics": "t2"}, "src": SRC, "theirs": {**SNK, "topics": "t3"}}
    a = view("a", live, {"src": Desired("src", SRC)}, frozenset({"s1", "s2", "src", "gone"}))
    plans, verdict = gating.judged([a], Policy(max_delete_share=1.0))
    assert plans["a"].refused == (
        "git has no JDBC sink for this cluster (its sink folder is empty or missing) while 2 owned sinks run: "
        "deleting 2 of them needs --force"
    )
    plans, _ = gating.judged([a], Policy(force=True))
    assert plans["a"].refused == ""
    with_sink = view("a", live, {"src": Desired("src", SRC), "s1": Desired("s1", SNK)}, frozenset({"s1", "s2"}))
    assert gating.judged([with_sink], Policy(max_delete_share=0.4))[0]["a"].refused == (
        "would delete 1 of 2 owned sinks (more than 40%); rerun with --force"
    )


def test_the_fleet_effects_land_on_their_own_step() -> None:
    desired = {
        "old": Desired("old", SRC),
        "new": Desired("new", {**SRC, "topic.prefix": "x"}),
        "z": Desired("z", {**SRC, "slot.name": "s7", "topic.prefix": "z"}),
    }
    a = view("a", {"old": SRC}, desired, frozenset({"old"}))
    plans, _ = gating.judged([a], Policy())
    by = {s.name: [e.code for e in s.effects] for s in plans["a"].steps}
    assert by == {"new": ["second-writer"], "old": [], "z": []}


def test_gate_words_for_allowances_and_single_checks() -> None:
    with pytest.raises(InputError) as err:
        allow_of([])
    assert str(err.value).startswith(
        "--allow-destructive: unknown effect '(none)': use all, or some of resnapshot, slot-dropped, "
    )
    with pytest.raises(InputError) as err:
        allow_of("nope")
    assert ", ".join(["resnapshot", "slot-dropped", "slot-changed"]) in str(err.value)
    with pytest.raises(Refused) as refused:
        check([Item("c", "x", "offsets reset", (Effect("resnapshot", "why"),))])
    assert str(refused.value) == (
        "destructive offsets reset of x (resnapshot: why): rerun with --allow-destructive=resnapshot "
        "(or --allow-destructive)"
    )
    assert clear(judge([Item("c", "x", "u")]), "c").cluster == "c"


def test_a_planned_member_is_on_its_clusters_kafka() -> None:
    git_only = view("c", {}, {"planned": Desired("planned", SRC)}, kafka="k2", planned=False)
    new = {"new": Desired("new", {**SRC, "slot.name": "s2"})}
    assert gating.judged([git_only, view("b", {}, new, kafka="k1")], Policy())[0]["b"].refused == ""
    assert "topics bob.*" in gating.judged([git_only, view("b", {}, new, kafka="k2")], Policy())[0]["b"].refused

"""Renames in the pure plan (reconciler.renames): which pairs are taken, which are refused
and why (mutation-tested core)."""

from __future__ import annotations

from hephaestus.reconciler.plan import Desired, KeyChange, Live, Policy, Scope, Step, plan

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
SOURCE = "io.debezium.connector.postgresql.PostgresConnector"


def sink(topic: str = "t", **extra: str) -> dict[str, str]:
    return {"connector.class": SINK, "topics": topic, **extra}


def source(slot: str = "s", prefix: str = "p", **extra: str) -> dict[str, str]:
    return {"connector.class": SOURCE, "slot.name": slot, "topic.prefix": prefix, **extra}


def test_an_owned_sink_with_the_same_config_under_a_new_name_is_a_rename() -> None:
    live = {"old": Live("old", {**sink(), "name": "old"}, "sink", "PAUSED")}
    p = plan("x", {"new": Desired("new", sink(), "git/new.json")}, live, Policy(), Scope(frozenset({"old"})))
    assert p.steps == (
        Step("rename", "new", sink(), (), "from old, offsets kept", SINK, "git/new.json", "PAUSED", renamed_from="old"),
    )
    assert p.refused == "" and p.counts()["rename"] == 1 and [s.name for s in p.writes] == ["new"]


def test_an_unowned_twin_is_not_renamed() -> None:
    live = {"old": Live("old", sink(), "sink")}
    p = plan("x", {"new": Desired("new", sink())}, live, Policy(), Scope())
    assert [(s.action, s.name) for s in p.steps] == [("create", "new"), ("unmanaged", "old")]


def test_ambiguous_twins_are_not_paired_and_said_so() -> None:
    live = {"a": Live("a", sink(), "sink"), "b": Live("b", sink(), "sink")}
    p = plan("x", {"new": Desired("new", sink())}, live, Policy(force=True), Scope(frozenset({"a", "b"})))
    assert [(s.action, s.name) for s in p.steps] == [("delete", "a"), ("delete", "b"), ("create", "new")]
    assert p.warnings == (
        "new: its config equals several connectors absent from git (a, b) or theirs equals "
        "several new ones: not taken for a rename (set renamed_from)",
    )
    two_new = {"n1": Desired("n1", sink()), "n2": Desired("n2", sink())}
    p = plan("x", two_new, {"a": live["a"]}, Policy(force=True), Scope(frozenset({"a"})))
    assert [s.action for s in p.steps] == ["delete", "create", "create"] and len(p.warnings) == 2


def test_renamed_from_pairs_a_changed_config_and_shows_the_diff() -> None:
    live = {
        "old": Live("old", sink("t", **{"batch.size": "1"}), "sink", "RUNNING"),
        "other": Live("other", sink("t", **{"batch.size": "2"}), "sink"),
    }
    desired = {"new": Desired("new", sink("t", **{"batch.size": "2"}), renamed_from="old")}
    p = plan("x", desired, live, Policy(force=True), Scope(frozenset(live)))
    (rename, delete) = p.steps
    assert (rename.action, rename.renamed_from, rename.changes) == (
        "rename",
        "old",
        (KeyChange("batch.size", "1", "2"),),
    )
    assert (delete.action, delete.name) == ("delete", "other")  # the explicit pair wins over the twin


def test_renamed_from_something_not_owned_or_gone_is_a_create_with_a_warning() -> None:
    desired = {"new": Desired("new", sink(), renamed_from="old")}
    p = plan("x", desired, {"old": Live("old", sink(), "sink")}, Policy(), Scope())
    assert [s.action for s in p.steps] == ["create", "unmanaged"]
    assert p.warnings == (
        "new: renamed_from 'old' is not an owned live connector absent from git (already renamed, "
        "never owned, or claimed twice): planned as a create",
    )
    done = plan("x", desired, {"new": Live("new", sink(), "sink")}, Policy(), Scope(frozenset({"new"})))
    assert [s.action for s in done.steps] == ["unchanged"] and done.warnings == ()


def test_a_source_rename_keeps_its_slot_and_prefix_or_is_refused() -> None:
    live = {"old": Live("old", source(), "source")}
    ok = plan(
        "x",
        {"new": Desired("new", source(**{"table.include.list": "a"}), renamed_from="old")},
        live,
        Policy(),
        Scope(frozenset({"old"})),
    )
    assert [s.action for s in ok.steps] == ["rename"] and ok.refused == ""
    for changed, key in ((source(slot="s2"), "slot.name"), (source(prefix="p2"), "topic.prefix")):
        p = plan(
            "x",
            {"new": Desired("new", changed, renamed_from="old")},
            live,
            Policy(force=True),
            Scope(frozenset({"old"})),
        )
        assert p.refused == (
            f"rename old -> new refused: a source keeps its {key} across a rename (else it "
            "starts a new slot or topics and loses its place)"
        )
    both = plan(
        "x", {"new": Desired("new", source("s2", "p2"), renamed_from="old")}, live, Policy(), Scope(frozenset({"old"}))
    )
    assert "keeps its slot.name and topic.prefix" in both.refused


def test_a_source_that_drops_its_slot_on_stop_is_never_renamed() -> None:
    live = {"old": Live("old", source(**{"slot.drop.on.stop": " TRUE"}), "source")}
    p = plan(
        "x",
        {"new": Desired("new", source(**{"slot.drop.on.stop": " TRUE"}))},
        live,
        Policy(force=True),
        Scope(frozenset({"old"})),
    )
    assert p.refused == (
        "rename old -> new refused: slot.drop.on.stop=true drops the slot when the old connector "
        "stops, and with it every change not yet read"
    )
    for flag in ({"slot.drop.on.stop": "false"}, {}):
        kept = {"old": Live("old", source(**flag), "source")}
        assert (
            plan("x", {"new": Desired("new", source(**flag))}, kept, Policy(), Scope(frozenset({"old"}))).refused == ""
        )


def test_a_sink_rename_is_not_checked_for_source_keys() -> None:
    live = {"old": Live("old", sink(**{"slot.name": "a"}), "sink")}
    p = plan(
        "x",
        {"new": Desired("new", sink(**{"slot.name": "b"}), renamed_from="old")},
        live,
        Policy(),
        Scope(frozenset({"old"})),
    )
    assert p.refused == "" and p.steps[0].action == "rename"


def test_an_explicit_pair_after_a_plain_create_is_still_taken() -> None:
    live = {"old": Live("old", sink("x"), "sink")}
    desired = {"a_plain": Desired("a_plain", sink("y")), "b_new": Desired("b_new", sink("z"), renamed_from="old")}
    p = plan("x", desired, live, Policy(), Scope(frozenset({"old"})))
    assert [(s.action, s.name) for s in p.steps] == [("create", "a_plain"), ("rename", "b_new")]


def test_every_refused_rename_is_named() -> None:
    live = {"o1": Live("o1", source("s1"), "source"), "o2": Live("o2", source("s2"), "source")}
    desired = {
        "n1": Desired("n1", source("x1"), renamed_from="o1"),
        "n2": Desired("n2", source("x2"), renamed_from="o2"),
    }
    p = plan("x", desired, live, Policy(force=True), Scope(frozenset(live)))
    assert p.refused == (
        "rename o1 -> n1 refused: a source keeps its slot.name across a rename (else it starts a "
        "new slot or topics and loses its place); rename o2 -> n2 refused: a source keeps its "
        "slot.name across a rename (else it starts a new slot or topics and loses its place)"
    )

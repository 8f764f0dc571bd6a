"""Renames in the pure plan (reconciler.renames): which pairs are taken, which are refused
and why (mutation-tested core)."""

from __future__ import annotations

from hephaestus.reconciler.plan import Desired, KeyChange, Live, Policy, Scope, Step, plan
from hephaestus.safety.gate import allow_of
from tests.unit.conftest import gated

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
        Step(
            "rename",
            "new",
            config=sink(),
            changes=(),
            reason="from old, offsets kept",
            connector_class=SINK,
            origin="git/new.json",
            live_state="PAUSED",
            renamed_from="old",
        ),
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


def test_a_source_rename_that_moves_its_slot_or_prefix_is_destructive() -> None:
    """Judged by its effects at the gate: a new slot or prefix loses the stream's place."""
    live = {"old": Live("old", source(), "source")}
    owned = Scope(frozenset({"old"}))
    ok = gated(
        "x",
        {"new": Desired("new", source(**{"heartbeat.interval.ms": "5"}), renamed_from="old")},
        live,
        Policy(),
        owned,
    )
    assert [s.action for s in ok.steps] == ["rename"] and ok.refused == ""
    for changed, code in ((source(slot="s2"), "slot-changed"), (source(prefix="p2"), "topics-renamed")):
        p = gated("x", {"new": Desired("new", changed, renamed_from="old")}, live, Policy(force=True), owned)
        assert p.refused.startswith(f"destructive rename of new ({code}: ")
        assert f"--allow-destructive={code}" in p.refused
        codes = sorted({e.code for e in p.steps[0].effects})
        assert code in codes
        renamed = {"new": Desired("new", changed, renamed_from="old")}
        assert gated("x", renamed, live, Policy(allow=allow_of(codes)), owned).refused == ""
        assert gated(
            "x", renamed, live, Policy(allow=allow_of([c for c in codes if c != code] or ["resnapshot"])), owned
        ).refused
    both = gated("x", {"new": Desired("new", source("s2", "p2"), renamed_from="old")}, live, Policy(), owned)
    assert {"slot-changed", "topics-renamed", "offsets-lost", "resnapshot"} <= {e.code for e in both.steps[0].effects}
    assert both.refused.endswith("more refused)")


def test_a_source_that_drops_its_slot_on_stop_is_renamed_only_when_allowed() -> None:
    live = {"old": Live("old", source(**{"slot.drop.on.stop": " TRUE"}), "source")}
    desired = {"new": Desired("new", source(**{"slot.drop.on.stop": " TRUE"}))}
    p = gated("x", desired, live, Policy(force=True), Scope(frozenset({"old"})))
    assert p.steps[0].action == "rename"
    assert p.refused.startswith(
        "destructive rename of new (slot-dropped: slot.drop.on.stop=true: stopping the tasks drops the slot)"
    )
    for flag in ({"slot.drop.on.stop": "false"}, {}):
        kept = {"old": Live("old", source(**flag), "source")}
        assert (
            gated("x", {"new": Desired("new", source(**flag))}, kept, Policy(), Scope(frozenset({"old"}))).refused == ""
        )


def test_a_rename_never_overwrites_a_connector_it_does_not_own() -> None:
    """renamed_from, but the new name runs and is another's: refused whatever is allowed, and
    the old one is neither deleted nor stopped."""
    live = {"old": Live("old", sink("a"), "sink"), "new": Live("new", sink("b"), "sink")}
    desired = {"new": Desired("new", sink("a"), renamed_from="old")}
    for policy in (Policy(), Policy(force=True, allow=allow_of(True))):
        p = gated("x", desired, live, policy, Scope(frozenset({"old"})))
        assert [(s.action, s.name) for s in p.steps] == [("rename", "new")] and p.adopt == ()
        assert p.refused.startswith(
            "rename new refused: not-owned: new already runs and this deployment does not own it"
        )
    mine = gated("x", desired, live, Policy(), Scope(frozenset({"old", "new"})))
    assert [(s.action, s.name) for s in mine.steps] == [("update", "new"), ("delete", "old")]


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


def test_every_refused_rename_is_counted() -> None:
    live = {"o1": Live("o1", source("s1"), "source"), "o2": Live("o2", source("s2"), "source")}
    desired = {
        "n1": Desired("n1", source("x1"), renamed_from="o1"),
        "n2": Desired("n2", source("x2"), renamed_from="o2"),
    }
    p = gated("x", desired, live, Policy(force=True), Scope(frozenset(live)))
    assert p.refused.startswith("destructive rename of n1 (slot-changed: slot.name: ")
    assert p.refused.endswith("(and 1 more refused)")
    assert [r.split(" (")[0] for r in p.refusals] == ["destructive rename of n1", "destructive rename of n2"]


def test_a_rename_leaves_the_new_connector_in_gits_state() -> None:
    live = {"old": Live("old", {**sink(), "name": "old"}, "sink", "PAUSED")}
    desired = {"new": Desired("new", sink(), "git/new.json", renamed_from="old", state="RUNNING")}
    (step,) = plan("x", desired, live, Policy(), Scope(frozenset({"old"}))).steps
    assert (step.action, step.live_state, step.target_state) == ("rename", "PAUSED", "RUNNING")

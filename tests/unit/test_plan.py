"""plan(desired, live, policy): pure rules of what a reconcile may do."""

from __future__ import annotations

from hephaestus.reconciler.plan import Desired, Live, Policy, Scope, diff, plan
from tests.unit.conftest import gated

DBZ_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CONF_SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
SOURCE = "io.debezium.connector.postgresql.PostgresConnector"


def cfg(cls: str = DBZ_SINK, **extra: str) -> dict[str, str]:
    return {"connector.class": cls, "tasks.max": "1", **extra}


def test_create_update_unchanged() -> None:
    desired = {"a": Desired("a", cfg()), "b": Desired("b", cfg(**{"batch.size": "200"})), "c": Desired("c", cfg())}
    live = {"b": Live("b", cfg(**{"batch.size": "100"})), "c": Live("c", {**cfg(), "name": "c"})}
    p = plan("x", desired, live, Policy())
    assert {s.name: s.action for s in p.steps} == {"a": "create", "b": "update", "c": "unchanged"}
    (update,) = p.of("update")
    assert [(c.key, c.before, c.after) for c in update.changes] == [("batch.size", "100", "200")]


def test_name_and_ignorable_keys_never_diff() -> None:
    desired = {"a": Desired("a", cfg(**{"x.managed": "1"}))}
    live = {"a": Live("a", {**cfg(**{"x.managed": "2"}), "name": "a"})}
    assert plan("x", desired, live, Policy(ignore_keys=frozenset({"x.managed"}))).in_sync
    assert not plan("x", desired, live, Policy()).in_sync


def test_placeholders_compared_literally() -> None:
    desired = {"a": Desired("a", cfg(**{"connection.password": "${file:/s.properties:pw}"}))}
    live = {"a": Live("a", cfg(**{"connection.password": "${file:/s.properties:pw}"}))}
    assert plan("x", desired, live, Policy()).in_sync


def test_deletes_only_jdbc_sinks() -> None:
    live = {
        "old_dbz_sink": Live("old_dbz_sink", cfg(DBZ_SINK), "sink"),
        "old_conf_sink": Live("old_conf_sink", cfg(CONF_SINK), "sink"),
        "old_source": Live("old_source", cfg(SOURCE), "source"),
        "DIM_USER_SINK": Live("DIM_USER_SINK", cfg(CONF_SINK), "sink"),
        "other": Live("other", cfg("com.example.S3SinkConnector"), "sink"),
    }
    p = plan("x", {}, live, Policy(force=True), Scope(frozenset(live)))
    actions = {s.name: s.action for s in p.steps}
    assert actions == {
        "old_dbz_sink": "delete",
        "old_conf_sink": "delete",
        "old_source": "protected",
        "DIM_USER_SINK": "unmanaged",
        "other": "unmanaged",
    }
    assert "never deleted" in next(s.reason for s in p.steps if s.name == "old_source")


def test_delete_threshold_refuses_unless_forced() -> None:
    live = {f"s{i}": Live(f"s{i}", cfg(), "sink") for i in range(12)}
    desired = {f"s{i}": Desired(f"s{i}", cfg()) for i in range(12) if i >= 11}  # no new name: no rename
    p = gated("x", desired, live, Policy(max_deletes=10), Scope(frozenset(live)))
    assert "would delete 11 connectors" in p.refused
    assert not gated("x", desired, live, Policy(max_deletes=10, force=True), Scope(frozenset(live))).refused


def test_delete_share_refuses() -> None:
    live = {f"s{i}": Live(f"s{i}", cfg(), "sink") for i in range(4)}
    desired = {"s0": Desired("s0", cfg())}
    p = gated("x", desired, live, Policy(max_deletes=10, max_delete_share=0.5), Scope(frozenset(live)))
    assert "3 of 4" in p.refused
    small = gated(
        "x", {**desired, "s1": Desired("s1", cfg())}, live, Policy(max_delete_share=0.5), Scope(frozenset(live))
    )
    assert not small.refused


def test_diff_added_and_removed_keys() -> None:
    changes = diff({"a": "1", "b": "2"}, {"b": "2", "c": "3"})
    assert [(c.key, c.before, c.after) for c in changes] == [("a", "1", None), ("c", None, "3")]


def test_plan_is_frozen_and_counts() -> None:
    p = plan("x", {"a": Desired("a", cfg())}, {}, Policy())
    assert p.counts()["create"] == 1 and not p.in_sync


def test_custom_connectors_held_back_are_never_deleted() -> None:
    live = {"custom_sink": Live("custom_sink", cfg(CONF_SINK), "sink")}
    p = plan("x", {}, live, Policy(force=True), Scope(frozenset(live), held=frozenset({"custom_sink"})))
    (step,) = p.steps
    assert step.action == "unmanaged" and "--deploy-custom-sinks" in step.reason
    assert plan("x", {}, live, Policy(force=True), Scope(frozenset(live))).steps[0].action == "delete"

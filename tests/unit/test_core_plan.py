"""The pure plan (reconciler.plan): exact steps, the delete policy at its thresholds, and what
never diffs (mutation-tested core)."""

from __future__ import annotations

import pytest

from hephaestus.reconciler.plan import (
    KeyChange,
    Desired,
    Live,
    Plan,
    Policy,
    Step,
    Unhealthy,
    comparable,
    diff,
    is_ksqldb_managed,
    plan,
)

DBZ_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CONF_SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
SOURCE = "io.debezium.connector.postgresql.PostgresConnector"


def cfg(cls: str = DBZ_SINK, **extra: str) -> dict[str, str]:
    return {"connector.class": cls, "tasks.max": "1", **extra}


def sinks(n: int) -> dict[str, Live]:
    return {f"s{i:02}": Live(f"s{i:02}", cfg(), "sink") for i in range(n)}


def test_policy_defaults() -> None:
    assert Policy() == Policy(frozenset(), max_deletes=10, max_delete_share=0.5, force=False)


def test_steps_are_exact_and_in_name_order() -> None:
    desired = {"c_new": Desired("c_new", cfg(), "git/c_new.json"),
               "b_upd": Desired("b_upd", cfg(**{"batch.size": "2"}), "git/b_upd.json"),
               "a_same": Desired("a_same", cfg(), "git/a_same.json"),
               "noclass": Desired("noclass", {"topics": "t"})}
    live = {"b_upd": Live("b_upd", {**cfg(**{"batch.size": "1", "extra": "x"}), "name": "b_upd"}, "sink", "PAUSED"),
            "a_same": Live("a_same", {**cfg(), "name": "a_same"}, "sink", "RUNNING"),
            "z_old": Live("z_old", cfg(), "sink", "RUNNING")}
    p = plan("dwh", desired, live, Policy())
    assert p == Plan("dwh", (
        Step("unchanged", "a_same", cfg(), connector_class=DBZ_SINK, origin="git/a_same.json", live_state="RUNNING"),
        Step("update", "b_upd", cfg(**{"batch.size": "2"}),
             (KeyChange("batch.size", "1", "2"), KeyChange("extra", "x", None)),
             connector_class=DBZ_SINK, origin="git/b_upd.json", live_state="PAUSED"),
        Step("create", "c_new", cfg(), connector_class=DBZ_SINK, origin="git/c_new.json"),
        Step("create", "noclass", {"topics": "t"}, connector_class=""),
        Step("delete", "z_old", reason="JDBC sink absent from git", connector_class=DBZ_SINK),
    ), refused="")
    assert p.counts() == {"create": 2, "update": 1, "delete": 1, "protected": 0, "unmanaged": 0, "unchanged": 1}
    assert [s.name for s in p.writes] == ["b_upd", "c_new", "noclass", "z_old"]
    assert [s.name for s in p.of("update", "unchanged")] == ["a_same", "b_upd"]
    assert not p.in_sync and p.healthy


def test_in_sync_and_healthy() -> None:
    p = plan("x", {"a": Desired("a", cfg())}, {"a": Live("a", cfg())}, Policy())
    assert p.in_sync and p.healthy and p.writes == ()
    assert p.counts() == {"create": 0, "update": 0, "delete": 0, "protected": 0, "unmanaged": 0, "unchanged": 1}
    sick = Plan("x", p.steps, health=(Unhealthy("a", "FAILED"),))
    assert sick.in_sync and not sick.healthy


def test_what_is_never_deleted_and_why() -> None:
    live = {
        "held_sink": Live("held_sink", cfg(CONF_SINK), "sink"),
        "DIM_USER_SINK": Live("DIM_USER_SINK", cfg(CONF_SINK), "sink"),
        "src": Live("src", cfg(SOURCE), "source"),
        "s3": Live("s3", cfg("com.example.S3SinkConnector"), "sink"),
        "bare": Live("bare", {}, "sink"),
        "conf": Live("conf", cfg(CONF_SINK), "sink"),
    }
    p = plan("x", {}, live, Policy(force=True), held=frozenset({"held_sink"}))
    assert p.steps == (
        Step("unmanaged", "DIM_USER_SINK", reason="ksqlDB-managed (ALL-CAPS name)", connector_class=CONF_SINK),
        Step("unmanaged", "bare", reason="not a JDBC sink (unknown class)", connector_class=""),
        Step("delete", "conf", reason="JDBC sink absent from git", connector_class=CONF_SINK),
        Step("unmanaged", "held_sink", reason="custom connector: reconciled only with --deploy-custom-sinks",
             connector_class=CONF_SINK),
        Step("unmanaged", "s3", reason="not a JDBC sink (com.example.S3SinkConnector)",
             connector_class="com.example.S3SinkConnector"),
        Step("protected", "src", reason="a source is never deleted: its slot and offsets would be lost",
             connector_class=SOURCE),
    )
    assert p.counts() == {"create": 0, "update": 0, "delete": 1, "protected": 1, "unmanaged": 4, "unchanged": 0}


def test_a_jdbc_sink_reported_as_source_is_still_a_jdbc_sink() -> None:
    (step,) = plan("x", {}, {"odd": Live("odd", cfg(), "source")}, Policy()).steps
    assert step.action == "delete"


@pytest.mark.parametrize(("name", "ksql"), [
    ("DIM_USER", True), ("A1_B", True), ("X", True), ("Dim_user", False), ("dim_user", False), ("123_456", False),
    ("", False),
])
def test_ksqldb_names(name: str, ksql: bool) -> None:
    assert is_ksqldb_managed(name) is ksql


# --- the delete policy --------------------------------------------------------------------------


def test_deleting_exactly_max_deletes_is_allowed() -> None:
    live = sinks(30)
    keep = {n: Desired(n, cfg()) for n in list(live)[:20]}
    assert plan("x", keep, live, Policy(max_deletes=10)).refused == ""
    fewer = {n: Desired(n, cfg()) for n in list(live)[:19]}
    assert plan("x", fewer, live, Policy(max_deletes=10)).refused == \
        "would delete 11 connectors (more than 10); rerun with --force"


def test_deleting_exactly_the_share_is_allowed() -> None:
    live = sinks(4)
    two = {n: Desired(n, cfg()) for n in list(live)[:2]}
    assert plan("x", two, live, Policy(max_deletes=10, max_delete_share=0.5)).refused == ""
    one = {n: Desired(n, cfg()) for n in list(live)[:1]}
    assert plan("x", one, live, Policy(max_deletes=10, max_delete_share=0.5)).refused == \
        "would delete 3 of 4 live connectors (more than 50%); rerun with --force"
    assert plan("x", {}, sinks(1), Policy(max_delete_share=0.25)).refused == \
        "would delete 1 of 1 live connectors (more than 25%); rerun with --force"


def test_a_single_delete_under_both_limits_is_allowed() -> None:
    live = sinks(4)
    three = {n: Desired(n, cfg()) for n in list(live)[:3]}
    assert plan("x", three, live, Policy(max_deletes=1, max_delete_share=0.25)).refused == ""
    assert plan("x", three, live, Policy(max_deletes=0, max_delete_share=0.25)).refused == \
        "would delete 1 connectors (more than 0); rerun with --force"


def test_force_lifts_both_limits_and_nothing_to_delete_needs_no_limit() -> None:
    assert plan("x", {}, sinks(30), Policy(force=True)).refused == ""
    assert plan("x", {}, {"src": Live("src", cfg(SOURCE), "source")}, Policy(max_deletes=0)).refused == ""


# --- comparison -----------------------------------------------------------------------------------


def test_comparable_drops_name_and_ignored_keys_only() -> None:
    config = {"name": "a", "x.managed": "1", "topics": "t", "Name": "kept"}
    assert comparable(config, frozenset({"x.managed"})) == {"topics": "t", "Name": "kept"}
    assert comparable(config, frozenset()) == {"x.managed": "1", "topics": "t", "Name": "kept"}


def test_diff_is_sorted_and_empty_when_equal() -> None:
    assert diff({"b": "1", "a": "1"}, {"a": "1", "b": "1"}) == ()
    assert diff({"b": "1", "a": "2"}, {"c": "3", "a": "1"}) == (
        KeyChange("a", "2", "1"), KeyChange("b", "1", None), KeyChange("c", None, "3"))


def test_ignored_keys_never_make_an_update() -> None:
    desired = {"a": Desired("a", cfg(**{"x.managed": "new"}))}
    live = {"a": Live("a", cfg(**{"x.managed": "old"}))}
    (step,) = plan("x", desired, live, Policy(ignore_keys=frozenset({"x.managed"}))).steps
    assert (step.action, step.changes) == ("unchanged", ())

"""The pure plan (reconciler.plan): exact steps, the delete policy at its thresholds, and what
never diffs (mutation-tested core)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hephaestus.reconciler.plan import (
    Desired,
    KeyChange,
    Live,
    Plan,
    Policy,
    Scope,
    Step,
    Unhealthy,
    comparable,
    diff,
    is_ksqldb_managed,
    plan,
)
from tests.unit.conftest import gated

DBZ_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CONF_SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
SOURCE = "io.debezium.connector.postgresql.PostgresConnector"


def cfg(cls: str = DBZ_SINK, **extra: str) -> dict[str, str]:
    return {"connector.class": cls, "tasks.max": "1", **extra}


def sinks(n: int) -> dict[str, Live]:
    return {f"s{i:02}": Live(f"s{i:02}", cfg(topics=f"t{i}"), "sink") for i in range(n)}


def owning(live: dict[str, Live], **more: object) -> Scope:
    return Scope(owned=frozenset(live), **more)  # type: ignore[arg-type]


def keep(live: dict[str, Live], n: int) -> dict[str, Desired]:
    return {k: Desired(k, dict(lv.config)) for k, lv in list(live.items())[:n]}


def test_policy_defaults() -> None:
    assert Policy() == Policy(ignore_keys=frozenset(), max_deletes=10, max_delete_share=0.5, force=False)


def test_steps_are_exact_and_in_name_order() -> None:
    desired = {
        "c_new": Desired("c_new", cfg(), "git/c_new.json"),
        "b_upd": Desired("b_upd", cfg(**{"batch.size": "2"}), "git/b_upd.json"),
        "a_same": Desired("a_same", cfg(), "git/a_same.json"),
        "noclass": Desired("noclass", {"topics": "t"}),
    }
    live = {
        "b_upd": Live("b_upd", {**cfg(**{"batch.size": "1", "extra": "x"}), "name": "b_upd"}, "sink", "PAUSED"),
        "a_same": Live("a_same", {**cfg(), "name": "a_same"}, "sink", "RUNNING"),
        "z_old": Live("z_old", cfg(topics="old"), "sink", "RUNNING"),
    }
    p = plan("dwh", desired, live, Policy(), owning(live))
    assert p == Plan(
        "dwh",
        (
            Step(
                "unchanged",
                "a_same",
                config=cfg(),
                connector_class=DBZ_SINK,
                origin="git/a_same.json",
                live_state="RUNNING",
            ),
            Step(
                "update",
                "b_upd",
                config=cfg(**{"batch.size": "2"}),
                changes=(KeyChange("batch.size", "1", "2"), KeyChange("extra", "x", None)),
                connector_class=DBZ_SINK,
                origin="git/b_upd.json",
                live_state="PAUSED",
            ),
            Step("create", "c_new", config=cfg(), connector_class=DBZ_SINK, origin="git/c_new.json"),
            Step("create", "noclass", config={"topics": "t"}, connector_class=""),
            Step("delete", "z_old", reason="JDBC sink absent from git", connector_class=DBZ_SINK),
        ),
        refusals=(),
    )
    assert [s.risk for s in p.steps] == ["", "restart", "create", "create", "delete"]
    assert p.counts() == {
        "create": 2,
        "update": 1,
        "rename": 0,
        "move": 0,
        "delete": 1,
        "restart": 0,
        "state": 0,
        "protected": 0,
        "unmanaged": 0,
        "unchanged": 1,
    }
    assert [s.name for s in p.writes] == ["b_upd", "c_new", "noclass", "z_old"]
    assert [s.name for s in p.of("update", "unchanged")] == ["a_same", "b_upd"]
    assert not p.in_sync and p.healthy


def test_in_sync_and_healthy() -> None:
    p = plan("x", {"a": Desired("a", cfg())}, {"a": Live("a", cfg())}, Policy(), Scope(frozenset({"a"})))
    assert p.in_sync and p.healthy and p.writes == () and p.adopt == ()
    assert p.counts() == {
        "create": 0,
        "update": 0,
        "rename": 0,
        "move": 0,
        "delete": 0,
        "restart": 0,
        "state": 0,
        "protected": 0,
        "unmanaged": 0,
        "unchanged": 1,
    }
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
        "theirs": Live("theirs", cfg(CONF_SINK), "sink"),
    }
    p = plan("x", {}, live, Policy(force=True), Scope(frozenset(live) - {"theirs"}, held=frozenset({"held_sink"})))
    assert p.steps == (
        Step("unmanaged", "DIM_USER_SINK", reason="ksqlDB-managed (ALL-CAPS name)", connector_class=CONF_SINK),
        Step("unmanaged", "bare", reason="not a JDBC sink (unknown class)", connector_class=""),
        Step("delete", "conf", reason="JDBC sink absent from git", connector_class=CONF_SINK),
        Step(
            "unmanaged",
            "held_sink",
            reason="custom connector: reconciled only with --deploy-custom-sinks",
            connector_class=CONF_SINK,
        ),
        Step(
            "unmanaged",
            "s3",
            reason="not a JDBC sink (com.example.S3SinkConnector)",
            connector_class="com.example.S3SinkConnector",
        ),
        Step(
            "protected",
            "src",
            reason="a source is never deleted: its slot and offsets would be lost",
            connector_class=SOURCE,
        ),
        Step(
            "unmanaged",
            "theirs",
            connector_class=CONF_SINK,
            reason="JDBC sink absent from git, not owned by this deployment (`hephaestus import` adopts it)",
        ),
    )
    assert p.counts() == {
        "create": 0,
        "update": 0,
        "rename": 0,
        "move": 0,
        "delete": 1,
        "restart": 0,
        "state": 0,
        "protected": 1,
        "unmanaged": 5,
        "unchanged": 0,
    }


def test_a_jdbc_sink_reported_as_source_is_still_a_jdbc_sink() -> None:
    live = {"odd": Live("odd", cfg(), "source")}
    (step,) = plan("x", {}, live, Policy(force=True), owning(live)).steps
    assert step.action == "delete"


@pytest.mark.parametrize(
    ("name", "ksql"),
    [
        ("DIM_USER", True),
        ("A1_B", True),
        ("X", True),
        ("Dim_user", False),
        ("dim_user", False),
        ("123_456", False),
        ("", False),
    ],
)
def test_ksqldb_names(name: str, ksql: bool) -> None:
    assert is_ksqldb_managed(name) is ksql


# --- the delete policy --------------------------------------------------------------------------


def test_deleting_exactly_max_deletes_is_allowed() -> None:
    live = sinks(30)
    assert gated("x", keep(live, 20), live, Policy(max_deletes=10), owning(live)).refused == ""
    assert (
        gated("x", keep(live, 19), live, Policy(max_deletes=10), owning(live)).refused
        == "would delete 11 connectors (more than 10); rerun with --force"
    )


def test_deleting_exactly_the_share_is_allowed() -> None:
    live = sinks(4)
    assert gated("x", keep(live, 2), live, Policy(max_deletes=10, max_delete_share=0.5), owning(live)).refused == ""
    assert (
        gated("x", keep(live, 1), live, Policy(max_deletes=10, max_delete_share=0.5), owning(live)).refused
        == "would delete 3 of 4 owned sinks (more than 50%); rerun with --force"
    )


def test_the_share_counts_owned_sinks_not_the_live_fleet() -> None:
    """Before ownership: 10 sources + 10 sinks made the share 50 % and every sink went."""
    live = {**sinks(4), **{f"src{i}": Live(f"src{i}", cfg(SOURCE, topics=str(i)), "source") for i in range(10)}}
    desired = {**keep(sinks(4), 2), **{n: Desired(n, dict(lv.config)) for n, lv in live.items() if n.startswith("src")}}
    p = gated("x", desired, live, Policy(max_delete_share=0.25), owning(live))
    assert p.refused == "would delete 2 of 4 owned sinks (more than 25%); rerun with --force"
    theirs = {**sinks(4), **{f"x{i}": Live(f"x{i}", cfg(topics=f"x{i}"), "sink") for i in range(10)}}
    p = gated("x", keep(theirs, 3), theirs, Policy(max_delete_share=0.25), owning(sinks(4)))
    assert [s.name for s in p.of("delete")] == ["s03"] and p.refused == ""


def test_a_single_delete_under_both_limits_is_allowed() -> None:
    live = sinks(4)
    assert gated("x", keep(live, 3), live, Policy(max_deletes=1, max_delete_share=0.25), owning(live)).refused == ""
    assert (
        gated("x", keep(live, 3), live, Policy(max_deletes=0, max_delete_share=0.25), owning(live)).refused
        == "would delete 1 connectors (more than 0); rerun with --force"
    )


def test_no_sink_in_git_refuses_any_delete_whatever_the_counts() -> None:
    live = sinks(2)
    sources = {"src": Desired("src", cfg(SOURCE))}
    p = gated("x", sources, live, Policy(max_deletes=10, max_delete_share=1.0), owning(live))
    assert p.refused == (
        "git has no JDBC sink for this cluster (its sink folder is empty or missing) while "
        "2 owned sinks run: deleting 2 of them needs --force"
    )
    assert gated("x", sources, live, Policy(force=True), owning(live)).refused == ""
    assert gated("x", sources, live, Policy(), Scope()).refused == ""  # nothing owned: nothing deleted


def test_force_lifts_both_limits_and_nothing_to_delete_needs_no_limit() -> None:
    assert gated("x", {}, sinks(30), Policy(force=True), owning(sinks(30))).refused == ""
    src = {"src": Live("src", cfg(SOURCE), "source")}
    assert gated("x", {}, src, Policy(max_deletes=0), owning(src)).refused == ""


def test_only_owned_sinks_are_deleted_and_git_names_not_owned_are_adopted() -> None:
    live = {
        "mine": Live("mine", cfg(topics="a"), "sink"),
        "theirs": Live("theirs", cfg(topics="b"), "sink"),
        "git": Live("git", cfg(topics="c"), "sink"),
        "upd": Live("upd", cfg(topics="d"), "sink"),
    }
    desired = {"git": Desired("git", cfg(topics="c")), "upd": Desired("upd", cfg(topics="e"))}
    p = plan("x", desired, live, Policy(force=True), Scope(frozenset({"mine"}), warnings=("w",)))
    assert [(s.action, s.name) for s in p.steps] == [
        ("unchanged", "git"),
        ("delete", "mine"),
        ("unmanaged", "theirs"),
        ("update", "upd"),
    ]
    assert p.adopt == ("git", "upd") and p.warnings == ("w",)


# --- comparison -----------------------------------------------------------------------------------


def test_comparable_drops_name_and_ignored_keys_only() -> None:
    config = {"name": "a", "x.managed": "1", "topics": "t", "Name": "kept"}
    assert comparable(config, frozenset({"x.managed"})) == {"topics": "t", "Name": "kept"}
    assert comparable(config, frozenset()) == {"x.managed": "1", "topics": "t", "Name": "kept"}


def test_diff_is_sorted_and_empty_when_equal() -> None:
    assert diff({"b": "1", "a": "1"}, {"a": "1", "b": "1"}) == ()
    assert diff({"b": "1", "a": "2"}, {"c": "3", "a": "1"}) == (
        KeyChange("a", "2", "1"),
        KeyChange("b", "1", None),
        KeyChange("c", None, "3"),
    )


@pytest.mark.parametrize(
    ("ignore", "key", "ignored"),
    [
        ({"__internal.*"}, "__internal.owner", True),
        ({"__internal.*"}, "x__internal.owner", False),  # a glob matches the whole key
        ({"transforms.*.negate"}, "transforms.filter.negate", True),
        ({"transforms.*.negate"}, "transforms.filter.type", False),
        ({"a.b"}, "a_b", False),  # `.` is a dot, not any character
        ({"a.b", "c.*"}, "a.b", True),
    ],
)
def test_an_ignored_key_is_an_exact_name_or_a_glob(ignore: set[str], key: str, ignored: bool) -> None:
    desired = {"a": Desired("a", cfg(**{key: "new"}))}
    live = {"a": Live("a", cfg(**{key: "old"}))}
    (step,) = plan("x", desired, live, Policy(ignore_keys=frozenset(ignore))).steps
    assert (step.action == "unchanged") is ignored


def test_a_server_added_internal_key_is_ignored_by_default(tmp_path: Path) -> None:
    from hephaestus.project import Project
    from hephaestus.reconciler.run import policy_of

    policy = policy_of(Project(str(tmp_path / "p.yaml"), {}, {}), False)
    desired = {"a": Desired("a", cfg())}
    live = {"a": Live("a", cfg(**{"__internal.created.by": "operator"}))}
    assert plan("x", desired, live, policy).in_sync


def test_ignored_keys_never_make_an_update() -> None:
    desired = {"a": Desired("a", cfg(**{"x.managed": "new"}))}
    live = {"a": Live("a", cfg(**{"x.managed": "old"}))}
    (step,) = plan("x", desired, live, Policy(ignore_keys=frozenset({"x.managed"}))).steps
    assert (step.action, step.changes) == ("unchanged", ())

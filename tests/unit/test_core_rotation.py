"""The rotation rules (reconciler.rotation, pure; mutation-tested core): which connectors a
rotated secret restarts and in what state it is left, what an apply records after it, and what a
masked value with nothing recorded says."""

from __future__ import annotations

from hephaestus.classes import POSTGRES_SOURCE
from hephaestus.fleet.model import Desired
from hephaestus.reconciler import rotation
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.safety.values import NO_RESOLVER, Resolver

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
PW = "${file:/s.properties:pw}"


def stretch(value: str) -> str:
    return "fp(" + value + ")"


def step(action: str, name: str = "s", live: str = "RUNNING", target: str = "", **config: str) -> Step:
    cfg = config or {"connector.class": SINK, "connection.password": PW}
    return Step(action, name, config=cfg, live_state=live, target_state=target)  # type: ignore[arg-type]


def test_prints_are_of_resolved_placeholders_and_of_gits_secret_values() -> None:
    resolve = Resolver()
    desired = {
        "s": Desired("s", {"connection.password": "${file:/nowhere/x:pw}", "topics": "t", "token": "", "api.key": "k"})
    }
    # /nowhere is not readable: no resolved print; an empty secret value has no git print.
    assert rotation.current(desired, resolve, stretch) == {
        "s": {"git:api.key": "fp(k)", "git:connection.password": "fp(${file:/nowhere/x:pw})"}
    }


def test_a_resolved_value_is_printed(tmp_path: object) -> None:
    from pathlib import Path

    secrets = Path(str(tmp_path)) / "s.properties"
    secrets.write_text("pw=hunter2\n")
    desired = {"s": Desired("s", {"connection.password": f"${{file:{secrets}:pw}}", "x": f"${{file:{secrets}:pw}}"})}
    found = rotation.current(desired, Resolver([secrets]), stretch)["s"]
    assert found["resolved:connection.password"] == found["resolved:x"] == "fp(hunter2)"
    assert "git:x" not in found  # not a secret key: its raw value is no secret


def test_rotated_keys_are_those_recorded_and_moved() -> None:
    now = {"resolved:a": "1", "resolved:b": "2", "resolved:c": "3", "git:d": "9"}
    before = {"resolved:a": "1", "resolved:b": "0", "git:d": "8"}
    assert rotation.rotated(now, before) == ("b",)  # c: never recorded; d: git's, not resolved


def test_only_an_unchanged_connector_is_restarted_with_its_keys_named() -> None:
    gone = Step("protected", "live-only", config={})  # live, not in git: no prints of its own
    p = Plan("c", (gone, step("unchanged", "u"), step("update", "w"), step("unchanged", "quiet")))
    now = {n: {"resolved:connection.password": "2", "resolved:connection.url": "2"} for n in ("u", "w", "quiet")}
    before = {
        "u": {"resolved:connection.password": "1", "resolved:connection.url": "1"},
        "w": {},
        "quiet": now["quiet"],
    }
    got = {s.name: s for s in rotation.with_restarts(p, now, before, NO_RESOLVER).steps}
    assert (got["u"].action, got["u"].reason) == ("restart", "secret rotated (connection.password, connection.url)")
    assert got["w"].action == "update" and got["quiet"].action == "unchanged" and got["live-only"] == gone


def test_a_restart_leaves_gits_state_else_the_settled_one_else_running() -> None:
    def left(live: str, target: str) -> str:
        p = Plan("c", (step("unchanged", live=live, target=target),))
        (s,) = rotation.with_restarts(p, {"s": {"resolved:k": "2"}}, {"s": {"resolved:k": "1"}}, NO_RESOLVER).steps
        return s.target_state

    assert left("PAUSED", "RUNNING") == "RUNNING"
    assert left("PAUSED", "") == "PAUSED"
    assert left("FAILED", "") == "RUNNING"


def test_a_restart_carries_the_effects_of_a_start() -> None:
    source = {"connector.class": POSTGRES_SOURCE, "snapshot.mode": "always", "slot.name": "x"}
    p = Plan("c", (Step("unchanged", "src", config=source, live_state="RUNNING"),))
    (s,) = rotation.with_restarts(p, {"src": {"resolved:k": "2"}}, {"src": {"resolved:k": "1"}}, NO_RESOLVER).steps
    assert [e.code for e in s.effects] == ["resnapshot"]


def test_what_an_apply_records() -> None:
    steps = (
        step("unchanged", "absent"),  # not in git: nothing to record, and the rest still is
        step("unchanged", "same"),
        step("rename", "renamed"),
        step("state", "fresh"),  # moved state, nothing recorded before
        step("update", "done"),
        step("restart", "restarted"),
        step("create", "failed"),
        step("state", "moved"),
        step("state", "stuck"),
    )
    names = ("same", "renamed", "fresh", "done", "restarted", "failed", "moved", "stuck")
    now = {n: {"resolved:k": "new", "git:k": "g2"} for n in names}
    before = {"moved": {"resolved:k": "old", "git:k": "g1"}}
    ok = frozenset({"renamed", "fresh", "done", "restarted", "moved"})
    found = rotation.settled(Plan("c", steps), now, before, ok)
    assert found == {
        "same": now["same"],
        "renamed": now["renamed"],
        "fresh": {"git:k": "g2"},
        "done": now["done"],
        "restarted": now["restarted"],
        "moved": {"git:k": "g2", "resolved:k": "old"},  # a rotation not yet acted on stays pending
    }


def test_a_mask_with_nothing_recorded_is_said_once_per_key() -> None:
    d = Desired("s", {"connection.password": "x", "other.secret": "y"})
    said = rotation.unrecorded(
        "s", d, ("connection.password", "gone.password", "other.secret"), {"git:other.secret": "1"}
    )
    assert said == (
        "s: Connect answers connection.password masked and no apply recorded it: taken as git's value "
        "(the next apply records it, and a change in git is seen from then on)",
    )


def test_a_restarts_effects_read_placeholders_through_the_resolver(tmp_path: object) -> None:
    from pathlib import Path

    secrets = Path(str(tmp_path)) / "s.properties"
    secrets.write_text("mode=always\n")
    # A relative path, as the workers mount it: only the project's secrets_file resolves it here.
    source = {
        "connector.class": POSTGRES_SOURCE,
        "snapshot.mode": "${file:secrets/s.properties:mode}",
        "slot.name": "x",
    }
    p = Plan("c", (Step("unchanged", "src", config=source, live_state="RUNNING"),))
    moved = ({"src": {"resolved:k": "2"}}, {"src": {"resolved:k": "1"}})
    (known,) = rotation.with_restarts(p, *moved, Resolver([secrets])).steps
    (blind,) = rotation.with_restarts(p, *moved, NO_RESOLVER).steps
    assert [e.why for e in known.effects] == ["snapshot.mode=always reads every table on each start"]
    assert [e.why for e in blind.effects] == ["snapshot.mode=unknown here reads every table on each start"]

"""Auto-heal against a JDBC sink task that really fails: for a while (its target refuses writes
during maintenance: restarted with backoff and a budget), or for good (its target
table's check constraint refuses its rows: a permanent cause, never restarted, named once in Slack)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.loopback import slack_receiver
from tests.stack.fleet import Fleet, dump_yaml
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until


@pytest.fixture
def sink_fleet(bob_fleet: Fleet) -> Fleet:
    fleet = bob_fleet
    fleet.only_users_to_auth(dlq=False)  # the failure must fail the task, not park the record
    assert fleet.reconcile()[0] == 0
    return fleet


def heal_settings(fleet: Fleet, **heal: Any) -> None:
    path = fleet.root / "hephaestus.yaml"
    project = yaml.safe_load(path.read_text())
    project["heal"] = heal
    path.write_text(dump_yaml(project))


def heal(fleet: Fleet, *args: str) -> tuple[int, dict[str, Any]]:
    code, out = fleet.cli("heal", "--project", str(fleet.root / "hephaestus.yaml"), "-o", "json", *args)
    return code, json.loads(out[out.index("{") : out.rindex("}") + 1])


def sink_of(fleet: Fleet) -> str:
    return fleet.name("platforms", "_to_")


def item(report: dict[str, Any], name: str) -> dict[str, Any]:
    (cluster,) = report["clusters"]
    return next(c for c in cluster["connectors"] if c["name"] == name)


# A write refused for a while: an error no rule of heal.causes knows, so restarted (transient).
MAINTENANCE = """
CREATE FUNCTION maintenance() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'auth is read-only during maintenance'; END $$;
CREATE TRIGGER maintenance BEFORE INSERT OR UPDATE ON users FOR EACH ROW EXECUTE FUNCTION maintenance();
"""
MAINTENANCE_OVER = "DROP TRIGGER maintenance ON users"
# A row the target's check constraint refuses: permanent (check-violation), and no schema drift
# (hephaestus.drift names a dropped column before the flush, and heal then pauses the sink).
REFUSE_X = "ALTER TABLE users ADD CONSTRAINT no_x CHECK (name <> 'x')"


def break_sink(fleet: Fleet, connect: ConnectClient, user_id: str, how: str = MAINTENANCE) -> None:
    execute(fleet.stack.dsn(fleet.dbs["auth"]), how)
    execute(
        fleet.stack.dsn(fleet.dbs["bob"]), "INSERT INTO users (user_id, name, email) VALUES (%s, 'x', 'x@y')", [user_id]
    )
    wait_until(
        lambda: any(t["state"] == "FAILED" for t in (connect.status(sink_of(fleet)) or {}).get("tasks", [])),
        timeout=120,
        message="the sink task to fail",
    )


def test_heal_restarts_a_failed_task_and_missed_rows_arrive(sink_fleet: Fleet, connect: ConnectClient) -> None:
    fleet = sink_fleet
    heal_settings(fleet, restart_wait_s=10, state={"file": "heal-state.json"})
    break_sink(fleet, connect, "missed-1")
    code, report = heal(fleet, "--dry-run")
    assert code == 2 and item(report, sink_of(fleet))["verdict"] == "restart"
    assert not (fleet.root / "heal-state.json").exists(), "a dry run records nothing"
    assert any(t["state"] == "FAILED" for t in connect.status(sink_of(fleet))["tasks"]), "and restarts nothing"

    execute(fleet.stack.dsn(fleet.dbs["auth"]), MAINTENANCE_OVER)
    prom = fleet.root / "heal.prom"
    code, report = heal(fleet, "--metrics-textfile", str(prom))
    assert code == 0, report
    assert 'hephaestus_heal_restarts{cluster="platforms"} 1.0' in prom.read_text()
    assert 'hephaestus_heal_failed_connectors{cluster="platforms"} 0.0' in prom.read_text()
    healed = item(report, sink_of(fleet))
    assert healed["verdict"] == "restart" and healed["healed"] is True and healed["failed_tasks"] == [0]
    rows = wait_until(
        lambda: read_rows(
            fleet.stack.dsn(fleet.dbs["auth"]), "SELECT user_id, email FROM users WHERE user_id = 'missed-1'"
        ),
        timeout=120,
        message="the missed row in auth",
    )
    assert rows == [("missed-1", "x@y")]
    state = json.loads((fleet.root / "heal-state.json").read_text())
    assert state["platforms"][sink_of(fleet)]["count"] == 1


def test_backoff_budget_and_one_slack_message_per_event(
    sink_fleet: Fleet, connect: ConnectClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = sink_fleet
    # Backoff in units of 5 s instead of minutes: 0, 10 s, …; two restarts at most. A restart
    # must hold for 8 s: the poison record fails the task again within that.
    heal_settings(fleet, max_restarts=2, backoff_unit_s=5, restart_wait_s=8, state={"file": "heal-state.json"})
    break_sink(fleet, connect, "poison-1")
    name = sink_of(fleet)
    with slack_receiver() as slack:
        monkeypatch.setenv("HEPHAESTUS_SLACK_WEBHOOK", slack.url)
        verdicts = []
        code, report = heal(fleet)
        verdicts.append(item(report, name)["verdict"])
        assert code == 2 and item(report, name)["healed"] is False
        code, report = heal(fleet)
        verdicts.append(item(report, name)["verdict"])
        assert "restart 2 in" in item(report, name)["reason"]
        assert len(slack.texts()) == 1 and "failed again after a restart" in slack.texts()[0]

        def restarted_twice() -> bool:
            heal(fleet)  # in backoff until 10 s after the first restart, then restart 2
            return bool(restart_count(fleet, name) == 2)

        wait_until(restarted_twice, timeout=60, interval=2, message="the second restart after the backoff")
        code, report = heal(fleet)
        verdicts.append(item(report, name)["verdict"])
        code, report = heal(fleet)
        verdicts.append(item(report, name)["verdict"])
    assert code == 2
    assert verdicts == ["restart", "backoff", "exhausted", "exhausted"]
    assert len(slack.texts()) == 2 and "restart budget exhausted" in slack.texts()[1]
    assert name in slack.texts()[1] and "auth is read-only during maintenance" in slack.texts()[1]


def test_a_permanent_error_is_never_restarted_and_named_in_one_slack_message(
    sink_fleet: Fleet, connect: ConnectClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = sink_fleet
    heal_settings(fleet, restart_wait_s=5, state={"file": "heal-state.json"})
    break_sink(fleet, connect, "lost-1", REFUSE_X)
    name = sink_of(fleet)
    with slack_receiver() as slack:
        monkeypatch.setenv("HEPHAESTUS_SLACK_WEBHOOK", slack.url)
        for _ in range(2):
            code, report = heal(fleet)
            found = item(report, name)
            assert code == 2 and (found["verdict"], found["cause"]) == ("permanent", "check-violation"), found
            assert found["healed"] is None and "no_x" in found["reason"], found
    assert len(slack.texts()) == 1, slack.texts()
    assert "a permanent error, not restarted" in slack.texts()[0] and "no_x" in slack.texts()[0]
    assert restart_count(fleet, name) == 0


def restart_count(fleet: Fleet, name: str) -> int:
    state = json.loads((fleet.root / "heal-state.json").read_text())
    return int(state["platforms"][name]["count"])


def test_postgres_state_store_and_lock(stack: Stack, fresh_db: Callable[..., str]) -> None:
    from hephaestus.heal.policy import Record
    from hephaestus.state.heal import HealBusy, HealTable

    dsn = stack.dsn(fresh_db("auth"))
    with HealTable(dsn) as store:
        store.save("platforms", {"x": Record(count=3, last_restart=1.5, notified=3)})
        with pytest.raises(HealBusy):
            HealTable(dsn).__enter__()
    with HealTable(dsn) as store:
        assert store.load("platforms") == {"x": Record(count=3, last_restart=1.5, notified=3)}
    rows = read_rows(dsn, "SELECT cluster, connector FROM hephaestus_heal_state")
    assert rows == [("platforms", "x")]

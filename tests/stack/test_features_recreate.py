"""Steps for features/recreate_source_connector_not_consume_db_log.feature (real stack)."""

from __future__ import annotations

from typing import Any

from pytest_bdd import given, parsers, scenarios, then, when

from tests.stack.fleet import Fleet
from tests.stack.support import REPO, ConnectClient, execute, read_rows, wait_until

scenarios(str(REPO / "features" / "recreate_source_connector_not_consume_db_log.feature"))


@given("a running source capturing bob.users into auth.users", target_fixture="fleet")
def running_source(bob_fleet: Fleet) -> Fleet:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    code, report = fleet.reconcile()
    assert code == 0, report
    _insert(fleet, "before-1")
    _arrives(fleet, "before-1")
    return fleet


def _source(fleet: Fleet) -> str:
    return f"{fleet.slot()}_source_connector"


def _insert(fleet: Fleet, user_id: str) -> None:
    execute(fleet.stack.dsn(fleet.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES (%s, 'x')", [user_id])


def _arrives(fleet: Fleet, user_id: str) -> None:
    auth = fleet.stack.dsn(fleet.dbs["auth"])
    wait_until(
        lambda: read_rows(auth, "SELECT 1 FROM users WHERE user_id = %s", [user_id]),
        timeout=120,
        message=f"{user_id} in auth.users",
    )


@when("the source connector is deleted by hand", target_fixture="saved_config")
def delete_source(fleet: Fleet, connect: ConnectClient) -> dict[str, Any]:
    name = _source(fleet)
    config: dict[str, Any] = connect.config(name)
    connect.delete(name)
    wait_until(lambda: name not in connect.names(), timeout=30, message="source deleted")
    bob = fleet.stack.dsn(fleet.dbs["bob"])
    wait_until(
        lambda: (
            read_rows(bob, "SELECT active FROM pg_replication_slots WHERE slot_name = %s", [config["slot.name"]])
            == [(False,)]
        ),
        timeout=60,
        message="slot released",
    )
    return config


@when("its replication slot is dropped")
def drop_slot(fleet: Fleet, saved_config: dict[str, Any]) -> None:
    execute(fleet.stack.dsn(fleet.dbs["bob"]), "SELECT pg_drop_replication_slot(%s)", [saved_config["slot.name"]])


@when(parsers.parse('a user "{user_id}" is inserted while the source is deleted'))
@when(parsers.parse('a user "{user_id}" is inserted into bob.users'))
def insert_user(fleet: Fleet, user_id: str) -> None:
    _insert(fleet, user_id)


@then("Connect still holds the source's offsets")
def offsets_kept(fleet: Fleet, connect: ConnectClient, saved_config: dict[str, Any]) -> None:
    # The offsets endpoint needs the connector; recreate it STOPPED to read them untouched.
    name = _source(fleet)
    response = connect.http.post("/connectors", json={"name": name, "config": saved_config, "initial_state": "STOPPED"})
    assert response.status_code == 201, response.text
    offsets = wait_until(
        lambda: connect.http.get(f"/connectors/{name}/offsets").json().get("offsets"),
        timeout=30,
        message="offsets of the STOPPED source",
    )
    assert offsets[0]["offset"]["lsn"] > 0
    connect.delete(name)
    wait_until(lambda: name not in connect.names(), timeout=30, message="source deleted again")


@when("the source connector is recreated with the same name and config")
def recreate(fleet: Fleet, connect: ConnectClient, saved_config: dict[str, Any]) -> None:
    connect.put_config(_source(fleet), saved_config)


@then(parsers.parse('the user "{user_id}" reads back from auth.users'))
def reads_back(fleet: Fleet, user_id: str) -> None:
    _arrives(fleet, user_id)


@then("the source task fails because its offset is no longer available on the server")
def task_fails(fleet: Fleet, connect: ConnectClient) -> None:
    def failed_trace() -> str:
        status = connect.status(_source(fleet)) or {}
        return next((t.get("trace", "") for t in status.get("tasks", []) if t["state"] == "FAILED"), "")

    trace = wait_until(failed_trace, timeout=60, message="the recreated source task to fail")
    assert "no longer available on the server" in trace


@then(parsers.parse('the user "{user_id}" is not in auth.users'))
def not_there(fleet: Fleet, user_id: str) -> None:
    assert read_rows(fleet.stack.dsn(fleet.dbs["auth"]), "SELECT 1 FROM users WHERE user_id = %s", [user_id]) == []


@when("the source's file is removed from git and the upsert job runs", target_fixture="job_report")
def remove_source_file(fleet: Fleet) -> dict[str, Any]:
    (fleet.root / "connectors/platforms/source" / f"{_source(fleet)}.json").unlink()
    code, report = fleet.reconcile()
    assert code == 0, report
    return report


@then("the source is reported protected and is still RUNNING")
def protected(fleet: Fleet, connect: ConnectClient, job_report: dict[str, Any]) -> None:
    step = next(s for s in job_report["clusters"][0]["steps"] if s["name"] == _source(fleet))
    assert step["action"] == "protected"
    connect.wait_running(_source(fleet))

"""A secret rotated behind its placeholder, on the real stack (issue 33): the sink's database
user gets a new password and the workers' secrets file the new value, git is unchanged. The
running sink keeps the old credential until its connections drop, then fails to reconnect;
`reconcile` sees the rotation (a keyed fingerprint of the resolved value, never the value),
restarts the sink, and rows arrive again, read back at the sink. A second run plans nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, Stack, _rewrite_secrets, execute, read_rows, wait_until


@pytest.fixture
def fleet(bob_fleet: Fleet, stack: Stack) -> Iterator[Fleet]:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    path = fleet.root / "hephaestus.yaml"
    path.write_text(
        path.read_text().replace(
            "    connectors: connectors/platforms\n",
            f"    connectors: connectors/platforms\n    secrets_file: {stack.secrets_file}\n",
            1,
        )
    )
    assert f"secrets_file: {stack.secrets_file}" in path.read_text()
    fleet.edit_project(policy={"ready_timeout_s": 120, "stability_window_s": 2})
    assert fleet.reconcile()[0] == 0
    yield fleet


GROUP = (
    "DO $$ BEGIN CREATE ROLE heph_password_users NOLOGIN; "
    "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
)


def _set(stack: Stack, db: str, values: dict[str, str]) -> None:
    keys = {f"{db}_{k}" for k in values}
    new = [f"{db}_{k}={v}" for k, v in values.items()]
    _rewrite_secrets(stack.secrets_file, lambda lines: [x for x in lines if x.split("=", 1)[0] not in keys] + new)


def test_a_rotated_password_restarts_the_sink_and_rows_arrive_again(
    fleet: Fleet, stack: Stack, connect: ConnectClient
) -> None:
    bob, auth_db = fleet.stack.dsn(fleet.dbs["bob"]), fleet.dbs["auth"]
    auth = fleet.stack.dsn(auth_db)
    role = f"rot_{auth_db}"[:60]
    sink = fleet.name("platforms", "to_" + auth_db)
    # A member of heph_password_users: the stack's server checks its password (others: trust).
    execute(auth, GROUP)
    execute(auth, f"CREATE ROLE \"{role}\" LOGIN PASSWORD 'first-pw' IN ROLE heph_password_users")
    try:
        execute(auth, f'GRANT CONNECT ON DATABASE "{auth_db}" TO "{role}"')
        execute(auth, f'GRANT USAGE ON SCHEMA public TO "{role}"; GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"')
        _rotate_and_check(fleet, stack, connect, bob, auth, role, sink)
    finally:
        _set(stack, auth_db, {"username": stack.pg_user, "password": stack.pg_password})
        execute(auth, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'")
        execute(auth, f'DROP OWNED BY "{role}"; DROP ROLE "{role}"')


def _rotate_and_check(
    fleet: Fleet, stack: Stack, connect: ConnectClient, bob: str, auth: str, role: str, sink: str
) -> None:
    auth_db = fleet.dbs["auth"]

    def arrived(user_id: str) -> None:
        query = "SELECT count(*) FROM users WHERE user_id = %s"
        wait_until(lambda: read_rows(auth, query, [user_id])[0][0] == 1 or None, timeout=120, message=user_id)

    # The sink moves to its own user: the file's values change, git's placeholders do not.
    _set(stack, auth_db, {"username": role, "password": "first-pw"})
    code, report = fleet.reconcile()
    (step,) = [s for s in report["clusters"][0]["steps"] if s["action"] == "restart"]
    assert code == 0 and step["name"] == sink, json.dumps(report, indent=1)
    assert step["reason"] == "secret rotated (connection.password, connection.username)"
    execute(bob, "INSERT INTO users (user_id, name) VALUES ('rot-1', 'a')")
    arrived("rot-1")
    assert read_rows(auth, "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", [role])[0][0] >= 1

    # The password rotates; the sink's sessions drop (as a database restart or failover does):
    # it cannot reconnect with the credential it holds.
    execute(auth, f"ALTER ROLE \"{role}\" PASSWORD 'second-pw'")
    _set(stack, auth_db, {"password": "second-pw"})
    execute(auth, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'")
    execute(bob, "INSERT INTO users (user_id, name) VALUES ('rot-2', 'b')")
    wait_until(lambda: _failing(connect, sink) or None, timeout=120, message="the sink failing on its old password")
    assert read_rows(auth, "SELECT count(*) FROM users WHERE user_id = 'rot-2'")[0][0] == 0

    code, report = fleet.reconcile()
    (step,) = [s for s in report["clusters"][0]["steps"] if s["action"] == "restart"]
    assert code == 0 and step["reason"] == "secret rotated (connection.password)", json.dumps(report, indent=1)
    arrived("rot-2")
    execute(bob, "INSERT INTO users (user_id, name) VALUES ('rot-3', 'c')")
    arrived("rot-3")

    code, report = fleet.reconcile("--dry-run", "--exit-code")
    assert code == 0 and report["clusters"][0]["writes"] == 0, json.dumps(report, indent=1)
    recorded = (fleet.root / ".hephaestus/prints.json").read_text()
    assert "second-pw" not in recorded and "first-pw" not in recorded
    assert connect.status(sink)["connector"]["state"] == "RUNNING"  # type: ignore[index]


def _failing(connect: ConnectClient, sink: str) -> bool:
    status = connect.status(sink) or {}
    return any(t.get("state") == "FAILED" for t in status.get("tasks", []))

"""Step definitions for features/*.feature (pytest-bdd), run against the real stack."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from tests.stack.fleet import Fleet, make_fleet
from tests.stack.support import REPO, ConnectClient, Stack, connector_running, execute, read_rows, wait_until

scenarios(str(REPO / "features" / "job_upsert_kafka_connector.feature"))


@given(parsers.parse('fresh databases for the "{example}" example'), target_fixture="fleet")
def fresh_fleet(
    example: str,
    tmp_path: Path,
    stack: Stack,
    fresh_db: Callable[..., str],
    connect: ConnectClient,
    capsys: pytest.CaptureFixture[str],
) -> Fleet:
    return make_fleet(tmp_path, stack, fresh_db, capsys, [example], {"platforms": connect})


@given("connectors generated from its definition")
def generated(fleet: Fleet) -> None:
    assert fleet.connector_names("platforms")


@when(parsers.parse('the job "{job}" runs'), target_fixture="job_result")
def job_runs(fleet: Fleet, job: str) -> dict[str, Any]:
    for name in fleet.connector_names("platforms"):
        fleet.clients["platforms"].track(name)
    code, out = fleet.cli("job", "run", job, "--project", str(fleet.root / "hephaestus.yaml"))
    return {"code": code, "out": out}


@then(parsers.parse("the job exits with {code:d}"))
def job_exit(job_result: dict[str, Any], code: int) -> None:
    assert job_result["code"] == code, job_result["out"]


@then("every generated connector and its tasks are RUNNING")
def all_running(fleet: Fleet, connect: ConnectClient) -> None:
    for name in fleet.connector_names("platforms"):
        assert connector_running(connect, name), name


@when(parsers.parse('a user "{user_id}" is inserted into bob.users'))
def insert_user(fleet: Fleet, user_id: str) -> None:
    execute(fleet.stack.dsn(fleet.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES (%s, 'Feature')", [user_id])


@then(parsers.parse('the user "{user_id}" reads back from auth.users'))
def reads_back(fleet: Fleet, user_id: str) -> None:
    dsn = fleet.stack.dsn(fleet.dbs["auth"])
    rows = wait_until(
        lambda: read_rows(dsn, "SELECT user_id, name FROM users WHERE user_id = %s", [user_id]),
        timeout=120,
        message=f"{user_id} in auth.users",
    )
    assert rows == [(user_id, "Feature")]

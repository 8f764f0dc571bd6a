"""Fixtures for tests that run against the real stack (PostgreSQL, Kafka, Connect, Debezium).

Every test under tests/stack is marked `stack`; run them with `pytest -m stack`.

Fixtures (reuse them from any stack test):

- `stack` (session): runs `dev/stack/up` once (a running stack is reused, and left running at
  the end) and returns a `support.Stack`: `dsn(db)`, `jdbc_url(db)`, `secret_ref(db, key)`,
  `connect_url`, `connect2_url` (None unless a second Connect cluster runs), `bootstrap`,
  `work_dir`, `secrets_file`, `pg_*`. Set HEPH_STACK_SKIP_UP=1 to use a stack started
  elsewhere without calling `up`.
- `fresh_db` (function): factory `fresh_db(template, name=None) -> str` creating a database
  (default name `<template>_t<hex>`) from dev/stack/sql/<template>.sql and writing its
  `<name>_*` keys into the Connect secrets file; teardown drops its replication slots and the
  database and removes the keys.
- `connect` (function): a `support.ConnectClient` on the first Connect cluster; connectors it
  created are deleted at teardown, before `fresh_db` drops the databases.
- `stack2` (session) / `connect2` (function): the same with a second Connect cluster, started
  on first use by `dev/stack/up --second-connect`.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.stack.fleet import Fleet, make_fleet
from tests.stack.support import (
    STACK_SRC,
    ConnectClient,
    Stack,
    add_db_secrets,
    create_database,
    drop_database,
    remove_db_secrets,
    unique_suffix,
)

HERE = Path(__file__).resolve().parent

# A cold first start downloads jars with Maven; later starts take seconds.
UP_TIMEOUT_S = 1200


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.stack)


def _run_up(*args: str, connects: int | None = None) -> None:
    env = {**os.environ, "HEPH_STACK_CONNECTS": str(connects)} if connects else None
    proc = subprocess.run(
        [str(STACK_SRC / "up"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=UP_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"dev/stack/up {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def stack() -> Stack:
    if os.environ.get("HEPH_STACK_SKIP_UP") != "1":
        _run_up()
    return Stack.from_env()


@pytest.fixture(scope="session")
def stack2(stack: Stack) -> Stack:
    """The stack with a second Connect cluster running (started on first use)."""
    if stack.connect2_url is not None:
        return stack
    _run_up("--second-connect")
    fresh = Stack.from_env()
    assert fresh.connect2_url is not None, "dev/stack/up --second-connect left no second cluster"
    return dataclasses.replace(stack, connect2_url=fresh.connect2_url)


@pytest.fixture(scope="session")
def stack3(stack2: Stack) -> Stack:
    """The stack with a third Connect cluster, the data-warehouse stack's (started on first use)."""
    if stack2.connect3_url is not None:
        return stack2
    _run_up(connects=3)
    fresh = Stack.from_env()
    assert fresh.connect3_url is not None, "HEPH_STACK_CONNECTS=3 dev/stack/up left no third cluster"
    return dataclasses.replace(stack2, connect3_url=fresh.connect3_url)


@pytest.fixture
def fresh_db(stack: Stack) -> Iterator[Callable[..., str]]:
    created: list[str] = []

    def make(template: str, name: str | None = None) -> str:
        db = name or f"{template}_t{unique_suffix()}"
        create_database(stack, db, template)
        created.append(db)
        add_db_secrets(stack, db)
        return db

    yield make

    errors: list[str] = []
    for db in reversed(created):
        try:
            drop_database(stack, db)
            remove_db_secrets(stack, db)
        except Exception as exc:  # noqa: BLE001 - drop the others, then report
            errors.append(f"{db}: {exc!r}")
    if errors:
        pytest.fail("fresh_db teardown: " + "; ".join(errors), pytrace=False)


# `fresh_db` is requested only for ordering: fixtures tear down in reverse order of set-up, so
# the connectors (and their replication connections) are gone before the databases are dropped.
def _tracked_client(url: str) -> Iterator[ConnectClient]:
    """A test's Connect client; what it tracked is deleted at teardown."""
    client = ConnectClient(url)
    try:
        yield client
        client.cleanup()
    finally:
        client.close()


@pytest.fixture
def connect(stack: Stack, fresh_db: Callable[..., str]) -> Iterator[ConnectClient]:
    yield from _tracked_client(stack.connect_url)


@pytest.fixture
def connect2(stack2: Stack, fresh_db: Callable[..., str]) -> Iterator[ConnectClient]:
    assert stack2.connect2_url is not None
    yield from _tracked_client(stack2.connect2_url)


@pytest.fixture
def connect3(stack3: Stack, fresh_db: Callable[..., str]) -> Iterator[ConnectClient]:
    assert stack3.connect3_url is not None
    yield from _tracked_client(stack3.connect3_url)


@pytest.fixture
def bob_fleet(
    tmp_path: Path,
    stack: Stack,
    fresh_db: Callable[..., str],
    connect: ConnectClient,
    capsys: pytest.CaptureFixture[str],
) -> Fleet:
    """The common fleet: bob's definition on fresh databases, generated for cluster `platforms`
    (a test's own fixture shapes it further: which pipelines, which policy)."""
    return make_fleet(tmp_path, stack, fresh_db, capsys, ["bob"], {"platforms": connect})

"""Plain helpers for tests that run against the real stack (dev/stack/).

Fixtures live in conftest.py; this module holds the code they and the tests share: the stack's
coordinates, polling, PostgreSQL and Kafka Connect REST helpers, and the Connect secrets file.
Nothing here imports hephaestus: stack tests must prove things with independent means.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

REPO = Path(__file__).resolve().parents[2]
STACK_SRC = REPO / "dev" / "stack"
SQL_DIR = STACK_SRC / "sql"

# Relative on purpose: Connect runs with the stack work dir as its working directory.
SECRETS_REF = "secrets/connect.properties"
SECRET_KEYS = ("hostname", "port", "username", "password", "dbname", "url")

T = TypeVar("T")


# ------------------------------------------------------------------------------------------
# Where the stack is
# ------------------------------------------------------------------------------------------


def load_stack_env() -> dict[str, str]:
    """The HEPH_* settings as dev/stack/env.sh resolves them (defaults + this process's env).

    Asking env.sh itself keeps one source of truth for ports and paths.
    """
    out = subprocess.run(
        ["bash", "-c", 'source "$1/env.sh" && env -0', "_", str(STACK_SRC)],
        check=True,
        capture_output=True,
    ).stdout.decode()
    pairs = (entry.split("=", 1) for entry in out.split("\0") if "=" in entry)
    return {key: value for key, value in pairs if key.startswith("HEPH_")}


@dataclass(frozen=True)
class Stack:
    """Coordinates of a running stack, as the `stack` fixture hands them to tests."""

    work_dir: Path
    secrets_file: Path
    pg_host: str
    pg_port: int
    pg_user: str
    pg_password: str
    bootstrap: str
    connect_url: str
    connect2_url: str | None
    connect3_url: str | None = None  # the data-warehouse (kec) cluster, HEPH_STACK_CONNECTS=3
    # The schema registry (Apicurio, in-memory), None unless it answers: its Confluent API, for
    # Confluent clients and schema_registry_url, and its own v2 API, for the AvroConverter's
    # apicurio.registry.url.
    registry_url: str | None = None
    registry_apicurio_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Stack:
        env = load_stack_env() if env is None else env
        connect2 = f"http://{env['HEPH_CONNECT_HOST']}:{env['HEPH_CONNECT2_PORT']}"
        connect3 = f"http://{env['HEPH_CONNECT_HOST']}:{env['HEPH_CONNECT3_PORT']}"
        registry = env.get("HEPH_REGISTRY_URL")
        registry_up = registry is not None and registry_answers(registry)
        return cls(
            work_dir=Path(env["HEPH_STACK_DIR"]),
            secrets_file=Path(env["HEPH_SECRETS_FILE"]),
            pg_host=env["HEPH_PG_HOST"],
            pg_port=int(env["HEPH_PG_PORT"]),
            pg_user=env["HEPH_PG_USER"],
            pg_password=env["HEPH_PG_PASSWORD"],
            bootstrap=f"{env['HEPH_KAFKA_HOST']}:{env['HEPH_KAFKA_PORT']}",
            connect_url=f"http://{env['HEPH_CONNECT_HOST']}:{env['HEPH_CONNECT_PORT']}",
            connect2_url=connect2 if connect_answers(connect2) else None,
            connect3_url=connect3 if connect_answers(connect3) else None,
            registry_url=f"{registry}/apis/ccompat/v7" if registry_up else None,
            registry_apicurio_url=f"{registry}/apis/registry/v2" if registry_up else None,
        )

    @property
    def connects(self) -> int:
        """How many Connect clusters run (what `dev/stack/up` must keep running)."""
        return 3 if self.connect3_url else 2 if self.connect2_url else 1

    def dsn(self, db: str) -> str:
        """libpq connection string for database `db` as the superuser."""
        return make_conninfo(
            host=self.pg_host,
            port=str(self.pg_port),
            user=self.pg_user,
            password=self.pg_password,
            dbname=db,
            connect_timeout="10",
        )

    def jdbc_url(self, db: str) -> str:
        return f"jdbc:postgresql://{self.pg_host}:{self.pg_port}/{db}"

    @staticmethod
    def secret_ref(db: str, key: str) -> str:
        """Connect config placeholder for a key of the secrets file, e.g. ("bob", "password")."""
        if key not in SECRET_KEYS:
            raise ValueError(f"unknown secret key {key!r}; one of {SECRET_KEYS}")
        return "${file:" + SECRETS_REF + ":" + f"{db}_{key}" + "}"


def connect_answers(url: str) -> bool:
    try:
        return httpx.get(url + "/", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def registry_answers(url: str) -> bool:
    """The registry's Confluent API answers (what dev/stack/up waits for)."""
    try:
        return httpx.get(url + "/apis/ccompat/v7/subjects", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def unique_suffix() -> str:
    """Short random hex for names (databases, slots, topics, connectors) unique per test."""
    return secrets.token_hex(4)


# ------------------------------------------------------------------------------------------
# Polling
# ------------------------------------------------------------------------------------------


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 60.0,
    interval: float = 0.5,
    message: str = "condition",
) -> T:
    """Call `predicate` until it returns something truthy and return that; fail after `timeout`.

    Exceptions from the predicate count as "not yet" (services answer 404/409/connection
    refused while they settle); the last one is reported on timeout.
    """
    deadline = time.monotonic() + timeout
    last_value: object = None
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except Exception as exc:  # noqa: BLE001 - polled conditions fail transiently
            last_error = exc
        else:
            if value:
                return value
            last_value = value
        if time.monotonic() >= deadline:
            detail = f"last value {last_value!r}"
            if last_error is not None:
                detail += f", last error {last_error!r}"
            raise AssertionError(f"timed out after {timeout:g}s waiting for {message}: {detail}")
        time.sleep(interval)


# ------------------------------------------------------------------------------------------
# PostgreSQL
# ------------------------------------------------------------------------------------------


def read_rows(dsn: str, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


def execute(dsn: str, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> None:
    """Run one statement (or, without params, a whole script) in autocommit mode."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(query, params)


def shipped_sql(template: str) -> str:
    path = SQL_DIR / f"{template}.sql"
    if not path.is_file():
        known = sorted(p.stem for p in SQL_DIR.glob("*.sql"))
        raise ValueError(f"no dev/stack/sql/{template}.sql; shipped: {known}")
    return path.read_text()


def create_database(stack: Stack, name: str, template: str) -> None:
    """Create database `name` and run dev/stack/sql/<template>.sql in it."""
    script = shipped_sql(template)
    with psycopg.connect(stack.dsn("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    # Without parameters psycopg sends the script as one simple query: several statements
    # and DO blocks are fine.
    execute(stack.dsn(name), script)


def drop_replication_slot(stack: Stack, slot: str, timeout: float = 30.0) -> None:
    """Drop a replication slot if it exists, ending the walsender that holds it first.

    Debezium leaves its slot behind when a connector is deleted (slot.drop.on.stop=false).
    """
    with psycopg.connect(stack.dsn("postgres"), autocommit=True) as conn:

        def gone() -> bool:
            row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
            if row is None:
                return True
            if row[0] is not None:
                conn.execute("SELECT pg_terminate_backend(%s)", (row[0],))
                return False
            try:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
            except psycopg.errors.ObjectInUse:
                return False  # a walsender grabbed it between the two queries
            except psycopg.errors.UndefinedObject:
                pass
            return True

        wait_until(gone, timeout=timeout, interval=0.2, message=f"replication slot {slot} dropped")


def drop_database(stack: Stack, name: str, timeout: float = 30.0) -> None:
    """Drop database `name` with its replication slots and sessions.

    A logical slot pins its database (DROP DATABASE refuses while one exists) and an active slot
    cannot be dropped, so: end the walsenders, drop the slots, then DROP ... WITH (FORCE).
    """
    with psycopg.connect(stack.dsn("postgres"), autocommit=True) as conn:
        slots = [
            row[0]
            for row in conn.execute(
                "SELECT slot_name FROM pg_replication_slots WHERE database = %s", (name,)
            ).fetchall()
        ]
    for slot in slots:
        drop_replication_slot(stack, slot, timeout=timeout)
    with psycopg.connect(stack.dsn("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


# ------------------------------------------------------------------------------------------
# Connect secrets file (FileConfigProvider re-reads it on every resolution)
# ------------------------------------------------------------------------------------------

_DB_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def _rewrite_secrets(path: Path, edit: Callable[[list[str]], list[str]]) -> None:
    """Edit the secrets file under the lock dev/stack/lib.sh uses; replace it atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lines = path.read_text().splitlines() if path.exists() else []
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
        try:
            with os.fdopen(fd, "w") as out:
                out.write("".join(line + "\n" for line in edit(lines)))
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


def _is_db_key(line: str, db: str) -> bool:
    return any(line.startswith(f"{db}_{key}=") for key in SECRET_KEYS)


def add_db_secrets(stack: Stack, db: str) -> None:
    """Write <db>_hostname/port/username/password/dbname/url for database `db`."""
    if not _DB_NAME.match(db):
        raise ValueError(f"unsupported database name for the secrets file: {db!r}")
    values = {
        "hostname": stack.pg_host,
        "port": str(stack.pg_port),
        "username": stack.pg_user,
        "password": stack.pg_password,
        "dbname": db,
        "url": stack.jdbc_url(db),
    }
    new = [f"{db}_{key}={values[key]}" for key in SECRET_KEYS]
    _rewrite_secrets(stack.secrets_file, lambda lines: [lv for lv in lines if not _is_db_key(lv, db)] + new)


def remove_db_secrets(stack: Stack, db: str) -> None:
    _rewrite_secrets(stack.secrets_file, lambda lines: [lv for lv in lines if not _is_db_key(lv, db)])


# ------------------------------------------------------------------------------------------
# Kafka Connect REST
# ------------------------------------------------------------------------------------------


def _transient(response: httpx.Response) -> bool:
    """Connect answers these while a rebalance is under way; they go away on their own."""
    if response.status_code == 409:
        return True
    return response.status_code == 500 and "rebalance" in response.text.lower()


def connector_status(client: httpx.Client, name: str) -> dict[str, Any] | None:
    response = client.get(f"/connectors/{name}/status")
    if response.status_code == 404:
        return None
    response.raise_for_status()
    status: dict[str, Any] = response.json()
    return status


def connector_running(client: httpx.Client | ConnectClient, name: str) -> bool:
    """True when the connector and at least one task, and every task, are RUNNING."""
    http = client.http if isinstance(client, ConnectClient) else client
    status = connector_status(http, name)
    if status is None or status["connector"]["state"] != "RUNNING":
        return False
    tasks = status.get("tasks", [])
    return bool(tasks) and all(task["state"] == "RUNNING" for task in tasks)


class ConnectorFailed(AssertionError):
    pass


class ConnectClient:
    """A small Kafka Connect REST helper for tests (raw httpx, no hephaestus code).

    Connectors created through `put_config` (or passed to `track`) are deleted by `cleanup()`,
    which the `connect`/`connect2` fixtures call at teardown.
    """

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=timeout)
        self.created: list[str] = []

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, retry_for: float = 60.0, **kwargs: Any) -> httpx.Response:
        deadline = time.monotonic() + retry_for
        while True:
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError:
                if time.monotonic() >= deadline:
                    raise
            else:
                if not _transient(response) or time.monotonic() >= deadline:
                    return response
            time.sleep(0.5)

    def track(self, name: str) -> None:
        if name not in self.created:
            self.created.append(name)

    def put_config(self, name: str, config: Mapping[str, str]) -> dict[str, Any]:
        """Create or update connector `name` (PUT /connectors/{name}/config)."""
        bad = {k: v for k, v in config.items() if not isinstance(v, str)}
        if bad:
            raise TypeError(f"Connect config values must be strings: {bad}")
        self.track(name)
        response = self._call("PUT", f"/connectors/{name}/config", json=dict(config))
        if response.status_code not in (200, 201):
            raise AssertionError(f"PUT {name} config: {response.status_code} {response.text}")
        info: dict[str, Any] = response.json()
        return info

    def delete(self, name: str) -> None:
        response = self._call("DELETE", f"/connectors/{name}")
        if response.status_code not in (204, 404):
            raise AssertionError(f"DELETE {name}: {response.status_code} {response.text}")

    def status(self, name: str) -> dict[str, Any] | None:
        return connector_status(self.http, name)

    def config(self, name: str) -> dict[str, Any]:
        """The stored config (GET …/config), asked again while a rebalance makes Connect answer
        409 or 500: with tests side by side, another test's write can be rebalancing."""
        response = self._call("GET", f"/connectors/{name}/config")
        if response.status_code != 200:
            raise AssertionError(f"GET {name} config: {response.status_code} {response.text}")
        config: dict[str, Any] = response.json()
        return config

    def offsets(self, name: str) -> list[dict[str, Any]]:
        """The connector's offsets (GET …/offsets), asked again through a rebalance as `config`."""
        response = self._call("GET", f"/connectors/{name}/offsets")
        if response.status_code != 200:
            raise AssertionError(f"GET {name} offsets: {response.status_code} {response.text}")
        offsets: list[dict[str, Any]] = response.json()["offsets"]
        return offsets

    def names(self) -> list[str]:
        response = self._call("GET", "/connectors")
        response.raise_for_status()
        names: list[str] = response.json()
        return names

    def wait_running(self, name: str, timeout: float = 90.0) -> dict[str, Any]:
        """Wait until the connector and all its tasks run; fail at once if one FAILED."""

        def check() -> dict[str, Any] | None:
            status = self.status(name)
            if status is None:
                return None
            states = [status["connector"]] + list(status.get("tasks", []))
            failed = [s for s in states if s["state"] == "FAILED"]
            if failed:
                raise ConnectorFailed(f"{name} FAILED: {failed[0].get('trace', '')[:4000]}")
            return status if connector_running(self.http, name) else None

        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                result = check()
            except ConnectorFailed:
                raise
            except httpx.HTTPError as exc:
                last = exc
            else:
                if result is not None:
                    return result
                last = self.status(name)
            if time.monotonic() >= deadline:
                raise AssertionError(f"{name} not RUNNING after {timeout:g}s: {last!r}")
            time.sleep(0.5)

    def cleanup(self, names: Iterable[str] | None = None) -> None:
        """Delete the given (default: all tracked) connectors; wait until they are gone."""
        targets = list(self.created if names is None else names)
        for name in targets:
            self.delete(name)
        wait_until(
            lambda: not set(targets) & set(self.names()),
            timeout=60,
            message=f"connectors {targets} deleted",
        )
        self.created = [n for n in self.created if n not in targets]


def json_in(out: str) -> Any:
    """The JSON document a command printed, from the first `{`: `fleet.cli` joins stdout and
    stderr, where a warning (a rebalance retried) may follow the document."""
    return json.JSONDecoder().raw_decode(out, out.index("{"))[0]

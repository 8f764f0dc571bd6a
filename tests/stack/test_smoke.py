"""Smoke test of the real stack, with raw Connect REST (no hephaestus code).

PostgreSQL (bob) → Debezium PostgreSQL source → Kafka → Debezium JDBC sink → PostgreSQL
(auth), with connection settings resolved by Connect's FileConfigProvider from the stack's
secrets file. Passes only when the rows are read back from the sink database.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.stack.support import (
    ConnectClient,
    Stack,
    drop_replication_slot,
    execute,
    read_rows,
    unique_suffix,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)

SYNC_TIMEOUT_S = 90
USER_COLUMNS = "user_id, name, email, resource_path, created_at, updated_at, deleted_at"


def source_config(stack: Stack, db: str, tag: str) -> dict[str, str]:
    ref = stack.secret_ref
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": ref(db, "hostname"),
        "database.port": ref(db, "port"),
        "database.user": ref(db, "username"),
        "database.password": ref(db, "password"),
        "database.dbname": ref(db, "dbname"),
        "topic.prefix": tag,
        "slot.name": tag,
        # The publication comes from dev/stack/sql/bob.sql, as in the reference (migrations).
        "publication.name": "debezium_publication",
        "publication.autocreate.mode": "disabled",
        "snapshot.mode": "initial",
        "table.include.list": "public.users",
        "signal.enabled.channels": "source",
        "signal.data.collection": "public.dbz_signals",
        "heartbeat.interval.ms": "1000",
        "heartbeat.action.query": "UPDATE public.debezium_heartbeat SET updated_at = now() WHERE id = 1",
    }


def sink_config(stack: Stack, db: str, topic: str) -> dict[str, str]:
    ref = stack.secret_ref
    # The sink table has no internal_note: include only the columns it has.
    fields = ",".join(f"{topic}:{c.strip()}" for c in USER_COLUMNS.split(","))
    return {
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "tasks.max": "1",
        "topics": topic,
        "connection.url": ref(db, "url"),
        "connection.username": ref(db, "username"),
        "connection.password": ref(db, "password"),
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "delete.enabled": "true",
        "schema.evolution": "none",
        "collection.name.format": "${source.table}",
        "field.include.list": fields,
    }


def users(stack: Stack, db: str) -> list[tuple[Any, ...]]:
    return read_rows(stack.dsn(db), f"SELECT {USER_COLUMNS} FROM users ORDER BY user_id")


def wait_in_sync(stack: Stack, src: str, dst: str, expect_ids: list[str]) -> None:
    """Wait until the sink's users equal the source's, and the source holds `expect_ids`."""
    expected = users(stack, src)
    assert [row[0] for row in expected] == expect_ids
    wait_until(
        lambda: users(stack, dst) == expected,
        timeout=SYNC_TIMEOUT_S,
        message=f"{dst}.users to equal {src}.users {expected}",
    )


def test_postgres_to_postgres_through_debezium(
    stack: Stack, fresh_db: Callable[..., str], connect: ConnectClient
) -> None:
    src = fresh_db("bob")
    dst = fresh_db("auth")
    tag = f"smoke_{unique_suffix()}"
    topic = f"{tag}.public.users"
    source, sink = f"{tag}-source", f"{tag}-sink"

    # Rows present before the connector starts arrive through the initial snapshot.
    execute(
        stack.dsn(src),
        "INSERT INTO users (user_id, name, email, resource_path, internal_note) VALUES "
        "('u1', 'Ann', 'ann@example.com', 'org-a', 'secret'), "
        "('u2', 'Bob', 'bob@example.com', 'org-b', NULL)",
    )

    connect.put_config(source, source_config(stack, src, tag))
    connect.wait_running(source)
    connect.put_config(sink, sink_config(stack, dst, topic))
    connect.wait_running(sink)

    # Connect stores placeholders, not the secrets they resolve to.
    stored = connect.config(sink)
    assert stored["connection.password"] == stack.secret_ref(dst, "password")

    wait_in_sync(stack, src, dst, ["u1", "u2"])

    # Streaming: insert, update, delete.
    execute(
        stack.dsn(src),
        "INSERT INTO users (user_id, name, email, resource_path) VALUES ('u3', 'Cy', 'cy@example.com', 'org-a')",
    )
    execute(stack.dsn(src), "UPDATE users SET name = 'Ann B', updated_at = now() WHERE user_id = 'u1'")
    execute(stack.dsn(src), "DELETE FROM users WHERE user_id = 'u2'")
    wait_in_sync(stack, src, dst, ["u1", "u3"])
    assert read_rows(stack.dsn(dst), "SELECT name FROM users WHERE user_id = 'u1'") == [("Ann B",)]

    # Deleting a Debezium source leaves its replication slot behind (slot.drop.on.stop=false):
    # it must be dropped before the database can be.
    connect.cleanup()
    slots = read_rows(stack.dsn("postgres"), "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (tag,))
    assert slots == [(1,)]
    drop_replication_slot(stack, tag)


def test_groovy_filter_on_jdbc_sink(stack: Stack, fresh_db: Callable[..., str], connect: ConnectClient) -> None:
    """io.debezium.transforms.Filter (jsr223.groovy) runs in the JDBC sink's plugin folder."""
    src = fresh_db("bob")
    dst = fresh_db("eureka")
    tag = f"smoke_{unique_suffix()}"
    topic = f"{tag}.public.users"
    source, sink = f"{tag}-source", f"{tag}-sink"

    execute(
        stack.dsn(src),
        "INSERT INTO users (user_id, name, email, resource_path) VALUES "
        "('a1', 'Ann', 'ann@example.com', 'org-a'), ('b1', 'Bob', 'bob@example.com', 'org-b')",
    )
    connect.put_config(source, source_config(stack, src, tag))
    connect.wait_running(source)
    connect.put_config(
        sink,
        sink_config(stack, dst, topic)
        | {
            "transforms": "tenant",
            "transforms.tenant.type": "io.debezium.transforms.Filter",
            "transforms.tenant.language": "jsr223.groovy",
            # One tenant's rows; deletes pass (their `before` holds only the key).
            "transforms.tenant.condition": "value.op == 'd' || value.after?.resource_path == 'org-a'",
        },
    )
    connect.wait_running(sink)

    execute(
        stack.dsn(src),
        "INSERT INTO users (user_id, name, email, resource_path) VALUES "
        "('a2', 'Al', 'al@example.com', 'org-a'), ('b2', 'Bea', 'bea@example.com', 'org-b')",
    )
    expected = read_rows(
        stack.dsn(src), f"SELECT {USER_COLUMNS} FROM users WHERE resource_path = 'org-a' ORDER BY user_id"
    )
    assert [row[0] for row in expected] == ["a1", "a2"]
    wait_until(
        lambda: users(stack, dst) == expected,
        timeout=SYNC_TIMEOUT_S,
        message="only org-a rows in the sink",
    )
    # A later org-a row arriving proves org-b's rows before it were filtered, not just late.
    execute(
        stack.dsn(src),
        "INSERT INTO users (user_id, name, email, resource_path) VALUES ('a3', 'Abe', NULL, 'org-a')",
    )
    wait_until(
        lambda: [r[0] for r in users(stack, dst)] == ["a1", "a2", "a3"],
        timeout=SYNC_TIMEOUT_S,
        message="a3 in the sink",
    )
    assert read_rows(stack.dsn(dst), "SELECT count(*) FROM users WHERE resource_path = 'org-b'") == [(0,)]


def test_second_connect_cluster_is_separate(
    stack2: Stack, fresh_db: Callable[..., str], connect: ConnectClient, connect2: ConnectClient
) -> None:
    """A connector created on the second cluster runs there and is unknown to the first."""
    assert stack2.connect2_url is not None and stack2.connect2_url != stack2.connect_url
    dst = fresh_db("auth")
    name = f"smoke_{unique_suffix()}-sink"
    # A sink on a topic nobody writes to: it needs no source to reach RUNNING.
    connect2.put_config(name, sink_config(stack2, dst, f"{name}.unused"))
    connect2.wait_running(name)
    assert name in connect2.names()
    assert name not in connect.names()

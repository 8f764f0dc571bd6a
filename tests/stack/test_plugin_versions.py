"""Two versions of one plugin on one worker (KIP-891, issue 50), with raw Connect REST.

dev/stack/fetch installs the Debezium PostgreSQL source twice under `plugin.path`:
`HEPH_DEBEZIUM_VERSION` (3.6.1.Final) in `plugins/debezium-connector-postgres` and
`HEPH_DEBEZIUM_OLD_VERSION` (3.5.0.Final) in `plugins/debezium-connector-postgres-<version>`
(dev/stack/README.md, "Two versions of one plugin"). What each check rests on:

- Both versions listed: Connect 4.1+ (KIP-891) loads each plugin folder in its own class loader
  and `GET /connector-plugins?connectorsOnly=false` lists one entry per (class, version), the
  version being what the connector's `version()` returns (Debezium's: its release, e.g.
  `3.5.0.Final`, read from the connector jar).
- A pinned connector runs the pinned version: `connector.plugin.version` (KIP-891) takes an exact
  version (a bare version is a hard requirement, as if `[v]`) or a Maven version range; here the
  old one exactly, and `(,<new>)`, which with these two installed matches only the old one.
  `GET /connectors/<name>/status` reports the version the connector, and each task, runs
  (KIP-891 added `version` to both).
- An unpinned connector runs the newest installed (KIP-891: no `connector.plugin.version` means
  the latest), here HEPH_DEBEZIUM_VERSION, what every other stack test runs.
- "Runs" means more than RUNNING: each task commits a source offset (`GET /connectors/<name>/offsets`
  non-empty), which Debezium's task does only after its snapshot of `public.users` read through
  its replication slot, so the old version's task did its work on this Connect (4.3.1), not just
  start.

All three sources run side by side on one worker, against one fresh database (own slots and topic
prefixes). Bounded polls only (`wait_running`, `wait_until`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.stack.support import ConnectClient, Stack, execute, load_stack_env, unique_suffix, wait_until
from tests.stack.test_smoke import source_config

pytestmark = pytest.mark.timeout(300)

POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"
RUN_TIMEOUT_S = 120
OFFSET_TIMEOUT_S = 90


@pytest.fixture(scope="module")
def versions() -> tuple[str, str]:
    """(old, new): the two Debezium PostgreSQL versions dev/stack/env.sh installs."""
    env = load_stack_env()
    old, new = env.get("HEPH_DEBEZIUM_OLD_VERSION", ""), env["HEPH_DEBEZIUM_VERSION"]
    # Never skipped: a stack without the second version fails here, naming why.
    assert old, "HEPH_DEBEZIUM_OLD_VERSION is empty: the stack installs one version only"
    return old, new


def listed_versions(url: str, connector_class: str) -> list[str]:
    response = httpx.get(f"{url}/connector-plugins", params={"connectorsOnly": "false"}, timeout=30)
    response.raise_for_status()
    return sorted(p["version"] for p in response.json() if p["class"] == connector_class)


def test_connect_lists_both_versions(stack: Stack, versions: tuple[str, str]) -> None:
    old, new = versions
    assert listed_versions(stack.connect_url, POSTGRES) == sorted([old, new])


def ran_versions(status: dict[str, Any]) -> tuple[str, list[str]]:
    """(the connector's version, each task's) as GET /connectors/<name>/status reports them."""
    return status["connector"].get("version", ""), [t.get("version", "") for t in status["tasks"]]


def test_pinned_runs_the_old_version_unpinned_the_new(
    stack: Stack, versions: tuple[str, str], fresh_db: Callable[..., str], connect: ConnectClient
) -> None:
    old, new = versions
    db = fresh_db("bob")
    execute(
        stack.dsn(db),
        "INSERT INTO users (user_id, name, email, resource_path) VALUES ('u1', 'Ann', 'ann@example.com', 'org-a')",
    )
    tag = f"plugver_{unique_suffix()}"
    pins: dict[str, tuple[str | None, str]] = {
        f"{tag}_exact": (old, old),
        f"{tag}_range": (f"(,{new})", old),
        f"{tag}_unpinned": (None, new),
    }
    for name, (pin, _) in pins.items():
        config = source_config(stack, db, name)
        if pin is not None:
            config["connector.plugin.version"] = pin
        connect.put_config(name, config)

    for name, (pin, expected) in pins.items():
        status = connect.wait_running(name, timeout=RUN_TIMEOUT_S)
        connector_version, task_versions = ran_versions(status)
        assert (connector_version, task_versions) == (expected, [expected]), (name, pin, status)
        wait_until(
            lambda name=name: connect.offsets(name),
            timeout=OFFSET_TIMEOUT_S,
            message=f"{name} (Debezium {expected}) to commit a source offset",
        )
    # The stored config keeps the pin as given: Connect resolves it at each start.
    assert connect.config(f"{tag}_exact")["connector.plugin.version"] == old
    assert "connector.plugin.version" not in connect.config(f"{tag}_unpinned")

"""The image and the chart, executed (issue 21): the chart rendered for the local stack, its hook
Jobs run in hook-weight order and its CronJobs' commands run, each as its pod would run (command,
args, env, the ConfigMap's project file, the Secrets as files and env vars) inside the image
`dev/image` built, against the real stack (tests/stack/pods.py says what is reproduced).

Proved by reading back: rows inserted at the sources after the hooks are read from the sinks; the
heal CronJob's command restarts a sink that really failed (its target table lost a column) and
the row it missed arrives; the accuracy CronJob's command exits 0.

The image holds the repo's own desired state (connectors/ generated from definitions/), whose
connectors use the stack's shared databases (bob, auth, …, as `dev/demo` does) by name through
Connect's secrets file; what the test creates there is deleted at the end.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.loopback import slack_receiver
from tests.stack.pods import REPO, Pod, Ran, pods, run
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until
from tests.unit.test_helm import render

# The chart's jobs heal and reconcile whatever their select names: alone on the stack.
pytestmark = [pytest.mark.timeout(1500), pytest.mark.exclusive]

PASSWORD_FILE_DBS = ("bob", "auth", "eureka", "fatima", "tokyo_jprep_dwh", "invoicemgmt", "kec_dwh")
SYNC_S = 120
# The stack's PostgreSQL trusts loopback, so any password connects: a canary one proves the
# Secrets reach the pods (as files and as env) and never their output.
CANARY = f"canary-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def image() -> str:
    """The image of this commit: HEPHAESTUS_IMAGE (dev/test builds it first), else built now."""
    if os.environ.get("HEPHAESTUS_IMAGE"):
        return os.environ["HEPHAESTUS_IMAGE"]
    built = subprocess.run([str(REPO / "dev" / "image")], capture_output=True, text=True, timeout=1200, check=False)
    assert built.returncode == 0, f"dev/image failed:\n{built.stderr[-4000:]}"
    return built.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def helm() -> str:
    built = subprocess.run([str(REPO / "dev" / "tools" / "helm")], capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr
    return built.stdout.strip()


def pg_dsn(stack: Stack) -> str:
    return f"host={stack.pg_host} port={stack.pg_port} user={stack.pg_user}"


def values(stack: Stack, state_db: str, image: str) -> dict[str, Any]:
    """The chart's values for the local stack: the platforms cluster synced by hook 3, lmsdwh as
    the warehouse cluster (hook 6), no kec (its sinks read ksqlDB's topics; no ksqlDB here)."""
    assert stack.connect2_url is not None
    pg = pg_dsn(stack)
    databases: dict[str, Any] = {
        db: {"dsn": f"{pg} dbname={db}", "passwordSecret": {"name": "pg", "key": "password"}}
        for db in PASSWORD_FILE_DBS
    }
    databases["lmsdwh"] = {"dsnSecret": {"name": "dsns", "key": "lmsdwh"}}  # the whole DSN by env valueFrom
    databases["state"] = {"dsn": f"{pg} dbname={state_db}", "passwordSecret": {"name": "pg", "key": "password"}}
    repository, tag = image.rsplit(":", 1)
    return {
        "global": {"environment": "local", "vendor": "manabie"},
        "image": {"repository": repository, "tag": tag},
        "clusters": {
            "platforms": {"url": stack.connect_url, "kafkaBootstrap": stack.bootstrap},
            "lmsdwh": {"url": stack.connect2_url, "kafkaBootstrap": stack.bootstrap},
            "kec": None,
        },
        "databases": databases,
        "state": {"database": "state"},
        "lock": {"timeout_s": 120},
        "heal": {"restart_wait_s": 10},
        "slack": {"webhookSecret": {"name": "slack", "key": "url"}},
    }


@pytest.fixture
def deployed(
    tmp_path: Path, stack2: Stack, fresh_db: Callable[..., str], image: str, helm: str
) -> Iterator[tuple[list[Pod], list[Ran]]]:
    stack = stack2
    state_db = fresh_db("auth")  # any empty-ish database: the ownership record, audit and heal state
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values(stack, state_db, image), sort_keys=False))
    with slack_receiver() as receiver:
        secrets = {
            "pg": {"password": CANARY},
            "dsns": {"lmsdwh": f"{pg_dsn(stack)} password={CANARY} dbname=lmsdwh"},
            "slack": {"url": receiver.url},
        }
        found = pods(render(helm, "-f", str(path)), secrets, tmp_path / "pods")
        ran: list[Ran] = []
        try:
            yield found, ran
        finally:
            _clean_up(stack)


def _clean_up(stack: Stack) -> None:
    """Delete what the hooks created on the shared clusters (their slots are kept: a later run
    resumes on them, as a redeploy would)."""
    for url in (stack.connect_url, stack.connect2_url):
        assert url is not None
        client = ConnectClient(url)
        try:
            client.cleanup([n for n in client.names() if n.startswith("local_manabie_")])
        finally:
            client.close()


def hooks_in_order(found: list[Pod]) -> list[Pod]:
    hooks = [p for p in found if p.kind == "Job" and p.weight is not None]
    return sorted(hooks, key=lambda p: p.weight or 0)


def cron(found: list[Pod], job: str) -> Pod:
    (pod,) = [p for p in found if p.kind == "CronJob" and p.argv[:4] == ("hephaestus", "job", "run", job)]
    return pod


def ok(image: str, pod: Pod, ran: list[Ran]) -> Ran:
    result = run(image, pod)
    ran.append(result)
    assert result.code == 0, result.explain()
    return result


def arrived(stack: Stack, db: str, table: str, user_id: str) -> bool:
    return bool(read_rows(stack.dsn(db), f"SELECT 1 FROM {table} WHERE user_id = %s", [user_id]))


def test_the_hooks_deploy_in_order_and_the_crons_heal_and_prove(
    deployed: tuple[list[Pod], list[Ran]], image: str, stack2: Stack
) -> None:
    stack = stack2
    found, ran = deployed
    hooks = hooks_in_order(found)
    assert [(p.weight, p.argv[3]) for p in hooks] == [
        (3, "upsert_kafka_connect"),
        (4, "validate_kafka_connectors"),
        (6, "upsert_kafka_connect"),
        (7, "validate_kafka_connectors"),
    ], "no ksqlDB configured: hooks 2 and 5 are not rendered"
    for hook in hooks:  # a failing hook fails the release and stops the ones after it
        ok(image, hook, ran)

    stamp = f"hooks-{uuid.uuid4().hex[:8]}"
    execute(stack.dsn("bob"), "INSERT INTO users (user_id, name, email) VALUES (%s, 'Hook', 'h@example.com')", [stamp])
    execute(
        stack.dsn("lmsdwh"),
        "INSERT INTO dim_user (user_id, name, resource_path) VALUES (%s, 'Partner', '-2147483645')",
        [stamp],
    )
    for db, table in (("auth", "users"), ("eureka", "users"), ("tokyo_jprep_dwh", "dim_user")):
        wait_until(lambda db=db, table=table: arrived(stack, db, table, stamp), SYNC_S, message=f"{db}.{table}")

    # A sink that really fails: its target table lost a column, and a row needs it.
    sink = "local_manabie_bob_to_auth_users_sink_connector"
    platforms = ConnectClient(stack.connect_url)
    execute(stack.dsn("auth"), "ALTER TABLE users DROP COLUMN email")
    missed = f"{stamp}-missed"
    execute(stack.dsn("bob"), "INSERT INTO users (user_id, name, email) VALUES (%s, 'M', 'm@example.com')", [missed])
    wait_until(
        lambda: any(t["state"] == "FAILED" for t in (platforms.status(sink) or {}).get("tasks", [])),
        SYNC_S,
        message="the sink task to fail",
    )
    execute(stack.dsn("auth"), "ALTER TABLE users ADD COLUMN email text")
    healed = ok(image, cron(found, "heal"), ran)
    assert sink in healed.out + healed.err
    wait_until(lambda: arrived(stack, "auth", "users", missed), SYNC_S, message="the missed row after heal")
    assert all(t["state"] == "RUNNING" for t in platforms.status(sink)["tasks"])
    platforms.close()

    accuracy = ok(image, cron(found, "dwh_accuracy"), ran)
    assert "MISMATCH" not in accuracy.out and "ERROR" not in accuracy.out
    for r in ran:  # the Secrets' values never reach a pod's output
        assert CANARY not in r.out + r.err, r.explain()

"""Secrets on the real stack: a sink whose database password in the Connect secrets file is
wrong really fails (the stack's PostgreSQL checks that one role's password), its trace is
reported, and no output of reconcile or heal — nor Slack, nor the audit trail (here in
PostgreSQL, `audit: {database: …}`) — shows the password."""

from __future__ import annotations

import json

import pytest

from tests.loopback import slack_receiver
from tests.stack.fleet import Fleet
from tests.stack.support import Stack, _rewrite_secrets, execute, read_rows
from tests.stack.test_faults import edit_project

ROLE = "heph_password_user"
WRONG = "cnry-wrong-pw-4242"
RIGHT = "right-pw-1717"


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Fleet:
    f = bob_fleet
    f.only_users_to_auth(dlq=False)
    return f


def test_a_wrong_password_fails_the_sink_and_no_output_shows_it(
    fleet: Fleet, stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth = fleet.dbs["auth"]
    execute(
        stack.dsn("postgres"),
        f"DO $$ BEGIN CREATE ROLE {ROLE} LOGIN SUPERUSER PASSWORD '{RIGHT}'; "
        "EXCEPTION WHEN duplicate_object THEN NULL; END $$",
    )
    _rewrite_secrets(
        stack.secrets_file,
        lambda lines: [
            f"{auth}_username={ROLE}"
            if line.startswith(f"{auth}_username=")
            else f"{auth}_password={WRONG}"
            if line.startswith(f"{auth}_password=")
            else line
            for line in lines
        ],
    )
    # hephaestus may read the workers' secrets file here: what it holds is masked everywhere.
    edit_project(
        fleet,
        clusters={"platforms": {**_cluster(fleet), "secrets_file": str(stack.secrets_file)}},
        heal={"restart_wait_s": 3, "state": {"file": "heal.json"}},
        audit={"database": fleet.dbs["bob"]},
    )
    execute(stack.dsn(fleet.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('u-1', 'a')")
    with slack_receiver() as slack:
        monkeypatch.setenv("HEPHAESTUS_SLACK_WEBHOOK", slack.url)
        code, out = fleet.cli("-v", "reconcile", "--auto-approve", "--project", str(fleet.root / "hephaestus.yaml"))
        # The Debezium JDBC sink reports the refused login as Hibernate's "Unable to determine
        # Dialect" (the PSQLException is logged by the worker, not chained into the trace).
        assert code == 1 and "FAILED (task 0)" in out, out
        outputs = [out]
        for args in (
            ("reconcile", "--auto-approve", "--dry-run", "--exit-code", "-o", "markdown"),
            ("heal", "-o", "json"),
            ("heal",),
        ):
            outputs.append(fleet.cli("-v", *args, "--project", str(fleet.root / "hephaestus.yaml"))[1])
        texts = slack.texts()
    assert texts and "Caused by" in "".join(texts), texts
    rows = read_rows(stack.dsn(fleet.dbs["bob"]), "SELECT run_id, cluster, connector, entry FROM hephaestus_audit")
    assert {(r[3]["action"], r[3]["outcome"]) for r in rows} >= {("create", "intent"), ("create", "failed")}, rows
    assert all(r[0] == r[3]["run_id"] and r[1] == r[3]["cluster"] == "platforms" for r in rows)
    assert not (fleet.root / "audit.jsonl").exists(), "the database wins over audit_log"
    audit = json.dumps([r[3] for r in rows])
    for channel in (*outputs, *texts, audit):
        assert WRONG not in channel


def _cluster(fleet: Fleet) -> dict[str, object]:
    import yaml

    project = yaml.safe_load((fleet.root / "hephaestus.yaml").read_text())
    return dict(project["clusters"]["platforms"])

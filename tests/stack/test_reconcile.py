"""The reconciler against real Connect, real Debezium, real PostgreSQL: proven by reading back."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.loopback import slack_receiver
from tests.stack.fleet import Fleet, make_fleet
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until


@pytest.fixture
def bob(bob_fleet: Fleet) -> Iterator[Fleet]:
    yield bob_fleet


def replicated(
    fleet: Fleet, sink_db: str, table: str, key: str, value: str, timeout: float = 120
) -> list[tuple[object, ...]]:
    dsn = fleet.stack.dsn(fleet.dbs[sink_db])
    return wait_until(
        lambda: read_rows(dsn, f"SELECT * FROM {table} WHERE {key} = %s", [value]),
        timeout=timeout,
        message=f"{value} in {sink_db}.{table}",
    )


def test_reconcile_from_empty_replicates_and_is_idempotent(bob: Fleet, connect: ConnectClient) -> None:
    execute(
        bob.stack.dsn(bob.dbs["bob"]),
        "INSERT INTO users (user_id, name, email, internal_note) "
        "VALUES ('u-before', 'Ann', 'ann@example.com', 'private')",
    )
    code, report = bob.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    (cluster,) = report["clusters"]
    assert cluster["counts"]["create"] == 6 and all(r["ok"] for r in cluster["results"])
    # Connect's writes end RUNNING; before them, the probe's tables are made and published.
    writes = [r for r in cluster["results"] if r["action"] not in ("probe-table", "publication")]
    assert {r["detail"] for r in writes} == {"RUNNING"}
    # Existing rows (initial snapshot) and new rows (streaming) both arrive; internal_note is not a sink column.
    row = replicated(bob, "auth", "users", "user_id", "u-before")[0]
    assert "Ann" in row and "private" not in row
    execute(bob.stack.dsn(bob.dbs["bob"]), "INSERT INTO students (student_id, current_grade) VALUES ('s-1', 7)")
    assert replicated(bob, "fatima", "students", "student_id", "s-1")
    assert replicated(bob, "eureka", "students", "student_id", "s-1")

    again_code, again = bob.reconcile()
    assert again_code == 0
    (second,) = again["clusters"]
    assert second["counts"]["unchanged"] == 6 and second["counts"]["create"] == 0
    assert second["writes"] == 0, "a second reconcile must make zero write requests"
    assert second["requests"] == 3, "a no-op reconcile costs three requests: /health, one listing, the Kafka id"


def test_changed_sink_option_updates_only_that_connector(bob: Fleet, connect: ConnectClient) -> None:
    assert bob.reconcile()[0] == 0
    definition = bob.definition("bob")
    definition["pipelines"][0]["sinks"][0]["options"] = {"batch.size": 100}
    bob.write_definition("bob", definition)
    bob.generate()
    target = bob.name("platforms", "_to_auth_", "users")
    code, report = bob.reconcile()
    assert code == 0
    steps = report["clusters"][0]["steps"]
    updates = [s for s in steps if s["action"] == "update"]
    assert [u["name"] for u in updates] == [target]
    assert updates[0]["changes"] == [{"key": "batch.size", "before": None, "after": "100"}]
    assert connect.config(target)["batch.size"] == "100"
    execute(bob.stack.dsn(bob.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('u-after', 'Bo')")
    assert replicated(bob, "auth", "users", "user_id", "u-after")


def test_removed_sink_deleted_removed_source_protected(
    bob: Fleet, connect: ConnectClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert bob.reconcile()[0] == 0
    definition = bob.definition("bob")
    del definition["pipelines"][1]["sinks"][1]  # students -> fatima goes away
    bob.write_definition("bob", definition)
    bob.generate()
    gone = [n for n in connect.names() if "_to_" + bob.dbs["fatima"] + "_students" in n]
    assert len(gone) == 1
    source = bob.name("platforms", "source_connector")
    (bob.root / "connectors/platforms/source" / f"{source}.json").unlink()

    with slack_receiver() as slack:
        monkeypatch.setenv("HEPHAESTUS_SLACK_WEBHOOK", slack.url)
        code, report = bob.reconcile()
    assert code == 0, report
    assert len(slack.texts()) == 1 and f"deleted `{gone[0]}`" in slack.texts()[0]
    actions = {s["name"]: s["action"] for s in report["clusters"][0]["steps"]}
    assert actions[gone[0]] == "delete" and actions[source] == "protected"
    names = connect.names()
    assert gone[0] not in names
    assert source in names
    connect.wait_running(source)
    audit = [json.loads(line) for line in (bob.root / "audit.jsonl").read_text().splitlines()]
    assert any(a["action"] == "delete" and a["connector"] == gone[0] and a["outcome"] == "ok" for a in audit)


def test_ksqldb_connector_untouched(bob: Fleet, connect: ConnectClient) -> None:
    ksql_name = f"DIM_USER_{bob.dbs['auth'].upper()}_SINK"
    connect.put_config(
        ksql_name,
        {
            "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
            "topics": "ksql.dim_user",
            "connection.url": bob.stack.jdbc_url(bob.dbs["auth"]),
            "connection.username": "postgres",
            "connection.password": "postgres",
            "schema.evolution": "none",
        },
    )
    # Connect leaves a connector out of `GET /connectors?expand=…` until its first status is
    # written: wait for it, or the plan (rightly) does not know it yet.
    wait_until(lambda: connect.status(ksql_name), timeout=60, message=f"{ksql_name} has a status")
    code, report = bob.reconcile()
    assert code == 0
    step = next(s for s in report["clusters"][0]["steps"] if s["name"] == ksql_name)
    assert step["action"] == "unmanaged" and "ksqlDB" in step["reason"]
    assert ksql_name in connect.names()


def test_invalid_config_fails_validation_and_nothing_is_applied(bob: Fleet, connect: ConnectClient) -> None:
    definition = bob.definition("bob")
    definition["pipelines"][0]["sinks"][0]["options"] = {"errors.tolerance": "sometimes"}
    bob.write_definition("bob", definition)
    bob.generate()

    # This test's connectors only: the stack is shared, its neighbours' come and go meanwhile.
    def ours() -> list[str]:
        return [n for n in connect.names() if bob.dbs["bob"] in n]

    before = ours()
    code, report = bob.reconcile()
    assert code == 1
    invalid = report["clusters"][0]["invalid"]
    bad = bob.name("platforms", "_to_" + bob.dbs["auth"] + "_users")
    assert list(invalid) == [bad] and "errors.tolerance" in invalid[bad]
    assert before == [] and ours() == [], "nothing may be applied when any config is invalid"
    assert report["clusters"][0]["writes"] == 0


def test_dry_run_exit_codes(bob: Fleet, connect: ConnectClient) -> None:
    code, report = bob.reconcile("--dry-run", "--exit-code")
    assert code == 2 and report["clusters"][0]["counts"]["create"] == 6
    assert report["clusters"][0]["writes"] == 0 and not [n for n in connect.names() if bob.dbs["bob"] in n]
    assert bob.reconcile()[0] == 0
    assert bob.reconcile("--dry-run", "--exit-code")[0] == 0


def test_two_clusters_in_one_run(
    tmp_path: Path,
    stack2: Stack,
    fresh_db: Callable[..., str],
    connect: ConnectClient,
    connect2: ConnectClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fleet = make_fleet(
        tmp_path, stack2, fresh_db, capsys, ["bob", "lmsdwh"], {"platforms": connect, "lmsdwh": connect2}
    )
    code, report = fleet.reconcile()
    assert code == 0, report
    assert {c["cluster"]: c["counts"]["create"] for c in report["clusters"]} == {"platforms": 6, "lmsdwh": 3}
    assert any(fleet.dbs["lmsdwh"] in n for n in connect2.names())
    assert not any(fleet.dbs["lmsdwh"] in n for n in connect.names())
    dwh = stack2.dsn(fleet.dbs["lmsdwh"])
    # The partner's tenant passes the filter; another tenant's row never reaches its warehouse.
    execute(
        dwh,
        "INSERT INTO dim_user (user_id, name, resource_path) VALUES "
        "('jprep-1', 'J', '-2147483645'), ('other-1', 'O', '-1')",
    )
    execute(dwh, "INSERT INTO dim_user (user_id, name, resource_path) VALUES ('jprep-2', 'K', '-2147483645')")
    assert replicated(fleet, "tokyo_jprep_dwh", "dim_user", "user_id", "jprep-2")
    partner = stack2.dsn(fleet.dbs["tokyo_jprep_dwh"])
    assert read_rows(partner, "SELECT user_id FROM dim_user ORDER BY user_id") == [("jprep-1",), ("jprep-2",)]

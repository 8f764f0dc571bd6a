"""Source schema changes judged by what they do to the data (issue 45), on the real stack: a
DBA's DDL on bob.users (-> auth.users), named by its effect in `status`, the exporter's gauge
and `reconcile --dry-run --exit-code`, then mended by the plan (catalog refresh, generate, one
apply that back-fills), every row read back from the sink database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hephaestus.project import load_project
from hephaestus.status.exporter import check
from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until


@pytest.fixture
def fleet(bob_fleet: Fleet, stack: Stack) -> Fleet:
    """users -> auth, running, one row replicated."""
    found = bob_fleet
    found.only_users_to_auth()
    execute(found.stack.dsn(found.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('u-0', 'Zero')")
    code, report = found.reconcile()
    assert code == 0, report
    wait_until(lambda: _sink(found, "SELECT 1 FROM users WHERE user_id = 'u-0'"), timeout=120, message="u-0 in auth")
    return found


def _sink(fleet: Fleet, query: str) -> list[tuple[Any, ...]]:
    return read_rows(fleet.stack.dsn(fleet.dbs["auth"]), query)


def _source(fleet: Fleet, query: str) -> None:
    execute(fleet.stack.dsn(fleet.dbs["bob"]), query)


def _project(fleet: Fleet) -> str:
    return str(fleet.root / "hephaestus.yaml")


def _status(fleet: Fleet) -> tuple[int, dict[str, Any]]:
    code, out = fleet.cli("status", "--project", _project(fleet), "-o", "json")
    return code, json.loads(out[out.index("{") : out.rindex("}") + 1])


def _problems(report: dict[str, Any]) -> list[str]:
    return [p for c in report["clusters"] for v in c["connectors"] for p in v["problems"]]


def _gauge(fleet: Fleet, effect: str) -> float:
    metrics = check(load_project(Path(_project(fleet)))).registry
    pipeline = f"{fleet.dbs['bob']}.public.users->{fleet.dbs['auth']}.public.users"
    value = metrics.get_sample_value("hephaestus_schema_drift", {"pipeline": pipeline, "effect": effect})
    assert value is not None, f"no schema_drift gauge for {pipeline} {effect}"
    return value


def test_an_added_column_is_named_then_widened_and_back_filled(fleet: Fleet) -> None:
    assert _gauge(fleet, "column-not-replicated") == 0
    _source(fleet, "ALTER TABLE users ADD COLUMN phone text")
    execute(fleet.stack.dsn(fleet.dbs["auth"]), "ALTER TABLE users ADD COLUMN phone text")
    _source(fleet, "UPDATE users SET phone = '+81-0' WHERE user_id = 'u-0'")
    _source(fleet, "INSERT INTO users (user_id, name, phone) VALUES ('u-1', 'One', '+81-1')")
    wait_until(lambda: _sink(fleet, "SELECT 1 FROM users WHERE user_id = 'u-1'"), timeout=120, message="u-1 in auth")
    assert _sink(fleet, "SELECT phone FROM users WHERE user_id = 'u-1'") == [(None,)]  # thinned: the bug

    assert _gauge(fleet, "column-not-replicated") == 1
    code, out = fleet.cli("reconcile", "--dry-run", "--exit-code", "--project", _project(fleet))
    assert code == 2 and "column-not-replicated users.phone" in out, out
    code, report = _status(fleet)
    assert code == 2 and any("column-not-replicated users.phone" in p for p in _problems(report)), report

    code, out = fleet.cli(
        "catalog", "refresh", "--project", _project(fleet), "--catalogs", str(fleet.root / "catalogs")
    )
    assert code == 0, out
    fleet.generate()
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    (backfill,) = [r for r in report["clusters"][0]["results"] if r["action"] == "back-fill"]
    assert backfill["ok"], backfill
    # Every row carries its phone, those written before the widening included.
    wait_until(
        lambda: (
            _sink(fleet, "SELECT user_id, phone FROM users ORDER BY user_id") == [("u-0", "+81-0"), ("u-1", "+81-1")]
        ),
        timeout=180,
        message="phones back-filled into auth.users",
    )
    assert _gauge(fleet, "column-not-replicated") == 0
    code, out = fleet.cli("reconcile", "--dry-run", "--exit-code", "--project", _project(fleet))
    assert code == 0, out
    code, accuracy = fleet.accuracy("--deep")
    assert code == 0 and {t["verdict"] for t in accuracy["tables"]} == {"match"}, accuracy


def test_a_table_out_of_the_publication_is_unhealthy_and_back_filled_when_re_added(fleet: Fleet) -> None:
    _source(fleet, "ALTER PUBLICATION debezium_publication DROP TABLE users")
    _source(fleet, "INSERT INTO users (user_id, name) VALUES ('gap', 'Written while out')")
    code, report = _status(fleet)
    assert code == 2 and any("capture-dropped public.users" in p for p in _problems(report)), report
    assert _gauge(fleet, "capture-dropped") == 1

    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    cluster = report["clusters"][0]
    assert [p["add"] for p in cluster["publications"]] == [["public.users"]], cluster
    assert [b["tables"] for b in cluster["backfills"]] == [["public.users"]], cluster
    wait_until(
        lambda: _sink(fleet, "SELECT 1 FROM users WHERE user_id = 'gap'"), timeout=180, message="gap row in auth"
    )
    code, report = _status(fleet)
    assert code == 0, report


def test_a_dropped_required_column_pauses_the_sink_before_it_fails_and_heal_never_restarts_it(
    fleet: Fleet, connect: ConnectClient
) -> None:
    auth = fleet.stack.dsn(fleet.dbs["auth"])
    execute(auth, "UPDATE users SET email = 'zero@example.com'")
    execute(auth, "ALTER TABLE users ALTER COLUMN email SET NOT NULL")
    _source(fleet, "ALTER TABLE users DROP COLUMN email")
    sink = fleet.name("platforms", "sink_connector")

    code, report = _status(fleet)
    assert code == 2 and any("sink-write-fails users.email" in p for p in _problems(report)), report
    assert _gauge(fleet, "sink-write-fails") == 1

    code, out = fleet.cli("heal", "--project", _project(fleet))
    assert code != 0 and "paused before it fails: sink-write-fails users.email" in out, out
    assert "restart 1" not in out, out
    wait_until(lambda: connect.status(sink)["connector"]["state"] == "PAUSED", timeout=60, message="sink paused")
    # A row written now waits in Kafka: the paused sink does not fail on it.
    _source(fleet, "INSERT INTO users (user_id, name) VALUES ('u-2', 'Two')")
    code, out = fleet.cli("heal", "--project", _project(fleet))
    assert "not restarted: sink-write-fails users.email" in out and "restart 1" not in out, out
    # Reconcile leaves it paused while the change stands.
    code, out = fleet.cli("reconcile", "--dry-run", "--project", _project(fleet))
    assert f"{sink} left paused: sink-write-fails users.email" in out, out
    status = connect.status(sink)
    assert status["connector"]["state"] == "PAUSED" and all(t["state"] != "FAILED" for t in status["tasks"]), status


def test_bad_input_is_a_clear_error_or_unknown_never_healthy_and_never_a_traceback(fleet: Fleet) -> None:
    # A renamed source table: its capture is gone, named as such.
    _source(fleet, "ALTER TABLE users RENAME TO users_v2")
    code, report = _status(fleet)
    assert code == 2, report
    assert any("capture-dropped public.users" in p and "dropped or renamed" in p for p in _problems(report)), report
    _source(fleet, "ALTER TABLE users_v2 RENAME TO users")

    # A catalog that does not parse: unknown, naming the file; status is an error, not healthy.
    catalog = fleet.root / "catalogs" / f"{fleet.dbs['auth']}.json"
    good = catalog.read_text()
    catalog.write_text(good[: len(good) // 2])
    code, out = fleet.cli("status", "--project", _project(fleet))
    assert code == 1 and "unknown" in out and catalog.name in out and "Traceback" not in out, out
    catalog.write_text(good)

    # A database that cannot be read: unknown (status exit 1), the gauge says so, no traceback.
    project = fleet.root / "hephaestus.yaml"
    kept = project.read_text()
    fleet.edit_project(databases={**_databases(fleet), fleet.dbs["auth"]: {"dsn": "host=127.0.0.1 port=1 user=x"}})
    code, out = fleet.cli("status", "--project", _project(fleet))
    assert code == 1 and f"cannot read database {fleet.dbs['auth']}" in out and "Traceback" not in out, out
    assert _gauge(fleet, "unknown") == 1
    project.write_text(kept)
    assert _status(fleet)[0] == 0


def _databases(fleet: Fleet) -> dict[str, Any]:
    import yaml

    return dict(yaml.safe_load((fleet.root / "hephaestus.yaml").read_text())["databases"])

"""A fleet of sinks moved between versions of their plugin in git, through the rollout, on the real
stack (issue 50): the worker holds the Debezium JDBC sink three times (dev/stack, KIP-891):
HEPH_DEBEZIUM_JDBC_OLD_VERSION, HEPH_DEBEZIUM_JDBC_VERSION, and HEPH_DEBEZIUM_JDBC_BROKEN_VERSION,
a copy of the current one without the PostgreSQL driver whose tasks fail at start (its config is
accepted).

bob's five sinks (users → auth, eureka; students → eureka, fatima; locations → fatima) are each
pinned in git (`connector.plugin.version`) to the old version and run it (read back from /status,
and a row written then is read back from every sink table); rows are written at bob the whole time.

- A bump of every pin to the current version goes canary first, then wave by wave; every task
  then runs the new version, and every row written reaches every sink table exactly once (read
  back from each sink database; accuracy --deep matches).
- A bump to the broken version fails the canary (its tasks FAILED): the rollout puts the canary
  back on the old pin by itself (read back: its live config and its tasks' version), never writes
  the other sinks (their live configs, and the workers' request logs), exits 1, and rows keep
  arriving at the canary's sink.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, Stack, execute, load_stack_env, read_rows, wait_until
from tests.stack.test_plugin_upgrades import PIN, running
from tests.stack.test_progressive import SINKS, Load, arrived, live, logs, sink_files

pytestmark = pytest.mark.timeout(900)

KEYS = {"users": "user_id", "students": "student_id", "locations": "location_id"}
ROLLOUT = {"canary": 1, "waves": [50, 100], "analysis_s": 10, "interval_s": 2, "max_lag_age_s": 120}


def jdbc_versions() -> tuple[str, str, str]:
    """(old, broken, current): the JDBC sink's versions dev/stack/env.sh installs."""
    env = load_stack_env()
    old, broken = env.get("HEPH_DEBEZIUM_JDBC_OLD_VERSION", ""), env.get("HEPH_DEBEZIUM_JDBC_BROKEN_VERSION", "")
    assert old and broken, "HEPH_DEBEZIUM_JDBC_OLD_VERSION or _BROKEN_VERSION is empty: the stack lacks them"
    return old, broken, env["HEPH_DEBEZIUM_JDBC_VERSION"]


def pin_sinks(fleet: Fleet, version: str) -> list[str]:
    """Every sink's file pinned to `version`; their names, sorted."""
    for path in sink_files(fleet).values():
        doc = json.loads(path.read_text())
        doc["config"][PIN] = version
        path.write_text(json.dumps(doc))
    return sorted(sink_files(fleet))


def all_run(connect: ConnectClient, names: list[str], version: str) -> None:
    """Each connector RUNNING with every task RUNNING on `version` (KIP-891 /status)."""

    def done() -> bool | None:
        for name in names:
            status = connect.status(name) or {}
            states = {status.get("connector", {}).get("state")} | {t.get("state") for t in status.get("tasks", [])}
            if running(connect, name) != {version} or states != {"RUNNING"} or not status.get("tasks"):
                return None
        return True

    wait_until(done, timeout=180, message=f"{names} RUNNING on {version}")


@pytest.fixture
def fleet(bob_fleet: Fleet, stack: Stack, connect: ConnectClient) -> Iterator[Fleet]:
    """bob's fleet with every sink pinned to the old JDBC sink, reconciled, running it."""
    old, _, _ = jdbc_versions()
    fleet = bob_fleet
    fleet.edit_project(policy={"ready_timeout_s": 120, "stability_window_s": 2})
    sinks = pin_sinks(fleet, old)
    assert len(sinks) == 5, sinks
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    all_run(connect, sinks, old)
    bob = stack.dsn(fleet.dbs["bob"])  # the old version writes, not only runs: a row reaches every sink table
    execute(bob, "INSERT INTO users (user_id, name, email) VALUES ('on-old', 'n', 'e')")
    execute(bob, "INSERT INTO students (student_id, current_grade) VALUES ('on-old', 1)")
    execute(bob, "INSERT INTO locations (location_id, name) VALUES ('on-old', 'l')")
    arrived(fleet, "on-old")
    yield fleet


def exactly_once(fleet: Fleet, written: int) -> None:
    """Every row the load wrote is in every sink table once (read back from each sink database)."""
    for db, tables in SINKS.items():
        dsn = fleet.stack.dsn(fleet.dbs[db])
        for table in tables:
            query = f"SELECT count(*), count(DISTINCT {KEYS[table]}) FROM {table} WHERE {KEYS[table]} LIKE 'load-%%'"
            wait_until(
                lambda dsn=dsn, query=query: read_rows(dsn, query) == [(written, written)] or None,
                timeout=240,
                message=f"{written} rows once in {db}.{table}",
            )


def test_a_bump_of_every_sink_goes_canary_then_waves_under_load_and_loses_no_row(
    fleet: Fleet, connect: ConnectClient
) -> None:
    _, _, new = jdbc_versions()
    fleet.edit_project(rollout=ROLLOUT)
    with Load(fleet.stack.dsn(fleet.dbs["bob"])) as load:
        wait_until(lambda: load.n > 5 or None, timeout=60, message="the load running")
        sinks = pin_sinks(fleet, new)
        code, report = fleet.reconcile()
        (cluster,) = report["clusters"]
        assert code == 0, json.dumps(cluster, indent=1)
        assert cluster["rollout"]["report"] == ["canary: 1 passed", "wave 1: 2 passed", "wave 2: 2 passed"]
        assert sorted(r["name"] for r in cluster["results"] if r["ok"]) == sinks, cluster["results"]
        all_run(connect, sinks, new)
        assert all(connect.config(n)[PIN] == new for n in sinks)
        wait_until(lambda: load.n > 20 or None, timeout=60, message="rows written after the bump")
    exactly_once(fleet, load.n)
    code, report = fleet.accuracy("--deep")
    assert code == 0 and all(t["verdict"] == "match" for t in report["tables"]), json.dumps(report, indent=1)


def test_a_bump_to_a_broken_version_is_rolled_back_at_the_canary_and_the_rest_never_written(
    fleet: Fleet, connect: ConnectClient, stack: Stack
) -> None:
    old, broken, _ = jdbc_versions()
    fleet.edit_project(rollout={**ROLLOUT, "waves": [100]})
    with Load(stack.dsn(fleet.dbs["bob"])) as load:
        wait_until(lambda: load.n > 5 or None, timeout=60, message="the load running")
        sinks = pin_sinks(fleet, broken)
        before: dict[str, dict[str, Any]] = {n: live(connect, n) for n in sinks}
        seen = logs(stack)
        code, report = fleet.reconcile()
        (cluster,) = report["clusters"]
        assert code == 1, json.dumps(cluster, indent=1)
        results = {r["name"]: r for r in cluster["results"]}
        (canary,) = [n for n, r in results.items() if r["detail"].endswith("; rolled back")]
        rest = [n for n in sinks if n != canary]
        assert results[canary]["ok"] is False and "FAILED" in results[canary]["detail"], results[canary]
        assert all(results[n]["detail"].startswith("not applied: the rollout stopped at canary") for n in rest)
        assert cluster["rollout"]["report"][0].startswith("canary: failed its gate"), cluster["rollout"]
        rollback = [(r["action"], r["name"], r["ok"]) for r in cluster["rollout"]["rollback"]]
        assert rollback == [("update", canary, True)], cluster["rollout"]
        assert [w for log in seen for w in log.writes(rest)] == [], "the rest of the fleet was written"
        assert [w.method for log in seen for w in log.writes([canary])].count("PUT") >= 2  # the bump, then back

        # Read back: the canary on its old pin again, its tasks running the old version; the rest as before.
        assert live(connect, canary) == before[canary] and before[canary][PIN] == old
        all_run(connect, [canary], old)
        assert {n: live(connect, n) for n in rest} == {n: before[n] for n in rest}
        all_run(connect, rest, old)
        wait_until(lambda: load.n > 20 or None, timeout=60, message="rows written after the rollback")
        after = f"load-{load.n}"
    table = next(t for t in ("users", "students", "locations") if f"_{t}_" in canary)
    db = next(db for db in SINKS if fleet.dbs[db] in canary)
    dsn, query = fleet.stack.dsn(fleet.dbs[db]), f"SELECT count(*) FROM {table} WHERE {KEYS[table]} = %s"
    wait_until(lambda: read_rows(dsn, query, [after]) == [(1,)] or None, timeout=180, message=f"{after} at the canary")
    exactly_once(fleet, load.n)

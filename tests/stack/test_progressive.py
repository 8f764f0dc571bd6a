"""Issue 31 on the real stack: progressive delivery under load. Rows are written at the source
the whole time; writes are counted from the Connect workers' own request logs; configs and
rows are read back from Connect and PostgreSQL.

- a bad change every task runs with (a transform that sends every record to the DLQ), meant
  for the whole fleet: the canary catches it by its DLQ's growth, is put back to the config
  it had, the rest of the fleet receives no write, and rows keep arriving at every sink;
- a good change passes every gate, wave by wave;
- a change that really fails (the sink's database refuses its user) is rolled back to a
  config read back equal to the old one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.stack.faults import WorkerLog
from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, Stack, read_rows, wait_until

BAD = {
    "transforms": "bad",
    # Every record's value lacks the field: the transform throws, errors.tolerance=all parks
    # the record in the DLQ, and every task stays RUNNING.
    "transforms.bad.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
    "transforms.bad.field": "no_such_field",
}


def with_bad(config: dict[str, Any]) -> dict[str, Any]:
    """A hand edit that puts BAD first in the sink's chain, as an operator adds a transform to a
    generated one (the freshness probe's routers stay after it)."""
    chain = [a for a in str(config.get("transforms", "")).split(",") if a]
    return {**config, **BAD, "transforms": ",".join(["bad", *chain])}


ROLLOUT = {"canary": 1, "waves": [50, 100], "analysis_s": 15, "interval_s": 2, "max_lag_age_s": 60}


class Load:
    """Rows into bob's users, students and locations, a few a second, until stopped."""

    def __init__(self, dsn: str) -> None:
        self.dsn, self.n = dsn, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)

    def _run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self.stop.wait(0.1):
                self.n += 1
                key = f"load-{self.n}"
                with conn.transaction():
                    conn.execute("INSERT INTO users (user_id, name, email) VALUES (%s, 'n', 'e')", [key])
                    conn.execute("INSERT INTO students (student_id, current_grade) VALUES (%s, 1)", [key])
                    conn.execute("INSERT INTO locations (location_id, name) VALUES (%s, 'l')", [key])


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Iterator[Fleet]:
    fleet = bob_fleet
    fleet.edit_project(policy={"ready_timeout_s": 120, "stability_window_s": 2})
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    yield fleet


SINKS = {"auth": ["users"], "eureka": ["users", "students"], "fatima": ["students", "locations"]}


def sink_files(fleet: Fleet) -> dict[str, Path]:
    return {json.loads(p.read_text())["name"]: p for p in (fleet.root / "connectors/platforms/sink").glob("*.json")}


def edit_all(fleet: Fleet, change: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every sink's file changed the same way; the configs as they were."""
    before = {}
    for name, path in sink_files(fleet).items():
        doc = json.loads(path.read_text())
        before[name] = dict(doc["config"])
        doc["config"] = with_bad(doc["config"]) if change is BAD else {**doc["config"], **change}
        path.write_text(json.dumps(doc))
    return before


def arrived(fleet: Fleet, key: str) -> None:
    """The row `key` reached every sink table (read back from each sink database)."""
    for db, tables in SINKS.items():
        for table in tables:
            column = {"users": "user_id", "students": "student_id", "locations": "location_id"}[table]
            query = f"SELECT count(*) FROM {table} WHERE {column} = %s"
            dsn = fleet.stack.dsn(fleet.dbs[db])
            wait_until(
                lambda: read_rows(dsn, query, [key])[0][0] == 1 or None, timeout=120, message=f"{key} in {db}.{table}"
            )


def live(connect: ConnectClient, name: str) -> dict[str, Any]:
    return {k: v for k, v in connect.config(name).items() if k != "name"}


def logs(stack: Stack) -> list[WorkerLog]:
    return [WorkerLog(stack, w) for w in range(1, stack.connects + 1)]


def test_a_bad_change_under_load_is_caught_by_the_canary_and_the_rest_is_never_written(
    fleet: Fleet, connect: ConnectClient, stack: Stack
) -> None:
    sinks = sorted(sink_files(fleet))
    canary, rest = sinks[0], sinks[1:]
    with Load(stack.dsn(fleet.dbs["bob"])) as load:
        wait_until(lambda: load.n > 5 or None, timeout=30, message="load running")
        before = edit_all(fleet, BAD)
        seen = logs(stack)
        fleet.edit_project(rollout={**ROLLOUT, "canary": [canary]})
        code, report = fleet.reconcile()
        (cluster,) = report["clusters"]
        assert code == 1, json.dumps(cluster, indent=1)
        results = {r["name"]: r for r in cluster["results"]}
        assert "its DLQ grew by" in results[canary]["detail"], results[canary]
        assert all(results[n]["detail"].startswith("not applied: the rollout stopped at canary") for n in rest)
        rollback = [(r["action"], r["name"], r["ok"]) for r in cluster["rollout"]["rollback"]]
        assert rollback == [("update", canary, True), ("dlq-replay", canary, True)]  # what it parked, given back
        assert [w for log in seen for w in log.writes(rest)] == [], "the rest of the fleet was written"
        assert len([w for log in seen for w in log.writes([canary]) if w.method == "PUT"]) >= 2
        assert live(connect, canary) == before[canary]  # read back: the config before the run
        key = f"load-{load.n}"
    arrived(fleet, key)  # every sink, the canary included, still replicates


def test_a_good_change_passes_every_gate_wave_by_wave(fleet: Fleet, connect: ConnectClient) -> None:
    with Load(fleet.stack.dsn(fleet.dbs["bob"])) as load:
        edit_all(fleet, {"tasks.max": "2"})
        fleet.edit_project(rollout=ROLLOUT)
        code, report = fleet.reconcile()
        (cluster,) = report["clusters"]
        assert code == 0, json.dumps(cluster, indent=1)
        assert cluster["rollout"]["report"] == ["canary: 1 passed", "wave 1: 2 passed", "wave 2: 2 passed"]
        assert all(connect.config(n)["tasks.max"] == "2" for n in sink_files(fleet))
        key = f"load-{load.n}"
    arrived(fleet, key)


def test_a_change_that_really_fails_is_rolled_back_to_the_config_it_had(fleet: Fleet, connect: ConnectClient) -> None:
    name = sorted(sink_files(fleet))[0]
    path = sink_files(fleet)[name]
    doc = json.loads(path.read_text())
    before = dict(doc["config"])
    doc["config"]["connection.username"] = "no_such_user"
    path.write_text(json.dumps(doc))
    fleet.edit_project(rollout={**ROLLOUT, "canary": 1, "waves": [100]})
    with Load(fleet.stack.dsn(fleet.dbs["bob"])) as load:
        code, report = fleet.reconcile()
        (cluster,) = report["clusters"]
        assert code == 1, json.dumps(cluster, indent=1)
        (result,) = cluster["results"]
        assert result["ok"] is False and result["detail"].endswith("; rolled back"), result
        assert [(r["action"], r["name"], r["ok"]) for r in cluster["rollout"]["rollback"]] == [("update", name, True)]
        assert live(connect, name) == before
        key = f"load-{load.n}"
    arrived(fleet, key)

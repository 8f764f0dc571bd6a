"""A plugin version bump made in git, on the real stack (issue 50): Connect 4.3.1 whose worker
holds the Debezium PostgreSQL source in two versions (dev/stack: HEPH_DEBEZIUM_OLD_VERSION beside
HEPH_DEBEZIUM_VERSION, KIP-891).

- `hephaestus plugins` lists both versions on the worker and the version the source runs.
- The source pinned to the old version in git runs it (read back from /status); the bump in git is
  planned as a `plugin-upgrade` beside the version it runs, applied, and then every task's /status
  shows the new version, and rows written before and after arrive at the sink once (accuracy --deep).
- Under a writer, the bump goes through the cluster's rollout (the canary's health gates: its
  lag's age) and no row is lost or repeated.
- A pin to a version the worker does not hold is refused before any write (exit 2,
  `plugin-missing`, naming the worker): Connect's config is read back unchanged.
"""

from __future__ import annotations

import json
import threading

import psycopg
import pytest

from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, execute, load_stack_env, read_rows, wait_until

PIN = "connector.plugin.version"


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Fleet:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    fleet.edit_project(policy={"ready_timeout_s": 120, "stability_window_s": 2})
    return fleet


def versions() -> tuple[str, str]:
    env = load_stack_env()
    old, new = env.get("HEPH_DEBEZIUM_OLD_VERSION", ""), env["HEPH_DEBEZIUM_VERSION"]
    assert old, "HEPH_DEBEZIUM_OLD_VERSION is empty: the stack installs one version only"
    return old, new


def pin(fleet: Fleet, version: str) -> str:
    """The source's file pinned to `version`; its name."""
    (path,) = (fleet.root / "connectors/platforms/source").glob("*.json")
    doc = json.loads(path.read_text())
    doc["config"][PIN] = version
    path.write_text(json.dumps(doc))
    return str(doc["name"])


def running(connect: ConnectClient, name: str) -> set[str]:
    """The versions the connector and each of its tasks report running (KIP-891 /status)."""
    status = connect.status(name) or {}
    return {status.get("connector", {}).get("version", "?")} | {t.get("version", "?") for t in status.get("tasks", [])}


def arrived(fleet: Fleet, key: str) -> None:
    auth = fleet.stack.dsn(fleet.dbs["auth"])
    wait_until(
        lambda: read_rows(auth, "SELECT count(*) FROM users WHERE user_id = %s", [key]) == [(1,)] or None,
        timeout=180,
        message=f"{key} at auth",
    )


def test_a_bump_in_git_runs_the_new_version_and_rows_keep_arriving(fleet: Fleet, connect: ConnectClient) -> None:
    old, new = versions()
    bob = fleet.stack.dsn(fleet.dbs["bob"])
    source = pin(fleet, old)
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    connect.wait_running(source, timeout=120)
    assert running(connect, source) == {old}
    execute(bob, "INSERT INTO users (user_id, name) VALUES ('before', 'a')")
    arrived(fleet, "before")

    code, out = fleet.cli("plugins", "--project", str(fleet.root / "hephaestus.yaml"), "-o", "json")
    cluster = json.loads(out[out.index("{") : out.rindex("}") + 1])["clusters"][0]
    # Found by type and the class's last part: every byte out is redacted, and a stack whose
    # password is `postgres` (CI's) shows the package as `io.debezium.connector.****ql`.
    held = [p["versions"] for w in cluster["workers"].values() for p in w if p["type"] == "source"]
    sources = [p["class"] for w in cluster["workers"].values() for p in w if p["type"] == "source"]
    assert held == [[old, new]] and sources[0].endswith(".PostgresConnector"), out
    mine = {c["name"]: c for c in cluster["connectors"]}
    assert mine[source]["version"] == old and mine[source]["pins"] == {PIN: old}

    pin(fleet, new)
    code, report = fleet.reconcile("--dry-run")
    (step,) = [s for s in report["clusters"][0]["steps"] if s["name"] == source]
    assert [(e["effect"], e["why"]) for e in step["effects"]] == [
        ("plugin-upgrade", f"{PIN}: {old} → {new} (runs {old})")
    ]
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    execute(bob, "INSERT INTO users (user_id, name) VALUES ('after', 'b')")
    connect.wait_running(source, timeout=120)
    wait_until(lambda: running(connect, source) == {new} or None, timeout=120, message=f"every task on {new}")
    arrived(fleet, "after")
    auth = fleet.stack.dsn(fleet.dbs["auth"])
    assert read_rows(auth, "SELECT count(*), count(DISTINCT user_id) FROM users") == [(2, 2)]
    code, report = fleet.accuracy("--deep")
    assert code == 0 and all(t["verdict"] == "match" for t in report["tables"]), json.dumps(report, indent=1)


def test_a_version_the_worker_lacks_is_refused_with_no_write(fleet: Fleet, connect: ConnectClient) -> None:
    old, _ = versions()
    source = pin(fleet, old)
    assert fleet.reconcile()[0] == 0
    connect.wait_running(source, timeout=120)
    pin(fleet, "3.5.2.Final")  # not installed: Connect would answer 400 on the PUT
    code, report = fleet.reconcile()
    (cluster,) = report["clusters"]
    assert code == 2, json.dumps(cluster, indent=1)
    assert "plugin-missing" in cluster["refused"] and "3.5.2.Final: worker" in cluster["refused"]
    assert cluster["results"] == []
    assert connect.config(source)[PIN] == old and running(connect, source) == {old}  # nothing written


class Writer:
    """Rows into bob's users, one every 20 ms, until stopped: the load a bump must lose none of."""

    def __init__(self, dsn: str) -> None:
        self.dsn, self.n, self.error = dsn, 0, None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                while not self.stop.wait(0.02):
                    conn.execute("INSERT INTO users (user_id, name) VALUES (%s, 'w')", [f"load-{self.n}"])
                    self.n += 1
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def test_a_bump_goes_through_the_canary_under_load_and_loses_no_row(fleet: Fleet, connect: ConnectClient) -> None:
    old, new = versions()
    source = pin(fleet, old)
    assert fleet.reconcile()[0] == 0
    connect.wait_running(source, timeout=120)
    fleet.edit_project(rollout={"canary": 1, "analysis_s": 10, "interval_s": 2, "max_lag_age_s": 120})
    writer = Writer(fleet.stack.dsn(fleet.dbs["bob"]))
    writer.thread.start()
    wait_until(lambda: writer.n > 20 or None, timeout=60, message="the writer running")
    pin(fleet, new)
    code, report = fleet.reconcile()
    writer.stop.set()
    writer.thread.join(timeout=30)
    assert writer.error is None, writer.error
    (cluster,) = report["clusters"]
    assert code == 0, json.dumps(cluster, indent=1)
    assert cluster["rollout"]["report"][0] == "canary: 1 passed", cluster["rollout"]
    wait_until(lambda: running(connect, source) == {new} or None, timeout=120, message=f"every task on {new}")
    auth = fleet.stack.dsn(fleet.dbs["auth"])
    query = "SELECT count(*), count(DISTINCT user_id) FROM users WHERE user_id LIKE 'load-%%'"
    wait_until(lambda: read_rows(auth, query) == [(writer.n, writer.n)] or None, timeout=240, message="every row")

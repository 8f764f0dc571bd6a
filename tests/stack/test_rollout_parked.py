"""Issue 43, item 6 on the real stack: a canary whose transform throws on every record (with
errors.tolerance=all its tasks stay RUNNING) parks rows in its DLQ until the gate sees the DLQ
grow and rolls it back; the rollback then replays what it parked, through `dlq replay`'s path,
and every row written at the source during the rollout is read back from the sink database:
none is left parked, and the DLQ needs no one afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.stack.fleet import Fleet
from tests.stack.support import read_rows, wait_until
from tests.stack.test_progressive import Load, with_bad

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Iterator[Fleet]:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    fleet.edit_project(policy={"ready_timeout_s": 120, "stability_window_s": 2})
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    yield fleet


def users(fleet: Fleet) -> set[str]:
    rows = read_rows(fleet.stack.dsn(fleet.dbs["auth"]), "SELECT user_id FROM users WHERE user_id LIKE 'load-%%'")
    return {r[0] for r in rows}


def test_a_rolled_back_canary_gives_back_what_it_parked_and_every_row_arrives(fleet: Fleet) -> None:
    sink = fleet.name("platforms", "to_" + fleet.dbs["auth"])
    path = next((fleet.root / "connectors/platforms/sink").glob("*.json"))
    doc = json.loads(path.read_text())
    doc["config"] = with_bad(doc["config"])
    path.write_text(json.dumps(doc))
    fleet.edit_project(
        rollout={"canary": 1, "waves": [100], "analysis_s": 20, "interval_s": 1, "max_lag_age_s": 60},
        policy={"ready_timeout_s": 120, "stability_window_s": 2},
    )
    with Load(fleet.stack.dsn(fleet.dbs["bob"])) as load:
        wait_until(lambda: load.n > 5 or None, timeout=30, message="load running")
        code, report = fleet.reconcile()
        (cluster,) = report["clusters"]
    written = {f"load-{i}" for i in range(1, load.n + 1)}
    assert code == 1, json.dumps(cluster, indent=1)
    assert "its DLQ grew by" in cluster["results"][0]["detail"], cluster["results"]
    rollback = {r["action"]: r for r in cluster["rollout"]["rollback"]}
    assert rollback["update"]["ok"] and rollback["dlq-replay"]["ok"], rollback
    replayed = int(rollback["dlq-replay"]["detail"].split()[1])
    assert replayed > 0 and "parked while the rollout ran" in rollback["dlq-replay"]["detail"]
    # Read back from the sink database: every row written during the rollout, none left parked.
    wait_until(lambda: written <= users(fleet) or None, timeout=120, message="every row in auth.users")
    code, out = fleet.cli("dlq", "list", "--project", str(fleet.root / "hephaestus.yaml"), "-o", "json")
    (found,) = [d for d in json.loads(out)["dlqs"] if d["connector"] == sink]
    assert code == 0 and found["depth"] == replayed and found["unresolved"] == 0, out

"""A move between two Connect clusters on the real stack (issue 49): PostgreSQL, Kafka, two
Connect clusters (own group.id and internal topics, one Kafka), Debezium.

Under load (a writer inserting 100 rows a second for 60 s), the `bob` source and its `auth` sink
move from cluster `platforms` to cluster `second` by moving their files between the clusters'
folders; one reconcile plans each as `move` and runs it: stopped on platforms, offsets read,
created STOPPED on second, offsets written, started, deleted on platforms. Read back: every row
written arrives at the sink once (accuracy --deep is MATCH, distinct keys equal the count), the
topic gains no snapshot record, and the same slot keeps advancing."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from hephaestus.state.ledgerdoc import lsn_of
from tests.stack.fleet import Fleet, make_fleet
from tests.stack.kafka import ops, read_topic
from tests.stack.support import ConnectClient, Stack, read_rows, wait_until

RATE, SECONDS = 100, 60  # rows a second, for so long (the load)


class Writer:
    """Rows into bob's users at RATE a second (ten per transaction, every 0.1 s on the clock)."""

    def __init__(self, dsn: str) -> None:
        self.dsn, self.n = dsn, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def start(self) -> Writer:
        self.thread.start()
        return self

    def join(self) -> int:
        self.thread.join(timeout=SECONDS + 60)
        assert not self.thread.is_alive() and self.error is None, self.error
        return self.n

    def _run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                start = time.monotonic()
                for tick in range(SECONDS * 10):
                    rows = [(f"move-{self.n + i}", "n", "e") for i in range(RATE // 10)]
                    with conn.cursor() as cur:
                        cur.executemany("INSERT INTO users (user_id, name, email) VALUES (%s, %s, %s)", rows)
                    self.n += len(rows)
                    # paced on the clock: a slow insert is caught up, never a fixed sleep's drift
                    if self.stop.wait(max(0.0, start + (tick + 1) / 10 - time.monotonic())):
                        return
        except BaseException as exc:  # reported by join()
            self.error = exc


@pytest.fixture
def fleet(
    tmp_path: Path,
    stack: Stack,
    fresh_db: Callable[..., str],
    connect: ConnectClient,
    connect2: ConnectClient,
    capsys: pytest.CaptureFixture[str],
) -> Fleet:
    fleet = make_fleet(tmp_path, stack, fresh_db, capsys, ["bob"], {"platforms": connect, "second": connect2})
    fleet.only_users_to_auth()
    fleet.edit_project(policy={"ready_timeout_s": 180, "stability_window_s": 2})
    (fleet.root / "connectors/second").mkdir()  # a cluster's folder, empty until the move
    return fleet


def slot(stack: Stack, fleet: Fleet) -> tuple[int, list[str]]:
    """The source's slot's confirmed_flush_lsn, and every slot of its database (by name)."""
    rows = read_rows(
        stack.dsn(fleet.dbs["bob"]),
        # pg_replication_slots is the whole server's: the tests beside this one make and drop theirs
        "SELECT slot_name, confirmed_flush_lsn::text FROM pg_replication_slots WHERE database = current_database()",
    )
    mine = [lsn_of(str(lsn)) for name, lsn in rows if name == fleet.slot()]
    assert len(mine) == 1, rows
    return mine[0], sorted(str(name) for name, _ in rows)


def moved(fleet: Fleet, kind: str) -> str:
    """Moves the cluster's one connector file of `kind` to the second cluster's folder."""
    (path,) = (fleet.root / "connectors/platforms" / kind).glob("*.json")
    target = fleet.root / "connectors/second" / kind / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    path.rename(target)
    name: str = json.loads(target.read_text())["name"]
    return name


def test_a_source_and_its_sink_move_to_another_cluster_under_load_losing_and_repeating_nothing(
    fleet: Fleet, stack: Stack, connect: ConnectClient, connect2: ConnectClient
) -> None:
    bob, auth = stack.dsn(fleet.dbs["bob"]), stack.dsn(fleet.dbs["auth"])
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    source, sink = fleet.name("platforms", "source"), fleet.name("platforms", "sink")
    topic = fleet.topic("users")

    def at_sink() -> int:
        return int(read_rows(auth, "SELECT count(*) FROM users WHERE user_id LIKE 'move-%%'")[0][0])

    writer = Writer(bob).start()
    wait_until(lambda: at_sink() > 0 or None, timeout=180, message="the writer's first rows at auth")
    snapshots = sum(1 for op, _ in ops(read_topic(stack.bootstrap, topic)) if op == "r")
    before, slots_before = slot(stack, fleet)

    assert (moved(fleet, "source"), moved(fleet, "sink")) == (source, sink)
    connect2.track(source)
    connect2.track(sink)
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    clusters = {c["cluster"]: c for c in report["clusters"]}
    steps = {s["name"]: s for s in clusters["second"]["steps"]}
    assert {n: (s["action"], s["moved_from"]) for n, s in steps.items()} == {
        source: ("move", "platforms"),
        sink: ("move", "platforms"),
    }
    assert not clusters["platforms"]["steps"], clusters["platforms"]
    results = {r["name"]: r for r in clusters["second"]["results"]}
    assert all(r["ok"] for r in results.values()) and "offset partitions carried over" in results[source]["detail"]
    assert connect.status(source) is None and connect.status(sink) is None  # gone from the first cluster
    connect2.wait_running(source, timeout=120)
    connect2.wait_running(sink, timeout=120)

    written = writer.join()
    assert written == RATE * SECONDS
    wait_until(lambda: at_sink() == written or None, timeout=300, message=f"all {written} rows at auth")
    count, distinct = read_rows(
        auth, "SELECT count(*), count(DISTINCT user_id) FROM users WHERE user_id LIKE 'move-%%'"
    )[0]
    assert count == distinct == written  # each row once
    values = read_topic(stack.bootstrap, topic)
    assert sum(1 for op, _ in ops(values) if op == "r") == snapshots, "no snapshot after the move"
    inserts = [key for op, key in ops(values) if op == "c" and key.startswith("move-")]
    assert len(inserts) == len(set(inserts)) == written  # each row in the topic once: none repeated
    after, slots_after = slot(stack, fleet)
    assert slots_after == slots_before and after > before  # the same slot, still advancing

    code, report = fleet.accuracy("--deep")
    assert code == 0, json.dumps(report, indent=1)
    assert all(t["verdict"] == "match" for t in report["tables"]), report
    code, report = fleet.reconcile("--dry-run")  # converged: nothing left to move or create
    assert code == 0 and all(
        s["action"] in ("unchanged", "protected") for c in report["clusters"] for s in c["steps"]
    ), report

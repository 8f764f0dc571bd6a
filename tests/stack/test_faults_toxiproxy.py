"""Network faults between hephaestus and the real stack, made by Toxiproxy (dev/tools/toxiproxy):
latency beyond the client timeout and connection resets around writes, a cluster that stops
answering during the waits, a slow link, and a lock database that resets connections.

The worker's request log is the witness of how many writes reached Connect.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hephaestus.connect import ConnectClient as Hephaestus
from tests.faults.toxiproxy import Proxy, Toxiproxy
from tests.stack.faults import WorkerLog
from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, Stack, wait_until
from tests.stack.test_faults import edit_project, run_reconcile

pytestmark = [pytest.mark.faults, pytest.mark.exclusive]  # links cut, workers restarted


@pytest.fixture(scope="module")
def toxiproxy() -> Iterator[Toxiproxy]:
    with Toxiproxy() as server:
        yield server


@pytest.fixture
def proxy(toxiproxy: Toxiproxy, stack: Stack) -> Iterator[Proxy]:
    p = toxiproxy.proxy(f"connect_{time.monotonic_ns()}", upstream=stack.connect_url.removeprefix("http://"))
    yield p
    p.delete()


@pytest.fixture
def users(bob_fleet: Fleet) -> Fleet:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    edit_project(fleet, policy={"ready_timeout_s": 120, "stability_window_s": 5})
    return fleet


def lift_when(proxy: Proxy, seen: Callable[[], bool], after_s: float = 0.0) -> threading.Thread:
    """Remove every toxic `after_s` after `seen()` (the write reached the worker)."""

    def watch() -> None:
        wait_until(seen, timeout=60, interval=0.02, message="the write in the worker's log")
        time.sleep(after_s)  # let the client's own timeout run out first
        proxy.clear()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def client(proxy: Proxy, timeout: float = 2.0) -> Hephaestus:
    return Hephaestus(proxy.url, name="proxied", timeout=timeout)


def sink_config(fleet: Fleet, connect: ConnectClient) -> tuple[str, dict[str, str]]:
    name = fleet.name("platforms", "_to_")
    return name, connect.config(name)


@pytest.mark.parametrize(("toxic", "attributes"), [("latency", {"latency": 6000}), ("reset_peer", {"timeout": 0})])
def test_an_update_whose_answer_is_lost_is_applied_once(
    users: Fleet, stack: Stack, connect: ConnectClient, proxy: Proxy, toxic: str, attributes: dict[str, Any]
) -> None:
    assert users.reconcile()[0] == 0
    name, config = sink_config(users, connect)
    log = WorkerLog(stack)
    proxy.toxic(toxic, attributes, stream="downstream")
    # Latency: lifted once the PUT reached the worker and our 2 s timeout ran out. Resets:
    # lifted after 2 s whatever happened (a reset may drop the request before it arrives).
    watcher = (
        lift_when(proxy, lambda: bool(log.writes([name])), after_s=3.0)
        if toxic == "latency"
        else lift_when(proxy, lambda: True, after_s=2.0)
    )
    start = time.monotonic()
    with client(proxy, timeout=2.0 if toxic == "latency" else 4.0) as hephaestus:
        hephaestus.put_config(name, {**config, "batch.size": "77"})
        requests = hephaestus.requests
    watcher.join()
    print(f"{toxic} on update: one PUT, {requests} requests, {time.monotonic() - start:.1f}s", file=sys.stderr)
    assert requests >= 2  # the answer was lost: the client had to read the live state
    assert [(s.method, s.status) for s in log.writes([name])] == [("PUT", 200)]
    assert connect.config(name)["batch.size"] == "77"


def test_a_create_and_a_delete_whose_answers_time_out_are_sent_once(
    users: Fleet, stack: Stack, connect: ConnectClient, proxy: Proxy
) -> None:
    assert users.reconcile()[0] == 0
    name, config = sink_config(users, connect)
    twin = f"{name}_twin"
    connect.track(twin)
    for verb in ("create", "delete"):
        log = WorkerLog(stack)
        proxy.toxic("latency", {"latency": 6000})
        watcher = lift_when(proxy, lambda: bool(log.writes()), after_s=3.0)
        with client(proxy) as hephaestus:
            hephaestus.create(
                twin, {k: v for k, v in config.items() if k != "name"}
            ) if verb == "create" else hephaestus.delete(twin)
            assert hephaestus.requests >= 2, verb
        watcher.join()
        assert len(log.writes()) == 1, (verb, log.writes())
    assert twin not in connect.names()


def test_a_cluster_that_stops_answering_during_the_waits_fails_fast(
    users: Fleet, stack: Stack, connect: ConnectClient, proxy: Proxy
) -> None:
    edit_project(
        users,
        clusters={
            "platforms": {
                "url": proxy.url,
                "connectors": "connectors/platforms",
                "timeout_s": 2,
                "select": [f"*{db}*" for db in users.dbs.values()],
            }
        },
    )
    names = users.connector_names("platforms")
    log = WorkerLog(stack)

    def blackhole() -> None:
        wait_until(lambda: len(log.writes()) >= len(names), timeout=120, interval=0.02, message="the creates")
        proxy.toxic("timeout", {"timeout": 0})  # no byte passes any more, connections hang

    threading.Thread(target=blackhole, daemon=True).start()
    start = time.monotonic()
    code, report, err = run_reconcile(users)
    took = time.monotonic() - start
    results = report["clusters"][0]["results"]
    print(
        f"blackholed during waits: exit {code} in {took:.1f}s: {[r['detail'][:60] for r in results]}", file=sys.stderr
    )
    # Writes go in waves (sources, then the sinks reading them): the source was ready before
    # the last create went out; what was still being waited for when the link died is unknown.
    by_name = {r["name"]: r for r in results}
    assert code == 1, results
    sinks = users.connector_names("platforms", "sink")
    assert sinks and all(by_name[n]["detail"].startswith("unknown: cluster unreachable") for n in sinks), results
    assert all(r["ok"] or r["detail"].startswith("unknown: cluster unreachable") for r in results), results
    assert len(log.writes()) == len(names)
    proxy.clear()
    code, report, err = run_reconcile(users)
    assert code == 0 and report["clusters"][0]["writes"] == 0, (report, err)


def test_a_slow_link_is_slow_not_wrong(users: Fleet, stack: Stack, connect: ConnectClient, proxy: Proxy) -> None:
    edit_project(
        users,
        clusters={
            "platforms": {
                "url": proxy.url,
                "connectors": "connectors/platforms",
                "timeout_s": 30,
                "select": [f"*{db}*" for db in users.dbs.values()],
            }
        },
    )
    proxy.toxic("bandwidth", {"rate": 4})  # KB/s, both ways
    proxy.toxic("bandwidth", {"rate": 4}, stream="upstream")
    log = WorkerLog(stack)
    code, report, err = run_reconcile(users)
    assert code == 0, (report, err)
    assert len(log.writes()) == len(users.connector_names("platforms"))


def test_a_lock_database_resetting_connections_stops_the_run_before_any_write(
    users: Fleet, stack: Stack, toxiproxy: Toxiproxy
) -> None:
    pg = toxiproxy.proxy(f"pg_{time.monotonic_ns()}", upstream=f"{stack.pg_host}:{stack.pg_port}")
    try:
        host, port = pg.listen.rsplit(":", 1)
        edit_project(
            users,
            databases={"lockdb": {"dsn": f"host={host} port={port} user={stack.pg_user} dbname={users.dbs['bob']}"}},
            lock={"database": "lockdb"},
        )
        pg.toxic("reset_peer", {"timeout": 0})
        log = WorkerLog(stack)
        code, out = users.cli("reconcile", "--auto-approve", "--project", str(users.root / "hephaestus.yaml"))
        assert code == 1 and "lock database" in out and "Traceback" not in out, out
        assert log.writes() == []
    finally:
        pg.delete()

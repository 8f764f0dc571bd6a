"""Trust under faults on the real stack: a worker killed with -9 mid-apply and mid-delete, two
reconciles at once, a sink that fails seconds after it started, a crashed lock holder.

Writes are counted from the worker's own request log (tests/stack/faults.py), rows are read
back from the sink databases.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.stack.faults import WorkerLog, finished, hephaestus, kill_worker, restart_stack
from tests.stack.fleet import Fleet, dump_yaml
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.exclusive]  # workers killed: nothing else may run


@pytest.fixture
def bob(bob_fleet: Fleet) -> Iterator[Fleet]:
    fleet = bob_fleet
    edit_project(fleet, state={"database": fleet.dbs["bob"]}, policy={"ready_timeout_s": 120, "stability_window_s": 5})
    yield fleet


def edit_project(fleet: Fleet, **changes: Any) -> None:
    path = fleet.root / "hephaestus.yaml"
    project = yaml.safe_load(path.read_text())
    project.update(changes)
    path.write_text(dump_yaml(project))


def report_of(out: str) -> dict[str, Any]:
    assert "{" in out, out
    return json.loads(out[out.index("{") : out.rindex("}") + 1])  # type: ignore[no-any-return]


def run_reconcile(fleet: Fleet, *args: str) -> tuple[int, dict[str, Any], str]:
    proc = hephaestus(
        "reconcile", "--auto-approve", "--project", "hephaestus.yaml", "-o", "json", *args, cwd=fleet.root
    )
    code, out, err, _ = finished(proc)
    return code, report_of(out), err


def replicated(fleet: Fleet, db: str, user_id: str) -> list[tuple[Any, ...]]:
    dsn = fleet.stack.dsn(fleet.dbs[db])
    return wait_until(
        lambda: read_rows(dsn, "SELECT user_id FROM users WHERE user_id = %s", [user_id]),
        timeout=120,
        message=f"{user_id} in {db}",
    )


def test_kill_9_mid_apply_then_rerun_converges_with_no_extra_write(
    bob: Fleet, stack: Stack, connect: ConnectClient
) -> None:
    names = bob.connector_names("platforms")
    execute(stack.dsn(bob.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('before-kill', 'a')")
    log = WorkerLog(stack)
    proc = hephaestus("reconcile", "--auto-approve", "--project", "hephaestus.yaml", "-o", "json", cwd=bob.root)
    wait_until(lambda: len(log.writes()) >= 2, timeout=120, interval=0.05, message="the first creates")
    kill_worker(stack)
    code, out, _, took = finished(proc)
    report = report_of(out)
    results = report["clusters"][0]["results"]
    assert code == 1 and any(r["detail"].startswith("unknown") for r in results), results
    print(
        f"killed mid-apply: exit {code} after {took:.1f}s more; {sum(r['ok'] for r in results)} ok of {len(results)}",
        file=sys.stderr,
    )

    restart_stack(stack)
    live_before = set(connect.names()) & set(names)
    log = WorkerLog(stack)
    code, report, err = run_reconcile(bob)
    assert code == 0, (report, err)
    creates = {s["name"] for s in report["clusters"][0]["steps"] if s["action"] == "create"}
    assert creates == set(names) - live_before and not any(
        s["action"] == "update" for s in report["clusters"][0]["steps"]
    )
    assert len(log.writes()) == len(creates)  # exactly the missing creates reached the worker
    assert run_reconcile(bob)[1]["clusters"][0]["writes"] == 0

    execute(stack.dsn(bob.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('after-kill', 'b')")
    for db in ("auth", "eureka"):
        assert replicated(bob, db, "before-kill") and replicated(bob, db, "after-kill")


def test_kill_9_mid_delete_then_rerun_deletes_the_rest(bob: Fleet, stack: Stack, connect: ConnectClient) -> None:
    assert run_reconcile(bob)[0] == 0
    sinks = bob.connector_names("platforms", "sink")
    gone = sinks[:2]
    for name in gone:
        (bob.root / "connectors/platforms/sink" / f"{name}.json").unlink()
    log = WorkerLog(stack)
    proc = hephaestus("reconcile", "--auto-approve", "--project", "hephaestus.yaml", "-o", "json", cwd=bob.root)
    wait_until(lambda: log.writes(), timeout=60, interval=0.02, message="the first delete")
    kill_worker(stack)
    finished(proc)
    restart_stack(stack)
    code, report, err = run_reconcile(bob)
    assert code == 0, (report, err)
    assert not set(gone) & set(connect.names()), report
    assert set(connect.names()) >= set(sinks[2:])
    assert run_reconcile(bob)[1]["clusters"][0]["writes"] == 0


def test_two_reconciles_at_once_write_once(bob: Fleet, stack: Stack) -> None:
    log = WorkerLog(stack)
    first = hephaestus("reconcile", "--auto-approve", "--project", "hephaestus.yaml", "-o", "json", cwd=bob.root)
    second = hephaestus("reconcile", "--auto-approve", "--project", "hephaestus.yaml", "-o", "json", cwd=bob.root)
    (code1, out1, err1, _), (code2, out2, err2, _) = finished(first), finished(second)
    assert (code1, code2) == (0, 0), (err1, err2)
    writes = sorted(report_of(o)["clusters"][0]["writes"] for o in (out1, out2))
    names = bob.connector_names("platforms")
    assert writes == [0, len(names)]  # the second waited for the lock, then found nothing to do
    assert len(log.writes()) == len(names)


def test_a_crashed_lock_holder_is_named_then_released(bob: Fleet, stack: Stack) -> None:
    holder = textwrap.dedent(f"""
        import sys, time
        from hephaestus.state.backend import urls_lock
        from hephaestus.project import load_project
        project = load_project(__import__("pathlib").Path("hephaestus.yaml"))
        with urls_lock(project, "connect", ["{stack.connect_url}"], "test", 5, run_id="holder-run"):
            print("held", flush=True)
            time.sleep(600)
    """)
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", holder], cwd=bob.root, text=True, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    try:
        code, out = bob.cli(
            "reconcile", "--auto-approve", "--project", str(bob.root / "hephaestus.yaml"), "--lock-timeout", "1"
        )
        assert code == 1 and "run holder-run (test)" in out and f"pid {proc.pid}" in out, out
    finally:
        proc.kill()  # kill -9: the holder never releases; its session ending does
        proc.wait()
    code, report = bob.reconcile("--lock-timeout", "30")
    assert code == 0, report


def test_a_sink_failing_seconds_after_start_fails_the_run_and_the_validate_job(
    bob: Fleet, stack: Stack, connect: ConnectClient
) -> None:
    bob.only_users_to_auth(dlq=False)
    # The sink's table is gone; the source has a row for it: RUNNING at first, FAILED at the first batch.
    execute(stack.dsn(bob.dbs["auth"]), "DROP TABLE users")
    execute(stack.dsn(bob.dbs["bob"]), "INSERT INTO users (user_id, name) VALUES ('u-1', 'a')")
    start = time.monotonic()
    code, report = bob.reconcile()
    sink = bob.name("platforms", "_to_")
    result = next(r for r in report["clusters"][0]["results"] if r["name"] == sink)
    assert code == 1 and result["detail"].startswith("FAILED (task 0)"), report
    print(f"failing sink: exit {code} after {time.monotonic() - start:.1f}s: {result['detail'][:160]}", file=sys.stderr)
    code, out = bob.cli("job", "run", "validate_kafka_connectors", "--project", str(bob.root / "hephaestus.yaml"))
    assert code == 2 and f"unhealthy {sink}: FAILED" in out, out
    code, out = bob.cli(
        "job", "run", "validate_kafka_connectors", "--project", str(bob.root / "hephaestus.yaml"), "--drift-only"
    )
    assert code == 0, out

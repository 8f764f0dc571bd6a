"""The cluster lock without a lock database: a file lock, tried by two real processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hephaestus.state.lock import FileLock, Holder, LockBusy, resource_key

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://Connect.Example:8083/", "connect http://connect.example:8083"),
        ("http://user:pw@connect.example:8083", "connect http://connect.example:8083"),
        ("https://connect.example", "connect https://connect.example:443"),
        ("http://connect.example", "connect http://connect.example:80"),
    ],
)
def test_one_cluster_one_key_however_it_is_spelled(url: str, key: str) -> None:
    assert resource_key("connect", url) == key


def test_a_second_process_waits_then_names_the_holder_then_gets_it_once_released(tmp_path: Path) -> None:
    holder = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from hephaestus.state.lock import FileLock, Holder
        with FileLock(Path({str(tmp_path)!r}), "connect http://c:8083").held(Holder("run-a", "reconcile").now(), 5):
            print("held", flush=True)
            sys.stdin.readline()
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", holder], cwd=REPO, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "held"
    lock = FileLock(tmp_path, "connect http://c:8083")
    with pytest.raises(LockBusy) as busy:
        with lock.held(Holder("run-b", "heal").now(), 0.2):
            pass
    assert "run run-a (reconcile) on" in str(busy.value) and f"pid {proc.pid}" in str(busy.value)
    proc.kill()  # a crashed holder: the kernel releases its flock
    proc.wait()
    with lock.held(Holder("run-b", "heal").now(), 5):
        pass


def test_different_clusters_do_not_wait_on_each_other(tmp_path: Path) -> None:
    with FileLock(tmp_path, "connect http://a:8083").held(Holder("r1", "x").now(), 0):
        with FileLock(tmp_path, "connect http://b:8083").held(Holder("r2", "x").now(), 0):
            pass


def test_two_heal_runs_with_different_state_files_serialise_on_the_cluster(tmp_path: Path) -> None:
    from hephaestus.heal.run import heal_project
    from hephaestus.project import load_project

    (tmp_path / "p.yaml").write_text("clusters:\n  c:\n    url: http://127.0.0.1:9/\n    connectors: c\n")
    project = load_project(tmp_path / "p.yaml")
    key = resource_key("connect", "http://127.0.0.1:9")
    with FileLock(tmp_path / ".hephaestus" / "locks", key).held(Holder("first-heal", "heal").now(), 0):
        with pytest.raises(LockBusy, match="first-heal"):
            heal_project(
                project, list(project.clusters.values()), False, tmp_path / "other-state.json", lock_timeout_s=0.1
            )

"""Faults on the real stack: kill -9 a Connect worker (or stop it, and recreate its cluster empty)
and bring it back, read what the worker itself saw (its REST request log), run hephaestus as a
separate process.

The worker's request log (`RestServer` lines: method, path, status) is the independent
witness of how many writes reached Connect; hephaestus's own counters are not trusted here.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.stack.support import STACK_SRC, Stack, connect_answers, wait_until

# [ts] INFO 127.0.0.1 - - [date] "PUT /connectors/x/config HTTP/1.1" 200 123 "" "ua" 17 (…RestServer)
_REQUEST = re.compile(r'"(GET|POST|PUT|DELETE|PATCH) (\S+) HTTP/1\.1" (\d{3})')


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    status: int


class WorkerLog:
    """The requests a Connect worker logged from now on (its log file only grows)."""

    def __init__(self, stack: Stack, worker: int = 1) -> None:
        self.path = stack.work_dir / "logs" / f"connect{worker}.log"
        self.start = self.path.stat().st_size if self.path.exists() else 0

    def requests(self, names: Iterable[str] = ()) -> list[Seen]:
        with self.path.open("rb") as f:
            f.seek(self.start)
            text = f.read().decode("utf-8", "replace")
        wanted = tuple(names)
        found = [Seen(m.group(1), m.group(2), int(m.group(3))) for m in _REQUEST.finditer(text)]
        return [s for s in found if not wanted or any(n in s.path for n in wanted)]

    def writes(self, names: Iterable[str] = ()) -> list[Seen]:
        return [s for s in self.requests(names) if s.method != "GET" and "/config/validate" not in s.path]


def worker_pid(stack: Stack, worker: int = 1) -> int:
    return int((stack.work_dir / "run" / f"connect{worker}.pid").read_text().strip())


def kill_worker(stack: Stack, worker: int = 1) -> None:
    """kill -9 the worker and wait until it is gone."""
    pid = worker_pid(stack, worker)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not Path(f"/proc/{pid}").exists() or None, timeout=30, message=f"worker {pid} gone")


def stop_worker(stack: Stack, worker: int) -> None:
    """Stop Connect worker `worker` as `dev/stack/down` does (TERM, KILL after the stack's stop
    timeout): its tasks commit and leave their groups, as a cluster taken down in order does."""
    subprocess.run(
        ["bash", "-c", 'source "$1/env.sh" && source "$1/lib.sh" && heph_java_stop "$2"', "_", str(STACK_SRC),
         f"connect{worker}"],
        check=True,
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    assert not connect_answers(worker_url(stack, worker)), f"connect{worker} still answers after its stop"


def internal_topics(stack: Stack, worker: int) -> list[str]:
    """Connect worker `worker`'s config, offsets and status topics, read from the properties
    dev/stack/up wrote for it (one source of truth for their names)."""
    props = (stack.work_dir / f"connect{worker}" / "connect-distributed.properties").read_text()
    keys = ("config.storage.topic", "offset.storage.topic", "status.storage.topic")
    found = dict(line.split("=", 1) for line in props.splitlines() if line.split("=", 1)[0] in keys)
    assert sorted(found) == sorted(keys), found
    return [found[k].strip() for k in keys]


def worker_url(stack: Stack, worker: int) -> str:
    url = {1: stack.connect_url, 2: stack.connect2_url, 3: stack.connect3_url}[worker]
    assert url is not None, f"no Connect cluster {worker} in this stack"
    return url


def restart_stack(stack: Stack, worker: int = 1) -> None:
    """`dev/stack/up` starts what is missing and returns when Connect answers with its plugins;
    then wait until the worker says it has started (`GET /health`): before that its listings
    may lack connectors, and what a test reads from them would be wrong."""
    subprocess.run(
        [str(STACK_SRC / "up")],
        check=True,
        capture_output=True,
        timeout=300,
        env={**os.environ, "HEPH_STACK_CONNECTS": str(stack.connects)},
    )
    url = worker_url(stack, worker)
    assert connect_answers(url)
    wait_until(
        lambda: httpx.get(url + "/health", timeout=5).status_code == 200,
        timeout=180,
        message="the restarted worker has started",
    )


def hephaestus(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """hephaestus in a process of its own (as two pods, or a run killed mid-way, would be)."""
    return subprocess.Popen(
        [sys.executable, "-m", "hephaestus", *args], cwd=cwd, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def finished(proc: subprocess.Popen[str], timeout: float = 600) -> tuple[int, str, str, float]:
    """Exit code, stdout, stderr and how long it ran from now."""
    start = time.monotonic()
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err, time.monotonic() - start

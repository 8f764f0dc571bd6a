"""bench/scale: rollouts at fleet scale on the real stack (issue 18).

1. No-op plan at N connectors (STOPPED sinks in sync): `reconcile --dry-run` in-process against
   the floor (the same process: one listing GET + JSON parsing), the requests it sent, and the
   listing's size and time.
2. 500 creates (STOPPED: two cores cannot run 500 tasks), unpaced against paced with two batch
   sizes: wall time, requests, and the worker group's rebalances counted in connect1's log.

With the stack up:  python bench/scale.py --connectors 2000 5000 --creates 500 --batches 50 100
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import httpx
import ports  # bench/ports.py: the stack's ports, from dev/stack/env.sh's variables
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hephaestus.cli import run  # noqa: E402

CONNECT = ports.CONNECT
PREFIX = "bench_scale_"
LOG = Path(os.environ.get("HEPH_STACK_DIR", "/tmp/hephaestus-stack")) / "logs/connect1.log"
SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"


def config(i: int) -> dict[str, str]:
    return {
        "connector.class": SINK,
        "topics": f"bench.scale.{i}",
        "tasks.max": "1",
        "connection.url": ports.JDBC_URL,
        "connection.username": "postgres",
        "connection.password": "${file:secrets/connect.properties:bob_password}",
    }


def write_files(root: Path, names: list[str]) -> Path:
    folder = root / "connectors/bench/sink"
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config(int(name.split("_")[-1]))}))
    project = {
        "clusters": {"bench": {"url": CONNECT, "connectors": "connectors/bench", "select": [f"{PREFIX}*"]}},
        "policy": {
            "initial_state": "STOPPED",
            "stability_window_s": 0,
            "ready_timeout_s": 600,
            "max_deletes": 100000,
            "max_delete_share": 1.0,
        },
    }
    (root / "hephaestus.yaml").write_text(yaml.safe_dump(project))
    return root / "hephaestus.yaml"


def ensure(http: httpx.Client, names: list[str]) -> None:
    live = set(http.get("/connectors").json())
    for name in names:
        if name not in live:
            r = http.post(
                "/connectors",
                json={"name": name, "config": config(int(name.split("_")[-1])), "initial_state": "STOPPED"},
            )
            assert r.status_code in (201, 409), r.text


def in_process(argv: list[str]) -> tuple[float, str]:
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with redirect_stdout(out), redirect_stderr(err):
        code = run(argv)
    elapsed = time.perf_counter() - start
    assert code in (0, 2), err.getvalue()[-500:]
    return elapsed, out.getvalue()


def floor() -> tuple[float, int]:
    start = time.perf_counter()
    with httpx.Client(base_url=CONNECT, timeout=300) as http:
        body = http.get("/connectors", params=[("expand", "info"), ("expand", "status")]).content
    json.loads(body)
    return time.perf_counter() - start, len(body)


def noop(counts: list[int], runs: int) -> None:
    print("| connectors | listing size | floor (GET + parse) | no-op plan | ratio | requests |")
    print("|---|---|---|---|---|---|")
    with httpx.Client(base_url=CONNECT, timeout=600) as http:
        for n in counts:
            names = [f"{PREFIX}{i:05d}" for i in range(n)]
            ensure(http, names)
            with tempfile.TemporaryDirectory() as tmp:
                path = write_files(Path(tmp), names)
                in_process(["reconcile", "--dry-run", "--project", str(path), "-o", "json"])  # warm
                floors, ours, size, requests = [], [], 0, 0
                for _ in range(runs):
                    f, size = floor()
                    t, out = in_process(["reconcile", "--dry-run", "--project", str(path), "-o", "json"])
                    floors.append(f)
                    ours.append(t)
                    requests = json.loads(out)["clusters"][0]["requests"]
                f, o = statistics.median(floors), statistics.median(ours)
                print(f"| {n} | {size / 1e6:.1f} MB | {f:.3f} s | {o:.3f} s | {o / f:.2f}× | {requests} |", flush=True)


def rebalances() -> int:
    if not LOG.exists():
        return -1
    return sum(1 for line in LOG.read_text(errors="replace").splitlines() if "Rebalance started" in line)


def creates(n: int, batches: list[int]) -> None:
    print("| 500 creates | wall time | requests | rebalances |")
    print("|---|---|---|---|")
    with httpx.Client(base_url=CONNECT, timeout=600) as http:
        for size in [0, *batches]:
            delete_all(http)
            names = [f"{PREFIX}c{i:05d}" for i in range(n)]
            with tempfile.TemporaryDirectory() as tmp:
                path = write_files(Path(tmp), [])
                folder = Path(tmp) / "connectors/bench/sink"
                for i, name in enumerate(names):
                    (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config(i)}))
                before = rebalances()
                t, out = in_process(
                    ["reconcile", "--auto-approve", "--project", str(path), "-o", "json", "--batch-size", str(size)]
                )
                report = json.loads(out)["clusters"][0]
                label = "unpaced" if not size else f"batches of {size}"
                print(f"| {label} | {t:.1f} s | {report['requests']} | {rebalances() - before} |", flush=True)
        delete_all(http)


def delete_all(http: httpx.Client) -> None:
    for name in [n for n in http.get("/connectors").json() if n.startswith(PREFIX)]:
        http.delete(f"/connectors/{name}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connectors", type=int, nargs="*", default=[2000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--creates", type=int, default=0)
    parser.add_argument("--batches", type=int, nargs="*", default=[50, 100])
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    try:
        if args.connectors:
            noop(sorted(args.connectors), args.runs)
        if args.creates:
            creates(args.creates, args.batches)
    finally:
        with httpx.Client(base_url=CONNECT, timeout=600) as http:
            delete_all(http)
    print(f"load average {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)


if __name__ == "__main__":
    main()

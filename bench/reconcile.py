"""bench/reconcile: a fleet of a few hundred connectors on the real Connect (dev/stack).

Connectors are created STOPPED (policy initial_state) so 2 cores can hold hundreds of them.
Measures, per phase: wall seconds, HTTP requests and write requests, from the run's JSON report.
Run with the stack up: python bench/reconcile.py [--connectors 300]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import ports  # bench/ports.py: the stack's ports, from dev/stack/env.sh's variables
import yaml

from hephaestus.cli import run

CONNECT = ports.CONNECT


def write_fleet(root: Path, count: int, batch_size: int) -> None:
    sink = root / "connectors" / "bench" / "sink"
    sink.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = f"bench_sink_{i:04d}"
        config = {
            "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
            "topics": f"bench.topic.{i}",
            "connection.url": ports.JDBC_URL,
            "connection.username": "postgres",
            "connection.password": "${file:secrets/connect.properties:bob_password}",
            "insert.mode": "upsert",
            "primary.key.mode": "record_key",
            "batch.size": str(batch_size),
            "schema.evolution": "none",
            "tasks.max": "1",
        }
        (sink / f"{name}.json").write_text(json.dumps({"name": name, "config": config}))


def reconcile(root: Path, *args: str) -> tuple[float, dict[str, Any]]:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = run(["reconcile", "--auto-approve", "--project", str(root / "hephaestus.yaml"), "-o", "json", *args])
    elapsed = time.perf_counter() - start
    report = json.loads(out.getvalue())["clusters"][0]
    assert code == 0, report.get("error") or report.get("refused") or report.get("invalid")
    return elapsed, report


def phase(label: str, root: Path, *args: str) -> None:
    seconds, r = reconcile(root, *args)
    counts = {k: v for k, v in r["counts"].items() if v}
    print(f"{label:34} {seconds:7.2f}s  {r['requests']:5d} requests  {r['writes']:4d} writes  {counts}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connectors", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = {
            "clusters": {"bench": {"url": CONNECT, "connectors": "connectors/bench"}},
            "policy": {
                "initial_state": "STOPPED",
                "concurrency": args.concurrency,
                "max_deletes": 100000,
                "max_delete_share": 1.0,
            },
        }
        (root / "hephaestus.yaml").write_text(yaml.safe_dump(project))
        write_fleet(root, args.connectors, 100)
        print(f"fleet: {args.connectors} JDBC sinks (STOPPED), concurrency {args.concurrency}, {CONNECT}")
        phase("apply: create all", root)
        phase("dry run: no-op plan", root, "--dry-run")
        phase("apply: no-op", root)
        write_fleet(root, args.connectors, 200)
        phase("apply: update all (batch.size)", root)
        for p in (root / "connectors/bench/sink").glob("*.json"):
            p.unlink()
        phase("apply: delete all (--force)", root, "--force")


if __name__ == "__main__":
    main()

"""bench/apply_ab: hephaestus against the naive sequential tool (bench/naive.py), A/B on the
real Connect (dev/stack up), command level (each run is a fresh process: start-up counts).

Per pair, both tools run the same three shapes from the same starting point: create N RUNNING
JDBC sinks (from none), the no-op (all in sync), update all N (`batch.size`), then the fleet
is deleted over REST. Which tool goes first alternates per pair. Reports min and median per
shape and tool, the ratio of medians, requests, and the machine's load average.

    python bench/apply_ab.py --connectors 100 --pairs 5 [--stability 0] [--concurrency 4]

`--stability` is hephaestus's `policy.stability_window_s`: 0 gives it the naive tool's promise
(RUNNING once); the default policy (10 s) adds one window per apply, whatever N.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import ports  # bench/ports.py: the stack's ports, from dev/stack/env.sh's variables
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CONNECT = ports.CONNECT
PREFIX = "bench_ab_"


def write_fleet(folder: Path, count: int, batch_size: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = f"{PREFIX}{i:04d}"
        config = {
            "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
            "topics": f"bench.ab.{i}",
            "connection.url": ports.JDBC_URL,
            "connection.username": "postgres",
            "connection.password": "${file:secrets/connect.properties:bob_password}",
            "insert.mode": "upsert",
            "primary.key.mode": "record_key",
            "batch.size": str(batch_size),
            "schema.evolution": "none",
            "tasks.max": "1",
            # One database connection per sink: 100 sinks stay under the stack's 200.
            "connection.pool.min_size": "1",
            "connection.pool.max_size": "1",
            "connection.pool.acquire_increment": "1",
        }
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config}))


def reset(http: httpx.Client) -> None:
    names = [n for n in http.get("/connectors").json() if n.startswith(PREFIX)]
    for name in names:
        http.delete(f"/connectors/{name}")
    deadline = time.monotonic() + 120
    while any(n.startswith(PREFIX) for n in http.get("/connectors").json()):
        if time.monotonic() > deadline:
            raise SystemExit("bench connectors not deleted after 120 s")
        time.sleep(0.2)


def timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def naive(folder: Path) -> tuple[float, int]:
    seconds, out = timed([sys.executable, str(HERE / "naive.py"), "--url", CONNECT, str(folder)])
    return seconds, json.loads(out)["requests"]


def ours(root: Path) -> tuple[float, int]:
    seconds, out = timed(
        [
            str(REPO / ".venv/bin/hephaestus"),
            "reconcile",
            "--auto-approve",
            "--project",
            str(root / "hephaestus.yaml"),
            "-o",
            "json",
            "--drift-only",
        ]
    )
    return seconds, json.loads(out)["clusters"][0]["requests"]


SHAPES = ("create", "no-op", "update")


def one_tool(tool: str, root: Path, count: int) -> dict[str, tuple[float, int]]:
    folder = root / "connectors/bench/sink"
    run = (lambda: naive(folder)) if tool == "naive" else (lambda: ours(root))
    write_fleet(folder, count, 100)
    out = {"create": run(), "no-op": run()}
    write_fleet(folder, count, 200)
    out["update"] = run()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connectors", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--stability", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--write-concurrency", type=int, default=None)
    args = parser.parse_args()
    results: dict[str, dict[str, list[tuple[float, int]]]] = {t: {s: [] for s in SHAPES} for t in ("naive", "ours")}
    loads = []
    with tempfile.TemporaryDirectory() as tmp, httpx.Client(base_url=CONNECT, timeout=60) as http:
        root = Path(tmp)
        project = {
            "clusters": {"bench": {"url": CONNECT, "connectors": "connectors/bench"}},
            "policy": {
                "concurrency": args.concurrency,
                "stability_window_s": args.stability,
                **({"write_concurrency": args.write_concurrency} if args.write_concurrency else {}),
                "max_deletes": 100000,
                "max_delete_share": 1.0,
            },
        }
        (root / "hephaestus.yaml").write_text(yaml.safe_dump(project))
        reset(http)
        for pair in range(args.pairs):
            order = ("naive", "ours") if pair % 2 == 0 else ("ours", "naive")
            for tool in order:
                loads.append(os.getloadavg()[0])
                for shape, value in one_tool(tool, root, args.connectors).items():
                    results[tool][shape].append(value)
                reset(http)
            print(f"pair {pair + 1}/{args.pairs} done", file=sys.stderr)
    report(results, args, loads)


def report(
    results: dict[str, dict[str, list[tuple[float, int]]]], args: argparse.Namespace, loads: list[float]
) -> None:
    print(
        f"{args.connectors} RUNNING sinks, {args.pairs} pairs, hephaestus concurrency {args.concurrency}, "
        f"write concurrency {args.write_concurrency or 'default'}, "
        f"stability window {args.stability:g} s; load average {min(loads):.1f}–{max(loads):.1f}"
    )
    print(
        "| shape | naive min / median | hephaestus min / median | naive ÷ hephaestus (medians) "
        "| requests naive / ours |"
    )
    print("|---|---|---|---|---|")
    for shape in SHAPES:
        n = [s for s, _ in results["naive"][shape]]
        o = [s for s, _ in results["ours"][shape]]
        print(
            f"| {shape} | {min(n):.2f} / {statistics.median(n):.2f} s | {min(o):.2f} / {statistics.median(o):.2f} s | "
            f"{statistics.median(n) / statistics.median(o):.2f}× | "
            f"{results['naive'][shape][0][1]} / {results['ours'][shape][0][1]} |"
        )


if __name__ == "__main__":
    main()

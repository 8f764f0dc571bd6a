"""bench/startup: what a short command costs against its floor, A/B interleaved (issue 15).

- `hephaestus --version` against `python -c pass` (the same interpreter, the same venv);
- `hephaestus reconcile --dry-run` with N STOPPED sinks in sync against the floor
  `python -c pass` + one `curl` of the listing it needs (`GET /connectors?expand=info&expand=status`).

With the stack up:  python bench/startup.py --connectors 300 --pairs 7
(the fleet is created STOPPED first, over REST, and deleted at the end).
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

REPO = Path(__file__).resolve().parents[1]
CONNECT = ports.CONNECT
PREFIX = "bench_start_"
PYTHON = str(REPO / ".venv/bin/python")
HEPHAESTUS = str(REPO / ".venv/bin/hephaestus")


def config(i: int) -> dict[str, str]:
    return {
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "topics": f"bench.start.{i}",
        "connection.url": ports.JDBC_URL,
        "connection.username": "postgres",
        "connection.password": "${file:secrets/connect.properties:bob_password}",
        "tasks.max": "1",
    }


def seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}): {proc.stderr.decode()[-1000:]}")
    return elapsed


def fleet(http: httpx.Client, root: Path, count: int) -> None:
    folder = root / "connectors/bench/sink"
    folder.mkdir(parents=True)
    live = set(http.get("/connectors").json())
    for i in range(count):
        name = f"{PREFIX}{i:04d}"
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config(i)}))
        if name not in live:
            r = http.post("/connectors", json={"name": name, "config": config(i), "initial_state": "STOPPED"})
            assert r.status_code in (201, 409), r.text
    project = {"clusters": {"bench": {"url": CONNECT, "connectors": "connectors/bench"}}}
    (root / "hephaestus.yaml").write_text(yaml.safe_dump(project))


def ab(label: str, a: list[str] | list[list[str]], b: list[str], pairs: int) -> None:
    """`a`: the floor (one command, or several run back to back), `b`: ours."""
    floors, ours = [], []
    steps = a if a and isinstance(a[0], list) else [a]
    for pair in range(pairs + 1):  # the first pair warms the caches and is dropped
        runs = [lambda: sum(seconds(s) for s in steps), lambda: seconds(b)]  # type: ignore[arg-type]
        if pair % 2:
            runs.reverse()
        got = [r() for r in runs]
        if pair % 2:
            got.reverse()
        if pair:
            floors.append(got[0])
            ours.append(got[1])
    f, o = statistics.median(floors), statistics.median(ours)
    print(f"| {label} | {min(floors):.3f} / {f:.3f} s | {min(ours):.3f} / {o:.3f} s | {o / f:.2f}× |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connectors", type=int, nargs="+", default=[300])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="leave the bench connectors in place")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.pairs} pairs, A/B interleaved")
    print("| command | floor min / median | hephaestus min / median | ratio (medians) |")
    print("|---|---|---|---|")
    ab("`--version` vs `python -c pass`", [PYTHON, "-c", "pass"], [HEPHAESTUS, "--version"], args.pairs)
    with httpx.Client(base_url=CONNECT, timeout=120) as http:
        for count in args.connectors:
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                fleet(http, root, count)
                listing = ["curl", "-sf", "-o", "/dev/null", f"{CONNECT}/connectors?expand=info&expand=status"]
                ab(
                    f"no-op dry run, {count} STOPPED sinks",
                    [[PYTHON, "-c", "pass"], listing],
                    [HEPHAESTUS, "reconcile", "--dry-run", "--project", str(root / "hephaestus.yaml")],
                    args.pairs,
                )
        if not args.keep:
            for name in [n for n in http.get("/connectors").json() if n.startswith(PREFIX)]:
                http.delete(f"/connectors/{name}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)


if __name__ == "__main__":
    main()

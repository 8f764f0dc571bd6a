"""bench/status: what `hephaestus status` and an exporter scrape cost on the bench fleet (issue 17).

The bench fleet is bench/startup.py's: N sinks created STOPPED over REST (a sink that never
ran has no consumer group, so the group-offsets call answers for every one of them). The
project names the stack's Kafka and its source databases, so every part of `status` runs:
one Connect listing, the Kafka offsets and group calls, one slot query per database, heal's state.

With the stack up:  python bench/status.py --connectors 300 --runs 7
Prints: `status` at command level (fresh process, start-up included) against the floor
`python -c pass` + one `curl` of the listing; the Connect requests `status` sent (from `-v`);
the exporter's check duration (its own gauge) and the wall time of a scrape of /metrics.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import ports  # bench/ports.py: the stack's ports, from dev/stack/env.sh's variables
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import CONNECT, HEPHAESTUS, PREFIX, PYTHON, fleet, seconds  # noqa: E402

DATABASES = ("bob", "auth", "eureka", "fatima", "lmsdwh", "tokyo_jprep_dwh")


def project(root: Path) -> Path:
    path = root / "hephaestus.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["clusters"]["bench"]["kafka_bootstrap"] = ports.BOOTSTRAP
    doc["databases"] = {
        d: {"dsn": f"host={ports.PG_HOST} port={ports.PG_PORT} user=postgres dbname={d}"} for d in DATABASES
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def status_run(path: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [HEPHAESTUS, "status", "-o", "json", "--project", str(path)], capture_output=True, check=False
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 2):
        raise SystemExit(f"status failed ({proc.returncode}): {proc.stderr.decode()[-1000:]}")
    return elapsed


def requests_sent(path: Path) -> int:
    proc = subprocess.run(
        [HEPHAESTUS, "-v", "status", "-o", "json", "--project", str(path)], capture_output=True, text=True, check=False
    )
    return sum(1 for line in proc.stderr.splitlines() if " GET " in line or " PUT " in line or " POST " in line)


def scrapes(path: Path, runs: int) -> tuple[list[float], float]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            HEPHAESTUS,
            "exporter",
            "--project",
            str(path),
            "--listen",
            f"127.0.0.1:{port}",
            "--interval",
            "30",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        check = None
        deadline = time.monotonic() + 120
        while check is None and time.monotonic() < deadline:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
                # One gauge per check (each cluster, the slots): the slowest bounds a round.
                checks = [
                    float(line.split()[-1])
                    for line in text.splitlines()
                    if line.startswith("hephaestus_exporter_check_duration_seconds{")
                ]
                check = max(checks) if len(checks) >= 2 else None
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).raise_for_status()
            times.append(time.perf_counter() - start)
        return times, check or float("nan")
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connectors", type=int, nargs="+", default=[300])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.runs} runs")
    print("| fleet | floor (python + curl listing) | `status` | Connect requests | exporter check | scrape |")
    print("|---|---|---|---|---|---|")
    with httpx.Client(base_url=CONNECT, timeout=120) as http:
        for count in args.connectors:
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                fleet(http, root, count)
                path = project(root)
                listing = ["curl", "-sf", "-o", "/dev/null", f"{CONNECT}/connectors?expand=info&expand=status"]
                status_run(path)  # warm
                floors = [seconds([PYTHON, "-c", "pass"]) + seconds(listing) for _ in range(args.runs)]
                ours = [status_run(path) for _ in range(args.runs)]
                scrape, check = scrapes(path, args.runs)
                print(
                    f"| {count} STOPPED sinks | {statistics.median(floors):.3f} s | "
                    f"{min(ours):.3f} / {statistics.median(ours):.3f} s | {requests_sent(path)} | {check:.3f} s | "
                    f"{statistics.median(scrape) * 1000:.1f} ms |"
                )
        for name in [n for n in http.get("/connectors").json() if n.startswith(PREFIX)]:
            http.delete(f"/connectors/{name}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)


if __name__ == "__main__":
    main()

"""bench/rollout: a fleet-wide update of N sinks, pacing off and on, side by side in one sitting
(issue 31), on the real stack (dev/stack up).

N JDBC sinks each read a topic of their own that a producer feeds all the time (`--rate`
records a second over all topics; each record is unreadable to the sink's converter, so
`errors.tolerance=all` skips it: the sinks consume and commit without touching a database,
and the only lag is what a restart causes). Every update flips `batch.size` on all N.

Per round, in this order:
- **Connect's floor**: the N PUTs sent directly at each in-flight level (`--levels`), timed
  until every connector and task is RUNNING and every connector's tasks run the new config
  (`GET …/tasks`, 16 at once, as hephaestus reads them); the fastest level is the floor;
- **pacing off**: `hephaestus reconcile` without a rollout (one write wave, ready checks);
- **rollout, no pacing**: canary 0, one wave, no analysis window (the rollout machinery only);
- **pacing on**: waves of `--wave` percent, `lag_budget` `--budget`, no analysis window.
A sampler reads the summed lag of the N sinks every 0.5 s: the peak of each run is reported.

    python bench/rollout.py --connectors 100 --rate 2000 --budget 20000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import ports  # bench/ports.py: the stack's ports, from dev/stack/env.sh's variables
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from hephaestus import kafka  # noqa: E402

CONNECT = ports.CONNECT
BOOTSTRAP = ports.BOOTSTRAP
PREFIX = "bench_ro_"


def config(i: int, batch: int) -> dict[str, str]:
    return {
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "topics": f"bench.ro.{i}",
        "connection.url": ports.JDBC_URL,
        "connection.username": "postgres",
        "connection.password": "${file:secrets/connect.properties:bob_password}",
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "batch.size": str(batch),
        "schema.evolution": "none",
        "tasks.max": "1",
        "errors.tolerance": "all",
        "errors.log.enable": "false",
        "connection.pool.min_size": "1",
        "connection.pool.max_size": "1",
        "connection.pool.acquire_increment": "1",
    }


def names(n: int) -> list[str]:
    return [f"{PREFIX}{i:04d}" for i in range(n)]


class Bench:
    def __init__(self, root: Path, n: int, rate: int) -> None:
        self.root, self.n, self.rate = root, n, rate
        self.http = httpx.Client(base_url=CONNECT, timeout=60)
        self.stop = threading.Event()
        self.lags: list[tuple[float, int]] = []

    def files(self, batch: int) -> None:
        folder = self.root / "connectors/bench/sink"
        folder.mkdir(parents=True, exist_ok=True)
        for i, name in enumerate(names(self.n)):
            (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config(i, batch)}))

    def project(self, rollout: dict[str, Any] | None) -> None:
        doc: dict[str, Any] = {
            "clusters": {"bench": {"url": CONNECT, "connectors": "connectors/bench", "kafka_bootstrap": BOOTSTRAP}},
            "policy": {"stability_window_s": 0, "max_deletes": 100000, "max_delete_share": 1.0},
        }
        if rollout is not None:
            doc["rollout"] = rollout
        (self.root / "hephaestus.yaml").write_text(yaml.safe_dump(doc))

    def produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 50})
        tick = 0.1
        per_tick = max(1, int(self.rate * tick))
        i = 0
        while not self.stop.wait(tick):
            for _ in range(per_tick):
                producer.produce(f"bench.ro.{i % self.n}", b"not json")
                i += 1
            producer.poll(0)
        producer.flush(10)

    def sample(self) -> None:
        groups = [f"connect-{n}" for n in names(self.n)]
        topics = [f"bench.ro.{i}" for i in range(self.n)]
        while not self.stop.wait(0.5):
            try:
                spans = kafka.spans(BOOTSTRAP, topics)
                done = kafka.committed(BOOTSTRAP, groups)
            except Exception:  # noqa: BLE001 - a sample missed is a gap in the series, not an error
                continue
            total = 0
            for i, g in enumerate(groups):
                for s in spans.get(topics[i], ()):
                    total += max(s.end - max(done.get(g, {}).get((s.topic, s.partition), s.start), s.start), 0)
            self.lags.append((time.time(), total))

    def peak(self, start: float, end: float) -> int:
        return max((lag for t, lag in self.lags if start <= t <= end), default=0)

    def level(self, before: float) -> int:
        found = [lag for t, lag in self.lags if before - 10 <= t < before]
        return int(statistics.median(found)) if found else 0

    def ours(self) -> tuple[float, str]:
        start = time.perf_counter()
        argv = [
            str(REPO / ".venv/bin/hephaestus"),
            "reconcile",
            "--auto-approve",
            "--project",
            str(self.root / "hephaestus.yaml"),
            "-o",
            "json",
            "--drift-only",
        ]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        report = json.loads(proc.stdout)["clusters"][0] if proc.stdout.startswith("{") else {}
        if proc.returncode != 0:
            failed = [f"{r['name']}: {r['detail']}" for r in report.get("results", []) if not r["ok"]][:3]
            lines = (report.get("rollout") or {}).get("report", [])
            raise SystemExit(f"reconcile exited {proc.returncode}: {lines} {failed} {proc.stderr[-2000:]}")
        return time.perf_counter() - start, "; ".join((report.get("rollout") or {}).get("report", []))

    def direct(self, batch: int, level: int) -> float:
        """The N PUTs at `level` in flight, until all RUNNING on the new config."""
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=level) as pool:
            list(
                pool.map(
                    lambda i: self.http.put(
                        f"/connectors/{names(self.n)[i]}/config", json=config(i, batch)
                    ).raise_for_status(),
                    range(self.n),
                )
            )
        while not self.all_on(batch):
            time.sleep(0.05)
        return time.perf_counter() - start

    def all_on(self, batch: int) -> bool:
        listed = self.http.get("/connectors", params={"expand": "status"}).json()
        mine = [v["status"] for k, v in listed.items() if k.startswith(PREFIX)]
        if len(mine) < self.n or not all(
            s["connector"]["state"] == "RUNNING" and s["tasks"] and all(t["state"] == "RUNNING" for t in s["tasks"])
            for s in mine
        ):
            return False
        # every connector's tasks run the new config (a RUNNING from before the PUT does not
        # count): read as hephaestus reads them, 16 at once
        with ThreadPoolExecutor(max_workers=16) as pool:
            found = list(pool.map(lambda n: self.http.get(f"/connectors/{n}/tasks").json(), names(self.n)))
        # During a rebalance Connect answers …/tasks with an error object (409), not a list: not yet
        return all(
            isinstance(tasks, list) and tasks and all(t["config"].get("batch.size") == str(batch) for t in tasks)
            for tasks in found
        )

    def reset(self) -> None:
        for name in [n for n in self.http.get("/connectors").json() if n.startswith(PREFIX)]:
            self.http.delete(f"/connectors/{name}")
        while any(n.startswith(PREFIX) for n in self.http.get("/connectors").json()):
            time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connectors", type=int, default=100)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--budget", type=int, default=20000)
    ap.add_argument("--wave", type=int, default=10, help="pacing on: each wave this percent of the fleet")
    ap.add_argument("--levels", type=int, nargs="+", default=[32, 64, 100])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        b = Bench(Path(tmp), args.connectors, args.rate)
        b.reset()
        threads = [threading.Thread(target=b.produce, daemon=True), threading.Thread(target=b.sample, daemon=True)]
        for t in threads:
            t.start()
        b.files(100)
        b.project(None)
        b.ours()  # create the fleet
        time.sleep(20)
        batch = 100
        rows: dict[str, list[tuple[float, int, int]]] = {}
        waves = list(range(args.wave, 100, args.wave)) + [100]
        shapes = {
            "pacing off (no rollout)": None,
            "rollout, no pacing (canary 0, one wave, no window)": {"canary": 0, "waves": [100], "analysis_s": 0},
            f"pacing on (waves of {args.wave}%, budget {args.budget})": {
                "canary": 0,
                "waves": waves,
                "analysis_s": 0,
                "interval_s": 0.5,
                "lag_budget": args.budget,
            },
        }
        for r in range(args.rounds):
            for level in args.levels:
                batch = 300 - batch
                time.sleep(10)
                start = time.time()
                seconds = b.direct(batch, level)
                rows.setdefault(f"Connect directly, {level} in flight", []).append(
                    (seconds, b.level(start), b.peak(start, time.time() + 5))
                )
            for label, rollout in shapes.items():
                batch = 300 - batch
                b.files(batch)
                b.project(rollout)
                time.sleep(10)
                start = time.time()
                seconds, report = b.ours()
                rows.setdefault(label, []).append((seconds, b.level(start), b.peak(start, time.time() + 5)))
                print(f"round {r + 1}: {label}: {seconds:.1f} s {report[:200]}", file=sys.stderr)
        b.stop.set()
        b.reset()
    floor = min(statistics.median([s for s, _, _ in v]) for k, v in rows.items() if k.startswith("Connect"))
    print(
        f"{args.connectors} sinks, {args.rate} records/s over their topics, {args.rounds} rounds; floor {floor:.2f} s"
    )
    print("| run | seconds min / median | ÷ floor (medians) | lag before | peak lag (max of rounds) |")
    print("|---|---|---|---|---|")
    for label, v in rows.items():
        secs = [s for s, _, _ in v]
        print(
            f"| {label} | {min(secs):.2f} / {statistics.median(secs):.2f} | {statistics.median(secs) / floor:.2f}× "
            f"| {int(statistics.median([x for _, x, _ in v]))} | {max(p for _, _, p in v)} |"
        )


if __name__ == "__main__":
    main()

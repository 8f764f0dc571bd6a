"""bench/soak: what each change costs under load (issue 31), on the real stack (dev/stack/up).

Steady writes go to a source database the whole time (several tables, a few hundred rows a
second, each row with a sequence number and its commit time). Upsert sinks replicate every
table into one database and an insert-only audit sink copies one table into another (a record
delivered twice is a second row there: duplicates are counted). Then, one after another and
each through hephaestus (a separate process, the project's `rollout:` on), the script:

1. adds a table (incremental snapshot), 2. changes `tasks.max` on every sink, 3. renames a sink,
4. pauses and resumes every sink, 5. kills the Connect worker with -9 and runs `heal`,
6. restarts the source (a config change), 7. makes a bad change the canary catches and rolls back.

For each operation: peak summed sink lag and the time until it is back to its level before,
end-to-end latency p50/p99 of the rows committed meanwhile (commit time to arrival, read in the
sink database), and duplicates in the audit sink. At the end, with the load stopped and the
sinks caught up: rows lost per table (source rows missing in the sink) and `accuracy --deep`.

    python bench/soak.py --minutes 20 --rate 300 [--out soak.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from hephaestus import kafka  # noqa: E402
from tests.stack.faults import kill_worker, restart_stack  # noqa: E402
from tests.stack.support import Stack, add_db_secrets, execute, read_rows, unique_suffix  # noqa: E402

TABLES = ("events_a", "events_b", "events_c")
ADDED = "events_d"
BAD = {
    "transforms": "bad",
    "transforms.bad.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
    "transforms.bad.field": "no_such_field",
}
ROLLOUT = {"canary": 1, "waves": [50, 100], "analysis_s": 20, "interval_s": 2, "max_lag_age_s": 60}


def source_sql() -> str:
    tables = "".join(
        f"CREATE TABLE {t} (seq bigint PRIMARY KEY, payload text, committed_at timestamptz NOT NULL "
        "DEFAULT clock_timestamp());"
        for t in (*TABLES, ADDED)
    )
    return (
        tables + "CREATE TABLE dbz_signals (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048));"
        "CREATE TABLE debezium_heartbeat (id int PRIMARY KEY, updated_at timestamptz NOT NULL);"
        f"CREATE PUBLICATION dbz_publication FOR TABLE {', '.join(TABLES)}, dbz_signals;"
    )


def sink_sql(tables: tuple[str, ...]) -> str:
    return "".join(
        f"CREATE TABLE {t} (seq bigint{' PRIMARY KEY' if t != 'audit' else ''}, payload text, "
        "committed_at timestamptz, "
        "arrived_at timestamptz NOT NULL DEFAULT clock_timestamp());"
        for t in tables
    )


class Soak:
    def __init__(self, stack: Stack, root: Path, rate: int) -> None:
        suffix = unique_suffix()
        self.stack, self.root, self.rate = stack, root, rate
        self.src, self.dst, self.audit = f"soak_src_{suffix}", f"soak_dst_{suffix}", f"soak_aud_{suffix}"
        self.seq = 0
        self.stop = threading.Event()
        self.lags: list[tuple[float, int]] = []
        self.project = root / "hephaestus.yaml"

    # --- set-up ------------------------------------------------------------------------------
    def create(self) -> None:
        with psycopg.connect(self.stack.dsn("postgres"), autocommit=True) as conn:
            for db in (self.src, self.dst, self.audit):
                conn.execute(f"CREATE DATABASE {db}")
                add_db_secrets(self.stack, db)
        execute(self.stack.dsn(self.src), source_sql())
        execute(self.stack.dsn(self.dst), sink_sql((*TABLES, ADDED)))
        execute(self.stack.dsn(self.audit), sink_sql(("audit",)))
        execute(
            self.stack.dsn(self.src),
            f"INSERT INTO {ADDED} (seq, payload) SELECT g, 'before' FROM generate_series(-20000, -1) g",
        )
        databases = {
            db: {"dsn": f"host={self.stack.pg_host} port={self.stack.pg_port} user={self.stack.pg_user} dbname={db}"}
            for db in (self.src, self.dst, self.audit)
        }
        project = {
            "clusters": {
                "platforms": {
                    "url": self.stack.connect_url,
                    "connectors": "connectors/platforms",
                    "kafka_bootstrap": self.stack.bootstrap,
                    "select": [f"*{self.src}*"],
                }
            },
            "databases": databases,
            "audit_log": "audit.jsonl",
            "policy": {"ready_timeout_s": 180, "stability_window_s": 5},
            "heal": {"unassigned_grace_s": 10, "restart_wait_s": 60},
            "rollout": ROLLOUT,
        }
        self.project.write_text(yaml.safe_dump(project))
        self.hephaestus(
            "catalog",
            "dump",
            "--dsn",
            self.stack.dsn("postgres"),
            "--out",
            str(self.root / "catalogs"),
            "--database",
            self.src,
            "--database",
            self.dst,
            "--database",
            self.audit,
        )
        self.definition(TABLES, {})

    def definition(self, tables: tuple[str, ...], options: dict[str, str]) -> None:
        pipelines: list[dict[str, Any]] = [
            {"source_table": t, "sinks": [{"database": self.dst, "options": dict(options)}]} for t in tables
        ]
        definition = {
            "cluster": "platforms",
            "database": self.src,
            "envs": ["soak"],
            "orgs": ["o"],
            "naming": "literal",
            "secrets_file": "secrets/connect.properties",
            "converter": {"format": "json"},
            "source": {
                "publication": "dbz_publication",
                "signal_table": "public.dbz_signals",
                "heartbeat_table": "public.debezium_heartbeat",
                "snapshot_mode": "initial",
            },
            "sink_defaults": {"flavour": "debezium", "delete": False, "dlq_replication_factor": 1},
            "pipelines": pipelines,
        }
        (self.root / "definitions").mkdir(exist_ok=True)
        (self.root / "definitions" / "soak.yaml").write_text(yaml.safe_dump(definition, sort_keys=False))
        self.hephaestus(
            "generate",
            "--definitions",
            str(self.root / "definitions"),
            "--catalogs",
            str(self.root / "catalogs"),
            "--out",
            str(self.root / "connectors"),
        )
        self.audit_sink()

    def audit_sink(self) -> None:
        """The insert-only copy of the first table: a custom sink (the generator pairs primary
        keys; this one has none, so a record delivered twice is a second row)."""
        first = next((self.root / "connectors/platforms/sink").glob(f"*{TABLES[0]}*.json"))
        doc = json.loads(first.read_text())
        name = doc["name"].replace(self.dst, self.audit)
        config = {k: v.replace(self.dst, self.audit) for k, v in doc["config"].items() if k != "primary.key.fields"}
        config |= {"insert.mode": "insert", "primary.key.mode": "none", "collection.name.format": "audit"}
        folder = self.root / "connectors/platforms/custom"
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config}, indent=2))

    def hephaestus(self, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[int, str]:
        proc = subprocess.run(
            [sys.executable, "-m", "hephaestus", *args], cwd=self.root, capture_output=True, text=True, timeout=1800
        )
        if proc.returncode not in ok:
            raise SystemExit(
                f"hephaestus {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )
        return proc.returncode, proc.stdout

    def reconcile(self, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[int, dict[str, Any]]:
        code, out = self.hephaestus(
            "reconcile",
            "--auto-approve",
            "--deploy-custom-sinks",
            "--project",
            str(self.project),
            "-o",
            "json",
            *args,
            ok=ok,
        )
        return code, json.loads(out[out.index("{") : out.rindex("}") + 1])

    # --- load and lag ------------------------------------------------------------------------
    def load(self) -> None:
        """`rate` rows a second over the tables (ADDED too: captured once added), one
        transaction a tick; each row's commit time is the database's clock at insert."""
        every = 0.1
        with psycopg.connect(self.stack.dsn(self.src), autocommit=True) as conn:
            while not self.stop.wait(every):
                rows = max(1, int(self.rate * every))
                with conn.transaction():
                    for _ in range(rows):
                        self.seq += 1
                        table = (*TABLES, ADDED)[self.seq % 4]
                        conn.execute(f"INSERT INTO {table} (seq, payload) VALUES (%s, 'x')", [self.seq])

    def sinks(self) -> dict[str, dict[str, str]]:
        files = [
            *(self.root / "connectors/platforms").glob("sink/*.json"),
            *(self.root / "connectors/platforms").glob("custom/*.json"),
        ]
        return {d["name"]: d["config"] for d in (json.loads(p.read_text()) for p in files)}

    def lag_now(self) -> int:
        sinks = self.sinks()
        topics = sorted({c["topics"] for c in sinks.values()})
        spans = kafka.spans(self.stack.bootstrap, topics)
        groups = kafka.committed(self.stack.bootstrap, [f"connect-{n}" for n in sinks])
        total = 0
        for name, cfg in sinks.items():
            done = groups.get(f"connect-{name}", {})
            total += sum(
                max(s.end - max(done.get((s.topic, s.partition), s.start), s.start), 0)
                for s in spans.get(cfg["topics"], ())
            )
        return total

    def sample(self) -> None:
        while not self.stop.wait(1.0):
            try:
                self.lags.append((time.time(), self.lag_now()))
            except Exception as exc:  # noqa: BLE001 - a worker down: the sample is skipped, said
                print(f"  lag sample skipped: {exc}", file=sys.stderr)

    # --- measures ----------------------------------------------------------------------------
    def measured(self, name: str, start: float, operation: Callable[[], str], settle_s: float) -> dict[str, Any]:
        before = [lag for t, lag in self.lags if start - 30 <= t < start] or [0]
        level = statistics.median(before)
        note = operation()
        done = time.time()
        deadline = done + settle_s
        while time.time() < deadline:
            time.sleep(2)
            recent = [lag for t, lag in self.lags if t > done]
            if len(recent) > 5 and max(recent[-5:]) <= max(2 * level, self.rate * 3):
                break
        window = [(t, lag) for t, lag in self.lags if t >= start]
        peak_t, peak = max(window, key=lambda x: x[1]) if window else (start, 0)
        calm = max(2 * level, self.rate * 3)  # "back to its level": under this
        back = start if peak <= calm else next((t for t, lag in window if t > peak_t and lag <= calm), None)
        row = {
            "operation": name,
            "seconds": round(done - start, 1),
            "lag_before": int(level),
            "peak_lag": peak,
            "recovered_s": round(back - start, 1) if back else None,
            "window": (start, time.time()),  # latency and duplicates: read once every row arrived
            "note": note,
        }
        print(json.dumps(row), flush=True)
        return row

    def latency(self, start: float, end: float) -> tuple[float | None, float | None]:
        union = " UNION ALL ".join(f"SELECT arrived_at, committed_at FROM {t}" for t in (*TABLES, ADDED))
        rows = read_rows(
            self.stack.dsn(self.dst),
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d), "
            "percentile_cont(0.99) WITHIN GROUP (ORDER BY d) FROM "
            f"(SELECT extract(epoch FROM arrived_at - committed_at) d FROM ({union}) u "
            "WHERE committed_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)) x",
            [start, end],
        )
        p50, p99 = rows[0]
        return (round(float(p50), 2) if p50 is not None else None, round(float(p99), 2) if p99 is not None else None)

    def duplicates(self, start: float, end: float) -> int:
        rows = read_rows(
            self.stack.dsn(self.audit),
            "SELECT count(*) - count(DISTINCT seq) FROM audit "
            "WHERE committed_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)",
            [start, end],
        )
        return int(rows[0][0])

    def lost(self) -> dict[str, int]:
        found = {}
        for t in (*TABLES, ADDED):
            src = {r[0] for r in read_rows(self.stack.dsn(self.src), f"SELECT seq FROM {t}")}
            dst = {r[0] for r in read_rows(self.stack.dsn(self.dst), f"SELECT seq FROM {t}")}
            found[t] = len(src - dst)
        audit_src = {r[0] for r in read_rows(self.stack.dsn(self.src), f"SELECT seq FROM {TABLES[0]}")}
        audit = {r[0] for r in read_rows(self.stack.dsn(self.audit), "SELECT seq FROM audit")}
        found["audit"] = len(audit_src - audit)
        return found

    def clean(self) -> None:
        """The soak's connectors deleted, its slot dropped, its databases gone."""
        import httpx

        with httpx.Client(base_url=self.stack.connect_url, timeout=30) as http:
            for name in [n for n in http.get("/connectors").json() if self.src in n]:
                http.delete(f"/connectors/{name}")
        time.sleep(5)
        with psycopg.connect(self.stack.dsn("postgres"), autocommit=True) as conn:
            for (slot,) in conn.execute("SELECT slot_name FROM pg_replication_slots WHERE database = %s", [self.src]):
                conn.execute("SELECT pg_drop_replication_slot(%s)", [slot])
            for db in (self.src, self.dst, self.audit):
                conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")

    # --- the operations ----------------------------------------------------------------------
    def edit_sinks(self, change: Callable[[dict[str, Any]], object]) -> None:
        for p in (self.root / "connectors/platforms/sink").glob("*.json"):
            doc = json.loads(p.read_text())
            change(doc)
            p.write_text(json.dumps(doc, indent=2))

    def add_table(self) -> str:
        execute(self.stack.dsn(self.src), f"ALTER PUBLICATION dbz_publication ADD TABLE {ADDED}")
        self.definition((*TABLES, ADDED), {})
        code, report = self.reconcile("--send-incremental-snapshot")
        return (
            f"exit {code}; "
            + "; ".join(
                f"{r['action']} {r['name']}: {r['detail']}"
                for c in report["clusters"]
                for r in c.get("results", [])
                if r["action"] != "update"
            )[:300]
        )

    def tasks_max(self) -> str:
        self.definition((*TABLES, ADDED), {"tasks.max": "2"})
        code, report = self.reconcile()
        return f"exit {code}; " + "; ".join(report["clusters"][0]["rollout"]["report"])

    def rename(self) -> str:
        path = sorted((self.root / "connectors/platforms/sink").glob(f"*{self.dst}*events_b*.json"))[0]
        doc = json.loads(path.read_text())
        old = doc["name"]
        doc["name"], doc["renamed_from"] = old.replace("_sink_connector", "_v2_sink_connector"), old
        path.unlink()
        (path.parent / f"{doc['name']}.json").write_text(json.dumps(doc, indent=2))
        code, report = self.reconcile()
        return f"exit {code}; {old} -> {doc['name']}"

    def pause_resume(self) -> str:
        self.edit_sinks(lambda d: d.update(state="paused"))
        code1, _ = self.reconcile()
        time.sleep(20)
        self.edit_sinks(lambda d: d.update(state="running"))
        code2, _ = self.reconcile()
        return f"exit {code1}, {code2}; paused 20 s"

    def kill_and_heal(self) -> str:
        kill_worker(self.stack, 1)
        time.sleep(10)
        restart_stack(self.stack)
        time.sleep(15)
        code, out = self.hephaestus("heal", "--project", str(self.project), ok=(0, 1, 2))
        return f"worker 1 killed -9 and started again; heal exit {code}"

    def restart_source(self) -> str:
        path = next((self.root / "connectors/platforms/source").glob("*.json"))
        doc = json.loads(path.read_text())
        doc["config"]["heartbeat.interval.ms"] = str(int(doc["config"]["heartbeat.interval.ms"]) + 1)
        path.write_text(json.dumps(doc, indent=2))
        code, _ = self.reconcile()
        return f"exit {code}; a config change restarts it"

    def bad_change(self) -> str:
        self.edit_sinks(lambda d: d["config"].update(BAD))
        code, report = self.reconcile(ok=(1,))
        cluster = report["clusters"][0]
        self.edit_sinks(lambda d: [d["config"].pop(k, None) for k in BAD])  # git fixed again
        back = [f"{r['action']} {r['name']}: {r['ok']}" for r in cluster["rollout"]["rollback"]]
        # What the canary parked while it ran the bad config goes back to its topic: every sink
        # reading it receives those records again (the upsert sink absorbs them, the audit
        # sink counts them as duplicates).
        replayed = []
        for r in cluster["rollout"]["rollback"]:
            got, out = self.hephaestus(
                "dlq",
                "replay",
                "--project",
                str(self.project),
                "--connector",
                r["name"],
                "--yes",
                "--allow-destructive=duplicates",
                ok=(0,),
            )
            replayed.append(out.strip().splitlines()[-1][:160] if out.strip() else f"exit {got}")
        return f"exit {code}; " + "; ".join(cluster["rollout"]["report"]) + f"; rollback {back}; replay {replayed}"


def quiet(seconds: float) -> str:
    time.sleep(seconds)
    return "nothing changed"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--rate", type=int, default=300)
    ap.add_argument(
        "--settle", type=float, default=120.0, help="at most this long after an operation for the lag to recover"
    )
    ap.add_argument("--warmup", type=float, default=120.0, help="steady load before the first measure")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    stack = Stack.from_env()
    os.environ.setdefault("PGPASSWORD", stack.pg_password)
    root = Path(tempfile.mkdtemp(prefix="soak-"))
    (root / "secrets").symlink_to(stack.secrets_file.parent)
    soak = Soak(stack, root, args.rate)
    soak.create()
    began = time.time()
    threads = [threading.Thread(target=soak.load, daemon=True), threading.Thread(target=soak.sample, daemon=True)]
    for t in threads:
        t.start()
    code, _ = soak.reconcile()
    print(f"fleet created (exit {code}) in {root}; steady load for {args.warmup:g} s", flush=True)
    time.sleep(args.warmup)
    rows = [soak.measured("steady state (no change)", time.time(), lambda: quiet(30), 10)]
    for name, op in [
        ("table added (incremental snapshot)", soak.add_table),
        ("tasks.max 1 -> 2 on every sink", soak.tasks_max),
        ("sink renamed", soak.rename),
        ("pause and resume every sink", soak.pause_resume),
        ("worker killed -9, then heal", soak.kill_and_heal),
        ("source restarted", soak.restart_source),
        ("bad change: canary catches it, rolled back", soak.bad_change),
    ]:
        rows.append(soak.measured(name, time.time(), op, args.settle))
        time.sleep(30)
    while time.time() - began < args.minutes * 60:
        time.sleep(10)
    soak.stop.set()
    for t in threads:
        t.join(timeout=30)
    deadline = time.time() + 300
    while time.time() < deadline and soak.lag_now() > 0:
        time.sleep(5)
    time.sleep(10)
    lost = soak.lost()
    for row in rows:
        start, end = row.pop("window")
        row["latency_p50_s"], row["latency_p99_s"] = soak.latency(start, end)
        row["duplicates"] = soak.duplicates(start, end)
    code, out = soak.hephaestus(
        "accuracy",
        "--project",
        str(soak.project),
        "--definitions",
        str(root / "definitions"),
        "--deep",
        "-o",
        "json",
        ok=(0, 1, 2),
    )
    summary = {
        "minutes": round((time.time() - began) / 60, 1),
        "rows": soak.seq,
        "rate": args.rate,
        "operations": rows,
        "lost": lost,
        "lags": soak.lags,
        "accuracy_exit": code,
        "accuracy": out[out.index("{") :] if "{" in out else out,
    }
    print(json.dumps({k: v for k, v in summary.items() if k not in ("accuracy", "lags")}, indent=1))
    soak.clean()
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))
    print("\n| operation | took | lag before | peak lag | back to level after | latency p50 / p99 | duplicates |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['operation']} | {r['seconds']} s | {r['lag_before']} | {r['peak_lag']} | {r['recovered_s']} s "
            f"| {r['latency_p50_s']} / {r['latency_p99_s']} s | {r['duplicates']} |"
        )


if __name__ == "__main__":
    main()

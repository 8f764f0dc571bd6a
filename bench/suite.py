"""bench/run: every ratio of issue 47 in one sitting, each command A/B interleaved against its
floor in fresh processes, with wall and CPU time (CPU moves less with a loaded machine).

- `--version`: against `python -c pass`;
- a no-op `reconcile --dry-run`, N connectors in sync (Connect double): against one Python
  process that GETs the listing (urllib) and `json.loads` it;
- `generate`, 300 sinks x 400 columns: against one Python process writing the same 301 files;
- `accuracy` counts, one table pair of --rows rows (throwaway PostgreSQL): against two `psql`
  count(*) at once (and with accuracy's default filter); `--deep` with one row differing:
  against the same, and against one hashing pass over both tables at once (psql);
- with `--stack`, the unpaced update of 50 sinks on the real Connect: bench/rollout.py's
  hephaestus against Connect's own best in-flight level.

The Connect double (tests/connect_double.py) serves the listing from this process; PostgreSQL is
a throwaway cluster (initdb in a temporary folder, a free port, fsync off), or `--pg DSN`.
The package is compiled first (`compileall`), as in the image. The first pair of each measure
warms the caches and is dropped; the order alternates pair by pair.

    bench/run [--pairs 9] [--only noop,generate] [--connectors 300 2000 5000] [--rows 1000000] [--stack]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

PYTHON = str(REPO / ".venv/bin/python")
HEPHAESTUS = str(REPO / ".venv/bin/hephaestus")
SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
PG_BIN = Path(os.environ.get("HEPH_PG_BIN", "/usr/lib/postgresql/15/bin"))
LISTING = "/connectors?expand=info&expand=status"
Argv = Sequence[str]


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float  # user + system of the process and its children


def timed(argvs: Sequence[Argv], cwd: Path | None = None) -> Timing:
    """One or more commands run at once (a floor of two psql); wall until the last ends."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    procs = [subprocess.Popen(a, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for a in argvs]
    for argv, proc in zip(argvs, procs, strict=True):
        _, err = proc.communicate()
        if proc.returncode not in (0, 2):  # 2: drift found (accuracy --deep with a differing row)
            raise SystemExit(f"{' '.join(argv)[:200]} failed ({proc.returncode}): {err.decode()[-800:]}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Timing(wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


@dataclass(frozen=True)
class Row:
    label: str
    goal: float | None  # None: a reference, no goal
    floor: list[Timing]
    ours: list[Timing]

    def line(self) -> str:
        fw, ow = (statistics.median(t.wall for t in s) for s in (self.floor, self.ours))
        fc, oc = (statistics.median(t.cpu for t in s) for s in (self.floor, self.ours))
        goal = (
            "(reference)" if self.goal is None else f"<= {self.goal}x: {'met' if ow / fw <= self.goal else 'not met'}"
        )
        return f"| {self.label} | {fw:.3f} s | {ow:.3f} s | **{ow / fw:.2f}x** | {oc / max(fc, 1e-3):.2f}x | {goal} |"


def ab(label: str, goal: float | None, floor: Sequence[Argv], ours: Argv, pairs: int, cwd: Path | None = None) -> Row:
    row = Row(label, goal, [], [])
    for pair in range(pairs + 1):
        got = {}
        for which in ("floor", "ours") if pair % 2 else ("ours", "floor"):
            got[which] = timed(floor if which == "floor" else [ours], cwd)
        if pair:  # the first pair warms the caches
            row.floor.append(got["floor"])
            row.ours.append(got["ours"])
    print(row.line(), flush=True)
    return row


# --- no-op dry run against the Connect double ---------------------------------------------------


@contextmanager
def double_fleet(root: Path, count: int) -> Iterator[str]:
    """N STOPPED sinks in git and in a Connect double on loopback; adopted once (steady state)."""
    import yaml

    from tests.connect_double import ConnectDouble, serve

    double = ConnectDouble()
    folder = root / "connectors/bench/sink"
    folder.mkdir(parents=True)
    for i in range(count):
        name = f"bench_{i:05d}"
        config = {
            "connector.class": SINK,
            "topics": f"bench.t.{i}",
            "connection.url": "jdbc:postgresql://127.0.0.1:5432/postgres",
            "connection.username": "postgres",
            "connection.password": "${file:secrets/connect.properties:bob_password}",
            "tasks.max": "1",
        }
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config, "state": "stopped"}))
        double.add(name, config, "STOPPED")
    with serve(double) as url:
        project = {"clusters": {"bench": {"url": url, "connectors": "connectors/bench"}}}
        (root / "hephaestus.yaml").write_text(yaml.safe_dump(project))
        timed([[HEPHAESTUS, "reconcile", "--auto-approve", "--project", str(root / "hephaestus.yaml")]])
        yield url


# What a run cannot start without, whatever it does: the CLI (click), the one HTTP edge (httpx,
# with httpcore, which it loads at its first client), the strict YAML loader and the retries.
DEPENDENCIES = "import hephaestus, click, httpx, httpcore, ruamel.yaml, tenacity, fastjsonschema"


def noop(counts: Sequence[int], pairs: int) -> list[Row]:
    rows = [
        ab(
            "(the imports of the house's dependencies alone)",
            None,
            [[PYTHON, "-c", "pass"]],
            [PYTHON, "-c", DEPENDENCIES],
            pairs,
        )
    ]
    for count in counts:
        with tempfile.TemporaryDirectory() as tmp, double_fleet(Path(tmp), count) as url:
            floor = [
                PYTHON,
                "-c",
                f"import json, urllib.request; json.loads(urllib.request.urlopen({url + LISTING!r}).read())",
            ]
            ours = [HEPHAESTUS, "reconcile", "--dry-run", "--project", str(Path(tmp) / "hephaestus.yaml")]
            rows.append(ab(f"no-op dry run, {count} connectors", 1.3 if count <= 300 else 1.5, [floor], ours, pairs))
    return rows


# --- generate -----------------------------------------------------------------------------------


def generate(pairs: int) -> list[Row]:
    from generate import FLOOR, write_fleet  # bench/generate.py: the same shape and floor

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_fleet(root, 1, 1, 100, 3, 400)
        out = root / "connectors"
        argv = [HEPHAESTUS, "generate", "--definitions", str(root / "definitions")]
        argv += ["--catalogs", str(root / "catalogs"), "--out", str(out)]
        timed([argv])
        docs = {p.relative_to(out).as_posix(): json.loads(p.read_text()) for p in sorted(out.rglob("*.json"))}
        (root / "docs.json").write_text(json.dumps(docs))
        # each run writes into a folder of its own that the next run empties first: a fresh write
        ours = ["sh", "-c", f'rm -rf "{out}" && exec "$0" "$@"', *argv]
        floor = [
            "sh",
            "-c",
            f'rm -rf "{root}/floor" && exec "$0" "$@"',
            PYTHON,
            "-c",
            FLOOR,
            str(root / "docs.json"),
            str(root / "floor"),
        ]
        return [ab(f"generate, {len(docs) - 1} sinks x 400 columns", 3.0, [floor], ours, pairs)]


# --- accuracy on PostgreSQL -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def throwaway_pg() -> Iterator[str]:
    """A PostgreSQL cluster of its own in a temporary folder (as its OS user when run as root)."""
    home = Path(tempfile.mkdtemp(prefix="heph-bench-pg-"))
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(home, "postgres")
    data, port = home / "data", free_port()
    try:
        subprocess.run(
            [
                *as_user,
                str(PG_BIN / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
            ],
            check=True,
            capture_output=True,
        )
        options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=256MB"
        subprocess.run(
            [*as_user, str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(home / "log"), "-w", "start"],
            check=True,
            capture_output=True,
        )
        yield f"host=127.0.0.1 port={port} user=postgres"
    finally:
        subprocess.run(
            [*as_user, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(home, ignore_errors=True)


def accuracy(dsn: str, rows: int, pairs: int) -> list[Row]:
    import accuracy as acc  # bench/accuracy.py: the same table, rows and hash floor
    import psycopg

    src, dst = f"bench_src_{os.getpid()}", f"bench_dst_{os.getpid()}"
    acc.DSN = dsn
    for db in (src, dst):
        acc.create(db, rows)
    with psycopg.connect(dsn, dbname=dst, autocommit=True) as conn:  # one row differs: what --deep finds
        conn.execute("UPDATE users SET name = 'changed' WHERE user_id = 'u-0000042'")
        conn.execute("VACUUM ANALYZE users")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            host, port = (dict(p.split("=") for p in dsn.split())[k] for k in ("host", "port"))
            (root / "defs").mkdir()
            (root / "defs" / "bench.yaml").write_text(
                f"cluster: bench\ndatabase: {src}\nenvs: [bench]\norgs: [bench]\n"
                f"pipelines:\n  - source_table: users\n    sinks: [{{database: {dst}}}]\n"
            )
            dbs = "".join(f"  {d}: {{dsn: 'host={host} port={port} user=postgres dbname={d}'}}\n" for d in (src, dst))
            (root / "hephaestus.yaml").write_text("clusters: {bench: {connectors: c}}\ndatabases:\n" + dbs)
            psql = [str(PG_BIN / "psql"), "-h", host, "-p", port, "-U", "postgres", "-qAt", "-c"]
            counts = [[*psql, "SELECT count(*) FROM users", d] for d in (src, dst)]
            # accuracy counts what its default filter keeps (soft deletes out): a heap scan, where
            # a bare count(*) of a vacuumed table reads the primary key's index only
            filtered = [[*psql, "SELECT count(*) FROM users WHERE deleted_at IS NULL", d] for d in (src, dst)]
            hashed = [[*psql, acc.HASH_ALL, d] for d in (src, dst)]
            ours = [
                HEPHAESTUS,
                "accuracy",
                "--project",
                str(root / "hephaestus.yaml"),
                "--definitions",
                str(root / "defs"),
            ]
            return [
                ab(f"accuracy counts, {rows:,} rows a side", 1.3, counts, ours, pairs, root),
                ab("accuracy counts against the filtered count(*)", 1.3, filtered, ours, pairs, root),
                ab(f"accuracy --deep, {rows:,} rows, 1 differs", 10.0, counts, [*ours, "--deep"], pairs, root),
                ab("accuracy --deep against one hashing pass", 2.0, hashed, [*ours, "--deep"], pairs, root),
            ]
    finally:
        with psycopg.connect(dsn, dbname="postgres", autocommit=True) as conn:
            for db in (src, dst):
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


# --- the unpaced rollout on the real stack ----------------------------------------------------------


def rollout(pairs: int) -> list[Row]:
    """bench/rollout.py against the stack (its ports from dev/stack/env.sh's variables)."""
    argv = [PYTHON, str(REPO / "bench/rollout.py"), "--connectors", "50"]
    print(f"| unpaced update of 50 sinks | see below: {' '.join(argv[1:])} |", flush=True)
    subprocess.run(argv, check=True)
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--only", default="version,noop,generate,accuracy", help="comma-separated measures")
    parser.add_argument("--connectors", type=int, nargs="+", default=[300, 2000, 5000])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pg", help="a PostgreSQL DSN to use instead of a throwaway cluster")
    parser.add_argument("--stack", action="store_true", help="also the unpaced rollout on the running stack")
    args = parser.parse_args()
    only = set(args.only.split(","))
    compileall.compile_dir(REPO / "hephaestus", quiet=1)  # as in the image: no compile in any run
    load = os.getloadavg()[0]
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load {load:.1f}; medians of {args.pairs} pairs")
    print("| measure | floor (wall) | hephaestus (wall) | wall ratio | CPU ratio | goal |")
    print("|---|---|---|---|---|---|")
    if "version" in only:
        ab("`--version`", 1.5, [[PYTHON, "-c", "pass"]], [HEPHAESTUS, "--version"], args.pairs)
    if "noop" in only:
        noop(args.connectors, args.pairs)
    if "generate" in only:
        generate(args.pairs)
    if "accuracy" in only:
        with ExitStack() as stack:
            dsn = args.pg or stack.enter_context(throwaway_pg())
            accuracy(dsn, args.rows, args.pairs)
    if args.stack:
        rollout(args.pairs)
    print(f"load {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)


if __name__ == "__main__":
    main()

"""bench/accuracy: a 1M-row table pair on the stack's PostgreSQL, against the floor of count(*).

Two databases of its own (dropped at the end) hold the same `users`-shaped table (text key,
eight columns). Timed in-process, median of --repeat runs:

- floor: a bare `SELECT count(*)` on the source, then the sink (open connections), and both at once;
- `accuracy` plain counts (connect, inspect, slot lookup, the default `deleted_at IS NULL` filter);
- `accuracy --deep` on identical tables, then with one row altered in the sink (fast hash, then md5);
- at command level, A/B interleaved (bench/startup.ab): `hephaestus accuracy` as a process against
  a process doing only the floor's work (`python -c`: import psycopg, two connections, the two
  `count(*)` in parallel), and `hephaestus accuracy --deep` on one differing row against the same.

Run with the stack up: python bench/accuracy.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import secrets
import shlex
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ports  # bench/ports.py: the stack's ports, from dev/stack/env.sh's variables
import psycopg
from psycopg import sql

from hephaestus.accuracy import run
from hephaestus.accuracy.model import AccuracyReport
from hephaestus.accuracy.run import AccuracyOptions, run_accuracy
from hephaestus.generator.definitions import load_definitions
from hephaestus.project import load_project

DSN = ports.PG_DSN

TABLE = """
CREATE TABLE users (
    user_id text PRIMARY KEY, name text, email text, resource_path text,
    current_grade int, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, deleted_at timestamptz)
"""
FILL = """
INSERT INTO users
SELECT 'u-' || lpad(g::text, 7, '0'), 'name ' || g, 'user' || g || '@example.com', (g %% 5)::text, g %% 12,
       timestamptz '2026-01-01 00:00+00' + g * interval '1 s', timestamptz '2026-06-01 00:00+00' + g * interval '1 ms',
       NULL
FROM generate_series(1, %s) g
"""


def admin(statement: sql.Composable) -> None:
    with psycopg.connect(DSN, dbname="postgres", autocommit=True) as conn:
        conn.execute(statement)


def create(db: str, rows: int) -> None:
    admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
    with psycopg.connect(DSN, dbname=db, autocommit=True) as conn:
        conn.execute(TABLE)
        conn.execute(FILL, [rows])
        conn.execute("VACUUM ANALYZE users")  # a settled table: visibility map set, statistics known


def median(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def floors(src: str, dst: str, repeat: int) -> tuple[float, float, float]:
    """Two bare count(*) one after the other and at once, and at once over the rows `accuracy`
    counts (its default filter `deleted_at IS NULL`: a heap scan, where a bare count(*) of a
    vacuumed table may read the primary key's index only)."""
    with psycopg.connect(DSN, dbname=src) as a, psycopg.connect(DSN, dbname=dst) as b:

        def count(conn: psycopg.Connection[tuple[object, ...]]) -> object:
            return conn.execute("SELECT count(*) FROM users").fetchone()

        def counted(conn: psycopg.Connection[tuple[object, ...]]) -> object:
            return conn.execute("SELECT count(*) FROM users WHERE deleted_at IS NULL").fetchone()

        count(a), count(b)  # warm: every run below reads a cached table
        serial = median(lambda: (count(a), count(b)), repeat)
        with ThreadPoolExecutor(2) as pool:
            parallel = median(lambda: list(pool.map(count, (a, b))), repeat)
            filtered = median(lambda: list(pool.map(counted, (a, b))), repeat)
    return serial, parallel, filtered


HASH_ALL = (
    "SELECT count(*), sum(hashtextextended(ROW(user_id::text, name::text, email::text, resource_path::text, "
    "current_grade::text, created_at::text, updated_at::text, deleted_at::text)::text, 0)) "
    "FROM users WHERE deleted_at IS NULL"
)


HASH_NATIVE = (
    "SELECT count(*), sum(hash_record_extended(ROW(user_id, name, email, resource_path, current_grade, "
    "created_at, updated_at, deleted_at), 0)) FROM users WHERE deleted_at IS NULL"
)


def hash_floor(src: str, dst: str, repeat: int, query: str = HASH_ALL) -> float:
    """One bare pass hashing every row, both sides at once: what --deep cannot undercut."""
    with psycopg.connect(DSN, dbname=src) as a, psycopg.connect(DSN, dbname=dst) as b, ThreadPoolExecutor(2) as pool:
        return median(lambda: list(pool.map(lambda c: c.execute(query).fetchone(), (a, b))), repeat)


def project(root: Path, src: str, dst: str) -> None:
    (root / "defs").mkdir()
    (root / "defs" / "bench.yaml").write_text(
        f"cluster: bench\ndatabase: {src}\nenvs: [bench]\norgs: [bench]\n"
        f"pipelines:\n  - source_table: users\n    sinks: [{{database: {dst}}}]\n"
    )
    (root / "hephaestus.yaml").write_text(
        "clusters: {bench: {connectors: c}}\ndatabases:\n"
        + "".join(
            f"  {db}: {{dsn: 'host={ports.PG_HOST} port={ports.PG_PORT} user=postgres dbname={db}'}}\n"
            for db in (src, dst)
        )
    )


def accuracy(root: Path, deep: bool) -> AccuracyReport:
    report = run_accuracy(
        load_project(root / "hephaestus.yaml"), load_definitions(root / "defs"), AccuracyOptions(deep=deep)
    )
    assert report.results[0].error is None, report.results[0].error
    return report


def row(label: str, seconds: float, floor: float, note: str = "") -> None:
    print(f"| {label} | {seconds:.3f} s | {seconds / floor:.1f}x | {note} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    suffix = secrets.token_hex(3)
    src, dst = f"heph_bench_src_{suffix}", f"heph_bench_dst_{suffix}"
    try:
        for db in (src, dst):
            create(db, args.rows)
        with tempfile.TemporaryDirectory() as tmp:
            measure(Path(tmp), src, dst, args.repeat, args.rows)
    finally:
        for db in (src, dst):
            admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db)))


def measure(root: Path, src: str, dst: str, repeat: int, rows: int) -> None:
    project(root, src, dst)
    accuracy(root, True)  # warm-up: caches, JIT, hash probe
    serial, parallel, filtered = floors(src, dst, repeat)
    print(f"{rows:,} rows per side, median of {repeat}\n")
    print("| what | seconds | × serial floor | notes |\n|---|---|---|---|")
    row("floor: count(*) source, then sink", serial, serial)
    row("floor: count(*) both sides at once", parallel, serial)
    row(
        "floor: count(*) WHERE deleted_at IS NULL, both sides at once",
        filtered,
        serial,
        "the rows accuracy counts (its default filter)",
    )
    row(
        "floor: hash every row's text once, both sides at once",
        hash_floor(src, dst, repeat),
        serial,
        "no segments, no cuts: the text hashing alone (the md5 fallback's shape)",
    )
    row(
        "floor: hash every row's values once, both sides at once",
        hash_floor(src, dst, repeat, HASH_NATIVE),
        serial,
        "the same with hash_record_extended: what --deep does with one type per column on both sides",
    )
    counts = median(lambda: accuracy(root, False), repeat)
    row("accuracy (counts)", counts, serial, f"default filter deleted_at IS NULL; {counts / filtered:.2f}x its floor")
    row(
        "accuracy --deep, identical",
        median(lambda: accuracy(root, True), repeat),
        serial,
        "count, sampled cuts, one range-checksum scan per side",
    )
    with psycopg.connect(DSN, dbname=dst, autocommit=True) as conn:
        conn.execute("UPDATE users SET name = 'changed' WHERE user_id = %s", [f"u-{rows // 2 + 7:07d}"])
    report = accuracy(root, True)
    diff = report.results[0].diff
    assert diff is not None and diff.different.total == 1 and diff.total == 1, diff
    row(
        "accuracy --deep, one row differs",
        median(lambda: accuracy(root, True), repeat),
        serial,
        f"found {diff.different.keys[0][0]}; {diff.queries} queries per side",
    )
    command_level(root, src, dst, repeat)
    # The portable md5 hash, which a run falls back to when the servers' fast hashes differ.
    run._hashes = lambda source, sink: (True, False)  # type: ignore[assignment]  # the md5 fallback
    row(
        "accuracy --deep, one row differs, md5",
        median(lambda: accuracy(root, True), repeat),
        serial,
        "the fallback for servers of different endianness",
    )


FLOOR = """
import threading, psycopg
def count(db): psycopg.connect(DSN, dbname=db).execute('SELECT count(*) FROM users').fetchone()
threads = [threading.Thread(target=count, args=(db,)) for db in DBS]
[t.start() for t in threads]; [t.join() for t in threads]
"""


def command_level(root: Path, src: str, dst: str, pairs: int) -> None:
    from startup import HEPHAESTUS, PYTHON, ab  # bench/ is the script's folder: on sys.path

    floor = [PYTHON, "-c", f"DSN = {DSN!r}; DBS = {(src, dst)!r}" + FLOOR]
    ours = [HEPHAESTUS, "accuracy", "--project", str(root / "hephaestus.yaml"), "--definitions", str(root / "defs")]
    print("\ncommand level | floor min / median | hephaestus min / median | ratio (medians) |\n|---|---|---|---|")
    with psycopg.connect(DSN, dbname=dst, autocommit=True) as conn:  # counts must match: exit 0
        conn.execute("UPDATE users SET name = 'name ' || substr(user_id, 3)::int WHERE name = 'changed'")
    ab("`accuracy` (counts) vs two count(*) in parallel", floor, ours, pairs)
    with psycopg.connect(DSN, dbname=dst, autocommit=True) as conn:
        conn.execute("UPDATE users SET email = 'changed' WHERE user_id = 'u-0000007'")
    # Exit 2 (a mismatch) is the answer here: both sides run under one `sh -c` mapping it to 0.
    deep = " ".join(shlex.quote(a) for a in [*ours, "--deep"]) + '; test "$?" = 2'
    ab("`accuracy --deep`, one row differs, vs the same", ["sh", "-c", shlex.join(floor)], ["sh", "-c", deep], pairs)
    print()


if __name__ == "__main__":
    main()

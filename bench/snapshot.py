"""bench/snapshot: back-fill of a 100k-row table by incremental snapshot, end to end on the stack.

Signal (the reconcile that adds the table) to the last row in the sink database, at the default
chunk size (512) and a larger one. Needs the stack up (dev/stack/up).
Run: python bench/snapshot.py [--rows 100000] [--chunks 512,4096]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the stack helpers live in tests/

from hephaestus.cli import run  # noqa: E402
from tests.stack.support import (  # noqa: E402
    Stack,
    add_db_secrets,
    create_database,
    drop_database,
    execute,
    read_rows,
    remove_db_secrets,
    unique_suffix,
)


def cli(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(list(args))
    assert code == 0, out.getvalue() + err.getvalue()
    return out.getvalue()


def one_run(stack: Stack, rows: int, chunk: int) -> tuple[float, float]:
    suffix = unique_suffix()
    bob, fatima = f"bob_b{suffix}", f"fatima_b{suffix}"
    for db, template in ((bob, "bob"), (fatima, "fatima")):
        create_database(stack, db, template)
        add_db_secrets(stack, db)
    try:
        return _measure(stack, bob, fatima, rows, chunk)
    finally:
        for db in (bob, fatima):
            drop_database(stack, db)
            remove_db_secrets(stack, db)


def _measure(stack: Stack, bob: str, fatima: str, rows: int, chunk: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        execute(
            stack.dsn(bob),
            f"INSERT INTO students (student_id, current_grade, resource_path) "
            f"SELECT 's-' || g, g % 12, 'r' FROM generate_series(1, {rows}) g",
        )
        cli(
            "catalog",
            "dump",
            "--dsn",
            stack.dsn("postgres"),
            "--database",
            bob,
            "--database",
            fatima,
            "--out",
            str(root / "catalogs"),
        )
        definition = {
            "cluster": "bench",
            "database": bob,
            "envs": ["local"],
            "orgs": ["manabie"],
            "secrets_file": "secrets/connect.properties",
            "source": {"snapshot_mode": "no_data", "snapshot_chunk_size": chunk},
            "sink_defaults": {"dlq_replication_factor": 1},
            "pipelines": [{"source_table": "locations", "sinks": [{"database": fatima}]}],
        }
        (root / "definitions").mkdir()
        write = lambda: (root / "definitions/bob.yaml").write_text(yaml.safe_dump(definition))  # noqa: E731
        write()
        gen = [
            "generate",
            "--definitions",
            str(root / "definitions"),
            "--catalogs",
            str(root / "catalogs"),
            "--out",
            str(root / "connectors"),
        ]
        cli(*gen)
        project = {
            "clusters": {"bench": {"url": stack.connect_url, "connectors": "connectors/bench", "select": [f"*{bob}*"]}},
            "databases": {bob: {"dsn": f"host={stack.pg_host} port={stack.pg_port} user={stack.pg_user} dbname={bob}"}},
            "policy": {"max_delete_share": 1.0},
        }
        (root / "hephaestus.yaml").write_text(yaml.safe_dump(project))
        cli("reconcile", "--auto-approve", "--project", str(root / "hephaestus.yaml"))
        definition["pipelines"].append({"source_table": "students", "sinks": [{"database": fatima}]})
        write()
        cli(*gen)
        start = time.perf_counter()
        report = json.loads(
            cli(
                "reconcile",
                "--auto-approve",
                "--project",
                str(root / "hephaestus.yaml"),
                "-o",
                "json",
                "--send-incremental-snapshot",
            )
        )
        signalled = time.perf_counter() - start
        assert any(r["action"] == "snapshot" and r["ok"] for r in report["clusters"][0]["results"]), report
        while read_rows(stack.dsn(fatima), "SELECT count(*) FROM students")[0][0] < rows:
            time.sleep(0.2)
        total = time.perf_counter() - start
        _cleanup(stack, root, bob)
        return signalled, total


def _cleanup(stack: Stack, root: Path, bob: str) -> None:
    import httpx

    with httpx.Client(base_url=stack.connect_url) as http:
        for name in http.get("/connectors").json():
            if bob in name:
                http.delete(f"/connectors/{name}")
        deadline = time.monotonic() + 30
        while any(bob in n for n in http.get("/connectors").json()) and time.monotonic() < deadline:
            time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--chunks", default="512,4096")
    args = parser.parse_args()
    stack = Stack.from_env()
    for chunk in (int(c) for c in args.chunks.split(",")):
        signalled, total = one_run(stack, args.rows, chunk)
        print(
            f"chunk {chunk:5d}: {args.rows} rows; reconcile incl. signal {signalled:6.2f}s; "
            f"signal-to-last-row {total - signalled:6.2f}s; end to end {total:6.2f}s "
            f"({args.rows / (total - signalled):,.0f} rows/s)"
        )


if __name__ == "__main__":
    main()

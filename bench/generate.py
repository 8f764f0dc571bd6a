"""bench/generate: a synthetic fleet (3 envs x 5 orgs x 100 tables x 3 sinks) through the generator.

Measures `hephaestus generate` in-process (load + validate + fan-out + render + write) against
the floor: writing the same bytes to the same number of files with a bare loop.
Run: python bench/generate.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hephaestus.generator import run_generate
from hephaestus.generator.output import read_generated

ENVS, ORGS, TABLES, SINKS = 3, 5, 100, 3


def write_fleet(root: Path) -> None:
    """Definitions and schema snapshots for the synthetic fleet."""
    (root / "definitions").mkdir(parents=True)
    (root / "schemas").mkdir()
    cols = [{"name": "id", "type": "text"}] + [{"name": f"c{i}", "type": "text"} for i in range(12)]
    table = {"columns": cols, "primary_key": ["id"]}
    tables = {f"public.t{i:03d}": table for i in range(TABLES)}
    for db in ["src"] + [f"sink{j}" for j in range(SINKS)]:
        (root / "schemas" / f"{db}.json").write_text(json.dumps({"database": db, "tables": tables}))
    pipelines = [{"source_table": f"t{i:03d}", "sinks": [{"database": f"sink{j}"} for j in range(SINKS)]}
                 for i in range(TABLES)]
    definition = {"cluster": "bench", "database": "src", "envs": [f"e{i}" for i in range(ENVS)],
                  "orgs": [f"o{i}" for i in range(ORGS)], "pipelines": pipelines}
    (root / "definitions" / "src.yaml").write_text(json.dumps(definition))  # JSON is YAML


def time_generate(root: Path) -> tuple[float, int]:
    out = root / "connectors"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    result = run_generate(root / "definitions", root / "schemas", out, check=False)
    return time.perf_counter() - start, len(result.connectors)


def time_floor(root: Path, files: dict[str, bytes]) -> float:
    out = root / "floor"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    for rel, data in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_fleet(root)
        gen = [time_generate(root) for _ in range(repeat)]
        files = read_generated(root / "connectors")
        floor = [time_floor(root, files) for _ in range(repeat)]
        size = sum(len(b) for b in files.values())
        gen_s = statistics.median(t for t, _ in gen)
        floor_s = statistics.median(floor)
        print(f"connectors: {gen[0][1]}  files: {len(files)}  bytes: {size}")
        print(f"generate  median {gen_s:.3f}s over {repeat} runs")
        print(f"floor     median {floor_s:.3f}s (bare loop writing the same bytes)")
        print(f"ratio     {gen_s / floor_s:.2f}x")


if __name__ == "__main__":
    main()

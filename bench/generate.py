"""bench/generate: synthetic fleets through `hephaestus generate`, command level, A/B against
the floor (issue 15).

Shapes:
- `fleet`: 3 envs × 5 orgs × 100 tables × 3 sinks = 4,500 sinks + 15 sources = 4,515 files,
  13 columns per table;
- `wide`: 1 env × 1 org × 100 tables × 3 sinks = 300 sinks + 1 source, 400 columns per table.

Each pair runs, as fresh processes into empty folders: `hephaestus generate` and the floor, a
bare Python loop that reads the same documents from one JSON file and writes each with
`json.dumps` (sorted keys, 2-space indent) to the same paths. Which goes first alternates.

    python bench/generate.py --shape fleet --pairs 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHAPES = {"fleet": (3, 5, 100, 3, 13), "wide": (1, 1, 100, 3, 400)}  # envs, orgs, tables, sinks, columns
FLOOR = """
import json, os, sys
from pathlib import Path
out = Path(sys.argv[2])
for rel, doc in json.loads(Path(sys.argv[1]).read_text()).items():
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\\n")
"""


def write_fleet(root: Path, envs: int, orgs: int, tables: int, sinks: int, columns: int) -> None:
    """Definitions and table catalogs for the synthetic fleet."""
    (root / "definitions").mkdir(parents=True)
    (root / "catalogs").mkdir()
    cols = [{"name": "id", "type": "text"}] + [{"name": f"c{i}", "type": "text"} for i in range(columns - 1)]
    table = {"columns": cols, "primary_key": ["id"]}
    all_tables = {f"public.t{i:03d}": table for i in range(tables)}
    for db in ["src"] + [f"sink{j}" for j in range(sinks)]:
        (root / "catalogs" / f"{db}.json").write_text(json.dumps({"database": db, "tables": all_tables}))
    pipelines = [
        {"source_table": f"t{i:03d}", "sinks": [{"database": f"sink{j}"} for j in range(sinks)]} for i in range(tables)
    ]
    definition = {
        "cluster": "bench",
        "database": "src",
        "envs": [f"e{i}" for i in range(envs)],
        "orgs": [f"o{i}" for i in range(orgs)],
        "pipelines": pipelines,
    }
    (root / "definitions" / "src.yaml").write_text(json.dumps(definition))  # JSON is YAML


def timed(argv: list[str], out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", choices=sorted(SHAPES), default="fleet")
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_fleet(root, *SHAPES[args.shape])
        ours = [
            str(REPO / ".venv/bin/hephaestus"),
            "generate",
            "--definitions",
            str(root / "definitions"),
            "--catalogs",
            str(root / "catalogs"),
            "--out",
            str(root / "connectors"),
        ]
        timed(ours, root / "connectors")  # warm-up, and the documents the floor writes
        docs = {
            p.relative_to(root / "connectors").as_posix(): json.loads(p.read_text())
            for p in sorted((root / "connectors").rglob("*.json"))
        }
        (root / "docs.json").write_text(json.dumps(docs))
        floor = [sys.executable, "-c", FLOOR, str(root / "docs.json"), str(root / "floor")]
        ours_s, floor_s = [], []
        for pair in range(args.pairs):
            runs = [(ours_s, ours, root / "connectors"), (floor_s, floor, root / "floor")]
            for sink, argv, out in runs if pair % 2 == 0 else runs[::-1]:
                sink.append(timed(argv, out))
        size = sum(len(json.dumps(d)) for d in docs.values())
        o, f = statistics.median(ours_s), statistics.median(floor_s)
        print(f"shape {args.shape}: {len(docs)} files (~{size / 1e6:.1f} MB); load average {os.getloadavg()[0]:.1f}")
        print(
            f"| generate, command level | {min(ours_s):.3f} / {o:.3f} s | floor {min(floor_s):.3f} / {f:.3f} s | "
            f"{o / f:.2f}× |"
        )


if __name__ == "__main__":
    main()

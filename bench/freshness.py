"""bench/freshness: what the freshness probe costs a no-op run (issue 46), probe on and off.

The shipped project (hephaestus.yaml, definitions/, catalogs/) is copied twice into a temp
folder: as shipped (the probe on) and with `probe: {enabled: false}` in every definition. Each is
generated, then reconciled onto the stack, then timed: `reconcile --dry-run` (a no-op: nothing
to write) and `status` (which reads the probes back when they are on), each `--runs` times in a
fresh process. The stack is left with the probe on, as shipped.

With the stack up:  python bench/freshness.py --runs 7
Prints the median and spread of each command, on and off, and the ratio on/off.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
HEPHAESTUS = str(REPO / ".venv" / "bin" / "hephaestus")


def copy(root: Path, probe: bool) -> Path:
    """The shipped project under `root`, its definitions with the probe on or off, generated."""
    root.mkdir(parents=True)
    for part in ("hephaestus.yaml", "definitions", "catalogs"):
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, root / part)
    if not probe:
        for path in (root / "definitions").glob("*.yaml"):
            doc = yaml.safe_load(path.read_text())
            doc["probe"] = {"enabled": False}
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
    run(root, "generate")
    return root


def run(root: Path, *args: str, check: bool = True) -> float:
    start = time.perf_counter()
    done = subprocess.run([HEPHAESTUS, *args], cwd=root, capture_output=True, text=True)
    took = time.perf_counter() - start
    if check and done.returncode not in (0, 2):
        sys.exit(f"{' '.join(args)} failed in {root}: {done.stderr[-2000:]}")
    return took


def timed(root: Path, runs: int, settle: float) -> dict[str, list[float]]:
    run(root, "reconcile", "--auto-approve")  # the stack as this variant wants it: the dry runs are no-ops
    time.sleep(settle)  # the connectors it restarted settle (a rebalance slows Connect's answers)
    return {
        "reconcile --dry-run": [run(root, "reconcile", "--dry-run") for _ in range(runs)],
        "status": [run(root, "status", check=False) for _ in range(runs)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--settle", type=float, default=30.0, help="seconds between a reconcile and its timings")
    args = parser.parse_args()
    runs = args.runs
    with tempfile.TemporaryDirectory() as tmp:
        off = timed(copy(Path(tmp) / "off", probe=False), runs, args.settle)
        on = timed(copy(Path(tmp) / "on", probe=True), runs, args.settle)  # last: the stack stays as shipped
    for name in on:
        a, b = statistics.median(on[name]), statistics.median(off[name])
        spread = f"on {min(on[name]):.2f}-{max(on[name]):.2f} s, off {min(off[name]):.2f}-{max(off[name]):.2f} s"
        print(f"{name:22} probe on {a:.2f} s, off {b:.2f} s, on/off {a / b:.2f} ({runs} runs each; {spread})")


if __name__ == "__main__":
    main()

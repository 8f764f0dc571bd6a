"""Append-only JSONL audit log of every applied change (edge: writes a file)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Step, comparable
from hephaestus.secrets import mask_config

_lock = threading.Lock()


def config_hash(config: Mapping[str, str] | None) -> str | None:
    """A stable fingerprint of a config, computed over masked values (never a secret)."""
    if config is None:
        return None
    canonical = json.dumps(mask_config(comparable(config, frozenset())), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def record(path: Path, run_id: str, cluster: str, step: Step, before: Mapping[str, str] | None,
           result: StepResult) -> None:
    entry = {
        "ts": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "run_id": run_id,
        "cluster": cluster,
        "connector": step.name,
        "action": step.action,
        "config_hash_before": config_hash(before),
        "config_hash_after": None if step.action == "delete" else config_hash(step.config),
        "changed_keys": [c.key for c in step.changes],
        "outcome": "ok" if result.ok else "failed",
        "detail": result.detail,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with _lock, path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")

"""Append-only JSONL audit log: the intent before each write, the outcome after (edge: a file).

Intent first, so a run killed between the two still leaves a trace of what it set out to do;
a log that cannot be written stops the run before its first write, since an unaudited
change is exactly what an audit log exists to rule out.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hephaestus.errors import HephaestusError
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Step, comparable
from hephaestus.secrets import REDACTOR, mask_config

_lock = threading.Lock()


class AuditUnavailable(HephaestusError):
    """The audit log cannot be written: nothing (more) is applied."""


def config_hash(config: Mapping[str, str] | None) -> str | None:
    """A stable fingerprint of a config, computed over masked values (never a secret)."""
    if config is None:
        return None
    canonical = json.dumps(mask_config(comparable(config, frozenset())), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class Journal:
    """The audit records of one cluster in one run; `path` None keeps no log."""

    def __init__(self, path: Path | None, run_id: str, cluster: str,
                 before: Mapping[str, Mapping[str, str]]) -> None:
        self.path = path
        self.run_id = run_id
        self.cluster = cluster
        self.before = before

    def check(self) -> None:
        """Raise AuditUnavailable unless the log can be appended to (called before any write)."""
        self._append([])

    def intent(self, step: Step) -> None:
        self._append([self._entry(step, "intent", "")])

    def outcome(self, step: Step, result: StepResult) -> None:
        self._append([self._entry(step, "ok" if result.ok else "failed", result.detail)])

    def _entry(self, step: Step, outcome: str, detail: str) -> dict[str, Any]:
        return {
            "ts": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "run_id": self.run_id,
            "cluster": self.cluster,
            "connector": step.name,
            "action": step.action,
            "renamed_from": step.renamed_from or None,
            "config_hash_before": config_hash(self.before.get(step.renamed_from or step.name)),
            "config_hash_after": None if step.action == "delete" else config_hash(step.config),
            "changed_keys": [c.key for c in step.changes],
            "outcome": outcome,
            "detail": detail,
        }

    def _append(self, entries: list[dict[str, Any]]) -> None:
        if self.path is None:
            return
        text = REDACTOR("".join(json.dumps(e, sort_keys=True) + "\n" for e in entries))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _lock, self.path.open("a", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise AuditUnavailable(f"audit log {self.path} cannot be written: {exc.strerror or exc}") from exc

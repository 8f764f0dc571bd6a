"""What the audit journal records of a reconcile step: its intent before the write, its
outcome after, with the config hashes before and after and the keys that changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hephaestus.fleet.model import config_hash
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Need, Step
from hephaestus.state.audit import Journal

_CONFIG_WRITES = frozenset({"create", "update", "rename", "move", "delete"})


class StepJournal:
    """A cluster's journal in one run, and its live configs before the run (for the hashes),
    each replaced by what a step of this run wrote: a rollback's "before" is the config it takes
    away, not the one it puts back."""

    def __init__(self, journal: Journal, before: Mapping[str, Mapping[str, str]]) -> None:
        self.journal = journal
        self.before: dict[str, Mapping[str, str] | None] = dict(before)

    def __enter__(self) -> StepJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.journal.close()

    def check(self) -> None:
        self.journal.check()

    def intent(self, step: Step) -> None:
        self.journal.event(step.name, step.action, "intent", "", self._about(step))

    def outcome(self, step: Step, result: StepResult) -> None:
        self.journal.event(step.name, step.action, "ok" if result.ok else "failed", result.detail, self._about(step))
        if result.wrote and step.action in _CONFIG_WRITES:
            if step.renamed_from:
                self.before[step.renamed_from] = None
            self.before[step.name] = None if step.action == "delete" else step.config

    def topic(self, need: Need, topic: str, outcome: str, detail: str) -> None:
        """A topic created for a sink before it is sent: its own entries, under the sink's name."""
        about = {
            "topic": topic,
            "written_by": need.source,
            "partitions": need.partitions,
            "replication_factor": need.replication,
            "topic_config": dict(need.config),
        }
        self.journal.event(need.sink, "create-topic", outcome, detail, about)

    def _about(self, step: Step) -> dict[str, Any]:
        return {
            "renamed_from": step.renamed_from or None,
            "moved_from": step.moved_from or None,
            "config_hash_before": config_hash(self.before.get(step.renamed_from or step.name)),
            "config_hash_after": None if step.action == "delete" else config_hash(step.config),
            "changed_keys": [c.key for c in step.changes],
            "reason": step.reason,  # the tool's words ("secret rotated (connection.password)"), no value
        }

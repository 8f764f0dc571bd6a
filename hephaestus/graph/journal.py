"""The last change of each connector, from the audit trail (`state.auditread` reads it,
read-only): what the page shows beside a connector's health."""

from __future__ import annotations

from collections.abc import Sequence

from hephaestus.graph.live import change_of
from hephaestus.graph.model import RecordedChange
from hephaestus.project import Project
from hephaestus.state import auditread

Changes = dict[tuple[str, str], RecordedChange]


def last_changes(project: Project, clusters: Sequence[str]) -> tuple[Changes, tuple[str, ...]]:
    """(cluster, connector) → its last change; and what could not be read."""
    entries, errors = auditread.last_outcomes(project, clusters)
    return changes_of(entries), errors


def changes_of(entries: auditread.Entries) -> Changes:
    return {key: change for key, entry in entries.items() if (change := change_of(entry)) is not None}

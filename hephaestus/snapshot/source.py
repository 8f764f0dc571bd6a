"""Which database, slot, publication and signal table a source connector uses (pure + lookup)."""

from __future__ import annotations

from hephaestus.project import Project
from hephaestus.reconciler.sources import SourceRef as SourceRef  # re-exported for the snapshot jobs
from hephaestus.reconciler.sources import source_ref as source_ref


def dsn_for(project: Project, database: str) -> str:
    return project.dsn(database, "hephaestus needs it to signal its source")

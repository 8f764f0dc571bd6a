"""The DSN of the database a source connector reads (fleet.sources says which one it is)."""

from __future__ import annotations

from hephaestus.project import Project


def dsn_for(project: Project, database: str) -> str:
    return project.dsn(database, "hephaestus needs it to signal its source")

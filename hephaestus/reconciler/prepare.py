"""What apply makes in the databases before the connector writes: each planned publication
change, in order (edge: psycopg, through `publications.db`), as far as the gate's pass lets it."""

from __future__ import annotations

from hephaestus.errors import HephaestusError
from hephaestus.project import Project
from hephaestus.publications import db
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan
from hephaestus.safety.gate import Cleared


def alter_all(project: Project, p: Plan, cleared: Cleared) -> tuple[StepResult, ...]:
    """Each planned change, in order, stopping at the first that fails or that the gate did not
    pass (nothing after it runs): the plan is the cleared one, so the latter is a defect caught."""
    done: list[StepResult] = []
    for ch in p.publications:
        if f"publication {ch.name}" not in cleared.names():
            return (*done, StepResult(ch.name, "publication", False, "not cleared by the safety gate"))
        try:
            db.alter(project.dsn(ch.database, "publication upkeep"), ch)
        except HephaestusError as exc:
            return (*done, StepResult(ch.name, "publication", False, str(exc)))
        done.append(StepResult(ch.name, "publication", True, ch.describe().split(": ", 1)[1], wrote=True))
    return tuple(done)

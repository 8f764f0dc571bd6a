"""The topics a project's ksqlDB migrations write, for reconcile (issue 48): a sink that reads
one waits for its migration rather than being refused. Compiled as `ksql apply` runs them
(DEFINEs resolved); a file that does not parse is left out (`hephaestus validate` names it)."""

from __future__ import annotations

from hephaestus.errors import HephaestusError
from hephaestus.fleet.ksqltopics import written
from hephaestus.ksql.run import prepare
from hephaestus.project import Project


def topics_written(project: Project) -> dict[str, str]:
    """{topic: "ksqlDB CLUSTER migration FILE:LINE"} over every ksqlDB cluster of the project."""
    found: dict[str, str] = {}
    for cluster in project.ksqldb.values():
        try:
            prepared = prepare([cluster], {}, defer_failures=True, undo=False)
        except HephaestusError:
            continue  # no migrations folder, or one that cannot be read: nothing known to write
        for p in prepared:
            statements = [
                (s.text, f"{p.cluster.name} {c.file.path.name}:{s.line}")
                for _, c in sorted(p.compiled.items())
                if c.failure is None
                for s in c.statements
            ]
            found |= written(statements)
    return found

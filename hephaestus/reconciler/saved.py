"""Saved plans: `reconcile --dry-run --out plan.json`, then `reconcile --plan plan.json` applies
exactly that plan or refuses, naming what moved (Terraform's stale-plan rule).

A plan is a function of its inputs: git's connector files, the live configs inside the
deployment's scope, the project file and the options. The file keeps a fingerprint of each:
the files' and project's SHA-256, each live config's hash (over masked values, so the file never
carries a secret), and a hash of the planned writes. Applying recomputes the plan and goes on
only when every fingerprint is the same: the same inputs give the same steps, checked again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hephaestus.errors import HephaestusError, InputError
from hephaestus.project import Cluster, Project
from hephaestus.reconciler.outcome import ClusterOutcome
from hephaestus.reconciler.plan import Plan
from hephaestus.yamlsrc import load_json, save_json

FORMAT = 1


@dataclass(frozen=True)
class Expected:
    """What one cluster's plan was computed from and what it would write."""

    live: Mapping[str, str]  # connector → config hash
    steps: str  # hash of the writes and publication changes


def steps_hash(p: Plan) -> str:
    writes = [[s.action, s.name, s.renamed_from, sorted(s.config.items())] for s in p.writes]
    pubs = [[c.database, c.publication, list(c.add), list(c.drop)] for c in p.publications]
    return _sha(json.dumps([writes, pubs]))  # lists only (configs as sorted pairs): a stable text


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def git_files(clusters: Sequence[Cluster]) -> dict[str, str]:
    """SHA-256 of every connector file of the clusters (all kinds: custom too)."""
    return {str(p): _sha(p.read_bytes()) for c in clusters for p in sorted(c.connectors.rglob("*.json"))}


def save(
    path: Path,
    project: Project,
    outcomes: Sequence[ClusterOutcome],
    options: Mapping[str, Any],
    clusters: Sequence[Cluster],
) -> str:
    """Write the plan file; its id (the first 12 hex of its content's hash)."""
    body = {
        "clusters": {
            o.cluster: {
                "url": o.url,
                "live": dict(o.live_hashes),
                "steps": steps_hash(o.plan) if o.plan else "",
                "writes": [
                    {"action": s.action, "name": s.name, "risk": s.risk} for s in (o.plan.writes if o.plan else ())
                ],
            }
            for o in outcomes
        },
        "git": git_files(clusters),
        "project": _sha(Path(project.file).read_bytes()),
        "options": dict(options),
    }
    plan_id = _sha(json.dumps(body, sort_keys=True))[:12]
    if any(o.error or o.plan is None for o in outcomes):
        raise HephaestusError("no plan saved: a cluster could not be planned")
    save_json(
        path,
        {
            "hephaestus_plan": FORMAT,
            "id": plan_id,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            **body,
        },
    )
    return plan_id


@dataclass(frozen=True)
class Loaded:
    id: str
    clusters: tuple[str, ...]
    expected: dict[str, Expected]
    options: dict[str, Any]


def load(path: Path, project: Project) -> Loaded:
    """The plan file, after checking that git's files and the project file did not move."""
    doc = load_json(path)
    if not isinstance(doc, dict) or doc.get("hephaestus_plan") != FORMAT:
        raise InputError(str(path), f"not a hephaestus plan file (format {FORMAT})")
    clusters = [project.clusters[c] for c in doc["clusters"] if c in project.clusters]
    if len(clusters) != len(doc["clusters"]):
        raise StalePlan(f"plan {doc['id']}: its clusters are not all in {project.file} any more")
    moved = _moved(doc["git"], git_files(clusters))
    if _sha(Path(project.file).read_bytes()) != doc["project"]:
        moved.insert(0, project.file)
    if moved:
        raise StalePlan(f"plan {doc['id']} is stale: {_listed(moved)} changed since; make a new plan")
    expected = {name: Expected(c["live"], c["steps"]) for name, c in doc["clusters"].items()}
    return Loaded(doc["id"], tuple(doc["clusters"]), expected, dict(doc.get("options", {})))


def _moved(before: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    return sorted(p for p in set(before) | set(now) if before.get(p) != now.get(p))


def _listed(names: Sequence[str], shown: int = 5) -> str:
    """The first few names, and how many more: a message stays one readable line."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


class StalePlan(HephaestusError):
    """The saved plan no longer matches git, the project or the live clusters (exit 2)."""

    exit_code = 2


def stale(expected: Expected, live: Mapping[str, str], p: Plan) -> str:
    """Why the recomputed plan is not the saved one ("" when it is)."""
    moved = _moved(expected.live, live)
    if moved:
        return f"stale plan: the live config of {_listed(moved)} changed since the plan; make a new plan"
    if steps_hash(p) != expected.steps:
        return "stale plan: the steps differ from the saved plan's (ownership or policy changed); make a new plan"
    return ""

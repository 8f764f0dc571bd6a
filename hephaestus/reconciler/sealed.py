"""Sealed plans: `reconcile --dry-run --out plan.json`, then `reconcile --plan plan.json` executes
exactly those steps, or nothing (Terraform's `apply plan.tfplan`).

The file holds, under one content hash (`safety.seal`; an HMAC too when `HEPHAESTUS_PLAN_KEY`
is set):

- the exact steps of every cluster, with their desired configs (a secret value in git is kept
  as its keyed fingerprint and taken from git, unchanged, when applied), the publication
  changes and what is adopted;
- the preconditions: a keyed fingerprint of every live config in scope (secret values
  included), the state of each connector a step writes, what this deployment owned, the
  publications as read;
- each cluster's identity: its URL and Connect's `kafka_cluster_id`;
- the SHA-256 of the project file and of every connector file, and every option that decides
  the scope (clusters, targets, force, allow-destructive, custom sinks, snapshots);
- how it rolls out: the rollout flags given (`--canary`, `--on-failure`, `--analysis-window`,
  `--lag-budget`) and, per cluster, the rollout they make over the project file's (none: all
  at once). "Canary, then rollback" is part of what was reviewed: `--plan` takes these flags
  from the plan, and a plan of format 2, which has none, is refused (make a new one): what it
  was reviewed with cannot be told.

Applying checks the seal and every precondition, then runs those steps through the same gate
and executors as any apply; a step is never re-planned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hephaestus.errors import HephaestusError, InputError
from hephaestus.fleet.model import Desired, Live
from hephaestus.jsonschemas import packaged_validator
from hephaestus.project import Cluster, Project
from hephaestus.publications.change import PublicationChange
from hephaestus.reconciler.outcome import Basis, ClusterOutcome
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.safety import seal
from hephaestus.safety.effects import few
from hephaestus.safety.seal import Fingerprints
from hephaestus.yamlsrc import format_path, load_json

FORMAT = 3  # 3: the rollout sealed


@dataclass(frozen=True, kw_only=True)  # keywords only: three bools side by side
class PlanScope:
    """The options that decide what a plan covers: bound by the seal."""

    clusters: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    force: bool = False
    allow_destructive: str = ""  # "", "all", or effect codes
    deploy_custom: bool = False
    send_snapshot: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "clusters": list(self.clusters),
            "targets": list(self.targets),
            "force": self.force,
            "allow_destructive": self.allow_destructive,
            "deploy_custom": self.deploy_custom,
            "send_snapshot": self.send_snapshot,
        }


@dataclass(frozen=True)
class Sealed:
    id: str
    body: Mapping[str, Any] = field(hash=False)
    fingerprints: Fingerprints = field(hash=False, compare=False)

    @property
    def options(self) -> PlanScope:
        o = self.body["options"]
        return PlanScope(
            clusters=tuple(o["clusters"]),
            targets=tuple(o["targets"]),
            force=o["force"],
            allow_destructive=o["allow_destructive"],
            deploy_custom=o["deploy_custom"],
            send_snapshot=o["send_snapshot"],
        )

    @property
    def rollout(self) -> Mapping[str, Any]:
        """The rollout flags the plan was made with: the ones its apply takes."""
        return MappingProxyType(self.body["rollout"])

    def cluster(self, name: str) -> Mapping[str, Any] | None:
        found: Mapping[str, Any] | None = self.body["clusters"].get(name)
        return found


class StalePlan(HephaestusError):
    """What the plan was made from moved since: nothing is applied (exit 2)."""

    exit_code = 2


# --- making one -------------------------------------------------------------------------


def build(
    project: Project,
    outcomes: Sequence[ClusterOutcome],
    options: PlanScope,
    clusters: Sequence[Cluster],
    flags: Mapping[str, Any] = MappingProxyType({}),
) -> Sealed:
    """The sealed plan of a dry run (every cluster planned, none failed); `flags`: the rollout
    flags of the run."""
    if any(o.error or o.plan is None or o.basis is None or o.invalid for o in outcomes):
        raise HephaestusError("no plan sealed: a cluster could not be planned (see above)")
    salt = seal.new_salt()
    fp = Fingerprints(salt, seal.plan_key())
    given = json.loads(json.dumps(dict(flags)))  # as the file holds them: lists, not tuples
    body = {
        "project": {"name": project.name, "sha256": _sha_file(Path(project.file))},
        "git": git_files(clusters),
        "options": options.as_dict(),
        "rollout": given,
        "salt": salt,
        "clusters": {
            o.cluster: {**_cluster(o, fp), "rollout": rollout_of(project, o.cluster, given)} for o in outcomes
        },
    }
    return Sealed(seal.seal(body)[7:19], body, fp)


def rollout_of(project: Project, cluster: str, flags: Mapping[str, Any]) -> dict[str, Any] | None:
    """The cluster's rollout as these flags make it over the project file's, as JSON (None:
    none, the writes go all at once)."""
    found = project.rollout_of(project.clusters[cluster], flags)
    return None if found is None else dict(json.loads(json.dumps(asdict(found))))


def _cluster(o: ClusterOutcome, fp: Fingerprints) -> dict[str, Any]:
    assert o.plan is not None and o.basis is not None
    return {
        "url": o.basis.url,
        "kafka_cluster_id": o.basis.kafka,
        **preconditions(o.plan, o.basis, fp),
        "steps": [_step(s, fp) for s in o.plan.writes],
        "publications": [
            {
                "database": c.database,
                "publication": c.publication,
                "add": list(c.add),
                "drop": list(c.drop),
                "connectors": list(c.connectors),
            }
            for c in o.plan.publications
        ],  # fmt: skip
        "adopt": list(o.plan.adopt),
    }


def preconditions(p: Plan, basis: Basis, fp: Fingerprints) -> dict[str, Any]:
    """The keyed fingerprints of what the plan was computed from: every live config in scope
    (with its state when a step writes it), what was owned, the publications as read."""
    written = {s.name for s in p.writes} | {s.renamed_from for s in p.writes if s.renamed_from}
    return {
        "live": {n: fp.config(lv.config, lv.state if n in written else "") for n, lv in sorted(basis.live.items())},
        "owned": fp.of(sorted(basis.owned)),
        "published": {k: fp.of(_published(v)) for k, v in sorted(basis.published.items())},
    }


def _published(found: object) -> Any:
    return json.loads(json.dumps(found, default=lambda o: sorted(o) if isinstance(o, frozenset) else vars(o)))


def _step(s: Step, fp: Fingerprints) -> dict[str, Any]:
    return {
        "action": s.action,
        "name": s.name,
        "renamed_from": s.renamed_from,
        "moved_from": s.moved_from,
        "live_state": s.live_state,
        "target_state": s.target_state,
        "origin": s.origin,
        "connector_class": s.connector_class,
        "reason": s.reason,
        "config": {k: ({"secret": fp.value(v)} if seal.is_secret(k, v) else v) for k, v in sorted(s.config.items())},
        "effects": sorted({e.code for e in s.effects}),
    }


def git_files(clusters: Sequence[Cluster]) -> dict[str, str]:
    """SHA-256 of every connector file of the clusters (all kinds: custom too)."""
    return {str(p): _sha_file(p) for c in clusters for p in sorted(c.connectors.rglob("*.json"))}


def _sha_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write(path: Path, sealed: Sealed) -> None:
    key = seal.plan_key()
    # The marker first: `--out` tells its own plan by its head (outputs.PLAN reads 4 KiB), and a
    # plan's body (sorted) outgrows that; every level below the top stays sorted.
    doc: dict[str, Any] = {
        "hephaestus_plan": FORMAT,
        "id": sealed.id,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "seal": seal.seal(sealed.body),
    }
    if key is not None:
        doc["signature"] = seal.signature(sealed.body, key)
    doc["body"] = json.loads(json.dumps(sealed.body, sort_keys=True))
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise HephaestusError(f"cannot write the plan to {path}: {exc.strerror or exc}") from exc


# --- reading one back -------------------------------------------------------------------


def load(path: Path, project: Project) -> Sealed:
    """The plan file, after its seal, signature, shape, project file and connector files are
    checked: an edited, truncated or foreign file is an InputError (exit 1), a moved input a
    StalePlan (exit 2)."""
    doc = load_json(path)  # not JSON (a truncated file), NaN, duplicate keys: InputError
    body = _sealed_body(str(path), doc)
    errors = sorted(packaged_validator("hephaestus.reconciler", "plan.schema.json").iter_errors(body), key=str)
    if errors:
        where = format_path(["body", *errors[0].absolute_path])
        raise InputError(str(path), f"not a well-formed plan: {errors[0].message[:120]}", field=where)
    sealed = Sealed(doc["id"], body, Fingerprints(body["salt"], seal.plan_key()))
    _same_inputs(sealed, project)
    _same_rollout(sealed, project)
    return sealed


def _sealed_body(file: str, doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or "hephaestus_plan" not in doc:
        raise InputError(file, "not a hephaestus plan file")
    if doc.get("hephaestus_plan") != FORMAT:
        raise InputError(file, f"a plan of format {doc.get('hephaestus_plan')!r}, not {FORMAT}: make a new plan")
    body, found = doc.get("body"), doc.get("seal")
    if not isinstance(body, dict) or not isinstance(found, str) or not seal.verify(found, seal.seal(body)):
        raise InputError(file, "the plan was edited or truncated: its seal does not match its content")
    if doc.get("id") != found[7:19]:
        raise InputError(file, "the plan's id does not match its seal", field="id")
    _signed(file, doc, body)
    return body


def _signed(file: str, doc: dict[str, Any], body: dict[str, Any]) -> None:
    key, signature = seal.plan_key(), doc.get("signature")
    if key is None and signature is not None:
        raise InputError(file, f"the plan is signed: set {seal.KEY_ENV} to check its signature")
    if key is not None and not isinstance(signature, str):
        raise InputError(file, f"the plan is not signed, and {seal.KEY_ENV} is set: only a signed plan is applied")
    if key is not None and not seal.verify(str(signature), seal.signature(body, key)):
        raise InputError(file, "the plan's signature does not match (edited, or signed with another key)")


def _same_inputs(sealed: Sealed, project: Project) -> None:
    body = sealed.body
    unknown = sorted(c for c in body["clusters"] if c not in project.clusters)
    if unknown:
        raise InputError(
            project.file, f"plan {sealed.id} is for clusters this project does not name: {few(unknown, 5)}"
        )
    if body["project"]["name"] != project.name:
        raise InputError(project.file, f"plan {sealed.id} was made for deployment {body['project']['name']!r}")
    moved = [project.file] if body["project"]["sha256"] != _sha_file(Path(project.file)) else []
    now = git_files([project.clusters[c] for c in body["clusters"]])
    moved += sorted(p for p in set(body["git"]) | set(now) if body["git"].get(p) != now.get(p))
    if moved:
        raise StalePlan(f"plan {sealed.id} is stale: {few(moved, 5)} changed since; make a new plan")


def _same_rollout(sealed: Sealed, project: Project) -> None:
    """The rollout the plan was reviewed with is the one its flags make now (the project file
    is unchanged: only another version of hephaestus, with other defaults, moves it)."""
    flags = sealed.body["rollout"]
    moved = sorted(c for c, sc in sealed.body["clusters"].items() if sc["rollout"] != rollout_of(project, c, flags))
    if moved:
        raise StalePlan(
            f"plan {sealed.id} is stale: the rollout of cluster {few(moved, 5)} is not the one planned; make a new plan"
        )


# --- applying one -----------------------------------------------------------------------


def identity(sealed: Sealed, name: str, url: str, kafka: str | None) -> str:
    """Why this cluster is not the one the plan was made against ("" when it is)."""
    sc = sealed.cluster(name)
    if sc is None:
        return f"plan {sealed.id} has no cluster {name}"
    if sc["url"] != url:
        return f"plan {sealed.id} was made against {sc['url']}, and cluster {name} is now {url}: a foreign plan"
    if sc["kafka_cluster_id"] != kafka:
        return (
            f"plan {sealed.id} was made against the Connect cluster of Kafka {sc['kafka_cluster_id']}, and {url} "
            f"now runs on Kafka {kafka}: a foreign plan"
        )
    return ""


def stale(sealed: Sealed, name: str, p: Plan, basis: Basis) -> str:
    """Why the live side moved since the plan ("" when every precondition holds)."""
    sc = sealed.cluster(name)
    assert sc is not None
    now = preconditions(p, basis, sealed.fingerprints)
    moved = sorted(n for n in set(sc["live"]) | set(now["live"]) if sc["live"].get(n) != now["live"].get(n))
    if moved:
        return f"stale plan: the live config or state of {few(moved, 5)} changed since the plan; make a new plan"
    if sc["owned"] != now["owned"]:
        return "stale plan: what this deployment owns on the cluster changed since the plan; make a new plan"
    if sc["published"] != now["published"]:
        return "stale plan: a source's publication changed since the plan; make a new plan"
    return ""


def steps(sealed: Sealed, name: str, desired: Mapping[str, Desired], live: Mapping[str, Live]) -> tuple[Step, ...]:
    """The sealed steps as they will run: a secret kept as a fingerprint is taken from git
    (whose files are unchanged) once its fingerprint matches."""
    sc = sealed.cluster(name)
    assert sc is not None
    return tuple(_as_step(sealed, raw, desired.get(raw["name"])) for raw in sc["steps"])


def _as_step(sealed: Sealed, raw: Mapping[str, Any], d: Desired | None) -> Step:
    config = {k: _value(sealed, raw["name"], k, v, d) for k, v in raw["config"].items()}
    return Step(
        raw["action"],
        raw["name"],
        config=config,
        reason=raw["reason"],
        connector_class=raw["connector_class"],
        origin=raw["origin"],
        live_state=raw["live_state"],
        renamed_from=raw["renamed_from"],
        moved_from=raw.get("moved_from", ""),
        target_state=raw["target_state"],
    )


def _value(sealed: Sealed, name: str, key: str, value: Any, d: Desired | None) -> str:
    if isinstance(value, str):
        return value
    found = d.config.get(key) if d is not None else None
    if found is None or sealed.fingerprints.value(found) != value["secret"]:
        raise StalePlan(f"plan {sealed.id}: the secret {key} of {name} is not the one planned; make a new plan")
    return found


def publications(sealed: Sealed, name: str) -> tuple[PublicationChange, ...]:
    sc = sealed.cluster(name)
    assert sc is not None
    return tuple(
        PublicationChange(c["database"], c["publication"], tuple(c["add"]), tuple(c["drop"]), tuple(c["connectors"]))
        for c in sc["publications"]
    )


def adopt(sealed: Sealed, name: str) -> tuple[str, ...]:
    sc = sealed.cluster(name)
    return tuple(sc["adopt"]) if sc else ()


def effects_moved(sealed: Sealed, name: str, p: Plan) -> str:
    """The steps' effects as judged now differ from the sealed ones (another version?)."""
    sc = sealed.cluster(name)
    assert sc is not None
    then = {s["name"]: s.get("effects", []) for s in sc["steps"]}
    moved = [s.name for s in p.writes if sorted({e.code for e in s.effects}) != then.get(s.name)]
    return f"stale plan: the effects of {few(moved, 5)} differ from the plan's; make a new plan" if moved else ""

"""One cluster's plan from what was read, purely (like sqlmesh's plan builder over a state
snapshot read once): no request, no database, no lock, no global. Everything it needs is in
`Seen`, gathered by `reconciler.planning` before; a sealed plan is seen through `Seal`, so that
this module needs neither the seal's files nor its key."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from hephaestus.drift.model import BREAKS_SINK, DriftReport
from hephaestus.fleet.model import Desired, Live
from hephaestus.fleet.plugins import Workers, pins, unheld
from hephaestus.publications import change as publications
from hephaestus.publications.change import PublicationChange, Publications
from hephaestus.reconciler import backfill, rotation, sinktopics
from hephaestus.reconciler.outcome import Basis, ClusterOutcome
from hephaestus.reconciler.plan import Plan, Policy, Scope, Step, Unhealthy, changes_of, is_ksqldb_managed, plan
from hephaestus.reconciler.plan import step_effects as effects_of
from hephaestus.safety.effects import Effect
from hephaestus.safety.values import Resolver

# The steps of git's plan that write nothing: what a sealed plan, its writes only, leaves out.
LEFT_ALONE = frozenset({"unchanged", "protected", "unmanaged"})


@dataclass(frozen=True)
class Wanted:
    """What git wants of one cluster, and how the run looks at it."""

    desired: Mapping[str, Desired]
    held: frozenset[str]  # custom connectors this run leaves out
    targets: tuple[str, ...]
    drift_only: bool
    dry_run: bool
    unassigned_grace_s: float
    # {topic: the ksqlDB migration that writes it}, read only when a sink starts to read a topic
    # (the project's migrations, compiled by the CLI: the reconciler imports no feature).
    migrations: Callable[[], Mapping[str, str]] | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class KafkaTopics:
    """What Kafka was asked for the plan's sinks (only when one starts to read topics)."""

    names: frozenset[str] = frozenset()
    unchecked: str = ""  # why Kafka was not asked at all (no kafka_bootstrap)
    error: str = ""  # why its topics could not be listed: a warning, never a crash
    written: Mapping[str, str] = field(default_factory=dict, hash=False)  # by ksqlDB migrations: {topic: which}


@dataclass(frozen=True, kw_only=True)  # keywords only: strings side by side
class Seen:
    """One cluster as read once: everything its plan needs, and nothing to ask again."""

    cluster: str
    url: str
    shared: bool  # no `select`: live connectors nobody claims may be another deployment's
    every: Mapping[str, Live] = field(hash=False)  # the whole fleet, in scope or not (topics' writers)
    basis: Basis  # the connectors in scope (secrets unmasked), owned, fingerprints, publications
    masked: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)  # keys Connect masks
    health: tuple[Unhealthy, ...] = ()  # of the managed connectors the plan does not write
    publications: Publications = Publications()
    topics: KafkaTopics | None = None  # None: no sink starts to read topics
    schema: DriftReport = DriftReport()  # the sources' schema drift (hephaestus.drift)
    plugins: Workers | None = None  # each worker's plugins, read when a write sets or moves a pin
    # The steps as drafted when what to read was decided (`needs`): `planned` takes them rather
    # than drafting again (issue 47). Nothing read after that decision changes a draft.
    draft: Plan | str | None = field(default=None, hash=False, compare=False)


@dataclass(frozen=True)
class Needs:
    """What the reader must read besides the listing, as the plan's steps say."""

    kept: frozenset[str]  # managed connectors the plan does not write: their health is reported
    topics: bool  # a sink starts to read topics: Kafka's are listed
    plugins: bool = False  # a write sets or moves a plugin's pin: every worker's plugins are read
    draft: Plan | str = field(default="", hash=False, compare=False)  # what they were read off


class Seal(Protocol):
    """A sealed plan's part for one cluster (`reconciler.sealed`, through `planning.SealedCluster`)."""

    def identity(self, url: str, kafka: str | None) -> str: ...
    def steps(self, desired: Mapping[str, Desired], live: Mapping[str, Live]) -> tuple[Step, ...]: ...
    def publications(self) -> tuple[PublicationChange, ...]: ...
    def adopt(self) -> tuple[str, ...]: ...
    def stale(self, p: Plan, basis: Basis) -> str: ...


def needs(seen: Seen, wanted: Wanted, policy: Policy, seal: Seal | None) -> Needs | None:
    """None when the sealed plan was made against another cluster: nothing more is read."""
    draft = drafted(seen, wanted, policy, seal)
    if isinstance(draft, str):
        return None
    writes = {s.name for s in draft.writes}
    kept = frozenset(n for n in wanted.desired if wanted.dry_run or n not in writes)
    topics = bool(sinktopics.starting(draft, seen.every) or sinktopics.regexes(draft))
    return Needs(kept, topics, plugins=bool(pinning(draft, seen.basis.live)), draft=draft)


def pinning(p: Plan, live: Mapping[str, Live]) -> tuple[Step, ...]:
    """The writes that set a plugin's pin or move one (issue 50): each checked against what
    every worker holds before any write."""
    written = [s for s in p.writes if s.action in ("create", "update", "rename", "move")]
    return tuple(s for s in written if pins(s.config) and pins(s.config) != pins(_config(live, s)))


def _config(live: Mapping[str, Live], s: Step) -> Mapping[str, str]:
    found = live.get(s.renamed_from or s.name)
    return found.config if found is not None and s.action != "move" else {}


def _with_plugins(p: Plan, seen: Seen) -> Plan:
    """A pin some worker holds nothing for is refused before any write (`plugin-missing`, a rule
    no flag allows): its tasks placed there could not start. Unchecked workers refuse it too."""
    w = seen.plugins
    if w is None:
        return p
    judged = {s.name: _missing(s, w) for s in pinning(p, seen.basis.live)}
    return replace(p, steps=tuple(replace(s, effects=(*s.effects, *judged.get(s.name, ()))) for s in p.steps))


def _missing(step: Step, w: Workers) -> tuple[Effect, ...]:
    if unchecked := w.unchecked():
        return (Effect("plugin-missing", f"its pins cannot be checked: {unchecked}", invariant=True),)
    return tuple(Effect("plugin-missing", why, invariant=True) for why in unheld(step.config, w))


def planned(seen: Seen, wanted: Wanted, policy: Policy, seal: Seal | None) -> ClusterOutcome:
    """The cluster planned (or its sealed steps taken), not yet judged by the gate."""
    draft = seen.draft if seen.draft is not None else drafted(seen, wanted, policy, seal)
    if isinstance(draft, str):
        return ClusterOutcome(seen.cluster, seen.url, None, error=draft, basis=seen.basis)
    unread = _unread(draft, wanted, policy) if seen.basis.secrets else ()
    p = replace(draft, health=seen.health, warnings=(*draft.warnings, *(u.warning() for u in unread)))
    p, problems = _with_publications(p, seen, wanted.desired, keep=seal is not None)
    if seal is not None:
        stale = seal.stale(p, seen.basis)
        p = replace(p, refusals=(stale,) if stale else ())
    p = _with_plugins(_with_topics(p, seen, policy.resolve, exact=seal is not None), seen)
    p = _held(
        replace(
            p,
            backfills=backfill.planned(p, seen.basis.live, seen.every, policy.resolve),
            schema=seen.schema.shown,
            warnings=(*p.warnings, *seen.schema.unchecked),
        )
    )
    error = "" if wanted.dry_run else rotation.unread_error(unread)  # a dry run records nothing: loses nothing
    return ClusterOutcome(seen.cluster, seen.url, p, invalid=problems, basis=seen.basis, error=error)


def drafted(seen: Seen, wanted: Wanted, policy: Policy, seal: Seal | None) -> Plan | str:
    """The steps: git's plan with the restarts rotated secrets need, or a sealed plan's own;
    a string says why a sealed plan does not belong to this cluster."""
    basis = seen.basis
    if seal is not None:
        return seal.identity(basis.url, basis.kafka) or _sealed(seal, seen, wanted, policy)
    p = _rotated(_git_plan(seen, wanted, policy), basis, policy)
    unknown = [
        w for n, k in seen.masked.items() for w in rotation.unrecorded(n, wanted.desired[n], k, _before(basis, n))
    ]
    return replace(p, warnings=(*p.warnings, *unknown))


def _git_plan(seen: Seen, wanted: Wanted, policy: Policy) -> Plan:
    basis = seen.basis
    scope = Scope(basis.owned, wanted.held, strangers(seen, wanted.desired, wanted.held))
    return plan(seen.cluster, wanted.desired, basis.live, policy, scope)


def _held(p: Plan) -> Plan:
    """A sink paused because its source's schema broke it (policy `breaking: pause`) stays paused
    while the change stands: resuming it would only fail its task at the next flush."""
    broken = {n: f for f in p.schema if f.code == BREAKS_SINK and f.action == "pause" for n in f.sinks}
    held = [s for s in p.steps if s.action == "state" and s.target_state == "RUNNING" and s.name in broken]
    if not held:
        return p
    why = [f"{s.name} left paused: {broken[s.name].describe()}" for s in held]
    return replace(p, steps=tuple(s for s in p.steps if s not in held), warnings=(*p.warnings, *why))


def _before(basis: Basis, name: str) -> dict[str, str]:
    return dict(basis.secrets.before.get(name, {})) if basis.secrets else {}


def _rotated(p: Plan, basis: Basis, policy: Policy) -> Plan:
    s = basis.secrets
    return rotation.with_restarts(p, s.now, s.before, policy.resolve) if s else p


def _unread(p: Plan, wanted: Wanted, policy: Policy) -> tuple[rotation.Unread, ...]:
    """The secrets of the connectors planned whose file is here and could not be read."""
    planned = {s.name for s in p.steps}
    return rotation.unreadable({n: d for n, d in wanted.desired.items() if n in planned}, policy.resolve)


def _sealed(seal: Seal, seen: Seen, wanted: Wanted, policy: Policy) -> Plan:
    """A sealed plan's steps, as sealed; their changes and effects are judged again from the
    live side (which the preconditions then hold equal to what the plan saw)."""
    live = seen.basis.live
    steps = [_with_changes(s, live, policy) for s in seal.steps(wanted.desired, live)]
    return Plan(
        seen.cluster,
        (
            *(replace(s, effects=effects_of(s, live, policy.resolve)) for s in steps),
            *_left_alone(seen, wanted, policy, {s.name for s in steps}),
        ),
        publications=seal.publications(),
        adopt=seal.adopt(),
    )


def _left_alone(seen: Seen, wanted: Wanted, policy: Policy, written: set[str]) -> tuple[Step, ...]:
    """What git's plan leaves alone (unchanged, protected, unmanaged). A sealed plan holds only
    its writes, so the apply after `yes` (sealed in memory) or of --plan counted 0 of each
    (issue 48); its preconditions hold git, the live configs and the ownership to what was
    reviewed, so git's plan now counts what the review counted."""
    return tuple(s for s in _git_plan(seen, wanted, policy).steps if s.action in LEFT_ALONE and s.name not in written)


def _with_changes(step: Step, live: Mapping[str, Live], policy: Policy) -> Step:
    before = live.get(step.renamed_from or step.name)
    if before is None or step.action == "delete":
        return step
    return replace(step, changes=changes_of(before.config, step.config, policy.ignore_keys))


def _with_publications(
    p: Plan, seen: Seen, desired: Mapping[str, Desired], keep: bool
) -> tuple[Plan, publications.Problems]:
    """The plan with the publication changes its sources need (`keep`: a sealed plan's own)."""
    read = seen.publications
    found = publications.sources(desired, seen.basis.live)
    changes, wrong = publications.upkeep(found, dict(read.state))
    p = replace(p, publications=p.publications if keep else changes, warnings=(*p.warnings, *read.warnings))
    return p, {**read.problems, **wrong}


def _with_topics(p: Plan, seen: Seen, resolve: Resolver, exact: bool) -> Plan:
    """The plan checked against the topics Kafka has and the migrations write (`reconciler.sinktopics`)."""
    t = seen.topics
    if t is None:
        return p
    if t.unchecked:
        return sinktopics.unchecked(p, seen.every, t.unchecked)
    if t.error:
        return replace(p, warnings=(*p.warnings, f"topics not checked: {t.error}"))
    return sinktopics.checked(p, seen.every, t.names, resolve, t.written, exact)


def strangers(seen: Seen, desired: Mapping[str, Desired], held: frozenset[str]) -> tuple[str, ...]:
    """A cluster without `select` whose fleet holds connectors neither in git nor owned (nor
    ksqlDB's) may be shared with another deployment: say so, once, in the plan."""
    owned = seen.basis.owned
    if not seen.shared:
        return ()
    found = sorted(
        n for n in seen.basis.live if n not in desired and n not in held and n not in owned and not is_ksqldb_managed(n)
    )
    if not found:
        return ()
    shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
    return (
        f"cluster {seen.cluster} has no `select` and {len(found)} live connectors are neither in git "
        f"nor owned ({shown}): if another deployment shares this cluster, give this one a select",
    )

"""A sink never starts before its topics exist (pure): which topics a plan's sinks start to read
that Kafka does not have, which source writes each, and what the plan says of the rest.

A sink created first makes the broker auto-create its topics with the broker's defaults, or
waits forever on a typo (strimzi#2752). So: a missing topic that a source writes (a source
step of this plan, or a source live on the cluster, whose topic namespace is a prefix of it) is
needed: created as that source would create it, just before the sink is sent (Debezium
creates a table's topic only at its first record: an empty table's would never come).

A missing topic no source writes holds back only the sink that reads it (issue 48): the rest of
the plan is written, the sink is named with its reason, and the run exits 2. When a ksqlDB
migration writes the topic (`fleet.ksqltopics`), the sink waits for that migration, and the
plan names it: the chart's hooks run the migrations before reconcile. A sealed plan is applied
exactly or not at all, so there such a sink refuses the plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from hephaestus.fleet.ksqltopics import waiting
from hephaestus.fleet.model import Live
from hephaestus.fleet.topics import topics_of
from hephaestus.fleet.writers import TopicWriter, writers_of
from hephaestus.reconciler.plan import Action, Held, Need, Plan
from hephaestus.safety import views
from hephaestus.safety.values import Resolver

CREATION = "topic.creation.default."
STARTS: tuple[Action, ...] = ("create", "update", "rename")


def starting(p: Plan, live: Mapping[str, Live]) -> dict[str, tuple[str, ...]]:
    """Each sink step's named topics it did not read before (a create: all of them)."""
    out = {}
    for s in p.of(*STARTS):
        if views.is_sink(s.config):
            before = live.get(s.renamed_from or s.name)
            old = set(topics_of(before.config)) if before and s.action != "create" else set()
            if new := tuple(t for t in topics_of(s.config) if t not in old):
                out[s.name] = new
    return out


def regexes(p: Plan) -> dict[str, str]:
    """Each sink step's `topics.regex`, when it has one."""
    return {s.name: r for s in p.of(*STARTS) if views.is_sink(s.config) and (r := s.config.get("topics.regex", ""))}


def writers(p: Plan, live: Mapping[str, Live], resolve: Resolver) -> list[TopicWriter]:
    """The plan's sources (as they will be) and the cluster's live ones, with their namespaces."""
    planned = {s.name: s.config for s in p.of(*STARTS) if views.is_source(s.config)}
    running = {n: lv.config for n, lv in live.items() if views.is_source(lv.config) and n not in planned}
    return writers_of({**running, **planned}, resolve)


def checked(
    p: Plan,
    live: Mapping[str, Live],
    existing: frozenset[str],
    resolve: Resolver,
    migrations: Mapping[str, str] | None = None,
    exact: bool = False,
) -> Plan:
    """The plan with its sinks' needs, each sink reading a topic no source writes held (`exact`,
    a sealed plan: refused), and a warning per `topics.regex` sink that matches no topic yet.
    `migrations`: {topic: the ksqlDB migration that writes it}."""
    sources = writers(p, live, resolve)
    needs: list[Need] = []
    held: list[Held] = []
    for sink, topics in sorted(starting(p, live).items()):
        missing = [t for t in topics if t not in existing]
        found = {t: next((w for w in sources if w.writes(t)), None) for t in missing}
        needs += _needs(sink, found)
        if orphans := [t for t, w in found.items() if w is None]:
            held.append(hold(sink, orphans, migrations or {}))
    warnings = [unmatched(s, r) for s, r in sorted(regexes(p).items()) if not _matches(r, existing)]
    p = replace(p, needs=tuple(needs), warnings=(*p.warnings, *warnings))
    if exact:
        return replace(p, refusals=(*p.refusals, *(f"sink {h.name} {h.why}" for h in held)))
    return held_back(p, tuple(held))


def hold(sink: str, orphans: Sequence[str], migrations: Mapping[str, str]) -> Held:
    """Why `sink` waits: the migration that writes all its missing topics, or what nothing writes."""
    waits = waiting(orphans, migrations)
    if len(waits) == len(orphans):
        by = sorted(set(waits.values()))
        why = (
            f"reads {', '.join(orphans)}, which ksqlDB migration {', '.join(by)} writes and which does not exist "
            f"yet: it waits for that migration (`hephaestus ksql apply`; the chart's hooks run the migrations "
            f"before reconcile), then the next reconcile creates it"
        )
        return Held(sink, why, by[0])
    return Held(sink, unwritten([t for t in orphans if t not in waits]))


def held_back(p: Plan, held: tuple[Held, ...]) -> Plan:
    """The plan without the held sinks' steps and needs: nothing else depends on a sink."""
    names = {h.name for h in held}
    if not names:
        return p
    steps = tuple(s for s in p.steps if s.name not in names)
    needs = tuple(n for n in p.needs if n.sink not in names)
    return replace(p, steps=steps, needs=needs, held=(*p.held, *held))


def _needs(sink: str, found: Mapping[str, TopicWriter | None]) -> list[Need]:
    by: dict[str, list[str]] = {}
    for topic, w in found.items():
        if w is not None:
            by.setdefault(w.name, []).append(topic)
    configs = {w.name: w.config for w in found.values() if w is not None}
    return [need(sink, tuple(ts), name, configs[name]) for name, ts in sorted(by.items())]


def need(sink: str, topics: tuple[str, ...], source: str, config: Mapping[str, str]) -> Need:
    """As the source would create them: its topic.creation.default.* settings (absent or -1,
    or not a number: the broker's default)."""
    rest = {k[len(CREATION) :]: v for k, v in config.items() if k.startswith(CREATION)}
    partitions, replication = _count(rest.pop("partitions", "")), _count(rest.pop("replication.factor", ""))
    kept = tuple(sorted((k, v) for k, v in rest.items() if k not in ("include", "exclude") and v.strip()))
    return Need(sink, topics=topics, source=source, partitions=partitions, replication=replication, config=kept)


def _count(raw: str) -> int:
    try:
        return int(raw.strip()) if int(raw.strip()) > 0 else -1
    except ValueError:
        return -1


def _matches(regex: str, existing: frozenset[str]) -> bool:
    try:
        pattern = re.compile(regex)
    except re.error:
        return True  # Java syntax Python cannot read: nothing said rather than something wrong
    return any(pattern.fullmatch(t) for t in existing)


def refusal(sink: str, topics: Sequence[str]) -> str:
    return f"sink {sink} {unwritten(topics)}"


def unwritten(topics: Sequence[str]) -> str:
    return (
        f"reads topics that do not exist and that no source or ksqlDB migration writes: "
        f"{', '.join(topics)}: create them, or deploy what writes them first"
    )


def unmatched(sink: str, regex: str) -> str:
    return f"sink {sink}: its topics.regex {regex!r} matches no existing topic yet (it reads nothing until one does)"


def unchecked(p: Plan, live: Mapping[str, Live], why: str) -> Plan:
    """The plan with one warning when it starts sinks whose topics could not be checked."""
    sinks = sorted({*starting(p, live), *regexes(p)})
    if not sinks:
        return p
    return replace(p, warnings=(*p.warnings, f"sinks {', '.join(sinks)}: their topics were not checked: {why}"))

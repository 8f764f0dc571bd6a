"""Fleet-wide rules over every cluster of the project, live and planned (pure).

A change is judged against the whole fleet it lands in, not only against the connector it
writes:

- no two sources share a replication slot on one server (Debezium's default `debezium` counts);
- no two sources write one topic namespace (the topic prefix, as routed) on one Kafka cluster;
- no two sinks write one target table from the same topic, or with different key semantics
  (a fan-in of different topics with the same semantics, as the org fan-out generates into a
  shared service database, is a table's normal shape and passes);
- a sink that takes over a table another sink wrote (that one deleted or renamed away in the
  same plan) with other key semantics changes the table's keys.

Identity of values: resolved where the secrets file is readable here, else as written (one
placeholder resolves to one value; two different placeholders are taken as different). Only
the claims a change makes are checked: a conflict already live is not this run's doing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from hephaestus.safety import views
from hephaestus.safety.effects import Effect
from hephaestus.safety.values import Ref, Resolver, Value, same

Key = tuple[str, str]  # (cluster, connector)


@dataclass(frozen=True)
class Member:
    """A connector of the fleet: live on a cluster, or declared in git (planned)."""

    cluster: str
    name: str
    config: Mapping[str, str] = field(hash=False)
    kafka: str | None = None  # the Kafka cluster behind its Connect (None: unknown, may be any)

    @property
    def key(self) -> Key:
        return (self.cluster, self.name)


@dataclass(frozen=True)
class FleetChange:
    """What one write does to the fleet: `config` None for a delete."""

    cluster: str
    name: str
    config: Mapping[str, str] | None = field(hash=False)
    renamed_from: str = ""

    @property
    def key(self) -> Key:
        return (self.cluster, self.name)


def after(before: Iterable[Member], changes: Sequence[FleetChange], kafka: Mapping[str, str | None]) -> list[Member]:
    """The fleet once the changes are made."""
    gone = {c.key for c in changes} | {(c.cluster, c.renamed_from) for c in changes if c.renamed_from}
    kept = [m for m in before if m.key not in gone]
    return kept + [Member(c.cluster, c.name, c.config, kafka.get(c.cluster)) for c in changes if c.config is not None]


@dataclass(frozen=True)
class SourceClaim:
    slot: tuple[Value | None, ...]  # server parts, slot name
    namespace: str | None


@dataclass(frozen=True)
class SinkClaim:
    database: Value | None
    semantics: tuple[object, ...]
    tables: Mapping[str, str | None] = field(hash=False)  # topic read -> table written
    regex: str | None
    config: Mapping[str, str] = field(hash=False)
    view: views.SinkView = field(hash=False)

    def table_for(self, topic: str) -> str | None:
        if topic in self.tables:
            return self.tables[topic]
        if self.regex is not None and views.regex_reads(self.regex, topic):
            return views.tables(self.config, _reading(self.view, topic)).get(topic)
        return None


Claims = SourceClaim | SinkClaim | None


def claims(config: Mapping[str, str], resolve: Resolver) -> Claims:
    if views.is_source(config):
        s = views.source(config, resolve)
        return SourceClaim((*s.server, s.slot), views.namespace(config, s))
    if views.is_sink(config):
        k = views.sink(config, resolve)
        regex = k.regex.text if isinstance(k.regex, Ref) else k.regex
        # Every sink of a database writes the probe table, each only its own rows (keyed by its name).
        tables = {t: table for t, table in views.tables(config, k).items() if not views.is_probe(t, table)}
        return SinkClaim(k.database, k.semantics(), tables, regex, config, k)
    return None


def _reading(view: views.SinkView, topic: str) -> views.SinkView:
    return replace(view, topics=frozenset({topic}))


def judge(
    before: Sequence[Member], changes: Sequence[FleetChange], resolve: Resolver, kafka: Mapping[str, str | None]
) -> dict[Key, tuple[Effect, ...]]:
    """The fleet effects of each changed connector: second writers, a table's keys taken over."""
    now = after(before, changes, kafka)
    was = {m.key: m for m in before}
    remaining = {m.key for m in now}
    out: dict[Key, tuple[Effect, ...]] = {}
    for change in changes:
        if change.config is None:
            continue
        m = next(x for x in now if x.key == change.key)
        old = was.get(change.key) or was.get((change.cluster, change.renamed_from))
        mine = claims(m.config, resolve)
        new = _added(mine, claims(old.config, resolve) if old else None)
        gone = [b for b in before if b.key not in remaining and b.key != (change.cluster, change.renamed_from)]
        found = (*_second_writers(m, new, now, resolve), *_takeover(mine, gone, resolve))
        if found:
            out[change.key] = found
    return out


def _added(mine: Claims, old: Claims) -> Claims:
    """The claims a change adds: one it already held live is not judged again."""
    if isinstance(mine, SourceClaim) and isinstance(old, SourceClaim):
        slot = mine.slot if not _same_slot(old.slot, mine.slot) else ()
        return SourceClaim(slot, None if old.namespace == mine.namespace else mine.namespace)
    if (
        isinstance(mine, SinkClaim)
        and isinstance(old, SinkClaim)
        and (old.database, old.semantics) == (mine.database, mine.semantics)
    ):
        fresh = {t: x for t, x in mine.tables.items() if old.tables.get(t) != x}
        regex = None if old.regex == mine.regex else mine.regex
        return SinkClaim(mine.database, mine.semantics, fresh, regex, mine.config, mine.view)
    return mine


def _same_slot(a: tuple[Value | None, ...], b: tuple[Value | None, ...]) -> bool:
    return bool(a) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))


def _second_writers(m: Member, new: Claims, fleet: Sequence[Member], resolve: Resolver) -> list[Effect]:
    found: list[Effect] = []
    for other in fleet:
        if other.key == m.key:
            continue
        theirs = claims(other.config, resolve)
        where = f"{other.cluster}/{other.name}"
        if isinstance(new, SourceClaim) and isinstance(theirs, SourceClaim):
            found += _source_clash(new, theirs, where, _same_kafka(m, other))
        elif isinstance(new, SinkClaim) and isinstance(theirs, SinkClaim):
            found += _table_clash(new, theirs, where)
    return found


def _source_clash(new: SourceClaim, theirs: SourceClaim, where: str, same_kafka: bool) -> list[Effect]:
    found = []
    if _same_slot(new.slot, theirs.slot):
        name = new.slot[-1]
        found.append(_writer(f"replication slot {getattr(name, 'text', name)} is also {where}'s"))
    if new.namespace and new.namespace == theirs.namespace and same_kafka:
        found.append(_writer(f"topics {new.namespace}* are also written by {where}"))
    return found


def _same_kafka(a: Member, b: Member) -> bool:
    return a.kafka is None or b.kafka is None or a.kafka == b.kafka


def _writer(why: str) -> Effect:
    return Effect("second-writer", why, invariant=True)


def _table_clash(new: SinkClaim, theirs: SinkClaim, where: str) -> list[Effect]:
    if not same(new.database, theirs.database):
        return []
    for topic, table in _pairs(new, theirs):
        if table is None:
            continue
        if theirs.table_for(topic) == table:
            return [_writer(f"table {table} is also written by {where}, from the same topic {topic}")]
        if new.semantics != theirs.semantics and table in theirs.tables.values():
            return [_writer(f"table {table} is also written by {where}, with other key semantics")]
    if new.regex is not None and new.regex == theirs.regex and new.view.table_format == theirs.view.table_format:
        return [_writer(f"topics.regex {new.regex} is also read into the same tables by {where}")]
    return []


def _pairs(new: SinkClaim, theirs: SinkClaim) -> list[tuple[str, str | None]]:
    """(topic, table) the new claims write: its topics, and those of the other sink its regex reads."""
    found = sorted(new.tables.items())
    if new.regex is not None:
        found += [(t, new.table_for(t)) for t in sorted(theirs.tables) if views.regex_reads(new.regex, t)]
    return found


def _takeover(mine: Claims, gone: Sequence[Member], resolve: Resolver) -> list[Effect]:
    """A sink writing a table that a sink leaving in this plan wrote, with other key semantics."""
    if not isinstance(mine, SinkClaim):
        return []
    written = {x for x in mine.tables.values() if x is not None}
    for old in gone:
        theirs = claims(old.config, resolve)
        if not isinstance(theirs, SinkClaim) or not same(theirs.database, mine.database):
            continue
        if written & set(theirs.tables.values()) and theirs.semantics != mine.semantics:
            return [Effect("keys-changed", f"takes over the table {old.name} wrote, with other key semantics")]
    return []

"""Which tables a plan back-fills once its writes are done (pure; issue 45): an incremental
snapshot re-reads them through a source that already captures them, so that

- the rows written while a table was out of its publication arrive (the publication change
  that re-adds it is in the same plan), and
- rows written before a sink's field list widened carry the new columns too.

A table a source starts to capture is not back-filled here: `--send-incremental-snapshot` says
whether it is. One signal per source database reaches every source reading it, so each table
is back-filled once, through the first source (by name) that captures it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

from hephaestus.errors import HephaestusError
from hephaestus.fleet.model import Live
from hephaestus.fleet.sources import SourceRef, captured, source_ref
from hephaestus.fleet.topics import topics_of
from hephaestus.fleet.writers import TopicWriter
from hephaestus.reconciler import sinktopics
from hephaestus.reconciler.plan import Backfill, Plan, Step
from hephaestus.safety import effects, views
from hephaestus.safety.effects import Effect
from hephaestus.safety.values import Resolver

FIELDS = "field.include.list"


def planned(p: Plan, live: Mapping[str, Live], every: Mapping[str, Live], resolve: Resolver) -> tuple[Backfill, ...]:
    """The plan's back-fills, merged per source: (source, tables, why) in name order, each with
    its effects on the sinks that read those tables."""
    writers = {w.name: w for w in sinktopics.writers(p, every, resolve)}
    merged: dict[str, tuple[Backfill, list[str], list[str]]] = {}
    for b in (*_gaps(p, live), *_widened(p, every, list(writers.values()))):
        _, tables, whys = merged.setdefault(b.source, (b, [], []))
        tables += [t for t in b.tables if t not in tables]
        whys += [b.why] if b.why not in whys else []
    found = [Backfill(b.ref, tuple(t), "; ".join(w)) for _, (b, t, w) in sorted(merged.items())]
    return tuple(replace(b, effects=_effects(b, writers.get(b.source), p, every, resolve)) for b in found)


def _effects(
    b: Backfill, w: TopicWriter | None, p: Plan, every: Mapping[str, Live], resolve: Resolver
) -> tuple[Effect, ...]:
    """Every sink (as this plan leaves it) that reads a back-filled table's topic receives its rows again."""
    if w is None:
        return ()
    topics = {w.namespace + t.replace(".", w.delimiter) for t in b.tables}
    configs = {n: lv.config for n, lv in every.items()} | {s.name: s.config for s in p.of(*sinktopics.STARTS)}
    readers = {n: c for n, c in configs.items() if views.is_sink(c) and topics & set(topics_of(c))}
    return effects.of_backfill(readers, resolve)


def _gaps(p: Plan, live: Mapping[str, Live]) -> Iterator[Backfill]:
    """A table the publication gains back that a live source already captured: out of the
    publication, its changes were never sent."""
    for change in p.publications:
        for name in sorted(change.connectors):
            before = live.get(name)
            # The probe's rows are not data: a gap in them is the probe's to show, not to re-send.
            gap = tuple(
                t
                for t in change.add
                if before is not None and t in captured(before.config) and not views.probe_named(t)
            )
            if gap and (ref := _ref(name, before)) is not None:
                why = f"re-added to publication {change.publication}: rows written while it was out"
                yield Backfill(ref, gap, why)
                break  # one signal reaches every source of the database


def _widened(p: Plan, every: Mapping[str, Live], writers: list[TopicWriter]) -> Iterator[Backfill]:
    """A sink update whose field list gains columns: rows written before carry them only once
    re-read, through the source that writes the sink's topics."""
    for step in p.of("update"):
        gained = _gained(step)
        if not gained or not views.is_sink(step.config):
            continue
        for topic in (t for t in topics_of(step.config) if not views.probe_named(t)):
            w = next((w for w in writers if w.writes(topic)), None)
            if w is not None and (ref := _ref(w.name, every.get(w.name))) is not None:
                table = topic[len(w.namespace) :].replace(w.delimiter, ".")
                yield Backfill(ref, (table,), f"{step.name} now writes {', '.join(gained)}")


def _gained(step: Step) -> tuple[str, ...]:
    change = next((c for c in step.changes if c.key == FIELDS), None)
    if change is None or not change.before:  # no list before: every field was written
        return ()
    before = {f.strip() for f in change.before.split(",")}
    gained = (f.strip() for f in (change.after or "").split(",") if f.strip() and f.strip() not in before)
    return tuple(f for f in gained if not views.probe_field(f))  # the probe's: no row to re-read


def _ref(name: str, source: Live | None) -> SourceRef | None:
    if source is None:
        return None
    try:
        return source_ref(name, source.config)
    except HephaestusError:  # a source whose database cannot be told: nothing to signal through
        return None

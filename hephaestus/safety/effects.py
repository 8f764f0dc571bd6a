"""What a step does to data (pure): every kind of write states its effects, computed from the
resolved configs (`safety.views`: the plugins' defaults and enum parsing; placeholders "could
be anything" unless resolved here), never from key names alone.

The kinds, and whether one needs `--allow-destructive` (the gate, `safety.gate`, decides):
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hephaestus.classes import PIN_KEYS
from hephaestus.keyrenames import PIN, aligned, misnamed
from hephaestus.safety import transforms, views
from hephaestus.safety.values import NO_RESOLVER, Resolver, same

# code -> (what it means for data, destructive). A destructive effect needs --allow-destructive
# (all, or its code); the others are stated in the plan and go as the command was asked.
KINDS: dict[str, tuple[str, bool]] = {
    "resnapshot": ("the source reads its tables again: every row is emitted again", True),
    "slot-dropped": ("a replication slot is dropped: changes not yet read are lost", True),
    "slot-changed": ("the source reads another slot, server or plugin: changes in between are lost", True),
    "topics-renamed": ("the source writes other topics: consumers of the old ones stop receiving", True),
    "topics-stopped": ("topics are no longer produced or no longer read: their rows stop arriving", True),
    "capture-dropped": ("tables or columns leave capture or replication", True),
    "records-filtered": ("records are now dropped (a filter, skipped operations, errors with no DLQ)", True),
    "transform-changed": ("a transform this tool does not know changed: records may be routed or dropped", True),
    "target-changed": ("the sink writes another database or table: rows so far stay in the old one", True),
    "keys-changed": ("record keys or how rows are matched change: duplicates or overwrites", True),
    "deletes-changed": ("deletes (or truncates) start or stop reaching the target", True),
    "offsets-lost": ("the stored position is not carried over: records are skipped or read again", True),
    "offsets-reset": ("offsets are deleted: everything still held is read again", True),
    "offsets-rewound": ("offsets move back: records are delivered again", True),
    "duplicates": ("records are delivered again to an insert-mode target: rows are written twice", True),
    "records-deleted": ("records are deleted from a topic", True),
    "rows-deleted": ("rows are deleted from a target table (accuracy --delete-extra)", True),
    "redelivery": ("records are delivered again; an upsert rewrites the same rows", False),
    "replication-stopped": ("a sink is deleted: its table stops receiving (the delete policy applies)", False),
    # A source's schema drifted from what its sinks write (hephaestus.drift): no write causes
    # these, a DBA's DDL does; they are judged and shown in the same words.
    "column-not-replicated": ("a source column reaches no sink: its values stay NULL or absent there", False),
    "sink-write-fails": ("a sink cannot write what the source now sends: its task fails at the next flush", True),
    "second-writer": ("two connectors would own one slot, topic prefix or target table", True),
    "not-owned": ("a rename would overwrite a connector this deployment does not own", True),
    "plugin-upgrade": ("the connector or a converter runs another version of its plugin (KIP-891)", False),
    "plugin-missing": ("a pinned plugin version some worker does not hold: its tasks there cannot start", True),
    "move-unsafe": ("a move between clusters whose offsets would not mean the same on both", True),
}
__doc__ = (
    (__doc__ or "") + "\n" + "\n".join(f"- `{c}`: {w}{' (destructive)' if d else ''}" for c, (w, d) in KINDS.items())
)


@dataclass(frozen=True)
class Effect:
    code: str
    why: str  # the keys and values that make it so, for the plan
    invariant: bool = False  # a fleet rule: refused whatever is allowed

    @property
    def destructive(self) -> bool:
        return self.invariant or KINDS[self.code][1]

    def describe(self) -> str:
        return f"{self.code}: {self.why}"

    def marked(self) -> str:
        """As a plan lists it: `!` destructive, `·` stated."""
        return f"{'!' if self.destructive else '·'} {self.describe()}"


Config = Mapping[str, str]
Sigs = Mapping[transforms.Category, transforms.Signature]


def of_update(before: Config, after: Config, resolve: Resolver = NO_RESOLVER, running: str = "") -> tuple[Effect, ...]:
    """A config write (PUT): what changed, and what the restart it causes does. `running`: the
    version its plugin runs now, when Connect says (4.1+). A key the new pin reads under another
    name (`hephaestus.keyrenames`) is compared under that name: a rename is no change of setting."""
    return _of_update(aligned(before, after), after, resolve) + of_pins(before, after, running)


def of_pins(before: Config, after: Config, running: str = "") -> tuple[Effect, ...]:
    """A plugin's version pinned, moved or unpinned (KIP-891): stated; a rollout's canary,
    waves and health gates judge it like any write, and a rollback puts the old pin back."""
    moved = [
        (k, (before.get(k) or "").strip(), (after.get(k) or "").strip())
        for k in PIN_KEYS
        if (before.get(k) or "").strip() != (after.get(k) or "").strip()
    ]
    renamed = [f"{m.key} → {m.wanted}" for m in misnamed({**before, PIN: after.get(PIN, "")})]
    said = {PIN: (f" (runs {running})" if running else "") + (f"; renamed: {', '.join(renamed)}" if renamed else "")}
    return tuple(
        Effect("plugin-upgrade", f"{k}: {b or 'latest'} → {a or 'latest'}{said.get(k, '')}") for k, b, a in moved
    )


def _of_update(before: Config, after: Config, resolve: Resolver) -> tuple[Effect, ...]:
    if views.is_source(before) and views.is_source(after):
        b, a = views.source(before, resolve), views.source(after, resolve)
        return (*_source_change(before, after, b, a), *_restart(b, a))
    if views.is_sink(before) and views.is_sink(after):
        return tuple(_sink_change(before, after, views.sink(before, resolve), views.sink(after, resolve)))
    if before.get("connector.class", "").strip() != after.get("connector.class", "").strip():
        return (Effect("offsets-lost", "connector.class changes: offsets and semantics do not carry over"),)
    return ()  # a connector class this tool does not know: a restart, nothing it can judge


def of_rename(before: Config, after: Config, resolve: Resolver = NO_RESOLVER) -> tuple[Effect, ...]:
    """Stop the old one, carry its offsets to the new name, start it: an update's effects."""
    return of_update(before, after, resolve)


def of_state(config: Config, before: str, after: str, resolve: Resolver = NO_RESOLVER) -> tuple[Effect, ...]:
    """pause / resume / stop: a stop shuts the tasks down cleanly, a start from STOPPED runs them."""
    if not views.is_source(config):
        return ()
    s = views.source(config, resolve)
    if after == "STOPPED":
        return tuple(stop_effects(s))
    return tuple(start_effects(s)) if before == "STOPPED" else ()


def of_delete(config: Config) -> tuple[Effect, ...]:
    if views.is_sink(config):
        return (Effect("replication-stopped", "deleted: its table keeps its rows and stops receiving"),)
    return ()  # never planned: sources and unknown classes are not deleted


def of_offsets(
    config: Config, action: str, current: Mapping[Any, Any], wanted: Mapping[Any, Any], resolve: Resolver = NO_RESOLVER
) -> tuple[Effect, ...]:
    """offsets reset / set: stop → reset or alter → back. `current`/`wanted`: position by partition
    (a sink's are Kafka offsets; a source's are opaque)."""
    if views.is_source(config):
        s = views.source(config, resolve)  # stopped, moved, started again
        return (*stop_effects(s), *_source_offsets(s, action), *start_effects(s))
    again = again_effect(config, resolve)
    if action == "reset":
        return (Effect("offsets-reset", "every stored offset is deleted"), again)
    return _sink_moves(current, wanted, again)


def _source_offsets(s: views.SourceView, action: str) -> tuple[Effect, ...]:
    if action == "reset":
        found = [Effect("offsets-reset", "the source forgets its position in the slot")]
        if views.snapshots_without_offsets(s):
            found.append(Effect("resnapshot", f"snapshot.mode={s.snapshot} snapshots a connector with no offsets"))
        return tuple(found)
    return (Effect("offsets-lost", "a source's position is moved: WAL is skipped or replayed, if the slot holds it"),)


def _sink_moves(current: Mapping[Any, Any], wanted: Mapping[Any, Any], again: Effect) -> tuple[Effect, ...]:
    back = sorted(str(p) for p, o in wanted.items() if p in current and number(o) < number(current[p]))
    ahead = sorted(str(p) for p, o in wanted.items() if p not in current or number(o) > number(current[p]))
    found = []
    if back:
        found += [Effect("offsets-rewound", f"moved back in {few(back)}"), again]
    if ahead:
        found.append(Effect("offsets-lost", f"moved ahead in {few(ahead)}: the records in between are skipped"))
    return tuple(found)


def number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")  # compares false both ways: neither back nor ahead by itself


def of_replay(sink_config: Config, resolve: Resolver = NO_RESOLVER) -> tuple[Effect, ...]:
    """A DLQ replay sends records back to the topics the sink reads."""
    return (again_effect(sink_config, resolve),)


def of_backfill(sinks: Mapping[str, Config], resolve: Resolver = NO_RESOLVER) -> tuple[Effect, ...]:
    """An incremental snapshot (a plan's back-fill) emits every row of its tables again: each
    sink reading them gets them again, upserted or, into an insert-mode table, written twice."""
    return tuple(
        Effect(e.code, f"{name}: {e.why}")
        for name, config in sorted(sinks.items())
        for e in [again_effect(config, resolve)]
    )


def of_purge() -> tuple[Effect, ...]:
    return (Effect("records-deleted", "parked records below the offset are deleted from the dead-letter queue"),)


def of_slot_drop(slot: str) -> tuple[Effect, ...]:
    return (Effect("slot-dropped", f"slot {slot} is dropped with the WAL it retains"),)


def of_publication_drop(tables: Sequence[str]) -> tuple[Effect, ...]:
    """Tables leaving a publication stop streaming; the probe's table holds no data row."""
    data = [t for t in tables if not views.probe_named(t)]
    if not data:
        return ()
    return (Effect("capture-dropped", f"{few(data)} leave the publication: their changes stop streaming"),)


def of_restart(config: Config, resolve: Resolver = NO_RESOLVER) -> tuple[Effect, ...]:
    """heal's restart of FAILED tasks: a failed task starts again (its slot was not closed cleanly)."""
    return tuple(start_effects(views.source(config, resolve))) if views.is_source(config) else ()


def again_effect(config: Config, resolve: Resolver) -> Effect:
    s = views.sink(config, resolve) if views.is_sink(config) else None
    if s is not None and s.insert_mode in ("insert", None):
        return Effect(
            "duplicates", f"insert.mode={s.insert_mode or 'unknown'}: each record delivered again is a new row"
        )
    return Effect("redelivery", "records are delivered again and upserted onto the same rows")


# --- sources ----------------------------------------------------------------------------


def _restart(b: views.SourceView, a: views.SourceView) -> list[Effect]:
    """A config write stops the tasks cleanly (old config) and starts them (new config)."""
    return [*stop_effects(b), *start_effects(a)]


def stop_effects(s: views.SourceView) -> list[Effect]:
    if s.drop_on_stop is False:
        return []
    value = "true" if s.drop_on_stop else "unknown here"
    return [Effect("slot-dropped", f"slot.drop.on.stop={value}: stopping the tasks drops the slot")]


def start_effects(s: views.SourceView) -> list[Effect]:
    if views.snapshots_on_start(s):
        return [Effect("resnapshot", f"snapshot.mode={s.snapshot or 'unknown here'} reads every table on each start")]
    return []


def _source_change(before: Config, after: Config, b: views.SourceView, a: views.SourceView) -> list[Effect]:
    found = _slot(b, a) + _topics(before, after, b, a)
    found += _capture(b.capture, a.capture, b.exclude, a.exclude, "captured")
    found += _changed("keys-changed", "message.key.columns", same(b.key_columns, a.key_columns))
    found += _skipped(b, a) + _initial_only(b, a)
    return found + _transforms(b.transforms, a.transforms, "topics-renamed")


def _slot(b: views.SourceView, a: views.SourceView) -> list[Effect]:
    found = []
    if not all(same(x, y) for x, y in zip(b.server, a.server, strict=True)):
        found.append(Effect("slot-changed", "database.hostname/port/dbname: another server or database"))
    if not same(b.slot, a.slot):
        found.append(Effect("slot-changed", "slot.name: a new slot starts at the current WAL position"))
    if b.plugin != a.plugin:
        found.append(Effect("slot-changed", f"plugin.name {b.plugin} -> {a.plugin}: the slot decodes for another"))
    if not same(b.publication, a.publication):
        found.append(Effect("capture-dropped", "publication.name: tables the new publication lacks stop streaming"))
    return found


def _topics(before: Config, after: Config, b: views.SourceView, a: views.SourceView) -> list[Effect]:
    if not same(b.prefix, a.prefix):
        found = [
            Effect("topics-renamed", "topic.prefix: every topic gets a new name"),
            Effect("offsets-lost", "topic.prefix: offsets are stored under the prefix and are not found"),
        ]
        if views.snapshots_without_offsets(a):
            found.append(Effect("resnapshot", f"snapshot.mode={a.snapshot} snapshots a source with no offsets"))
        return found
    moved = b.naming != a.naming or views.namespace(before, b) != views.namespace(after, a)
    routers = b.transforms.get("router") != a.transforms.get("router")
    return (
        [Effect("topics-renamed", "topic naming or a router transform: topics get new names")]
        if moved or routers
        else []
    )


def _skipped(b: views.SourceView, a: views.SourceView) -> list[Effect]:
    if a.skipped is not None and b.skipped is not None and a.skipped <= b.skipped:
        return []
    return [Effect("records-filtered", "skipped.operations: more change types are skipped")]


def _initial_only(b: views.SourceView, a: views.SourceView) -> list[Effect]:
    if a.snapshot == "initial_only" and b.snapshot != "initial_only":
        return [Effect("topics-stopped", "snapshot.mode=initial_only does not stream changes after its snapshot")]
    return []


# --- sinks ------------------------------------------------------------------------------


def _sink_change(before: Config, after: Config, b: views.SinkView, a: views.SinkView) -> list[Effect]:
    keys = (b.pk_mode, b.pk_fields) == (a.pk_mode, a.pk_fields)
    writes = (b.deletes, b.truncates) == (a.deletes, a.truncates)
    dropping = a.drops_failures is False or b.drops_failures is not False
    found = _changed("target-changed", "connection.url: another database", same(b.database, a.database))
    found += _tables(before, after, b, a) + _read(b, a)
    found += _changed("keys-changed", "primary-key mode or fields", keys)
    found += _changed("keys-changed", f"insert.mode {b.insert_mode} -> {a.insert_mode}", b.insert_mode == a.insert_mode)
    found += _changed("deletes-changed", "delete.enabled or truncate.enabled", writes)
    found += _capture(b.fields[:1], a.fields[:1], b.fields[1:], a.fields[1:], "written")
    found += _changed("records-filtered", "errors.tolerance=all with no dead-letter queue", dropping)
    found += _changed("offsets-lost", "consumer.override.group.id: another consumer group", same(b.group, a.group))
    return found + _transforms(*_sink_transforms(before, after, b, a), "target-changed")


def _sink_transforms(before: Config, after: Config, b: views.SinkView, a: views.SinkView) -> tuple[Sigs, Sigs]:
    """The transforms as the records the sink read before meet them (a transform only another
    topic's records meet, as the freshness probe's, changes nothing for them); routers left to
    `_tables` when it can tell, for each of those topics, the table it lands in."""
    if b.topics is None or b.regex is not None or a.regex is not None:
        return b.transforms, a.transforms
    data = views.without_probe(b.topics) or frozenset()
    old, new = transforms.reading(before, data), transforms.reading(after, data)
    if _resolved(before, after, b, a) and not (_qualified(before) or _qualified(after)):
        old.pop("router", None)
        new.pop("router", None)
    return old, new


def _qualified(config: Config) -> bool:
    """A field list naming a (routed) topic's field other than the probe's: a router renaming
    that topic would change which fields are written, which the tables alone do not show."""
    lists = (config.get(k, "") for k in ("field.include.list", "field.exclude.list", "fields.whitelist"))
    names = (f.strip() for text in lists for f in text.split(","))
    return any(":" in f and not views.probe_field(f) for f in names)


def _resolved(before: Config, after: Config, b: views.SinkView, a: views.SinkView) -> bool:
    """Every topic read before lands in a table that can be told, before and after."""
    old, new = views.tables(before, b), views.tables(after, a)
    read = views.without_probe(b.topics) or frozenset()
    return bool(read) and all(old.get(t) is not None and new.get(t) is not None for t in read)


def _tables(before: Config, after: Config, b: views.SinkView, a: views.SinkView) -> list[Effect]:
    old, new = views.tables(before, b), views.tables(after, a)
    moved = sorted(t for t in old.keys() & new.keys() if old[t] != new[t] or new[t] is None)
    told = b.table_format == a.table_format or (b.regex is None and _resolved(before, after, b, a))
    if not moved and told and (b.regex is None or same(b.regex, a.regex)):
        return []
    shown = ", ".join(f"{t} -> {new.get(t) or 'unknown'}" for t in moved[:3]) or "collection.name.format"
    return [Effect("target-changed", f"another target table ({shown})")]


def _read(b: views.SinkView, a: views.SinkView) -> list[Effect]:
    if b.topics is None or a.topics is None:
        return [Effect("topics-stopped", "topics: not known here")] if b.topics != a.topics else []
    lost = sorted(t for t in b.topics - a.topics if not views.probe_named(t))  # the probe's: no data
    found = [Effect("topics-stopped", f"stops reading {few(lost)}")] if lost and a.regex is None else []
    if lost and a.regex is not None:
        found.append(Effect("topics-stopped", f"topics.regex replaces topics ({few(lost)}): could not tell"))
    if b.regex is not None and not same(b.regex, a.regex):
        found.append(Effect("topics-stopped", "topics.regex: topics it no longer matches stop being read"))
    return found


# --- shared -----------------------------------------------------------------------------


def _changed(code: str, why: str, unchanged: bool) -> list[Effect]:
    return [] if unchanged else [Effect(code, why)]


Lists = tuple[tuple[str, frozenset[str] | None], ...]


def _capture(inc_b: Lists, inc_a: Lists, exc_b: Lists, exc_a: Lists, what: str) -> list[Effect]:
    """Include lists that narrow (empty means everything) or exclude lists that grow."""
    keys = [k for (k, b), (_, a) in zip(inc_b, inc_a, strict=True) if _narrows(b, a)]
    keys += [k for (k, b), (_, a) in zip(exc_b, exc_a, strict=True) if b != a and (a is None or b is None or a - b)]
    return [Effect("capture-dropped", f"{', '.join(keys)}: fewer {what}")] if keys else []


def _narrows(before: frozenset[str] | None, after: frozenset[str] | None) -> bool:
    if before == after:
        return False
    if before is None or after is None:
        return True  # a placeholder: could be anything
    return bool(after) and (not before or bool(before - after))


_TRANSFORM_EFFECTS = {
    "filter": "records-filtered",
    "key": "keys-changed",
    "fields": "capture-dropped",
    "deletes": "deletes-changed",
    "unknown": "transform-changed",
}


# Removing every filter (or every field-dropping transform) lets more through: no data is lost.
_WIDENED_WHEN_GONE = frozenset({"filter", "fields"})


def _transforms(before: Mapping[Any, Any], after: Mapping[Any, Any], router: str) -> list[Effect]:
    codes = {**_TRANSFORM_EFFECTS, "router": router}
    changed = [
        c
        for c in codes
        if before.get(c) != after.get(c)
        and not (c == "router" and router == "topics-renamed")
        and not (c in _WIDENED_WHEN_GONE and c not in after)
    ]
    return [Effect(codes[c], f"a {c} transform changed (transforms.*)") for c in changed]


def few(names: Sequence[str], shown: int = 3) -> str:
    """The first few names, and how many more: a message stays one readable line."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")

"""Every effect's words, to the letter: what an operator reads in a plan, a refusal, an audit
line (pinned; mutation-tested core)."""

from __future__ import annotations

import pytest

from hephaestus.safety import effects
from tests.unit.test_core_effects import SNK, SRC

UPDATES = [
    (SRC, {"snapshot.mode": "always "}, ["resnapshot: snapshot.mode=always reads every table on each start"]),
    (
        SRC,
        {"snapshot.mode": "${file:/x:mode}"},
        ["resnapshot: snapshot.mode=unknown here reads every table on each start"],
    ),
    (
        SRC,
        {"snapshot.mode": "initial_only"},
        ["topics-stopped: snapshot.mode=initial_only does not stream changes after its snapshot"],
    ),
    (SRC, {"slot.name": "s2"}, ["slot-changed: slot.name: a new slot starts at the current WAL position"]),
    (
        SRC,
        {"plugin.name": "decoderbufs"},
        ["slot-changed: plugin.name pgoutput -> decoderbufs: the slot decodes for another"],
    ),
    (SRC, {"database.hostname": "db2"}, ["slot-changed: database.hostname/port/dbname: another server or database"]),
    (
        SRC,
        {"publication.name": "p2"},
        ["capture-dropped: publication.name: tables the new publication lacks stop streaming"],
    ),
    (
        SRC,
        {"topic.prefix": "b2"},
        [
            "topics-renamed: topic.prefix: every topic gets a new name",
            "offsets-lost: topic.prefix: offsets are stored under the prefix and are not found",
            "resnapshot: snapshot.mode=initial snapshots a source with no offsets",
        ],
    ),
    (
        SRC,
        {"transforms.route.replacement": "prod.$1.$2.$3"},
        ["topics-renamed: topic naming or a router transform: topics get new names"],
    ),
    (SRC, {"table.include.list": "public.a"}, ["capture-dropped: table.include.list: fewer captured"]),
    (
        SRC,
        {"table.exclude.list": "public.b", "column.exclude.list": "x"},
        ["capture-dropped: table.exclude.list, column.exclude.list: fewer captured"],
    ),
    (SRC, {"message.key.columns": "public.a:name"}, ["keys-changed: message.key.columns"]),
    (SRC, {"skipped.operations": "t,d"}, ["records-filtered: skipped.operations: more change types are skipped"]),
    (SNK, {"connection.url": "jdbc:postgresql://db:5432/other"}, ["target-changed: connection.url: another database"]),
    (SNK, {"collection.name.format": "people"}, ["target-changed: another target table (t1 -> people, t2 -> people)"]),
    (SNK, {"topics": "t1"}, ["topics-stopped: stops reading t2"]),
    (SNK, {"primary.key.fields": "id,org"}, ["keys-changed: primary-key mode or fields"]),
    (SNK, {"insert.mode": "insert"}, ["keys-changed: insert.mode upsert -> insert"]),
    (SNK, {"delete.enabled": "true"}, ["deletes-changed: delete.enabled or truncate.enabled"]),
    (SNK, {"field.include.list": "id"}, ["capture-dropped: field.include.list: fewer written"]),
    (
        SNK,
        {"errors.deadletterqueue.topic.name": ""},
        ["records-filtered: errors.tolerance=all with no dead-letter queue"],
    ),
    (SNK, {"consumer.override.group.id": "g2"}, ["offsets-lost: consumer.override.group.id: another consumer group"]),
    (
        SNK,
        {"topics": "", "topics.regex": "t.*"},
        ["topics-stopped: topics.regex replaces topics (t1, t2): could not tell"],
    ),
    (SNK, {"topics": "${file:/x:t}"}, ["topics-stopped: topics: not known here"]),
]


@pytest.mark.parametrize("base, change, words", UPDATES)
def test_an_update_says_why(base: dict[str, str], change: dict[str, str], words: list[str]) -> None:
    assert [e.describe() for e in effects.of_update(base, {**base, **change})] == words


def test_a_regex_sink_says_why() -> None:
    regex = {**{k: v for k, v in SNK.items() if k != "topics"}, "topics.regex": "t.*"}
    assert [e.describe() for e in effects.of_update(regex, {**regex, "topics.regex": "t1"})] == [
        "target-changed: another target table (collection.name.format)",
        "topics-stopped: topics.regex: topics it no longer matches stop being read",
    ]


def describe(found: tuple[effects.Effect, ...]) -> list[str]:
    return [e.describe() for e in found]


def test_every_other_step_kind_says_why() -> None:
    assert describe(effects.of_update(SRC, {**SRC, "connector.class": "io.Other"})) == [
        "offsets-lost: connector.class changes: offsets and semantics do not carry over"
    ]
    assert describe(effects.of_update({**SRC, "slot.drop.on.stop": "true"}, SRC)) == [
        "slot-dropped: slot.drop.on.stop=true: stopping the tasks drops the slot"
    ]
    assert describe(effects.of_update({**SRC, "slot.drop.on.stop": "${file:/x:y}"}, SRC)) == [
        "slot-dropped: slot.drop.on.stop=unknown here: stopping the tasks drops the slot"
    ]
    assert describe(effects.of_delete(SNK)) == [
        "replication-stopped: deleted: its table keeps its rows and stops receiving"
    ]
    assert describe(effects.of_offsets(SNK, "reset", {}, {})) == [
        "offsets-reset: every stored offset is deleted",
        "redelivery: records are delivered again and upserted onto the same rows",
    ]
    assert describe(effects.of_offsets({**SNK, "insert.mode": "insert"}, "reset", {}, {})) == [
        "offsets-reset: every stored offset is deleted",
        "duplicates: insert.mode=insert: each record delivered again is a new row",
    ]
    assert describe(effects.of_offsets({**SNK, "insert.mode": "${file:/x:i}"}, "reset", {}, {})) == [
        "offsets-reset: every stored offset is deleted",
        "duplicates: insert.mode=unknown: each record delivered again is a new row",
    ]
    moved = effects.of_offsets(SNK, "set", {"t[0]": 9, "t[1]": 1, "t[2]": 1}, {"t[0]": 3, "t[1]": 5, "t[3]": 1})
    assert describe(moved) == [
        "offsets-rewound: moved back in t[0]",
        "redelivery: records are delivered again and upserted onto the same rows",
        "offsets-lost: moved ahead in t[1], t[3]: the records in between are skipped",
    ]
    assert describe(effects.of_offsets(SRC, "reset", {}, {})) == [
        "offsets-reset: the source forgets its position in the slot",
        "resnapshot: snapshot.mode=initial snapshots a connector with no offsets",
    ]
    assert describe(effects.of_offsets({**SRC, "snapshot.mode": "always"}, "set", {}, {})) == [
        "offsets-lost: a source's position is moved: WAL is skipped or replayed, if the slot holds it",
        "resnapshot: snapshot.mode=always reads every table on each start",
    ]
    assert describe(effects.of_purge()) == [
        "records-deleted: parked records below the offset are deleted from the dead-letter queue"
    ]
    assert describe(effects.of_slot_drop("s")) == ["slot-dropped: slot s is dropped with the WAL it retains"]
    assert describe(effects.of_publication_drop(["public.a", "public.b", "public.c", "public.d"])) == [
        "capture-dropped: public.a, public.b, public.c and 1 more leave the publication: their changes stop streaming"
    ]
    assert describe(effects.of_restart({**SRC, "snapshot.mode": "${file:/x:m}"})) == [
        "resnapshot: snapshot.mode=unknown here reads every table on each start"
    ]
    both = {**SRC, "snapshot.mode": "always", "slot.drop.on.stop": "true"}
    assert describe(effects.of_state(both, "STOPPED", "STOPPED")) == [
        "slot-dropped: slot.drop.on.stop=true: stopping the tasks drops the slot"
    ]
    assert describe(effects.of_state(both, "STOPPED", "PAUSED")) == [
        "resnapshot: snapshot.mode=always reads every table on each start"
    ]

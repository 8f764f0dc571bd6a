"""safety.transforms: which transforms a topic's records meet, as Kafka's runtime decides it
(TransformationStage: a predicate's test, XOR `negate`; TopicNameMatches: `Matcher.matches` on
the topic as it reaches the transform; ConfigDef BOOLEAN: "true"/"false" in any case)."""

from __future__ import annotations

import pytest

from hephaestus.safety.transforms import applies_to, reading, routed

K = "org.apache.kafka.connect.transforms."
TOPIC_IS = {"predicates": "p", "predicates.p.type": K + "predicates.TopicNameMatches", "predicates.p.pattern": r"a\.b"}


@pytest.mark.parametrize(
    ("extra", "topic", "expected"),
    [
        ({}, "a.b", True),  # no predicate: every record
        ({"transforms.t.predicate": "p"}, "a.b", True),
        ({"transforms.t.predicate": "p"}, "a.bc", False),  # matched whole
        ({"transforms.t.predicate": "p", "transforms.t.negate": "true"}, "a.b", False),
        ({"transforms.t.predicate": "p", "transforms.t.negate": " TRUE "}, "x", True),
        ({"transforms.t.predicate": "p", "transforms.t.negate": "false"}, "x", False),
        ({"transforms.t.predicate": "q", "predicates.q.type": K + "predicates.HasHeaderKey"}, "a.b", None),
        ({"transforms.t.predicate": "q"}, "a.b", None),  # a predicate of no known type
        ({"transforms.t.predicate": "p", "predicates.p.pattern": "("}, "a.b", None),  # does not parse
    ],
)
def test_a_transform_applies_as_its_predicate_says(extra: dict[str, str], topic: str, expected: bool | None) -> None:
    config = {"transforms": "t", "transforms.t.type": K + "Filter", **TOPIC_IS, **extra}
    assert applies_to(config, "t", topic) is expected


ROUTE = {
    "transforms": "r",
    "transforms.r.type": K + "RegexRouter",
    "transforms.r.regex": r"a\.(.*)",
    "transforms.r.replacement": "z.$1",
}


def test_a_router_with_a_topic_predicate_routes_only_what_it_lets_through() -> None:
    assert routed(ROUTE, "a.b") == "z.b"
    gated = {**ROUTE, **TOPIC_IS, "transforms.r.predicate": "p"}
    assert routed(gated, "a.b") == "z.b" and routed(gated, "a.c") == "a.c"
    per_record = {**gated, "predicates.p.type": K + "predicates.RecordIsTombstone"}
    assert routed(per_record, "a.b") is None  # decided per record: cannot be told


def test_reading_follows_each_topic_through_the_routers_before_a_predicate() -> None:
    """A tag after a router meets the routed name: its pattern names that, not the original."""
    config = {
        **ROUTE,
        "transforms": "r,tag",
        "transforms.tag.type": K + "InsertField$Key",
        "transforms.tag.predicate": "p",
        "predicates": "p",
        "predicates.p.type": K + "predicates.TopicNameMatches",
        "predicates.p.pattern": r"z\.b",
    }
    assert "key" in reading(config, frozenset({"a.b"}))  # a.b becomes z.b, which the tag takes
    assert "key" not in reading(config, frozenset({"a.c"}))  # a.c becomes z.c: untouched
    (keys,) = [reading(config, frozenset({"a.b"}))["key"]]
    assert ("transforms.tag.predicate", "p") not in keys  # taken by every topic read: as if unconditioned
    both = reading(config, frozenset({"a.b", "a.c"}))["key"]
    assert ("transforms.tag.predicate", "p") in both  # only some of them: every key kept


def test_a_transform_without_a_type_is_no_category_and_no_crash() -> None:
    config = {"transforms": "x,r", **{k: v for k, v in ROUTE.items() if k != "transforms"}}
    assert set(reading(config, frozenset({"a.b"}))) == {"router", "unknown"}
    assert routed(config, "a.b") == "z.b"


def test_a_reshaping_transform_before_a_filter_leaves_the_filter_judged() -> None:
    from hephaestus.safety.transforms import signatures

    config = {"transforms": "cast,f", "transforms.cast.type": K + "Cast$Value", "transforms.f.type": K + "Filter"}
    assert set(signatures(config)) == {"filter"}
    assert set(reading(config, frozenset({"a.b"}))) == {"filter"}


def test_an_unwrap_is_judged_by_its_delete_handling_only_as_the_records_meet_it() -> None:
    config = {
        "transforms": "u",
        "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.u.add.fields": "op",
        "transforms.u.delete.tombstone.handling.mode": "drop",
    }
    assert reading(config, frozenset({"a.b"}))["deletes"] == (
        ("alias", "u"),
        ("transforms.u.delete.tombstone.handling.mode", "drop"),
    )


def test_a_router_its_predicate_keeps_away_leaves_the_name_a_later_tag_matches() -> None:
    config = {
        **ROUTE,
        **TOPIC_IS,
        "transforms": "r,tag",
        "transforms.r.predicate": "q",
        "predicates": "q,p",
        "predicates.q.type": K + "predicates.TopicNameMatches",
        "predicates.q.pattern": "nothing",
        "transforms.tag.type": K + "InsertField$Key",
        "transforms.tag.predicate": "p",
    }
    assert "key" in reading(config, frozenset({"a.b"}))  # not routed: still a.b, which the tag takes


def test_a_topic_predicate_without_a_pattern_matches_nothing_and_does_not_crash() -> None:
    config = {"transforms.t.predicate": "p", "predicates.p.type": K + "predicates.TopicNameMatches"}
    assert applies_to(config, "t", "a.b") is False

"""A connector's single message transforms, by what they can do to data (pure).

Each alias of `transforms` (Kafka's `ConnectorConfig`) is put in one category by its `type`;
the category decides which effect a change of it has. A transform's signature is every
`transforms.<alias>.*` key, plus the `predicates.<name>.*` keys of the predicate it names
(`transforms.<alias>.predicate`): a predicate decides which records the transform applies to.

Where the categories come from:
- routers rename topics: `RegexRouter` (replaces the whole topic when `regex` matches all of it,
  `Matcher.matches` + `replaceFirst`), `TimestampRouter`, Debezium's `ByLogicalTableRouter`,
  `ContentBasedRouter` and the outbox `EventRouter`;
- filters drop records: Kafka's `Filter` (with a predicate) and Debezium's scripting `Filter`;
- key transforms (`…$Key`, `ValueToKey`) change what a record's key is;
- `ReplaceField$Value` and `MaskField$Value` drop or blank columns;
- Debezium's `ExtractNewRecordState`: only its delete handling (`delete.tombstone.handling.mode`,
  and the 2.x keys `delete.handling.mode`, `drop.tombstones`) decides whether deletes go on;
- other value transforms reshape records: a sink that cannot read them fails loudly, no silent loss;
- a type not known here could do any of these.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

Category = Literal["router", "filter", "key", "fields", "deletes", "unknown"]
Signature = tuple[tuple[str, str], ...]

_KAFKA = "org.apache.kafka.connect.transforms."
ROUTERS = frozenset(
    {
        _KAFKA + "RegexRouter",
        _KAFKA + "TimestampRouter",
        "io.debezium.transforms.ByLogicalTableRouter",
        "io.debezium.transforms.ContentBasedRouter",
        "io.debezium.transforms.outbox.EventRouter",
    }
)
FILTERS = frozenset({_KAFKA + "Filter", "io.debezium.transforms.Filter"})
FIELDS = frozenset({_KAFKA + "ReplaceField$Value", _KAFKA + "MaskField$Value"})
UNWRAP = frozenset({"io.debezium.transforms.ExtractNewRecordState"})
UNWRAP_DELETES = frozenset({"delete.tombstone.handling.mode", "delete.handling.mode", "drop.tombstones"})
RESHAPE = frozenset(
    _KAFKA + t
    for t in (
        "InsertField$Value",
        "HoistField$Value",
        "Cast$Value",
        "TimestampConverter$Value",
        "SetSchemaMetadata$Value",
        "Flatten$Value",
        "ExtractField$Value",
        "HeaderFrom$Value",
        "InsertHeader",
        "DropHeaders",
    )
)


def aliases(config: Mapping[str, str]) -> list[str]:
    return [a for a in re.split(r"\s*,\s*", config.get("transforms", "").strip()) if a]


def category(type_: str) -> Category | None:
    """What a transform of this type can do to data; None: nothing that loses data silently."""
    type_ = type_.strip()
    if type_ in ROUTERS:
        return "router"
    if type_ in FILTERS:
        return "filter"
    if type_.endswith("$Key") or type_ == _KAFKA + "ValueToKey":
        return "key"
    if type_ in FIELDS:
        return "fields"
    if type_ in UNWRAP:
        return "deletes"
    return None if type_ in RESHAPE else "unknown"


def signatures(config: Mapping[str, str]) -> dict[Category, Signature]:
    """Per category, every key that configures a transform of it (in the chain's order)."""
    out: dict[Category, list[tuple[str, str]]] = {}
    for alias in aliases(config):
        found = category(config.get(f"transforms.{alias}.type", ""))
        if found is None:
            continue
        out.setdefault(found, []).extend(_keys(config, alias, found))
    return {c: tuple(keys) for c, keys in out.items()}


def _keys(config: Mapping[str, str], alias: str, found: Category) -> list[tuple[str, str]]:
    prefix = f"transforms.{alias}."
    keys = [(k, v.strip()) for k, v in sorted(config.items()) if k.startswith(prefix)]
    if found == "deletes":  # only the delete handling of an unwrap decides anything here
        keys = [(k, v) for k, v in keys if k[len(prefix) :] in UNWRAP_DELETES]
    predicate = config.get(prefix + "predicate", "").strip()
    if predicate:
        keys += [(k, v.strip()) for k, v in sorted(config.items()) if k.startswith(f"predicates.{predicate}.")]
    return [("alias", alias), *keys]


def routed(config: Mapping[str, str], topic: str) -> str | None:
    """The topic after the chain's routers, when every router is a RegexRouter (evaluated as
    Kafka does: a full match, then the replacement with `$n` groups) that applies to every
    record of the topic (its predicate, if any, decided by the topic's name); None when another
    router, or a predicate, decides per record."""
    for alias in aliases(config):
        type_ = config.get(f"transforms.{alias}.type", "").strip()
        if type_ not in ROUTERS:
            continue
        applies = applies_to(config, alias, topic)
        if type_ != _KAFKA + "RegexRouter" or applies is None:
            return None
        topic = _regex_route(config, alias, topic) if applies else topic
    return topic


def applies_to(config: Mapping[str, str], alias: str, topic: str) -> bool | None:
    """Whether the transform applies to the records of `topic` (named as they reach it): no
    predicate, or a `TopicNameMatches` one (Kafka: `Matcher.matches`, then `negate`); None when
    another predicate decides per record (a header, a tombstone) or the pattern does not parse."""
    prefix = f"transforms.{alias}."
    predicate = config.get(prefix + "predicate", "").strip()
    if not predicate:
        return True
    if config.get(f"predicates.{predicate}.type", "").strip() != _KAFKA + "predicates.TopicNameMatches":
        return None
    try:
        matches = re.fullmatch(config.get(f"predicates.{predicate}.pattern", ""), topic) is not None
    except re.error:
        return None
    return matches != (config.get(prefix + "negate", "false").strip().lower() == "true")


def reading(config: Mapping[str, str], topics: frozenset[str]) -> dict[Category, Signature]:
    """`signatures` as the records of `topics` meet the chain: a transform whose topic predicate
    lets none of them through acts on none of them (left out); one that takes them all acts as
    if it had no predicate (its predicate's keys left out). Any other keeps every key."""
    out: dict[Category, list[tuple[str, str]]] = {}
    names = {t: t for t in topics}
    for alias in aliases(config):
        found = category(config.get(f"transforms.{alias}.type", ""))
        applies = {t: applies_to(config, alias, n) for t, n in names.items()}
        if found is not None and any(a is not False for a in applies.values()):
            keys = _keys(config, alias, found)
            whole = all(applies.values()) and bool(applies)
            out.setdefault(found, []).extend(_unconditioned(keys, alias) if whole else keys)
        if found == "router":
            names = {t: _regex_route(config, alias, n) if applies[t] else n for t, n in names.items()}
    return {c: tuple(keys) for c, keys in out.items()}


def _unconditioned(keys: list[tuple[str, str]], alias: str) -> list[tuple[str, str]]:
    conditions = (f"transforms.{alias}.predicate", f"transforms.{alias}.negate")
    return [(k, v) for k, v in keys if k not in conditions and not k.startswith("predicates.")]


def _regex_route(config: Mapping[str, str], alias: str, topic: str) -> str:
    try:
        pattern = re.compile(config.get(f"transforms.{alias}.regex", ""))
    except re.error:
        return topic  # Connect refuses the config (RegexValidator): nothing is routed
    match = pattern.fullmatch(topic)
    if match is None:
        return topic
    replacement = re.sub(r"\$(\d+)", r"\\g<\1>", config.get(f"transforms.{alias}.replacement", ""))
    try:
        return match.expand(replacement)
    except (re.error, IndexError):
        return topic

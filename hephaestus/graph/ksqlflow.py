"""What a ksqlDB cluster's migrations read and write (pure): streams and tables over topics,
queries from one to the next, and the connectors a migration declares.

Statements are read in version order, as `ksql apply` runs them; a DROP takes its object out
again. The grammar read here is the part lineage needs, not a parser of ksqlDB's SQL:

- `CREATE [OR REPLACE] [SOURCE] STREAM|TABLE [IF NOT EXISTS] X (…) WITH (KAFKA_TOPIC='t', …)`:
  topic t → X;
- `CREATE … X [WITH (KAFKA_TOPIC='t', …)] AS SELECT … FROM A [JOIN B …]`: A, B → X → topic t
  (ksqlDB's default topic: the object's name);
- `INSERT INTO X SELECT … FROM A`: A → X;
- `CREATE SOURCE|SINK CONNECTOR [IF NOT EXISTS] N WITH ('k' = 'v', …)`: a connector like a
  Connect cluster's own, its config from the WITH clause;
- `DROP STREAM|TABLE|CONNECTOR [IF EXISTS] X`.

Unquoted names are upper case, as ksqlDB folds them; back-quoted names keep their case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from hephaestus.fleet.ksqltopics import AS_SELECT, CREATE, DROP, FLAGS, INSERT, NAME, ident, topic_of
from hephaestus.graph.model import DeclaredConnector, KsqlStatement

_CONNECTOR = re.compile(
    rf"^\s*CREATE\s+(SOURCE|SINK)\s+CONNECTOR\s+(?:IF\s+NOT\s+EXISTS\s+)?{NAME}\s+WITH\s*\((.*)\)\s*;?\s*$", FLAGS
)
_READS = re.compile(rf"\b(?:FROM|JOIN)\s+{NAME}", FLAGS)
_STRING = re.compile(r"'(?:[^']|'')*'")
_PROPERTY = re.compile(r"""('(?:[^']|'')*'|"[^"]*"|`[^`]*`|[A-Za-z_][\w.]*)\s*=\s*'((?:[^']|'')*)'""")


@dataclass(frozen=True)
class Relation:
    """A ksqlDB stream or table: the topic it is stored in, what it reads."""

    cluster: str
    name: str
    what: str  # STREAM or TABLE
    topic: str
    reads: tuple[str, ...] = ()  # other relations of its cluster (names)
    origin: str = ""


@dataclass
class Flow:
    """One project's ksqlDB objects, in the order their statements ran."""

    relations: dict[tuple[str, str], Relation] = field(default_factory=dict)
    inserts: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)  # cluster, into, reads
    connectors: dict[tuple[str, str], DeclaredConnector] = field(default_factory=dict)


def cluster_label(ksqldb: str) -> str:
    return f"ksqldb {ksqldb}"


def flow(statements: Iterable[KsqlStatement]) -> Flow:
    found = Flow()
    for s in statements:
        _read(found, s)
    live = {(c, n) for c, n in found.relations}
    found.inserts = [i for i in found.inserts if (i[0], i[1]) in live]
    return found


def _read(found: Flow, s: KsqlStatement) -> None:
    text = s.text
    if m := _CONNECTOR.match(text):
        name = ident(m.group(2))
        config = {unquote(k): unquote(v) for k, v in _PROPERTY.findall(m.group(3))}
        found.connectors[(s.cluster, name)] = DeclaredConnector(cluster_label(s.cluster), name, config, s.origin)
    elif m := CREATE.match(text):
        found.relations[(s.cluster, ident(m.group(2)))] = _relation(s, m.group(1).upper(), ident(m.group(2)))
    elif m := INSERT.match(text):
        found.inserts.append((s.cluster, ident(m.group(1)), _sources(text)))
    elif m := DROP.match(text):
        what, name = m.group(1).upper(), ident(m.group(2))
        (found.connectors if what == "CONNECTOR" else found.relations).pop((s.cluster, name), None)


def _relation(s: KsqlStatement, what: str, name: str) -> Relation:
    head, *query = AS_SELECT.split(s.text, maxsplit=1)
    reads = _sources(query[0]) if query else ()
    return Relation(s.cluster, name, what, topic_of(head, name), reads, s.origin)


def _sources(query: str) -> tuple[str, ...]:
    """The relations a query reads (FROM and JOIN), string literals left out."""
    bare = _STRING.sub("''", query)
    return tuple(dict.fromkeys(ident(n) for n in _READS.findall(bare)))


def unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        text = text[1:-1]
    return text.replace("''", "'")

"""Which topics a project's ksqlDB migrations write (pure): ksqlDB is a producer like a source
connector, so a sink that reads a topic a migration makes waits for that migration rather than
being refused (issue 48). The grammar is the part of ksqlDB's SQL that names objects and their
topics; `graph.ksqlflow` reads the same statements for lineage with it.

- `CREATE [OR REPLACE] [SOURCE] STREAM|TABLE [IF NOT EXISTS] X … WITH (KAFKA_TOPIC='t', …)`: X
  is stored in t (an `AS SELECT` writes t; without a KAFKA_TOPIC, ksqlDB's default topic is the
  object's name);
- `INSERT INTO X [WITH (…)] SELECT …`: a query writes X's topic;
- `DROP STREAM|TABLE [IF EXISTS] X`: X no longer writes.

Only a query writes: a plain CREATE STREAM declares a topic something else writes (a source's
CDC topic), and is no producer until an INSERT INTO writes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

NAME = r"(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"
FLAGS = re.IGNORECASE | re.DOTALL
CREATE = re.compile(
    rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:SOURCE\s+)?(STREAM|TABLE)\s+(?:IF\s+NOT\s+EXISTS\s+)?{NAME}", FLAGS
)
INSERT = re.compile(rf"^\s*INSERT\s+INTO\s+{NAME}\s+(?:WITH\s*\(.*?\)\s*)?SELECT\b", FLAGS)
DROP = re.compile(rf"^\s*DROP\s+(STREAM|TABLE|CONNECTOR)\s+(?:IF\s+EXISTS\s+)?{NAME}", FLAGS)
AS_SELECT = re.compile(r"\bAS\s+SELECT\b", FLAGS)
TOPIC = re.compile(r"\bKAFKA_TOPIC\s*=\s*'((?:[^']|'')*)'", FLAGS)


def ident(name: str) -> str:
    """ksqlDB's name for an identifier: back-quoted as written, otherwise upper case."""
    return name[1:-1] if name.startswith("`") else name.upper()


def topic_of(head: str, name: str) -> str:
    """The topic a CREATE's head (before AS SELECT) names, else ksqlDB's default: the name."""
    found = TOPIC.search(head)
    return found.group(1).replace("''", "'") if found else name


def written(statements: Iterable[tuple[str, str]]) -> dict[str, str]:
    """{topic: origin} for every query's topic still standing after all the statements, each
    `(text, origin)` in the order `ksql apply` runs them."""
    declared: dict[str, str] = {}  # object -> its topic
    writes: dict[str, str] = {}  # object -> the statement whose query writes it
    for text, origin in statements:
        if m := CREATE.match(text):
            head, *query = AS_SELECT.split(text, maxsplit=1)
            name = ident(m.group(2))
            declared[name] = topic_of(head, name)
            writes.pop(name, None)
            if query:
                writes[name] = origin
        elif (m := INSERT.match(text)) and ident(m.group(1)) in declared:
            writes.setdefault(ident(m.group(1)), origin)
        elif (m := DROP.match(text)) and m.group(1).upper() != "CONNECTOR":
            declared.pop(ident(m.group(2)), None)
            writes.pop(ident(m.group(2)), None)
    return {declared[name]: origin for name, origin in writes.items()}


def waiting(topics: Iterable[str], producers: Mapping[str, str]) -> dict[str, str]:
    """The topics among `topics` that a migration writes, with the migration."""
    return {t: producers[t] for t in topics if t in producers}

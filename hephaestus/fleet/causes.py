"""Why a task failed, named from its trace (pure): a permanent cause no restart fixes, or a
transient one a restart may (issue 45).

The rules are data: one record each, tried in order, the first whose pattern is found wins;
the permanent ones come first, so a trace that names both (a constraint violated, then the
connection closed on the way out) is permanent. A trace no rule matches is unknown, which heal
treats as transient: a wrong "permanent" would stop heal for good, a wrong "transient" costs a
restart or two. The patterns are read against the why of a trace (its first line and its
`Caused by:` lines), never its stack frames or the `Detail:` lines that hold row values.

Each rule is proven by a real trace in tests/unit/data/traces (see its README). What no rule can
tell: a Debezium JDBC sink (3.6, Hibernate 7) that cannot connect when its task starts shows
only "Unable to determine Dialect without JDBC metadata", whether the password is wrong, the
database missing or the server down; and the Debezium PostgreSQL source retries a failed
login itself, its task staying RUNNING.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

Kind = Literal["permanent", "transient"]


@dataclass(frozen=True)
class Rule:
    id: str
    kind: Kind
    pattern: str  # a regex, searched in the trace's why lines
    text: str  # the cause as heal says it; {group} names a named group of the pattern
    matches: str  # what it matches, in words (the docs' table)


@dataclass(frozen=True)
class Cause:
    rule: str  # the matching rule's id
    kind: Kind
    text: str  # e.g. "not-null constraint violated (column email)"

    @property
    def permanent(self) -> bool:
        return self.kind == "permanent"


# Permanent causes a DBA's DDL makes and undoes: once hephaestus.drift finds the pipeline's
# schema in step again, heal may restart the task (the trace still names the old cause).
MENDABLE = frozenset(
    {
        "not-null-violation",
        "table-missing",
        "relation-missing",
        "column-missing",
        "sink-column-missing",
        "sink-column-required",
    }
)

_NAME = r'"(?P<{}>[^"]+)"'  # a quoted identifier, as PostgreSQL names it

RULES: tuple[Rule, ...] = (
    # --- permanent: the data or the target must change first -------------------------------
    Rule(
        "not-null-violation",
        "permanent",
        r"null value in column " + _NAME.format("column") + r"(?: of relation \"[^\"]+\")? violates not-null",
        "not-null constraint violated (column {column})",
        'PostgreSQL `null value in column "…" violates not-null constraint`',
    ),
    Rule(
        "unique-violation",
        "permanent",
        r"duplicate key value violates unique constraint " + _NAME.format("constraint"),
        "unique constraint {constraint} violated",
        "PostgreSQL `duplicate key value violates unique constraint`",
    ),
    Rule(
        "foreign-key-violation",
        "permanent",
        r"violates foreign key constraint " + _NAME.format("constraint"),
        "foreign key {constraint} violated",
        "PostgreSQL `… violates foreign key constraint`",
    ),
    Rule(
        "check-violation",
        "permanent",
        r"violates check constraint " + _NAME.format("constraint"),
        "check constraint {constraint} violated",
        "PostgreSQL `new row … violates check constraint`",
    ),
    Rule(
        "table-missing",
        "permanent",
        r"Could not find table: (?P<table>\S+)",
        "table {table} does not exist",
        "Debezium JDBC sink `Could not find table: …` (the table is missing, `schema.evolution=none`)",
    ),
    Rule(
        "relation-missing",
        "permanent",
        r"(?<!of )relation " + _NAME.format("table") + r" does not exist",  # not: column "c" of relation "t" …
        "relation {table} does not exist",
        'PostgreSQL `relation "…" does not exist`',
    ),
    Rule(
        "column-missing",
        "permanent",
        r"column " + _NAME.format("column") + r"(?: of relation \"[^\"]+\")? does not exist",
        "column {column} does not exist",
        'PostgreSQL `column "…" does not exist`',
    ),
    Rule(
        "sink-column-missing",
        "permanent",
        r"Cannot alter table (?P<table>\S+) because schema evolution is disabled",
        "table {table} lacks a column the records carry (schema.evolution=none)",
        "Debezium JDBC sink `Cannot alter table … because schema evolution is disabled`",
    ),
    Rule(
        "sink-column-required",
        "permanent",
        r"Cannot ALTER table '(?P<table>[^']+)' because field '(?P<column>[^']+)' is not optional",
        "table {table} lacks the required column {column}",
        "Debezium JDBC sink `Cannot ALTER table … because field … is not optional but has no default value`",
    ),
    Rule(
        "password-failed",
        "permanent",
        r"password authentication failed for user " + _NAME.format("user"),
        "password authentication failed (user {user})",
        "PostgreSQL `password authentication failed for user …`",
    ),
    Rule(
        "pg-hba-rejected",
        "permanent",
        r"no pg_hba\.conf entry for host " + _NAME.format("host") + r", user " + _NAME.format("user"),
        "no pg_hba.conf entry (host {host}, user {user})",
        "PostgreSQL `no pg_hba.conf entry for host …`",
    ),
    Rule(
        "permission-denied",
        "permanent",
        r"permission denied for (?P<object>\w+ \S+)",
        "permission denied for {object}",
        "PostgreSQL `permission denied for table …` (or schema, sequence, …)",
    ),
    Rule(
        "replication-denied",
        "permanent",
        r"must be superuser or replication role|permission denied to start WAL sender",
        "the user may not replicate (it needs the REPLICATION attribute)",
        "PostgreSQL `must be superuser or replication role to start walsender` (a source's user)",
    ),
    # --- transient: named, and restarted within the budget as any unknown cause ------------
    Rule(
        "connection-refused",
        "transient",
        r"Connection to (?P<address>\S+) refused|ConnectException: Connection refused",
        "connection refused",
        "PostgreSQL JDBC `Connection to … refused`, `java.net.ConnectException: Connection refused`",
    ),
    Rule(
        "connection-terminated",
        "transient",
        r"terminating connection due to (?P<why>[\w ]+)",
        "the server ended the connection ({why})",
        "PostgreSQL `terminating connection due to administrator command` (or a conflict, an idle timeout)",
    ),
    Rule(
        "timeout",
        "transient",
        r"SocketTimeoutException|TimeoutException|timed out",
        "timed out",
        "`SocketTimeoutException`, Kafka's `TimeoutException`, `… timed out`",
    ),
    Rule(
        "connection-lost",
        "transient",
        r"This connection has been closed|Connection reset|An I/O error occurred while sending to the backend"
        r"|Database connection failed when reading from copy",
        "the connection to the database was lost",
        "JDBC `This connection has been closed.`, `Connection reset`, an I/O error, a lost replication stream",
    ),
    Rule(
        "rebalance",
        "transient",
        r"(?i)RebalanceInProgress|rebalanc|generation id is not valid",
        "a consumer group rebalance",
        "Kafka `RebalanceInProgressException`, a commit failed by a rebalance",
    ),
    Rule(
        "sink-cannot-connect",
        "transient",
        r"Unable to determine Dialect without JDBC metadata",
        "the sink could not connect at its start (refused, a login or a missing database: Hibernate hides which)",
        "Debezium JDBC sink (Hibernate) `Unable to determine Dialect without JDBC metadata`",
    ),
)

_COMPILED = tuple((rule, re.compile(rule.pattern)) for rule in RULES)


def why_lines(trace: str) -> str:
    """The trace's first line and its `Caused by:` lines: what failed, without stack frames and
    without the `Detail:`/`Where:` lines PostgreSQL adds (a failing row's values)."""
    lines = trace.strip().splitlines()
    caused = [line.strip() for line in lines[1:] if line.lstrip().startswith("Caused by:")]
    return "\n".join([*lines[:1], *caused])


def classify(trace: str | None) -> Cause | None:
    """The first rule found in the trace's why lines; None when no rule knows it (or no trace)."""
    why = why_lines(trace or "")
    for rule, regex in _COMPILED:
        if found := regex.search(why):
            return Cause(rule.id, rule.kind, _text(rule.text, found.groupdict()))
    return None


def deciding(traces: Iterable[str | None]) -> str:
    """Of a connector's traces (its tasks', then its own), the one whose cause decides for heal
    and status alike: the first a permanent rule knows (no restart mends a connector while one of
    its tasks fails so), else the first; "" when there is none."""
    found = [t for t in traces if t]
    return next((t for t in found if (c := classify(t)) is not None and c.permanent), found[0] if found else "")


def _text(template: str, groups: Mapping[str, str | None]) -> str:
    return template.format_map({k: v or "?" for k, v in groups.items()})

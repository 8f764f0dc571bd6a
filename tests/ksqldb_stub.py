"""A ksqlDB REST stub, as strict as the server it stands for: a real HTTP server on 127.0.0.1.

No ksqlDB server can be had on these machines (no Confluent artifacts on the package
registries), so hephaestus's ksqlDB support is tested against this stub. It stands for
**ksqlDB 0.28.2** (Confluent Platform 7.3). Each behaviour, and where it comes from
(`confluentinc/ksql`; REST = ksqldb-rest-app/src/main/java/io/confluent/ksql/rest):

* Formats. `POST /ksql` → an array of entities with `@type`; errors are `statement_error`
  (with `statementText`, `entities`) or `generic_error`, `error_code` = HTTP status × 100 + n
  (ksqldb-rest-model …/entity/KsqlErrorMessage.java, Errors.java). `POST /query-stream`: a
  header object, then one JSON array per row, newline-delimited, or one JSON array for
  `Accept: application/json` (…/api/server/DelimitedQueryStreamResponseWriter.java).
* Readiness: while starting (`starting(n)`), every endpoint answers 503 with error 50302 "KSQL
  is not yet ready to serve requests." (REST/server/state/ServerState.java, ServerStateHandler).
* Command order: a `commandSequenceNumber` the server has not reached answers 503 / 50301.
* Command status: CREATE … AS SELECT and INSERT … SELECT answer QUEUED (the server stops
  waiting at ksql.server.command.response.timeout.ms); the final status is served on `GET
  /status/<type>/<entity>/<action>` (REST/server/resources/StatusResource.java); an unknown
  command is 404 / 40400.
* Fresh tables: the first pull query on a table made by CREATE TABLE … AS SELECT fails with
  "… is not available yet. Please try again later." (ksqldb-streams …/KsLocator.java;
  ksql#6249, #8325: right after `ksql-migrations initialize`).
* Properties: `streamsProperties` must name a ksql, streams, consumer or producer property
  (LocalPropertyParser: "Not recognizable as …"), and not an immutable one ("Cannot override
  property …").
* DDL rules (ksqldb-metastore MetaStoreImpl, ksqldb-engine DdlCommandExec,
  REST/server/computation/ValidatedCommandFactory): DROP of a source that a query reads is
  refused (a DROP ends the query writing into it); CREATE OR REPLACE may only add columns at
  the end; ALTER of a CREATE … AS source is refused; TERMINATE of an unknown query is refused.
* Connectors (since 0.27, REST/server/execution/ConnectExecutor.java, DropConnectorExecutor):
  CREATE of an existing one is 409 / 40900, DROP of a missing one 404 / 40400; with IF (NOT)
  EXISTS a `warning_entity` instead.
* ASSERT TOPIC/SCHEMA (REST/server/execution/AssertExecutor.java): the server holds the answer
  up to the statement's TIMEOUT (recorded in `asserted`), then 417 / 41700.
* Pull-query streams: the 200 and the header go out first, so a query that fails later ends
  its stream with an error object (`stream_errors`; DelimitedQueryStreamResponseWriter).
* Auth: optional basic auth (401).

It keeps streams and tables: `INSERT INTO … VALUES` appends to a stream, and a table created
`AS SELECT key, LATEST_BY_OFFSET(col) AS col … FROM stream GROUP BY key` follows it, so pull
queries answer from what was inserted (optionally `pull_lag` reads late, like a real table).
It can be told to fail a statement (`fail`) or any request (`fail_requests`).
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from tests.ksqldb_text import ID, StubError, block, ident, split, top_level, value

KSQL_TYPES = ("application/vnd.ksql.v1+json", "application/json")


@dataclass
class Source:
    name: str
    kind: str  # STREAM | TABLE
    topic: str
    columns: list[tuple[str, str, bool]] = field(default_factory=list)  # name, type, is key
    rows: list[dict[str, Any]] = field(default_factory=list)
    view: dict[str, dict[str, Any]] = field(default_factory=dict)
    feed: tuple[str, str, list[tuple[str, str]]] | None = None  # stream, key column, (out, in)


@dataclass
class Query:
    id: str
    sink: str
    reads: set[str]


@dataclass
class Failure:
    pattern: re.Pattern[str]
    message: str
    status: int
    code: int
    times: int | None  # None: every time


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    headers: dict[str, str]


class KsqlStub:
    def __init__(
        self, version: str = "0.28.2", service_id: str = "default_", credentials: tuple[str, str] | None = None
    ) -> None:
        self.version, self.service_id, self.credentials = version, service_id, credentials
        self.url = ""
        self.sources: dict[str, Source] = {}
        self.connectors: dict[str, dict[str, Any]] = {}
        self.requests: list[Recorded] = []
        self.sequence = 0
        self.pull_lag = 0
        self.stream_errors = 0  # pull queries whose answer breaks off with an error object after the header
        self.healthy = True
        self._pulls = 0
        self._pending: list[tuple[int, str, str, dict[str, Any]]] = []  # visible after, table, key, row
        self._failures: list[Failure] = []
        self._request_failures: list[tuple[str, int, int, str]] = []
        self.queries: dict[str, Query] = {}
        self.commands: dict[str, dict[str, Any]] = {}  # commandId → its final status
        self.queue_commands = True  # CREATE … AS SELECT answers QUEUED; the final status is polled
        self.queued_end: dict[str, Any] | None = None  # what queued commands end in (default SUCCESS)
        self.fresh: dict[str, int] = {}  # table → pull queries that still find it not queryable
        self.topics: set[str] = set()  # Kafka topics besides the sources' (for ASSERT TOPIC)
        self.subjects: set[str] = set()  # Schema Registry subjects (for ASSERT SCHEMA)
        self.asserted: list[float] = []  # the TIMEOUT of each ASSERT, in seconds
        self._starting = 0
        self.lock = threading.RLock()

    # --- test controls -----------------------------------------------------------------

    def fail(
        self,
        pattern: str,
        message: str = "Exception while preparing statement: boom",
        *,
        status: int = 400,
        code: int = 40001,
        times: int | None = 1,
    ) -> None:
        """Refuse the next statement(s) matching `pattern` (a regex, case-insensitive)."""
        self._failures.append(Failure(re.compile(pattern, re.I | re.S), message, status, code, times))

    def fail_requests(
        self,
        path: str,
        status: int = 503,
        code: int = 50301,
        message: str = "Timed out while waiting for a previous command to execute",
        times: int = 1,
    ) -> None:
        self._request_failures += [(path, status, code, message)] * times

    def starting(self, requests: int) -> None:
        """Answer the next `requests` requests as a server still starting does."""
        self._starting = requests

    def statements(self) -> list[str]:
        """Every statement received on /ksql, in order."""
        return [s for r in self.requests if r.path == "/ksql" for s in split(r.body["ksql"])]

    def rows(self, stream: str) -> list[dict[str, Any]]:
        return self.sources[stream.upper()].rows

    def table(self, name: str) -> dict[str, dict[str, Any]]:
        """The table as the next pull query would see it."""
        self._materialize(self._pulls + 1)
        return self.sources[name.upper()].view

    # --- /ksql --------------------------------------------------------------------------

    def ksql(self, body: dict[str, Any]) -> tuple[int, Any]:
        sequence = body.get("commandSequenceNumber")
        if isinstance(sequence, int) and sequence > self.sequence:
            raise StubError(
                503,
                50301,
                f"Timed out while waiting for a previous command to execute. command sequence number: {sequence}",
                "generic_error",
            )
        for key in body.get("streamsProperties") or {}:
            _check_property(str(key))
        entities: list[dict[str, Any]] = []
        for statement in split(str(body.get("ksql", ""))):
            try:
                self._injected(statement)
                entities += self.statement(statement)
            except StubError as exc:
                return exc.status, {
                    "@type": "statement_error",
                    "error_code": exc.code,
                    "message": exc.message,
                    "statementText": statement,
                    "entities": entities,
                }
        return 200, entities

    def _injected(self, statement: str) -> None:
        for f in self._failures:
            if f.times != 0 and f.pattern.search(statement):
                f.times = None if f.times is None else f.times - 1
                raise StubError(f.status, f.code, f.message)

    def statement(self, text: str) -> list[dict[str, Any]]:
        body = text.rstrip(";").strip()
        if not body:
            raise StubError(400, 40001, "line 1:1: Syntax Error: empty statement")
        for pattern, handler in self._handlers():
            match = re.match(pattern, body, re.I | re.S)
            if match:
                return handler(text, match)
        raise StubError(400, 40001, f"line 1:1: Syntax Error: unknown statement {body.split()[0]!r}")

    def _handlers(self) -> list[tuple[str, Any]]:
        return [
            (rf"CREATE\s+(OR\s+REPLACE\s+)?(STREAM|TABLE)\s+(IF\s+NOT\s+EXISTS\s+)?{ID}\s*(.*)$", self._create),
            (rf"CREATE\s+(SINK|SOURCE)\s+CONNECTOR\s+(IF\s+NOT\s+EXISTS\s+)?{ID}\s+WITH\s*(\(.*\))$", self._connector),
            (rf"INSERT\s+INTO\s+{ID}\s*\((.*?)\)\s*VALUES\s*(\(.*\))$", self._insert),
            (rf"INSERT\s+INTO\s+{ID}\s+(SELECT\b.*)$", self._insert_select),
            (rf"DROP\s+(STREAM|TABLE|CONNECTOR)\s+(IF\s+EXISTS\s+)?{ID}(\s+DELETE\s+TOPIC)?$", self._drop),
            (rf"ALTER\s+(STREAM|TABLE)\s+{ID}\s+(ADD\s.*)$", self._alter),
            (r"TERMINATE\s+(\S+)$", self._terminate),
            (r"(LIST|SHOW)\s+(STREAMS|TABLES)$", self._list),
            (r"SELECT\b.*$", self._select),
            (r"ASSERT\s+(NOT\s+EXISTS\s+)?(TOPIC|SCHEMA)\s+(.*)$", self._assert),
            (r"(PAUSE|RESUME|CREATE\s+TYPE|DROP\s+TYPE)\b.*$", self._command("query", "Done")),
        ]

    def _status(self, text: str, command: str, message: str, query: str | None = None) -> dict[str, Any]:
        self.sequence += 1
        final = {"status": "SUCCESS", "message": message, "queryId": query}
        if query and self.queued_end is not None:  # a command that fails (or hangs) after its answer
            final = {**self.queued_end, "queryId": query}
        self.commands[command] = final
        # A persistent query's command is answered before it runs (QUEUED), as the server does
        # when it stops waiting; its final status is then on GET /status/<commandId>.
        shown = (
            {"status": "QUEUED", "message": "Statement written to command topic", "queryId": None}
            if query and self.queue_commands
            else final
        )
        return {
            "@type": "currentStatus",
            "statementText": text,
            "commandId": command,
            "commandStatus": shown,
            "commandSequenceNumber": self.sequence,
            "warnings": [],
        }

    def _command(self, kind: str, message: str) -> Any:
        return lambda text, match: [self._status(text, f"{kind}/generic/execute", message)]

    def _create(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        replace, kind, if_not, name, rest = bool(m[1]), m[2].upper(), bool(m[3]), ident(m[4]), m[5].strip()
        if name in self.sources and not replace:
            if if_not:
                return [self._status(text, f"{kind.lower()}/{name}/create", f"{kind.title()} already exists")]
            raise StubError(
                400, 40001, f"Cannot add {kind.lower()} '{name}': A {kind.lower()} with the same name already exists"
            )
        columns, rest = self._columns(rest)
        props, rest = self._with(rest)
        source = Source(name, kind, str(props.get("KAFKA_TOPIC", name)), columns)
        reads = self._as_select(source, rest[2:].strip()) if rest.upper().startswith("AS") else None
        old = self.sources.get(name)
        if old is not None:
            _upgradeable(old, source)
        self.sources[name] = source
        if source.feed:  # a new table starts from the stream's whole history
            for row in self.sources[source.feed[0]].rows:
                self._fold(source, row, visible_after=-1)
        query = None
        if reads is not None:
            query = next(
                (q.id for q in self.queries.values() if q.sink == name),
                f"{'CTAS' if kind == 'TABLE' else 'CSAS'}_{name}_{len(self.queries) + 1}",
            )
            self.queries[query] = Query(query, name, reads)
            if kind == "TABLE" and old is None:
                self.fresh[name] = 1  # not queryable until its state store is up
        return [self._status(text, f"{kind.lower()}/`{name}`/create", f"{kind.title()} created", query)]

    def _insert_select(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        target = ident(m[1])
        if target not in self.sources:
            raise StubError(400, 40001, f"Sink does not exist for the INSERT INTO statement: {target}")
        scratch = Source(target, "STREAM", target)
        query = f"INSERTQUERY_{len(self.queries) + 1}"
        self.queries[query] = Query(query, target, self._as_select(scratch, m[2]))
        return [self._status(text, f"stream/`{target}`/create", "Insert query started", query)]

    def _columns(self, rest: str) -> tuple[list[tuple[str, str, bool]], str]:
        """`(NAME TYPE [KEY | PRIMARY KEY], …)` of CREATE STREAM/TABLE: names and key flags."""
        if not rest.startswith("("):
            return [], rest
        inside, rest = block(rest)
        items = [item.split() for item in top_level(inside, angles=True)]
        return [(ident(w[0]), "STRING", w[-1].upper() == "KEY") for w in items], rest

    def _with(self, rest: str) -> tuple[dict[str, Any], str]:
        if not re.match(r"WITH\s*\(", rest, re.I):
            return {}, rest
        inside, rest = block(rest[rest.index("(") :])
        return self._properties(inside), rest

    def _properties(self, inside: str) -> dict[str, Any]:
        props = {}
        for item in top_level(inside):
            key, _, raw = item.partition("=")
            key = key.strip()
            props[key.strip("'\"`") if key[0] in "'\"`" else key.upper()] = value(raw)
        return props

    def _as_select(self, source: Source, select: str) -> set[str]:
        """Reads the query's output columns (and how a table follows its stream) into `source`;
        the sources the query reads."""
        m = re.match(rf"SELECT\s+(.*?)\s+FROM\s+{ID}(.*)$", select, re.I | re.S)
        if not m:
            raise StubError(400, 40001, "line 1:1: Syntax Error in AS SELECT")
        reads = {ident(found) for found in [m[2], *re.findall(rf"\bJOIN\s+{ID}", m[3], re.I)]}
        for found in sorted(reads):
            if found not in self.sources:
                raise StubError(400, 40001, f"{found} does not exist.")
        items = top_level(m[1])
        source.columns = [(self._alias(i), "STRING", False) for i in items]
        group = re.search(rf"GROUP\s+BY\s+{ID}\s*$", m[3], re.I)
        outputs = [re.fullmatch(rf"LATEST_BY_OFFSET\s*\(\s*{ID}\s*\)\s+AS\s+{ID}", i, re.I) for i in items[1:]]
        if group and all(outputs):
            key = ident(group[1])
            source.feed = (ident(m[2]), key, [(ident(o[2]), ident(o[1])) for o in outputs if o])
            source.columns[0] = (key, "STRING", True)
        return reads

    @staticmethod
    def _alias(item: str) -> str:
        m = re.search(rf"\s+AS\s+{ID}\s*$", item, re.I)
        return ident(m[1]) if m else ident(item.split("->")[-1].strip())

    def _connector(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        name = ident(m[3])
        if name in self.connectors:
            if m[2]:
                return [
                    {"@type": "warning_entity", "statementText": text, "message": f"Connector {name} already exists"}
                ]
            raise StubError(409, 40900, f"Connector {name} already exists")
        config = self._properties(block(m[4])[0])
        self.connectors[name] = config
        return [
            {
                "@type": "connector_info",
                "statementText": text,
                "warnings": [],
                "info": {"name": name, "config": config, "tasks": [], "type": m[1].lower()},
            }
        ]

    def _insert(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        target = self.sources.get(ident(m[1]))
        if target is None or target.kind != "STREAM":
            raise StubError(400, 40001, f"Cannot insert values into an unknown stream: {ident(m[1])}")
        columns = [ident(c.strip()) for c in m[2].split(",")]
        values = [value(v) for v in top_level(block(m[3])[0])]
        if len(columns) != len(values):
            raise StubError(400, 40001, "Expected number columns and values to match")
        unknown = set(columns) - {c[0] for c in target.columns}
        if unknown:
            raise StubError(400, 40001, f"Column name {sorted(unknown)[0]} does not exist.")
        row = dict(zip(columns, values, strict=False))
        target.rows.append(row)
        for table in self.sources.values():
            if table.feed and table.feed[0] == target.name:
                self._fold(table, row, self._pulls + self.pull_lag)
        return []  # INSERT VALUES answers an empty entity list

    def _fold(self, table: Source, row: dict[str, Any], visible_after: int) -> None:
        assert table.feed is not None
        _, key, outputs = table.feed
        latest = {**{o: row.get(i) for o, i in outputs}, key: row.get(key)}
        self._pending.append((visible_after, table.name, str(row.get(key)), latest))
        self._materialize(self._pulls)

    def _materialize(self, upto: int) -> None:
        ready = [p for p in self._pending if p[0] < upto]
        self._pending = [p for p in self._pending if p[0] >= upto]
        for _, table, key, row in ready:
            if table in self.sources:
                old = self.sources[table].view.get(key, {})  # LATEST_BY_OFFSET ignores nulls
                self.sources[table].view[key] = {**old, **{k: v for k, v in row.items() if v is not None}}

    def _drop(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        kind, name = m[1].upper(), ident(m[3])
        if kind == "CONNECTOR":
            return self._drop_connector(text, name, bool(m[2]))
        if name not in self.sources and not m[2]:
            raise StubError(400, 40001, f"{kind.title()} {name} does not exist.")
        readers = sorted(q.id for q in self.queries.values() if name in q.reads and q.sink != name)
        if readers:
            raise StubError(
                400,
                40001,
                f"Cannot drop {name}.\nThe following queries read from this source: "
                f"[{', '.join(readers)}].\nThe following queries write into this source: [].\n"
                f"You need to terminate them before dropping {name}.",
            )
        self.queries = {i: q for i, q in self.queries.items() if q.sink != name}  # DROP ends its writer
        self.sources.pop(name, None)
        return [self._status(text, f"{kind.lower()}/`{name}`/drop", f"Source {name} dropped")]

    def _drop_connector(self, text: str, name: str, if_exists: bool) -> list[dict[str, Any]]:
        if name not in self.connectors:
            if if_exists:
                return [
                    {"@type": "warning_entity", "statementText": text, "message": f"Connector '{name}' does not exist."}
                ]
            raise StubError(404, 40400, f"Failed to drop connector: Connector {name} not found")
        self.connectors.pop(name)
        return [{"@type": "drop_connector", "statementText": text, "connectorName": name, "warnings": []}]

    def _alter(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        kind, name = m[1].upper(), ident(m[2])
        source = self.sources.get(name)
        if source is None:
            raise StubError(400, 40001, f"Source {name} does not exist.")
        if any(q.sink == name for q in self.queries.values()):
            raise StubError(400, 40001, "ALTER command is not supported for CREATE ... AS statements.")
        if source.kind != kind:
            raise StubError(
                400, 40001, f"Incompatible data source type is {source.kind}, but statement was ALTER {kind}"
            )
        for item in top_level(m[3]):
            column = ident(re.sub(r"^ADD\s+(COLUMN\s+)?", "", item.strip(), flags=re.I).split()[0])
            if column in {c[0] for c in source.columns}:
                raise StubError(
                    400, 40001, f"Cannot add column {column} to schema. A column with the same name already exists."
                )
            source.columns.append((column, "STRING", False))
        return [self._status(text, f"{kind.lower()}/`{name}`/alter", f"{kind.title()} altered")]

    def _terminate(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        query = m[1].upper()
        if query != "ALL" and query not in self.queries:
            raise StubError(400, 40001, f"Unknown queryId: {query}")
        self.queries = {} if query == "ALL" else {i: q for i, q in self.queries.items() if i != query}
        return [self._status(text, f"terminate/{query}/execute", "Query terminated.")]

    def _list(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        kind = m[2].lower()
        found = [
            {
                "type": s.kind,
                "name": s.name,
                "topic": s.topic,
                "keyFormat": "KAFKA",
                "valueFormat": "JSON",
                "isWindowed": False,
            }
            for s in self.sources.values()
            if s.kind == kind[:-1].upper()
        ]
        return [{"@type": kind, "statementText": text, kind: found, "warnings": []}]

    def _select(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        raise StubError(
            400,
            40002,
            "The following statement types should be issued to the websocket endpoint '/query':\n\t* PRINT\n\t* SELECT",
        )

    def _assert(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        kind, absent, rest = m[2].lower(), bool(m[1]), m[3]
        timeout = re.search(r"\bTIMEOUT\s+(\d+)\s+(\w+)", rest, re.I)
        self.asserted.append(_seconds(int(timeout[1]), timeout[2]) if timeout else 1.0)  # assert default: 1 s
        if kind == "topic":
            raw = rest.split()[0]
            subject = raw.strip("'") if raw.startswith("'") else ident(raw)
            known = {s.topic for s in self.sources.values()} | self.topics
        else:
            found = re.search(r"SUBJECT\s+'([^']*)'", rest, re.I)
            subject, known = (found[1] if found else ""), self.subjects
        if (subject in known) == absent:
            what = "Topic" if kind == "topic" else "Schema with subject name"
            raise StubError(417, 41700, f"{what} {subject} {'exists' if absent else 'does not exist'}")
        return [{"@type": f"assert_{kind}", "statementText": text, f"{kind}Name": subject, "exists": not absent}]

    # --- /query-stream -------------------------------------------------------------------

    def pull(self, body: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
        self._pulls += 1
        self._materialize(self._pulls)
        sql = str(body.get("sql", "")).strip().rstrip(";")
        m = re.fullmatch(rf"SELECT\s+(.*?)\s+FROM\s+{ID}(?:\s+WHERE\s+(.*))?", sql, re.I | re.S)
        if not m:
            raise StubError(400, 40001, "line 1:1: Syntax Error in pull query")
        table = self.sources.get(ident(m[2]))
        if table is None or table.kind != "TABLE":
            raise StubError(400, 40001, f"{ident(m[2])} does not exist or is not a table.")
        if self.fresh.get(table.name):
            self.fresh[table.name] -= 1
            raise StubError(
                400,
                40000,
                "Materialized data for key [CURRENT] is not available yet. Please try again later.",
                "generic_error",
            )
        names = [c[0] for c in table.columns] if m[1].strip() == "*" else [ident(c) for c in top_level(m[1])]
        missing = [n for n in names if n not in {c[0] for c in table.columns}]
        if missing:
            raise StubError(400, 40001, f"Column '{missing[0]}' cannot be resolved.")
        rows = [r for k, r in sorted(table.view.items()) if self._where(m[3], k)]
        return names, [[r.get(n) for n in names] for r in rows]

    @staticmethod
    def _where(clause: str | None, key: str) -> bool:
        if not clause:
            return True
        eq = re.fullmatch(rf"{ID}\s*=\s*('(?:[^']|'')*')", clause.strip(), re.I | re.S)
        if eq:
            return key == value(eq[2])
        inside = re.fullmatch(rf"{ID}\s+IN\s*(\(.*\))", clause.strip(), re.I | re.S)
        if inside:
            return key in {str(value(v)) for v in top_level(block(inside[2])[0])}
        raise StubError(400, 40001, f"Unsupported pull query condition: {clause}")


# LocalPropertyParser: what a request may set, and what no request may (KsqlEngine's immutable ones).
_STREAMS_PROPERTIES = frozenset(
    {
        "auto.offset.reset",
        "commit.interval.ms",
        "cache.max.bytes.buffering",
        "num.stream.threads",
        "processing.guarantee",
        "buffered.records.per.partition",
        "max.task.idle.ms",
        "statestore.cache.max.bytes",
    }
)
_PREFIXES = ("ksql.", "consumer.", "producer.", "ksql.streams.")
_IMMUTABLE = frozenset(
    {
        "ksql.service.id",
        "bootstrap.servers",
        "ksql.streams.bootstrap.servers",
        "ksql.connect.url",
        "ksql.schema.registry.url",
    }
)


def _check_property(key: str) -> None:
    if key in _IMMUTABLE:
        raise StubError(400, 40000, f"Cannot override property '{key}'")
    if key not in _STREAMS_PROPERTIES and not key.startswith(_PREFIXES):
        raise StubError(400, 40000, f"Not recognizable as ksql, streams, consumer, or producer property: '{key}'")


def _upgradeable(old: Source, new: Source) -> None:
    """CREATE OR REPLACE may add columns at the end, nothing else (MetaStoreImpl.putSource)."""
    if old.kind != new.kind:
        raise StubError(
            400,
            40001,
            f"Cannot add {new.kind.lower()} '{new.name}': A {old.kind.lower()} with the same name already exists",
        )
    before, after = [c[0] for c in old.columns], [c[0] for c in new.columns]
    if after[: len(before)] != before:
        changed = [c for i, c in enumerate(before) if i >= len(after) or after[i] != c]
        raise StubError(
            400,
            40001,
            f"Cannot upgrade data source: DataSource '`{old.name}`' has schema = "
            f"{before} which is not upgradeable to {after} (The following columns are changed, "
            f"missing or reordered: [{', '.join(f'`{c}` STRING' for c in changed)}])",
        )


def _seconds(n: int, unit: str) -> float:
    scale = {"MILLISECOND": 0.001, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}
    return n * scale.get(unit.upper().rstrip("S"), 1)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1  # one write per response: no Nagle/delayed-ACK stalls on keep-alive
    disable_nagle_algorithm = True
    stub: KsqlStub

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._serve(None)

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self._send(400, {"@type": "generic_error", "error_code": 40000, "message": "Invalid JSON"})
        self._serve(body)

    def _serve(self, body: Any) -> None:
        path = self.path.split("?")[0]
        with self.stub.lock:
            self.stub.requests.append(Recorded(self.command, path, body, dict(self.headers.items())))
            try:
                self._checks(path)
                self._route(path, body)
            except StubError as exc:
                self._send(exc.status, {"@type": exc.kind, "error_code": exc.code, "message": exc.message})

    def _checks(self, path: str) -> None:
        stub = self.stub
        if stub._starting > 0:
            stub._starting -= 1
            raise StubError(503, 50302, "KSQL is not yet ready to serve requests.", "generic_error")
        if stub.credentials is not None:
            token = base64.b64encode(":".join(stub.credentials).encode()).decode()
            if self.headers.get("Authorization") != f"Basic {token}":
                raise StubError(401, 40100, "Unauthorized", "generic_error")
        for i, (where, status, code, message) in enumerate(stub._request_failures):
            if where == path:
                del stub._request_failures[i]
                raise StubError(status, code, message, "generic_error")
        if self.command == "POST" and self.headers.get("Content-Type", "").split(";")[0] not in KSQL_TYPES:
            raise StubError(415, 41500, "Unsupported Media Type", "generic_error")

    def _route(self, path: str, body: Any) -> None:
        stub = self.stub
        if (self.command, path) == ("GET", "/info"):
            self._send(
                200,
                {
                    "KsqlServerInfo": {
                        "version": stub.version,
                        "kafkaClusterId": "stub-cluster-id",
                        "ksqlServiceId": stub.service_id,
                        "serverStatus": "RUNNING",
                    }
                },
            )
        elif (self.command, path) == ("GET", "/healthcheck"):
            self._send(
                200,
                {
                    "isHealthy": stub.healthy,
                    "details": {"metastore": {"isHealthy": True}, "kafka": {"isHealthy": stub.healthy}},
                },
            )
        elif (self.command, path) == ("POST", "/ksql"):
            self._send(*stub.ksql(body))
        elif (self.command, path) == ("POST", "/query-stream"):
            self._rows(*stub.pull(body))
        elif self.command == "GET" and path.startswith("/status/"):
            command = unquote(path[len("/status/") :])
            if command not in stub.commands:
                raise StubError(404, 40400, "Command not found", "generic_error")
            self._send(200, stub.commands[command])
        else:
            raise StubError(404, 40400, f"no endpoint {self.command} {path}", "generic_error")

    def _rows(self, names: list[str], rows: list[list[Any]]) -> None:
        header = {"columnNames": names, "columnTypes": ["STRING"] * len(names)}
        if self.stub.stream_errors > 0:  # the status (200) went out before the query failed
            self.stub.stream_errors -= 1
            rows = [
                *rows[:1],
                {
                    "@type": "generic_error",
                    "error_code": 50000,  # type: ignore[list-item]
                    "message": "Query terminated: store closed",
                },
            ]
        if self.headers.get("Accept", "") == "application/json":
            return self._send(200, [header, *rows], "application/json")
        text = "\n".join(json.dumps(x) for x in [header, *rows]) + "\n"
        self._write(200, text.encode(), "application/vnd.ksqlapi.delimited.v1")

    def _send(self, status: int, doc: Any, content_type: str = "application/vnd.ksql.v1+json") -> None:
        self._write(status, json.dumps(doc).encode(), content_type)

    def _write(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def ksqldb_stub(**kwargs: Any) -> Iterator[KsqlStub]:
    """A running stub; `stub.url` is its base URL."""
    stub = KsqlStub(**kwargs)
    handler = type("Handler", (_Handler,), {"stub": stub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()

"""A ksqlDB REST contract stub: a real HTTP server on 127.0.0.1 (ephemeral port).

No ksqlDB server can be had on these machines, so hephaestus's ksqlDB support is tested
against this stub. It reproduces the documented formats, not ksqlDB's engine:

* `POST /ksql` `{"ksql", "streamsProperties", "commandSequenceNumber"}` → an array of entities
  with `@type` (`currentStatus` with `commandStatus` and `commandSequenceNumber`, `streams`,
  `tables`, `connector_info`, …); errors are
  `{"@type": "statement_error", "error_code": 40001, "message", "statementText", "entities"}` or
  `generic_error`; a sequence number the server has not reached answers 503 / 50301.
* `POST /query-stream` (pull queries): a header JSON object with `columnNames`/`columnTypes`,
  then one JSON array per row, newline-delimited (`application/vnd.ksqlapi.delimited.v1`), or
  one JSON array when `Accept: application/json`.
* `GET /info` (`KsqlServerInfo`), `GET /healthcheck`; optional basic auth (401).

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

ID = r"(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"
KSQL_TYPES = ("application/vnd.ksql.v1+json", "application/json")


class StubError(Exception):
    def __init__(self, status: int, code: int, message: str, kind: str = "statement_error") -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.kind = status, code, message, kind


def ident(text: str) -> str:
    """ksqlDB upper-cases unquoted identifiers; back-quoted ones keep their case."""
    return text[1:-1] if text.startswith("`") else text.upper()


def split(sql: str) -> list[str]:
    """Statements of a request: `;` outside '…' strings and `…` identifiers."""
    return [part + ";" for part in top_level(sql, ";")]


def top_level(text: str, sep: str = ",", angles: bool = False) -> list[str]:
    """Items separated by `sep` outside quotes and (…) (and <…> of STRUCT<…> when `angles`)."""
    opening, closing = ("(<", ")>") if angles else ("(", ")")
    parts, buf, depth, quote = [], [], 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'`":
            quote = ch
        elif ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    return [p for p in [*parts, "".join(buf).strip()] if p]


def block(text: str) -> tuple[str, str]:
    """(inside of the leading parenthesis, rest after it)."""
    depth, quote = 0, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[1:i], text[i + 1:].strip()
    raise StubError(400, 40001, "line 1:1: mismatched input: unbalanced parenthesis")


def value(text: str) -> Any:
    text = text.strip()
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1].replace("''", "'")
    if text.upper() in ("NULL", "TRUE", "FALSE"):
        return {"NULL": None, "TRUE": True, "FALSE": False}[text.upper()]
    try:
        return int(text) if re.fullmatch(r"-?\d+", text) else float(text)
    except ValueError:
        raise StubError(400, 40001, f"Failed to prepare statement: unsupported value {text}") from None


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
    def __init__(self, version: str = "0.28.2", service_id: str = "default_",
                 credentials: tuple[str, str] | None = None) -> None:
        self.version, self.service_id, self.credentials = version, service_id, credentials
        self.url = ""
        self.sources: dict[str, Source] = {}
        self.connectors: dict[str, dict[str, Any]] = {}
        self.requests: list[Recorded] = []
        self.sequence = 0
        self.pull_lag = 0
        self.healthy = True
        self._pulls = 0
        self._pending: list[tuple[int, str, str, dict[str, Any]]] = []  # visible after, table, key, row
        self._failures: list[Failure] = []
        self._request_failures: list[tuple[str, int, int, str]] = []
        self.lock = threading.RLock()

    # --- test controls -----------------------------------------------------------------

    def fail(self, pattern: str, message: str = "Exception while preparing statement: boom", *,
             status: int = 400, code: int = 40001, times: int | None = 1) -> None:
        """Refuse the next statement(s) matching `pattern` (a regex, case-insensitive)."""
        self._failures.append(Failure(re.compile(pattern, re.I | re.S), message, status, code, times))

    def fail_requests(self, path: str, status: int = 503, code: int = 50301,
                      message: str = "Timed out while waiting for a previous command to execute",
                      times: int = 1) -> None:
        self._request_failures += [(path, status, code, message)] * times

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
            raise StubError(503, 50301, "Timed out while waiting for a previous command to execute. "
                            f"command sequence number: {sequence}", "generic_error")
        entities: list[dict[str, Any]] = []
        for statement in split(str(body.get("ksql", ""))):
            try:
                self._injected(statement)
                entities += self.statement(statement)
            except StubError as exc:
                return exc.status, {"@type": "statement_error", "error_code": exc.code, "message": exc.message,
                                    "statementText": statement, "entities": entities}
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
            (rf"INSERT\s+INTO\s+{ID}\s+SELECT\b.*$", self._command("stream", "Insert query started")),
            (rf"DROP\s+(STREAM|TABLE|CONNECTOR)\s+(IF\s+EXISTS\s+)?{ID}(\s+DELETE\s+TOPIC)?$", self._drop),
            (r"(LIST|SHOW)\s+(STREAMS|TABLES)$", self._list),
            (r"SELECT\b.*$", self._select),
            (r"ASSERT\s+(NOT\s+EXISTS\s+)?(TOPIC|SCHEMA)\s+(.*)$", self._assert),
            (r"(TERMINATE|PAUSE|RESUME|ALTER|CREATE\s+TYPE|DROP\s+TYPE)\b.*$", self._command("query", "Done")),
        ]

    def _status(self, text: str, command: str, message: str) -> dict[str, Any]:
        self.sequence += 1
        return {"@type": "currentStatus", "statementText": text, "commandId": command,
                "commandStatus": {"status": "SUCCESS", "message": message}, "commandSequenceNumber": self.sequence,
                "warnings": []}

    def _command(self, kind: str, message: str) -> Any:
        return lambda text, match: [self._status(text, f"{kind}/generic/execute", message)]

    def _create(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        replace, kind, if_not, name, rest = bool(m[1]), m[2].upper(), bool(m[3]), ident(m[4]), m[5].strip()
        if name in self.sources and not replace:
            if if_not:
                return [self._status(text, f"{kind.lower()}/{name}/create", f"{kind.title()} already exists")]
            raise StubError(400, 40001, f"Cannot add {kind.lower()} '{name}': A {kind.lower()} with the same "
                            "name already exists")
        columns, rest = self._columns(rest)
        props, rest = self._with(rest)
        source = Source(name, kind, str(props.get("KAFKA_TOPIC", name)), columns)
        if rest.upper().startswith("AS"):
            self._as_select(source, rest[2:].strip())
        self.sources[name] = source
        if source.feed:  # a new table starts from the stream's whole history
            for row in self.sources[source.feed[0]].rows:
                self._fold(source, row, visible_after=-1)
        return [self._status(text, f"{kind.lower()}/{name}/create", f"{kind.title()} created")]

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
        inside, rest = block(rest[rest.index("("):])
        return self._properties(inside), rest

    def _properties(self, inside: str) -> dict[str, Any]:
        props = {}
        for item in top_level(inside):
            key, _, raw = item.partition("=")
            key = key.strip()
            props[key.strip("'\"`") if key[0] in "'\"`" else key.upper()] = value(raw)
        return props

    def _as_select(self, source: Source, select: str) -> None:
        m = re.match(rf"SELECT\s+(.*?)\s+FROM\s+{ID}(.*)$", select, re.I | re.S)
        if not m:
            raise StubError(400, 40001, "line 1:1: Syntax Error in AS SELECT")
        for found in [m[2], *re.findall(rf"\bJOIN\s+{ID}", m[3], re.I)]:
            if ident(found) not in self.sources:
                raise StubError(400, 40001, f"{ident(found)} does not exist.")
        items = top_level(m[1])
        source.columns = [(self._alias(i), "STRING", False) for i in items]
        group = re.search(rf"GROUP\s+BY\s+{ID}\s*$", m[3], re.I)
        outputs = [re.fullmatch(rf"LATEST_BY_OFFSET\s*\(\s*{ID}\s*\)\s+AS\s+{ID}", i, re.I) for i in items[1:]]
        if group and all(outputs):
            key = ident(group[1])
            source.feed = (ident(m[2]), key, [(ident(o[2]), ident(o[1])) for o in outputs if o])
            source.columns[0] = (key, "STRING", True)

    @staticmethod
    def _alias(item: str) -> str:
        m = re.search(rf"\s+AS\s+{ID}\s*$", item, re.I)
        return ident(m[1]) if m else ident(item.split("->")[-1].strip())

    def _connector(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        name = ident(m[3])
        if name in self.connectors and not m[2]:
            return [{"@type": "error_entity", "statementText": text,
                     "errorMessage": f"Failed to create connector: Connector {name} already exists"}]
        config = self._properties(block(m[4])[0])
        self.connectors[name] = config
        return [{"@type": "connector_info", "statementText": text, "warnings": [],
                 "info": {"name": name, "config": config, "tasks": [], "type": m[1].lower()}}]

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
        row = dict(zip(columns, values))
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
            self.connectors.pop(name, None)
            return [{"@type": "drop_connector", "statementText": text, "connectorName": name, "warnings": []}]
        if name not in self.sources and not m[2]:
            raise StubError(400, 40001, f"{kind.title()} {name} does not exist.")
        self.sources.pop(name, None)
        return [self._status(text, f"{kind.lower()}/{name}/drop", f"Source {name} dropped")]

    def _list(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        kind = m[2].lower()
        found = [{"type": s.kind, "name": s.name, "topic": s.topic, "keyFormat": "KAFKA", "valueFormat": "JSON",
                  "isWindowed": False} for s in self.sources.values() if s.kind == kind[:-1].upper()]
        return [{"@type": kind, "statementText": text, kind: found, "warnings": []}]

    def _select(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        raise StubError(400, 40002, "The following statement types should be issued to the websocket "
                        "endpoint '/query':\n\t* PRINT\n\t* SELECT")

    def _assert(self, text: str, m: re.Match[str]) -> list[dict[str, Any]]:
        subject = m[3].split()[0].strip("'`")
        kind = m[2].lower()
        return [{"@type": f"assert_{kind}", "statementText": text, f"{kind}Name": subject, "exists": not m[1]}]

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
            self._send(200, {"KsqlServerInfo": {"version": stub.version, "kafkaClusterId": "stub-cluster-id",
                                                "ksqlServiceId": stub.service_id, "serverStatus": "RUNNING"}})
        elif (self.command, path) == ("GET", "/healthcheck"):
            self._send(200, {"isHealthy": stub.healthy, "details": {"metastore": {"isHealthy": True},
                                                                    "kafka": {"isHealthy": stub.healthy}}})
        elif (self.command, path) == ("POST", "/ksql"):
            self._send(*stub.ksql(body))
        elif (self.command, path) == ("POST", "/query-stream"):
            self._rows(*stub.pull(body))
        else:
            raise StubError(404, 40400, f"no endpoint {self.command} {path}", "generic_error")

    def _rows(self, names: list[str], rows: list[list[Any]]) -> None:
        header = {"columnNames": names, "columnTypes": ["STRING"] * len(names)}
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

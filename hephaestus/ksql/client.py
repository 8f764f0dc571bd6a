"""The ksqlDB REST edge: `POST /ksql`, `POST /query-stream` (pull queries), `GET /info`,
`GET /healthcheck` — httpx, basic auth, timeouts, bounded retries of transient failures.

Every `/ksql` request carries the highest `commandSequenceNumber` seen so far, so the server
runs it only after the earlier commands have: a statement never races the one before it.
Request bodies are never logged nor put in messages (statements may carry secrets).

What a real server does that a client must wait out, each within a bound (RetryPolicy):
* every endpoint answers 503 (error 50302) until the server is ready (ServerStateHandler);
* a command may answer QUEUED/PARSING/EXECUTING: its final status is polled on
  `GET /status/<commandId>` (StatusResource);
* a table created a moment ago is not queryable yet ("… is not available yet", "Cannot
  determine which host …", ksql#6249, #8325): pull queries are asked again.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from tenacity import Retrying

from hephaestus import http
from hephaestus.ksql.errors import KsqlCall, KsqlError, KsqlStatementError, from_status, from_transport
from hephaestus.polling import Bound, until

_log = logging.getLogger("hephaestus.ksql")

KSQL_JSON = "application/vnd.ksql.v1+json"
DELIMITED = "application/vnd.ksqlapi.delimited.v1"
_PENDING = frozenset({"QUEUED", "PARSING", "EXECUTING"})  # CommandStatus.Status before a final one
_NOT_QUERYABLE = re.compile(r"not available yet|cannot determine which host|(?:isn't|is not) queryable", re.I)


@dataclass(frozen=True)
class KsqlRetryPolicy(http.RetryPolicy):
    """The edge's retry policy (waits about 0.5, 1, 2, 4 s: a ksqlDB restart or a slow command
    queue settles, a dead server fails a run quickly), and the longer waits a real server needs."""

    attempts: int = 5
    ready_timeout_s: float = 120.0  # a starting server (503, error 50302): how long to wait for it
    settle_timeout_s: float = 60.0  # a command still running, a fresh table not queryable yet
    poll_s: float = 1.0
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def immediate(cls, attempts: int = 5) -> KsqlRetryPolicy:
        return cls(
            attempts=attempts,
            initial_wait=0.0,
            max_wait=0.0,
            jitter=0.0,
            ready_timeout_s=1.0,
            settle_timeout_s=1.0,
            poll_s=0.01,
        )

    def bound(self, timeout_s: float, first_s: float | None = 0.1) -> Bound:
        return Bound(timeout_s, self.poll_s, self.clock, self.sleep, first_s)


@dataclass(frozen=True)
class ServerInfo:
    version: str
    kafka_cluster_id: str
    service_id: str
    status: str


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    body: Any = None
    idempotent: bool = True
    accept: str = KSQL_JSON
    content_type: str = KSQL_JSON  # /ksql's versioned type; the streaming API takes plain JSON
    timeout: float | None = None  # longer than the client's for a statement that waits on the server


T = TypeVar("T")


def _while_refused(attempt: Callable[[], T], waits: Callable[[KsqlError], bool], bound: Bound) -> T:
    """`attempt()` again while it fails with an error `waits` says to wait out (a server still
    starting, a table not queryable yet), within `bound`; then that last error."""
    refused: list[KsqlError] = []

    def once() -> T | None:
        try:
            return attempt()
        except KsqlError as exc:
            if not waits(exc):
                raise
            refused[:] = [exc]
            return None

    found = until(once, bound)
    if found is None:
        raise refused[0]
    return found


class KsqlClient:
    """One ksqlDB server (or cluster behind one URL). `requests` counts HTTP requests sent."""

    def __init__(
        self,
        base_url: str,
        *,
        name: str = "default",
        auth: tuple[str, str] | None = None,
        verify: bool | str = True,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        retry: KsqlRetryPolicy = KsqlRetryPolicy(),
    ) -> None:
        self.name, self._retry, self._timeout = name, retry, timeout
        self.last_sequence: int | None = None
        self.requests = 0
        self._server = http.server_of(base_url)
        self._http = http.client(
            base_url,
            what=f"ksqlDB '{name}'",
            auth=auth,
            verify=verify,
            timeout=timeout,
            transport=transport,
            hooks={"response": [self._on_response]},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> KsqlClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- the API -----------------------------------------------------------------------

    def info(self) -> ServerInfo:
        doc = self._json(_Request("GET", "/info"))
        info = doc.get("KsqlServerInfo") if isinstance(doc, dict) else None
        if not isinstance(info, dict):
            raise self._unexpected("GET", "/info", "no KsqlServerInfo in the answer")
        return ServerInfo(
            str(info.get("version", "")),
            str(info.get("kafkaClusterId", "")),
            str(info.get("ksqlServiceId", "")),
            str(info.get("serverStatus", "")),
        )

    def healthy(self) -> bool:
        doc = self._json(_Request("GET", "/healthcheck"))
        return isinstance(doc, dict) and doc.get("isHealthy") is True

    def execute(
        self, sql: str, properties: Mapping[str, str] | None = None, *, idempotent: bool = False, waits_s: float = 0.0
    ) -> list[dict[str, Any]]:
        """Run statement(s) on `/ksql`; the answer's entities, once every command is final. A
        statement ksqlDB refuses or fails raises KsqlStatementError. Writes are not re-sent
        after an ambiguous failure. `waits_s`: how long the server may hold the answer (ASSERT …
        TIMEOUT), added to the read timeout."""
        body: dict[str, Any] = {"ksql": sql, "streamsProperties": dict(properties or {})}
        if self.last_sequence is not None:
            body["commandSequenceNumber"] = self.last_sequence
        timeout = self._timeout + waits_s if waits_s else None
        doc = self._json(_Request("POST", "/ksql", body, idempotent, timeout=timeout))
        entities = doc if isinstance(doc, list) else []
        self._note_sequence(entities)
        self._settle(entities)
        self._raise_failed(entities)
        return entities

    def pull(self, sql: str) -> list[dict[str, Any]]:
        """A pull query on `/query-stream`: rows as {COLUMN: value}; asked again while the table
        is not queryable yet (a table created a moment ago), within the settle bound."""
        req = _Request(
            "POST", "/query-stream", {"sql": sql, "properties": {}}, accept=DELIMITED, content_type="application/json"
        )
        return _while_refused(
            lambda: self._rows(self._call(req)),
            lambda exc: bool(_NOT_QUERYABLE.search(exc.server_message)),
            self._retry.bound(self._retry.settle_timeout_s),
        )

    # --- answers -----------------------------------------------------------------------

    def _settle(self, entities: list[Any]) -> None:
        """A command answered before it finished (QUEUED, EXECUTING …): its final status, polled."""
        for e in entities:
            status = e.get("commandStatus") if isinstance(e, dict) else None
            if isinstance(status, dict) and status.get("status") in _PENDING:
                command = str(e.get("commandId", ""))
                final = until(partial(self._final, command), self._retry.bound(self._retry.settle_timeout_s))
                if final is None:
                    raise KsqlError(
                        f"command {command} still {status.get('status')} after {self._retry.settle_timeout_s:g} s",
                        self._where("GET", "/status"),
                    )
                e["commandStatus"] = final

    def _final(self, command: str) -> dict[str, Any] | None:
        doc = self._json(_Request("GET", "/status/" + quote(command, safe="/")))
        return doc if isinstance(doc, dict) and doc.get("status") not in _PENDING else None

    def _note_sequence(self, entities: list[Any]) -> None:
        numbers = [e.get("commandSequenceNumber") for e in entities if isinstance(e, dict)]
        seen = [n for n in numbers if isinstance(n, int) and n >= 0]
        if seen:
            self.last_sequence = max([*seen, self.last_sequence or 0])

    def _raise_failed(self, entities: list[Any]) -> None:
        call = self._where("POST", "/ksql")
        for e in entities:
            if not isinstance(e, dict):
                continue
            if e.get("@type") == "error_entity":
                raise KsqlStatementError(str(e.get("errorMessage", "error")), call, 200)
            status = e.get("commandStatus")
            if isinstance(status, dict) and status.get("status") == "ERROR":
                raise KsqlStatementError(str(status.get("message", "command failed")), call, 200)

    def _rows(self, response: httpx.Response) -> list[dict[str, Any]]:
        items = self._items(response)
        if not items or not isinstance(items[0], dict) or "columnNames" not in items[0]:
            raise self._unexpected("POST", "/query-stream", "no header with columnNames")
        for item in items[1:]:
            if isinstance(item, dict):  # an error after the header ends the stream
                raise from_status(500, item, "query failed", self._where("POST", "/query-stream"))
        names = [str(n) for n in items[0]["columnNames"]]
        return [dict(zip(names, row, strict=False)) for row in items[1:]]

    def _items(self, response: httpx.Response) -> list[Any]:
        """Delimited framing (a header object, then one JSON array per line) or, if the server
        chose `application/json`, the same items as one array."""
        text = response.text.strip()
        try:
            return list(json.loads(text)) if text.startswith("[") else [json.loads(x) for x in text.splitlines() if x]
        except ValueError as exc:
            raise self._unexpected("POST", "/query-stream", "answer is not JSON") from exc

    # --- the HTTP edge -----------------------------------------------------------------

    def _json(self, req: _Request) -> Any:
        response = self._call(req)
        try:
            return response.json() if response.content else None
        except ValueError as exc:
            raise self._unexpected(req.method, req.path, "answer is not JSON") from exc

    def _call(self, req: _Request) -> httpx.Response:
        """Send `req`; while the server is not ready yet (503, error 50302), again within the
        readiness bound."""
        bound = self._retry.bound(self._retry.ready_timeout_s, first_s=None)
        try:
            return _while_refused(lambda: self._retried(req), lambda exc: exc.not_ready, bound)
        except KsqlError as exc:
            if exc.not_ready:  # the bound is spent: say how long it was waited for
                exc.still_not_ready(self._retry.ready_timeout_s)
            raise

    def _retried(self, req: _Request) -> httpx.Response:
        """Send `req`; what failed transiently (or ambiguously, for a read) is sent again."""
        attempts = 0
        try:
            for attempt in self._retrying(req.idempotent):
                with attempt:
                    attempts += 1
                    return self._once(req)
        except KsqlError as exc:
            if attempts > 1:
                exc.gave_up_after(attempts)
            raise
        raise AssertionError("tenacity ends a retry loop by returning or raising")

    def _retrying(self, idempotent: bool) -> Retrying:
        return self._retry.retrying(lambda e: isinstance(e, KsqlError) and e.retryable(idempotent))

    def _once(self, req: _Request) -> httpx.Response:
        headers = {"Accept": req.accept}
        content = None
        if req.body is not None:
            headers["Content-Type"] = req.content_type
            content = json.dumps(req.body).encode()
        self.requests += 1
        try:
            response = self._http.request(
                req.method,
                req.path,
                content=content,
                headers=headers,
                timeout=req.timeout if req.timeout else httpx.USE_CLIENT_DEFAULT,
            )
        except httpx.TransportError as exc:
            _log.debug("%s %s -> %s", req.method, req.path, type(exc).__name__)
            raise from_transport(exc, self._where(req.method, req.path)) from exc
        if response.is_success:
            return response
        raise self._error(response, req)

    def _error(self, response: httpx.Response, req: _Request) -> KsqlError:
        try:
            doc = response.json()
        except ValueError:
            doc = None  # a proxy's HTML page: summarised by the reason phrase, not dumped
        if isinstance(doc, dict) and isinstance(doc.get("entities"), list):
            self._note_sequence(doc["entities"])  # statements before the failed one did run
        return from_status(response.status_code, doc, response.reason_phrase, self._where(req.method, req.path))

    def _unexpected(self, method: str, path: str, what: str) -> KsqlError:
        return KsqlError(f"unexpected answer: {what}", self._where(method, path))

    def _where(self, method: str, path: str) -> KsqlCall:
        return KsqlCall(self.name, self._server, method, path)

    def _on_response(self, response: httpx.Response) -> None:
        _log.debug("%s %s -> %d", response.request.method, response.request.url.path, response.status_code)

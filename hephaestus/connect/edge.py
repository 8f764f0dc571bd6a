"""The HTTP edge of one Connect cluster: one request, its answer checked, retries, ambiguity.

Three rules make a write trustworthy here:

1. **An answer counts only if it is Connect's.** Each request says what a success looks like
   (`Expect`): the JSON connector info naming the connector for a create or update, an empty
   or JSON body for pause/resume/stop/delete. A proxy's HTML page with a 200 is a failure.
2. **Never write twice.** After an ambiguous failure (a timeout, a reset after sending, a
   gateway error), the next attempt first *watches* the live cluster for up to `settle_s`:
   the write showing up means done; a write still not visible at the end is sent again; a
   cluster that cannot be read leaves the outcome unknown and nothing is resent.
3. **A dead cluster fails fast.** The `Breaker` remembers since when the cluster has given no
   answer; past the retry budget every further call fails at once, so a run over N
   connectors costs O(budget), not O(N × budget).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import httpx

from hephaestus.connect.errors import (
    Call,
    ClusterUnreachable,
    ConnectError,
    OutcomeUnknown,
    UnexpectedAnswer,
    from_status,
    from_transport,
)
from hephaestus.connect.redact import redact
from hephaestus.http import RetryPolicy
from hephaestus.polling import Bound, until

_log = logging.getLogger("hephaestus.connect")

# Tri-state answer of "does the live cluster show this write?": None when it cannot be read.
Seen = bool | None


class Expect(Enum):
    """What a successful answer must look like for the request to count as done."""

    JSON = "json"  # any JSON document (reads; shaped by the caller)
    INFO = "info"  # the connector info naming the connector (create, update)
    EMPTY = "empty"  # an empty body or JSON (delete, pause, resume, stop, restart)


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    connector: str | None = None
    params: tuple[tuple[str, str], ...] = ()
    body: Any = None
    masked: tuple[str, ...] = ()
    expect: Expect = Expect.JSON
    # For writes: does the live cluster show this request applied? (True/False/None unknown)
    applied: Callable[[], Seen] | None = None


@dataclass
class _Attempts:
    count: int = 0
    ambiguous: bool = False


class Breaker:
    """Since when, and how many times in a row, the cluster has given no answer at all; open
    once both reach the retry budget (time, and attempts: so retries with no waits, as in
    tests, still need a whole call's worth of failures). Thread-safe: apply is concurrent."""

    def __init__(self, budget_s: float, failures: int = 1, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget_s = budget_s
        self.failures = failures
        self._clock = clock
        self._down_since: float | None = None
        self._count = 0
        self._lock = threading.Lock()

    def failed(self) -> None:
        with self._lock:
            if self._down_since is None:
                self._down_since = self._clock()
            self._count += 1

    def answered(self) -> None:
        with self._lock:
            self._down_since = None
            self._count = 0

    @property
    def open(self) -> bool:
        with self._lock:
            since, count = self._down_since, self._count
        return since is not None and count >= self.failures and self._clock() - since >= self.budget_s


def is_write(request: httpx.Request) -> bool:
    # Validation is a PUT that changes nothing; counting it would make a no-op reconcile
    # that validates its inputs look like one that writes.
    validate = request.method == "PUT" and request.url.path.endswith("/config/validate")
    return request.method != "GET" and not validate


class ConnectEdge:
    """Sends `Request`s to one cluster with the rules above; counts requests and writes."""

    def __init__(
        self, http: httpx.Client, cluster: str, server: str, retry: RetryPolicy, settle_s: float, poll_s: float = 1.0
    ) -> None:
        self.http = http
        self.cluster = cluster
        self.server = server
        self.retry = retry
        self.settle_s = settle_s
        self.poll_s = poll_s
        self.breaker = Breaker(retry.budget_s, retry.attempts)
        self.requests = 0
        self.writes = 0
        self.listed = False  # GET /connectors has answered: a 404 there later is a restart, not a wrong URL
        self._count_lock = threading.Lock()

    def call(self, req: Request, once: bool = False) -> httpx.Response | None:
        """The checked answer; None when an earlier ambiguous attempt proved applied. `once`:
        a read that may fail rather than wait (no retry)."""
        if self.breaker.open:
            raise ClusterUnreachable("no answer for longer than the retry budget", self.where(req))
        attempts = _Attempts()
        retry = RetryPolicy.immediate(1) if once else self.retry
        try:
            for attempt in retry.retrying(_transient):
                with attempt:
                    return self._attempt(req, attempts)
        except ConnectError as exc:
            if attempts.count > 1:
                exc.gave_up_after(attempts.count)
            raise
        raise AssertionError("tenacity ends a retry loop by returning or raising")

    def _attempt(self, req: Request, attempts: _Attempts) -> httpx.Response | None:
        attempts.count += 1
        if attempts.count > 1 and self.breaker.open:  # not transient: ends the retry loop
            raise ClusterUnreachable("no answer for longer than the retry budget", self.where(req))
        # Only a write can land twice; a read after an ambiguous failure is simply sent again.
        if attempts.ambiguous and req.applied is not None and self._settled(req):
            return None
        try:
            return self.once(req)
        except ConnectError as exc:
            # A refusal after an ambiguous attempt may be the echo of that attempt's success
            # (POST → 409 exists, DELETE → 404): look once more before calling it a failure.
            if attempts.ambiguous and not exc.transient and self._seen(req) is True:
                return None
            attempts.ambiguous = attempts.ambiguous or exc.ambiguous
            raise

    def _settled(self, req: Request) -> bool:
        """Watch for an ambiguous write to land; True when it did (nothing to send again)."""
        last: list[Seen] = [None]

        def landed() -> bool | None:
            last[0] = seen = self._seen(req)
            if seen is None and self.breaker.open:
                return False  # the cluster cannot be read any more: stop watching
            return True if seen is True else None

        if until(landed, Bound(self.settle_s, self.poll_s)):
            return True
        if last[0] is None:
            raise OutcomeUnknown(
                "the write may have been applied and the cluster could not be read to tell; nothing was sent again",
                self.where(req),
            )
        return False

    def _seen(self, req: Request) -> Seen:
        return None if req.applied is None else req.applied()

    def once(self, req: Request) -> httpx.Response:
        """Exactly one HTTP request; a failure or a non-Connect answer becomes a ConnectError."""
        try:
            response = self.http.request(req.method, req.path, params=req.params or None, json=req.body)
        except httpx.TransportError as exc:
            _log.debug("%s %s -> %s", req.method, req.path, type(exc).__name__)
            self.breaker.failed()
            raise from_transport(exc, self.where(req)) from exc
        if response.status_code in (502, 503, 504):
            self.breaker.failed()  # a gateway answering for a cluster that does not
        else:
            self.breaker.answered()
        if not response.is_success:
            doc = _json(response)
            raise from_status(
                response.status_code,
                self._message(response, doc, req),
                self.where(req),
                from_connect=_connect_error(doc),
                listed_before=self.listed,
            )
        _check(response, req, self.where(req))
        self.listed = self.listed or (req.method, req.path) == ("GET", "/connectors")
        return response

    def on_request(self, request: httpx.Request) -> None:
        """httpx's request hook: counts what was sent, answered or not (a reset write counts)."""
        with self._count_lock:
            self.requests += 1
            self.writes += int(is_write(request))

    def _message(self, response: httpx.Response, doc: Any, req: Request) -> str:
        # Connect errors are {"error_code", "message"}; anything else (a proxy's HTML page)
        # is summarised by its reason phrase rather than dumped.
        text = doc.get("message") if isinstance(doc, dict) else None
        return redact(str(text or response.reason_phrase).strip(), req.masked)

    def where(self, req: Request) -> Call:
        return Call(self.cluster, self.server, req.method, req.path, req.connector)


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, ConnectError) and exc.transient


def _json(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _connect_error(doc: Any) -> bool:
    return isinstance(doc, dict) and "error_code" in doc


def _check(response: httpx.Response, req: Request, where: Call) -> None:
    """Raise UnexpectedAnswer unless the success answer is the one Connect gives for `req`."""
    if req.expect is Expect.EMPTY and not response.content:
        return
    doc = _json(response)
    kind = response.headers.get("content-type", "no content type").split(";")[0]
    if doc is None:
        raise UnexpectedAnswer(
            f"the answer is not Connect's JSON ({kind}, {len(response.content)} bytes)", where, response.status_code
        )
    if req.expect is Expect.INFO and not (
        isinstance(doc, dict) and doc.get("name") == req.connector and isinstance(doc.get("config"), dict)
    ):
        raise UnexpectedAnswer(
            "the answer is not the connector info naming this connector", where, response.status_code
        )

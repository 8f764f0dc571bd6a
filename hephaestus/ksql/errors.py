"""Typed failures of the ksqlDB REST edge, and which of them may be sent again.

ksqlDB answers errors as `{"@type": "generic_error" | "statement_error", "error_code",
"message", …}`; `error_code` is the HTTP status times 100 plus a detail (40001 bad
statement, 50301 timed out waiting for an earlier command, 50302 server not ready …).
Messages name the cluster, method, path and ksqlDB's own message, never a request body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from hephaestus.errors import HephaestusError
from hephaestus.http import no_answer

HTTP2_ONLY = 40004
NOT_READY = 50302  # the server is starting: every endpoint answers this until it is ready
# Refused before anything ran: safe to send again, even a write.
_NOT_RUN = frozenset({42901, 50301, 50303})
# Since ksqlDB 0.27 a connector statement fails with Connect's own status (409 exists, 404
# missing …) and an ASSERT that times out answers 417: the statement's failure, not the server's.
_STATEMENT_STATUS = frozenset({400, 404, 409, 417})
_NOT_RUN_STATUS = frozenset({429, 503})
# A proxy gave up waiting: the server may have run it. Only reads are sent again.
_MAYBE_RUN_STATUS = frozenset({502, 504})


@dataclass(frozen=True)
class KsqlCall:
    cluster: str
    server: str  # base URL without credentials
    method: str
    path: str


class KsqlError(HephaestusError):
    """A ksqlDB REST call failed. `transient`: sending it again is safe. `ambiguous`: the
    server may have acted on it, so only an idempotent request (a read) is sent again."""

    def __init__(
        self,
        server_message: str,
        call: KsqlCall,
        status: int | None = None,
        error_code: int | None = None,
        *,
        transient: bool = False,
        ambiguous: bool = False,
    ):
        self.server_message, self.call = server_message, call
        self.status, self.error_code = status, error_code
        self.transient, self.ambiguous = transient, ambiguous
        self.attempts = 1
        self.waited_s: float | None = None  # how long a not-ready server was waited for
        super().__init__(self._render())

    @property
    def not_ready(self) -> bool:
        """The server is starting (503 with 50302, or a bare 503 before its handlers exist)."""
        return self.error_code == NOT_READY or (self.status == 503 and self.error_code is None)

    def retryable(self, idempotent: bool) -> bool:
        return not self.not_ready and (self.transient or (self.ambiguous and idempotent))

    def still_not_ready(self, waited_s: float) -> None:
        self.waited_s = waited_s
        self.args = (self._render(),)

    def hint(self) -> str:
        if self.status in (401, 403):
            return f"check the credentials configured for ksqlDB '{self.call.cluster}'"
        if self.error_code == HTTP2_ONLY:
            return "this ksqlDB serves /query-stream over HTTP/2 only; hephaestus needs ksqlDB 0.24 or later"
        return f"see the log of the ksqlDB server at {self.call.server}"

    def gave_up_after(self, attempts: int) -> None:
        self.attempts = attempts
        self.args = (self._render(),)

    def _render(self) -> str:
        status = "" if self.status is None else f"HTTP {self.status}"
        code = "" if self.error_code is None else f"error {self.error_code}"
        detail = ", ".join(x for x in (status, code) if x)
        tries = f" after {self.attempts} attempts" if self.attempts > 1 else ""
        if self.waited_s is not None:
            tries = f", still not ready after {self.waited_s:g} s"
        return (
            f"ksqlDB '{self.call.cluster}': {self.call.method} {self.call.path} failed{tries}"
            f"{f' ({detail})' if detail else ''}: {self.server_message} — {self.hint()}"
        )


class KsqlStatementError(KsqlError):
    """ksqlDB refused or failed a statement (a 400 `statement_error`, an `error_entity`, or a
    command whose status is ERROR)."""

    def hint(self) -> str:
        return "fix the statement; nothing after it was sent"


def from_status(status: int, doc: Any, reason: str, call: KsqlCall) -> KsqlError:
    body = doc if isinstance(doc, dict) else {}
    message = str(body.get("message") or reason).strip()
    code = body.get("error_code") if isinstance(body.get("error_code"), int) else None
    if code in _NOT_RUN or status in _NOT_RUN_STATUS:
        return KsqlError(message, call, status, code, transient=True)
    if status in _MAYBE_RUN_STATUS:
        return KsqlError(message, call, status, code, ambiguous=True)
    if status in _STATEMENT_STATUS and code != HTTP2_ONLY and call.path == "/ksql":
        return KsqlStatementError(message, call, status, code)
    return KsqlError(message, call, status, code)


def from_transport(exc: httpx.TransportError, call: KsqlCall) -> KsqlError:
    found = no_answer(exc)
    if not found.maybe_sent:
        return KsqlError(found.what, call, transient=True)
    return KsqlError(found.what, call, ambiguous=found.network)

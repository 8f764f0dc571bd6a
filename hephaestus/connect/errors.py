"""Typed failures of the Kafka Connect REST edge, and which of them are worth retrying.

Messages name the cluster, method, path and Connect's own message (masked: see `redact`),
never a request body or a config value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from hephaestus.errors import HephaestusError
from hephaestus.http import no_answer


@dataclass(frozen=True)
class Call:
    """Where a failure happened. `server` is the base URL without credentials."""

    cluster: str
    server: str
    method: str
    path: str
    connector: str | None = None


class ConnectError(HephaestusError):
    """A Connect REST call failed.

    `transient`: worth retrying (rebalance, 502/503/504, network). `ambiguous`: the server may
    have applied the request although it failed (a timeout), so a write must be re-read
    before it is sent again.
    """

    def __init__(
        self,
        server_message: str,
        call: Call,
        status_code: int | None = None,
        *,
        transient: bool = False,
        ambiguous: bool = False,
    ) -> None:
        self.server_message = server_message
        self.call = call
        self.status_code = status_code
        self.transient = transient
        self.ambiguous = ambiguous
        self.attempts = 1
        super().__init__(self._render())

    @property
    def method(self) -> str:
        return self.call.method

    @property
    def path(self) -> str:
        return self.call.path

    @property
    def connector(self) -> str | None:
        return self.call.connector

    def hint(self) -> str:
        if self.status_code in (401, 403):
            return f"check the credentials configured for Connect cluster '{self.call.cluster}'"
        return f"see the log of the Connect worker at {self.call.server}"

    def gave_up_after(self, attempts: int) -> None:
        """Record that retries were exhausted, so the message says how hard we tried."""
        self.attempts = attempts
        self.args = (self._render(),)

    def _render(self) -> str:
        status = "" if self.status_code is None else f" (HTTP {self.status_code})"
        tries = f" after {self.attempts} attempts" if self.attempts > 1 else ""
        said = f": {self.server_message}" if self.server_message else ""
        return (
            f"Kafka Connect '{self.call.cluster}': {self.method} {self.path} failed{tries}"
            f"{status}{said} — {self.hint()}"
        )


class ConnectorNotFound(ConnectError):
    def hint(self) -> str:
        # Status is written asynchronously, so it can 404 just after a successful create.
        return (
            f"no connector '{self.connector}' on cluster '{self.call.cluster}' "
            "(GET /connectors lists them; status can lag a create by a few seconds)"
        )


class ConnectConflict(ConnectError):
    def hint(self) -> str:
        if self.transient:
            return "the Connect cluster is rebalancing; try again once it has settled"
        return "the request conflicts with the connector's current state (does it already exist?)"


class InvalidConnectorConfig(ConnectError):
    def hint(self) -> str:
        return (
            "fix the named keys of the connector config; "
            "PUT /connector-plugins/{class}/config/validate reports every invalid key"
        )


class ConnectUnavailable(ConnectError):
    def hint(self) -> str:
        return f"check that Kafka Connect cluster '{self.call.cluster}' at {self.call.server} is running and reachable"


class ClusterUnreachable(ConnectUnavailable):
    """The cluster gave no answer for longer than the retry budget: fail at once, send nothing."""

    def __init__(self, server_message: str, call: Call) -> None:
        super().__init__(server_message, call, transient=False)

    def hint(self) -> str:
        return f"unknown: cluster unreachable; {super().hint()}"


class OutcomeUnknown(ConnectError):
    """A write may or may not have been applied and the live state could not be read."""

    def hint(self) -> str:
        return "unknown: rerun reconcile once the cluster answers; it re-reads the live state first"


class UnexpectedAnswer(ConnectError):
    """A success status whose body is not what Connect answers (e.g. a proxy's HTML page)."""

    def hint(self) -> str:
        return f"check what answers at {self.call.server}: a proxy or another service, not Kafka Connect"


class NotConnectApi(ConnectError):
    """A 404 to the listing: `GET /connectors` exists on every Connect worker whose REST API is
    up, so the URL is not its REST API's root (a path after the port, another service)."""

    def __init__(self, server_message: str, call: Call, from_connect: bool) -> None:
        self.from_connect = from_connect
        super().__init__(server_message, call, 404)

    def hint(self) -> str:
        why = (
            "Connect answered, so the path after its address is not where it serves its API"
            if self.from_connect
            else "a Connect worker before 3.9 also answers so while it starts: if it is one, run again once it has"
        )
        cluster = self.call.cluster
        return f"the url of cluster '{cluster}' must be the REST API's base URL, as http://connect:8083 ({why})"

    def _render(self) -> str:
        return (
            f"Kafka Connect '{self.call.cluster}': {self.call.server} is not a Kafka Connect REST API: "
            f"{self.method} {self.path} answered 404 ({self.server_message}) — {self.hint()}"
        )


class NonStringConfigValue(HephaestusError, TypeError):
    """Refused before sending: Connect stores strings, and `True` vs "true" is a false diff
    (every PUT restarts the connector, so a false diff is a restart loop)."""

    def __init__(self, connector: str, offenders: Mapping[str, str]) -> None:
        self.connector = connector
        self.keys = tuple(sorted(offenders))
        # Only key names and type names: the values themselves may be secrets.
        listed = ", ".join(f"{key} ({offenders[key]})" for key in self.keys)
        super().__init__(
            f"connector '{connector}': config values must be strings, as Connect "
            f'stores them; quote these (e.g. "true", "1"): {listed}'
        )


_REBALANCE = "rebalance"
_STALE = "stale configuration"
_TIMED_OUT = "request timed out"
_BAD_REQUEST = "BadRequestException"


def from_status(
    status: int, server_message: str, call: Call, from_connect: bool = True, listed_before: bool = False
) -> ConnectError:
    """The typed error for an HTTP error answer; `transient` marks what may be retried.

    `from_connect`: the body was Connect's `{"error_code", "message"}`. A 404 to the listing
    of a cluster that never listed (`listed_before`) is a URL that is not Connect's REST API,
    said at once (issue 48: it was retried for 16 s as "not ready", or ended "no connector
    'None'"): Connect always has GET /connectors. A 404 to anything else without Connect's
    body, to a listing that answered before, or to a create, is a worker still starting or
    restarting mid-run (its REST resources not registered yet, or the request forwarded to a
    leader that is restarting): retried.
    """
    text = server_message.lower()
    if status == 404 and (call.method, call.path) == ("GET", "/connectors") and not listed_before:
        return NotConnectApi(server_message, call, from_connect)
    if status == 404 and (not from_connect or (call.method, call.path) == ("POST", "/connectors")):
        return ConnectUnavailable(f"not ready ({server_message})", call, status, transient=True)
    if status == 404:
        return ConnectorNotFound(server_message, call, status)
    if status == 409:
        busy = _REBALANCE in text or _STALE in text
        return ConnectConflict(server_message, call, status, transient=busy)
    # Connect 4.3 answers an unknown plugin class on validate with a 500 that wraps a
    # BadRequestException: a bad request all the same, and not worth retrying.
    if status in (400, 422) or (status == 500 and _BAD_REQUEST in server_message):
        return InvalidConnectorConfig(server_message, call, status)
    return _server_error(status, text, server_message, call)


def _server_error(status: int, text: str, server_message: str, call: Call) -> ConnectError:
    # Connect's 90 s internal timeout and gateway timeouts come after the request was handed on:
    # it may have been applied, hence ambiguous. A generic 500 is a real failure: not retried.
    timed_out = (status == 500 and _TIMED_OUT in text) or status in (502, 504)
    if timed_out or status == 503 or (status == 500 and _REBALANCE in text):
        return ConnectUnavailable(server_message, call, status, transient=True, ambiguous=timed_out)
    return ConnectError(server_message, call, status)


def from_transport(exc: httpx.TransportError, call: Call) -> ConnectError:
    """The typed error for a request that got no answer."""
    found = no_answer(exc)
    if found.network:
        return ConnectUnavailable(found.what, call, transient=True, ambiguous=found.maybe_sent)
    return ConnectError(found.what, call)

"""The Kafka Connect REST edge: one httpx.Client per cluster, typed errors, bounded retries.

Only transient failures are retried (see `errors.from_status`/`from_transport`). Request
bodies and config values are never logged nor put in messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from hephaestus.connect import parse
from hephaestus.connect.errors import (
    Call,
    ConnectError,
    ConnectorNotFound,
    NonStringConfigValue,
    from_status,
    from_transport,
)
from hephaestus.connect.models import ConnectorStatus, LiveConnector, Plugin, ValidationResult
from hephaestus.connect.redact import redact, sensitive_values
from hephaestus.connect.retry import RetryPolicy
from hephaestus.tls import verify_for

__all__ = ["ConnectClient", "RetryPolicy"]

_log = logging.getLogger("hephaestus.connect")

T = TypeVar("T")

# Connect requires a name in a validated config; it plays no part in the validation itself.
_VALIDATE_NAME = "hephaestus-validate"


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    connector: str | None = None
    params: tuple[tuple[str, str], ...] = ()
    body: Any = None
    masked: tuple[str, ...] = ()
    # For writes: does the live cluster already show this request applied? See `_attempt`.
    applied: Callable[[], bool] | None = None


@dataclass
class _Attempts:
    count: int = 0
    ambiguous: bool = False


def _path(name: str, *rest: str) -> str:
    # Names may hold spaces, braces or slashes: encode everything, keep no character "safe".
    return "/".join(("/connectors", quote(name, safe=""), *rest))


def _strings(connector: str, config: Mapping[str, str]) -> dict[str, str]:
    """Refuse, before any request, a config Connect would store differently than given."""
    offenders = {str(k): type(v).__name__ for k, v in config.items()
                 if not (isinstance(k, str) and isinstance(v, str))}
    if offenders:
        raise NonStringConfigValue(connector, offenders)
    return dict(config)


def _without_name(config: Mapping[str, str]) -> dict[str, str]:
    # Connect adds `name` to every stored config; it is not part of what we compare.
    return {k: v for k, v in config.items() if k != "name"}


def _is_write(request: httpx.Request) -> bool:
    # Validation is a PUT that changes nothing; counting it would make a no-op reconcile
    # that validates its inputs look like one that writes.
    validate = request.method == "PUT" and request.url.path.endswith("/config/validate")
    return request.method != "GET" and not validate


class ConnectClient:
    """One Kafka Connect cluster's REST API.

    `requests` counts every HTTP request sent (retries and re-reads included); `writes`
    counts those that may change the cluster: every non-GET except config validation.
    """

    def __init__(self, base_url: str, *, name: str = "default",
                 auth: tuple[str, str] | None = None, verify: bool | str = True,
                 timeout: float = 30.0, transport: httpx.BaseTransport | None = None,
                 retry: RetryPolicy = RetryPolicy()) -> None:
        self.name = name
        self._retry = retry
        self._server = str(httpx.URL(base_url).copy_with(username=None, password=None))
        self._requests = 0
        self._writes = 0
        self._http = httpx.Client(
            base_url=base_url, auth=auth, verify=verify_for(verify, f"Kafka Connect '{name}'"), timeout=timeout,
            transport=transport, headers={"Accept": "application/json"},
            event_hooks={"request": [self._on_request], "response": [self._on_response]})

    @property
    def requests(self) -> int:
        return self._requests

    @property
    def writes(self) -> int:
        return self._writes

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ConnectClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- reads -------------------------------------------------------------------------

    def fleet(self) -> dict[str, LiveConnector]:
        """Every connector with config and status, in ONE request, keyed by name."""
        req = _Request("GET", "/connectors", params=(("expand", "info"), ("expand", "status")))
        return self._shaped(req, parse.fleet)

    def get_config(self, name: str) -> dict[str, str]:
        return self._shaped(_Request("GET", _path(name, "config"), name), parse.config)

    def status(self, name: str) -> ConnectorStatus:
        """State and tasks only (no config); it lags writes, so 404 just after a create."""
        return self._shaped(_Request("GET", _path(name, "status"), name), parse.status)

    def offsets(self, name: str) -> dict[str, Any]:
        return self._shaped(_Request("GET", _path(name, "offsets"), name), parse.document)

    def plugins(self, connectors_only: bool = True) -> list[Plugin]:
        params = () if connectors_only else (("connectorsOnly", "false"),)
        return self._shaped(_Request("GET", "/connector-plugins", params=params), parse.plugins)

    def validate(self, connector_class: str, config: Mapping[str, str]) -> ValidationResult:
        """Connect answers 200 for an invalid config too: read `ok`/`errors` of the result.

        A `connector.class` in `config` wins over the argument, so a mismatch is reported by
        Connect (400) instead of hidden.
        """
        sent = _strings(config.get("name", _VALIDATE_NAME), config)
        body = {"connector.class": connector_class, "name": _VALIDATE_NAME, **sent}
        masked = sensitive_values(sent)
        path = f"/connector-plugins/{quote(connector_class, safe='')}/config/validate"
        req = _Request("PUT", path, body=body, masked=masked)
        return self._shaped(req, lambda doc: parse.validation(doc, connector_class, masked))

    # --- writes ------------------------------------------------------------------------

    def create(self, name: str, config: Mapping[str, str],
               initial_state: str | None = None) -> None:
        """`POST /connectors`; 409 (ConnectConflict) if it exists. `initial_state` needs 3.7+."""
        sent = _strings(name, config)
        body: dict[str, Any] = {"name": name, "config": sent}
        if initial_state is not None:
            body["initial_state"] = initial_state
        self._call(_Request("POST", "/connectors", name, body=body,
                            masked=sensitive_values(sent),
                            applied=lambda: self._has_config(name, sent)))

    def put_config(self, name: str, config: Mapping[str, str]) -> bool:
        """Create-or-update; True if created (201), False if updated (200).

        Every PUT restarts the connector, so only call it for a real diff. When a timed-out
        PUT is confirmed applied by re-reading, whether it created cannot be told: False.
        """
        sent = _strings(name, config)
        response = self._call(_Request("PUT", _path(name, "config"), name, body=sent,
                                       masked=sensitive_values(sent),
                                       applied=lambda: self._has_config(name, sent)))
        return response is not None and response.status_code == 201

    def delete(self, name: str) -> None:
        """Offsets survive a delete: recreating the same name resumes from them."""
        self._call(_Request("DELETE", _path(name), name, applied=lambda: self._absent(name)))

    def restart(self, name: str, include_tasks: bool = True,
                only_failed: bool = True) -> dict[str, Any]:
        """The status body of a 202, or {} for the plain form's 204."""
        params = (("includeTasks", str(include_tasks).lower()),
                  ("onlyFailed", str(only_failed).lower()))
        req = _Request("POST", _path(name, "restart"), name, params=params)
        return self._shaped(req, parse.document)

    def pause(self, name: str) -> None:
        self._call(_Request("PUT", _path(name, "pause"), name))

    def resume(self, name: str) -> None:
        self._call(_Request("PUT", _path(name, "resume"), name))

    def stop(self, name: str) -> None:
        """Kafka 3.5+: stops the connector and drops its tasks (needed to alter offsets)."""
        self._call(_Request("PUT", _path(name, "stop"), name))

    # --- the HTTP edge -----------------------------------------------------------------

    def _shaped(self, req: _Request, shape: Callable[[Any], T]) -> T:
        answer = self._answer(req)
        try:
            return shape(answer)
        except (ValueError, TypeError) as exc:
            raise ConnectError(f"unexpected answer: {exc}", self._where(req)) from exc

    def _answer(self, req: _Request) -> Any:
        """The decoded JSON answer; None for an empty one (204, or confirmed by re-reading)."""
        response = self._call(req)
        if response is None or not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ConnectError("answer is not JSON", self._where(req),
                               response.status_code) from exc

    def _call(self, req: _Request) -> httpx.Response | None:
        """Send `req`, retrying transient failures with backoff; see `_attempt` for None."""
        attempts = _Attempts()
        try:
            for attempt in self._retry.retrying():
                with attempt:
                    return self._attempt(req, attempts)
        except ConnectError as exc:
            if attempts.count > 1:
                exc.gave_up_after(attempts.count)
            raise
        raise AssertionError("tenacity ends a retry loop by returning or raising")

    def _attempt(self, req: _Request, attempts: _Attempts) -> httpx.Response | None:
        # Connect's 500 "Request timed out" (its 90 s internal limit) and our own read timeouts
        # can come after the write reached the config topic. Sending it again could fail
        # spuriously (POST → 409 exists, DELETE → 404) or write twice (one more restart), so
        # after such an ambiguous failure we first re-read, and return None — done, nothing
        # sent — when the live cluster already shows the write: same config after create or
        # put, 404 after delete. A later non-transient refusal is checked the same way, as it
        # may be the echo of the earlier attempt's success.
        attempts.count += 1
        if attempts.ambiguous and self._applied(req):
            return None
        try:
            return self._once(req)
        except ConnectError as exc:
            if attempts.ambiguous and not exc.transient and self._applied(req):
                return None
            attempts.ambiguous = attempts.ambiguous or exc.ambiguous
            raise

    def _applied(self, req: _Request) -> bool:
        return req.applied is not None and req.applied()

    def _has_config(self, name: str, sent: Mapping[str, str]) -> bool:
        try:
            live = parse.config(self._once(_Request("GET", _path(name, "config"), name)).json())
        except (ConnectError, ValueError, TypeError):
            return False
        return _without_name(live) == _without_name(sent)

    def _absent(self, name: str) -> bool:
        try:
            self._once(_Request("GET", _path(name, "config"), name))
        except ConnectorNotFound:
            return True
        except ConnectError:
            return False
        return False

    def _once(self, req: _Request) -> httpx.Response:
        """Exactly one HTTP request; a failure becomes a typed ConnectError."""
        try:
            response = self._http.request(req.method, req.path, params=req.params or None,
                                          json=req.body)
        except httpx.TransportError as exc:
            _log.debug("%s %s -> %s", req.method, req.path, type(exc).__name__)
            raise from_transport(exc, self._where(req)) from exc
        if response.is_success:
            return response
        raise from_status(response.status_code, self._message(response, req), self._where(req))

    def _message(self, response: httpx.Response, req: _Request) -> str:
        try:
            doc = response.json()
        except ValueError:
            doc = None
        # Connect errors are {"error_code", "message"}; anything else (a proxy's HTML page)
        # is summarised by its reason phrase rather than dumped.
        text = doc.get("message") if isinstance(doc, dict) else None
        return redact(str(text or response.reason_phrase).strip(), req.masked)

    def _where(self, req: _Request) -> Call:
        return Call(self.name, self._server, req.method, req.path, req.connector)

    def _on_request(self, request: httpx.Request) -> None:
        self._requests += 1
        self._writes += int(_is_write(request))

    def _on_response(self, response: httpx.Response) -> None:
        request = response.request
        _log.debug("%s %s -> %d", request.method, request.url.raw_path.decode("ascii"),
                   response.status_code)

"""The Kafka Connect REST edge: one httpx.Client per cluster, typed errors, bounded retries.

Only transient failures are retried (see `errors.from_status`/`from_transport`). Request
bodies and config values are never logged nor put in messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from hephaestus.connect import parse
from hephaestus.connect.edge import ConnectEdge, Expect, Request
from hephaestus.connect.errors import (
    ConnectConflict,
    ConnectError,
    ConnectorNotFound,
    ConnectUnavailable,
    NonStringConfigValue,
    from_transport,
)
from hephaestus.connect.models import ConnectorStatus, LiveConnector, Plugin, ValidationResult
from hephaestus.connect.readback import Readback, restarted
from hephaestus.connect.readback import path as _path
from hephaestus.connect.redact import sensitive_values
from hephaestus.http import RetryPolicy, client, server_of
from hephaestus.polling import Bound, until
from hephaestus.secrets import REDACTOR

__all__ = ["ConnectClient", "RetryPolicy"]

_log = logging.getLogger("hephaestus.connect")

T = TypeVar("T")

# Connect requires a name in a validated config; it plays no part in the validation itself.
_VALIDATE_NAME = "hephaestus-validate"


def _strings(connector: str, config: Mapping[str, str]) -> dict[str, str]:
    """Refuse, before any request, a config Connect would store differently than given."""
    offenders = {str(k): type(v).__name__ for k, v in config.items() if not (isinstance(k, str) and isinstance(v, str))}
    if offenders:
        raise NonStringConfigValue(connector, offenders)
    return dict(config)


class ConnectClient:
    """One Kafka Connect cluster's REST API.

    `requests` counts every HTTP request sent (retries and re-reads included); `writes`
    counts those that may change the cluster: every non-GET except config validation.
    """

    def __init__(
        self,
        base_url: str,
        *,
        name: str = "default",
        auth: tuple[str, str] | None = None,
        verify: bool | str = True,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy = RetryPolicy(),
        settle_s: float | None = None,
        poll_s: float = 1.0,
    ) -> None:
        """`settle_s`: after an ambiguous write, how long the live state is watched for it
        before it is sent again (default: as long as its answer was waited for, `timeout`)."""
        self.name = name
        server = server_of(base_url)
        self._http = client(
            base_url,
            what=f"Kafka Connect '{name}'",
            auth=auth,
            verify=verify,
            timeout=timeout,
            transport=transport,
            headers={"Accept": "application/json"},
            hooks={"response": [self._on_response]},
        )
        self._edge = ConnectEdge(self._http, name, server, retry, timeout if settle_s is None else settle_s, poll_s)
        self._seen = Readback(self._edge)
        self._http.event_hooks["request"] = [self._edge.on_request]
        self._secret_keys: dict[str, frozenset[str]] = {}
        self._started = False

    @property
    def requests(self) -> int:
        return self._edge.requests

    @property
    def writes(self) -> int:
        return self._edge.writes

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ConnectClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- reads -------------------------------------------------------------------------

    # A restarted worker finishes starting (joins its group, reads the config topic) within
    # seconds to a minute; longer than this, the run reports it rather than wait on.
    STARTUP_TIMEOUT_S = 120.0
    STARTUP_POLL_S = 1.0

    def wait_started(self) -> None:
        """Connect 3.9+ answers `GET /health` 200 once the worker has finished starting and 503
        before (KIP-1017). A worker still starting may list only part of its fleet: a plan made
        from that would create what exists and miss what to delete. Waits for it, at most
        STARTUP_TIMEOUT_S. A 404 is a Connect without the endpoint (before 3.9); any other
        answer, or none, is left to the request that follows to report."""
        if self._started:
            return
        last: list[httpx.Response] = []

        def started() -> bool | None:
            try:
                response = self._http.get("/health")
            except httpx.TransportError:
                return True  # no answer at all: the request that follows reports it
            last[:] = [response]
            self._started = response.status_code != 503
            return True if self._started else None

        if until(started, Bound(self.STARTUP_TIMEOUT_S, self.STARTUP_POLL_S)) is None:
            said = last[0].text[:200]
            raise ConnectUnavailable(
                f"the worker is still starting after {self.STARTUP_TIMEOUT_S:.0f} s (GET /health: {said})",
                self._edge.where(Request("GET", "/health")),
            )

    def _refuse_starting(self) -> None:
        """One look at `GET /health` (no wait): a 503 raises, and so does no answer: a look asks
        a silent cluster once, not once more for the listing (a second timeout to wait out)."""
        if self._started:
            return
        try:
            response = self._http.get("/health")
        except httpx.TransportError as exc:
            raise from_transport(exc, self._edge.where(Request("GET", "/health"))) from exc
        self._started = response.status_code != 503
        if not self._started:
            raise ConnectUnavailable(
                f"the worker is still starting (GET /health: {response.text[:200]})",
                self._edge.where(Request("GET", "/health")),
            )

    def fleet(self) -> dict[str, LiveConnector]:
        """Every connector with config and status, in ONE listing, keyed by name, once the
        worker has finished starting (wait_started)."""
        self.wait_started()
        req = Request("GET", "/connectors", params=(("expand", "info"), ("expand", "status")))
        found = self._shaped(req, parse.fleet)
        for c in found.values():
            REDACTOR.learn_config(c.config)  # literal secrets live configs hold, masked from now on
        return found

    def glance(self) -> dict[str, LiveConnector]:
        """The fleet in one listing, asked once (no retry, no wait for a starting worker): for a
        look at a cluster a run does not change, where no answer is a warning, not a wait.
        A worker still starting (`GET /health` 503) is unavailable: it may list part of its fleet."""
        self._refuse_starting()
        req = Request("GET", "/connectors", params=(("expand", "info"), ("expand", "status")))
        found = self._shaped(req, parse.fleet, once=True)
        for c in found.values():
            REDACTOR.learn_config(c.config)
        return found

    def kafka_cluster_id(self) -> str:
        """The Kafka cluster behind this Connect cluster (`GET /`): its identity in a sealed plan
        and in the fleet's rules (two Connect clusters on one Kafka share its topics)."""
        return self._shaped(Request("GET", "/"), parse.kafka_cluster_id)

    def secret_keys(self, connector_class: str) -> frozenset[str]:
        """The keys the live plugin types PASSWORD (`GET /connector-plugins/{class}/config`),
        once per class per client; taught to the redactor. Empty when the plugin is unknown."""
        if connector_class not in self._secret_keys:
            path = f"/connector-plugins/{quote(connector_class, safe='')}/config"
            self._secret_keys[connector_class] = self._shaped(Request("GET", path), parse.password_keys)
            REDACTOR.learn_secret_keys(self._secret_keys[connector_class])
        return self._secret_keys[connector_class]

    def secret_keys_known(self, connector_class: str) -> frozenset[str]:
        """`secret_keys`, or none when the plugin cannot be asked (key names and value shapes
        still apply): what every caller that only needs them as a hint does."""
        try:
            return self.secret_keys(connector_class)
        except ConnectError:
            return frozenset()

    def statuses(self) -> dict[str, ConnectorStatus]:
        """Every connector's status (no config), in ONE request: what readiness polls."""
        return self._shaped(Request("GET", "/connectors", params=(("expand", "status"),)), parse.statuses)

    def get_config(self, name: str) -> dict[str, str]:
        found = self._shaped(Request("GET", _path(name, "config"), name), parse.config)
        REDACTOR.learn_config(found)
        return found

    def task_configs(self, name: str, once: bool = False) -> list[dict[str, str]]:
        """`GET /connectors/{name}/tasks`: the config each task was last given. `once`: no retry
        (a readiness poll asks again at its next listing)."""
        return self._shaped(Request("GET", _path(name, "tasks"), name), parse.task_configs, once)

    def status(self, name: str) -> ConnectorStatus:
        """State and tasks only (no config); it lags writes, so 404 just after a create."""
        return self._shaped(Request("GET", _path(name, "status"), name), parse.status)

    def offsets(self, name: str) -> dict[str, Any]:
        return self._shaped(Request("GET", _path(name, "offsets"), name), parse.document)

    def plugins(self, connectors_only: bool = True, once: bool = False) -> list[Plugin]:
        params = () if connectors_only else (("connectorsOnly", "false"),)
        return self._shaped(Request("GET", "/connector-plugins", params=params), parse.plugins, once)

    def validate(self, connector_class: str, config: Mapping[str, str]) -> ValidationResult:
        """Connect answers 200 for an invalid config too: read `ok`/`errors` of the result.

        A `connector.class` in `config` wins over the argument, so a mismatch is reported by
        Connect (400) instead of hidden.
        """
        sent = _strings(config.get("name", _VALIDATE_NAME), config)
        body = {"connector.class": connector_class, "name": _VALIDATE_NAME, **sent}
        masked = sensitive_values(sent)
        path = f"/connector-plugins/{quote(connector_class, safe='')}/config/validate"
        req = Request("PUT", path, body=body, masked=masked)
        return self._shaped(req, lambda doc: parse.validation(doc, connector_class, masked))

    # --- writes ------------------------------------------------------------------------
    # Each write names what Connect answers on success (`Expect`) and how to tell from the
    # live state that it was applied (`applied`), which the edge uses after an ambiguous try.

    def create(self, name: str, config: Mapping[str, str], initial_state: str | None = None) -> str:
        """`POST /connectors`: "created", or "exists" when it already runs this very config
        (a concurrent create, or the echo of our own); another config there is a conflict.
        `initial_state` needs Connect 3.7+."""
        sent = _strings(name, config)
        body: dict[str, Any] = {"name": name, "config": sent}
        if initial_state is not None:
            body["initial_state"] = initial_state
        req = Request(
            "POST",
            "/connectors",
            name,
            body=body,
            masked=sensitive_values(sent),
            expect=Expect.INFO,
            applied=lambda: self._seen.config(name, sent),
        )
        try:
            self._edge.call(req)
        except ConnectConflict as exc:
            if exc.transient or self._seen.config(name, sent) is not True:
                raise
            return "exists"
        return "created"

    def put_config(self, name: str, config: Mapping[str, str]) -> bool:
        """Create-or-update; True if created (201), False if updated (200).

        Every PUT restarts the connector, so only call it for a real diff. When a timed-out
        PUT is confirmed applied by re-reading, whether it created cannot be told: False.
        """
        sent = _strings(name, config)
        response = self._edge.call(
            Request(
                "PUT",
                _path(name, "config"),
                name,
                body=sent,
                masked=sensitive_values(sent),
                expect=Expect.INFO,
                applied=lambda: self._seen.config(name, sent),
            )
        )
        return response is not None and response.status_code == 201

    def delete(self, name: str) -> str:
        """ "deleted", or "already gone" (404). Offsets survive a delete: recreating the same
        name resumes from them."""
        req = Request("DELETE", _path(name), name, expect=Expect.EMPTY, applied=lambda: self._seen.absent(name))
        try:
            self._edge.call(req)
        except ConnectorNotFound:
            return "already gone"
        return "deleted"

    def restart(self, name: str, include_tasks: bool = True, only_failed: bool = True) -> dict[str, Any]:
        """The status body of a 202, or {} for the plain form's 204 (or a restart seen applied)."""
        params = (("includeTasks", str(include_tasks).lower()), ("onlyFailed", str(only_failed).lower()))
        req = Request(
            "POST",
            _path(name, "restart"),
            name,
            params=params,
            expect=Expect.EMPTY,
            applied=lambda: self._seen.state(name, restarted),
        )
        return self._shaped(req, parse.document)

    def pause(self, name: str) -> None:
        self._write_state(name, "pause", lambda st: st.state == "PAUSED")

    def resume(self, name: str) -> None:
        self._write_state(name, "resume", lambda st: st.state not in ("PAUSED", "STOPPED"))

    def stop(self, name: str) -> None:
        """Kafka 3.5+: stops the connector and drops its tasks (needed to alter offsets)."""
        self._write_state(name, "stop", lambda st: st.state == "STOPPED")

    def alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> None:
        """`PATCH /connectors/{name}/offsets` (Kafka 3.6+; the connector must be STOPPED):
        partitions not named keep their offsets. Offsets hold no secrets, positions only."""
        body = {"offsets": offsets}
        self._edge.call(
            Request(
                "PATCH",
                _path(name, "offsets"),
                name,
                body=body,
                expect=Expect.EMPTY,
                applied=lambda: self._seen.offsets(name, offsets),
            )
        )

    def reset_offsets(self, name: str) -> None:
        """`DELETE /connectors/{name}/offsets` (Kafka 3.6+; STOPPED): a sink's consumer group
        offsets are deleted, so it reads its topics again from the start."""
        self._edge.call(
            Request(
                "DELETE", _path(name, "offsets"), name, expect=Expect.EMPTY, applied=lambda: self._seen.no_offsets(name)
            )
        )

    def _write_state(self, name: str, verb: str, reached: Callable[[ConnectorStatus], bool]) -> None:
        self._edge.call(
            Request(
                "PUT", _path(name, verb), name, expect=Expect.EMPTY, applied=lambda: self._seen.state(name, reached)
            )
        )

    # --- answers -----------------------------------------------------------------------

    def _shaped(self, req: Request, shape: Callable[[Any], T], once: bool = False) -> T:
        response = self._edge.call(req, once)
        answer = response.json() if response is not None and response.content else None
        try:
            return shape(answer)
        except (ValueError, TypeError) as exc:
            raise ConnectError(f"unexpected answer: {exc}", self._edge.where(req)) from exc

    def _on_response(self, response: httpx.Response) -> None:
        request = response.request
        _log.debug("%s %s -> %d", request.method, request.url.raw_path.decode("ascii"), response.status_code)

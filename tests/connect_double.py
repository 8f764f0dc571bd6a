"""A Kafka Connect REST double, as strict as the real server on what hephaestus uses, with
fault injection: for the faults the real stack can't produce on demand.

Reached through `httpx.MockTransport(double)` in unit tests, or over loopback HTTP with
`serve(double)` when a whole CLI run needs a URL. Where each behaviour comes from (Kafka 4.3
`ConnectorsResource`/`ConnectorPluginsResource`, checked against the real stack in
tests/stack/test_smoke.py):

- `GET /connectors?expand=status[&expand=info]`: `{name: {"status": …, "info": …}}`.
- `POST /connectors {name, config[, initial_state]}`: 201 + connector info; 409 "Connector
  NAME already exists"; 400 without a name or config.
- `PUT /connectors/N/config`: 201 created / 200 updated, both with the connector info; it
  restarts the connector (here: its tasks restart and report RUNNING again).
- `DELETE /connectors/N`: 204; 404 `{"error_code": 404, "message": "Connector N not found"}`.
- `GET …/config`, `…/status`, `…/tasks`; `PUT …/pause` 202, `…/resume` 202, `…/stop` 204;
  `POST …/restart?includeTasks&onlyFailed` 202 + status (tasks marked RESTARTING).
- `GET …/offsets`: `{"offsets": [{"partition", "offset"}]}`; `PATCH …/offsets {"offsets": […]}`:
  400 unless the connector is STOPPED, else 200 + message (partitions not named are kept).
- `PUT /connector-plugins/C/config/validate`: 200 with `error_count` and `configs` (each with
  its `definition.type`); `GET /connector-plugins/C/config`: the ConfigKeyInfo list.
- `GET /connector-plugins[?connectorsOnly=false]` (`ConnectorPluginsResource`): `[{"class",
  "type", "version"}]`, one entry per installed version (KIP-891, Connect 4.1+), only sources
  and sinks unless `connectorsOnly=false`.
- A status (`…/status`, the listing's) names the `version` each connector and task runs (KIP-891):
  the newest installed version of its class that its `connector.plugin.version` allows, as
  `PluginVersionUtils` reads a pin (none or `latest`: the newest; a plain version: exactly it).
  `versions = False` answers as a worker before 4.1 does: no `version` in a status.
- `GET /` (`RootResource`): `{"version", "commit", "kafka_cluster_id"}`.
- `GET /health` (KIP-1017, Connect 3.9+, `HealthResource`): 200 `{"status": "healthy", …}` once
  the worker has started, 503 `{"status": "starting", …}` before (`starting` counts those).
- A path no resource serves (`GET /kafka/connectors`: a base URL with a path Connect is not
  at): 404 `{"error_code": 404, "message": "HTTP 404 Not Found"}`, Jersey's NotFoundException
  as `ConnectExceptionMapper` maps it. `GET /connectors/connectors` (a base URL ending in
  /connectors) is `ConnectorsResource` asked for a connector named "connectors": "Connector
  connectors not found", as any missing connector.
Errors are Connect's `{"error_code", "message"}` JSON.

Apache Kafka's Connect masks nothing in a connector's config (`GET …/config`, the listing's
`info`): it returns what was written, placeholders unresolved. Some managed platforms answer
the values of PASSWORD-typed keys masked instead (Confluent Cloud, Aiven, MSK Connect, as
`****` or `[hidden]`); `mask` set does that for every key `plugin_keys` types PASSWORD, in
`GET …/config` and the connector info (listing, create, PUT). Task configs (`GET …/tasks`) are
left as written: what those platforms answer there is not documented. Off by default.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

import httpx

from tests.loopback import serving

# A fault sees each request first: an answer or an exception to raise replaces the server's
# own; None lets the request through. It may also change the double's state.
Fault = Callable[[httpx.Request, "ConnectDouble"], httpx.Response | Exception | None]


@dataclass
class Connector:
    name: str
    config: dict[str, str]
    state: str = "RUNNING"
    task_states: list[str] = field(default_factory=lambda: ["RUNNING"])
    trace: str | None = None
    # States the tasks go through on the next listings after a (re)start: ["RUNNING", "FAILED"]
    # means RUNNING at the first status read, FAILED from the second on.
    script: list[str] = field(default_factory=list)
    type: str = "sink"
    offsets: list[dict[str, Any]] = field(default_factory=list)  # GET/PATCH …/offsets


# The first path segment of each of Connect's REST resources (RootResource, ConnectorsResource,
# ConnectorPluginsResource, LoggingResource at /admin, HealthResource since 3.9).
_RESOURCES = frozenset({"", "connectors", "connector-plugins", "admin", "health"})


def error(status: int, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error_code": status, "message": message})


class ConnectDouble:
    def __init__(self, *faults: Fault) -> None:
        self.connectors: dict[str, Connector] = {}
        self.faults = list(faults)
        self.log: list[tuple[str, str]] = []  # (method, path) of every request that got here
        self.on_start: dict[str, list[str]] = {}  # name -> task state script after each start
        self.plugin_keys: dict[str, str] = {}  # config key -> ConfigDef type, for every plugin
        self.mask = ""  # a managed platform's answer for a PASSWORD value ("": Kafka's, none)
        self.starting = 0  # GET /health answers 503 this many more times
        self.kafka_cluster_id = "dbl-kafka-cluster-0"  # what GET / names
        # What GET /connector-plugins lists: (class, type, version), one entry per installed version.
        self.plugins: list[tuple[str, str, str]] = [
            ("io.debezium.connector.postgresql.PostgresConnector", "source", "3.5.0.Final"),
            ("io.debezium.connector.jdbc.JdbcSinkConnector", "sink", "3.5.0.Final"),
            ("io.confluent.connect.jdbc.JdbcSinkConnector", "sink", "10.8.4"),
            ("org.apache.kafka.connect.json.JsonConverter", "converter", "4.3.1"),
        ]
        self.worker_id = "w1:8083"  # what statuses name as the worker (its advertised host:port)
        self.task_workers: list[str] = []  # the workers tasks run on, in turn (none: worker_id)
        self.versions = True  # statuses name the version each runs (Connect 4.1+)
        self._lock = threading.Lock()

    # --- what tests read -------------------------------------------------------------

    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p in self.log if m != "GET" and not p.endswith("/config/validate")]

    def add(self, name: str, config: dict[str, str], state: str = "RUNNING", type: str = "sink") -> Connector:
        tasks = {"STOPPED": [], "PAUSED": ["PAUSED"]}.get(state, ["RUNNING"])
        c = Connector(name, {**config, "name": name}, state, tasks, type=type)
        self.connectors[name] = c
        return c

    # --- the server ------------------------------------------------------------------

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            for fault in self.faults:
                found = fault(request, self)
                if isinstance(found, Exception):
                    raise found
                if found is not None:
                    return found
            self.log.append((request.method, request.url.path))
            return self._route(request)

    def _route(self, request: httpx.Request) -> httpx.Response:
        parts = [unquote(p) for p in request.url.raw_path.decode().split("?")[0].split("/")[1:]]
        m = request.method
        if parts[0] not in _RESOURCES:  # Jersey matched no resource: ConnectExceptionMapper's answer
            return error(404, "HTTP 404 Not Found")
        if parts == ["health"]:
            return self._health()
        if parts == [""] and m == "GET":
            return httpx.Response(
                200, json={"version": "4.3.1", "commit": "0000000000000000", "kafka_cluster_id": self.kafka_cluster_id}
            )
        if parts == ["connector-plugins"] and m == "GET":
            every = request.url.params.get("connectorsOnly") == "false"
            listed = [{"class": c, "type": t, "version": v} for c, t, v in sorted(self.plugins)]
            return httpx.Response(200, json=[p for p in listed if every or p["type"] in ("source", "sink")])
        if parts[0] == "connector-plugins" and parts[-1] == "validate":
            configs = [
                {"definition": {"name": k, "type": t}, "value": {"name": k, "errors": []}}
                for k, t in self.plugin_keys.items()
            ]
            return httpx.Response(200, json={"name": parts[1], "error_count": 0, "groups": [], "configs": configs})
        if parts[0] == "connector-plugins" and parts[-1] == "config":
            if not parts[1]:  # Connect: no plugin by that name
                return error(404, "Unknown plugin: ")
            return httpx.Response(
                200, json=[{"name": k, "type": t, "required": False} for k, t in self.plugin_keys.items()]
            )
        if parts == ["connectors"]:
            return self._list(request) if m == "GET" else self._create(json.loads(request.content or b"{}"))
        c = self.connectors.get(parts[1])
        if m == "PUT" and parts[2:] == ["config"]:
            return self._put(parts[1], json.loads(request.content))
        if c is None:
            return error(404, f"Connector {parts[1]} not found")
        return self._on(c, m, parts[2:], request)

    def _on(self, c: Connector, m: str, rest: list[str], request: httpx.Request) -> httpx.Response:
        if m == "DELETE" and not rest:
            del self.connectors[c.name]
            return httpx.Response(204)
        if m == "GET" and rest == ["config"]:
            return httpx.Response(200, json=self._shown(c.config))
        if m == "GET" and rest == ["status"]:
            return httpx.Response(200, json=self._status(c))
        if m == "GET" and rest == ["tasks"]:
            return httpx.Response(
                200,
                json=[
                    {"id": {"connector": c.name, "task": i}, "config": dict(c.config)}
                    for i, _ in enumerate(c.task_states)
                ],
            )
        if rest == ["offsets"]:
            return self._offsets(c, m, request)
        if m == "PUT" and rest in (["pause"], ["resume"], ["stop"]):
            return self._set_state(c, rest[0])
        if m == "POST" and rest == ["restart"]:
            c.task_states = ["RESTARTING" if s == "FAILED" else s for s in c.task_states]
            self._start(c)
            return httpx.Response(202, json=self._status(c))
        return error(405, "HTTP 405 Method Not Allowed")

    def _offsets(self, c: Connector, m: str, request: httpx.Request) -> httpx.Response:
        if m == "GET":
            return httpx.Response(200, json={"offsets": c.offsets})
        if m not in ("PATCH", "DELETE"):
            return error(405, "HTTP 405 Method Not Allowed")
        if c.state != "STOPPED":
            return error(
                400,
                "Connectors must be in the STOPPED state before their offsets can be modified. "
                f"This can be done for the specified connector by issuing a 'PUT' request to the "
                f"'/connectors/{c.name}/stop' endpoint",
            )
        if m == "DELETE":  # ConnectorsResource.resetConnectorOffsets (Kafka 3.6+)
            c.offsets = []
            return httpx.Response(200, json={"message": "The offsets for this connector have been reset successfully"})
        body = json.loads(request.content or b"{}")
        if not isinstance(body.get("offsets"), list):
            return error(400, "Offsets must be specified")
        for o in body["offsets"]:
            c.offsets = [x for x in c.offsets if x["partition"] != o["partition"]] + [o]
        return httpx.Response(200, json={"message": "The offsets for this connector have been altered successfully"})

    def _health(self) -> httpx.Response:
        if self.starting:
            self.starting -= 1
            return httpx.Response(503, json={"status": "starting", "message": "Worker is still starting up."})
        return httpx.Response(
            200, json={"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}
        )

    def _list(self, request: httpx.Request) -> httpx.Response:
        expand = request.url.params.get_list("expand")
        out: dict[str, Any] = {}
        for name, c in sorted(self.connectors.items()):
            entry: dict[str, Any] = {}
            if "status" in expand:
                entry["status"] = self._status(c)
            if "info" in expand:
                entry["info"] = self._info(c)
            out[name] = entry
        return httpx.Response(200, json=out if expand else sorted(self.connectors))

    def _create(self, body: dict[str, Any]) -> httpx.Response:
        name, config = body.get("name"), body.get("config")
        if not isinstance(name, str) or not isinstance(config, dict):
            return error(400, "Connector name and config are required")
        if name in self.connectors:
            return error(409, f"Connector {name} already exists")
        c = self.add(name, config, body.get("initial_state", "RUNNING"))
        self._start(c)
        return httpx.Response(201, json=self._info(c))

    def _put(self, name: str, config: dict[str, str]) -> httpx.Response:
        created = name not in self.connectors
        state = "RUNNING" if created else self.connectors[name].state
        c = self.add(name, config, state)
        self._start(c)
        return httpx.Response(201 if created else 200, json=self._info(c))

    def _start(self, c: Connector) -> None:
        c.script = list(self.on_start.get(c.name, []))
        if c.state == "RUNNING":
            c.task_states = ["RUNNING"] * max(1, len(c.task_states))

    def _set_state(self, c: Connector, verb: str) -> httpx.Response:
        c.state = {"pause": "PAUSED", "resume": "RUNNING", "stop": "STOPPED"}[verb]
        c.task_states = [] if c.state == "STOPPED" else [c.state] * max(1, len(c.task_states))
        return httpx.Response(204 if verb == "stop" else 202)

    def _status(self, c: Connector) -> dict[str, Any]:
        if c.script:
            state = c.script.pop(0)
            c.task_states = [state] * max(1, len(c.task_states))
            c.trace = (
                "org.apache.kafka.connect.errors.ConnectException: boom\nCaused by: the root"
                if state == "FAILED"
                else None
            )
        runs = {"version": self.running(c.config)} if self.versions else {}
        tasks = [
            {
                "id": i,
                "state": s,
                "worker_id": self._task_worker(i),
                **runs,
                **({"trace": c.trace} if s == "FAILED" else {}),
            }
            for i, s in enumerate(c.task_states)
        ]
        conn = {"state": c.state, "worker_id": self.worker_id, **runs}
        return {"name": c.name, "type": c.type, "connector": conn, "tasks": tasks}

    def _task_worker(self, task: int) -> str:
        return self.task_workers[task % len(self.task_workers)] if self.task_workers else self.worker_id

    def running(self, config: dict[str, str]) -> str:
        """The version a connector of this config runs: its pin's, else the newest installed."""
        cls, pin = config.get("connector.class", ""), config.get("connector.plugin.version", "").strip()
        held = [v for c, _, v in self.plugins if c == cls]
        if pin and pin != "latest":
            return pin if pin in held else ""
        # Release numbers compared as numbers (its own reading, not the code under test's).
        return max(held, key=lambda v: tuple(int(n) for n in re.findall(r"\d+", v))) if held else ""

    def _shown(self, config: dict[str, str]) -> dict[str, str]:
        """A config as answered: PASSWORD values masked on a platform that masks them."""
        hidden = {k for k, t in self.plugin_keys.items() if t == "PASSWORD"} if self.mask else set()
        return {k: self.mask if k in hidden else v for k, v in config.items()}

    def _info(self, c: Connector) -> dict[str, Any]:
        return {
            "name": c.name,
            "config": self._shown(c.config),
            "type": c.type,
            "tasks": [{"connector": c.name, "task": i} for i, _ in enumerate(c.task_states)],
        }


@contextmanager
def serve(double: ConnectDouble) -> Iterator[str]:
    """The double on a loopback port, for a CLI run that needs a URL; yields the URL. Its
    statuses name that address as the worker (a real worker advertises its REST host:port)."""

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            request = httpx.Request(self.command, f"http://double{self.path}", content=body)
            try:
                response = double(request)
            except Exception:  # noqa: BLE001 - a raised fault: drop the connection
                self.close_connection = True
                return
            self.send_response(response.status_code)
            for key, value in response.headers.items():
                if key.lower() not in ("content-length", "transfer-encoding"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(response.content)))
            self.end_headers()
            self.wfile.write(response.content)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any  # noqa: N815 - http.server's names

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as url:
        if double.worker_id == "w1:8083":
            double.worker_id = httpx.URL(url).netloc.decode()
        yield url

"""The Connect REST edge against a scripted transport (httpx.MockTransport).

The double sits at the transport: it produces the faults a real Connect cluster cannot be
made to produce on demand (rebalance 409s, 90 s timeouts that still wrote, dropped
connections). Behaviour against a real cluster is covered by the stack tests.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import tenacity

from hephaestus.connect import (
    ConnectClient,
    ConnectConflict,
    ConnectError,
    ConnectorNotFound,
    ConnectUnavailable,
    InvalidConnectorConfig,
    LiveConnector,
    NonStringConfigValue,
    NotConnectApi,
    RetryPolicy,
    TaskState,
)
from hephaestus.errors import HephaestusError
from tests.connect_double import ConnectDouble

Step = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]

PASSWORD = "s3cr3t-Pa55word!"
SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
SOURCE = "io.debezium.connector.postgresql.PostgresConnector"
SINK_CONFIG = {
    "connector.class": SINK,
    "tasks.max": "1",
    "topics": "dev.bob.auth.public.users",
    "connection.url": "jdbc:postgresql://127.0.0.1:5432/auth",
    "connection.username": "auth",
    "connection.password": PASSWORD,
    "insert.mode": "upsert",
}


class Script:
    """Answers each request with the next step, and records what was asked. `GET /health` is
    answered as a started worker does (200) and not recorded: a script is about the rest."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.seen: list[httpx.Request] = []
        self.health = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/health":
            self.health += 1
            return httpx.Response(200, json={"status": "healthy", "message": "Worker has completed startup"})
        self.seen.append(request)
        assert self.steps, f"unexpected request {request.method} {request.url}"
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, httpx.Response):  # a fresh copy: one answer may be scripted twice
            return httpx.Response(step.status_code, headers=step.headers, content=step.content)
        return step(request)

    @property
    def calls(self) -> list[tuple[str, str]]:
        return [(r.method, r.url.raw_path.decode()) for r in self.seen]

    def body(self, index: int) -> Any:
        return json.loads(self.seen[index].content)


def error(status: int, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error_code": status, "message": message})


def info(status: int, name: str = "users-sink", config: dict[str, str] | None = None) -> httpx.Response:
    """What Connect answers a create (201) or update (200/201): the connector info naming it."""
    return httpx.Response(
        status, json={"name": name, "config": {**(config or SINK_CONFIG), "name": name}, "tasks": [], "type": "sink"}
    )


def client(script: Script, attempts: int = 6, **kwargs: Any) -> ConnectClient:
    return ConnectClient(
        "http://connect.test:8083",
        name="dwh",
        transport=httpx.MockTransport(script),
        retry=RetryPolicy.immediate(attempts),
        settle_s=kwargs.pop("settle_s", 0.0),
        poll_s=0.0,
        **kwargs,
    )


REBALANCE_409 = error(409, "Cannot complete request because of a conflicting operation (e.g. worker rebalance)")
STALE_409 = error(
    409,
    "Cannot complete request momentarily due to stale configuration (typically caused by a concurrent config change)",
)
EXPECTED_500 = error(500, "Request cannot be completed because a rebalance is expected")
TIMED_OUT_500 = error(500, "Request timed out")


def fleet_body() -> dict[str, Any]:
    """Shape of `GET /connectors?expand=info&expand=status` as the Connect docs give it."""
    return {
        "users-sink": {
            "info": {
                "name": "users-sink",
                "config": {**SINK_CONFIG, "name": "users-sink"},
                "tasks": [{"connector": "users-sink", "task": 0}],
                "type": "sink",
            },
            "status": {
                "name": "users-sink",
                "connector": {"state": "RUNNING", "worker_id": "10.0.0.1:8083"},
                "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "10.0.0.1:8083"}],
                "type": "sink",
            },
        },
        "bob-source": {
            "info": {
                "name": "bob-source",
                "config": {"connector.class": SOURCE, "name": "bob-source"},
                "tasks": [{"connector": "bob-source", "task": 1}, {"connector": "bob-source", "task": 0}],
                "type": "source",
            },
            "status": {
                "name": "bob-source",
                "connector": {"state": "RUNNING", "worker_id": "10.0.0.2:8083"},
                "tasks": [
                    {
                        "id": 1,
                        "state": "FAILED",
                        "worker_id": "10.0.0.2:8083",
                        "trace": "org.apache.kafka.connect.errors.ConnectException",
                    },
                    {"id": 0, "state": "RUNNING", "worker_id": "10.0.0.1:8083"},
                ],
                "type": "source",
            },
        },
        "no-status": {
            "info": {
                "name": "no-status",
                "config": {"connector.class": SINK},
                "tasks": [{"connector": "no-status", "task": 0}],
                "type": "sink",
            },
        },
    }


# --- reads -----------------------------------------------------------------------------


def test_fleet_reads_config_and_status_in_one_request() -> None:
    script = Script(httpx.Response(200, json=fleet_body()))
    with client(script) as connect:
        fleet = connect.fleet()
        assert (connect.requests, connect.writes) == (2, 0)  # GET /health, then the one listing
    assert script.calls == [("GET", "/connectors?expand=info&expand=status")] and script.health == 1
    assert list(fleet) == ["bob-source", "no-status", "users-sink"]
    sink = fleet["users-sink"]
    assert sink == LiveConnector(
        "users-sink",
        "sink",
        "RUNNING",
        "10.0.0.1:8083",
        None,
        (TaskState(0, "RUNNING", "10.0.0.1:8083", None),),
        config={**SINK_CONFIG, "name": "users-sink"},
    )
    assert sink.connector_class == SINK and sink.healthy and not sink.failed_tasks


def test_fleet_reports_failed_tasks_in_task_order() -> None:
    source = client(Script(httpx.Response(200, json=fleet_body()))).fleet()["bob-source"]
    assert source.type == "source" and source.state == "RUNNING"
    assert [t.id for t in source.tasks] == [0, 1]
    assert not source.healthy
    assert source.failed_tasks == (
        TaskState(1, "FAILED", "10.0.0.2:8083", "org.apache.kafka.connect.errors.ConnectException"),
    )


def test_fleet_marks_a_connector_without_status_unknown() -> None:
    lone = client(Script(httpx.Response(200, json=fleet_body()))).fleet()["no-status"]
    assert (lone.state, lone.worker_id, lone.trace) == ("UNKNOWN", "", None)
    assert lone.tasks == (TaskState(0, "UNKNOWN", "", None),)
    assert not lone.healthy


def test_fleet_leaves_out_a_connector_without_info() -> None:
    body = {"ghost": {"status": fleet_body()["users-sink"]["status"]}}
    assert client(Script(httpx.Response(200, json=body))).fleet() == {}


@pytest.mark.parametrize(
    ("state", "tasks", "healthy"),
    [
        ("RUNNING", ("RUNNING", "RUNNING"), True),
        ("RUNNING", ("RUNNING", "UNASSIGNED"), False),
        ("RUNNING", (), False),
        ("STOPPED", (), False),
        ("PAUSED", ("PAUSED",), False),
    ],
)
def test_healthy_needs_a_running_connector_with_running_tasks(
    state: str, tasks: tuple[str, ...], healthy: bool
) -> None:
    states = tuple(TaskState(i, s, "w", None) for i, s in enumerate(tasks))
    assert LiveConnector("c", "sink", state, "w", None, states).healthy is healthy


def test_status_of_one_connector() -> None:
    body = fleet_body()["bob-source"]["status"]
    status = client(Script(httpx.Response(200, json=body))).status("bob-source")
    assert (status.name, status.type, status.state) == ("bob-source", "source", "RUNNING")
    assert [t.id for t in status.failed_tasks] == [1]


def test_get_config_of_a_missing_connector_is_not_found() -> None:
    script = Script(error(404, "Connector nope not found"))
    with pytest.raises(ConnectorNotFound) as caught:
        client(script).get_config("nope")
    exc = caught.value
    assert (exc.status_code, exc.method, exc.path, exc.connector) == (404, "GET", "/connectors/nope/config", "nope")
    assert "Connector nope not found" in str(exc) and "'dwh'" in str(exc)
    assert len(script.seen) == 1


def test_names_are_url_encoded_in_paths() -> None:
    script = Script(httpx.Response(200, json={"connector.class": SINK}))
    client(script).get_config("bob sink {x}/y")
    assert script.calls == [("GET", "/connectors/bob%20sink%20%7Bx%7D%2Fy/config")]


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("a%2Fb", "/connectors/a%252Fb/config"),  # encoded once, not decoded
        ("..x", "/connectors/..x/config"),
        ("é?#", "/connectors/%C3%A9%3F%23/config"),
    ],
)
def test_every_name_is_percent_encoded_exactly_once(name: str, path: str) -> None:
    script = Script(httpx.Response(200, json={"connector.class": SINK}))
    client(script).get_config(name)
    assert script.calls == [("GET", path)]


def test_plugins_and_offsets() -> None:
    plugins = [{"class": SINK, "type": "sink", "version": "3.6.1.Final"}]
    offsets = {"offsets": [{"partition": {"server": "dev"}, "offset": {"lsn": 42}}]}
    script = Script(httpx.Response(200, json=plugins), httpx.Response(200, json=offsets))
    connect = client(script)
    assert [(p.class_name, p.type, p.version) for p in connect.plugins(connectors_only=False)] == [
        (SINK, "sink", "3.6.1.Final")
    ]
    assert connect.offsets("bob-source") == offsets
    assert script.calls == [
        ("GET", "/connector-plugins?connectorsOnly=false"),
        ("GET", "/connectors/bob-source/offsets"),
    ]


def test_an_answer_of_the_wrong_shape_is_a_connect_error() -> None:
    with pytest.raises(ConnectError, match="unexpected answer"):
        client(Script(httpx.Response(200, json=["not", "an", "object"]))).fleet()


# --- writes ----------------------------------------------------------------------------


def test_create_posts_name_config_and_initial_state() -> None:
    script = Script(info(201), info(201, "other"))
    connect = client(script)
    assert connect.create("users-sink", SINK_CONFIG, initial_state="STOPPED") == "created"
    assert connect.create("other", SINK_CONFIG) == "created"
    assert script.calls == [("POST", "/connectors")] * 2
    assert script.body(0) == {"name": "users-sink", "config": SINK_CONFIG, "initial_state": "STOPPED"}
    assert "initial_state" not in script.body(1)


def test_put_config_tells_created_from_updated() -> None:
    script = Script(info(201), info(200))
    connect = client(script)
    assert connect.put_config("users-sink", SINK_CONFIG) is True
    assert connect.put_config("users-sink", SINK_CONFIG) is False
    assert script.calls == [("PUT", "/connectors/users-sink/config")] * 2
    assert script.body(1) == SINK_CONFIG


def test_delete_and_delete_of_a_missing_connector() -> None:
    # 404: already gone, which is what a delete wants: not a failure.
    script = Script(httpx.Response(204), error(404, "Connector users-sink not found"))
    connect = client(script)
    assert connect.delete("users-sink") == "deleted"
    assert connect.delete("users-sink") == "already gone"
    assert script.calls == [("DELETE", "/connectors/users-sink")] * 2


def test_restart_asks_for_failed_tasks_and_returns_the_status() -> None:
    accepted = {"name": "s", "connector": {"state": "RUNNING"}, "tasks": []}
    script = Script(httpx.Response(202, json=accepted), httpx.Response(204))
    connect = client(script)
    assert connect.restart("s") == accepted
    assert connect.restart("s", include_tasks=False, only_failed=False) == {}
    assert script.calls == [
        ("POST", "/connectors/s/restart?includeTasks=true&onlyFailed=true"),
        ("POST", "/connectors/s/restart?includeTasks=false&onlyFailed=false"),
    ]


def test_pause_resume_stop() -> None:
    script = Script(httpx.Response(202), httpx.Response(202), httpx.Response(204))
    connect = client(script)
    connect.pause("s")
    connect.resume("s")
    connect.stop("s")
    assert script.calls == [
        ("PUT", "/connectors/s/pause"),
        ("PUT", "/connectors/s/resume"),
        ("PUT", "/connectors/s/stop"),
    ]


def test_counters_count_every_request_and_the_writes() -> None:
    script = Script(
        httpx.Response(200, json={}),
        REBALANCE_409,
        info(200),
        httpx.Response(200, json={"name": "v", "error_count": 0, "configs": []}),
    )
    connect = client(script)
    connect.fleet()
    connect.put_config("users-sink", SINK_CONFIG)
    connect.validate(SINK, SINK_CONFIG)
    # /health once; the retried PUT counts twice; validation changes nothing, so it is not a write.
    assert (connect.requests, connect.writes) == (5, 2)


# --- what is retried, and what is not ----------------------------------------------------


@pytest.mark.parametrize("transient", [REBALANCE_409, STALE_409, EXPECTED_500, httpx.Response(503)])
def test_transient_failures_are_retried(transient: httpx.Response) -> None:
    script = Script(transient, transient, info(200))
    connect = client(script)
    assert connect.put_config("users-sink", SINK_CONFIG) is False
    assert (connect.requests, connect.writes) == (3, 3)
    assert script.calls == [("PUT", "/connectors/users-sink/config")] * 3


def test_a_proxy_gateway_error_is_retried_and_summarised() -> None:
    # A 502 may come after the proxy handed the write on: re-read before resending.
    bad_gateway = httpx.Response(502, text="<html><body>upstream reset</body></html>")
    old = httpx.Response(200, json={**SINK_CONFIG, "tasks.max": "2"})
    script = Script(bad_gateway, old, info(200))
    client(script, attempts=2).put_config("users-sink", SINK_CONFIG)
    assert [m for m, _ in script.calls] == ["PUT", "GET", "PUT"]
    with pytest.raises(ConnectUnavailable) as caught:
        client(Script(bad_gateway), attempts=1).fleet()
    assert "(HTTP 502): Bad Gateway" in str(caught.value) and "<html>" not in str(caught.value)


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (error(400, "Connector configuration is invalid"), InvalidConnectorConfig),
        (error(500, "java.lang.NullPointerException"), ConnectError),
        # What Connect 4.3 answers for an unknown plugin class.
        (
            error(
                500,
                "org.apache.kafka.connect.runtime.rest.errors.BadRequestException: Failed to "
                "find any class that implements Connector and which name matches x.Y",
            ),
            InvalidConnectorConfig,
        ),
    ],
)
def test_real_failures_are_not_retried(answer: httpx.Response, kind: type[ConnectError]) -> None:
    script = Script(answer)
    with pytest.raises(kind) as caught:
        client(script).create("users-sink", SINK_CONFIG)
    assert type(caught.value) is kind and not caught.value.transient
    assert len(script.seen) == 1


def test_retries_are_bounded_and_end_unavailable() -> None:
    script = Script(*[EXPECTED_500] * 3)
    with pytest.raises(ConnectUnavailable) as caught:
        client(script, attempts=3).fleet()
    assert len(script.seen) == 3
    assert caught.value.attempts == 3 and "after 3 attempts" in str(caught.value)


def test_connection_errors_are_retried_up_to_the_bound() -> None:
    script = Script(*[httpx.ConnectError("[Errno 111] Connection refused")] * 4)
    connect = client(script, attempts=4)
    with pytest.raises(ConnectUnavailable) as caught:
        connect.fleet()
    assert connect.requests == 5  # the scripted /health answered, then 4 refused listings
    message = str(caught.value)
    assert "'dwh'" in message and "http://connect.test:8083" in message
    assert "Connection refused" in message and caught.value.status_code is None


def test_a_connection_error_then_success() -> None:
    script = Script(httpx.ConnectTimeout("timed out"), httpx.Response(200, json={}))
    assert client(script).fleet() == {}
    assert len(script.seen) == 2


# --- writes that may have landed before they failed ------------------------------------


def test_timed_out_put_already_applied_is_not_sent_again() -> None:
    stored = httpx.Response(200, json={**SINK_CONFIG, "name": "users-sink"})
    script = Script(TIMED_OUT_500, stored)
    connect = client(script)
    assert connect.put_config("users-sink", SINK_CONFIG) is False
    assert script.calls == [("PUT", "/connectors/users-sink/config"), ("GET", "/connectors/users-sink/config")]
    assert connect.writes == 1


def test_timed_out_put_not_applied_is_sent_again() -> None:
    old = httpx.Response(200, json={**SINK_CONFIG, "tasks.max": "2"})
    script = Script(TIMED_OUT_500, old, info(200))
    assert client(script).put_config("users-sink", SINK_CONFIG) is False
    assert [m for m, _ in script.calls] == ["PUT", "GET", "PUT"]


def test_read_timeout_on_put_is_treated_like_connects_timeout() -> None:
    stored = httpx.Response(200, json=SINK_CONFIG)
    script = Script(httpx.ReadTimeout("timed out"), stored)
    client(script).put_config("users-sink", SINK_CONFIG)
    assert [m for m, _ in script.calls] == ["PUT", "GET"]


def test_timed_out_create_already_applied_is_not_sent_again() -> None:
    stored = httpx.Response(200, json={**SINK_CONFIG, "name": "users-sink"})
    script = Script(TIMED_OUT_500, stored)
    connect = client(script)
    connect.create("users-sink", SINK_CONFIG)
    assert script.calls == [("POST", "/connectors"), ("GET", "/connectors/users-sink/config")]


def test_already_exists_after_a_timed_out_create_is_its_echo() -> None:
    # The first re-read races the config topic (404); the resent POST meets the first one.
    stored = httpx.Response(200, json={**SINK_CONFIG, "name": "users-sink"})
    script = Script(
        TIMED_OUT_500,
        error(404, "Connector users-sink not found"),
        error(409, "Connector users-sink already exists"),
        stored,
    )
    client(script).create("users-sink", SINK_CONFIG)
    assert [m for m, _ in script.calls] == ["POST", "GET", "POST", "GET"]


def test_already_exists_with_another_config_stays_a_conflict() -> None:
    other = httpx.Response(200, json={**SINK_CONFIG, "topics": "someone.else"})
    script = Script(
        TIMED_OUT_500, error(404, "not found"), error(409, "Connector users-sink already exists"), other, other
    )
    with pytest.raises(ConnectConflict, match="after 2 attempts"):
        client(script).create("users-sink", SINK_CONFIG)


def test_create_of_an_existing_connector_with_this_config_is_done() -> None:
    # Another run created it since our listing: nothing to write, and not a failure.
    stored = httpx.Response(200, json={**SINK_CONFIG, "name": "users-sink"})
    script = Script(error(409, "Connector users-sink already exists"), stored)
    connect = client(script)
    assert connect.create("users-sink", SINK_CONFIG) == "exists"
    assert [m for m, _ in script.calls] == ["POST", "GET"] and connect.writes == 1


def test_create_of_an_existing_connector_with_another_config_is_a_conflict() -> None:
    other = httpx.Response(200, json={**SINK_CONFIG, "topics": "someone.else"})
    script = Script(error(409, "Connector users-sink already exists"), other)
    with pytest.raises(ConnectConflict) as caught:
        client(script).create("users-sink", SINK_CONFIG)
    assert not caught.value.transient and [m for m, _ in script.calls] == ["POST", "GET"]


def test_timed_out_delete_already_applied_is_not_sent_again() -> None:
    script = Script(TIMED_OUT_500, error(404, "Connector users-sink not found"))
    client(script).delete("users-sink")
    assert script.calls == [("DELETE", "/connectors/users-sink"), ("GET", "/connectors/users-sink/config")]


# --- validation and config values ------------------------------------------------------


def validate_answer() -> dict[str, Any]:
    def item(name: str, errors: list[str]) -> dict[str, Any]:
        return {
            "definition": {"name": name, "type": "STRING"},
            "value": {"name": name, "value": None, "recommended_values": [], "errors": errors, "visible": True},
        }

    return {
        "name": SINK,
        "error_count": 2,
        "groups": ["Common"],
        "configs": [
            item("name", []),
            {"definition": {"name": "internal.flag", "type": "BOOLEAN"}, "value": None},
            item("connection.password", [f"Invalid value {PASSWORD} for configuration connection.password: too weak"]),
            item("primary.key.mode", ['Missing required configuration "primary.key.mode"']),
        ],
    }


def test_validate_reports_errors_per_key_without_secret_values() -> None:
    script = Script(httpx.Response(200, json=validate_answer()))
    connect = client(script)
    result = connect.validate("JdbcSinkConnector", SINK_CONFIG)
    assert script.calls == [("PUT", "/connector-plugins/JdbcSinkConnector/config/validate")]
    assert script.body(0) == {**SINK_CONFIG, "name": "hephaestus-validate"}
    assert (result.connector_class, result.error_count, result.ok) == ("JdbcSinkConnector", 2, False)
    assert set(result.errors) == {"connection.password", "primary.key.mode"}
    assert result.errors["connection.password"] == (
        "Invalid value **** for configuration connection.password: too weak",
    )
    assert connect.writes == 0


def test_validate_adds_the_class_when_the_config_lacks_it() -> None:
    script = Script(httpx.Response(200, json={"name": SINK, "error_count": 0, "configs": []}))
    assert client(script).validate(SINK, {"tasks.max": "1", "name": "x"}).ok
    assert script.body(0) == {"connector.class": SINK, "name": "x", "tasks.max": "1"}


@pytest.mark.parametrize(
    "call",
    [
        lambda c, cfg: c.create("s", cfg),
        lambda c, cfg: c.put_config("s", cfg),
        lambda c, cfg: c.validate(SINK, cfg),
    ],
)
def test_non_string_values_are_refused_before_any_request(
    call: Callable[[ConnectClient, dict[str, Any]], object],
) -> None:
    script = Script()
    connect = client(script)
    bad = {**SINK_CONFIG, "delete.enabled": True, "tasks.max": 1}
    with pytest.raises(NonStringConfigValue) as caught:
        call(connect, bad)
    assert isinstance(caught.value, HephaestusError) and isinstance(caught.value, TypeError)
    assert caught.value.keys == ("delete.enabled", "tasks.max")
    assert "delete.enabled (bool)" in str(caught.value) and PASSWORD not in str(caught.value)
    assert connect.requests == 0


def test_error_messages_and_logs_never_show_a_password(caplog: pytest.LogCaptureFixture) -> None:
    echo = error(
        400, f"Connector configuration is invalid: Invalid value {PASSWORD} for configuration connection.password"
    )
    script = Script(echo, error(500, f"boom {PASSWORD}"))
    connect = client(script)
    caplog.set_level(logging.DEBUG, logger="hephaestus.connect")
    with pytest.raises(InvalidConnectorConfig) as invalid:
        connect.put_config("users-sink", SINK_CONFIG)
    with pytest.raises(ConnectError) as failed:
        connect.create("users-sink", SINK_CONFIG)
    for exc in (invalid.value, failed.value):
        assert PASSWORD not in str(exc) and PASSWORD not in exc.server_message
    assert "connection.password" in str(invalid.value)
    assert "PUT /connectors/users-sink/config -> 400" in caplog.text
    assert PASSWORD not in caplog.text


def test_credentials_are_sent_but_never_shown() -> None:
    script = Script(error(401, "Unauthorized"))
    connect = ConnectClient(
        "http://admin:hunter22@connect.test:8083",
        name="dwh",
        transport=httpx.MockTransport(script),
        retry=RetryPolicy.immediate(),
    )
    with pytest.raises(ConnectError) as caught:
        connect.fleet()
    assert script.seen[0].headers["authorization"].startswith("Basic ")
    assert "hunter22" not in str(caught.value) and "credentials" in str(caught.value)


def test_retry_policy_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(initial_wait=-1)


def test_default_backoff_doubles_from_half_a_second_up_to_eight() -> None:
    retrying = RetryPolicy(jitter=0.0).retrying()
    state = tenacity.RetryCallState(retrying, fn=None, args=(), kwargs={})
    waits = []
    for attempt in range(1, 8):
        state.attempt_number = attempt
        waits.append(retrying.wait(state))
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert RetryPolicy().attempts == 6


# --- a worker still starting -----------------------------------------------------------------


def double_client(double: ConnectDouble) -> ConnectClient:
    return ConnectClient(
        "http://connect.test:8083",
        name="dwh",
        transport=httpx.MockTransport(double),
        retry=RetryPolicy.immediate(),
        poll_s=0.0,
    )


def test_the_fleet_is_listed_only_once_the_worker_has_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """A restarted worker lists a partial fleet until it has read its config topic: planning
    from that would create what exists and miss what to delete (seen on the real stack)."""
    monkeypatch.setattr(ConnectClient, "STARTUP_POLL_S", 0.0)
    double = ConnectDouble()
    double.add("a", SINK_CONFIG)
    double.starting = 3
    with double_client(double) as connect:
        assert list(connect.fleet()) == ["a"]
        assert double.log == [("GET", "/health")] * 4 + [("GET", "/connectors")]
        connect.fleet()
    assert double.log[5:] == [("GET", "/connectors")], "a worker seen started is not asked again"


def test_a_worker_that_never_finishes_starting_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ConnectClient, "STARTUP_POLL_S", 0.0)
    monkeypatch.setattr(ConnectClient, "STARTUP_TIMEOUT_S", 0.0)
    double = ConnectDouble()
    double.starting = 10
    with double_client(double) as connect, pytest.raises(ConnectUnavailable) as caught:
        connect.fleet()
    assert "the worker is still starting after 0 s" in str(caught.value) and '"status":"starting"' in str(caught.value)
    assert ("GET", "/connectors") not in double.log


@pytest.mark.parametrize(
    "answer",
    [httpx.Response(404, text="<html>Not Found</html>"), httpx.Response(500, json={"error_code": 500, "message": "x"})],
)
def test_a_connect_without_the_health_endpoint_is_listed_at_once(answer: httpx.Response) -> None:
    """Before 3.9 there is no /health: 404 (Jetty's page). Other answers are the listing's to report."""
    double = ConnectDouble(lambda r, d: answer if r.url.path == "/health" else None)
    double.add("a", SINK_CONFIG)
    with double_client(double) as connect:
        assert list(connect.fleet()) == ["a"]


# --- a URL that is not Connect's REST API (issue 48) -----------------------------------------


def test_a_404_to_the_listing_without_connects_body_fails_at_once() -> None:
    """GET /connectors always exists on Connect: a 404 there that is not Connect's JSON error is
    another service (or a path Connect is not at), not a worker still starting: it was retried
    for 16 s as "not ready"."""
    script = Script(httpx.Response(404, text="<html>Not Found</html>", headers={"content-type": "text/html"}))
    with client(script) as connect, pytest.raises(NotConnectApi) as caught:
        connect.fleet()
    assert script.calls == [("GET", "/connectors?expand=info&expand=status")], "one request: no retry"
    said = "http://connect.test:8083 is not a Kafka Connect REST API: GET /connectors answered 404 (Not Found)"
    assert said in str(caught.value) and not caught.value.transient


def test_connects_own_404_to_the_listing_says_the_urls_path_is_wrong() -> None:
    """A base URL with a path Connect does not serve: Connect's JSON 404, not a connector missing
    (it ended "no connector 'None'")."""
    double = ConnectDouble()
    transport = httpx.MockTransport(double)
    connect = ConnectClient(
        "http://connect.test:8083/kafka", name="dwh", transport=transport, retry=RetryPolicy.immediate()
    )
    with connect, pytest.raises(NotConnectApi) as caught:
        connect.fleet()
    said = "connect.test:8083/kafka is not a Kafka Connect REST API: GET /connectors answered 404 (HTTP 404 Not Found)"
    assert said in str(caught.value) and "None" not in str(caught.value)
    assert double.log.count(("GET", "/kafka/connectors")) == 1


def test_a_404_without_connects_body_to_a_connector_is_still_a_worker_restarting() -> None:
    """After the listing answered, a Jetty 404 to one connector's path is a worker restarting
    mid-run (its REST resources not registered yet): retried, as before."""
    script = Script(httpx.Response(404, text="<html>Not Found</html>"), httpx.Response(200, json={"a": "b"}))
    with client(script) as connect:
        assert connect.get_config("users-sink") == {"a": "b"}


def test_a_404_to_the_listing_after_it_answered_is_a_worker_restarting() -> None:
    """Once the listing has answered, the URL is right: a Jetty 404 there (a readiness poll while
    a worker restarts) is retried as before."""
    html_404 = httpx.Response(404, text="<html>Not Found</html>")
    script = Script(httpx.Response(200, json={}), html_404, httpx.Response(200, json={}))
    with client(script) as connect:
        assert connect.fleet() == {}
        assert connect.statuses() == {}
    assert len(script.calls) == 3


def test_a_glance_at_a_silent_cluster_is_one_request_and_at_a_live_one_two() -> None:
    """Issue 48: `graph --live` asks each cluster `GET /health`, then the listing (docs/graph.md
    said once). A cluster that does not answer `/health` is not asked again: one timeout, not two."""
    asked: list[str] = []

    def silent(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        raise httpx.ConnectTimeout("timed out", request=request)

    down = ConnectClient("http://connect.test:8083", name="dwh", transport=httpx.MockTransport(silent))
    with pytest.raises(ConnectUnavailable, match=r"GET /health failed: no response \(ConnectTimeout"):
        down.glance()
    assert asked == ["/health"]

    def answering(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(200, json={} if request.url.path == "/connectors" else {"status": "healthy"})

    asked.clear()
    up = ConnectClient("http://connect.test:8083", name="dwh", transport=httpx.MockTransport(answering))
    assert up.glance() == {}
    assert asked == ["/health", "/connectors"]

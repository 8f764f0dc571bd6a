"""Byte-precise faults at the Connect edge, against the strict double (tests/connect_double.py):
what the real stack can't produce on demand — an HTML 200, a write that lands after our
timeout, 404s from a worker still starting, 409 storms, a cluster that stops answering."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from hephaestus.connect import ConnectClient, ConnectError, RetryPolicy
from hephaestus.connect.edge import Breaker
from hephaestus.connect.errors import ClusterUnreachable, OutcomeUnknown, UnexpectedAnswer
from tests.connect_double import ConnectDouble, Fault, error

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CONFIG = {"connector.class": SINK, "topics": "t", "tasks.max": "1"}
NEW = {**CONFIG, "tasks.max": "2"}

pytestmark = pytest.mark.faults


def connect(double: ConnectDouble, attempts: int = 4, settle_s: float = 0.0) -> ConnectClient:
    return ConnectClient(
        "http://connect.test",
        name="dwh",
        transport=httpx.MockTransport(double),
        retry=RetryPolicy.immediate(attempts),
        settle_s=settle_s,
        poll_s=0.0,
    )


def once(
    match: Callable[[httpx.Request], bool], answer: Callable[[httpx.Request, ConnectDouble], Any], times: int = 1
) -> Fault:
    """A fault for the first `times` requests that `match`; then the server answers itself."""
    left = [times]

    def fault(request: httpx.Request, double: ConnectDouble) -> Any:
        if left[0] and match(request):
            left[0] -= 1
            return answer(request, double)
        return None

    return fault


def is_(method: str, suffix: str = "") -> Callable[[httpx.Request], bool]:
    return lambda r: r.method == method and r.url.path.endswith(suffix)


def applied_then(exc: Exception) -> Callable[[httpx.Request, ConnectDouble], Exception]:
    """The server applies the request, then the answer is lost (timeout, reset)."""

    def answer(request: httpx.Request, double: ConnectDouble) -> Exception:
        double.log.append((request.method, request.url.path))
        double._route(request)
        return exc

    return answer


def lost(exc: Exception) -> Callable[[httpx.Request, ConnectDouble], Exception]:
    return lambda request, double: exc


HTML_200 = httpx.Response(200, headers={"content-type": "text/html"}, text="<html>maintenance</html>")


# --- a write counts only with Connect's answer ------------------------------------------


@pytest.mark.parametrize("write", ["create", "put"])
def test_an_html_200_to_a_write_is_a_failure_not_ok(write: str) -> None:
    double = ConnectDouble(once(lambda r: r.method in ("POST", "PUT"), lambda r, d: HTML_200))
    client = connect(double)
    with pytest.raises(UnexpectedAnswer, match="not Connect's JSON.*text/html"):
        client.create("a", CONFIG) if write == "create" else client.put_config("a", CONFIG)
    assert client.writes == 1 and double.connectors == {}


def test_json_200_that_does_not_name_the_connector_is_a_failure() -> None:
    answer = httpx.Response(200, json={"status": "ok"})
    double = ConnectDouble(once(is_("PUT", "/config"), lambda r, d: answer))
    with pytest.raises(UnexpectedAnswer, match="not the connector info"):
        connect(double).put_config("a", CONFIG)


def test_html_200_to_a_delete_is_a_failure() -> None:
    double = ConnectDouble(once(is_("DELETE"), lambda r, d: HTML_200))
    double.add("a", CONFIG)
    with pytest.raises(UnexpectedAnswer):
        connect(double).delete("a")
    assert "a" in double.connectors


# --- never write twice ------------------------------------------------------------------


def test_put_timed_out_after_it_landed_is_not_sent_again() -> None:
    double = ConnectDouble(once(is_("PUT", "/config"), applied_then(httpx.ReadTimeout("timed out"))))
    double.add("a", CONFIG)
    client = connect(double)
    assert client.put_config("a", NEW) is False
    assert double.writes() == [("PUT", "/connectors/a/config")]
    assert double.connectors["a"].config["tasks.max"] == "2"


def test_a_slow_connect_landing_the_put_after_our_timeout_gets_one_put() -> None:
    # The PUT sits in the herder's queue: our client gives up, then the first two re-reads
    # still show the old config, the third the new one. Resending at the first "not yet"
    # (what the client did before) applied the PUT twice: an extra restart.
    parked: list[httpx.Request] = []
    reads = [0]

    def slow(request: httpx.Request, double: ConnectDouble) -> Any:
        if request.method == "PUT" and not parked:
            double.log.append((request.method, request.url.path))
            parked.append(request)
            return httpx.ReadTimeout("timed out")
        if request.method == "GET" and parked:
            reads[0] += 1
            if reads[0] == 3:
                double._route(parked[0])
        return None

    double = ConnectDouble(slow)
    double.add("a", CONFIG)
    client = connect(double, settle_s=5.0)
    client.put_config("a", NEW)
    assert double.writes() == [("PUT", "/connectors/a/config")]
    assert reads[0] == 3 and double.connectors["a"].config["tasks.max"] == "2"


def test_an_ambiguous_write_on_a_cluster_that_cannot_be_read_is_unknown_and_not_resent() -> None:
    double = ConnectDouble(once(lambda r: True, lost(httpx.ReadTimeout("timed out")), times=100))
    client = connect(double, attempts=4)
    with pytest.raises(OutcomeUnknown, match="nothing was sent again"):
        client.put_config("a", NEW)
    assert client.writes == 1


def test_not_applied_after_the_settle_window_is_sent_again() -> None:
    double = ConnectDouble(once(is_("PUT", "/config"), lost(httpx.RemoteProtocolError("reset"))))
    double.add("a", CONFIG)
    client = connect(double, settle_s=0.05)
    client.put_config("a", NEW)
    assert [m for m, _ in double.writes()] == ["PUT"]  # the lost one never reached the server
    assert client.writes == 2 and double.connectors["a"].config["tasks.max"] == "2"


def test_create_reset_after_it_landed_is_created_once() -> None:
    double = ConnectDouble(once(is_("POST", "/connectors"), applied_then(httpx.RemoteProtocolError("reset"))))
    client = connect(double)
    assert client.create("a", CONFIG) == "created"
    assert double.writes() == [("POST", "/connectors")]


def test_delete_reset_after_it_landed_is_deleted_once() -> None:
    double = ConnectDouble(once(is_("DELETE"), applied_then(httpx.ReadTimeout("timed out"))))
    double.add("a", CONFIG)
    assert connect(double).delete("a") == "deleted"
    assert double.writes() == [("DELETE", "/connectors/a")]


def test_delete_of_a_connector_already_gone_is_ok() -> None:
    assert connect(ConnectDouble()).delete("gone") == "already gone"


@pytest.mark.parametrize(("verb", "state"), [("pause", "PAUSED"), ("stop", "STOPPED"), ("resume", "RUNNING")])
def test_state_changes_seen_applied_are_not_sent_again(verb: str, state: str) -> None:
    double = ConnectDouble(once(is_("PUT", f"/{verb}"), applied_then(httpx.ReadTimeout("timed out"))))
    double.add("a", CONFIG, "PAUSED" if verb == "resume" else "RUNNING")
    getattr(connect(double), verb)("a")
    assert double.writes() == [("PUT", f"/connectors/a/{verb}")] and double.connectors["a"].state == state


def test_restart_seen_restarting_is_not_sent_again() -> None:
    double = ConnectDouble(once(is_("POST", "/restart"), applied_then(httpx.ReadTimeout("timed out"))))
    double.add("a", CONFIG).task_states = ["FAILED"]
    double.on_start["a"] = ["RESTARTING", "RESTARTING"]
    assert connect(double).restart("a") == {}
    assert double.writes() == [("POST", "/connectors/a/restart")]


# --- transient answers of a worker starting or rebalancing --------------------------------


def test_create_answered_404_by_a_restarting_worker_is_retried() -> None:
    double = ConnectDouble(once(is_("POST", "/connectors"), lambda r, d: error(404, "not found"), times=2))
    client = connect(double)
    assert client.create("a", CONFIG) == "created"
    assert client.writes == 3 and "a" in double.connectors


def test_a_404_without_connects_error_body_after_the_listing_is_a_worker_not_ready() -> None:
    """A Jetty 404 (no Connect error body) once the cluster has listed its connectors is a worker
    restarting mid-run (its REST resources not registered yet): retried. The first listing's 404
    is a URL that is not Connect's REST API, said at once (issue 48; tests/unit/test_connect_client):
    since Connect 3.9 a starting worker says so on GET /health (503), which is waited for."""
    jetty = httpx.Response(404, headers={"content-type": "text/html"}, text="<h2>HTTP ERROR 404</h2>")
    double = ConnectDouble(once(is_("GET", "/a/status"), lambda r, d: jetty, times=2))
    double.add("a", CONFIG)
    client = connect(double)
    assert list(client.fleet()) == ["a"]
    assert client.status("a").state == "RUNNING"


def test_a_409_storm_within_the_budget_ends_in_one_applied_write() -> None:
    storm = error(409, "Cannot complete request because of a conflicting operation (e.g. worker rebalance)")
    double = ConnectDouble(once(is_("PUT", "/config"), lambda r, d: storm, times=9))
    client = connect(double, attempts=10)
    client.put_config("a", NEW)
    assert client.writes == 10 and double.writes() == [("PUT", "/connectors/a/config")]


def test_an_existing_connector_with_this_config_is_no_conflict() -> None:
    double = ConnectDouble()
    double.add("a", CONFIG)
    assert connect(double).create("a", CONFIG) == "exists"


# --- a dead cluster fails fast ------------------------------------------------------------


def test_after_the_budget_without_an_answer_calls_fail_without_a_request() -> None:
    double = ConnectDouble(once(lambda r: True, lost(httpx.ConnectError("refused")), times=1000))
    client = connect(double, attempts=3)
    with pytest.raises(ConnectError):
        client.fleet()
    sent = client.requests
    for _ in range(20):
        with pytest.raises(ClusterUnreachable, match="unknown: cluster unreachable"):
            client.create("a", CONFIG)
    assert client.requests == sent == 4  # /health (refused: left to the listing), then 3 listing attempts


def test_the_breaker_opens_only_after_the_budget_without_any_answer() -> None:
    now = [0.0]
    breaker = Breaker(10.0, failures=2, clock=lambda: now[0])
    breaker.failed()
    breaker.failed()
    now[0] = 9.9
    assert not breaker.open
    breaker.answered()  # an answer (even an error) within the budget: the cluster is alive
    now[0] = 30.0
    assert not breaker.open
    breaker.failed()
    now[0] = 45.0
    assert not breaker.open  # a single failure, however long ago, is not a dead cluster
    breaker.failed()  # the first failure of a streak started the clock (at 30 s)
    assert breaker.open
    breaker.answered()
    breaker.failed()
    breaker.failed()
    now[0] = 54.9
    assert not breaker.open
    now[0] = 55.0
    assert breaker.open


def test_the_budget_is_the_sum_of_the_waits_between_attempts() -> None:
    assert RetryPolicy().budget_s == 0.5 + 1 + 2 + 4 + 8
    assert RetryPolicy.immediate().budget_s == 0

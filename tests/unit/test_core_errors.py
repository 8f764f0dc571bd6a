"""The typed failures of the Connect edge: which answers are retried, which are ambiguous
(a write may have landed), and the exact messages operators read (mutation-tested core)."""

from __future__ import annotations

import httpx
import pytest

from hephaestus.connect.errors import (
    Call,
    ClusterUnreachable,
    ConnectConflict,
    ConnectError,
    ConnectorNotFound,
    ConnectUnavailable,
    InvalidConnectorConfig,
    NonStringConfigValue,
    NotConnectApi,
    OutcomeUnknown,
    UnexpectedAnswer,
    from_status,
    from_transport,
)

GET = Call("dwh", "http://connect:8083", "GET", "/connectors/a/config", "a")
LIST = Call("dwh", "http://connect:8083", "GET", "/connectors")
POST = Call("dwh", "http://connect:8083", "POST", "/connectors", "a")
Shape = tuple[type[ConnectError], str, int | None, bool, bool]


def shape(exc: ConnectError) -> Shape:
    return type(exc), exc.server_message, exc.status_code, exc.transient, exc.ambiguous


# --- from_status ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "call", "from_connect", "expected"),
    [
        # A 404 that is not Connect's, or any 404 to a create: a worker still starting.
        (404, "Not Found", GET, False, (ConnectUnavailable, "not ready (Not Found)", 404, True, False)),
        # A 404 to the listing, Connect's or not: the URL is not Connect's REST API (issue 48).
        (404, "Not Found", LIST, False, (NotConnectApi, "Not Found", 404, False, False)),
        (404, "HTTP 404 Not Found", LIST, True, (NotConnectApi, "HTTP 404 Not Found", 404, False, False)),
        (404, "gone", POST, True, (ConnectUnavailable, "not ready (gone)", 404, True, False)),
        (404, "Connector a not found", GET, True, (ConnectorNotFound, "Connector a not found", 404, False, False)),
        (404, "nf", Call("dwh", "u", "PUT", "/connectors"), True, (ConnectorNotFound, "nf", 404, False, False)),
        (
            404,
            "nf",
            Call("dwh", "u", "POST", "/connectors/a/restart"),
            True,
            (ConnectorNotFound, "nf", 404, False, False),
        ),
        (
            409,
            "Cannot complete request because of a conflicting operation (e.g. worker REBALANCE)",
            GET,
            True,
            (
                ConnectConflict,
                "Cannot complete request because of a conflicting operation (e.g. worker REBALANCE)",
                409,
                True,
                False,
            ),
        ),
        (
            409,
            "momentarily due to Stale Configuration",
            GET,
            True,
            (ConnectConflict, "momentarily due to Stale Configuration", 409, True, False),
        ),
        (
            409,
            "Connector a already exists",
            POST,
            True,
            (ConnectConflict, "Connector a already exists", 409, False, False),
        ),
        (400, "bad", GET, True, (InvalidConnectorConfig, "bad", 400, False, False)),
        (422, "bad", GET, True, (InvalidConnectorConfig, "bad", 422, False, False)),
        (
            500,
            "x.BadRequestException: no class",
            GET,
            True,
            (InvalidConnectorConfig, "x.BadRequestException: no class", 500, False, False),
        ),
        (500, "badrequestexception", GET, True, (ConnectError, "badrequestexception", 500, False, False)),
        (502, "x.BadRequestException", GET, True, (ConnectUnavailable, "x.BadRequestException", 502, True, True)),
        (500, "Request Timed Out", GET, True, (ConnectUnavailable, "Request Timed Out", 500, True, True)),
        (502, "Bad Gateway", GET, False, (ConnectUnavailable, "Bad Gateway", 502, True, True)),
        (504, "Gateway Timeout", GET, False, (ConnectUnavailable, "Gateway Timeout", 504, True, True)),
        (503, "Service Unavailable", GET, False, (ConnectUnavailable, "Service Unavailable", 503, True, False)),
        (500, "a Rebalance is expected", GET, True, (ConnectUnavailable, "a Rebalance is expected", 500, True, False)),
        (500, "NullPointerException", GET, True, (ConnectError, "NullPointerException", 500, False, False)),
        (
            501,
            "request timed out during rebalance",
            GET,
            True,
            (ConnectError, "request timed out during rebalance", 501, False, False),
        ),
        (401, "Unauthorized", GET, True, (ConnectError, "Unauthorized", 401, False, False)),
        (405, "Method Not Allowed", GET, True, (ConnectError, "Method Not Allowed", 405, False, False)),
    ],
)
def test_from_status(status: int, message: str, call: Call, from_connect: bool, expected: Shape) -> None:
    exc = from_status(status, message, call, from_connect=from_connect)
    assert shape(exc) == expected and exc.call == call


def test_from_status_treats_a_body_as_connects_by_default() -> None:
    assert type(from_status(404, "nf", GET)) is ConnectorNotFound


def test_a_listing_that_answered_before_is_a_restart_not_a_wrong_url() -> None:
    exc = from_status(404, "Not Found", LIST, from_connect=False, listed_before=True)
    assert shape(exc) == (ConnectUnavailable, "not ready (Not Found)", 404, True, False)


def test_a_url_that_is_not_connects_rest_api_says_so() -> None:
    assert str(NotConnectApi("Not Found", LIST, from_connect=False)) == (
        "Kafka Connect 'dwh': http://connect:8083 is not a Kafka Connect REST API: GET /connectors answered 404 "
        "(Not Found) — the url of cluster 'dwh' must be the REST API's base URL, as http://connect:8083 (a "
        "Connect worker before 3.9 also answers so while it starts: if it is one, run again once it has)"
    )
    assert str(NotConnectApi("HTTP 404 Not Found", LIST, from_connect=True)).endswith(
        "(Connect answered, so the path after its address is not where it serves its API)"
    )


# --- from_transport ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        # Never sent: retried, and nothing can have been applied.
        (
            httpx.ConnectError("[Errno 111] refused"),
            (ConnectUnavailable, "no response (ConnectError: [Errno 111] refused)", None, True, False),
        ),
        (httpx.ConnectTimeout("t"), (ConnectUnavailable, "no response (ConnectTimeout: t)", None, True, False)),
        (httpx.PoolTimeout("t"), (ConnectUnavailable, "no response (PoolTimeout: t)", None, True, False)),
        # Sent, answer lost: retried, and ambiguous.
        (httpx.ReadTimeout(""), (ConnectUnavailable, "no response (ReadTimeout)", None, True, True)),
        (httpx.WriteTimeout("w"), (ConnectUnavailable, "no response (WriteTimeout: w)", None, True, True)),
        (httpx.ReadError("reset"), (ConnectUnavailable, "no response (ReadError: reset)", None, True, True)),
        (
            httpx.RemoteProtocolError("eof"),
            (ConnectUnavailable, "no response (RemoteProtocolError: eof)", None, True, True),
        ),
        # A request that cannot be made at all: not worth retrying.
        (
            httpx.UnsupportedProtocol("ftp"),
            (ConnectError, "no response (UnsupportedProtocol: ftp)", None, False, False),
        ),
        (
            httpx.LocalProtocolError("bad header"),
            (ConnectError, "no response (LocalProtocolError: bad header)", None, False, False),
        ),
    ],
)
def test_from_transport(exc: httpx.TransportError, expected: Shape) -> None:
    err = from_transport(exc, POST)
    assert shape(err) == expected and err.call == POST


# --- messages --------------------------------------------------------------------------------


def test_the_message_names_cluster_call_status_and_what_connect_said() -> None:
    exc = ConnectError("boom", GET, 500)
    assert (exc.method, exc.path, exc.connector, exc.attempts) == ("GET", "/connectors/a/config", "a", 1)
    assert str(exc) == (
        "Kafka Connect 'dwh': GET /connectors/a/config failed (HTTP 500): boom"
        " — see the log of the Connect worker at http://connect:8083"
    )
    exc.gave_up_after(3)
    assert exc.attempts == 3
    assert str(exc) == (
        "Kafka Connect 'dwh': GET /connectors/a/config failed after 3 attempts (HTTP 500): "
        "boom — see the log of the Connect worker at http://connect:8083"
    )
    exc.gave_up_after(1)
    assert "attempts" not in str(exc)
    assert str(ConnectError("", POST)) == (
        "Kafka Connect 'dwh': POST /connectors failed — see the log of the Connect worker at http://connect:8083"
    )


@pytest.mark.parametrize(
    ("exc", "hint"),
    [
        (ConnectError("x", GET, 401), "check the credentials configured for Connect cluster 'dwh'"),
        (ConnectError("x", GET, 403), "check the credentials configured for Connect cluster 'dwh'"),
        (ConnectError("x", GET, 404), "see the log of the Connect worker at http://connect:8083"),
        (
            ConnectorNotFound("x", GET, 404),
            "no connector 'a' on cluster 'dwh' (GET /connectors lists them; status can lag a create by a few seconds)",
        ),
        (
            ConnectConflict("x", GET, 409, transient=True),
            "the Connect cluster is rebalancing; try again once it has settled",
        ),
        (
            ConnectConflict("x", GET, 409),
            "the request conflicts with the connector's current state (does it already exist?)",
        ),
        (
            InvalidConnectorConfig("x", GET, 400),
            "fix the named keys of the connector config; "
            "PUT /connector-plugins/{class}/config/validate reports every invalid key",
        ),
        (
            ConnectUnavailable("x", GET, 503),
            "check that Kafka Connect cluster 'dwh' at http://connect:8083 is running and reachable",
        ),
        (
            ClusterUnreachable("x", GET),
            "unknown: cluster unreachable; check that Kafka Connect cluster 'dwh' at http://connect:8083 "
            "is running and reachable",
        ),
        (
            OutcomeUnknown("x", GET),
            "unknown: rerun reconcile once the cluster answers; it re-reads the live state first",
        ),
        (
            UnexpectedAnswer("x", GET, 200),
            "check what answers at http://connect:8083: a proxy or another service, not Kafka Connect",
        ),
    ],
)
def test_hints(exc: ConnectError, hint: str) -> None:
    assert exc.hint() == hint and str(exc).endswith(f" — {hint}")


def test_cluster_unreachable_is_final() -> None:
    exc = ClusterUnreachable("no answer for longer than the retry budget", POST)
    assert shape(exc) == (ClusterUnreachable, "no answer for longer than the retry budget", None, False, False)
    assert exc.call == POST and isinstance(exc, ConnectUnavailable)


def test_non_string_values_name_keys_and_types_only() -> None:
    exc = NonStringConfigValue("users", {"tasks.max": "int", "delete.enabled": "bool"})
    assert exc.connector == "users" and exc.keys == ("delete.enabled", "tasks.max")
    assert str(exc) == (
        "connector 'users': config values must be strings, as Connect stores them; "
        'quote these (e.g. "true", "1"): delete.enabled (bool), tasks.max (int)'
    )

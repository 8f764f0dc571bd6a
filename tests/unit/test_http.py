"""The one HTTP edge (hephaestus.http) every client is built on: what an unanswered request
means, how an address is shown, and that a redirect is never followed."""

from __future__ import annotations

import logging
import ssl
from typing import Any

import httpx
import pytest

from hephaestus import http
from hephaestus.errors import HephaestusError
from hephaestus.secrets import REDACTOR


def _request() -> httpx.Request:
    return httpx.Request("POST", "http://connect/connectors")


@pytest.mark.parametrize(
    ("exc", "maybe_sent", "network"),
    [
        (httpx.ConnectError("refused"), False, True),  # nothing left: safe to send again
        (httpx.ConnectTimeout("slow to connect"), False, True),
        (httpx.PoolTimeout("no free connection"), False, True),
        (httpx.ReadTimeout("no answer yet"), True, True),  # sent: the server may have acted
        (httpx.ReadError("reset"), True, True),
        (httpx.WriteError("reset while sending"), True, True),
        (httpx.RemoteProtocolError("closed mid-answer"), True, True),
        (httpx.UnsupportedProtocol("ftp://"), True, False),  # a misuse, not the network
    ],
)
def test_an_unanswered_request_is_never_sent_or_ambiguous(
    exc: httpx.TransportError, maybe_sent: bool, network: bool
) -> None:
    exc.request = _request()
    found = http.no_answer(exc)
    assert (found.maybe_sent, found.network) == (maybe_sent, network)
    assert found.what == f"no response ({type(exc).__name__}: {exc})"
    assert http.no_answer(httpx.ReadTimeout("")).what == "no response (ReadTimeout)"


def test_an_address_is_shown_without_its_credentials_and_they_are_masked() -> None:
    assert http.server_of("https://admin:pw-9f2@connect:8083/base") == "https://connect:8083/base"
    made = http.client("https://admin:hunter2-xyz@connect:8083", what="Kafka Connect 'c'")
    made.close()
    assert "hunter2-xyz" not in REDACTOR("basic admin:hunter2-xyz")


def test_a_redirect_is_answered_not_followed() -> None:
    """Following it would resend the body (a connector config) and the credentials elsewhere."""
    sent: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(str(request.url))
        return httpx.Response(307, headers={"location": "http://elsewhere.test/connectors"})

    with http.client("http://connect.test", what="c", transport=httpx.MockTransport(handle)) as made:
        answer = made.post("/connectors", json={"name": "x"})
    assert answer.status_code == 307 and sent == ["http://connect.test/connectors"]


def test_tls_off_is_an_unverifying_context_and_a_bad_bundle_names_the_server(tmp_path: object) -> None:
    assert http.ssl_context(False, "Slack").verify_mode == ssl.CERT_NONE
    assert http.ssl_context(True, "Slack").verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(Exception, match="Slack: cannot load CA bundle /nonexistent.pem"):
        http.ssl_context("/nonexistent.pem", "Slack")


def test_the_ksql_client_retries_with_the_same_policy_as_connect() -> None:
    from hephaestus.connect import RetryPolicy as ConnectPolicy
    from hephaestus.ksql.client import KsqlRetryPolicy as KsqlPolicy

    assert ConnectPolicy is http.RetryPolicy and issubclass(KsqlPolicy, http.RetryPolicy)
    assert KsqlPolicy().attempts == 5 and KsqlPolicy().budget_s == 0.5 + 1 + 2 + 4


def test_the_client_verifies_https_by_default_and_sends_its_headers() -> None:
    """Mutation survivors: the default `verify`, the CA bundle check, the headers and timeout."""
    made = http.client("https://connect.test", what="c")
    pool: Any = made._transport._pool  # type: ignore[attr-defined]  # httpx's transport holds the TLS context
    assert pool._ssl_context.verify_mode == ssl.CERT_REQUIRED and made.timeout.read == 30.0
    made.close()
    with pytest.raises(HephaestusError, match="Kafka Connect 'c': cannot load CA bundle /nonexistent.pem"):
        http.client("https://connect.test", what="Kafka Connect 'c'", verify="/nonexistent.pem")
    sent: list[httpx.Headers] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers)
        return httpx.Response(200)

    with http.client("http://c.test", what="c", headers={"Accept": "x/y"}, transport=httpx.MockTransport(handle)) as c:
        c.get("/")
    assert sent[0]["accept"] == "x/y"


def test_only_our_errors_that_say_so_are_retried() -> None:
    assert not http.is_transient(HephaestusError("no transient attribute: not retried"))
    busy = HephaestusError("busy")
    busy.transient = True  # type: ignore[attr-defined]
    assert http.is_transient(busy) and not http.is_transient(ValueError("not ours"))
    odd = HephaestusError("truthy, not True")
    odd.transient = "yes"  # type: ignore[attr-defined]
    assert not http.is_transient(odd)


def test_a_retry_says_what_failed_and_when_it_tries_again(caplog: pytest.LogCaptureFixture) -> None:
    busy = HephaestusError("the group is rebalancing — wait for it")
    busy.transient = True  # type: ignore[attr-defined]
    attempts, slept = 0, []
    policy = http.RetryPolicy(attempts=3, initial_wait=1.0, max_wait=8.0, jitter=0.0, sleep=slept.append)
    with caplog.at_level(logging.WARNING, logger="hephaestus.http"), pytest.raises(HephaestusError):
        for attempt in policy.retrying():
            with attempt:
                attempts += 1
                raise busy
    assert attempts == 3 and slept == [1.0, 2.0]  # the injected sleep waited, nothing real did
    assert [r.getMessage() for r in caplog.records] == [
        "the group is rebalancing; trying again in 1.0 s (attempt 2 of 3)",
        "the group is rebalancing; trying again in 2.0 s (attempt 3 of 3)",
    ]

"""The Connect edge itself (connect.edge), driven through `ConnectEdge` with a scripted transport:
what counts as Connect's answer, the breaker, watching an ambiguous write before any resend,
and what is counted (mutation-tested core)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from hephaestus.connect.edge import Breaker, ConnectEdge, Expect, Request, Seen, is_write
from hephaestus.connect.errors import (
    Call,
    ClusterUnreachable,
    ConnectError,
    ConnectorNotFound,
    ConnectUnavailable,
    InvalidConnectorConfig,
    OutcomeUnknown,
    UnexpectedAnswer,
)
from hephaestus.http import RetryPolicy

Answer = httpx.Response | Exception
SERVER = "http://connect.test"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Script:
    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def edge(
    script: Script,
    attempts: int = 3,
    settle_s: float = 0.0,
    poll_s: float = 0.0,
    budget_s: float = 1000.0,
    clock: Clock | None = None,
) -> ConnectEdge:
    """An edge whose breaker runs on a fake clock (it opens only when a test moves it on)."""
    http = httpx.Client(base_url=SERVER, transport=httpx.MockTransport(script))
    e = ConnectEdge(http, "dwh", SERVER, RetryPolicy.immediate(attempts), settle_s, poll_s)
    http.event_hooks["request"] = [e.on_request]
    e.breaker = Breaker(budget_s, clock=clock or Clock())
    return e


def applied(*answers: Seen) -> tuple[Callable[[], Seen], list[Seen]]:
    """An `applied` check answering in turn (the last answer again), and what it answered."""
    left, given = list(answers), []

    def check() -> Seen:
        answer = left.pop(0) if len(left) > 1 else left[0]
        given.append(answer)
        return answer

    return check, given


def json(status: int, doc: Any) -> httpx.Response:
    return httpx.Response(status, json=doc)


def info(name: str = "a") -> httpx.Response:
    return json(200, {"name": name, "config": {"topics": "t"}, "tasks": []})


def error(status: int, message: str) -> httpx.Response:
    return json(status, {"error_code": status, "message": message})


TIMED_OUT = error(500, "Request timed out")
PUT = Request("PUT", "/connectors/a/config", "a", body={"topics": "t"}, expect=Expect.INFO)


# --- the breaker ---------------------------------------------------------------------------


def test_breaker_opens_once_down_for_the_budget_and_closes_on_an_answer() -> None:
    clock = Clock()
    b = Breaker(5.0, clock=clock)
    assert b.budget_s == 5.0 and not b.open
    b.failed()
    clock.now += 3
    b.failed()  # still down since the first failure
    assert not b.open
    clock.now += 2
    assert b.open
    b.answered()
    assert not b.open
    b.failed()
    assert not b.open, "down again, from now on"


def test_breaker_needs_as_many_failures_in_a_row_as_asked() -> None:
    b = Breaker(0.0, failures=3, clock=Clock())
    b.failed()
    b.failed()
    assert not b.open
    b.failed()
    assert b.open
    b.answered()
    b.failed()
    b.failed()
    assert not b.open, "an answer starts the count again"
    b.failed()
    assert b.open


def test_an_open_breaker_ends_the_retries_without_another_request() -> None:
    script = Script(httpx.ConnectError("refused"), json(200, {}))
    with pytest.raises(ClusterUnreachable) as caught:
        edge(script, attempts=3, budget_s=0.0).call(Request("GET", "/connectors"))
    assert caught.value.attempts == 2 and len(script.seen) == 1
    assert caught.value.server_message == "no answer for longer than the retry budget"
    script = Script(httpx.ConnectError("refused"), json(200, {}))
    assert edge(script, attempts=3).call(Request("GET", "/connectors")) is not None, "budget not spent: retried"


def test_an_open_breaker_fails_at_once_without_a_request() -> None:
    script = Script()
    e = edge(script, budget_s=0.0)
    e.breaker.failed()
    with pytest.raises(ClusterUnreachable) as caught:
        e.call(PUT)
    assert caught.value.server_message == "no answer for longer than the retry budget"
    assert caught.value.call == Call("dwh", SERVER, "PUT", "/connectors/a/config", "a")
    assert script.seen == []


def test_the_breaker_budget_is_the_retry_budget() -> None:
    http = httpx.Client(base_url=SERVER, transport=httpx.MockTransport(Script()))
    policy = RetryPolicy(attempts=3, initial_wait=1.0, max_wait=10.0, jitter=0.0)
    breaker = ConnectEdge(http, "dwh", SERVER, policy, 0.0).breaker
    assert (breaker.budget_s, breaker.failures) == (3.0, 3)


@pytest.mark.parametrize(
    ("answer", "down"),
    [
        (httpx.Response(502), True),
        (httpx.Response(503), True),
        (httpx.Response(504), True),
        (httpx.ReadError("reset"), True),
        (httpx.ConnectError("refused"), True),
        (httpx.Response(500), False),
        (httpx.Response(505), False),
        (httpx.Response(404), False),
        (error(409, "Connector a already exists"), False),
        (httpx.Response(200, json={}), False),
    ],
)
def test_what_counts_as_no_answer(answer: Answer, down: bool) -> None:
    e = edge(Script(answer), budget_s=0.0)
    if not down:
        e.breaker.failed()  # starts open: the answer must close it (else it starts closed)
    try:
        e.once(Request("GET", "/connectors"))
    except ConnectError:
        pass
    assert e.breaker.open is down


# --- one request, one checked answer ----------------------------------------------------


def test_once_sends_method_path_params_and_body() -> None:
    script = Script(json(200, {}), json(200, {}))
    e = edge(script)
    e.once(Request("PUT", "/connectors/a/config", "a", params=(("x", "1"), ("x", "2")), body={"k": "v"}))
    e.once(Request("GET", "/connectors"))
    first, second = script.seen
    assert (first.method, str(first.url), first.content) == (
        "PUT",
        f"{SERVER}/connectors/a/config?x=1&x=2",
        b'{"k":"v"}',
    )
    assert (second.method, str(second.url), second.content) == ("GET", f"{SERVER}/connectors", b"")


def test_connects_error_message_is_masked_and_stripped() -> None:
    e = edge(Script(error(400, "  Invalid value hunter2 for connection.password  ")))
    req = Request("PUT", "/connectors/a/config", "a", masked=("hunter2",))
    with pytest.raises(InvalidConnectorConfig) as caught:
        e.once(req)
    assert caught.value.server_message == "Invalid value **** for connection.password"
    assert caught.value.call == Call("dwh", SERVER, "PUT", "/connectors/a/config", "a")


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(500, text="<html>oops</html>", headers={"content-type": "text/html"}),
        httpx.Response(500),
        json(500, ["not", "a", "dict"]),
        json(500, {"error_code": 500}),
        json(500, {"error_code": 500, "message": ""}),
    ],
)
def test_a_non_connect_error_body_is_summarised_by_its_reason(answer: httpx.Response) -> None:
    with pytest.raises(ConnectError) as caught:
        edge(Script(answer)).once(Request("GET", "/connectors"))
    assert caught.value.server_message == "Internal Server Error" and caught.value.status_code == 500


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (error(404, "Connector a not found"), ConnectorNotFound),
        (json(404, {"message": "HTTP 404 Not Found"}), ConnectUnavailable),  # not Connect's error body
        (httpx.Response(404, text="<html>nope</html>"), ConnectUnavailable),
    ],
)
def test_a_404_is_not_found_only_with_connects_error_body(answer: httpx.Response, kind: type[ConnectError]) -> None:
    with pytest.raises(ConnectError) as caught:
        edge(Script(answer)).once(Request("GET", "/connectors/a/config", "a"))
    assert type(caught.value) is kind


def test_a_transport_error_is_typed_chained_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    cause = httpx.ReadTimeout("timed out")
    caplog.set_level(logging.DEBUG, logger="hephaestus.connect")
    with pytest.raises(ConnectUnavailable) as caught:
        edge(Script(cause)).once(PUT)
    assert caught.value.__cause__ is cause and caught.value.ambiguous
    assert caught.value.call == Call("dwh", SERVER, "PUT", "/connectors/a/config", "a")
    assert [r.getMessage() for r in caplog.records] == ["PUT /connectors/a/config -> ReadTimeout"]


@pytest.mark.parametrize(
    ("expect", "answer"),
    [
        (Expect.EMPTY, httpx.Response(204)),
        (Expect.EMPTY, json(202, {"name": "a"})),
        (Expect.JSON, json(200, ["a", "b"])),
        (Expect.JSON, json(200, {})),
        (Expect.INFO, info()),
    ],
)
def test_connects_answers_are_accepted(expect: Expect, answer: httpx.Response) -> None:
    response = edge(Script(answer)).once(Request("PUT", "/connectors/a/config", "a", expect=expect))
    assert response.status_code == answer.status_code


@pytest.mark.parametrize(
    ("expect", "answer", "message"),
    [
        (
            Expect.EMPTY,
            httpx.Response(200, text="<html>ok</html>", headers={"content-type": "text/html; charset=utf-8"}),
            "the answer is not Connect's JSON (text/html, 15 bytes)",
        ),
        (Expect.JSON, httpx.Response(200), "the answer is not Connect's JSON (no content type, 0 bytes)"),
        (
            Expect.JSON,
            httpx.Response(200, content=b"{not json"),
            "the answer is not Connect's JSON (no content type, 9 bytes)",
        ),
        (
            Expect.INFO,
            json(201, {"name": "b", "config": {}}),
            "the answer is not the connector info naming this connector",
        ),
        (
            Expect.INFO,
            json(201, {"name": "a", "config": "x"}),
            "the answer is not the connector info naming this connector",
        ),
        (Expect.INFO, json(201, {"name": "a"}), "the answer is not the connector info naming this connector"),
        (Expect.INFO, json(201, ["a"]), "the answer is not the connector info naming this connector"),
    ],
)
def test_anything_else_is_an_unexpected_answer(expect: Expect, answer: httpx.Response, message: str) -> None:
    req = Request("PUT", "/connectors/a/config", "a", expect=expect)
    with pytest.raises(UnexpectedAnswer) as caught:
        edge(Script(answer)).once(req)
    exc = caught.value
    assert (exc.server_message, exc.status_code) == (message, answer.status_code)
    assert exc.call == Call("dwh", SERVER, "PUT", "/connectors/a/config", "a")


# --- counting ----------------------------------------------------------------------------


def test_is_write() -> None:
    def r(method: str, path: str) -> httpx.Request:
        return httpx.Request(method, f"{SERVER}{path}")

    assert not is_write(r("GET", "/connectors"))
    assert not is_write(r("PUT", "/connector-plugins/X/config/validate"))
    assert is_write(r("POST", "/connector-plugins/X/config/validate"))
    assert is_write(r("PUT", "/connectors/a/config"))
    assert is_write(r("POST", "/connectors"))
    assert is_write(r("DELETE", "/connectors/a"))


def test_every_request_is_counted_and_writes_apart() -> None:
    e = edge(Script(json(200, {}), httpx.ReadError("reset"), info()), attempts=1)
    e.once(Request("GET", "/connectors"))
    with pytest.raises(ConnectError):
        e.once(PUT)
    e.once(PUT)
    assert (e.requests, e.writes) == (3, 2)


# --- retries and ambiguity -----------------------------------------------------------------


def test_a_single_failed_attempt_is_not_said_to_be_retried() -> None:
    with pytest.raises(ConnectError) as caught:
        edge(Script(error(500, "boom"))).call(PUT)
    assert caught.value.attempts == 1 and "attempts" not in str(caught.value)


def test_transient_failures_are_retried_until_the_bound() -> None:
    script = Script(httpx.Response(503), httpx.Response(503), httpx.Response(503))
    with pytest.raises(ConnectUnavailable) as caught:
        edge(script, attempts=3).call(Request("GET", "/connectors"))
    assert caught.value.attempts == 3 and len(script.seen) == 3


def test_an_ambiguous_write_seen_applied_is_not_sent_again() -> None:
    check, given = applied(True)
    script = Script(TIMED_OUT)
    e = edge(script)
    assert e.call(Request("PUT", "/connectors/a/config", "a", expect=Expect.INFO, applied=check)) is None
    assert len(script.seen) == 1 and given == [True]


def test_an_ambiguous_write_without_a_check_is_sent_again() -> None:
    script = Script(TIMED_OUT, info())
    assert edge(script).call(PUT) is not None and len(script.seen) == 2


def test_an_ambiguous_write_is_watched_for_the_settle_time() -> None:
    check, given = applied(False, False, True)
    script = Script(TIMED_OUT)
    e = edge(script, settle_s=5.0, poll_s=0.001)
    assert e.call(Request("PUT", "/connectors/a/config", "a", expect=Expect.INFO, applied=check)) is None
    assert given == [False, False, True] and len(script.seen) == 1


def test_a_write_not_seen_within_the_settle_time_is_sent_again() -> None:
    check, given = applied(False)
    script = Script(TIMED_OUT, info())
    e = edge(script, settle_s=0.0)
    assert e.call(Request("PUT", "/connectors/a/config", "a", expect=Expect.INFO, applied=check)) is not None
    assert given == [False] and len(script.seen) == 2


def test_an_unreadable_cluster_is_watched_until_the_deadline_then_the_outcome_is_unknown() -> None:
    check, given = applied(None, None, None)
    script = Script(httpx.ReadTimeout("t"))
    e = edge(script, settle_s=0.05, poll_s=0.001)
    with pytest.raises(OutcomeUnknown) as caught:
        e.call(Request("PUT", "/connectors/a/config", "a", expect=Expect.INFO, applied=check))
    assert len(given) > 2, "polled until the deadline: the breaker is not open"
    assert caught.value.server_message == (
        "the write may have been applied and the cluster could not be read to tell; nothing was sent again"
    )
    assert caught.value.call == Call("dwh", SERVER, "PUT", "/connectors/a/config", "a")
    assert len(script.seen) == 1


def test_an_unreadable_cluster_ends_the_watch_once_the_breaker_opens() -> None:
    clock = Clock()
    given: list[Seen] = []

    def check() -> Seen:  # each look takes 10 s: the breaker (budget 15 s) opens on the 2nd
        clock.now += 10
        given.append(None)
        return None

    script = Script(httpx.ReadTimeout("t"))
    e = edge(script, settle_s=30.0, poll_s=0.001, budget_s=15.0, clock=clock)
    with pytest.raises(OutcomeUnknown):
        e.call(Request("PUT", "/connectors/a/config", "a", expect=Expect.INFO, applied=check))
    assert len(given) == 2 and len(script.seen) == 1


def test_a_readable_cluster_is_watched_on_though_the_breaker_opens() -> None:
    clock = Clock()
    answers: list[Seen] = [False, False, True]
    given: list[Seen] = []

    def check() -> Seen:
        clock.now += 10
        given.append(answers.pop(0))
        return given[-1]

    script = Script(httpx.ReadTimeout("t"))
    e = edge(script, settle_s=30.0, poll_s=0.001, budget_s=15.0, clock=clock)
    assert e.call(Request("PUT", "/connectors/a/config", "a", expect=Expect.INFO, applied=check)) is None
    assert given == [False, False, True] and len(script.seen) == 1


def test_a_refusal_after_an_ambiguous_attempt_is_its_echo_when_the_write_shows() -> None:
    # POST timed out, the re-read raced (not yet there), the resent POST meets the first one.
    check, given = applied(False, True)
    script = Script(TIMED_OUT, error(409, "Connector a already exists"))
    req = Request("POST", "/connectors", "a", body={}, expect=Expect.INFO, applied=check)
    assert edge(script).call(req) is None
    assert given == [False, True] and len(script.seen) == 2


def test_a_transient_failure_after_an_ambiguous_attempt_is_not_taken_for_an_echo() -> None:
    check, given = applied(False, True)
    script = Script(TIMED_OUT, httpx.Response(503))
    req = Request("PUT", "/connectors/a/config", "a", expect=Expect.INFO, applied=check)
    with pytest.raises(ConnectUnavailable) as caught:
        edge(script, attempts=2).call(req)
    assert caught.value.status_code == 503 and caught.value.attempts == 2
    assert given == [False]


def test_a_read_after_an_ambiguous_failure_is_simply_sent_again() -> None:
    script = Script(httpx.ReadTimeout("t"), json(200, {"a": {}}))
    assert edge(script).call(Request("GET", "/connectors")) is not None and len(script.seen) == 2
    script = Script(httpx.ReadTimeout("t"), error(404, "Connector a not found"))
    with pytest.raises(ConnectorNotFound):
        edge(script).call(Request("GET", "/connectors/a/config", "a"))
    assert len(script.seen) == 2


def test_a_refusal_without_an_earlier_ambiguous_attempt_is_a_refusal() -> None:
    check, given = applied(True)
    script = Script(error(409, "Connector a already exists"))
    with pytest.raises(ConnectError):
        edge(script).call(Request("POST", "/connectors", "a", expect=Expect.INFO, applied=check))
    assert given == []

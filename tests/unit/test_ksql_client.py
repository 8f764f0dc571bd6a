"""The ksqlDB REST edge against the contract stub (tests/ksqldb_stub.py) over real HTTP.

A few framings the stub does not produce by itself (the JSON-array form of /query-stream, an
error after the header) come from an httpx.MockTransport.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from hephaestus.ksql.client import KSQL_JSON, KsqlClient, KsqlRetryPolicy
from hephaestus.ksql.errors import KsqlError, KsqlStatementError
from tests.ksqldb_stub import KsqlStub, ksqldb_stub

STREAM = "CREATE STREAM USERS (ID STRING KEY, NAME STRING) WITH (KAFKA_TOPIC='local.manabie.bob.public.users');"


@pytest.fixture
def stub() -> Iterator[KsqlStub]:
    with ksqldb_stub() as running:
        yield running


def client(url: str, attempts: int = 4, **kw: object) -> KsqlClient:
    return KsqlClient(url, name="lmsdwh", retry=KsqlRetryPolicy.immediate(attempts), **kw)  # type: ignore[arg-type]


def test_info_and_healthcheck(stub: KsqlStub) -> None:
    with client(stub.url) as c:
        info = c.info()
        assert (info.version, info.service_id, info.status) == ("0.28.2", "default_", "RUNNING")
        assert c.healthy()


def test_each_statement_request_carries_the_last_command_sequence_number(stub: KsqlStub) -> None:
    with client(stub.url) as c:
        first = c.execute(STREAM)
        assert first[0]["@type"] == "currentStatus" and first[0]["commandStatus"]["status"] == "SUCCESS"
        c.execute(
            "CREATE TABLE T AS SELECT ID, LATEST_BY_OFFSET(NAME) AS NAME FROM USERS GROUP BY ID;",
            {"auto.offset.reset": "earliest"},
        )
        c.execute("LIST STREAMS;")
    bodies = [r.body for r in stub.requests if r.path == "/ksql"]
    assert "commandSequenceNumber" not in bodies[0]
    assert [b.get("commandSequenceNumber") for b in bodies[1:]] == [1, 2]
    assert bodies[1]["streamsProperties"] == {"auto.offset.reset": "earliest"}
    assert all(r.headers["Content-Type"] == KSQL_JSON for r in stub.requests if r.path == "/ksql")


def test_a_refused_statement_raises_with_ksqldbs_message_and_counts_what_ran(stub: KsqlStub) -> None:
    stub.fail("DROP", "Source FOO does not exist.")
    with client(stub.url) as c, pytest.raises(KsqlStatementError) as err:
        c.execute(STREAM + "\nDROP STREAM FOO;")
    assert (err.value.status, err.value.error_code) == (400, 40001)
    assert "Source FOO does not exist." in str(err.value) and "lmsdwh" in str(err.value)
    assert c.last_sequence == 1  # the CREATE before the failed DROP did run
    assert len(stub.requests) == 1  # a refused statement is not sent again


def test_an_error_entity_and_a_failed_command_status_are_failures(stub: KsqlStub) -> None:
    connector = "CREATE SINK CONNECTOR X WITH ('connector.class' = 'c');"
    with client(stub.url) as c:
        c.execute(connector)
        with pytest.raises(KsqlStatementError, match="already exists"):
            c.execute(connector)


def test_pull_queries_read_the_delimited_framing(stub: KsqlStub) -> None:
    with client(stub.url) as c:
        c.execute(STREAM)
        c.execute("CREATE TABLE T AS SELECT ID, LATEST_BY_OFFSET(NAME) AS NAME FROM USERS GROUP BY ID;")
        c.execute(
            "INSERT INTO USERS (ID, NAME) VALUES ('u1', 'Ann'); INSERT INTO USERS (ID, NAME) VALUES ('u1', 'Bo');"
        )
        assert c.pull("SELECT NAME FROM T WHERE ID = 'u1';") == [{"NAME": "Bo"}]
        assert c.pull("SELECT * FROM T WHERE ID IN ('u2');") == []
    assert stub.requests[-1].headers["Accept"] == "application/vnd.ksqlapi.delimited.v1"
    assert stub.requests[-1].headers["Content-Type"] == "application/json"
    assert stub.requests[-1].body == {"sql": "SELECT * FROM T WHERE ID IN ('u2');", "properties": {}}


def answering(*responses: httpx.Response) -> httpx.MockTransport:
    queue = list(responses)
    return httpx.MockTransport(lambda request: queue.pop(0))


def test_pull_queries_also_read_the_json_array_form() -> None:
    body = [
        {"queryId": None, "columnNames": ["VERSION", "STATE"], "columnTypes": ["STRING", "STRING"]},
        ["1", "MIGRATED"],
    ]
    with client("http://ksqldb", transport=answering(httpx.Response(200, json=body))) as c:
        assert c.pull("SELECT VERSION, STATE FROM T;") == [{"VERSION": "1", "STATE": "MIGRATED"}]


def test_an_error_after_the_header_fails_the_query() -> None:
    text = (
        json.dumps({"columnNames": ["A"], "columnTypes": ["STRING"]})
        + "\n"
        + json.dumps({"@type": "generic_error", "error_code": 50000, "message": "store unavailable"})
    )
    with (
        client("http://ksqldb", attempts=1, transport=answering(httpx.Response(200, text=text))) as c,
        pytest.raises(KsqlError, match="store unavailable"),
    ):
        c.pull("SELECT A FROM T;")


def test_http2_only_servers_get_a_hint() -> None:
    doc = {"@type": "generic_error", "error_code": 40004, "message": "This endpoint is only available when using HTTP2"}
    with (
        client("http://ksqldb", transport=answering(httpx.Response(400, json=doc))) as c,
        pytest.raises(KsqlError, match="ksqlDB 0.24 or later"),
    ):
        c.pull("SELECT A FROM T;")


@pytest.mark.parametrize(("status", "code"), [(503, 50301), (503, 50302), (429, 42901), (503, 0)])
def test_requests_the_server_refused_before_running_are_retried(stub: KsqlStub, status: int, code: int) -> None:
    stub.fail_requests("/ksql", status, code, times=2)
    with client(stub.url) as c:
        assert c.execute(STREAM)[0]["commandSequenceNumber"] == 1
    assert len(stub.requests) == 3


def test_retries_are_bounded_and_the_message_says_so(stub: KsqlStub) -> None:
    stub.fail_requests("/info", 503, 50301, "Timed out waiting for a previous command", times=5)
    with client(stub.url, attempts=3) as c, pytest.raises(KsqlError, match="after 3 attempts.*previous command"):
        c.info()


class FakeTime:
    """A clock that moves only when the client sleeps: bounds are proven without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def timed(t: FakeTime, **bounds: float) -> KsqlRetryPolicy:
    return replace(KsqlRetryPolicy.immediate(3), clock=t.clock, sleep=t.sleep, **bounds)  # type: ignore[arg-type]


NOT_READY = "KSQL is not yet ready to serve requests."  # ServerState's message with 503 / 50302


def test_a_starting_server_is_waited_for_within_the_readiness_bound(stub: KsqlStub) -> None:
    stub.fail_requests("/info", 503, 50302, NOT_READY, times=12)  # more than the 3 attempts
    t = FakeTime()
    with KsqlClient(stub.url, name="lmsdwh", retry=timed(t, ready_timeout_s=30, poll_s=2)) as c:
        assert c.info().version == "0.28.2"
    assert [r.path for r in stub.requests].count("/info") == 13 and t.now == 24


def test_a_server_that_never_gets_ready_is_named_once_the_bound_is_spent(stub: KsqlStub) -> None:
    stub.fail_requests("/info", 503, 50302, NOT_READY, times=100)
    t = FakeTime()
    with (
        KsqlClient(stub.url, name="lmsdwh", retry=timed(t, ready_timeout_s=10, poll_s=2)) as c,
        pytest.raises(KsqlError, match="still not ready after 10 s.*not yet ready") as err,
    ):
        c.info()
    assert err.value.not_ready and t.now == 10 and [r.path for r in stub.requests].count("/info") == 6


def test_a_gateway_timeout_is_retried_for_reads_but_never_for_a_statement(stub: KsqlStub) -> None:
    stub.fail_requests("/query-stream", 504, 0, "Gateway Timeout")
    stub.fail_requests("/ksql", 504, 0, "Gateway Timeout")
    with client(stub.url) as c:
        with pytest.raises(KsqlError, match="HTTP 504"):
            c.execute(STREAM)  # it may have run: sending it again could create twice
        c.execute(STREAM)
        c.execute("CREATE TABLE T AS SELECT ID, LATEST_BY_OFFSET(NAME) AS NAME FROM USERS GROUP BY ID;")
        assert c.pull("SELECT * FROM T;") == []
    # the 504, then the fresh table not queryable yet, then its (empty) rows
    assert [r.path for r in stub.requests].count("/query-stream") == 3


def test_a_server_that_is_not_there_is_retried_then_named() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with (
        client(f"http://127.0.0.1:{port}", attempts=2) as c,
        pytest.raises(KsqlError, match=f"after 2 attempts.*no response.*127.0.0.1:{port}"),
    ):
        c.info()


def test_basic_auth_and_its_refusal() -> None:
    with ksqldb_stub(credentials=("ksql", "s3cr3t-pw")) as stub:
        with client(stub.url) as c, pytest.raises(KsqlError, match="HTTP 401.*check the credentials") as err:
            c.info()
        assert "s3cr3t-pw" not in str(err.value)
        with client(stub.url, auth=("ksql", "s3cr3t-pw")) as c:
            assert c.info().version == "0.28.2"


# --- what a real server does that the client must wait out or name (the stub's strict side) ----

TABLE = "CREATE TABLE T AS SELECT ID, LATEST_BY_OFFSET(NAME) AS NAME FROM USERS GROUP BY ID;"


def test_a_queued_command_is_polled_until_final(stub: KsqlStub) -> None:
    with client(stub.url) as c:
        c.execute(STREAM)
        (done,) = c.execute(TABLE)
    assert done["commandStatus"]["status"] == "SUCCESS" and done["commandStatus"]["queryId"] == "CTAS_T_1"
    assert [r.path for r in stub.requests][-1] == "/status/table/%60T%60/create"


def test_a_queued_command_that_fails_later_is_the_statements_failure(stub: KsqlStub) -> None:
    with client(stub.url) as c:
        c.execute(STREAM)
        stub.queued_end = {"status": "ERROR", "message": "Could not create state store"}
        with pytest.raises(KsqlStatementError, match="Could not create state store"):
            c.execute(TABLE)


def test_a_command_that_never_finishes_is_named_once_the_bound_is_spent(stub: KsqlStub) -> None:
    t = FakeTime()
    with KsqlClient(stub.url, name="lmsdwh", retry=timed(t, settle_timeout_s=20, poll_s=5)) as c:
        c.execute(STREAM)
        stub.queued_end = {"status": "EXECUTING", "message": "still"}
        with pytest.raises(KsqlError, match="command table/`T`/create still QUEUED after 20 s"):
            c.execute(TABLE)
    assert 19 < t.now <= 20


def test_a_fresh_table_is_asked_again_until_queryable_within_the_bound(stub: KsqlStub) -> None:
    t = FakeTime()
    with KsqlClient(stub.url, name="lmsdwh", retry=timed(t, settle_timeout_s=10, poll_s=1)) as c:
        c.execute(STREAM)
        c.execute(TABLE)
        stub.fresh["T"] = 3
        assert c.pull("SELECT * FROM T;") == []
        stub.fresh["T"] = 1000
        with pytest.raises(KsqlError, match="not available yet"):
            c.pull("SELECT * FROM T;")
    assert t.now < 10 + 0.7 + 10.1


def test_other_pull_errors_are_not_waited_for(stub: KsqlStub) -> None:
    with client(stub.url) as c, pytest.raises(KsqlError, match="does not exist"):
        c.pull("SELECT * FROM NOPE;")
    assert [r.path for r in stub.requests].count("/query-stream") == 1


@pytest.mark.parametrize(
    ("statement", "status", "message"),
    [
        ("CREATE SINK CONNECTOR K WITH ('connector.class'='x');", 409, "Connector K already exists"),
        ("DROP CONNECTOR NOPE;", 404, "Failed to drop connector"),
    ],
)
def test_connector_statements_fail_with_connects_http_status(
    stub: KsqlStub, statement: str, status: int, message: str
) -> None:
    with client(stub.url) as c:
        c.execute("CREATE SINK CONNECTOR K WITH ('connector.class'='x');")
        with pytest.raises(KsqlStatementError, match=message) as err:
            c.execute(statement)
    assert err.value.status == status and len([r for r in stub.requests if r.path == "/ksql"]) == 2


def test_if_exists_connector_statements_answer_warnings_not_errors(stub: KsqlStub) -> None:
    with client(stub.url) as c:
        c.execute("CREATE SINK CONNECTOR K WITH ('connector.class'='x');")
        assert (
            c.execute("CREATE SINK CONNECTOR IF NOT EXISTS K WITH ('connector.class'='x');")[0]["@type"]
            == "warning_entity"
        )
        assert c.execute("DROP CONNECTOR IF EXISTS NOPE;")[0]["@type"] == "warning_entity"


def test_an_assert_that_times_out_is_the_statements_failure_and_its_wait_extends_the_read_timeout() -> None:
    seen: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"]["read"])
        return httpx.Response(
            417, json={"@type": "generic_error", "error_code": 41700, "message": "Topic t does not exist"}
        )

    with KsqlClient(
        "http://ksqldb",
        name="lmsdwh",
        timeout=30,
        transport=httpx.MockTransport(handler),
        retry=KsqlRetryPolicy.immediate(),
    ) as c:
        with pytest.raises(KsqlStatementError, match="Topic t does not exist"):
            c.execute("ASSERT TOPIC t TIMEOUT 2 MINUTES;", waits_s=120)
        with pytest.raises(KsqlStatementError):
            c.execute("ASSERT TOPIC t;")
    assert seen == [150, 30]


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("no.such.thing", "Not recognizable as ksql, streams, consumer, or producer property: 'no.such.thing'"),
        ("ksql.service.id", "Cannot override property 'ksql.service.id'"),
    ],
)
def test_properties_the_server_does_not_know_or_lets_no_one_set_are_refused(
    stub: KsqlStub, key: str, message: str
) -> None:
    with client(stub.url) as c, pytest.raises(KsqlStatementError, match=message):
        c.execute(STREAM, {key: "x"})
    assert stub.sources == {}


def test_an_error_object_after_the_header_fails_the_pull_and_no_row_is_returned(stub: KsqlStub) -> None:
    with client(stub.url) as c:
        c.execute(STREAM)
        c.execute(TABLE)
        c.execute("INSERT INTO USERS (ID, NAME) VALUES ('u1', 'a');")
        stub.fresh.clear()
        stub.stream_errors = 1
        with pytest.raises(KsqlError, match="store closed"):
            c.pull("SELECT * FROM T;")
        assert c.pull("SELECT * FROM T;") == [{"ID": "u1", "NAME": "a"}]

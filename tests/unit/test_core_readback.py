"""What the live cluster shows after a write whose answer was lost (`connect.readback`), each read
once: True or False when Connect says, None when it cannot be told, so the edge never counts a
write it did not see nor sends one twice. Answers as Kafka Connect 4.x gives them
(`ConnectorsResource`: 404 with `error_code`/`message` for an unknown connector; `GET
.../offsets` is `{"offsets": [...]}`; `GET .../status` the connector and its tasks)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hephaestus.connect.models import ConnectorStatus, TaskState
from hephaestus.connect.readback import Readback, path, restarted
from tests.unit.test_core_edge import Script, edge

OFFSET = {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 42}}
GONE = httpx.Response(404, json={"error_code": 404, "message": "Connector s not found"})


def seen(*answers: httpx.Response | Exception) -> tuple[Readback, Script]:
    script = Script(*answers)
    return Readback(edge(script, attempts=1)), script


def asked(script: Script) -> list[str]:
    """Each request read once, as Connect saw it (a read back never writes)."""
    return [f"{r.method} {r.url.path}" for r in script.seen]


def ok(body: Any) -> httpx.Response:
    return httpx.Response(200, json=body)


def status(state: str, *tasks: str) -> dict[str, Any]:
    return {
        "name": "s",
        "connector": {"state": state, "worker_id": "w:8083"},
        "tasks": [{"id": i, "state": t, "worker_id": "w:8083"} for i, t in enumerate(tasks)],
        "type": "sink",
    }


def test_a_name_is_encoded_whole_so_no_character_reaches_another_path() -> None:
    assert path("a b/c?d", "offsets") == "/connectors/a%20b%2Fc%3Fd/offsets"
    assert path("s") == "/connectors/s"


def test_the_config_is_there_when_it_equals_what_was_sent_connect_s_own_name_aside() -> None:
    rb, script = seen(ok({"a": "1", "name": "s"}))
    assert rb.config("s", {"a": "1"}) is True and asked(script) == ["GET /connectors/s/config"]
    assert seen(ok({"a": "2", "name": "s"}))[0].config("s", {"a": "1"}) is False
    assert seen(ok({"a": "1", "b": "2"}))[0].config("s", {"a": "1"}) is False  # more is not the same
    assert seen(GONE)[0].config("s", {"a": "1"}) is False  # not there: not written
    assert seen(httpx.Response(500, json={"error_code": 500, "message": "x"}))[0].config("s", {}) is None
    assert seen(httpx.ConnectError("down"))[0].config("s", {}) is None
    assert seen(ok(["not", "a", "config"]))[0].config("s", {}) is None


def test_offsets_written_are_there_when_every_partition_sent_is_listed() -> None:
    other = {"partition": {"kafka_topic": "t", "kafka_partition": 1}, "offset": {"kafka_offset": 7}}
    rb, script = seen(ok({"offsets": [OFFSET, other]}))
    assert rb.offsets("s", [OFFSET]) is True and asked(script) == ["GET /connectors/s/offsets"]
    assert seen(ok({"offsets": [other]}))[0].offsets("s", [OFFSET]) is False
    assert seen(ok({"offsets": [{**OFFSET, "offset": {"kafka_offset": 41}}]}))[0].offsets("s", [OFFSET]) is False
    assert seen(ok({}))[0].offsets("s", [OFFSET]) is False  # no offsets listed at all


@pytest.mark.parametrize(
    "answer",
    [
        GONE,
        httpx.Response(503, json={"error_code": 503, "message": "rebalancing"}),
        httpx.ConnectError("down"),
        ok(["no", "object"]),
        ok({"offsets": "no list"}),
        httpx.Response(200, content=b"{not json"),
    ],
)
def test_offsets_that_cannot_be_read_tell_nothing_either_way(answer: httpx.Response | Exception) -> None:
    assert seen(answer)[0].offsets("s", [OFFSET]) is None
    assert seen(answer)[0].no_offsets("s") is None


def test_offsets_reset_are_gone_when_none_is_listed() -> None:
    rb, script = seen(ok({"offsets": []}))
    assert rb.no_offsets("s") is True and asked(script) == ["GET /connectors/s/offsets"]
    assert seen(ok({}))[0].no_offsets("s") is True
    assert seen(ok({"offsets": [OFFSET]}))[0].no_offsets("s") is False


def test_a_connector_is_absent_only_when_connect_says_it_is_not_found() -> None:
    rb, script = seen(GONE)
    assert rb.absent("s") is True and asked(script) == ["GET /connectors/s/config"]
    assert seen(ok({"a": "1"}))[0].absent("s") is False
    assert seen(httpx.Response(500, json={"error_code": 500, "message": "x"}))[0].absent("s") is None
    assert seen(httpx.ConnectError("down"))[0].absent("s") is None


def test_a_state_is_reached_when_the_status_shows_it() -> None:
    rb, script = seen(ok(status("STOPPED")))
    assert rb.state("s", lambda st: st.state == "STOPPED") is True
    assert asked(script) == ["GET /connectors/s/status"]
    assert seen(ok(status("RUNNING", "RUNNING")))[0].state("s", lambda st: st.state == "STOPPED") is False
    assert seen(GONE)[0].state("s", lambda st: True) is None
    assert seen(httpx.ConnectError("down"))[0].state("s", lambda st: True) is None
    assert seen(ok({"connector": "no object"}))[0].state("s", lambda st: True) is None


def st(state: str, *tasks: str) -> ConnectorStatus:
    return ConnectorStatus(
        "s", "sink", state, "w:8083", None, tuple(TaskState(i, t, "w:8083") for i, t in enumerate(tasks))
    )


def test_a_restart_landed_while_anything_restarts_or_once_nothing_is_failed() -> None:
    assert restarted(st("RUNNING", "RUNNING", "RUNNING"))
    assert restarted(st("RESTARTING", "FAILED"))  # Connect marks what it restarts first
    assert restarted(st("FAILED", "RESTARTING"))
    assert not restarted(st("RUNNING", "RUNNING", "FAILED"))
    assert not restarted(st("FAILED"))

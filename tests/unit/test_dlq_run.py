"""`dlq list|show|replay` end to end through the CLI, with Connect on the loopback double and
Kafka through the edge's seam (tests/unit/kafkafake.py): the batch asked for is the batch sent,
every replay is audited, and a record that cannot go back stops the whole replay."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hephaestus import kafka
from hephaestus.cli import run
from tests.connect_double import ConnectDouble
from tests.unit.kafkafake import Cluster, Msg

SINK = {
    "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
    "topics": "bob.public.users",
    "errors.deadletterqueue.topic.name": "dlq.users",
    "insert.mode": "upsert",  # a record delivered again overwrites its row: no duplicates
    "pk.mode": "record_key",
}


def parked(offset: int, topic: str = "bob.public.users") -> Msg:
    headers = [("__connect.errors.topic", topic.encode()), ("__connect.errors.partition", b"0"), ("trace", b"t")]
    return Msg("dlq.users", 0, offset, value_=b'{"id": %d}' % offset, headers_=headers)


@pytest.fixture
def world(
    served: tuple[ConnectDouble, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, Cluster]]:
    double, url = served
    double.connectors.clear()
    double.add("users_sink", SINK)
    broker = Cluster()
    broker.logs[("dlq.users", 0)] = [parked(o) for o in range(5)]
    broker.starts[("dlq.users", 0)] = 0
    project = tmp_path / "hephaestus.yaml"
    project.write_text(
        f"clusters: {{c: {{url: '{url}', connectors: c, kafka_bootstrap: 'b:9092'}}}}\naudit_log: audit.jsonl\n"
    )
    monkeypatch.chdir(tmp_path)
    with kafka.seam(admin=broker.admin, consumer=broker.consumer, producer=broker.producer):
        yield project, broker


def test_a_replay_sends_in_transactions_of_the_batch_asked_for_and_is_audited(
    world: tuple[Path, Cluster], capsys: pytest.CaptureFixture[str]
) -> None:
    project, broker = world
    code = run(["dlq", "replay", "--project", str(project), "--connector", "users_sink", "--batch", "2", "--yes"])
    out = capsys.readouterr().out
    assert code == 0 and "users_sink: replayed 5 record(s) to bob.public.users" in out, out
    producer = next(c for c in broker.configs if "transactional.id" in c)
    assert producer["transactional.id"] == "hephaestus-dlq-replay.c.users_sink"
    assert [v for _, _, v in broker.produced] == [b'{"id": %d}' % o for o in range(5)]
    assert broker.groups["hephaestus-dlq-replay.users_sink"] == {("dlq.users", 0): 5}
    assert broker.commits == [2, 2, 1], "three transactions of at most --batch 2"
    audit = [json.loads(line) for line in (project.parent / "audit.jsonl").read_text().splitlines()]
    assert [(e["action"], e["outcome"]) for e in audit] == [("dlq-replay", "intent"), ("dlq-replay", "ok")]


def test_a_second_replay_finds_nothing_new(world: tuple[Path, Cluster], capsys: pytest.CaptureFixture[str]) -> None:
    project, broker = world
    args = ["dlq", "replay", "--project", str(project), "--connector", "users_sink", "--yes"]
    assert run(args) == 0
    assert run(args) == 0
    assert "replayed 0 record(s) (nothing parked since the last replay)" in capsys.readouterr().out
    assert len(broker.produced) == 5


def test_a_record_bound_for_a_topic_the_sink_does_not_read_stops_the_replay(
    world: tuple[Path, Cluster], capsys: pytest.CaptureFixture[str]
) -> None:
    project, broker = world
    broker.logs[("dlq.users", 0)][3] = parked(3, topic="payments")
    code = run(["dlq", "replay", "--project", str(project), "--connector", "users_sink", "--yes"])
    assert code == 2 and broker.produced == [], capsys.readouterr()


def test_list_and_show_read_the_depth_and_the_records_without_their_values_unless_asked(
    world: tuple[Path, Cluster], capsys: pytest.CaptureFixture[str]
) -> None:
    project, _ = world
    assert run(["dlq", "list", "--project", str(project)]) == 2
    assert "users_sink: 5 record(s) in dlq.users, oldest " in capsys.readouterr().out
    assert run(["dlq", "show", "--project", str(project), "--connector", "users_sink", "-o", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["depth"] == 5 and [r["offset"] for r in shown["records"]] == [0, 1, 2, 3, 4]
    assert all("value" not in r["value"] for r in shown["records"]), "a row is printed only when asked for"
    assert run(["dlq", "show", "--project", str(project), "--connector", "users_sink", "--values", "--limit", "1"]) == 0
    assert 'value (json): {"id": 0}' in capsys.readouterr().out


def test_what_a_replay_delivered_is_kept_but_no_longer_needs_attention(
    world: tuple[Path, Cluster], capsys: pytest.CaptureFixture[str]
) -> None:
    project, broker = world
    (project.parent / "c").mkdir()  # git's connector folder, for `status`
    assert run(["dlq", "replay", "--project", str(project), "--connector", "users_sink", "--yes"]) == 0
    capsys.readouterr()
    assert run(["dlq", "list", "--project", str(project), "-o", "json"]) == 0, "replayed to the end: exit 0"
    (row,) = json.loads(capsys.readouterr().out)["dlqs"]
    assert (row["depth"], row["unresolved"]) == (5, 0), row
    assert run(["status", "--project", str(project), "-o", "json"]) == 0
    (sink,) = json.loads(capsys.readouterr().out)["clusters"][0]["connectors"]
    assert (sink["dlq_depth"], sink["dlq_unresolved"], sink["healthy"]) == (5, 0, True)
    # One more record parked after the replay: that one, and only that one, needs someone.
    broker.logs[("dlq.users", 0)].append(parked(5))
    assert run(["dlq", "list", "--project", str(project)]) == 2
    assert "6 record(s) in dlq.users, oldest " in (out := capsys.readouterr().out) and "; 1 parked since" in out, out
    assert run(["status", "--project", str(project)]) == 2
    assert "1/6" in (out := capsys.readouterr().out) and "1 unresolved record(s)" in out, out

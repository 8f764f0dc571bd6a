"""Issue 29 on the real stack: one gate, judged by effects on data. Writes are counted from the
Connect workers' own request logs, rows and slots read back from PostgreSQL, records from Kafka.

- each destructive change is refused with zero writes through each path: an update, a rename
  applied with --target, a state, a sealed plan (tampered, foreign, stale), an import's
  placeholder;
- a STOPPED source's slot, named by a placeholder hephaestus cannot resolve, survives
  `slots --drop-orphan`;
- a DLQ replay lands in the topic and partition each record came from, and a replay killed
  half-way then run again delivers every record exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.stack.faults import WorkerLog
from tests.stack.fleet import Fleet
from tests.stack.support import ConnectClient, Stack, read_rows, wait_until


@pytest.fixture
def fleet(bob_fleet: Fleet) -> Iterator[Fleet]:
    fleet = bob_fleet
    fleet.only_users_to_auth()
    fleet.edit_project(policy={"ready_timeout_s": 120, "stability_window_s": 2})
    yield fleet


def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Edit a connector file; the document as it was, to put back."""
    before = json.loads(path.read_text())
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return before


def files(fleet: Fleet, kind: str) -> Path:
    return next((fleet.root / f"connectors/platforms/{kind}").glob("*.json"))


def test_each_destructive_change_is_refused_with_zero_writes_through_each_path(
    fleet: Fleet, connect: ConnectClient, stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    source, sink = fleet.name("platforms", "source_connector"), fleet.name("platforms", "to_")
    src_file, sink_file = files(fleet, "source"), files(fleet, "sink")
    log = WorkerLog(stack)
    project = str(fleet.root / "hephaestus.yaml")

    def refused(code: int, out: str, *words: str, expected: int = 2) -> None:
        assert code == expected, out
        assert all(w in out for w in words), out
        assert log.writes([fleet.dbs["bob"], fleet.dbs["auth"]]) == [], "the worker saw a write"

    # an update: `always ` is `always` to Debezium (trimmed, any case): every start reads again
    kept = edit(src_file, lambda d: d["config"].update({"snapshot.mode": "always "}))
    code, report = fleet.reconcile()
    refused(code, json.dumps(report), "resnapshot: snapshot.mode=always reads every table")
    src_file.write_text(json.dumps(kept))

    # a source renamed in git and applied with --target <new>: a second source on the same slot
    moved = fleet.root / f"connectors/platforms/source/{source}_v2.json"
    moved.write_text(json.dumps({**kept, "name": f"{source}_v2"}))
    code, report = fleet.reconcile("--target", f"{source}_v2", "--allow-destructive")
    refused(code, json.dumps(report), f"second-writer: replication slot {fleet.slot()} is also platforms/{source}")
    moved.unlink()

    # a sink renamed without renamed_from while its primary key changes: delete + create
    renamed = sink_file.with_name(f"{sink}_v2.json")
    doc = json.loads(sink_file.read_text())
    doc["config"]["primary.key.fields"] = "user_id,name"
    renamed.write_text(json.dumps({**doc, "name": f"{sink}_v2"}))
    sink_file.unlink()
    code, report = fleet.reconcile()
    refused(code, json.dumps(report), f"keys-changed: takes over the table {sink} wrote")
    renamed.unlink()
    sink_file.write_text(json.dumps({**doc, "config": {**doc["config"], "primary.key.fields": "user_id"}}))

    # a sealed plan: tampered, made against another Connect, stale
    edit(sink_file, lambda d: d["config"].update({"batch.size": "77"}))
    fleet.edit_project(clusters=_with_url_env(fleet, "HEPH_GATE_URL"))
    saved = fleet.root / "plan.json"
    code, out = fleet.cli("reconcile", "--project", project, "--dry-run", "--out", str(saved))
    assert code == 0 and "sealed into" in out, out
    plan = json.loads(saved.read_text())
    tampered = json.loads(saved.read_text())
    tampered["body"]["options"]["allow_destructive"] = "all"
    saved.write_text(json.dumps(tampered))
    refused(*fleet.cli("reconcile", "--project", project, "--plan", str(saved)), "edited or truncated", expected=1)
    saved.write_text(json.dumps(plan))
    other = WorkerLog(stack, 2)
    monkeypatch.setenv("HEPH_GATE_URL", stack.connect2_url or "")
    refused(*fleet.cli("reconcile", "--project", project, "--plan", str(saved)), "a foreign plan", expected=1)
    assert other.writes([fleet.dbs["bob"], fleet.dbs["auth"]]) == []  # other tests run beside this one
    monkeypatch.delenv("HEPH_GATE_URL")
    live = connect.config(sink)
    mine = WorkerLog(stack)
    connect.put_config(sink, {**live, "batch.size": "5"})  # someone edits it by hand
    # The worker logs a request after answering it: wait for this edit's line before reading
    # the log from here on, or the hand edit is taken for a write of hephaestus (it was, once).
    wait_until(lambda: mine.writes([sink]) or None, timeout=30, message="the hand edit in the worker log")
    log = WorkerLog(stack)
    refused(*fleet.cli("reconcile", "--project", project, "--plan", str(saved)), f"the live config or state of {sink}")
    assert connect.config(sink)["batch.size"] == "5"

    # an import of a sink made by hand, its credential put behind a placeholder: the reconcile
    # that would write the placeholder points the sink at "anything": refused
    hand = f"{fleet.dbs['auth']}_hand_sink"
    with_pw = f"{stack.jdbc_url(fleet.dbs['auth'])}?user={stack.pg_user}&password={stack.pg_password}"
    made = {k: v for k, v in live.items() if k != "name" and not k.startswith("errors.deadletterqueue")}
    connect.put_config(hand, {**made, "connection.url": with_pw, "topics": "it.gate.none"})
    connect.wait_running(hand)
    secret = "connection.url=${file:secrets/connect.properties:" + fleet.dbs["auth"] + "_url}"
    code, out = fleet.cli("import", "--project", project, "--select", hand, "--secret", secret)
    assert code == 0 and stack.pg_password not in (fleet.root / f"connectors/platforms/sink/{hand}.json").read_text()
    log = WorkerLog(stack)
    code, report = fleet.reconcile("--target", hand)
    refused(code, json.dumps(report), "target-changed: connection.url: another database")

    # a state: stopping a source that drops its slot on stop
    edit(src_file, lambda d: d["config"].update({"slot.drop.on.stop": "true"}))
    assert fleet.reconcile("--target", source)[0] == 0  # the old tasks kept theirs: a restart
    edit(src_file, lambda d: d.update(state="stopped"))
    log = WorkerLog(stack)
    code, report = fleet.reconcile("--target", source)
    refused(code, json.dumps(report), "destructive state of", "slot-dropped: slot.drop.on.stop=true")
    bob = stack.dsn(fleet.dbs["bob"])
    assert read_rows(bob, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", [fleet.slot()]) == [(1,)]


def _with_url_env(fleet: Fleet, env: str) -> dict[str, Any]:
    import yaml

    clusters: dict[str, Any] = yaml.safe_load((fleet.root / "hephaestus.yaml").read_text())["clusters"]
    clusters["platforms"]["url_env"] = env
    return clusters


# Alone: while its source names its slot by a placeholder hephaestus cannot resolve, that source
# could use any slot on the stack's PostgreSQL, so every other test's slot report names it as a
# possible owner too (a CI run failed test_ops's owner check on that).
@pytest.mark.exclusive
def test_a_stopped_sources_slot_named_by_a_placeholder_survives_drop_orphan(
    fleet: Fleet, connect: ConnectClient, stack: Stack
) -> None:
    """The worker resolves the slot's name from its secrets file; hephaestus, without that file,
    cannot: the slot could be that source's, so it is never dropped (issue 29)."""
    from tests.stack.support import _rewrite_secrets

    key = f"{fleet.dbs['bob']}_slot"
    _rewrite_secrets(stack.secrets_file, lambda lines: [*lines, f"{key}={fleet.slot()}"])
    try:
        hidden = "${file:secrets/connect.properties:" + key + "}"
        edit(files(fleet, "source"), lambda d: d["config"].update({"slot.name": hidden}))
        assert fleet.reconcile()[0] == 0
        source = fleet.name("platforms", "source_connector")
        bob = stack.dsn(fleet.dbs["bob"])
        wait_until(
            lambda: (
                read_rows(bob, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", [fleet.slot()])
                == [(1,)]
                or None
            ),
            timeout=60,
            message="the slot the worker resolved",
        )
        connect.http.put(f"/connectors/{source}/stop").raise_for_status()
        wait_until(
            lambda: (
                read_rows(bob, "SELECT active FROM pg_replication_slots WHERE slot_name = %s", [fleet.slot()])
                == [(False,)]
                or None
            ),
            timeout=60,
            message="the slot inactive",
        )
        code, out = fleet.cli(
            "slots", "--project", str(fleet.root / "hephaestus.yaml"), "--drop-orphan", fleet.slot(), "--yes"
        )
        assert code == 2 and f"platforms/{source}, platforms/{source} (in git) could use it" in out, out
        assert "never allowed" in out
        assert read_rows(bob, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", [fleet.slot()]) == [
            (1,)
        ]
    finally:
        _rewrite_secrets(stack.secrets_file, lambda lines: [line for line in lines if not line.startswith(key)])


# --- DLQ replay -------------------------------------------------------------------------------


def _replay_setup(fleet: Fleet, connect: ConnectClient, stack: Stack, records: int) -> tuple[str, str, str]:
    """A topic of 3 partitions, a paused sink that reads it with a DLQ, and `records` parked
    records whose headers name the partition each came from."""
    db = fleet.dbs["auth"]
    topic, dlq, sink = f"it.gate.{db}.orders", f"dlq.it.gate.{db}", f"{db}_replay_sink"
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})
    for f in admin.create_topics([NewTopic(topic, 3, 1), NewTopic(dlq, 1, 1)]).values():
        f.result(30)
    config = {
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "connection.url": stack.jdbc_url(db),
        "connection.username": stack.pg_user,
        "connection.password": stack.pg_password,
        "topics": topic,
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
    }
    connect.put_config(sink, config)
    connect.http.put(f"/connectors/{sink}/pause").raise_for_status()  # the test reads the topic itself
    # Until its status is written, Connect's expanded listing leaves a new connector out, and
    # `dlq replay` (which finds sinks by that listing) would say there is no such sink.
    wait_until(
        lambda: (connect.status(sink) or {}).get("connector", {}).get("state") == "PAUSED" or None,
        timeout=60,
        message=f"{sink} PAUSED",
    )
    producer = Producer({"bootstrap.servers": stack.bootstrap})
    for i in range(records):
        headers = [
            ("__connect.errors.topic", topic.encode()),
            ("__connect.errors.partition", str(i % 3).encode()),
            ("__connect.errors.offset", str(i).encode()),
            ("trace", f"t{i}".encode()),
        ]
        producer.produce(dlq, key=f"k{i}".encode(), value=f"v{i}".encode(), headers=headers)
    assert producer.flush(30) == 0
    return topic, dlq, sink


def _landed(stack: Stack, topic: str) -> dict[str, list[int]]:
    """Every committed record of the topic: key -> the partitions it is in (read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": stack.bootstrap,
            "group.id": f"gate-{time.time_ns()}",
            "isolation.level": "read_committed",
        }
    )
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})
    parts = list(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, 0) for p in parts])
    found: dict[str, list[int]] = {}
    idle = time.monotonic() + 10
    while time.monotonic() < idle:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        found.setdefault(msg.key().decode(), []).append(msg.partition())
        assert dict(msg.headers() or [])["trace"].startswith(b"t")  # its own headers kept, Connect's left out
        assert "__connect.errors.topic" not in dict(msg.headers() or [])
        idle = time.monotonic() + 3
    consumer.close()
    return found


def test_a_replay_lands_where_each_record_came_from_and_a_killed_one_resumes_exactly_once(
    fleet: Fleet, connect: ConnectClient, stack: Stack
) -> None:
    n = 3000
    topic, dlq, sink = _replay_setup(fleet, connect, stack, n)
    project = str(fleet.root / "hephaestus.yaml")
    args = ["dlq", "replay", "--project", project, "--connector", sink, "--yes", "--batch", "5"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "hephaestus", *args], cwd=fleet.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    group = f"hephaestus-dlq-replay.{sink}"
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})

    def committed() -> int:
        from confluent_kafka import ConsumerGroupTopicPartitions

        (future,) = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
        return sum(tp.offset for tp in future.result(10).topic_partitions or () if tp.offset > 0)

    wait_until(lambda: committed() > 100 or None, timeout=120, interval=0.05, message="some transactions committed")
    os.kill(proc.pid, signal.SIGKILL)  # half-way: a transaction may be open
    proc.wait(30)
    time.sleep(2)  # a commit the broker had received completes; an open transaction stays open
    at_kill = committed()
    assert 0 < at_kill < n, f"killed at {at_kill} of {n}: not half-way"

    code, out = fleet.cli(*args)
    assert code == 0 and f"replayed {n - at_kill} record(s)" in out, out
    landed = _landed(stack, topic)
    assert len(landed) == n and all(len(p) == 1 for p in landed.values()), "each record exactly once"
    assert all(landed[f"k{i}"] == [i % 3] for i in range(n)), "in the partition it came from"
    code, out = fleet.cli(*args)
    assert code == 0 and "replayed 0 record(s)" in out, out
    audit = [json.loads(line) for line in (fleet.root / "audit.jsonl").read_text().splitlines()]
    replays = [(e["outcome"]) for e in audit if e.get("action") == "dlq-replay"]
    assert replays[-2:] == ["intent", "ok"], replays
    del dlq


def test_a_record_naming_a_topic_the_sink_does_not_read_stops_the_replay(
    fleet: Fleet, connect: ConnectClient, stack: Stack
) -> None:
    topic, dlq, sink = _replay_setup(fleet, connect, stack, 3)
    producer = Producer({"bootstrap.servers": stack.bootstrap})
    headers = [("__connect.errors.topic", b"connect-configs"), ("__connect.errors.partition", b"0")]
    producer.produce(dlq, key=b"evil", value=b'{"x": 1}', headers=headers)
    assert producer.flush(30) == 0
    code, out = fleet.cli(
        "dlq", "replay", "--project", str(fleet.root / "hephaestus.yaml"), "--connector", sink, "--yes"
    )
    assert code == 2 and "names topic 'connect-configs', which" in out and "never allowed" in out, out
    assert _landed(stack, topic) == {}, "nothing was sent"

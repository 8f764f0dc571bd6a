"""`hephaestus snapshot send` and `snapshot status` end to end in-process: the connector read from
the strict Connect double on loopback, the signal row through the PostgreSQL seam and the
notifications through the Kafka seam (the fakes of test_snapshot_manual.py and
test_snapshot_notifications.py, which say where their behaviour comes from)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hephaestus import kafka, pg
from hephaestus.cli import run
from tests.connect_double import ConnectDouble
from tests.unit.test_snapshot_manual import SOURCE, Source
from tests.unit.test_snapshot_notifications import Cluster as Kafka
from tests.unit.test_snapshot_notifications import note


@pytest.fixture
def project_file(tmp_path: Path, served: tuple[ConnectDouble, str]) -> Iterator[Path]:
    double, url = served
    double.connectors.clear()
    double.add("bob_src", SOURCE, type="source")
    (tmp_path / "connectors" / "c").mkdir(parents=True)
    path = tmp_path / "hephaestus.yaml"
    path.write_text(
        f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\n    select: ['bob_*']\n"
        "    kafka_bootstrap: b:9092\n"
        "databases:\n  bob: {dsn: 'dbname=bob'}\naudit_log: audit.jsonl\n"
    )
    yield path


def snapshot(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(["snapshot", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_send_writes_one_signal_and_prints_it(project_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = Source()
    with pg.seam(db.connect):
        code, out, err = snapshot(capsys, "--project", str(project_file), "--connector", "bob_src", "users")
    (row,) = db.inserted
    assert (code, err) == (0, "") and out == f"sent execute-snapshot {row[0]} to bob_src: {row[2]}\n"
    assert json.loads(row[2])["data-collections"] == ["public.users"]


def test_send_without_a_table_is_refused_before_anything_is_read(
    project_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = Source()
    with pg.seam(db.connect):
        code, _, err = snapshot(capsys, "send", "--project", str(project_file), "--connector", "bob_src")
    assert code == 1 and err == "error: name at least one table to snapshot\n" and db.connects == []


def status(capsys: pytest.CaptureFixture[str], project_file: Path, cluster: Kafka, *args: str) -> tuple[int, str, str]:
    with kafka.seam(consumer=cluster.consumer):
        base = ["status", "--project", str(project_file), "--connector", "bob_src", "--id", "sig-1"]
        return snapshot(capsys, *base, *args)


def test_status_of_a_completed_snapshot_exits_0_and_lists_its_events(
    project_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = Kafka()
    cluster.put(0, note("sig-1", "STARTED"), note("sig-1", "TABLE_SCAN_COMPLETED", "public.users", "SUCCEEDED"))
    cluster.put(0, note("sig-1", "COMPLETED"))
    code, out, _ = status(capsys, project_file, cluster, "--wait")
    assert code == 0
    assert out == "signal sig-1: COMPLETED\n  STARTED\n  TABLE_SCAN_COMPLETED public.users SUCCEEDED\n  COMPLETED\n"


def test_status_of_a_skipped_table_exits_2_as_json(project_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = Kafka()
    cluster.put(0, note("sig-1", "TABLE_SCAN_COMPLETED", "public.t", "NO_PRIMARY_KEY"), note("sig-1", "COMPLETED"))
    code, out, _ = status(capsys, project_file, cluster, "-o", "json")
    assert code == 2
    assert json.loads(out) == {
        "signal_id": "sig-1",
        "completed": True,
        "events": [
            {"type": "TABLE_SCAN_COMPLETED", "data_collection": "public.t", "status": "NO_PRIMARY_KEY"},
            {"type": "COMPLETED", "data_collection": "", "status": ""},
        ],
    }


def test_status_of_a_snapshot_not_yet_completed_exits_2(project_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = Kafka()
    cluster.put(0, note("sig-1", "STARTED"))
    code, out, _ = status(capsys, project_file, cluster)
    assert code == 2 and out == "signal sig-1: not completed\n  STARTED\n"

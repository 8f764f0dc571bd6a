"""The offsets ledger (issue 49): records kept and read back, a restore judged against the slot
as it is now, and the whole path over the strict Connect double and the PostgreSQL fake: backup,
history, a lost connector created STOPPED, given its offsets and only then started, and each
bad input refused with nothing written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hephaestus import pg
from hephaestus.errors import InputError
from hephaestus.project import load_project
from hephaestus.safety.restore import lsn_text, of_restore
from hephaestus.state.backend import ownership_store
from hephaestus.state.ledgerdoc import FORMAT, Record, SlotAt, as_doc, at_or_before, from_doc, kept, lsn_of
from hephaestus.state.ownership import claims_of
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project
from tests.unit.pgfake import SOURCE, Server, on

SINK = {
    "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
    "topics": "bob.public.users",
    "insert.mode": "upsert",
}
SRC_OFFSETS = [{"partition": {"server": "bob"}, "offset": {"lsn": 0x16_0000_2000, "txId": 7, "ts_usec": 1}}]
SNK_OFFSETS = [
    {"partition": {"kafka_topic": "bob.public.users", "kafka_partition": 0}, "offset": {"kafka_offset": 42}},
]


def record(taken: str, connector: str = "src", lsn: int = 100) -> Record:
    offsets = ({"partition": {"server": "bob"}, "offset": {"lsn": lsn}},)
    return Record("p", "c", connector, "source", taken, "r1", offsets, SlotAt("bob", "bob_slot", 50, 100))


# --- the records (pure) ---------------------------------------------------------------------------


def test_an_lsn_reads_and_prints_as_postgresql_spells_it() -> None:
    assert lsn_of("16/B374D848") == (0x16 << 32) + 0xB374D848
    assert lsn_text(lsn_of("16/B374D848")) == "16/B374D848" and lsn_text(0) == "0/0"
    for wrong in ("16", "/1", "x/1", ""):
        with pytest.raises(ValueError):
            lsn_of(wrong)


def test_the_record_at_a_time_is_the_newest_at_or_before_it_and_retention_keeps_the_newest() -> None:
    found = [
        record("2026-12-01T10:00:00+00:00"),
        record("2026-12-01T12:00:00+00:00"),
        record("2026-12-01T11:00:00+00:00"),
    ]
    assert at_or_before(found, None) == found[1]
    assert at_or_before(found, datetime(2026, 12, 1, 11, 30, tzinfo=UTC)) == found[2]
    assert at_or_before(found, datetime(2026, 12, 1, 9, tzinfo=UTC)) is None
    other = record("2026-12-01T09:00:00+00:00", connector="snk")
    assert kept([*found, other], 2) == [other, found[2], found[1]]  # per connector; never fewer than one
    assert kept(found, 0) == [found[1]]


def test_a_ledger_reads_back_as_written_and_anything_else_is_an_error_naming_the_field() -> None:
    records = [record("2026-12-01T10:00:00+00:00")]
    assert from_doc(json.loads(json.dumps(as_doc("p", records))), "p", "l.json") == records
    assert record("2026-12-01T10:00:00+00:00").lsn == 100
    cases: list[tuple[Any, str, str]] = [
        ([], "format", "not an offsets ledger"),
        (as_doc("other", records), "project", "the ledger of project 'other', not of 'p'"),
        ({"format": FORMAT, "project": "p", "records": {}}, "records", "expected a list"),
        ({**as_doc("p", records), "records": [{**as_doc("p", records)["records"][0], "taken_at": "noon"}]},
         "records[0].taken_at", "not an ISO 8601 time"),
        ({**as_doc("p", records), "records": [{**as_doc("p", records)["records"][0], "slot": {"name": 1}}]},
         "records[0].slot", "expected {database"),
    ]  # fmt: skip
    for doc, field, said in cases:
        with pytest.raises(InputError) as caught:
            from_doc(doc, "p", "l.json")
        assert caught.value.field == field and said in str(caught.value) and "l.json" in str(caught.value)


# --- what a restore does to data (pure) -----------------------------------------------------------


def codes(found: tuple[Any, ...]) -> list[str]:
    return [e.code for e in found]


def test_a_source_resumes_only_where_its_slot_still_holds_the_wal() -> None:
    assert codes(of_restore(SOURCE, {}, {}, 100, ("bob_slot", 100))) == []  # held: resumes there
    lost = of_restore(SOURCE, {}, {}, 99, ("bob_slot", 100))
    assert codes(lost) == ["offsets-lost"] and "no longer holds the recorded position 0/63" in lost[0].why
    assert codes(of_restore(SOURCE, {}, {}, 100, None)) == ["offsets-lost"]  # the slot is gone
    assert codes(of_restore(SOURCE, {}, {}, None, ("bob_slot", 0))) == ["offsets-lost"]  # no position recorded


def test_a_restores_effects_say_what_happens_in_words() -> None:
    def words(found: tuple[Any, ...]) -> list[str]:
        return [e.describe() for e in found]

    high = 0x16_0000_2000  # an LSN past 2**32: both halves printed as PostgreSQL does
    assert words(of_restore(SOURCE, {}, {}, high - 1, ("bob_slot", high))) == [
        "offsets-lost: slot bob_slot no longer holds the recorded position 16/1FFF (its WAL starts at 16/2000)"
    ]
    assert words(of_restore(SOURCE, {}, {}, 1, None)) == [
        "offsets-lost: its slot does not exist: a new one starts at the present, and the changes since the "
        "record are lost"
    ]
    assert words(of_restore(SOURCE, {}, {}, None, ("bob_slot", 1))) == [
        "offsets-lost: the record holds no WAL position to resume at"
    ]
    assert words(of_restore(SINK, {"t[0]": 9, "t[1]": 1}, {"t[0]": 5, "t[1]": 3}, None, None)) == [
        "offsets-rewound: moved back in t[0]",
        "offsets-lost: moved ahead in t[1]: the records in between are skipped",
        "redelivery: records are delivered again and upserted onto the same rows",
    ]


def test_a_sink_put_back_redelivers_and_one_moved_ahead_skips() -> None:
    upsert = SINK
    assert codes(of_restore(upsert, {}, {"t[0]": 5}, None, None)) == ["redelivery"]  # offsets lost: put back
    assert codes(of_restore({**SINK, "insert.mode": "insert"}, {}, {"t[0]": 5}, None, None)) == ["duplicates"]
    assert codes(of_restore(upsert, {"t[0]": 9}, {"t[0]": 5}, None, None)) == ["offsets-rewound", "redelivery"]
    assert codes(of_restore(upsert, {"t[0]": 1}, {"t[0]": 5}, None, None)) == ["offsets-lost"]
    assert codes(of_restore(upsert, {"t[0]": 5}, {"t[0]": 5}, None, None)) == []


# --- backup, history and restore over the Connect double and the PostgreSQL fake ------------------


class Fleet:
    def __init__(self, project: Project, double: ConnectDouble, url: str) -> None:
        self.project, self.double = project, double
        self.file = project.root / "hephaestus.yaml"
        self.file.write_text(
            f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\n"
            "databases:\n  bob: {dsn: 'host=fake dbname=bob'}\naudit_log: audit.jsonl\n"
            "policy: {stability_window_s: 0, ready_timeout_s: 5}\n"
        )
        for name, config, offsets, kind in (("src", SOURCE, SRC_OFFSETS, "source"), ("snk", SINK, SNK_OFFSETS, "sink")):
            folder = project.root / "connectors/c" / kind
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config}))
            double.add(name, dict(config), type=kind).offsets = [dict(o) for o in offsets]
        loaded = load_project(self.file)
        ownership_store(loaded).claim(loaded.name, "c", claims_of(["src", "snk"], "*", "created", "r0"))
        self.slot = ("16/1000", "16/2000")  # restart_lsn, confirmed_flush_lsn: the record's lsn is 16/2000

    def server(self) -> Server:
        return Server(handlers=[on(r"FROM pg_replication_slots WHERE slot_name", [self.slot])])

    def run(self, *args: str) -> Any:
        with pg.seam(self.server().connect):
            return self.project.cli("offsets", *args[:1], "--project", str(self.file), *args[1:])


@pytest.fixture
def fleet(project: Project, served: tuple[ConnectDouble, str]) -> Fleet:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    double.on_start.clear()
    return Fleet(project, double, url)


def writes(double: ConnectDouble) -> list[tuple[str, str]]:
    return [w for w in double.writes() if w[0] != "GET"]


def test_backup_records_every_owned_connector_with_its_slot_and_history_lists_them(fleet: Fleet) -> None:
    out = fleet.run("backup")
    assert out.code == 0, out.err
    assert "2 connectors recorded, 0 not" in out.err
    history = fleet.run("history", "src", "-o", "json")
    (rec,) = json.loads(history.out)["records"]
    assert rec["offsets"] == SRC_OFFSETS and rec["kind"] == "source"
    assert rec["slot"] == {"database": "bob", "name": "bob_slot", "restart_lsn": lsn_of("16/1000"),
                           "confirmed_flush_lsn": lsn_of("16/2000")}  # fmt: skip
    assert "c/snk: 1 partition(s)" in fleet.run("history", "snk").out
    audit = [json.loads(line) for line in (fleet.project.root / "audit.jsonl").read_text().splitlines()]
    assert [(e["action"], e["outcome"]) for e in audit] == [("offsets-backup", "ok")]
    assert writes(fleet.double) == []  # a backup writes nothing to Connect


def test_a_cluster_that_lost_its_connectors_gets_them_back_stopped_then_offsets_then_started(fleet: Fleet) -> None:
    """Disaster recovery: the cluster recreated with an empty offsets topic. Each connector is
    created STOPPED from git, given its recorded offsets, and only then started: it never runs
    without them (a source would snapshot again, a sink re-read its topics from the start)."""
    assert fleet.run("backup").code == 0
    fleet.double.connectors.clear()
    fleet.double.log.clear()
    out = fleet.run("restore", "--cluster", "c", "--auto-approve")
    assert out.code == 0, out.out + out.err
    for name, offsets in (("src", SRC_OFFSETS), ("snk", SNK_OFFSETS)):
        assert fleet.double.connectors[name].offsets == offsets
        assert fleet.double.connectors[name].state == "RUNNING"
    # Created STOPPED (the double refuses a PATCH to a connector that is not), offsets, resumed.
    assert writes(fleet.double) == [
        w for n in ("snk", "src") for w in (("POST", "/connectors"), ("PATCH", f"/connectors/{n}/offsets"),
                                             ("PUT", f"/connectors/{n}/resume"))
    ]  # fmt: skip


def test_a_restore_the_slot_can_no_longer_serve_is_refused_offsets_lost_with_nothing_written(fleet: Fleet) -> None:
    assert fleet.run("backup").code == 0
    fleet.slot = ("16/3000", "16/4000")  # the slot moved past the record (its WAL released)
    fleet.double.log.clear()
    out = fleet.run("restore", "src", "--auto-approve")
    assert out.code == 2, out.out + out.err
    assert "offsets-lost" in out.out + out.err and writes(fleet.double) == []
    allowed = fleet.run("restore", "src", "--auto-approve", "--allow-destructive=offsets-lost")
    assert allowed.code == 0, allowed.out + allowed.err  # the operator knows the slot is the same one


def test_bad_input_is_exit_1_and_nothing_written(fleet: Fleet, tmp_path: Path) -> None:
    assert fleet.run("backup").code == 0
    fleet.double.log.clear()
    fleet.slot = ("16/0", "16/1000")  # behind the record: another slot (a restored database)
    newer = fleet.run("restore", "src", "--auto-approve")
    assert newer.code == 1 and "is newer than slot bob_slot" in newer.err
    foreign = tmp_path / "ledger.json"
    foreign.write_text(json.dumps({"format": FORMAT, "project": "elsewhere", "records": []}))
    other = fleet.run("restore", "src", "--ledger", str(foreign), "--auto-approve")
    assert other.code == 1 and "the ledger of project 'elsewhere'" in other.err and "project" in other.err
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert fleet.run("restore", "src", "--ledger", str(broken), "--auto-approve").code == 1
    assert fleet.run("restore", "nobody", "--auto-approve").code == 1
    assert writes(fleet.double) == []


def test_a_restore_touches_only_what_this_deployment_owns(fleet: Fleet) -> None:
    """Another deployment's connector of the same name, live on the cluster, is never written."""
    assert fleet.run("backup").code == 0
    loaded = load_project(fleet.file)
    ownership_store(loaded).release(loaded.name, "c", ["snk"])
    fleet.double.log.clear()
    out = fleet.run("restore", "snk", "--auto-approve")
    assert out.code == 1 and "snk runs on c but this deployment does not own it" in out.err
    whole = fleet.run("restore", "--cluster", "c", "--auto-approve")
    assert whole.code == 1 and "does not own it" in whole.err
    assert writes(fleet.double) == []


def test_a_restore_is_done_only_when_connect_says_the_connector_runs(fleet: Fleet) -> None:
    """Never report success not observed: a restored connector whose task fails is exit 1,
    named with its trace's cause, and audited not-ready."""
    assert fleet.run("backup").code == 0
    fleet.double.connectors.pop("snk")
    fleet.double.on_start["snk"] = ["FAILED"]
    out = fleet.run("restore", "snk", "--auto-approve")
    assert out.code == 1, out.out + out.err
    assert "offsets restored, but not running as they should: snk" in out.err
    audit = [json.loads(line) for line in (fleet.project.root / "audit.jsonl").read_text().splitlines()]
    assert [e["outcome"] for e in audit if e["action"] == "offsets-restore"] == ["intent", "ok", "not-ready"]


def test_a_record_says_what_it_holds_and_an_lsn_that_is_not_one_is_named() -> None:
    r = record("2026-12-01T10:00:00+00:00")
    assert r.describe() == "2026-12-01T10:00:00+00:00 c/src: 1 partition(s), slot bob_slot at 0/64"
    assert at_or_before([r], datetime(2026, 12, 1, 10, tzinfo=UTC)) == r  # at the very time: chosen
    for wrong in ("1/", "/1"):
        with pytest.raises(ValueError, match=f"^not an LSN: {wrong!r}$"):
            lsn_of(wrong)


GOOD = as_doc("p", [record("2026-12-01T10:00:00+00:00")])["records"][0]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"cluster": ""}, "records[0].cluster"),
        ({"connector": 7}, "records[0].connector"),
        ({"kind": None}, "records[0].kind"),
        ({"run_id": ""}, "records[0].run_id"),
        ({"taken_at": ""}, "records[0].taken_at"),
        ({"offsets": {}}, "records[0].offsets"),
        ({"offsets": [{"offset": {}}]}, "records[0].offsets"),
        ({"slot": []}, "records[0].slot"),
        ({"slot": {**GOOD["slot"], "name": 1}}, "records[0].slot"),
        ({"slot": {**GOOD["slot"], "restart_lsn": -1}}, "records[0].slot"),
        ({"slot": {**GOOD["slot"], "confirmed_flush_lsn": True}}, "records[0].slot"),
        ({"slot": {**GOOD["slot"], "restart_lsn": "16/0"}}, "records[0].slot"),
    ],
)
def test_each_field_of_a_record_is_checked_and_named(change: dict[str, Any], field: str) -> None:
    doc = {"format": FORMAT, "project": "p", "records": [{**GOOD, **change}]}
    with pytest.raises(InputError) as caught:
        from_doc(doc, "p", "l.json")
    assert (caught.value.file, caught.value.field) == ("l.json", field)


def test_a_record_that_is_no_object_and_a_slot_at_zero() -> None:
    with pytest.raises(InputError) as caught:
        from_doc({"format": FORMAT, "project": "p", "records": ["x"]}, "p", "l.json")
    assert (caught.value.file, caught.value.field, "expected an object" in str(caught.value)) == (
        "l.json", "records[0]", True
    )  # fmt: skip
    zero = {**GOOD, "slot": {**GOOD["slot"], "restart_lsn": 0}}
    (found,) = from_doc({"format": FORMAT, "project": "p", "records": [zero]}, "p", "l.json")
    assert found.slot is not None and found.slot.restart_lsn == 0

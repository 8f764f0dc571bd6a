"""`hephaestus ksql undo --until N` (issue 33): undo files `U<version>__<name>.sql` beside the
V files, run newest first, recorded in the metadata stream as `apply` records (RUNNING, then
UNDONE or ERROR), against the ksqlDB contract stub. What is checked is what the server received
and kept: the statements in order, the rows, and what pull queries then answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hephaestus.cli import run
from hephaestus.errors import InputError
from hephaestus.ksql import files
from hephaestus.ksql import run as ksql_run
from hephaestus.ksql.compiler import ParseFailure
from hephaestus.project import KsqlDB
from hephaestus.state.lock import FileLock, Holder, resource_key
from tests.ksqldb_stub import ksqldb_stub
from tests.unit.conftest import REPO
from tests.unit.test_ksql_cli import V1, V2, V3, Ksql, md5, project_yaml

U1 = "DROP STREAM IF EXISTS BOB_USERS;\n"
U2 = "DROP CONNECTOR IF EXISTS LMSDWH_USERS_SINK;\nDROP TABLE IF EXISTS USERS_LATEST;\n"
U3 = "DROP STREAM IF EXISTS BOB_STUDENTS;\n"
UNDO = {
    1: ("U000001__bob_users.sql", U1),
    2: ("U000002__users_latest.sql", U2),
    3: ("U000003__bob_students.sql", U3),
}


@pytest.fixture
def ksql(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Ksql]:
    """Versions 1-3 applied, with no undo file yet (`undo_files` writes them)."""
    with ksqldb_stub() as stub:
        (tmp_path / "hephaestus.yaml").write_text(project_yaml(stub.url))
        k = Ksql(tmp_path, stub, capsys)
        for name, text in (
            ("V000001__bob_users.sql", V1),
            ("V000002__users_latest.sql", V2),
            ("V000003__bob_students.sql", V3),
        ):
            k.write(name, text)
        assert k.cli("ksql", "init").code == 0
        assert k.cli("ksql", "apply", "--all").code == 0
        yield k


def undo_files(ksql: Ksql, *versions: int) -> None:
    for v in versions:
        ksql.write(*UNDO[v])


def transitions(ksql: Ksql, since: int) -> list[tuple[str, str, str]]:
    return [(e["VERSION_KEY"], e["VERSION"], e["STATE"]) for e in ksql.events()[since:]]


def test_undo_until_runs_the_undo_files_newest_first_and_records_each_transition(ksql: Ksql) -> None:
    undo_files(ksql, 1, 2, 3)
    mark, rows = len(ksql.stub.statements()), len(ksql.events())
    v2_before = dict(ksql.state("2"))
    result = ksql.cli("ksql", "undo", "--until", "1")
    assert result.code == 0, result.err
    assert "undone 3 bob students (1 statements)" in result.out and "undone 2 users latest (2 statements)" in result.out
    assert "current version now 1" in result.out
    assert transitions(ksql, rows) == [
        ("CURRENT", "3", "RUNNING"),
        ("3", "3", "RUNNING"),
        ("CURRENT", "2", "MIGRATED"),  # back to version 2's row as it stands
        ("3", "3", "UNDONE"),
        ("CURRENT", "2", "RUNNING"),
        ("2", "2", "RUNNING"),
        ("CURRENT", "1", "MIGRATED"),
        ("2", "2", "UNDONE"),
    ]
    sent = [s for s in ksql.sent_since(mark) if not s.startswith(("LIST", "INSERT"))]
    assert sent == [
        "DROP STREAM IF EXISTS BOB_STUDENTS;",
        "DROP CONNECTOR IF EXISTS LMSDWH_USERS_SINK;",
        "DROP TABLE IF EXISTS USERS_LATEST;",
    ]
    back_to_2 = ksql.events()[rows + 2]
    assert {k: v for k, v in back_to_2.items() if k != "VERSION_KEY"} == {
        k: v for k, v in v2_before.items() if k != "VERSION_KEY"
    }
    undone = ksql.state("3")
    assert (undone["STATE"], undone["PREVIOUS"], undone["ERROR_REASON"]) == ("UNDONE", "2", "N/A")
    assert undone["CHECKSUM"] == md5(ksql.migrations / "V000003__bob_students.sql")  # the applied file's
    assert undone["COMPLETED_ON"].isdigit() and int(undone["COMPLETED_ON"]) >= int(undone["STARTED_ON"])
    current = ksql.state("CURRENT")
    assert (current["VERSION"], current["STATE"], current["PREVIOUS"]) == ("1", "MIGRATED", "<none>")
    assert "BOB_USERS" in ksql.stub.sources and "USERS_LATEST" not in ksql.stub.sources
    assert "BOB_STUDENTS" not in ksql.stub.sources and ksql.stub.connectors == {}


def test_undo_until_0_undoes_every_version_and_apply_builds_it_all_again(ksql: Ksql) -> None:
    undo_files(ksql, 1, 2, 3)
    result = ksql.cli("ksql", "undo", "--until", "0")
    assert result.code == 0, result.err
    assert "undone 1 bob users" in result.out and "current version now <none>" in result.out
    assert ksql.state("CURRENT")["VERSION"] == "<none>" and ksql.state("1")["STATE"] == "UNDONE"
    assert not {"BOB_USERS", "USERS_LATEST", "BOB_STUDENTS"} & set(ksql.stub.sources)
    assert "Current migration version: <none>" in ksql.cli("ksql", "info").out
    again = ksql.cli("ksql", "apply", "--all")
    assert again.code == 0 and "last migrated version <none>" in again.out and "migrated 3" in again.out, again.err
    assert ksql.state("1")["PREVIOUS"] == "<none>" and ksql.state("CURRENT")["VERSION"] == "3"
    assert ksql.cli("ksql", "validate").code == 0


def test_a_version_without_its_undo_file_is_refused_and_nothing_is_sent(ksql: Ksql) -> None:
    undo_files(ksql, 1, 3)
    mark, rows = len(ksql.stub.statements()), len(ksql.events())
    result = ksql.cli("ksql", "undo", "--until", "1")
    assert result.code == 1
    assert "version 2 (users latest) has no undo file U000002__users_latest.sql" in result.err
    assert "nothing undone" in result.err
    assert all(s.startswith("LIST") for s in ksql.sent_since(mark)) and len(ksql.events()) == rows
    assert ksql.cli("ksql", "undo", "--until", "2").code == 0  # version 3 has its undo file


def test_a_changed_applied_file_refuses_the_undo_with_exit_2(ksql: Ksql) -> None:
    undo_files(ksql, 1, 2, 3)
    ksql.write("V000001__bob_users.sql", V1 + "-- edited after it was applied\n")
    mark, rows = len(ksql.stub.statements()), len(ksql.events())
    result = ksql.cli("ksql", "undo", "--until", "2")
    assert result.code == 2 and "V000001__bob_users.sql changed after it was applied" in result.err
    assert "nothing undone" in result.err
    assert all(s.startswith("LIST") for s in ksql.sent_since(mark)) and len(ksql.events()) == rows


def test_after_an_undo_apply_next_applies_the_version_again(ksql: Ksql) -> None:
    undo_files(ksql, 3)
    assert ksql.cli("ksql", "undo", "--until", "2").code == 0
    assert ksql.state("CURRENT")["VERSION"] == "2" and "BOB_STUDENTS" not in ksql.stub.sources
    again = ksql.cli("ksql", "apply", "--next")
    assert again.code == 0 and "last migrated version 2" in again.out and "migrated 3 bob students" in again.out
    assert (ksql.state("3")["STATE"], ksql.state("3")["PREVIOUS"]) == ("MIGRATED", "2")
    assert ksql.state("CURRENT")["VERSION"] == "3" and "BOB_STUDENTS" in ksql.stub.sources
    assert ksql.cli("ksql", "validate").code == 0


def test_info_shows_undone_versions_and_which_have_an_undo_file(ksql: Ksql) -> None:
    undo_files(ksql, 2, 3)
    assert ksql.cli("ksql", "undo", "--until", "2").code == 0
    ksql.write("V000003__bob_students.sql", V3 + "-- edited after the undo: pending again, not a drift\n")
    text = ksql.cli("ksql", "info")
    assert text.code == 0 and "Current migration version: 2" in text.out
    row3 = next(line for line in text.out.splitlines() if line.startswith(" 3 "))
    assert [c.strip() for c in row3.split("|")][2:4] == ["UNDONE", "2"]
    assert "Undo files (U<version>__<name>.sql): versions 2, 3; none for 1" in text.out
    assert "changed since it was applied" not in text.out
    doc = json.loads(ksql.cli("ksql", "info", "-o", "json").out)[0]
    assert doc["current"] == "2"
    assert [(v["version"], v["state"], v["undo_file"]) for v in doc["versions"]] == [
        (1, "MIGRATED", None),
        (2, "MIGRATED", "U000002__users_latest.sql"),
        (3, "UNDONE", "U000003__bob_students.sql"),
    ]
    assert doc["versions"][2]["file"] == "ok"


def test_a_dry_run_reads_only_and_shows_the_undo_statements(ksql: Ksql) -> None:
    undo_files(ksql, 1, 2, 3)
    mark, rows = len(ksql.stub.statements()), len(ksql.events())
    result = ksql.cli("ksql", "undo", "--until", "1", "--dry-run")
    assert result.code == 0, result.err
    assert "dry run: would undo 2 version(s), newest first, leaving version 1 current; nothing written" in result.out
    assert result.out.index("U000003__bob_students.sql (version 3, 1 statements)") < result.out.index(
        "U000002__users_latest.sql (version 2, 2 statements)"
    )
    assert "DROP CONNECTOR IF EXISTS LMSDWH_USERS_SINK;" in result.out
    assert all(s.startswith("LIST") for s in ksql.sent_since(mark)) and len(ksql.events()) == rows
    assert "BOB_STUDENTS" in ksql.stub.sources


def test_a_failing_undo_statement_is_recorded_as_error_and_stops_the_run(ksql: Ksql) -> None:
    undo_files(ksql, 1, 2, 3)
    ksql.stub.fail("DROP TABLE IF EXISTS USERS_LATEST", "Cannot drop USERS_LATEST: still read")
    failed = ksql.cli("ksql", "undo", "--until", "0")
    assert failed.code == 1
    assert "U000002__users_latest.sql:2: statement failed, version 2 recorded as ERROR" in failed.err
    assert "ksqlDB said: Cannot drop USERS_LATEST: still read" in failed.err
    assert ksql.state("3")["STATE"] == "UNDONE" and ksql.state("1")["STATE"] == "MIGRATED"
    error = ksql.state("2")
    assert error["STATE"] == "ERROR" and error["ERROR_REASON"].startswith(
        "Failed to execute undo sql: \nDROP TABLE IF EXISTS USERS_LATEST;. Error: Cannot drop USERS_LATEST"
    )
    assert (ksql.state("CURRENT")["VERSION"], ksql.state("CURRENT")["STATE"]) == ("2", "ERROR")
    assert "BOB_USERS" in ksql.stub.sources  # version 1 was never reached

    mark = len(ksql.stub.statements())
    refused = ksql.cli("ksql", "undo", "--until", "0")
    assert refused.code == 1 and "version 2 is ERROR" in refused.err and "hephaestus ksql apply" in refused.err
    assert all(s.startswith("LIST") for s in ksql.sent_since(mark))
    resumed = ksql.cli("ksql", "apply", "--all")  # as after a failed apply: from the last MIGRATED version
    assert resumed.code == 0 and "last migrated version 1" in resumed.out, resumed.err
    assert ksql.state("CURRENT")["VERSION"] == "3" and ksql.state("3")["STATE"] == "MIGRATED"


def test_a_running_version_refuses_the_undo(ksql: Ksql) -> None:
    undo_files(ksql, 1, 2, 3)
    ksql.write("V000004__later.sql", V3.replace("STUDENTS", "LOCATIONS"))
    ksql.stub.fail("BOB_LOCATIONS", "Kafka topic does not exist")
    ksql.stub.fail("'ERROR'", "server going down", status=503, code=50303, times=None)
    assert ksql.cli("ksql", "apply", "--all").code == 1  # version 4 left RUNNING
    mark = len(ksql.stub.statements())
    refused = ksql.cli("ksql", "undo", "--until", "2")
    assert refused.code == 1 and "version 4 is RUNNING" in refused.err and "nothing undone" in refused.err
    assert all(s.startswith("LIST") for s in ksql.sent_since(mark))


@pytest.mark.parametrize("until", ["3", "7"])
def test_until_must_be_below_the_current_version(ksql: Ksql, until: str) -> None:
    undo_files(ksql, 1, 2, 3)
    result = ksql.cli("ksql", "undo", "--until", until)
    assert result.code == 1 and "must be lower than the current version (3)" in result.err
    assert ksql.cli("ksql", "undo").code != 0  # --until is required


def test_nothing_migrated_is_nothing_to_undo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ksqldb_stub() as stub:
        (tmp_path / "hephaestus.yaml").write_text(project_yaml(stub.url))
        k = Ksql(tmp_path, stub, capsys)
        k.write("V000001__bob_users.sql", V1)
        k.cli("ksql", "init")
        result = k.cli("ksql", "undo", "--until", "0")
        assert result.code == 1 and "nothing to undo" in result.err


def test_undo_takes_the_clusters_lock_and_a_dry_run_does_not(ksql: Ksql) -> None:
    undo_files(ksql, 3)
    key = resource_key("ksqldb", ksql.stub.url)
    with FileLock(ksql.root / ".hephaestus/locks", key).held(Holder("other-run", "ksql apply").now(), 0):
        busy = ksql.cli("ksql", "undo", "--until", "2", "--lock-timeout", "0.1")
        dry = ksql.cli("ksql", "undo", "--until", "2", "--dry-run", "--lock-timeout", "0.1")
    assert busy.code == 1 and "is locked by run other-run (ksql apply)" in busy.err
    assert dry.code == 0 and "would undo 1 version(s)" in dry.out
    assert ksql.state("3")["STATE"] == "MIGRATED"


def test_an_undo_file_that_does_not_parse_stops_the_undo_before_anything_is_sent(ksql: Ksql) -> None:
    undo_files(ksql, 2)
    ksql.write("U000003__bob_students.sql", "DROP STREAM BOB_STUDENTS;\nSELECT * FROM BOB_STUDENTS;\n")
    mark = len(ksql.stub.statements())
    result = ksql.cli("ksql", "undo", "--until", "1")
    assert result.code == 1 and "U000003__bob_students.sql:2" in result.err
    assert "'SELECT' statements are not supported." in result.err
    assert ksql.sent_since(mark) == []


def test_variables_reach_the_undo_files(ksql: Ksql) -> None:
    ksql.write("U000003__bob_students.sql", "DROP STREAM IF EXISTS ${what};\n")
    result = ksql.cli("ksql", "undo", "--until", "2", "-d", "what=BOB_STUDENTS")
    assert result.code == 0, result.err
    assert "BOB_STUDENTS" not in ksql.stub.sources


# --- the files ---------------------------------------------------------------------------------


def test_undo_files_are_found_beside_their_migrations(tmp_path: Path) -> None:
    (tmp_path / "V000001__a.sql").write_text("CREATE STREAM A (X STRING) WITH (KAFKA_TOPIC='a');\n")
    (tmp_path / "V000002__b.sql").write_text("CREATE STREAM B (X STRING) WITH (KAFKA_TOPIC='b');\n")
    (tmp_path / "U000002__b.sql").write_text("DROP STREAM B;\n")
    found = files.scan(tmp_path)
    assert [f.undo for f in found.files] == [None, tmp_path / "U000002__b.sql"] and found.skipped == ()
    assert files.undo_name(found.files[0]) == "U000001__a.sql"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("U000009__b.sql", "undo file without a migration: no V000009__b.sql beside it"),
        ("U000002__other.sql", "an undo file is named like its migration: U000002__b.sql"),
    ],
)
def test_an_undo_file_must_match_its_migration(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "V000002__b.sql").write_text("CREATE STREAM B (X STRING) WITH (KAFKA_TOPIC='b');\n")
    (tmp_path / name).write_text("DROP STREAM B;\n")
    with pytest.raises(InputError, match=message):
        files.scan(tmp_path)


def test_validate_compiles_the_undo_files_offline(tmp_path: Path) -> None:
    """`hephaestus validate` calls run.prepare with its defaults: undo files are parsed too."""
    (tmp_path / "V000001__a.sql").write_text("CREATE STREAM A (X STRING) WITH (KAFKA_TOPIC='${t}');\n")
    (tmp_path / "U000001__a.sql").write_text("DROP STREAM ${name};\n")
    cluster = KsqlDB("c", "http://127.0.0.1:9", tmp_path)
    with pytest.raises(ParseFailure, match=r"U000001__a.sql:1: .*\$\{name\} is not defined"):
        ksql_run.prepare([cluster], {"t": "a"})
    [prepared] = ksql_run.prepare([cluster], {"t": "a", "name": "A"})
    assert prepared.undo[1].statements[0].text == "DROP STREAM A;"
    [applying] = ksql_run.prepare([cluster], {"t": "a"}, defer_failures=True)  # apply never reads them
    assert applying.undo == {}


def test_new_with_undo_creates_both_files(ksql: Ksql) -> None:
    result = ksql.cli("ksql", "new", "add user groups", "--undo")
    assert result.code == 0, result.err
    assert (ksql.migrations / "V000004__add_user_groups.sql").is_file()
    assert (ksql.migrations / "U000004__add_user_groups.sql").is_file()
    assert "created" in result.out and "U000004__add_user_groups.sql" in result.out


# --- the shipped example -------------------------------------------------------------------------


def test_the_shipped_undo_example_undoes_dim_user_and_apply_rebuilds_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = str(REPO / "hephaestus.yaml")

    def cli(*args: str) -> tuple[int, str]:
        code = run([*args, "--project", project])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    with ksqldb_stub() as stub:
        monkeypatch.setenv("HEPHAESTUS_LMSDWH_KSQL_URL", stub.url)
        monkeypatch.setenv("HEPHAESTUS_KEC_KSQL_URL", stub.url)
        assert cli("ksql", "init")[0] == 0
        assert cli("ksql", "apply", "--all")[0] == 0
        several = cli("ksql", "undo", "--until", "1")
        assert several[0] == 1 and "pass --cluster" in several[1]
        code, out = cli("ksql", "undo", "--cluster", "lmsdwh", "--until", "1")
        assert code == 0 and "undone 2 dim user (4 statements)" in out, out
        assert not {"DIM_USER", "BOB_USERS_LATEST", "BOB_STUDENTS_LATEST"} & set(stub.sources)
        assert "LMSDWH_DIM_USER_SINK" not in stub.connectors and "BOB_USERS" in stub.sources
        assert "FACT_INVOICE" in stub.sources  # the other cluster is untouched
        code, out = cli("ksql", "apply", "--all")
        assert code == 0 and "migrated 2 dim user" in out, out
        assert "DIM_USER" in stub.sources and "LMSDWH_DIM_USER_SINK" in stub.connectors


def test_apply_and_undo_write_intent_and_outcome_to_the_audit_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ksqldb_stub() as stub:
        (tmp_path / "hephaestus.yaml").write_text(project_yaml(stub.url, "audit_log: audit.jsonl\n"))
        k = Ksql(tmp_path, stub, capsys)
        k.write("V000001__bob_users.sql", V1)
        k.write("V000002__users_latest.sql", V2)
        k.write(*UNDO[2])
        assert k.cli("ksql", "init").code == 0
        assert k.cli("ksql", "apply", "--all", "--dry-run").code == 0
        assert not (tmp_path / "audit.jsonl").exists()  # a dry run records nothing
        assert k.cli("ksql", "apply", "--all").code == 0
        stub.fail("DROP TABLE IF EXISTS USERS_LATEST", "Cannot drop USERS_LATEST: still read")
        assert k.cli("ksql", "undo", "--until", "1").code == 1
        records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    seen = [(r["cluster"], r["connector"], r["action"], r["outcome"]) for r in records]
    assert seen == [
        ("ksqldb lmsdwh", "V000001__bob_users.sql", "ksql-apply", "intent"),
        ("ksqldb lmsdwh", "V000001__bob_users.sql", "ksql-apply", "ok"),
        ("ksqldb lmsdwh", "V000002__users_latest.sql", "ksql-apply", "intent"),
        ("ksqldb lmsdwh", "V000002__users_latest.sql", "ksql-apply", "ok"),
        ("ksqldb lmsdwh", "U000002__users_latest.sql", "ksql-undo", "intent"),
        ("ksqldb lmsdwh", "U000002__users_latest.sql", "ksql-undo", "failed"),
    ]
    assert "Cannot drop USERS_LATEST" in records[-1]["detail"]


def test_a_run_that_cannot_be_audited_sends_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ksqldb_stub() as stub:
        (tmp_path / "hephaestus.yaml").write_text(project_yaml(stub.url, "audit_log: nowhere/dir/audit.jsonl\n"))
        (tmp_path / "nowhere").write_text("a file where the log's folder should be")
        k = Ksql(tmp_path, stub, capsys)
        k.write("V000001__bob_users.sql", V1)
        assert k.cli("ksql", "init").code == 0
        mark = len(stub.statements())
        out = k.cli("ksql", "apply", "--all")
        assert out.code == 1 and "audit" in out.err.lower(), out.err
        assert stub.statements()[mark:] == []  # checked before the metadata is even read

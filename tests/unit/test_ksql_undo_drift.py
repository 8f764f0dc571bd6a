"""Issue 43, item 8: `ksql undo` against checksum drift, on the ksqlDB contract stub.

Flyway runs `validate` before `undo` and refuses on a checksum mismatch (its way out is to
restore the file, or `repair` the history: no flag skips it); ksql-migrations has no undo. So:
a V file that no longer matches what was applied refuses the undo, naming the version, the
file and both checksums, and nothing is sent (exit 2, as `apply` and `validate` refuse the
same drift). The U file is not part of what was applied: adding or changing it after the V
file was applied is how undo files are written; the checksum of the one that ran is in the
audit log. A file edited between the run reading it and the run holding the lock stops it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hephaestus.ksql import run as ksql_run
from hephaestus.ksql.apply import KsqlApplyOptions as ApplyOptions
from hephaestus.ksql.apply import MigrationsChanged
from hephaestus.ksql.undo import UndoOptions
from hephaestus.project import load_project
from tests.ksqldb_stub import ksqldb_stub
from tests.unit.test_ksql_cli import V1, V2, V3, Ksql, md5, project_yaml
from tests.unit.test_ksql_undo import U3, UNDO, undo_files

EDITED = V3 + "-- edited after it was applied\n"


@pytest.fixture
def ksql(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Ksql]:
    """Versions 1-3 applied, with no undo file yet; an audit log."""
    with ksqldb_stub() as stub:
        (tmp_path / "hephaestus.yaml").write_text(project_yaml(stub.url, "audit_log: audit.jsonl\n"))
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


def untouched(k: Ksql, mark: int, rows: int) -> None:
    assert all(s.startswith("LIST") for s in k.sent_since(mark)) and len(k.events()) == rows
    assert k.state("3")["STATE"] == "MIGRATED" and "BOB_STUDENTS" in k.stub.sources


def test_a_changed_v_file_of_the_version_to_undo_refuses_naming_version_file_and_both_checksums(ksql: Ksql) -> None:
    undo_files(ksql, 3)
    applied = md5(ksql.migrations / "V000003__bob_students.sql")
    now = md5(ksql.write("V000003__bob_students.sql", EDITED))
    mark, rows = len(ksql.stub.statements()), len(ksql.events())
    for dry in ((), ("--dry-run",)):
        result = ksql.cli("ksql", "undo", "--until", "2", *dry)
        assert result.code == 2, result.out + result.err
        assert (
            f"version 3 (bob students): V000003__bob_students.sql changed after it was applied "
            f"(checksum applied {applied}, now {now})"
        ) in result.err
        assert "nothing undone" in result.err
    untouched(ksql, mark, rows)


def test_a_u_file_added_after_apply_runs_and_its_checksum_is_audited(ksql: Ksql) -> None:
    path = ksql.write(*UNDO[3])  # written after V3 was applied: the usual order
    ksql.write(path.name, U3 + "-- and changed once more\n")
    result = ksql.cli("ksql", "undo", "--until", "2")
    assert result.code == 0, result.err
    assert "BOB_STUDENTS" not in ksql.stub.sources
    assert ksql.state("3")["CHECKSUM"] == md5(ksql.migrations / "V000003__bob_students.sql")  # the V file's
    (intent,) = [
        json.loads(line)
        for line in (ksql.root / "audit.jsonl").read_text().splitlines()
        if '"intent"' in line and "ksql-undo" in line
    ]
    assert intent["connector"] == "U000003__bob_students.sql"
    assert intent["detail"] == f"undo version 3 (1 statements, checksum {md5(path)})"


def prepared_then(ksql: Ksql, name: str, text: str) -> tuple[MigrationsChanged | None, int, int]:
    """The undo's files read (as the command does before it waits for the lock), then `name`
    edited, then the undo run."""
    project = load_project(ksql.root / "hephaestus.yaml")
    prepared = ksql_run.prepare(project.select_ksqldb(()), {}, parse=False, undo=True)
    ksql.write(name, text)
    mark, rows = len(ksql.stub.statements()), len(ksql.events())
    try:
        list(ksql_run.undo(project, prepared, UndoOptions(2)))
    except MigrationsChanged as exc:
        return exc, mark, rows
    return None, mark, rows


def test_a_v_file_edited_while_the_undo_waited_stops_it(ksql: Ksql) -> None:
    undo_files(ksql, 3)
    read = md5(ksql.migrations / "V000003__bob_students.sql")
    refused, mark, rows = prepared_then(ksql, "V000003__bob_students.sql", EDITED)
    now = md5(ksql.migrations / "V000003__bob_students.sql")
    assert refused is not None and refused.exit_code == 2
    assert str(refused) == (
        "ksqlDB 'lmsdwh': nothing undone: changed since this run read them: "
        f"V000003__bob_students.sql (checksum read {read}, now {now}); run the undo again"
    )
    untouched(ksql, mark, rows)


def test_a_u_file_edited_or_removed_while_the_undo_waited_stops_it(ksql: Ksql) -> None:
    undo_files(ksql, 3)
    refused, mark, rows = prepared_then(ksql, "U000003__bob_students.sql", "DROP STREAM IF EXISTS OTHER;\n")
    assert refused is not None and "U000003__bob_students.sql (checksum read " in str(refused)
    untouched(ksql, mark, rows)
    project = load_project(ksql.root / "hephaestus.yaml")
    prepared = ksql_run.prepare(project.select_ksqldb(()), {}, parse=False, undo=True)
    (ksql.migrations / "U000003__bob_students.sql").unlink()
    try:
        list(ksql_run.undo(project, prepared, UndoOptions(2)))
        raise AssertionError("an undo file removed meanwhile was run as it was read")
    except MigrationsChanged as exc:
        assert "U000003__bob_students.sql (checksum read " in str(exc) and ", now unreadable (" in str(exc), exc
    untouched(ksql, mark, rows)


def test_a_changed_v_file_below_the_versions_to_undo_refuses_too(ksql: Ksql) -> None:
    """Flyway validates every applied migration before an undo, not only the undone ones."""
    undo_files(ksql, 3)
    ksql.write("V000001__bob_users.sql", "-- not what was applied\n")
    result = ksql.cli("ksql", "undo", "--until", "2")
    assert result.code == 2 and "version 1 (bob users): V000001__bob_users.sql changed" in result.err
    assert ksql.state("3")["STATE"] == "MIGRATED"


V4 = "CREATE STREAM bob_staff (id INT KEY) WITH (kafka_topic='bob.staff', value_format='JSON', partitions=1);\n"


def test_a_file_edited_while_the_apply_waited_stops_it(ksql: Ksql) -> None:
    """`ksql apply` reads and compiles its files before it waits for the lock, as undo does:
    a new version edited meanwhile would run statements no one reviewed, and an applied one
    edited meanwhile would pass the drift check it no longer meets."""
    new = ksql.write("V000004__bob_staff.sql", V4)
    for name, text in (("V000004__bob_staff.sql", V4 + "-- edited\n"), ("V000001__bob_users.sql", V1 + "-- x\n")):
        project = load_project(ksql.root / "hephaestus.yaml")
        prepared = ksql_run.prepare(project.select_ksqldb(()), {}, parse=True, undo=False)
        read = md5(ksql.migrations / name)
        ksql.write(name, text)
        mark, rows = len(ksql.stub.statements()), len(ksql.events())
        with pytest.raises(MigrationsChanged) as refused:
            list(ksql_run.apply(project, prepared, ApplyOptions()))
        assert refused.value.exit_code == 2
        assert str(refused.value) == (
            "ksqlDB 'lmsdwh': nothing applied: changed since this run read them: "
            f"{name} (checksum read {read}, now {md5(ksql.migrations / name)}); run the apply again"
        )
        untouched(ksql, mark, rows)
        assert "BOB_STAFF" not in ksql.stub.sources
        new.write_text(V4)

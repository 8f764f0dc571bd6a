"""`hephaestus ksql` against Confluent's ksql-migrations, gap by gap: INSERT … VALUES parsing,
`--define` values, `info`'s cells and times, a file that fails to parse, `-v`, `--dry-run`.

Each test names the file of confluentinc/ksql whose behaviour it pins (paths under
ksqldb-tools/src/main/java/io/confluent/ksql/tools/migrations/ unless given in full).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hephaestus.errors import HephaestusError, InputError
from hephaestus.ksql import files
from hephaestus.ksql.compiler import compile_migration
from hephaestus.ksql.metadata import State
from hephaestus.ksql.operations import InfoResult, InfoRow
from hephaestus.ksql.render import info_json, info_text
from hephaestus.ksql.variables import parse_defines
from tests.ksqldb_stub import ksqldb_stub
from tests.unit.test_ksql_cli import V1, V2, V3, Ksql, project_yaml


@pytest.fixture
def ksql(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Ksql]:
    with ksqldb_stub() as stub:
        (tmp_path / "hephaestus.yaml").write_text(project_yaml(stub.url))
        k = Ksql(tmp_path, stub, capsys)
        for name, text in (("V000001__a.sql", V1), ("V000002__b.sql", V2), ("V000003__c.sql", V3)):
            k.write(name, text)
        yield k


def compile_text(tmp_path: Path, sql: str, defines: dict[str, str] | None = None) -> list[str]:
    path = tmp_path / "m" / "V000001__x.sql"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sql)
    f = files.scan(path.parent).files[0]
    return [s.text for s in compile_migration(f, sql, defines or {}).statements]


# --- 1. INSERT … VALUES that does not parse --------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("INSERT INTO S (A) VALUES (('x');", "unbalanced"),
        ("INSERT INTO S (A) VALUES ('x'));", "after the VALUES list"),
        ("INSERT INTO S (A) VALUES ('x';", "unbalanced"),
        ("INSERT INTO S (A, B) VALUES ('x', );", "empty value"),
        ("INSERT INTO S (A, B) VALUES (, 'x');", "empty value"),
        ("INSERT INTO S VALUES ('x',, 'y');", "empty value"),
        ("INSERT INTO S VALUES ('x',);", "empty value"),
        ("INSERT INTO S (A) VALUES ('x') ('y');", "after the VALUES list"),
        ("INSERT INTO S (A) VALUES ('x'), ('y');", "after the VALUES list"),
        ("INSERT INTO S (A, B) VALUES (1 2);", "missing ','"),
        ("INSERT INTO S (A, B) VALUES ('a' 'b');", "missing ','"),
        ("INSERT INTO S (A, B) VALUES (ARRAY[1, 2, 'x');", "unbalanced"),
        ("INSERT INTO S (A,) VALUES (1);", "empty column"),
        ("INSERT INTO S () VALUES (1);", "empty column"),
        ("INSERT INTO S (A B) VALUES (1);", "not one column name"),
        ("INSERT INTO S VALUES 'x';", "VALUES must be followed by"),
        ("INSERT INTO S VALUE ('x');", "VALUES"),
        ("INSERT INTO S (A, B) VALUES ('x');", "Columns: 2. Values: 1."),
    ],
)
def test_a_malformed_insert_values_is_refused_naming_the_file(tmp_path: Path, statement: str, reason: str) -> None:
    """ksql-migrations parses every INSERT … VALUES with ksqlDB's grammar before it runs the file
    (util/CommandParser.java transformToSqlCommand; ksqldb-parser/src/main/antlr4/io/confluent/
    ksql/parser/SqlBase.g4: `INSERT INTO sourceName (columns)? VALUES values`, `values: '('
    (valueExpression (',' valueExpression)*)? ')'`, `columns: '(' identifier (',' identifier)*
    ')'`); the count check is commands/ApplyMigrationCommand.java verifyColumnValuesMatch."""
    with pytest.raises(InputError, match="INSERT") as err:
        compile_text(tmp_path, "CREATE STREAM S (A STRING) WITH (KAFKA_TOPIC='s');\n" + statement + "\n")
    assert reason in str(err.value)
    assert err.value.file.endswith("V000001__x.sql") and err.value.line == 2


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO S (A, B) VALUES ('x,y', ARRAY[1, 2]);",
        "INSERT INTO S (A) VALUES ('it''s (not) a paren');",
        "INSERT INTO `s` (`a`, \"B\") VALUES (STRUCT(a := 1, b := 'y,z'), MAP('k' := 'v'));",
        "INSERT INTO S VALUES (CAST('1' AS INT), -1, 1.5E3, TRUE, NULL, 'a' || 'b');",
        "INSERT INTO S (A) VALUES (CASE WHEN 1 > 2 THEN 'x' ELSE NULL END);",
        "INSERT INTO S (A) VALUES (TIMESTAMP '2021-01-01');",
        "INSERT INTO S (A)VALUES('x');",
        "INSERT INTO S SELECT * FROM T;",
    ],
)
def test_a_well_formed_insert_is_sent_as_written(tmp_path: Path, statement: str) -> None:
    assert compile_text(tmp_path, statement + "\n") == [statement]


# --- 2. --define values -----------------------------------------------------------------------------


def test_a_define_value_with_quotes_and_commas_is_accepted_and_substituted_verbatim(tmp_path: Path) -> None:
    """VariableParser.getVariables (ksqldb-common/src/main/java/io/confluent/ksql/parser/
    VariableParser.java) splits `name=value` with Java's split("=") and wants exactly two
    parts: quotes and commas pass; the value then goes in as DEFINE's would
    (ksqldb-parser/…/parser/VariableSubstitutor.java): inside '…' its text verbatim (quotes
    doubled, so the string's value is the text as given), outside as one literal."""
    defines = parse_defines(("list='x', 'y'", "csv=a,b,'c'"))
    assert defines == {"list": "'x', 'y'", "csv": "a,b,'c'"}
    sql = "CREATE STREAM S WITH (KAFKA_TOPIC='${csv}', X=${list});\n"
    assert compile_text(tmp_path, sql, defines) == ["CREATE STREAM S WITH (KAFKA_TOPIC='a,b,''c''', X='x'', ''y');"]


def test_a_define_value_holding_an_equals_sign_is_refused_as_ksql_migrations_does_and_says_what_to_do() -> None:
    """Java's "k=a=b".split("=") has three parts: ksql-migrations refuses it ("variables must be
    defined using '='"), so hephaestus does too, and points at DEFINE, which takes any value."""
    with pytest.raises(HephaestusError, match=r"holds '='.*DEFINE t = '…';"):
        parse_defines(("t='a', fmt='AVRO'",))


def test_a_define_value_is_substituted_verbatim_through_the_cli(ksql: Ksql) -> None:
    ksql.write("V000004__t.sql", "CREATE STREAM T4 WITH (KAFKA_TOPIC='${topics}', VALUE_FORMAT='JSON');\n")
    ksql.cli("ksql", "init")
    result = ksql.cli("ksql", "apply", "--all", "-d", "topics='x', \"y\", z")
    assert result.code == 0, result.err
    assert ksql.stub.sources["T4"].topic == "'x', \"y\", z"


# --- 3. info's cells and times ------------------------------------------------------------------


@pytest.fixture
def los_angeles(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_info_times_are_utc_in_ksql_migrations_format_whatever_the_local_zone(los_angeles: None) -> None:
    """util/MigrationVersionInfo.java formats with SimpleDateFormat("yyyy-MM-dd HH:mm:ss.SSS z")
    in the JVM's default zone; hephaestus always says UTC, so two machines print the same."""
    row = InfoRow(1, "a", State.MIGRATED, "<none>", "1609459200007", "1609459261999")
    cells = info_text(InfoResult("c", "1", (row,)))[5].split("|")
    assert cells[4].strip() == "2021-01-01 00:00:00.007 UTC"
    assert cells[5].strip() == "2021-01-01 00:01:01.999 UTC"


def test_info_prints_na_where_a_value_is_missing_but_a_running_version_has_no_completion_yet() -> None:
    """util/MigrationVersionInfo.java: N/A for what a version does not have (pendingMigration);
    a RUNNING row's completed_on is written empty (ApplyMigrationCommand.updateState) and shown
    as it is."""
    rows = (
        InfoRow(1, "", State.MIGRATED, "<none>", "", "", ""),
        InfoRow(2, "b", State.RUNNING, "1", "1000", ""),
    )
    table = info_text(InfoResult("c", "2", rows))
    assert [c.strip() for c in table[5].split("|")] == ["1", "N/A", "MIGRATED", "<none>", "N/A", "N/A", "N/A"]
    assert table[6].split("|")[5].strip() == ""


def test_info_json_keeps_its_fields_and_raw_values() -> None:
    row = InfoRow(1, "a", State.MIGRATED, "<none>", "1609459200007", "1609459261999")
    doc = json.loads(info_json([InfoResult("c", "1", (row,))]))
    assert doc == [
        {
            "cluster": "c",
            "current": "1",
            "versions": [
                {
                    "version": 1,
                    "name": "a",
                    "state": "MIGRATED",
                    "previous": "<none>",
                    "started_on": "1609459200007",
                    "completed_on": "1609459261999",
                    "error_reason": "N/A",
                    "file": "ok",
                    "undo_file": None,
                }
            ],
        }
    ]


# --- 4. a file that fails to parse: RUNNING, then ERROR -------------------------------------------


def versions_written(ksql: Ksql, version: str) -> list[tuple[str, str]]:
    return [(r["VERSION_KEY"], r["STATE"]) for r in ksql.events() if r["VERSION"] == version]


def test_a_file_that_fails_to_parse_is_recorded_running_then_error(ksql: Ksql) -> None:
    """commands/ApplyMigrationCommand.java applyMigration: RUNNING is written, then every
    command is parsed before any runs; a parse failure writes ERROR with "Failed to parse sql:
    <command>. Error: <why>" (CURRENT then the version, as updateState writes them)."""
    ksql.write("V000004__bad.sql", "CREATE STREAM A WITH (KAFKA_TOPIC='a');\nINSERT INTO A (X) VALUES ((1);\n")
    ksql.cli("ksql", "init")
    result = ksql.cli("ksql", "apply", "--all")
    assert result.code == 1
    assert "V000004__bad.sql:2" in result.err and "version 4 recorded as ERROR" in result.err, result.err
    assert ksql.state("3")["STATE"] == "MIGRATED"  # the files before it ran, as in ksql-migrations
    assert versions_written(ksql, "4") == [
        ("CURRENT", "RUNNING"),
        ("4", "RUNNING"),
        ("CURRENT", "ERROR"),
        ("4", "ERROR"),
    ]
    reason = ksql.state("4")["ERROR_REASON"]
    assert (
        reason.startswith("Failed to parse sql: \nINSERT INTO A (X) VALUES ((1);. Error: ") and "unbalanced" in reason
    )
    assert not any("KAFKA_TOPIC='a'" in s for s in ksql.stub.statements())  # nothing of the file was sent
    info = ksql.cli("ksql", "info")
    assert " ERROR " in info.out and "Failed to parse sql" in info.out


def test_a_show_statement_is_recorded_in_ksql_migrations_words(ksql: Ksql) -> None:
    """CommandParser.validateSupportedStatementType: "'SHOW' statements are not supported.",
    after ApplyMigrationCommand's "Failed to parse sql: <command>. Error: " (the command as cut)."""
    ksql.write("V000004__peek.sql", "CREATE STREAM A WITH (KAFKA_TOPIC='a');\nSHOW STREAMS;\n")
    ksql.cli("ksql", "init")
    assert ksql.cli("ksql", "apply", "--all").code == 1
    reason = ksql.state("4")["ERROR_REASON"]
    assert reason == "Failed to parse sql: \nSHOW STREAMS;. Error: 'SHOW' statements are not supported."


def test_a_dry_run_reports_a_file_that_fails_to_parse_and_writes_nothing(ksql: Ksql) -> None:
    ksql.write("V000004__bad.sql", "SELECT * FROM A;\n")
    ksql.cli("ksql", "init")
    result = ksql.cli("ksql", "apply", "--all", "--dry-run")
    assert (
        result.code == 1
        and "V000004__bad.sql:1" in result.err
        and "'SELECT' statements are not supported." in result.err
    )
    assert ksql.events() == []


# --- 5. -v is --verbose everywhere ----------------------------------------------------------------


@pytest.mark.parametrize("args", [("ksql", "apply", "-v", "2"), ("ksql", "new", "-v", "5", "x")])
def test_v_is_not_version_under_ksql(ksql: Ksql, args: tuple[str, ...]) -> None:
    """ksql-migrations spells --version -v (commands/ApplyMigrationCommand.java); in hephaestus
    -v is the top level's --verbose, so under ksql only --version is taken."""
    result = ksql.cli(*args)
    assert result.code == 1 and "No such option: -v" in result.err and "--version" in result.err, result.err
    assert ksql.stub.requests == [] and not (ksql.migrations / "V000005__x.sql").exists()


def test_version_still_works(ksql: Ksql) -> None:
    assert ksql.cli("ksql", "new", "--version", "7", "x").code == 0
    assert (ksql.migrations / "V000007__x.sql").is_file()


# --- 6. --dry-run reads the server ---------------------------------------------------------------


def test_dry_run_help_says_it_reads_and_writes_nothing(ksql: Ksql) -> None:
    out = " ".join(ksql.cli("ksql", "apply", "--help").out.split())
    assert "reads the applied versions from the server; writes nothing" in out


def test_a_dry_run_against_an_unreachable_server_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ksql-migrations' dry run reads the metadata too (ApplyMigrationCommand.command:
    validateMetadataInitialized, validateCurrentState, getLatestMigratedVersion). A dry run
    sends each request once: no retry warnings, no backoff."""
    (tmp_path / "hephaestus.yaml").write_text(project_yaml("http://127.0.0.1:9"))
    k = Ksql(tmp_path, None, capsys)  # type: ignore[arg-type]
    k.write("V000001__a.sql", V1)
    result = k.cli("ksql", "apply", "--all", "--dry-run")
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "http://127.0.0.1:9" in lines[0] and "--dry-run needs it to read the applied versions" in lines[0]

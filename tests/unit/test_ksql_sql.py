"""ksqlDB migration files as text: names, checksums, splitting, variables, SET, masking. Pure."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hephaestus.errors import HephaestusError, InputError
from hephaestus.ksql import files, sqltext
from hephaestus.ksql.compiler import compile_migration, parse_defines
from hephaestus.ksql.metadata import Names, VersionInfo, State, create_stream, create_table, insert


def write(folder: Path, name: str, text: str = "CREATE STREAM S (A STRING) WITH (KAFKA_TOPIC='t');\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def compiled(tmp_path: Path, text: str, defines: dict[str, str] | None = None) -> list[tuple[str, int, dict[str, str]]]:
    path = write(tmp_path / "m", "V000001__x.sql", text)
    f = files.scan(path.parent).files[0]
    return [(s.text, s.line, dict(s.properties)) for s in compile_migration(f, text, defines or {}).statements]


# --- files ---------------------------------------------------------------------------------

def test_scan_reads_versions_names_and_md5_checksums(tmp_path: Path) -> None:
    write(tmp_path, "V000002__dim_user.sql", "B;")
    write(tmp_path, "V000001__bob_cdc_streams.sql", "A;")
    scan = files.scan(tmp_path)
    assert [(f.version, f.name) for f in scan.files] == [(1, "bob cdc streams"), (2, "dim user")]
    assert scan.files[1].checksum == hashlib.md5(b"B;").hexdigest()


def test_files_not_matching_the_pattern_are_skipped_and_listed(tmp_path: Path) -> None:
    for name in ("V1__short.sql", "V000001_one_underscore.sql", "README.md", "v000003__lower.sql",
                 "V000004__ok.sql.bak"):
        write(tmp_path, name)
    write(tmp_path, "V000005__ok.sql")
    scan = files.scan(tmp_path)
    assert [f.version for f in scan.files] == [5]
    assert len(scan.skipped) == 5


def test_two_files_with_one_version_are_an_error_naming_both(tmp_path: Path) -> None:
    write(tmp_path, "V000001__first.sql")
    write(tmp_path, "V000001__second.sql")
    with pytest.raises(InputError, match="V000001__second.sql.*also used by V000001__first.sql"):
        files.scan(tmp_path)


def test_version_zero_and_a_missing_folder_are_errors(tmp_path: Path) -> None:
    write(tmp_path, "V000000__zero.sql")
    with pytest.raises(InputError, match="start at 1"):
        files.scan(tmp_path)
    with pytest.raises(InputError, match="not found"):
        files.scan(tmp_path / "absent")


def test_new_files_take_the_next_version_and_a_safe_name(tmp_path: Path) -> None:
    write(tmp_path, "V000007__x.sql")
    assert files.create(tmp_path, "add users/groups").name == "V000008__add_users_groups.sql"
    assert files.create(tmp_path, "first", version=3).name == "V000003__first.sql"
    with pytest.raises(HephaestusError, match="already exists"):
        files.create(tmp_path, "again", version=3)
    with pytest.raises(HephaestusError, match="six digits"):
        files.file_name(1_000_000, "too big")


# --- splitting -----------------------------------------------------------------------------

def test_semicolons_in_strings_identifiers_and_comments_do_not_split(tmp_path: Path) -> None:
    sql = """-- a comment; with a semicolon
CREATE STREAM `odd;name` (A STRING) WITH (KAFKA_TOPIC='a;b', VALUE_FORMAT='JSON'); /* block;
comment */ INSERT INTO S (A) VALUES ('it''s; fine');
"""
    statements = sqltext.split(sql, "f.sql")
    assert [s.text for s in statements] == [
        "CREATE STREAM `odd;name` (A STRING) WITH (KAFKA_TOPIC='a;b', VALUE_FORMAT='JSON');",
        "INSERT INTO S (A) VALUES ('it''s; fine');"]
    assert [s.line for s in statements] == [2, 3]


def test_a_comment_between_tokens_keeps_them_apart() -> None:
    assert sqltext.split("SELECT A--x\nFROM T;", "f")[0].text == "SELECT A\nFROM T;"
    assert sqltext.split("DROP/* x */STREAM S;", "f")[0].text == "DROP STREAM S;"


@pytest.mark.parametrize(("sql", "message", "line"), [
    ("CREATE STREAM S;\nDROP STREAM S", "missing ';'", 2),
    ("CREATE STREAM S WITH (KAFKA_TOPIC='t);", "unterminated string", 1),
    ("\n/* never closed", "unterminated /\\* comment", 2),
])
def test_bad_text_is_an_input_error_with_file_and_line(sql: str, message: str, line: int) -> None:
    with pytest.raises(InputError, match=message) as err:
        sqltext.split(sql, "V000001__x.sql")
    assert err.value.file == "V000001__x.sql" and err.value.line == line


def test_a_trailing_comment_without_newline_and_empty_statements_are_fine() -> None:
    assert [s.text for s in sqltext.split("A;;\n;-- done", "f")] == ["A;"]


# --- variables and properties ------------------------------------------------------------------

def test_define_variables_substitute_case_insensitively_per_file(tmp_path: Path) -> None:
    sql = ("DEFINE Topic = 'local.manabie.bob.public.users';\n"
           "DEFINE fmt = '''AVRO''';\n"
           "CREATE STREAM S WITH (KAFKA_TOPIC='${TOPIC}', VALUE_FORMAT=${fmt});\n"
           "UNDEFINE topic;\n"
           "CREATE STREAM T WITH (KAFKA_TOPIC='${topic}');\n")
    assert [t for t, _, _ in compiled(tmp_path, sql)] == [
        "CREATE STREAM S WITH (KAFKA_TOPIC='local.manabie.bob.public.users', VALUE_FORMAT='AVRO');",
        "CREATE STREAM T WITH (KAFKA_TOPIC='${topic}');"]


def test_command_line_defines_start_each_file_and_the_file_may_override(tmp_path: Path) -> None:
    defines = parse_defines(("env=local", "ORG=manabie"))
    sql = "CREATE STREAM S WITH (KAFKA_TOPIC='${env}.${org}.bob');\nDEFINE env = 'prod';\nDROP STREAM ${ENV};\n"
    assert [t for t, _, _ in compiled(tmp_path, sql, defines)] == [
        "CREATE STREAM S WITH (KAFKA_TOPIC='local.manabie.bob');", "DROP STREAM prod;"]
    with pytest.raises(HephaestusError, match="name=value"):
        parse_defines(("novalue",))


def test_connect_placeholders_and_escaped_references_are_left_alone() -> None:
    text = "'${file:secrets/c.properties:pw}' '$${x}' '${x}'"
    assert sqltext.substitute(text, {"x": "1"}) == "'${file:secrets/c.properties:pw}' '$${x}' '1'"


def test_set_and_unset_become_the_properties_of_later_statements(tmp_path: Path) -> None:
    sql = ("CREATE STREAM A WITH (KAFKA_TOPIC='a');\n"
           "DEFINE reset = 'earliest';\n"
           "SET 'auto.offset.reset' = '${reset}';\n"
           "SET 'ksql.streams.num.stream.threads' = '2';\n"
           "CREATE TABLE B AS SELECT 1;\n"
           "UNSET 'auto.offset.reset';\n"
           "CREATE TABLE C AS SELECT 1;\n")
    assert [(line, props) for _, line, props in compiled(tmp_path, sql)] == [
        (1, {}),
        (5, {"auto.offset.reset": "earliest", "ksql.streams.num.stream.threads": "2"}),
        (7, {"ksql.streams.num.stream.threads": "2"})]


@pytest.mark.parametrize("statement", ["SELECT * FROM T;", "describe T;", "SHOW STREAMS;", "LIST TABLES;",
                                       "EXPLAIN Q1;", "PRINT 'topic';", "RUN SCRIPT '/tmp/x.sql';"])
def test_statements_that_only_read_are_refused_like_ksql_migrations(tmp_path: Path, statement: str) -> None:
    with pytest.raises(InputError, match="cannot be part of a migration") as err:
        compiled(tmp_path, "CREATE STREAM A WITH (KAFKA_TOPIC='a');\n" + statement)
    assert err.value.line == 2


def test_a_malformed_define_or_set_names_its_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="invalid DEFINE") as err:
        compiled(tmp_path, "\n\nDEFINE x = unquoted;")
    assert err.value.line == 3
    with pytest.raises(InputError, match="invalid SET"):
        compiled(tmp_path, "SET auto.offset.reset = 'earliest';")


# --- secrets -------------------------------------------------------------------------------

def test_sensitive_connector_properties_are_masked_placeholders_are_not() -> None:
    sql = ("CREATE SINK CONNECTOR X WITH ('connection.password' = 'hunter2', \"api.key\"='k''ey',"
           " 'connection.user' = 'dwh', 'db.password' = '${file:s.properties:pw}');")
    shown = sqltext.mask(sql)
    assert "hunter2" not in shown and "k''ey" not in shown
    assert "'connection.password' = '****'" in shown and "'connection.user' = 'dwh'" in shown
    assert "${file:s.properties:pw}" in shown
    assert sqltext.redact("rejected hunter2 and k'ey", sqltext.sensitive_values(sql)) == "rejected **** and ****"


# --- metadata SQL --------------------------------------------------------------------------------

def test_metadata_statements_are_ksql_migrations_bookkeeping() -> None:
    names = Names("LMSDWH_MIGRATION_EVENTS", "LMSDWH_MIGRATION_SCHEMA_VERSIONS").with_topics("default_")
    stream, table = create_stream(names), create_table(names)
    assert "KAFKA_TOPIC='default_ksql_LMSDWH_MIGRATION_EVENTS'" in stream and "version_key STRING KEY" in stream
    assert "error_reason STRING" in stream and "PARTITIONS=1" in stream
    assert "LATEST_BY_OFFSET(error_reason) AS error_reason" in table and "GROUP BY version_key" in table
    row = VersionInfo(3, "it's", State.ERROR, "abc", "1", "2", "2", "Failed: 'x'")
    assert insert(names, row, "CURRENT").endswith(
        "VALUES ('CURRENT', '3', 'it''s', 'ERROR', 'abc', '1', '2', '2', 'Failed: ''x''');")

"""ksqlDB migration files as text: names, checksums, splitting, variables, SET, masking. Pure."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hephaestus.errors import HephaestusError, InputError
from hephaestus.ksql import files, sqltext
from hephaestus.ksql.compiler import ParseFailure, compile_migration
from hephaestus.ksql.metadata import Names, State, VersionInfo, create_stream, create_table, insert
from hephaestus.ksql.variables import VariableError, in_string, parse_defines, substitute


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
    for name in ("V1__short.sql", "V000001_one_underscore.sql", "README.md", "v000003__lower.sql"):
        write(tmp_path, name)
    write(tmp_path, "V000005__ok.sql")
    scan = files.scan(tmp_path)
    assert [f.version for f in scan.files] == [5]
    assert len(scan.skipped) == 4


def test_the_pattern_is_searched_in_the_name_as_ksql_migrations_does(tmp_path: Path) -> None:
    write(tmp_path, "V000004__ok.sql.bak")
    write(tmp_path, "old-V000006__a__b.sql")
    assert [(f.version, f.name) for f in files.scan(tmp_path).files] == [(4, "ok"), (6, "a  b")]
    write(tmp_path, "V000004__ok.sql")
    with pytest.raises(InputError, match="also used by"):
        files.scan(tmp_path)


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


# --- splitting (ksql-migrations' CommandParser.splitSql, rule for rule) ------------------------


def test_semicolons_and_comment_marks_inside_strings_do_not_split() -> None:
    # The cases of ksql-migrations' CommandParserTest.shouldSplitCommandsWithComments.
    sql = (
        "-- Before\nCREATE STREAM valid_purchases AS\n  SELECT *\n  FROM purchases\n  WHERE cost > 0.00;\n"
        "-- After\nCREATE OR REPLACE STREAM S AS SELECT * FROM P;/* Let's insert some values now! -- it's fun! */\n"
        "INSERT INTO purchases VALUES ('c''ow', -90);\n"
        "INSERT INTO purchases VALUES ('/*she*/ep',     80);\n"
        "INSERT INTO purchases VALUES ('pol/*ar;;be--ar*/;', 200000);\n"
    )
    statements = sqltext.split(sql, "f.sql")
    assert [s.raw for s in statements] == [
        "CREATE STREAM valid_purchases AS\n  SELECT *\n  FROM purchases\n  WHERE cost > 0.00;",
        "\nCREATE OR REPLACE STREAM S AS SELECT * FROM P;",
        "\nINSERT INTO purchases VALUES ('c''ow', -90);",
        "\nINSERT INTO purchases VALUES ('/*she*/ep',     80);",
        "\nINSERT INTO purchases VALUES ('pol/*ar;;be--ar*/;', 200000);",
    ]
    assert [s.line for s in statements] == [2, 7, 8, 9, 10]
    assert statements[2].text == "INSERT INTO purchases VALUES ('c''ow', -90);"


def test_comments_are_deleted_so_the_text_around_them_joins_as_in_ksql_migrations() -> None:
    assert sqltext.split("CRE/**/ATE STREAM S;", "f")[0].text == "CREATE STREAM S;"
    assert sqltext.split("SELECT A--x\nFROM T;", "f")[0].text == "SELECT AFROM T;"
    # The close is looked for from the `*` on, so "/*/" is a whole comment there.
    assert sqltext.split("DROP/*/ x */STREAM S;", "f")[0].text == "DROP x */STREAM S;"


@pytest.mark.parametrize(
    ("sql", "message", "line"),
    [
        ("CREATE STREAM S;\nDROP STREAM S", "missing ';'", 2),
        ("CREATE STREAM S WITH (KAFKA_TOPIC='t);", "unterminated string", 1),
        ("\n/* never closed", "unterminated /\\* comment", 2),
        ("CREATE STREAM S;\n-- the end, no line break", "needs a line break", 2),
        ("CREATE STREAM `odd;name` (A STRING);", "inside a `…` name", 1),
        ('\nDROP STREAM "a;b";', 'inside a "…" name', 2),
    ],
)
def test_what_ksql_migrations_cannot_split_is_an_input_error_with_file_and_line(
    sql: str, message: str, line: int
) -> None:
    with pytest.raises(InputError, match=message) as err:
        sqltext.split(sql, "V000001__x.sql")
    assert err.value.file == "V000001__x.sql" and err.value.line == line


def test_empty_statements_are_dropped_and_a_commented_last_line_with_a_break_is_fine() -> None:
    assert [s.text for s in sqltext.split("A;;\n;-- done\n", "f")] == ["A;"]


# --- variables (ksqlDB's VariableSubstitutor and VariableParser) ----------------------------------


def sub(text: str, **variables: str) -> str:
    return substitute(text, variables, "V000001__x.sql", 1)


@pytest.mark.parametrize(
    ("text", "variables", "expected"),
    [
        # VariableSubstitutorTest: identifiers go in as they are, quoted or not
        ("DROP STREAM ${id};", {"id": "_id_"}, "DROP STREAM _id_;"),
        ("DROP STREAM ${id};", {"id": '"_id_"'}, 'DROP STREAM "_id_";'),
        ("DROP STREAM ${id};", {"id": "`_id_`"}, "DROP STREAM `_id_`;"),
        # literals: numbers, booleans, strings
        (
            "INSERT INTO ${i} VALUES (${n}, ${b}, ${d}, ${s});",
            {"i": "_id_", "n": "1", "b": "false", "d": "0.32", "s": "'john'"},
            "INSERT INTO _id_ VALUES (1, false, 0.32, 'john');",
        ),
        # a value that tries to end the string stays inside it
        (
            "CREATE STREAM S WITH (kafka_topic=${t});",
            {"t": "'t1', value_format='AVRO'"},
            "CREATE STREAM S WITH (kafka_topic='t1'', value_format=''AVRO');",
        ),
        # inside strings: the value with its quotes doubled; undefined stays; $$ escapes
        ("SET 'x'='topic_${env}';", {"env": "qa"}, "SET 'x'='topic_qa';"),
        ("SET 'x'='${owner}';", {"owner": "O'Brien"}, "SET 'x'='O''Brien';"),
        ("SET 'x'='topic_${nope}';", {}, "SET 'x'='topic_${nope}';"),
        ("SET 'x'='topic_$${env}';", {"env": "qa"}, "SET 'x'='topic_${env}';"),
        ("SET 'x'='topic_$${${env}}';", {"env": "qa"}, "SET 'x'='topic_${qa}';"),
        ("SET 'x'='${ENV}';", {"env": "qa"}, "SET 'x'='qa';"),  # names are case-insensitive (ksqlDB's docs)
        # Connect's placeholders are not variables; quoted names are names
        ("WITH ('p'='${file:/s.properties:pw}');", {"file": "x"}, "WITH ('p'='${file:/s.properties:pw}');"),
        ("DROP STREAM `${x}`;", {}, "DROP STREAM `${x}`;"),
    ],
)
def test_substitution_quotes_values_as_ksqldb_does(text: str, variables: dict[str, str], expected: str) -> None:
    assert sub(text, **variables) == expected


@pytest.mark.parametrize(
    "value", ["EXTENDED _id_", '"EXTENDED _id_"', "s1 (id, name)", "1, 5", "5 and id != 5", "@at", "'open", ""]
)
def test_a_value_that_is_neither_identifier_nor_literal_is_refused(value: str) -> None:
    with pytest.raises(VariableError, match="neither an identifier nor a literal") as err:
        sub("DROP STREAM ${v};", v=value)
    assert err.value.file == "V000001__x.sql" and err.value.line == 1


def test_an_undefined_variable_outside_a_string_is_refused() -> None:
    with pytest.raises(VariableError, match=r"\$\{table\} is not defined"):
        sub("CREATE TABLE ${table} AS SELECT 1;")
    assert sub("SET 'x'='$${table}'; DROP STREAM $${table};") == "SET 'x'='${table}'; DROP STREAM ${table};"


def test_a_define_value_is_substituted_then_unquoted(tmp_path: Path) -> None:
    assert in_string("${pre}bc", {"pre": "a"}) == "abc"
    sql = "DEFINE pre = 'a';\nDEFINE str = '${pre}bc';\nDROP STREAM ${str};\n"
    assert [t for t, _, _ in compiled(tmp_path, sql)] == ["DROP STREAM abc;"]


@pytest.mark.parametrize("pair", ["novalue", "a=b=c", "a=", "a==", "==", "=b", "1x=y", "a-b=c"])
def test_command_line_defines_follow_ksql_migrations_parsing(pair: str) -> None:
    with pytest.raises(HephaestusError, match="--define"):
        parse_defines((pair,))


def test_command_line_defines_are_read_raw_and_once() -> None:
    assert parse_defines(("Env=local", "q='x'")) == {"env": "local", "q": "'x'"}
    with pytest.raises(HephaestusError, match="defined twice"):
        parse_defines(("env=a", "ENV=b"))


def test_define_variables_substitute_case_insensitively_per_file(tmp_path: Path) -> None:
    sql = (
        "DEFINE Topic = 'local.manabie.bob.public.users';\n"
        "DEFINE fmt = '''AVRO''';\n"
        "CREATE STREAM S WITH (KAFKA_TOPIC='${TOPIC}', VALUE_FORMAT=${fmt});\n"
        "UNDEFINE topic;\n"
        "CREATE STREAM T WITH (KAFKA_TOPIC='${topic}');\n"
    )
    assert [t for t, _, _ in compiled(tmp_path, sql)] == [
        "CREATE STREAM S WITH (KAFKA_TOPIC='local.manabie.bob.public.users', VALUE_FORMAT='AVRO');",
        "CREATE STREAM T WITH (KAFKA_TOPIC='${topic}');",
    ]


def test_command_line_defines_start_each_file_and_the_file_may_override(tmp_path: Path) -> None:
    defines = parse_defines(("env=local", "ORG=manabie"))
    sql = "CREATE STREAM S WITH (KAFKA_TOPIC='${env}.${org}.bob');\nDEFINE env = 'prod';\nDROP STREAM ${ENV};\n"
    assert [t for t, _, _ in compiled(tmp_path, sql, defines)] == [
        "CREATE STREAM S WITH (KAFKA_TOPIC='local.manabie.bob');",
        "DROP STREAM prod;",
    ]


def test_set_and_unset_become_the_properties_of_later_statements(tmp_path: Path) -> None:
    sql = (
        "CREATE STREAM A WITH (KAFKA_TOPIC='a');\n"
        "DEFINE reset = 'earliest';\n"
        "SET 'auto.offset.reset' = '${reset}';\n"
        "SET 'ksql.streams.num.stream.threads' = '2';\n"
        "CREATE TABLE B AS SELECT 1;\n"
        "UNSET 'auto.offset.reset';\n"
        "CREATE TABLE C AS SELECT 1;\n"
    )
    assert [(line, props) for _, line, props in compiled(tmp_path, sql)] == [
        (1, {}),
        (5, {"auto.offset.reset": "earliest", "ksql.streams.num.stream.threads": "2"}),
        (7, {"ksql.streams.num.stream.threads": "2"}),
    ]


@pytest.mark.parametrize(
    ("statement", "word"),
    [
        ("SELECT * FROM T;", "SELECT"),
        ("describe T;", "DESCRIBE"),
        ("SHOW STREAMS;", "SHOW"),
        ("LIST TABLES;", "LIST"),
        ("EXPLAIN Q1;", "EXPLAIN"),
        ("PRINT 'topic';", "PRINT"),
        ("RUN SCRIPT '/tmp/x.sql';", "RUN SCRIPT"),
    ],
)
def test_statements_that_only_read_are_refused_like_ksql_migrations(tmp_path: Path, statement: str, word: str) -> None:
    """In ksql-migrations' words (CommandParser.validateSupportedStatementType)."""
    with pytest.raises(ParseFailure) as err:
        compiled(tmp_path, "CREATE STREAM A WITH (KAFKA_TOPIC='a');\n" + statement)
    assert err.value.line == 2
    assert err.value.reason == f"'{word}' statements are not supported."


def test_a_malformed_define_or_set_names_its_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="invalid DEFINE") as err:
        compiled(tmp_path, "\n\nDEFINE x = unquoted;")
    assert err.value.line == 3
    with pytest.raises(InputError, match="invalid SET"):
        compiled(tmp_path, "SET auto.offset.reset = 'earliest';")


# --- secrets -------------------------------------------------------------------------------


def test_sensitive_connector_properties_are_masked_placeholders_are_not() -> None:
    sql = (
        "CREATE SINK CONNECTOR X WITH ('connection.password' = 'hunter2', \"api.key\"='k''ey',"
        " 'connection.user' = 'dwh', 'db.password' = '${file:s.properties:pw}');"
    )
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
        "VALUES ('CURRENT', '3', 'it''s', 'ERROR', 'abc', '1', '2', '2', 'Failed: ''x''');"
    )


# --- info's table ---------------------------------------------------------------------------------


def test_info_is_laid_out_as_ksql_migrations_lays_it_out() -> None:
    from hephaestus.ksql.operations import InfoResult, InfoRow
    from hephaestus.ksql.render import info_text

    rows = (
        InfoRow(1, "some_name_1", State.MIGRATED, "<none>", "N/A", "N/A"),
        InfoRow(2, "gone", State.MIGRATED, "1", "N/A", "N/A", file="missing"),
        InfoRow(3, "some_name_3", State.ERROR, "1", "N/A", "N/A", "error reason", file="changed"),
        InfoRow(4, "some name 4", State.PENDING),
    )
    # MigrationVersionInfoFormatterTest's expected table, line for line (trailing blanks too),
    # with the divider on top that confluentinc/ksql#7157 added.
    assert info_text(InfoResult("c", "3", rows)) == [
        "ksqlDB 'c'",
        "Current migration version: 3",
        "-" * 96,
        " Version | Name        | State    | Previous Version | Started On | Completed On | Error Reason ",
        "-" * 96,
        " 1       | some_name_1 | MIGRATED | <none>           | N/A        | N/A          | N/A          ",
        " 3       | some_name_3 | ERROR    | 1                | N/A        | N/A          | error reason ",
        " 4       | some name 4 | PENDING  | N/A              | N/A        | N/A          | N/A          ",
        "-" * 96,
        "warning: version 2 (gone) is MIGRATED on the server but has no migration file",
        "warning: the file of version 3 (some_name_3) changed since it was applied (checksum)",
    ]
    running = InfoRow(5, "r", State.RUNNING, "4", "1000", "")
    assert info_text(InfoResult("c", "5", (running,)))[5].split("|")[5] == "              "  # blank, not N/A
    assert info_text(InfoResult("c", "<none>", ())) == [
        "ksqlDB 'c'",
        "Current migration version: <none>",
        "No migrations files found",
    ]


# --- what each statement is sent with ------------------------------------------------------------


def test_set_properties_go_only_with_statements_that_take_them(tmp_path: Path) -> None:
    sql = (
        "SET 'auto.offset.reset' = 'earliest';\n"
        "CREATE TABLE B AS SELECT 1;\n"
        "INSERT INTO S (A) VALUES ('x');\n"
        "INSERT INTO S SELECT * FROM T;\n"
        "CREATE SINK CONNECTOR K WITH ('connector.class'='x');\n"
        "DROP CONNECTOR IF EXISTS K;\n"
        "ASSERT TOPIC 't' TIMEOUT 2 MINUTES;\n"
        "ASSERT NOT EXISTS SCHEMA SUBJECT 's';\n"
    )
    with_props = {"auto.offset.reset": "earliest"}
    assert [props for _, _, props in compiled(tmp_path, sql)] == [with_props, {}, with_props, {}, {}, {}, {}]


def test_an_assert_waits_as_long_as_its_timeout_says(tmp_path: Path) -> None:
    path = write(tmp_path / "m", "V000001__x.sql")
    f = files.scan(path.parent).files[0]
    sql = (
        "ASSERT TOPIC 't' TIMEOUT 2 MINUTES;\nASSERT SCHEMA ID 3 TIMEOUT 1500 MILLISECONDS;\n"
        "ASSERT TOPIC u;\nDROP STREAM A;"
    )
    assert [s.waits_s for s in compile_migration(f, sql, {}).statements] == [120, 1.5, 1.0, 0.0]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("INSERT INTO S (A, B) VALUES ('x');", "Columns: 2. Values: 1."),
        ("INSERT INTO S (A) VALUES ('x', STRUCT(a := 1, b := 'y,z'));", "Columns: 1. Values: 2."),
        ("INSERT INTO S VALUES 'x';", "invalid INSERT VALUES"),
    ],
)
def test_an_insert_values_that_does_not_parse_stops_the_file_before_anything_is_sent(
    tmp_path: Path, sql: str, message: str
) -> None:
    with pytest.raises(InputError, match=message) as err:
        compiled(tmp_path, "CREATE STREAM A WITH (KAFKA_TOPIC='a');\n" + sql)
    assert err.value.line == 2
    assert [t for t, _, _ in compiled(tmp_path, "INSERT INTO S (A, B) VALUES ('x,y', ARRAY[1, 2]);")] == [
        "INSERT INTO S (A, B) VALUES ('x,y', ARRAY[1, 2]);"
    ]


# --- pinned to the letter (the survivors of the first mutation run) --------------------------------


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ('"a"', '"a"'),
        ("`a`", "`a`"),
        ("TRUE", "TRUE"),
        ("''", "''"),
        ("'it''s'", "'it''s'"),
        ("'a'b'", "'a''b'"),
        ("-1.5e3", "-1.5e3"),
        (".5", ".5"),
        ("+7", "+7"),
    ],
)
def test_single_tokens_go_in_as_ksqldb_would_have_them(value: str, token: str) -> None:
    assert sub("INSERT INTO T VALUES (${v});", v=value) == f"INSERT INTO T VALUES ({token});"


@pytest.mark.parametrize("value", ["'", '"', "`", '"a b"', "`a`b`", '""', "1.2.3", "e5"])
def test_what_only_looks_like_a_token_is_refused(value: str) -> None:
    if value == "e5":  # an identifier, not a number: fine
        assert sub("DROP STREAM ${v};", v=value) == "DROP STREAM e5;"
        return
    with pytest.raises(VariableError) as err:
        sub("DROP STREAM ${v};", v=value)
    assert str(err.value).endswith(
        f"${{v}} = {value!r} is neither an identifier nor a literal ('text', a number, "
        "true, false): ksqlDB refuses it there"
    )


def test_the_messages_say_what_to_do() -> None:
    with pytest.raises(VariableError) as err:
        sub("DROP STREAM ${Missing};")
    assert str(err.value).endswith(
        "${Missing} is not defined: outside a '…' string a variable must be defined (DEFINE, or -d name=value)"
    )
    with pytest.raises(HephaestusError) as bad:
        parse_defines(("a=b=c",))
    assert str(bad.value) == (
        "--define 'a=b=c': the value holds '=', which ksql-migrations refuses too (it cuts "
        "NAME=VALUE at every '='); put it in the file instead: DEFINE a = '…';"
    )
    with pytest.raises(HephaestusError) as empty:
        parse_defines(("a=",))
    assert str(empty.value) == "--define 'a=': variables must be defined as name=value, with a value"
    with pytest.raises(HephaestusError) as name:
        parse_defines(("9x=y",))
    assert str(name.value) == "--define '9x=y': '9x' is not a variable name like my_var"


@pytest.mark.parametrize(
    ("sql", "message", "line"),
    [
        (
            "A;\n-- x",
            "a -- comment on the last line needs a line break after it (ksql-migrations refuses the file otherwise)",
            2,
        ),
        ("A;\n\n/* x", "unterminated /* comment", 3),
        ("A;\n'x", "unterminated string starting with '", 2),
        ("\nDROP `a;", "a ';' inside a `…` name: ksql-migrations ends the statement there; rename it", 2),
    ],
)
def test_the_splitters_messages_and_lines(sql: str, message: str, line: int) -> None:
    with pytest.raises(InputError) as err:
        sqltext.split(sql, "f.sql")
    assert err.value.line == line and str(err.value).endswith(message)


def test_lines_count_through_comments_strings_and_names() -> None:
    sql = "/* a\nb */ A;\n'x\ny' B;\n-- c\n`n\nm` C;\n--\nD;"
    assert [(s.text, s.line) for s in sqltext.split(sql, "f")] == [
        ("A;", 2),
        ("'x\ny' B;", 3),
        ("`n\nm` C;", 6),
        ("D;", 9),
    ]
    assert [s.text for s in sqltext.split("-- only a comment\n", "f")] == []
    assert sqltext.split("X '--'; Y '/*';", "f")[1].text == "Y '/*';"


def test_preview_is_the_first_line_shortened() -> None:
    assert sqltext.preview("  SELECT 1  ") == "SELECT 1"
    assert sqltext.preview("A\nB") == "A …"
    assert sqltext.preview("x" * 81) == "x" * 80 + " …"
    assert sqltext.preview("x" * 80) == "x" * 80
    assert sqltext.preview("   ") == ""

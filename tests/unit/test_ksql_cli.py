"""`hephaestus ksql …` and the ksql jobs, through the CLI, against the ksqlDB contract stub.

What is checked is what a ksqlDB server would have received and kept: the statements in
order, the metadata rows (two per transition), and what pull queries then answer.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hephaestus.cli import run
from tests.ksqldb_stub import KsqlStub, ksqldb_stub
from tests.unit.conftest import Result

STREAM = "LMSDWH_MIGRATION_EVENTS"
TABLE = "LMSDWH_MIGRATION_SCHEMA_VERSIONS"
PASSWORD = "hunter2-Secret"

V1 = """\
-- the users change stream
CREATE STREAM BOB_USERS (USER_ID STRING KEY, NAME STRING)
  WITH (KAFKA_TOPIC='local.manabie.bob.public.users', VALUE_FORMAT='JSON');
"""
V2 = f"""\
SET 'auto.offset.reset' = 'earliest';
CREATE OR REPLACE TABLE USERS_LATEST AS
  SELECT USER_ID, LATEST_BY_OFFSET(NAME) AS NAME FROM BOB_USERS GROUP BY USER_ID;
CREATE SINK CONNECTOR IF NOT EXISTS LMSDWH_USERS_SINK WITH (
  'connector.class' = 'io.confluent.connect.jdbc.JdbcSinkConnector',
  'connection.password' = '{PASSWORD}',
  'topics' = 'USERS_LATEST');
"""
V3 = "CREATE STREAM IF NOT EXISTS BOB_STUDENTS WITH (KAFKA_TOPIC='local.manabie.bob.public.students');\n"


@dataclass
class Ksql:
    root: Path
    stub: KsqlStub
    capsys: pytest.CaptureFixture[str]

    @property
    def migrations(self) -> Path:
        return self.root / "ksql_migrations" / "lmsdwh"

    def write(self, name: str, text: str) -> Path:
        self.migrations.mkdir(parents=True, exist_ok=True)
        (self.migrations / name).write_text(text)
        return self.migrations / name

    def cli(self, *args: str) -> Result:
        code = run([*args, "--project", str(self.root / "hephaestus.yaml")])
        captured = self.capsys.readouterr()
        return Result(code, captured.out, captured.err)

    def events(self) -> list[dict[str, Any]]:
        return self.stub.rows(STREAM)

    def state(self, key: str) -> dict[str, Any]:
        return self.stub.table(TABLE)[key]

    def sent_since(self, mark: int) -> list[str]:
        return self.stub.statements()[mark:]


def project_yaml(url: str, extra: str = "") -> str:
    return (
        textwrap.dedent(f"""\
        clusters:
          platforms: {{url: "http://127.0.0.1:9", connectors: connectors/platforms}}
        ksqldb:
          lmsdwh:
            url: {url}
            migrations: ksql_migrations/lmsdwh
            stream: {STREAM}
            table: {TABLE}
        """)
        + extra
    )


@pytest.fixture
def ksql(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Ksql]:
    with ksqldb_stub() as stub:
        (tmp_path / "hephaestus.yaml").write_text(project_yaml(stub.url))
        k = Ksql(tmp_path, stub, capsys)
        for name, text in (
            ("V000001__bob_users.sql", V1),
            ("V000002__users_latest.sql", V2),
            ("V000003__bob_students.sql", V3),
        ):
            k.write(name, text)
        yield k


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


# --- init --------------------------------------------------------------------------------------


def test_init_checks_the_server_then_creates_the_metadata_stream_and_table(ksql: Ksql) -> None:
    result = ksql.cli("ksql", "init")
    assert result.code == 0, result.err
    assert f"created {STREAM} (topic default_ksql_{STREAM})" in result.out
    assert [r.path for r in ksql.stub.requests][:3] == ["/info", "/healthcheck", "/ksql"]
    created = [s for s in ksql.stub.statements() if s.startswith("CREATE")]
    assert created[0].startswith(f"CREATE STREAM {STREAM} (") and "error_reason STRING" in created[0]
    assert created[1].startswith(f"CREATE TABLE {TABLE}") and "GROUP BY version_key" in created[1]
    assert ksql.stub.sources[TABLE].topic == f"default_ksql_{TABLE}"


def test_init_is_idempotent(ksql: Ksql) -> None:
    assert ksql.cli("ksql", "init").code == 0
    mark = len(ksql.stub.statements())
    again = ksql.cli("ksql", "init")
    assert again.code == 0 and f"exists  {STREAM}" in again.out and f"exists  {TABLE}" in again.out
    assert not [s for s in ksql.sent_since(mark) if s.startswith("CREATE")]


@pytest.mark.parametrize(
    ("version", "code", "says"),
    [
        ("5.5.3", 1, "too old"),
        ("0.9.0", 1, "too old"),
        ("0.21.0", 0, "HTTP/2 only"),
        ("7.1.1", 0, "HTTP/2 only"),
        ("unknown-build", 0, "cannot parse"),
        ("7.4.0", 0, "metadata ready"),
    ],
)
def test_init_checks_the_server_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str, code: int, says: str
) -> None:
    with ksqldb_stub(version=version) as stub:
        (tmp_path / "hephaestus.yaml").write_text(project_yaml(stub.url))
        result = Ksql(tmp_path, stub, capsys).cli("ksql", "init")
        assert result.code == code and says in result.out + result.err
        assert bool([s for s in stub.statements() if s.startswith("CREATE")]) == (code == 0)


def test_init_warns_when_the_server_reports_itself_unhealthy(ksql: Ksql) -> None:
    ksql.stub.healthy = False
    result = ksql.cli("ksql", "init")
    assert result.code == 0 and "reports itself unhealthy" in result.out
    assert [r.path for r in ksql.stub.requests][:2] == ["/info", "/healthcheck"]


def test_apply_needs_init_first(ksql: Ksql) -> None:
    result = ksql.cli("ksql", "apply", "--all")
    assert result.code == 1 and "run `hephaestus ksql init` first" in result.err


# --- apply ---------------------------------------------------------------------------------------


def test_apply_all_records_two_rows_per_transition_like_ksql_migrations(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    result = ksql.cli("ksql", "apply", "--all")
    assert result.code == 0, result.err
    assert "migrated 1 bob users (1 statements)" in result.out and "migrated 3 bob students" in result.out
    events = ksql.events()
    assert [(e["VERSION_KEY"], e["VERSION"], e["STATE"]) for e in events[:4]] == [
        ("CURRENT", "1", "RUNNING"),
        ("1", "1", "RUNNING"),
        ("CURRENT", "1", "MIGRATED"),
        ("1", "1", "MIGRATED"),
    ]
    assert len(events) == 12
    v2 = [e for e in events if e["VERSION_KEY"] == "2"]
    assert {e["NAME"] for e in v2} == {"users latest"} and {e["PREVIOUS"] for e in v2} == {"1"}
    assert {e["CHECKSUM"] for e in v2} == {md5(ksql.migrations / "V000002__users_latest.sql")}
    assert v2[0]["COMPLETED_ON"] == "" and v2[1]["COMPLETED_ON"].isdigit()
    assert v2[0]["STARTED_ON"] == v2[1]["STARTED_ON"] and v2[1]["ERROR_REASON"] == "N/A"
    assert ksql.state("CURRENT")["VERSION"] == "3" and ksql.state("3")["PREVIOUS"] == "2"
    assert ksql.events()[0]["PREVIOUS"] == "<none>"


def test_statements_run_in_order_between_running_and_migrated(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    mark = len(ksql.stub.statements())
    ksql.cli("ksql", "apply", "--all")
    sent = [s.split("(")[0].split(" AS")[0].strip() for s in ksql.sent_since(mark) if not s.startswith("LIST")]
    assert sent[:6] == [
        f"INSERT INTO {STREAM}",
        f"INSERT INTO {STREAM}",
        "CREATE STREAM BOB_USERS",
        f"INSERT INTO {STREAM}",
        f"INSERT INTO {STREAM}",
        f"INSERT INTO {STREAM}",
    ]
    assert "LMSDWH_USERS_SINK" in ksql.stub.connectors
    sequences = [r.body.get("commandSequenceNumber") for r in ksql.stub.requests if r.path == "/ksql"]
    assert sequences[-1] == ksql.stub.sequence  # each request waits for every earlier command


def test_set_becomes_request_properties_and_is_never_sent_as_a_statement(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    ksql.cli("ksql", "apply", "--all")
    table = next(r for r in ksql.stub.requests if r.path == "/ksql" and "USERS_LATEST AS" in r.body["ksql"])
    assert table.body["streamsProperties"] == {"auto.offset.reset": "earliest"}
    assert not [s for s in ksql.stub.statements() if s.upper().startswith(("SET", "DEFINE"))]


def test_a_second_apply_changes_nothing(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    ksql.cli("ksql", "apply", "--all")
    mark, rows = len(ksql.stub.statements()), len(ksql.events())
    again = ksql.cli("ksql", "apply", "--all")
    assert again.code == 0 and "last migrated version 3; no eligible migrations" in again.out
    assert len(ksql.events()) == rows
    assert all(s.startswith("LIST") for s in ksql.sent_since(mark))


def test_a_failure_mid_file_is_recorded_as_error_and_the_next_apply_resumes_there(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    ksql.stub.fail("CREATE SINK CONNECTOR", f"Failed to create connector: password {PASSWORD} refused")
    failed = ksql.cli("ksql", "apply", "--all")
    assert failed.code == 1
    assert "V000002__users_latest.sql:4: statement failed, version 2 recorded as ERROR" in failed.err
    assert "statement: CREATE SINK CONNECTOR IF NOT EXISTS LMSDWH_USERS_SINK WITH (" in failed.err
    assert "ksqlDB said: Failed to create connector: password **** refused" in failed.err
    error = ksql.state("2")
    assert (error["STATE"], ksql.state("CURRENT")["STATE"]) == ("ERROR", "ERROR")
    assert error["ERROR_REASON"].startswith(
        "Failed to execute sql: \nCREATE SINK CONNECTOR"
    )  # the fragment as cut, as ksql-migrations quotes it
    assert "'connection.password' = '****'" in error["ERROR_REASON"] and PASSWORD not in json.dumps(ksql.events())
    assert PASSWORD not in failed.out + failed.err
    assert "3" not in ksql.stub.table(TABLE) and "BOB_STUDENTS" not in ksql.stub.sources

    resumed = ksql.cli("ksql", "apply", "--all")
    assert resumed.code == 0, resumed.err
    assert "last migrated version 1" in resumed.out and "migrated 2 users latest" in resumed.out
    assert ksql.state("2")["STATE"] == "MIGRATED" and ksql.state("2")["ERROR_REASON"] == "N/A"
    assert ksql.state("CURRENT")["VERSION"] == "3"


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ("SELECT * FROM A;", "'SELECT' statements are not supported."),
        ("CREATE TABLE ${tbl} AS SELECT * FROM A;", "${tbl} is not defined"),
        ("INSERT INTO A (X, Y) VALUES (1);", "Columns: 2. Values: 1."),
        ("DROP STREAM `a;b`;", "inside a `…` name"),
    ],
)
def test_a_file_that_does_not_parse_is_recorded_as_error_and_nothing_of_it_is_sent(
    ksql: Ksql, second: str, message: str
) -> None:
    """As ksql-migrations (ApplyMigrationCommand.executeCommands parses the whole file first):
    the files before it apply, it is recorded RUNNING then ERROR, none of its statements run."""
    ksql.write("V000004__peek.sql", "CREATE STREAM A WITH (KAFKA_TOPIC='a');\n" + second + "\n")
    ksql.cli("ksql", "init")
    result = ksql.cli("ksql", "apply", "--all")
    assert result.code == 1 and "V000004__peek.sql:2" in result.err and message in result.err, result.err
    assert ksql.state("3")["STATE"] == "MIGRATED" and ksql.state("4")["STATE"] == "ERROR"
    assert (
        ksql.state("4")["ERROR_REASON"].startswith("Failed to parse sql") and message in ksql.state("4")["ERROR_REASON"]
    )
    assert not any("KAFKA_TOPIC='a'" in s for s in ksql.stub.statements())


def test_a_variable_cannot_inject_sql(ksql: Ksql) -> None:
    ksql.write("V000004__topic.sql", "CREATE STREAM T4 WITH (KAFKA_TOPIC=${t}, VALUE_FORMAT='JSON');\n")
    ksql.cli("ksql", "init")
    # ksql-migrations reads -d with Java's split("="): a value with '=' is refused outright
    assert ksql.cli("ksql", "apply", "--all", "-d", "t='t1', value_format='AVRO'").code == 1
    refused = ksql.cli("ksql", "apply", "--all", "-d", "t=x); DROP STREAM T4; --")
    assert refused.code == 1 and "neither an identifier nor a literal" in refused.err
    assert "T4" not in ksql.stub.sources
    ksql.write(
        "V000004__topic.sql",
        "DEFINE t = '''t1'', value_format=''AVRO''';\nCREATE STREAM T4 WITH (KAFKA_TOPIC=${t}, VALUE_FORMAT='JSON');\n",
    )
    result = ksql.cli("ksql", "apply", "--all")
    assert result.code == 0, result.err
    assert ksql.stub.sources["T4"].topic == "t1', value_format='AVRO"  # one odd topic name, no second key


def test_variables_from_the_command_line_and_define(ksql: Ksql) -> None:
    ksql.write(
        "V000004__vars.sql",
        "DEFINE db = 'bob';\n"
        "CREATE STREAM ${DB}_LOCATIONS WITH (KAFKA_TOPIC='${env}.${org}.${db}.public.locations');\n",
    )
    ksql.cli("ksql", "init")
    result = ksql.cli("ksql", "apply", "--all", "-d", "env=local", "--define", "org=manabie")
    assert result.code == 0, result.err
    assert (
        "CREATE STREAM bob_LOCATIONS WITH (KAFKA_TOPIC='local.manabie.bob.public.locations');" in ksql.stub.statements()
    )
    assert ksql.stub.sources["BOB_LOCATIONS"].topic == "local.manabie.bob.public.locations"


def test_until_next_and_version_choose_what_runs(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    assert ksql.cli("ksql", "apply", "--until", "2").code == 0
    assert ksql.state("CURRENT")["VERSION"] == "2" and "3" not in ksql.stub.table(TABLE)
    assert ksql.cli("ksql", "apply", "--next").code == 0
    assert ksql.state("CURRENT")["VERSION"] == "3"
    done = ksql.cli("ksql", "apply", "--next")
    assert done.code == 1 and "no eligible migrations" in done.err
    older = ksql.cli("ksql", "apply", "--version", "2")
    assert older.code == 1 and "must be newer than the last migrated version (3)" in older.err


def test_version_may_jump_ahead_and_says_what_it_skips(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    result = ksql.cli("ksql", "apply", "--version", "3")
    assert result.code == 0 and "versions 1, 2 are skipped" in result.out
    assert ksql.state("CURRENT")["VERSION"] == "3" and ksql.state("3")["PREVIOUS"] == "<none>"


def test_exactly_one_target_is_required(ksql: Ksql) -> None:
    assert ksql.cli("ksql", "apply").code == 1
    assert ksql.cli("ksql", "apply", "--all", "--next").code == 1
    assert ksql.stub.requests == []


def test_dry_run_shows_the_statements_and_sends_nothing(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    mark = len(ksql.stub.statements())
    result = ksql.cli("ksql", "apply", "--all", "--dry-run")
    assert result.code == 0
    assert "dry run: would apply 3 file(s); nothing written (applied versions read from the server)" in result.out
    assert "V000002__users_latest.sql (version 2, 2 statements)" in result.out
    assert "-- with auto.offset.reset=earliest" in result.out and "'connection.password' = '****'" in result.out
    assert PASSWORD not in result.out
    assert all(s.startswith("LIST") for s in ksql.sent_since(mark)) and ksql.events() == []


# --- validate and info -----------------------------------------------------------------------------


def test_validate_catches_an_edited_file_and_apply_then_refuses(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    ksql.cli("ksql", "apply", "--until", "2")
    assert ksql.cli("ksql", "validate").code == 0
    original = (ksql.migrations / "V000001__bob_users.sql").read_text()
    ksql.write("V000001__bob_users.sql", original + "-- edited after it was applied\n")
    result = ksql.cli("ksql", "validate")
    assert result.code == 2 and "V000001__bob_users.sql changed after it was applied" in result.out
    mark = len(ksql.stub.statements())
    refused = ksql.cli("ksql", "apply", "--all")
    assert refused.code == 2 and "nothing applied" in refused.err
    assert all(s.startswith("LIST") for s in ksql.sent_since(mark))
    ksql.write("V000001__bob_users.sql", original)
    assert ksql.cli("ksql", "validate").code == 0


def test_validate_catches_a_missing_file(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    ksql.cli("ksql", "apply", "--all")
    (ksql.migrations / "V000002__users_latest.sql").unlink()
    result = ksql.cli("ksql", "validate")
    assert (
        result.code == 2
        and "version 2 (users latest) is MIGRATED on the server but has no migration file" in result.out
    )


def test_info_lists_every_version_with_its_state(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    pending = ksql.cli("ksql", "info")
    assert pending.code == 0 and "Current migration version: <none>" in pending.out
    assert pending.out.count("PENDING") == 3
    ksql.stub.fail("BOB_STUDENTS")
    ksql.cli("ksql", "apply", "--all")
    ksql.write("V000004__later.sql", V3.replace("STUDENTS", "LOCATIONS"))
    listed = ksql.cli("ksql", "info", "-o", "json")
    doc = json.loads(listed.out)[0]
    assert doc["cluster"] == "lmsdwh" and doc["current"] == "3"
    assert [(v["version"], v["state"]) for v in doc["versions"]] == [
        (1, "MIGRATED"),
        (2, "MIGRATED"),
        (3, "ERROR"),
        (4, "PENDING"),
    ]
    assert doc["versions"][2]["error_reason"].startswith("Failed to execute sql: CREATE STREAM IF NOT EXISTS")
    text = ksql.cli("ksql", "info").out
    assert " Version | Name " in text and " UTC " in text


# --- files, jobs, project ------------------------------------------------------------------------------


def test_new_creates_the_next_file(ksql: Ksql) -> None:
    result = ksql.cli("ksql", "new", "add user groups")
    assert result.code == 0 and (ksql.migrations / "V000004__add_user_groups.sql").is_file()


def test_duplicate_versions_fail_and_other_files_are_warned_about(ksql: Ksql) -> None:
    ksql.write("notes.txt", "not a migration")
    warned = ksql.cli("ksql", "apply", "--all", "--dry-run")
    assert "skipping notes.txt" in warned.err
    ksql.write("V000003__again.sql", V3)
    result = ksql.cli("ksql", "info")
    assert result.code == 1 and "version 3 is also used by" in result.err


def test_the_reference_jobs_run_init_and_apply(ksql: Ksql) -> None:
    assert ksql.cli("job", "run", "prepare_ksqldb_migration").code == 0
    result = ksql.cli("job", "run", "migrate_ksql")
    assert result.code == 0, result.err
    assert ksql.state("CURRENT") == {**ksql.state("CURRENT"), "VERSION": "3", "STATE": "MIGRATED"}


def test_password_by_environment_variable_never_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with ksqldb_stub(credentials=("ksql", PASSWORD)) as stub:
        auth = "    username: ksql\n    password: {env: KSQL_PASSWORD}\n"
        (tmp_path / "hephaestus.yaml").write_text(
            project_yaml(stub.url).replace("    migrations:", auth + "    migrations:")
        )
        k = Ksql(tmp_path, stub, capsys)
        k.write("V000001__bob_users.sql", V1)
        missing = k.cli("ksql", "init")
        assert missing.code == 1 and "KSQL_PASSWORD is not set" in missing.err
        monkeypatch.setenv("KSQL_PASSWORD", PASSWORD)
        assert k.cli("ksql", "init").code == 0
        result = k.cli("ksql", "apply", "--all")
        assert result.code == 0 and PASSWORD not in result.out + result.err


def test_the_ksqldb_section_is_validated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "hephaestus.yaml").write_text(
        project_yaml("http://127.0.0.1:9").replace(f"stream: {STREAM}", "stream: bad-name")
    )
    code = run(["ksql", "info", "--project", str(tmp_path / "hephaestus.yaml")])
    assert code == 1 and "ksqldb.lmsdwh.stream" in capsys.readouterr().err


def test_assert_and_drop_connector_statements_apply(ksql: Ksql) -> None:
    ksql.write(
        "V000004__checks.sql",
        "ASSERT TOPIC 'local.manabie.bob.public.users' TIMEOUT 3 SECONDS;\nDROP CONNECTOR IF EXISTS LMSDWH_OLD_SINK;\n",
    )
    ksql.cli("ksql", "init")
    result = ksql.cli("ksql", "apply", "--all")
    assert result.code == 0, result.err
    assert "migrated 4 checks (2 statements)" in result.out and ksql.stub.asserted == [3.0]


@pytest.mark.parametrize(
    ("statement", "said"),
    [
        (
            "DROP STREAM BOB_USERS;",
            "Cannot drop BOB_USERS.\nThe following queries read from this source: [CTAS_USERS_LATEST_",
        ),
        (
            "CREATE OR REPLACE STREAM BOB_USERS (NAME STRING) WITH (KAFKA_TOPIC='local.manabie.bob.public.users');",
            "Cannot upgrade data source",
        ),
        (
            "ALTER TABLE USERS_LATEST ADD COLUMN AGE INT;",
            "ALTER command is not supported for CREATE ... AS statements.",
        ),
        ("TERMINATE CTAS_NOPE_9;", "Unknown queryId: CTAS_NOPE_9"),
        (
            "CREATE SINK CONNECTOR LMSDWH_USERS_SINK WITH ('connector.class' = 'x');",
            "Connector LMSDWH_USERS_SINK already",
        ),
    ],
)
def test_what_the_server_refuses_is_recorded_as_error_with_its_message(ksql: Ksql, statement: str, said: str) -> None:
    ksql.cli("ksql", "init")
    assert ksql.cli("ksql", "apply", "--until", "2").code == 0
    ksql.write("V000003__bob_students.sql", statement + "\n")
    result = ksql.cli("ksql", "apply", "--all")
    assert result.code == 1 and "version 3 recorded as ERROR" in result.err, result.err
    assert ksql.state("3")["STATE"] == "ERROR" and said in ksql.state("3")["ERROR_REASON"]


def test_a_compatible_replace_and_an_alter_of_a_plain_stream_apply(ksql: Ksql) -> None:
    ksql.cli("ksql", "init")
    ksql.write(
        "V000003__bob_students.sql",
        "CREATE OR REPLACE STREAM BOB_USERS (USER_ID STRING KEY, NAME STRING, AGE INT) "
        "WITH (KAFKA_TOPIC='local.manabie.bob.public.users', VALUE_FORMAT='JSON');\n"
        "ALTER STREAM BOB_USERS ADD COLUMN CITY STRING;\n",
    )
    result = ksql.cli("ksql", "apply", "--all")
    assert result.code == 0, result.err
    assert [c[0] for c in ksql.stub.sources["BOB_USERS"].columns] == ["USER_ID", "NAME", "AGE", "CITY"]


def test_init_and_apply_wait_for_a_server_that_is_still_starting(ksql: Ksql) -> None:
    ksql.stub.starting(2)  # 503 / 50302 twice first; the default bound (120 s) polls every 1 s
    assert ksql.cli("ksql", "init").code == 0
    result = ksql.cli("ksql", "apply", "--all")
    assert result.code == 0, result.err
    assert ksql.state("CURRENT")["VERSION"] == "3"
    assert [r.path for r in ksql.stub.requests][:3] == ["/info"] * 3
